#include "ir/expr.h"

#include <gtest/gtest.h>

#include "ir/stmt.h"

namespace tirc {

TEST(Expr, VarsHaveIdentity) {
  Var a("i"), b("i");
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(expr_identical(a + 1, a + 1));
  EXPECT_FALSE(expr_identical(a + 1, b + 1));
}

TEST(Stmt, ExtentEndRoundTrip) {
  Var n("n");
  Expr lo = make_int(2), e = n * 2;
  EXPECT_TRUE(expr_identical(make_extent(lo, make_end(lo, e)), e));
  EXPECT_TRUE(expr_identical(make_extent(n, make_end(n, e)), e));
  int64_t v;
  ASSERT_TRUE(is_const_int(make_extent(make_int(3), make_int(10)), &v));
  EXPECT_EQ(v, 7);
}

}  // namespace tirc

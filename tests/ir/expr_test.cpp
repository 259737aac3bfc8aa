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

// A constant start folds into the end as a user writes it: serial(1, n + 1) has extent n and
// prints back as serial(1, n + 1), not serial(1, 1 + (n + 1 - 1)); still an exact round trip
// for every extent, canonical or not.
TEST(Stmt, ExtentEndFoldsConstants) {
  Var n("n");
  Expr one = make_int(1), two = make_int(2);
  EXPECT_TRUE(expr_identical(make_extent(one, n + 1), n));
  EXPECT_TRUE(expr_identical(make_end(one, n), n + 1));
  EXPECT_TRUE(expr_identical(make_extent(two, n), n - 2));
  EXPECT_TRUE(expr_identical(make_end(two, n - 2), n));
  EXPECT_TRUE(expr_identical(make_extent(one, n + 3), n + 2));
  EXPECT_TRUE(expr_identical(make_end(one, n + 2), n + 3));
  for (Expr lo : {one, two, make_int(-3)})
    for (Expr e : {Expr(n), n + 1, n - 1, n + 2, n - 2, (n + 2) - 1, (n + 1) - 1, n + make_int(-1), n * 2,
                   (n - 1) + 1, make_int(1) + n})
      EXPECT_TRUE(expr_identical(make_extent(lo, make_end(lo, e)), e));
}

}  // namespace tirc

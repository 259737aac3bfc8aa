// The simplifier keeps the lowering's bounds checks (Intrinsic::BoundsCheck) that a rewrite
// would drop with their operand (`x*0`, `x - x`, proven comparisons, a select with a constant
// condition, `c && false`, unused lets): compiled code must stop where the interpreter, which
// evaluates every operand, reports an out-of-bounds access. Checks in an untaken
// if_then_else arm are dropped (the interpreter does not evaluate that arm either).
// Expressions without checks simplify as before.
#include <gtest/gtest.h>

#include "ir/visitor.h"
#include "tests/simplify/test_util.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

int count_checks(const Expr& e) {
  int n = 0;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) ++n;
  });
  return n;
}
int count_checks(const Stmt& s) {
  int n = 0;
  for_each_expr(s, [&](const Expr& x) {
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) ++n;
  });
  return n;
}

struct Fix {
  Var i{"i"};
  Buffer A{"A", DType::I32, {make_int(8)}}, I{"I", DType::I32, {make_int(4)}};
  Buffer F{"F", DType::F32, {make_int(8)}};
  Buffer U{"U", DType::U8, {make_int(8)}};
  Analyzer an;
  Fix() { an.bind(i, {0, 3}); }
  // A[__bounds_check(I[i], 8, site)]: the gather of the tests.
  Expr chk(int site) {
    return make_call(Intrinsic::BoundsCheck, {make_load(I, {i}), make_int(8), make_int(site)});
  }
  Expr gather(int site) { return make_load(A, {chk(site)}); }
};

TEST(SimplifyKeepChecks, DroppedOperandsKeepTheirChecks) {
  Fix f;
  Expr four = make_int(4);
  // Each of these used to simplify to a constant or to the other operand, check and all.
  std::vector<Expr> cases = {
      f.gather(0) * make_int(0) + f.i,                                                           // x*0
      f.gather(0) - f.gather(0),                                                                 // x - x
      floormod(f.gather(0), make_int(1)),                                                        // x % 1
      make_binary(BinOp::LT, make_cast(DType::I32, make_load(f.U, {f.chk(0)})), make_int(300)),  // proven
      make_binary(BinOp::Max, f.i, make_binary(BinOp::Min, f.gather(0), make_int(-1))),
      make_binary(BinOp::And, make_binary(BinOp::GT, f.gather(0), make_int(0)),
                  make_binary(BinOp::GT, f.i, four)),
      make_select(make_binary(BinOp::GT, f.i, four), f.gather(0), f.i),         // select, constant condition
      make_select(make_binary(BinOp::GT, f.gather(0), make_int(0)), f.i, f.i),  // identical arms
      make_if_then_else(make_binary(BinOp::GT, f.gather(0), make_int(0)), f.i, f.i),
      make_let(Var("x"), f.gather(0), f.i + make_int(1)),  // unused let
  };
  for (auto& e : cases) {
    Expr r = f.an.simplify(e);
    EXPECT_GE(count_checks(r), 1) << testing::str(e) << " -> " << testing::str(r);
  }
  // The value is unchanged: `A[..] * 0 + i` still simplifies to i under the kept check.
  Expr r = f.an.simplify(f.gather(0) * make_int(0) + f.i);
  auto* let = r.as<LetNode>();
  ASSERT_TRUE(let) << testing::str(r);
  EXPECT_EQ(testing::str(let->body), "i");
}

TEST(SimplifyKeepChecks, UntakenIfThenElseArmsLoseTheirChecks) {
  Fix f;
  // i <= 3: the arm holding the gather is never evaluated, by either engine.
  Expr e = make_if_then_else(make_binary(BinOp::GT, f.i, make_int(4)), f.gather(0), f.i) * make_int(2);
  Expr r = f.an.simplify(e);
  EXPECT_EQ(count_checks(r), 0) << testing::str(r);
  // Dropped as a whole (`ite(..) * 0`), a taken-or-not arm is kept with its condition.
  Expr g = make_if_then_else(make_binary(BinOp::GT, make_load(f.I, {f.i}), make_int(4)), f.gather(1), f.i);
  Expr r2 = f.an.simplify(g * make_int(0) + f.i);
  EXPECT_EQ(count_checks(r2), 1) << testing::str(r2);
}

TEST(SimplifyKeepChecks, UnusedLetStmtWithACheckStays) {
  Fix f;
  Buffer B{"B", DType::I32, {make_int(4)}};
  Var x("x");
  Stmt s = make_let_stmt(x, f.gather(0), make_store(B, {f.i}, make_int(1)));
  EXPECT_EQ(count_checks(f.an.simplify(s)), 1);
  // Without a check an unused let goes, as before.
  Stmt t = make_let_stmt(x, make_load(f.A, {make_load(f.I, {f.i})}), make_store(B, {f.i}, make_int(1)));
  EXPECT_EQ(f.an.simplify(t).kind(), StmtKind::Store);
}

TEST(SimplifyKeepChecks, ExpressionsWithoutChecksSimplifyAsBefore) {
  Fix f;
  Expr g = make_load(f.A, {make_load(f.I, {f.i})});
  EXPECT_EQ(testing::str(f.an.simplify(g * make_int(0) + f.i)), "i");
  EXPECT_EQ(testing::str(f.an.simplify(g - g)), "0");
  EXPECT_EQ(testing::str(f.an.simplify(make_select(make_binary(BinOp::GT, f.i, make_int(4)), g, f.i))), "i");
}

TEST(SimplifyKeepChecks, SimplifyIndicesKeepsCheckedOperands) {
  // The lowering's first folding pass (transforms/lower simplify_indices): x*0, x%1 and
  // `&& false` keep an operand holding a check.
  Fix f;
  EXPECT_EQ(count_checks(simplify_index_expr(f.gather(0) * make_int(0))), 1);
  EXPECT_EQ(count_checks(simplify_index_expr(floormod(f.gather(0), make_int(1)))), 1);
  EXPECT_EQ(count_checks(simplify_index_expr(
                make_binary(BinOp::And, make_binary(BinOp::GT, f.gather(0), make_int(0)), make_bool(false)))),
            1);
  EXPECT_EQ(testing::str(simplify_index_expr(make_load(f.A, {f.i}) * make_int(0))), "0");
}

}  // namespace
}  // namespace tirc

// Exact expected forms for the key simplification rules.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "tests/simplify/test_util.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using testing::str;

#define EXPECT_SIMPLIFY(an, e, expected) EXPECT_EQ(str((an).simplify(e)), expected) << "input: " << str(e)

struct Vars {
  Var i{"i"}, j{"j"}, k{"k"}, n{"n"};
  Analyzer an;
  Vars() {
    an.bind(i, {0, 15});
    an.bind(j, {0, 7});
    an.bind(k, {0, 31});
  }
};

TEST(SimplifyRules, AffineCanonical) {
  Vars v;
  EXPECT_SIMPLIFY(v.an, (v.i * 4 + v.j) - v.i * 4, "j");
  EXPECT_SIMPLIFY(v.an, v.i + 0, "i");
  EXPECT_SIMPLIFY(v.an, v.i * 1, "i");
  EXPECT_SIMPLIFY(v.an, v.i * 0, "0");
  EXPECT_SIMPLIFY(v.an, v.n - v.n, "0");
  EXPECT_SIMPLIFY(v.an, (v.n + 3) * 2 - v.n, "(n + 6)");
  EXPECT_SIMPLIFY(v.an, v.j - v.i * 4, "(j - (i * 4))");
  EXPECT_SIMPLIFY(v.an, (v.i + 1) * 8 - 8, "(i * 8)");
  EXPECT_SIMPLIFY(v.an, -(v.n - 2), "((n * -1) + 2)");
  // No order assumptions on an unbounded var: ring identities still hold.
  EXPECT_SIMPLIFY(v.an, v.n * 3 + v.n * 5, "(n * 8)");
}

TEST(SimplifyRules, FloorDivModOfAffine) {
  Vars v;
  EXPECT_SIMPLIFY(v.an, floordiv(v.i * 8 + v.j, 8), "i");
  EXPECT_SIMPLIFY(v.an, floormod(v.i * 8 + v.j, 8), "j");
  EXPECT_SIMPLIFY(v.an, floordiv(v.i * 8 + v.j + 16, 8), "(i + 2)");
  EXPECT_SIMPLIFY(v.an, floormod(v.i * 8 + v.j + 16, 8), "j");
  EXPECT_SIMPLIFY(v.an, floordiv(v.k, 32), "0");
  EXPECT_SIMPLIFY(v.an, floormod(v.k, 32), "k");
  EXPECT_SIMPLIFY(v.an, floordiv(v.i * 32 + v.k, 4), "((i * 8) + (k // 4))");
  EXPECT_SIMPLIFY(v.an, floormod(v.i * 32 + v.k, 4), "(k % 4)");
  EXPECT_SIMPLIFY(v.an, floordiv(v.i * 4, 8), "(i // 2)");
  EXPECT_SIMPLIFY(v.an, floormod(v.i * 4, 8), "((i % 2) * 4)");
  EXPECT_SIMPLIFY(v.an, floordiv(floordiv(v.k, 4), 2), "(k // 8)");
  EXPECT_SIMPLIFY(v.an, floormod(floormod(v.k, 8), 4), "(k % 4)");
  EXPECT_SIMPLIFY(v.an, floordiv(floormod(v.n, 32), 8), "((n // 8) % 4)");
  EXPECT_SIMPLIFY(v.an, floordiv(floormod(v.k, 16), 8), "((k // 8) % 2)");
  EXPECT_SIMPLIFY(v.an, floordiv(v.k, 4) * 4 + floormod(v.k, 4), "k");
  EXPECT_SIMPLIFY(v.an, floordiv(v.n, 1), "n");
  EXPECT_SIMPLIFY(v.an, floormod(v.n, 1), "0");
  // Division by zero is never folded.
  EXPECT_SIMPLIFY(v.an, floordiv(v.i, 0), "(i // 0)");
  EXPECT_SIMPLIFY(v.an, floordiv(make_int(7), make_int(0)), "(7 // 0)");
  // Unbounded n: n*8 may wrap, so (n*8 + j) // 8 is not n.
  EXPECT_SIMPLIFY(v.an, floordiv(v.n * 8 + v.j, 8), "(((n * 8) + j) // 8)");
  Analyzer an2 = v.an;
  an2.bind(v.n, {0, 1000});
  EXPECT_SIMPLIFY(an2, floordiv(v.n * 8 + v.j, 8), "n");
  // Fuse/split round trip.
  Expr fused = v.i * 8 + v.j;
  EXPECT_SIMPLIFY(v.an, floordiv(fused, 8) * 8 + floormod(fused, 8), "((i * 8) + j)");
}

TEST(SimplifyRules, ConstantFoldingSemantics) {
  EXPECT_EQ(str(simplify(floordiv(make_int(-7), make_int(2)))), "-4");
  EXPECT_EQ(str(simplify(floormod(make_int(-7), make_int(2)))), "1");
  EXPECT_EQ(str(simplify(floormod(make_int(7), make_int(-2)))), "-1");
  EXPECT_EQ(str(simplify(make_call(Intrinsic::TruncDiv, {make_int(-7), make_int(2)}))), "-3");
  EXPECT_EQ(str(simplify(make_call(Intrinsic::TruncMod, {make_int(-7), make_int(2)}))), "-1");
  EXPECT_EQ(str(simplify(make_int(2147483647) + make_int(1))), "-2147483648");
  EXPECT_EQ(str(simplify(floordiv(make_int(INT32_MIN), make_int(-1)))), "-2147483648");
  EXPECT_EQ(str(simplify(make_int(200, DType::U8) + make_int(100, DType::U8))), "44:u8");
  EXPECT_EQ(str(simplify(make_int(0, DType::U8) - make_int(1, DType::U8))), "255:u8");
  EXPECT_EQ(str(simplify(make_int(100, DType::I8) * make_int(3, DType::I8))), "44:i8");
  EXPECT_EQ(str(simplify(make_cast(DType::I8, make_int(300)))), "44:i8");
  EXPECT_EQ(str(simplify(make_cast(DType::I32, make_float(-2.7)))), "-2");
  // f32 folding rounds to float: 0.1f + 0.2f in float arithmetic.
  Expr s = simplify(make_float(static_cast<float>(0.1)) + make_float(static_cast<float>(0.2)));
  double d;
  ASSERT_TRUE(is_const_float(s, &d));
  EXPECT_EQ(d, static_cast<double>(static_cast<float>(0.1f) + static_cast<float>(0.2f)));
  EXPECT_EQ(round_float(1.0 + 1.0 / 2048, DType::F16), 1.0);  // tie to even
  EXPECT_EQ(round_float(1.0 + 3.0 / 2048, DType::F16), 1.0 + 2.0 / 1024);
  EXPECT_TRUE(std::isinf(round_float(65520.0, DType::F16)));
  EXPECT_EQ(round_float(65519.0, DType::F16), 65504.0);
  EXPECT_EQ(round_float(1.0 + 1.0 / 256, DType::BF16), 1.0);
  EXPECT_EQ(round_float(std::ldexp(1.0, -24), DType::F16), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(round_float(std::ldexp(1.0, -26), DType::F16), 0.0);
  // Transcendental calls are not folded.
  EXPECT_EQ(str(simplify(make_call(Intrinsic::Exp, {make_float(1.0)}))), "exp(1:f32)");
}

TEST(SimplifyRules, FloatsAreConservative) {
  Var x("x", DType::F32);
  EXPECT_EQ(str(simplify(x * make_float(0.0))), "(x * 0:f32)");
  EXPECT_EQ(str(simplify(x + make_float(0.0))), "(x + 0:f32)");
  EXPECT_EQ(str(simplify(x + make_float(-0.0))), "x");
  EXPECT_EQ(str(simplify(x - make_float(0.0))), "x");
  EXPECT_EQ(str(simplify(x * make_float(1.0))), "x");
  EXPECT_EQ(str(simplify(x / make_float(1.0))), "x");
  EXPECT_EQ(str(simplify(x - x)), "(x - x)");
  EXPECT_EQ(str(simplify(make_binary(BinOp::EQ, x, x))), "(x == x)");
  EXPECT_EQ(str(simplify(-(-x))), "x");
  EXPECT_EQ(str(simplify(min(x, x))), "x");
}

TEST(SimplifyRules, MinMaxCompare) {
  Vars v;
  EXPECT_SIMPLIFY(v.an, min(v.i, make_int(20)), "i");
  EXPECT_SIMPLIFY(v.an, max(v.i, make_int(20)), "20");
  EXPECT_SIMPLIFY(v.an, min(v.i + 1, v.i), "i");
  EXPECT_SIMPLIFY(v.an, max(v.n, v.n), "n");
  EXPECT_SIMPLIFY(v.an, min(v.i, v.j), "min(i, j)");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::LT, v.i, make_int(16)), "true");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::LT, v.i * 8 + v.j, make_int(128)), "true");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::GE, v.i * 8 + v.j, make_int(128)), "false");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::LT, v.i, make_int(15)), "(i < 15)");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::EQ, v.n + 1, v.n), "false");  // exact modulo 2^32
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::EQ, v.n * 2 + v.n, v.n * 3), "true");
  // Unbounded: n + 1 > n fails at INT_MAX.
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::GT, v.n + 1, v.n), "((n + 1) > n)");
  EXPECT_TRUE(v.an.can_prove(make_binary(BinOp::LE, v.i * 8 + v.j, make_int(127))));
  EXPECT_FALSE(v.an.can_prove(make_binary(BinOp::LE, v.i * 8 + v.j, make_int(126))));
}

TEST(SimplifyRules, SelectBoolLet) {
  Vars v;
  Expr t = make_bool(true), f = make_bool(false);
  EXPECT_SIMPLIFY(v.an, make_select(t, v.i, v.j), "i");
  EXPECT_SIMPLIFY(v.an, make_if_then_else(make_binary(BinOp::LT, v.i, make_int(100)), v.i, v.j), "i");
  EXPECT_SIMPLIFY(v.an, make_select(make_binary(BinOp::LT, v.n, make_int(3)), v.i, v.i), "i");
  Expr c = make_binary(BinOp::LT, v.n, make_int(3));
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::And, c, t), "(n < 3)");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::And, c, f), "false");
  EXPECT_SIMPLIFY(v.an, make_binary(BinOp::Or, c, t), "true");
  EXPECT_SIMPLIFY(v.an, make_unary(UnOp::Not, make_unary(UnOp::Not, c)), "(n < 3)");
  EXPECT_SIMPLIFY(v.an, make_unary(UnOp::Not, c), "(n >= 3)");
  // The arm is simplified assuming the condition.
  EXPECT_SIMPLIFY(
      v.an, make_if_then_else(make_binary(BinOp::LT, v.n, make_int(4)), min(v.n, make_int(10)), make_int(0)),
      "if_then_else((n < 4), n, 0)");
  EXPECT_SIMPLIFY(v.an, make_select(c, t, f), "(n < 3)");
  // Linear facts from a branch condition.
  Analyzer an = v.an;
  an.bind(v.i, {0, 100});
  Expr fused = v.i * 8 + v.j;
  Expr lt = make_binary(BinOp::LT, fused, make_int(100));
  EXPECT_SIMPLIFY(an, make_if_then_else(lt, min(fused, make_int(99)), max(fused, make_int(100))),
                  "((i * 8) + j)");
  EXPECT_SIMPLIFY(an,
                  make_if_then_else(lt, make_binary(BinOp::LT, fused + 1, make_int(101)),
                                    make_binary(BinOp::GE, fused - 3, make_int(97))),
                  "true");
  Analyzer an2 = an;
  an2.assume(make_binary(BinOp::LE, v.i * 8 + v.j, v.n));
  // n + 1 wraps at INT_MAX: not provable for an unbounded n ...
  EXPECT_FALSE(an2.can_prove(make_binary(BinOp::LT, v.i * 8 + v.j, v.n + 1)));
  // ... but it is once n is known not to be INT_MAX.
  an2.bind(v.n, {0, 1 << 20});
  EXPECT_TRUE(an2.can_prove(make_binary(BinOp::LT, v.i * 8 + v.j, v.n + 1))) << "symbolic fact";
  EXPECT_FALSE(an2.can_prove(make_binary(BinOp::LT, v.i * 8 + v.j, v.n)));
  EXPECT_SIMPLIFY(v.an, make_select(c, f, t), "(n >= 3)");
  Var l("l");
  EXPECT_SIMPLIFY(v.an, make_let(l, make_int(3), l + v.i), "(i + 3)");
  EXPECT_SIMPLIFY(v.an, make_let(l, v.n * v.n, v.i), "i");
  EXPECT_SIMPLIFY(v.an, make_let(l, v.n * v.n, l + 1), "(let l = (n * n) in (l + 1))");
}

TEST(SimplifyRules, Statements) {
  Var i("i"), j("j");
  Buffer A("A", DType::F32, {make_int(64)});
  // for i in 0..8, j in 0..8: A[(i*8 + j) // 8 * 8 + (i*8+j) % 8] = ...; if i < 8 then ...
  Expr idx = floordiv(i * 8 + j, 8) * 8 + floormod(i * 8 + j, 8);
  Stmt body = make_if(make_binary(BinOp::LT, i, make_int(8)), make_store(A, {idx}, make_float(1.0)));
  Stmt loop = make_for(i, make_int(0), make_int(8), ForKind::Serial,
                       make_for(j, make_int(0), make_int(8), ForKind::Serial, body));
  Stmt s = simplify(loop);
  auto* f1 = s.as<ForNode>();
  ASSERT_TRUE(f1);
  auto* f2 = f1->body.as<ForNode>();
  ASSERT_TRUE(f2);
  auto* st = f2->body.as<StoreNode>();
  ASSERT_TRUE(st) << "the always-true if should be gone";
  EXPECT_EQ(str(st->indices[0]), "((i * 8) + j)");
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// A long sum chain (as produced by unrolling or autodiff accumulation) simplifies quickly.
TEST(SimplifyRules, LargeSumsAreFast) {
  std::vector<Var> vs;
  for (int k = 0; k < 300; ++k) vs.emplace_back("v" + std::to_string(k));
  Expr e = make_int(0);
  for (int rep = 0; rep < 4; ++rep)
    for (auto& v : vs) e = e + v * (rep + 1);
  for (auto& v : vs) e = e - v * 10;
  auto t0 = std::chrono::steady_clock::now();
  Expr s = simplify(e);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(testing::str(s), "0");
  EXPECT_LT(ms, 2000.0);
  // Deeply nested min/max and floordiv chains.
  Var x("x");
  Analyzer an;
  an.bind(x, {0, 1000});
  Expr m = x;
  for (int k = 0; k < 200; ++k) m = min(m + 1, make_int(5000)) - 1;
  t0 = std::chrono::steady_clock::now();
  Expr sm = an.simplify(m);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(testing::str(sm), "x");
  EXPECT_LT(ms, 2000.0);
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

TEST(Linear, FormsAndInverse) {
  Var i("i"), j("j"), n("n");
  auto f = linear_form(i * 4 + j * 2 - n + 3 + i, {i, j});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->coeffs, (std::vector<int64_t>{5, 2}));
  ASSERT_EQ(f->opaque.size(), 1u);
  EXPECT_EQ(testing::str(f->opaque[0].term), "n");
  EXPECT_EQ(f->opaque[0].coeff, -1);
  EXPECT_EQ(f->constant, 3);
  EXPECT_EQ(testing::str(from_linear_form(*f, {i, j})), "((((i * 5) + (j * 2)) - n) + 3)");
  EXPECT_FALSE(linear_form(i * j, {i, j}));
  EXPECT_FALSE(linear_form(floordiv(i, 4), {i}));
  EXPECT_FALSE(linear_form(i + n, {i}, /*allow_opaque=*/false));
  EXPECT_TRUE(linear_form(floordiv(n, 4) + i, {i}));
  // Coefficients wrap like the dtype: i8 (i * 100) * 3 has coefficient 300 - 256 = 44.
  Var b("b", DType::I8);
  auto g = linear_form(b * make_int(100, DType::I8) * make_int(3, DType::I8), {b});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->coeffs[0], 44);
  // u32 subtraction prints as a subtraction.
  Var u("u", DType::U32), w("w", DType::U32);
  EXPECT_EQ(testing::str(simplify(u - w - make_int(1, DType::U32))), "((u - w) - 1:u32)");
}

}  // namespace
}  // namespace tirc

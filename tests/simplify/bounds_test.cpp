// Bounds soundness: random points always lie inside the computed intervals.
#include "transforms/simplify/bounds.h"

#include <gtest/gtest.h>

#include <random>

#include "ir/visitor.h"
#include "tests/simplify/random_expr.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using testing::str;

TEST(Bounds, ConstBoundSoundRandom) {
  testing::RandomExprGen g(21);
  int tight = 0;
  for (int n = 0; n < 3000; ++n) {
    g.make_vars();
    DType t = n % 5 == 0 ? DType::U8 : (n % 7 == 0 ? DType::I64 : DType::I32);
    Expr e = g.gen_int(t, 4);
    Interval b = const_int_bound(e, g.ranges);
    Analyzer an(g.ranges);
    Interval b2 = an.const_bound(e);
    if (b.has_lower() && b.has_upper() && b.hi - b.lo < 1000) ++tight;
    for (int k = 0; k < 16; ++k) {
      auto env = g.sample_env();
      auto v = testing::eval(e, env);
      if (v.err) continue;
      ASSERT_TRUE(b.contains(v.i)) << str(e) << " = " << v.i << " outside [" << b.lo << ", " << b.hi << "]";
      ASSERT_TRUE(b2.contains(v.i)) << str(e) << " = " << v.i << " outside analyzer bound [" << b2.lo << ", "
                                    << b2.hi << "]";
    }
  }
  EXPECT_GT(tight, 500);
}

TEST(Bounds, ExactCases) {
  Var i("i"), j("j"), n("n");
  VarRanges r = {{i.get(), {0, 15}}, {j.get(), {0, 7}}};
  EXPECT_EQ(const_int_bound(i * 8 + j, r), (Interval{0, 127}));
  EXPECT_EQ(const_int_bound(i * 8 + j - i * 8, r), (Interval{0, 7}));
  EXPECT_EQ(const_int_bound(floordiv(i * 8 + j, 8), r), (Interval{0, 15}));
  EXPECT_EQ(const_int_bound(floormod(i, 4), r), (Interval{0, 3}));
  EXPECT_EQ(const_int_bound(floormod(j + 8, 16), r), (Interval{8, 15}));
  EXPECT_EQ(const_int_bound(min(i, j), r), (Interval{0, 7}));
  EXPECT_EQ(const_int_bound(i - j, r), (Interval{-7, 15}));
  EXPECT_EQ(const_int_bound(n, r), (Interval{INT32_MIN, INT32_MAX}));
  // n + 1 may wrap: the whole i32 range.
  EXPECT_EQ(const_int_bound(n + 1, r), (Interval{INT32_MIN, INT32_MAX}));
  EXPECT_EQ(const_int_bound(make_cast(DType::I64, n) + make_int(1, DType::I64), r),
            (Interval{int64_t(INT32_MIN) + 1, int64_t(INT32_MAX) + 1}));
  Var u("u", DType::U8);
  EXPECT_EQ(const_int_bound(u - make_int(1, DType::U8), {}), (Interval{0, 255}));
}

TEST(Bounds, SymbolicExact) {
  Var vi("vi"), k("k"), n("n");
  SymRanges relax = {{k.get(), {make_int(0), make_int(15)}}};
  auto b = symbolic_bound(vi * 16 + k, relax);
  EXPECT_EQ(str(b.min), "(vi * 16)");
  EXPECT_EQ(str(b.max), "((vi * 16) + 15)");
  // Relax over a symbolic range: k in [0, n - 1].
  SymRanges rn = {{k.get(), {make_int(0), n - 1}}};
  auto b2 = symbolic_bound(vi * n + k, rn);
  EXPECT_EQ(str(b2.min), "(vi * n)");
  EXPECT_EQ(str(b2.max), "(((vi * n) + n) - 1)");
  auto b3 = symbolic_bound(vi - k * 2, relax);
  EXPECT_EQ(str(b3.min), "(vi - 30)");
  EXPECT_EQ(str(b3.max), "vi");
  auto b4 = symbolic_bound(floordiv(vi * 16 + k, 4), relax);
  EXPECT_EQ(str(b4.min), "(vi * 4)");
  EXPECT_EQ(str(b4.max), "((vi * 4) + 3)");
}

TEST(Bounds, SymbolicSoundRandom) {
  testing::RandomExprGen g(33);
  g.small_only = true;
  g.allow_float = false;
  int bounded = 0;
  for (int n = 0; n < 2000; ++n) {
    g.make_vars();
    Expr e = g.gen_int(DType::I32, 3);
    // Relax a, b (i32 vars with ranges); keep c, d symbolic.
    SymRanges relax;
    for (int v = 0; v < 2; ++v) {
      auto& r = g.ranges.at(g.vars[v].get());
      relax[g.vars[v].get()] = {make_int(r.lo), make_int(r.hi)};
    }
    VarRanges known;
    for (int v = 2; v < 4; ++v) known[g.vars[v].get()] = g.ranges.at(g.vars[v].get());
    SymInterval b = symbolic_bound(e, relax, known);
    bool has_ite = false;  // bounds of an unevaluated if_then_else arm may fail to evaluate
    for_each_expr(e, [&](const Expr& x) { has_ite |= x.kind() == ExprKind::IfThenElse; });
    if (b.bounded()) ++bounded;
    for (int k = 0; k < 16; ++k) {
      auto env = g.sample_env();
      auto env2 = env, env3 = env;
      auto v = testing::eval(e, env);
      if (v.err) continue;
      if (b.min.defined()) {
        auto lo = testing::eval(b.min, env2);
        if (lo.err && has_ite) continue;
        ASSERT_FALSE(lo.err) << str(e) << " min " << str(b.min);
        ASSERT_LE(lo.i, v.i) << str(e) << " min " << str(b.min);
      }
      if (b.max.defined()) {
        auto hi = testing::eval(b.max, env3);
        if (hi.err && has_ite) continue;
        ASSERT_FALSE(hi.err) << str(e) << " max " << str(b.max);
        ASSERT_GE(hi.i, v.i) << str(e) << " max " << str(b.max);
      }
    }
  }
  EXPECT_GT(bounded, 1000);
}

// Reported by the schedule helper: `f0 % ((n+3)//4) * 4 + f0 // ((n+3)//4)` (symbolic
// divisor) gave the inverted slice A[5:-8]: near-dtype-limit constant ends were added and
// wrapped. Every value of f0 must lie inside the bound, for random n.
TEST(Bounds, SymbolicDivisorSound) {
  Var f0("f0"), n("n");
  Expr q = floordiv(n + 3, 4);
  Expr idx = floormod(f0, q) * 4 + floordiv(f0, q);
  std::mt19937 rng(5);
  for (int known_n = 0; known_n < 2; ++known_n)
    for (Expr hi : {n - 1, q * 4 - 1}) {
      VarRanges known;
      if (known_n) known[n.get()] = {0, Interval::kPosInf};
      SymInterval b = symbolic_bound(idx, {{f0.get(), {make_int(0), hi}}}, known);
      for (int k = 0; k < 50; ++k) {
        int64_t nv = std::uniform_int_distribution<int64_t>(1, 200)(rng);
        testing::Env env;
        testing::Val vn;
        vn.i = nv;
        env[n.get()] = vn;
        int64_t top = testing::eval(hi, env).i;
        for (int64_t f = 0; f <= top; ++f) {
          testing::Val vf;
          vf.i = f;
          env[f0.get()] = vf;
          int64_t v = testing::eval(idx, env).i;
          if (b.min.defined()) {
            ASSERT_LE(testing::eval(b.min, env).i, v) << str(b.min) << " n=" << nv << " f0=" << f;
          }
          if (b.max.defined()) {
            ASSERT_GE(testing::eval(b.max, env).i, v) << str(b.max) << " n=" << nv << " f0=" << f;
          }
        }
      }
    }
}

}  // namespace
}  // namespace tirc

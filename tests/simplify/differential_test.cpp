// Differential tests: simplify() must never change the value of an expression for any
// variable values inside the given ranges. Thousands of random expressions, fixed seeds.
#include <gtest/gtest.h>

#include <random>

#include "tests/simplify/random_expr.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using testing::Env;
using testing::RandomExprGen;
using testing::str;
using testing::Val;

std::string env_str(const RandomExprGen& g, const Env& env) {
  std::string s;
  for (auto& v : g.vars) {
    auto& x = env.at(v.get());
    s += v.name() + "=" + (x.is_f ? std::to_string(x.f) : std::to_string(x.i)) + " ";
  }
  return s;
}

void run_differential(DType t, uint64_t seed, int count, int depth, int* simplified_count) {
  RandomExprGen g(seed);
  int failures = 0;
  for (int n = 0; n < count && failures < 5; ++n) {
    g.make_vars();
    Expr e =
        t == DType::Bool ? g.gen_bool(depth) : (is_float(t) ? g.gen_float(t, depth) : g.gen_int(t, depth));
    Expr s = simplify(e, g.ranges);
    if (!expr_identical(s, e)) ++*simplified_count;
    for (int k = 0; k < 24; ++k) {
      Env env = g.sample_env();
      Env env2 = env;
      Val a = testing::eval(e, env);
      if (a.err) continue;
      Val b = testing::eval(s, env2);
      if (!(a == b)) {
        ++failures;
        ADD_FAILURE() << "value changed\n  expr:       " << str(e) << "\n  simplified: " << str(s)
                      << "\n  at " << env_str(g, env)
                      << "\n  before: " << (a.is_f ? std::to_string(a.f) : std::to_string(a.i)) << " after: "
                      << (b.err    ? std::string("error")
                          : b.is_f ? std::to_string(b.f)
                                   : std::to_string(b.i));
        break;
      }
    }
  }
}

TEST(SimplifyDifferential, I32) {
  int changed = 0;
  run_differential(DType::I32, 1, 4000, 4, &changed);
  EXPECT_GT(changed, 1000);
}
TEST(SimplifyDifferential, I32Deep) {
  int changed = 0;
  run_differential(DType::I32, 2, 1500, 6, &changed);
}
TEST(SimplifyDifferential, NarrowAndWideInts) {
  int changed = 0;
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U32, DType::I64})
    run_differential(t, 3 + static_cast<int>(t), 800, 4, &changed);
}
TEST(SimplifyDifferential, Bool) {
  int changed = 0;
  run_differential(DType::Bool, 4, 3000, 4, &changed);
  EXPECT_GT(changed, 500);
}
TEST(SimplifyDifferential, Floats) {
  int changed = 0;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    run_differential(t, 5 + static_cast<int>(t), 1500, 4, &changed);
  EXPECT_GT(changed, 500);
}

// Idempotence is not a correctness property, but a second pass should rarely find more.
TEST(SimplifyDifferential, SecondPassStable) {
  RandomExprGen g(11);
  int unstable = 0;
  for (int n = 0; n < 1000; ++n) {
    g.make_vars();
    Expr e = g.gen_int(DType::I32, 4);
    Expr s = simplify(e, g.ranges);
    Expr s2 = simplify(s, g.ranges);
    if (!expr_identical(s, s2)) ++unstable;
  }
  EXPECT_LT(unstable, 100);
  RecordProperty("unstable", unstable);
  std::printf("second pass changed %d of 1000\n", unstable);
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// Conditions of the form `var OP const` feed range assumptions into the arms; arms that
// depend on the exact boundary check that the assumptions are neither off by one nor
// applied to the wrong arm.
TEST(SimplifyDifferential, BranchAssumptions) {
  std::mt19937_64 rng(5);
  auto rnd = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Var v("v"), w("w");
  const BinOp ops[] = {BinOp::LT, BinOp::LE, BinOp::GT, BinOp::GE, BinOp::EQ, BinOp::NE};
  int changed = 0;
  for (int n = 0; n < 4000; ++n) {
    VarRanges ranges = {{v.get(), {rnd(-6, 0), rnd(0, 6)}}, {w.get(), {rnd(-6, 0), rnd(0, 6)}}};
    auto cmp = [&](const Var& x) {
      Expr c = make_int(rnd(-5, 5));
      return rnd(0, 1) ? make_binary(ops[rnd(0, 5)], x, c) : make_binary(ops[rnd(0, 5)], c, x);
    };
    auto lin = [&](int64_t c) {
      return v * static_cast<int>(rnd(-2, 2)) + w * static_cast<int>(rnd(-2, 2)) + static_cast<int>(c);
    };
    Expr cond = cmp(v);
    if (rnd(0, 1)) cond = make_binary(ops[rnd(0, 5)], lin(rnd(-3, 3)), make_int(rnd(-5, 5)));
    if (rnd(0, 2) == 0) cond = make_binary(rnd(0, 1) ? BinOp::And : BinOp::Or, cond, cmp(w));
    if (rnd(0, 3) == 0) cond = make_unary(UnOp::Not, cond);
    auto arm = [&]() -> Expr {
      Expr x = rnd(0, 1) ? Expr(v) : Expr(w);
      Expr c = make_int(rnd(-5, 5));
      if (rnd(0, 2) == 0) {
        Expr l = v * static_cast<int>(rnd(-2, 2)) + w * static_cast<int>(rnd(-2, 2)) +
                 static_cast<int>(rnd(-3, 3));
        switch (rnd(0, 2)) {
          case 0: return min(l, c);
          case 1: return max(l, c);
          default: return make_select(make_binary(ops[rnd(0, 5)], l, c), make_int(1), make_int(2));
        }
      }
      switch (rnd(0, 5)) {
        case 0: return min(x, c);
        case 1: return max(x, c);
        case 2: return make_select(make_binary(ops[rnd(0, 5)], x, c), make_int(1), make_int(2));
        case 3: return floordiv(x + make_int(rnd(0, 8)), make_int(rnd(1, 4)));
        case 4: return floormod(x + make_int(rnd(0, 8)), make_int(rnd(1, 4)));
        default: return x * 2 + c;
      }
    };
    Expr e = rnd(0, 1) ? make_if_then_else(cond, arm(), arm()) : make_select(cond, arm(), arm());
    Expr s = simplify(e, ranges);
    if (!expr_identical(s, e)) ++changed;
    for (int64_t a = ranges[v.get()].lo; a <= ranges[v.get()].hi; ++a)
      for (int64_t b = ranges[w.get()].lo; b <= ranges[w.get()].hi; ++b) {
        testing::Env env;
        env[v.get()].i = a;
        env[w.get()].i = b;
        testing::Env env2 = env;
        Val x = testing::eval(e, env), y = testing::eval(s, env2);
        ASSERT_TRUE(x == y) << str(e) << " -> " << str(s) << " at v=" << a << " w=" << b;
      }
  }
  EXPECT_GT(changed, 1000);
}

}  // namespace
}  // namespace tirc

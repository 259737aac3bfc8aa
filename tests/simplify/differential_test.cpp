// Differential tests: simplify() must never change the value of an expression for any
// variable values inside the given ranges. Thousands of random expressions, fixed seeds.
#include <gtest/gtest.h>

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
    Expr e = t == DType::Bool ? g.gen_bool(depth) : (is_float(t) ? g.gen_float(t, depth) : g.gen_int(t, depth));
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
        ADD_FAILURE() << "value changed\n  expr:       " << str(e) << "\n  simplified: " << str(s) << "\n  at "
                      << env_str(g, env) << "\n  before: " << (a.is_f ? std::to_string(a.f) : std::to_string(a.i))
                      << " after: " << (b.err ? std::string("error") : b.is_f ? std::to_string(b.f) : std::to_string(b.i));
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
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U32, DType::I64}) run_differential(t, 3 + static_cast<int>(t), 800, 4, &changed);
}
TEST(SimplifyDifferential, Bool) {
  int changed = 0;
  run_differential(DType::Bool, 4, 3000, 4, &changed);
  EXPECT_GT(changed, 500);
}
TEST(SimplifyDifferential, Floats) {
  int changed = 0;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) run_differential(t, 5 + static_cast<int>(t), 1500, 4, &changed);
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
}

}  // namespace
}  // namespace tirc

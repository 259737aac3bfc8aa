// Library-level tolerances: check_grad and compare_arrays accept rtol = inf (the CLI turns inf
// into the largest double; callers of the library may not): inf * 0 was NaN there, so an exact
// zero (a gradient that is 0, or two equal zeros) failed its check.
#include <gtest/gtest.h>

#include <limits>

#include "parser/parser.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

TEST(InfiniteTolerance, CheckGradPassesAnExactlyZeroGradient) {
  Module m = parse_module(R"(
func f(X: f32[4] in [0.1, 0.4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { Y[vi] = floor(X[vi]) }
  }
})",
                          "t.tir");
  CheckGradOptions o;
  o.rtol = std::numeric_limits<double>::infinity();
  o.atol = 0;
  o.full = true;
  CheckGradResult r = check_grad(*m.funcs.at(0), o);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.passed, 1);
}

TEST(InfiniteTolerance, CompareArraysAcceptsEqualZeros) {
  NDArray a(DType::F32, {3}), b(DType::F32, {3});
  CompareOptions o;
  o.rtol = std::numeric_limits<double>::infinity();
  o.atol = 0;
  CompareResult r = compare_arrays("B", a, b, o);
  EXPECT_TRUE(r.ok) << r.detail;
  b.set(1, 1.0);  // still a finite difference: inf * |1| allows it
  EXPECT_TRUE(compare_arrays("B", a, b, o).ok);
  o.rtol = 0;
  EXPECT_FALSE(compare_arrays("B", a, b, o).ok);
}

}  // namespace
}  // namespace tirc

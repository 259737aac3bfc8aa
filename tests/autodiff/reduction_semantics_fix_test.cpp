// Fixes from the reduction-semantics generator (tests/autodiff/reduction_semantics_test.cpp,
// helper round h8), one test each; docs/autodiff.md, "Reduction semantics (h8)".
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "runtime/ndarray.h"
#include "tests/autodiff/full_checks.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

ArgMap with_n(int64_t n) { return testing::i32_scalars({{"n", n}}); }

void expect_passes(const FunctionNode& f, const ArgMap& given) { testing::expect_full_checks(f, given); }

std::string refusal(const char* src, const char* name) {
  Module m = parse_module(src, "r.tir");
  try {
    gradient(*m.find_func(name), {});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A reduce binding that misses 0 at the first iteration (`k + 1`) never runs the init: Y is
// its earlier value plus the sum. F_grad gave the earlier value no gradient (check_grad
// FAILED for B); a max / product read arg / zero buffers that no init had filled.
TEST(ReductionSemanticsFix, BindingMissingTheFirstPointIsRefused) {
  const char* src = R"(
func f(A: f32[3, 3], B: f32[3]) -> (Y: f32[3]) {
  for i in serial(3) { block Y0(vi: spatial(3) = i) { Y[vi] = sin(B[vi]) } }
  for i, k in grid(3, 2) {
    block R(vi: spatial(3) = i, vk: reduce(3) = k + 1) {
      init { Y[vi] = cos(B[vi]) }
      Y[vi] = Y[vi] + A[vi, vk]
    }
  }
}
func g(A: f32[3, 3], B: f32[3]) -> (Y: f32[3]) {
  for i in serial(3) { block Y0(vi: spatial(3) = i) { Y[vi] = sin(B[vi]) } }
  for i in serial(3) {
    for k in serial(2, 5) {
      block R(vi: spatial(3) = i, vk: reduce(3) = k - 2) { Y[vi] = max(Y[vi], A[vi, vk]) }
    }
  }
}
)";
  EXPECT_EQ(refusal(src, "f"),
            "block R: the binding vk = k + 1 is not 0 at the first iteration of its reduce loops, so the "
            "reduction's first point (every reduce var 0, where the init runs) may never run and Y's "
            "earlier value would flow on: not differentiated");
  // `k - 2` over serial(2, 5) starts at 0: differentiated.
  expect_passes(*parse_module(src, "r.tir").find_func("g"), {});
}

// A reduce loop of symbolic extent bound to an iter var of constant extent (`for k in
// serial(n)`, `vk: reduce(3) = k`) is empty at n = 0 too: the arg buffer was read unfilled.
// A reduce loop whose extent depends on another loop (`serial(i)`) is refused.
TEST(ReductionSemanticsFix, SymbolicReduceLoopExtentMayEmptyTheDomain) {
  const char* src = R"(
func f(n: i32, A: f32[3], B: f32[3]) -> (C: f32[3]) {
  for i in serial(3) { block c(vi: spatial(3) = i) { C[vi] = B[vi] * 2.0 } }
  for i in serial(3) {
    for k in serial(n) {
      block d(vi: spatial(3) = i, vk: reduce(3) = k) { C[vi] = max(C[vi], A[vk] * B[vi]) }
    }
  }
}
func g(A: f32[3, 3], B: f32[3]) -> (C: f32[3]) {
  for i in serial(3) { block c(vi: spatial(3) = i) { C[vi] = B[vi] * 2.0 } }
  for i in serial(3) {
    for k in serial(i) {
      block d(vi: spatial(3) = i, vk: reduce(3) = k) { C[vi] = max(C[vi], A[vi, vk]) }
    }
  }
}
)";
  Module m = parse_module(src, "r.tir");
  for (int64_t n : {0, 2, 3}) expect_passes(*m.find_func("f"), with_n(n));
  EXPECT_EQ(refusal(src, "g"),
            "block d: the extent i of its reduce loop k depends on loop i and may be 0 there, where C's "
            "earlier value would flow on: not differentiated");
}

// `vk = k // 2` over a loop of symbolic extent runs each reduce instance twice (its update
// twice, its init twice): the instance check gave up on the symbolic bounds and F_grad counted
// each once (check_grad FAILED). Now the loops are enumerated at small values of n too.
TEST(ReductionSemanticsFix, RepeatedReduceInstancesUnderSymbolicBoundsAreRefused) {
  std::string m = refusal(R"(
func f(n: i32, A: f32[3, n], B: f32[3]) -> (Y: f32[3]) {
  for i in serial(3) {
    for k in serial(n * 2) {
      block R(vi: spatial(3) = i, vk: reduce(n) = k // 2) {
        init { Y[vi] = B[vi] }
        Y[vi] += A[vi, vk]
      }
    }
  }
}
)",
                          "f");
  EXPECT_EQ(m,
            "block R: the loop iterations (i = 0, k = 0) and (i = 0, k = 1) run the same instance (its "
            "bindings are not one-to-one): each instance must run once (with n = 2)");
}

// A max / min reduction whose `where` or enclosing `if` skips some elements: the arg-extremum
// scatter runs over every spatial point, and read the arg buffer unfilled there (`read of
// uninitialised element Y_arg[2]`). The arg buffer is now filled with "none" first.
TEST(ReductionSemanticsFix, ArgBufferFilledWhereTheBlockSkipsElements) {
  const char* src = R"(
func w(A: f32[3, 2], B: f32[3]) -> (Y: f32[3]) {
  for i in serial(3) { block Y0(vi: spatial(3) = i) { Y[vi] = sin(B[vi]) } }
  for i, k in grid(3, 2) {
    block R(vi: spatial(3) = i, vk: reduce(2) = k) {
      where i < 2
      Y[vi] = max(Y[vi], A[vi, vk])
    }
  }
}
func c(n: i32, A: f32[3, 2], B: f32[3]) -> (Y: f32[3]) {
  for i in serial(3) { block Y0(vi: spatial(3) = i) { Y[vi] = sin(B[vi]) } }
  if n > 1 {
    for i, k in grid(3, 2) {
      block R(vi: spatial(3) = i, vk: reduce(2) = k) { Y[vi] = min(A[vi, vk] * B[vi], Y[vi]) }
    }
  }
  for i in serial(3) { block P(vi: spatial(3) = i) { Y[vi] = Y[vi] * B[vi] + 1.0 } }
}
)";
  Module m = parse_module(src, "r.tir");
  expect_passes(*m.find_func("w"), {});
  for (int64_t n : {1, 2}) expect_passes(*m.find_func("c"), with_n(n));
}

}  // namespace
}  // namespace tirc

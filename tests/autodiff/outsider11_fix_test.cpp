// Fixes found by the eleventh outsider round (tests/zoo/outsider11), each test failed before,
// checked against finite differences.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

// A one-block scan reading its first state `Y[0]` (or any element) at a step that an
// if_then_else guard proves earlier (`vt >= 1`, `vt == 1`, the else arm of `vt == 0`), as the
// blocks of a region may (docs/autodiff.md, Scans): before, refused with "a scan step reads Y
// at an index that is not the scan var vt plus a constant in dimension 0". Forward and reverse
// (store at `6 - vt`) scans, and elements read there that no step writes (T[0], T[1] from the
// block before a scan over [2, 8)). The reverse scan adds into Y[0]'s cotangent at every step,
// which the second order refuses (several stores into one cotangent element), as for two
// carried reads.
TEST(Outsider11Fix, ScanReadsItsFirstStateUnderAGuard) {
  Module m = parse_module(R"(func first_state(X: f32[7], A: f32[2]) -> (Y: f32[7]) {
  for t in serial(7) {
    block s(vt: scan(7) = t) {
      Y[vt] = X[vt] + if_then_else(vt >= 2, A[0] * Y[vt - 2] + A[1] * sin(Y[0]) * Y[vt - 1],
                                   if_then_else(vt == 1, A[1] * Y[0] * Y[0], 0.0))
    }
  }
}
func last_state_rev(X: f32[7], A: f32[1]) -> (Y: f32[7]) {
  for t in serial(7) {
    block s(vt: scan(7) = t) {
      Y[6 - vt] = X[6 - vt] + if_then_else(vt > 0, A[0] * tanh(Y[7 - vt]) + Y[6] * Y[6], 0.0)
    }
  }
}
func anchored(X: f32[3, 6], K: f32[3]) -> (Y: f32[3, 6]) {
  for i, t in grid(3, 6) {
    block s(vi: spatial(3) = i, vt: scan(6) = t) {
      Y[vi, vt] = if_then_else(vt == 0, X[vi, 0], Y[vi, vt - 1] + K[vi] * (Y[vi, 0] - Y[vi, vt - 1]) + X[vi, vt])
    }
  }
}
func written_before(X: f32[8], K: f32[1]) -> (Y: f32[8]) {
  alloc T: f32[8]
  for i in serial(8) {
    block c(vi: spatial(8) = i) { T[vi] = X[vi] * X[vi] }
  }
  for t in serial(2, 8) {
    block s(vt: scan(8) = t) { T[vt] = T[vt] + if_then_else(vt >= 2, K[0] * sin(T[1]) * T[vt - 1] * T[0], 0.0) }
  }
  for i in serial(8) {
    block y(vi: spatial(8) = i) { Y[vi] = T[vi] * 2.0 }
  }
}
func guarded_first_in_if(X: f32[5, 2]) -> (Y: f32[5, 2]) {
  for t, j in grid(5, 2) {
    block s(vt: scan(5) = t, vj: spatial(2) = j) {
      if vt > 0 {
        Y[vt, vj] = Y[vt - 1, vj] * 0.5 + X[vt, vj] * Y[0, vj]
      } else {
        Y[vt, vj] = X[0, vj]
      }
    }
  }
})",
                          "o11.tir");
  for (const char* name :
       {"first_state", "last_state_rev", "anchored", "written_before", "guarded_first_in_if"}) {
    SCOPED_TRACE(name);
    Function f = m.find_func(name);
    ASSERT_TRUE(f);
    expect_full_checks(*f);
    EXPECT_TRUE(grad_of_printed(*f));
  }
}

// Without a guard proving it earlier, the read stays refused (the element is written at step 0,
// which the read at step 0 itself would see before it is written).
TEST(Outsider11Fix, UnguardedFirstStateReadStaysRefused) {
  Function f = parse_one(R"(func unguarded(X: f32[7]) -> (Y: f32[7]) {
  for t in serial(7) {
    block s(vt: scan(7) = t) { Y[vt] = X[vt] + if_then_else(vt < 3, 0.5 * Y[0], 0.0) }
  }
})",
                         "unguarded");
  try {
    gradient(*f, {});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "block s: a scan step reads Y at an index that is not the scan var vt plus a constant in "
              "dimension 0");
  }
}

}  // namespace
}  // namespace tirc

// Scan states of helper round 19 (h10; the zoo round's refusals, /tmp/h5/r19/FINDINGS.md F2):
// a state vector kept in columns of one history buffer (`S[vt, 0] = ..; S[vt, 1] = ..`) in a
// scan step stays refused, but the refusal names the constant column instead of asking to
// index the store by vt (which it is); the same state with one buffer per component works.
// Two states read at a clamped previous step (F3) name that read.
#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/refusal_of.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;
using testing::refusal_of;

// A damped rotation x' = A x + u with its 2-component state in S[t, 0], S[t, 1].
TEST(ScanStateR19, StateVectorInOneBufferNamesTheConstantColumn) {
  const char* src = R"(func f(U: f32[6, 2], A: f32[2, 2] in [-0.5, 0.5]) -> (S: f32[6, 2]) {
  for t in serial(6) {
    block step(vt: scan(6) = t) {
      let x0 = if_then_else(vt == 0, 0.0, S[vt - 1, 0])
      let x1 = if_then_else(vt == 0, 0.0, S[vt - 1, 1])
      S[vt, 0] = A[0, 0] * x0 + A[0, 1] * x1 + U[vt, 0]
      S[vt, 1] = A[1, 0] * x0 + A[1, 1] * x1 + U[vt, 1]
    }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      "block step: a scan step must write elements of its own: the store to S at S[vt, 0] "
      "has the constant index 0 in dimension 1 (a state kept in columns of one buffer); keep each component "
      "in a buffer of its own indexed by vt (e.g. S0[vt], S1[vt])");
}

// The form the message advises: accepted, and its gradient passes check_grad --full in f64.
TEST(ScanStateR19, StateVectorOneBufferPerComponentWorks) {
  Function f = parse_one(R"(func f(U: f32[6, 2], A: f32[2, 2] in [-0.5, 0.5]) -> (S0: f32[6], S1: f32[6]) {
  for t in serial(6) {
    block step(vt: scan(6) = t) {
      let x0 = if_then_else(vt == 0, 0.0, S0[vt - 1])
      let x1 = if_then_else(vt == 0, 0.0, S1[vt - 1])
      S0[vt] = A[0, 0] * x0 + A[0, 1] * x1 + U[vt, 0]
      S1[vt] = A[1, 0] * x0 + A[1, 1] * x1 + U[vt, 1]
    }
  }
})",
                         "f");
  expect_full_checks(*f);
}

// /tmp/h5/r19/FINDINGS.md F3: two states read at the clamp index `max(vt - 1, 0)` (a read
// rewrite 9 cannot place at an earlier step, so it does not split the stores); the refusal
// names that read instead of only the generic "a store reads Y".
TEST(ScanStateR19, ClampedPreviousStepNamesTheRead) {
  const char* src = R"(func f(X: f32[6]) -> (Y: f32[6], Z: f32[6]) {
  for t in serial(6) {
    block s(vt: scan(6) = t) {
      let y = if_then_else(vt == 0, X[0], 0.5 * Y[max(vt - 1, 0)] + X[vt])
      Y[vt] = y
      Z[vt] = if_then_else(vt == 0, X[0], Z[max(vt - 1, 0)] * 0.5 + y)
    }
  }
})";
  EXPECT_EQ(refusal_of(src),
            "block s: a store reads Y, which another store of the same block writes (it reads Y[max(vt - 1, "
            "0)], at "
            "max(vt - 1, 0): a scan step must read an earlier step at the scan var plus a constant, as vt - "
            "1 under "
            "`if_then_else(vt == 0, .., ..)`)");
}

}  // namespace
}  // namespace tirc

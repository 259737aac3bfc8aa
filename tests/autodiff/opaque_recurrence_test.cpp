// Recurrences written over opaque iter vars or as plain loops (normalisation rewrite 8, third
// form: an opaque var carrying a dependence in loop order is read as a scan var). Each
// accepted case was refused before with "opaque iter vars are not supported"; the refusals
// at the end must stay.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/refusal_of.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

// The normalised function computes what f does (interpreter, check_rewrite) and reads a scan
// var; first order on two seeds; with `second`, the gradient of the printed gradient too.
void expect_recurrence_grad(const char* src, const char* name, bool second) {
  std::string text = testing::check_rewrite(src, name);
  EXPECT_NE(text.find(": scan("), std::string::npos) << text;
  Function f = parse_one(src, name);
  expect_full_checks(*f);
  if (second) expect_full_checks(*grad_of_printed(*f));
}

using testing::refusal_of;

const char* kOpaqueRefusal =
    "opaque iter vars are not supported (an opaque var is read as spatial when the iterations write "
    "disjoint elements, or as reduce when every store accumulates into an element that does not depend on "
    "it)";

// The brief's cumsum: first element by an earlier statement, loop from 1 reading i - 1.
TEST(OpaqueRecurrence, CumsumPlainLoops) {
  expect_recurrence_grad(R"(func cs(X: f32[8]) -> (Y: f32[8]) {
  Y[0] = X[0]
  for i in serial(1, 8) { Y[i] = Y[i - 1] + X[i] }
})",
                         "cs", true);
}

TEST(OpaqueRecurrence, CumprodPlainLoops) {
  expect_recurrence_grad(R"(func cp(X: f32[8]) -> (Y: f32[8]) {
  Y[0] = X[0]
  for i in serial(1, 8) { Y[i] = Y[i - 1] * X[i] }
})",
                         "cp", true);
}

// The same cumsum as an explicit opaque block (binding i - 1, store at vi + 1).
TEST(OpaqueRecurrence, CumsumOpaqueBlock) {
  expect_recurrence_grad(R"(func ob(X: f32[8]) -> (Y: f32[8]) {
  block Y0() { Y[0] = X[0] }
  for i in serial(1, 8) {
    block B(vi: opaque(7) = i - 1) { Y[vi + 1] = Y[vi] + X[vi + 1] }
  }
})",
                         "ob", true);
}

// An opaque block under a predicate skipping the first step.
TEST(OpaqueRecurrence, OpaqueBlockWithPredicate) {
  expect_recurrence_grad(R"(func pred(X: f32[8]) -> (Y: f32[8]) {
  block Y0() { Y[0] = X[0] }
  for i in serial(8) {
    block B(vi: opaque(8) = i) {
      where i >= 1
      Y[vi] = Y[vi - 1] * X[vi] + X[vi]
    }
  }
})",
                         "pred", true);
}

// A state over an outer t loop, inner spatial i (rewrite 6 then keeps its history).
TEST(OpaqueRecurrence, LinearStatePlainLoops) {
  expect_recurrence_grad(R"(func lin(A: f32[4], X: f32[6, 4]) -> (S: f32[4]) {
  for i in serial(4) { S[i] = 0.0 }
  for t in serial(6) {
    for i in serial(4) { S[i] = S[i] * A[i] + X[t, i] }
  }
})",
                         "lin", true);
}

TEST(OpaqueRecurrence, LinearStateOpaqueBlock) {
  expect_recurrence_grad(R"(func linb(A: f32[4], X: f32[6, 4]) -> (S: f32[4]) {
  for i in serial(4) { block S0(vi: spatial(4) = i) { S[vi] = 0.0 } }
  for t in serial(6) {
    for i in serial(4) {
      block S1(vt: opaque(6) = t, vi: opaque(4) = i) { S[vi] = S[vi] * A[vi] + X[vt, vi] }
    }
  }
})",
                         "linb", true);
}

// Over rows, the scan loop outside: a row may read any point of an earlier row.
TEST(OpaqueRecurrence, RowsReadOtherPointsOfEarlierRows) {
  expect_recurrence_grad(R"(func rows(X: f32[6, 4]) -> (Y: f32[6, 4]) {
  for j in serial(4) { Y[0, j] = X[0, j] }
  for r in serial(1, 6) {
    for j in serial(4) { Y[r, j] = Y[r - 1, j] * 0.5 + Y[r - 1, 3 - j] * X[r, j] }
  }
})",
                         "rows", false);  // second order: two carried reads (Scans)
}

// Along each row, the scan loop inside: every point is its own chain.
TEST(OpaqueRecurrence, AlongRowsInnerLoop) {
  expect_recurrence_grad(R"(func inner(X: f32[4, 6]) -> (Y: f32[4, 6]) {
  for i in serial(4) {
    Y[i, 0] = X[i, 0]
    for j in serial(1, 6) { Y[i, j] = Y[i, j - 1] * X[i, j] + X[i, j] }
  }
})",
                         "inner", true);
}

TEST(OpaqueRecurrence, StrideTwo) {
  expect_recurrence_grad(R"(func s2(X: f32[8]) -> (Y: f32[8]) {
  Y[0] = X[0]
  Y[1] = X[1]
  for i in serial(2, 8) { Y[i] = Y[i - 2] + X[i] }
})",
                         "s2", true);
}

// An IIR filter with two taps, first as guarded reads, then with its first elements stored
// before the loop. First order only: the backward step adds into two earlier steps, whose
// second order the scan machinery refuses (docs/autodiff.md, Scans).
TEST(OpaqueRecurrence, IirTwoTaps) {
  expect_recurrence_grad(R"(func iir(X: f32[10], C: f32[3]) -> (Y: f32[10]) {
  for i in serial(10) {
    Y[i] = C[0] * X[i] + if_then_else(i >= 1, C[1] * Y[i - 1], 0.0) + if_then_else(i >= 2, C[2] * Y[i - 2], 0.0)
  }
})",
                         "iir", false);
  expect_recurrence_grad(R"(func iir3(X: f32[10], C: f32[3]) -> (Y: f32[10]) {
  Y[0] = C[0] * X[0]
  Y[1] = C[0] * X[1]
  for i in serial(2, 10) { Y[i] = C[0] * X[i] + C[1] * Y[i - 1] + C[2] * Y[i - 2] }
})",
                         "iir3", false);
}

// Refused: a dependence carried by a parallel loop (its iterations have no order). The
// refusals name the block wrapped around the user's plain-loop store, and say which store that
// is (user_names.h).
TEST(OpaqueRecurrence, ParallelLoopStaysRefused) {
  EXPECT_EQ(refusal_of(R"(func par(X: f32[8]) -> (Y: f32[8]) {
  Y[0] = X[0]
  for i in parallel(1, 8) { Y[i] = Y[i - 1] + X[i] }
})",
                       "par"),
            std::string("block Y_1: ") + kOpaqueRefusal +
                " (Y_1: a block generated for buffer Y, from the store at par.tir:3:29)");
}

// Refused: a read of an element a later iteration writes (decreasing order).
TEST(OpaqueRecurrence, DecreasingOrderStaysRefused) {
  EXPECT_EQ(refusal_of(R"(func dec(X: f32[8]) -> (Y: f32[8]) {
  Y[7] = X[7]
  for i in serial(7) { Y[i] = Y[i + 1] + X[i] }
})",
                       "dec"),
            std::string("block Y_1: ") + kOpaqueRefusal +
                " (Y_1: a block generated for buffer Y, from the store at dec.tir:3:24)");
}

// Refused: the scan loop inside the spatial loop, reading another point's earlier step
// (that point's chain has not run yet in loop order).
TEST(OpaqueRecurrence, InnerScanReadingOtherPointStaysRefused) {
  EXPECT_EQ(refusal_of(R"(func ip(X: f32[4, 6]) -> (Y: f32[6, 4]) {
  for j in serial(4) { Y[0, j] = X[j, 0] }
  for j in serial(4) {
    for r in serial(1, 6) { Y[r, j] = Y[r - 1, 3 - j] * 0.5 + X[j, r] }
  }
})",
                       "ip"),
            std::string("block Y_1: ") + kOpaqueRefusal +
                " (Y_1: a block generated for buffer Y, from the store at ip.tir:4:29)");
}

// Refused by the scan machinery: a read at a data-dependent earlier step.
TEST(OpaqueRecurrence, DataDependentStepStaysRefused) {
  EXPECT_EQ(refusal_of(R"(func dd(X: f32[8], I: i32[8]) -> (Y: f32[8]) {
  Y[0] = X[0]
  for i in serial(1, 8) { Y[i] = Y[I[i] % i] + X[i] }
})",
                       "dd"),
            "block Y_1: a scan step reads Y at an index that is not the scan var vi plus a constant in "
            "dimension 0 (Y_1: a block generated for buffer Y, from the store at dd.tir:3:27)");
}

}  // namespace
}  // namespace tirc

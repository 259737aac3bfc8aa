// A recurrence whose first elements are stored by earlier blocks: F_grad keeps the buffer's
// value before the scan in a version copy (the forward recomputation writes the scan's
// elements into a new version). Copying every element read the ones no block had written yet
// ("read of uninitialised element Y[2] of alloc buffer Y"); only the elements the scan
// leaves alone are copied now (docs/autodiff.md, Scans).
#include <gtest/gtest.h>

#include <string>

#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

// Two taps, nonlinear (F_grad recomputes Y), Y[1] reading Y[0] before the scan.
const char* kIir = R"(func iir(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(1) {
    block y0(vi: spatial(1) = i) { Y[0] = X[0] }
  }
  for i in serial(1) {
    block y1(vi: spatial(1) = i) { Y[1] = tanh(X[1] + 0.5 * Y[0]) }
  }
  for t in serial(2, 8) {
    block s(vt: scan(8) = t) {
      where t >= 2
      Y[vt] = tanh(X[vt] + 0.5 * Y[vt - 1] - 0.25 * Y[vt - 2])
    }
  }
}
)";

TEST(ScanVersionCopy, OnlyElementsBeforeTheScanAreCopied) {
  Function f = parse_one(kIir, "iir");
  expect_full_checks(*f);
}

// The same over rows, a scan var bound to a loop starting at 1, the first row by a block
// before it, an in-place read of the element the step writes (its old value is needed, so
// the whole buffer is copied there, as before).
TEST(ScanVersionCopy, RowsAndInPlaceSteps) {
  Function f = parse_one(R"(func rows(X: f32[5, 3]) -> (Y: f32[5, 3]) {
  for j in serial(3) {
    block r0(vj: spatial(3) = j) { Y[0, vj] = sigmoid(X[0, vj]) }
  }
  for t, j in grid(5, 3) {
    block fill(vt: spatial(5) = t, vj: spatial(3) = j) {
      where t >= 1
      Y[vt, vj] = X[vt, vj]
    }
  }
  for t in serial(1, 5) {
    for j in serial(3) {
      block s(vt: scan(5) = t, vj: spatial(3) = j) {
        Y[vt, vj] = tanh(Y[vt, vj] * Y[vt - 1, vj])
      }
    }
  }
}
)",
                         "rows");
  expect_full_checks(*f);
  Function g = parse_one(R"(func rows2(X: f32[5, 3]) -> (Y: f32[5, 3]) {
  for j in serial(3) {
    block r0(vj: spatial(3) = j) { Y[0, vj] = sigmoid(X[0, vj]) }
  }
  for t in serial(1, 5) {
    for j in serial(3) {
      block s(vt: scan(5) = t, vj: spatial(3) = j) {
        Y[vt, vj] = tanh(X[vt, vj] + Y[vt - 1, vj] * Y[vt - 1, vj])
      }
    }
  }
}
)",
                         "rows2");
  expect_full_checks(*g);
}

}  // namespace
}  // namespace tirc

// Cost of integer values computed from floats (`let i0 = i32(floor(p))`, `X[i32(floor(p))]`):
// their float part is a temp of the linearisation, computed once per adjoint block and shared
// with the other uses of the same value; and a hoisted value needing such an invariant temp
// loads it from a buffer of its own. Each test fails without its fix (FLOP bounds).
#include <gtest/gtest.h>

#include <string>

#include "interp/stats.h"
#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

// Occurrences of `floor(` in the printed function.
int count_floor(const FunctionNode& g) {
  int n = 0;
  std::string text = print_function(g);
  for (size_t p = text.find("floor("); p != std::string::npos; p = text.find("floor(", p + 1)) ++n;
  return n;
}

// outsider7's deform_conv1d: `let i0 = i32(floor(p))` was substituted at each use (two bounds
// checks and the index of each of the two reads, in every adjoint block), each `floor` a FLOP:
// 1128 FLOPs for 240 (4.7x). Now `floor(p)` is one temp per block, shared with
// `w = p - floor(p)`: 672 (2.8x).
TEST(CostIntLets, FlooredIndexLetComputedOnce) {
  Function f = parse_one(R"(func dc(X: f32[8], Off: f32[8, 3] in [-1.5, 1.5], W: f32[3]) -> (Y: f32[8]) {
  for l, k in grid(8, 3) {
    block d(vl: spatial(8) = l, vk: reduce(3) = k) {
      init { Y[vl] = 0.0 }
      let p = f32(vl + vk - 1) + Off[vl, vk]
      let i0 = i32(floor(p))
      let w = p - floor(p)
      let a = if_then_else(i0 >= 0 && i0 < 8, X[i0], 0.0)
      let b = if_then_else(i0 + 1 >= 0 && i0 + 1 < 8, X[i0 + 1], 0.0)
      Y[vl] += W[vk] * ((1.0 - w) * a + w * b)
    }
  }
})",
                         "dc");
  Function g = gradient(*f, {});
  double ff = static_counts(*f, {}).total.flops, fg = static_counts(*g, {}).total.flops;
  EXPECT_LE(fg, 2.8 * ff) << print_function(*g);  // 4.7x before
  // One floor per adjoint block (four of them: W, the two reads of X, Off).
  EXPECT_LE(count_floor(*g), 4) << print_function(*g);
  expect_full_checks(*f);
}

// The same value written straight into the indices (no let): the floors of the indices and of
// the weight share one temp.
TEST(CostIntLets, FlooredIndexInLoadComputedOnce) {
  Function f = parse_one(R"(func li(X: f32[9], P: f32[6] in [0.2, 6.8]) -> (Y: f32[6]) {
  for i in serial(6) {
    block b(vi: spatial(6) = i) {
      let w = P[vi] - floor(P[vi])
      Y[vi] = (1.0 - w) * X[i32(floor(P[vi]))] + w * X[i32(floor(P[vi])) + 1]
    }
  }
})",
                         "li");
  Function g = gradient(*f, {});
  double ff = static_counts(*f, {}).total.flops, fg = static_counts(*g, {}).total.flops;
  EXPECT_LE(fg, 1.5 * ff) << print_function(*g);  // 90 FLOPs for 48 before, now 72
  expect_full_checks(*f);
}

// outsider7's bilinear_ac: with `floor(sh)` a temp, the value shared by two gathers over
// (c, h, w), `a * (sh - f32(i32(floor(sh))))`, was hoisted with `floor(sh)` (invariant over c
// and w) recomputed at every point (1316 FLOPs; 1211 before the temps). A hoisted value that
// is not invariant now loads the invariant lets it needs from buffers of their own: 1022.
TEST(CostIntLets, HoistedSharedValueLoadsInvariantLets) {
  Function f = parse_one(R"(func bl(X: f32[2, 4, 4]) -> (Y: f32[2, 7, 7]) {
  for c, h, w in grid(2, 7, 7) {
    block b(vc: spatial(2) = c, vh: spatial(7) = h, vw: spatial(7) = w) {
      let sh = f32(vh) * 0.5
      let sw = f32(vw) * 0.5
      let h0 = i32(floor(sh))
      let w0 = i32(floor(sw))
      let h1 = min(h0 + 1, 3)
      let w1 = min(w0 + 1, 3)
      let lh = sh - f32(h0)
      let lw = sw - f32(w0)
      Y[vc, vh, vw] = (1.0 - lh) * ((1.0 - lw) * X[vc, h0, w0] + lw * X[vc, h0, w1])
                      + lh * ((1.0 - lw) * X[vc, h1, w0] + lw * X[vc, h1, w1])
    }
  }
})",
                         "bl");
  Function g = gradient(*f, {});
  double ff = static_counts(*f, {}).total.flops, fg = static_counts(*g, {}).total.flops;
  EXPECT_LE(fg, 1022) << print_function(*g);
  EXPECT_LE(fg, 0.6 * ff);
  expect_full_checks(*f);
}

}  // namespace
}  // namespace tirc

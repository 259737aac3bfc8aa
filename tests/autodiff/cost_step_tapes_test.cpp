// Cost of recurrences whose step values F_grad computed several times (docs/autodiff.md, Cost
// "Step values of recurrences"): a single-block scan whose backward step adds into several
// earlier elements stores the values its deferred gathers use (a tape); a recurrence's
// forward recomputation stores the step values its backward steps compute again, and the
// pieces of a split step share them; a zero-initialisation moves down to the block it
// fuses with. Each test fails without its change (FLOP bounds), and the gradients stay exact.
#include <gtest/gtest.h>

#include <cstdlib>
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

double flops(const FunctionNode& f) { return static_counts(f, {}).total.flops; }

// outsider9's gru_torch: the backward step `cell_rev` adds into H[t-1, 0], H[t-1, 1] and
// H[t-1, j], and the 20 deferred gathers into the weights each need the cell's values. They
// were computed by the forward recomputation, by cell_rev, and once more by the shared values'
// blocks of hoisting (1104 FLOPs for 210, 5.26x). Now cell_rev loads the gates that the
// forward recomputation stores, and stores the cotangent terms the gathers load: 666 (3.17x).
TEST(CostStepTapes, GruCellComputedOnceForward) {
  Function f = parse_one(
      R"(func gru(X: f32[3, 2], Wi: f32[6, 2], Whh: f32[6, 2], Bi: f32[6], Bh: f32[6]) -> (H: f32[3, 2]) {
  for t, j in grid(3, 2) {
    block cell(vt: scan(3) = t, vj: spatial(2) = j) {
      let h0 = if_then_else(vt > 0, H[vt - 1, 0], 0.0)
      let h1 = if_then_else(vt > 0, H[vt - 1, 1], 0.0)
      let hp = if_then_else(vt > 0, H[vt - 1, vj], 0.0)
      let r = sigmoid(Wi[vj, 0] * X[vt, 0] + Wi[vj, 1] * X[vt, 1] + Bi[vj] + Whh[vj, 0] * h0 + Whh[vj, 1] * h1 + Bh[vj])
      let z = sigmoid(Wi[vj + 2, 0] * X[vt, 0] + Wi[vj + 2, 1] * X[vt, 1] + Bi[vj + 2]
                      + Whh[vj + 2, 0] * h0 + Whh[vj + 2, 1] * h1 + Bh[vj + 2])
      let nn = tanh(Wi[vj + 4, 0] * X[vt, 0] + Wi[vj + 4, 1] * X[vt, 1] + Bi[vj + 4]
                    + r * (Whh[vj + 4, 0] * h0 + Whh[vj + 4, 1] * h1 + Bh[vj + 4]))
      H[vt, vj] = (1.0 - z) * nn + z * hp
    }
  }
})",
      "gru");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 210);
  EXPECT_LE(flops(*g), 666) << print_function(*g);  // 1104 before
  expect_full_checks(*f);
}

// A backward step adding into one earlier element only is differentiated again (Scans): it
// keeps a single store (no tape, nothing loaded from the forward recomputation), and the
// second order still passes.
TEST(CostStepTapes, OneCarriedReadKeepsSecondOrder) {
  Function f = parse_one(R"(func rnn(X: f32[5, 2], W: f32[2]) -> (H: f32[5, 2]) {
  for t, j in grid(5, 2) {
    block c(vt: scan(5) = t, vj: spatial(2) = j) {
      let a = W[vj] * X[vt, vj] + if_then_else(vt > 0, H[vt - 1, vj], 0.0)
      H[vt, vj] = tanh(a) * sigmoid(a)
    }
  }
})",
                         "rnn");
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  EXPECT_EQ(text.find("_tape"), std::string::npos) << text;
  // The same F_grad as without the step tapes.
  ::setenv("TIRC_AD_NO_STEP_TAPES", "1", 1);
  std::string without = print_function(*gradient(*f, {}));
  ::unsetenv("TIRC_AD_NO_STEP_TAPES");
  EXPECT_EQ(text, without);
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// outsider11's kalman_1d: the two-store step is split into two blocks (estimate, variance),
// and the prior variance pp and the gain kg were computed by both pieces and both backward
// steps (240 FLOPs for 48, 5x). Now the estimate piece stores them for the variance piece and
// for both backward steps: 192 (4x).
TEST(CostStepTapes, KalmanGainComputedOnce) {
  Function f = parse_one(
      R"(func kalman(Z: f32[6], Qn: f32[1] in [0.1, 0.5], Rn: f32[1] in [0.2, 1.0]) -> (Xs: f32[6]) {
  alloc Pv: f32[6]
  for t in serial(6) {
    block k(vt: scan(6) = t) {
      let pp = if_then_else(vt == 0, 1.0, Pv[vt - 1]) + Qn[0]
      let xp = if_then_else(vt == 0, 0.0, Xs[vt - 1])
      let kg = pp / (pp + Rn[0])
      Xs[vt] = xp + kg * (Z[vt] - xp)
      Pv[vt] = (1.0 - kg) * pp
    }
  }
})",
      "kalman");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 48);
  EXPECT_LE(flops(*g), 192) << print_function(*g);  // 240 before
  expect_full_checks(*f);
}

// A step value reading an element its own step overwrites (the in-place `Y[vt]`, the
// previous version) is not final in the forward recomputation: it is not stored there for
// the backward step (which reads the earlier version instead).
TEST(CostStepTapes, InPlaceStepValueNotStored) {
  Function f = parse_one(R"(func ip(X: f32[6], A: f32[1] in [0.2, 0.8]) -> (Y: f32[6]) {
  for i in serial(6) {
    block c(vi: spatial(6) = i) { Y[vi] = X[vi] * 0.5 }
  }
  for t in serial(6) {
    block k(vt: scan(6) = t) {
      let q = tanh(Y[vt] * A[0])
      Y[vt] = q * 0.5 + if_then_else(vt >= 2, Y[vt - 1] * q + Y[vt - 2] * q, 0.0)
    }
  }
})",
                         "ip");
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  EXPECT_EQ(text.find("hoist"), std::string::npos) << text;
  expect_full_checks(*f);
}

// outsider9's cumprod_reset: the then arm of the reset test stores X's cotangent, the else
// arm added onto the zeros of `X_grad_init`, emitted before the backward scan (60 FLOPs for
// 12, 5x). The zero-initialisation now moves down to that block and fuses: 48 (4x).
TEST(CostStepTapes, ZeroInitFusesWithItsFirstBlock) {
  Function f = parse_one(R"(func cr(X: f32[2, 6], Rs: i32[6] in [0, 1]) -> (Y: f32[2, 6]) {
  for b, t in grid(2, 6) {
    block p(vb: spatial(2) = b, vt: scan(6) = t) {
      Y[vb, vt] = if_then_else(vt == 0 || Rs[vt] == 1, X[vb, vt], Y[vb, vt - 1] * X[vb, vt])
    }
  }
})",
                         "cr");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 12);
  EXPECT_LE(flops(*g), 48) << print_function(*g);  // 60 before
  std::string text = print_function(*g);
  EXPECT_EQ(text.find("X_grad_init"), std::string::npos) << text;
  expect_full_checks(*f);
}

// outsider10's inplace_rowcol: the mask zeroing the rows the product update overwrote, over
// `spatial(2)`, and the adjoint adding onto those zeros, a gather over `serial(2)` bound to
// `spatial(4)`, did not fuse (136 FLOPs for 32, 4.25x): the loops of a fused nest may now visit
// a prefix of a constant box. 128 (4x).
TEST(CostStepTapes, MaskFusesWithGatherOverPrefix) {
  Function f = parse_one(R"(func irc(X: f32[4, 4]) -> (Y: f32[4, 4]) {
  alloc T: f32[4, 4]
  for i, j in grid(4, 4) {
    block cp(vi: spatial(4) = i, vj: spatial(4) = j) { T[vi, vj] = X[vi, vj] }
  }
  for i, j in grid(2, 4) {
    block sc(vi: spatial(2) = i, vj: spatial(4) = j) { T[vi, vj] = T[vi, vj] * X[vi, 3] }
  }
  for i, j in grid(2, 4) {
    block ad(vi: spatial(2) = i, vj: spatial(4) = j) { T[vi + 2, vj] += T[vi, vj] }
  }
  for i, j in grid(4, 4) {
    block y(vi: spatial(4) = i, vj: spatial(4) = j) { Y[vi, vj] = tanh(T[vi, vj]) }
  }
})",
                         "irc");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 32);
  EXPECT_LE(flops(*g), 128) << print_function(*g);  // 136 before
  expect_full_checks(*f);
  expect_full_checks(*g);
}

}  // namespace
}  // namespace tirc

// Cost round 2 of F_grad (docs/autodiff.md, Cost "Cost round 2"): a pointwise block reading one
// buffer at two index maps computes each point's adjoint terms once (a buffer over the box,
// loaded at both maps), and clones of a block (`<B>_mask`) drop the lets they never read.
// Each test fails without its change (FLOP bounds); the gradients and their second order stay
// exact. The backward steps of a recurrence load the forward's sub-expressions too.
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

double flops(const FunctionNode& f) { return static_counts(f, {}).total.flops; }

// outsider12's tvm_basic_cubic: B[i, j] = f(A0[i, j] * A0[i, j] * A0[j, i]). The gather into
// A0_grad[i, j] needs the cotangent terms B_grad * f'(..) at (i, j) and at (j, i): each
// element's was computed twice (640 FLOPs for 144, 4.44x). They are now computed once per
// element into a buffer and loaded at both maps: 512 (3.56x).
TEST(CostRound2, TransposedReadsShareAdjointTerms) {
  Function f = parse_one(
      R"(func cubic(A0: f32[4, 4], P: f32[4, 4] in [0.1, 2.0]) -> (Bs: f32[4, 4], Bt: f32[4, 4], Bq: f32[4, 4]) {
  for i, j in grid(4, 4) {
    block b(vi: spatial(4) = i, vj: spatial(4) = j) {
      Bs[vi, vj] = sigmoid(A0[vi, vj] * A0[vi, vj] * A0[vj, vi])
      Bt[vi, vj] = tanh(A0[vi, vj] * A0[vi, vj] * A0[vj, vi])
      Bq[vi, vj] = sqrt(P[vi, vj] * P[vi, vj] * P[vj, vi])
    }
  }
})",
      "cubic");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 144);
  EXPECT_LE(flops(*g), 512) << print_function(*g);  // 640 before
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// The same map twice is not a second instance: exp(A[i, j]) read at (i, j) only keeps its
// FLOPs where they are (no buffer over the box), and a non-square box is never shared
// between the two maps (the extents differ in order of first appearance).
TEST(CostRound2, NonSquareBoxNotShared) {
  Function f = parse_one(R"(func ns(A: f32[2, 3], C: f32[3, 2]) -> (B: f32[2, 3]) {
  for i, j in grid(2, 3) {
    block b(vi: spatial(2) = i, vj: spatial(3) = j) {
      B[vi, vj] = exp(A[vi, vj] * C[vj, vi])
    }
  }
})",
                         "ns");
  Function g = gradient(*f, {});
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// A `<B>_mask` clone of a scan step zeroes the cotangent of the elements the step overwrote;
// it kept the step's `let q = tanh(...)` (2 FLOPs per step, never read). Lets a clone does
// not read are dropped.
TEST(CostRound2, MaskCloneDropsDeadLets) {
  Function f = parse_one(R"(func m(X: f32[4], S: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block a(vi: spatial(4) = i) {
      Y[vi] = X[vi] * S[vi]
    }
  }
  for t in serial(3) {
    block s(vt: scan(3) = t) {
      let q = tanh(S[vt] * X[vt + 1])
      Y[vt + 1] = q * Y[vt]
    }
  }
})",
                         "m");
  Function g = gradient(*f, {});
  bool seen = false;
  for (auto& b : static_counts(*g, {}).blocks)
    if (b.name.rfind("s_mask", 0) == 0) {
      seen = true;
      EXPECT_EQ(b.counts.flops, 0) << print_function(*g);  // 6 before
    }
  EXPECT_TRUE(seen) << print_function(*g);
  EXPECT_LE(flops(*g), 65) << print_function(*g);  // 71 before
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// The zoo's lstm: `cell` computes its gates inline (sub-expressions of the stored value, not
// lets) from Z, which the same step's `gates` reduction (a block with an init) wrote just
// before; `cell_rev` and `hidden_rev` recomputed the sigmoid / tanh (4612 FLOPs for 1300,
// 3.55x). The forward recomputation now gives them lets and stores them, the backward steps
// load them: 4512 (3.47x).
TEST(CostRound2, LstmGatesStoredByForward) {
  Function f = parse_one(
      R"(func lstm(X: f32[5, 3], U: f32[16, 3], W: f32[16, 4], Bias: f32[16]) -> (H: f32[5, 4], C: f32[5, 4]) {
  alloc Z: f32[5, 16]
  for t in serial(5) {
    for g, k in grid(16, 7) {
      block gates(vt: scan(5) = t, vg: spatial(16) = g, vk: reduce(7) = k) {
        init {
          Z[vt, vg] = Bias[vg]
        }
        Z[vt, vg] = Z[vt, vg] + if_then_else(vk < 3, U[vg, vk] * X[vt, vk],
                                             if_then_else(vt > 0, W[vg, vk - 3] * H[vt - 1, vk - 3], 0.0))
      }
    }
    for j in serial(4) {
      block cell(vt: scan(5) = t, vj: spatial(4) = j) {
        C[vt, vj] = sigmoid(Z[vt, vj + 4]) * if_then_else(vt > 0, C[vt - 1, vj], 0.0)
                    + sigmoid(Z[vt, vj]) * tanh(Z[vt, vj + 8])
      }
    }
    for j in serial(4) {
      block hidden(vt: scan(5) = t, vj: spatial(4) = j) {
        H[vt, vj] = sigmoid(Z[vt, vj + 12]) * tanh(C[vt, vj])
      }
    }
  }
})",
      "lstm");
  Function g = gradient(*f, {});
  EXPECT_EQ(flops(*f), 1300);
  EXPECT_LE(flops(*g), 4512) << print_function(*g);  // 4612 before
  expect_full_checks(*f);
}

// A value reading what an earlier kid of the same step stored (b's tanh(Y[vt, vj]) after a's
// store of Y[vt, vj]) is final when b computes it: b stores it for the backward steps, whose
// gradients stay exact.
TEST(CostRound2, SameStepEarlierKidValueShared) {
  Function f = parse_one(R"(func two(X: f32[4, 2], W: f32[2]) -> (S: f32[4, 2], Y: f32[4, 2]) {
  for t in serial(4) {
    for j in serial(2) {
      block a(vt: scan(4) = t, vj: spatial(2) = j) {
        Y[vt, vj] = tanh(W[vj] * X[vt, vj] + if_then_else(vt > 0, S[vt - 1, vj], 0.0)) * sigmoid(X[vt, vj])
      }
    }
    for j in serial(2) {
      block b(vt: scan(4) = t, vj: spatial(2) = j) {
        S[vt, vj] = tanh(Y[vt, vj]) * X[vt, vj]
      }
    }
  }
})",
                         "two");
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  EXPECT_NE(text.find("let s4 = tanh(Y[vt, vj])"), std::string::npos) << text;
  expect_full_checks(*f);
}

}  // namespace
}  // namespace tirc

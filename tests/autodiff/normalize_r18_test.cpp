// Helper round 18 (h7): C-style forwards the Refused list of docs/autodiff.md named. Each
// accepted form is checked by check_rewrite (the normalised function equals the original in
// the interpreter, check-grad --full passes in f64, F_grad prints and re-parses); each variant
// that must stay refused has its message pinned.
#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/refusal_of.h"
#include "tests/autodiff/rewrite_check.h"

namespace tirc {
namespace {

using testing::check_rewrite;
using testing::contains;
using testing::refusal_of;

// ---- per-channel states with the step loop outside (rewrite 6, outputs of the step) ----

// `c[j]` is a state per channel, H[t, j] its per-step output in the same loop body. Before:
// "block c_1: a scan step must write elements of its own" (rewrite 6 took only states).
TEST(NormalizeR18, PerChannelStateWithItsOutputInTheSameStep) {
  const char* src = R"(func f(A: f64[6, 3] in [0.1, 0.9], X: f64[6, 3], C0: f64[3]) -> (H: f64[6, 3]) {
  alloc c: f64[3]
  for j in serial(3) {
    c[j] = C0[j]
  }
  for t in serial(6) {
    for j in serial(3) {
      c[j] = c[j] * A[t, j] + X[t, j]
      H[t, j] = c[j]
    }
  }
})";
  std::string t = check_rewrite(src, "f");
  EXPECT_TRUE(contains(t, "c_hist")) << t;
}

// C's sLSTM-like step: a gate as a let shared by the state update and the output (rewrite 0i
// copies the let into each statement first).
TEST(NormalizeR18, PerChannelStateWithAGateLet) {
  const char* src = R"(func f(X: f64[6, 3], C0: f64[3]) -> (H: f64[6, 3]) {
  alloc c: f64[3]
  for j in serial(3) {
    c[j] = C0[j]
  }
  for t in serial(6) {
    for j in serial(3) {
      let g = sigmoid(X[t, j])
      c[j] = c[j] * g + X[t, j]
      H[t, j] = tanh(c[j]) * g
    }
  }
})";
  std::string t = check_rewrite(src, "f");
  EXPECT_TRUE(contains(t, "c_hist")) << t;
}

// The output reads another channel: at (t, j) channel j + 1 still holds step t - 1 (and channel
// 0, read at j = 2, step t): stays refused.
TEST(NormalizeR18, PerChannelStateReadAtAnotherChannelStaysRefused) {
  const char* src = R"(func f(A: f64[6, 3] in [0.1, 0.9], X: f64[6, 3], C0: f64[3]) -> (H: f64[6, 3]) {
  alloc c: f64[3]
  for j in serial(3) {
    c[j] = C0[j]
  }
  for t in serial(6) {
    for j in serial(3) {
      c[j] = c[j] * A[t, j] + X[t, j]
      H[t, j] = c[(j + 1) % 3]
    }
  }
})";
  EXPECT_EQ(refusal_of(src),
            "block c_1: a scan step must write elements of its own: index the store to c by distinct iter "
            "vars, vt among them (to carry a state, keep its history, e.g. H[vt, ...]) (c_1: a block "
            "generated for buffer c, from the store at f.tir:8:7)");
}

// The output before the update reads the previous step (not rewritten: stays refused).
TEST(NormalizeR18, PerChannelStateReadBeforeItsUpdateStaysRefused) {
  const char* src = R"(func f(A: f64[6, 3] in [0.1, 0.9], X: f64[6, 3], C0: f64[3]) -> (H: f64[6, 3]) {
  alloc c: f64[3]
  for j in serial(3) {
    c[j] = C0[j]
  }
  for t in serial(6) {
    for j in serial(3) {
      H[t, j] = c[j] * 2.0
      c[j] = c[j] * A[t, j] + X[t, j]
    }
  }
})";
  EXPECT_EQ(refusal_of(src),
            "block c_1: a scan step must write elements of its own: index the store to c by distinct iter "
            "vars, vt among them (to carry a state, keep its history, e.g. H[vt, ...]) (c_1: a block "
            "generated for buffer c, from the store at f.tir:9:7)");
}

// ---- NeRF compositing in C: a running product read by another accumulation (rewrite 8) ----

// One block (the let's scope holds both statements): the reduce reading made T_p a product
// and Rgb a sum reading its partial values. Before: "block Rgb_1: a store reads T_p, which
// another store of the same block writes". Now read as a recurrence over i: both accumulators
// keep histories (rewrite 6), Rgb reads T before its update.
const char* kNerf = R"(func f(S: f64[3, 5] in [0.1, 1.0], C: f64[3, 5]) -> (Rgb: f64[3]) {
  alloc T: f64[1]
  for r in serial(3) {
    T[0] = 1.0
    Rgb[r] = 0.0
    for i in LOOP(5) {
      let a = 1.0 - exp(-S[r, i])
      Rgb[r] = Rgb[r] + T[0] * a * C[r, i]
      T[0] = T[0] * exp(-S[r, i])
    }
  }
})";

std::string nerf(const std::string& loop) {
  std::string s = kNerf;
  return s.replace(s.find("LOOP"), 4, loop);
}

TEST(NormalizeR18, NerfCompositingOneBlock) {
  std::string t = check_rewrite(nerf("serial"), "f");
  EXPECT_TRUE(contains(t, "scan(5)")) << t;
}

// Two blocks (no shared let), the update first: the sum read T's partial products. Before:
// "block Rgb_1: reads T_p, which block T_p_1 accumulates over loop i ... partial values".
TEST(NormalizeR18, NerfCompositingTwoBlocks) {
  const char* src = R"(func f(S: f64[3, 5] in [0.1, 1.0], C: f64[3, 5]) -> (Rgb: f64[3]) {
  alloc T: f64[1]
  for r in serial(3) {
    T[0] = 1.0
    Rgb[r] = 0.0
    for i in serial(5) {
      T[0] = T[0] * exp(-S[r, i])
      Rgb[r] += T[0] * C[r, i]
    }
  }
})";
  std::string t = check_rewrite(src, "f");
  EXPECT_TRUE(contains(t, "T_p_hist")) << t;
}

// Over a parallel loop there is no loop order to read as a recurrence: stays refused.
TEST(NormalizeR18, NerfCompositingOverAParallelLoopStaysRefused) {
  EXPECT_EQ(refusal_of(nerf("parallel")),
            "block Rgb_1: a store reads T_p, which another store of the same block writes (Rgb_1: a block "
            "generated for buffer Rgb, from the stores at f.tir:8:7, f.tir:9:7; T_p: a block generated for "
            "buffer T, from the store at f.tir:4:5)");
}

}  // namespace
}  // namespace tirc

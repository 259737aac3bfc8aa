// Round 18 (helper h1): sound schedules of derived gradients that compute_at used to refuse
// (docs/schedule.md, "Round 18"). Each lifted form derives F_grad with autodiff, applies the
// schedule and compares the scheduled F_grad with the unscheduled one in the interpreter
// (random inputs, parallel loops also run backwards, printed text re-parsed:
// tvm_style_files.h expect_scheduled_matches); hand-written functions check the edges. Forms
// still refused assert the message.
#include <gtest/gtest.h>

#include "grad_schedule_checks.h"

namespace tirc {
namespace {

using testing::grad_schedule_matches;
using testing::grad_schedule_refusal;

std::string with(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

// (a) cumprod's reverse scan stores `Y_grad_1[vi0, 254 - vj0]` under `if !(255 - vj0 == 0)`:
// its declared regions reach column -1, so the per-row part of the zero-fill / copy looked like
// [-1, 256) and compute_at refused ("do not cover it exactly once"). The guard clips the access
// (guarded_region.h): the rows tile Y_grad_1 exactly.
TEST(GradSchedLiftR18, ComputeAtCopyIntoReverseScanRow) {
  const char* text = R"(func cumprod(X: f32[6, 10] in [0.9, 1.1]) -> (Y: f32[6, 10]) {
  for i, j in grid(6, 10) {
    block cumprod(vi: spatial(6) = i, vj: scan(10) = j) {
      if vj == 0 {
        Y[vi, vj] = X[vi, vj]
      } else {
        Y[vi, vj] = Y[vi, vj - 1] * X[vi, vj]
      }
    }
  }
}
schedule cumprod_grad {
  r = get_block("cumprod_rev")
  ri, rj = get_loops(r)
  compute_at(get_block("Y_grad_1_init"), ri)
}
)";
  std::string out = grad_schedule_matches(text, "cumprod");
  EXPECT_NE(out.find("for i in serial(6) {\n    for ax1 in serial(10) {\n      block Y_grad_1_init("),
            std::string::npos)
      << out;
}

// The same on hand-written scans: a guard in an `if`, in the taken arm of an if_then_else, and
// in the block's where (the copy runs per row, the scan after it in the same row).
const char* kScan = R"(func f(A: f32[4, 8]) -> (D: f32[4, 8]) {
  alloc X: f32[4, 8]
  for i, j in grid(4, 8) {
    block cp(vi: spatial(4) = i, vj: spatial(8) = j) { X[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(4, 8) {
    block scan(vi: spatial(4) = i, vj: scan(8) = j) {
      SCAN
    }
  }
  for i, j in grid(4, 8) {
    block D(vi: spatial(4) = i, vj: spatial(8) = j) { D[vi, vj] = X[vi, vj] }
  }
}
schedule f {
  s = get_block("scan")
  i, j = get_loops(s)
  compute_at(get_block("cp"), i)
}
)";

TEST(GradSchedLiftR18, ComputeAtIntoGuardedScan) {
  testing::apply_and_compare(with(kScan, "SCAN", "if vj >= 1 { X[vi, vj] = X[vi, vj] + X[vi, vj - 1] }"));
  testing::apply_and_compare(
      with(kScan, "SCAN", "X[vi, vj] = X[vi, vj] + if_then_else(vj >= 1, X[vi, vj - 1], 0.0)"));
  // The reverse direction, guarded by `!=` at the end of the range (autodiff's form).
  testing::apply_and_compare(
      with(kScan, "SCAN", "if !(7 - vj == 0) { X[vi, 6 - vj] = X[vi, 6 - vj] + X[vi, 7 - vj] }"));
  // A where on the loop (`j >= 1`) guards the whole block.
  std::string where = with(kScan, "SCAN", "where j >= 1\n      X[vi, vj] = X[vi, vj] + X[vi, vj - 1]");
  testing::apply_and_compare(where);
}

// Guards that do not prove the access inside the row stay refused (the declared region is used).
TEST(GradSchedLiftR18, GuardNotProvenRefused) {
  // A non-linear guard: vj * vj >= 1 holds exactly for vj >= 1, but is not analysed.
  EXPECT_EQ(testing::schedule_refusal(
                with(kScan, "SCAN", "if vj * vj >= 1 { X[vi, vj] = X[vi, vj] + X[vi, vj - 1] }")),
            "compute_at: the parts of X computed in the iterations of loop i do not cover it exactly once "
            "(X is updated by block scan)");
  // select evaluates both arms: the load of column vj - 1 is not guarded (the declared region's
  // column -1 is then a real read: the interpreter would refuse the function).
  EXPECT_EQ(testing::schedule_refusal(
                with(kScan, "SCAN", "X[vi, vj] = X[vi, vj] + select(vj >= 1, X[vi, vj - 1], 0.0)")),
            "compute_at: the parts of X computed in the iterations of loop i do not cover it exactly once "
            "(X is updated by block scan)");
  // A guard on the row (vi, bound to loop i itself: nothing is relaxed there) leaves the read of
  // the previous row: each iteration would need two rows (sound here, as the previous row is
  // final, but not what the exact tiling proves).
  EXPECT_EQ(
      testing::schedule_refusal(with(kScan, "SCAN", "if vi >= 1 { X[vi, vj] = X[vi, vj] + X[vi - 1, vj] }")),
      "compute_at: the parts of X computed in the iterations of loop i do not cover it exactly once "
      "(X is updated by block scan)");
}

// (b) lrn: autodiff's fused elementwise adjoint norm_dX_dS stores X_grad (an output, then
// updated by the channel-window scatter sqr_sum_dX) and S_grad, which sqr_sum_dX reads at
// `c - r + 1` under a where keeping it in [0, 5). Under the fused (n, h) loop of sqr_sum_dX each
// point of norm_dX_dS is computed once, in the iteration that reads it: both buffers are stored
// at the same iter vars, so one exact tiling covers both (refused before as "writes 2 buffers
// and buffer X_grad is also written by block sqr_sum_dX").
const char* kLrn = R"(func lrn(X: f32[2, 5, 3, 4]) -> (Y: f32[2, 5, 3, 4]) {
  alloc S: f32[2, 5, 3, 4]
  for n, c, h, w, r in grid(2, 5, 3, 4, 3) {
    block sqr_sum(vn: spatial(2) = n, vc: spatial(5) = c, vh: spatial(3) = h, vw: spatial(4) = w, vr: reduce(3) = r) {
      init { S[vn, vc, vh, vw] = 0.0 }
      S[vn, vc, vh, vw] += if_then_else(vc + vr >= 1 && vc + vr <= 5, X[vn, vc + vr - 1, vh, vw] * X[vn, vc + vr - 1, vh, vw], 0.0)
    }
  }
  for n, c, h, w in grid(2, 5, 3, 4) {
    block norm(vn: spatial(2) = n, vc: spatial(5) = c, vh: spatial(3) = h, vw: spatial(4) = w) {
      Y[vn, vc, vh, vw] = X[vn, vc, vh, vw] / pow(2.0 + 0.16666667 * S[vn, vc, vh, vw], 0.75)
    }
  }
}
schedule lrn_grad {
  d = get_block("sqr_sum_dX")
  n, c, h, r, w = get_loops(d)
  reorder(n, h, c, r, w)
  nh = fuse(n, h)
  SCHED
}
)";

TEST(GradSchedLiftR18, ComputeAtTwoOutputAdjoint) {
  std::string out =
      grad_schedule_matches(with(kLrn, "SCHED", "compute_at(get_block(\"norm_dX_dS\"), nh)"), "lrn");
  EXPECT_NE(out.find("for nh in serial(6) {\n    for ax1_1 in serial(5) {\n      for ax3_1 in serial(4) {\n"
                     "        block norm_dX_dS("),
            std::string::npos)
      << out;
  // Under the channel loop c every (n, h, c) would compute the whole channel window of S_grad:
  // points computed several times, which the output X_grad (and sqr_sum_dX's updates) forbid.
  EXPECT_EQ(
      grad_schedule_refusal(with(kLrn, "SCHED", "compute_at(get_block(\"norm_dX_dS\"), c)"), "lrn"),
      "compute_at: the parts of X_grad computed in the iterations of loop ax1 do not cover it exactly once "
      "(X_grad is an output; block norm_dX_dS also writes S_grad, at the same iter vars)");
}

// A hand-written two-output block: an output among its buffers and an update of the other under
// the loop; and a block whose second buffer is read after the loop.
const char* kTwo = R"(func two(A: f32[4, 6]) -> (B: f32[4, 6], Q: f32[4, 6]) {
  alloc S: f32[4, 6]
  for i, j in grid(4, 6) {
    block st(vi: spatial(4) = i, vj: spatial(6) = j) {
      S[vi, vj] = A[vi, vj] * 2.0
      Q[vi, vj] = A[vi, vj] + 1.0
    }
  }
  for i, j in grid(4, 6) {
    block B(vi: spatial(4) = i, vj: spatial(6) = j) {
      B[vi, vj] = S[vi, vj] + Q[vi, vj]
      Q[vi, vj] = Q[vi, vj] * 3.0
    }
  }
  AFTER
}
schedule two {
  b = get_block("B")
  i, j = get_loops(b)
  compute_at(get_block("st"), LOOP)
}
)";

TEST(GradSchedLiftR18, ComputeAtTwoOutputHandWritten) {
  testing::apply_and_compare(with(with(kTwo, "AFTER", ""), "LOOP", "i"));
  testing::apply_and_compare(with(with(kTwo, "AFTER", ""), "LOOP", "j"));
  // S read again after the loop: every element must be computed (it is, once per element).
  std::string after =
      with(kTwo, "AFTER",
           "for i, j in grid(4, 6) {\n"
           "    block E(vi: spatial(4) = i, vj: spatial(6) = j) { B[vi, vj] = B[vi, vj] + S[vi, vj] }\n"
           "  }");
  testing::apply_and_compare(with(after, "LOOP", "i"));
  // Another writer of S before the loop (between st and B) is still refused.
  std::string between = with(kTwo, "AFTER", "");
  between = with(between, "  for i, j in grid(4, 6) {\n    block B(",
                 "  for i in serial(4) {\n    block Z(vi: spatial(4) = i) { S[vi, 0] = 0.0 }\n  }\n"
                 "  for i, j in grid(4, 6) {\n    block B(");
  EXPECT_EQ(testing::schedule_refusal(with(between, "LOOP", "i")),
            "compute_at: buffer S is also written by block Z");
}

// (c) A producer with a consumer after the loop gets the exact tiling (every element computed
// once, in the loop, before the consumer after it): layer norm's centred input hoist0 computed
// in var's row loop, read again by the backward blocks (refused before: "consumer block
// out_dGamma of block hoist0 is not under loop i").
const char* kLayerNorm = R"(func layer_norm(X: f32[4, 8], Gamma: f32[8], Beta: f32[8]) -> (Y: f32[4, 8]) {
  alloc Mean: f32[4]
  alloc Var: f32[4]
  for i, k in grid(4, 8) {
    block mean(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Mean[vi] = 0.0 }
      Mean[vi] += X[vi, vk] * 0.125
    }
  }
  for i, k in grid(4, 8) {
    block var(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Var[vi] = 0.0 }
      Var[vi] += (X[vi, vk] - Mean[vi]) * (X[vi, vk] - Mean[vi]) * 0.125
    }
  }
  for i, j in grid(4, 8) {
    block out(vi: spatial(4) = i, vj: spatial(8) = j) {
      Y[vi, vj] = (X[vi, vj] - Mean[vi]) * rsqrt(Var[vi] + 1e-5) * Gamma[vj] + Beta[vj]
    }
  }
}
schedule layer_norm_grad {
  v = get_block("var")
  i, k = get_loops(v)
  SCHED
}
)";

TEST(GradSchedLiftR18, ComputeAtWithConsumerAfterTheLoop) {
  std::string out =
      grad_schedule_matches(with(kLayerNorm, "SCHED", "compute_at(get_block(\"hoist0\"), i)"), "layer_norm");
  EXPECT_NE(out.find("for i in serial(4) {\n    for ax1_1 in serial(8) {\n      block hoist0("),
            std::string::npos)
      << out;
  // Then the mean into the same row loop (its consumers hoist0 and var are there now).
  grad_schedule_matches(with(kLayerNorm, "SCHED",
                             "compute_at(get_block(\"hoist0\"), i)\n"
                             "  compute_at(get_block(\"mean\"), i)"),
                        "layer_norm");
  // Under the reduction loop k each (i, k) computes the element it reads: still exact.
  grad_schedule_matches(with(kLayerNorm, "SCHED", "compute_at(get_block(\"hoist0\"), k)"), "layer_norm");
}

// What stays refused with a consumer after the loop: a halo read under the loop (an element
// computed in two iterations), and a consumer between the producer and the loop.
const char* kAfter = R"(func f(A: f32[8]) -> (D: f32[8], E: f32[8]) {
  alloc X: f32[8]
  for i in serial(8) {
    block P(vi: spatial(8) = i) { X[vi] = A[vi] * 2.0 }
  }
  MID
  for i in serial(LOOP) {
    block D(vi: spatial(8) = i) { D[vi] = READ }
  }
  for i in serial(8) {
    block E(vi: spatial(8) = i) { E[vi] = X[vi] + 1.0 }
  }
}
schedule f {
  d = get_block("D")
  i, = get_loops(d)
  compute_at(get_block("P"), i)
}
)";

std::string after(const std::string& mid, const std::string& loop, const std::string& read) {
  return with(with(with(kAfter, "MID", mid), "LOOP", loop), "READ", read);
}

TEST(GradSchedLiftR18, ConsumerAfterTheLoopRefusals) {
  testing::apply_and_compare(after("", "8", "X[vi] * 3.0"));
  // Reversed reads would tile too, but the exact tiling takes tiles starting at multiples of
  // their size only (kept refused).
  EXPECT_EQ(testing::schedule_refusal(after("", "8", "X[7 - vi] * 3.0")),
            "compute_at: consumer block E of block P is not under loop i");
  EXPECT_EQ(testing::schedule_refusal(after("", "7", "X[vi] + X[vi + 1]")),
            "compute_at: consumer block E of block P is not under loop i");
  // Rows 0..3 only under the loop: E after it would read rows nobody computed.
  EXPECT_EQ(testing::schedule_refusal(
                with(after("", "8", "X[vi // 2]"), "D(vi: spatial(8) = i)", "D(vi: spatial(8) = i)")),
            "compute_at: consumer block E of block P is not under loop i");
  std::string mid = "for i in serial(8) {\n    block M(vi: spatial(8) = i) { E[vi] = X[vi] }\n  }";
  EXPECT_EQ(testing::schedule_refusal(after(mid, "8", "X[vi] * 3.0")),
            "compute_at: consumer block M of block P is not under loop i");
}

}  // namespace
}  // namespace tirc

// Round 19 (helper h1): sound schedules of derived gradients that were refused (docs/schedule.md,
// "Round 19"): compute_at of an in-place update with several stores (autodiff's fused pointwise
// adjoints) and TVM's cache_inplace for accumulations without init (with compute_at /
// reverse_compute_at of its copies into a tile loop). Each lifted form is compared with the
// unscheduled function in the interpreter (random inputs; on gradients the scheduled F_grad
// against the unscheduled one); forms still refused assert the message.
#include <gtest/gtest.h>

#include "grad_schedule_checks.h"

namespace tirc {
namespace {

using testing::grad_schedule_matches;
using testing::grad_schedule_refusal;
using testing::schedule_refusal;

std::string with(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

// (a) An in-place update with a second store at another offset (h6 round 18, F1): Y updated in
// place, Z stored at columns [8, 16) that the consumer c (updating Z's columns [0, 8)) never
// touches. Computed at c's row loop, each element runs once, in its row's iteration.
const char* kTwoStores = R"(func g(A: f32[4, 8], B: f32[4, 8]) -> (Y: f32[4, 8], Z: f32[4, 16]) {
  for i, j in grid(4, 16) {
    block z0(vi: spatial(4) = i, vj: spatial(16) = j) {
      Z[vi, vj] = 0.0
    }
  }
  for i, j in grid(4, 8) {
    block y0(vi: spatial(4) = i, vj: spatial(8) = j) {
      Y[vi, vj] = A[vi, vj]
    }
  }
  for i, j in grid(4, 8) {
    block h(vi: spatial(4) = i, vj: spatial(8) = j) {
      HBODY
    }
  }
  for i, j in grid(4, 8) {
    block c(vi: spatial(4) = i, vj: spatial(8) = j) {
      CBODY
    }
  }
}
schedule g {
  i, j = get_loops(get_block("c"))
  compute_at(get_block("h"), i)
}
)";

std::string two_stores(const std::string& h, const std::string& c) {
  return with(with(kTwoStores, "HBODY", h), "CBODY", c);
}

const char* kH = "Y[vi, vj] = Y[vi, vj] + B[vi, vj]\n      Z[vi, vj + 8] = B[vi, vj] * 2.0";
const char* kC = "Z[vi, vj] = Z[vi, vj] + Y[vi, vj]";

TEST(GradSchedLiftR19, ComputeAtTwoStoreUpdate) {
  std::string out = testing::apply_and_compare(two_stores(kH, kC));
  EXPECT_NE(out.find("  for i in serial(4) {\n    for ax1 in serial(8) {\n      block h("), std::string::npos)
      << out;
  // A reversed second store (`Z[vi, 15 - vj]`) and the update written second.
  testing::apply_and_compare(
      two_stores("Z[vi, 15 - vj] = B[vi, vj] * 2.0\n      Y[vi, vj] = Y[vi, vj] * B[vi, vj]", kC));
}

TEST(GradSchedLiftR19, ComputeAtTwoStoreUpdateRefused) {
  // The second buffer read at another element than the instance stores: not an in-place update.
  EXPECT_EQ(schedule_refusal(two_stores(
                "Y[vi, vj] = Y[vi, vj] + B[vi, vj]\n      Z[vi, vj + 8] = Z[vi, 15 - vj] * 2.0", kC)),
            "compute_at: block h reads buffer Z, which it writes, and is not a reduction with init");
  // The consumer reads a halo of the updated buffer (the next row): parts computed twice.
  EXPECT_EQ(schedule_refusal(two_stores(kH, "Z[vi, vj] = Z[vi, vj] + Y[vi, vj] + Y[(vi + 1) % 4, vj]")),
            "compute_at: the parts of Y computed in the iterations of loop i do not cover it exactly once "
            "(Y is an output; block h also writes Z)");
  // The consumer also updates columns h stores (not apart): its reads of Z, taken to h's iter vars,
  // widen the part computed per iteration past a tiling.
  EXPECT_EQ(schedule_refusal(two_stores(kH, "Z[vi, vj + 4] = Z[vi, vj + 4] + Y[vi, vj]")),
            "compute_at: the parts of Y computed in the iterations of loop i do not cover it exactly once "
            "(Y is an output; block h also writes Z)");
}

// The LSTM cell's F_grad (grad_sched18/lstm_cell_compute_at_two_stores.tir, refused before):
// hidden_dC1_dG (updates C1_grad_1, stores G_grad's columns [96, 128)) at the row loop of
// cell_dC0_dG_dG_dG (updates G_grad's columns [0, 96)), parallel.
TEST(GradSchedLiftR19, LstmCellComputeAtTwoStores) {
  const char* text =
      R"(func lstm_cell(X: f32[4, 8], H0: f32[4, 8], C0: f32[4, 8], Wx: f32[32, 8], Wh: f32[32, 8], B: f32[32]) -> (H1: f32[4, 8], C1: f32[4, 8]) {
  alloc G: f32[4, 32]
  for b, g, k in grid(4, 32, 8) {
    block gates(vb: spatial(4) = b, vg: spatial(32) = g, vk: reduce(8) = k) {
      init { G[vb, vg] = B[vg] }
      G[vb, vg] += X[vb, vk] * Wx[vg, vk] + H0[vb, vk] * Wh[vg, vk]
    }
  }
  for b, j in grid(4, 8) {
    block cell(vb: spatial(4) = b, vj: spatial(8) = j) {
      C1[vb, vj] = sigmoid(G[vb, vj + 8]) * C0[vb, vj] + sigmoid(G[vb, vj]) * tanh(G[vb, vj + 16])
    }
  }
  for b, j in grid(4, 8) {
    block hidden(vb: spatial(4) = b, vj: spatial(8) = j) {
      H1[vb, vj] = sigmoid(G[vb, vj + 24]) * tanh(C1[vb, vj])
    }
  }
}
schedule lstm_cell_grad {
  cd = get_block("cell_dC0_dG_dG_dG")
  cb, cj = get_loops(cd)
  parallel(cb)
  compute_at(get_block("hidden_dC1_dG"), cb)
}
)";
  std::string out = grad_schedule_matches(text, "lstm_cell");
  EXPECT_NE(out.find("block hidden_dC1_dG(vb0: spatial(4) = b"), std::string::npos) << out;
}

// (c) cache_inplace on an accumulation without init (autodiff's GEMM-shaped adjoint form, h6
// round 18 F4): the copies moved into the row tile keep the accumulator of the tile in "local".
const char* kGemm = R"(func g(A: f32[8, 16], B: f32[16, 8]) -> (C: f32[8, 8]) {
  for i, j in grid(8, 8) {
    block C_init(vi: spatial(8) = i, vj: spatial(8) = j) {
      C[vi, vj] = 0.0
    }
  }
  for i, k, j in grid(8, 16, 8) {
    block acc(vi: spatial(8) = i, vj: spatial(8) = j, vk: reduce(16) = k) {
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
schedule g {
  b = get_block("acc")
  i, k, j = get_loops(b)
  SCHED
}
)";

TEST(GradSchedLiftR19, CacheInplace) {
  // Alone: copy-in before the nest, copy-out after it.
  std::string out =
      testing::apply_and_compare(with(kGemm, "SCHED", "cin, cout = cache_inplace(b, 0, \"local\")"));
  EXPECT_NE(out.find("alloc C_local: f32[8, 8] scope \"local\""), std::string::npos) << out;
  EXPECT_NE(out.find("block C_local(v0: spatial(8) = ax0, v1: spatial(8) = ax1)"), std::string::npos) << out;
  EXPECT_NE(out.find("C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]"), std::string::npos) << out;
  EXPECT_NE(out.find("block C_local_out("), std::string::npos) << out;
  // The copies moved into the row loop; the buffer named instead of its index; one name for both.
  out =
      testing::apply_and_compare(with(kGemm, "SCHED",
                                      "cin, cout = cache_inplace(b, \"C\", \"local\")\n  compute_at(cin, i)\n"
                                      "  reverse_compute_at(cout, i)"));
  EXPECT_NE(
      out.find(
          "  for i in serial(8) {\n    for ax1_1 in serial(8) {\n      block C_local(v0: spatial(8) = i"),
      std::string::npos)
      << out;
  testing::apply_and_compare(
      with(kGemm, "SCHED",
           "cs = cache_inplace(b, 0, \"local\")\n  compute_at(cs[0], i)\n  reverse_compute_at(cs[1], i)"));
  // A 2-d tile (rows by 4, columns by 4): the copy-in of a later tile reads C where the copy-out
  // of an earlier one stored, in other elements only.
  testing::apply_and_compare(with(
      kGemm, "SCHED",
      "io, ii = split(i, [None, 4])\n  jo, ji = split(j, [None, 4])\n  reorder(io, jo, k, ii, ji)\n"
      "  cin, cout = cache_inplace(b, 0, \"local\")\n  compute_at(cin, jo)\n  reverse_compute_at(cout, jo)"));
}

TEST(GradSchedLiftR19, CacheInplaceRefused) {
  EXPECT_EQ(schedule_refusal(with(kGemm, "SCHED", "cache_inplace(b, 1, \"local\")")),
            "cache_inplace: block acc does not both read and write buffer A");
  EXPECT_EQ(schedule_refusal(with(kGemm, "SCHED", "cache_inplace(b, 3, \"local\")")),
            "cache_inplace: block acc has 3 read regions; index 3 is out of range");
  EXPECT_EQ(schedule_refusal(with(kGemm, "SCHED", "cache_inplace(b, 0, \"texture\")")),
            "cache_inplace: unknown storage scope \"texture\" (expected global, shared or local)");
  EXPECT_EQ(schedule_refusal(with(kGemm, "SCHED", "a = cache_inplace(b, 0, \"local\")[2]")),
            "cache_inplace: index 2 is out of range: cache_inplace returns 2 handles");
  // A parallel loop inside the block's own nest (the copies go around it): accepted since the
  // review of round 19 (F3 of r1; a loop above the nest stays refused, SchedFuzzR19 tests).
  testing::apply_and_compare(with(kGemm, "SCHED", "parallel(i)\n  cache_inplace(b, 0, \"local\")"));
  // Writes outside what it reads: the copy back would store cache elements never loaded.
  const char* wide = R"(func g(A: f32[8, 8]) -> (C: f32[8, 8]) {
  for i, j in grid(8, 8) {
    block C_init(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = 0.0 }
  }
  for i, j in grid(8, 8) {
    block upd(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = C[vi, 0] + A[vi, vj] }
  }
}
schedule g {
  cache_inplace(get_block("upd"), 0, "local")
}
)";
  // (Since the review of round 19 the copies hold the one index tuple the block accesses; a block
  // reading another element than it writes is refused for that first.)
  EXPECT_EQ(
      schedule_refusal(wide),
      "cache_inplace: block upd does not read each element of C it accesses before writing it at one "
      "index (it accesses C at several index tuples), so the copy-in could read elements the block does "
      "not read");
}

// reverse_compute_at of a block storing X where it loads a buffer produced under the loop (the
// copy-out of cache_inplace), while a block under the loop reads X: accepted when that block
// reads inside its own iteration's tile (round 19), refused when it reads another row, which
// the moved block of an earlier iteration would have stored.
const char* kReader = R"(func g(A: f32[8, 8], B: f32[8, 8]) -> (X: f32[8, 8], T: f32[8, 8]) {
  alloc P: f32[8, 8]
  for i, j in grid(8, 8) {
    block x0(vi: spatial(8) = i, vj: spatial(8) = j) { X[vi, vj] = A[vi, vj] }
  }
  for i in serial(8) {
    for j in serial(8) {
      block r(vi: spatial(8) = i, vj: spatial(8) = j) { T[vi, vj] = X[ROW, vj] + 1.0 }
    }
    for j in serial(8) {
      block p(vi: spatial(8) = i, vj: spatial(8) = j) { P[vi, vj] = B[vi, vj] * 2.0 }
    }
  }
  for i, j in grid(8, 8) {
    block c(vi: spatial(8) = i, vj: spatial(8) = j) { X[vi, vj] = P[vi, vj] }
  }
}
schedule g {
  i, j = get_loops(get_block("p"))
  reverse_compute_at(get_block("c"), i)
}
)";

TEST(GradSchedLiftR19, ReverseComputeAtStoreOverReaderTile) {
  testing::apply_and_compare(with(kReader, "ROW", "vi"));
  EXPECT_EQ(
      schedule_refusal(with(kReader, "ROW", "7 - vi")),
      "reverse_compute_at: block r reads buffer X under loop i, which block c updates: moved there, its "
      "updates of earlier iterations would be seen");
}

// The dense layer's F_grad: both GEMM adjoints (dX = dY . W, dW = dY^T . X) tiled, each with a
// register accumulator per tile (the measurement of docs/schedule.md "Round 19").
TEST(GradSchedLiftR19, DenseGradCacheInplace) {
  const char* text = R"(func dense(X: f32[8, 16], W: f32[12, 16]) -> (Y: f32[8, 12]) {
  for i, j, k in grid(8, 12, 16) {
    block Y(vi: spatial(8) = i, vj: spatial(12) = j, vk: reduce(16) = k) {
      init { Y[vi, vj] = 0.0 }
      Y[vi, vj] += X[vi, vk] * W[vj, vk]
    }
  }
}
schedule dense_grad {
  b = get_block("Y_dX")
  i, k, j = get_loops(b)
  io, ii = split(i, [None, 4])
  jo, ji = split(j, [None, 8])
  reorder(io, jo, k, ii, ji)
  cin, cout = cache_inplace(b, 1, "local")
  compute_at(cin, jo)
  reverse_compute_at(cout, jo)
  w = get_block("Y_dW")
  a, r, c = get_loops(w)
  ao, ai = split(a, [None, 4])
  reorder(ao, r, ai)
  win, wout = cache_inplace(w, "W_grad", "local")
  compute_at(win, ao)
  reverse_compute_at(wout, ao)
}
)";
  std::string out = grad_schedule_matches(text, "dense");
  EXPECT_NE(out.find("X_grad_local[v4, v5] = X_grad_local[v4, v5] + a0 * W[r0, v5]"), std::string::npos)
      << out;
}

// Follow-ups of round 19 (helper h9; h6's findings F1, F2, F4 of the scheduled-gradients round).

// F2: two scatters updating X in place over the planes (n, c), v moved into the FUSED loop
// `nc = fuse(n, c)` (bindings `nc // 4, nc % 4`): each iteration touches only plane (n, c), as
// into loop n (accepted before). The tile test now sees through the split bindings
// (tiles_split_loops). READER: a block in the same nest reading X, the plane of its own
// iteration or another one (refused: v's updates of earlier iterations would be seen).
const char* kFusedScatter =
    R"(func f(A: f32[4, 4, 8], I: i32[8] in [0, 7]) -> (X: f32[4, 4, 8], S: f32[4, 4]) {
  for n, c, k in grid(4, 4, 8) {
    block x0(vn: spatial(4) = n, vc: spatial(4) = c, vk: spatial(8) = k) {
      X[vn, vc, vk] = A[vn, vc, vk]
    }
  }
  for n, c in grid(4, 4) {
    for k in serial(8) {
      block u(vn: spatial(4) = n, vc: spatial(4) = c, vk: reduce(8) = k) {
        reads I[vk], A[vn, vc, vk], X[vn, vc, 0:8]
        writes X[vn, vc, 0:8]
        annotate("atomic", 1)
        let t = I[vk]
        X[vn, vc, t] = X[vn, vc, t] + A[vn, vc, vk]
      }
    }
    for k in serial(8) {
      block r(vn: spatial(4) = n, vc: spatial(4) = c, vk: reduce(8) = k) {
        init { S[vn, vc] = 0.0 }
        S[vn, vc] += X[READER, vk]
      }
    }
  }
  for n, c, k in grid(4, 4, 8) {
    block v(vn: spatial(4) = n, vc: spatial(4) = c, vk: reduce(8) = k) {
      reads I[vk], A[vn, vc, vk], X[vn, vc, 0:8]
      writes X[vn, vc, 0:8]
      annotate("atomic", 1)
      let t = I[(vk + 3) % 8]
      X[vn, vc, t] = X[vn, vc, t] + A[vn, vc, vk] * 2.0
    }
  }
}
schedule f {
  n, c, k = get_loops(get_block("u"))
  nc = fuse(n, c)
  reverse_compute_at(get_block("v"), nc)
}
)";

TEST(GradSchedLiftR19, ReverseComputeAtScatterIntoFusedLoop) {
  std::string out = testing::apply_and_compare(with(kFusedScatter, "READER", "vn, vc"));
  EXPECT_NE(out.find("block v(vn: spatial(4) = nc // 4, vc: spatial(4) = nc % 4"), std::string::npos) << out;
  // The reader reads the plane of another iteration (3 - n): v of an earlier iteration stored it.
  EXPECT_EQ(
      schedule_refusal(with(kFusedScatter, "READER", "3 - vn, vc")),
      "reverse_compute_at: block r reads buffer X under loop nc, which block v updates: moved there, its "
      "updates of earlier iterations would be seen");
}

// F1: an in-place update reading and storing X at two shifts of one iter var (`T[vj]`,
// `T[vj + 4]`: ConvLSTM's gates stacked in the channel dimension), moved to the loop of the
// producer storing the same shifts: each iteration owns the bands {j, j + 4}. Closer shifts than
// the span of a band (4 rows) let the bands of different iterations meet (with shift 2,
// iteration 2 rewrites T[2], which c of iteration 0 updated): refused.
const char* kShifts = R"(func f(A: f32[12]) -> (T: f32[12]) {
  for i in serial(12) {
    block t0(vi: spatial(12) = i) { T[vi] = 0.0 }
  }
  for j in serial(4) {
    block p(vj: spatial(4) = j) {
      PBODY
    }
  }
  for j in serial(4) {
    block c(vj: spatial(4) = j) {
      CBODY
    }
  }
}
schedule f {
  j = get_loops(get_block("p"))[0]
  reverse_compute_at(get_block("c"), j)
}
)";

std::string shifts(const std::string& p, const std::string& c) {
  return with(with(kShifts, "PBODY", p), "CBODY", c);
}

TEST(GradSchedLiftR19, ReverseComputeAtShiftedBands) {
  const char* p4 = "T[vj] = A[vj]\n      T[vj + 4] = A[vj + 4] * 2.0";
  const char* c4 = "T[vj] = T[vj] + 1.0\n      T[vj + 4] = T[vj + 4] * 3.0";
  std::string out = testing::apply_and_compare(shifts(p4, c4));
  EXPECT_NE(out.find("      T[vj + 4] = A[vj + 4] * 2.0\n    }\n    block c(vj: spatial(4) = j)"),
            std::string::npos)
      << out;
  // A producer storing a third band that c does not touch (the H1 adjoint's output gate), and c
  // touching a band no producer under the loop stores (T[vj + 8], written by t0 before).
  testing::apply_and_compare(
      shifts("T[vj] = A[vj]\n      T[vj + 4] = A[vj + 4] * 2.0\n      T[vj + 8] = A[vj]", c4));
  testing::apply_and_compare(shifts(p4, "T[vj] = T[vj] + T[vj + 8]\n      T[vj + 8] = T[vj + 8] * 3.0"));
  EXPECT_EQ(
      schedule_refusal(shifts("T[vj] = A[vj]\n      T[vj + 2] = A[vj + 4] * 2.0",
                              "T[vj] = T[vj] + 1.0\n      T[vj + 2] = T[vj + 2] * 3.0")),
      "reverse_compute_at: block c loads buffer T in dimension 0 at shifts of vj (with the producers': 0, 2) "
      "closer than the span 4 of what the producers under loop j write there: an iteration would read or "
      "store elements another iteration writes");
  // c at a shift the producer does not store, whose band meets the producer's: c of iteration 0
  // would update T[3], which p of iteration 3 stores later.
  EXPECT_EQ(
      schedule_refusal(shifts(p4, "T[vj] = T[vj] + 1.0\n      T[vj + 3] = T[vj + 3] * 3.0")),
      "reverse_compute_at: block c loads buffer T in dimension 0 at shifts of vj (with the producers': 0, 3, "
      "4) closer than the span 4 of what the producers under loop j write there: an iteration would read or "
      "store elements another iteration writes");
}

// F4: the zero-fill computed at the row loop holding cache_inplace's copies (the copy-out only
// overwrites C, inside the row the fill computes in the same iteration). OVER: a block under the
// loop overwriting a row of C after the accumulation: its own row (accepted) or row 7 - i, which
// the fill of a later iteration would reset (refused).
const char* kOverwrite = R"(func g(A: f32[8, 16], B: f32[16, 8]) -> (C: f32[8, 8]) {
  for i, j in grid(8, 8) {
    block C_init(vi: spatial(8) = i, vj: spatial(8) = j) {
      C[vi, vj] = 0.0
    }
  }
  for i in serial(8) {
    for k, j in grid(16, 8) {
      block acc(vi: spatial(8) = i, vj: spatial(8) = j, vk: reduce(16) = k) {
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
      }
    }
    for j in serial(8) {
      block ow(vi: spatial(8) = i, vj: spatial(8) = j) {
        C[OVER, vj] = A[vi, vj] * 0.5
      }
    }
  }
}
schedule g {
  compute_at(get_block("C_init"), get_loops(get_block("acc"))[0])
}
)";

TEST(GradSchedLiftR19, ComputeAtFillAroundInplaceCopies) {
  std::string out = testing::apply_and_compare(with(
      kGemm, "SCHED",
      "cin, cout = cache_inplace(b, \"C\", \"local\")\n  compute_at(cin, i)\n  reverse_compute_at(cout, i)\n"
      "  compute_at(get_block(\"C_init\"), i)"));
  EXPECT_NE(out.find("  for i in serial(8) {\n    for ax1 in serial(8) {\n      block C_init("),
            std::string::npos)
      << out;
  testing::apply_and_compare(with(kOverwrite, "OVER", "vi"));
  EXPECT_EQ(
      schedule_refusal(with(kOverwrite, "OVER", "7 - vi")),
      "compute_at: block ow overwrites buffer C, which block C_init writes, outside the part of it computed "
      "in an iteration of loop i");
}

}  // namespace
}  // namespace tirc

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
  EXPECT_EQ(
      schedule_refusal(with(kGemm, "SCHED", "parallel(i)\n  cache_inplace(b, 0, \"local\")")),
      "cache_inplace: loop i above block acc is not serial (the copies of C made in its iterations could "
      "overlap)");
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
  EXPECT_EQ(
      schedule_refusal(wide),
      "cache_inplace: block upd writes buffer C outside the region it reads in dimension 1 (the copy back "
      "would store elements the cache does not hold)");
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

}  // namespace
}  // namespace tirc

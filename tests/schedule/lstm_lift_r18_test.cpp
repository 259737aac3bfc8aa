// Round 18 (helper h8): two sound schedules of an LSTM cell's gradient that were refused
// (findings F2 and F3 of helper h6, round 18; docs/schedule.md, "Round 18 (LSTM gradient)").
//   F3: parallel / vectorize / bind of a loop whose block stores one buffer at offsets a loop
//       extent apart (`G_grad[b, j]`, `[b, j + 32]`, `[b, j + 64]`, j in [0, 32)): the partition
//       check took the hull of the accesses; now each pair of accesses is checked
//       (transforms/schedule/access_pairs.h).
//   F2: reverse_compute_at of a consumer reading a free dimension of one produced buffer and
//       another produced buffer: the tiles must now come from iter vars the free-indexed
//       buffer's loads map (reverse_compute_at.cpp, load_maps).
// Each lifted form is compared with the unscheduled function in the interpreter (random inputs,
// parallel and bound loops also run backwards, printed text re-parsed); forms that must stay
// refused assert the message.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "tests/schedule/tvm_style_files.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

std::string with(std::string text, const std::string& key, const std::string& value) {
  auto at = text.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  if (at != std::string::npos) text.replace(at, key.size(), value);
  return text;
}

// Applies the module's schedule of `func` (after adding `<fwd>_grad` when fwd is given) and
// compares with the unscheduled function; returns the scheduled function's text.
std::string schedule_matches(const std::string& text, const std::string& fwd = "") {
  Module m = parse_module(text, "t.tir");
  if (!fwd.empty()) m.add_func(gradient(*m.find_func(fwd), {}));
  EXPECT_EQ(m.schedules.size(), 1u);
  Function f = m.find_func(m.schedules[0].func);
  EXPECT_TRUE(f) << m.schedules[0].func;
  if (!f) return "";
  Function g = apply_schedule(*f, m.schedules[0], m.intrins);
  testing::expect_scheduled_matches(*f, *g);
  return print_function(*g);
}

// ---------------------------------------------------------------------------------------------
// F3: accesses a loop extent apart.

// h6's repro: a scratch buffer stored at columns j and j + 8, j in [0, 8).
const char* kOffsets = R"(func g(A: f32[4, 8]) -> (Z: f32[4, 16]) {
  alloc T: f32[4, 16]
  for i, j in grid(4, 8) {
    block b(vi: spatial(4) = i, vj: spatial(8) = j) {
      T[vi, vj] = A[vi, vj]
      T[vi, vj + 8] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(4, 16) {
    block c(vi: spatial(4) = i, vj: spatial(16) = j) {
      Z[vi, vj] = T[vi, vj] + 1.0
    }
  }
}
schedule g {
  i, j = get_loops(get_block("b"))
  parallel(j)
}
)";

TEST(LstmLiftR18, ParallelStoresAnExtentApart) {
  std::string out = schedule_matches(kOffsets);
  EXPECT_NE(out.find("for j in parallel(8)"), std::string::npos) << out;
  // bind (one thread per column) and vectorize take the same check.
  out =
      schedule_matches(with(kOffsets, "parallel(j)", "bind(i, \"blockIdx.x\")\n  bind(j, \"threadIdx.x\")"));
  EXPECT_NE(out.find("thread_binding(8, \"threadIdx.x\")"), std::string::npos) << out;
  out = schedule_matches(with(kOffsets, "parallel(j)", "vectorize(j)"));
  EXPECT_NE(out.find("for j in vectorized(8)"), std::string::npos) << out;
}

// Offsets closer than the extent: iteration 0 stores T[vi, 4], which iteration 4 stores too.
TEST(LstmLiftR18, ParallelStoresOverlapRefused) {
  const std::string msg =
      "parallel: loop j: iterations share the scratch buffer T (written by block b): index it by the loop or "
      "allocate it in the block";
  EXPECT_EQ(testing::schedule_refusal(with(kOffsets, "T[vi, vj + 8] =", "T[vi, vj + 4] =")), msg);
  // A symbolic extent: no offset is far enough.
  const char* sym = R"(func g(n: i32 in [1, 8], A: f32[4, 8]) -> (Z: f32[4, 16]) {
  alloc T: f32[4, 16]
  for i, j in grid(4, n) {
    block b(vi: spatial(4) = i, vj: spatial(8) = j) {
      T[vi, vj] = A[vi, vj]
      T[vi, vj + 8] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(4, 16) {
    block c(vi: spatial(4) = i, vj: spatial(16) = j) {
      Z[vi, vj] = if_then_else(vj % 8 < n, T[vi, vj], 0.0)
    }
  }
}
schedule g {
  i, j = get_loops(get_block("b"))
  parallel(j)
}
)";
  EXPECT_EQ(testing::schedule_refusal(sym), msg);
  // An index through a load (data-dependent columns) is not compared.
  const char* gather = R"(func g(A: f32[4, 8], I: i32[8] in [0, 7]) -> (Z: f32[4, 16]) {
  alloc T: f32[4, 16]
  for i, j in grid(4, 8) {
    block b(vi: spatial(4) = i, vj: spatial(8) = j) {
      T[vi, I[vj]] = A[vi, vj]
      T[vi, I[vj] + 8] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(4, 16) {
    block c(vi: spatial(4) = i, vj: spatial(16) = j) {
      Z[vi, vj] = T[vi, vj] + 1.0
    }
  }
}
schedule g {
  i, j = get_loops(get_block("b"))
  parallel(j)
}
)";
  EXPECT_EQ(testing::schedule_refusal(gather), msg);
  // A let name in the index: its value may differ between iterations.
  EXPECT_EQ(testing::schedule_refusal(with(with(kOffsets, "T[vi, vj] = A", "let x = vj\n      T[vi, x] = A"),
                                           "T[vi, vj + 8]", "T[vi, x + 8]")),
            msg);
}

// A second block under the loop reading the buffer one column on: iteration j reads what
// iteration j + 1 stores.
TEST(LstmLiftR18, ParallelReaderOfAnotherIterationRefused) {
  const char* text = R"(func g(A: f32[4, 8]) -> (Z: f32[4, 8]) {
  alloc T: f32[4, 17]
  for i, j in grid(4, 8) {
    block b(vi: spatial(4) = i, vj: spatial(8) = j) {
      T[vi, vj] = A[vi, vj]
      T[vi, vj + 8] = A[vi, vj] * 2.0
    }
    block c(vi: spatial(4) = i, vj: spatial(8) = j) {
      Z[vi, vj] = T[vi, vj + 1] + T[vi, vj + 8]
    }
  }
}
schedule g {
  i, j = get_loops(get_block("b"))
  parallel(j)
}
)";
  EXPECT_EQ(testing::schedule_refusal(text),
            "parallel: loop j: blocks b, c share buffer T across its iterations (no dimension of it is "
            "partitioned by the loop)");
  // Reading in its own iteration (columns j and j + 8) is fine.
  std::string ok = with(text, "T[vi, vj + 1] + T[vi, vj + 8]", "T[vi, vj] + T[vi, vj + 8]");
  ok = with(ok, "alloc T: f32[4, 17]", "alloc T: f32[4, 16]");
  schedule_matches(ok);
}

// Non-unit coefficients: T[2 * j] and T[2 * j + 1] never meet; T[2 * j] and T[2 * j + 4] do
// (j and j + 2); a descending index 15 - j against 7 - j is apart.
TEST(LstmLiftR18, ParallelStridedAndDescendingAccesses) {
  const char* text = R"(func g(A: f32[8]) -> (Z: f32[20]) {
  alloc T: f32[20]
  for j in serial(8) {
    block b(vj: spatial(8) = j) {
      T[2 * vj] = A[vj]
      T[2 * vj + 1] = A[vj] * 2.0
    }
  }
  for i in serial(20) {
    block c(vi: spatial(20) = i) { Z[vi] = if_then_else(vi < 16, T[vi], 0.0) }
  }
}
schedule g {
  j, = get_loops(get_block("b"))
  parallel(j)
}
)";
  schedule_matches(text);
  EXPECT_EQ(testing::schedule_refusal(with(text, "T[2 * vj + 1]", "T[2 * vj + 4]")),
            "parallel: loop j: iterations share the scratch buffer T (written by block b): index it by the "
            "loop or allocate it in the block");
  schedule_matches(with(with(text, "T[2 * vj] =", "T[7 - vj] ="), "T[2 * vj + 1] =", "T[15 - vj] ="));
}

// The LSTM cell of the finding (batch 4, hidden 8): the fused gate adjoint cell_dC0_dG_dG_dG
// stores G_grad[b, j], [b, j + 8], [b, j + 16] (updates in place); one thread per column, or a
// parallel column loop.
const char* kLstm =
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
)";

TEST(LstmLiftR18, LstmGateAdjointColumnsBound) {
  std::string text = std::string(kLstm) + R"(schedule lstm_cell_grad {
  b, t = get_loops(get_block("cell_dC0_dG_dG_dG"))
  bind(b, "blockIdx.x")
  bind(t, "threadIdx.x")
}
)";
  std::string out = schedule_matches(text, "lstm_cell");
  EXPECT_NE(out.find("thread_binding(8, \"threadIdx.x\")"), std::string::npos) << out;
  schedule_matches(with(text, "bind(b, \"blockIdx.x\")\n  bind(t, \"threadIdx.x\")", "parallel(t)"),
                   "lstm_cell");
}

// ---------------------------------------------------------------------------------------------
// F2: a free dimension of one produced buffer and another produced buffer.

// h6's repro: c reads Y (row i produced by h) and Z at columns 0..7, which h does not write
// (h writes Z[:, 8:16]; z0 wrote 0..7 before).
const char* kTwoBuffers = R"(func g(A: f32[4, 8], B: f32[4, 8]) -> (Y: f32[4, 8], Z: f32[4, 16]) {
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
      Y[vi, vj] = Y[vi, vj] + B[vi, vj]
      Z[vi, vj + 8] = B[vi, vj] * 2.0
    }
  }
  for i, j in grid(4, 8) {
    block c(vi: spatial(4) = i, vj: spatial(8) = j) {
      Z[vi, vj] = Z[vi, vj] + Y[vi, vj]
    }
  }
}
schedule g {
  hi, hj = get_loops(get_block("h"))
  reverse_compute_at(get_block("c"), hi)
}
)";

TEST(LstmLiftR18, ReverseComputeAtFreeDimAndAnotherBuffer) {
  std::string out = schedule_matches(kTwoBuffers);
  EXPECT_NE(out.find("for i in serial(4) {\n    for j in serial(8) {\n      block h("), std::string::npos)
      << out;
  EXPECT_NE(out.find("block c(vi: spatial(4) = i, vj: spatial(8) = ax1)"), std::string::npos) << out;
  // Round 17's form (a reversed row of X, Y read at the tile): each row of X is written in its
  // own iteration, so it is accepted now too.
  const char* rev = R"(func f(A: f32[8, 6]) -> (D: f32[8, 6]) {
  alloc X: f32[8, 6]
  alloc Y: f32[8, 6]
  for i, j in grid(8, 6) {
    block P(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = A[vi, vj] * 2.0 }
    block Q(vi: spatial(8) = i, vj: spatial(6) = j) { Y[vi, vj] = A[vi, vj] + 2.0 }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { D[vi, vj] = X[vi, 5 - vj] + Y[vi, vj] }
  }
}
schedule f {
  i, j = get_loops(get_block("P"))
  reverse_compute_at(get_block("C"), i)
}
)";
  schedule_matches(rev);
}

// The tiles must come from X: under the column loop j, X's declared region is its whole row
// (stores X[vi, vj] declared as X[vi, 0:6]), so only Y's tiles tell the columns apart; C at
// (i, j) would read X[i, 5 - j] before iteration (i, 5 - j) stores it.
TEST(LstmLiftR18, ReverseComputeAtTilesOfAnotherBufferRefused) {
  const char* text = R"(func f(A: f32[8, 6]) -> (D: f32[8, 6]) {
  alloc X: f32[8, 6]
  alloc Y: f32[8, 6]
  for i, j in grid(8, 6) {
    block P(vi: spatial(8) = i, vj: spatial(6) = j) {
      writes X[vi, 0:6]
      X[vi, vj] = A[vi, vj] * 2.0
    }
    block Q(vi: spatial(8) = i, vj: spatial(6) = j) { Y[vi, vj] = A[vi, vj] + 2.0 }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { D[vi, vj] = X[vi, 5 - vj] + Y[vi, vj] }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), j)
}
)";
  EXPECT_EQ(
      testing::schedule_refusal(text),
      "reverse_compute_at: block C reads X at indices that loop j does not tile, and the tiles of iter var "
      "vj come from another buffer produced under it");
  // Under the row loop the same is sound (X's row is its tile).
  schedule_matches(
      with(text, "reverse_compute_at(get_block(\"C\"), j)", "reverse_compute_at(get_block(\"C\"), i)"));
}

// The LSTM cell: cell_dC0_dG_dG_dG (reads C1_grad_1 produced in the row and G_grad's columns
// 0..23, which hidden_dC1_dG does not write) moved into hidden_dC1_dG's parallel row loop, then
// its columns parallel too (both lifts).
TEST(LstmLiftR18, LstmGateAdjointIntoHiddenRowLoop) {
  std::string text = std::string(kLstm) + R"(schedule lstm_cell_grad {
  hb, hj = get_loops(get_block("hidden_dC1_dG"))
  parallel(hb)
  c = get_block("cell_dC0_dG_dG_dG")
  reverse_compute_at(c, hb)
  cj, = get_loops(c)[1:]
  parallel(cj)
}
)";
  std::string out = schedule_matches(text, "lstm_cell");
  EXPECT_NE(
      out.find("in parallel(8) {\n      block cell_dC0_dG_dG_dG(vb1: spatial(4) = b, vj1: spatial(8) = ax1"),
      std::string::npos)
      << out;
}

}  // namespace
}  // namespace tirc

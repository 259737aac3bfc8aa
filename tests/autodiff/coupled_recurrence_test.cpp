// Recurrences the normaliser reads since helper round h5 (docs/autodiff.md, "Normalisation",
// rewrites 11 and 12, and "Scans"): coupled recurrences in one plain loop body, first states
// stored before the loop, step values built by several blocks, and the RNN / LSTM / GRU /
// Kalman / cumulative ops a TVM user writes as plain serial loops. Each accepted function:
// the normalised function computes what it does (interpreter, three seeds), check_grad --full
// in f64 on two seeds, F_grad prints and re-parses; second order where the scan machinery
// allows it. The refusals at the end name the block and the construct.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/refusal_of.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/autodiff/normalize.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

// Debug aid: TIRC_H5_FILE=f.tir TIRC_H5_FUNC=f prints the normalised function.
TEST(CoupledRecurrence, DISABLED_PrintNormalized) {
  const char* file = std::getenv("TIRC_H5_FILE");
  const char* func = std::getenv("TIRC_H5_FUNC");
  if (!file || !func) GTEST_SKIP();
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  Function f = parse_one(ss.str(), func);
  Function n = normalize_for_autodiff(f);
  std::printf("%s\n", print_function(*n).c_str());
  for (uint64_t seed : {1, 2, 3}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*f, *n, o, interp_runner(), interp_runner());
    std::printf("seed %d: %s %s\n", static_cast<int>(seed), r.ok ? "equal" : "DIFFERENT", r.detail.c_str());
  }
}

// The normalised function computes what f does (interpreter, check_rewrite: three seeds, the
// print/parse round trip, check_grad --full of both, F_grad re-parses) and reads a scan var;
// check_grad --full on two seeds. Second order: every function here is a recurrence through
// several blocks (a region), whose second order the scan machinery refuses (docs/autodiff.md,
// Scans): the refusal names a backward step block.
void expect_accepted(const char* src, const char* name) {
  std::string text = testing::check_rewrite(src, name);
  EXPECT_NE(text.find(": scan("), std::string::npos) << text;
  Function f = parse_one(src, name);
  expect_full_checks(*f);
}

// The second order is refused with the region's reason, naming a backward step.
void expect_second_order_refused(const char* src, const char* name) {
  Function f = parse_one(src, name);
  Function g = grad_of_printed(*f);
  try {
    gradient(*g, {});
    ADD_FAILURE() << "second order accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_TRUE(m.find("_rev: ") != std::string::npos) << m;
  }
}

using testing::refusal_of;

// ---- 1. Coupled recurrences in one plain loop body ----

// The brief's pair: H reads its own and C's previous step, C its own; first states stored
// before the loop (rewrite 11 re-bases the wrapped blocks' `vt = t - 1`, rewrite 12 versions
// H and C, written before the loop).
const char* kCoupled = R"(func c1(X: f32[8], W: f32[1]) -> (H: f32[8], C: f32[8]) {
  H[0] = X[0]
  C[0] = X[0] * 0.5
  for t in serial(1, 8) {
    H[t] = tanh(H[t - 1] * W[0] + C[t - 1])
    C[t] = C[t - 1] * 0.5 + X[t]
  }
})";

TEST(CoupledRecurrence, PlainLoopTwoStates) {
  expect_accepted(kCoupled, "c1");
  expect_second_order_refused(kCoupled, "c1");
}

// The second reads the first's new value H[t].
TEST(CoupledRecurrence, PlainLoopReadsNewValue) {
  expect_accepted(R"(func c2(X: f32[8], W: f32[1]) -> (H: f32[8], C: f32[8]) {
  H[0] = X[0]
  C[0] = X[0] * 0.5
  for t in serial(1, 8) {
    H[t] = tanh(H[t - 1] * W[0] + C[t - 1])
    C[t] = C[t - 1] * 0.5 + H[t] * X[t]
  }
})",
                  "c2");
}

// One opaque block holding both stores (rewrite 9 splits the step, 11 and 12 as above).
TEST(CoupledRecurrence, OpaqueBlockBothStores) {
  expect_accepted(R"(func c3(X: f32[8], W: f32[1]) -> (H: f32[8], C: f32[8]) {
  H[0] = X[0]
  C[0] = X[0] * 0.5
  for t in serial(1, 8) {
    block step(vt: opaque(7) = t - 1) {
      H[vt + 1] = tanh(H[vt] * W[0] + C[vt])
      C[vt + 1] = C[vt] * 0.5 + H[vt + 1] * X[vt + 1]
    }
  }
})",
                  "c3");
}

// Explicit scan blocks inside the loop, first states by blocks before it.
TEST(CoupledRecurrence, ScanBlocksWithStatesBeforeTheLoop) {
  expect_accepted(R"(func c4(X: f32[8], W: f32[1]) -> (H: f32[8], C: f32[8]) {
  block h0() { H[0] = X[0] }
  block c0() { C[0] = X[0] * 0.5 }
  for t in serial(1, 8) {
    block h(vt: scan(8) = t) { H[vt] = tanh(H[vt - 1] * W[0] + C[vt - 1]) }
    block c(vt: scan(8) = t) { C[vt] = C[vt - 1] * 0.5 + H[vt] * X[vt] }
  }
})",
                  "c4");
}

// A block of the loop reads, at its own step, an element a later block of the same step
// overwrites: it sees the value from before the loop (rewrite 12's version Y as it was).
TEST(CoupledRecurrence, ReadBeforeTheStepOverwrites) {
  expect_accepted(R"(func early(X: f32[6]) -> (Y: f32[6], A: f32[6]) {
  for i in serial(6) { Y[i] = X[i] * 2.0 }
  for t in serial(6) {
    block a(vt: scan(6) = t) { A[vt] = Y[vt] + if_then_else(vt > 0, A[vt - 1] * 0.5, 0.0) }
    block y(vt: scan(6) = t) { Y[vt] = sin(A[vt]) }
  }
})",
                  "early");
}

// Formerly ScanRefusals.RecurrenceBufferWrittenBeforeTheLoop (scan_test.cpp).
TEST(CoupledRecurrence, RecurrenceBufferWrittenBeforeTheLoop) {
  expect_accepted(R"(func pre(X: f32[5]) -> (Y: f32[5]) {
  alloc A: f32[5]
  for i in serial(5) {
    block z(vi: spatial(5) = i) { A[vi] = X[vi] }
  }
  for t in serial(5) {
    block a(vt: scan(5) = t) { A[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] * 0.5) }
    block y(vt: scan(5) = t) { Y[vt] = A[vt] + X[vt] }
  }
})",
                  "pre");
}

// Formerly ScanRefusals.AccumulationOntoAnotherBlocksResultInARecurrence: the sum gets the
// init `A[vt, vi] = A_s1[vt, vi]` (rewrite 12).
TEST(CoupledRecurrence, AccumulationOntoAnotherBlocksResult) {
  expect_accepted(R"(func acc(X: f32[5, 3], U: f32[4, 3]) -> (A: f32[5, 4]) {
  for t in serial(5) {
    for i in serial(4) {
      block pre(vt: scan(5) = t, vi: spatial(4) = i) {
        A[vt, vi] = if_then_else(vt == 0, 0.0, A[vt - 1, vi] * 0.5)
      }
    }
    for i, k in grid(4, 3) {
      block inp(vt: scan(5) = t, vi: spatial(4) = i, vk: reduce(3) = k) {
        A[vt, vi] = A[vt, vi] + U[vi, vk] * X[vt, vk]
      }
    }
  }
})",
                  "acc");
}

// Formerly NormalizeOpaque.RecurrenceStaysRefused: a state at a constant element.
TEST(CoupledRecurrence, ScalarStateOpaqueBlock) {
  expect_accepted(R"(func op(X: f32[8]) -> (Y: f32[1]) {
  block Z() { Y[0] = 0.0 }
  for i in serial(8) {
    block B(vi: opaque(8) = i) { Y[0] = Y[0] * 0.5 + X[vi] }
  }
})",
                  "op");
}

// ---- A wrong gradient before: blocks each spatial on their own, the loop carrying H ----

// Every block is spatial alone (rewrite 8), so gradient() ran block A over every t, then
// block H: check_grad FAILED (X: max abs err 9e-01). Rewrite 10b reads the loop as a scan.
TEST(CoupledRecurrence, DependenceThroughBlocksOfSpatialVars) {
  expect_accepted(R"(func hidden(X: f32[6, 4], Wh: f32[4, 4]) -> (H: f32[6, 4]) {
  alloc A: f32[6, 4]
  for t, j in grid(6, 4) { H[t, j] = X[t, j] }
  for t in serial(1, 6) {
    for j in serial(4) {
      A[t, j] = 0.0
      for k in serial(4) { A[t, j] += Wh[j, k] * H[t - 1, k] }
    }
    for j in serial(4) { H[t, j] = tanh(A[t, j] + X[t, j]) }
  }
})",
                  "hidden");
}

// The same with explicit spatial blocks, as a TensorIR user writes the cell.
TEST(CoupledRecurrence, DependenceThroughExplicitSpatialBlocks) {
  expect_accepted(R"(func hidden2(X: f32[6, 4], Wh: f32[4, 4]) -> (H: f32[6, 4]) {
  alloc A: f32[6, 4]
  for j in serial(4) { block h0(vj: spatial(4) = j) { H[0, vj] = X[0, vj] } }
  for t in serial(1, 6) {
    for j, k in grid(4, 4) {
      block a(vt: spatial(6) = t, vj: spatial(4) = j, vk: reduce(4) = k) {
        init { A[vt, vj] = 0.0 }
        A[vt, vj] += Wh[vj, vk] * H[vt - 1, vk]
      }
    }
    for j in serial(4) {
      block h(vt: spatial(6) = t, vj: spatial(4) = j) { H[vt, vj] = tanh(A[vt, vj] + X[vt, vj]) }
    }
  }
})",
                  "hidden2");
}

// ---- 3. RNN / LSTM / GRU / Kalman / cumulative ops as a TVM user writes plain loops ----

// Elman RNN: a pre-activation by a hand-written init and two accumulation loops, one reading
// the previous hidden state under a guard.
TEST(CoupledRecurrence, RnnPlainLoops) {
  expect_accepted(
      R"(func rnn_plain(X: f32[6, 3], Wx: f32[4, 3], Wh: f32[4, 4], B: f32[4], H0: f32[4]) -> (H: f32[6, 4]) {
  alloc A: f32[6, 4]
  for t in serial(6) {
    for j in serial(4) {
      A[t, j] = B[j]
      for k in serial(3) { A[t, j] += Wx[j, k] * X[t, k] }
      for k in serial(4) { A[t, j] += Wh[j, k] * if_then_else(t > 0, H[t - 1, k], H0[k]) }
      H[t, j] = tanh(A[t, j])
    }
  }
})",
      "rnn_plain");
}

// The first state stored before the loop, the loop from 1, the cell in a second j loop.
TEST(CoupledRecurrence, RnnFirstStateBeforeTheLoop) {
  expect_accepted(R"(func rnn_h0(X: f32[6, 3], Wx: f32[4, 3], Wh: f32[4, 4], H0: f32[4]) -> (H: f32[6, 4]) {
  alloc A: f32[6, 4]
  for j in serial(4) { H[0, j] = H0[j] }
  for t in serial(1, 6) {
    for j in serial(4) {
      A[t, j] = 0.0
      for k in serial(3) { A[t, j] += Wx[j, k] * X[t, k] }
      for k in serial(4) { A[t, j] += Wh[j, k] * H[t - 1, k] }
    }
    for j in serial(4) { H[t, j] = tanh(A[t, j]) }
  }
})",
                  "rnn_h0");
}

// Batched, the batch loop outside the time loop, the state updated in place four times per
// step (`H = 0; H += ..; H += ..; H = tanh(H)`).
TEST(CoupledRecurrence, RnnBatchedInPlace) {
  expect_accepted(R"(func rnn_batched(X: f32[2, 5, 3], W: f32[3, 3], U: f32[3, 3]) -> (H: f32[2, 5, 3]) {
  for b in serial(2) {
    for t in serial(5) {
      for j in serial(3) {
        H[b, t, j] = 0.0
        for k in serial(3) { H[b, t, j] += W[j, k] * X[b, t, k] }
        for k in serial(3) { H[b, t, j] += U[j, k] * if_then_else(t > 0, H[b, t - 1, k], 0.0) }
        H[b, t, j] = tanh(H[b, t, j])
      }
    }
  }
})",
                  "rnn_batched");
}

// LSTM: the four gates into a scratch buffer, the recurrent term under `if t > 0` around its
// loop (rewrite 0g moves the guard inside), then the cell and hidden states.
TEST(CoupledRecurrence, LstmPlainLoops) {
  expect_accepted(
      R"(func lstm_plain(X: f32[4, 2], W: f32[12, 2], U: f32[12, 3], B: f32[12]) -> (H: f32[4, 3], C: f32[4, 3]) {
  alloc G: f32[4, 12]
  for t in serial(4) {
    for g in serial(12) {
      G[t, g] = B[g]
      for k in serial(2) { G[t, g] += W[g, k] * X[t, k] }
      if t > 0 {
        for k in serial(3) { G[t, g] += U[g, k] * H[t - 1, k] }
      }
    }
    for j in serial(3) {
      let i = sigmoid(G[t, j])
      let f = sigmoid(G[t, j + 3])
      let gg = tanh(G[t, j + 6])
      let o = sigmoid(G[t, j + 9])
      C[t, j] = f * if_then_else(t > 0, C[t - 1, j], 0.0) + i * gg
      H[t, j] = o * tanh(C[t, j])
    }
  }
})",
      "lstm_plain");
}

// GRU with the first hidden state given, two gate pre-activations per step.
TEST(CoupledRecurrence, GruPlainLoops) {
  expect_accepted(
      R"(func gru_plain(X: f32[5, 2], Wz: f32[2, 2], Uz: f32[2, 2], Wn: f32[2, 2], Un: f32[2, 2], H0: f32[2]) -> (H: f32[5, 2]) {
  alloc Z: f32[5, 2]
  alloc N: f32[5, 2]
  for j in serial(2) { H[0, j] = H0[j] }
  for t in serial(1, 5) {
    for j in serial(2) {
      Z[t, j] = 0.0
      for k in serial(2) { Z[t, j] += Wz[j, k] * X[t, k] + Uz[j, k] * H[t - 1, k] }
      N[t, j] = 0.0
      for k in serial(2) { N[t, j] += Wn[j, k] * X[t, k] + Un[j, k] * H[t - 1, k] }
    }
    for j in serial(2) {
      let z = sigmoid(Z[t, j])
      H[t, j] = (1.0 - z) * tanh(N[t, j]) + z * H[t - 1, j]
    }
  }
})",
      "gru_plain");
}

// Linear state-space model x_t = A x_(t-1) + B u_t, y_t = C x_t, states one ahead of t.
TEST(CoupledRecurrence, StateSpaceModel) {
  expect_accepted(
      R"(func ssm_plain(Us: f32[6, 2], A: f32[3, 3], Bm: f32[3, 2], Cm: f32[3], X0: f32[3]) -> (Y: f32[6]) {
  alloc Xs: f32[7, 3]
  for i in serial(3) { Xs[0, i] = X0[i] }
  for t in serial(6) {
    for i in serial(3) {
      Xs[t + 1, i] = 0.0
      for k in serial(3) { Xs[t + 1, i] += A[i, k] * Xs[t, k] }
      for k in serial(2) { Xs[t + 1, i] += Bm[i, k] * Us[t, k] }
    }
    Y[t] = 0.0
    for i in serial(3) { Y[t] += Cm[i] * Xs[t + 1, i] }
  }
})",
      "ssm_plain");
}

// Scalar Kalman filter, C-style: estimate and variance from the first measurement on.
TEST(CoupledRecurrence, KalmanPlainLoops) {
  expect_accepted(
      R"(func kalman_plain(Z: f32[6], Q: f32[1] in [0.1, 0.5], R: f32[1] in [0.2, 1.0]) -> (Xs: f32[6], P: f32[6]) {
  Xs[0] = Z[0]
  P[0] = R[0]
  for t in serial(1, 6) {
    let pp = P[t - 1] + Q[0]
    let k = pp / (pp + R[0])
    Xs[t] = Xs[t - 1] + k * (Z[t] - Xs[t - 1])
    P[t] = (1.0 - k) * pp
  }
})",
      "kalman_plain");
}

// The Kalman filter over a symbolic length, n = 1 (no step), 2 and 5.
TEST(CoupledRecurrence, KalmanSymbolicLength) {
  const char* src =
      R"(func ksym(n: i32 in [2, 7], Z: f32[n], Q: f32[1] in [0.1, 0.5], R: f32[1] in [0.2, 1.0]) -> (Xs: f32[n], P: f32[n]) {
  Xs[0] = Z[0]
  P[0] = R[0]
  for t in serial(1, n) {
    let pp = P[t - 1] + Q[0]
    let k = pp / (pp + R[0])
    Xs[t] = Xs[t - 1] + k * (Z[t] - Xs[t - 1])
    P[t] = (1.0 - k) * pp
  }
})";
  testing::check_rewrite(src, "ksym");
  Function f = parse_one(src, "ksym");
  for (int n : {1, 2, 5}) expect_full_checks(*f, testing::i32_scalars({{"n", n}}));
}

// Online logsumexp: running max and rescaled sum, the output reading both new values.
TEST(CoupledRecurrence, OnlineLogcumsumexp) {
  expect_accepted(R"(func lcse(X: f32[8]) -> (Y: f32[8]) {
  alloc M: f32[8]
  alloc S: f32[8]
  M[0] = X[0]
  S[0] = 1.0
  Y[0] = X[0]
  for t in serial(1, 8) {
    M[t] = max(M[t - 1], X[t])
    S[t] = S[t - 1] * exp(M[t - 1] - M[t]) + exp(X[t] - M[t])
    Y[t] = M[t] + log(S[t])
  }
})",
                  "lcse");
}

// EMA with a scalar running state `S[0]` copied to the output at every step.
TEST(CoupledRecurrence, EmaScalarState) {
  expect_accepted(R"(func ema_state(X: f32[8], D: f32[1] in [0.5, 0.9]) -> (Y: f32[8]) {
  alloc S: f32[1]
  S[0] = 0.0
  for t in serial(8) {
    S[0] = S[0] * D[0] + X[t] * (1.0 - D[0])
    Y[t] = S[0]
  }
})",
                  "ema_state");
}

// Welford's running mean and M2 with a shared `let` of the previous mean, first row before.
TEST(CoupledRecurrence, WelfordPlainLoops) {
  expect_accepted(R"(func welford_plain(X: f32[6, 2]) -> (Mn: f32[6, 2], V: f32[6, 2]) {
  alloc M2: f32[6, 2]
  for j in serial(2) {
    Mn[0, j] = X[0, j]
    M2[0, j] = 0.0
    V[0, j] = 0.0
  }
  for t in serial(1, 6) {
    for j in serial(2) {
      let d = X[t, j] - Mn[t - 1, j]
      Mn[t, j] = Mn[t - 1, j] + d / f32(t + 1)
      M2[t, j] = M2[t - 1, j] + d * (X[t, j] - Mn[t, j])
      V[t, j] = M2[t, j] / f32(t + 1)
    }
  }
})",
                  "welford_plain");
}

// HMM forward in log space: a sum of exponentials, then the log, in place per step.
TEST(CoupledRecurrence, HmmForwardPlainLoops) {
  expect_accepted(R"(func hmm_plain(LB: f32[5, 3], LA: f32[3, 3], LPi: f32[3]) -> (Al: f32[5, 3]) {
  for j in serial(3) { Al[0, j] = LPi[j] + LB[0, j] }
  for t in serial(1, 5) {
    for j in serial(3) {
      Al[t, j] = 0.0
      for i in serial(3) { Al[t, j] += exp(Al[t - 1, i] + LA[i, j]) }
      Al[t, j] = log(Al[t, j]) + LB[t, j]
    }
  }
})",
                  "hmm_plain");
}

// Euler steps of an ODE, the state one ahead of the loop var, started by a copy.
TEST(CoupledRecurrence, EulerStepsPlainLoops) {
  expect_accepted(R"(func euler_plain(Z0: f32[3], W: f32[3, 3]) -> (Z: f32[5, 3]) {
  for i in serial(3) { Z[0, i] = Z0[i] }
  for t in serial(4) {
    for i in serial(3) {
      Z[t + 1, i] = Z[t, i]
      for k in serial(3) { Z[t + 1, i] += 0.1 * tanh(W[i, k] * Z[t, k]) }
    }
  }
})",
                  "euler_plain");
}

// ---- Refusals ----

// A backward-direction RNN as plain loops (`Hb[4 - s, j]`, built in place in three blocks): the
// versions of rewrite 12 hold element e at 4 - e, so each block stores at its (increasing) step.
TEST(CoupledRecurrence, BackwardRnnPlainLoops) {
  expect_accepted(R"(func back(X: f32[5, 2], Wb: f32[2, 2]) -> (Hb: f32[5, 2]) {
  for s in serial(5) {
    for j in serial(2) {
      Hb[4 - s, j] = X[4 - s, j]
      for k in serial(2) { Hb[4 - s, j] += Wb[j, k] * if_then_else(s > 0, Hb[5 - s, k], 0.0) }
      Hb[4 - s, j] = tanh(Hb[4 - s, j])
    }
  }
})",
                  "back");
}

// The coupled pair of the brief run backwards, last states stored before the loop.
TEST(CoupledRecurrence, CoupledBackwards) {
  expect_accepted(R"(func back2(X: f32[6], W: f32[1]) -> (H: f32[6], C: f32[6]) {
  H[5] = X[5]
  C[5] = X[5] * 0.5
  for s in serial(1, 6) {
    H[5 - s] = tanh(H[6 - s] * W[0] + C[6 - s])
    C[5 - s] = C[6 - s] * 0.5 + H[5 - s] * X[5 - s]
  }
})",
                  "back2");
}

// Two blocks of the loop write H at different columns while H was written before the loop:
// rewrite 12's versions need every writer to store the same whole elements at each step, so
// the loop is left as written and gradient() refuses it.
TEST(CoupledRecurrence, PartialStepWithStateBeforeTheLoopRefused) {
  EXPECT_EQ(
      refusal_of(R"(func part(X: f32[6, 4]) -> (H: f32[6, 4]) {
  for t, j in grid(6, 4) { H[t, j] = X[t, j] }
  for t in serial(1, 6) {
    for j in serial(2) {
      block h(vt: scan(6) = t, vj: spatial(2) = j) { H[vt, vj] = tanh(H[vt - 1, vj + 2] + X[vt, vj]) }
    }
    for j in serial(2) {
      block g(vt: scan(6) = t, vj: spatial(2) = j) { H[vt, vj + 2] = H[vt, vj] * 0.5 }
    }
  }
})",
                 "part"),
      "block g: a scan step must write elements of its own: index the store to H by distinct iter vars, vt "
      "among them (to carry a state, keep its history, e.g. H[vt, ...])");
}

// At its step, block y reads the element block a writes in the other iteration of their shared
// j loop (for j = 0 not yet written: A as it was before the loop). The versions of rewrite 12
// would read a's version there, so the loop is left as written and gradient() refuses it.
TEST(CoupledRecurrence, SharedLoopOtherPointSameStepRefused) {
  EXPECT_EQ(
      refusal_of(R"(func shared(X: f32[5, 2]) -> (Y: f32[5, 2]) {
  alloc A: f32[5, 2]
  for t, j in grid(5, 2) { A[t, j] = X[t, j] * 3.0 }
  for t in serial(5) {
    for j in serial(2) {
      block a(vt: scan(5) = t, vj: spatial(2) = j) { A[vt, vj] = X[vt, vj] + if_then_else(vt > 0, Y[vt - 1, vj], 0.0) }
      block y(vt: scan(5) = t, vj: spatial(2) = j) { Y[vt, vj] = A[vt, 1 - vj] * 2.0 }
    }
  }
})",
                 "shared"),
      "block a: in a recurrence through several blocks, A must be written by one block of the loop and by "
      "no block before it");
}

// C's scalar accumulator reused at every (t, j) (`float acc`: set, accumulated over k, read):
// rewrite 0h gives every iteration its own copy S_p[t - 1, j].
TEST(CoupledRecurrence, ScratchScalarPerStep) {
  expect_accepted(R"(func scratch(X: f32[6, 3], W: f32[3, 3]) -> (H: f32[6, 3]) {
  alloc S: f32[1]
  for j in serial(3) { H[0, j] = X[0, j] }
  for t in serial(1, 6) {
    for j in serial(3) {
      S[0] = X[t, j]
      for k in serial(3) { S[0] += W[j, k] * H[t - 1, k] }
      H[t, j] = tanh(S[0])
    }
  }
})",
                  "scratch");
}

// A scalar read before it is set in the iteration carries a value from one (t, j) to the
// next: not privatized, refused naming the wrapped block.
TEST(CoupledRecurrence, ScalarCarriedAcrossIterationsRefused) {
  EXPECT_EQ(
      refusal_of(R"(func carry(X: f32[6, 3]) -> (H: f32[6, 3]) {
  alloc S: f32[1]
  S[0] = 0.0
  for t in serial(6) {
    for j in serial(3) {
      H[t, j] = S[0] * 0.5 + X[t, j]
      S[0] = H[t, j]
    }
  }
})",
                 "carry"),
      "block S_1: opaque iter vars are not supported (an opaque var is read as spatial when the iterations "
      "write disjoint elements, or as reduce when every store accumulates into an element that does not "
      "depend on it) (S_1: a block generated for buffer S, from the store at carry.tir:7:7)");
}

}  // namespace
}  // namespace tirc

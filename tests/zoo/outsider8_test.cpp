// Eighth outsider round of gradient checks (tests/zoo/outsider8/outsider8.tir): operators
// written as a TVM / PyTorch user would, new in shape against the zoo and rounds 1-7: dynamic
// programming scans (a CTC loss by its alpha recursion, compared with F.ctc_loss; Viterbi
// max-plus; an HMM forward pass in log space), filters and iterations as scans (a second-order
// IIR filter with coefficient tensors, a summed-area table by two scans read back at box
// corners, Clenshaw's recurrence, Euler ODE steps with a weight matrix, Welford's running
// statistics, Newton square roots, Sinkhorn iterations), rotary embeddings with learnable
// frequencies, ALiBi attention with learnable slopes, a peephole LSTM, a residual MLP, an f64
// accumulation of f32 operands, cross entropy over the middle axis with i16 labels and class
// weights, KL between log_softmaxes, GIoU, cdist p=1, conv_transpose1d as a gather with a `%`
// guard, reflection padding by abs index arithmetic, reversed strides and roll with symbolic
// sizes, scatter_nd / gather_nd through a two-column index buffer, EmbeddingBag max with u8
// indices, bilinear x2 by output parity, outputs that carry no gradient, complex products,
// ranking hinge, RBF kernel, prefix-sum segments, wrapped negative indices, rfft by cos / sin,
// BCE with logits, layer norm over two axes, depthwise-separable conv over a symbolic length,
// a dilated max pool, a triangular pack with a non-affine store index, softmax entropy, clamp
// pieces, kron and diagonal offsets. For each:
//   Outsider8.check_grad/F   `tirc grad` output re-parses; check_grad --full passes on two seeds;
//   Outsider8.grad_torch/F   F_grad run in f64 equals torch.autograd's VJP (outsider8_ref.py);
//                            skipped when /usr/bin/python3 has no torch;
//   Outsider8.flop_ratio/F   F_grad's FLOPs <= 3x F's (except the bounds listed below);
//   Outsider8SecondOrder.second_order/F  the gradient of F_grad passes check_grad.
// Plus Outsider8Ties: the subgradients of min / max / abs / clamp at exact ties, against our
// documented convention (docs/autodiff.md, "Derivative conventions").
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/zoo/registry_checks.h"
#include "tests/zoo/torch_refs.h"
#include "tests/zoo/zoo_util.h"
#include "transforms/autodiff/gradient.h"

using namespace tirc;
using namespace tirc::zoo;

namespace {

const std::vector<std::string>& all_funcs() {
  // clang-format off
  static const std::vector<std::string> v = {
      "ctc_loss1", "viterbi3", "hmm_forward", "iir2", "summed_area", "clenshaw", "euler_ode", "welford",
      "newton_sqrt", "sinkhorn", "rope", "alibi_attn", "lstm_peephole", "mlp_residual", "mixed_f64_acc",
      "ce_mid_i16", "kl_logsm", "giou_loss", "cdist_p1", "convt1d_mod", "reflect_abs", "rev_stride_sym",
      "roll_sym", "scatter_gather_nd", "embbag_max", "upsample2_parity", "multi_out_partial",
      "cummean_f64", "complex_mul", "rank_hinge", "rbf_kernel", "prefix_segments", "gather_wrap", "rfft8",
      "bce_logits", "layernorm_2d", "dwsep_sym", "maxpool1d_dil", "triu_pack", "softmax_entropy",
      "clamp_pieces", "kron_out", "diag_offsets"};
  // clang-format on
  return v;
}

// The registry: its file, scalar values and PyTorch references (see tests/zoo/torch_refs.h).
Registry& reg() {
  static Registry r("outsider8", std::map<std::string, double>{{"n", 7}, {"s", 2}, {"h", 0.3}, {"eps", 0.5}});
  return r;
}
ArgMap scalars(const FunctionNode& f) { return reg().scalars(f); }
Function load(const std::string& name) { return reg().load(name); }
TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

class Outsider8 : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider8, check_grad) {
  try {
    Function f = load(GetParam());
    expect_grad_checks(*f, scalars(*f));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

TEST_P(Outsider8, grad_torch) { grad_torch_test(refs(), GetParam(), *load(GetParam()), make_case); }

// FLOPs of F_grad (static counts, as `tirc stats`) <= 3x F's, or 3x F's stores when F has no
// FLOPs (as the zoo's flop_ratio). The functions above 3x, with the bound they keep:
double max_flop_ratio(const std::string& name) {
  static const std::map<std::string, double> bounds = {
      // Inherent under the count (docs/autodiff.md "FLOP ratio lower bounds"):
      {"kron_out", 4.0},        // an outer product: each product feeds two reductions
      {"reflect_abs", 4.0},     // 1 product of two reads per element (one at an abs index:
      {"gather_wrap", 4.0},     // a scatter), each factor's adjoint a product and a sum
      {"mixed_f64_acc", 3.1},   // tanh (4x alone)
      {"euler_ode", 3.7},       // tanh in a recurrence, as outsider3's rnn_state_out
      {"lstm_peephole", 3.13},  // sigmoid / tanh in a recurrence (3.62x before the backward
                                // steps loaded the forward's gates)
      {"newton_sqrt", 4.1},     // a quotient X / y of two differentiable values in each step
                                // (recompute 1, adjoints 3) next to 2 cheap FLOPs
      {"sinkhorn", 3.3},        // quotients a / (K v) of two differentiable values per step
      // Not inherent:
      {"viterbi3", 3.0},     // 2.88 (5.08 before helper round 17, when the gathers into T
                             // recomputed the step's nested max): the backward step stores
                             // the carried terms, equal to T's, in tapes the gathers load
      {"rope", 3.3},         // the neighbour reads X[vt, vd +- 1] of the two if_then_else arms
      {"hmm_forward", 3.1},  // exp / log in a recurrence whose sum block gets no tape
  };
  auto it = bounds.find(name);
  return it == bounds.end() ? 3.0 : it->second;
}

TEST_P(Outsider8, flop_ratio) {
  try {
    Function f = load(GetParam());
    expect_flop_ratio(*f, scalars(*f), max_flop_ratio(GetParam()));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider8, ::testing::ValuesIn(all_funcs()),
                         [](const auto& info) { return info.param; });

class Outsider8SecondOrder : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider8SecondOrder, second_order) {
  try {
    Function f = load(GetParam());
    expect_second_order_checks(*f, scalars(*f));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// Not here (second order refused, docs/autodiff.md, Scans): scans whose step reads two
// earlier steps (iir2, clenshaw) or several points of the previous step (ctc_loss1, viterbi3:
// the backward step stores several times into one cotangent), and recurrences through
// several blocks (hmm_forward, euler_ode, welford, sinkhorn, lstm_peephole: their backward
// step blocks scatter).
INSTANTIATE_TEST_SUITE_P(Funcs, Outsider8SecondOrder,
                         ::testing::Values("summed_area", "newton_sqrt", "rope", "alibi_attn", "mlp_residual",
                                           "mixed_f64_acc", "ce_mid_i16", "kl_logsm", "giou_loss", "cdist_p1",
                                           "convt1d_mod", "reflect_abs", "rev_stride_sym", "roll_sym",
                                           "scatter_gather_nd", "embbag_max", "upsample2_parity",
                                           "multi_out_partial", "cummean_f64", "complex_mul", "rank_hinge",
                                           "rbf_kernel", "prefix_segments", "gather_wrap", "rfft8",
                                           "bce_logits", "layernorm_2d", "dwsep_sym", "maxpool1d_dil",
                                           "triu_pack", "softmax_entropy", "clamp_pieces", "kron_out",
                                           "diag_offsets"),
                         [](const auto& info) { return info.param; });

// Subgradients at exact ties, against our documented convention (docs/autodiff.md,
// "Derivative conventions": max / min give the whole adjoint to their first argument, abs
// gives sign(x) = 0 at 0). Where PyTorch differs: torch.maximum / minimum split a tie 0.5 /
// 0.5; relu (here max(x, 0.0)) gives 0 at 0, ours 1; hardtanh gives 0 at its bounds, while
// torch.clamp gives 1 there as ours does (min(max(x, lo), hi)).
TEST(Outsider8Ties, MinMaxAbsClampAtTies) {
  Module m = parse_module(
      R"(func ties(X: f32[4], W: f32[4]) -> (A: f32[4], B: f32[4], C: f32[4], D: f32[4], E: f32[4]) {
  for i in serial(4) {
    block t(vi: spatial(4) = i) {
      A[vi] = max(X[vi], W[vi])
      B[vi] = min(W[vi], X[vi])
      C[vi] = abs(X[vi])
      D[vi] = min(max(X[vi], -0.5), 0.5)
      E[vi] = max(X[vi], 0.0)
    }
  }
})",
      "ties.tir");
  Function g = gradient(*m.find_func("ties"), {});
  const double xs[4] = {0, 1, -0.5, 0.5}, ws[4] = {0, 1, 2, 0.5};
  NDArray x(DType::F32, {4}), w(DType::F32, {4});
  for (int i = 0; i < 4; ++i) {
    x.set(i, xs[i]);
    w.set(i, ws[i]);
  }
  ArgMap in = {{"X", x}, {"W", w}};
  const double scale[5] = {1, 10, 100, 1000, 10000};  // one cotangent per output, told apart
  const char* outs[5] = {"A", "B", "C", "D", "E"};
  for (int k = 0; k < 5; ++k) {
    NDArray c(DType::F32, {4});
    for (int i = 0; i < 4; ++i) c.set(i, scale[k]);
    in[std::string(outs[k]) + "_grad"] = c;
  }
  ArgMap out = run_interp(*g, in);
  // X: A (tie at 0, 1, 0.5: to X, the first argument), B (W first: nothing at ties), C (sign:
  // 0 at 0), D (clamp: 1 at -0.5 and 0.5, as torch.clamp), E (relu as max(x, 0): 1 at 0).
  const double want_x[4] = {1 + 0 + 0 + 1000 + 10000, 1 + 0 + 100 + 0 + 10000, 0 + 10 - 100 + 1000 + 0,
                            1 + 0 + 100 + 1000 + 10000};
  const double want_w[4] = {0 + 10, 0 + 10, 1 + 0, 0 + 10};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out.at("X_grad").get(i), want_x[i]) << i;
    EXPECT_EQ(out.at("W_grad").get(i), want_w[i]) << i;
  }
}

// The references of all functions in one Python process (a fixture like Outsider6Setup's when
// CMakeLists.txt registers it; grad_torch computes them itself otherwise).
TEST(Outsider8Setup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

}  // namespace

// Nineteenth outsider round of gradient checks (tests/zoo/outsider19/outsider19.tir): operators a
// TVM user differentiates that the zoo and rounds 1-18 did not have: topi / relay operators
// (dilate, FlowNet correlation, batch_to_space_nd, within-channel LRN, adaptive 3-D max pooling,
// half-pixel bicubic / trilinear resizing, grouped transposed convolution, symmetric mirror
// padding, position-sensitive ROI pooling, box IoU / GIoU, COO SDDMM + SpMM, segment softmax,
// unsorted segment max, LU and Cholesky solves as scans, an einsum chain, a 2-D DFT as matmuls,
// an STFT as a strided conv1d with a kernel bank),
// recurrences (a biquad, CRF forward-backward, Holt smoothing, a 2-state Kalman filter, LIF
// neurons, an S4D kernel, the RNN-T lattice as a wavefront, a batched CTC loss with label
// lengths) and losses (poly-1, generalized Dice, distillation, ASL, SupCon, Barlow Twins, VICReg,
// 1-D Wasserstein of sorted samples), a diffusers ResNet block, an HWCN convolution and an MLP
// with TVM's fast_tanh. For each:
//   Outsider19.grad/F        `tirc grad` output re-parses; check_grad --full (f64) passes on two
//                            seeds; F_grad's FLOPs <= the bound recorded below (3x unless
//                            listed); the gradient of F_grad passes check_grad (except the
//                            documented second-order refusals below);
//   Outsider19.grad_torch/F  the interpreter's f32 outputs equal PyTorch's forward (f64,
//                            outsider19_ref.py) within the zoo's forward tolerances, and F_grad
//                            run in f64 equals torch.autograd's VJP; skipped without torch.
// Functions refused for constructs docs/autodiff.md lists as unsupported are pinned by
// Outsider19Refused.first_order, each next to its working form in the .tir.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "interp/interp.h"
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
      "dilate_conv2d", "flownet_corr", "batch_to_space_nd", "lrn_within_channel", "adaptive_max_pool3d",
      "resize_bicubic_hp", "upsample3d_trilinear_hp", "conv2d_transpose_group", "mirror_pad_sym_conv",
      "psroi_pool", "box_iou_giou", "sddmm_spmm", "segment_softmax", "unsorted_segment_max", "lu_nopivot",
      "chol_solve", "einsum_chain", "dft2_power", "biquad_df2t", "crf_marginals", "holt_linear", "kalman_cv2",
      "lif_neuron", "s4d_kernel_conv", "rnnt_loss", "poly1_ce", "generalized_dice", "kd_loss",
      "asymmetric_loss", "supcon_loss", "barlow_twins", "vicreg_loss", "resnet_block_gn", "conv2d_hwcn",
      "fast_tanh_mlp", "wasserstein1d_sorted", "ctc_batched", "stft_conv1d_logpow"};
  // clang-format on
  return v;
}

Registry& reg() {
  static Registry r("outsider19", std::map<std::string, double>{});
  return r;
}
Function load(const std::string& name) { return reg().load(name); }
ArgMap scalars(const FunctionNode& f) { return reg().scalars(f); }
TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

// FLOP ratio F_grad / F (`tirc stats`, static counts) measured when the round was written
// (2026-11-28), and the bound each function keeps: 3x unless listed. Measured:
// dilate_conv2d 1.75, flownet_corr 0.51 (the forward's guard is evaluated at every tap; the
// adjoint gathers visit only the taps inside the image), lrn_within_channel 2.23,
// adaptive_max_pool3d 2.06, resize_bicubic_hp 0.21 and upsample3d_trilinear_hp 0.52 (the forward
// recomputes the source coordinates and weights at every tap, F_grad hoists them),
// conv2d_transpose_group 0.40 (the forward's gather visits the stride-2 misses too; the adjoint
// is a dense gather over the input pixels), mirror_pad_sym_conv 2.18, psroi_pool 0.09 (window
// bounds hoisted per box and bin), sddmm_spmm 2.73, unsorted_segment_max 2.33, chol_solve 3.01,
// einsum_chain 2.25, dft2_power 1.25, crf_marginals 2.93, lif_neuron 2.79, s4d_kernel_conv 2.70,
// poly1_ce 1.76, generalized_dice 1.93, kd_loss 1.72, asymmetric_loss 2.60, supcon_loss 2.67,
// barlow_twins 2.23, vicreg_loss 2.42, resnet_block_gn 2.36, conv2d_hwcn 2.95, fast_tanh_mlp 2.55,
// wasserstein1d_sorted 2.02, stft_conv1d_logpow 1.62.
double max_flop_ratio(const std::string& name) {
  static const std::map<std::string, double> bounds = {
      // 5.50: inherent >= 4x for this op: the forward is 2 FLOPs per element (a product and a
      // tanh); the backward needs a * (1 - y^2) (3), X's adjoint (1) and G's sum (2) per element
      // on top of the recomputed forward (2). The rest (1.5x) is missed sharing: the
      // permutation-gather b2s_dX and the reduction b2s_dG each recompute a * (1 - y^2).
      {"batch_to_space_nd", 5.55},
      // 4.58: missed sharing. The block reads 8 box coordinates broadcast along the other box
      // (Pa[vi, 0], Sb[vj, 1], ...): each read is a gather of its own (iou_dPa .. iou_dSb_3, 16
      // blocks) recomputing the block's intersection / union / enclosure lets, hoisted again per
      // gather (hoist0 .. hoist50). By hand (one pass computing the 8 local adjoints per pair,
      // then row / column sums) ~2.5x.
      {"box_iou_giou", 4.6},
      // 3.23: the gradient through the segment max M is mathematically zero (softmax is shift
      // invariant) but computed: smax_arg + out_dM + ssum_dM (224 of 678 FLOPs), the
      // "x - max(x)" item of docs/autodiff.md's next steps. Without it 2.2x.
      {"segment_softmax", 3.25},
      // 3.07: inherent. The two reductions of each elimination step are 2 FLOPs per point
      // (multiply-add of L[i, m] * U[m, j]); their reverse steps add into both factors' cotangents
      // (4 FLOPs) on top of the recomputed forward (2): 3x, plus L's division.
      {"lu_nopivot", 3.1},
      // 3.01: as lu_nopivot, the reductions of the Cholesky / substitution steps cost 3x; cl_rev's
      // division and square root adjoints add the rest.
      {"chol_solve", 3.05},
      // 5.11: >= 3.5x inherent (9 FLOPs per step, each coefficient and state read needs a
      // multiply-add in the reverse step, plus the 6 coefficient sums), the rest missed sharing:
      // normalisation rewrite 9 splits the step's three stores into bq, bq_1, bq_2, each
      // recomputing y (the forward recomputation alone is 208 FLOPs for F's 144), and every
      // coefficient gather recomputes its store's lets again (the kind of round 17's slstm_cell).
      {"biquad_df2t", 5.15},
      // 4.07: as biquad_df2t: the level and trend stores become smooth and smooth_1 (the trend
      // recomputes the level's lets), smooth_1_rev recomputes them once more (144 FLOPs), and
      // the alpha / beta gathers a third time. Forward 16 FLOPs per step; ~3x by hand.
      {"holt_linear", 4.1},
      // 5.09: as biquad_df2t, with five states: kf .. kf_4 recompute the shared predict / gain
      // lets (222 FLOPs for F's 132), each reverse step and each Qn / Rn gather again. ~3x by
      // hand (one reverse step over all five states).
      {"kalman_cv2", 5.1},
      // 3.04: inherent for a log-sum-exp lattice on a wavefront: alpha_rev recomputes the step
      // (10 FLOPs per cell) and forms both moves' weights exp(a - out), exp(b - out) and their
      // cotangents (22 more); half the cells of the 6 x 4 wavefront are outside the lattice in
      // F and F_grad alike.
      {"rnnt_loss", 3.1},
      // 4.50: missed sharing (reported, /tmp/h5/r19/FINDINGS.md F5). The recurrence sits in the
      // else arm of if_then_else(vt == 0, ..); alpha_rev rebuilds the arm's log-sum-exp lets once
      // per carried read (three) and once for the max path: 55 FLOPs per point for alpha's 13.
      // The same recurrence without the outer if_then_else differentiates at ~2.3x.
      {"ctc_batched", 4.55},
  };
  auto it = bounds.find(name);
  return it == bounds.end() ? 3.0 : it->second;
}

// Second orders refused as docs/autodiff.md (Scans) documents: F_grad's backward steps of a
// recurrence through several blocks, or storing several elements of one cotangent.
const std::map<std::string, std::string>& second_order_refusals() {
  static const std::map<std::string, std::string> m = {
      {"lu_nopivot",
       "block l_rev: in a recurrence through several blocks (or with a reduction), a block must store a "
       "value "
       "or sum with an init"},
      {"chol_solve", "block cs_rev: several stores to Lc_grad in one block body are not supported"},
      {"biquad_df2t", "block bq_2_rev: a scan step must write elements of its own"},
      {"crf_marginals", "block beta_rev: several stores to Br_grad in one block body are not supported"},
      {"holt_linear", "block smooth_1_rev: a scan step must write elements of its own"},
      {"kalman_cv2", "block kf_4_rev: a scan step must write elements of its own"},
      {"lif_neuron", "block lif_1_rev: a scan step must write elements of its own"},
      {"rnnt_loss", "block alpha_rev: several stores to Ad_grad in one block body are not supported"},
      {"ctc_batched", "block alpha_rev: several stores to Al_grad in one block body are not supported"},
  };
  return m;
}

class Outsider19 : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider19, grad) {
  Function f = load(GetParam());
  expect_round_grad(*f, scalars(*f), max_flop_ratio(GetParam()), !second_order_refusals().count(GetParam()));
}

TEST_P(Outsider19, grad_torch) {
  const std::string name = GetParam();
  try {
    RefCase c = refs().case_with_refs(name, make_case);
    std::map<std::string, NDArray> want = refs().load(name, "out");
    std::map<std::string, NDArray> got(c.outputs.begin(), c.outputs.end());
    ASSERT_EQ(key_list(got), key_list(want)) << "outputs of tirc vs the reference";
    for (const auto& [o, w] : want) expect_close(name + " output " + o, got.at(o), w, 1e-4, 1e-5);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find("No module named") != std::string::npos) GTEST_SKIP() << "no torch: " << msg;
    FAIL() << msg;
  }
  grad_torch_test(refs(), name, *load(name), make_case);
}

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider19, ::testing::ValuesIn(all_funcs()),
                         [](const auto& info) { return info.param; });

std::string grad_error(const FunctionNode& f) {
  try {
    gradient(f, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Functions a user writes that gradient() refuses for constructs docs/autodiff.md lists as
// unsupported; each has a working form in the registry (named in the .tir). chol_solve_revstore
// and kalman_cv2_statevec are reported as refusals worth lifting (/tmp/h5/r19/FINDINGS.md F1, F2).
const std::map<std::string, std::string>& first_order_refusals() {
  static const std::map<std::string, std::string> m = {
      // A region block of a scan loop must store at its step var: row 2 - s at step s is refused.
      {"chol_solve_revstore",
       "block bs: a scan step must write elements of its own: index the store to Sb by distinct iter vars, "
       "vs "
       "among them"},
      // A max scatter at a data-dependent element (Y[Sg[e], h] = max(..)) stays refused.
      {"unsorted_segment_max_plain", "block Y_1: opaque iter vars are not supported"},
      // Max reductions inside a recurrence through several blocks.
      {"crf_marginals_maxred",
       "block amax: in a recurrence through several blocks (or with a reduction), a block must store a value "
       "or "
       "sum with an init (max, min, product and accumulation onto earlier content are not supported)"},
      // Two stores to one history buffer (the state vector's columns Xs[vt, 0], Xs[vt, 1]) in a scan
      // step: refused; the message names the constant column (F2; h10 r19).
      {"kalman_cv2_statevec",
       "block kf: a scan step must write elements of its own: the store to Xs at Xs[vt, 0] has the constant "
       "index 0 in dimension 1 (a state kept in columns of one buffer); keep each component in a buffer "
       "of its own indexed by vt"},
      // Gaussian elimination in place (M updated at every step, not indexed by the step var).
      {"lu_blocks_inplace",
       "block upd: a scan step must write elements of its own: index the store to M by distinct iter vars, "
       "vk "
       "among them"},
      // The (t, u) lattice as one block with two scan vars.
      {"rnnt_loss_2scan", "block alpha: several scan iter vars in one block are not supported"},
  };
  return m;
}

TEST(Outsider19Refused, first_order) {
  for (const auto& [name, msg] : first_order_refusals()) {
    std::string got = grad_error(*load(name));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

TEST(Outsider19Refused, second_order) {
  for (const auto& [name, msg] : second_order_refusals()) {
    Module gm;
    gm.add_func(gradient(*load(name), {}));
    Module back = parse_module(print_module(gm), name + "_grad.tir");
    std::string got = grad_error(*back.find_func(name + "_grad"));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

// Every function of the file is tested (a function added without a test would be dead weight).
TEST(Outsider19Meta, every_function_listed) {
  Module m = parse_file(reg().file().string());
  std::set<std::string> listed(all_funcs().begin(), all_funcs().end());
  for (const auto& [name, msg] : first_order_refusals()) listed.insert(name);
  size_t n = 0;
  for (const auto& f : m.funcs) {
    EXPECT_TRUE(listed.count(f->name)) << f->name;
    ++n;
  }
  EXPECT_EQ(n, listed.size());
}

// The references of all functions in one Python process (the ctest fixture of CMakeLists.txt).
TEST(Outsider19Setup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

}  // namespace

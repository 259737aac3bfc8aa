// Eighteenth outsider round of gradient checks (tests/zoo/outsider18/outsider18.tir): operators
// from TVM's relay / topi list and PyTorch's nn.functional that the zoo and rounds 1-17 did not
// have, most of them whole layers; sched_* carry a schedule item that load() applies first.
// For each function:
//   Outsider18.grad/F        `tirc grad` output re-parses; check_grad --full (f64) passes on two
//                            seeds; F_grad's FLOPs <= the bound recorded below (3x unless
//                            listed); the gradient of F_grad passes check_grad (except the
//                            documented second-order refusals below);
//   Outsider18.grad_torch/F  the interpreter's f32 outputs equal PyTorch's forward (f64,
//                            outsider18_ref.py) within the zoo's forward tolerances, and F_grad
//                            run in f64 equals torch.autograd's VJP; skipped without torch.
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
#include "transforms/schedule/schedule.h"

using namespace tirc;
using namespace tirc::zoo;

namespace {

const std::vector<std::string>& all_funcs() {
  // clang-format off
  static const std::vector<std::string> v = {
      "fractional_max_pool2d", "winograd_conv2d", "reverse_seq_rnn", "seqmask_pool",
      "morph_gradient", "roi_pool", "crop_and_resize", "atrous_s2b", "conv2d_nchwc", "adaptive_avg_pool3d",
      "multilabel_margin", "snn_alpha_dropout", "affine_grid_sample", "scatter_update", "deform_conv2d",
      "log_mel_db", "mfcc_deltas", "lstm_proj", "encoder_layer", "bsr_dense", "maxpool_grad", "rrelu_softmin",
      "embedding_renorm", "triplet_swap", "swin_window_attn", "mlp_mixer", "convnext_block",
      "inverted_residual", "vit_patch_embed", "pointnet", "edgeconv", "adaln_zero", "convlstm_cell",
      "timestep_embed", "kv_cache_attn", "gauss_jordan_inv", "gaussian_splat2d", "interp_bucketize",
      "istft_ola", "tied_lm_head", "sched_winograd_conv2d", "sched_encoder_layer", "sched_swin_window_attn"};
  // clang-format on
  return v;
}

Registry& reg() {
  static Registry r("outsider18", std::map<std::string, double>{{"p", 3}});  // kv_cache_attn's position
  return r;
}
// The function with its schedule item applied (when it has one): what a user gets from
// `tirc schedule FILE | tirc grad - --func F`. The references are computed on the unscheduled
// function (Registry::make_case), which computes the same.
Function load(const std::string& name) {
  Module m = apply_module_schedules(parse_file(reg().file().string()), name);
  Function f = m.find_func(name);
  if (!f) throw Error("no function " + name + " in outsider18.tir");
  return f;
}
ArgMap scalars(const FunctionNode& f) { return reg().scalars(f); }
TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

// FLOP ratio F_grad / F (`tirc stats`, static counts) measured when the round was written
// (2026-11-27), and the bound each function keeps: 3x unless listed. Measured:
// fractional_max_pool2d 2.25, winograd_conv2d 1.57, seqmask_pool 1.00,
// morph_gradient 2.05, roi_pool 0.21 (the forward recomputes the window bounds at every tap; F_grad
// hoists them per box and bin), crop_and_resize 1.46, atrous_s2b 2.02, conv2d_nchwc 2.99,
// adaptive_avg_pool3d 1.00, multilabel_margin 2.00, snn_alpha_dropout 1.74, affine_grid_sample
// 2.38, scatter_update 2.25, log_mel_db 1.92, mfcc_deltas 0.88, encoder_layer 2.67, bsr_dense 2.00,
// maxpool_grad 1.00, rrelu_softmin 2.45, embedding_renorm 2.02, triplet_swap 1.08,
// swin_window_attn 2.64, mlp_mixer 2.02, convnext_block 2.28, vit_patch_embed 2.47, pointnet
// 2.42, edgeconv 2.33, adaln_zero 2.61, convlstm_cell 2.78, timestep_embed 2.55, kv_cache_attn
// 2.20, gaussian_splat2d 2.96, interp_bucketize 1.92, istft_ola 1.62, tied_lm_head 2.36,
// sched_winograd_conv2d 1.06 (the scheduled forward recomputes the tile transform per output
// channel), sched_encoder_layer 2.69, sched_swin_window_attn 2.56.
double max_flop_ratio(const std::string& name) {
  static const std::map<std::string, double> bounds = {
      // 3.37: the two reverse_sequence blocks read X / Hr at the data-dependent index L[b] - 1 - t:
      // their adjoints are scatter-adds over the forward nest (+1 add per element each, 120 of
      // 1314 FLOPs) although the map is a permutation (plain stores by hand; tirc cannot know
      // it is injective). Without them 3.06, the rest the RNN's (examples/ops/rnn_tanh: 3.18).
      {"reverse_seq_rnn", 3.4},
      // 3.44 (4.50 before cost round 5, whose masks hoist the range test py > -1.0 && .. out of
      // the adjoints): missed sharing (reported). im2col's adjoint is split into im2col_dMsk, four
      // corner scatters im2col_dX .. _3 and im2col_dOff, _1, and the bilinear factors are hoisted
      // again for each in another iteration form (hoist2 over (h, r, s, w), hoist8 over the fused
      // tap r * 3 + s of Msk's index): hoist0-7 are recomputed as hoist8-15 and hoist17-24, and
      // the range mask as hoist_cond0-2. ~2x by hand.
      {"deform_conv2d", 3.45},
      // 3.20: the cell block's two stores (Cs, Hc) become two units that each recompute the gate
      // lets (cell_1 and cell_1_rev), as round 17's slstm_cell; the init's two biases get two
      // gathers summing the same cotangent (gates_dBih, gates_dBhh: 96 FLOPs). ~2.8x by hand.
      {"lstm_proj", 3.25},
      // 3.00 (4.37 before cost round 5). The folded BN + ReLU6 is inlined into the depthwise
      // conv's padded load, so the forward applies it per tap (9x); the adjoint has one gather
      // per read buffer (dw_dE, dw_dS1, dw_dT1; project_dD, _dS2, _dT2), which recomputed the
      // activation's masks; now computed once per element (hoist_cond0-3). Left: dw_dWd
      // recomputes the activation per tap (5184 of 20480 FLOPs), as the forward does.
      {"inverted_residual", 3.05},
      // 4.30: inherent for this op. Each elimination point costs 3 FLOPs and reads four elements
      // (G[k, i, j], G[k, i, k], G[k, k, j], G[k, k, k]); each read's adjoint is a multiply-add
      // (>= 8 FLOPs) on top of the recomputed forward: >= 3.7x without factoring the pivot's
      // divisions out of the reductions.
      {"gauss_jordan_inv", 4.35},
  };
  auto it = bounds.find(name);
  return it == bounds.end() ? 3.0 : it->second;
}

// Second orders refused as docs/autodiff.md (Scans) documents: F_grad's backward steps of a
// recurrence through several blocks, or storing several elements of one cotangent.
const std::map<std::string, std::string>& second_order_refusals() {
  static const std::map<std::string, std::string> m = {
      {"reverse_seq_rnn",
       "block h_rev: a scan step must write elements of its own: index the store to A_grad"},
      {"lstm_proj", "block cell_rev: several stores to Gt_grad in one block body are not supported"},
      {"gauss_jordan_inv",
       "block eliminate_rev: several stores to G_grad in one block body are not supported"},
  };
  return m;
}

class Outsider18 : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider18, grad) {
  Function f = load(GetParam());
  expect_round_grad(*f, scalars(*f), max_flop_ratio(GetParam()), !second_order_refusals().count(GetParam()));
}

TEST_P(Outsider18, grad_torch) {
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

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider18, ::testing::ValuesIn(all_funcs()),
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
// unsupported; each has a working form in the registry (named in the .tir).
const std::map<std::string, std::string>& first_order_refusals() {
  static const std::map<std::string, std::string> m = {
      // Normalisation rewrite 0i: a let outside any block reading a buffer its scope writes.
      {"gauss_jordan_inplace",
       "let pv = M[k, k] (outside any block, around loops) reads M, which a statement in its scope writes, "
       "so "
       "its value cannot move into the blocks that use it"},
      // Opaque iter vars: an overwrite at a data-dependent index is neither spatial nor a sum.
      {"scatter_update_plain", "block S_1: opaque iter vars are not supported"},
  };
  return m;
}

TEST(Outsider18Refused, first_order) {
  for (const auto& [name, msg] : first_order_refusals()) {
    std::string got = grad_error(*load(name));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

TEST(Outsider18Refused, second_order) {
  for (const auto& [name, msg] : second_order_refusals()) {
    Module gm;
    gm.add_func(gradient(*load(name), {}));
    Module back = parse_module(print_module(gm), name + "_grad.tir");
    std::string got = grad_error(*back.find_func(name + "_grad"));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

// Every function of the file is tested (a function added without a test would be dead weight).
TEST(Outsider18Meta, every_function_listed) {
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

// The schedule items were applied: the scheduled functions differ from the written ones (a
// schedule that silently failed would make the sched_* entries plain copies).
TEST(Outsider18Sched, schedules_applied) {
  Module m = parse_file(reg().file().string());
  for (const char* name : {"sched_winograd_conv2d", "sched_encoder_layer", "sched_swin_window_attn"}) {
    Function plain = m.find_func(name), sched = load(name);
    ASSERT_TRUE(plain && sched);
    EXPECT_NE(print_function(*plain), print_function(*sched)) << name;
  }
}

// The references of all functions in one Python process (the ctest fixture of CMakeLists.txt).
TEST(Outsider18Setup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

}  // namespace

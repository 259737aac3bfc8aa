// Seventeenth outsider round of gradient checks (tests/zoo/outsider17/outsider17.tir): operators
// a TVM / PyTorch user would differentiate that the zoo and rounds 1-16 did not have (NeRF volume
// rendering and positional encoding, a hash-grid lookup, spherical harmonics, flash-attention's
// online softmax as a scan, DeltaNet, an sLSTM cell, minGRU, heat-equation steps, a mass-spring
// chain, a Hawkes NLL, planar / coupling flows, Black-Scholes, NeuralSort, MMD, ArcFace, DIoU,
// modulated / conditional / involution / lightweight / Toeplitz convolutions, Harris, a bilateral
// filter, T5's relative buckets, a Taylor matrix exponential, a Cholesky Gaussian NLL, ...).
// For each function:
//   Outsider17.grad/F        `tirc grad` output re-parses; check_grad --full (f64) passes on two
//                            seeds; F_grad's FLOPs <= the bound recorded below (3x unless
//                            listed); the gradient of F_grad passes check_grad (except the
//                            documented second-order refusals below);
//   Outsider17.grad_torch/F  the interpreter's f32 outputs equal PyTorch's forward (f64,
//                            outsider17_ref.py) within the zoo's forward tolerances, and F_grad
//                            run in f64 equals torch.autograd's VJP; skipped without torch.
// sched_* carry a schedule item that load() applies first.
// Outsider17Refused.* pins the six functions refused for constructs docs/autodiff.md lists as
// unsupported, and the second orders refused as its Scans section documents.
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
      "nerf_render", "nerf_posenc_mlp", "hashgrid_encode", "sh_eval", "online_softmax_attn", "deltanet",
      "slstm_cell", "min_gru", "heat1d_steps", "verlet_spring", "hawkes_nll", "planar_flow",
      "affine_coupling", "vae_kl_reparam", "black_scholes", "neural_sort", "mmd_rbf", "ccc_loss",
      "tversky_loss", "wing_loss", "arcface_loss", "diou_loss", "film_layer", "eca_block",
      "modulated_conv", "condconv", "involution1d", "lightweight_conv", "toeplitz_conv1d",
      "harris_response", "bilateral1d", "t5_relbias", "expm_taylor", "mvn_nll_chol", "style_loss",
      "drop_path_ls", "rodrigues_rotate", "project_points", "soft_histogram", "poincare_dist",
      "cheby_kan", "hier_softmax", "gaussian_blur_sep", "ntm_rw", "sched_modulated_conv", "sched_nerf_render",
      "sched_t5_relbias", "sched_involution1d", "sched_deltanet"};
  // clang-format on
  return v;
}

Registry& reg() {
  static Registry r("outsider17", std::map<std::string, double>{});
  return r;
}
// The function with its schedule item applied (when it has one): what a user gets from
// `tirc schedule FILE | tirc grad - --func F`. The references are computed on the unscheduled
// function (Registry::make_case), which computes the same.
Function load(const std::string& name) {
  Module m = apply_module_schedules(parse_file(reg().file().string()), name);
  Function f = m.find_func(name);
  if (!f) throw Error("no function " + name + " in outsider17.tir");
  return f;
}
ArgMap scalars(const FunctionNode& f) { return reg().scalars(f); }
TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

// FLOP ratio F_grad / F (`tirc stats`, static counts) measured when the round was written
// (2026-11-27), and the bound each function keeps: 3x unless listed. Measured: nerf_render 1.88,
// nerf_posenc_mlp 2.09, hashgrid_encode 2.09, sh_eval 2.22, deltanet 2.95, min_gru 2.98,
// heat1d_steps 3.00, hawkes_nll 2.51, planar_flow 2.25, affine_coupling 2.24, vae_kl_reparam 1.60,
// black_scholes 2.76, neural_sort 2.21, mmd_rbf 1.50, ccc_loss 2.14, tversky_loss 2.34,
// wing_loss 1.39, arcface_loss 2.67, diou_loss 1.50, eca_block 2.01, modulated_conv 2.86,
// condconv 2.12, involution1d 2.45, lightweight_conv 2.41, toeplitz_conv1d 2.08,
// harris_response 2.51, t5_relbias 2.54, expm_taylor 2.59, mvn_nll_chol 2.56, style_loss 2.23,
// drop_path_ls 2.56, rodrigues_rotate 2.44, soft_histogram 2.44, poincare_dist 1.74,
// cheby_kan 3.00, hier_softmax 2.17, gaussian_blur_sep 2.50, ntm_rw 2.89, sched_nerf_render 2.17,
// sched_t5_relbias 2.86, sched_involution1d 0.98 (compute_at recomputes kn per channel),
// sched_deltanet 2.95.
double max_flop_ratio(const std::string& name) {
  static const std::map<std::string, double> bounds = {
      // 3.30: the three blocks of the scan region get no hoisting (docs/autodiff.md: regions);
      // acc_rev recomputes exp(M[j-1] - M[j]) and exp(S - M) at every (q, j, d): 936 of 2832.
      // A hand-written backward of softmax attention needs ~2.5x.
      {"online_softmax_attn", 3.35},
      // 6.82: missed sharing. The one-block step storing M, C, N, H is split into four pieces
      // (cell .. cell_3) that each recompute the cell's lets (cell_3 alone 340 FLOPs, the whole
      // forward), and so do their backward steps (cell_3_rev 430); ~3x by hand.
      // Reported in the round's report.
      {"slstm_cell", 6.9},
      // 3.30: a region (velocity then position per step): Vs_1_rev recomputes the spring forces
      // and stores into four neighbouring cotangents; ~2.5x by hand.
      {"verlet_spring", 3.35},
      // 3.80: missed sharing. The relu's masked cotangent select(v > 0, dY, 0) is recomputed
      // by the three gathers y_dBt, y_dGm, y_dX (broadcast reads of gamma / beta); a tanh in
      // its place gets the factor hoisted once. ~2.6x by hand (reported).
      {"film_layer", 3.85},
      // 6.55: missed sharing. The reduction nd has two stores and lets reading X at the clamped
      // (non-affine) index j: six scatter blocks (nd_dX .. nd_dX_3, nd_dSr, nd_dSr_1) each
      // recompute the weight exp(..) and its derivative; ~2.5x by hand (reported).
      {"bilateral1d", 6.6},
      // 3.61: every read not at the iteration point (Pxy[vn, 0], Pxy[vn, 1], Pz[vn] broadcast
      // over vc, Kf, Dk) gets its own gather recomputing the distortion lets (uv_dPz 96 FLOPs);
      // ~2.5x by hand.
      {"project_points", 3.65},
      // 3.07 (2.86 unscheduled): after split(l, [_, 3]) the gather y_dX is no longer hoisted
      // (its loops l0 * 3 + l1 do not cover the box as one loop): 960 FLOPs instead of 576 +
      // 128 for hoist5.
      {"sched_modulated_conv", 3.1},
  };
  auto it = bounds.find(name);
  return it == bounds.end() ? 3.0 : it->second;
}

// Second orders refused as docs/autodiff.md (Scans) documents: F_grad's backward steps of a
// region, of a scan with several carried reads or with a step tape store into several elements
// they do not own.
const std::map<std::string, std::string>& second_order_refusals() {
  static const std::map<std::string, std::string> m = {
      {"online_softmax_attn", "block acc_rev: several stores to M_grad in one block body are not supported"},
      {"deltanet", "block s_rev: a store reads S_grad, which another store of the same block writes"},
      {"slstm_cell",
       "block cell_3_rev: a scan step must write elements of its own: index the store to cell_3_tape"},
      {"heat1d_steps", "block u_rev: several stores to U_grad_1 in one block body are not supported"},
      {"verlet_spring", "block Vs_1_rev: several stores to Xs_s1_grad in one block body are not supported"},
      {"expm_taylor",
       "block p_rev: in a recurrence through several blocks (or with a reduction), a block must store a "
       "value "
       "or sum with an init"},
      {"mvn_nll_chol",
       "block r_rev: in a recurrence through several blocks (or with a reduction), a block must store a "
       "value "
       "or sum with an init"},
      {"ntm_rw", "block m_rev: a store reads M_grad, which another store of the same block writes"},
      {"cheby_kan", "block tc_rev: a scan step must write elements of its own: index the store to tc_tape"},
      {"sched_deltanet", "block s_rev: a store reads S_grad, which another store of the same block writes"},
  };
  return m;
}

class Outsider17 : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider17, grad) {
  Function f = load(GetParam());
  expect_round_grad(*f, scalars(*f), max_flop_ratio(GetParam()), !second_order_refusals().count(GetParam()));
}

// The forward outputs and the VJP against PyTorch, in one test so that one process stages the
// name's references (the Setup fixture computes them all first under ctest).
TEST_P(Outsider17, grad_torch) {
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

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider17, ::testing::ValuesIn(all_funcs()),
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
TEST(Outsider17Refused, first_order) {
  const std::map<std::string, std::string> refused = {
      // Refused: the running max `M[q] = max(M[q], S[q, j])` of C-style online softmax, read in
      // its loop, is a state of a recurrence over j since helper round 18 (it read as a max
      // reduction whose partial values Sc saw); the scratch Sc[q], overwritten at every step
      // without reading itself, is neither a state nor a step's own element.
      {"online_softmax_plain",
       "block Sc: a scan step must write elements of its own: index the store to Sc by distinct iter vars, "
       "vj among them"},
      // Scans: only normalisation rewrites 1 and 9 apply in a scan block (no loop in its body).
      {"online_softmax_scanloop", "block st: loops inside a block body are not supported"},
      // Normalisation, still refused: re-initialised accumulators (U = 0 at every step t).
      {"deltanet_inplace",
       "block S_1: reads U, which block U_1 accumulates over loop t (reduce iter var vt), inside that loop"},
      // Refused: opaque iter vars neither spatial nor reduce (the ping-pong index (t + 1) % 2).
      {"heat_pingpong", "block A_1: opaque iter vars are not supported"},
      // Normalisation 0: loops whose range depends on another loop (CSR row pointers as bounds)
      // are not wrapped into blocks.
      {"spmv_csr_loops", "a store to Y outside of any block is not supported"},
      // Normalisation 0c: compute_at of the derivative stencil d under the window sums' column
      // loop recomputes overlapping elements of Ix / Iy (each instance must run once).
      {"sched_harris_response",
       "block d: the loop iterations (i = 0, j = 0, ax0 = 0, ax1 = 1) and (i = 0, j = 1, ax0 = 0, ax1 = 0) "
       "run "
       "the same instance"},
  };
  for (const auto& [name, msg] : refused) {
    std::string got = grad_error(*load(name));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

TEST(Outsider17Refused, second_order) {
  for (const auto& [name, msg] : second_order_refusals()) {
    Module gm;
    gm.add_func(gradient(*load(name), {}));
    Module back = parse_module(print_module(gm), name + "_grad.tir");
    std::string got = grad_error(*back.find_func(name + "_grad"));
    EXPECT_NE(got.find(msg), std::string::npos) << name << ": " << (got.empty() ? "differentiated" : got);
  }
}

// Every function of the file is tested or pinned as refused (a function added without a test
// would be dead weight).
TEST(Outsider17Meta, every_function_listed) {
  Module m = parse_file(reg().file().string());
  std::set<std::string> listed(all_funcs().begin(), all_funcs().end());
  listed.insert({"online_softmax_plain", "online_softmax_scanloop", "deltanet_inplace", "heat_pingpong",
                 "spmv_csr_loops", "sched_harris_response"});
  size_t n = 0;
  for (const auto& f : m.funcs) {
    EXPECT_TRUE(listed.count(f->name)) << f->name;
    ++n;
  }
  EXPECT_EQ(n, listed.size());
}

// The schedule items were applied: the scheduled functions differ from the written ones (a
// schedule that silently failed would make the sched_* entries plain copies).
TEST(Outsider17Sched, schedules_applied) {
  Module m = parse_file(reg().file().string());
  for (const char* name : {"sched_modulated_conv", "sched_nerf_render", "sched_t5_relbias",
                           "sched_involution1d", "sched_deltanet", "sched_harris_response"}) {
    Function plain = m.find_func(name), sched = load(name);
    ASSERT_TRUE(plain && sched);
    EXPECT_NE(print_function(*plain), print_function(*sched)) << name;
  }
}

// The references of all functions in one Python process (the ctest fixture of CMakeLists.txt).
TEST(Outsider17Setup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

}  // namespace

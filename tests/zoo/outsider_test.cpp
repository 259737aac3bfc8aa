// Outsider round of gradient checks (tests/zoo/outsider/outsider.tir): small functions
// written as a TensorIR user would, aimed at corners of the autodiff (in-place updates,
// outputs read later, integer outputs, where predicates, ties, padding, gathers and
// scatter-adds through i32 indices, data-dependent branches, casts, symbolic sizes, scans,
// transposed / diagonal / strided / div-mod indices, inits with loops). For each function:
//   Outsider.check_grad/F   `tirc grad` output re-parses; check_grad --full (f64 finite
//                           differences) on F passes, with the printed F_grad;
//   Outsider.grad_torch/F   F_grad run in f64 equals torch.autograd's VJP
//                           (outsider/outsider_ref.py, computed by examples/ops/ref/check.py);
//   Outsider.second_order/F for a few: the gradient of F_grad passes check_grad too.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/zoo/registry_checks.h"
#include "tests/zoo/torch_refs.h"
#include "tests/zoo/zoo_util.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace fs = std::filesystem;
using namespace tirc;
using namespace tirc::zoo;

namespace {

const std::vector<std::string>& all_funcs() {
  static const std::vector<std::string> v = {"inplace3",        "out_mid",
                                             "multi_out",       "where_sum",
                                             "max_dup",         "min_pool_pad",
                                             "gather_scatter",  "data_branch",
                                             "init_bias",       "cast_weights",
                                             "sym_colsum",      "scan_cumsum",
                                             "lin_rec",         "rnn",
                                             "sym_diag",        "conv_stride",
                                             "reshape_divmod",  "conv_t",
                                             "fused_rows",      "quad_form",
                                             "div_total",       "lse",
                                             "clamp_pow",       "matmul_bt",
                                             "mean_var",        "init_loop_rows",
                                             "prod_rows",       "max_pool_pad",
                                             "softmax_inplace", "shifted",
                                             "if_stmt",         "sub_mul_red",
                                             "opaque_iv",       "partial_where",
                                             "thread_bind",     "i64_idx",
                                             "two_out_same",    "scan_two_back",
                                             "argmax_gather",   "sym_init_loop"};
  return v;
}

// The registry: its file, scalar values (for the functions that have scalar params) and
// PyTorch references (filled by the ctest fixture OutsiderSetup.torch_refs; see
// tests/zoo/torch_refs.h).
Registry& reg() {
  static Registry r("outsider", [](const FunctionNode& f, const std::string& n) {
    (void)f;
    return n == "n" ? (f.name == "sym_colsum" ? 5.0 : 3.0) : 0.7;
  });
  return r;
}
ArgMap scalars(const FunctionNode& f) { return reg().scalars(f); }
Function load(const std::string& name) { return reg().load(name); }

class Outsider : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider, check_grad) {
  Function f = load(GetParam());
  expect_grad_checks(*f, scalars(*f));
}

TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

TEST_P(Outsider, grad_torch) { grad_torch_test(refs(), GetParam(), *load(GetParam()), make_case); }

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider, ::testing::ValuesIn(all_funcs()),
                         [](const auto& info) { return info.param; });

class OutsiderSecondOrder : public ::testing::TestWithParam<std::string> {};

TEST_P(OutsiderSecondOrder, second_order) {
  Function f = load(GetParam());
  expect_second_order_checks(*f, scalars(*f));
}

INSTANTIATE_TEST_SUITE_P(Funcs, OutsiderSecondOrder,
                         ::testing::Values("inplace3", "out_mid", "data_branch", "sym_diag", "conv_t", "lse",
                                           "div_total", "fused_rows", "init_loop_rows", "lin_rec",
                                           "reshape_divmod", "softmax_inplace", "opaque_iv", "partial_where"),
                         [](const auto& info) { return info.param; });

// The documented tie rule of max/min reductions: the whole gradient goes to the first
// extremum in the order of the reduce iter vars (torch.amax would split it).
TEST(OutsiderTies, MaxGoesToTheFirstExtremum) {
  Module m = parse_module(R"(func rowmax(X: f32[2, 4]) -> (M: f32[2]) {
  for i, k in grid(2, 4) {
    block m(vi: spatial(2) = i, vk: reduce(4) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vk])
    }
  }
})",
                          "ties.tir");
  Function g = gradient(*m.find_func("rowmax"), {});
  NDArray x(DType::F32, {2, 4}), c(DType::F32, {2});
  const double xs[8] = {1, 3, 3, 2, 5, 5, 5, 5};
  for (int i = 0; i < 8; ++i) x.set(i, xs[i]);
  c.set(0, 2.0);
  c.set(1, 0.5);
  ArgMap out = run_interp(*g, {{"X", x}, {"M_grad", c}});
  const double want[8] = {0, 2, 0, 0, 0.5, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out.at("X_grad").get(i), want[i]) << i;
}

// The fixture of the grad_torch tests (CMakeLists.txt: FIXTURES_SETUP outsider_torch_refs);
// not discovered as a test of its own.
TEST(OutsiderSetup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

}  // namespace

// Twelfth outsider round of gradient checks (tests/zoo/outsider12/outsider12.tir): the
// operators of the peers' own autodiff suites translated into `.tir` -- TVM's
// tests/python/unittest/test_te_autodiff.py (test_basic_operation, test_topi,
// test_stride_dilation, test_reduction_init) and relay gradient ops, Halide's
// test/correctness/autodiff.cpp (scalar rules, box blurs, updates, Horner's polynomial as a
// scan, order-dependent RDoms, linear resampling, sparse / RDom updates, histograms as opaque
// scatter-adds, boundary conditions, second order, tuples, floor / ceil indices, sampling,
// transpose, RDom predicates, reversal, diagonals, select guards, params). For each:
//   Outsider12.grad/F        `tirc grad` output re-parses; check_grad --full passes on two
//                            seeds; F_grad's FLOPs <= 3x F's (except the bounds below); the
//                            gradient of F_grad passes check_grad;
//   Outsider12.grad_torch/F  F_grad run in f64 equals torch.autograd's VJP (outsider12_ref.py);
//                            skipped when /usr/bin/python3 has no torch.
// Outsider12Exact.*: the derivative values the peer tests check (Halide's exact numbers at its
// own inputs, TVM's desired zero gradients), F_grad run in f64 on those inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/sanitized.h"
#include "tests/zoo/registry_checks.h"
#include "tests/zoo/torch_refs.h"
#include "tests/zoo/zoo_util.h"

using namespace tirc;
using namespace tirc::zoo;

namespace {

const std::vector<std::string>& all_funcs() {
  // clang-format off
  static const std::vector<std::string> v = {
      "tvm_basic_ij_ji", "tvm_basic_rounding", "tvm_basic_exp_ji", "tvm_basic_cubic",
      "tvm_basic_pow_abs", "tvm_basic_mul_ji", "tvm_basic_sum_diag", "tvm_basic_max_plus5",
      "tvm_basic_min_index", "tvm_basic_prod_reducer", "tvm_basic_tensordot", "tvm_basic_div_mod",
      "tvm_topi_conv_relu_conv", "tvm_topi_broadcast_conv", "tvm_topi_pool",
      "tvm_topi_resconv_softmax", "tvm_topi_concat_split", "tvm_topi_take_abs",
      "tvm_topi_dense_softmax", "tvm_conv_stride_dilation", "tvm_maxpool_stride", "relay_ops",
      "halide_scalar", "halide_1d_box_no_clamp", "halide_2d_box", "halide_update",
      "halide_nonlinear_update", "halide_rdom_conv", "halide_horner_poly",
      "halide_nonlinear_order_rdom", "halide_linear_resampling", "halide_sparse_update",
      "halide_histogram", "halide_multi_histogram", "halide_rdom_update", "halide_boundaries",
      "halide_second_order", "halide_second_order_conv", "halide_tuple", "halide_floor_ceil",
      "halide_transpose", "halide_rdom_predicate", "halide_reverse", "halide_diagonal",
      "halide_select_guard", "halide_param"};
  // clang-format on
  return v;
}

Registry& reg() {
  static Registry r("outsider12", std::map<std::string, double>{});
  return r;
}
Function load(const std::string& name) { return reg().load(name); }
TorchRefs& refs() { return reg().refs(); }
RefCase make_case(const std::string& name) { return reg().make_case(name); }

// FLOPs of F_grad (static counts, as `tirc stats`) <= 3x F's. The functions above 3x, with
// the bound they keep:
double max_flop_ratio(const std::string& name) {
  static const std::map<std::string, double> bounds = {
      {"tvm_basic_cubic", 3.56},    // f(A0[i, j], A0[j, i]) pointwise (4.44x before cost round 2:
                                    // the local derivatives at (i, j) and (j, i) are now computed
                                    // once per element into a buffer); what stays: the product
                                    // terms a * A0[j, i] * 2 * A0[i, j] of the gather per map
      {"tvm_basic_pow_abs", 3.34},  // the same for pow(|A0[i, j]|, A0[j, i]) (4x before)
      {"halide_sparse_update", 4},  // one FLOP forward (2 * in(1)), stores only otherwise
  };
  auto it = bounds.find(name);
  return it == bounds.end() ? 3.0 : it->second;
}

// Second orders refused as docs/autodiff.md documents (none so far).
bool second_order_refused(const std::string& name) {
  static const std::set<std::string> refused = {};
  return refused.count(name) > 0;
}

class Outsider12 : public ::testing::TestWithParam<std::string> {};

TEST_P(Outsider12, grad) {
  Function f = load(GetParam());
  expect_round_grad(*f, reg().scalars(*f), max_flop_ratio(GetParam()), !second_order_refused(GetParam()));
}

TEST_P(Outsider12, grad_torch) { grad_torch_test(refs(), GetParam(), *load(GetParam()), make_case); }

INSTANTIATE_TEST_SUITE_P(Funcs, Outsider12, ::testing::ValuesIn(all_funcs()),
                         [](const auto& info) { return info.param; });

// The references of all functions in one Python process (the ctest fixture of CMakeLists.txt).
TEST(Outsider12Setup, torch_refs) { setup_torch_refs(refs(), all_funcs(), make_case); }

// ---------------------------------------------------------------- exact values
using Values = std::map<std::string, std::vector<double>>;

// Runs f in f64 on random inputs (seed 3) overwritten by `given`, one element per value in
// order. Missing values of an entry are an error.
ArgMap run_on(const FunctionNode& f, const Values& given, const ArgMap& extra = {}) {
  ArgMap in = random_inputs(f, 3);
  for (auto& [k, v] : extra) in[k] = v;
  for (auto& [name, vals] : given) {
    auto it = in.find(name);
    if (it == in.end()) throw Error("no input " + name + " of " + f.name);
    if (static_cast<int64_t>(vals.size()) != it->second.numel()) throw Error("wrong size for " + name);
    for (size_t i = 0; i < vals.size(); ++i) it->second.set(static_cast<int64_t>(i), vals[i]);
  }
  InterpOptions o;
  o.promote_f64 = true;
  return run_interp(f, in, o);
}

// The cotangents of F_grad: `cots` by output name (others 0), as inputs named <output>_grad.
ArgMap cotangents(const FunctionNode& f, const Values& cots) {
  ArgMap c;
  for (auto& o : f.outputs) {
    NDArray a(o->dtype, eval_shape(o, {}));
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, 0.0);
    auto it = cots.find(o->name);
    if (it != cots.end()) {
      EXPECT_EQ(static_cast<int64_t>(it->second.size()), a.numel()) << o->name;
      for (size_t i = 0; i < it->second.size() && static_cast<int64_t>(i) < a.numel(); ++i)
        a.set(static_cast<int64_t>(i), it->second[i]);
    }
    c[o->name + "_grad"] = a;
  }
  return c;
}

std::vector<double> ones(size_t n) { return std::vector<double>(n, 1.0); }

void expect_values(const ArgMap& got, const Values& want, double tol = 1e-5) {
  for (auto& [name, vals] : want) {
    auto it = got.find(name);
    ASSERT_TRUE(it != got.end()) << "no result " << name;
    ASSERT_EQ(it->second.numel(), static_cast<int64_t>(vals.size())) << name;
    for (size_t i = 0; i < vals.size(); ++i) {
      double g = it->second.get(static_cast<int64_t>(i));
      EXPECT_TRUE(std::isfinite(g)) << name << "[" << i << "] = " << g;
      EXPECT_NEAR(g, vals[i], tol * std::max(1.0, std::fabs(vals[i]))) << name << "[" << i << "]";
    }
  }
}

// F_grad of `name` on `inputs` with cotangents `cots` (others 0) gives `want`.
void expect_grad_values(const std::string& name, const Values& inputs, const Values& cots,
                        const Values& want) {
  try {
    Function f = load(name);
    Function g = gradient(*f, {});
    expect_values(run_on(*g, inputs, cotangents(*f, cots)), want);
  } catch (const Error& e) {
    FAIL() << name << ": " << e.what();
  }
}

// Halide's test_scalar at its own points: y = x^2 - 2x + 5 + 3 / x at 5; the special functions
// at 0.5; abs / select at -2.5; lerp at (2, 6, 0.1).
TEST(Outsider12Exact, halide_scalar) {
  expect_grad_values("halide_scalar", {{"X", {5.0}}}, {{"P", {1.0}}}, {{"X_grad", {8.0 - 3.0 / 25.0}}});
  double x = 0.5, c = std::cos(x), t = std::tanh(x);
  double dq = std::cos(x) - std::sin(x) + 1.0 / (c * c) + std::exp(x) + 1.0 / x + 1.0 / (2.0 * std::sqrt(x)) +
              1.5 * std::pow(x, 0.5) + std::log(1.5) * std::pow(1.5, x) + (1.0 - t * t) + 5.0 + 7.0;
  expect_grad_values("halide_scalar", {{"X", {0.5}}}, {{"Q", {1.0}}}, {{"X_grad", {dq}}});
  // max / min at 2.5 as Halide: 2 max(x, 5) + 3 max(x, 1) + 5 min(x, 3) + 7 min(x, 2) -> 8
  expect_grad_values(
      "halide_scalar", {{"X", {2.5}}}, {{"Q", {1.0}}},
      {{"X_grad",
        {std::cos(2.5) - std::sin(2.5) + 1.0 / (std::cos(2.5) * std::cos(2.5)) + std::exp(2.5) + 1.0 / 2.5 +
         1.0 / (2.0 * std::sqrt(2.5)) + 1.5 * std::sqrt(2.5) + std::log(1.5) * std::pow(1.5, 2.5) +
         (1.0 - std::tanh(2.5) * std::tanh(2.5)) + 8.0}}});
  // 2|x| + 3|-x| -> -5, select(x > 0, 2x, 3x) + select(x < 0, 5x, 7x) -> 3 + 5 at x = -2.5;
  // lerp: 1 - w, w, y - x
  expect_grad_values("halide_scalar", {{"Xn", {-2.5}}, {"Xl", {2.0}}, {"Yl", {6.0}}, {"Wl", {0.1}}},
                     {{"R", {1.0}}},
                     {{"Xn_grad", {3.0}}, {"Xl_grad", {0.9}}, {"Yl_grad", {0.1}}, {"Wl_grad", {4.0}}});
  expect_grad_values("halide_scalar", {{"Xn", {5.0}}}, {{"R", {1.0}}}, {{"Xn_grad", {5.0 + 9.0}}});
}

TEST(Outsider12Exact, halide_boxes_and_updates) {
  expect_grad_values("halide_1d_box_no_clamp", {{"In", {1, 2, 3}}, {"Ic", {1, 2}}}, {{"L", {1}}, {"Lc", {1}}},
                     {{"In_grad", {6, 16, 10}}, {"Ic_grad", {6, 22}}});
  expect_grad_values("halide_update", {{"In", {1, 2, 3}}}, {{"L", {1}}}, {{"In_grad", {6, 16, 34}}});
  expect_grad_values("halide_nonlinear_update", {{"In", {1, 2, 3}}}, {{"L", {1}}}, {{"In_grad", {2, 5, 8}}});
  Function f = load("halide_nonlinear_update");
  expect_values(run_on(*f, {{"In", {1, 2, 3}}}), {{"L", {22}}});
  // loss = 30 k0^2 + 72 k0 k1 + 45 k1^2 at k = (2, 1)
  expect_grad_values("halide_rdom_conv", {{"In", {1, 2, 3, 4}}, {"K", {2, 1}}}, {{"L", {1}}},
                     {{"K_grad", {60.0 * 2 + 72.0 * 1, 72.0 * 2 + 90.0 * 1}}});
  expect_grad_values("halide_tuple", {{"In", {1, 2, 3}}}, {{"L", {1}}}, {{"In_grad", {1, 2, 1}}});
  expect_grad_values("halide_sparse_update", {{"In", {1, 2, 3}}}, {{"O", {1, 1, 1}}},
                     {{"In_grad", {1, 2, 0}}});
  expect_grad_values("halide_rdom_update", {{"In", {1, 2, 3}}}, {{"O", ones(5)}}, {{"In_grad", {2, 1, 0}}});
}

TEST(Outsider12Exact, halide_scans) {
  std::vector<double> co, want;
  for (int i = 0; i < 8; ++i) co.push_back(i + 1.0);
  for (int i = 0; i < 8; ++i) {
    double d = 0;
    for (int j = 0; j < 16; ++j) d += std::pow(j / 15.0, 7 - i);
    want.push_back(d / 16.0);
  }
  expect_grad_values("halide_horner_poly", {{"Co", co}}, {{"L", {1}}}, {{"Co_grad", want}});
  // f0 = 2, f1 = 3: loss 39 + 124; d_in = (82, 134) by Halide's manual backprop
  expect_grad_values("halide_nonlinear_order_rdom", {{"In", {2, 3}}}, {{"L", {1}}}, {{"In_grad", {82, 134}}});
  Function f = load("halide_nonlinear_order_rdom");
  expect_values(run_on(*f, {{"In", {2, 3}}}), {{"L", {163}}});
}

TEST(Outsider12Exact, halide_resampling_and_histograms) {
  expect_grad_values(
      "halide_linear_resampling",
      {{"In0", {0.3, 1.8}}, {"In1", {1, 2, 4}}, {"Jn0", {0.3, 1.8, 0.3, 1.8}}, {"Jn1", {1, 2, 4, 1, 2, 4}}},
      {{"L", {1}}, {"Ip", ones(4)}},
      {{"In0_grad", {1, 2}},
       {"In1_grad", {0.7, 0.5, 0.8}},
       {"Jn0_grad", {1, 2, 1, 2}},
       {"Jn1_grad", {0.7, 0.5, 0.8, 0.7, 0.5, 0.8}}});
  expect_grad_values("halide_histogram", {{"Ix", {2, 2, 1, 3}}, {"K", {0.5, 1, 1.5, 2, 2.5}}}, {{"L", {1}}},
                     {{"K_grad", {3, 3, 2, 4, 0}}});
  // clamp(-1) -> bin 0, clamp(4) -> bin 3
  expect_grad_values("halide_histogram", {{"Ix", {-1, 4, 1, 3}}}, {{"L", {1}}},
                     {{"K_grad", {1, 4, 2, 4, 0}}});
  expect_grad_values("halide_multi_histogram", {{"Ix", {2, 2, 1, 3}}}, {{"L", {1}}},
                     {{"K_grad", {30, 30, 20, 40}}});
  expect_grad_values(
      "halide_floor_ceil", {}, {{"O", ones(8)}, {"D", ones(2)}, {"Up", ones(16)}},
      {{"In_grad", {5, 8, 3}}, {"Dn_grad", {1, 1, 1, 1, 1, 1, 1, 1, 0, 0}}, {"U_grad", {4, 4, 4, 4}}});
}

// The five boundary conditions, one loss each: repeat_edge (1, 5), constant_exterior (1, 2),
// repeat_image (3, 3), mirror_image (2, 4), mirror_interior (3, 3).
TEST(Outsider12Exact, halide_boundaries) {
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"Le", {1, 5}}, {"Lc", {1, 2}}, {"Lr", {3, 3}}, {"Lm", {2, 4}}, {"Li", {3, 3}}};
  for (auto& [out, want] : cases)
    expect_grad_values("halide_boundaries", {{"In", {1, 2}}}, {{out, {1}}}, {{"In_grad", want}});
}

TEST(Outsider12Exact, halide_indices) {
  std::vector<double> in, tg, want, pred;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) in.push_back(i + j), tg.push_back(i * j);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) want.push_back(2.0 * (in[i * 5 + j] - tg[j * 5 + i]));
  expect_grad_values("halide_transpose", {{"In", in}, {"Tg", tg}, {"Iv", {1, 2}}}, {{"L", {1}}, {"Lp", {1}}},
                     {{"In_grad", want}, {"Iv_grad", {10, 20}}});
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j) pred.push_back((i - 3) * (i - 3) + (j - 3) * (j - 3) <= 10 ? 2.0 : 1.0);
  expect_grad_values("halide_rdom_predicate", {}, {{"C", ones(49)}}, {{"In_grad", pred}});
  expect_grad_values("halide_reverse", {{"In", {0, 1, 2, 3, 4}}}, {{"L", {1}}},
                     {{"In_grad", {5, 4, 3, 2, 1}}});
  expect_grad_values(
      "halide_diagonal", {{"In", {0, 1, 2, 3, 4}}}, {{"L", {1}}, {"O", ones(4)}},
      {{"In_grad", {1, 2, 2, 2, 1}}, {"Dg_grad", {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4}}});
  // Every select arm is evaluated: at in = 0 the untaken arms are inf / -inf and their
  // derivatives too, which must not leak into the gradient (1 + 0 + 3); at in = 1: -2 + 0.5 + 1.
  expect_grad_values("halide_select_guard", {{"In", {0, 1}}}, {{"O", {1, 1}}}, {{"In_grad", {4, -0.5}}});
  expect_grad_values("halide_param", {{"Pm", {2}}, {"Bf", {1, 0}}}, {{"F", {1}}},
                     {{"Pm_grad", {8}}, {"Bf_grad", {8, 0}}});
}

// Second order: d/dx (x^2 + 3x + 4) = 5 at 1 and d2 = 2; test_second_order_conv's d2_input.
TEST(Outsider12Exact, halide_second_order) {
  try {
    Function f = load("halide_second_order");
    Module gm;
    gm.add_func(gradient(*f, {}));
    Module back = parse_module(print_module(gm), "g.tir");
    Function g = back.find_func("halide_second_order_grad");
    ASSERT_TRUE(g);
    expect_values(run_on(*g, {{"X", {1}}, {"P_grad", {1}}}), {{"X_grad", {5}}});
    Function g2 = gradient(*g, {});
    expect_values(run_on(*g2, {{"X", {1}}, {"P_grad", {1}}, {"X_grad_grad", {1}}}),
                  {{"X_grad", {2}}, {"P_grad_grad", {5}}});

    Function c = load("halide_second_order_conv");
    Function cg = gradient(*c, {});
    std::vector<double> in, tg;
    for (int i = 0; i < 10; ++i) in.push_back(i / 10.0), tg.push_back((i + 1) / 10.0);
    Values at = {{"In", in}, {"Tg", tg}, {"K", {1, 1, 1}}, {"L_grad", {1}}};
    // d_conv(x) = 2 (conv(x) - target(x)); d_input by the repeat-edge taps
    std::vector<double> conv(9), dconv(9), din(10, 0.0);
    for (int x = 0; x < 9; ++x) {
      for (int r = 0; r < 3; ++r) conv[x] += in[std::min(std::max(x + r - 1, 0), 9)];
      dconv[x] = 2.0 * (conv[x] - tg[x]);
      for (int r = 0; r < 3; ++r) din[std::min(std::max(x + r - 1, 0), 9)] += dconv[x];
    }
    expect_values(run_on(*cg, at), {{"In_grad", din}});
    // loss1 = sum_{x < 9} d_input(x): Halide's d2_input = (18 x 7, 16, 10, 4)
    Function cg2 = gradient(*cg, {});
    ArgMap extra = cotangents(*cg, {{"In_grad", {1, 1, 1, 1, 1, 1, 1, 1, 1, 0}}});
    expect_values(run_on(*cg2, at, extra), {{"In_grad", {18, 18, 18, 18, 18, 18, 18, 16, 10, 4}}});
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// TVM's desired_grads = zeros for floor / ceil / trunc / round.
TEST(Outsider12Exact, tvm_rounding_zero) {
  expect_grad_values("tvm_basic_rounding", {},
                     {{"Bf", ones(16)}, {"Bc", ones(16)}, {"Bt", ones(16)}, {"Br", ones(16)}},
                     {{"A0_grad", std::vector<double>(16, 0.0)}});
}

}  // namespace

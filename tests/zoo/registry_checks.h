// The checks every outsider registry (tests/zoo/outsider*/) runs on each of its functions,
// shared by the registry drivers (outsider_test.cpp, outsider3_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/zoo/torch_refs.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc::zoo {

// `tirc grad` output of f re-parses, and check_grad --full (f64 finite differences) passes on
// every seed, for every input.
inline void expect_grad_checks(const FunctionNode& f, const ArgMap& scalars,
                               std::initializer_list<uint64_t> seeds = {1, 2}) {
  Module gm;
  gm.add_func(gradient(f, {}));
  Module back = parse_module(print_module(gm), f.name + "_grad.tir");
  ASSERT_TRUE(back.find_func(f.name + "_grad"));
  CheckGradOptions o;
  o.full = true;
  o.given = scalars;
  for (uint64_t seed : seeds) {
    o.seed = seed;
    CheckGradResult r = check_grad(f, o);
    EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
    EXPECT_GT(r.passed, 0);
    for (auto& in : r.inputs) EXPECT_TRUE(in.passed) << in.name;
  }
}

// The gradient of F_grad, as printed and re-parsed, passes check_grad --full too.
inline void expect_second_order_checks(const FunctionNode& f, const ArgMap& scalars) {
  Module gm;
  gm.add_func(gradient(f, {}));
  Module back = parse_module(print_module(gm), f.name + "_grad.tir");
  Function g = back.find_func(f.name + "_grad");
  ASSERT_TRUE(g);
  CheckGradOptions o;
  o.full = true;
  o.given = scalars;
  CheckGradResult r = check_grad(*g, o);
  EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
  EXPECT_GT(r.passed, 0);
}

// F_grad run in f64 on the reference case of `name` equals torch.autograd's VJP.
inline void expect_grad_matches_torch(TorchRefs& refs, const std::string& name, const FunctionNode& f,
                                      const std::function<RefCase(const std::string&)>& make_case) {
  RefCase c = refs.case_with_refs(name, make_case);
  Function g = gradient(f, {});
  expect_vjp_matches(*g, c, refs.load(name, "grad"), 1e-5, 1e-6);
}

}  // namespace tirc::zoo

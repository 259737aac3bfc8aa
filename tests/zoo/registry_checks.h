// The checks every outsider registry (tests/zoo/outsider*/) runs on each of its functions,
// shared by the registry drivers (outsider_test.cpp, outsider3/5/6_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "interp/stats.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/sanitized.h"
#include "tests/zoo/torch_refs.h"
#include "tests/zoo/zoo_util.h"
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

// FLOPs of F_grad (static counts, as `tirc stats`) <= bound x F's, or bound x F's stores when F
// has no FLOPs (as the zoo's flop_ratio).
inline void expect_flop_ratio(const FunctionNode& f, const ArgMap& scalars, double bound) {
  Function g = gradient(f, {});
  FunctionCounts cf = static_counts(f, scalars), cg = static_counts(*g, scalars);
  double base = cf.total.flops > 0 ? cf.total.flops : cf.total.stores;
  EXPECT_LE(cg.total.flops, bound * base)
      << f.name << ": forward " << cf.total.flops << " FLOPs (" << cf.total.stores << " stores), gradient "
      << cg.total.flops << " FLOPs\n"
      << print_function(*g);
}

// The checks of a round's `grad` test: grad re-parses and check_grad --full passes on two seeds
// (one under a sanitizer), F_grad's FLOPs <= max_ratio x F's, and (release builds only, when
// second_order) the gradient of F_grad passes check_grad too.
inline void expect_round_grad(const FunctionNode& f, const ArgMap& scalars, double max_ratio,
                              bool second_order = true) {
  try {
#ifdef TIRC_TEST_SANITIZED
    expect_grad_checks(f, scalars, {1});
#else
    expect_grad_checks(f, scalars);
#endif
    expect_flop_ratio(f, scalars, max_ratio);
#ifndef TIRC_TEST_SANITIZED
    if (second_order) expect_second_order_checks(f, scalars);
#else
    (void)second_order;
#endif
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// F_grad run in f64 on the reference case of `name` equals torch.autograd's VJP.
inline void expect_grad_matches_torch(TorchRefs& refs, const std::string& name, const FunctionNode& f,
                                      const std::function<RefCase(const std::string&)>& make_case) {
  RefCase c = refs.case_with_refs(name, make_case);
  Function g = gradient(f, {});
  expect_vjp_matches(*g, c, refs.load(name, "grad"), 1e-5, 1e-6);
}

// The body of a round's Setup fixture: the references of all names in one Python run. A failure
// is printed, not failed: each grad_torch test reports it for its own name.
inline void setup_torch_refs(TorchRefs& refs, const std::vector<std::string>& names,
                             const std::function<RefCase(const std::string&)>& make_case) {
  try {
    refs.ensure(names, make_case);
  } catch (const Error& e) {
    std::cout << "no references computed: " << e.what() << "\n";
  }
}

// The body of a round's grad_torch test. Only this name's case is made: its references come
// from the round's Setup fixture, or from a Python run for it alone (making the cases of all
// functions in every process, as the fixture does, cost about 1.3 s per test). Skipped when
// /usr/bin/python3 has no torch.
inline void grad_torch_test(TorchRefs& refs, const std::string& name, const FunctionNode& f,
                            const std::function<RefCase(const std::string&)>& make_case) {
  try {
    expect_grad_matches_torch(refs, name, f, make_case);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find("No module named") != std::string::npos) GTEST_SKIP() << "no torch: " << msg;
    FAIL() << msg;
  }
}

// One registry: tests/zoo/DIR/DIR.tir, its reference script DIR_ref.py and its references in
// build/DIR_torch_refs (the ctest fixture of the driver fills them). Scalar params get
// scalar_value(f, name).
class Registry {
 public:
  using ScalarValue = std::function<double(const FunctionNode&, const std::string&)>;
  Registry(std::string dir, ScalarValue scalar_value)
      : dir_(std::move(dir)),
        scalar_value_(std::move(scalar_value)),
        refs_(source_dir() / "tests" / "zoo" / dir_ / (dir_ + "_ref.py"), refs_dir(dir_ + "_torch_refs")) {}
  // Scalar params by name; a name not in values is an error.
  Registry(const std::string& dir, std::map<std::string, double> values)
      : Registry(dir, [dir, values = std::move(values)](const FunctionNode& f, const std::string& n) {
          auto it = values.find(n);
          if (it == values.end()) throw Error(dir + ": no value for scalar " + n + " of " + f.name);
          return it->second;
        }) {}

  std::filesystem::path file() const { return source_dir() / "tests" / "zoo" / dir_ / (dir_ + ".tir"); }
  Function load(const std::string& name) const {
    Module m = parse_file(file().string());
    Function f = m.find_func(name);
    if (!f) throw Error("no function " + name + " in " + dir_ + ".tir");
    return f;
  }
  ArgMap scalars(const FunctionNode& f) const {
    ArgMap given;
    for (const auto& p : f.params) {
      if (p.is_buffer()) continue;
      NDArray a(p.var.dtype(), {});
      a.set(0, scalar_value_(f, p.name()));
      given[p.name()] = a;
    }
    return given;
  }
  TorchRefs& refs() { return refs_; }
  // The reference case of function `name` (seed 7, the registry's scalars).
  RefCase make_case(const std::string& name) const {
    Function f = load(name);
    return make_ref_case(*f, 7, scalars(*f));
  }
  std::function<RefCase(const std::string&)> case_maker() const {
    return [this](const std::string& n) { return make_case(n); };
  }

 private:
  std::string dir_;
  ScalarValue scalar_value_;
  TorchRefs refs_;
};

}  // namespace tirc::zoo

// Test helper shared by the autodiff suites: check_grad --full (f64 central finite
// differences, element by element) on two seeds must pass every input.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc::testing {

// i32 scalar inputs by name (`{{"n", 0}}`), for CheckGradOptions::given.
inline ArgMap i32_scalars(std::initializer_list<std::pair<const char*, int64_t>> values) {
  ArgMap a;
  for (auto& [name, v] : values) {
    NDArray x(DType::I32, {});
    x.set(0, static_cast<double>(v));
    a[name] = x;
  }
  return a;
}

// given: inputs fixed by the caller (scalar sizes), the others drawn at random.
inline void expect_full_checks(const FunctionNode& f, const ArgMap& given = {}) {
  CheckGradOptions o;
  o.full = true;
  o.given = given;
  for (uint64_t seed : {1u, 2u}) {
    o.seed = seed;
    CheckGradResult r = check_grad(f, o);
    EXPECT_EQ(r.failed, 0) << f.name << "\n" << print_function(*r.grad);
    EXPECT_GT(r.passed, 0) << f.name;
  }
}

// The gradient of f, printed and re-parsed (as `tirc grad` twice would).
inline Function grad_of_printed(const FunctionNode& f) {
  Module gm;
  gm.add_func(gradient(f, {}));
  Module back = parse_module(print_module(gm), f.name + "_grad.tir");
  Function g = back.find_func(f.name + "_grad");
  if (!g) throw Error("no function " + f.name + "_grad");
  return g;
}

}  // namespace tirc::testing

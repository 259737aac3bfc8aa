// Test helper shared by the autodiff suites: check_grad --full (f64 central finite
// differences, element by element) on two seeds must pass every input.
#pragma once

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "transforms/autodiff/check_grad.h"

namespace tirc::testing {

inline void expect_full_checks(const FunctionNode& f) {
  CheckGradOptions o;
  o.full = true;
  for (uint64_t seed : {1u, 2u}) {
    o.seed = seed;
    CheckGradResult r = check_grad(f, o);
    EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
    EXPECT_GT(r.passed, 0);
  }
}

}  // namespace tirc::testing

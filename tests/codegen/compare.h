// Helpers of the codegen tests: run a function through the interpreter and the JIT on the
// same random inputs and compare every output.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "codegen/jit.h"
#include "interp/interp.h"
#include "parser/parser.h"

namespace tirc::cgtest {

// Elementwise |a - b| <= atol + rtol * |b|; NaNs must match NaNs. Reports the first mismatch.
inline ::testing::AssertionResult arrays_close(const NDArray& a, const NDArray& b, double rtol, double atol) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << "got " << describe(a) << ", expected " << describe(b);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": jit " << x << ", interp " << y;
  }
  return ::testing::AssertionSuccess();
}

inline Function parse_func(const std::string& text, const std::string& name) {
  Module m = parse_module(text, "test.tir");
  Function f = m.find_func(name);
  EXPECT_TRUE(f) << name;
  return f;
}

// Runs f with the interpreter and the JIT on random inputs (seed) and compares.
inline void expect_jit_matches_interp(const FunctionNode& f, uint64_t seed = 1, double rtol = 1e-5,
                                      double atol = 1e-6, const ArgMap& given = {}) {
  ArgMap in = random_inputs(f, seed, given);
  ArgMap ref = run_interp(f, in);
  auto prog = compile_jit(f);
  ArgMap got = prog->run(in);
  ASSERT_EQ(ref.size(), got.size());
  for (auto& [name, arr] : ref) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(arrays_close(got.at(name), arr, rtol, atol)) << f.name << " output " << name;
  }
}

inline void expect_jit_matches_interp(const std::string& text, const std::string& name, uint64_t seed = 1,
                                      double rtol = 1e-5, double atol = 1e-6, const ArgMap& given = {}) {
  Function f = parse_func(text, name);
  ASSERT_TRUE(f);
  expect_jit_matches_interp(*f, seed, rtol, atol, given);
}

inline NDArray scalar(DType t, double v) {
  NDArray a(t, {});
  a.set(0, v);
  return a;
}

}  // namespace tirc::cgtest

// Helpers of the bounds-check tests (bounds_check_test.cpp, bounds_check_r2_test.cpp,
// adversary_r3_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "transforms/lower/lower.h"

namespace tirc::cgtest {

// An array of dtype t and shape `shape` whose first elements are v (the rest zero).
inline NDArray values(DType t, std::vector<int64_t> shape, const std::vector<double>& v) {
  NDArray a(t, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), v[i]);
  return a;
}

// The error the interpreter raises for `in`, or "" when it runs.
inline std::string interp_error(const FunctionNode& f, const ArgMap& in) {
  try {
    run_interp(f, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The error the JIT raises for `in`, or "" when it runs.
inline std::string jit_error(const FunctionNode& f, const ArgMap& in) {
  auto prog = compile_jit(f);
  try {
    prog->run(in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// How many checks insert_bounds_checks puts into f.
inline size_t check_sites(const FunctionNode& f) {
  std::vector<BoundsCheckSite> sites;
  insert_bounds_checks(f, &sites);
  return sites.size();
}

}  // namespace tirc::cgtest

// Differential check of schedules: run a function unscheduled and scheduled on the same
// random inputs and compare the outputs (used by `tirc verify`, the schedule tests and the
// fuzzer). The runner is a callback so that other engines (the JIT) can be plugged in:
// run the reference with one runner and the scheduled function with another.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/module.h"

namespace tirc {

// Runs f on inputs (every param by name) and returns every output by name.
using FunctionRunner = std::function<ArgMap(const FunctionNode& f, const ArgMap& inputs)>;
// The reference interpreter as a runner.
FunctionRunner interp_runner();

struct CompareOptions {
  uint64_t seed = 0;
  // |a - b| <= atol + rtol * max(|a|, |b|, mean |reference|): float reductions may be
  // reassociated by a schedule (rfactor, reorder), which changes rounding, so the scale of
  // the whole output (not only of the element, which may cancel to ~0) bounds the error.
  double rtol = 1e-4;
  double atol = 1e-5;
  // Values of scalar params (0-d arrays); missing ones are drawn as random_inputs does.
  ArgMap scalars;
};

struct CompareResult {
  bool ok = true;
  std::string detail;      // first mismatch ("C[3, 4]: 1.5 vs 2.5") or an error message
  double max_abs_err = 0;  // over all float outputs
};

// Random inputs for f (same for both runs), run both, compare every output of `ref`.
// Throws tirc::Error when the reference itself fails; a failure of `test` is a mismatch.
CompareResult compare_functions(const FunctionNode& ref, const FunctionNode& test, const CompareOptions& opts,
                                const FunctionRunner& ref_runner, const FunctionRunner& test_runner);

// Compares two output arrays with the tolerance of opts; fills detail on mismatch.
CompareResult compare_arrays(const std::string& name, const NDArray& ref, const NDArray& got,
                             const CompareOptions& opts);

// Random inputs as used by compare_functions (scalars resolved as described above).
ArgMap verify_inputs(const FunctionNode& f, const CompareOptions& opts);

}  // namespace tirc

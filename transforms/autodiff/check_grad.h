// Numerical check of a gradient (`tirc check-grad`, CLI.md).
//
// check_grad(F) builds F_grad = gradient(F, wrt), draws inputs (random from the declared
// ranges, deterministic in the seed, or given) and a random cotangent w for every float
// output, and compares, for each wrt input X, the directional derivative of
//   L(x) = sum over outputs O of <w_O, O(x)>
// computed by F_grad (run by the interpreter in f64) with central finite differences of L
// computed by the interpreter in f64. By default along `directions` random directions per
// input (cost independent of the input size, as JAX's check_grads); with `full`, element
// by element. A check passes when |fd - ad| <= atol + rtol * max(|fd|, |ad|), plus allowances
// for the rounding of the finite differences and of F_grad's f16 / bf16 constants
// (docs/autodiff.md, check-grad); none with zero tolerances.
//
// Non-finite values (docs/autodiff.md, "check-grad and non-finite values"): output elements
// that are inf/nan at the inputs are left out of L (cotangent 0) and reported in `notes`;
// gradient elements that are inf/nan are left out of the random directions and checked one
// by one. A check whose finite difference is not finite is skipped (counted in `skipped`,
// explained in the input's notes); an analytic inf/nan where the finite difference is finite
// fails, unless that element feeds an output element that is not finite (then it is skipped:
// the derivative is undefined there). An input with checks to make but none compared fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/module.h"

namespace tirc {

struct CheckGradOptions {
  std::vector<std::string> wrt;  // empty: every float input buffer
  ArgMap given;                  // inputs given by the caller (others drawn as random_inputs does)
  uint64_t seed = 0;
  double rtol = 1e-4, atol = 1e-5;
  bool full = false;
  int directions = 3;
  double eps = 1e-6;  // finite-difference step (relative to max(1, max |x|))
  // The F_grad to check (`tirc check-grad` on a file that defines F_grad, e.g. written by
  // `tirc grad -o`, then edited or scheduled); null: gradient(f, wrt). Its results are named
  // `<X>_grad`; it must have one for every name of `wrt`, which must not be empty.
  Function grad;
};

struct InputCheck {
  std::string name;
  int checks = 0;  // checks compared (finite difference and gradient both finite)
  double max_abs_err = 0, max_rel_err = 0;
  bool passed = true;
  int skipped = 0;                 // checks not compared because a value was not finite
  std::vector<std::string> notes;  // why checks were skipped or failed (one line each)
};

struct CheckGradResult {
  std::string func;
  std::vector<InputCheck> inputs;
  int passed = 0, failed = 0;
  Function grad;
  // Function-level notes, e.g. "output Y: 8 of 32 elements are not finite at the inputs
  // (left out of the check)".
  std::vector<std::string> notes;
};

// Throws Error for a refused gradient or an interpreter error (both name the block).
CheckGradResult check_grad(const FunctionNode& f, const CheckGradOptions& opts = {});

}  // namespace tirc

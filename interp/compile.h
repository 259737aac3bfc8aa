// Compiles a function into the interpreter's closure tree (interp/nodes.h) for given values
// of its scalar parameters: shapes, strides and scalar params become constants, variables
// become register slots, and index expressions proven in bounds by interval analysis skip
// their run-time checks. Internal to the interpreter.
#pragma once

#include <unordered_map>

#include "interp/nodes.h"
#include "ir/module.h"

namespace tirc::interp {

// Value of a scalar parameter: `i` for integer/bool dtypes, `d` for float dtypes.
struct ScalarVal {
  int64_t i = 0;
  double d = 0;
};
using ScalarEnv = std::unordered_map<const VarNode*, ScalarVal>;

// Throws Error for what cannot be interpreted (unbound variable, undeclared buffer,
// non-constant alloc shape, intrinsic on a wrong dtype).
CompiledFunc compile_function(const FunctionNode& f, bool promote_f64, const ScalarEnv& scalars);

// Evaluates an integer expression of scalar parameters (shapes, extents); Error when it uses
// anything else.
int64_t eval_int_expr(const Expr& e, const ScalarEnv& scalars);

}  // namespace tirc::interp

// Normalisation rewrite 0j: a C epilogue guarded by the last iteration leaves its loop.
//
// `for i, j in grid(3, 4) { if j == 0 { acc[i] = 0 } acc[i] += X[i, j]^2; if j == 3 { Y[i] =
// sqrt(acc[i] + 1e-3) } }`: rewrite 0 wraps the guarded store as a block of the j loop that
// reads the reduction's partial values (refused). An `if L == last { S }` without else that is
// the last statement of a serial loop L's body with constant bounds (extent >= 1) runs S once,
// at the very end of the loop: the loop followed by S with L replaced by its last value is the
// same computation.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with such epilogues moved after their loops (outside blocks only); f unchanged (same
// contents) when there is none.
Function hoist_last_iteration_epilogues(const FunctionNode& f);

}  // namespace tirc::ad

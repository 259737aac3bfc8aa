// Normalisation rewrite 0c: blocks recomputed by a loop they do not depend on run once.
//
// TVM's compute_at / cache_read place a producer under every loop of its consumer, including
// loops the producer's bindings do not use: `for i0, j0, k { block A_shared(v0 = i0*4 + a,
// v1 = k) {...} ... }` recomputes each A_shared element once per j0, the same value each time.
// gradient() reads a loop var that no binding uses as a free forward var, i.e. a reduce var
// of the adjoint, so the contributions of the repeats were summed (the A gradient doubled).
// Such a block gets `where L == L.min` for each such loop L: it then runs only in L's first
// iteration, and every reader sees the same values as before. Sound when the repeats are
// exact copies and nothing undoes them:
//  (a) L's var appears in none of the block's bindings and predicate, nor in the loop
//      bounds, `if` conditions and `let` values between L and the block;
//  (b) every buffer the block reads that is written inside L is written only by blocks that
//      run before it in L's body and are themselves run once this way (a reduction block
//      with an init may read what it writes: each repeat re-runs the init);
//  (c) no other statement inside L writes a buffer the block writes;
// and L's body stores only inside blocks. A scan block such a loop re-runs is refused (its
// repeats' contributions were summed: a wrong gradient, reviewer round 18). In a scan loop L (where
// every block must be bound to L) such a block moves in front of L instead, with the loops
// between, when its statement of L's body holds no other block and no earlier statement of
// L's body reads what it writes. A non-scan block whose
// bindings ignore such a loop (of extent other than 1) but whose repeats are not plain
// recomputations (`for r { block u(vi = i) { Y[vi] = Y[vi] * X[vi] } }`: a recurrence over a
// loop that is not a scan) is refused with an Error naming the block and the loop.
// The loop nest of each non-scan block with constant loop bounds (at most 2^14 points) is
// also enumerated: two loop points running one instance (a non-injective binding) or two
// instances with different spatial values storing to one element of a buffer the block does
// not allocate (a reused scratch tile; LANGUAGE.md: such a block is invalid) are refused.
// The same enumeration (also of scan blocks; over the first iterations of a nest too large,
// and at small sizes for symbolic bounds) refuses an instance reading or writing an element
// that an instance at another spatial point wrote or read earlier in loop order, unless that
// one ran at an earlier step of the block's scan / opaque vars (spatial_conflicts.h): gradient()
// reads spatial instances as independent, which gave wrong gradients (helper round 18). Indices
// and guards using scalar parameters are enumerated at sample values. What the enumeration
// cannot settle -- data-dependent indices and guards (loads), and nests not visited whole --
// must be proven independent by conflict_proof.h, else the block is refused (helper round 19).
// Refusals only concern blocks an adjoint flows through (a float store whose value reads a
// float buffer): repeated or conflicting integer / constant stores are left alone.
#pragma once

#include <optional>
#include <unordered_map>

#include "ir/module.h"

namespace tirc::ad {

// f with the predicate of every such block strengthened; f unchanged when there is none.
// Throws Error for a block repeated by a loop it ignores whose repeats differ.
Function run_redundant_blocks_once(const FunctionNode& f);

// e with every loop var of `at` replaced by its value, constant-folded; nullopt unless that is
// an integer constant (point-by-point checks over small loop nests).
std::optional<int64_t> eval_at(const Expr& e, const std::unordered_map<const VarNode*, Expr>& at);

}  // namespace tirc::ad

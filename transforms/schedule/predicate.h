// The `where` of a block realize rewritten in the block's own iter vars, for the primitives
// that move a block to new loops (compute_at, reverse_compute_at) or copy over its domain
// (cache_write): the predicate decides which iteration points run, so it must follow the
// block (TVM keeps it too), expressed in the new bindings.
#pragma once

#include "transforms/schedule/state.h"

namespace tirc::sched {

// Conjuncts of br's predicate as expressions of br's iter vars. `loops` are the loops above
// br (min 0) whose vars are replaced: first every sub-expression equal to a binding becomes
// its iter var, then the remaining loop vars are replaced by the inverse of the bindings
// (invert_bindings). Other vars (scalar params) are kept. Conjuncts that only state an iter
// var's domain (v < extent, 0 <= v) are dropped: callers bind iter vars inside their domain.
// Refuses (`block` names the block) when the predicate loads a buffer or cannot be expressed.
std::vector<Expr> predicate_in_iter_vars(const BlockRealizeNode& br, const std::vector<Stmt>& loops);

// `cs` with the iter vars of block b replaced by `values` (one per iter var).
std::vector<Expr> substitute_iter_vars(const std::vector<Expr>& cs, const BlockNode& b,
                                       const std::vector<Expr>& values);

}  // namespace tirc::sched

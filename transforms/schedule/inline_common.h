// Checks shared by compute_inline and reverse_compute_inline.
#pragma once

#include <set>

#include "transforms/schedule/util.h"

namespace tirc::sched {

// The single store of a block body (refuses otherwise, naming the block).
const StoreNode* single_store(const BlockNode& b);
// The body `let x1 = e1 ... let xn = en; X[idx] = v` (gradient blocks look like this) as one
// store `X[idx] = (let x1 = e1 in ... v)`; the let names are substituted into idx. Refuses
// when the body is anything else. The result is a StoreNode.
Stmt flat_store(const BlockNode& b);
// `e` with the let expressions at its top re-bound to fresh variables whose names are unused
// in the function and not in `used` (added to it), so that an inlined copy can neither
// capture nor shadow a name of the code it is inlined into (also after printing).
Expr rename_lets(const ScheduleState& st, const Expr& e, std::set<std::string>* used);
// Store/load indices that are distinct plain iter vars of b covering the vars used by
// `value_uses` (refuses otherwise): returns iter var index per position.
std::vector<int> index_vars(const BlockNode& b, const std::vector<Expr>& idx, const std::string& what);
// Refuses when a buffer read by `b` is written by a block that may run between `from` and
// `to` in program order (so moving b's computation from one place to the other would read
// another value).
void check_inputs_stable(const ScheduleState& st, const BlockNode& b, const Stmt& from, const Stmt& to);

// The first of `bufs` that the `where` of `r` loads (TVM allows `T.where(B[i, j] < 10.0)`), or
// nullptr. Such loads index by loop vars and appear in no declared region, so the primitives
// that move or remove blocks look at them separately.
const BufferNode* predicate_loads_any(const BlockRealizeNode& r, const std::vector<Buffer>& bufs);

}  // namespace tirc::sched

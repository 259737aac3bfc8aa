// Checks shared by compute_inline and reverse_compute_inline.
#pragma once

#include "transforms/schedule/util.h"

namespace tirc::sched {

// The single store of a block body (refuses otherwise, naming the block).
const StoreNode* single_store(const BlockNode& b);
// Store/load indices that are distinct plain iter vars of b covering the vars used by
// `value_uses` (refuses otherwise): returns iter var index per position.
std::vector<int> index_vars(const BlockNode& b, const std::vector<Expr>& idx, const std::string& what);
// Refuses when a buffer read by `b` is written by a block that may run between `from` and
// `to` in program order (so moving b's computation from one place to the other would read
// another value).
void check_inputs_stable(const ScheduleState& st, const BlockNode& b, const Stmt& from, const Stmt& to);

}  // namespace tirc::sched

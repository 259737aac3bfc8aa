// Per-access disjointness across the iterations of a loop (parallel / vectorize / bind).
#pragma once

#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// True when no two different iterations of `loop` touch one element of `buf` with one of them
// writing it, proven on the loads and stores themselves (not the declared regions, whose hull
// may join accesses that are apart): for every pair of accesses (a load or store of buf in the
// init, body or `where` of a block in `blocks`, at least one of the two a store; an access
// paired with itself too) some dimension separates them. In that dimension the index of each,
// its block's iter vars replaced by their bindings and the loops between `loop` and the block
// relaxed over their ranges, is [c * l + A_lo, c * l + A_hi] (l the loop var, c the same
// constant for both, A_* the same symbolic part up to constants); the same element in
// iterations l != l' needs c * (l - l') in [B_lo - A_hi, B_hi - A_lo], so a dimension separates
// them when no multiple k * c with 0 < |k| < extent lies there (autodiff's fused gate adjoint
// storing G[b, j], G[b, j + 32], G[b, j + 64] for j in [0, 32)). Unknown (false) when a block
// touching buf has nested blocks, loops in its body, extern calls or pointers to buf, or an
// index uses a load, a let name or anything but loops and iter vars.
bool accesses_apart_across_iterations(const ScheduleState& st, const Stmt& loop, const BufferNode* buf,
                                      const std::vector<Stmt>& blocks);

}  // namespace tirc::sched

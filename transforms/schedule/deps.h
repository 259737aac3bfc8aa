// Dependence checks shared by the loop primitives (reorder, parallel, vectorize, bind):
// conservative conditions under which changing the order of the iterations of loops does
// not change what the blocks below compute.
#pragma once

#include <map>
#include <set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/schedule/state.h"

namespace tirc::sched {

// Refuses (with `what` naming the operation) when blocks below `s` are not independent of
// each other: two different blocks below s touching the same buffer with one writing it,
// statements outside blocks, or call_extern.
void check_blocks_independent(const Stmt& s, const std::string& what);

// Refuses when a block below s reads a buffer it writes at other elements than the ones it
// writes (then its instances depend on each other, whatever the iter var kinds say).
void check_self_dependence(const Stmt& s, const std::string& what);

// Refuses when some block below `s` binds `loop` to an iter var that is not spatial
// (`allow_reduce` allows reduce vars too: reordering a commutative reduction is fine). For
// `what` "parallel" / "bind", a reduce var of an autodiff scatter-add (atomic_scatter_add)
// is allowed: the backend makes its updates atomic.
// `cross_thread`: blocks whose reduce vars the loop may feed (bind of a reduce loop to a
// threadIdx axis, checked by the caller: a cross-thread allreduce).
void check_loop_bindings(const Stmt& s, const ForNode* loop, bool allow_reduce, const std::string& what,
                         const std::set<const BlockNode*>& cross_thread = {});

// True for a block annotated "atomic" without init whose every store is `B[I] = B[I] + v`
// (f32 / f64 / integer B, loaded nowhere else in the block): its instances commute and the
// backend makes each update atomic in parallel and thread-bound loops.
bool atomic_scatter_add(const BlockNode& b);

}  // namespace tirc::sched

namespace tirc::sched {
// Refuses unless the iterations of `loop` are independent: every block below binds the
// loop only to spatial iter vars (or, for parallel / bind, reduce vars of an atomic
// scatter-add; never parallel reduce vars and a vectorized loop around one such block, for
// vector code makes no atomic update), and every buffer touched by two different blocks below
// (one writing it) is partitioned by the loop: some dimension of every access is
// [c*l + a, c*l + b] with the same c and all such slices narrower than |c|, so different
// iterations touch disjoint parts. Used by parallel, vectorize and bind.
// `cross_thread` (bind only): reduction blocks whose reduce vars the loop feeds, lowered to a
// cross-thread allreduce (checked by bind): their reduce bindings are allowed and the buffers
// only they access (the reduced element, the same in every iteration) are not checked.
void check_iterations_independent(const ScheduleState& st, const Stmt& loop, const std::string& prim,
                                  const std::set<const BlockNode*>& cross_thread = {});

// True when, in every iteration of loop `common`, what block `reader` (under `common`) reads
// of wreg's buffer lies inside what the pure spatial writer `ws` (under `common`, storing
// at its iter vars, region wreg) writes in that iteration: the writer's region is the exact
// hull of its mixed-radix bindings over the loops between `common` and it, clipped to the
// buffer (loads never leave the buffer). The order of the two is not checked here.
// True when the region block `ws` writes in one iteration of loop `from_loop` is exactly the
// hull of its bindings over the loops between them (mixed-radix sums of distinct loops).
bool exact_hull(const Stmt& from_loop, const Stmt& ws);

bool read_inside_written(const ScheduleState& st, const Stmt& common, const Stmt& ws,
                         const BufferRegion& wreg, const Stmt& reader);
// The same for a region (per dimension, in the loops at and above `common`; nullopt =
// unknown) instead of a reader's reads.
bool region_inside_written(const ScheduleState& st, const Stmt& common, const Stmt& ws,
                           const BufferRegion& wreg, const std::vector<std::optional<SymRange>>& region);

// True when every store of the body is an update `C[idx] = C[idx] OP rhs` (OP one of + - * min
// max, `C - rhs` only in that order) and the body loads the stored buffers nowhere else (not in
// a let, a condition or rhs): the update of a commutative reduction, whose reduce iterations
// may run in any order. A gradient's guarded scatter (`if ... { X_grad[...] += ... }`)
// qualifies; `C = C * 0.5 + x` does not (the order of its terms matters).
bool commutative_reduction_update(const BlockNode& b, std::string* why);

// compute_at / reverse_compute_at rebuild a moved block's loops, one per iter var in the
// block's order. For a block whose iterations are ordered (scan iter vars, or reduce iter vars
// with an update that is not a commutative reduction) that keeps what it computes only when its
// loops already run the non-spatial iter vars in that order (each an increasing mixed-radix sum
// of its own loops, the loops of earlier iter vars outside those of later ones); otherwise
// refuses, naming the block.
void check_moved_block_order(const ScheduleState& st, const Stmt& block_realize);

}  // namespace tirc::sched

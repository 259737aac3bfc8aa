// Shared pieces of cache_read / cache_write.
#pragma once

#include "transforms/schedule/util.h"

namespace tirc::sched {

// Validates the storage scope argument ("global", "shared", "local").
std::string cache_scope(const ScheduleInstr& ins, size_t i);
// Position of a root-level item in the root body; -1 when absent.
int root_position(const ScheduleState& st, const Stmt& item);
// Inserts `s` into the root body at position pos (0 = first).
void insert_root_item(ScheduleState& st, size_t pos, const Stmt& s);
// The first conjunct of r's `where` that is not a bound guard `binding < extent` of a
// non-dividing split (or, for a binding `F // c` of extent k after a fuse-then-split,
// `F < c * k`); undefined when there is none. Copies of a whole buffer (cache_read, reindex)
// use it to see whether a writer may leave elements unwritten.
Expr non_guard_conjunct(const BlockRealizeNode& r);
// Refuses when the copy `what` would read elements of the alloc A that no writer stores: the
// whole buffer, or (box_of given) the elements `load_idx` (in box_of's iter vars) reads over
// box_of's whole iteration box. Decided point by point when the writers' nests are small and
// constant (coverage.h: complementary `where`s pass, a diagonal writer does not); otherwise
// refused when every writer has a non-guard condition, and a writer without one is taken to
// write the buffer (a heuristic that keeps decompose_padding's fill + copy pair).
void check_writers_cover(const ScheduleState& st, const Buffer& A, const std::string& what,
                         const BlockNode* box_of = nullptr, const std::vector<Expr>* load_idx = nullptr);

}  // namespace tirc::sched

// Helpers shared by the block-moving primitives (inline, compute_at, caches, rfactor).
#pragma once

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/schedule/state.h"

namespace tirc::sched {

// The highest statement above block realize `br` (within its scope) whose subtree contains
// nothing but br: br itself or the outermost of the loops (and lets/ifs) that hold only it.
Stmt exclusive_root(const ScheduleState& st, const Stmt& br);
// Every block of the function in pre-order (the program order for blocks not sharing loops).
std::vector<Stmt> blocks_in_order(const ScheduleState& st);
// Index of a block in blocks_in_order; -1 when absent.
int block_index(const std::vector<Stmt>& order, const Stmt& br);
// Blocks (other than `except`) that write / read buf.
std::vector<Stmt> writers_of(const ScheduleState& st, const Buffer& buf, const BlockNode* except = nullptr);
std::vector<Stmt> readers_of(const ScheduleState& st, const Buffer& buf, const BlockNode* except = nullptr);
// The statement of the scope body (an element of the root-level Seq) holding n.
Stmt top_item(const ScheduleState& st, const StmtNode* n);
// Everything bound above n that a subtree of n may use, outermost first: enclosing loop vars
// (with their min and extent) and the iter vars of enclosing blocks (min 0).
struct EnclosingVar {
  Var var;
  Expr min, extent;
};
std::vector<EnclosingVar> enclosing_vars(const ScheduleState& st, const StmtNode* n);
// Drops buf from the allocs of the block holding it when nothing uses it anymore.
void remove_alloc_if_unused(ScheduleState& st, const Buffer& buf);
// True when any statement or expression of the body uses buf.
bool buffer_used(const Stmt& s, const Buffer& buf);
// Replaces loads of `buf` (through f: indices -> new expr) in an expression/statement.
Stmt replace_loads(const Stmt& s, const Buffer& buf, const std::function<Expr(const std::vector<Expr>&)>& f);
Expr replace_loads(const Expr& e, const Buffer& buf, const std::function<Expr(const std::vector<Expr>&)>& f);
// Replaces buffer `from` by `to` in loads, stores and pointer arguments.
Stmt replace_buffer(const Stmt& s, const Buffer& from, const Buffer& to);
std::vector<BufferRegion> replace_buffer(const std::vector<BufferRegion>& rs, const Buffer& from,
                                         const Buffer& to);
// Region list without the regions of buf.
std::vector<BufferRegion> without(const std::vector<BufferRegion>& rs, const Buffer& buf);
// rs followed by the regions of extra whose buffers rs does not mention.
std::vector<BufferRegion> merge_regions(const std::vector<BufferRegion>& rs,
                                        const std::vector<BufferRegion>& extra);
// A serial loop nest over `extents` with fresh vars (named after `names`), around body(vars).
Stmt make_nest(ScheduleState& st, const std::vector<Expr>& extents, const std::vector<std::string>& names,
               const std::function<Stmt(const std::vector<Var>&)>& body);
// Full region of a buffer.
BufferRegion full_region(const Buffer& b);
// A simple block realize: iter vars all given, bindings, body, regions inferred.
Stmt make_simple_block(const std::string& name, std::vector<IterVar> ivs, std::vector<Expr> bindings,
                       Stmt body, Stmt init = Stmt(), Expr pred = Expr());

}  // namespace tirc::sched

namespace tirc::sched {
// The region `r` of block realize `b` (in terms of b's iter vars) expressed in the loop vars
// of `loop` and the loops around it: b's iter vars are replaced by their bindings and the
// loops strictly between `loop` and b are relaxed over their ranges. Inclusive bounds per
// dimension; nullopt for a dimension that cannot be bounded.
std::vector<std::optional<SymRange>> region_under_loop(const Stmt& loop, const Stmt& b,
                                                       const BufferRegion& r);
}  // namespace tirc::sched

// Accesses of buffers in block-free (converted) code and the regions they cover under a
// given loop, shared by plan_alloc (where may an alloc live) and compact_buffers (how small
// may it be). Internal to transforms/lower.
//
// An access records its indices and the binders (loops and statement lets) that enclose it
// inside the scanned statement, outermost first. `access_hull(accs, depth)` is the hull of
// the accesses with the first `depth` enclosing loops kept symbolic (the alloc would live in
// the body of the depth-th loop) and every deeper loop and let relaxed over its range
// (symbolic_bound, TVM's arith::EvalSet); a dimension that cannot be bounded by an
// expression of the kept loops and of variables bound outside the scanned statement is
// unknown (nullopt). Conditions are ignored (the hull is a superset of what runs).
#pragma once

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/stmt.h"
#include "transforms/simplify/bounds.h"

namespace tirc::lower_detail {

struct Binder {
  const ForNode* loop = nullptr;     // a loop ...
  const LetStmtNode* let = nullptr;  // ... or a statement let
};

struct BufferAccess {
  std::vector<Expr> indices;
  bool pointer = false;         // A.data / A.ptr(...) passed to call_extern: any element
  std::vector<Binder> binders;  // enclosing loops and lets inside the scanned stmt, outermost first
  // The enclosing loops only (a subsequence of binders), outermost first.
  std::vector<const ForNode*> loops() const;
};

using AccessMap = std::unordered_map<const BufferNode*, std::vector<BufferAccess>>;

// Every load, store and buffer pointer of `s`, by buffer. Scope blocks are transparent.
AccessMap collect_accesses(const Stmt& s);

// The enclosing loops common to every access (by identity), outermost first.
std::vector<const ForNode*> common_loops(const std::vector<BufferAccess>& accs);

// Inclusive bounds per dimension; see the header comment. Requires that the first `depth`
// loops are common to every access and that no access is a pointer.
using DimHull = std::optional<std::pair<Expr, Expr>>;
std::vector<DimHull> access_hull(const std::vector<BufferAccess>& accs, size_t ndim, size_t depth);

// True when the iterations of `loop` touch disjoint parts of the buffer: some dimension's
// hull (computed with `loop` kept) is [c*l + f, c*l + f + w] with f free of l and 0 <= w < |c|.
bool hull_partitioned_by(const std::vector<DimHull>& hull, const ForNode* loop);

// The same with, besides the first `depth` enclosing loops, the loops of `keep` kept symbolic
// wherever they enclose an access (loops common to every access; the others are relaxed).
std::vector<DimHull> access_hull_kept(const std::vector<BufferAccess>& accs, size_t ndim, size_t depth,
                                      const std::unordered_set<const ForNode*>* keep);

}  // namespace tirc::lower_detail

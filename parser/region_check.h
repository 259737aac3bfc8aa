// Internal (parser): checks the accesses of a block against the `reads` / `writes` regions
// written in the script (docs/language.md, "Declared regions").
//
// A load must lie in one of the block's `reads` regions of its buffer, or in one of its
// `writes` regions (a block may read back what it writes: `C[vi] = C[vi] + ...` with
// `writes C[vi]`); a store must lie in one of its `writes` regions; `A.data` / `A.ptr(...)`
// needs A listed in either. Accesses of nested blocks count, their iter vars replaced by
// their bindings. Buffers allocated by the block or by nested blocks are exempt.
//
// Only provable violations are reported: an index dimension is rejected when its value minus
// the region's last index (or the region's first index minus it) is an affine sum of
// independent variables with known constant ranges (the block's iter vars over [0, extent),
// inner loop vars with constant bounds, `v // c`) whose maximum is positive. Anything else
// (data-dependent indices, symbolic extents, let names, variables constrained by an `if`,
// `if_then_else` or nested `where`) is accepted: regions may over-approximate.
#pragma once

#include <unordered_map>

#include "ir/error.h"
#include "ir/stmt.h"

namespace tirc::parser_detail {

// Source positions of loads and buffer pointers, by node (stores carry their own). The Expr
// keeps the node alive so that the address is not reused.
using AccessLocs = std::unordered_map<const ExprNode*, std::pair<Expr, SourceLoc>>;

// Throws SourceError at the first access of `block` (its init, then its body) outside its
// declared regions. `check_reads` / `check_writes`: which lists the script wrote (the other,
// inferred, list still covers loads when it is `writes`).
void check_declared_regions(const BlockNode& block, bool check_reads, bool check_writes,
                            const AccessLocs& locs);

}  // namespace tirc::parser_detail

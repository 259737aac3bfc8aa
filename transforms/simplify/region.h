// Access-region detection of a block (model: TVM tir::GetBlockAccessRegion /
// BlockReadWriteDetector).
//
// infer_access_regions(block, &reads, &writes) computes what `block` may read and write, in
// terms of the block's own iter vars (and scalar params / outer vars), following these rules:
//  - an access whose indices only use the block's iter vars stays a point: A[vi, vk];
//  - variables bound inside the block (inner loop vars, let names, iter vars of nested blocks
//    through their bindings) are relaxed over their ranges into slices [lo, hi) using
//    symbolic_bound (bounds.h); e.g. `for k in serial(4) { A[vi*4 + k] }` gives A[vi*4:vi*4+4];
//  - several accesses to one buffer are merged into their hull (min of the begins, max of
//    the ends, simplified); an index that cannot be bounded covers the whole dimension
//    [0, shape); a constant slice is clamped to [0, shape) when the shape is constant
//    (accesses outside the buffer would be errors anyway);
//  - init stores count as writes, loads anywhere (init, body, conditions, inner loop bounds,
//    under if/if_then_else) as reads; a buffer read and written appears in both lists;
//  - nested blocks contribute their declared reads/writes (inferred recursively when both are
//    empty), with their iter vars replaced by their bindings; call_extern buffer arguments
//    (A.data / A.ptr(...)) read and write the whole buffer, except that a pointer to a
//    buffer listed in `read_only` (a function's inputs, which no block may write) is a
//    read of the whole buffer only;
//  - buffers allocated by the block or by nested blocks are excluded;
//  - order: first appearance (init before body; in a store, index loads, then the value's
//    loads, then the store itself).
#pragma once

#include <unordered_set>
#include <vector>

#include "ir/stmt.h"

namespace tirc {

void infer_access_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                          std::vector<BufferRegion>* writes);

// Same, knowing which buffers are read-only (used for call_extern pointer arguments, also
// in nested blocks whose regions are inferred).
void infer_access_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                          std::vector<BufferRegion>* writes,
                          const std::unordered_set<const BufferNode*>& read_only);

}  // namespace tirc

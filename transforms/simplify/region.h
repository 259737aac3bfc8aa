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
//    (A.data / A.ptr(...)) read and write the whole buffer;
//  - buffers allocated by the block or by nested blocks are excluded;
//  - order: first appearance (init before body; in a store, index loads, then the value's
//    loads, then the store itself).
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace tirc {

void infer_access_regions(const BlockNode& block, std::vector<BufferRegion>* reads, std::vector<BufferRegion>* writes);

}  // namespace tirc

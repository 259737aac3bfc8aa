// Access-region detection for blocks whose `reads`/`writes` are not written
// (model: TVM src/tir/analysis/block_access_region_detector.cc).
//
// Regions are expressed in terms of the block's own iter vars (and scalar params): an index
// that only uses them gives a point region, kept exactly as written (`A[vi, vk]`). Variables
// bound inside the block body (inner loops, lets, the iter vars of nested blocks through
// their bindings) are relaxed over their ranges, giving slices `lo:hi` when the index is
// affine in them, and the whole dimension otherwise. Several accesses to one buffer are
// merged into their hull when their bounds differ by constants, otherwise the dimension
// becomes the whole extent. Buffers allocated by the block (or by blocks nested in it) are
// not listed. `A.data` / `A.ptr(...)` passed to call_extern count as reading and writing the
// whole buffer. Order: first access in program order (loads of a store before the store).
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace tirc {

// Fills *reads and *writes with the regions accessed by the block's init and body.
void infer_block_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                         std::vector<BufferRegion>* writes);

}  // namespace tirc

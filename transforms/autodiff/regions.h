// Read/write regions of the blocks that the gradient builds.
#pragma once

#include <unordered_set>

#include "ir/stmt.h"

namespace tirc::ad {

// Fills b.reads / b.writes from the loads and stores of b.init and b.body: a buffer
// accessed at a single index tuple made of the block's iter vars (and scalars) gets that
// point; any other buffer gets its whole extent.
void set_regions(BlockNode& b);

// Adds every buffer s stores to (nested blocks included) to *out.
void stored_buffers(const Stmt& s, std::unordered_set<const BufferNode*>* out);

}  // namespace tirc::ad

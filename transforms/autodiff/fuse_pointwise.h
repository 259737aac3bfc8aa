// Fusion of consecutive pointwise blocks of F_grad (used at the end of gradient()).
//
// The reverse pass emits, for one forward block, one adjoint block per output it stores and
// per buffer or guard its reads need: a block storing two outputs under `if c {...} else
// {...}` becomes six or so blocks over the same points, each loading the cotangents again and
// evaluating c again (measured: 5x the forward's FLOPs for two swapped outputs). A
// hand-written backward is one loop. fuse_pointwise_blocks merges each run of consecutive
// top-level statements that are the same loop nest over one block (serial loops from 0, one
// per iter var, every iter var spatial and bound to its loop, same extents and predicate,
// no init, allocs or annotations, no loop or block inside) into one block, when it is legal:
// every buffer that one of them writes and another accesses is accessed, in all of them, at
// one index tuple that is a permutation of the iter vars (each point touches only its own
// element, so running the bodies point by point gives what running them block by block
// gave). This is producer/consumer fusion of injective stages, as TVM's FuseOps does for
// elementwise ops, restricted to what F_grad emits.
// The fused body is then tidied, which is where the FLOPs go:
// - its unconditional lets whose values read no buffer the fused body writes move to the
//   front, and repeats of one value (the same cotangent load, the same recomputed forward
//   value) become one let;
// - a run of `if`s over one condition c that reads nothing the body writes (`if c`, `if !c`,
//   `if c ... else`) becomes one `if c {...} else {...}`, c evaluated once.
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace tirc::ad {

// `stmts`: the top-level statements of a function body, in execution order; `groups[k]`: the
// forward block whose reversal emitted stmts[k] (-1: none). Only the blocks of one group fuse
// (with zero-initialisations next to them, whatever their group): blocks that come from
// different forward blocks keep their names and can be scheduled apart. Returns the new
// list; statements that fuse with nothing are returned as they were (same nodes).
std::vector<Stmt> fuse_pointwise_blocks(const std::vector<Stmt>& stmts, const std::vector<int>& groups);

// The tidying step alone, on a block body (exposed for tests): hoists and merges repeated
// unconditional lets that read no buffer `body` writes, and merges runs of `if`s over one
// such condition.
Stmt merge_lets_and_guards(const Stmt& body);

}  // namespace tirc::ad

// Loop order of the blocks autodiff emits (F_grad runs well before anyone schedules it).
//
// An adjoint block is emitted over the loop nest of the buffer it writes, which is often the
// wrong order for memory: the gradient of a bias or of a layer norm's scale reduces over the
// rows of a [rows, cols] cotangent column by column (stride `cols` innermost, no vector
// loads), the weight gradient of a dense layer walks its operands with a large stride.
// A compiler's loop interchange (LLVM's LoopInterchange, Polly; Halide's and TVM's
// autoschedulers) picks the order from the access strides; this pass does the same, once,
// on the IR, so the printed F_grad shows the order it runs in and stays schedulable.
//
// For each block not named in `keep` (the forward blocks F_grad recomputes keep the
// author's order) whose loops form a perfect nest of serial loops, each bound directly to
// one spatial or reduce iter var (`v = i`; a `where` predicate may use any of them), the
// innermost loop is chosen in two steps:
//  1. a spatial loop of at least 8 iterations whose iter var walks every load and store
//     with a stride of at most one element (and no data-dependent index) vectorizes as it
//     stands: when the innermost loop is not such a loop, the one with the smallest total
//     stride moves innermost. A reduce loop innermost is a serial chain of float adds. This
//     puts the output row innermost in the data gradient of a convolution or pool (a gather
//     whose `where` over the window lowering then turns into loop bounds, trim_no_ops);
//     When there is no such loop and the innermost loop is a reduce loop of fewer than 8
//     iterations (the 1 or 2 taps of a stride-2 convolution's phase block), a spatial loop
//     of at least 8 iterations walking every access with a stride of at most 4 elements
//     (the output row of the phase, `X_grad[2 * x + b]`) moves innermost: the channel loop
//     outside the taps otherwise reads W and Y_grad with large strides for every element;
//  2. otherwise the total stride of each iter var is summed (in elements, over every load
//     and store of the block body and init; dims that are not constants count 64), and a
//     loop with a smaller total than the innermost one moves innermost (ties favour a
//     spatial loop).
// The other loops keep their order: the change is the smallest that makes the innermost
// loop walk memory contiguously or not at all, and the emitted order (spatial loops, then
// reduce loops) is kept wherever it is already good. Only a spatial loop or the innermost
// reduce loop may move, so the reduce loops keep their relative order and every element is
// accumulated in the same order as before: the results are bit-identical. Blocks with scan
// or opaque iter vars, nested blocks or an `"atomic"` annotation (scatter-adds) are left
// as they are.
//
// Legality: spatial iterations of a block are independent and reduce iterations commute
// (LANGUAGE.md, Blocks), and with direct bindings no loop feeds both a spatial and a reduce
// var, so `init` still runs at each element's first reduce iteration (the condition the
// `reorder` primitive checks). Linear in the size of the function.
#pragma once

#include <string>
#include <unordered_set>

#include "ir/module.h"

namespace tirc::ad {

Function order_loops_by_stride(const FunctionNode& f, const std::unordered_set<std::string>& keep);

}  // namespace tirc::ad

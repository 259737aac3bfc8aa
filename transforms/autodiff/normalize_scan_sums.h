// Normalisation rewrite 13: a sum over the steps of a recurrence moves after the scan loop.
//
// C code accumulates a loss over the same loop that carries a state: `for i { R[0] = f(R[0],
// ..); L[0] += -log(mu + a * R[0]) }` (an RNN / HMM / point process log-likelihood). After
// rewrite 6 the state has a history (`R_hist[vi]`) and the sum is a block whose reduce var is
// bound to the scan loop, which gradient() refuses ("the iter var vi bound to the scan loop i
// is a reduce var"). When the sum's block is alone in its statement of the loop body, nothing
// else in the loop touches what it writes, and every buffer it reads that the loop writes is
// stored one step element at a time (index `i + k` in some dimension, by every store in the
// loop) and read by the sum at a step already written (`i + k'`, k' < k, or k' = k with the
// writer before the sum), each value it reads is final once written: the statement runs as
// well in a copy of the loop right after it (loop fission), where it is an ordinary reduction.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with such sums moved after their scan loops; f unchanged (same contents) when none.
Function split_scan_sums(const FunctionNode& f);

// Throws tirc::Error naming the block when a block of f (normalised) sums over the steps of a
// scan loop (a reduce var bound to the loop of a scan block) that split_scan_sums could not
// move: gradient() refuses it ("the iter var vi bound to the scan loop i is a reduce var");
// this message says what to write instead.
void refuse_scan_sums(const FunctionNode& f);

}  // namespace tirc::ad

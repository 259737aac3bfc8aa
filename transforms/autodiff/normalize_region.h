// Normalisation rewrite 11: the step var of a recurrence through several blocks is re-based
// so that each block stores at its own step (docs/autodiff.md, "Normalisation").
//
// gradient() reads the blocks of a scan loop L that holds several blocks (or a block with a
// reduction) as one region, and each of them must store at exactly the iter var bound to L
// (`H[vt, j]`). Plain loops starting at 1 (`for t in serial(1, 8) { H[t] = f(H[t - 1]);
// C[t] = g(C[t - 1]) }`), wrapped by rewrite 0 with `vt = t - 1`, store at `H[vt + 1]`, and
// users write such blocks too. When every store of such a block writes `v + k` (the same
// k != 0, v the iter var bound to `L + c`) in one dimension, v is replaced by a new iter var
// u bound to `L + c + k` (extent E + k for k > 0; for k < 0 only when the binding's first
// value stays >= 0) and v by `u - k` in the block: the same instances, renamed. Applied only
// to blocks gradient() would refuse otherwise ("a scan step must write elements of its
// own"); every other function is returned unchanged.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with the step vars of such region blocks re-based; f itself when there is none.
Function shift_region_steps(const FunctionNode& f);

// Rewrite 10b: a serial loop L holding several blocks, each with a spatial iter var bound to
// `L + c`, whose blocks read (or overwrite) what another block of L stores at a different
// iteration of L (`for t { A[t, j] = sum_k W[j, k] * H[t - 1, k]; H[t, j] = tanh(A[t, j]) }`
// as plain loops, each block spatial on its own) carries a recurrence through several blocks.
// gradient() reads blocks of spatial vars as running whole, one after the other, which is not
// what the loop does (a wrong gradient before). Their iter vars bound to L become `scan`
// vars, so that gradient() reads the loop as a region (Scans) and checks it. Only when every
// buffer shared by two blocks of L is stored at indices using L; otherwise left as it was.
Function scan_carried_loops(const FunctionNode& f);

// Rewrite 12: versions of a recurrence's buffers. gradient() needs each buffer of a region
// written by one block of the loop and by no statement before it. Users write the first
// state before the loop (`H[0] = X[0]; for t in serial(1, 8) {...}`) or build a step value
// in several blocks (`A[t, j] = B[j]`, then `A[t, j] += ...` over k, then over another k).
// Each block of the loop writing such a buffer Y gets a buffer of its own (`Y_s1`, ...;
// the last writer keeps Y when nothing before the loop writes Y, else a block `Y_out`
// after the loop copies the loop's steps into Y), and every load of Y in the loop reads the
// version it saw: at the same step, the latest writer before it in the loop body (or Y as
// it was before the loop); at an earlier step, the last writer's version, or Y before the
// loop for the steps before the loop's first (`if_then_else(i >= first, Y_s2[i], Y[i])`).
// An accumulation onto the step's earlier value in a block without init (`A += ..` after
// `A = B`) gets the init `A_s2[I] = A_s1[I]`. Sound when all writers of Y store, at each
// step, the same elements (one index tuple each: the step var, distinct iter vars over the
// whole extent by inner loops, or the same expression of loops outside L), with a true
// predicate; every load of Y in the loop at the current or an earlier step (never a later
// one), a writer reading only its own element at the current step; each run of L writing
// elements of its own. Otherwise the loop is left as it was (gradient() refuses it).
Function version_region_buffers(const FunctionNode& f);

}  // namespace tirc::ad

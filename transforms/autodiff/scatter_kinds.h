// Iter var kinds of the scatter blocks that gradient() emits.
#pragma once

#include "ir/stmt.h"

namespace tirc::ad {

// Finishes a scatter block of F_grad (every iter var `reduce` except a scan var, annotated
// `"atomic" = 1`: the data-dependent adjoint of `X[I[v]]`, max's arg-extremum, a backward
// scan step adding into other points), in place, before its regions are set:
// - a reduce iter var v that appears, as exactly itself, at one dimension of every load and
//   store of each buffer the block stores to (`X_grad[v, M_arg[v]]`, `W_grad[I[r], v]`)
//   becomes spatial: instances with distinct values of v touch disjoint elements, as TVM
//   reads such a var, so schedule primitives (reverse_compute_at, compute_at, parallel,
//   vectorize, bind) treat it as they treat any spatial var;
// - when no reduce var is left, the "atomic" annotation goes (no two instances touch one
//   element: a parallel loop needs no atomic update);
// - when one is left, every store `B[I] = B[I] - x` becomes `B[I] = B[I] + -x` (the same
//   value, bit for bit; negation is not a FLOP), the form `B[I] = B[I] + v` that the
//   schedule (deps.h atomic_scatter_add) and the backend make atomic.
// A block with an init or without the annotation is left alone.
void finish_scatter_block(BlockNode& b);

}  // namespace tirc::ad

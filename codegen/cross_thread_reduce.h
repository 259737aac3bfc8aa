// Cross-thread reductions for the NVPTX backend (TVM's LowerCrossThreadReduction).
// Internal to codegen/.
#pragma once

#include "ir/module.h"

namespace tirc {

// Annotation key of the scope blocks made below; its value names the combiner ("add",
// "mul", "min", "max"). The NVPTX emitter lowers such a block to an allreduce.
inline constexpr const char* kAllreduceAnnotation = "tirc.allreduce";

// Rewrites every reduction block some of whose reduction loops are bound to threadIdx axes
// (accepted by `bind` for a commutative update `C[s] = C[s] OP x`). The nest of its
// reduction loops (from the outermost one) becomes a scope block annotated
// kAllreduceAnnotation holding a one-element "local" buffer R (the thread's partial) and:
//   0. `R[0] = identity of OP'` (OP' = + for C - x, else OP; reducer_identity);
//   1. the same nest around block `<B>_partial`: `R[0] = R[0] OP' x`, same bindings and
//      predicate, no init;
//   2. block B, spatial iter vars only, bound as before, predicate = the conjuncts of B's
//      that use no reduction loop: `C[s] = I OP R[0]` with I = B's init value, or C[s]
//      when B has no init.
// Run serially (the interpreter, or the CPU) this computes what B did, up to the order of
// the terms. The NVPTX emitter gives every thread its own R (0 runs in every thread),
// combines the R of the threads of the nest's threadIdx axes after 1, and runs 2 on
// thread 0 of them.
// Throws Error ("nvptx: ...") for reductions it cannot lower this way (other blocks or
// spatial loops inside the reduction loops, a non-commutative update, ...). Blocks
// annotated "atomic" (autodiff's scatter-adds, made atomic by the emitter) are left alone.
Function lower_cross_thread_reductions(const FunctionNode& f);

}  // namespace tirc

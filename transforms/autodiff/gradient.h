// Block-level reverse-mode automatic differentiation (LANGUAGE.md, "Gradients").
//
// gradient(F, wrt) returns
//   func F_grad(P1, ..., Pn, O1_grad, ..., Om_grad) -> (X_grad, ...)
// with F's parameters (same order, names and objects), one cotangent per output
// (`<output>_grad`, same shape and dtype) and one result per wrt buffer (`<buffer>_grad`).
// Default wrt (empty vector): every float input buffer, in parameter order.
// F_grad is an ordinary function: it recomputes the forward intermediates it needs from
// its inputs (F's outputs and allocs become its allocs), then runs the adjoint blocks.
//
// Method: the blocks of F in execution order are its Wengert list. Buffers written by
// several blocks (in-place updates) are put in SSA form (one buffer per version, with a
// copy when a write is partial). The reverse pass visits the blocks backwards; for each
// read of a differentiable buffer it emits an adjoint block accumulating into that
// version's adjoint buffer (zero-initialised by its own block). Inside a block the body is
// differentiated as a let-bound Wengert list (expr_ad.h). Each adjoint block is written
// as a gather whenever the read's index map can be inverted (gather.h: the index
// equations are solved for the forward loop vars, leftover vars become reduce vars with
// bounds from the loop ranges and guards, Fourier-Motzkin style; model: TVM
// te/autodiff ad_simplify.cc, Halide Derivative.cpp); otherwise it falls back to a
// scatter-add block over the forward iteration space annotated `"atomic" = 1` (codegen
// must make its updates atomic or keep the loop serial); its iter vars that partition the
// written elements are spatial, and without any other the annotation goes (scatter_kinds.h).
//
// Reductions: sum (init + `+=`, also `-=`), max and min (the whole gradient goes to the
// first extremum in lexicographic order of the reduce iter vars; the initial value gets
// it only when no point attains the extremum), product (zero-safe: counts zeros and the
// product of the non-zero factors). Anything else is refused with an Error naming the
// block and the construct (scan iter vars, opaque iter vars, call_extern, other update
// patterns, a store reading another store's result in the same block, nested blocks); a gradient is never
// silently wrong.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace tirc {

struct GradientOptions {
  // Run the arithmetic simplifier over the adjoint blocks (cosmetic; on by default).
  bool simplify = true;
  // Compute values that depend on fewer iter vars than their block once, into intermediate
  // buffers shared by the blocks that need them (hoist.h; env TIRC_AD_NO_HOIST=1 disables).
  bool hoist = true;
  // Sort the loops of the emitted blocks by access stride (loop_order.h; env
  // TIRC_AD_NO_LOOP_ORDER=1 disables). Results are bit-identical either way.
  bool order_loops = true;
  // Fuse consecutive adjoint blocks over the same points into one (fuse_pointwise.h; env
  // TIRC_AD_NO_FUSE=1 disables). Results are bit-identical either way.
  bool fuse = true;
};

// Throws Error when a wrt name is not a float input buffer of f, or when f contains a
// construct that cannot be differentiated.
Function gradient(const FunctionNode& f, const std::vector<std::string>& wrt,
                  const GradientOptions& opts = {});

}  // namespace tirc

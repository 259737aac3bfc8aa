// Hoisting of block-invariant values into intermediate buffers (used on F_grad).
//
// An adjoint block often recomputes, at every point of its iteration space, a value that
// depends on only some of its iter vars: layer_norm's rsqrt(Var[i] + eps) in a block over
// (i, j), the local derivative -0.5 * r / (Var[i] + eps), a broadcast divisor. A
// hand-written backward computes such a value once per row. hoist_invariants does that:
// in every top-level block whose loop nest covers its iter-var box exactly (loops from 0
// over the iter-var extents, one per iter var, bound directly, predicate true), each
// maximal float sub-expression of its unconditional lets and of an unconditional store
// value that has FLOPs and depends on a strict subset D of the iter vars (of extent > 1) is
// computed by a new block over D into a buffer `hoistN` (shape: the extents of D in order
// of first appearance), and replaced by a load. Sub-expressions under `if_then_else` and
// `let` expressions are left alone (they may be guarded), and so are values that read a
// buffer the block writes. The same value (alpha-equivalent, same extents) needed by a
// later block reuses the buffer while no statement in between writes a buffer it reads.
// Values over a block's whole box that two or more top-level blocks compute (same text up to
// iter var names, same extents: softmax's exp(X - M) when no buffer holds it) are
// materialised the same way, over all their iter vars (find_shared); hoisted values load the
// buffers of shared values inside them.
// Blocks with a `where` predicate take part too, more narrowly: they load values that a
// buffer already holds over their whole box, and values shared with other blocks under the
// same predicate (part of the sharing key) are computed by a block under that predicate; no
// invariant hoisting out of them.
// Nests whose loops visit a constant sub-range of their iter vars' boxes (the deferred gathers
// of a scan step: `for ax in serial(4, 6)` over `v: spatial(6)`) are analysed in a
// shift-normalised form (loop from 0, iter var of the loop's extent, the body reading it plus
// the old minimum, integer index expressions re-canonicalised), which is what they are emitted
// as when something is hoisted out of them. A value containing an `if_then_else` is hoistable
// (evaluated lazily by the hoisted block too), an `if_then_else` with FLOPs is taken whole,
// and a value inside two or more shared values is shared too (loaded by their blocks). `let`
// expressions at unconditional positions of a stored value are analysed as let statements.
// In a top-level loop over nests of scan blocks bound to it (recurrences, backward steps),
// values invariant over the scan var that read nothing the loop writes are computed before
// the loop.
// Safety: the hoisted block evaluates the value at exactly the points of D that the user
// block evaluates it at (every point of the box, or of the predicate), so it reads no element
// the user does not.
#pragma once

#include <vector>

#include "ir/stmt.h"
#include "transforms/autodiff/expr_ad.h"

namespace tirc::ad {

// `stmts`: the top-level statements of a function body, in execution order. Returns the new
// list (hoisting blocks inserted before their first user); new buffers go to *allocs.
std::vector<Stmt> hoist_invariants(const std::vector<Stmt>& stmts, NameGen& names,
                                   std::vector<Buffer>* allocs);

}  // namespace tirc::ad

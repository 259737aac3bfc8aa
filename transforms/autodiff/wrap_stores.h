// Normalisation rewrite 0: stores written outside any block get a block of their own.
//
// LANGUAGE.md lets a function store to buffers straight from loops (`for i in serial(4) {
// B[i] = A[i] * 2.0 }`), as TVM's TIR does outside blocks. The gradient works on blocks (the
// block list is the Wengert list), so each maximal block-free statement under the root (a
// store, or lets / if-else / sequences of them with no loop or block inside) becomes a block
// named after the first buffer it stores to, with one `opaque` iter var per enclosing loop
// (extent: the loop's, binding: the loop var minus the loop's min). Rewrite 8 then classifies
// the opaque vars as spatial or reduce, or refuses a true recurrence with its reason, so the
// meaning and the refusals are those of the same code written with explicit blocks.
// Loops whose extent depends on an enclosing loop are left alone (gradient() then refuses the
// store, naming it).
#pragma once

#include <functional>
#include <string>

#include "ir/module.h"

namespace tirc::ad {

// Returns f unchanged (same object contents) when every store is inside a block.
Function wrap_blockless_stores(const FunctionNode& f);

// The same wrapping for the statements of `body` (the body of a block without iter vars,
// TVM's opaque block holding its own loops); only loops inside `body` become iter vars.
// fresh(base) returns an unused block name. Returns body itself when nothing is wrapped.
Stmt wrap_blockless_statements(const Stmt& body, const std::function<std::string(const std::string&)>& fresh);

// Whether s holds a loop or a block: such a statement is not block-free, so rewrite 0 does not
// wrap it as a whole (also what rewrite 0i keeps apart when it moves lets).
bool has_loop_or_block(const Stmt& s);

}  // namespace tirc::ad

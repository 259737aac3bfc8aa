// Normalisation rewrite 0b: `let` statements outside any block are inlined.
//
// LANGUAGE.md allows `let x = EXPR` at function level (or between loops), and a block body
// may use such a name when its value depends only on scalar parameters (docs/language.md,
// "Names and scopes": invariant lets). gradient() builds its adjoint blocks from the block
// bodies, outside the statements that bound those names, so a body reading `x` would refer
// to an unbound variable in F_grad. Inlining the value (an expression of literals and scalar
// parameters, reading no buffer) at every use gives the same function with self-contained
// blocks. Lets whose value reads a buffer (usable only in bindings and `where`) are kept.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with every buffer-free let outside user blocks substituted into its scope; f unchanged
// (same contents) when there is none.
Function inline_outer_lets(const FunctionNode& f);

}  // namespace tirc::ad

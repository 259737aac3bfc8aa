// Normalisation rewrite 0i: a `let` between loops whose value reads a buffer sinks into its
// scope.
//
// C code keeps a loop invariant out of the inner loop by hand: `for i { let r = rsqrt(S[i]);
// for j { Y[i, j] = X[i, j] * r } }` (LANGUAGE.md: `let` is an ordinary statement). Rewrite 0
// wraps only block-free statements without loops, and a block body may not see a let bound
// outside it whose value reads a buffer, so the store stayed "outside of any block". When no
// statement of the let's scope writes a buffer the value reads (nested blocks and pointer
// arguments of call_extern included), the value is the same wherever the scope evaluates it:
// the let is copied around each loop-free statement of the scope that uses it (each copy with
// a fresh variable), and substituted into the loop bounds, `if` conditions, lets and block
// bindings / predicates between. Otherwise the function is refused naming the let.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with every such let outside user blocks sunk into its scope; f unchanged (same contents)
// when there is none. Throws tirc::Error naming the let when its scope writes a buffer its
// value reads and stores outside any block (gradient() refused the store before, without
// naming the let).
Function sink_outer_lets(const FunctionNode& f);

}  // namespace tirc::ad

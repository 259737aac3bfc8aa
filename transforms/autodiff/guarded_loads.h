// Loads with the conditions under which they are evaluated, and a small implication test on
// those conditions (used by the recurrence analysis of gradient.cpp: a triangular solve reads
// its solution at `X[vk]` under `if_then_else(vk < vi, ...)`, an earlier step of the scan vi).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/expr.h"

namespace tirc::ad {

// Calls fn(load, guards) for every load in e (loads inside indices included), where guards
// are the conditions known to hold wherever the load is evaluated: `outer`, plus the
// condition of each enclosing if_then_else then-arm and its negation in the else-arm (`&&`
// split into conjuncts, `!(a < b)` read as `a >= b`, `!(a == b)` as `a != b`). select arms get
// no guard: both are evaluated.
void for_each_guarded_load(const Expr& e, const std::vector<Expr>& outer,
                           const std::function<void(const LoadNode*, const std::vector<Expr>&)>& fn);

// True when one of `guards`, an integer comparison `a < b`, `a <= b`, `a > b`, `a >= b` or
// `a == b` of affine operands, implies `d >= k` because d minus the guard's difference is a
// constant (sufficient, not complete: no combination of several guards).
bool guards_imply_at_least(const std::vector<Expr>& guards, const Expr& d, int64_t k);

}  // namespace tirc::ad

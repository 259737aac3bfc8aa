// Recognition of a commutative reduction update, shared by the schedule (bind of a reduce
// loop to a thread axis) and the NVPTX backend (cross-thread allreduce).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tirc {

// A block body `let x1 = e1 ... ; C[idx] = C[idx] OP rhs` (or `rhs OP C[idx]`; `C - rhs` only
// in that order), OP one of + - * min max, rhs loading no element of C (and no pointer to
// it), idx free of the let names.
struct ReductionUpdate {
  BinOp op;                   // as written: Add, Sub, Mul, Min, Max
  BinOp combine;              // how partial results combine: Add for Sub, else op
  Buffer buffer;              // C
  std::vector<Expr> indices;  // idx
  Expr rhs;                   // the reduced term, the lets folded in as let expressions
};

// Returns the update of `body`, or nullopt with *why (when given) saying what is missing.
std::optional<ReductionUpdate> match_reduction_update(const Stmt& body, std::string* why = nullptr);

// The exact identity of a combiner in dtype t: 0, 1, -inf / +inf for float max / min (a
// finite bound would turn an all -inf max into the lowest finite value), the integer
// range's ends; undefined Expr for other operators.
Expr reducer_identity(BinOp combine, DType t);

// True when some block with an init below `loop` binds a reduce iter var to an expression
// of the loop's variable: the loop carries that reduction, whose init runs at its first
// iteration, so its iterations must not run backwards (tests that reverse thread-bound loops to expose
// order dependences skip such loops: `bind` accepts them as cross-thread reductions).
bool loop_feeds_reduction(const ForNode& loop);

}  // namespace tirc

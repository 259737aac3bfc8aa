// Operation counts of a function read from its IR (`tirc stats`, GFLOP/s of `tirc bench`).
//
// What is counted, per block (a block's own statements, nested blocks count separately):
// - iterations: executions of the block body. Static: the product of the extents of every
//   loop around the block; under a `where` predicate or enclosing `if`s (of this block or of
//   enclosing blocks) that are integer expressions of scalar params and of constant-bound
//   loops, the points of those loops are enumerated (up to 4M points) and only the ones
//   where every condition holds count; otherwise the product, an upper bound.
//   Dynamic (`--dynamic`): counted by the interpreter.
// - flops: as TVM's estimate_tir_flops, one per arithmetic operation whose operands are
//   floats: + - * / // % min max, comparisons of floats, and every intrinsic call (exp, sqrt,
//   pow, ...) with a float result. Integer (index) arithmetic, casts, negation, select,
//   loads and stores are not counted. The init statement counts once per init execution:
//   the instances where every reduce var's binding is 0, enumerated like the iterations
//   (so a `where` gives whole counts); otherwise iterations / product of the reduce extents.
//   Dynamic: the init executions counted by the interpreter.
// - loads / stores: buffer element reads and writes.
// - bytes: (loads + stores) x element size: traffic without any cache reuse.
// - `where` predicates and iter-var bindings are not counted (they are evaluated outside the
//   block, once per point of the enclosing loops): a data-dependent `where I[i] > 0` adds no
//   loads. A loop whose symbolic extent is negative at run time (`serial(a, b)`, b < a) counts 0.
// In a block body, a loop multiplies its body's counts by its extent; an `if` statement counts
// the larger branch; `if_then_else(c, a, b)` counts c and the larger arm; select both arms.
// A loop's min and extent count once per entry of the loop.
// Dynamic: the interpreter also counts how often each `if` branch and `if_then_else` arm ran
// and how many iterations each loop ran, so each branch counts its own executions and a loop
// body (also one with a data-dependent or iter-var-dependent extent inside a block body) the
// iterations that ran: every count is an exact integer for the inputs of the run. (A node the
// IR shares between two places, as the index of `A[if_then_else(..)] += x` read and written,
// falls back to the static rule: its run-time counts are summed over both places.)
#pragma once

#include <string>
#include <vector>

#include "interp/interp.h"

namespace tirc {

struct OpCounts {
  double iterations = 0, flops = 0, loads = 0, stores = 0, bytes = 0;
};

struct BlockCounts {
  std::string name;
  OpCounts counts;
};

struct FunctionCounts {
  std::vector<BlockCounts> blocks;  // in program order; "root" only when it has work of its own
  OpCounts total;                   // iterations: summed over the listed blocks
};

// Static counts. `scalars`: values of the scalar params (0-d arrays by name) needed by loop
// extents; Error when an extent is not a constant of scalar params (use dynamic_counts).
FunctionCounts static_counts(const FunctionNode& f, const ArgMap& scalars);

// Runs f on `inputs` with the interpreter and counts executions of blocks, inits, branches and
// loop iterations: exact counts for these inputs (see above).
FunctionCounts dynamic_counts(const FunctionNode& f, const ArgMap& inputs);

}  // namespace tirc

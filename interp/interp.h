// Reference interpreter: the ground truth that gradients, schedules and compiled code are
// judged against. Runs any function of LANGUAGE.md with TensorIR block semantics, strictly
// (out-of-bounds, uninitialised reads, bad bindings, integer division by zero are errors).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ir/module.h"
#include "runtime/ndarray.h"

namespace tirc {

// Arguments and results by parameter name. Scalars are 0-d arrays.
using ArgMap = std::map<std::string, NDArray>;

struct InterpOptions {
  // Run with every float (params, buffers, arithmetic) promoted to f64; inputs are
  // converted, outputs are returned as f64. Used by gradient checks.
  bool promote_f64 = false;
};

// Dynamic counts of one run (tirc stats --dynamic).
struct RunStats {
  // Block name -> number of executions of its body (instances whose `where` held).
  std::map<std::string, uint64_t> block_executions;
  // Block name -> number of executions of its `init` (instances where every reduce var is 0).
  std::map<std::string, uint64_t> init_executions;
  // IR node -> counts: for an `if` statement or an `if_then_else` expression, (then-branch,
  // else-branch) executions; for a loop, (entries, iterations). Keyed by the node of the
  // FunctionNode that was compiled (IfThenElseStmtNode, IfThenElse ExprNode, ForNode).
  std::map<const void*, std::pair<uint64_t, uint64_t>> sites;
};

// A function compiled once for repeated runs. Method: the IR is compiled into a tree of typed
// closures (interp/nodes.h) per set of scalar-parameter values (cached), with variables in a
// flat register array, buffer slots resolved and bounds checks removed where interval
// analysis proves them. Semantics of every operator: interp/scalar.h and docs/interp.md.
// run() may be called concurrently from several threads.
class InterpProgram {
 public:
  virtual ~InterpProgram() = default;
  // inputs: every param of the function by name (buffers with the declared shape and dtype,
  // or f64 under promote_f64). Returns every output by name, plus the final value of every
  // buffer parameter the function stores to (intrin desc/impl functions list no outputs;
  // the caller's arrays are never modified).
  // Throws Error naming block, buffer and index values on a strictness violation (a
  // SourceError "FILE:LINE:COL: error: block "B": ..." at the store or block being run when
  // the IR came from a script; docs/interp.md), and on missing/mis-shaped inputs naming the
  // parameter.
  virtual ArgMap run(const ArgMap& inputs) = 0;
  // As run(), also filling *stats (when not null).
  virtual ArgMap run_with_stats(const ArgMap& inputs, RunStats* stats) {
    if (stats) {
      stats->block_executions.clear();
      stats->init_executions.clear();
      stats->sites.clear();
    }
    return run(inputs);
  }
};

std::unique_ptr<InterpProgram> compile_interp(const FunctionNode& f, const InterpOptions& opts = {});

// Convenience: compile and run once.
ArgMap run_interp(const FunctionNode& f, const ArgMap& inputs, const InterpOptions& opts = {});

// Random inputs for every param of f not in `given`: floats uniform in the declared range
// (default [-1, 1]), integers uniform in the declared range (default [0, 9], both ends
// included; bool {0, 1}). Scalar params not given are drawn the same way, except an integer
// scalar without a range, which is drawn from [1, 9] (it usually fixes shapes: 0 would make
// them empty). Deterministic in seed; each param has its own stream, so giving one input
// does not change the others.
ArgMap random_inputs(const FunctionNode& f, uint64_t seed, const ArgMap& given = {});

// Concrete shape of a buffer given the scalar params (0-d arrays by name).
std::vector<int64_t> eval_shape(const Buffer& b, const ArgMap& scalars);

}  // namespace tirc

// In-process compilation with LLVM ORC LLJIT: the same contract as the interpreter's
// InterpProgram (interp/interp.h) so tests and `tirc run --engine jit` compare them directly.
#pragma once

#include <memory>
#include <vector>

#include "codegen/codegen.h"
#include "interp/interp.h"

namespace tirc {

class JitProgram : public InterpProgram {
 public:
  // inputs: every param by name (buffers with the declared shape and dtype; scalars as 0-d
  // arrays of their dtype). Returns every output by name. Throws Error naming the parameter
  // on a missing input or a dtype/shape mismatch. Out-of-bounds accesses are not checked
  // (the interpreter is the checker).
  ArgMap run(const ArgMap& inputs) override = 0;
  // Calls the compiled function on raw pointers in the C ABI order of codegen.h, through
  // the packed entry (args[i]: buffer data or pointer to the scalar). For benchmarks.
  virtual void call_packed(void** args) = 0;
  // Checks inputs as run() does, allocates the outputs into *outputs and returns the packed
  // argument array for call_packed. `scalar_slots` receives converted scalar values and must
  // outlive the returned pointers (as must `inputs` and *outputs).
  virtual std::vector<void*> pack_args(const ArgMap& inputs, ArgMap* outputs,
                                       std::vector<double>* scalar_slots) = 0;
  // Seconds spent in LLVM (IR generation, optimisation, machine code).
  virtual double compile_seconds() const = 0;
};

std::unique_ptr<JitProgram> compile_jit(const FunctionNode& f, const CodegenOptions& opts = {});

// Registers the "jit" engine with interp/runner.h (done automatically when this library's
// JIT is linked in; calling it again is harmless).
void register_jit_engine();

}  // namespace tirc

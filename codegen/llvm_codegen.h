// Internal to codegen/: the IR -> LLVM IR translator and target helpers. Includes LLVM
// headers; only codegen/*.cpp include it (public headers stay LLVM-free for compile time).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <vector>

#include "codegen/codegen.h"

namespace tirc {

// Target machine for opts (host CPU and features unless opts.cpu/triple say otherwise).
std::unique_ptr<llvm::TargetMachine> make_target_machine(const CodegenOptions& opts);

// Lowers each function (lower_function) and translates it into `mod`, which must already
// carry the target's triple and data layout. Defines F and __tirc_packed_F per function.
void build_llvm_functions(llvm::Module& mod, const std::vector<Function>& funcs, const CodegenOptions& opts,
                          llvm::TargetMachine& tm);

// Runs the default O<opt_level> pipeline of the new pass manager with tm's cost model.
void optimize_module(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level);

}  // namespace tirc

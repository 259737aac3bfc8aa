// Internal to codegen/: the IR -> LLVM IR translator and target helpers. Includes LLVM
// headers; only codegen/*.cpp include it (public headers stay LLVM-free for compile time).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <vector>

#include "codegen/codegen.h"
#include "transforms/lower/lower.h"

namespace tirc {

// Target machine for opts (host CPU and features unless opts.cpu/triple say otherwise).
std::unique_ptr<llvm::TargetMachine> make_target_machine(const CodegenOptions& opts);

// Lowers each function (lower_function, with bounds checks on the CPU when
// opts.bounds_checks) and translates it into `mod`, which must already carry the target's
// triple and data layout. Defines F, __tirc_packed_F, __tirc_bounds_error_F and
// __tirc_bounds_sites_F per function (codegen.h); `check_sites`, when given, receives each
// function's check sites (indexed by the site number __tirc_bounds_error_F returns).
void build_llvm_functions(llvm::Module& mod, const std::vector<Function>& funcs, const CodegenOptions& opts,
                          llvm::TargetMachine& tm,
                          std::vector<std::vector<BoundsCheckSite>>* check_sites = nullptr);

// Runs the default O<opt_level> pipeline of the new pass manager with tm's cost model.
void optimize_module(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level);

}  // namespace tirc

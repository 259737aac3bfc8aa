// compile_to: LLVM IR text, assembly or object code for a set of functions (tirc build).
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include "codegen/llvm_codegen.h"
#include "ir/error.h"

namespace tirc {

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }
std::string host_triple() { return llvm::sys::getProcessTriple(); }

std::string compile_to(const std::vector<Function>& funcs, EmitKind kind, const CodegenOptions& opts) {
  auto tm = make_target_machine(opts);
  llvm::LLVMContext ctx;
  llvm::Module mod("tirc", ctx);
  mod.setTargetTriple(tm->getTargetTriple().str());
  mod.setDataLayout(tm->createDataLayout());
  build_llvm_functions(mod, funcs, opts, *tm);
  optimize_module(mod, *tm, opts.opt_level);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == EmitKind::LLVM) {
    mod.print(os, nullptr);
    return os.str();
  }
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream vs(buf);
  llvm::legacy::PassManager pm;
  auto ft = kind == EmitKind::Asm ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  if (tm->addPassesToEmitFile(pm, vs, nullptr, ft))
    throw Error("codegen: the target cannot emit this file type");
  pm.run(mod);
  return std::string(buf.begin(), buf.end());
}

}  // namespace tirc

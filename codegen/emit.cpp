// compile_to: LLVM IR text, assembly or object code for a set of functions (tirc build).
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <memory>
#include <set>

#include "codegen/llvm_codegen.h"
#include "ir/error.h"

namespace tirc {

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }
std::string host_triple() { return llvm::sys::getProcessTriple(); }

namespace {

// Lowered, optimised module of `funcs` (each function under the name it has).
void build_module(llvm::Module& mod, llvm::TargetMachine& tm, const std::vector<Function>& funcs,
                  const CodegenOptions& opts) {
  mod.setTargetTriple(tm.getTargetTriple().str());
  mod.setDataLayout(tm.createDataLayout());
  build_llvm_functions(mod, funcs, opts, tm);
  optimize_module(mod, tm, opts.opt_level);
}

std::string emit(llvm::Module& mod, llvm::TargetMachine& tm, llvm::CodeGenFileType ft) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream vs(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, vs, nullptr, ft))
    throw Error("codegen: the target cannot emit this file type");
  pm.run(mod);
  return std::string(buf.begin(), buf.end());
}

// A name that compiled code may call: libm (LLVM lowers llvm.exp.f64 to `exp`, llvm.exp.f32 to
// `expf`, ...), memset / memcpy (loop idioms), the tirc runtime and the compiler runtime (`__*`).
bool may_be_called(const std::string& name) {
  static const char* const kMath[] = {
      "acos",      "asin",  "atan",   "atan2",     "cbrt",   "ceil",   "copysign", "cos",       "cosh",
      "erf",       "erfc",  "exp",    "exp10",     "exp2",   "expm1",  "fabs",     "fdim",      "floor",
      "fma",       "fmax",  "fmin",   "fmod",      "frexp",  "hypot",  "ldexp",    "lgamma",    "log",
      "log10",     "log1p", "log2",   "logb",      "lrint",  "lround", "modf",     "nearbyint", "pow",
      "remainder", "rint",  "round",  "roundeven", "scalbn", "sin",    "sincos",   "sinh",      "sqrt",
      "tan",       "tanh",  "tgamma", "trunc"};
  static const char* const kOther[] = {"memcpy",
                                       "memmove",
                                       "memset",
                                       "memcmp",
                                       "bzero",
                                       "abort",
                                       "tirc_alloc",
                                       "tirc_free",
                                       "tirc_parallel_for",
                                       "tirc_atomic_lock",
                                       "tirc_atomic_unlock"};
  if (name.rfind("__", 0) == 0) return true;
  for (const char* m : kMath)
    if (name == m || name == std::string(m) + "f" || name == std::string(m) + "l") return true;
  for (const char* o : kOther)
    if (name == o) return true;
  return false;
}

// A function's name is its symbol in the object (the C ABI of `tirc build`). When the compiled
// code also calls a symbol of that name, the call binds to the function: `func exp(X: f64[4])`
// using exp() called itself (a crash at run time), `func tirc_parallel_for` took the runtime's
// place (outsider round 13). Such a name is refused with the reason. Whether the code calls it
// is known only from the machine code (libcalls are chosen by the backend: `exp` of an f32 is
// `expf`, so `func exp(X: f32[4])` compiles), so a module with a name that may be called is
// compiled once more with private names and its undefined symbols are checked. Names starting
// with `__tirc_` are tirc's own wrappers (`__tirc_packed_F`; LLVM renamed a second definition
// `.1`, silently). The JIT names its functions privately (jit.cpp) and runs any name.
void check_symbol_names(const std::vector<Function>& funcs, const CodegenOptions& opts, bool nvptx) {
  bool probe = false;
  for (auto& f : funcs) {
    if (f->name.rfind("__tirc_", 0) == 0)
      throw Error("codegen: function name '" + f->name +
                  "' starts with __tirc_, reserved for the wrappers tirc build emits (__tirc_packed_F, ...): "
                  "rename the function to compile it");
    probe = probe || may_be_called(f->name);
  }
  if (!probe || nvptx) return;  // device code calls libdevice (__nv_*), linked in
  std::vector<Function> renamed;
  for (auto& f : funcs) {
    auto g = std::make_shared<FunctionNode>(*f);
    g->name = "tirc.probe." + f->name;
    renamed.push_back(g);
  }
  auto tm = make_target_machine(opts);
  llvm::LLVMContext ctx;
  llvm::Module mod("tirc_probe", ctx);
  build_module(mod, *tm, renamed, opts);
  std::string obj = emit(mod, *tm, llvm::CodeGenFileType::ObjectFile);
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(obj, "probe"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  std::set<std::string> undefined;
  for (const auto& sym : (*file)->symbols()) {
    auto flags = sym.getFlags();
    auto name = sym.getName();
    if (flags && name && (*flags & llvm::object::SymbolRef::SF_Undefined)) undefined.insert(name->str());
    if (!flags) llvm::consumeError(flags.takeError());
    if (!name) llvm::consumeError(name.takeError());
  }
  for (auto& f : funcs)
    if (undefined.count(f->name))
      throw Error(
          "codegen: function name '" + f->name +
          "' is also a symbol the compiled code calls (the C library, the compiler or tirc runtime): the "
          "calls would reach the function; rename the function to compile it");
}

}  // namespace

std::string compile_to(const std::vector<Function>& funcs, EmitKind kind, const CodegenOptions& opts) {
  auto tm = make_target_machine(opts);
  check_symbol_names(funcs, opts, tm->getTargetTriple().isNVPTX());
  llvm::LLVMContext ctx;
  llvm::Module mod("tirc", ctx);
  build_module(mod, *tm, funcs, opts);
  if (kind == EmitKind::LLVM) {
    std::string out;
    llvm::raw_string_ostream os(out);
    mod.print(os, nullptr);
    return os.str();
  }
  return emit(
      mod, *tm,
      kind == EmitKind::Asm ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile);
}

}  // namespace tirc

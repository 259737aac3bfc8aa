// ORC LLJIT engine: optimise the module with the host target machine, then JIT it in-process.
// Runtime entry points (thread pool, allocation) are bound as absolute symbols; libm and
// call_extern targets are resolved in the process.
#include "codegen/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/Error.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "codegen/llvm_codegen.h"
#include "interp/runner.h"
#include "ir/error.h"
#include "ir/visitor.h"
#include "runtime/tirc_runtime.h"

namespace tirc {
namespace {

std::string llvm_error(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase& info) { s += info.message(); });
  return s;
}

int64_t eval_int(const Expr& e, const ArgMap& scalars) {
  int64_t v;
  if (is_const_int(e, &v)) return v;
  if (auto* n = e.as<VarNode>()) {
    auto it = scalars.find(n->name);
    if (it == scalars.end() || it->second.numel() != 1) throw Error("missing scalar input " + n->name);
    return static_cast<int64_t>(it->second.get(0));
  }
  if (auto* n = e.as<CastNode>()) return eval_int(n->value, scalars);
  if (auto* n = e.as<BinaryNode>()) {
    int64_t a = eval_int(n->a, scalars), b = eval_int(n->b, scalars);
    switch (n->op) {
      case BinOp::Add: return a + b;
      case BinOp::Sub: return a - b;
      case BinOp::Mul: return a * b;
      case BinOp::FloorDiv:
      case BinOp::FloorMod: {
        if (b == 0) throw Error("division by zero in a shape");
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return n->op == BinOp::FloorDiv ? q : a - q * b;
      }
      case BinOp::Min: return std::min(a, b);
      case BinOp::Max: return std::max(a, b);
      default: break;
    }
  }
  throw Error("cannot evaluate a buffer shape");
}

std::vector<int64_t> shape_of(const Buffer& b, const ArgMap& in) {
  std::vector<int64_t> s;
  for (auto& e : b->shape) s.push_back(eval_int(e, in));
  return s;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Compiled code allocates its buffers with tirc_alloc, which aborts the process when the memory
// is short (`tirc runtime: out of memory allocating N bytes`, exit 134). A run that cannot fit
// is refused first with the interpreter's words (interp.cpp, check_memory; outsider round 13):
// the outputs, the function-level allocs and the largest block-local alloc whose shape the
// scalar parameters decide (others are skipped: a lower bound of what the run needs).
class AllocBytes : public IRVisitor {
 public:
  explicit AllocBytes(const ArgMap& scalars) : scalars_(scalars) {}
  double root = 0, largest_local = 0;

 protected:
  void visit_block(const BlockNode* n) override {
    for (auto& b : n->allocs) {
      double bytes = static_cast<double>(dtype_bytes(b->dtype));
      try {
        for (auto& d : b->shape) bytes *= static_cast<double>(std::max<int64_t>(0, eval_int(d, scalars_)));
      } catch (const Error&) {
        continue;  // a shape of let values or iter vars
      }
      if (depth_ == 0)
        root += bytes;
      else
        largest_local = std::max(largest_local, bytes);
    }
    ++depth_;
    IRVisitor::visit_block(n);
    --depth_;
  }

 private:
  const ArgMap& scalars_;
  int depth_ = 0;
};

void check_memory(const FunctionNode& f, const ArgMap& inputs, const ArgMap& outputs) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double limit = static_cast<double>(pages) * static_cast<double>(page);
  AllocBytes a(inputs);
  a.visit(f.body);
  double total = a.root + a.largest_local;
  for (auto& [name, arr] : outputs) total += static_cast<double>(arr.nbytes());
  if (total > limit) {
    std::ostringstream os;
    os << "cannot run " << f.name << ": its outputs and allocs need " << static_cast<uint64_t>(total)
       << " bytes, more than the memory (" << static_cast<uint64_t>(limit) << " bytes)";
    throw Error(os.str());
  }
}

class JitProgramImpl : public JitProgram {
 public:
  JitProgramImpl(const FunctionNode& f, const CodegenOptions& opts) : f_(std::make_shared<FunctionNode>(f)) {
    auto t0 = std::chrono::steady_clock::now();
    auto tm = make_target_machine(opts);
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto mod = std::make_unique<llvm::Module>("tirc_jit", *ctx);
    mod->setTargetTriple(tm->getTargetTriple().str());
    mod->setDataLayout(tm->createDataLayout());
    std::vector<std::vector<BoundsCheckSite>> sites;
    // A private symbol name: the JIT module also calls libm (`exp`, `tanhf`, ...) and the runtime
    // (`tirc_parallel_for`), which a function of that name would have replaced (`func exp(X:
    // f64[4])` using exp() called itself: a crash; outsider round 13). '.' is in no .tir or C name.
    auto g = std::make_shared<FunctionNode>(f);
    g->name = "tirc.jit." + f.name;
    build_llvm_functions(*mod, {g}, opts, *tm, &sites);
    sites_ = std::move(sites.at(0));
    optimize_module(*mod, *tm, opts.opt_level);

    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) throw Error("jit: " + llvm_error(jtmb.takeError()));
    jtmb->setCPU(tm->getTargetCPU().str());
    jtmb->getFeatures() = llvm::SubtargetFeatures(tm->getTargetFeatureString());
    jtmb->setCodeGenOptLevel(tm->getOptLevel());
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) throw Error("jit: " + llvm_error(jit.takeError()));
    jit_ = std::move(*jit);
    // ORC prints failed lookups itself ("JIT session error: Symbols not found: ..."): keep
    // them for our own message instead.
    jit_->getExecutionSession().setErrorReporter([this](llvm::Error e) {
      session_errors_ += (session_errors_.empty() ? "" : "; ") + llvm_error(std::move(e));
    });
    auto& jd = jit_->getMainJITDylib();
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!gen) throw Error("jit: " + llvm_error(gen.takeError()));
    jd.addGenerator(std::move(*gen));
    llvm::orc::SymbolMap syms;
    auto add = [&](const char* name, void* p) {
      syms[jit_->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(p),
                                           llvm::JITSymbolFlags::Exported};
    };
    add("tirc_parallel_for", reinterpret_cast<void*>(&tirc_parallel_for));
    add("tirc_alloc", reinterpret_cast<void*>(&tirc_alloc));
    add("tirc_free", reinterpret_cast<void*>(&tirc_free));
    add("tirc_atomic_lock", reinterpret_cast<void*>(&tirc_atomic_lock));
    add("tirc_atomic_unlock", reinterpret_cast<void*>(&tirc_atomic_unlock));
    std::vector<std::string> missing = unresolved_externs(*mod, syms);
    if (!missing.empty()) {
      std::string names;
      for (auto& m : missing) names += (names.empty() ? "" : ", ") + m;
      bool many = missing.size() > 1;
      throw Error(std::string("jit: call_extern target") + (many ? "s " : " ") + names +
                  (many ? " are" : " is") +
                  " not defined: the JIT can only call functions linked into tirc; compile with "
                  "`tirc build` and link an object that defines " +
                  (many ? "them" : "it"));
    }
    if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
      throw Error("jit: " + llvm_error(std::move(err)));
    if (auto err = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))))
      throw Error("jit: " + llvm_error(std::move(err)));
    auto sym = jit_->lookup("__tirc_packed_" + g->name);
    if (!sym) {
      std::string msg = llvm_error(sym.takeError());
      throw Error("jit: " + (session_errors_.empty() ? msg : session_errors_ + " (" + msg + ")"));
    }
    entry_ = sym->toPtr<void (*)(void**)>();
    auto err = jit_->lookup("__tirc_bounds_error_" + g->name);
    if (!err) throw Error("jit: " + llvm_error(err.takeError()));
    bounds_error_ = err->toPtr<int64_t (*)(int64_t*, int64_t*)>();
    compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::vector<void*> pack_args(const ArgMap& inputs, ArgMap* out,
                               std::vector<double>* scalar_store) override {
    const FunctionNode& f = *f_;
    std::vector<void*> args;
    scalar_store->assign(f.params.size() + 1, 0.0);  // 8-byte slots for converted scalars
    for (size_t i = 0; i < f.params.size(); ++i) {
      auto& p = f.params[i];
      auto it = inputs.find(p.name());
      if (it == inputs.end()) throw Error("missing input " + p.name());
      const NDArray& a = it->second;
      if (p.is_buffer()) {
        auto want = shape_of(p.buffer, inputs);
        if (a.dtype() != p.buffer->dtype || a.shape() != want)
          throw Error("input " + p.name() + ": expected " + std::string(dtype_name(p.buffer->dtype)) +
                      shape_str(want) + ", got " + describe(a));
        args.push_back(const_cast<void*>(a.data()));
      } else {
        DType t = p.var.dtype();
        if (a.numel() != 1) throw Error("input " + p.name() + ": expected a scalar, got " + describe(a));
        NDArray tmp(t == DType::F16 || t == DType::BF16 ? DType::F32 : t, {});
        // Same dtype: copy the bytes (a double does not hold every i64, e.g. 2^53 + 1).
        if (a.dtype() == tmp.dtype())
          std::memcpy(tmp.data(), a.data(), tmp.nbytes());
        else
          tmp.set(0, a.get(0));
        void* slot = &(*scalar_store)[i];
        std::memcpy(slot, tmp.data(), tmp.nbytes());
        args.push_back(slot);
      }
    }
    for (auto& o : f.outputs) {
      NDArray arr(o->dtype, shape_of(o, inputs));
      args.push_back(arr.data());
      (*out)[o->name] = arr;
    }
    check_memory(f, inputs, *out);
    return args;
  }

  ArgMap run(const ArgMap& inputs) override {
    ArgMap out;
    std::vector<double> slots;
    auto args = pack_args(inputs, &out, &slots);
    call_packed(args.data());
    return out;
  }

  void call_packed(void** args) override {
    entry_(args);
    int64_t index = 0, extent = 0;
    int64_t site = bounds_error_(&index, &extent);
    if (site < 0) return;
    if (static_cast<size_t>(site) >= sites_.size())
      throw Error("jit: out-of-bounds access (unknown check site)");
    const BoundsCheckSite& s = sites_[static_cast<size_t>(site)];
    std::string msg = bounds_check_message(s, index, extent);
    if (s.loc.known()) throw SourceError(s.loc.file, s.loc.line, s.loc.col, msg);
    throw Error(msg);
  }
  double compile_seconds() const override { return compile_seconds_; }

 private:
  // Functions the module declares but does not define (call_extern targets, libm) that are
  // neither runtime entry points bound in `runtime` nor symbols of the running process, in
  // module order.
  std::vector<std::string> unresolved_externs(const llvm::Module& m, const llvm::orc::SymbolMap& runtime) {
    llvm::sys::DynamicLibrary process = llvm::sys::DynamicLibrary::getPermanentLibrary(nullptr);
    std::vector<std::string> out;
    for (const llvm::Function& fn : m.functions()) {
      if (!fn.isDeclaration() || fn.isIntrinsic() || fn.use_empty()) continue;
      std::string name = fn.getName().str();
      if (runtime.count(jit_->mangleAndIntern(name))) continue;
      if (process.getAddressOfSymbol(name.c_str())) continue;  // libm, libc, ...: as the search generator
      out.push_back(name);
    }
    return out;
  }

  Function f_;
  std::string session_errors_;  // declared before jit_: its reporter writes here until jit_ dies
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*entry_)(void**) = nullptr;
  int64_t (*bounds_error_)(int64_t*, int64_t*) = nullptr;
  std::vector<BoundsCheckSite> sites_;
  double compile_seconds_ = 0;
};

}  // namespace

std::unique_ptr<JitProgram> compile_jit(const FunctionNode& f, const CodegenOptions& opts) {
  return std::make_unique<JitProgramImpl>(f, opts);
}

void register_jit_engine() {
  register_engine("jit",
                  [](const FunctionNode& f, const ArgMap& inputs) { return compile_jit(f)->run(inputs); });
}

namespace {
// Linked in whenever anything uses compile_jit (tirc build/bench do), so `tirc run --engine
// jit` finds the engine without cmd_run.cpp knowing about LLVM.
[[maybe_unused]] const bool g_jit_registered = (register_jit_engine(), true);
}  // namespace

}  // namespace tirc

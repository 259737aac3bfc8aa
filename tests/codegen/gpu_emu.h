// A small emulator of the NVPTX kernels tirc emits, for tests on a machine without a GPU:
// the kernel's LLVM IR (as `tirc build --target nvptx --emit llvm` prints it, -O0) is
// retargeted to the host and JIT-compiled, with the NVVM intrinsics replaced by calls into
// this file: thread / block indices, `barrier0` (a barrier of the thread block's threads)
// and `shfl.sync.{down,bfly,idx,up}` (an exchange among the lanes of a warp, with PTX's
// source-lane rules: segment mask and clamp in `c`, the "in range" predicate of the .p
// forms). Every thread of a block is a host thread; blocks run one after another (so the
// .shared variables, made ordinary globals, are per block). Checks what the hardware would
// leave undefined: a shuffle whose calling lanes are not exactly its member mask, a source
// lane outside the mask, a barrier not reached by all threads (time-out).
// CUDA libdevice functions (`__nv_expf`, ...) are mapped to the host's libm.
#pragma once

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <array>
#include <atomic>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tirc::testing::gpu_emu {

struct Sync {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t gen = 0;
  uint32_t seen = 0;          // lanes arrived (warps)
  uint32_t vals[32] = {};     // values written this round (warps)
  uint32_t snap[2][32] = {};  // values of a completed round, by generation parity
};

struct State {
  int block[3] = {1, 1, 1};
  int nthreads = 1;
  Sync bar;
  std::vector<Sync> warps;
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::string error;
  std::atomic<long> shuffles{0}, barriers{0};
  void fail(const std::string& m) {
    {
      std::lock_guard<std::mutex> g(err_mu);
      if (error.empty()) error = m;
      failed = true;
    }
    // Wake the waiting threads (they return at once once failed is set). Without taking
    // the mutexes: fail() may run under one; a wake-up missed here ends at the time-out.
    bar.cv.notify_all();
    for (auto& w : warps) w.cv.notify_all();
  }
};

inline State* g_state = nullptr;

// Serialized threads (default): the threads of a block run one at a time, each until it
// waits at a barrier or a shuffle (or ends), roughly in thread order. Results of a correct
// kernel do not depend on it; a missing barrier then shows deterministically-ish as a
// wrong result (thread 0 reads a shared element thread 31 has not written yet) instead of
// hiding behind the timing of concurrent host threads. false: all threads run at once.
inline bool g_serialize = true;
inline std::mutex g_run_mu;  // held by the running thread when serialized

// Gives up the run token while waiting at a barrier / shuffle (taken back on destruction,
// after the waiting lock is released: no lock-order inversion).
struct YieldRun {
  YieldRun() {
    if (g_serialize) g_run_mu.unlock();
  }
  ~YieldRun() {
    if (g_serialize) g_run_mu.lock();
  }
};
inline thread_local int t_tid[3], t_ctaid[3];

inline int linear_tid() { return t_tid[0] + g_state->block[0] * (t_tid[1] + g_state->block[1] * t_tid[2]); }

extern "C" inline int32_t tirc_emu_tid(int32_t a) { return t_tid[a]; }
extern "C" inline int32_t tirc_emu_ctaid(int32_t a) { return t_ctaid[a]; }

// Waits until `n` callers arrived at s (generation change); false on a time-out.
inline bool wait_all(Sync& s, std::unique_lock<std::mutex>& lk, int n, const std::function<void()>& last) {
  uint64_t g = s.gen;
  if (++s.arrived == n) {
    last();
    s.arrived = 0;
    ++s.gen;
    s.cv.notify_all();
    return true;
  }
  return s.cv.wait_for(lk, std::chrono::seconds(5), [&] { return s.gen != g || g_state->failed.load(); }) &&
         !g_state->failed.load();
}

extern "C" inline void tirc_emu_barrier() {
  State& st = *g_state;
  if (st.failed) return;
  ++st.barriers;
  YieldRun yield;
  std::unique_lock<std::mutex> lk(st.bar.mu);
  if (!wait_all(st.bar, lk, st.nthreads, [] {}))
    st.fail("bar.sync: not every thread of the block arrived (thread " + std::to_string(linear_tid()) +
            " waited)");
}

// PTX shfl.sync source lane: returns j and sets *ok ("in range").
inline int shfl_src(int kind, int lane, uint32_t b, uint32_t c, bool* ok) {
  int bval = b & 0x1f, cval = c & 0x1f, segmask = (c >> 8) & 0x1f;
  int min_lane = lane & segmask, max_lane = min_lane | (cval & ~segmask);
  int j = 0;
  if (kind == 0) {  // down
    j = lane + bval;
    *ok = j <= max_lane;
  } else if (kind == 1) {  // bfly
    j = lane ^ bval;
    *ok = j <= max_lane;
  } else if (kind == 2) {  // idx
    j = min_lane | (bval & ~segmask);
    *ok = j <= max_lane;
  } else {  // up
    j = lane - bval;
    *ok = j >= max_lane;
  }
  return *ok ? j : lane;
}

extern "C" inline int32_t tirc_emu_shfl_pred(int32_t kind, int32_t b, int32_t c) {
  bool ok;
  shfl_src(kind, linear_tid() & 31, static_cast<uint32_t>(b), static_cast<uint32_t>(c), &ok);
  return ok;
}

extern "C" inline uint32_t tirc_emu_shfl(int32_t kind, uint32_t mask, uint32_t v, int32_t b, int32_t c) {
  State& st = *g_state;
  if (st.failed) return v;
  ++st.shuffles;
  int t = linear_tid(), lane = t & 31;
  Sync& w = st.warps[t >> 5];
  if (!((mask >> lane) & 1u)) {
    st.fail("shfl.sync: lane " + std::to_string(lane) + " of warp " + std::to_string(t >> 5) +
            " is not in the member mask " + std::to_string(mask));
    return v;
  }
  YieldRun yield;
  std::unique_lock<std::mutex> lk(w.mu);
  w.vals[lane] = v;
  w.seen |= 1u << lane;
  uint64_t g = w.gen;
  bool done = wait_all(w, lk, __builtin_popcount(mask), [&] {
    if (w.seen != mask) st.fail("shfl.sync: the lanes calling it are not its member mask");
    std::memcpy(w.snap[(g + 1) & 1], w.vals, sizeof w.vals);
    w.seen = 0;
  });
  if (!done) {
    st.fail("shfl.sync: not every lane of the member mask arrived (warp " + std::to_string(t >> 5) + ")");
    return v;
  }
  bool ok;
  int j = shfl_src(kind, lane, static_cast<uint32_t>(b), static_cast<uint32_t>(c), &ok);
  if (!((mask >> j) & 1u)) {
    st.fail("shfl.sync: source lane " + std::to_string(j) + " is not in the member mask");
    return v;
  }
  return w.snap[(g + 1) & 1][j];
}

extern "C" inline float tirc_emu_rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// libdevice's directed-rounding arithmetic (`llvm.nvvm.{add,mul,fma}.{rz,rm,rp}[.ftz].{f,d}`,
// e.g. in log1pf): op 0 add, 1 mul, 2 fma; mode 0 toward zero, 1 down, 2 up. Computed under the
// host's rounding mode; the volatile operands keep the arithmetic between the two fesetround
// calls.
template <class T>
T emu_directed(int op, int mode, T a, T b, T c) {
  volatile T x = a, y = b, z = c, r;
  std::fesetround(mode == 0 ? FE_TOWARDZERO : mode == 1 ? FE_DOWNWARD : FE_UPWARD);
  r = op == 0 ? x + y : op == 1 ? x * y : std::fma(static_cast<T>(x), static_cast<T>(y), static_cast<T>(z));
  std::fesetround(FE_TONEAREST);
  return r;
}
extern "C" inline float tirc_emu_directed_f(int32_t op, int32_t mode, float a, float b, float c) {
  return emu_directed<float>(op, mode, a, b, c);
}
extern "C" inline double tirc_emu_directed_d(int32_t op, int32_t mode, double a, double b, double c) {
  return emu_directed<double>(op, mode, a, b, c);
}

inline std::string llvm_err(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase& i) { s += i.message(); });
  return s;
}

// Retargets the NVPTX module to the host: intrinsics to calls of the functions above,
// .shared / .global variables to ordinary globals, libdevice bodies dropped.
inline std::string retarget(llvm::Module& m) {
  auto& C = m.getContext();
  llvm::IRBuilder<> B(C);
  auto* i32 = B.getInt32Ty();
  auto fn = [&](const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) {
    return m.getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  };
  for (auto& f : m) {
    if (f.getName().starts_with("__nv_") && !f.isDeclaration()) {
      f.deleteBody();
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
  }
  std::vector<llvm::CallInst*> calls;
  for (auto& f : m)
    for (auto& bb : f)
      for (auto& in : bb)
        if (auto* c = llvm::dyn_cast<llvm::CallInst>(&in))
          if (c->getCalledFunction() && c->getCalledFunction()->getName().starts_with("llvm.nvvm."))
            calls.push_back(c);
  // PTX inline assembly of libdevice (`rcp.approx.ftz.f32` in tanhf, `sub.rz.f32`, ...): its
  // constraints mean other registers on the host ("f" is an x87 register: LLVM's X86 FP
  // stackifier aborted with "Cannot pop empty stack!"). The arithmetic ones are emulated; any
  // other is an error of the emulator rather than a crash.
  std::vector<llvm::CallInst*> asms;
  for (auto& f : m)
    for (auto& bb : f)
      for (auto& in : bb)
        if (auto* c = llvm::dyn_cast<llvm::CallInst>(&in))
          if (c->isInlineAsm()) asms.push_back(c);
  for (auto* c : asms) {
    std::string a = llvm::cast<llvm::InlineAsm>(c->getCalledOperand())->getAsmString();
    B.SetInsertPoint(c);
    llvm::Type* t = c->getType();
    llvm::Value* r = nullptr;
    if (a.rfind("rcp.approx.", 0) == 0 && c->arg_size() == 1) {
      // (approximate on the device, within an ulp or two; exact here)
      r = B.CreateFDiv(llvm::ConstantFP::get(t, 1.0), c->getArgOperand(0));
    } else if (a.rfind("rsqrt.approx.", 0) == 0 && c->arg_size() == 1) {
      r = B.CreateFDiv(llvm::ConstantFP::get(t, 1.0),
                       B.CreateIntrinsic(llvm::Intrinsic::sqrt, {t}, {c->getArgOperand(0)}));
    } else if (a.rfind("sub.r", 0) == 0 && a.size() > 5 && c->arg_size() == 2 && t->isFloatingPointTy()) {
      if (a[5] == 'n') {
        r = B.CreateFSub(c->getArgOperand(0), c->getArgOperand(1));
      } else {  // a - b = a + (-b) rounded alike
        int mode = a[5] == 'z' ? 0 : a[5] == 'm' ? 1 : 2;
        bool d = t->isDoubleTy();
        r = B.CreateCall(fn(d ? "tirc_emu_directed_d" : "tirc_emu_directed_f", t, {i32, i32, t, t, t}),
                         {B.getInt32(0), B.getInt32(mode), c->getArgOperand(0), B.CreateFNeg(c->getArgOperand(1)),
                          llvm::ConstantFP::get(t, 0.0)});
      }
    } else {
      return "unsupported inline PTX assembly: " + a;
    }
    c->replaceAllUsesWith(r);
    c->eraseFromParent();
  }
  for (auto* c : calls) {
    std::string n = c->getCalledFunction()->getName().str();
    B.SetInsertPoint(c);
    llvm::Value* r = nullptr;
    auto axis = [&](const std::string& s) { return B.getInt32(s.back() - 'x'); };
    if (n.rfind("llvm.nvvm.read.ptx.sreg.tid.", 0) == 0) {
      r = B.CreateCall(fn("tirc_emu_tid", i32, {i32}), {axis(n)});
    } else if (n.rfind("llvm.nvvm.read.ptx.sreg.ctaid.", 0) == 0) {
      r = B.CreateCall(fn("tirc_emu_ctaid", i32, {i32}), {axis(n)});
    } else if (n == "llvm.nvvm.barrier0") {
      B.CreateCall(fn("tirc_emu_barrier", B.getVoidTy(), {}));
    } else if (n.rfind("llvm.nvvm.shfl.sync.", 0) == 0) {
      std::string rest = n.substr(std::string("llvm.nvvm.shfl.sync.").size());
      int kind = rest.rfind("down", 0) == 0   ? 0
                 : rest.rfind("bfly", 0) == 0 ? 1
                 : rest.rfind("idx", 0) == 0  ? 2
                                              : 3;
      bool pred = rest.back() == 'p';
      llvm::Value *mask = c->getArgOperand(0), *v = c->getArgOperand(1), *b = c->getArgOperand(2),
                  *cc = c->getArgOperand(3);
      llvm::Type* vt = v->getType();
      llvm::Value* bits = vt->isFloatTy() ? B.CreateBitCast(v, i32) : v;
      llvm::Value* x = B.CreateCall(fn("tirc_emu_shfl", i32, {i32, i32, i32, i32, i32}),
                                    {B.getInt32(kind), mask, bits, b, cc});
      if (vt->isFloatTy()) x = B.CreateBitCast(x, vt);
      if (pred) {
        llvm::Value* p = B.CreateICmpNE(
            B.CreateCall(fn("tirc_emu_shfl_pred", i32, {i32, i32, i32}), {B.getInt32(kind), b, cc}),
            B.getInt32(0));
        llvm::Value* s = llvm::UndefValue::get(c->getType());
        s = B.CreateInsertValue(s, x, {0});
        r = B.CreateInsertValue(s, p, {1});
      } else {
        r = x;
      }
    } else if (int op = n.rfind("llvm.nvvm.add.r", 0) == 0   ? 0
                        : n.rfind("llvm.nvvm.mul.r", 0) == 0 ? 1
                        : n.rfind("llvm.nvvm.fma.r", 0) == 0 ? 2
                                                             : -1;
               op >= 0 && n[15] != 'n') {  // directed rounding: .rz / .rm / .rp (not .rn)
      int mode = n[15] == 'z' ? 0 : n[15] == 'm' ? 1 : 2;
      llvm::Type* t = c->getType();
      bool d = t->isDoubleTy();
      llvm::Value* a = c->getArgOperand(0);
      llvm::Value* b = c->getArgOperand(1);
      llvm::Value* z = op == 2 ? c->getArgOperand(2) : llvm::ConstantFP::get(t, 0.0);
      r = B.CreateCall(fn(d ? "tirc_emu_directed_d" : "tirc_emu_directed_f", t, {i32, i32, t, t, t}),
                       {B.getInt32(op), B.getInt32(mode), a, b, z});
    } else if (n.rfind("llvm.nvvm.fma.", 0) == 0) {  // libdevice's math, inlined
      r = B.CreateIntrinsic(llvm::Intrinsic::fma, {c->getType()},
                            {c->getArgOperand(0), c->getArgOperand(1), c->getArgOperand(2)});
    } else if (n.rfind("llvm.nvvm.ex2.approx.", 0) == 0) {
      r = B.CreateIntrinsic(llvm::Intrinsic::exp2, {c->getType()}, {c->getArgOperand(0)});
    } else if (n.rfind("llvm.nvvm.add.rn.", 0) == 0) {  // round-to-nearest arithmetic of libdevice
      r = B.CreateFAdd(c->getArgOperand(0), c->getArgOperand(1));
    } else if (n.rfind("llvm.nvvm.mul.rn.", 0) == 0) {
      r = B.CreateFMul(c->getArgOperand(0), c->getArgOperand(1));
    } else if (n.rfind("llvm.nvvm.div.rn.", 0) == 0) {
      r = B.CreateFDiv(c->getArgOperand(0), c->getArgOperand(1));
    } else if (n.rfind("llvm.nvvm.rcp.rn.", 0) == 0 || n.rfind("llvm.nvvm.rcp.approx.", 0) == 0) {
      // (approx: libdevice refines it with Newton steps; the exact reciprocal is a fixpoint)
      r = B.CreateFDiv(llvm::ConstantFP::get(c->getType(), 1.0), c->getArgOperand(0));
    } else if (n.rfind("llvm.nvvm.sqrt.rn.", 0) == 0) {
      r = B.CreateIntrinsic(llvm::Intrinsic::sqrt, {c->getType()}, {c->getArgOperand(0)});
    } else if (n.rfind("llvm.nvvm.trunc.", 0) == 0 || n.rfind("llvm.nvvm.floor.", 0) == 0 ||
               n.rfind("llvm.nvvm.ceil.", 0) == 0) {
      auto id = n[10] == 't'   ? llvm::Intrinsic::trunc
                : n[10] == 'f' ? llvm::Intrinsic::floor
                               : llvm::Intrinsic::ceil;
      r = B.CreateIntrinsic(id, {c->getType()}, {c->getArgOperand(0)});
    } else if (n.rfind("llvm.nvvm.round.", 0) == 0) {  // cvt.rni: nearest, ties to even
      r = B.CreateIntrinsic(llvm::Intrinsic::roundeven, {c->getType()}, {c->getArgOperand(0)});
    } else if (n.rfind("llvm.nvvm.fabs", 0) == 0) {
      r = B.CreateIntrinsic(llvm::Intrinsic::fabs, {c->getType()}, {c->getArgOperand(0)});
    } else if (n == "llvm.nvvm.d2i.hi" || n == "llvm.nvvm.d2i.lo") {  // halves of a double's bits
      llvm::Value* bits = B.CreateBitCast(c->getArgOperand(0), B.getInt64Ty());
      if (n.back() == 'i') bits = B.CreateLShr(bits, 32);
      r = B.CreateTrunc(bits, i32);
    } else if (n == "llvm.nvvm.lohi.i2d") {
      llvm::Value* lo = B.CreateZExt(c->getArgOperand(0), B.getInt64Ty());
      llvm::Value* hi = B.CreateShl(B.CreateZExt(c->getArgOperand(1), B.getInt64Ty()), 32);
      r = B.CreateBitCast(B.CreateOr(hi, lo), B.getDoubleTy());
    } else if (n.rfind("llvm.nvvm.saturate.", 0) == 0) {
      llvm::Value* x = c->getArgOperand(0);
      llvm::Value* zero = llvm::ConstantFP::get(x->getType(), 0.0);
      llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
      r = B.CreateSelect(B.CreateFCmpOGT(x, one), one, B.CreateSelect(B.CreateFCmpOLT(x, zero), zero, x));
    } else {
      return "unsupported intrinsic " + n;
    }
    if (r) c->replaceAllUsesWith(r);
    c->eraseFromParent();
  }
  std::vector<llvm::GlobalVariable*> gs;
  for (auto& g : m.globals())
    if (g.getAddressSpace() != 0) gs.push_back(&g);
  for (auto* g : gs) {
    auto* ng =
        new llvm::GlobalVariable(m, g->getValueType(), false, llvm::GlobalValue::InternalLinkage,
                                 llvm::Constant::getNullValue(g->getValueType()), g->getName() + ".host");
    ng->setAlignment(llvm::Align(16));
    std::vector<llvm::User*> users(g->user_begin(), g->user_end());
    for (auto* u : users) {
      auto* ce = llvm::dyn_cast<llvm::ConstantExpr>(u);
      if (!ce || ce->getOpcode() != llvm::Instruction::AddrSpaceCast)
        return "global " + g->getName().str() + " used other than through an addrspacecast";
      ce->replaceAllUsesWith(ng);
    }
    g->removeDeadConstantUsers();
    if (!g->use_empty()) return "global " + g->getName().str() + " still used";
    g->eraseFromParent();
  }
  m.setModuleInlineAsm("");  // PTX comments (tirc.workspace lines), not host assembly
  m.setTargetTriple(llvm::sys::getProcessTriple());
  return "";
}

// Adds `void __emu_packed_K(void** args)` calling kernel K: args[i] is the pointer itself
// for a pointer parameter, else a pointer to the scalar value (tirc's packed convention).
inline std::string add_packed_entry(llvm::Module& m, const std::string& name) {
  llvm::Function* k = m.getFunction(name);
  if (!k) return "no kernel " + name;
  auto& C = m.getContext();
  llvm::IRBuilder<> B(C);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(B.getVoidTy(), {B.getPtrTy()}, false),
                                   llvm::GlobalValue::ExternalLinkage, "__emu_packed_" + name, m);
  B.SetInsertPoint(llvm::BasicBlock::Create(C, "entry", f));
  std::vector<llvm::Value*> args;
  for (unsigned i = 0; i < k->getFunctionType()->getNumParams(); ++i) {
    llvm::Value* p = B.CreateLoad(B.getPtrTy(), B.CreateConstInBoundsGEP1_64(B.getPtrTy(), f->getArg(0), i));
    llvm::Type* t = k->getFunctionType()->getParamType(i);
    args.push_back(t->isPointerTy() ? p : B.CreateLoad(t, p));
  }
  B.CreateCall(k, args);
  B.CreateRetVoid();
  return "";
}

// Runs kernel `name` of the NVPTX LLVM IR text `ir` with grid / block sizes and arguments
// in the kernel's parameter order: a buffer's data pointer, or a pointer to a scalar's
// value (in the kernel's parameter type: i32, float, ...).
// Returns "" or the first error (retargeting, JIT, or an undefined-behaviour check).
struct Stats {
  long shuffles = 0, barriers = 0;  // executed by all threads together
};

// Runs kernels `names` of `ir` one after another (one launch each, same sizes), in one JIT
// session: module variables (function-level buffers in global memory) persist between them,
// as between the launches of a multi-kernel function on a device.
// `blocks` (optional): one block size per kernel (a multi-kernel function launches each
// kernel with the sizes of its own bound loops), else `block` for all.
inline std::string run_kernels(const std::string& ir, const std::vector<std::string>& names,
                               const int grid[3], const int block_all[3], const std::vector<void*>& args,
                               Stats* stats = nullptr, const std::vector<std::array<int, 3>>* blocks = nullptr) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto ctx = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  auto mod = llvm::parseIR(llvm::MemoryBufferRef(ir, "kernel.ll"), diag, *ctx);
  if (!mod) return "cannot parse the kernel IR: " + diag.getMessage().str();
  if (std::string e = retarget(*mod); !e.empty()) return e;
  for (auto& name : names)
    if (std::string e = add_packed_entry(*mod, name); !e.empty()) return e;
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) return llvm_err(jit.takeError());
  mod->setDataLayout((*jit)->getDataLayout());
  llvm::orc::SymbolMap syms;
  auto add = [&](const char* n, void* p) {
    syms[(*jit)->mangleAndIntern(n)] = {llvm::orc::ExecutorAddr::fromPtr(p), llvm::JITSymbolFlags::Exported};
  };
  add("tirc_emu_tid", reinterpret_cast<void*>(&tirc_emu_tid));
  add("tirc_emu_ctaid", reinterpret_cast<void*>(&tirc_emu_ctaid));
  add("tirc_emu_barrier", reinterpret_cast<void*>(&tirc_emu_barrier));
  add("tirc_emu_shfl", reinterpret_cast<void*>(&tirc_emu_shfl));
  add("tirc_emu_shfl_pred", reinterpret_cast<void*>(&tirc_emu_shfl_pred));
  add("__nv_expf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::expf)));
  add("__nv_sqrtf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::sqrtf)));
  add("__nv_rsqrtf", reinterpret_cast<void*>(&tirc_emu_rsqrtf));
  add("tirc_emu_directed_f", reinterpret_cast<void*>(&tirc_emu_directed_f));
  add("tirc_emu_directed_d", reinterpret_cast<void*>(&tirc_emu_directed_d));
  if (auto e = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))))
    return llvm_err(std::move(e));
  if (auto e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))))
    return llvm_err(std::move(e));
  using Packed = void (*)(void**);
  long shuffles = 0, barriers = 0;
  for (size_t ki = 0; ki < names.size(); ++ki) {
    const std::string& name = names[ki];
    const int* block = blocks && ki < blocks->size() ? (*blocks)[ki].data() : block_all;
    auto sym = (*jit)->lookup("__emu_packed_" + name);
    if (!sym) return llvm_err(sym.takeError());
    void* fp = sym->toPtr<void*>();
    State st;
    for (int a = 0; a < 3; ++a) st.block[a] = block[a];
    st.nthreads = block[0] * block[1] * block[2];
    st.warps = std::vector<Sync>((st.nthreads + 31) / 32);
    g_state = &st;
    for (int bz = 0; bz < grid[2] && !st.failed; ++bz)
      for (int by = 0; by < grid[1] && !st.failed; ++by)
        for (int bx = 0; bx < grid[0] && !st.failed; ++bx) {
          std::vector<std::thread> ts;
          for (int t = 0; t < st.nthreads; ++t)
            ts.emplace_back([&, t] {
              t_ctaid[0] = bx, t_ctaid[1] = by, t_ctaid[2] = bz;
              t_tid[0] = t % block[0];
              t_tid[1] = t / block[0] % block[1];
              t_tid[2] = t / (block[0] * block[1]);
              std::vector<void*> a = args;
              if (g_serialize) g_run_mu.lock();
              reinterpret_cast<Packed>(fp)(a.data());
              if (g_serialize) g_run_mu.unlock();
            });
          for (auto& th : ts) th.join();
        }
    g_state = nullptr;
    shuffles += st.shuffles;
    barriers += st.barriers;
    if (!st.error.empty()) return name + ": " + st.error;
  }
  if (stats) {
    stats->shuffles = shuffles;
    stats->barriers = barriers;
  }
  return "";
}

inline std::string run_kernel(const std::string& ir, const std::string& name, const int grid[3],
                              const int block[3], const std::vector<void*>& args, Stats* stats = nullptr) {
  return run_kernels(ir, {name}, grid, block, args, stats);
}

}  // namespace tirc::testing::gpu_emu

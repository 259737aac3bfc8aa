// IR -> LLVM IR translation (model: TVM's CodeGenLLVM / CodeGenCPU, Halide's CodeGen_LLVM).
//
// Value representation in registers: bool -> i1, integers -> iN (wraparound arithmetic,
// no nsw/nuw except in buffer index arithmetic, see index64), f16/bf16/f32 -> float
// (f16/bf16 rounded to the dtype after every operation, as the interpreter does),
// f64 -> double. In memory: bool -> i8, f16/bf16 -> i16 bits.
//
// Defined results where C/LLVM have UB: integer x // 0, x % 0, truncdiv/truncmod by 0 give 0;
// INT_MIN // -1 wraps to INT_MIN; float -> int casts saturate (NaN -> 0) as the interpreter.
#include "codegen/llvm_codegen.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cross_thread_reduce.h"
#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"

namespace tirc {

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

using llvm::BasicBlock;
using llvm::IRBuilder;
using llvm::Type;
using llvm::Value;

namespace {

void init_llvm_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Variables and buffers referenced below a statement (for closures of parallel loops).
class RefCollector : public IRVisitor {
 public:
  std::vector<const VarNode*> vars;
  std::vector<const BufferNode*> bufs;
  std::unordered_set<const void*> seen;

 protected:
  void buf(const Buffer& b) {
    if (seen.insert(b.get()).second) bufs.push_back(b.get());
    for (auto& s : b->shape) visit(s);
  }
  void visit_var(const VarNode* n) override {
    if (seen.insert(n).second) vars.push_back(n);
  }
  void visit_load(const LoadNode* n) override {
    buf(n->buffer);
    IRVisitor::visit_load(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    buf(n->buffer);
    IRVisitor::visit_buffer_ptr(n);
  }
  void visit_store(const StoreNode* n) override {
    buf(n->buffer);
    IRVisitor::visit_store(n);
  }
  void visit_block(const BlockNode* n) override {
    for (auto& a : n->allocs)
      for (auto& s : a->shape) visit(s);
    IRVisitor::visit_block(n);
  }
};

// Calls f on every For node below s.
void for_each_stmt_for(const Stmt& s, const std::function<void(const ForNode*)>& f) {
  struct V : IRVisitor {
    const std::function<void(const ForNode*)>* f;
    void visit_for(const ForNode* n) override {
      (*f)(n);
      IRVisitor::visit_for(n);
    }
  } v;
  v.f = &f;
  v.visit(s);
}

// Calls f for every if statement below s.
void for_each_stmt_if(const Stmt& s, const std::function<void()>& f) {
  struct V : IRVisitor {
    const std::function<void()>* f;
    void visit(const Stmt& x) override {
      if (x.defined() && x.kind() == StmtKind::IfThenElse) (*f)();
      IRVisitor::visit(x);
    }
  } v;
  v.f = &f;
  v.visit(s);
}

// Calls f on every block below s.
void for_each_stmt_block(const Stmt& s, const std::function<void(const BlockNode*)>& f) {
  struct V : IRVisitor {
    const std::function<void(const BlockNode*)>* f;
    void visit_block_realize(const BlockRealizeNode* n) override {
      (*f)(n->block.get());
      IRVisitor::visit_block_realize(n);
    }
  } v;
  v.f = &f;
  v.visit(s);
}

// What a statement of a kernel does, for the thread-block barriers (gpu_sync): the buffers
// it reads and writes, whether several threads run it (it holds a threadIdx-bound loop) and
// whether it holds a barrier already.
struct GpuAccess {
  std::unordered_set<const BufferNode*> reads, writes;
  bool multi = false;
  bool sync = false;
  bool inside = false;  // inside a threadIdx loop
  // Per buffer, the one index tuple of all its accesses (none when they differ).
  std::unordered_map<const BufferNode*, std::optional<std::vector<Expr>>> index;
  // Buffers written under a loop bound again to an axis of an enclosing threadIdx loop (a
  // cooperative copy): each thread writes only its share, so even an element read at the
  // same index tuple may have been written by another thread.
  std::unordered_set<const BufferNode*> coop_writes;
};

// `inside`: s runs inside a threadIdx loop. Buffers allocated in s by one thread (inside a
// threadIdx loop, not "shared") are private and never shared with another thread.
GpuAccess gpu_access(const Stmt& s, bool inside, const std::map<std::string, int>* enclosing = nullptr) {
  struct V : IRVisitor {
    GpuAccess a;
    int tid = 0;
    std::map<std::string, int> tags;  // threadIdx loops around the visited node, per axis
    int coop = 0;                     // depth of loops bound again to an enclosing axis
    std::unordered_set<const BufferNode*> priv;
    void at(const BufferNode* b, const std::vector<Expr>* idx) {
      auto [it, fresh] = a.index.try_emplace(b);
      if (fresh && idx) {
        it->second = *idx;
      } else if (it->second) {
        bool same = idx && idx->size() == it->second->size();
        for (size_t i = 0; same && i < idx->size(); ++i) same = expr_identical((*idx)[i], (*it->second)[i]);
        if (!same) it->second.reset();
      }
    }
    void visit_load(const LoadNode* n) override {
      a.reads.insert(n->buffer.get());
      at(n->buffer.get(), &n->indices);
      IRVisitor::visit_load(n);
    }
    void visit_buffer_ptr(const BufferPtrNode* n) override {
      a.reads.insert(n->buffer.get());
      a.writes.insert(n->buffer.get());
      at(n->buffer.get(), nullptr);
      IRVisitor::visit_buffer_ptr(n);
    }
    void visit_store(const StoreNode* n) override {
      a.writes.insert(n->buffer.get());
      if (coop > 0) a.coop_writes.insert(n->buffer.get());
      at(n->buffer.get(), &n->indices);
      IRVisitor::visit_store(n);
    }
    void visit_for(const ForNode* n) override {
      bool t = n->for_kind == ForKind::ThreadBinding && n->thread_tag.rfind("threadIdx", 0) == 0;
      bool again = t && tags[n->thread_tag] > 0;
      a.multi = a.multi || t;
      tid += t;
      coop += again;
      if (t) ++tags[n->thread_tag];
      IRVisitor::visit_for(n);
      if (t) --tags[n->thread_tag];
      coop -= again;
      tid -= t;
    }
    void visit_block(const BlockNode* n) override {
      for (auto& b : n->allocs)
        if (tid > 0 && b->scope != "shared") priv.insert(b.get());
      IRVisitor::visit_block(n);
    }
    void visit_evaluate(const EvaluateNode* n) override {
      if (n->extern_name == "__syncthreads") a.sync = true;
      IRVisitor::visit_evaluate(n);
    }
  } v;
  v.tid = inside ? 1 : 0;
  if (enclosing) v.tags = *enclosing;
  v.visit(s);
  for (auto* b : v.priv) {
    v.a.reads.erase(b);
    v.a.writes.erase(b);
  }
  if (inside) v.a.multi = v.a.inside = true;
  return v.a;
}

// True when s holds a loop bound to one of `axes` (threadIdx.x/y/z) whose body accesses `buf`
// (any access when buf is null).
bool bound_access(const Stmt& s, const std::set<std::string>& axes, const BufferNode* buf) {
  struct V : IRVisitor {
    const std::set<std::string>* axes;
    const BufferNode* buf;
    int in = 0;
    bool hit = false;
    void visit_for(const ForNode* n) override {
      bool b = n->for_kind == ForKind::ThreadBinding && axes->count(n->thread_tag);
      if (b && !buf) hit = true;
      in += b;
      IRVisitor::visit_for(n);
      in -= b;
    }
    void visit_load(const LoadNode* n) override {
      hit = hit || (in > 0 && n->buffer.get() == buf);
      IRVisitor::visit_load(n);
    }
    void visit_store(const StoreNode* n) override {
      hit = hit || (in > 0 && n->buffer.get() == buf);
      IRVisitor::visit_store(n);
    }
    void visit_buffer_ptr(const BufferPtrNode* n) override {
      hit = hit || (in > 0 && n->buffer.get() == buf);
      IRVisitor::visit_buffer_ptr(n);
    }
  } v;
  v.axes = &axes;
  v.buf = buf;
  v.visit(s);
  return v.hit;
}

bool uses_var_in(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  struct V : IRVisitor {
    const std::unordered_set<const VarNode*>* vars;
    bool hit = false;
    void visit_var(const VarNode* n) override { hit = hit || vars->count(n) > 0; }
  } v;
  v.vars = &vars;
  v.visit(e);
  return v.hit;
}

// True when `later` must wait for `earlier` at a barrier: one writes what the other touches
// and different threads may run them (a statement without threadIdx loops runs on thread 0).
// Inside the threadIdx loops, two writes of one element by different threads write the same
// value (independent iterations, or a tile recomputed by every thread): only reads and writes
// meet.
// There, a buffer accessed at one same index tuple by both (`R[i, t] = R[i, t] + ...` in the
// iterations of a lane loop t) is an element each thread reads only after writing it itself.
bool gpu_conflict(const GpuAccess& earlier, const GpuAccess& later) {
  if (!earlier.multi && !later.multi) return false;
  bool in = earlier.inside && later.inside;
  auto meet = [&](const std::unordered_set<const BufferNode*>& a,
                  const std::unordered_set<const BufferNode*>& b) {
    for (auto* x : a) {
      if (!b.count(x)) continue;
      if (in && !earlier.coop_writes.count(x) && !later.coop_writes.count(x)) {
        auto i = earlier.index.find(x), j = later.index.find(x);
        if (i != earlier.index.end() && j != later.index.end() && i->second && j->second &&
            i->second->size() == j->second->size()) {
          bool same = true;
          for (size_t k = 0; same && k < i->second->size(); ++k)
            same = expr_identical((*i->second)[k], (*j->second)[k]);
          if (same) continue;
        }
      }
      return true;
    }
    return false;
  };
  return (!in && meet(earlier.writes, later.writes)) || meet(earlier.writes, later.reads) ||
         meet(earlier.reads, later.writes);
}

// Thread blocks of one kernel cannot wait for each other. Code of a kernel outside its
// blockIdx-bound loops (a serial loop around bound nests, a sequence of nests inside it) runs
// in every block: a device-memory buffer written there by some blocks and then read or
// written by others (a later nest reading another block's elements, or the next iteration of
// the loop) would race, as TVM would launch one kernel per nest from a host loop. Refused
// unless every access of the buffer in both parts is at one same index tuple free of the
// enclosing non-bound loops (each element stays with one thread).
class CrossBlockCheck {
 public:
  explicit CrossBlockCheck(std::string fname) : fname_(std::move(fname)) {}
  void run(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        if (n->for_kind == ForKind::ThreadBinding && n->thread_tag.rfind("blockIdx", 0) == 0) return;
        if (has_block_loop(n->body)) {
          GpuAccess a = access(n->body);
          above_.insert(n->loop_var.get());
          if (std::string x = conflict(a, a); !x.empty())
            refuse(x, "the next iteration of loop " + n->loop_var.name());
          run(n->body);
          above_.erase(n->loop_var.get());
        }
        return;
      }
      case StmtKind::Seq: {
        auto* q = s.as<SeqNode>();
        std::vector<GpuAccess> acc;
        for (auto& x : q->stmts) acc.push_back(access(x));
        for (size_t i = 0; i < acc.size(); ++i)
          for (size_t j = i + 1; j < acc.size(); ++j) {
            bool bi = has_block_loop(q->stmts[i]), bj = has_block_loop(q->stmts[j]);
            if (!bi && !bj) continue;
            // A statement outside every blockIdx loop that stores to device memory runs in
            // block 0 only (emit_on_block0): the other blocks cannot see what it writes, even
            // at the same index (`S[0] = sum(X)` then a bound nest reading S[0] read it
            // unwritten).
            bool block0 = (!bi && !acc[i].writes.empty()) || (!bj && !acc[j].writes.empty());
            if (std::string x = conflict(acc[i], acc[j], block0); !x.empty()) refuse(x, "a later statement");
          }
        for (auto& x : q->stmts) run(x);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        run(n->then_case);
        if (n->else_case.defined()) run(n->else_case);
        return;
      }
      case StmtKind::LetStmt: run(s.as<LetStmtNode>()->body); return;
      case StmtKind::BlockRealize: run(s.as<BlockRealizeNode>()->block->body); return;
      default: return;
    }
  }

 private:
  std::string fname_;
  std::unordered_set<const VarNode*> above_;

  static bool has_block_loop(const Stmt& s) {
    bool b = false;
    for_each_stmt_for(s, [&](const ForNode* l) {
      b = b || (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("blockIdx", 0) == 0);
    });
    return b;
  }
  // Accesses of device memory: buffers allocated inside s are per block / thread.
  static GpuAccess access(const Stmt& s) {
    GpuAccess a = gpu_access(s, false);
    struct V : IRVisitor {
      std::unordered_set<const BufferNode*> own;
      void visit_block(const BlockNode* n) override {
        for (auto& b : n->allocs) own.insert(b.get());
        IRVisitor::visit_block(n);
      }
    } v;
    v.visit(s);
    for (auto* b : v.own) {
      a.reads.erase(b);
      a.writes.erase(b);
    }
    return a;
  }
  // A buffer that a writes and b uses (or a uses and b writes), except at identical indices
  // that do not depend on the loops above (each block then uses what it wrote itself), unless
  // one side runs in block 0 only.
  std::string conflict(const GpuAccess& a, const GpuAccess& b, bool block0 = false) const {
    auto same_thread = [&](const BufferNode* x) {
      if (block0) return false;
      auto i = a.index.find(x), j = b.index.find(x);
      if (i == a.index.end() || j == b.index.end() || !i->second || !j->second ||
          i->second->size() != j->second->size())
        return false;
      for (size_t k = 0; k < i->second->size(); ++k)
        if (!expr_identical((*i->second)[k], (*j->second)[k]) || uses_var_in((*i->second)[k], above_))
          return false;
      return true;
    };
    for (auto* x : a.writes)
      if ((b.reads.count(x) || b.writes.count(x)) && !same_thread(x)) return x->name;
    for (auto* x : a.reads)
      if (b.writes.count(x) && !same_thread(x)) return x->name;
    return "";
  }
  [[noreturn]] void refuse(const std::string& buf, const std::string& where) const {
    throw Error("nvptx: in function " + fname_ + ", buffer " + buf +
                " is written by some thread blocks and used by others in " + where +
                " of the same kernel (code outside the blockIdx-bound loops): thread blocks cannot wait for "
                "each other; make each blockIdx-bound nest a top-level statement (one kernel each)");
  }
};

// The function-level buffers of the lowered f whose size is not a constant, in declaration
// order: on NVPTX, kernel parameters after the outputs (nvptx_workspaces).
std::vector<Buffer> symbolic_root_buffers(const FunctionNode& f) {
  std::vector<Buffer> out;
  auto* root = f.body.as<BlockRealizeNode>();
  if (!root) return out;
  for (auto& b : root->block->allocs) {
    int64_t cn = 0;
    bool symbolic = false;
    for (auto& d : b->shape) symbolic = symbolic || !is_const_int(d, &cn);
    if (symbolic) out.push_back(b);
  }
  return out;
}

// Why a "shared" / "local" buffer of symbolic size is refused.
std::string symbolic_scope_message(const BufferNode& b) {
  return "nvptx: buffer " + b.name + " (scope \"" + b.scope +
         "\") has a non-constant size: shared and local memory need a constant size (CUDA would need "
         "dynamic shared memory); give it a constant size or scope \"global\" at function level";
}

class FuncEmitter {
 public:
  FuncEmitter(llvm::Module& m, const CodegenOptions& opts, llvm::TargetMachine& tm)
      : C(m.getContext()),
        M(m),
        B(m.getContext()),
        opts_(opts),
        tm_(tm),
        gpu_(tm.getTargetTriple().isNVPTX()) {
    if (opts.fast_math) {
      llvm::FastMathFlags fmf;
      fmf.setFast();
      B.setFastMathFlags(fmf);
    }
  }

  void emit_function(const FunctionNode& lowered);
  void emit_gpu_function(const FunctionNode& f, llvm::FunctionType* fty);
  // One kernel named `name` running `body` (a part of f's root block body).
  // NVPTX: returns at once in the blocks and threads a launch has beyond the kernel's own sizes.
  void return_if_stray_launch();
  void emit_kernel(const FunctionNode& f, llvm::FunctionType* fty, const std::string& name, const Stmt& body,
                   bool need_binding);
  // The function (or kernel) `name` with f's parameters, running `body`.
  void emit_body(const FunctionNode& f, llvm::FunctionType* fty, const std::string& name, const Stmt& body);

 private:
  // ---- types ----
  // Vector-aware types: in a vectorized loop body (lanes_ > 0) every value is <lanes x T>.
  Type* V(Type* t) { return lanes_ ? static_cast<Type*>(llvm::FixedVectorType::get(t, lanes_)) : t; }
  Value* K32(uint32_t v) { return llvm::ConstantInt::get(V(B.getInt32Ty()), v); }
  Type* reg_type(DType t) { return V(sreg_type(t)); }
  Type* mem_type(DType t) { return V(smem_type(t)); }
  Type* sreg_type(DType t) {
    switch (t) {
      case DType::Bool: return B.getInt1Ty();
      case DType::I8:
      case DType::U8: return B.getInt8Ty();
      case DType::I16:
      case DType::U16: return B.getInt16Ty();
      case DType::I32:
      case DType::U32: return B.getInt32Ty();
      case DType::I64: return B.getInt64Ty();
      case DType::F16:
      case DType::BF16:
      case DType::F32: return B.getFloatTy();
      case DType::F64: return B.getDoubleTy();
      case DType::Handle: return B.getPtrTy();
    }
    return B.getInt32Ty();
  }
  Type* smem_type(DType t) {
    switch (t) {
      case DType::Bool: return B.getInt8Ty();
      case DType::F16:
      case DType::BF16: return B.getInt16Ty();
      default: return sreg_type(t);
    }
  }
  // Type of a scalar parameter in the C ABI.
  Type* abi_type(DType t) {
    if (t == DType::Bool) return B.getInt8Ty();
    return sreg_type(t);
  }

  // ---- conversions between register and memory forms ----
  Value* round_to(DType t, Value* v) {
    if (t == DType::F16) return B.CreateFPExt(B.CreateFPTrunc(v, V(B.getHalfTy())), V(B.getFloatTy()));
    if (t == DType::BF16) {
      // Same rounding as float_to_bf16 (runtime/ndarray.cpp): NaN keeps its payload, quieted.
      Value* x = B.CreateBitCast(v, V(B.getInt32Ty()));
      Value* isnan = B.CreateFCmpUNO(v, v);
      Value* lsb = B.CreateAnd(B.CreateLShr(x, 16), 1);
      Value* r = B.CreateAnd(B.CreateAdd(x, B.CreateAdd(lsb, K32(0x7fff))), K32(0xffff0000u));
      Value* qn = B.CreateAnd(B.CreateOr(x, K32(0x400000)), K32(0xffff0000u));
      return B.CreateBitCast(B.CreateSelect(isnan, qn, r), V(B.getFloatTy()));
    }
    return v;
  }
  Value* from_mem(DType t, Value* v) {
    switch (t) {
      case DType::Bool: return B.CreateICmpNE(v, llvm::ConstantInt::get(V(B.getInt8Ty()), 0));
      case DType::F16: return B.CreateFPExt(B.CreateBitCast(v, V(B.getHalfTy())), V(B.getFloatTy()));
      case DType::BF16:
        return B.CreateBitCast(B.CreateShl(B.CreateZExt(v, V(B.getInt32Ty())), 16), V(B.getFloatTy()));
      default: return v;
    }
  }
  Value* to_mem(DType t, Value* v) {
    switch (t) {
      case DType::Bool: return B.CreateZExt(v, V(B.getInt8Ty()));
      case DType::F16: return B.CreateBitCast(B.CreateFPTrunc(v, V(B.getHalfTy())), V(B.getInt16Ty()));
      case DType::BF16:  // already rounded: the low half is zero
        return B.CreateTrunc(B.CreateLShr(B.CreateBitCast(v, V(B.getInt32Ty())), 16), V(B.getInt16Ty()));
      default: return v;
    }
  }

  Value* cast(Value* v, DType from, DType to) {
    if (from == to) return v;
    if (to == DType::Bool) {
      if (is_float(from)) return B.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
      return B.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    Type* rt = reg_type(to);
    if (is_float(to)) {
      Value* r;
      if (is_float(from)) {
        if (from == DType::F64 && to != DType::F64) {
          // Single rounding double -> f16/bf16 would need round-to-odd; go through float as
          // the interpreter's double_to_float_odd does for exactness.
          r = B.CreateFPTrunc(v, V(B.getFloatTy()));
          if (to != DType::F32) r = fptrunc_odd(v, r);
        } else {
          r = B.CreateFPCast(v, rt);
        }
      } else if (from == DType::Bool || is_unsigned_int(from)) {
        // Zero-extended to twice the width and converted as signed (the same value, one
        // rounding): LLVM 19's SLP vectorizer narrows `uitofp (sext i8 x to i16)` to
        // `uitofp i8 x`, dropping the sign extension (`f32(u16(A[i]))` of an i8 -13 gave 243,
        // not 65523; tests/codegen/struct_fuzz_regress_test.cpp).
        unsigned bits = v->getType()->getScalarSizeInBits();
        Value* wide = B.CreateZExt(v, v->getType()->getWithNewBitWidth(bits <= 16 ? 32 : 64));
        r = B.CreateSIToFP(wide, rt);
      } else {
        r = B.CreateSIToFP(v, rt);
      }
      return round_to(to, r);
    }
    // integer target
    if (is_float(from)) {
      llvm::Intrinsic::ID id =
          is_unsigned_int(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
      auto* f = llvm::Intrinsic::getDeclaration(&M, id, {rt, v->getType()});
      return B.CreateCall(f, {v});
    }
    bool src_signed = is_signed_int(from);
    return B.CreateIntCast(v, rt, src_signed);
  }
  // Round-to-odd of double d into float given f = fptrunc(d) (nearest): used before a second
  // rounding to f16/bf16 so that the two roundings equal one (Boldo-Melquiond).
  Value* fptrunc_odd(Value* d, Value* f) {
    Value* back = B.CreateFPExt(f, V(B.getDoubleTy()));
    Value* inexact = B.CreateFCmpONE(back, d);
    Value* bits = B.CreateBitCast(f, V(B.getInt32Ty()));
    Value* even = B.CreateICmpEQ(B.CreateAnd(bits, 1), K32(0));
    Value* fin = B.CreateFCmpONE(B.CreateCall(decl(llvm::Intrinsic::fabs, V(B.getFloatTy())), {f}),
                                 llvm::ConstantFP::getInfinity(V(B.getFloatTy())));
    // Move one ulp toward d: +1 on the magnitude when |d| > |f|, else -1.
    Value* away = B.CreateFCmpOGT(B.CreateCall(decl(llvm::Intrinsic::fabs, V(B.getDoubleTy())), {d}),
                                  B.CreateCall(decl(llvm::Intrinsic::fabs, V(B.getDoubleTy())), {back}));
    Value* nb = B.CreateSelect(away, B.CreateAdd(bits, K32(1)), B.CreateSub(bits, K32(1)));
    Value* cond = B.CreateAnd(B.CreateAnd(inexact, even), fin);
    return B.CreateSelect(cond, B.CreateBitCast(nb, V(B.getFloatTy())), f);
  }

  llvm::Function* decl(llvm::Intrinsic::ID id, Type* t) {
    return llvm::Intrinsic::getDeclaration(&M, id, {t});
  }
  // A libm call; in a vectorized body, one scalar call per lane.
  Value* libm_call(const std::string& name, const std::vector<Value*>& args) {
    Type* t = args[0]->getType();
    if (!t->isVectorTy()) return B.CreateCall(libm(name, t, static_cast<int>(args.size())), args);
    Type* et = t->getScalarType();
    auto callee = libm(name, et, static_cast<int>(args.size()));
    Value* r = llvm::PoisonValue::get(t);
    for (unsigned i = 0; i < lanes_; ++i) {
      std::vector<Value*> sa;
      for (auto* a : args) sa.push_back(B.CreateExtractElement(a, B.getInt64(i)));
      r = B.CreateInsertElement(r, B.CreateCall(callee, sa), B.getInt64(i));
    }
    return r;
  }
  llvm::FunctionCallee libm(const std::string& name, Type* t, int nargs) {
    // On NVPTX the libm of the device is libdevice (__nv_expf, ...), linked after codegen.
    std::string n = (gpu_ ? "__nv_" : "") + (t->isFloatTy() ? name + "f" : name);
    std::vector<Type*> args(nargs, t);
    auto callee = M.getOrInsertFunction(n, llvm::FunctionType::get(t, args, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      fn->setDoesNotThrow();
      fn->setDoesNotAccessMemory();  // libm may set errno; compiled code never reads it
    }
    return callee;
  }

  // ---- expressions ----
  Value* expr(const Expr& e);
  Value* binary(const BinaryNode* n);
  Value* int_div(BinOp op, DType t, Value* a, Value* b, const Expr& be);
  Value* float_floor_divmod(BinOp op, DType t, Value* a, Value* b);
  Value* call(const CallNode* n);
  // __bounds_check(idx, extent, site): idx, after a branch to error_exit() (recording site,
  // the index and the extent in the function's error state) when it is outside [0, extent).
  Value* bounds_check(const CallNode* n);
  // The function's bounds-check error state: { i64 site + 1 (0: none), i64 index, i64 extent }.
  llvm::GlobalVariable* error_state();
  // Leaves the function being emitted after an error: frees its live heap buffers, releases
  // the atomic lock when held, and returns 1 (the function) or void (an outlined loop body).
  void error_exit();
  // After a parallel loop: leaves the function when one of its iterations failed a check.
  void propagate_error();
  Value* float_min_max(bool is_min, Value* a, Value* b) {
    Value* c = is_min ? B.CreateFCmpOLE(a, b) : B.CreateFCmpOGE(a, b);
    c = B.CreateOr(c, B.CreateFCmpUNO(a, a));
    return B.CreateSelect(c, a, b);
  }
  // Index arithmetic in i64 with nsw: only used for buffer indices, where overflow would
  // be an out-of-bounds access anyway. Lets LLVM see affine addresses.
  Value* index64(const Expr& e);
  Value* buffer_ptr(const Buffer& b) {
    auto it = bufs_.find(b.get());
    if (it == bufs_.end()) throw Error("codegen: buffer " + b->name + " is not allocated here");
    return it->second;
  }
  // The address of element `idx` (i64) of b as the base of a vector access (a contiguous or
  // strided span). Under a mask the lane giving the base (lane 0, or a chunk's lowest lane) may
  // be off and its element outside the buffer (`A[i - 1]` under `where i >= 1`): an `inbounds`
  // GEP is then poison, and a masked load / store through it undefined even for the lanes
  // that are on (LangRef: getelementptr inbounds, llvm.masked.load). LLVM's loop vectorizer
  // drops inbounds on predicated accesses for the same reason.
  Value* span_ptr(Type* et, const Buffer& b, Value* idx) {
    return mask_ ? B.CreateGEP(et, buffer_ptr(b), idx) : B.CreateInBoundsGEP(et, buffer_ptr(b), idx);
  }
  Value* element_ptr(const Buffer& b, const std::vector<Expr>& idx) {
    if (idx.size() != 1) throw Error("codegen: buffer " + b->name + " is not flattened");
    return B.CreateInBoundsGEP(smem_type(b->dtype), buffer_ptr(b), index64(idx[0]));
  }

  // ---- vectorized loops ----
  bool depends(const Expr& e) const;
  bool uniform(const Expr& e) const;
  std::optional<int64_t> linear_coeff(const Expr& e) const;
  // Loads, if_then_else or bounds checks in e (work that masked-off lanes must not do).
  bool has_masked_work(const Expr& e) const;
  // linear_coeff of a load/store index; nullopt under a mask when the index has a check.
  std::optional<int64_t> masked_coeff(const Expr& idx) const;
  // Whether n is emitted as vector code here (*lanes: its width). *to_llvm is set when n is
  // left to LLVM's loop vectorizer without a forced width instead (plain strided loads).
  bool vectorizable(const ForNode* n, int64_t* lanes, bool* to_llvm) const;
  void emit_vectorized(const ForNode* n, Value* minv, Value* ext, bool wide, unsigned lanes);
  // The lane counts, in order, of the vector chunks a vectorizable loop of `lanes` lanes with
  // this body runs as (emit_vectorized): {lanes} unless that is not a power of two or wider
  // than one vector register of the body's widest element.
  std::vector<unsigned> vector_chunks(const Stmt& body, unsigned lanes) const;
  // A serial innermost loop that stores at a constant stride 2..8 (`X[2 * i + c] += ...`, the
  // phases of a strided pool's or convolution's data gradient) and whose lanes are
  // independent: *lanes is one vector register of its widest element. LLVM 19 makes such
  // stores scatters, or fully unrolls the loop and vectorizes the loop around it into
  // gathers / scatters (avg_pool2d_grad, bench/README.md "Codegen r19").
  bool strided_store_loop(const ForNode* n, unsigned* lanes) const;
  // n (strided_store_loop) as vector code of `lanes` lanes: a loop over whole chunks, then
  // one chunk under the mask `lane < rest` when the extent is not a multiple of lanes.
  void emit_strided_store_loop(const ForNode* n, Value* minv, Value* ext, unsigned lanes);
  // The mask of a strided span of `span` elements holding lanes first .. first + k - 1 of
  // stride c (chunk of vload / vstore): element pick[l] is on when lane first + l is on.
  Value* span_mask(unsigned first, unsigned k, int64_t c, unsigned span, unsigned ebits, Value** wide_mask);
  // The loop as a counted scalar loop (the var from min, `wide`: an i64 count), its loop
  // metadata asking LLVM to vectorize without a forced width when llvm_width.
  void emit_scalar_for(const ForNode* n, Value* minv, Value* ext, bool wide, bool llvm_width);
  // s (a vectorized body, vvar_ set) reads some buffer at a constant stride >= 2 and holds
  // no if, if_then_else or bounds check: LLVM's loop vectorizer does better than vload.
  bool plain_strided(const Stmt& s) const;
  // i1: every lane of a vectorized loop of `lanes` lanes holds cond, tested on lanes 0 and
  // lanes - 1 in scalar code; nullptr when cond is not a conjunction of such comparisons.
  Value* all_lanes_hold(const Expr& cond, unsigned lanes);
  // Evaluates e in scalar mode (lane 0 of the vector loop var).
  Value* scalar_expr(const Expr& e);
  Value* scalar_index(const Expr& idx);
  Value* lane_ramp(Type* scalar_ty) {
    std::vector<llvm::Constant*> c;
    for (unsigned i = 0; i < lanes_; ++i) c.push_back(llvm::ConstantInt::get(scalar_ty, i));
    return llvm::ConstantVector::get(c);
  }
  Value* vload(const LoadNode* n);
  Value* concat_vectors(llvm::ArrayRef<Value*> parts);
  // The lane coefficient of a vector access index (masked_coeff); a top-level bounds check
  // around an affine index is evaluated and *idx replaced by the unchecked index.
  std::optional<int64_t> checked_coeff(Expr* idx);
  void vstore(const StoreNode* n);
  Value* vindex(const Expr& idx, std::optional<int64_t> coeff);
  Value* all_lanes() { return llvm::ConstantInt::getTrue(V(B.getInt1Ty())); }

  // ---- statements ----
  void stmt(const Stmt& s);
  void emit_for(const ForNode* n);
  // ext: the iteration count in i64.
  void emit_parallel_for(const ForNode* n, Value* minv, Value* ext);
  // ext: the extent in the var's dtype, or in i64 when `wide` (emit_for).
  void emit_thread_loop(const ForNode* n, Value* minv, Value* ext, bool wide);
  // Kernels with several threads per block (gpu_sync): code outside every threadIdx loop is
  // run by all threads of a block. Stores there are made by thread 0 alone, and barriers
  // (bar.sync) separate the parts of a sequence (and the iterations of a loop) where one
  // writes what another, run by other threads, reads or writes (TVM's ThreadSync).
  // gpu_sync_ok: every thread of the block reaches this point together (no threadIdx loop
  // around it that some threads skip, no condition that depends on the thread).
  bool gpu_sync_ok() const { return gpu_ && has_tid_ && !tid0_ && !lanes_ && nonuniform_ == 0; }
  GpuAccess access(const Stmt& s);
  bool thread_dependent(const Expr& e) const { return !tdep_.empty() && uses_var_in(e, tdep_); }
  void emit_on_thread0(const Stmt& s, const std::set<std::string>& axes);
  void emit_gpu_seq(const SeqNode* n);
  void loop_body(const ForNode* n);
  void barrier() { B.CreateCall(llvm::Intrinsic::getDeclaration(&M, llvm::Intrinsic::nvvm_barrier0)); }
  void emit_store(const StoreNode* n);
  void emit_block(const BlockRealizeNode* n);
  // ---- cross-thread reductions (NVPTX; scope blocks of lower_cross_thread_reductions) ----
  void emit_allreduce(const BlockRealizeNode* n);
  // The combination by `op` of v over the threads of the threadIdx `axes` that share the
  // other thread indices; returned in every thread.
  Value* cross_thread(Value* v, BinOp op, DType t, const std::set<std::string>& axes,
                      const std::string& what);
  Value* combine(BinOp op, DType t, Value* a, Value* b);
  enum class Shfl { Down, Bfly, Idx };
  // shfl.sync of v (any register type; 64-bit values as two halves); *pred (when given)
  // receives the "source lane in range" predicate of the .p form.
  Value* shfl(Shfl kind, Value* mask, Value* v, Value* b, Value* c, Value** pred = nullptr);
  // A .shared array of n elements of t for this kernel (generic pointer).
  Value* smem_array(const std::string& name, DType t, int64_t n);
  Value* tid_reg(const std::string& axis);
  void emit_evaluate(const EvaluateNode* n);
  void loop_metadata(llvm::BranchInst* br, const ForNode* n, bool llvm_width);
  // Allocates `buffers`; returns the heap pointers to free at the end of the scope.
  // `body`: the statement the buffers are allocated for (to see which threads use them).
  std::vector<Value*> allocate(const std::vector<Buffer>& buffers, const Stmt& body = Stmt());
  // A .shared array for buffer b (numel elements): one slice per thread of the enclosing
  // threadIdx loops, or one for the whole thread block at its level.
  void shared_global(const Buffer& b, int64_t numel);
  // Refuses a kernel no CUDA device can launch: more than 1024 threads per block (1024 / 1024 /
  // 64 per axis), or more than 48 KiB of static shared memory (ptxas rejects it; TVM's
  // VerifyGPUCode checks the same limits). Extents that are not constants are left to the host.
  void check_launch_limits(const FunctionNode& f, llvm::Function* fn, bool known_threads);
  void free_all(const std::vector<Value*>& ps) {
    for (auto* p : ps) B.CreateCall(rt_free(), {p});
    live_heap_.resize(live_heap_.size() - ps.size());
  }
  llvm::FunctionCallee rt_fn(const char* name, Type* ret, std::vector<Type*> args) {
    auto c = M.getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(c.getCallee())) fn->setDoesNotThrow();
    return c;
  }
  llvm::FunctionCallee rt_alloc() { return rt_fn("tirc_alloc", B.getPtrTy(), {B.getInt64Ty()}); }
  llvm::FunctionCallee rt_free() { return rt_fn("tirc_free", B.getVoidTy(), {B.getPtrTy()}); }

  llvm::Function* new_function(const std::string& name, llvm::FunctionType* fty,
                               llvm::GlobalValue::LinkageTypes l) {
    auto* f = llvm::Function::Create(fty, l, name, M);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("target-cpu", tm_.getTargetCPU());
    f->addFnAttr("target-features", tm_.getTargetFeatureString());
    if (opts_.fast_math) f->addFnAttr("unsafe-fp-math", "true");
    return f;
  }
  Value* entry_alloca(Type* t, Value* count, uint64_t align) {
    IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    auto* a = eb.CreateAlloca(t, count);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  llvm::LLVMContext& C;
  llvm::Module& M;
  IRBuilder<> B;
  const CodegenOptions& opts_;
  llvm::TargetMachine& tm_;
  bool gpu_ = false;  // NVPTX kernel: thread-bound loops read the thread/block index registers
  int thread_depth_ = 0;
  // The function-level buffers of a kernel: module variables in global device memory.
  std::unordered_map<const BufferNode*, llvm::GlobalVariable*> device_bufs_;
  // The function-level buffers of symbolic size (nvptx_workspaces): kernel parameters after
  // the outputs, allocated by the host.
  std::vector<Buffer> workspaces_;
  int tid_depth_ = 0;     // enclosing threadIdx-bound loops
  bool has_tid_ = false;  // the kernel has a threadIdx-bound loop (more than 1 thread per block)
  bool tid0_ = false;     // emitting code that only thread 0 of the block runs
  int nonuniform_ = 0;    // enclosing constructs that some threads of a block skip
  std::unordered_set<const VarNode*> tdep_;        // vars whose value depends on the thread
  std::unordered_set<const BufferNode*> private_;  // buffers private to one thread (allocas)
  std::unordered_set<const BufferNode*> shared_;   // buffers in .shared memory
  std::map<std::string, int64_t> tid_extent_;      // launch size per threadIdx axis (-1: unknown)
  std::map<std::string, int> active_;              // enclosing threadIdx loops per axis
  // The threadIdx axes of the kernel with no enclosing loop here: their threads all run
  // the code being emitted.
  // blockIdx axes of the kernel, the enclosing loops bound to each, whether only block 0 runs
  // the code being emitted, and the buffers in device memory (params, outputs, module
  // variables, workspaces).
  std::set<std::string> block_axes_;
  std::map<std::string, int> bactive_;
  bool block0_ = false;
  std::unordered_set<const BufferNode*> device_;
  void emit_on_block0(const Stmt& s, const std::set<std::string>& axes);
  void emit_on_first(const Stmt& s, const std::set<std::string>& axes,
                     const std::map<std::string, llvm::Intrinsic::ID>& ids, const char* label, bool* flag);
  std::set<std::string> missing_axes() {
    std::set<std::string> out;
    for (auto& [tag, e] : tid_extent_)
      if (active_[tag] == 0) out.insert(tag);
    return out;
  }
  llvm::Function* fn_ = nullptr;
  std::string base_name_;
  int outlined_ = 0;
  int par_depth_ = 0;
  int atomic_depth_ = 0;
  bool lock_held_ = false;         // between tirc_atomic_lock and tirc_atomic_unlock
  int checks_ = 0;                 // bounds checks emitted so far
  std::vector<Value*> live_heap_;  // tirc_alloc'ed buffers of fn_ whose scope is open
  // Vectorized loop being emitted: lanes_ lanes, loop var vvar_ whose lane-0 value is vmin_;
  // mask_ (a <lanes x i1>, or null = all lanes) guards loads and stores under ifs.
  unsigned lanes_ = 0;
  const VarNode* vvar_ = nullptr;
  Value* vmin_ = nullptr;
  Value* mask_ = nullptr;
  std::unordered_map<const VarNode*, Value*> vars_;
  std::unordered_map<const BufferNode*, Value*> bufs_;
};

// ---------------------------------------------------------------- expressions

Value* FuncEmitter::expr(const Expr& e) {
  if (lanes_) {
    if (uniform(e)) return B.CreateVectorSplat(lanes_, scalar_expr(e));
    if (auto* v = e.as<VarNode>(); v && v == vvar_)
      return B.CreateAdd(B.CreateVectorSplat(lanes_, vmin_), lane_ramp(vmin_->getType()));
    if (auto* ld = e.as<LoadNode>()) return vload(ld);
    if (e.kind() == ExprKind::IfThenElse) {
      auto* n = as_select_like(e);
      Value* c = expr(n->cond);
      Value* saved = mask_;
      mask_ = saved ? B.CreateAnd(saved, c) : c;
      Value* a = expr(n->t);
      mask_ = saved ? B.CreateAnd(saved, B.CreateNot(c)) : B.CreateNot(c);
      Value* b = expr(n->f);
      mask_ = saved;
      return B.CreateSelect(c, a, b);
    }
  }
  switch (e.kind()) {
    case ExprKind::IntImm: {
      auto* n = e.as<IntImmNode>();
      return llvm::ConstantInt::get(reg_type(n->dtype), static_cast<uint64_t>(n->value),
                                    is_signed_int(n->dtype));
    }
    case ExprKind::FloatImm: {
      auto* n = e.as<FloatImmNode>();
      return llvm::ConstantFP::get(reg_type(n->dtype), n->value);
    }
    case ExprKind::Var: {
      auto* n = static_cast<const VarNode*>(e.get());
      auto it = vars_.find(n);
      if (it == vars_.end()) throw Error("codegen: unbound variable " + n->name);
      return it->second;
    }
    case ExprKind::Load: {
      auto* n = e.as<LoadNode>();
      Value* p = element_ptr(n->buffer, n->indices);
      return from_mem(n->buffer->dtype, B.CreateLoad(mem_type(n->buffer->dtype), p));
    }
    case ExprKind::Binary: return binary(e.as<BinaryNode>());
    case ExprKind::Unary: {
      auto* n = e.as<UnaryNode>();
      Value* a = expr(n->a);
      if (n->op == UnOp::Not) return B.CreateNot(a);
      if (is_float(n->dtype)) return B.CreateFNeg(a);
      return B.CreateNeg(a);
    }
    case ExprKind::Cast: {
      auto* n = e.as<CastNode>();
      return cast(expr(n->value), n->value.dtype(), n->dtype);
    }
    case ExprKind::Call: return call(e.as<CallNode>());
    case ExprKind::Select: {
      auto* n = as_select_like(e);
      Value* c = expr(n->cond);
      Value* a = expr(n->t);
      Value* b = expr(n->f);
      return B.CreateSelect(c, a, b);
    }
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      Value* c = expr(n->cond);
      auto* tb = BasicBlock::Create(C, "ite.t", fn_);
      auto* fb = BasicBlock::Create(C, "ite.f", fn_);
      auto* jb = BasicBlock::Create(C, "ite.end", fn_);
      B.CreateCondBr(c, tb, fb);
      B.SetInsertPoint(tb);
      Value* a = expr(n->t);
      auto* tend = B.GetInsertBlock();
      B.CreateBr(jb);
      B.SetInsertPoint(fb);
      Value* b = expr(n->f);
      auto* fend = B.GetInsertBlock();
      B.CreateBr(jb);
      B.SetInsertPoint(jb);
      auto* phi = B.CreatePHI(a->getType(), 2);
      phi->addIncoming(a, tend);
      phi->addIncoming(b, fend);
      return phi;
    }
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      Value* v = expr(n->value);
      auto old = vars_.find(n->var.get());
      Value* saved = old == vars_.end() ? nullptr : old->second;
      vars_[n->var.get()] = v;
      Value* r = expr(n->body);
      if (saved)
        vars_[n->var.get()] = saved;
      else
        vars_.erase(n->var.get());
      return r;
    }
    case ExprKind::BufferPtr: {
      auto* n = e.as<BufferPtrNode>();
      if (n->indices.empty()) return buffer_ptr(n->buffer);
      return element_ptr(n->buffer, n->indices);
    }
  }
  throw Error("codegen: unknown expression");
}

Value* FuncEmitter::index64(const Expr& e) {
  Type* i64 = B.getInt64Ty();
  if (auto* n = e.as<IntImmNode>()) return B.getInt64(n->value);
  if (auto* n = e.as<BinaryNode>(); n && is_int(n->dtype)) {
    switch (n->op) {
      case BinOp::Add: return B.CreateAdd(index64(n->a), index64(n->b), "", false, true);
      case BinOp::Sub: return B.CreateSub(index64(n->a), index64(n->b), "", false, true);
      case BinOp::Mul: return B.CreateMul(index64(n->a), index64(n->b), "", false, true);
      case BinOp::FloorDiv:
      case BinOp::FloorMod:
        if (is_signed_int(n->dtype)) return int_div(n->op, DType::I64, index64(n->a), index64(n->b), n->b);
        break;
      default: break;
    }
  }
  Value* v = expr(e);
  if (v->getType() == i64) return v;
  if (is_unsigned_int(e.dtype()) || e.dtype() == DType::Bool) return B.CreateZExt(v, i64);
  return B.CreateSExt(v, i64);
}

Value* FuncEmitter::int_div(BinOp op, DType t, Value* a, Value* b, const Expr& be) {
  Type* ty = a->getType();
  bool sgn = !is_unsigned_int(t);
  int64_t cv = 0;
  bool const_ok = is_const_int(be, &cv) && cv != 0 && cv != -1;
  Value* zero = llvm::ConstantInt::get(ty, 0);
  Value* one = llvm::ConstantInt::get(ty, 1);
  Value* bad = nullptr;   // b == 0
  Value* neg1 = nullptr;  // b == -1 (signed): sdiv would overflow on INT_MIN
  Value* bs = b;
  if (!const_ok) {
    bad = B.CreateICmpEQ(b, zero);
    Value* guard = bad;
    if (sgn) {
      neg1 = B.CreateICmpEQ(b, llvm::ConstantInt::getSigned(ty, -1));
      guard = B.CreateOr(bad, neg1);
    }
    bs = B.CreateSelect(guard, one, b);
  }
  // op: FloorDiv/FloorMod; Div or Max = truncdiv, Min = truncmod (internal markers).
  bool is_div = op == BinOp::FloorDiv || op == BinOp::Div || op == BinOp::Max;
  bool floor = op == BinOp::FloorDiv || op == BinOp::FloorMod;
  Value* r;
  if (!sgn) {
    r = is_div ? B.CreateUDiv(a, bs) : B.CreateURem(a, bs);
  } else {
    Value* q = B.CreateSDiv(a, bs);
    Value* m = B.CreateSRem(a, bs);
    if (floor) {
      // floor: adjust when the remainder is nonzero and its sign differs from the divisor's.
      Value* adj = B.CreateAnd(B.CreateICmpNE(m, zero), B.CreateICmpSLT(B.CreateXor(m, bs), zero));
      if (is_div)
        q = B.CreateSub(q, B.CreateZExt(adj, ty));
      else
        m = B.CreateSelect(adj, B.CreateAdd(m, bs), m);
    }
    r = is_div ? q : m;
    if (neg1) r = B.CreateSelect(neg1, is_div ? B.CreateNeg(a) : zero, r);
  }
  if (bad) r = B.CreateSelect(bad, zero, r);
  return r;
}

Value* FuncEmitter::float_floor_divmod(BinOp op, DType t, Value* a, Value* b) {
  // NumPy's npy_divmod (interp/scalar.h floordiv_float / floormod_float).
  Type* ty = a->getType();
  Value* zero = llvm::ConstantFP::get(ty, 0.0);
  Value* mod = B.CreateFRem(a, b);
  Value* mod_nz = B.CreateFCmpUNE(mod, zero);
  Value* sign_diff = B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero));
  Value* adj = B.CreateAnd(mod_nz, sign_diff);
  Value* b_zero = B.CreateFCmpOEQ(b, zero);
  auto* copysign = decl(llvm::Intrinsic::copysign, ty);
  Value* r;
  if (op == BinOp::FloorMod) {
    Value* m = B.CreateSelect(adj, B.CreateFAdd(mod, b), mod);
    m = B.CreateSelect(mod_nz, m, B.CreateCall(copysign, {zero, b}));
    r = B.CreateSelect(b_zero, mod, m);
  } else {
    Value* q = B.CreateFDiv(a, b);
    Value* div = B.CreateFDiv(B.CreateFSub(a, mod), b);
    div = B.CreateSelect(adj, B.CreateFSub(div, llvm::ConstantFP::get(ty, 1.0)), div);
    Value* fd = B.CreateCall(decl(llvm::Intrinsic::floor, ty), {div});
    Value* up = B.CreateFCmpOGT(B.CreateFSub(div, fd), llvm::ConstantFP::get(ty, 0.5));
    fd = B.CreateSelect(up, B.CreateFAdd(fd, llvm::ConstantFP::get(ty, 1.0)), fd);
    fd = B.CreateSelect(B.CreateFCmpUNE(div, zero), fd, B.CreateCall(copysign, {zero, q}));
    r = B.CreateSelect(b_zero, q, fd);
  }
  return round_to(t, r);
}

Value* FuncEmitter::binary(const BinaryNode* n) {
  DType t = n->a.dtype();
  if (n->op == BinOp::And || n->op == BinOp::Or) {
    Value* a = expr(n->a);
    Value* b = expr(n->b);
    return n->op == BinOp::And ? B.CreateAnd(a, b) : B.CreateOr(a, b);
  }
  Value* a = expr(n->a);
  Value* b = expr(n->b);
  if (is_float(t)) {
    Value* r = nullptr;
    switch (n->op) {
      case BinOp::Add: r = B.CreateFAdd(a, b); break;
      case BinOp::Sub: r = B.CreateFSub(a, b); break;
      case BinOp::Mul: r = B.CreateFMul(a, b); break;
      case BinOp::Div: r = B.CreateFDiv(a, b); break;
      case BinOp::FloorDiv:
      case BinOp::FloorMod: return float_floor_divmod(n->op, t, a, b);
      case BinOp::Min: return float_min_max(true, a, b);
      case BinOp::Max: return float_min_max(false, a, b);
      case BinOp::EQ: return B.CreateFCmpOEQ(a, b);
      case BinOp::NE: return B.CreateFCmpUNE(a, b);
      case BinOp::LT: return B.CreateFCmpOLT(a, b);
      case BinOp::LE: return B.CreateFCmpOLE(a, b);
      case BinOp::GT: return B.CreateFCmpOGT(a, b);
      case BinOp::GE: return B.CreateFCmpOGE(a, b);
      default: throw Error(std::string("codegen: operator ") + binop_symbol(n->op) + " on floats");
    }
    return round_to(t, r);
  }
  bool sgn = !is_unsigned_int(t) && t != DType::Bool;
  switch (n->op) {
    case BinOp::Add: return B.CreateAdd(a, b);
    case BinOp::Sub: return B.CreateSub(a, b);
    case BinOp::Mul: return B.CreateMul(a, b);
    case BinOp::Div:  // not valid on integers in the language; truncating if it gets here
      return int_div(BinOp::Max, t, a, b, n->b);
    case BinOp::FloorDiv:
    case BinOp::FloorMod: return int_div(n->op, t, a, b, n->b);
    case BinOp::Min: return B.CreateSelect(sgn ? B.CreateICmpSLE(a, b) : B.CreateICmpULE(a, b), a, b);
    case BinOp::Max: return B.CreateSelect(sgn ? B.CreateICmpSGE(a, b) : B.CreateICmpUGE(a, b), a, b);
    case BinOp::EQ: return B.CreateICmpEQ(a, b);
    case BinOp::NE: return B.CreateICmpNE(a, b);
    case BinOp::LT: return sgn ? B.CreateICmpSLT(a, b) : B.CreateICmpULT(a, b);
    case BinOp::LE: return sgn ? B.CreateICmpSLE(a, b) : B.CreateICmpULE(a, b);
    case BinOp::GT: return sgn ? B.CreateICmpSGT(a, b) : B.CreateICmpUGT(a, b);
    case BinOp::GE: return sgn ? B.CreateICmpSGE(a, b) : B.CreateICmpUGE(a, b);
    default: break;
  }
  throw Error(std::string("codegen: operator ") + binop_symbol(n->op) + " on " + std::string(dtype_name(t)));
}

Value* FuncEmitter::call(const CallNode* n) {
  if (n->op == Intrinsic::BoundsCheck) return bounds_check(n);
  DType rt = n->dtype;
  DType at = n->args.empty() ? rt : n->args[0].dtype();
  std::vector<Value*> args;
  for (auto& a : n->args) args.push_back(expr(a));
  auto I = [&](llvm::Intrinsic::ID id) -> Value* { return B.CreateCall(decl(id, args[0]->getType()), args); };
  if (is_int(at) || at == DType::Bool) {
    Value* a = args[0];
    Type* ty = a->getType();
    Value* zero = llvm::ConstantInt::get(ty, 0);
    bool sgn = is_signed_int(at);
    switch (n->op) {
      case Intrinsic::Abs: return sgn ? B.CreateSelect(B.CreateICmpSLT(a, zero), B.CreateNeg(a), a) : a;
      case Intrinsic::Sign:
        if (!sgn) return B.CreateZExt(B.CreateICmpNE(a, zero), ty);
        return B.CreateSub(B.CreateZExt(B.CreateICmpSGT(a, zero), ty),
                           B.CreateZExt(B.CreateICmpSLT(a, zero), ty));
      case Intrinsic::Floor:
      case Intrinsic::Ceil:
      case Intrinsic::Round:
      case Intrinsic::Trunc: return a;
      case Intrinsic::TruncDiv: return int_div(BinOp::Max, at, args[0], args[1], n->args[1]);
      case Intrinsic::TruncMod: return int_div(BinOp::Min, at, args[0], args[1], n->args[1]);
      case Intrinsic::Pow:
        if (is_int(rt)) {
          // Repeated squaring with wraparound; negative exponents give 0 (the interpreter
          // rejects them), like a loop that never runs would give 1: use 0 to be explicit.
          auto* pre = B.GetInsertBlock();
          auto* head = BasicBlock::Create(C, "ipow.head", fn_);
          auto* body = BasicBlock::Create(C, "ipow.body", fn_);
          auto* done = BasicBlock::Create(C, "ipow.done", fn_);
          B.CreateBr(head);
          B.SetInsertPoint(head);
          auto* r = B.CreatePHI(ty, 2);
          auto* base = B.CreatePHI(ty, 2);
          auto* e = B.CreatePHI(ty, 2);
          r->addIncoming(llvm::ConstantInt::get(ty, 1), pre);
          base->addIncoming(args[0], pre);
          e->addIncoming(args[1], pre);
          B.CreateCondBr(sgn ? B.CreateICmpSGT(e, zero) : B.CreateICmpNE(e, zero), body, done);
          B.SetInsertPoint(body);
          Value* odd = B.CreateICmpNE(B.CreateAnd(e, llvm::ConstantInt::get(ty, 1)), zero);
          Value* r2 = B.CreateSelect(odd, B.CreateMul(r, base), r);
          Value* b2 = B.CreateMul(base, base);
          Value* e2 = B.CreateLShr(e, llvm::ConstantInt::get(ty, 1));
          r->addIncoming(r2, B.GetInsertBlock());
          base->addIncoming(b2, B.GetInsertBlock());
          e->addIncoming(e2, B.GetInsertBlock());
          B.CreateBr(head);
          B.SetInsertPoint(done);
          if (!sgn) return r;
          return B.CreateSelect(B.CreateICmpSLT(args[1], zero), zero, r);
        }
        break;
      default: break;
    }
    // Transcendentals on integers: compute in f64 and convert to the result dtype.
    for (size_t i = 0; i < args.size(); ++i) args[i] = cast(args[i], n->args[i].dtype(), DType::F64);
    at = DType::F64;
  }
  Type* ft = args[0]->getType();
  Value* r = nullptr;
  switch (n->op) {
    case Intrinsic::Exp: r = gpu_ ? libm_call("exp", args) : I(llvm::Intrinsic::exp); break;
    case Intrinsic::Log: r = gpu_ ? libm_call("log", args) : I(llvm::Intrinsic::log); break;
    case Intrinsic::Log2: r = gpu_ ? libm_call("log2", args) : I(llvm::Intrinsic::log2); break;
    case Intrinsic::Log10: r = gpu_ ? libm_call("log10", args) : I(llvm::Intrinsic::log10); break;
    case Intrinsic::Log1p: r = libm_call("log1p", args); break;
    case Intrinsic::Expm1: r = libm_call("expm1", args); break;
    case Intrinsic::Sqrt: r = I(llvm::Intrinsic::sqrt); break;
    case Intrinsic::Rsqrt:
      r = B.CreateFDiv(llvm::ConstantFP::get(ft, 1.0), B.CreateCall(decl(llvm::Intrinsic::sqrt, ft), args));
      break;
    case Intrinsic::Sin: r = gpu_ ? libm_call("sin", args) : I(llvm::Intrinsic::sin); break;
    case Intrinsic::Cos: r = gpu_ ? libm_call("cos", args) : I(llvm::Intrinsic::cos); break;
    case Intrinsic::Tan: r = libm_call("tan", args); break;
    case Intrinsic::Tanh: r = libm_call("tanh", args); break;
    case Intrinsic::Erf: r = libm_call("erf", args); break;
    case Intrinsic::Sigmoid: {
      Value* e = gpu_ ? libm_call("exp", {B.CreateFNeg(args[0])})
                      : B.CreateCall(decl(llvm::Intrinsic::exp, ft), {B.CreateFNeg(args[0])});
      r = B.CreateFDiv(llvm::ConstantFP::get(ft, 1.0), B.CreateFAdd(llvm::ConstantFP::get(ft, 1.0), e));
      break;
    }
    case Intrinsic::Abs: r = I(llvm::Intrinsic::fabs); break;
    case Intrinsic::Floor: r = I(llvm::Intrinsic::floor); break;
    case Intrinsic::Ceil: r = I(llvm::Intrinsic::ceil); break;
    case Intrinsic::Round: r = I(llvm::Intrinsic::roundeven); break;
    case Intrinsic::Trunc: r = I(llvm::Intrinsic::trunc); break;
    case Intrinsic::Sign: {
      Value* x = args[0];
      Value* zero = llvm::ConstantFP::get(ft, 0.0);
      r = B.CreateSelect(B.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(ft, 1.0),
                         B.CreateSelect(B.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(ft, -1.0),
                                        B.CreateSelect(B.CreateFCmpOEQ(x, zero), zero, x)));
      break;
    }
    case Intrinsic::Pow: r = gpu_ ? libm_call("pow", args) : I(llvm::Intrinsic::pow); break;
    case Intrinsic::TruncDiv:
      r = B.CreateCall(decl(llvm::Intrinsic::trunc, ft), {B.CreateFDiv(args[0], args[1])});
      break;
    case Intrinsic::TruncMod: r = B.CreateFRem(args[0], args[1]); break;
    case Intrinsic::BoundsCheck: break;  // bounds_check()
  }
  if (!r) throw Error(std::string("codegen: intrinsic ") + intrinsic_name(n->op));
  if (at == DType::F64 && rt != DType::F64) return cast(r, DType::F64, rt);
  return round_to(rt, r);
}

// ---------------------------------------------------------------- statements

void FuncEmitter::stmt(const Stmt& s) {
  if (!s.defined()) return;
  if (lanes_) {
    // Only what vectorizable() admits: stores, sequences and ifs (as masks).
    if (auto* n = s.as<StoreNode>()) return vstore(n);
    if (auto* n = s.as<SeqNode>()) {
      for (auto& x : n->stmts) stmt(x);
      return;
    }
    if (auto* n = s.as<IfThenElseStmtNode>()) {
      Value* c = expr(n->cond);
      Value* saved = mask_;
      mask_ = saved ? B.CreateAnd(saved, c) : c;
      stmt(n->then_case);
      if (n->else_case.defined()) {
        mask_ = saved ? B.CreateAnd(saved, B.CreateNot(c)) : B.CreateNot(c);
        stmt(n->else_case);
      }
      mask_ = saved;
      return;
    }
    throw Error("codegen: internal error, statement not vectorizable");
  }
  if (gpu_ && !block0_ && !lanes_ && !block_axes_.empty()) {
    // Code outside the loops bound to some blockIdx axes runs in every block along them: a
    // statement there with no loop bound to them that stores to device memory runs in their
    // block 0 only (every block would repeat it, racing with the others: a reduction
    // `S[0] += X[k]` beside a bound nest would be reset and re-added by every block).
    std::set<std::string> bmiss;
    for (auto& a : block_axes_)
      if (bactive_[a] == 0) bmiss.insert(a);
    if (!bmiss.empty() && !bound_access(s, bmiss, nullptr)) {
      GpuAccess a = gpu_access(s, false);
      bool dev = false;
      for (auto* b : a.writes) dev = dev || device_.count(b) > 0;
      if (dev) return emit_on_block0(s, bmiss);
    }
  }
  if (gpu_ && has_tid_ && !tid0_ && !lanes_) {
    // All the threads along the kernel's threadIdx axes without an enclosing loop here run
    // this statement. If it has no loop bound to them, only their thread 0 makes its stores
    // (each thread would repeat them: a reduction at this level would add every term once
    // per thread), unless it writes thread-private buffers, which every thread needs.
    auto miss = missing_axes();
    if (!miss.empty() && !bound_access(s, miss, nullptr)) {
      GpuAccess a = gpu_access(s, tid_depth_ > 0);
      bool priv = false, other = false;
      for (auto* b : a.writes) (private_.count(b) ? priv : other) = true;
      if (!a.sync && !priv && other) return emit_on_thread0(s, miss);
    }
    // Sequences get barriers between their parts where the threads exchange data.
    if (auto* q = s.as<SeqNode>(); q && gpu_sync_ok()) return emit_gpu_seq(q);
  }
  switch (s.kind()) {
    case StmtKind::For: emit_for(s.as<ForNode>()); return;
    case StmtKind::BlockRealize: emit_block(s.as<BlockRealizeNode>()); return;
    case StmtKind::Store: emit_store(s.as<StoreNode>()); return;
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      Value* c = expr(n->cond);
      // A condition on the thread: the threads of a block part ways (no barrier inside).
      struct Guard {
        int& n;
        bool on;
        ~Guard() { n -= on; }
      } nu{nonuniform_, gpu_ && thread_dependent(n->cond)};
      nonuniform_ += nu.on;
      auto* tb = BasicBlock::Create(C, "if.then", fn_);
      auto* jb = BasicBlock::Create(C, "if.end", fn_);
      auto* fb = n->else_case.defined() ? BasicBlock::Create(C, "if.else", fn_) : jb;
      B.CreateCondBr(c, tb, fb);
      B.SetInsertPoint(tb);
      stmt(n->then_case);
      B.CreateBr(jb);
      if (n->else_case.defined()) {
        B.SetInsertPoint(fb);
        stmt(n->else_case);
        B.CreateBr(jb);
      }
      B.SetInsertPoint(jb);
      return;
    }
    case StmtKind::LetStmt: {
      auto* n = s.as<LetStmtNode>();
      Value* v = expr(n->value);
      bool dep = gpu_ && thread_dependent(n->value) && tdep_.insert(n->var.get()).second;
      struct Erase {
        std::unordered_set<const VarNode*>& set;
        const VarNode* v;
        bool on;
        ~Erase() {
          if (on) set.erase(v);
        }
      } er{tdep_, n->var.get(), dep};
      auto old = vars_.find(n->var.get());
      Value* saved = old == vars_.end() ? nullptr : old->second;
      vars_[n->var.get()] = v;
      stmt(n->body);
      if (saved)
        vars_[n->var.get()] = saved;
      else
        vars_.erase(n->var.get());
      return;
    }
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) stmt(x);
      return;
    case StmtKind::Evaluate: emit_evaluate(s.as<EvaluateNode>()); return;
  }
}

// An integer division or modulo by a non-constant divisor in s.
static bool has_variable_int_division(const Stmt& s) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) {
    if (auto* b = x.as<BinaryNode>();
        b && is_int(b->a.dtype()) &&
        (b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod || b->op == BinOp::Div) && !is_const_int(b->b))
      found = true;
    if (auto* c = x.as<CallNode>(); c && (c->op == Intrinsic::TruncDiv || c->op == Intrinsic::TruncMod) &&
                                    c->args.size() == 2 && is_int(c->args[0].dtype()) &&
                                    !is_const_int(c->args[1]))
      found = true;
  });
  return found;
}

void FuncEmitter::loop_metadata(llvm::BranchInst* br, const ForNode* n, bool llvm_width) {
  llvm::SmallVector<llvm::Metadata*, 4> mds;
  mds.push_back(nullptr);
  auto flag = [&](const char* name, llvm::Metadata* v) {
    std::vector<llvm::Metadata*> ops{llvm::MDString::get(C, name)};
    if (v) ops.push_back(v);
    mds.push_back(llvm::MDNode::get(C, ops));
  };
  auto i32md = [&](int64_t v) { return llvm::ConstantAsMetadata::get(B.getInt32(static_cast<uint32_t>(v))); };
  mds.push_back(llvm::MDNode::get(C, {llvm::MDString::get(C, "llvm.loop.mustprogress")}));
  int64_t ext = 0;
  bool cext = is_const_int(n->extent, &ext);
  if (has_variable_int_division(n->body)) {
    // LLVM 19's loop vectorizer predicates a loop-invariant division it cannot speculate
    // (`(vi + 7) % n` under an `if` on the loop var) on the mask of lane 0 only: when lane 0
    // is off and another lane on, that lane used a poison quotient (wrong results, SIGSEGV;
    // structured fuzz seed 8718, tests/codegen/struct_fuzz_regress_test.cpp). Such loops are
    // not auto-vectorized.
    flag("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(B.getFalse()));
  } else if (n->for_kind == ForKind::Vectorized) {
    flag("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(B.getTrue()));
    if (cext && ext > 1 && !llvm_width) {
      int64_t w = 1;
      while (w * 2 <= ext && w < 64) w *= 2;
      flag("llvm.loop.vectorize.width", i32md(w));
    }
  } else if (n->for_kind == ForKind::Unrolled) {
    // Full unrolling is what `unroll` asks for, but LLVM honours unroll.full up to a million
    // iterations with a compile time that grows faster than the body: `unroll(16000)` took 11 s
    // and `unroll(100000)` more than two minutes (outsider round 13). Above kMaxFullUnroll
    // iterations the loop is unrolled kLongUnroll times (LLVM's own count, unroll.enable,
    // still copied the body thousands of times: 5 s for 100000).
    constexpr int64_t kMaxFullUnroll = 1024, kLongUnroll = 16;
    if (cext && ext <= kMaxFullUnroll)
      flag("llvm.loop.unroll.full", nullptr);
    else if (cext)
      flag("llvm.loop.unroll.count", i32md(kLongUnroll));
    else
      flag("llvm.loop.unroll.enable", nullptr);
  }
  auto* id = llvm::MDNode::getDistinct(C, mds);
  id->replaceOperandWith(0, id);
  br->setMetadata(llvm::LLVMContext::MD_loop, id);
}

void FuncEmitter::emit_for(const ForNode* n) {
  Value* minv = expr(n->min);
  DType vt = n->loop_var.dtype();
  Value* ext_raw = expr(n->extent);
  // The loop runs `extent` times, the extent read in its own dtype (as the interpreter):
  // an i32/i64 loop compares its var with min + extent in its own type (signed); any other
  // dtype counts iterations in i64 (`wide`), since a u8 extent of 200 is -56 as a signed i8
  // (the loop ran no iteration) and a u32 loop from 2^31 - 5 crosses the signed range.
  bool wide = !((vt == DType::I32 || vt == DType::I64) && n->extent.dtype() == vt);
  Value* ext = wide ? cast(ext_raw, n->extent.dtype(), DType::I64) : ext_raw;
  Type* ty = reg_type(vt);
  if (minv->getType() != ty) minv = cast(minv, n->min.dtype(), vt);
  if (gpu_ && n->for_kind == ForKind::ThreadBinding && n->thread_tag != "vthread") {
    emit_thread_loop(n, minv, ext, wide);
    return;
  }
  if (n->for_kind == ForKind::Parallel && par_depth_ == 0 && !gpu_) {
    emit_parallel_for(n, minv, wide ? ext : B.CreateIntCast(ext, B.getInt64Ty(), true));
    return;
  }
  // A loop whose bounds depend on the thread runs a different number of times per thread.
  bool dep = gpu_ && (thread_dependent(n->min) || thread_dependent(n->extent));
  struct Guard {
    FuncEmitter& e;
    const VarNode* v;
    bool on;
    ~Guard() {
      if (on) {
        --e.nonuniform_;
        e.tdep_.erase(v);
      }
    }
  } nu{*this, n->loop_var.get(), dep};
  if (dep) {
    ++nonuniform_;
    tdep_.insert(n->loop_var.get());
  }
  int64_t cext = 0;
  if (n->for_kind == ForKind::Unrolled && is_const_int(n->extent, &cext) && cext <= 64) {
    // Explicit unrolling: the body once per iteration with a constant offset, so indices of
    // small local buffers become constants (registers after SROA).
    for (int64_t i = 0; i < cext; ++i) {
      vars_[n->loop_var.get()] = B.CreateAdd(minv, llvm::ConstantInt::get(ty, i));
      loop_body(n);
    }
    vars_.erase(n->loop_var.get());
    return;
  }
  int64_t lanes = 0;
  bool llvm_width = false;
  // Inside an atomic block that several threads run, each update must be an atomicrmw:
  // vector stores would race (the loop stays scalar, its stores atomic).
  bool racing = atomic_depth_ > 0 && (par_depth_ > 0 || thread_depth_ > 0);
  if (n->for_kind == ForKind::Vectorized && !gpu_ && !racing && vectorizable(n, &lanes, &llvm_width)) {
    emit_vectorized(n, minv, ext, wide, static_cast<unsigned>(lanes));
    return;
  }
  unsigned slanes = 0;
  if (!racing && !wide && strided_store_loop(n, &slanes)) {
    emit_strided_store_loop(n, minv, ext, slanes);
    return;
  }
  emit_scalar_for(n, minv, ext, wide, llvm_width);
}

void FuncEmitter::emit_scalar_for(const ForNode* n, Value* minv, Value* ext, bool wide, bool llvm_width) {
  // Native: the var itself from min to min + extent. Wide: an i64 count from 0 to extent,
  // the var min + count in its own dtype.
  Type* ty = reg_type(n->loop_var.dtype());
  Type* ity = wide ? B.getInt64Ty() : ty;
  Value* start = wide ? B.getInt64(0) : minv;
  Value* end = wide ? ext : B.CreateAdd(minv, ext);
  auto* pre = B.GetInsertBlock();
  auto* head = BasicBlock::Create(C, "for.head", fn_);
  auto* body = BasicBlock::Create(C, "for.body", fn_);
  auto* exit = BasicBlock::Create(C, "for.end", fn_);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  auto* iv = B.CreatePHI(ity, 2, wide ? n->loop_var.name() + ".count" : n->loop_var.name());
  iv->addIncoming(start, pre);
  B.CreateCondBr(B.CreateICmpSLT(iv, end), body, exit);
  B.SetInsertPoint(body);
  vars_[n->loop_var.get()] = wide ? B.CreateAdd(minv, B.CreateTrunc(iv, ty), n->loop_var.name()) : iv;
  loop_body(n);
  vars_.erase(n->loop_var.get());
  Value* next = B.CreateAdd(iv, llvm::ConstantInt::get(ity, 1), "", false, true);
  iv->addIncoming(next, B.GetInsertBlock());
  auto* br = B.CreateBr(head);
  loop_metadata(br, n, llvm_width);
  B.SetInsertPoint(exit);
}

void FuncEmitter::emit_thread_loop(const ForNode* n, Value* minv, Value* ext, bool wide) {
  // One iteration per thread: the loop var is min + the thread (or block) index, guarded by
  // index < extent so that a launch larger than the extent is harmless.
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z},
      {"blockIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"blockIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
      {"blockIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z}};
  auto it = ids.find(n->thread_tag);
  if (it == ids.end()) throw Error("nvptx: unknown thread axis \"" + n->thread_tag + "\"");
  Type* ty = minv->getType();
  // wide (see emit_for): the index compared with the i64 extent, then truncated to the var's
  // dtype.
  Value* sreg = B.CreateCall(llvm::Intrinsic::getDeclaration(&M, it->second));
  Value* idx = B.CreateIntCast(sreg, wide ? B.getInt64Ty() : ty, false);
  auto* body = BasicBlock::Create(C, "thread.body", fn_);
  auto* exit = BasicBlock::Create(C, "thread.end", fn_);
  B.CreateCondBr(B.CreateICmpSLT(idx, ext), body, exit);
  B.SetInsertPoint(body);
  vars_[n->loop_var.get()] = B.CreateAdd(minv, wide ? B.CreateTrunc(idx, ty) : idx);
  bool tid = n->thread_tag.rfind("threadIdx", 0) == 0;
  bool blk = n->thread_tag.rfind("blockIdx", 0) == 0;
  // A loop bound again to the axis of an enclosing threadIdx loop (a cooperative copy, see
  // bind in docs/schedule.md): each thread runs only its share, and the readers must wait for
  // the other threads' shares at a barrier, which needs every thread of the block here.
  if (tid && active_[n->thread_tag] > 0 && (nonuniform_ > 0 || tid0_ || lanes_))
    throw Error("nvptx: loop " + n->loop_var.name() + " is bound again to " + n->thread_tag +
                " inside a loop bound to it (a cooperative copy), where not every thread of the block "
                "runs: its readers could not wait for it at a barrier (give the enclosing " +
                n->thread_tag + " loop the launch size of the axis and no thread-dependent condition)");
  // A thread block runs one index of each blockIdx axis: a loop bound to an axis inside a
  // loop bound to the same axis would run only the enclosing loop's index (the default GPU
  // schedule's one-thread fallback wrapped a nest whose fused loop was already bound to
  // blockIdx.x in unit loops bound to blockIdx.x / threadIdx.x: half of the nest never ran,
  // schedule JIT fuzz seed 1000).
  if (blk && bactive_[n->thread_tag] > 0)
    throw Error("nvptx: loop " + n->loop_var.name() + " is bound to " + n->thread_tag +
                " inside a loop bound to " + n->thread_tag +
                ": a thread block runs one index of the axis, so only the enclosing loop's index of it would run");
  // Some threads skip the body of a threadIdx loop shorter than the launch size of its axis
  // (the largest extent bound to it): no barrier may be placed inside it.
  int64_t e = 0;
  bool partial = tid && (!is_const_int(n->extent, &e) || e != tid_extent_[n->thread_tag]);
  if (tid) tdep_.insert(n->loop_var.get());
  ++thread_depth_;
  tid_depth_ += tid;
  if (tid) ++active_[n->thread_tag];
  if (blk) ++bactive_[n->thread_tag];
  nonuniform_ += partial;
  stmt(n->body);
  nonuniform_ -= partial;
  if (blk) --bactive_[n->thread_tag];
  if (tid) --active_[n->thread_tag];
  tid_depth_ -= tid;
  --thread_depth_;
  tdep_.erase(n->loop_var.get());
  vars_.erase(n->loop_var.get());
  B.CreateBr(exit);
  B.SetInsertPoint(exit);
}

// Emits s under `if (r_0 | r_1 | ... == 0)` over the special registers of axes (one of ids),
// with *flag set meanwhile.
void FuncEmitter::emit_on_first(const Stmt& s, const std::set<std::string>& axes,
                                const std::map<std::string, llvm::Intrinsic::ID>& ids, const char* label,
                                bool* flag) {
  Value* t = nullptr;
  for (auto& a : axes) {
    Value* v = B.CreateCall(llvm::Intrinsic::getDeclaration(&M, ids.at(a)));
    t = t ? B.CreateOr(t, v) : v;
  }
  auto* body = BasicBlock::Create(C, std::string(label) + ".body", fn_);
  auto* exit = BasicBlock::Create(C, std::string(label) + ".end", fn_);
  B.CreateCondBr(B.CreateICmpEQ(t, B.getInt32(0)), body, exit);
  B.SetInsertPoint(body);
  *flag = true;
  stmt(s);
  *flag = false;
  B.CreateBr(exit);
  B.SetInsertPoint(exit);
}

void FuncEmitter::emit_on_block0(const Stmt& s, const std::set<std::string>& axes) {
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"blockIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"blockIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
      {"blockIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z}};
  emit_on_first(s, axes, ids, "block0", &block0_);
}

void FuncEmitter::emit_on_thread0(const Stmt& s, const std::set<std::string>& axes) {
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z}};
  emit_on_first(s, axes, ids, "thread0", &tid0_);
}

void FuncEmitter::emit_gpu_seq(const SeqNode* n) {
  std::vector<GpuAccess> pending;  // parts since the last barrier
  for (auto& x : n->stmts) {
    GpuAccess a = access(x);
    bool wait = false;
    for (auto& p : pending) wait = wait || gpu_conflict(p, a);
    if (wait) {
      barrier();
      pending.clear();
    }
    stmt(x);
    pending.push_back(std::move(a));
  }
}

void FuncEmitter::loop_body(const ForNode* n) {
  // compact_buffers made every iteration of this loop reuse one "shared" tile: each
  // iteration must end with a barrier, which needs every thread of the block here.
  bool reuse = gpu_ && has_tid_ && n->annotations.count(kSharedReuseAnnotation);
  if (reuse && !gpu_sync_ok())
    throw Error("nvptx: loop " + n->loop_var.name() + " reuses the \"shared\" tile of " +
                n->annotations.at(kSharedReuseAnnotation) +
                " at each iteration, but not every thread of the block runs it (a condition on the thread "
                "index, or a threadIdx loop shorter than the launch size): no barrier can end its "
                "iterations; make the enclosing threadIdx loops span the launch size");
  stmt(n->body);
  if (reuse) {
    barrier();
    return;
  }
  // The next iteration's parts must not overtake this one's (a shared tile overwritten while
  // other threads still read it).
  if (gpu_sync_ok()) {
    GpuAccess a = access(n->body);
    if (gpu_conflict(a, a)) barrier();
  }
}

GpuAccess FuncEmitter::access(const Stmt& s) {
  GpuAccess a = gpu_access(s, tid_depth_ > 0, &active_);
  for (auto* b : private_) {
    a.reads.erase(b);
    a.writes.erase(b);
  }
  if (tid_depth_ > 0) {
    // Inside the threadIdx loops the iterations were checked independent when bound: threads
    // meet only in shared memory, where they may recompute the same tile (a cache copied by
    // every thread that reads it), which must not be overwritten while others still read it.
    auto keep = [&](std::unordered_set<const BufferNode*>& set) {
      for (auto it = set.begin(); it != set.end();) it = shared_.count(*it) ? std::next(it) : set.erase(it);
    };
    keep(a.reads);
    keep(a.writes);
  }
  return a;
}

void FuncEmitter::emit_parallel_for(const ForNode* n, Value* minv, Value* ext) {
  // Outline the body into `void body(i64 begin, i64 end, ptr closure)` and hand it to the
  // runtime's thread pool. The closure holds every variable and buffer pointer the body
  // uses, one 8-byte slot each.
  RefCollector refs;
  refs.visit(n->body);
  std::vector<std::pair<const VarNode*, Value*>> cvars;
  std::vector<std::pair<const BufferNode*, Value*>> cbufs;
  for (auto* v : refs.vars)
    if (auto it = vars_.find(v); it != vars_.end()) cvars.emplace_back(v, it->second);
  for (auto* b : refs.bufs)
    if (auto it = bufs_.find(b); it != bufs_.end()) cbufs.emplace_back(b, it->second);
  size_t nslots = cvars.size() + cbufs.size() + 1;
  Type* i64 = B.getInt64Ty();
  Value* closure = entry_alloca(i64, B.getInt64(nslots), 8);
  auto slot = [&](IRBuilder<>& b, Value* base, size_t i) {
    return b.CreateConstInBoundsGEP1_64(i64, base, i);
  };
  B.CreateStore(minv, slot(B, closure, 0));
  for (size_t i = 0; i < cvars.size(); ++i) B.CreateStore(cvars[i].second, slot(B, closure, 1 + i));
  for (size_t i = 0; i < cbufs.size(); ++i)
    B.CreateStore(cbufs[i].second, slot(B, closure, 1 + cvars.size() + i));

  auto* fty = llvm::FunctionType::get(B.getVoidTy(), {i64, i64, B.getPtrTy()}, false);
  auto* of = new_function(base_name_ + ".parallel." + std::to_string(outlined_++), fty,
                          llvm::GlobalValue::InternalLinkage);
  // Save the emitter state, emit the outlined body, restore.
  auto* saved_fn = fn_;
  auto saved_ip = B.saveIP();
  auto saved_vars = vars_;
  auto saved_bufs = bufs_;
  auto saved_heap = std::move(live_heap_);
  live_heap_.clear();
  int checks_before = checks_;
  fn_ = of;
  auto* entry = BasicBlock::Create(C, "entry", of);
  B.SetInsertPoint(entry);
  Value* cl = of->getArg(2);
  Value* omin = B.CreateLoad(minv->getType(), slot(B, cl, 0));
  std::vector<Value*> loaded = {of->getArg(0), of->getArg(1), omin};
  for (size_t i = 0; i < cvars.size(); ++i)
    loaded.push_back(B.CreateLoad(cvars[i].second->getType(), slot(B, cl, 1 + i)));
  for (size_t i = 0; i < cbufs.size(); ++i) {
    auto* ld = B.CreateLoad(B.getPtrTy(), slot(B, cl, 1 + cvars.size() + i));
    ld->setMetadata(llvm::LLVMContext::MD_nonnull, llvm::MDNode::get(C, {}));
    loaded.push_back(ld);
  }
  // The loop goes into `<of>.body`, called with the closure's values as arguments (inlined
  // back by LLVM): the buffer pointers are `noalias` arguments there, as the function's own
  // are, so LLVM keeps its alias facts in the outlined loop (noalias scopes after inlining).
  // Loaded from the closure, every pointer could alias every other: an inner loop needed
  // run-time overlap checks to vectorize, and a reduction into S[i] over A[i, j] kept its
  // store in the loop. Buffers are distinct allocations (params are `noalias` already);
  // not under atomic blocks, whose stores under tirc_atomic_lock must not move across the
  // unlock call (which a noalias pointer would allow).
  std::vector<Type*> ptys;
  for (auto* v : loaded) ptys.push_back(v->getType());
  auto* ity = llvm::FunctionType::get(B.getVoidTy(), ptys, false);
  auto* inner = new_function(of->getName().str() + ".body", ity, llvm::GlobalValue::InternalLinkage);
  inner->addFnAttr(llvm::Attribute::AlwaysInline);
  bool atomic = atomic_depth_ > 0;
  for_each_stmt_block(n->body, [&](const BlockNode* b) { atomic |= b->annotations.count("atomic") > 0; });
  std::set<Value*> seen, dup;
  for (auto& cb : cbufs)
    if (!seen.insert(cb.second).second) dup.insert(cb.second);
  for (size_t i = 0; i < cbufs.size(); ++i)
    if (!atomic && !dup.count(cbufs[i].second))
      inner->getArg(3 + cvars.size() + i)->addAttr(llvm::Attribute::NoAlias);
  B.CreateCall(inner, loaded);
  B.CreateRetVoid();
  auto* outer = of;
  fn_ = of = inner;
  B.SetInsertPoint(BasicBlock::Create(C, "entry", inner));
  omin = inner->getArg(2);
  vars_.clear();
  bufs_.clear();
  for (size_t i = 0; i < cvars.size(); ++i) vars_[cvars[i].first] = inner->getArg(3 + i);
  for (size_t i = 0; i < cbufs.size(); ++i) bufs_[cbufs[i].first] = inner->getArg(3 + cvars.size() + i);
  // Loop over [begin, end) in i64; the loop var is min + i in its own dtype.
  Type* ty = minv->getType();
  auto* pre = B.GetInsertBlock();
  auto* head = BasicBlock::Create(C, "par.head", of);
  auto* body = BasicBlock::Create(C, "par.body", of);
  auto* exit = BasicBlock::Create(C, "par.end", of);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  auto* iv = B.CreatePHI(i64, 2);
  iv->addIncoming(of->getArg(0), pre);
  B.CreateCondBr(B.CreateICmpSLT(iv, of->getArg(1)), body, exit);
  B.SetInsertPoint(body);
  vars_[n->loop_var.get()] = B.CreateAdd(omin, B.CreateTrunc(iv, ty), n->loop_var.name(), false, true);
  ++par_depth_;
  stmt(n->body);
  --par_depth_;
  iv->addIncoming(B.CreateAdd(iv, B.getInt64(1), "", false, true), B.GetInsertBlock());
  B.CreateBr(head);
  B.SetInsertPoint(exit);
  B.CreateRetVoid();
  fn_ = saved_fn;
  vars_ = std::move(saved_vars);
  bufs_ = std::move(saved_bufs);
  live_heap_ = std::move(saved_heap);
  B.restoreIP(saved_ip);
  Value* n64 = ext;
  auto pf = rt_fn("tirc_parallel_for", B.getVoidTy(), {i64, B.getPtrTy(), B.getPtrTy()});
  B.CreateCall(pf, {n64, outer, closure});
  if (checks_ != checks_before) propagate_error();
}

// ---------------------------------------------------------------- bounds checks

llvm::GlobalVariable* FuncEmitter::error_state() {
  std::string name = "__tirc_err." + base_name_;
  if (auto* g = M.getGlobalVariable(name, true)) return g;
  auto* t = llvm::ArrayType::get(B.getInt64Ty(), 3);
  return new llvm::GlobalVariable(M, t, false, llvm::GlobalValue::InternalLinkage,
                                  llvm::ConstantAggregateZero::get(t), name);
}

void FuncEmitter::error_exit() {
  for (auto it = live_heap_.rbegin(); it != live_heap_.rend(); ++it) B.CreateCall(rt_free(), {*it});
  if (lock_held_) B.CreateCall(rt_fn("tirc_atomic_unlock", B.getVoidTy(), {}));
  if (fn_->getReturnType()->isVoidTy())
    B.CreateRetVoid();
  else
    B.CreateRet(B.getInt32(1));
}

void FuncEmitter::propagate_error() {
  auto* st = error_state();
  auto* ld = B.CreateLoad(B.getInt64Ty(), st);
  ld->setAtomic(llvm::AtomicOrdering::Monotonic);
  ld->setAlignment(llvm::Align(8));
  auto* fail = BasicBlock::Create(C, "par.oob", fn_);
  auto* ok = BasicBlock::Create(C, "par.ok", fn_);
  B.CreateCondBr(B.CreateICmpNE(ld, B.getInt64(0)), fail, ok,
                 llvm::MDBuilder(C).createUnlikelyBranchWeights());
  B.SetInsertPoint(fail);
  error_exit();
  B.SetInsertPoint(ok);
}

Value* FuncEmitter::bounds_check(const CallNode* n) {
  Value* idx = expr(n->args.at(0));
  if (gpu_) return idx;
  Value* ext = expr(n->args.at(1));
  int64_t site = 0;
  is_const_int(n->args.at(2), &site);
  Type* i64 = B.getInt64Ty();
  Type* wide = idx->getType()->isVectorTy() ? V(i64) : i64;
  auto widen = [&](Value* v, DType t) {
    return is_unsigned_int(t) ? B.CreateZExt(v, wide) : B.CreateSExt(v, wide);
  };
  Value* i = widen(idx, n->args[0].dtype());
  Value* e = widen(ext, n->args[1].dtype());
  if (!e->getType()->isVectorTy() && wide->isVectorTy()) e = B.CreateVectorSplat(lanes_, e);
  // Unsigned compare: a negative index is a huge one.
  Value* bad = B.CreateICmpUGE(i, e);
  Value* any = bad;
  if (wide->isVectorTy()) {
    if (mask_) bad = B.CreateAnd(bad, mask_);
    any = B.CreateOrReduce(bad);
  }
  auto* fail = BasicBlock::Create(C, "oob", fn_);
  auto* ok = BasicBlock::Create(C, "inb", fn_);
  B.CreateCondBr(any, fail, ok, llvm::MDBuilder(C).createUnlikelyBranchWeights());
  B.SetInsertPoint(fail);
  if (wide->isVectorTy()) {
    // Report the first failing lane.
    auto n_lanes = llvm::cast<llvm::FixedVectorType>(bad->getType())->getNumElements();
    Value* bits = B.CreateBitCast(bad, B.getIntNTy(n_lanes));
    Value* lane = B.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, bits, B.getTrue());
    i = B.CreateExtractElement(i, lane);
    e = B.CreateExtractElement(e, lane);
  }
  // The first failing check (of any thread) records itself.
  auto* st = error_state();
  Type* at = st->getValueType();
  auto* cx = B.CreateAtomicCmpXchg(B.CreateConstInBoundsGEP2_64(at, st, 0, 0), B.getInt64(0),
                                   B.getInt64(site + 1), llvm::MaybeAlign(8), llvm::AtomicOrdering::Monotonic,
                                   llvm::AtomicOrdering::Monotonic);
  auto* rec = BasicBlock::Create(C, "oob.record", fn_);
  auto* out = BasicBlock::Create(C, "oob.exit", fn_);
  B.CreateCondBr(B.CreateExtractValue(cx, 1), rec, out);
  B.SetInsertPoint(rec);
  B.CreateStore(i, B.CreateConstInBoundsGEP2_64(at, st, 0, 1));
  B.CreateStore(e, B.CreateConstInBoundsGEP2_64(at, st, 0, 2));
  B.CreateBr(out);
  B.SetInsertPoint(out);
  error_exit();
  B.SetInsertPoint(ok);
  ++checks_;
  return idx;
}

// ---------------------------------------------------------------- vectorized loops

bool FuncEmitter::depends(const Expr& e) const {
  bool dep = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && v == vvar_) dep = true;
  });
  return dep;
}

bool FuncEmitter::uniform(const Expr& e) const {
  if (depends(e)) return false;
  if (!mask_) return true;
  // Under a mask, loads must not run for masked-off lanes, and a bounds check must not fail
  // for them (the interpreter never evaluates their index): keep them in the vector path.
  return !has_masked_work(e);
}

bool FuncEmitter::has_masked_work(const Expr& e) const {
  bool load = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.kind() == ExprKind::Load || x.kind() == ExprKind::IfThenElse) load = true;
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) load = true;
  });
  return load;
}

std::optional<int64_t> FuncEmitter::masked_coeff(const Expr& idx) const {
  // Affine indices are computed from lane 0 in scalar code, which runs whatever the mask:
  // under a mask an index with a bounds check inside goes the gather/scatter way, where
  // the check sees the mask.
  if (mask_) {
    bool check = false;
    for_each_expr(idx, [&](const Expr& x) {
      if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) check = true;
    });
    if (check) return std::nullopt;
  }
  return linear_coeff(idx);
}

std::optional<int64_t> FuncEmitter::linear_coeff(const Expr& e) const {
  if (!depends(e)) return 0;
  if (auto* v = e.as<VarNode>()) return v == vvar_ ? std::optional<int64_t>(1) : std::optional<int64_t>(0);
  if (auto* n = e.as<BinaryNode>(); n && is_int(n->dtype)) {
    auto a = linear_coeff(n->a), b = linear_coeff(n->b);
    if (!a || !b) return std::nullopt;
    int64_t k;
    switch (n->op) {
      case BinOp::Add: return *a + *b;
      case BinOp::Sub: return *a - *b;
      case BinOp::Mul:
        if (*a == 0 && is_const_int(n->a, &k)) return k * *b;
        if (*b == 0 && is_const_int(n->b, &k)) return k * *a;
        return std::nullopt;
      default: return std::nullopt;
    }
  }
  if (auto* n = e.as<CastNode>(); n && is_int(n->dtype) && is_signed_int(n->value.dtype()) &&
                                  dtype_bits(n->dtype) >= dtype_bits(n->value.dtype()))
    return linear_coeff(n->value);
  return std::nullopt;
}

namespace {
bool holds_check(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) found = true;
  });
  return found;
}
// Inlines let bindings (statement and expression lets) so that every variable in a
// vectorized body is either the loop var or uniform. A let whose variable is unused but
// whose value holds a bounds check (the simplifier keeps such lets so that the check runs,
// as the interpreter evaluates the value) becomes a condition that evaluates the value:
// `if v == v || true { body }`, `select(v == v, body, body)`.
class LetInliner : public IRMutator {
 protected:
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt&) override {
    Expr v = mutate(n->value);
    Stmt body = mutate(substitute(n->body, {{n->var.get(), v}}));
    bool used = false;
    for_each_expr(n->body, [&](const Expr& x) { used = used || x.get() == n->var.Expr::get(); });
    if (used || !holds_check(v)) return body;
    return make_if(make_binary(BinOp::Or, make_binary(BinOp::EQ, v, v), make_bool(true)), body, Stmt());
  }
  Expr mutate_let(const LetNode* n, const Expr&) override {
    Expr v = mutate(n->value);
    Expr body = mutate(substitute(n->body, {{n->var.get(), v}}));
    bool used = false;
    for_each_expr(n->body, [&](const Expr& x) { used = used || x.get() == n->var.Expr::get(); });
    if (used || !holds_check(v)) return body;
    return make_select(make_binary(BinOp::EQ, v, v), body, body);
  }
};

// Whether a let in `body` (a statement or an expression let) has a value that loads a buffer
// the body stores. LetInliner substitutes let values at their uses, so such a load would run
// after a store between the let and its use and read the new value (review r2 of round 19:
// `let t = B[i]; B[i] = A[i]; B[i] = B[i] + t` computed A[i] + A[i]): the vector paths that
// inline lets refuse such bodies (the scalar loop evaluates lets where they are written).
bool lets_read_stored(const Stmt& body) {
  std::unordered_set<const BufferNode*> stored;
  std::vector<Expr> values;
  struct V : IRVisitor {
    std::unordered_set<const BufferNode*>* stored;
    std::vector<Expr>* values;
    void visit_store(const StoreNode* n) override {
      stored->insert(n->buffer.get());
      IRVisitor::visit_store(n);
    }
    void visit_let_stmt(const LetStmtNode* n) override {
      values->push_back(n->value);
      IRVisitor::visit_let_stmt(n);
    }
    void visit_let(const LetNode* n) override {
      values->push_back(n->value);
      IRVisitor::visit_let(n);
    }
  } v;
  v.stored = &stored;
  v.values = &values;
  v.visit(body);
  bool reads = false;
  for (auto& e : values)
    for_each_expr(e, [&](const Expr& x) {
      if (auto* ld = x.as<LoadNode>(); ld && stored.count(ld->buffer.get())) reads = true;
    });
  return reads;
}

// Nodes of `body` once LetInliner has substituted every let (an upper bound, saturating). A
// chain `let tK = t(K-1) * t(K-1)` doubles per link: 2^N uses, and the vector paths walked and
// emitted each (review r2 of round 19: 79 s to compile N = 20); past kMaxInlinedNodes they
// leave the loop scalar (lets evaluated once).
constexpr double kMaxInlinedNodes = 4096;
double inlined_size(const Stmt& body) {
  struct Sizer : IRVisitor {
    std::unordered_map<const VarNode*, double> let_size;
    double total = 0;
    void visit(const Expr& e) override {
      if (!e.defined()) return;
      total += 1;
      IRVisitor::visit(e);
    }
    using IRVisitor::visit;
    void visit_var(const VarNode* v) override {
      if (auto it = let_size.find(v); it != let_size.end()) total += it->second - 1;
    }
    double value_size(const Expr& v) {
      double saved = total;
      total = 0;
      visit(v);
      double r = total;
      total = saved;
      return r;
    }
    void visit_let(const LetNode* n) override {
      let_size[n->var.get()] = value_size(n->value);
      visit(n->body);
    }
    void visit_let_stmt(const LetStmtNode* n) override {
      let_size[n->var.get()] = value_size(n->value);
      visit(n->body);
    }
  } s;
  s.visit(body);
  return s.total;
}

struct VecCheck : IRVisitor {
  bool ok = true;
  std::unordered_map<const BufferNode*, std::vector<Expr>> store_idx;
  std::vector<const LoadNode*> loads;
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::Store:
      case StmtKind::Seq:
      case StmtKind::IfThenElse:
      case StmtKind::LetStmt: break;
      default: ok = false; return;
    }
    IRVisitor::visit(s);
  }
  void visit_store(const StoreNode* n) override {
    if (n->indices.size() != 1)
      ok = false;
    else
      store_idx[n->buffer.get()].push_back(n->indices[0]);
    IRVisitor::visit_store(n);
  }
  void visit_load(const LoadNode* n) override {
    if (n->indices.size() != 1) ok = false;
    loads.push_back(n);
    IRVisitor::visit_load(n);
  }
  void visit_buffer_ptr(const BufferPtrNode*) override { ok = false; }
  void visit_call(const CallNode* n) override {
    if (n->op == Intrinsic::Pow && !is_float(n->dtype)) ok = false;
    IRVisitor::visit_call(n);
  }
};
}  // namespace

bool FuncEmitter::vectorizable(const ForNode* n, int64_t* lanes, bool* to_llvm) const {
  int64_t w;
  if (!is_const_int(n->extent, &w) || w < 2 || w > 64 || lets_read_stored(n->body) ||
      inlined_size(n->body) > kMaxInlinedNodes)
    return false;
  VecCheck c;
  Stmt body = LetInliner().mutate(n->body);
  c.visit(body);
  if (!c.ok) return false;
  bool strided = false;
  // Lanes must write distinct elements, and a buffer that is stored may only be loaded at
  // the very index it is stored to (no value crosses lanes through memory).
  auto* self = const_cast<FuncEmitter*>(this);
  const VarNode* saved = self->vvar_;
  self->vvar_ = n->loop_var.get();
  bool ok = true;
  for (auto& [buf, idxs] : c.store_idx) {
    for (auto& i : idxs) {
      // Distinct lanes need an index linear in the loop var with a nonzero coefficient: a
      // non-linear one (`X[j // 2] = X[j // 2] + A[j]`) can send two lanes to one element,
      // whose read-modify-writes then lose all updates but one (round 19 review).
      auto k = linear_coeff(i);
      if (!depends(i) || !k || *k == 0 || !expr_identical(i, idxs[0])) ok = false;
    }
  }
  for (auto* ld : c.loads) {
    auto it = c.store_idx.find(ld->buffer.get());
    if (it != c.store_idx.end() && !expr_identical(ld->indices[0], it->second[0])) ok = false;
    if (auto k = linear_coeff(ld->indices[0]); k && std::abs(*k) >= 2) strided = true;
  }
  // A body of unconditional strided loads without checks (`B[i] = A[2 * i] + A[2 * i + 1]`) is
  // left to LLVM's loop vectorizer, without a forced width: it loads each interleave group
  // once (3 loads and shuffles of 16 lanes for A[3 * i + 0..2], where the strided loads of
  // vload load each member's span). Measured against the serial loop (bench/README.md, Codegen
  // r17): stride 2, 3, 4 at 1.00x this way, 1.02x / 1.8x / 1.6x with vload's spans. Under a
  // mask or with checks (LLVM would not vectorize: 4-5x slower than vload's masked spans) the
  // loop is emitted here.
  if (ok && strided && plain_strided(body)) {
    // Returned with the loop being emitted: a set of ForNode* keys (before round 18) was
    // right only while every loop it saw outlived the emitter (true, but not checked).
    *to_llvm = true;
    ok = false;
  }
  self->vvar_ = saved;
  if (!ok) return false;
  *lanes = w;
  return true;
}

// Loads (and stores) of a larger constant stride stay gathers / scatters (the span would be
// mostly unused).
constexpr int64_t kMaxLoadStride = 8;

bool FuncEmitter::strided_store_loop(const ForNode* n, unsigned* lanes) const {
  if (n->for_kind != ForKind::Serial || !n->annotations.empty() || gpu_ || lanes_ || atomic_depth_ > 0 ||
      std::getenv("TIRC_CODEGEN_NO_STORE_SPANS"))
    return false;
  DType vt = n->loop_var.dtype();
  if (!((vt == DType::I32 || vt == DType::I64) && n->extent.dtype() == vt && n->min.dtype() == vt))
    return false;
  if (has_variable_int_division(n->body)) return false;
  // Innermost loops only (checked before the let inlining, which copies the body).
  bool inner = true;
  for_each_stmt_for(n->body, [&](const ForNode*) { inner = false; });
  for_each_stmt_block(n->body, [&](const BlockNode*) { inner = false; });
  if (!inner || lets_read_stored(n->body) || inlined_size(n->body) > kMaxInlinedNodes) return false;
  Stmt body = LetInliner().mutate(n->body);
  VecCheck c;
  c.visit(body);
  if (!c.ok) return false;
  // Every iteration runs every load and store of the body (no if, if_then_else or check:
  // nothing is speculated, no lane can fail), and math only (integer division traps).
  bool plain = true;
  unsigned bits = 0;
  for_each_stmt_if(body, [&] { plain = false; });
  for_each_expr(body, [&](const Expr& x) {
    if (x.kind() == ExprKind::IfThenElse || x.kind() == ExprKind::Call) plain = false;
    if (auto* b = x.as<BinaryNode>();
        b && is_int(b->dtype) &&
        (b->op == BinOp::Div || b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod))
      plain = false;
    if (auto* ld = x.as<LoadNode>())
      bits = std::max(bits, static_cast<unsigned>(dtype_bits(ld->buffer->dtype)));
  });
  if (!plain) return false;
  auto* self = const_cast<FuncEmitter*>(this);
  const VarNode* saved = self->vvar_;
  self->vvar_ = n->loop_var.get();
  // Lanes independent: each stored buffer is stored at one index, affine in the loop var with
  // a nonzero coefficient (distinct elements per iteration), and loaded only there.
  bool ok = !c.store_idx.empty(), strided = false;
  for (auto& [buf, idxs] : c.store_idx) {
    if (buf->dtype == DType::Bool) ok = false;
    bits = std::max(bits, static_cast<unsigned>(dtype_bits(buf->dtype)));
    for (auto& i : idxs) {
      auto k = linear_coeff(i);
      if (!k || *k == 0 || !expr_identical(i, idxs[0])) ok = false;
      if (k && std::abs(*k) >= 2 && std::abs(*k) <= kMaxLoadStride) strided = true;
    }
  }
  for (auto* ld : c.loads) {
    auto it = c.store_idx.find(ld->buffer.get());
    if (it != c.store_idx.end() && !expr_identical(ld->indices[0], it->second[0])) ok = false;
  }
  self->vvar_ = saved;
  auto tti = tm_.getTargetTransformInfo(*fn_);
  auto reg_bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue();
  if (!ok || !strided || bits < 8 || reg_bits / bits < 2) return false;
  *lanes = static_cast<unsigned>(reg_bits / bits);
  return true;
}

void FuncEmitter::emit_strided_store_loop(const ForNode* n, Value* minv, Value* ext, unsigned lanes) {
  Stmt body = LetInliner().mutate(n->body);
  Type* ty = minv->getType();
  Value* width = llvm::ConstantInt::get(ty, lanes);
  // Whole chunks: ext / lanes of them (none when ext <= 0, as the scalar loop runs none).
  Value* chunks = B.CreateSDiv(ext, width);
  auto* pre = B.GetInsertBlock();
  auto* head = BasicBlock::Create(C, "svec.head", fn_);
  auto* loop = BasicBlock::Create(C, "svec.body", fn_);
  auto* exit = BasicBlock::Create(C, "svec.end", fn_);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  auto* j = B.CreatePHI(ty, 2, n->loop_var.name() + ".chunk");
  j->addIncoming(llvm::ConstantInt::get(ty, 0), pre);
  B.CreateCondBr(B.CreateICmpSLT(j, chunks), loop, exit);
  B.SetInsertPoint(loop);
  lanes_ = lanes;
  vvar_ = n->loop_var.get();
  vmin_ = B.CreateAdd(minv, B.CreateMul(j, width));
  mask_ = nullptr;
  stmt(body);
  lanes_ = 0;
  j->addIncoming(B.CreateAdd(j, llvm::ConstantInt::get(ty, 1), "", false, true), B.GetInsertBlock());
  auto* br = B.CreateBr(head);
  // Vector code already: LLVM's loop vectorizer has nothing to add.
  llvm::Metadata* mds[] = {nullptr, llvm::MDNode::get(C, {llvm::MDString::get(C, "llvm.loop.mustprogress")}),
                           llvm::MDNode::get(C, {llvm::MDString::get(C, "llvm.loop.vectorize.enable"),
                                                 llvm::ConstantAsMetadata::get(B.getFalse())})};
  auto* id = llvm::MDNode::getDistinct(C, mds);
  id->replaceOperandWith(0, id);
  br->setMetadata(llvm::LLVMContext::MD_loop, id);
  B.SetInsertPoint(exit);
  // The rest (ext - chunks * lanes iterations, when positive) as one chunk under a mask.
  Value* done = B.CreateMul(chunks, width);
  Value* rest = B.CreateSub(ext, done);
  auto* tail = BasicBlock::Create(C, "svec.tail", fn_);
  auto* end = BasicBlock::Create(C, "svec.done", fn_);
  B.CreateCondBr(B.CreateICmpSGT(rest, llvm::ConstantInt::get(ty, 0)), tail, end);
  B.SetInsertPoint(tail);
  lanes_ = lanes;
  vmin_ = B.CreateAdd(minv, done);
  mask_ = B.CreateICmpSLT(lane_ramp(ty), B.CreateVectorSplat(lanes, rest));
  stmt(body);
  lanes_ = 0;
  mask_ = nullptr;
  vvar_ = nullptr;
  vmin_ = nullptr;
  B.CreateBr(end);
  B.SetInsertPoint(end);
}

Value* FuncEmitter::all_lanes_hold(const Expr& cond, unsigned lanes) {
  // A conjunct `x < y` (<=, >, >=) whose sides are + - * of constants, uniform variables and
  // the lane var, in a signed integer dtype of at most 32 bits: each side's run-time value is
  // its mathematical value (affine in the lane: x0 + k * lane) wrapped to the dtype, since
  // + - * wrap as a ring. When the sign-extended values at lanes 0 and lanes - 1 differ by
  // exactly k * (lanes - 1), no lane wrapped (the values in between lie between them), so
  // y - x is affine over the lanes and its sign at both ends is its sign at every lane.
  std::vector<Expr> conj;
  std::function<bool(const Expr&)> split = [&](const Expr& e) {
    if (auto* b = e.as<BinaryNode>(); b && b->op == BinOp::And) return split(b->a) && split(b->b);
    conj.push_back(e);
    return true;
  };
  split(cond);
  auto ring = [&](const Expr& e) {
    bool ok = is_signed_int(e.dtype()) && dtype_bits(e.dtype()) <= 32;
    for_each_expr(e, [&](const Expr& x) {
      if (x.as<IntImmNode>() || x.as<VarNode>()) return;
      auto* b = x.as<BinaryNode>();
      if (!b || (b->op != BinOp::Add && b->op != BinOp::Sub && b->op != BinOp::Mul)) ok = false;
    });
    if (!ok) return false;
    auto k = linear_coeff(e);
    return k && std::abs(*k) < (int64_t(1) << 31);
  };
  for (auto& c : conj) {
    auto* b = c.as<BinaryNode>();
    if (!b || (b->op != BinOp::LT && b->op != BinOp::LE && b->op != BinOp::GT && b->op != BinOp::GE) ||
        !ring(b->a) || !ring(b->b))
      return nullptr;
  }
  unsigned l = lanes_;
  Value* m = mask_;
  lanes_ = 0;
  mask_ = nullptr;
  Type* i64 = B.getInt64Ty();
  Value* last = B.CreateAdd(vmin_, llvm::ConstantInt::get(vmin_->getType(), lanes - 1));
  Value* all = B.getTrue();
  for (auto& c : conj) {
    auto* b = c.as<BinaryNode>();
    Value* holds = B.getTrue();
    for (Value* lane : {vmin_, last}) {
      vars_[vvar_] = lane;
      holds = B.CreateAnd(holds, expr(c));
    }
    for (const Expr& side : {b->a, b->b}) {
      vars_[vvar_] = vmin_;
      Value* x0 = B.CreateSExt(expr(side), i64);
      vars_[vvar_] = last;
      Value* x1 = B.CreateSExt(expr(side), i64);
      Value* span = B.getInt64(*linear_coeff(side) * static_cast<int64_t>(lanes - 1));
      holds = B.CreateAnd(holds, B.CreateICmpEQ(x1, B.CreateAdd(x0, span)));
    }
    all = B.CreateAnd(all, holds);
  }
  vars_.erase(vvar_);
  lanes_ = l;
  mask_ = m;
  return all;
}

bool FuncEmitter::plain_strided(const Stmt& s) const {
  bool strided = false, p = true;
  for_each_expr(s, [&](const Expr& x) {
    if (x.kind() == ExprKind::IfThenElse) p = false;
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) p = false;
    if (auto* ld = x.as<LoadNode>(); ld && ld->indices.size() == 1)
      if (auto k = linear_coeff(ld->indices[0]); k && std::abs(*k) >= 2) strided = true;
  });
  for_each_stmt_if(s, [&] { p = false; });
  return strided && p;
}

Value* FuncEmitter::scalar_expr(const Expr& e) {
  unsigned l = lanes_;
  Value* m = mask_;
  lanes_ = 0;
  mask_ = nullptr;
  Value* r = expr(e);
  lanes_ = l;
  mask_ = m;
  return r;
}

Value* FuncEmitter::scalar_index(const Expr& idx) {
  // Lane 0: the loop var at its first value.
  unsigned l = lanes_;
  Value* m = mask_;
  lanes_ = 0;
  mask_ = nullptr;
  vars_[vvar_] = vmin_;
  Value* r = index64(idx);
  vars_.erase(vvar_);
  lanes_ = l;
  mask_ = m;
  return r;
}

Value* FuncEmitter::vindex(const Expr& idx, std::optional<int64_t> coeff) {
  Type* i64 = B.getInt64Ty();
  if (coeff) {
    Value* base = scalar_index(idx);
    Value* ramp = B.CreateMul(lane_ramp(i64), llvm::ConstantInt::get(V(i64), *coeff));
    return B.CreateAdd(B.CreateVectorSplat(lanes_, base), ramp);
  }
  Value* v = expr(idx);
  return is_unsigned_int(idx.dtype()) ? B.CreateZExt(v, V(i64)) : B.CreateSExt(v, V(i64));
}

// Whether e holds an integer cast: `i64(i32 expr)` is affine in the lane only while the i32
// value does not wrap between lanes, which an inactive lane 0 under a mask may well do (its
// value then gives the base address of the access; review of round 17: a segfault).
static bool has_int_cast(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* c = x.as<CastNode>(); c && is_int(c->dtype)) found = true;
  });
  return found;
}

std::optional<int64_t> FuncEmitter::checked_coeff(Expr* idx) {
  // A checked index `__bounds_check(x, extent, site)` with x affine in the lane and free of
  // checks: the check runs here on every lane (under the mask: vector compare, or-reduced),
  // then x is accessed as an unchecked affine index (contiguous or strided). Before, such an
  // index was a gather / scatter (a split tail's `where` guarding `A[2 * i + 1]`: 40x slower
  // than the serial loop).
  // Under a mask the unchecked index must hold no load either: its lane-0 value is computed
  // in scalar code, which runs whatever the mask (a load guarded by the mask's condition
  // could be out of bounds there).
  auto* c = idx->as<CallNode>();
  if (c && c->op == Intrinsic::BoundsCheck && depends(c->args[0]) && !holds_check(c->args[0]) &&
      !(mask_ && (has_masked_work(c->args[0]) || has_int_cast(c->args[0])))) {
    if (auto k = linear_coeff(c->args[0])) {
      expr(*idx);
      *idx = c->args[0];
      return k;
    }
  }
  return masked_coeff(*idx);
}

// The lanes of `parts` (vectors of one element type) in order, as one vector.
Value* FuncEmitter::concat_vectors(llvm::ArrayRef<Value*> parts) {
  if (parts.empty()) throw Error("codegen: internal error, no vector to concatenate");
  Value* acc = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    auto na = static_cast<unsigned>(llvm::cast<llvm::FixedVectorType>(acc->getType())->getNumElements());
    auto nb = static_cast<unsigned>(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
    // shufflevector needs operands of one length: pad the shorter with poison lanes first.
    Value* a = acc;
    Value* b = parts[i];
    unsigned w = std::max(na, nb);
    auto pad = [&](Value* v, unsigned n) {
      if (n == w) return v;
      llvm::SmallVector<int> m(w, -1);
      for (unsigned j = 0; j < n; ++j) m[j] = static_cast<int>(j);
      return B.CreateShuffleVector(v, m);
    };
    a = pad(a, na);
    b = pad(b, nb);
    llvm::SmallVector<int> m(na + nb);
    for (unsigned j = 0; j < na; ++j) m[j] = static_cast<int>(j);
    for (unsigned j = 0; j < nb; ++j) m[na + j] = static_cast<int>(w + j);
    acc = B.CreateShuffleVector(a, b, m);
  }
  return acc;
}

Value* FuncEmitter::span_mask(unsigned first, unsigned k, int64_t c, unsigned span, unsigned ebits,
                              Value** wide_mask) {
  auto pos = [&](unsigned l) { return static_cast<int>(c > 0 ? l * c : (k - 1 - l) * -c); };
  if (!mask_) {
    llvm::SmallVector<llvm::Constant*> bits(span, B.getFalse());
    for (unsigned l = 0; l < k; ++l) bits[pos(l)] = B.getTrue();
    return llvm::ConstantVector::get(bits);
  }
  // Element pos(l) takes mask lane first + l; the others a false lane. Shuffled as integers
  // of the element's width (a shuffle of i1 lanes is scalarised by the x86 backend: kshift /
  // kor per lane, 30x slower than the serial loop).
  llvm::SmallVector<int> spread(span, static_cast<int>(lanes_));
  for (unsigned l = 0; l < k; ++l) spread[pos(l)] = static_cast<int>(first + l);
  if (!*wide_mask) *wide_mask = B.CreateSExt(mask_, V(B.getIntNTy(ebits)));
  Value* zero = llvm::Constant::getNullValue((*wide_mask)->getType());
  Value* sm = B.CreateShuffleVector(*wide_mask, zero, spread);
  return B.CreateICmpNE(sm, llvm::Constant::getNullValue(sm->getType()));
}

Value* FuncEmitter::vload(const LoadNode* n) {
  DType t = n->buffer->dtype;
  Type* et = smem_type(t);
  Type* vt = V(et);
  auto align = llvm::Align(std::max(1, dtype_bytes(t)));
  Expr idx = n->indices[0];
  auto coeff = checked_coeff(&idx);
  Value* raw;
  if (coeff && *coeff == 1) {
    Value* p = span_ptr(et, n->buffer, scalar_index(idx));
    raw = mask_
              ? static_cast<Value*>(B.CreateMaskedLoad(vt, p, align, mask_, llvm::Constant::getNullValue(vt)))
              : static_cast<Value*>(B.CreateAlignedLoad(vt, p, align));
  } else if (coeff && *coeff == 0 && mask_ && !has_masked_work(idx)) {
    // A lane-invariant load under a mask (`W[i]` under the `where` of a split tail): one
    // element, loaded when some lane is on (its index may be valid only under the mask), and
    // broadcast. Before, a gather of the same address in every lane (2x the serial loop).
    Value* p = span_ptr(et, n->buffer, scalar_index(idx));
    Type* one = llvm::FixedVectorType::get(et, 1);
    Value* any = B.CreateVectorSplat(1, B.CreateOrReduce(mask_));
    Value* x = B.CreateMaskedLoad(one, p, align, any, llvm::Constant::getNullValue(one));
    raw = B.CreateVectorSplat(lanes_, B.CreateExtractElement(x, uint64_t(0)));
  } else if (coeff && *coeff != 0 && std::abs(*coeff) <= kMaxLoadStride && !(mask_ && has_masked_work(idx))) {
    // A constant stride c (`A[2 * i + 1]`, `A[15 - i]`): one contiguous load of the span
    // from the lowest to the highest lane's element ((lanes - 1) * |c| + 1 elements, all inside
    // the buffer since both ends are accessed: no element past them is read) and a shuffle
    // picking every c-th. Under a mask, a masked load of the span whose mask has lane l's bit
    // at lane l's element. LLVM made a gather (6x slower than the serial loop for c = 2).
    // The lanes go in chunks of one vector register (16 f32 lanes with AVX-512), each from
    // its own span: the x86 backend shuffles a span of a few registers well and a span of
    // 190 elements (64 lanes, c = 3) badly.
    int64_t c = *coeff;
    auto tti = tm_.getTargetTransformInfo(*fn_);
    auto reg_bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue();
    auto ebits = std::max<unsigned>(8, static_cast<unsigned>(et->getPrimitiveSizeInBits().getFixedValue()));
    unsigned chunk = std::max(1u, std::min(lanes_, static_cast<unsigned>(reg_bits / ebits)));
    Value* base = scalar_index(idx);
    Value* mask = mask_;
    Value* wide_mask = nullptr;
    llvm::SmallVector<Value*> parts;
    for (unsigned first = 0; first < lanes_; first += chunk) {
      unsigned k = std::min(chunk, lanes_ - first);
      // k * |c| elements, the last |c| - 1 of them (past the highest lane's) masked off:
      // whole registers, no element outside the lanes' range read.
      unsigned used = static_cast<unsigned>((k - 1) * std::abs(c) + 1);
      unsigned span = static_cast<unsigned>(k * std::abs(c));
      // The chunk's lowest element: lane `first` (c > 0) or lane `first + k - 1` (c < 0).
      int64_t off = c > 0 ? static_cast<int64_t>(first) * c : static_cast<int64_t>(first + k - 1) * c;
      Value* p = span_ptr(et, n->buffer, B.CreateAdd(base, B.getInt64(off), "", false, !mask));
      Type* wt = llvm::FixedVectorType::get(et, span);
      llvm::SmallVector<int> pick(k);
      for (unsigned l = 0; l < k; ++l) pick[l] = static_cast<int>(c > 0 ? l * c : (k - 1 - l) * -c);
      Value* wmask;
      if (mask) {
        wmask = span_mask(first, k, c, span, ebits, &wide_mask);
      } else {
        llvm::SmallVector<llvm::Constant*> bits(span);
        for (unsigned e = 0; e < span; ++e) bits[e] = B.getInt1(e < used);
        wmask = llvm::ConstantVector::get(bits);
      }
      Value* wide = B.CreateMaskedLoad(wt, p, align, wmask, llvm::Constant::getNullValue(wt));
      parts.push_back(B.CreateShuffleVector(wide, pick));
    }
    raw = concat_vectors(parts);
  } else {
    Value* ptrs = B.CreateInBoundsGEP(et, buffer_ptr(n->buffer), vindex(idx, coeff));
    Value* m = mask_ ? mask_ : all_lanes();
    if (llvm::isPowerOf2_32(lanes_)) {
      raw = B.CreateMaskedGather(vt, ptrs, align, m, llvm::Constant::getNullValue(vt));
    } else {
      // LLVM 19's x86 backend widens a gather of 17 or 24 lanes to a power of two and gives a
      // part of only padding lanes an undefined index register, which it may allocate to
      // the destination: `vpgatherdq (%rsi,%ymm0,8), %zmm0` is an invalid encoding (SIGILL).
      // The gather is made a power of two here, the padding lanes repeating the last lane
      // (its pointer and mask bit: no other element is touched).
      unsigned p2 = static_cast<unsigned>(llvm::PowerOf2Ceil(lanes_));
      llvm::SmallVector<int> wide(p2), back(lanes_);
      for (unsigned i = 0; i < p2; ++i) wide[i] = static_cast<int>(std::min(i, lanes_ - 1));
      for (unsigned i = 0; i < lanes_; ++i) back[i] = static_cast<int>(i);
      Type* wt = llvm::FixedVectorType::get(et, p2);
      raw = B.CreateMaskedGather(wt, B.CreateShuffleVector(ptrs, wide), align, B.CreateShuffleVector(m, wide),
                                 llvm::Constant::getNullValue(wt));
      raw = B.CreateShuffleVector(raw, back);
    }
  }
  return from_mem(t, raw);
}

void FuncEmitter::vstore(const StoreNode* n) {
  DType t = n->buffer->dtype;
  Type* et = smem_type(t);
  auto align = llvm::Align(std::max(1, dtype_bytes(t)));
  Value* v = to_mem(t, expr(n->value));
  Expr idx = n->indices[0];
  auto coeff = checked_coeff(&idx);
  if (coeff && *coeff == 1) {
    Value* p = span_ptr(et, n->buffer, scalar_index(idx));
    if (mask_)
      B.CreateMaskedStore(v, p, align, mask_);
    else
      B.CreateAlignedStore(v, p, align);
  } else if (coeff && *coeff != 0 && std::abs(*coeff) <= kMaxLoadStride && !(mask_ && has_masked_work(idx)) &&
             !std::getenv("TIRC_CODEGEN_NO_STORE_SPANS")) {
    // A constant stride c (`X[2 * i + 1] = ...`): per chunk of one vector register, the lanes
    // shuffled to their places in the span of k * |c| elements from the chunk's lowest lane's
    // element, and one masked store whose mask is on at the lanes' elements only (and, under
    // a mask, only for the lanes that are on): no other element is written, so the elements
    // between the lanes (another phase's, or another thread's) keep whatever they hold. The
    // mirror of vload's spans; a scatter of 16 lanes took 4x the serial loop's time
    // (avg_pool2d_grad, bench/README.md "Codegen r19").
    int64_t c = *coeff;
    auto tti = tm_.getTargetTransformInfo(*fn_);
    auto reg_bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue();
    auto ebits = std::max<unsigned>(8, static_cast<unsigned>(et->getPrimitiveSizeInBits().getFixedValue()));
    unsigned chunk = std::max(1u, std::min(lanes_, static_cast<unsigned>(reg_bits / ebits)));
    Value* base = scalar_index(idx);
    Value* wide_mask = nullptr;
    for (unsigned first = 0; first < lanes_; first += chunk) {
      unsigned k = std::min(chunk, lanes_ - first);
      unsigned span = static_cast<unsigned>(k * std::abs(c));
      int64_t off = c > 0 ? static_cast<int64_t>(first) * c : static_cast<int64_t>(first + k - 1) * c;
      Value* p = span_ptr(et, n->buffer, B.CreateAdd(base, B.getInt64(off), "", false, !mask_));
      llvm::SmallVector<int> place(span, -1);
      for (unsigned l = 0; l < k; ++l) place[c > 0 ? l * c : (k - 1 - l) * -c] = static_cast<int>(first + l);
      Value* vals = B.CreateShuffleVector(v, place);
      B.CreateMaskedStore(vals, p, align, span_mask(first, k, c, span, ebits, &wide_mask));
    }
  } else {
    Value* ptrs = B.CreateInBoundsGEP(et, buffer_ptr(n->buffer), vindex(idx, coeff));
    Value* m = mask_ ? mask_ : all_lanes();
    if (!llvm::isPowerOf2_32(lanes_)) {
      // As for gathers (vload): a power of two of lanes, the padding lanes repeating the last
      // lane, which stores last anyway (same address, same value).
      unsigned p2 = static_cast<unsigned>(llvm::PowerOf2Ceil(lanes_));
      llvm::SmallVector<int> wide(p2);
      for (unsigned i = 0; i < p2; ++i) wide[i] = static_cast<int>(std::min(i, lanes_ - 1));
      v = B.CreateShuffleVector(v, wide);
      ptrs = B.CreateShuffleVector(ptrs, wide);
      m = B.CreateShuffleVector(m, wide);
    }
    B.CreateMaskedScatter(v, ptrs, align, m);
  }
}

void FuncEmitter::emit_vectorized(const ForNode* n, Value* minv, Value* ext, bool wide, unsigned lanes) {
  Stmt body = LetInliner().mutate(n->body);
  lanes_ = lanes;
  vvar_ = n->loop_var.get();
  vmin_ = minv;
  mask_ = nullptr;
  auto* guard = body.as<IfThenElseStmtNode>();
  // TIRC_CODEGEN_NO_GUARD_SPLIT=1: the masked vector code alone (bench/bench_codegen_r18.cpp).
  const bool no_split = std::getenv("TIRC_CODEGEN_NO_GUARD_SPLIT") != nullptr;
  if (guard && !guard->else_case.defined() && !no_split && plain_strided(guard->then_case)) {
    // A split tail's `where` around plain strided loads (`if io * 48 + ii < 16000 { B[..] =
    // A[2 * (io * 48 + ii)] + ... }`): the mask is all on in every iteration of the outer loop
    // but the last, where the loads would be the plain ones LLVM's loop vectorizer does best
    // (vectorizable()). So: the lanes' condition as a vector; when every lane holds it, the
    // guarded body as a scalar loop left to LLVM's vectorizer (as without the `where`), else
    // the masked vector code. Masked spans everywhere were 1.9x / 2.5x the serial loop for
    // strides 2 / 3 (bench/README.md "Codegen r18").
    // The test of every lane: two scalar comparisons per conjunct when it is an affine
    // comparison (the vector compare and its reduction cost 1.2x on the serial loop).
    Value* all = all_lanes_hold(guard->cond, lanes);
    Value* c = all ? nullptr : expr(guard->cond);
    auto* full = BasicBlock::Create(C, "vec.full", fn_);
    auto* part = BasicBlock::Create(C, "vec.part", fn_);
    auto* done = BasicBlock::Create(C, "vec.end", fn_);
    B.CreateCondBr(all ? all : B.CreateAndReduce(c), full, part,
                   llvm::MDBuilder(C).createLikelyBranchWeights());
    B.SetInsertPoint(part);
    if (!c) c = expr(guard->cond);
    mask_ = c;
    stmt(guard->then_case);
    mask_ = nullptr;
    B.CreateBr(done);
    lanes_ = 0;
    vvar_ = nullptr;
    vmin_ = nullptr;
    B.SetInsertPoint(full);
    // The same loop with the guard dropped (it holds in every iteration here); a node of its
    // own, alive while it is emitted.
    Stmt loop = make_for(n->loop_var, n->min, n->extent, n->for_kind, guard->then_case, n->thread_tag,
                         n->annotations);
    emit_scalar_for(loop.as<ForNode>(), minv, ext, wide, true);
    B.CreateBr(done);
    B.SetInsertPoint(done);
    return;
  }
  // Lanes are independent (vectorizable(): each lane stores its own elements and loads a
  // stored buffer only there), so running them chunk after chunk gives the same results. One
  // <48 x float> is scalarised by LLVM once its accumulator row lives in registers (3.4x the
  // serial loop, bench/README.md "Codegen r19"): a width that is not a power of two, or wider
  // than the target's vector registers, runs as chunks of one register (the widest element
  // decides) and a tail of smaller power-of-two chunks (a last single lane joins the chunk
  // before it). TIRC_CODEGEN_NO_VEC_CHUNKS=1: one vector of all the lanes.
  std::vector<unsigned> chunks = vector_chunks(body, lanes);
  Type* ty = minv->getType();
  unsigned off = 0;
  for (unsigned c : chunks) {
    lanes_ = c;
    vmin_ = off ? B.CreateAdd(minv, llvm::ConstantInt::get(ty, off)) : minv;
    mask_ = nullptr;
    stmt(body);
    off += c;
  }
  lanes_ = 0;
  vvar_ = nullptr;
  vmin_ = nullptr;
}

std::vector<unsigned> FuncEmitter::vector_chunks(const Stmt& body, unsigned lanes) const {
  unsigned bits = 8;
  for_each_expr(body, [&](const Expr& x) {
    if (auto* ld = x.as<LoadNode>())
      bits = std::max(bits, static_cast<unsigned>(dtype_bits(ld->buffer->dtype)));
  });
  struct Stores : IRVisitor {
    unsigned* bits;
    void visit_store(const StoreNode* n) override {
      *bits = std::max(*bits, static_cast<unsigned>(dtype_bits(n->buffer->dtype)));
      IRVisitor::visit_store(n);
    }
  } st;
  st.bits = &bits;
  st.visit(body);
  auto tti = tm_.getTargetTransformInfo(*fn_);
  auto reg_bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue();
  unsigned native = 1;
  while (native * 2 <= reg_bits / bits) native *= 2;
  bool pow2 = (lanes & (lanes - 1)) == 0;
  if (std::getenv("TIRC_CODEGEN_NO_VEC_CHUNKS") || native < 2 || (pow2 && lanes <= native)) return {lanes};
  std::vector<unsigned> out;
  unsigned rest = lanes;
  for (unsigned c = native; c >= 2 && rest > 0; c /= 2)
    while (rest >= c) {
      out.push_back(c);
      rest -= c;
    }
  if (rest) {  // one lane left: the chunk before it takes it (a <1 x T> vector is scalar code)
    if (out.empty()) return {lanes};
    ++out.back();
  }
  return out;
}

void FuncEmitter::emit_store(const StoreNode* n) {
  DType t = n->buffer->dtype;
  if (atomic_depth_ > 0 && (par_depth_ > 0 || thread_depth_ > 0)) {
    // Scatter-add inside a parallel loop: B[i] = B[i] + v (either operand order).
    auto* add = n->value.as<BinaryNode>();
    Expr other;
    if (add && add->op == BinOp::Add) {
      auto same = [&](const Expr& x) {
        auto* ld = x.as<LoadNode>();
        if (!ld || !ld->buffer.same_as(n->buffer) || ld->indices.size() != n->indices.size()) return false;
        for (size_t i = 0; i < ld->indices.size(); ++i)
          if (!expr_identical(ld->indices[i], n->indices[i])) return false;
        return true;
      };
      if (same(add->a))
        other = add->b;
      else if (same(add->b))
        other = add->a;
    }
    if (other.defined() && (t == DType::F32 || t == DType::F64 || is_int(t))) {
      Value* v = expr(other);
      Value* p = element_ptr(n->buffer, n->indices);
      auto op = is_float(t) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
      B.CreateAtomicRMW(op, p, v, llvm::MaybeAlign(dtype_bytes(t)), llvm::AtomicOrdering::Monotonic);
      return;
    }
    if (gpu_)
      throw Error("nvptx: atomic block storing to " + n->buffer->name + " is not an addition of f32/f64/int");
    auto lock = rt_fn("tirc_atomic_lock", B.getVoidTy(), {});
    auto unlock = rt_fn("tirc_atomic_unlock", B.getVoidTy(), {});
    B.CreateCall(lock);
    lock_held_ = true;
    Value* v = expr(n->value);
    B.CreateStore(to_mem(t, v), element_ptr(n->buffer, n->indices));
    B.CreateCall(unlock);
    lock_held_ = false;
    return;
  }
  Value* v = expr(n->value);
  Value* p = element_ptr(n->buffer, n->indices);
  B.CreateStore(to_mem(t, v), p);
}

void FuncEmitter::check_launch_limits(const FunctionNode& f, llvm::Function* fn, bool known_threads) {
  const char* axes[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  const int64_t axis_max[] = {1024, 1024, 64};
  int64_t threads = 1;
  std::string sizes;
  for (int a = 0; a < 3; ++a) {
    auto it = tid_extent_.find(axes[a]);
    if (it == tid_extent_.end() || it->second <= 0) continue;
    threads *= it->second;
    sizes += std::string(sizes.empty() ? "" : ", ") + axes[a] + " = " + std::to_string(it->second);
    if (it->second > axis_max[a])
      throw Error("nvptx: function " + f.name + " binds " + axes[a] + " with extent " +
                  std::to_string(it->second) + ", more than the " + std::to_string(axis_max[a]) +
                  " a CUDA thread block allows on that axis: split the loop, e.g. split(l, [None, " +
                  std::to_string(axis_max[a]) + "]), and bind the inner part");
  }
  if (known_threads && threads > 1024)
    throw Error("nvptx: function " + f.name + " runs thread blocks of " + std::to_string(threads) + " threads (" +
                sizes + "), more than the 1024 a CUDA thread block can have: bind smaller extents");
  // Static shared memory: the .shared globals this kernel uses (through constant addrspace casts).
  const llvm::DataLayout& DL = M.getDataLayout();
  uint64_t bytes = 0;
  std::string names;
  for (auto& g : M.globals()) {
    if (g.getAddressSpace() != 3) continue;
    std::vector<const llvm::User*> work(g.user_begin(), g.user_end());
    bool used = false;
    while (!work.empty() && !used) {
      const llvm::User* u = work.back();
      work.pop_back();
      if (auto* in = llvm::dyn_cast<llvm::Instruction>(u))
        used = in->getFunction() == fn;
      else
        for (auto* uu : u->users()) work.push_back(uu);
    }
    if (!used) continue;
    uint64_t n = DL.getTypeAllocSize(g.getValueType());
    bytes += n;
    std::string name = g.getName().str();
    if (name.rfind(base_name_ + ".", 0) == 0) name = name.substr(base_name_.size() + 1);
    names += (names.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  constexpr uint64_t kStaticSharedMax = 48 * 1024;
  if (bytes > kStaticSharedMax)
    throw Error("nvptx: function " + f.name + " needs " + std::to_string(bytes) +
                " bytes of shared memory per thread block (" + names + "), more than the " +
                std::to_string(kStaticSharedMax) +
                " of static shared memory: use smaller tiles for the \"shared\" buffers");
}

void FuncEmitter::shared_global(const Buffer& b, int64_t numel) {
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z}};
  int64_t slices = 1;
  Value* slice = nullptr;
  if (b->scope != "shared") {
    // Allocated inside threadIdx loops: each of their threads has its own slice.
    for (auto& [tag, n] : active_) {
      if (n == 0) continue;
      int64_t e = tid_extent_[tag];
      if (e <= 0)
        throw Error("nvptx: buffer " + b->name + " is shared inside a threadIdx loop of non-constant extent");
      Value* id =
          B.CreateZExt(B.CreateCall(llvm::Intrinsic::getDeclaration(&M, ids.at(tag))), B.getInt64Ty());
      slice = slice ? B.CreateAdd(B.CreateMul(slice, B.getInt64(e)), id) : id;
      slices *= e;
    }
  }
  Type* at =
      llvm::ArrayType::get(smem_type(b->dtype), static_cast<uint64_t>(std::max<int64_t>(numel, 1) * slices));
  auto* g =
      new llvm::GlobalVariable(M, at, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(at),
                               base_name_ + "." + b->name, nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  Value* p = B.CreateAddrSpaceCast(g, B.getPtrTy());
  if (slice)
    p = B.CreateInBoundsGEP(smem_type(b->dtype), p,
                            B.CreateMul(slice, B.getInt64(std::max<int64_t>(numel, 1))));
  bufs_[b.get()] = p;
  shared_.insert(b.get());
}

std::vector<Value*> FuncEmitter::allocate(const std::vector<Buffer>& buffers, const Stmt& body) {
  std::vector<Value*> heap;
  constexpr int64_t kStackLimit = 64 * 1024;
  for (auto& b : buffers) {
    int64_t bytes_per = std::max(1, dtype_bytes(b->dtype));
    Expr numel;
    for (auto& s : b->shape) numel = numel.defined() ? numel * s : s;
    int64_t cn = 1;
    if (gpu_) {
      if (numel.defined() && !is_const_int(numel, &cn)) {
        if (b->scope != "global") throw Error(symbolic_scope_message(*b.get()));
        throw Error("nvptx: buffer " + b->name +
                    " has a non-constant size and is private to a thread or a thread block (lowering "
                    "placed it inside the thread-bound loops): only function-level buffers of symbolic "
                    "size are supported (kernel workspace parameters); give it a constant size (a "
                    "constant tile per thread) or use it from several thread-bound nests");
      }
      if (b->scope == "shared") {
        shared_global(b, cn);
      } else {
        // Buffers that are not "shared" are private to a thread: refuse one placed where
        // several threads would have to see it (it would need device memory).
        // Without any threadIdx loop a thread block is one thread, so a buffer inside a
        // blockIdx loop is private to it (cache_write + reverse_compute_at under a bound block).
        if (tid_depth_ == 0 && thread_depth_ == 0)
          throw Error("nvptx: buffer " + b->name +
                      " is used by several thread blocks and would need device memory: move the blocks "
                      "using it under one blockIdx-bound loop (compute_at / reverse_compute_at) or "
                      "allocate it inside the threadIdx-bound loops");
        if (tid_depth_ == 0 && has_tid_ && !tid0_) {
          // Inside a blockIdx loop but outside the threadIdx loops: one buffer per thread
          // block, seen by its threads (an intermediate of a row computed by one block) goes
          // to shared memory. A "local" one was asked to be private to a thread.
          if (b->scope == "local")
            throw Error("nvptx: buffer " + b->name +
                        " is used by several threads and would need device memory: give it scope \"shared\" "
                        "or allocate it inside the threadIdx-bound loops");
          shared_global(b, cn);
          continue;
        }
        if (has_tid_ && !tid0_ && body.defined()) {
          // Inside some threadIdx loops, used in loops bound to the other axes (a rfactor
          // buffer under threadIdx.y filled by threadIdx.x lanes): shared by those threads.
          auto miss = missing_axes();
          if (!miss.empty() && bound_access(body, miss, b.get())) {
            if (b->scope == "local")
              throw Error("nvptx: buffer " + b->name + " is used by several threads (" + *miss.begin() +
                          ") and would need device memory: give it scope \"shared\" or allocate it inside "
                          "the threadIdx-bound loops");
            shared_global(b, cn);
            continue;
          }
        }
        bufs_[b.get()] = entry_alloca(smem_type(b->dtype), B.getInt64(std::max<int64_t>(cn, 1)), 16);
        private_.insert(b.get());
      }
      continue;
    }
    if (!numel.defined() || is_const_int(numel, &cn)) {
      if (cn * bytes_per <= kStackLimit) {
        bufs_[b.get()] = entry_alloca(mem_type(b->dtype), B.getInt64(std::max<int64_t>(cn, 1)), 64);
        continue;
      }
    }
    Value* n64 = numel.defined() ? index64(numel) : B.getInt64(1);
    Value* bytes = B.CreateMul(n64, B.getInt64(bytes_per));
    Value* p = B.CreateCall(rt_alloc(), {bytes});
    bufs_[b.get()] = p;
    heap.push_back(p);
    live_heap_.push_back(p);
  }
  return heap;
}

void FuncEmitter::emit_block(const BlockRealizeNode* n) {
  const BlockNode* b = n->block.get();
  if (gpu_ && b->annotations.count(kAllreduceAnnotation)) return emit_allreduce(n);
  if (!b->iter_vars.empty() || b->init.defined())
    throw Error("codegen: block " + b->name + " was not lowered (run lower_function first)");
  auto heap = allocate(b->allocs, b->body);
  bool atomic = b->annotations.count("atomic") > 0;
  if (atomic) ++atomic_depth_;
  stmt(b->body);
  if (atomic) --atomic_depth_;
  free_all(heap);
}

// ---------------------------------------------------------------- cross-thread reductions
// TVM's LowerThreadAllreduce. The scope block (lower_cross_thread_reductions) holds the
// partial R (one per thread: a register), the nest accumulating into it and the write-back.
// Every thread of the block starts R at the identity (threads past the nest's extent keep
// it), runs the nest (each thread its iterations), then the threads combine their R
// (cross_thread) and thread 0 of the reduced axes stores the result (the write-back is a
// statement outside the threadIdx loops, which stmt() runs on thread 0).
void FuncEmitter::emit_allreduce(const BlockRealizeNode* n) {
  const BlockNode* b = n->block.get();
  std::string opn = b->annotations.at(kAllreduceAnnotation);
  if (opn.size() >= 2 && opn.front() == '"') opn = opn.substr(1, opn.size() - 2);
  BinOp op = opn == "add" ? BinOp::Add : opn == "mul" ? BinOp::Mul : opn == "min" ? BinOp::Min : BinOp::Max;
  auto* seq = b->body.as<SeqNode>();
  if (b->allocs.size() != 1 || !seq || seq->stmts.size() < 3)
    throw Error("codegen: internal error, malformed allreduce block " + b->name);
  const std::string suffix = "_allreduce";
  const bool named = b->name.size() > suffix.size() &&
                     b->name.compare(b->name.size() - suffix.size(), suffix.size(), suffix) == 0;
  const std::string what = named ? b->name.substr(0, b->name.size() - suffix.size()) : b->name;
  // Shuffles and barriers need every thread of the block (every lane of a warp) here.
  if (!gpu_sync_ok())
    throw Error(
        "nvptx: the cross-thread reduction of block " + what +
        " is reached by only some threads of a thread block (inside a threadIdx loop shorter than the "
        "launch size of its axis, or under a condition on the thread index): its shuffles and barriers "
        "need them all");
  const Buffer& red = b->allocs[0];
  DType t = red->dtype;
  Value* p = entry_alloca(smem_type(t), B.getInt64(1), 16);
  bufs_[red.get()] = p;
  private_.insert(red.get());
  // The identity store (a private buffer: every thread runs it), the nest (the first part
  // with threadIdx loops), the combination, the write-back (on thread 0).
  bool combined = false;
  for (auto& x : seq->stmts) {
    stmt(x);
    if (combined) continue;
    std::set<std::string> axes;
    for_each_stmt_for(x, [&](const ForNode* l) {
      if (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("threadIdx", 0) == 0)
        axes.insert(l->thread_tag);
    });
    if (axes.empty()) continue;
    Value* v = from_mem(t, B.CreateLoad(smem_type(t), p));
    B.CreateStore(to_mem(t, cross_thread(v, op, t, axes, what)), p);
    combined = true;
  }
  if (!combined)
    throw Error("codegen: internal error, allreduce block " + b->name + " has no threadIdx loop");
}

Value* FuncEmitter::combine(BinOp op, DType t, Value* a, Value* b) {
  if (is_float(t)) {
    if (op == BinOp::Min || op == BinOp::Max) return float_min_max(op == BinOp::Min, a, b);
    return round_to(t, op == BinOp::Add ? B.CreateFAdd(a, b) : B.CreateFMul(a, b));
  }
  bool sgn = !is_unsigned_int(t);
  switch (op) {
    case BinOp::Add: return B.CreateAdd(a, b);
    case BinOp::Mul: return B.CreateMul(a, b);
    case BinOp::Min: return B.CreateSelect(sgn ? B.CreateICmpSLE(a, b) : B.CreateICmpULE(a, b), a, b);
    default: return B.CreateSelect(sgn ? B.CreateICmpSGE(a, b) : B.CreateICmpUGE(a, b), a, b);
  }
}

Value* FuncEmitter::shfl(Shfl kind, Value* mask, Value* v, Value* b, Value* c, Value** pred) {
  Type* ty = v->getType();
  if (ty->isFloatTy() || ty->isIntegerTy(32)) {
    bool f = ty->isFloatTy();
    llvm::Intrinsic::ID id;
    switch (kind) {
      case Shfl::Down:
        id = pred
                 ? (f ? llvm::Intrinsic::nvvm_shfl_sync_down_f32p : llvm::Intrinsic::nvvm_shfl_sync_down_i32p)
                 : (f ? llvm::Intrinsic::nvvm_shfl_sync_down_f32 : llvm::Intrinsic::nvvm_shfl_sync_down_i32);
        break;
      case Shfl::Bfly:
        id = pred
                 ? (f ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32p : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32p)
                 : (f ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32);
        break;
      default:
        id = pred ? (f ? llvm::Intrinsic::nvvm_shfl_sync_idx_f32p : llvm::Intrinsic::nvvm_shfl_sync_idx_i32p)
                  : (f ? llvm::Intrinsic::nvvm_shfl_sync_idx_f32 : llvm::Intrinsic::nvvm_shfl_sync_idx_i32);
    }
    Value* r = B.CreateCall(llvm::Intrinsic::getDeclaration(&M, id), {mask, v, b, c});
    if (!pred) return r;
    *pred = B.CreateExtractValue(r, 1);
    return B.CreateExtractValue(r, 0);
  }
  if (ty->isIntegerTy() && ty->getIntegerBitWidth() < 32)
    return B.CreateTrunc(shfl(kind, mask, B.CreateSExt(v, B.getInt32Ty()), b, c, pred), ty);
  // 64-bit: two 32-bit halves.
  Value* bits = ty->isDoubleTy() ? B.CreateBitCast(v, B.getInt64Ty()) : v;
  Value* lo = shfl(kind, mask, B.CreateTrunc(bits, B.getInt32Ty()), b, c, pred);
  Value* hi = shfl(kind, mask, B.CreateTrunc(B.CreateLShr(bits, 32), B.getInt32Ty()), b, c);
  Value* r = B.CreateOr(B.CreateShl(B.CreateZExt(hi, B.getInt64Ty()), 32), B.CreateZExt(lo, B.getInt64Ty()));
  return ty->isDoubleTy() ? B.CreateBitCast(r, ty) : r;
}

Value* FuncEmitter::smem_array(const std::string& name, DType t, int64_t n) {
  Type* at = llvm::ArrayType::get(smem_type(t), static_cast<uint64_t>(std::max<int64_t>(n, 1)));
  auto* g =
      new llvm::GlobalVariable(M, at, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(at),
                               base_name_ + "." + name, nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  return B.CreateAddrSpaceCast(g, B.getPtrTy());
}

Value* FuncEmitter::tid_reg(const std::string& axis) {
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z}};
  return B.CreateCall(llvm::Intrinsic::getDeclaration(&M, ids.at(axis)));
}

// Three strategies, after the launch sizes Dx, Dy, Dz (the largest extents bound to each
// axis; threads past a loop's extent hold the identity):
//  * over threadIdx.x with Dx a power of two <= 32: the groups are aligned segments of a
//    warp: shfl.sync.bfly with offsets Dx/2 .. 1 in segments of Dx lanes (every lane gets
//    the result), mask = the warp's existing lanes;
//  * over threadIdx.x with Dx a multiple of 32, or the whole block (Dy = Dz = 1): a
//    shfl.sync.down tree over each warp (offsets 16 .. 1, source lanes clamped to the
//    warp's last existing lane, the identity where the source is out of range), lane 0
//    of each warp stores its result in .shared memory, barrier, the group's first warp
//    combines those (bfly), its lane 0 stores the total, barrier, every thread reads it,
//    barrier (the array may be written again by a next iteration);
//  * otherwise (threadIdx.y / z or several axes, groups straddling warps): every thread
//    stores its value in .shared memory, barrier, the first thread of each group combines
//    the group's values in order and stores the total, barrier, every thread reads it,
//    barrier.
Value* FuncEmitter::cross_thread(Value* v, BinOp op, DType t, const std::set<std::string>& axes,
                                 const std::string& what) {
  int64_t D[3];
  const char* names[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int a = 0; a < 3; ++a) {
    auto it = tid_extent_.find(names[a]);
    D[a] = it == tid_extent_.end() ? 1 : it->second;
    if (D[a] <= 0)
      throw Error("nvptx: the cross-thread reduction of block " + what +
                  " needs the launch size of every thread axis, but a loop bound to " + names[a] +
                  " has a non-constant extent");
  }
  const int64_t total = D[0] * D[1] * D[2];
  if (total > 1024)
    throw Error("nvptx: the cross-thread reduction of block " + what + " runs in thread blocks of " +
                std::to_string(total) + " threads (more than 1024)");
  Value* id = reducer_identity(op, t).defined() ? expr(reducer_identity(op, t)) : nullptr;
  Value* tx = D[0] > 1 ? tid_reg(names[0]) : B.getInt32(0);
  Value* lin = tx;  // linear thread index in the block
  if (D[1] > 1 || D[2] > 1) {
    Value* ty = D[1] > 1 ? tid_reg(names[1]) : B.getInt32(0);
    Value* tz = D[2] > 1 ? tid_reg(names[2]) : B.getInt32(0);
    lin = B.CreateAdd(tx,
                      B.CreateMul(B.getInt32(static_cast<uint32_t>(D[0])),
                                  B.CreateAdd(ty, B.CreateMul(B.getInt32(static_cast<uint32_t>(D[1])), tz))));
  }
  Value* warp = B.CreateLShr(lin, 5);
  Value* lane = B.CreateAnd(lin, 31);
  // Lanes of this warp that exist: all 32 except in a last, partial warp.
  Value* nlanes = B.getInt32(32);
  Value* mask = B.getInt32(0xffffffffu);
  if (total % 32 != 0) {
    Value* last = B.CreateICmpEQ(warp, B.getInt32(static_cast<uint32_t>(total / 32)));
    nlanes = B.CreateSelect(last, B.getInt32(static_cast<uint32_t>(total % 32)), nlanes);
    mask = B.CreateSelect(last, B.getInt32((1u << (total % 32)) - 1), mask);
  }
  auto is_pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  bool only_x = axes.size() == 1 && *axes.begin() == names[0];
  if (only_x && is_pow2(D[0]) && D[0] <= 32) {
    // c: segment mask (lanes outside the Dx-lane segment are out of reach) | clamp 31.
    Value* c = B.getInt32(static_cast<uint32_t>(((32 - D[0]) << 8) | 0x1f));
    for (int64_t off = D[0] / 2; off >= 1; off /= 2)
      v = combine(op, t, v, shfl(Shfl::Bfly, mask, v, B.getInt32(static_cast<uint32_t>(off)), c));
    return v;
  }
  Type* mt = smem_type(t);
  auto sload = [&](Value* base, Value* idx) {
    return from_mem(t, B.CreateLoad(mt, B.CreateInBoundsGEP(mt, base, B.CreateZExt(idx, B.getInt64Ty()))));
  };
  auto sstore = [&](Value* base, Value* idx, Value* x) {
    B.CreateStore(to_mem(t, x), B.CreateInBoundsGEP(mt, base, B.CreateZExt(idx, B.getInt64Ty())));
  };
  auto if_then = [&](Value* cond, const char* name, const std::function<void()>& body) {
    auto* tb = BasicBlock::Create(C, std::string(name) + ".body", fn_);
    auto* jb = BasicBlock::Create(C, std::string(name) + ".end", fn_);
    B.CreateCondBr(cond, tb, jb);
    B.SetInsertPoint(tb);
    body();
    B.CreateBr(jb);
    B.SetInsertPoint(jb);
  };
  if (only_x && (D[0] % 32 == 0 || D[1] * D[2] == 1)) {
    // Warp level: down tree, clamped to the warp's existing lanes.
    Value* c = B.CreateSub(nlanes, B.getInt32(1));
    for (int off = 16; off >= 1; off /= 2) {
      Value* ok = nullptr;
      Value* r = shfl(Shfl::Down, mask, v, B.getInt32(off), c, &ok);
      v = combine(op, t, v, B.CreateSelect(ok, r, id));
    }
    if (D[0] <= 32)  // one warp per group (the whole block): broadcast lane 0's result
      return shfl(Shfl::Idx, mask, v, B.getInt32(0), B.getInt32(0x1f));
    // Across the warps of a group: through .shared memory.
    const int64_t W = (D[0] + 31) / 32, nwarps = (total + 31) / 32;
    Value* ws = smem_array(what + "_red_warp", t, nwarps);
    if_then(B.CreateICmpEQ(lane, B.getInt32(0)), "allreduce.warp_result", [&] { sstore(ws, warp, v); });
    barrier();
    // The group's first warp (threadIdx.x < 32: a whole warp, as Dx > 32) combines them.
    Value* first = B.CreateICmpULT(tx, B.getInt32(32));
    if_then(first, "allreduce.group", [&] {
      Value* in = B.CreateICmpULT(tx, B.getInt32(static_cast<uint32_t>(W)));
      Value* x = B.CreateSelect(in, sload(ws, B.CreateSelect(in, B.CreateAdd(warp, tx), warp)), id);
      int64_t P = 1;
      while (P < W) P *= 2;
      Value* full = B.getInt32(0xffffffffu);
      Value* c2 = B.getInt32(static_cast<uint32_t>(((32 - P) << 8) | 0x1f));
      for (int64_t off = P / 2; off >= 1; off /= 2)
        x = combine(op, t, x, shfl(Shfl::Bfly, full, x, B.getInt32(static_cast<uint32_t>(off)), c2));
      if_then(B.CreateICmpEQ(tx, B.getInt32(0)), "allreduce.group_result", [&] { sstore(ws, warp, x); });
    });
    barrier();
    // The group's first warp: warp - (its index in the group).
    Value* gw = B.CreateSub(warp, B.CreateLShr(tx, 5));
    Value* r = sload(ws, gw);
    barrier();
    return r;
  }
  // General: through .shared memory, one value per thread.
  int64_t stride[3] = {1, D[0], D[0] * D[1]};
  Value* coord[3] = {tx, nullptr, nullptr};
  if (D[1] > 1 || D[2] > 1) {
    coord[1] = D[1] > 1 ? tid_reg(names[1]) : B.getInt32(0);
    coord[2] = D[2] > 1 ? tid_reg(names[2]) : B.getInt32(0);
  } else {
    coord[1] = coord[2] = B.getInt32(0);
  }
  Value* s = smem_array(what + "_red_all", t, total);
  sstore(s, lin, v);
  barrier();
  // This thread's group leader: its reduced coordinates at 0.
  Value* leader = lin;
  Value* is_leader = B.getTrue();
  int64_t n = 1;
  for (int a = 0; a < 3; ++a) {
    if (!axes.count(names[a])) continue;
    leader = B.CreateSub(leader, B.CreateMul(coord[a], B.getInt32(static_cast<uint32_t>(stride[a]))));
    is_leader = B.CreateAnd(is_leader, B.CreateICmpEQ(coord[a], B.getInt32(0)));
    n *= D[a];
  }
  if_then(is_leader, "allreduce.leader", [&] {
    Value* own = sload(s, lin);
    auto* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "allreduce.for", fn_);
    auto* exit = BasicBlock::Create(C, "allreduce.for_end", fn_);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    auto* j = B.CreatePHI(B.getInt32Ty(), 2);
    auto* acc = B.CreatePHI(v->getType(), 2);
    j->addIncoming(B.getInt32(1), pre);
    acc->addIncoming(own, pre);
    auto* body = BasicBlock::Create(C, "allreduce.for_body", fn_);
    B.CreateCondBr(B.CreateICmpULT(j, B.getInt32(static_cast<uint32_t>(n))), body, exit);
    B.SetInsertPoint(body);
    // j -> offset of the j-th member (mixed radix over the reduced axes, x fastest).
    Value* rest = j;
    Value* off = B.getInt32(0);
    for (int a = 0; a < 3; ++a) {
      if (!axes.count(names[a])) continue;
      Value* ca = B.CreateURem(rest, B.getInt32(static_cast<uint32_t>(D[a])));
      rest = B.CreateUDiv(rest, B.getInt32(static_cast<uint32_t>(D[a])));
      off = B.CreateAdd(off, B.CreateMul(ca, B.getInt32(static_cast<uint32_t>(stride[a]))));
    }
    Value* nacc = combine(op, t, acc, sload(s, B.CreateAdd(lin, off)));
    j->addIncoming(B.CreateAdd(j, B.getInt32(1)), B.GetInsertBlock());
    acc->addIncoming(nacc, B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    sstore(s, lin, acc);
  });
  barrier();
  Value* r = sload(s, leader);
  barrier();
  return r;
}

void FuncEmitter::emit_evaluate(const EvaluateNode* n) {
  if (gpu_) {
    if (n->extern_name == "__syncthreads" && n->args.empty()) {
      B.CreateCall(llvm::Intrinsic::getDeclaration(&M, llvm::Intrinsic::nvvm_barrier0));
      return;
    }
    throw Error("nvptx: call_extern(\"" + n->extern_name +
                "\") has no device implementation (only __syncthreads)");
  }
  std::vector<Value*> args;
  std::vector<Type*> types;
  for (auto& a : n->args) {
    Value* v = expr(a);
    DType t = a.dtype();
    if (t == DType::Bool) v = B.CreateZExt(v, B.getInt8Ty());
    args.push_back(v);
    types.push_back(v->getType());
  }
  auto callee = M.getOrInsertFunction(n->extern_name, llvm::FunctionType::get(B.getVoidTy(), types, false));
  B.CreateCall(callee, args);
}

void FuncEmitter::emit_function(const FunctionNode& f) {
  base_name_ = f.name;
  std::vector<Type*> ptys;
  for (auto& p : f.params)
    ptys.push_back(p.is_buffer() ? static_cast<Type*>(B.getPtrTy()) : abi_type(p.var.dtype()));
  for (size_t i = 0; i < f.outputs.size(); ++i) ptys.push_back(B.getPtrTy());
  workspaces_ = gpu_ ? symbolic_root_buffers(f) : std::vector<Buffer>{};
  for (size_t i = 0; i < workspaces_.size(); ++i) ptys.push_back(B.getPtrTy());
  auto* fty = llvm::FunctionType::get(gpu_ ? B.getVoidTy() : B.getInt32Ty(), ptys, false);
  if (M.getFunction(f.name)) throw Error("codegen: function " + f.name + " is defined twice");
  if (gpu_) return emit_gpu_function(f, fty);
  emit_body(f, fty, f.name, f.body);
}

void FuncEmitter::emit_gpu_function(const FunctionNode& f, llvm::FunctionType* fty) {
  // Stages that exchange data through device memory (a function-level buffer, or an output
  // read by a later stage) need every thread block of one stage to finish before the next
  // starts: each top-level statement then becomes its own kernel F_kernel0, F_kernel1, ...
  // (launched in order, each with the sizes of its own bound loops), as TVM makes one kernel
  // per thread-bound nest. Function-level buffers live in global device memory (module
  // variables of constant size), shared by these kernels.
  auto* root = f.body.as<BlockRealizeNode>();
  std::vector<Stmt> items;
  device_bufs_.clear();
  if (root) {
    if (auto* q = root->block->body.as<SeqNode>())
      items = q->stmts;
    else
      items.push_back(root->block->body);
    for (auto& b : root->block->allocs) {
      Expr numel;
      for (auto& d : b->shape) numel = numel.defined() ? numel * d : d;
      int64_t cn = 1;
      bool symbolic = numel.defined() && !is_const_int(numel, &cn);
      if (symbolic && b->scope != "global") throw Error(symbolic_scope_message(*b.get()));
      if (b->scope == "shared" || b->scope == "local")
        throw Error("nvptx: buffer " + b->name + " (scope \"" + b->scope +
                    "\") is used outside the thread-bound loops: compute_at the blocks using it into a "
                    "blockIdx-bound loop");
      if (symbolic) continue;  // a workspace: a kernel parameter (workspaces_)
      Type* at = llvm::ArrayType::get(smem_type(b->dtype), static_cast<uint64_t>(std::max<int64_t>(cn, 1)));
      auto* g = new llvm::GlobalVariable(M, at, false, llvm::GlobalValue::InternalLinkage,
                                         llvm::UndefValue::get(at), f.name + "." + b->name, nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 1);
      g->setAlignment(llvm::Align(16));
      device_bufs_[b.get()] = g;
    }
  } else {
    items.push_back(f.body);
  }
  bool split = false;
  if (items.size() > 1) {
    std::vector<GpuAccess> acc;
    for (auto& it : items) acc.push_back(gpu_access(it, false));
    auto meet = [](const std::unordered_set<const BufferNode*>& a,
                   const std::unordered_set<const BufferNode*>& b) {
      for (auto* x : a)
        if (b.count(x)) return true;
      return false;
    };
    for (size_t i = 0; i < acc.size() && !split; ++i)
      for (size_t j = i + 1; j < acc.size() && !split; ++j)
        split = meet(acc[i].writes, acc[j].reads) || meet(acc[i].writes, acc[j].writes) ||
                meet(acc[i].reads, acc[j].writes);
  }
  auto bound_in = [](const Stmt& st) {
    bool b = false;
    for_each_stmt_for(st, [&](const ForNode* l) {
      b = b || (l->for_kind == ForKind::ThreadBinding && l->thread_tag != "vthread");
    });
    return b;
  };
  // Independent thread-bound nests with different block sizes: one kernel would launch them
  // all with the largest, so a nest's barriers (cooperative copies, cross-thread reductions)
  // would wait for threads that skip it. TVM makes one kernel per thread-bound nest; so do we
  // here (nests of one block size stay one kernel, as before).
  if (!split && items.size() > 1) {
    auto block_size = [](const Stmt& st) {
      std::map<std::string, int64_t> ext;
      for_each_stmt_for(st, [&](const ForNode* l) {
        if (l->for_kind != ForKind::ThreadBinding || l->thread_tag.rfind("threadIdx", 0) != 0) return;
        int64_t e = 0;
        int64_t& m = ext[l->thread_tag];
        m = (!is_const_int(l->extent, &e) || m < 0) ? -1 : std::max(m, e);
      });
      std::erase_if(ext, [](const auto& kv) { return kv.second == 1; });  // extent 1: no axis
      return ext;
    };
    bool all_bound = true;
    for (auto& it : items) all_bound = all_bound && bound_in(it);
    if (all_bound) {
      auto first = block_size(items[0]);
      for (size_t k = 1; k < items.size() && !split; ++k) split = block_size(items[k]) != first;
    }
  }
  if (!split) {
    emit_kernel(f, fty, f.name, root ? root->block->body : f.body, true);
    return;
  }
  bool any = false;
  for (auto& it : items) any = any || bound_in(it);
  if (!any)
    throw Error("nvptx: function " + f.name +
                " has no loop bound to blockIdx/threadIdx (bind loops with bind())");
  for (auto& it : items) {
    if (bound_in(it)) continue;
    // TVM refuses such code too (memory accessed outside a thread environment).
    std::string what = "a statement";
    if (auto* l = it.as<ForNode>()) what = "the loop " + l->loop_var.name();
    throw Error(
        "nvptx: in function " + f.name + ", " + what +
        " is outside every thread-bound loop and would run on one GPU thread: bind its loops (bind())");
  }
  for (size_t k = 0; k < items.size(); ++k) {
    std::string name = f.name + "_kernel" + std::to_string(k);
    if (M.getFunction(name)) throw Error("codegen: function " + name + " is defined twice");
    emit_kernel(f, fty, name, items[k], false);
  }
}

void FuncEmitter::emit_kernel(const FunctionNode& f, llvm::FunctionType* fty, const std::string& name,
                              const Stmt& body, bool need_binding) {
  CrossBlockCheck(f.name).run(body);
  {
    bool bound = false;
    has_tid_ = false;
    tid_extent_.clear();
    active_.clear();
    shared_.clear();
    private_.clear();
    tdep_.clear();
    block_axes_.clear();
    bactive_.clear();
    block0_ = false;
    for_each_stmt_for(body, [&](const ForNode* l) {
      if (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("blockIdx", 0) == 0)
        block_axes_.insert(l->thread_tag);
      if (l->for_kind == ForKind::ThreadBinding && l->thread_tag != "vthread") bound = true;
      if (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("threadIdx", 0) == 0) {
        has_tid_ = true;
        int64_t e = 0;
        int64_t& m = tid_extent_[l->thread_tag];
        if (!is_const_int(l->extent, &e) || m < 0)
          m = -1;
        else
          m = std::max(m, e);
      }
    });
    if (!bound && need_binding)
      throw Error("nvptx: function " + f.name +
                  " has no loop bound to blockIdx/threadIdx (bind loops with bind())");
  }
  emit_body(f, fty, name, body);
}

void FuncEmitter::return_if_stray_launch() {
  // The launch contract (docs/codegen.md): a kernel runs with the sizes of its own bound loops,
  // and a host (or the emulator) may launch every kernel of a function with the largest sizes.
  // Bound loops guard their extents, but a kernel that binds no loop to a blockIdx axis runs
  // its code once per block along it (and one without threadIdx loops once per thread), each
  // repeating its stores and read-modify-writes. Those extra blocks and threads leave at once;
  // none of them can wait at a barrier (no threadIdx loop, or a whole block leaving).
  static const std::pair<const char*, llvm::Intrinsic::ID> axes[] = {
      {"blockIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"blockIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
      {"blockIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z}};
  Value* stray = nullptr;
  for (auto& [tag, id] : axes) {
    bool blk = std::string(tag).rfind("blockIdx", 0) == 0;
    // A threadIdx axis counts as bound only if this kernel binds it: with the constant extents
    // of `.reqntid` the guard never fires, with symbolic ones a launch with the largest block
    // (another kernel binds threadIdx.y) would run this kernel once per y-thread.
    if (blk ? block_axes_.count(tag) > 0 : tid_extent_.count(tag) > 0) continue;
    Value* v = B.CreateICmpNE(B.CreateCall(llvm::Intrinsic::getDeclaration(&M, id)), B.getInt32(0));
    stray = stray ? B.CreateOr(stray, v) : v;
  }
  if (!stray) return;
  auto* leave = BasicBlock::Create(C, "launch.stray", fn_);
  auto* run = BasicBlock::Create(C, "launch.run", fn_);
  B.CreateCondBr(stray, leave, run);
  B.SetInsertPoint(leave);
  B.CreateRetVoid();
  B.SetInsertPoint(run);
}

void FuncEmitter::emit_body(const FunctionNode& f, llvm::FunctionType* fty, const std::string& name,
                            const Stmt& body) {
  vars_.clear();
  bufs_.clear();
  auto* fn = new_function(name, fty, llvm::GlobalValue::ExternalLinkage);
  fn_ = fn;
  auto* entry = BasicBlock::Create(C, "entry", fn);
  B.SetInsertPoint(entry);
  if (!gpu_) {
    // A failed check of an earlier call must not end this one (propagate_error reads it).
    bool checked = false;
    for_each_expr(body, [&](const Expr& e) {
      if (auto* c = e.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) checked = true;
    });
    if (checked) B.CreateStore(B.getInt64(0), error_state());
  }
  size_t k = 0;
  for (auto& p : f.params) {
    auto* arg = fn->getArg(k++);
    arg->setName(p.name());
    if (p.is_buffer()) {
      arg->addAttr(llvm::Attribute::NoAlias);
      arg->addAttr(llvm::Attribute::ReadOnly);
      arg->addAttr(llvm::Attribute::NoCapture);
      bufs_[p.buffer.get()] = arg;
    } else {
      DType t = p.var.dtype();
      Value* v = arg;
      if (t == DType::Bool)
        v = B.CreateICmpNE(arg, B.getInt8(0));
      else
        v = round_to(t, v);
      vars_[p.var.get()] = v;
    }
  }
  for (auto& o : f.outputs) {
    auto* arg = fn->getArg(k++);
    arg->setName(o->name);
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::NoCapture);
    bufs_[o.get()] = arg;
  }
  for (auto& w : workspaces_) {  // NVPTX: after the outputs (nvptx_workspaces)
    auto* arg = fn->getArg(k++);
    arg->setName(w->name);
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::NoCapture);
    bufs_[w.get()] = arg;
  }
  auto* root = f.body.as<BlockRealizeNode>();
  if (gpu_) {
    device_.clear();
    for (auto& [b, v] : bufs_) device_.insert(b);  // params, outputs, workspaces
    for (auto& [b, g] : device_bufs_) {
      bufs_[b] = B.CreateAddrSpaceCast(g, B.getPtrTy());
      device_.insert(b);
    }
    return_if_stray_launch();
    stmt(body);
  } else if (root) {
    auto heap = allocate(root->block->allocs, root->block->body);
    stmt(root->block->body);
    free_all(heap);
  } else {
    stmt(f.body);
  }
  if (gpu_) {
    B.CreateRetVoid();
    auto* md = M.getOrInsertNamedMetadata("nvvm.annotations");
    md->addOperand(llvm::MDNode::get(C, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(C, "kernel"),
                                         llvm::ConstantAsMetadata::get(B.getInt32(1))}));
    // The block size this kernel was compiled for (`.reqntid X, Y, Z`): its barriers and
    // cross-thread reductions assume exactly the largest extents bound to each threadIdx axis
    // of this kernel (each kernel of a multi-kernel function has its own), so a launch with
    // other sizes would deadlock at a barrier or skip iterations; with the directive the driver
    // refuses it. Not emitted when an extent is symbolic (the host evaluates it).
    bool known = has_tid_;
    int64_t threads = 1;
    for (auto& [tag, e] : tid_extent_) {
      known = known && e > 0;
      threads *= std::max<int64_t>(e, 1);
    }
    check_launch_limits(f, fn, known);
    if (known && threads <= 1024) {
      const char* axes[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
      const char* keys[] = {"reqntidx", "reqntidy", "reqntidz"};
      for (int a = 0; a < 3; ++a) {
        auto it = tid_extent_.find(axes[a]);
        int64_t e = it == tid_extent_.end() ? 1 : it->second;
        md->addOperand(llvm::MDNode::get(C, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(C, keys[a]),
                                             llvm::ConstantAsMetadata::get(B.getInt32(static_cast<int32_t>(e)))}));
      }
    }
    return;
  }
  B.CreateRet(B.getInt32(0));

  // Packed entry: void __tirc_packed_F(void** args).
  auto* pty = llvm::FunctionType::get(B.getVoidTy(), {B.getPtrTy()}, false);
  auto* pf = new_function("__tirc_packed_" + f.name, pty, llvm::GlobalValue::ExternalLinkage);
  B.SetInsertPoint(BasicBlock::Create(C, "entry", pf));
  std::vector<Value*> args;
  for (unsigned i = 0; i < fty->getNumParams(); ++i) {
    Value* p = B.CreateLoad(B.getPtrTy(), B.CreateConstInBoundsGEP1_64(B.getPtrTy(), pf->getArg(0), i));
    Type* t = fty->getParamType(i);
    args.push_back(t->isPointerTy() ? p : B.CreateLoad(t, p));
  }
  B.CreateCall(fn, args);
  B.CreateRetVoid();

  // int64_t __tirc_bounds_error_F(int64_t* index, int64_t* extent): the site of the check
  // that failed in the last call (-1: none) with its index and extent (either pointer may
  // be NULL); clears the state.
  auto* i64 = B.getInt64Ty();
  auto* ety = llvm::FunctionType::get(i64, {B.getPtrTy(), B.getPtrTy()}, false);
  auto* ef = new_function("__tirc_bounds_error_" + f.name, ety, llvm::GlobalValue::ExternalLinkage);
  B.SetInsertPoint(BasicBlock::Create(C, "entry", ef));
  auto* st = error_state();
  Type* at = st->getValueType();
  Value* site = B.CreateLoad(i64, st);
  for (unsigned k = 0; k < 2; ++k) {  // either pointer may be NULL
    auto* put = BasicBlock::Create(C, "put", ef);
    auto* next = BasicBlock::Create(C, "next", ef);
    B.CreateCondBr(B.CreateIsNotNull(ef->getArg(k)), put, next);
    B.SetInsertPoint(put);
    B.CreateStore(B.CreateLoad(i64, B.CreateConstInBoundsGEP2_64(at, st, 0, 1 + k)), ef->getArg(k));
    B.CreateBr(next);
    B.SetInsertPoint(next);
  }
  B.CreateStore(B.getInt64(0), st);
  B.CreateRet(B.CreateSub(site, B.getInt64(1)));
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> make_target_machine(const CodegenOptions& opts) {
  init_llvm_once();
  std::string triple = opts.triple.empty() ? llvm::sys::getProcessTriple() : opts.triple;
  if (llvm::Triple(triple).isNVPTX()) {
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeNVPTXTargetInfo();
      LLVMInitializeNVPTXTarget();
      LLVMInitializeNVPTXTargetMC();
      LLVMInitializeNVPTXAsmPrinter();
    });
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw Error("codegen: unknown target " + triple + ": " + err);
  std::string cpu = opts.cpu;
  std::string features;
  if (cpu.empty() && opts.triple.empty()) {
    cpu = llvm::sys::getHostCPUName().str();
    for (auto& kv : llvm::sys::getHostCPUFeatures()) {
      if (!features.empty()) features += ",";
      features += (kv.second ? "+" : "-") + kv.first().str();
    }
  }
  if (cpu.empty()) cpu = llvm::Triple(triple).isNVPTX() ? "sm_80" : "generic";
  llvm::TargetOptions to;
  if (opts.fast_math) {
    to.UnsafeFPMath = true;
    to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  }
  auto level = opts.opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : opts.opt_level == 2 ? llvm::CodeGenOptLevel::Default
               : opts.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                     : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw Error("codegen: cannot create a target machine for " + triple);
  return tm;
}

// Links the CUDA libdevice bitcode (device libm: __nv_expf, ...) when the module calls it.
static void link_libdevice(llvm::Module& mod) {
  bool needed = false;
  for (auto& f : mod.functions())
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) needed = true;
  if (!needed) return;
  const char* path = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  if (const char* env = std::getenv("TIRC_LIBDEVICE")) path = env;
  llvm::SMDiagnostic diag;
  auto lib = llvm::parseIRFile(path, diag, mod.getContext());
  if (!lib)
    throw Error(std::string("nvptx: cannot read libdevice (") + path +
                "; set TIRC_LIBDEVICE): " + diag.getMessage().str());
  lib->setTargetTriple(mod.getTargetTriple());
  lib->setDataLayout(mod.getDataLayout());
  if (llvm::Linker::linkModules(mod, std::move(lib), llvm::Linker::LinkOnlyNeeded))
    throw Error("nvptx: linking libdevice failed");
  for (auto& f : mod.functions())
    if (!f.isDeclaration() && f.getName().starts_with("__nv_"))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
}

static std::string bounds_site_text(const BoundsCheckSite& s) {
  std::string where =
      s.loc.known() ? s.loc.file + ":" + std::to_string(s.loc.line) + ":" + std::to_string(s.loc.col) + ": "
                    : "";
  if (!s.block.empty()) where += "block \"" + s.block + "\": ";
  if (s.access == "binding") return where + "binding of iter var " + s.buffer;
  if (s.access == "divide") return where + "integer division by zero: " + s.buffer;
  if (s.access == "pow") return where + "pow(extent, index): integers to negative integer powers are not allowed";
  if (s.access == "pow_swapped")
    return where + "pow(index, extent): integers to negative integer powers are not allowed";
  return where + s.access + " " + s.buffer + ", dimension " + std::to_string(s.dim);
}

// const char* const __tirc_bounds_sites_F[]: what each check site of F checks (C callers of
// an object file print it with the index and extent of __tirc_bounds_error_F).
static void emit_site_table(llvm::Module& mod, const std::string& fname,
                            const std::vector<BoundsCheckSite>& sites) {
  auto& C = mod.getContext();
  IRBuilder<> B(C);
  std::vector<llvm::Constant*> strs;
  for (size_t i = 0; i < sites.size(); ++i) {
    auto* init = llvm::ConstantDataArray::getString(C, bounds_site_text(sites[i]));
    auto* g = new llvm::GlobalVariable(mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                       "__tirc_site." + fname + "." + std::to_string(i));
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    strs.push_back(g);
  }
  auto* at = llvm::ArrayType::get(B.getPtrTy(), strs.size());
  new llvm::GlobalVariable(mod, at, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantArray::get(at, strs), "__tirc_bounds_sites_" + fname);
}

static std::vector<GpuWorkspace> workspace_list(const FunctionNode& lowered) {
  std::vector<GpuWorkspace> out;
  for (auto& b : symbolic_root_buffers(lowered)) {
    Expr numel;
    for (auto& d : b->shape) numel = numel.defined() ? numel * d : d;
    out.push_back({b->name, b->dtype, numel});
  }
  return out;
}

std::vector<GpuWorkspace> nvptx_workspaces(const FunctionNode& f) {
  return workspace_list(*lower_function(*lower_cross_thread_reductions(f), true, nullptr, true));
}

void build_llvm_functions(llvm::Module& mod, const std::vector<Function>& funcs, const CodegenOptions& opts,
                          llvm::TargetMachine& tm, std::vector<std::vector<BoundsCheckSite>>* check_sites) {
  bool nvptx = tm.getTargetTriple().isNVPTX();
  for (auto& f : funcs) {
    // Reductions across the threads of a block become allreduce scope blocks first (on the
    // CPU thread-bound loops are serial loops: the reduction runs as written).
    std::vector<BoundsCheckSite> sites;
    bool checks = opts.bounds_checks && !nvptx;
    Function lowered =
        lower_function(nvptx ? *lower_cross_thread_reductions(*f) : *f, true, checks ? &sites : nullptr, nvptx);
    FuncEmitter em(mod, opts, tm);
    em.emit_function(*lowered);
    if (nvptx) {
      // The workspace ABI in the PTX text (file-scope comments), for the host code.
      size_t k = f->params.size() + f->outputs.size();
      for (auto& w : workspace_list(*lowered))
        mod.appendModuleInlineAsm("// tirc.workspace " + f->name + " " + std::to_string(k++) + " " + w.name +
                                  " " + std::string(dtype_name(w.dtype)) + " " + print_expr(w.numel));
    }
    if (!nvptx) emit_site_table(mod, f->name, sites);
    if (check_sites) check_sites->push_back(std::move(sites));
  }
  if (nvptx) link_libdevice(mod);
  if (opts.verify) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(mod, &os)) throw Error("codegen: internal error, invalid LLVM IR: " + os.str());
  }
}

void optimize_module(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level) {
  // `vectorized` is a request LLVM may not be able to honour (docs/codegen.md): it then reports
  // "loop not vectorized: the optimizer was unable to perform the requested transformation" as
  // a warning, which the default handler printed to stderr as `warning: <unknown>:0:0: ...`
  // among tirc's own output, naming no .tir position. Warnings and remarks are dropped here
  // (the loop still runs, scalar); errors are printed as the default handler would.
  mod.getContext().setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* di, void*) {
        if (di->getSeverity() != llvm::DS_Error) return;
        llvm::DiagnosticPrinterRawOStream dp(llvm::errs());
        llvm::errs() << "error: ";
        di->print(dp);
        llvm::errs() << "\n";
      },
      nullptr);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  pto.LoopUnrolling = opt_level >= 1;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel lvl = opt_level >= 3   ? llvm::OptimizationLevel::O3
                                : opt_level == 2 ? llvm::OptimizationLevel::O2
                                : opt_level == 1 ? llvm::OptimizationLevel::O1
                                                 : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm =
      opt_level == 0 ? pb.buildO0DefaultPipeline(lvl) : pb.buildPerModuleDefaultPipeline(lvl);
  mpm.run(mod, mam);
}

}  // namespace tirc

// Fusion of sibling loops (model: Halide's compute_with, LLVM's LoopFuse, the classic
// loop-fusion legality test of Kennedy & Allen, "Optimizing Compilers for Modern
// Architectures", ch. 8). A gradient is a chain of loop nests over the same outer
// dimensions (a zero fill of X_grad, then four stride-2 phase blocks that each accumulate
// into it; a recomputed max, its argument, then the scatter): run one after the other,
// each streams the whole buffer through memory, so a pool's backward costs five passes
// over X_grad. Fused over their common outer loops, each slice stays in cache while every
// nest works on it, and plan_alloc/compact_buffers can shrink the intermediates to a slice.
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/buffer_access.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

// Buffers stored to, and whether the statement holds a call_extern or passes a pointer
// (opaque effects: never fused).
struct Effects : IRVisitor {
  std::unordered_set<const BufferNode*> written, local;
  bool opaque = false;

 protected:
  void visit_block(const BlockNode* n) override {
    // A scope block's allocs are private to one execution of it.
    for (auto& a : n->allocs) local.insert(a.get());
    IRVisitor::visit_block(n);
  }
  void visit_for(const ForNode* n) override {
    // Thread-bound loops decide kernel launches: left as scheduled.
    opaque = opaque || n->for_kind == ForKind::ThreadBinding;
    IRVisitor::visit_for(n);
  }
  void visit_store(const StoreNode* n) override {
    written.insert(n->buffer.get());
    IRVisitor::visit_store(n);
  }
  void visit_evaluate(const EvaluateNode* n) override {
    opaque = true;
    IRVisitor::visit_evaluate(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    opaque = true;
    IRVisitor::visit_buffer_ptr(n);
  }
};

bool plain_serial(const ForNode* f) {
  return f->for_kind == ForKind::Serial && f->thread_tag.empty() && f->annotations.empty();
}

// The dimensions d of `b` at which every access in `accs` reads or writes the element
// index[d] == loop var (the loop that `accs` were collected under).
std::vector<bool> own_dims(const std::vector<lower_detail::BufferAccess>& accs, size_t ndim,
                           const VarNode* loop_var) {
  std::vector<bool> ok(ndim, true);
  for (auto& a : accs) {
    if (a.pointer || a.indices.size() != ndim) return std::vector<bool>(ndim, false);
    for (size_t d = 0; d < ndim; ++d) {
      auto* v = a.indices[d].as<VarNode>();
      ok[d] = ok[d] && v == loop_var;
    }
  }
  return ok;
}

// Legality: two loops over the same range run `for i { A(i) }; for i { B(i) }` as
// `for i { A(i); B(i) }` when every buffer either of them writes is accessed, by both,
// only at the element whose index in one common dimension d is the loop variable. Then
// iteration i of either loop touches slice i only: A(i) still runs before B(i) on that
// slice, and a reordered pair A(i'), B(i) with i' != i shares no element that one of them
// writes. Each element sees the same operations in the same order: bit-identical.
bool can_fuse(const ForNode* a, const ForNode* b) {
  if (!plain_serial(a) || !plain_serial(b)) return false;
  if (!expr_identical(a->min, b->min) || !expr_identical(a->extent, b->extent)) return false;
  Effects ea, eb;
  ea.visit(a->body);
  eb.visit(b->body);
  if (ea.opaque || eb.opaque) return false;
  std::unordered_set<const BufferNode*> written = ea.written;
  written.insert(eb.written.begin(), eb.written.end());
  auto acc_a = lower_detail::collect_accesses(a->body);
  auto acc_b = lower_detail::collect_accesses(b->body);
  for (const BufferNode* buf : written) {
    if (ea.local.count(buf) || eb.local.count(buf)) continue;
    size_t ndim = buf->ndim();
    std::vector<bool> ok(ndim, true);
    auto restrict = [&](const lower_detail::AccessMap& m, const VarNode* v) {
      auto it = m.find(buf);
      if (it == m.end()) return;
      auto own = own_dims(it->second, ndim, v);
      for (size_t d = 0; d < ndim; ++d) ok[d] = ok[d] && own[d];
    };
    restrict(acc_a, a->loop_var.get());
    restrict(acc_b, b->loop_var.get());
    bool any = false;
    for (bool x : ok) any = any || x;
    if (!any) return false;
  }
  return true;
}

void append_flat(std::vector<Stmt>& out, const Stmt& s) {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) append_flat(out, x);
  } else {
    out.push_back(s);
  }
}

class SiblingFuser : public IRMutator {
 protected:
  Stmt mutate_seq(const SeqNode* n, const Stmt& s) override {
    Stmt m = IRMutator::mutate_seq(n, s);
    auto* seq = m.as<SeqNode>();
    if (!seq) return m;
    std::vector<Stmt> out;
    bool changed = false;
    for (auto& st : seq->stmts) {
      auto* cur = st.as<ForNode>();
      auto* prev = out.empty() ? nullptr : out.back().as<ForNode>();
      if (cur && prev && can_fuse(prev, cur)) {
        std::vector<Stmt> body;
        append_flat(body, prev->body);
        append_flat(body, substitute(cur->body, {{cur->loop_var.get(), prev->loop_var}}));
        // The inner nests now sit side by side: fuse them in turn.
        Stmt inner = mutate(make_seq(std::move(body)));
        out.back() = make_for(prev->loop_var, prev->min, prev->extent, prev->for_kind, inner,
                              prev->thread_tag, prev->annotations);
        changed = true;
        continue;
      }
      out.push_back(st);
    }
    if (!changed) return m;
    return out.size() == 1 ? out[0] : make_seq(std::move(out));
  }
};

}  // namespace

Function fuse_sibling_loops(const FunctionNode& f) {
  SiblingFuser fuser;
  return with_body(f, fuser.mutate(f.body));
}

}  // namespace tirc

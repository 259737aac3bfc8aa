// Buffer compaction (TVM: CompactBufferAllocation): an alloc is shrunk to the region its
// accesses inside the owning block can touch, indices shifted by the region's start.
// Combined with plan_alloc this turns a cache buffer of the whole tensor, read and written
// only through one tile per loop iteration, into a small tile-sized buffer (a packed panel,
// a register accumulator).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/buffer_access.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

struct Compacted {
  Buffer to;
  std::vector<Expr> offset;  // undefined: dimension kept as is
};

// Region-shifted accesses of the compacted buffers.
class Shifter : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, Compacted> map;

 protected:
  std::vector<Expr> shift(const Compacted& c, std::vector<Expr> idx) {
    for (size_t d = 0; d < idx.size(); ++d)
      if (c.offset[d].defined()) {
        Expr o = c.offset[d];
        idx[d] = idx[d] - (o.dtype() == idx[d].dtype() ? o : make_cast(idx[d].dtype(), o));
      }
    return idx;
  }
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_load(n, e);
    auto* l = r.as<LoadNode>();
    auto it = map.find(l->buffer.get());
    if (it == map.end()) return r;
    return make_load(it->second.to, shift(it->second, l->indices));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_store(n, s);
    auto* st = r.as<StoreNode>();
    auto it = map.find(st->buffer.get());
    if (it == map.end()) return r;
    return make_store(it->second.to, shift(it->second, st->indices), st->value);
  }
};

// Marks loops (by loop variable) whose iterations reuse a compacted shared buffer with
// kSharedReuseAnnotation = "\"B1,B2\"" (the buffers' names).
class MarkReuse : public IRMutator {
 public:
  std::unordered_map<const VarNode*, std::vector<std::string>> loops;

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto it = loops.find(n->loop_var.get());
    if (it == loops.end()) return r;
    auto* f = r.as<ForNode>();
    Annotations ann = f->annotations;
    std::string names;
    for (auto& b : it->second) names += (names.empty() ? "" : ",") + b;
    ann[kSharedReuseAnnotation] = "\"" + names + "\"";
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, f->body, f->thread_tag, ann);
  }
};

// True when `target` lies under an `if` inside `s` (a condition may split the threads).
bool under_if(const Stmt& s, const ForNode* target) {
  struct V : IRVisitor {
    const ForNode* target = nullptr;
    int ifs = 0;
    bool found = false, in_if = false;
    void visit_if(const IfThenElseStmtNode* n) override {
      ++ifs;
      IRVisitor::visit_if(n);
      --ifs;
    }
    void visit_for(const ForNode* n) override {
      if (n == target) {
        found = true;
        in_if = ifs > 0;
        return;
      }
      IRVisitor::visit_for(n);
    }
  } v;
  v.target = target;
  v.visit(s);
  return !v.found || v.in_if;
}

class Compactor : public IRMutator {
 public:
  // gpu: the function is lowered for nvptx; launch: its largest constant extent per
  // threadIdx axis (an axis with a symbolic extent is absent).
  Compactor(bool gpu, const FunctionNode& f) : gpu_(gpu) {
    if (!gpu) return;
    struct V : IRVisitor {
      std::map<std::string, int64_t> ext;
      std::unordered_set<const VarNode*>* threads = nullptr;
      void visit_for(const ForNode* l) override {
        if (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("threadIdx", 0) == 0) {
          threads->insert(l->loop_var.get());
          int64_t e = 0;
          int64_t& m = ext[l->thread_tag];
          m = (!is_const_int(l->extent, &e) || m < 0) ? -1 : std::max(m, e);
        }
        IRVisitor::visit_for(l);
      }
    } v;
    v.threads = &threads_;
    v.visit(f.body);
    for (auto& [axis, e] : v.ext)
      if (e > 0) launch_[axis] = e;
  }

 private:
  bool gpu_;
  std::map<std::string, int64_t> launch_;
  std::unordered_set<const VarNode*> threads_;
  bool thread_dependent(const Expr& e) const {
    bool f = false;
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind() == ExprKind::Var && threads_.count(static_cast<const VarNode*>(x.get()))) f = true;
    });
    return f;
  }

 protected:
  Block mutate_block(const Block& b0) override {
    Block b = IRMutator::mutate_block(b0);
    if (b->allocs.empty()) return b;
    auto uses = lower_detail::collect_accesses(b->body);
    Shifter sh;
    MarkReuse mark;
    BlockNode out = *b.get();
    for (auto& a : out.allocs) {
      auto it = uses.find(a.get());
      if (it == uses.end()) continue;
      bool pointer = false;
      for (auto& acc : it->second) pointer = pointer || acc.pointer;
      if (pointer) continue;  // an extern call may touch any element
      // Shared memory stays above the threadIdx loops (plan_alloc), so a tile copied at each
      // iteration of a k-tile loop inside them would keep the whole k extent. On the GPU, as
      // TVM, such serial loops are kept symbolic when their iterations touch disjoint parts:
      // each iteration then reuses one tile-sized buffer. Sound only when every thread of the
      // block runs the loop in step (the loop is marked; nvptx ends each iteration with a
      // barrier) and no loop above it revisits the parts (a value written at j = 0 and read at
      // j = 1 lives in one part of the whole buffer). The CPU runs thread loops one after the
      // other: there a thread loop above the loop revisits the parts, so no reuse.
      std::unordered_set<const ForNode*> keep;
      if (gpu_ && a->scope == "shared")
        for (const ForNode* l : lower_detail::common_loops(it->second)) {
          if (l->for_kind == ForKind::ThreadBinding && l->thread_tag.rfind("threadIdx", 0) == 0) {
            int64_t e = 0;
            auto m = launch_.find(l->thread_tag);
            if (!is_const_int(l->extent, &e) || m == launch_.end() || m->second != e) break;
            continue;
          }
          // A vthread loop runs in turn inside each thread, as a serial loop.
          bool vthread = l->for_kind == ForKind::ThreadBinding && l->thread_tag == "vthread";
          if (l->for_kind != ForKind::Serial && l->for_kind != ForKind::Unrolled && !vthread) break;
          if (thread_dependent(l->min) || thread_dependent(l->extent) || under_if(b->body, l)) break;
          auto trial = keep;
          trial.insert(l);
          if (!lower_detail::hull_partitioned_by(lower_detail::access_hull_kept(it->second, a->ndim(), 0, &trial), l))
            break;
          keep = std::move(trial);
        }
      auto hull = lower_detail::access_hull_kept(it->second, a->ndim(), 0, keep.empty() ? nullptr : &keep);
      Compacted c;
      std::vector<Expr> shape = a->shape;
      bool any = false;
      for (size_t d = 0; d < a->ndim(); ++d) {
        c.offset.emplace_back();
        int64_t sh_d = 0;
        if (!hull[d]) continue;
        // A symbolic dimension is compacted to a constant extent of at most 4096 (a tile of
        // a buffer of n rows under a predicated split: the GPU needs a constant .shared size,
        // and a row's accumulator at the row's thread block is one element). A larger
        // constant hull is only what the index dtype bounds (`v // (m + 1)` gave 2^32 rows)
        // and keeps the symbolic size.
        bool symbolic = !is_const_int(a->shape[d], &sh_d);
        auto ext =
            as_const_int(simplify(hull[d]->second - hull[d]->first + make_int(1, hull[d]->first.dtype())));
        if (!ext || *ext < 1 || (symbolic ? *ext > 4096 : *ext >= sh_d)) continue;
        // Accesses stay inside [lo, lo + ext): shifting by lo is a bijection onto [0, ext).
        shape[d] = make_int(*ext, a->shape[d].dtype());
        Expr lo = hull[d]->first;
        c.offset.back() = lo;
        any = true;
      }
      if (!any) continue;
      for (const ForNode* l : keep) mark.loops[l->loop_var.get()].push_back(a->name);
      c.to = Buffer(a->name, a->dtype, shape, a->scope);
      sh.map[a.get()] = c;
      a = c.to;
    }
    if (sh.map.empty()) return b;
    out.body = sh.mutate(out.body);
    if (!mark.loops.empty()) out.body = mark.mutate(out.body);
    if (out.init.defined()) out.init = sh.mutate(out.init);
    return make_block(std::move(out));
  }
};

}  // namespace

Function compact_buffers(const FunctionNode& f, bool gpu) { return with_body(f, Compactor(gpu, f).mutate(f.body)); }

}  // namespace tirc

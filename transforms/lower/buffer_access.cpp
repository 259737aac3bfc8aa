#include "transforms/lower/buffer_access.h"

#include <cstdlib>
#include <unordered_set>

#include "ir/visitor.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc::lower_detail {
namespace {

class AccessCollector : public IRVisitor {
 public:
  AccessMap out;

 protected:
  void add(const Buffer& b, const std::vector<Expr>& idx, bool ptr) {
    out[b.get()].push_back(BufferAccess{idx, ptr, stack_});
  }
  void visit_load(const LoadNode* n) override {
    add(n->buffer, n->indices, false);
    IRVisitor::visit_load(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    add(n->buffer, n->indices, true);
    IRVisitor::visit_buffer_ptr(n);
  }
  void visit_store(const StoreNode* n) override {
    add(n->buffer, n->indices, false);
    IRVisitor::visit_store(n);
  }
  void visit_block(const BlockNode* n) override {
    // Scope blocks (and the root) carry regions that name buffers; those are not accesses.
    for (auto& a : n->allocs)
      for (auto& s : a->shape) visit(s);
    if (n->init.defined()) visit(n->init);
    visit(n->body);
  }
  void visit_for(const ForNode* n) override {
    visit(n->min);
    visit(n->extent);
    stack_.push_back(Binder{n, nullptr});
    visit(n->body);
    stack_.pop_back();
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    visit(n->value);
    stack_.push_back(Binder{nullptr, n});
    visit(n->body);
    stack_.pop_back();
  }

 private:
  std::vector<Binder> stack_;
};

bool has_kind(const Expr& e, ExprKind k) {
  bool f = false;
  for_each_expr(e, [&](const Expr& x) { f = f || x.kind() == k; });
  return f;
}

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vs) {
  bool f = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.kind() == ExprKind::Var && vs.count(static_cast<const VarNode*>(x.get()))) f = true;
  });
  return f;
}

}  // namespace

std::vector<const ForNode*> BufferAccess::loops() const {
  std::vector<const ForNode*> out;
  for (auto& b : binders)
    if (b.loop) out.push_back(b.loop);
  return out;
}

AccessMap collect_accesses(const Stmt& s) {
  AccessCollector c;
  c.visit(s);
  return std::move(c.out);
}

std::vector<const ForNode*> common_loops(const std::vector<BufferAccess>& accs) {
  std::vector<const ForNode*> common;
  bool first = true;
  for (auto& a : accs) {
    auto ls = a.loops();
    if (first) {
      common = ls;
      first = false;
      continue;
    }
    size_t k = 0;
    while (k < common.size() && k < ls.size() && common[k] == ls[k]) ++k;
    common.resize(k);
  }
  return common;
}

std::vector<DimHull> access_hull(const std::vector<BufferAccess>& accs, size_t ndim, size_t depth) {
  return access_hull_kept(accs, ndim, depth, nullptr);
}

std::vector<DimHull> access_hull_kept(const std::vector<BufferAccess>& accs, size_t ndim, size_t depth,
                                      const std::unordered_set<const ForNode*>* keep) {
  std::vector<DimHull> hull(ndim);
  bool first = true;
  for (auto& a : accs) {
    if (a.pointer || a.indices.size() != ndim) return std::vector<DimHull>(ndim);
    SymRanges relax;
    VarRanges known;
    std::unordered_set<const VarNode*> relaxed;
    auto bound = [&](const Expr& e) -> SymInterval {
      if (!uses_any(e, relaxed)) return {e, e};
      return symbolic_bound(e, relax, known);
    };
    size_t loops_seen = 0;
    for (auto& b : a.binders) {
      if (b.loop) {
        const ForNode* f = b.loop;
        Expr last = f->min + f->extent - make_int(1, f->extent.dtype());
        bool by_depth = loops_seen < depth;
        if (by_depth || (keep && keep->count(f))) {  // kept: a symbol with a known range
          if (by_depth) ++loops_seen;
          if (!uses_any(f->min, relaxed) && !uses_any(f->extent, relaxed)) {
            Interval lo = const_int_bound(f->min, known), hi = const_int_bound(last, known);
            known[f->loop_var.get()] = Interval{lo.lo, hi.hi};
          }
          continue;
        }
        SymInterval lo = bound(f->min), hi = bound(last);
        relax[f->loop_var.get()] = SymInterval{lo.min, hi.max};
        relaxed.insert(f->loop_var.get());
      } else if (loops_seen >= depth) {  // a let below the kept loops: relaxed over its value
        relax[b.let->var.get()] = bound(b.let->value);
        relaxed.insert(b.let->var.get());
      }
    }
    for (size_t d = 0; d < ndim; ++d) {
      if (!first && !hull[d]) continue;
      const Expr& idx = a.indices[d];
      DimHull h;
      if (!has_kind(idx, ExprKind::Let) && !has_kind(idx, ExprKind::Load)) {
        SymInterval r = bound(idx);
        if (r.min.defined() && r.max.defined() && !uses_any(r.min, relaxed) && !uses_any(r.max, relaxed) &&
            !has_kind(r.min, ExprKind::Load) && !has_kind(r.max, ExprKind::Load))
          h = std::make_pair(r.min, r.max);
      }
      if (!first && h && h->first.dtype() != hull[d]->first.dtype()) h.reset();
      if (first || !h) {
        hull[d] = h;
        continue;
      }
      // Hull of two intervals whose ends differ by constants; otherwise unknown.
      auto dlo = as_const_int(simplify(h->first - hull[d]->first));
      auto dhi = as_const_int(simplify(h->second - hull[d]->second));
      if (!dlo || !dhi) {
        hull[d].reset();
        continue;
      }
      if (*dlo < 0) hull[d]->first = h->first;
      if (*dhi > 0) hull[d]->second = h->second;
    }
    first = false;
  }
  return hull;
}

bool hull_partitioned_by(const std::vector<DimHull>& hull, const ForNode* loop) {
  for (auto& h : hull) {
    if (!h) continue;
    auto lo = linear_form(h->first, {loop->loop_var});
    auto hi = linear_form(h->second, {loop->loop_var});
    if (!lo || !hi) continue;
    int64_t c = lo->coeffs[0];
    if (c == 0 || hi->coeffs[0] != c) continue;
    auto w = as_const_int(simplify(h->second - h->first));
    if (w && *w >= 0 && *w < std::llabs(c)) return true;
  }
  return false;
}

}  // namespace tirc::lower_detail

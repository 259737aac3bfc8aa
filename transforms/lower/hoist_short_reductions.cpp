// Loop order at lowering for strided accumulations (bench/README.md "Codegen r19"): in a
// perfect nest `for s { for r1 .. rm { for i { block } } }` whose block accumulates into a
// buffer at a constant stride >= 2 along i (the phases of a strided pool's or convolution's
// data gradient: `X_grad[.., 2 * vl0, 2 * vl1] += Y_grad[.., vl0 - r0, vl1 - r1] / 9`), the
// short reduce loops r move above the spatial loop s. Consecutive iterations of r otherwise
// update the same elements right after each other with vector code (masked span stores,
// codegen): the next load of a just-stored span waits on the store (no store-to-load
// forwarding from a masked store), 2.5x the time of the reordered nest.
#include <cstdlib>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/linear.h"

namespace tirc {
namespace {

// Reduce loops of at most this many iterations in all move (a pass over the slice each).
constexpr int64_t kMaxHoistedTrips = 16;

bool uses(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == static_cast<const ExprNode*>(v); });
  return found;
}

bool plain_loop(const ForNode* f) {
  int64_t c;
  return f->for_kind == ForKind::Serial && f->annotations.empty() && f->thread_tag.empty() &&
         is_const_int(f->min, &c) && is_const_int(f->extent, &c);
}

// The block body: stores, lets, ifs and sequences only; every buffer it stores is stored at
// one index tuple free of reduce vars and loaded only there (each spatial point owns its
// elements, so reordering points against reduce steps moves no value between them).
// *stride: the coefficient of `inner` (an iter var) in the last index of a store.
bool simple_body(const BlockNode& b, const VarNode* inner, int64_t* stride) {
  struct V : IRVisitor {
    bool ok = true;
    std::vector<const StoreNode*> stores;
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
      stores.push_back(n);
      IRVisitor::visit_store(n);
    }
    void visit_load(const LoadNode* n) override {
      loads.push_back(n);
      IRVisitor::visit_load(n);
    }
    void visit_buffer_ptr(const BufferPtrNode*) override { ok = false; }
  } v;
  v.visit(b.body);
  if (!v.ok || v.stores.empty()) return false;
  auto same = [](const std::vector<Expr>& a, const std::vector<Expr>& c) {
    if (a.size() != c.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr_identical(a[i], c[i])) return false;
    return true;
  };
  *stride = 0;
  for (auto* s : v.stores) {
    for (auto* t : v.stores)
      if (t->buffer.get() == s->buffer.get() && !same(t->indices, s->indices)) return false;
    for (auto& iv : b.iter_vars)
      for (auto& i : s->indices)
        if (iv.kind == IterKind::Reduce && uses(i, iv.var.get())) return false;
    if (s->indices.empty()) return false;
  }
  for (auto* l : v.loads)
    for (auto* s : v.stores)
      if (l->buffer.get() == s->buffer.get() && !same(l->indices, s->indices)) return false;
  for (auto* s : v.stores) {
    for (auto& iv : b.iter_vars) {
      if (iv.var.get() != inner) continue;
      auto f = linear_form(s->indices.back(), {iv.var}, true);
      if (f && std::abs(f->coeffs[0]) >= 2) *stride = f->coeffs[0];
    }
  }
  return true;
}

class Hoister : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* S = r.as<ForNode>();
    if (!S || !plain_loop(S)) return r;
    // S { R1 { ... Rm { I { block } } } }
    std::vector<const ForNode*> chain{S};
    Stmt cur = S->body;
    while (auto* f = cur.as<ForNode>()) {
      if (!plain_loop(f)) return r;
      chain.push_back(f);
      cur = f->body;
    }
    auto* br = cur.as<BlockRealizeNode>();
    if (!br || chain.size() < 3) return r;
    const BlockNode& b = *br->block.get();
    if (!b.annotations.empty() || b.init.defined() || b.iter_vars.size() != br->bindings.size()) return r;
    // Which iter vars each loop of the chain feeds.
    auto feeds = [&](const ForNode* f, IterKind* kind) {
      bool any = false;
      for (size_t k = 0; k < br->bindings.size(); ++k) {
        if (!uses(br->bindings[k], f->loop_var.get())) continue;
        if (b.iter_vars[k].kind != IterKind::Spatial && b.iter_vars[k].kind != IterKind::Reduce) return false;
        if (any && *kind != b.iter_vars[k].kind) return false;
        *kind = b.iter_vars[k].kind;
        any = true;
      }
      return any;
    };
    for (auto& iv : b.iter_vars)
      if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce) return r;
    IterKind ks, ki;
    if (!feeds(S, &ks) || ks != IterKind::Spatial || !feeds(chain.back(), &ki) || ki != IterKind::Spatial)
      return r;
    int64_t trips = 1;
    for (size_t k = 1; k + 1 < chain.size(); ++k) {
      IterKind kr;
      int64_t e;
      if (!feeds(chain[k], &kr) || kr != IterKind::Reduce) return r;
      is_const_int(chain[k]->extent, &e);
      trips *= e;
    }
    if (trips > kMaxHoistedTrips) return r;
    // The loop vars appear in the bindings and the predicate only.
    for (auto* f : chain) {
      bool in_body = false;
      for_each_expr(b.body, [&](const Expr& x) {
        in_body = in_body || x.get() == static_cast<const ExprNode*>(f->loop_var.get());
      });
      if (in_body) return r;
    }
    // The inner loop's iter var (bound to it alone, coefficient 1) strides the stores.
    const VarNode* inner = nullptr;
    for (size_t k = 0; k < br->bindings.size(); ++k)
      if (br->bindings[k].get() == static_cast<const ExprNode*>(chain.back()->loop_var.get()))
        inner = b.iter_vars[k].var.get();
    int64_t stride = 0;
    if (!inner || !simple_body(b, inner, &stride) || stride == 0) return r;
    // R1 { .. Rm { S { I { block } } } }: for a fixed spatial point the reduce steps keep
    // their order; points own their elements.
    const ForNode* I = chain.back();
    Stmt inner_loop =
        make_for(I->loop_var, I->min, I->extent, I->for_kind, I->body, I->thread_tag, I->annotations);
    Stmt out =
        make_for(S->loop_var, S->min, S->extent, S->for_kind, inner_loop, S->thread_tag, S->annotations);
    for (size_t k = chain.size() - 2; k >= 1; --k) {
      const ForNode* R = chain[k];
      out = make_for(R->loop_var, R->min, R->extent, R->for_kind, out, R->thread_tag, R->annotations);
    }
    return out;
  }
};

}  // namespace

Function hoist_short_reductions(const FunctionNode& f) {
  if (std::getenv("TIRC_LOWER_NO_HOIST_REDUCTIONS")) return with_body(f, f.body);
  return with_body(f, Hoister().mutate(f.body));
}

}  // namespace tirc

// Normalisation rewrite 14 (normalize_scan_guards.h).
#include "transforms/autodiff/normalize_scan_guards.h"

#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::ad {

namespace {

bool uses(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

// In the then-arm of `if_then_else(v == e, ..)`: loads of a stored buffer at e in a dimension
// indexed by v in every store become loads at v.
class Pin : public IRMutator {
 public:
  // Buffer -> for each dimension, the scan var indexing it in every store (null: none).
  std::unordered_map<const BufferNode*, std::vector<const VarNode*>> dims;
  bool changed = false;

 protected:
  const VarNode* v_ = nullptr;
  Expr e_;
  Expr mutate_load(const LoadNode* n, const Expr& x) override {
    Expr r = IRMutator::mutate_load(n, x);
    if (!v_) return r;
    auto it = dims.find(n->buffer.get());
    if (it == dims.end()) return r;
    auto* l = r.as<LoadNode>();
    std::vector<Expr> idx = l->indices;
    bool any = false;
    for (size_t d = 0; d < idx.size() && d < it->second.size(); ++d)
      if (it->second[d] == v_ && expr_identical(idx[d], e_)) {
        idx[d] = Expr(GetRef(v_));
        any = true;
      }
    if (!any) return r;
    changed = true;
    return make_load(l->buffer, idx);
  }
  Expr mutate_select(const SelectNode* n, const Expr& x) override;

 public:
  std::unordered_map<const VarNode*, Var> scan_vars;
  Var GetRef(const VarNode* v) { return scan_vars.at(v); }
};

Expr Pin::mutate_select(const SelectNode* n, const Expr& x) {
  auto* c = n->cond.as<BinaryNode>();
  // if_then_else only: select evaluates both arms, and a load moved to v there could read an
  // element not written yet where the guard fails.
  if (x.kind() != ExprKind::IfThenElse || !c || c->op != BinOp::EQ) return IRMutator::mutate_select(n, x);
  const VarNode* v = nullptr;
  Expr e;
  for (int side = 0; side < 2 && !v; ++side) {
    const Expr& a = side == 0 ? c->a : c->b;
    const Expr& b = side == 0 ? c->b : c->a;
    if (auto* av = a.as<VarNode>(); av && scan_vars.count(av) && !uses(b, av)) {
      v = av;
      e = b;
    }
  }
  if (!v) return IRMutator::mutate_select(n, x);
  Expr cond = mutate(n->cond);
  const VarNode* sv = v_;
  Expr se = e_;
  v_ = v;
  e_ = e;
  Expr t = mutate(n->t);
  v_ = sv;
  e_ = se;
  Expr f = mutate(n->f);
  if (cond.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return x;
  return make_if_then_else(cond, t, f);
}

struct Blocks : IRMutator {
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    const BlockNode& b = *n->block.get();
    Pin p;
    for (auto& iv : b.iter_vars)
      if (iv.kind == IterKind::Scan) p.scan_vars[iv.var.get()] = iv.var;
    if (p.scan_vars.empty() || b.iter_vars.empty()) return IRMutator::mutate_block_realize(n, s);
    bool bad = false;
    struct Stores : IRVisitor {
      Pin* p;
      bool* bad;
      void visit_store(const StoreNode* st) override {
        std::vector<const VarNode*> d;
        for (auto& i : st->indices) {
          auto* v = i.as<VarNode>();
          d.push_back(v && p->scan_vars.count(v) ? v : nullptr);
        }
        auto it = p->dims.find(st->buffer.get());
        if (it == p->dims.end()) {
          p->dims[st->buffer.get()] = d;
        } else {
          for (size_t k = 0; k < d.size() && k < it->second.size(); ++k)
            if (it->second[k] != d[k]) it->second[k] = nullptr;
        }
        IRVisitor::visit_store(st);
      }
      void visit_block_realize(const BlockRealizeNode*) override { *bad = true; }
    } sv;
    sv.p = &p;
    sv.bad = &bad;
    sv.visit(b.body);
    if (b.init.defined()) sv.visit(b.init);
    if (bad) return s;
    Stmt body = p.mutate(b.body);
    if (!p.changed) return s;
    BlockNode nb = b;
    nb.body = body;
    return make_block_realize(n->bindings, n->predicate, make_block(std::move(nb)));
  }
};

}  // namespace

Function pin_guarded_scan_loads(const FunctionNode& f) {
  auto out = std::make_shared<FunctionNode>(f);
  Stmt body = Blocks().mutate(f.body);
  if (body.same_as(f.body)) return out;
  out->body = body;
  return out;
}

}  // namespace tirc::ad

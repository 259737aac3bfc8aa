#include "transforms/autodiff/guarded_loads.h"

#include <optional>

#include "transforms/autodiff/affine.h"

namespace tirc::ad {

namespace {

// Conjuncts of c (or of !c when negate), with negated comparisons flipped.
void conjuncts(const Expr& c, bool negate, std::vector<Expr>* out) {
  if (auto* u = c.as<UnaryNode>(); u && u->op == UnOp::Not) return conjuncts(u->a, !negate, out);
  if (auto* b = c.as<BinaryNode>()) {
    if (!negate && b->op == BinOp::And) {
      conjuncts(b->a, false, out);
      conjuncts(b->b, false, out);
      return;
    }
    if (negate && b->op == BinOp::Or) {  // !(a || b) = !a && !b
      conjuncts(b->a, true, out);
      conjuncts(b->b, true, out);
      return;
    }
    if (negate) {
      switch (b->op) {
        case BinOp::LT: out->push_back(make_binary(BinOp::GE, b->a, b->b)); return;
        case BinOp::LE: out->push_back(make_binary(BinOp::GT, b->a, b->b)); return;
        case BinOp::GT: out->push_back(make_binary(BinOp::LE, b->a, b->b)); return;
        case BinOp::GE: out->push_back(make_binary(BinOp::LT, b->a, b->b)); return;
        // The else arm of `vt == 0`: with vt >= 0 (an iter var) it means vt >= 1 (gradient.cpp,
        // a scan reading its first state).
        case BinOp::EQ: out->push_back(make_binary(BinOp::NE, b->a, b->b)); return;
        default: return;  // nothing usable
      }
    }
  }
  if (!negate) out->push_back(c);
}

void walk(const Expr& e, std::vector<Expr>& guards,
          const std::function<void(const LoadNode*, const std::vector<Expr>&)>& fn) {
  if (!e.defined()) return;
  if (auto* l = e.as<LoadNode>()) {
    fn(l, guards);
    for (auto& i : l->indices) walk(i, guards, fn);
    return;
  }
  if (e.kind() == ExprKind::IfThenElse) {
    auto* s = as_select_like(e);
    walk(s->cond, guards, fn);
    size_t n = guards.size();
    conjuncts(s->cond, false, &guards);
    walk(s->t, guards, fn);
    guards.resize(n);
    conjuncts(s->cond, true, &guards);
    walk(s->f, guards, fn);
    guards.resize(n);
    return;
  }
  if (auto* s = as_select_like(e)) {
    walk(s->cond, guards, fn);
    walk(s->t, guards, fn);
    walk(s->f, guards, fn);
    return;
  }
  if (auto* b = e.as<BinaryNode>()) {
    walk(b->a, guards, fn);
    walk(b->b, guards, fn);
    return;
  }
  if (auto* u = e.as<UnaryNode>()) return walk(u->a, guards, fn);
  if (auto* c = e.as<CastNode>()) return walk(c->value, guards, fn);
  if (auto* c = e.as<CallNode>()) {
    for (auto& a : c->args) walk(a, guards, fn);
    return;
  }
  if (auto* l = e.as<LetNode>()) {
    walk(l->value, guards, fn);
    walk(l->body, guards, fn);
    return;
  }
  if (auto* p = e.as<BufferPtrNode>()) {
    for (auto& i : p->indices) walk(i, guards, fn);
  }
}

}  // namespace

void for_each_guarded_load(const Expr& e, const std::vector<Expr>& outer,
                           const std::function<void(const LoadNode*, const std::vector<Expr>&)>& fn) {
  std::vector<Expr> guards;
  for (auto& g : outer) conjuncts(g, false, &guards);
  walk(e, guards, fn);
}

bool guards_imply_at_least(const std::vector<Expr>& guards, const Expr& d, int64_t k) {
  auto da = to_affine(d);
  if (!da) return false;
  for (auto& g : guards) {
    auto* b = g.as<BinaryNode>();
    if (!b || !is_int(b->a.dtype()) || !is_int(b->b.dtype())) continue;
    auto x = to_affine(b->a), y = to_affine(b->b);
    if (!x || !y) continue;
    // The guard as p >= lo (p affine): a < b is b - a >= 1, a <= b is b - a >= 0, ...
    std::vector<std::pair<Affine, int64_t>> forms;
    Affine ba = *y, ab = *x;
    ba.add(*x, -1);
    ab.add(*y, -1);
    switch (b->op) {
      case BinOp::LT: forms.push_back({ba, 1}); break;
      case BinOp::LE: forms.push_back({ba, 0}); break;
      case BinOp::GT: forms.push_back({ab, 1}); break;
      case BinOp::GE: forms.push_back({ab, 0}); break;
      case BinOp::EQ: forms.push_back({ba, 0}), forms.push_back({ab, 0}); break;
      default: break;
    }
    for (auto& [p, lo] : forms) {
      Affine rest = *da;  // d = p + rest, rest constant => d >= lo + rest
      rest.add(p, -1);
      if (rest.is_const() && lo + rest.constant >= k) return true;
    }
  }
  return false;
}

}  // namespace tirc::ad

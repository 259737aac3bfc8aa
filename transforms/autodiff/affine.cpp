#include "transforms/autodiff/affine.h"

namespace tirc::ad {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

int64_t Affine::coeff(const VarNode* v) const {
  for (auto& [var, c] : terms)
    if (var.get() == v) return c;
  return 0;
}

void Affine::add(const Var& v, int64_t c) {
  if (c == 0) return;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].first.same_as(v)) {
      terms[i].second += c;
      if (terms[i].second == 0) terms.erase(terms.begin() + i);
      return;
    }
  terms.emplace_back(v, c);
}

void Affine::add(const Affine& o, int64_t scale) {
  for (auto& [v, c] : o.terms) add(v, c * scale);
  constant += o.constant * scale;
}

void Affine::substitute(const VarNode* v, const Affine& by) {
  int64_t c = coeff(v);
  if (c == 0) return;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].first.get() == v) {
      terms.erase(terms.begin() + i);
      break;
    }
  add(by, c);
}

std::optional<Affine> to_affine(const Expr& e, const AuxProvider& aux) {
  if (!e.defined() || !is_int(e.dtype())) return std::nullopt;
  int64_t k;
  if (is_const_int(e, &k)) {
    Affine a;
    a.constant = k;
    return a;
  }
  if (e.as<VarNode>()) {
    Affine a;
    a.add(Var(std::static_pointer_cast<const VarNode>(e.ptr())), 1);
    return a;
  }
  if (auto* c = e.as<CastNode>()) {
    if (is_int(c->value.dtype())) return to_affine(c->value, aux);
    return std::nullopt;
  }
  if (auto* u = e.as<UnaryNode>()) {
    if (u->op != UnOp::Neg) return std::nullopt;
    auto a = to_affine(u->a, aux);
    if (!a) return std::nullopt;
    return a->scaled(-1);
  }
  auto* b = e.as<BinaryNode>();
  if (!b) return std::nullopt;
  switch (b->op) {
    case BinOp::Add:
    case BinOp::Sub: {
      auto x = to_affine(b->a, aux), y = to_affine(b->b, aux);
      if (!x || !y) return std::nullopt;
      x->add(*y, b->op == BinOp::Add ? 1 : -1);
      return x;
    }
    case BinOp::Mul: {
      auto x = to_affine(b->a, aux), y = to_affine(b->b, aux);
      if (!x || !y) return std::nullopt;
      if (x->is_const()) return y->scaled(x->constant);
      if (y->is_const()) return x->scaled(y->constant);
      return std::nullopt;
    }
    case BinOp::FloorDiv:
    case BinOp::FloorMod: {
      auto x = to_affine(b->a, aux), y = to_affine(b->b, aux);
      if (!x || !y || !y->is_const() || y->constant <= 0) return std::nullopt;
      int64_t c = y->constant;
      if (x->is_const()) {
        Affine r;
        r.constant = b->op == BinOp::FloorDiv ? floor_div(x->constant, c)
                                              : x->constant - c * floor_div(x->constant, c);
        return r;
      }
      bool exact = true;
      for (auto& [v, cf] : x->terms)
        if (cf % c != 0) exact = false;
      if (exact) {
        // (c*E + k) // c = E + k // c ; (c*E + k) % c = k mod c
        Affine r;
        if (b->op == BinOp::FloorDiv) {
          for (auto& [v, cf] : x->terms) r.add(v, cf / c);
          r.constant = floor_div(x->constant, c);
        } else {
          r.constant = x->constant - c * floor_div(x->constant, c);
        }
        return r;
      }
      if (!aux) return std::nullopt;
      auto [q, m] = aux(*x, c);
      Affine r;
      r.add(b->op == BinOp::FloorDiv ? q : m, 1);
      return r;
    }
    default: return std::nullopt;
  }
}

Expr affine_to_expr(const Affine& a, DType t) {
  Expr out;
  auto term = [&](const Var& v, int64_t c) -> Expr {
    Expr ve = v;
    if (v.dtype() != t) ve = make_cast(t, ve);
    return c == 1 ? ve : make_int(c, t) * ve;
  };
  for (auto& [v, c] : a.terms)
    if (c > 0) out = out.defined() ? out + term(v, c) : term(v, c);
  for (auto& [v, c] : a.terms)
    if (c < 0) out = out.defined() ? out - term(v, -c) : make_unary(UnOp::Neg, term(v, -c));
  if (!out.defined()) return make_int(a.constant, t);
  if (a.constant > 0) out = out + make_int(a.constant, t);
  if (a.constant < 0) out = out - make_int(-a.constant, t);
  return out;
}

}  // namespace tirc::ad

#include "transforms/simplify/linear.h"

#include <algorithm>

#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"

namespace tirc {

namespace {
int64_t wmul(int64_t a, int64_t b, DType t) {
  return wrap_int(static_cast<uint64_t>(a) * static_cast<uint64_t>(b), t);
}
int64_t wadd(int64_t a, int64_t b, DType t) {
  return wrap_int(static_cast<uint64_t>(a) + static_cast<uint64_t>(b), t);
}
}  // namespace

void SumForm::add_term(const Expr& term, int64_t c) {
  c = wrap_int(static_cast<uint64_t>(c), dtype);
  if (c == 0) return;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (expr_identical(terms[i].term, term)) {
      terms[i].coeff = wadd(terms[i].coeff, c, dtype);
      if (terms[i].coeff == 0) terms.erase(terms.begin() + static_cast<long>(i));
      return;
    }
  }
  terms.push_back({term, c});
}

void SumForm::add(const SumForm& o, int64_t s) {
  for (auto& t : o.terms) add_term(t.term, wmul(t.coeff, s, dtype));
  constant = wadd(constant, wmul(o.constant, s, dtype), dtype);
}

void SumForm::scale(int64_t c) {
  c = wrap_int(static_cast<uint64_t>(c), dtype);
  if (c == 0) {
    terms.clear();
    constant = 0;
    return;
  }
  std::vector<LinearTerm> out;
  for (auto& t : terms) {
    int64_t k = wmul(t.coeff, c, dtype);
    if (k != 0) out.push_back({t.term, k});
  }
  terms = std::move(out);
  constant = wmul(constant, c, dtype);
}

namespace {
void decompose(const Expr& e, int64_t scale, SumForm* out) {
  DType t = out->dtype;
  int64_t v;
  if (is_const_int(e, &v)) {
    out->constant = wadd(out->constant, wmul(v, scale, t), t);
    return;
  }
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinOp::Add:
        decompose(b->a, scale, out);
        decompose(b->b, scale, out);
        return;
      case BinOp::Sub:
        decompose(b->a, scale, out);
        decompose(b->b, wmul(scale, -1, t), out);
        return;
      case BinOp::Mul: {
        SumForm fa = to_sum_form(b->a), fb = to_sum_form(b->b);
        if (fb.is_const()) {
          out->add(fa, wmul(scale, fb.constant, t));
          return;
        }
        if (fa.is_const()) {
          out->add(fb, wmul(scale, fa.constant, t));
          return;
        }
        // A product of two non-constant sums stays one opaque term; factor out a constant
        // coefficient when one side is a single scaled term (x*4 * y -> (x*y) * 4).
        if (fa.terms.size() == 1 && fa.constant == 0 && fb.terms.size() == 1 && fb.constant == 0) {
          int64_t k = wmul(fa.terms[0].coeff, fb.terms[0].coeff, t);
          out->add_term(make_binary(BinOp::Mul, fa.terms[0].term, fb.terms[0].term), wmul(k, scale, t));
          return;
        }
        out->add_term(e, scale);
        return;
      }
      default: break;
    }
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Neg) {
    decompose(u->a, wmul(scale, -1, t), out);
    return;
  }
  out->add_term(e, scale);
}
}  // namespace

SumForm to_sum_form(const Expr& e) {
  SumForm f;
  f.dtype = e.dtype();
  decompose(e, 1, &f);
  return f;
}

Expr from_sum_form(const SumForm& f) {
  DType t = f.dtype;
  auto imm = [&](int64_t c) { return make_imm_int(t, c); };
  // Magnitude of a negative coefficient, when it is representable (not INT_MIN).
  // Unsigned coefficients are stored zero-extended; view them as signed so that u32
  // "x - y" prints as a subtraction rather than y * 4294967295.
  auto sv = [&](int64_t c) {
    if (!is_unsigned_int(t)) return c;
    int bits = dtype_bits(t);
    return c >= (int64_t(1) << (bits - 1)) ? c - (int64_t(1) << bits) : c;
  };
  auto neg_ok = [&](int64_t c) { return c < 0 && c != dtype_min_int(t) && c != INT64_MIN; };
  Expr acc;
  std::vector<LinearTerm> pos, neg;
  for (auto& term : f.terms) {
    LinearTerm x{term.term, sv(term.coeff)};
    (neg_ok(x.coeff) ? neg : pos).push_back(x);
  }
  auto scaled = [&](const Expr& term, int64_t c) {
    return c == 1 ? term : make_binary(BinOp::Mul, term, imm(c));
  };
  for (auto& p : pos)
    acc = acc.defined() ? make_binary(BinOp::Add, acc, scaled(p.term, p.coeff)) : scaled(p.term, p.coeff);
  for (auto& n : neg) {
    if (!acc.defined())
      acc = make_binary(BinOp::Mul, n.term, imm(n.coeff));
    else
      acc = make_binary(BinOp::Sub, acc, scaled(n.term, -n.coeff));
  }
  int64_t c = sv(f.constant);
  if (!acc.defined()) return imm(c);
  if (c == 0) return acc;
  if (neg_ok(c)) return make_binary(BinOp::Sub, acc, imm(-c));
  return make_binary(BinOp::Add, acc, imm(c));
}

bool expr_uses_var(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.get() == static_cast<const ExprNode*>(v)) found = true;
  });
  return found;
}

std::optional<LinearForm> linear_form(const Expr& e, const std::vector<Var>& vars, bool allow_opaque) {
  if (!is_int(e.dtype())) return std::nullopt;
  SumForm s = to_sum_form(e);
  LinearForm f;
  f.dtype = s.dtype;
  f.coeffs.assign(vars.size(), 0);
  f.constant = s.constant;
  for (auto& term : s.terms) {
    bool matched = false;
    for (size_t k = 0; k < vars.size(); ++k)
      if (term.term.same_as(vars[k])) {
        f.coeffs[k] = term.coeff;
        matched = true;
        break;
      }
    if (matched) continue;
    for (auto& v : vars)
      if (expr_uses_var(term.term, v.get())) return std::nullopt;
    if (!allow_opaque) return std::nullopt;
    f.opaque.push_back(term);
  }
  return f;
}

Expr from_linear_form(const LinearForm& f, const std::vector<Var>& vars) {
  SumForm s;
  s.dtype = f.dtype;
  for (size_t k = 0; k < vars.size() && k < f.coeffs.size(); ++k) s.add_term(vars[k], f.coeffs[k]);
  for (auto& t : f.opaque) s.add_term(t.term, t.coeff);
  s.constant = f.constant;
  return from_sum_form(s);
}

}  // namespace tirc

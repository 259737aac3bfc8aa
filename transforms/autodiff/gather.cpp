#include "transforms/autodiff/gather.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::ad {

namespace {

struct Box {
  Expr lo, hi;  // [lo, hi) as expressions (may use scalar params)
  bool known = false;
  int64_t clo = 0, chi = 0;  // inclusive constant bounds when known
};

struct StridedX {
  int64_t stride = 1, residue = 0;
  Var l;
};

bool affine_identical(const Affine& a, const Affine& b) {
  if (a.constant != b.constant || a.terms.size() != b.terms.size()) return false;
  for (auto& [v, c] : a.terms)
    if (b.coeff(v.get()) != c) return false;
  return true;
}

class Solver {
 public:
  explicit Solver(NameGen& names) : names_(names) {}
  std::optional<GatherResult> run(const GatherInput& in);

 private:
  std::pair<Var, Var> aux(const Affine& a, int64_t c) {
    for (auto& x : auxes_)
      if (std::get<1>(x) == c && affine_identical(std::get<0>(x), a)) return {std::get<2>(x), std::get<3>(x)};
    Var q(names_.fresh("q"), it_), m(names_.fresh("m"), it_);
    auxes_.emplace_back(a, c, q, m);
    Affine eq = a;
    eq.add(q, -c);
    eq.add(m, -1);
    eqs_.push_back(eq);
    Affine lo, hi;
    lo.add(m, 1);
    hi.add(m, -1);
    hi.constant = c - 1;
    ineqs_.push_back(lo);
    ineqs_.push_back(hi);
    unknowns_.push_back(q);
    unknowns_.push_back(m);
    unknown_set_.insert(q.get());
    unknown_set_.insert(m.get());
    Box mb;
    mb.lo = make_int(0, it_);
    mb.hi = make_int(c, it_);
    mb.known = true;
    mb.clo = 0;
    mb.chi = c - 1;
    box_[m.get()] = mb;
    aux_q_.push_back({q, a, c});
    return {q, m};
  }

  std::optional<std::pair<int64_t, int64_t>> interval(const Affine& a) {
    int64_t lo = a.constant, hi = a.constant;
    for (auto& [v, c] : a.terms) {
      auto it = box_.find(v.get());
      if (it == box_.end() || !it->second.known) return std::nullopt;
      int64_t bl = it->second.clo, bh = it->second.chi;
      if (c > 0) {
        lo += c * bl;
        hi += c * bh;
      } else {
        lo += c * bh;
        hi += c * bl;
      }
    }
    return std::make_pair(lo, hi);
  }

  // Splits a condition into equations, inequalities and residual conditions.
  bool add_cond(const Expr& c, bool negate = false) {
    int64_t k;
    if (is_const_int(c, &k)) {
      if ((k != 0) == negate) empty_ = true;
      return true;
    }
    if (auto* u = c.as<UnaryNode>(); u && u->op == UnOp::Not) return add_cond(u->a, !negate);
    auto* b = c.as<BinaryNode>();
    if (b && b->op == BinOp::And && !negate) {
      add_cond(b->a);
      add_cond(b->b);
      return true;
    }
    if (b && b->op == BinOp::Or && negate) {
      add_cond(b->a, true);
      add_cond(b->b, true);
      return true;
    }
    if (b && binop_is_compare(b->op) && is_int(b->a.dtype())) {
      auto x = to_affine(b->a, auxp_), y = to_affine(b->b, auxp_);
      if (x && y) {
        BinOp op = b->op;
        if (negate) {
          switch (op) {
            case BinOp::LT: op = BinOp::GE; break;
            case BinOp::LE: op = BinOp::GT; break;
            case BinOp::GT: op = BinOp::LE; break;
            case BinOp::GE: op = BinOp::LT; break;
            case BinOp::EQ: op = BinOp::NE; break;
            case BinOp::NE: op = BinOp::EQ; break;
            default: break;
          }
        }
        Affine d = *x;  // d = a - b
        d.add(*y, -1);
        switch (op) {
          case BinOp::EQ: eqs_.push_back(d); return true;
          case BinOp::GE: ineqs_.push_back(d); return true;
          case BinOp::GT:
            d.constant -= 1;
            ineqs_.push_back(d);
            return true;
          case BinOp::LE: ineqs_.push_back(d.scaled(-1)); return true;
          case BinOp::LT: {
            Affine e = d.scaled(-1);
            e.constant -= 1;
            ineqs_.push_back(e);
            return true;
          }
          case BinOp::NE: {
            // v != an end of v's range (`if_then_else(t == 0, ...)` in scans, edges of
            // pads): a bound, so the adjoint's loops skip the point instead of testing it.
            if (d.terms.size() != 1) break;
            int64_t cf = d.terms[0].second;
            auto bx = box_.find(d.terms[0].first.get());
            if ((cf != 1 && cf != -1) || bx == box_.end() || !bx->second.known) break;
            int64_t root = cf == 1 ? -d.constant : d.constant;
            Affine e;
            if (root < bx->second.clo || root > bx->second.chi) return true;  // always true
            if (root == bx->second.clo) {
              e.add(d.terms[0].first, 1);
              e.constant = -(root + 1);  // v >= root + 1
            } else if (root == bx->second.chi) {
              e.add(d.terms[0].first, -1);
              e.constant = root - 1;  // v <= root - 1
            } else {
              break;
            }
            ineqs_.push_back(e);
            return true;
          }
          default: break;
        }
      }
    }
    residual_.push_back(negate ? make_unary(UnOp::Not, c) : c);
    return true;
  }

  void substitute_all(const VarNode* v, const Affine& by) {
    for (auto& e : eqs_) e.substitute(v, by);
    for (auto& e : ineqs_) e.substitute(v, by);
    for (auto& [k, s] : sol_) s.substitute(v, by);
    for (auto& [k, s] : dep_) s.substitute(v, by);
    for (auto& [k, s] : nonaff_) s.num.substitute(v, by);
    for (auto& [a, c] : divis_) a.substitute(v, by);
  }

  int64_t box_size(const VarNode* v) {
    auto it = box_.find(v);
    if (it == box_.end() || !it->second.known) return std::numeric_limits<int64_t>::max() / 4;
    return it->second.chi - it->second.clo + 1;
  }

  bool eliminate();
  void make_strided(size_t d, int64_t stride, int64_t residue);
  Expr render(const Affine& a);
  Expr render_ge0(const Affine& a);
  struct NonAff {
    Affine num;
    int64_t c;
    int kind;  // 0: num // c, 1: num % c, 2: -(num // c), 3: (num // c) % n
    int64_t n = 0;
  };
  std::unordered_map<const VarNode*, NonAff> nonaff_;
  std::vector<std::pair<Affine, int64_t>> divis_;
  std::vector<Expr> residual_expr_;  // over new loop vars

  // Index dtype of the solver's own vars and rendered forms: i64 when a forward loop, index
  // or shape is i64 (mixing i32 and i64 in one operation is ill-typed), else i32.
  DType it_ = DType::I32;
  Expr idx(const Expr& e) const { return as_dtype(e, it_); }
  static Expr as_dtype(const Expr& e, DType t) { return e.dtype() == t ? e : make_cast(t, e); }

  NameGen& names_;
  AuxProvider auxp_ = [this](const Affine& a, int64_t c) { return aux(a, c); };
  std::vector<Affine> eqs_, ineqs_;
  std::vector<Expr> residual_;
  std::vector<Var> unknowns_;
  std::unordered_set<const VarNode*> unknown_set_;
  std::unordered_map<const VarNode*, Box> box_;
  std::unordered_map<const VarNode*, Affine> sol_, dep_;
  std::vector<std::tuple<Affine, int64_t, Var, Var>> auxes_;
  struct AuxQ {
    Var q;
    Affine a;
    int64_t c;
  };
  std::vector<AuxQ> aux_q_;
  std::vector<Var> xs_;
  std::vector<Expr> shape_;
  std::unordered_map<const VarNode*, size_t> x_index_;
  std::unordered_map<size_t, StridedX> strided_;
  bool empty_ = false;
};

void Solver::make_strided(size_t d, int64_t stride, int64_t residue) {
  StridedX s;
  s.stride = stride;
  s.residue = residue;
  s.l = Var(names_.fresh("al"), it_);
  Affine by;
  by.add(s.l, stride);
  by.constant = residue;
  Box b;
  b.lo = make_int(0, it_);
  int64_t h;
  if (is_const_int(shape_[d], &h)) {
    int64_t n = std::max<int64_t>(0, ceil_div(h - residue, stride));
    b.hi = make_int(n, it_);
    b.known = true;
    b.clo = 0;
    b.chi = n - 1;
  } else {
    b.hi =
        floordiv(idx(shape_[d]) - make_int(residue, it_) + make_int(stride - 1, it_), make_int(stride, it_));
  }
  box_[s.l.get()] = b;
  substitute_all(xs_[d].get(), by);
  strided_[d] = s;
}

Expr Solver::render(const Affine& a) {
  Affine lin;
  lin.constant = a.constant;
  Expr extra;
  for (auto& [v, c] : a.terms) {
    auto it = nonaff_.find(v.get());
    if (it == nonaff_.end()) {
      lin.add(v, c);
      continue;
    }
    const NonAff& n = it->second;
    Expr num = render(n.num);
    Expr e = n.kind == 1 ? floormod(num, make_int(n.c, it_)) : floordiv(num, make_int(n.c, it_));
    if (n.kind == 2) e = make_unary(UnOp::Neg, e);
    if (n.kind == 3) e = floormod(e, make_int(n.n, it_));
    if (c != 1) e = make_int(c, it_) * e;
    extra = extra.defined() ? extra + e : e;
  }
  Expr base = affine_to_expr(lin, it_);
  if (!extra.defined()) return base;
  if (lin.is_const() && lin.constant == 0) return extra;
  return extra + base;
}

// a >= 0, written with the negative terms moved to the right-hand side.
Expr Solver::render_ge0(const Affine& a) {
  bool has_nonaff = false;
  for (auto& [v, c] : a.terms)
    if (nonaff_.count(v.get())) has_nonaff = true;
  Affine pos, neg;
  for (auto& [v, c] : a.terms) (c > 0 ? pos : neg).add(v, c > 0 ? c : -c);
  if (a.constant >= 0)
    pos.constant = a.constant;
  else
    neg.constant = -a.constant;
  if (has_nonaff) return make_binary(BinOp::GE, render(pos), render(neg));
  return make_binary(BinOp::GE, affine_to_expr(pos, it_), affine_to_expr(neg, it_));
}

bool Solver::eliminate() {
  auto count_unknowns = [&](const Affine& eq, Var* last, int64_t* coef) {
    int n = 0;
    for (auto& [v, c] : eq.terms)
      if (unknown_set_.count(v.get())) {
        ++n;
        if (last) *last = v;
        if (coef) *coef = c;
      }
    return n;
  };
  auto solve_unit = [&](size_t i, const Var& v) {
    Affine eq = eqs_[i];
    eqs_.erase(eqs_.begin() + i);
    int64_t c = eq.coeff(v.get());
    Affine rest = eq;
    rest.add(v, -c);
    Affine by = rest.scaled(-c);  // c = +-1
    unknown_set_.erase(v.get());
    sol_[v.get()] = by;
    substitute_all(v.get(), by);
  };
  for (;;) {
    bool progress = false;
    // Divide each equation by the gcd of its coefficients (no integer solution: empty).
    for (auto& eq : eqs_) {
      int64_t g = 0;
      for (auto& [v, c] : eq.terms) g = std::gcd(g, std::llabs(c));
      if (g <= 1) continue;
      if (eq.constant % g != 0) {
        empty_ = true;
        return true;
      }
      Affine d;
      for (auto& [v, c] : eq.terms) d.add(v, c / g);
      d.constant = eq.constant / g;
      eq = d;
    }
    // (a) an unknown pinned by an equation of its own.
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      Var u;
      int64_t a = 0;
      if (count_unknowns(eqs_[i], &u, &a) == 1 && (a == 1 || a == -1)) {
        solve_unit(i, u);
        progress = true;
      }
    }
    if (progress) continue;
    // (e) equations between known vars: an x with a unit coefficient becomes dependent.
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      if (count_unknowns(eqs_[i], nullptr, nullptr) != 0) continue;
      Affine eq = eqs_[i];
      eqs_.erase(eqs_.begin() + i);
      progress = true;
      if (eq.is_const()) {
        if (eq.constant != 0) empty_ = true;
        break;
      }
      bool done = false;
      for (auto& [v, c] : eq.terms) {
        auto xi = x_index_.find(v.get());
        if (xi == x_index_.end() || (c != 1 && c != -1) || dep_.count(v.get())) continue;
        Var xv = v;
        Affine rest = eq;
        rest.add(xv, -c);
        Affine by = rest.scaled(-c);
        substitute_all(xv.get(), by);
        dep_[xv.get()] = by;
        ineqs_.push_back(by);
        auto hi = to_affine(shape_[xi->second]);
        if (hi) {
          Affine u = *hi;
          u.constant -= 1;
          u.add(by, -1);
          ineqs_.push_back(u);
        } else {
          residual_expr_.push_back(make_binary(BinOp::LT, render(by), idx(shape_[xi->second])));
        }
        done = true;
        break;
      }
      if (!done) residual_expr_.push_back(make_binary(BinOp::EQ, render(eq), make_int(0, it_)));
    }
    if (progress) continue;
    // (b) mixed radix: sum c_k u_k = K with c_1 = 1, u_k in [0, n_k), c_{k+1} = c_k n_k
    //     (fused iterators of reshapes/flattens): u_k = (K // c_k) % n_k, the last K // c_n.
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      std::vector<std::pair<Var, int64_t>> us;
      for (auto& [v, c] : eqs_[i].terms)
        if (unknown_set_.count(v.get())) us.emplace_back(v, c);
      if (us.size() < 2) continue;
      int64_t sign = us[0].second > 0 ? 1 : -1;
      bool ok = true;
      for (auto& [v, c] : us) ok = ok && (c > 0) == (sign > 0);
      if (!ok) continue;
      std::sort(us.begin(), us.end(),
                [](auto& a, auto& b) { return std::llabs(a.second) < std::llabs(b.second); });
      if (std::llabs(us[0].second) != 1) continue;
      for (size_t k = 0; k + 1 < us.size() && ok; ++k) {
        auto b = box_.find(us[k].first.get());
        ok = b != box_.end() && b->second.known && b->second.clo == 0 &&
             std::llabs(us[k + 1].second) == std::llabs(us[k].second) * (b->second.chi + 1);
      }
      for (auto& e : eqs_)
        if (&e != &eqs_[i])
          for (auto& [v, c] : us) ok = ok && !e.uses(v.get());
      if (!ok) continue;
      Affine eq = eqs_[i].scaled(sign);
      Affine K = eq;
      for (auto& [v, c] : us) K.add(v, -eq.coeff(v.get()));
      K = K.scaled(-1);
      eqs_.erase(eqs_.begin() + i);
      for (size_t k = 0; k < us.size(); ++k) {
        int64_t c = std::llabs(us[k].second);
        if (k + 1 == us.size())
          nonaff_[us[k].first.get()] = NonAff{K, c, 0, 0};
        else if (c == 1)
          nonaff_[us[k].first.get()] = NonAff{K, box_size(us[k].first.get()), 1, 0};
        else
          nonaff_[us[k].first.get()] = NonAff{K, c, 3, box_size(us[k].first.get())};
        unknown_set_.erase(us[k].first.get());
      }
      progress = true;
    }
    if (progress) continue;
    // (d) a*u + e*x + k = 0 with |a| > 1: x runs over its residue class modulo |a|.
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      Var u;
      int64_t a = 0;
      if (count_unknowns(eqs_[i], &u, &a) != 1) continue;
      Affine rest = eqs_[i];
      rest.add(u, -a);
      if (rest.terms.size() != 1) continue;
      auto xi = x_index_.find(rest.terms[0].first.get());
      int64_t e = rest.terms[0].second;
      if (xi == x_index_.end() || (e != 1 && e != -1) || strided_.count(xi->second) || dep_.count(xi->first))
        continue;
      int64_t s = a < 0 ? -a : a;
      int64_t r = ((-e * rest.constant) % s + s) % s;
      make_strided(xi->second, s, r);
      Affine& eq = eqs_[i];
      for (auto& [v, c] : eq.terms)
        if (c % s != 0) return false;
      if (eq.constant % s != 0) return false;
      Affine div;
      for (auto& [v, c] : eq.terms) div.add(v, c / s);
      div.constant = eq.constant / s;
      eq = div;
      progress = true;
    }
    if (progress) continue;
    // (c) pivot on the unknown with the largest range, so that the vars left free (the
    //     reduce vars of the adjoint block) are the short ones. A non-unit pivot is taken
    //     only when the var appears in a single equation: u = K // a with K % a == 0.
    std::vector<std::pair<int64_t, Var>> cands;
    for (auto& eq : eqs_)
      for (auto& [v, c] : eq.terms)
        if (unknown_set_.count(v.get())) cands.emplace_back(box_size(v.get()), v);
    std::stable_sort(cands.begin(), cands.end(), [](auto& x, auto& y) { return x.first > y.first; });
    for (auto& [sz, v] : cands) {
      int unit_eq = -1, uses = 0, last = -1;
      for (size_t i = 0; i < eqs_.size(); ++i) {
        int64_t c = eqs_[i].coeff(v.get());
        if (c == 0) continue;
        ++uses;
        last = static_cast<int>(i);
        if ((c == 1 || c == -1) && unit_eq < 0) unit_eq = static_cast<int>(i);
      }
      if (unit_eq >= 0) {
        solve_unit(unit_eq, v);
        progress = true;
        break;
      }
      if (uses == 1) {
        Affine eq = eqs_[last];
        eqs_.erase(eqs_.begin() + last);
        int64_t a = eq.coeff(v.get());
        Affine rest = eq;
        rest.add(v, -a);
        Affine num = a > 0 ? rest.scaled(-1) : rest;  // v = num / |a|
        int64_t c = a > 0 ? a : -a;
        nonaff_[v.get()] = NonAff{num, c, 0, 0};
        divis_.emplace_back(num, c);
        unknown_set_.erase(v.get());
        progress = true;
        break;
      }
    }
    if (progress) continue;
    for (auto& eq : eqs_)
      if (count_unknowns(eq, nullptr, nullptr) != 0) return false;  // no pivot: scatter
    return true;
  }
}

std::optional<GatherResult> Solver::run(const GatherInput& in) {
  for (auto& l : in.loops)
    if (l.var.dtype() == DType::I64 || l.extent.dtype() == DType::I64) it_ = DType::I64;
  for (auto& e : in.index)
    if (e.dtype() == DType::I64) it_ = DType::I64;
  for (auto& e : in.shape)
    if (e.dtype() == DType::I64) it_ = DType::I64;
  // Forward loop vars are the unknowns.
  std::unordered_set<const VarNode*> loopvars;
  for (auto& l : in.loops) loopvars.insert(l.var.get());
  for (auto& l : in.loops) {
    auto mn = to_affine(l.min), ext = to_affine(l.extent);
    if (!mn || !ext) return std::nullopt;
    Affine last = *mn;
    last.add(*ext);
    last.constant -= 1;
    bool dependent = false;
    for (auto& [v, c] : last.terms)
      if (loopvars.count(v.get())) dependent = true;
    for (auto& [v, c] : mn->terms)
      if (loopvars.count(v.get())) dependent = true;
    Box b;
    if (!dependent) {
      b.lo = as_dtype(l.min, l.var.dtype());
      b.hi = as_dtype(make_end(l.min, l.extent), l.var.dtype());
      if (mn->is_const() && last.is_const()) {
        b.known = true;
        b.clo = mn->constant;
        b.chi = last.constant;
      }
    } else {
      auto lo = interval(*mn), hi = interval(last);
      if (!lo || !hi) return std::nullopt;
      b.known = true;
      b.clo = lo->first;
      b.chi = hi->second;
      b.lo = make_int(b.clo, l.var.dtype());
      b.hi = make_int(b.chi + 1, l.var.dtype());
    }
    box_[l.var.get()] = b;
    unknowns_.push_back(l.var);
    unknown_set_.insert(l.var.get());
    Affine lo = Affine();
    lo.add(l.var, 1);
    lo.add(*mn, -1);
    ineqs_.push_back(lo);
    Affine hi = last;
    hi.add(l.var, -1);
    ineqs_.push_back(hi);
  }
  shape_ = in.shape;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    Var x(names_.fresh("ax"), it_);
    xs_.push_back(x);
    x_index_[x.get()] = d;
    Box b;
    b.lo = make_int(0, it_);
    b.hi = idx(in.shape[d]);
    int64_t h;
    if (is_const_int(in.shape[d], &h)) {
      b.known = true;
      b.clo = 0;
      b.chi = h - 1;
    }
    box_[x.get()] = b;
  }
  for (size_t d = 0; d < in.index.size(); ++d) {
    auto a = to_affine(in.index[d], auxp_);
    if (!a) return std::nullopt;
    a->add(xs_[d], -1);
    eqs_.push_back(*a);
  }
  for (auto& c : in.conds) add_cond(c);
  for (auto& sp : in.splits) {
    // The window var must still be an unknown: a second split of the same var (or of one
    // already solved) would leave its residue counter unbound.
    if (!unknown_set_.count(sp.w.get()) || strided_.count(sp.dim)) return std::nullopt;
    make_strided(sp.dim, sp.stride, sp.residue);
    Box& bw = box_[sp.w.get()];
    if (!bw.known) return std::nullopt;
    int64_t tlo = ceil_div(bw.clo - sp.w_residue, sp.stride),
            thi = floor_div(bw.chi - sp.w_residue, sp.stride);
    if (thi < tlo) {
      GatherResult r;
      r.empty = true;
      return r;
    }
    Var t(names_.fresh("t"), it_);
    Box bt;
    bt.known = true;
    bt.clo = tlo;
    bt.chi = thi;
    bt.lo = make_int(tlo, it_);
    bt.hi = make_int(thi + 1, it_);
    box_[t.get()] = bt;
    Affine by;
    by.add(t, sp.stride);
    by.constant = sp.w_residue;
    unknown_set_.erase(sp.w.get());
    unknown_set_.insert(t.get());
    for (auto& u : unknowns_)
      if (u.same_as(sp.w)) u = t;
    sol_[sp.w.get()] = by;
    substitute_all(sp.w.get(), by);
  }
  // Boxes of the quotient aux vars (needed if they stay free).
  for (auto& q : aux_q_) {
    auto iv = interval(q.a);
    if (!iv) continue;
    Box b;
    b.known = true;
    b.clo = floor_div(iv->first, q.c);
    b.chi = floor_div(iv->second, q.c);
    b.lo = make_int(b.clo, q.q.dtype());
    b.hi = make_int(b.chi + 1, q.q.dtype());
    box_[q.q.get()] = b;
  }
  if (!eliminate()) return std::nullopt;

  GatherResult res;
  if (empty_) {
    res.empty = true;
    return res;
  }
  // Loops: independent x's (or their residue-class counters), then the free unknowns,
  // each over its whole (constant) box; the bounds become the `where` predicate.
  std::vector<Var> order;
  std::vector<size_t> order_dim;
  for (size_t d = 0; d < xs_.size(); ++d) {
    if (dep_.count(xs_[d].get())) continue;
    order.push_back(strided_.count(d) ? strided_[d].l : xs_[d]);
    order_dim.push_back(d);
  }
  for (auto& u : unknowns_)
    if (unknown_set_.count(u.get())) {
      auto it = box_.find(u.get());
      if (it == box_.end()) return std::nullopt;  // unbounded free var
      order.push_back(u);
      order_dim.push_back(SIZE_MAX);
    }
  // Inequalities on a single loop var with constant bounds shrink that var's box.
  {
    std::unordered_set<const VarNode*> in_order;
    for (auto& w : order) in_order.insert(w.get());
    std::vector<Affine> kept;
    for (auto& q : ineqs_) {
      if (q.terms.size() == 1 && in_order.count(q.terms[0].first.get())) {
        Box& b = box_[q.terms[0].first.get()];
        int64_t a = q.terms[0].second, k = q.constant;
        if (b.known) {
          if (a > 0)
            b.clo = std::max(b.clo, ceil_div(-k, a));
          else
            b.chi = std::min(b.chi, floor_div(k, -a));
          if (b.chi < b.clo) {
            res.empty = true;
            return res;
          }
          b.lo = make_int(b.clo, q.terms[0].first.dtype());
          b.hi = make_int(b.chi + 1, q.terms[0].first.dtype());
          continue;
        }
      }
      kept.push_back(q);
    }
    ineqs_ = kept;
  }
  // `c*w + rest >= 0` (c = +-1) with w a loop of the result whose box [lo, hi) is symbolic
  // (scalar params): implied by the loop bounds when `lo + rest` (c = 1) or
  // `rest - (hi - 1)` (c = -1) is a constant >= 0. (A loop `for i in serial(n)` gives
  // `i >= 0` and `n - 1 - i >= 0`, which would otherwise stay as a `where`.)
  std::unordered_set<const VarNode*> looped;
  for (auto& w : order) looped.insert(w.get());
  auto implied_by_box = [&](const Affine& q) {
    for (auto& [v, c] : q.terms) {
      if ((c != 1 && c != -1) || !looped.count(v.get())) continue;
      auto it = box_.find(v.get());
      if (it == box_.end()) continue;
      Affine rest = q;
      rest.add(v, -c);
      auto bound = to_affine(c == 1 ? it->second.lo : it->second.hi);
      if (!bound) continue;
      Affine d = rest;
      if (c == 1) {
        d.add(*bound, 1);
      } else {
        d.add(*bound, -1);
        d.constant += 1;
      }
      if (d.is_const() && d.constant >= 0) return true;
    }
    return false;
  };
  // A free unknown u pinned to one value by two inequalities `a*u + r1 >= 0` and
  // `-a*u + r2 >= 0` with r1 + r2 == a - 1 (the interval [-r1/a, r2/a] is shorter than 1
  // and holds exactly the integer floor(r2 / a)) is that value, not a reduce loop over a
  // box with a `where`: the quotient of a cyclic shift `X[(i + 3) % 5]` (roll), whose
  // inverse `i = 5*q + x - 3` has one q in range per x. Only when u occurs in no other
  // condition.
  std::unordered_map<const VarNode*, std::pair<Affine, int64_t>> pinned;  // u -> (r2, a)
  std::vector<Affine> pin_bounds;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order_dim[i] != SIZE_MAX) continue;
    const VarNode* u = order[i].get();
    std::vector<size_t> uses;
    for (size_t k = 0; k < ineqs_.size(); ++k)
      if (ineqs_[k].uses(u)) uses.push_back(k);
    bool other = false;
    for (auto& [a, c] : divis_) other = other || a.uses(u);
    for (auto& [k, na] : nonaff_) other = other || na.num.uses(u);
    if (other || uses.size() != 2) continue;
    const Affine &q1 = ineqs_[uses[0]], &q2 = ineqs_[uses[1]];
    int64_t a1 = q1.coeff(u), a2 = q2.coeff(u);
    if (a1 != -a2) continue;
    Affine sum = q1;
    sum.add(q2);
    int64_t a = a1 > 0 ? a1 : a2;
    if (!sum.is_const() || sum.constant != a - 1) continue;
    Affine r2 = a1 > 0 ? q2 : q1;
    r2.add(order[i], a);
    bool free_other = false;
    for (size_t j = 0; j < order.size(); ++j)
      free_other = free_other || (j != i && order_dim[j] == SIZE_MAX && r2.uses(order[j].get()));
    if (free_other) continue;
    pinned[u] = {r2, a};
    ineqs_.erase(ineqs_.begin() + uses[1]);
    ineqs_.erase(ineqs_.begin() + uses[0]);
    // u's own range (its loop's box, which the box shrinking above took out of ineqs_) still
    // holds: clo <= floor(r2 / a) <= chi, i.e. r2 - a*clo >= 0 and a*chi + a - 1 - r2 >= 0
    // (dropped when the loops imply them below). Before, a split loop moved by compute_at
    // (`vi = j0 * 4 + ax0` under a `%` guard) pinned j0 = (x - 2) // 4 for every x: F_grad
    // loaded T_grad[-1].
    auto bit = box_.find(u);
    if (bit != box_.end() && bit->second.known) {
      Affine lo = r2, hi;
      lo.constant -= a * bit->second.clo;
      hi.add(r2, -1);
      hi.constant += a * bit->second.chi + a - 1;
      pin_bounds.push_back(lo);
      pin_bounds.push_back(hi);
    }
  }
  ineqs_.insert(ineqs_.end(), pin_bounds.begin(), pin_bounds.end());
  if (!pinned.empty()) {
    std::vector<Var> o2;
    std::vector<size_t> d2;
    for (size_t i = 0; i < order.size(); ++i)
      if (!pinned.count(order[i].get())) o2.push_back(order[i]), d2.push_back(order_dim[i]);
    order = o2;
    order_dim = d2;
  }
  std::vector<Expr> pred;
  for (auto& q : ineqs_) {
    bool has_nonaff = false;
    for (auto& [v, c] : q.terms)
      if (nonaff_.count(v.get())) has_nonaff = true;
    if (!has_nonaff && implied_by_box(q)) continue;
    if (!has_nonaff) {
      auto iv = interval(q);
      if (iv && iv->first >= 0) continue;  // holds on the whole box
      if (iv && iv->second < 0) {
        res.empty = true;
        return res;
      }
      if (q.is_const()) {
        if (q.constant < 0) {
          res.empty = true;
          return res;
        }
        continue;
      }
    }
    pred.push_back(render_ge0(q));
  }
  for (auto& [num, c] : divis_)
    pred.push_back(make_binary(BinOp::EQ, floormod(render(num), make_int(c, it_)), make_int(0, it_)));

  std::unordered_map<const VarNode*, Expr> to_iter;
  for (size_t i = 0; i < order.size(); ++i) {
    const Var& w = order[i];
    Box& b = box_[w.get()];
    GatherLoop gl;
    gl.loop_var = w;
    gl.lo = b.lo;
    gl.hi = b.hi;
    if (order_dim[i] != SIZE_MAX) {
      size_t d = order_dim[i];
      gl.kind = IterKind::Spatial;
      // Iter vars take the dtype of the loop var they bind (an i64 loop gets an i64 iter
      // var: i32 vars bound to i64 loops were ill-typed, hidden by the printer).
      gl.iter_var = Var(names_.fresh(strided_.count(d) ? "vl" : "v"), w.dtype());
      gl.iter_extent = strided_.count(d) ? b.hi : as_dtype(shape_[d], w.dtype());
      gl.binding = w;
      to_iter[w.get()] = gl.iter_var;
    } else {
      gl.kind = IterKind::Reduce;
      gl.iter_var = Var(names_.fresh("r"), w.dtype());
      int64_t lo;
      if (is_const_int(b.lo, &lo) && lo == 0) {
        gl.iter_extent = b.hi;
        gl.binding = w;
        to_iter[w.get()] = gl.iter_var;
      } else {
        gl.iter_extent = make_extent(b.lo, b.hi);
        gl.binding = w - b.lo;
        to_iter[w.get()] = gl.iter_var + b.lo;
      }
    }
    res.loops.push_back(gl);
  }
  // Pinned unknowns: floor(r2 / a) over the loops (r2 uses no other free unknown); pin_loop
  // is the same over the loop vars, for the `where` (a residual condition of the forward,
  // e.g. an if_then_else guard, gets the solution of a forward loop var, which may hold a
  // pinned quotient: it was left there, unbound).
  std::unordered_map<const VarNode*, Expr> pin_loop;
  for (auto& [u, ra] : pinned) {
    Expr r = render(ra.first);
    r = ra.second == 1 ? r : floordiv(r, make_int(ra.second, it_));
    pin_loop[u] = as_dtype(r, u->dtype);
    to_iter[u] = substitute(pin_loop[u], to_iter);
  }
  auto iter_expr = [&](const Affine& a) { return substitute(render(a), to_iter); };
  for (size_t d = 0; d < xs_.size(); ++d) {
    if (dep_.count(xs_[d].get())) {
      res.target_index.push_back(iter_expr(dep_[xs_[d].get()]));
    } else if (strided_.count(d)) {
      Affine a;
      a.add(strided_[d].l, strided_[d].stride);
      a.constant = strided_[d].residue;
      res.target_index.push_back(iter_expr(a));
    } else {
      res.target_index.push_back(to_iter[xs_[d].get()]);
    }
  }
  std::unordered_map<const VarNode*, Expr> subst_loop;
  for (auto& l : in.loops) {
    Affine a;
    auto it = sol_.find(l.var.get());
    if (it != sol_.end())
      a = it->second;
    else
      a.add(l.var, 1);
    // Rendered in the solver's index dtype: a loop var of another dtype gets its value cast
    // back, so that the forward expressions it appears in stay well typed.
    subst_loop[l.var.get()] = as_dtype(substitute(render(a), pin_loop), l.var.dtype());
    res.subst[l.var.get()] = as_dtype(substitute(subst_loop[l.var.get()], to_iter), l.var.dtype());
  }
  for (auto& r : residual_) {
    Expr e = substitute(r, subst_loop);
    bool has_load = false;
    for_each_expr(e, [&](const Expr& x) {
      if (x.as<LoadNode>()) has_load = true;
    });
    if (has_load)
      res.residual.push_back(substitute(e, to_iter));
    else
      pred.push_back(e);
  }
  for (auto& e : residual_expr_) pred.push_back(e);
  for (auto& e : pred) e = substitute(e, pin_loop);
  Expr p;
  for (auto& e : pred) p = p.defined() ? make_binary(BinOp::And, p, e) : e;
  res.predicate = p.defined() ? p : make_bool(true);
  return res;
}

}  // namespace

std::optional<GatherResult> solve_gather(const GatherInput& in, NameGen& names) {
  Solver s(names);
  return s.run(in);
}

}  // namespace tirc::ad

#include "transforms/autodiff/gather.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "ir/mutator.h"

namespace tirc::ad {

namespace {

struct Box {
  Expr lo, hi;      // [lo, hi) as expressions (may use scalar params)
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
    Var q(names_.fresh("q")), m(names_.fresh("m"));
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
    mb.lo = make_int(0);
    mb.hi = make_int(c);
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
          case BinOp::GT: d.constant -= 1; ineqs_.push_back(d); return true;
          case BinOp::LE: ineqs_.push_back(d.scaled(-1)); return true;
          case BinOp::LT: {
            Affine e = d.scaled(-1);
            e.constant -= 1;
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
  }

  int64_t box_size(const VarNode* v) {
    auto it = box_.find(v);
    if (it == box_.end() || !it->second.known) return std::numeric_limits<int64_t>::max() / 4;
    return it->second.chi - it->second.clo + 1;
  }

  bool eliminate();
  void make_strided(size_t d, int64_t stride, int64_t residue);

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
  s.l = Var(names_.fresh("al"));
  Affine by;
  by.add(s.l, stride);
  by.constant = residue;
  Box b;
  b.lo = make_int(0);
  int64_t h;
  if (is_const_int(shape_[d], &h)) {
    int64_t n = std::max<int64_t>(0, ceil_div(h - residue, stride));
    b.hi = make_int(n);
    b.known = true;
    b.clo = 0;
    b.chi = n - 1;
  } else {
    b.hi = floordiv(shape_[d] - make_int(residue) + make_int(stride - 1), make_int(stride));
  }
  box_[s.l.get()] = b;
  substitute_all(xs_[d].get(), by);
  strided_[d] = s;
}

bool Solver::eliminate() {
  for (;;) {
    // 1. A unit pivot on an unknown: prefer the unknown with the largest range, so that
    //    the leftover (reduce) vars are the short ones.
    int best_eq = -1;
    Var best_var;
    int64_t best_size = -1;
    for (size_t i = 0; i < eqs_.size(); ++i)
      for (auto& [v, c] : eqs_[i].terms) {
        if (!unknown_set_.count(v.get()) || sol_.count(v.get()) || (c != 1 && c != -1)) continue;
        int64_t sz = box_size(v.get());
        if (sz > best_size) {
          best_size = sz;
          best_eq = static_cast<int>(i);
          best_var = v;
        }
      }
    if (best_eq >= 0) {
      Affine eq = eqs_[best_eq];
      eqs_.erase(eqs_.begin() + best_eq);
      int64_t c = eq.coeff(best_var.get());
      Affine rest = eq;
      rest.add(best_var, -c);
      Affine by = rest.scaled(-c);  // c = +-1: v = -rest / c = -c * rest
      sol_[best_var.get()] = by;
      substitute_all(best_var.get(), by);
      continue;
    }
    // 2. Equations without unknowns: an x with a unit coefficient becomes dependent.
    bool progress = false;
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      bool has_unknown = false;
      for (auto& [v, c] : eqs_[i].terms)
        if (unknown_set_.count(v.get())) has_unknown = true;
      if (has_unknown) continue;
      Affine eq = eqs_[i];
      if (eq.is_const()) {
        if (eq.constant != 0) empty_ = true;
        eqs_.erase(eqs_.begin() + i);
        progress = true;
        break;
      }
      for (auto& [v, c] : eq.terms) {
        auto xi = x_index_.find(v.get());
        if (xi == x_index_.end() || (c != 1 && c != -1) || dep_.count(v.get())) continue;
        Var xv = v;
        Affine rest = eq;
        rest.add(xv, -c);
        Affine by = rest.scaled(-c);
        eqs_.erase(eqs_.begin() + i);
        substitute_all(xv.get(), by);
        dep_[xv.get()] = by;
        // 0 <= x < shape
        ineqs_.push_back(by);
        auto hi = to_affine(shape_[xi->second]);
        if (hi) {
          Affine u = *hi;
          u.constant -= 1;
          u.add(by, -1);
          ineqs_.push_back(u);
        } else {
          residual_.push_back(make_binary(BinOp::LT, affine_to_expr(by), shape_[xi->second]));
        }
        progress = true;
        break;
      }
      if (!progress) {
        residual_.push_back(make_binary(BinOp::EQ, affine_to_expr(eq), make_int(0)));
        eqs_.erase(eqs_.begin() + i);
        progress = true;
      }
    }
    if (progress) continue;
    // 3. a*u + e*x + k = 0 with |a| > 1: x runs over its residue class modulo |a|.
    for (size_t i = 0; i < eqs_.size() && !progress; ++i) {
      Var u;
      int64_t a = 0;
      int nunk = 0;
      for (auto& [v, c] : eqs_[i].terms)
        if (unknown_set_.count(v.get())) {
          ++nunk;
          u = v;
          a = c;
        }
      if (nunk != 1) continue;
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
    for (auto& eq : eqs_)
      for (auto& [v, c] : eq.terms)
        if (unknown_set_.count(v.get())) return false;  // no pivot: give up (scatter)
    return true;
  }
}

std::optional<GatherResult> Solver::run(const GatherInput& in) {
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
      b.lo = l.min;
      b.hi = make_end(l.min, l.extent);
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
      b.lo = make_int(b.clo);
      b.hi = make_int(b.chi + 1);
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
    Var x(names_.fresh("ax"));
    xs_.push_back(x);
    x_index_[x.get()] = d;
    Box b;
    b.lo = make_int(0);
    b.hi = in.shape[d];
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
  // Boxes of the quotient aux vars (needed if they stay free).
  for (auto& q : aux_q_) {
    auto iv = interval(q.a);
    if (!iv) continue;
    Box b;
    b.known = true;
    b.clo = floor_div(iv->first, q.c);
    b.chi = floor_div(iv->second, q.c);
    b.lo = make_int(b.clo);
    b.hi = make_int(b.chi + 1);
    box_[q.q.get()] = b;
  }
  if (!eliminate()) return std::nullopt;

  GatherResult res;
  if (empty_) {
    res.empty = true;
    return res;
  }
  // Loop order: independent x's (or their residue-class counters), then free unknowns.
  std::vector<Var> order;
  std::vector<size_t> order_dim;  // for x loops: the dimension; SIZE_MAX otherwise
  for (size_t d = 0; d < xs_.size(); ++d) {
    if (dep_.count(xs_[d].get())) continue;
    order.push_back(strided_.count(d) ? strided_[d].l : xs_[d]);
    order_dim.push_back(d);
  }
  for (auto& u : unknowns_)
    if (!sol_.count(u.get())) {
      auto it = box_.find(u.get());
      if (it == box_.end()) return std::nullopt;  // unbounded free var
      order.push_back(u);
      order_dim.push_back(SIZE_MAX);
    }
  std::unordered_map<const VarNode*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i].get()] = i;

  std::vector<std::vector<Expr>> lowers(order.size()), uppers(order.size());
  std::vector<Affine> residual_ineqs;
  for (auto& q : ineqs_) {
    auto iv = interval(q);
    if (iv && iv->first >= 0) continue;  // always true on the box
    if (iv && iv->second < 0) {
      res.empty = true;
      return res;
    }
    int best = -1;
    for (auto& [v, c] : q.terms) {
      auto p = pos.find(v.get());
      if (p != pos.end() && static_cast<int>(p->second) > best) best = static_cast<int>(p->second);
    }
    if (best < 0) {
      if (q.is_const()) {
        if (q.constant < 0) {
          res.empty = true;
          return res;
        }
        continue;
      }
      residual_ineqs.push_back(q);
      continue;
    }
    const Var& w = order[best];
    int64_t a = q.coeff(w.get());
    Affine rest = q;
    rest.add(w, -a);
    if (a > 0) {
      Affine nr = rest.scaled(-1);
      Expr lb;
      if (a == 1)
        lb = affine_to_expr(nr);
      else if (nr.is_const())
        lb = make_int(ceil_div(nr.constant, a));
      else {
        nr.constant += a - 1;
        lb = floordiv(affine_to_expr(nr), make_int(a));
      }
      lowers[best].push_back(lb);
    } else {
      int64_t b = -a;
      Expr ub;
      if (b == 1) {
        Affine r1 = rest;
        r1.constant += 1;
        ub = affine_to_expr(r1);
      } else if (rest.is_const())
        ub = make_int(floor_div(rest.constant, b) + 1);
      else
        ub = floordiv(affine_to_expr(rest), make_int(b)) + make_int(1);
      uppers[best].push_back(ub);
    }
  }

  // Emit the loops.
  std::unordered_map<const VarNode*, Expr> to_iter;
  for (size_t i = 0; i < order.size(); ++i) {
    const Var& w = order[i];
    Box& b = box_[w.get()];
    GatherLoop gl;
    gl.loop_var = w;
    // lo = max(box lo, lowers), hi = min(box hi, uppers); constants merged.
    auto merge = [](Expr base, const std::vector<Expr>& xs, bool is_max) {
      int64_t bc;
      bool base_const = is_const_int(base, &bc);
      std::vector<Expr> sym;
      for (auto& x : xs) {
        int64_t k;
        if (is_const_int(x, &k) && base_const) {
          bc = is_max ? std::max(bc, k) : std::min(bc, k);
        } else {
          sym.push_back(x);
        }
      }
      Expr out = base_const ? make_int(bc) : base;
      for (auto& s : sym) out = is_max ? max(out, s) : min(out, s);
      return out;
    };
    gl.lo = merge(b.lo, lowers[i], true);
    gl.hi = merge(b.hi, uppers[i], false);
    if (order_dim[i] != SIZE_MAX) {
      size_t d = order_dim[i];
      gl.kind = IterKind::Spatial;
      if (strided_.count(d)) {
        gl.iter_var = Var(names_.fresh("vl"));
        gl.iter_extent = b.hi;
      } else {
        gl.iter_var = Var(names_.fresh("v"));
        gl.iter_extent = shape_[d];
      }
      gl.binding = w;
      to_iter[w.get()] = gl.iter_var;
    } else {
      gl.kind = IterKind::Reduce;
      gl.iter_var = Var(names_.fresh("r"));
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
  auto iter_expr = [&](const Affine& a) { return substitute(affine_to_expr(a), to_iter); };
  // Target indices.
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
  for (auto& l : in.loops) {
    auto it = sol_.find(l.var.get());
    res.subst[l.var.get()] = it != sol_.end() ? iter_expr(it->second) : to_iter.at(l.var.get());
  }
  for (auto& r : residual_) res.residual.push_back(substitute(r, res.subst));
  for (auto& q : residual_ineqs) res.residual.push_back(make_binary(BinOp::GE, iter_expr(q), make_int(0)));
  return res;
}

}  // namespace

std::optional<GatherResult> solve_gather(const GatherInput& in, NameGen& names) {
  Solver s(names);
  return s.run(in);
}

}  // namespace tirc::ad

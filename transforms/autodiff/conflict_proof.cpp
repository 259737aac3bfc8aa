#include "transforms/autodiff/conflict_proof.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"

namespace tirc::ad {

namespace {

// A closed interval of an iter var's values: lo a constant, hi an affine form of scalars
// (`n - 1` for a symbolic extent n), hi_inf when the extent is not affine (unbounded above).
struct Interval {
  int64_t lo = 0;
  Affine hi;
  bool hi_inf = false;
  bool empty() const { return !hi_inf && hi.is_const() && hi.constant < lo; }
};

bool has_load(const Expr& e) {
  bool r = false;
  if (e.defined()) for_each_expr(e, [&](const Expr& x) { r = r || x.as<LoadNode>() != nullptr; });
  return r;
}

struct Box {
  std::unordered_map<const VarNode*, Interval> box;  // every iter var over its extent
  std::unordered_map<const VarNode*, std::optional<int64_t>> extent;
  std::unordered_map<const VarNode*, Expr> extent_expr;  // spatial vars' extents as written
  std::unordered_set<const VarNode*> spatial, iter;
};

Box box_of(const BlockNode& blk) {
  Box b;
  for (auto& iv : blk.iter_vars) {
    const VarNode* v = iv.var.get();
    int64_t e = 0;
    Interval r;
    if (is_const_int(iv.extent, &e)) {
      b.extent[v] = e;
      r.hi.constant = e - 1;
    } else {
      b.extent[v] = std::nullopt;
      // An extent of scalars (`n`, `n * 2`): the bound moves with them.
      if (auto a = has_load(iv.extent) ? std::nullopt : to_affine(iv.extent)) {
        r.hi = *a;
        r.hi.constant -= 1;
      } else {
        r.hi_inf = true;
      }
    }
    b.box[v] = r;
    b.iter.insert(v);
    if (iv.kind == IterKind::Spatial) {
      b.spatial.insert(v);
      b.extent_expr[v] = iv.extent;
    }
  }
  return b;
}

// Narrows r by a guard `v < c`-like (or its negation, or a conjunction of such) on iter vars.
void narrow(const Expr& c, bool negated, std::unordered_map<const VarNode*, Interval>& r) {
  if (auto* u = c.as<UnaryNode>(); u && u->op == UnOp::Not) return narrow(u->a, !negated, r);
  auto* b = c.as<BinaryNode>();
  if (!b) return;
  if (b->op == BinOp::And && !negated) {
    narrow(b->a, false, r);
    narrow(b->b, false, r);
    return;
  }
  if (b->op == BinOp::Or && negated) {  // !(a || b) = !a && !b
    narrow(b->a, true, r);
    narrow(b->b, true, r);
    return;
  }
  BinOp op = b->op;
  const VarNode* v = b->a.as<VarNode>();
  int64_t k = 0;
  if (v && is_const_int(b->b, &k)) {
  } else if ((v = b->b.as<VarNode>()) && is_const_int(b->a, &k)) {
    // c OP v  ==  v OP' c
    switch (op) {
      case BinOp::LT: op = BinOp::GT; break;
      case BinOp::LE: op = BinOp::GE; break;
      case BinOp::GT: op = BinOp::LT; break;
      case BinOp::GE: op = BinOp::LE; break;
      default: break;
    }
  } else {
    return;
  }
  auto it = r.find(v);
  if (it == r.end()) return;
  if (negated) {
    switch (op) {
      case BinOp::LT: op = BinOp::GE; break;
      case BinOp::LE: op = BinOp::GT; break;
      case BinOp::GT: op = BinOp::LE; break;
      case BinOp::GE: op = BinOp::LT; break;
      case BinOp::EQ: op = BinOp::NE; break;
      default: return;
    }
  }
  Interval& x = it->second;
  auto set_hi = [&](int64_t h) {  // a constant bound replaces a larger or symbolic one (both hold)
    if (x.hi_inf || !x.hi.is_const() || h < x.hi.constant) x.hi = Affine{{}, h};
    x.hi_inf = false;
  };
  switch (op) {
    case BinOp::LT: set_hi(k - 1); break;
    case BinOp::LE: set_hi(k); break;
    case BinOp::GT: x.lo = std::max(x.lo, k + 1); break;
    case BinOp::GE: x.lo = std::max(x.lo, k); break;
    case BinOp::EQ:
      x.lo = std::max(x.lo, k);
      set_hi(k);
      break;
    default: break;
  }
}

std::unordered_map<const VarNode*, Interval> ranges_of(const Box& b, const BlockAccess& a) {
  auto r = b.box;
  for (auto& c : a.conds) narrow(c, false, r);
  return r;
}

// Whether w's index at p and x's index at p' differ in dimension d for every p, p' (the
// GCD and bounds tests on their affine difference).
bool never_meet(const Expr& ew, const Expr& ex, const Box& b,
                const std::unordered_set<const VarNode*>& shared,
                const std::unordered_map<const VarNode*, Interval>& rp,
                const std::unordered_map<const VarNode*, Interval>& rq) {
  auto aw = to_affine(ew), ax = to_affine(ex);
  if (!aw || !ax) return false;
  // Keys: (var, side) with side 0 = p, 1 = p', 2 = shared iter var, 3 = scalar (in c below).
  std::map<std::pair<const VarNode*, int>, int64_t> alpha;
  for (auto& [v, c] : aw->terms) {
    const VarNode* n = v.get();
    alpha[{n, !b.iter.count(n) ? 3 : shared.count(n) ? 2 : 0}] += c;
  }
  for (auto& [v, c] : ax->terms) {
    const VarNode* n = v.get();
    alpha[{n, !b.iter.count(n) ? 3 : shared.count(n) ? 2 : 1}] -= c;
  }
  // The difference w - x is sum(alpha * var) + c, c an affine form of the scalars.
  Affine c;
  c.constant = aw->constant - ax->constant;
  for (auto& [v, k] : aw->terms)
    if (!b.iter.count(v.get())) c.add(v, k);
  for (auto& [v, k] : ax->terms)
    if (!b.iter.count(v.get())) c.add(v, -k);
  std::vector<std::pair<int64_t, Interval>> vars;  // (alpha, range) of each iter var term
  for (auto& [key, a] : alpha) {
    if (a == 0 || key.second == 3) continue;
    Interval r = key.second == 1 ? rq.at(key.first) : rp.at(key.first);
    if (key.second == 2) {  // one value in both instances: both guards hold
      const Interval& o = rq.at(key.first);
      r.lo = std::max(r.lo, o.lo);
      if (!o.hi_inf &&
          (r.hi_inf || (o.hi.is_const() && (!r.hi.is_const() || o.hi.constant < r.hi.constant)))) {
        r.hi = o.hi;
        r.hi_inf = false;
      }
    }
    if (r.empty()) return true;  // never runs
    vars.push_back({static_cast<int64_t>(a), r});
  }
  int64_t g = 0;
  for (auto& [a, r] : vars) g = std::gcd(g, a < 0 ? -a : a);
  if (c.is_const()) {
    if (g == 0) return c.constant != 0;
    if (c.constant % g != 0) return true;
  }
  // Bounds of the difference over the box: [lo, hi], affine in the scalars; decided only when
  // the scalars cancel (`A[vi + n]` against `A[vi]` over vi < n: lo = 1).
  Affine lo = c, hi = c;
  bool lo_inf = false, hi_inf = false;
  for (auto& [a, r] : vars) {
    if (a > 0) {
      lo.constant += a * r.lo;
      if (r.hi_inf)
        hi_inf = true;
      else
        hi.add(r.hi, a);
    } else {
      hi.constant += a * r.lo;
      if (r.hi_inf)
        lo_inf = true;
      else
        lo.add(r.hi, a);
    }
  }
  return (!lo_inf && lo.is_const() && lo.constant > 0) || (!hi_inf && hi.is_const() && hi.constant < 0);
}

// Whether dimension d has the same load-free index in w and x, over spatial / shared iter vars
// and scalars only (its value at p equals its value at p' only through those).
bool same_index(const Expr& a, const Expr& c, const Box& b,
                const std::unordered_set<const VarNode*>& shared) {
  if (has_load(a) || has_load(c)) return false;
  auto fa = to_affine(a), fc = to_affine(c);
  bool same = expr_identical(a, c);
  if (!same && fa && fc) {
    Affine d = *fa;
    d.add(*fc, -1);
    same = d.is_const() && d.constant == 0;
  }
  if (!same) return false;
  bool ok = true;
  for_each_expr(a, [&](const Expr& x) {
    auto* v = x.as<VarNode>();
    if (v && b.iter.count(v) && !b.spatial.count(v) && !shared.count(v)) ok = false;
  });
  return ok;
}

// Whether the dimensions `dims` (the same index in both accesses) determine every spatial
// var of extent > 1. Equal values of a dimension at p and p' pin its terms in turn:
//  - an affine dimension whose unknown terms form a mixed-radix sum (one term: any non-zero
//    coefficient);
//  - `A // c` and `A % c` (c > 0 constant) are auxiliary vars q, m with A = c * q + m and
//    0 <= m < c (affine.h): `vi // 4`, `199 - vi % 200` pin q, m; q and m both pinned pin A
//    (A = c * q + m), an affine dimension of its own (the unflatten `A[vi // 4, vi % 4]`);
//  - `(+-v + e) % m` with e pinned: a bijection of v when v runs over at most m consecutive
//    values, m a constant >= extent(v) or m the very extent of v (`Y[(vi + s) % n]`, vi:
//    spatial(n): a rotation, whatever s).
bool determine_spatial(const std::vector<Expr>& dims, const Box& b) {
  struct Aux {
    Affine a;
    int64_t c;
    Var q, m;
    bool added = false;  // A pushed as a dimension
  };
  std::vector<Aux> aux;
  std::unordered_map<const VarNode*, std::optional<int64_t>> aux_extent;
  AuxProvider prov = [&](const Affine& a, int64_t c) {
    for (auto& x : aux) {
      Affine d = x.a;
      d.add(a, -1);
      if (x.c == c && d.is_const() && d.constant == 0) return std::make_pair(x.q, x.m);
    }
    aux.push_back({a, c, Var("q"), Var("m")});
    // The width of A // c's values when A's are bounded (spatial terms of constant extent):
    // mixed radix needs only the largest difference of a term (`vi % 200 * 200 + vi // 200`).
    std::optional<int64_t> qw;
    __int128 lo = a.constant, hi = a.constant;
    bool bounded = true;
    for (auto& [v, k] : a.terms) {
      auto it = b.extent.find(v.get());
      if (!b.spatial.count(v.get()) || it == b.extent.end() || !it->second || *it->second < 1) {
        bounded = false;
        break;
      }
      (k > 0 ? hi : lo) += static_cast<__int128>(k) * (*it->second - 1);
    }
    if (bounded && lo > -(__int128{1} << 61) && hi < (__int128{1} << 61))
      qw = floor_div(static_cast<int64_t>(hi), c) - floor_div(static_cast<int64_t>(lo), c) + 1;
    aux_extent[aux.back().q.get()] = qw;
    aux_extent[aux.back().m.get()] = c;
    return std::make_pair(aux.back().q, aux.back().m);
  };
  std::vector<Affine> affine_dims;
  std::vector<std::pair<const BinaryNode*, Affine>> mod_dims;  // (`x % m`, x) of a non-constant m
  for (auto& e : dims) {
    if (auto a = to_affine(e, prov)) {
      affine_dims.push_back(*a);
    } else if (auto* m = e.as<BinaryNode>(); m && m->op == BinOp::FloorMod) {
      if (auto x = to_affine(m->a, prov)) mod_dims.push_back({m, *x});
    }
  }
  std::unordered_set<const VarNode*> known;
  for (auto* v : b.spatial)
    if (b.extent.at(v) && *b.extent.at(v) == 1) known.insert(v);
  auto unknown = [&](const VarNode* v) {
    return (b.spatial.count(v) || aux_extent.count(v)) && !known.count(v);
  };
  auto extent_of = [&](const VarNode* v) {
    auto it = aux_extent.find(v);
    return it != aux_extent.end() ? it->second : b.extent.at(v);
  };
  auto open = [&](const Affine& a) {
    std::vector<std::pair<int64_t, const VarNode*>> u;  // (|coefficient|, var) not yet known
    for (auto& [v, c] : a.terms)
      if (unknown(v.get())) u.push_back({c < 0 ? -c : c, v.get()});
    return u;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = 0; k < aux.size(); ++k) {
      if ((unknown(aux[k].q.get()) || unknown(aux[k].m.get())) && open(aux[k].a).empty()) {
        // A pinned: so are A // c and A % c.
        known.insert(aux[k].q.get());
        known.insert(aux[k].m.get());
        changed = true;
      }
      // `(+-v + e) % c` pinned, v over at most c consecutive values: v pinned.
      if (!unknown(aux[k].m.get())) {
        auto u = open(aux[k].a);
        if (u.size() == 1 && u[0].first == 1) {
          auto ext = extent_of(u[0].second);
          if (ext && *ext <= aux[k].c) {
            known.insert(u[0].second);
            changed = true;
          }
        }
      }
      if (!aux[k].added && !unknown(aux[k].q.get()) && !unknown(aux[k].m.get())) {
        aux[k].added = true;
        affine_dims.push_back(aux[k].a);
        changed = true;
      }
    }
    for (size_t k = 0; k < affine_dims.size(); ++k) {
      auto u = open(affine_dims[k]);
      if (u.empty()) continue;
      // Mixed radix: |c_k| > sum_{j<k} |c_j| (extent_j - 1) (one term: any non-zero c).
      std::sort(u.begin(), u.end());
      __int128 span = 0;
      bool ok = true;
      for (size_t q = 0; q < u.size() && ok; ++q) {
        if (u[q].first <= span) ok = false;
        auto ext = extent_of(u[q].second);
        if (q + 1 < u.size()) {
          if (!ext)
            ok = false;
          else
            span += static_cast<__int128>(u[q].first) * (*ext - 1);
        }
      }
      if (!ok) continue;
      for (auto& [c, v] : u) known.insert(v);
      changed = true;
    }
    for (auto& [m, x] : mod_dims) {
      auto u = open(x);
      if (u.size() != 1 || u[0].first != 1) continue;
      const VarNode* v = u[0].second;
      int64_t mod = 0;
      bool bijective = false;
      if (is_const_int(m->b, &mod)) {
        auto ext = extent_of(v);
        bijective = mod > 0 && ext && *ext <= mod;
      } else if (b.extent_expr.count(v)) {
        // m is v's own extent: v runs over [0, m), all the residues once (m > 0 when any
        // iteration runs). Compared as written or as equal affine forms of the scalars.
        const Expr& ext = b.extent_expr.at(v);
        bijective = expr_identical(ext, m->b);
        auto fe = has_load(ext) || has_load(m->b) ? std::nullopt : to_affine(ext);
        auto fm = fe ? to_affine(m->b) : std::nullopt;
        if (!bijective && fe && fm) {
          Affine d = *fe;
          d.add(*fm, -1);
          bijective = d.is_const() && d.constant == 0;
        }
      }
      if (!bijective) continue;
      known.insert(v);
      changed = true;
    }
  }
  for (auto* v : b.spatial)
    if (!known.count(v)) return false;
  return true;
}

bool independent(const BlockAccess& w, const BlockAccess& x, const Box& b,
                 const std::unordered_set<const VarNode*>& shared) {
  if (w.index.size() != x.index.size()) return false;
  auto rp = ranges_of(b, w), rq = ranges_of(b, x);
  for (auto& [v, r] : rp)
    if (r.empty()) return true;  // w never runs
  for (auto& [v, r] : rq)
    if (r.empty()) return true;
  std::vector<Expr> same;
  for (size_t d = 0; d < w.index.size(); ++d) {
    if (never_meet(w.index[d], x.index[d], b, shared, rp, rq)) return true;
    if (same_index(w.index[d], x.index[d], b, shared)) same.push_back(w.index[d]);
  }
  return determine_spatial(same, b);
}

// Every spatial var of extent > 1 appears in a's indices (inside loads too): a data-dependent
// element can then differ between any two spatial points.
bool indexed_by_every_spatial_var(const BlockAccess& a, const Box& b) {
  std::unordered_set<const VarNode*> used;
  for (auto& e : a.index)
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) used.insert(v);
    });
  for (auto* v : b.spatial)
    if (!(b.extent.at(v) && *b.extent.at(v) == 1) && !used.count(v)) return false;
  // More spatial points than elements: two of them write one element whatever the data.
  int64_t points = 1, elems = 1, e = 0;
  for (auto* v : b.spatial) {
    if (!b.extent.at(v)) return true;
    points = std::min<int64_t>(points * std::max<int64_t>(*b.extent.at(v), 0), int64_t{1} << 40);
  }
  for (auto& d : a.buffer->shape) {
    if (!is_const_int(d, &e)) return true;
    elems = std::min<int64_t>(elems * std::max<int64_t>(e, 0), int64_t{1} << 40);
  }
  return points <= elems;
}

// x at the element of store w in the same instance whenever x runs: the same index tuple, and
// every guard of w among x's guards.
bool at_own_element(const BlockAccess& w, const BlockAccess& x) {
  if (w.index.size() != x.index.size()) return false;
  for (size_t d = 0; d < w.index.size(); ++d)
    if (!expr_identical(w.index[d], x.index[d])) return false;
  for (auto& c : w.conds) {
    bool in = false;
    for (auto& k : x.conds) in = in || expr_identical(c, k);
    if (!in) return false;
  }
  return true;
}

}  // namespace

bool data_dependent(const BlockAccess& a) {
  for (auto& e : a.index)
    if (has_load(e)) return true;
  for (auto& e : a.conds)
    if (has_load(e)) return true;
  return false;
}

std::string loaded_in_index(const BlockAccess& a) {
  std::set<std::string> names;
  auto add = [&](const Expr& e) {
    if (e.defined())
      for_each_expr(e, [&](const Expr& x) {
        if (auto* l = x.as<LoadNode>()) names.insert(l->buffer->name);
      });
  };
  for (auto& e : a.index) add(e);
  for (auto& e : a.conds) add(e);
  std::string t;
  for (auto& n : names) t += (t.empty() ? "" : ", ") + n;
  return t;
}

std::optional<std::pair<size_t, size_t>> unproven_pair(const BlockNode& blk,
                                                       const std::vector<BlockAccess>& acc,
                                                       const std::unordered_set<const VarNode*>& shared,
                                                       const std::vector<bool>* skipped) {
  const Box b = box_of(blk);
  if (b.spatial.empty()) return std::nullopt;
  if (skipped && skipped->size() != acc.size()) skipped = nullptr;  // not this list: check every pair
  std::vector<bool> dd(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) dd[i] = data_dependent(acc[i]);
  for (size_t i = 0; i < acc.size(); ++i) {
    if (!acc[i].write) continue;
    for (size_t j = 0; j < acc.size(); ++j) {
      if (acc[j].buffer != acc[i].buffer) continue;
      if (acc[j].write && (j < i || !(acc[i].carries || acc[j].carries))) continue;
      if (skipped && !(*skipped)[i] && !(*skipped)[j]) continue;
      if (independent(acc[i], acc[j], b, shared)) continue;
      // Store w against itself at a data-dependent element (`Y[R[vi]] = X[vi]`, max_unpool's
      // `U[vc, A[vc, vo]]`): two spatial points write one element only when the data repeats
      // an index, which makes the forward function itself invalid (LANGUAGE.md), and the
      // interpreter refuses that run ("both write"); for data where the function is valid the
      // instances are independent. Not when a spatial var is missing from the index (two
      // points then write one element whatever the data).
      auto scatter_ok = [&](size_t k) {
        return independent(acc[k], acc[k], b, shared) || (dd[k] && indexed_by_every_spatial_var(acc[k], b));
      };
      if (j == i && scatter_ok(i)) continue;
      // x at w's own element (`A[I[vi]] = A[I[vi]] + ..`): p' touching w(p) there means w(p')
      // == w(p), a conflict of w with itself: as safe as that one.
      if (j != i && at_own_element(acc[i], acc[j]) && scatter_ok(i)) continue;
      return std::make_pair(i, j);
    }
  }
  return std::nullopt;
}

}  // namespace tirc::ad

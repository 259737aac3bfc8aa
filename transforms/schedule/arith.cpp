#include "transforms/schedule/arith.h"

#include <algorithm>
#include <functional>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::sched {
namespace {

int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t fmod(int64_t a, int64_t b) { return a - fdiv(a, b) * b; }

bool int_like(DType t) { return is_int(t); }

void add_term(Linear& l, const Expr& atom, int64_t c) {
  if (c == 0) return;
  for (auto& [a, k] : l.terms)
    if (expr_identical(a, atom)) {
      k += c;
      return;
    }
  l.terms.emplace_back(atom, c);
}

// Collects sum(coef * atom) + c. Var atoms are found through a hash index and non-var
// atoms by a scan of the non-var atoms only: add_term's scan over every term made long sums
// (a split into thousands of pieces, 20 000 chained splits) quadratic per fold.
struct LinBuilder {
  Linear out;
  std::unordered_map<const VarNode*, size_t> var_pos;
  std::vector<size_t> other_pos;
  // Folds an atom before it is compared / stored (Folder: the atom's inside; to_linear: none).
  const std::function<Expr(const Expr&)>* atom_fold = nullptr;

  void add(const Expr& atom, int64_t c) {
    if (c == 0) return;
    if (auto* v = atom.as<VarNode>()) {
      auto [it, fresh] = var_pos.emplace(v, out.terms.size());
      if (fresh)
        out.terms.emplace_back(atom, c);
      else
        out.terms[it->second].second += c;
      return;
    }
    for (size_t i : other_pos)
      if (expr_identical(out.terms[i].first, atom)) {
        out.terms[i].second += c;
        return;
      }
    other_pos.push_back(out.terms.size());
    out.terms.emplace_back(atom, c);
  }
  // The Linear without zero terms.
  Linear take() {
    out.terms.erase(std::remove_if(out.terms.begin(), out.terms.end(), [](auto& t) { return t.second == 0; }),
                    out.terms.end());
    return std::move(out);
  }
};

bool lin_rec(const Expr& e, int64_t scale, LinBuilder& out) {
  if (!e.defined() || !int_like(e.dtype())) return false;
  int64_t v;
  if (is_const_int(e, &v)) {
    out.out.c += scale * v;
    return true;
  }
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinOp::Add: return lin_rec(b->a, scale, out) && lin_rec(b->b, scale, out);
      case BinOp::Sub: return lin_rec(b->a, scale, out) && lin_rec(b->b, -scale, out);
      case BinOp::Mul: {
        // A literal factor scales the other side in place (no intermediate form: nested
        // `(x * 4 + y) * 8 + z` stays linear in its size).
        if (is_const_int(b->b, &v)) return lin_rec(b->a, scale * v, out);
        if (is_const_int(b->a, &v)) return lin_rec(b->b, scale * v, out);
        LinBuilder ba, bb;
        ba.out.dtype = bb.out.dtype = e.dtype();
        ba.atom_fold = bb.atom_fold = out.atom_fold;
        bool oka = lin_rec(b->a, 1, ba), okb = lin_rec(b->b, 1, bb);
        if (!oka || !okb) break;
        Linear la = ba.take(), lb = bb.take();
        if (lb.terms.empty()) {
          for (auto& [a, k] : la.terms) out.add(a, k * lb.c * scale);
          out.out.c += la.c * lb.c * scale;
          return true;
        }
        if (la.terms.empty()) {
          for (auto& [a, k] : lb.terms) out.add(a, k * la.c * scale);
          out.out.c += la.c * lb.c * scale;
          return true;
        }
        // A product of two non-constant sums is one atom; with a folder, of the folded sides.
        if (out.atom_fold) {
          out.add(make_binary(BinOp::Mul, from_linear(la), from_linear(lb)), scale);
          return true;
        }
        break;
      }
      default: break;
    }
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Neg) return lin_rec(u->a, -scale, out);
  // Atom: fold its inside so that identical atoms compare equal.
  out.add(out.atom_fold ? (*out.atom_fold)(e) : e, scale);
  return true;
}

class Folder : public IRMutator {
 protected:
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    // Integer + - *: the whole linear tree at once (folding the operands first and then
    // re-reading them as linear forms at every level was quadratic in the depth of a sum).
    if (int_like(e.dtype()) && (n->op == BinOp::Add || n->op == BinOp::Sub || n->op == BinOp::Mul)) {
      std::function<Expr(const Expr&)> f = [this](const Expr& x) { return mutate(x); };
      LinBuilder lb;
      lb.out.dtype = e.dtype();
      lb.atom_fold = &f;
      if (lin_rec(e, 1, lb)) return from_linear(lb.take());
    }
    Expr a = mutate(n->a), b = mutate(n->b);
    int64_t x, y;
    bool ca = is_const_int(a, &x), cb = is_const_int(b, &y);
    DType t = a.dtype();
    if (ca && cb && (int_like(t) || is_bool(t))) {
      switch (n->op) {
        case BinOp::Add: return make_int(x + y, t);
        case BinOp::Sub: return make_int(x - y, t);
        case BinOp::Mul: return make_int(x * y, t);
        case BinOp::FloorDiv:
          if (y != 0) return make_int(fdiv(x, y), t);
          break;
        case BinOp::FloorMod:
          if (y != 0) return make_int(fmod(x, y), t);
          break;
        case BinOp::Min: return make_int(std::min(x, y), t);
        case BinOp::Max: return make_int(std::max(x, y), t);
        case BinOp::EQ: return make_bool(x == y);
        case BinOp::NE: return make_bool(x != y);
        case BinOp::LT: return make_bool(x < y);
        case BinOp::LE: return make_bool(x <= y);
        case BinOp::GT: return make_bool(x > y);
        case BinOp::GE: return make_bool(x >= y);
        case BinOp::And: return make_bool(x && y);
        case BinOp::Or: return make_bool(x || y);
        default: break;
      }
    }
    if (n->op == BinOp::And) {
      if (ca) return x ? b : a;
      if (cb) return y ? a : b;
    }
    if (n->op == BinOp::Or) {
      if (ca) return x ? a : b;
      if (cb) return y ? b : a;
    }
    if (int_like(t) && (n->op == BinOp::Add || n->op == BinOp::Sub || n->op == BinOp::Mul)) {
      Expr r = make_binary(n->op, a, b);
      if (auto l = to_linear(r)) return from_linear(*l);
      return r;
    }
    if (int_like(t) && n->op == BinOp::FloorDiv && cb && y == 1) return a;
    if (int_like(t) && n->op == BinOp::FloorMod && cb && y == 1) return make_int(0, t);
    if (int_like(t) && (n->op == BinOp::Min || n->op == BinOp::Max) && expr_identical(a, b)) return a;
    if (int_like(t) && binop_is_compare(n->op)) {
      // Compare the difference with 0 when it folds to a constant.
      if (auto l = to_linear(make_binary(BinOp::Sub, a, b)); l && l->terms.empty()) {
        int64_t d = l->c;
        switch (n->op) {
          case BinOp::EQ: return make_bool(d == 0);
          case BinOp::NE: return make_bool(d != 0);
          case BinOp::LT: return make_bool(d < 0);
          case BinOp::LE: return make_bool(d <= 0);
          case BinOp::GT: return make_bool(d > 0);
          case BinOp::GE: return make_bool(d >= 0);
          default: break;
        }
      }
    }
    if (a.same_as(n->a) && b.same_as(n->b)) return e;
    return make_binary(n->op, a, b);
  }
  Expr mutate_unary(const UnaryNode* n, const Expr& e) override {
    Expr a = mutate(n->a);
    int64_t x;
    if (n->op == UnOp::Not && is_const_int(a, &x)) return make_bool(!x);
    if (n->op == UnOp::Neg && is_const_int(a, &x) && int_like(a.dtype())) return make_int(-x, a.dtype());
    return a.same_as(n->a) ? e : make_unary(n->op, a);
  }
};

}  // namespace

int64_t Linear::coef_of(const VarNode* v) const {
  for (auto& [a, k] : terms)
    if (a.get() == v) return k;
  return 0;
}

std::optional<Linear> to_linear(const Expr& e) {
  if (!e.defined() || !int_like(e.dtype())) return std::nullopt;
  LinBuilder l;
  l.out.dtype = e.dtype();
  if (!lin_rec(e, 1, l)) return std::nullopt;
  return l.take();
}

Expr from_linear(const Linear& l) {
  Expr r;
  for (auto& [a, k] : l.terms) {
    if (k == 0) continue;
    Expr t = k == 1 ? a : (k == -1 && r.defined() ? a : make_binary(BinOp::Mul, a, make_int(k, l.dtype)));
    if (!r.defined())
      r = t;
    else if (k == -1)
      r = make_binary(BinOp::Sub, r, a);
    else if (k < 0)
      r = make_binary(BinOp::Sub, r, make_binary(BinOp::Mul, a, make_int(-k, l.dtype)));
    else
      r = make_binary(BinOp::Add, r, t);
  }
  if (!r.defined()) return make_int(l.c, l.dtype);
  if (l.c > 0) return make_binary(BinOp::Add, r, make_int(l.c, l.dtype));
  if (l.c < 0) return make_binary(BinOp::Sub, r, make_int(-l.c, l.dtype));
  return r;
}

Expr fold(const Expr& e) {
  Folder f;
  return f.mutate(e);
}

std::optional<IntRange> const_bound(const Expr& e, const RangeMap& ranges) {
  int64_t v;
  if (is_const_int(e, &v)) return IntRange{v, v};
  if (auto* var = e.as<VarNode>()) {
    auto it = ranges.find(var);
    if (it == ranges.end()) return std::nullopt;
    return it->second;
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Neg) {
    auto a = const_bound(u->a, ranges);
    if (!a) return std::nullopt;
    return IntRange{-a->hi, -a->lo};
  }
  auto* b = e.as<BinaryNode>();
  if (!b || !int_like(e.dtype())) return std::nullopt;
  // Linear sums: bound each term separately (exact for independent atoms).
  if (b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul) {
    if (auto l = to_linear(e); l && !(l->terms.size() == 1 && l->terms[0].first.same_as(e))) {
      int64_t lo = l->c, hi = l->c;
      for (auto& [a, k] : l->terms) {
        if (a.same_as(e)) return std::nullopt;
        auto r = const_bound(a, ranges);
        if (!r) return std::nullopt;
        if (k >= 0)
          lo += k * r->lo, hi += k * r->hi;
        else
          lo += k * r->hi, hi += k * r->lo;
      }
      return IntRange{lo, hi};
    }
    if (b->op == BinOp::Mul) {
      auto x = const_bound(b->a, ranges), y = const_bound(b->b, ranges);
      if (!x || !y) return std::nullopt;
      int64_t c[4] = {x->lo * y->lo, x->lo * y->hi, x->hi * y->lo, x->hi * y->hi};
      return IntRange{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    return std::nullopt;
  }
  auto x = const_bound(b->a, ranges);
  auto y = const_bound(b->b, ranges);
  switch (b->op) {
    case BinOp::FloorDiv:
      if (x && y && y->lo == y->hi && y->lo > 0) return IntRange{fdiv(x->lo, y->lo), fdiv(x->hi, y->lo)};
      return std::nullopt;
    case BinOp::FloorMod:
      if (y && y->lo == y->hi && y->lo > 0) {
        if (x && x->lo >= 0 && x->hi < y->lo) return x;
        if (x && fdiv(x->lo, y->lo) == fdiv(x->hi, y->lo))
          return IntRange{fmod(x->lo, y->lo), fmod(x->hi, y->lo)};
        return IntRange{0, y->lo - 1};
      }
      return std::nullopt;
    case BinOp::Min:
      if (x && y) return IntRange{std::min(x->lo, y->lo), std::min(x->hi, y->hi)};
      return std::nullopt;
    case BinOp::Max:
      if (x && y) return IntRange{std::max(x->lo, y->lo), std::max(x->hi, y->hi)};
      return std::nullopt;
    default: return std::nullopt;
  }
}

namespace {
// A lower bound of a linear form with floor divisions removed: k * (x // c) with c > 0 and k a
// multiple of c (k = m * c) is at least m * (x - c + 1) when m > 0 (x // c > x / c - 1) and at
// least m * x when m < 0 (x // c <= x / c). This proves facts such as
// ceil(n / 4) * 4 >= n, i.e. `((n + 3) // 4) * 4 - n >= 0`, for a symbolic n (the cover of a
// split with an inferred factor). nullopt when no term was rewritten.
std::optional<Expr> without_floordiv_lower(const Expr& d) {
  auto l = to_linear(d);
  if (!l) return std::nullopt;
  Linear out;
  out.dtype = l->dtype;
  out.c = l->c;
  bool changed = false;
  Expr extra = make_int(0, l->dtype);
  for (auto& [a, k] : l->terms) {
    auto* fd = a.as<BinaryNode>();
    int64_t c;
    if (fd && fd->op == BinOp::FloorDiv && is_const_int(fd->b, &c) && c > 0 && k % c == 0) {
      int64_t m = k / c;
      Expr x = fd->a;
      Expr lb = m > 0 ? make_binary(BinOp::Mul, make_binary(BinOp::Sub, x, make_int(c - 1, l->dtype)),
                                    make_int(m, l->dtype))
                      : make_binary(BinOp::Mul, x, make_int(m, l->dtype));
      extra = make_binary(BinOp::Add, extra, lb);
      changed = true;
    } else {
      out.terms.emplace_back(a, k);
    }
  }
  if (!changed) return std::nullopt;
  return fold(make_binary(BinOp::Add, from_linear(out), extra));
}
}  // namespace

bool prove_le(const Expr& a, const Expr& b, const RangeMap& ranges) {
  Expr d = fold(make_binary(BinOp::Sub, b, a));
  auto r = const_bound(d, ranges);
  if (r && r->lo >= 0) return true;
  // d >= lower >= 0 proves it.
  if (auto lower = without_floordiv_lower(d)) {
    auto r2 = const_bound(*lower, ranges);
    return r2 && r2->lo >= 0;
  }
  return false;
}
bool prove_lt(const Expr& a, const Expr& b, const RangeMap& ranges) {
  Expr d = fold(make_binary(BinOp::Sub, b, a));
  auto r = const_bound(d, ranges);
  if (r && r->lo >= 1) return true;
  // Integers: a < b is a + 1 <= b.
  return a.defined() && int_like(a.dtype()) && prove_le(fold(a + make_int(1, a.dtype())), b, ranges);
}
bool prove_eq(const Expr& a, const Expr& b) {
  if (expr_identical(a, b)) return true;
  if (!a.defined() || !b.defined() || !int_like(a.dtype()) || a.dtype() != b.dtype()) return false;
  auto l = to_linear(make_binary(BinOp::Sub, a, b));
  return l && l->terms.empty() && l->c == 0;
}

bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred) {
  bool found = false;
  if (!e.defined()) return false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && pred(v)) found = true;
  });
  return found;
}
bool uses_var(const Expr& e, const VarNode* v) {
  return uses_var(e, [v](const VarNode* x) { return x == v; });
}

namespace {

// Relaxation of an atom `x // c` or `x % c` (constant c > 0) whose operand uses relaxed vars
// (a fused loop split back into its parts: `f // 3`, `f % 3`). `x // c` is monotone, so
// [lo // c, hi // c] is its hull (divided exactly when the ends' terms are multiples of c);
// `x % c` is [lo % c, hi % c] when both ends fall into the same block of c, the whole
// [0, c - 1] when x spans at least c values, and unknown otherwise (a wrapped range would be
// a hull with a hole). Over-approximations only matter for "may access" regions; the
// "written" hulls are checked exact separately (deps.cpp exact_hull refuses div/mod).
std::optional<SymRange> relax_divmod(const Expr& a, const SymRangeMap& ranges) {
  auto* b = a.as<BinaryNode>();
  int64_t c;
  if (!b || (b->op != BinOp::FloorDiv && b->op != BinOp::FloorMod) || !is_const_int(b->b, &c) || c <= 0)
    return std::nullopt;
  auto r = relax(b->a, ranges);
  if (!r) return std::nullopt;
  DType t = a.dtype();
  auto fdiv = [&](int64_t x) { return x >= 0 ? x / c : -((-x + c - 1) / c); };
  // An end whose terms are multiples of c divides exactly: (9 * o + 8) // 9 is o + 0.
  auto exact = [&](const Expr& e) -> std::optional<Linear> {
    auto l = to_linear(e);
    if (!l) return std::nullopt;
    for (auto& [x, k] : l->terms)
      if (k % c != 0) return std::nullopt;
    return l;
  };
  auto lo = exact(r->lo), hi = exact(r->hi);
  std::optional<int64_t> width;
  if (int64_t w; is_const_int(fold(r->hi - r->lo), &w)) width = w;
  if (b->op == BinOp::FloorDiv) {
    auto quot = [&](const Expr& e, const std::optional<Linear>& l) {
      if (!l) return fold(floordiv(e, make_int(c, t)));
      Linear q = *l;
      for (auto& [x, k] : q.terms) k /= c;
      q.c = fdiv(l->c);
      return fold(from_linear(q));
    };
    return SymRange{quot(r->lo, lo), quot(r->hi, hi)};
  }
  // x % c: both ends in the same block of c (same terms, same quotient of the constant).
  if (lo && hi && width && fdiv(lo->c) == fdiv(hi->c))
    return SymRange{make_int(lo->c - fdiv(lo->c) * c, t), make_int(hi->c - fdiv(hi->c) * c, t)};
  if (width && *width + 1 >= c) return SymRange{make_int(0, t), make_int(c - 1, t)};
  return std::nullopt;
}

}  // namespace

std::optional<SymRange> relax(const Expr& e, const SymRangeMap& ranges) {
  auto in_map = [&](const VarNode* v) { return ranges.count(v) > 0; };
  if (!uses_var(e, in_map)) {
    Expr f = fold(e);
    return SymRange{f, f};
  }
  auto l = to_linear(e);
  if (!l) return std::nullopt;
  Linear lo, hi;
  lo.dtype = hi.dtype = l->dtype;
  lo.c = hi.c = l->c;
  // Adds k * [rlo, rhi] to [lo, hi]; false when an end is not linear.
  auto add_range = [&](const Expr& rlo, const Expr& rhi, int64_t k) {
    auto rl = to_linear(rlo), rh = to_linear(rhi);
    if (!rl || !rh) return false;
    const Linear& for_lo = k >= 0 ? *rl : *rh;
    const Linear& for_hi = k >= 0 ? *rh : *rl;
    for (auto& [x, kk] : for_lo.terms) add_term(lo, x, kk * k);
    lo.c += for_lo.c * k;
    for (auto& [x, kk] : for_hi.terms) add_term(hi, x, kk * k);
    hi.c += for_hi.c * k;
    return true;
  };
  for (auto& [a, k] : l->terms) {
    auto* v = a.as<VarNode>();
    if (v && in_map(v)) {
      const SymRange& r = ranges.at(v);
      if (!add_range(r.lo, r.hi, k)) return std::nullopt;
    } else if (uses_var(a, in_map)) {
      auto ar = relax_divmod(a, ranges);
      if (!ar || !add_range(ar->lo, ar->hi, k)) return std::nullopt;
    } else {
      add_term(lo, a, k);
      add_term(hi, a, k);
    }
  }
  return SymRange{fold(from_linear(lo)), fold(from_linear(hi))};
}

std::vector<Expr> conjuncts(const Expr& e) {
  std::vector<Expr> out;
  std::function<void(const Expr&)> rec = [&](const Expr& x) {
    int64_t v;
    if (!x.defined() || (is_const_int(x, &v) && v)) return;
    if (auto* b = x.as<BinaryNode>(); b && b->op == BinOp::And) {
      rec(b->a);
      rec(b->b);
      return;
    }
    out.push_back(x);
  };
  rec(e);
  return out;
}

Expr make_and(const std::vector<Expr>& cs) {
  Expr r;
  for (auto& c : cs) r = r.defined() ? make_binary(BinOp::And, r, c) : c;
  return r.defined() ? r : make_bool(true);
}

// ---- bijective bindings ----
namespace {

struct SplitTerm {
  const VarNode* loop;
  Expr lower;  // l // lower: a constant, or symbolic after a division by a symbolic size
  Expr ext;    // (...) % ext, or the remaining extent
  int64_t scale;
};

// q when e == q * d for a constant q >= 1 and a symbolic d = b * y (one term, no constant):
// the extents a symbolic split may divide (TVM's test_shape_var_as_bound: the fused loop of
// extent `n * 4` split as `f // n`, `f % n`). Requiring e to be such a multiple keeps the
// mixed-radix reading sound for every value of d: when d <= 0 the loop has no iterations.
std::optional<int64_t> exact_quotient(const Expr& e, const Expr& d) {
  auto le = to_linear(e), ld = to_linear(d);
  if (!le || !ld || ld->c != 0 || ld->terms.size() != 1 || ld->terms[0].second <= 0) return std::nullopt;
  if (le->c != 0 || le->terms.size() != 1 || !expr_identical(le->terms[0].first, ld->terms[0].first))
    return std::nullopt;
  int64_t a = le->terms[0].second, b = ld->terms[0].second;
  if (a <= 0 || a % b != 0) return std::nullopt;
  return a / b;
}

// True when e is c * (an integer expression) for every value of its variables: a linear
// form whose constant and coefficients c divides (`n * 4` for c = 2 or 4; not `n`, `n + 2`).
bool multiple_of(const Expr& e, int64_t c) {
  auto l = to_linear(fold(e));
  if (!l || l->c % c != 0) return false;
  for (auto& [a, k] : l->terms)
    if (k % c != 0) return false;
  return true;
}

struct LoopInfo {
  Expr extent;
};

// Parses e as a sum of scaled splits of loop vars plus nothing else.
bool parse_splits(const Expr& e, int64_t scale, const std::unordered_map<const VarNode*, LoopInfo>& loops,
                  std::vector<SplitTerm>& out);

bool parse_split_atom(const Expr& e, const std::unordered_map<const VarNode*, LoopInfo>& loops,
                      SplitTerm& t) {
  if (auto* v = e.as<VarNode>()) {
    auto it = loops.find(v);
    if (it == loops.end()) return false;
    t = SplitTerm{v, make_int(1, v->dtype), it->second.extent, 1};
    return true;
  }
  auto* b = e.as<BinaryNode>();
  int64_t c;
  if (b && !is_const_int(b->b, &c) && b->b.dtype() == b->a.dtype() &&
      (b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod)) {
    // A symbolic divisor d: only of an extent q * d (exact_quotient), giving `l // d` (lower d,
    // extent q) or `l % d` (extent d).
    if (!parse_split_atom(b->a, loops, t)) return false;
    Expr d = fold(b->b);
    auto q = exact_quotient(fold(t.ext), d);
    if (!q) return false;
    if (b->op == BinOp::FloorMod) {
      t.ext = d;
    } else {
      t.lower = fold(t.lower * d);
      t.ext = make_int(*q, t.ext.dtype());
    }
    return true;
  }
  if (!b || !is_const_int(b->b, &c) || c <= 0) return false;
  if (b->op == BinOp::FloorDiv) {
    if (!parse_split_atom(b->a, loops, t)) return false;
    int64_t ext;
    // (l // a % e) // c: exact only when c divides e.
    if (!is_const_int(fold(t.ext), &ext)) {
      // Symbolic extent: only l // c with lower 1 and the remaining extent ceil(E / c), where
      // the digit is the whole loop or a multiple of c: `(l % n) // 2` with n odd is not
      // `(l // 2) % ceil(n / 2)` (l = 5, n = 5: 0, not 2).
      if (!is_one(t.lower)) return false;
      auto lp = loops.find(t.loop);
      if (!(lp != loops.end() && expr_identical(fold(t.ext), fold(lp->second.extent))) && !multiple_of(t.ext, c))
        return false;
      t.lower = make_int(c, t.lower.dtype());
      t.ext = fold(floordiv(t.ext + make_int(c - 1, t.ext.dtype()), make_int(c, t.ext.dtype())));
      return true;
    }
    t.lower = fold(t.lower * make_int(c, t.lower.dtype()));
    t.ext = make_int((ext + c - 1) / c, t.ext.dtype());
    return true;
  }
  if (b->op == BinOp::FloorMod) {
    if (!parse_split_atom(b->a, loops, t)) return false;
    int64_t ext;
    if (is_const_int(t.ext, &ext) && ext <= c) return true;  // mod is a no-op
    if (is_const_int(t.ext, &ext) && ext % c != 0) return false;
    // A symbolic extent E: `l % 4` over serial(n) is a full digit only when 4 divides E (n = 3
    // reaches 3 of its 4 values; with `l // 4` of extent ceil(n / 4), reverse_compute_at and
    // reverse_compute_inline took n points for 4 * ceil(n / 4)).
    if (!is_const_int(t.ext, &ext) && !multiple_of(t.ext, c)) return false;
    t.ext = make_int(c, b->b.dtype());
    return true;
  }
  return false;
}

bool parse_splits(const Expr& e, int64_t scale, const std::unordered_map<const VarNode*, LoopInfo>& loops,
                  std::vector<SplitTerm>& out) {
  auto l = to_linear(e);
  if (!l || l->c != 0) return false;
  for (auto& [a, k] : l->terms) {
    if (k <= 0) return false;
    SplitTerm t;
    if (!parse_split_atom(a, loops, t)) return false;
    // A split of extent 1 (a unit loop, `l8 * 8` after a [None, 1, 8] split) is always 0: it
    // takes no place in the mixed radix (keeping it, its scale tied with the next split's
    // and the order of the two decided whether the radix was recognised). A loop seen only
    // in such terms then feeds nothing, which the partition check accepts for extent 1 only.
    int64_t one;
    if (is_const_int(fold(t.ext), &one) && one == 1) continue;
    t.scale = k * scale;
    out.push_back(t);
  }
  return true;
}

}  // namespace

namespace {

bool bijective_bindings_direct(const std::vector<Expr>& bindings, const std::vector<Expr>& extents,
                               const std::vector<LoopDom>& loops, const Expr& predicate);

// A mixed-radix sum of distinct loops: c1*l1 + c2*l2 + ... with coefficients 1, e1, e1*e2, ...
// (the loops of a fuse, split again): returns its extent, or 0.
int64_t fused_extent(const Linear& lin, const std::vector<LoopDom>& loops) {
  if (lin.c != 0 || lin.terms.size() < 2) return 0;
  std::vector<std::pair<int64_t, int64_t>> cs;  // coef, extent
  std::vector<const VarNode*> seen;
  for (auto& [a, c] : lin.terms) {
    auto* v = a.as<VarNode>();
    if (!v || c <= 0 || std::find(seen.begin(), seen.end(), v) != seen.end()) return 0;
    seen.push_back(v);
    int64_t ext = 0;
    for (auto& l : loops)
      if (l.var.get() == v && !is_const_int(fold(l.extent), &ext)) return 0;
    if (ext <= 0) return 0;
    cs.emplace_back(c, ext);
  }
  std::sort(cs.begin(), cs.end());
  int64_t expect = 1;
  for (auto& [c, e] : cs) {
    if (c != expect) return 0;
    expect = c * e;
  }
  return expect;
}

bool same_linear(const Linear& a, const Linear& b) {
  if (a.c != b.c || a.terms.size() != b.terms.size()) return false;
  for (auto& [x, c] : a.terms) {
    bool found = false;
    for (auto& [y, d] : b.terms) found = found || (expr_identical(x, y) && c == d);
    if (!found) return false;
  }
  return true;
}

// Replaces the fused sum (as a linear form) by a var wherever it is divided / taken modulo or
// compared, the places a fuse-then-split produces it.
class ReplaceSum : public IRMutator {
 public:
  ReplaceSum(const Linear& sum, Var v) : sum_(sum), v_(std::move(v)) {}

 protected:
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    if (auto l = to_linear(n->a); l && same_linear(*l, sum_))
      return make_binary(n->op, v_, IRMutator::mutate(n->b));
    return IRMutator::mutate_binary(n, e);
  }

 private:
  Linear sum_;
  Var v_;
};

}  // namespace

namespace {

// A fuse-then-split seen as one virtual loop: `(o * 6 + n) // 10` splits the fused iterator
// F = o * 6 + n. `fv` (extent `ext`, or E when the predicate holds `F < E`) replaces the
// loops of `sum` in the bindings and the predicate.
struct FusedView {
  Linear sum;
  Var fv;
  int64_t ext = 0;
  std::vector<Expr> bindings;
  std::vector<LoopDom> loops;
  Expr predicate;
};

std::optional<FusedView> fused_view(const std::vector<Expr>& bindings, const std::vector<LoopDom>& loops,
                                    const Expr& predicate) {
  std::optional<Linear> sum;
  for (auto& b : bindings)
    for_each_expr(b, [&](const Expr& e) {
      auto* bn = e.as<BinaryNode>();
      if (sum || !bn || (bn->op != BinOp::FloorDiv && bn->op != BinOp::FloorMod)) return;
      if (auto l = to_linear(bn->a); l && fused_extent(*l, loops) > 0) sum = *l;
    });
  if (!sum) return std::nullopt;
  int64_t ext = fused_extent(*sum, loops);
  DType t = sum->dtype;
  Var fv("fused", t);
  ReplaceSum rep(*sum, fv);
  std::vector<Expr> nb;
  for (auto& b : bindings) nb.push_back(fold(rep.mutate(b)));
  // The predicate: `sum < E` bounds F; other conjuncts are rewritten too.
  std::vector<Expr> preds;
  for (auto& c : conjuncts(fold(predicate))) {
    auto* lt = c.as<BinaryNode>();
    int64_t bound;
    if (lt && lt->op == BinOp::LT && is_const_int(lt->b, &bound)) {
      if (auto l = to_linear(lt->a); l && same_linear(*l, *sum)) {
        if (bound < ext) ext = bound;
        continue;
      }
      // `F // c < k` is `F < c * k` (c > 0): the guard a non-dividing fuse-then-split puts on
      // the outer part of the fused iterator (reverse_compute_at's tile bound
      // `(bo * 4 + bi) // 6 < 9` over 56 fused iterations for 54 points). Read as the
      // virtual loop's extent, the inner part `F % 6` then splits it exactly.
      auto* dv = lt->a.as<BinaryNode>();
      int64_t c;
      if (dv && dv->op == BinOp::FloorDiv && is_const_int(dv->b, &c) && c > 0 && bound >= 0) {
        if (auto l = to_linear(dv->a); l && same_linear(*l, *sum)) {
          if (c * bound < ext) ext = c * bound;
          continue;
        }
      }
    }
    preds.push_back(rep.mutate(c));
  }
  if (ext <= 0) return std::nullopt;
  std::vector<const VarNode*> parts;
  for (auto& [a, c] : sum->terms) parts.push_back(a.as<VarNode>());
  auto uses_part = [&](const Expr& e) {
    return uses_var(
        e, [&](const VarNode* v) { return std::find(parts.begin(), parts.end(), v) != parts.end(); });
  };
  for (auto& b : nb)
    if (uses_part(b)) return std::nullopt;
  for (auto& c : preds)
    if (uses_part(c)) return std::nullopt;
  std::vector<LoopDom> nl;
  for (auto& l : loops)
    if (std::find(parts.begin(), parts.end(), l.var.get()) == parts.end()) nl.push_back(l);
  nl.push_back(LoopDom{fv, make_int(ext, t)});
  return FusedView{*sum, fv, ext, nb, nl, make_and(preds)};
}

std::optional<std::unordered_map<const VarNode*, Expr>> invert_direct(const std::vector<Expr>& bindings,
                                                                      const std::vector<Var>& ivars,
                                                                      const std::vector<LoopDom>& loops);

}  // namespace

// TVM's iter-map also sees through fuse-then-split: `(o * 6 + n) // 10` splits the fused
// iterator F = o * 6 + n. When a binding divides such a sum, F (a virtual loop of the sum's
// extent, or of E when the predicate holds `F < E`) replaces its loops and the direct check
// runs again; F is one-to-one with the loops it replaces, so the answer carries over.
bool bijective_bindings(const std::vector<Expr>& bindings, const std::vector<Expr>& extents,
                        const std::vector<LoopDom>& loops, const Expr& predicate) {
  if (bijective_bindings_direct(bindings, extents, loops, predicate)) return true;
  auto fv = fused_view(bindings, loops, predicate);
  if (!fv) return false;
  return bijective_bindings_direct(fv->bindings, extents, fv->loops, fv->predicate);
}

// Inversion of the mixed-radix form that bijective_bindings recognises: each binding is
// sum_k ((l_k // lower_k) % ext_k) * scale_k with the scales composing the iter var, so the
// split k of iter var v is (v // scale_k) % ext_k (no modulo for the highest one), and each
// loop is the sum of its splits times their `lower`. A fused sum F = sum c_j * l_j gives
// l_j = (F // c_j) % ext_j.
std::optional<std::unordered_map<const VarNode*, Expr>> invert_bindings(
    const std::vector<Expr>& bindings, const std::vector<Var>& ivars, const std::vector<Expr>& extents,
    const std::vector<LoopDom>& loops, const Expr& predicate, std::vector<std::pair<Expr, Expr>>* sums) {
  if (bindings.size() != ivars.size() || bindings.size() != extents.size()) return std::nullopt;
  if (bijective_bindings_direct(bindings, extents, loops, predicate))
    return invert_direct(bindings, ivars, loops);
  auto fv = fused_view(bindings, loops, predicate);
  if (!fv || !bijective_bindings_direct(fv->bindings, extents, fv->loops, fv->predicate)) return std::nullopt;
  auto inv = invert_direct(fv->bindings, ivars, fv->loops);
  if (!inv || !inv->count(fv->fv.get())) return std::nullopt;
  Expr F = inv->at(fv->fv.get());
  inv->erase(fv->fv.get());
  if (sums) sums->emplace_back(from_linear(fv->sum), F);
  for (auto& [a, c] : fv->sum.terms) {
    auto* v = a.as<VarNode>();
    int64_t ext = 0;
    for (auto& l : loops)
      if (l.var.get() == v) is_const_int(fold(l.extent), &ext);
    if (ext <= 0) return std::nullopt;
    DType t = F.dtype();
    Expr x = c == 1 ? F : floordiv(F, make_int(c, t));
    (*inv)[v] = fold(floormod(x, make_int(ext, t)));
  }
  return inv;
}

std::optional<std::vector<LoopDom>> widened_domain(const std::vector<Expr>& h, const std::vector<Expr>& box,
                                                   const std::vector<LoopDom>& dom) {
  if (h.size() != box.size()) return std::nullopt;
  std::vector<int64_t> wide(dom.size(), 1);
  std::vector<bool> used(dom.size(), false);
  for (size_t d = 0; d < h.size(); ++d) {
    int found = -1;
    for (size_t k = 0; k < dom.size(); ++k)
      if (uses_var(h[d], dom[k].var.get())) {
        if (found >= 0) return std::nullopt;
        found = static_cast<int>(k);
      }
    if (found < 0) continue;  // a constant index
    int64_t n;
    if (!is_const_int(fold(box[d]), &n) || n <= 0) return std::nullopt;
    wide[static_cast<size_t>(found)] *= n;
    used[static_cast<size_t>(found)] = true;
    if (wide[static_cast<size_t>(found)] > (int64_t{1} << 40)) return std::nullopt;
  }
  std::vector<LoopDom> out;
  for (size_t k = 0; k < dom.size(); ++k) {
    int64_t e;
    if (!is_const_int(fold(dom[k].extent), &e)) return std::nullopt;
    if (!used[k]) {
      out.push_back(dom[k]);
      continue;
    }
    if (wide[k] < e) return std::nullopt;
    out.push_back(LoopDom{dom[k].var, make_int(wide[k], dom[k].extent.dtype())});
  }
  return out;
}

namespace {
bool bijective_bindings_direct(const std::vector<Expr>& bindings, const std::vector<Expr>& extents,
                               const std::vector<LoopDom>& loops, const Expr& predicate) {
  std::unordered_map<const VarNode*, LoopInfo> linfo;
  for (auto& l : loops) linfo[l.var.get()] = LoopInfo{l.extent};
  auto preds = conjuncts(fold(predicate));
  std::unordered_map<const VarNode*, std::vector<SplitTerm>> per_loop;
  for (size_t i = 0; i < bindings.size(); ++i) {
    std::vector<SplitTerm> ts;
    if (!parse_splits(bindings[i], 1, linfo, ts)) return false;
    std::sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.scale < b.scale; });
    // Mixed radix over the iter var's extent.
    Expr cover = make_int(1, extents[i].dtype());
    for (size_t k = 0; k < ts.size(); ++k) {
      int64_t cv;
      Expr fc = fold(cover);
      if (!is_const_int(fc, &cv)) {
        if (ts[k].scale != 1 || k != 0) return false;
      } else if (ts[k].scale != cv) {
        return false;
      }
      cover = fold(ts[k].ext * make_int(ts[k].scale, extents[i].dtype()));
      per_loop[ts[k].loop].push_back(ts[k]);
    }
    if (!prove_eq(cover, extents[i])) {
      // Overshoot allowed when the predicate bounds the binding.
      bool guarded = false;
      if (prove_le(extents[i], cover)) {
        for (auto& c : preds) {
          auto* lt = c.as<BinaryNode>();
          if (lt && lt->op == BinOp::LT && prove_eq(lt->a, bindings[i]) && prove_eq(lt->b, extents[i]))
            guarded = true;
        }
      }
      if (!guarded) return false;
    }
  }
  // Splits of each loop partition it.
  for (auto& l : loops) {
    auto it = per_loop.find(l.var.get());
    if (it == per_loop.end()) {
      // A loop that feeds no iter var repeats every instance: only fine with extent 1.
      if (!prove_eq(l.extent, make_int(1, l.extent.dtype()))) return false;
      continue;
    }
    // A chain of lowers 1, e_0, e_0 * e_1, ... (mixed radix), taken in that order: the lowers
    // may be symbolic (a split by a symbolic size, see exact_quotient).
    auto ts = it->second;
    std::vector<SplitTerm> chain;
    Expr expect = make_int(1, l.var.dtype());
    while (!ts.empty()) {
      auto nx =
          std::find_if(ts.begin(), ts.end(), [&](const SplitTerm& t) { return prove_eq(t.lower, expect); });
      if (nx == ts.end()) return false;
      chain.push_back(*nx);
      ts.erase(nx);
      if (!ts.empty()) {
        int64_t e;
        // A non-last symbolic extent only from a symbolic divisor (`l % n`): a multiple of it
        // is the loop's extent, so the chain is exact for every n.
        if (!is_const_int(fold(chain.back().ext), &e) && !exact_quotient(fold(l.extent), chain.back().ext))
          return false;
        expect = fold(expect * chain.back().ext);
      }
    }
    // The last split must reach the loop's end (its ext is the remaining extent or more).
    const SplitTerm& last = chain.back();
    int64_t lc = 0;
    Expr need;
    if (is_one(last.lower)) {
      need = l.extent;
    } else if (is_const_int(last.lower, &lc)) {
      need = fold(floordiv(l.extent + make_int(lc - 1, l.extent.dtype()), make_int(lc, l.extent.dtype())));
    } else {
      auto q = exact_quotient(fold(l.extent), last.lower);
      if (!q) return false;
      need = make_int(*q, l.extent.dtype());
    }
    if (!prove_le(need, last.ext) && !prove_eq(need, last.ext)) return false;
  }
  return true;
}
}  // namespace

namespace {
std::optional<std::unordered_map<const VarNode*, Expr>> invert_direct(const std::vector<Expr>& bindings,
                                                                      const std::vector<Var>& ivars,
                                                                      const std::vector<LoopDom>& loops) {
  std::unordered_map<const VarNode*, LoopInfo> linfo;
  for (auto& l : loops) linfo[l.var.get()] = LoopInfo{l.extent};
  std::unordered_map<const VarNode*, Expr> out;
  for (size_t i = 0; i < bindings.size(); ++i) {
    std::vector<SplitTerm> ts;
    if (!parse_splits(bindings[i], 1, linfo, ts)) return std::nullopt;
    std::sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.scale < b.scale; });
    for (size_t k = 0; k < ts.size(); ++k) {
      DType t = ivars[i].dtype();
      Expr val = ivars[i];
      if (ts[k].scale != 1) val = floordiv(val, make_int(ts[k].scale, t));
      if (k + 1 < ts.size()) val = floormod(val, ts[k].ext);
      if (!is_one(ts[k].lower))
        val = val * (ts[k].lower.dtype() == t ? ts[k].lower : make_cast(t, ts[k].lower));
      if (val.dtype() != ts[k].loop->dtype) val = make_cast(ts[k].loop->dtype, val);
      auto it = out.find(ts[k].loop);
      out[ts[k].loop] = it == out.end() ? val : it->second + val;
    }
  }
  for (auto& l : loops) {
    auto it = out.find(l.var.get());
    if (it == out.end())
      out[l.var.get()] = make_int(0, l.var.dtype());  // a unit loop
    else
      it->second = fold(it->second);
  }
  return out;
}
}  // namespace

}  // namespace tirc::sched

#include "transforms/simplify/bounds.h"

#include <algorithm>
#include <optional>

#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/simplify.h"

namespace tirc {

namespace {
using i128 = __int128;
constexpr int64_t NEG = Interval::kNegInf, POS = Interval::kPosInf;

int64_t sat(i128 v) {
  if (v >= static_cast<i128>(POS)) return POS;
  if (v <= static_cast<i128>(NEG)) return NEG;
  return static_cast<int64_t>(v);
}
bool inf(int64_t v) { return v == NEG || v == POS; }

// x * c for one end, infinities absorbing (inf * 0 = 0: the value is finite).
int64_t mul_end(int64_t x, i128 c) {
  if (c == 0) return 0;
  if (x == 0) return 0;
  if (inf(x)) return ((x > 0) == (c > 0)) ? POS : NEG;
  return sat(static_cast<i128>(x) * c);
}
int64_t add_end(int64_t x, int64_t y, bool lower) {
  if (lower && (x == NEG || y == NEG)) return NEG;
  if (!lower && (x == POS || y == POS)) return POS;
  if (x == POS || y == POS) return POS;  // only reachable for empty intervals
  if (x == NEG || y == NEG) return NEG;
  return sat(static_cast<i128>(x) + y);
}
int64_t fdiv(int64_t a, int64_t c) {  // floor(a / c), c != 0, a finite
  i128 q = static_cast<i128>(a) / c;
  if (static_cast<i128>(a) % c != 0 && ((a < 0) != (c < 0))) --q;
  return sat(q);
}
int64_t fdiv_end(int64_t a, int64_t c) {
  if (inf(a)) return ((a > 0) == (c > 0)) ? POS : NEG;
  return fdiv(a, c);
}
}  // namespace

Interval dtype_interval(DType t) {
  if (t == DType::I64) return Interval::everything();
  if (is_int(t) || is_bool(t)) return {dtype_min_int(t), dtype_max_int(t)};
  return Interval::everything();
}

bool interval_fits(const Interval& b, DType t) {
  if (!b.has_lower() || !b.has_upper()) return false;
  if (t == DType::I64) return true;
  return b.lo >= dtype_min_int(t) && b.hi <= dtype_max_int(t);
}

Interval interval_union(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}
Interval interval_intersect(const Interval& a, const Interval& b) {
  return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}
Interval interval_add(const Interval& a, const Interval& b) {
  return {add_end(a.lo, b.lo, true), add_end(a.hi, b.hi, false)};
}
Interval interval_sub(const Interval& a, const Interval& b) { return interval_add(a, interval_scale(b, -1)); }
Interval interval_scale(const Interval& a, int64_t c) {
  int64_t x = mul_end(a.lo, c), y = mul_end(a.hi, c);
  return c >= 0 ? Interval{x, y} : Interval{y, x};
}
Interval interval_mul(const Interval& a, const Interval& b) {
  if (a.is_point()) return interval_scale(b, a.lo);
  if (b.is_point()) return interval_scale(a, b.lo);
  auto m = [](int64_t x, int64_t y) -> int64_t {
    if (x == 0 || y == 0) return 0;
    if (inf(x) || inf(y)) return ((x > 0) == (y > 0)) ? POS : NEG;
    return sat(static_cast<i128>(x) * y);
  };
  int64_t c[4] = {m(a.lo, b.lo), m(a.lo, b.hi), m(a.hi, b.lo), m(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

namespace {

Interval clamp(const Interval& math, DType t) {
  if (is_bool(t))
    return interval_intersect(math, {0, 1}).lo <= interval_intersect(math, {0, 1}).hi
               ? interval_intersect(math, {0, 1})
               : Interval{0, 1};
  return interval_fits(math, t) ? math : dtype_interval(t);
}

class BoundVisitor {
 public:
  explicit BoundVisitor(const VarRanges& r) : ranges_(r) {}

  Interval bound(const Expr& e) {
    DType t = e.dtype();
    if (!is_int(t) && !is_bool(t)) return Interval::everything();
    int64_t v;
    if (is_const_int(e, &v)) return Interval::point(v);
    switch (e.kind()) {
      case ExprKind::Var: {
        auto it = ranges_.find(static_cast<const VarNode*>(e.get()));
        if (it == ranges_.end()) return dtype_interval(t);
        Interval r = interval_intersect(it->second, dtype_interval(t));
        return r.lo <= r.hi ? r : it->second;
      }
      case ExprKind::Binary: return binary(e.as<BinaryNode>(), e);
      case ExprKind::Unary: {
        auto* u = e.as<UnaryNode>();
        if (u->op == UnOp::Not) return {0, 1};
        return clamp(sum_bound(to_sum_form(e)), t);
      }
      case ExprKind::Cast: {
        auto* c = e.as<CastNode>();
        DType from = c->value.dtype();
        if (is_bool(t)) return {0, 1};
        if (is_int(from) || is_bool(from)) return clamp(bound(c->value), t);
        return dtype_interval(t);
      }
      case ExprKind::Call: return call(e.as<CallNode>());
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* s = as_select_like(e);
        int64_t c;
        if (is_const_int(s->cond, &c)) return bound(c ? s->t : s->f);
        return interval_union(bound(s->t), bound(s->f));
      }
      case ExprKind::Let: {
        auto* l = e.as<LetNode>();
        const VarNode* key = l->var.get();
        auto old = ranges_.find(key);
        std::optional<Interval> saved;
        if (old != ranges_.end()) saved = old->second;
        ranges_[key] = bound(l->value);
        Interval r = bound(l->body);
        if (saved)
          ranges_[key] = *saved;
        else
          ranges_.erase(key);
        return r;
      }
      default: return dtype_interval(t);
    }
  }

  Interval term_bound(const Expr& term) {
    if (auto* b = term.as<BinaryNode>(); b && b->op == BinOp::Mul)
      return clamp(interval_mul(bound(b->a), bound(b->b)), term.dtype());
    return bound(term);
  }

  Interval sum_bound(const SumForm& f) {
    Interval acc = Interval::point(as_signed(f.constant, f.dtype));
    for (auto& t : f.terms)
      acc = interval_add(acc, interval_scale(term_bound(t.term), as_signed(t.coeff, f.dtype)));
    return acc;
  }

  Interval diff_bound(const SumForm& a, const SumForm& b) {
    i128 c = static_cast<i128>(as_signed(a.constant, a.dtype)) - as_signed(b.constant, b.dtype);
    Interval acc = Interval::point(sat(c));
    if (inf(acc.lo)) acc = Interval::everything();
    std::vector<bool> used(b.terms.size(), false);
    auto add = [&](const Expr& term, i128 k) {
      if (k == 0) return;
      Interval tb = term_bound(term);
      int64_t x = mul_end(tb.lo, k), y = mul_end(tb.hi, k);
      acc = interval_add(acc, k > 0 ? Interval{x, y} : Interval{y, x});
    };
    for (auto& ta : a.terms) {
      i128 k = as_signed(ta.coeff, a.dtype);
      for (size_t j = 0; j < b.terms.size(); ++j)
        if (!used[j] && expr_identical(ta.term, b.terms[j].term)) {
          used[j] = true;
          k -= as_signed(b.terms[j].coeff, b.dtype);
          break;
        }
      add(ta.term, k);
    }
    for (size_t j = 0; j < b.terms.size(); ++j)
      if (!used[j]) add(b.terms[j].term, -static_cast<i128>(as_signed(b.terms[j].coeff, b.dtype)));
    return acc;
  }

 private:
  Interval binary(const BinaryNode* n, const Expr& e) {
    DType t = e.dtype();
    if (is_bool(t)) return {0, 1};
    switch (n->op) {
      case BinOp::Add:
      case BinOp::Sub:
      case BinOp::Mul: {
        SumForm f = to_sum_form(e);
        if (f.terms.size() == 1 && f.constant == 0 && f.terms[0].coeff == 1 &&
            f.terms[0].term.kind() == ExprKind::Binary)
          return term_bound(f.terms[0].term);
        return clamp(sum_bound(f), t);
      }
      case BinOp::FloorDiv: return clamp(floordiv(bound(n->a), bound(n->b)), t);
      case BinOp::FloorMod: return clamp(floormod(bound(n->a), bound(n->b)), t);
      case BinOp::Min: {
        Interval a = bound(n->a), b = bound(n->b);
        return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      }
      case BinOp::Max: {
        Interval a = bound(n->a), b = bound(n->b);
        return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      }
      default: return dtype_interval(t);
    }
  }

  static Interval floordiv(const Interval& a, const Interval& b) {
    if (b.is_point()) {
      int64_t c = b.lo;
      if (c == 0) return Interval::everything();
      int64_t x = fdiv_end(a.lo, c), y = fdiv_end(a.hi, c);
      return c > 0 ? Interval{x, y} : Interval{y, x};
    }
    if (b.lo > 0 && a.lo >= 0) return {0, a.has_upper() ? fdiv(a.hi, b.lo) : POS};
    if (b.lo > 0 && b.has_upper() && a.has_lower() && a.has_upper()) {
      int64_t c[4] = {fdiv(a.lo, b.lo), fdiv(a.lo, b.hi), fdiv(a.hi, b.lo), fdiv(a.hi, b.hi)};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    // |floordiv(a, b)| <= |a| for every b != 0.
    if (!a.has_lower() || !a.has_upper()) return Interval::everything();
    int64_t m = std::max(a.lo == NEG ? POS : (a.lo < 0 ? -a.lo : a.lo), a.hi < 0 ? -a.hi : a.hi);
    return {-m, m};
  }

  static Interval floormod(const Interval& a, const Interval& b) {
    if (b.is_point() && b.lo > 0) {
      int64_t c = b.lo;
      if (a.has_lower() && a.has_upper() && fdiv(a.lo, c) == fdiv(a.hi, c)) {
        int64_t k = fdiv(a.lo, c);
        return {sat(static_cast<i128>(a.lo) - static_cast<i128>(k) * c),
                sat(static_cast<i128>(a.hi) - static_cast<i128>(k) * c)};
      }
      return {0, c - 1};
    }
    if (b.is_point() && b.lo < 0) return {b.lo + 1, 0};
    if (b.lo > 0) {
      Interval r{0, b.has_upper() ? b.hi - 1 : POS};
      if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
      return r;
    }
    if (b.hi < 0) return {b.has_lower() ? b.lo + 1 : NEG, 0};
    return {b.has_lower() ? std::min<int64_t>(b.lo + 1, 0) : NEG,
            b.has_upper() ? std::max<int64_t>(b.hi - 1, 0) : POS};
  }

  Interval call(const CallNode* n) {
    DType t = n->dtype;
    if (!is_int(t)) return dtype_interval(t);
    switch (n->op) {
      case Intrinsic::Abs: {
        Interval a = bound(n->args[0]);
        if (a.lo >= 0) return a;
        if (a.hi <= 0) return clamp(interval_scale(a, -1), t);
        return clamp({0, std::max(mul_end(a.lo, -1), a.hi)}, t);
      }
      case Intrinsic::Sign: return {-1, 1};
      case Intrinsic::BoundsCheck: {
        // Evaluation only goes on when the index is inside [0, extent).
        Interval a = bound(n->args[0]), e = bound(n->args[1]);
        Interval in{0, e.has_upper() ? e.hi - 1 : Interval::kPosInf};
        return interval_intersect(a, in);
      }
      case Intrinsic::TruncDiv: {
        Interval a = bound(n->args[0]), b = bound(n->args[1]);
        if (b.is_point() && b.lo > 0 && a.has_lower() && a.has_upper())
          return clamp({a.lo / b.lo, a.hi / b.lo}, t);
        if (a.lo >= 0 && b.lo > 0) return clamp(floordiv(a, b), t);
        if (!a.has_lower() || !a.has_upper()) return dtype_interval(t);
        int64_t m = std::max(a.lo < 0 ? -a.lo : a.lo, a.hi < 0 ? -a.hi : a.hi);
        return clamp({-m, m}, t);
      }
      case Intrinsic::TruncMod: {
        Interval a = bound(n->args[0]), b = bound(n->args[1]);
        if (a.lo >= 0 && b.lo > 0) return clamp(floormod(a, b), t);
        if (b.is_point() && b.lo != 0 && b.lo != NEG) {
          int64_t c = b.lo < 0 ? -b.lo : b.lo;
          if (a.lo >= 0) return {0, c - 1};
          if (a.hi <= 0) return {-(c - 1), 0};
          return {-(c - 1), c - 1};
        }
        return dtype_interval(t);
      }
      default: return dtype_interval(t);
    }
  }

  VarRanges ranges_;
};

}  // namespace

Interval const_int_bound(const Expr& e, const VarRanges& ranges) { return BoundVisitor(ranges).bound(e); }
Interval sum_form_bound(const SumForm& f, const VarRanges& ranges) {
  return BoundVisitor(ranges).sum_bound(f);
}
Interval sum_form_diff_bound(const SumForm& a, const SumForm& b, const VarRanges& ranges) {
  return BoundVisitor(ranges).diff_bound(a, b);
}

// ---------------------------------------------------------------- symbolic bounds

namespace {

class SymBounder {
 public:
  SymBounder(const SymRanges& relax, const VarRanges& known) : relax_(relax), known_(known) {}

  SymInterval bound(const Expr& e) {
    if (!uses_relaxed(e)) return {e, e};
    DType t = e.dtype();
    switch (e.kind()) {
      case ExprKind::Var: return relax_.at(static_cast<const VarNode*>(e.get()));
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        switch (n->op) {
          case BinOp::Add: {
            SymInterval a = bound(n->a), b = bound(n->b);
            return {both(a.min, b.min, BinOp::Add), both(a.max, b.max, BinOp::Add)};
          }
          case BinOp::Sub: {
            SymInterval a = bound(n->a), b = bound(n->b);
            return {both(a.min, b.max, BinOp::Sub), both(a.max, b.min, BinOp::Sub)};
          }
          case BinOp::Mul: {
            int64_t c;
            if (is_const_int(simplify(n->b), &c)) return scale(bound(n->a), c, t);
            if (is_const_int(simplify(n->a), &c)) return scale(bound(n->b), c, t);
            // relaxed * kept-symbolic with a known sign (a stride `k * n` with n >= 0).
            for (int side = 0; side < 2; ++side) {
              const Expr& kept = side == 0 ? n->b : n->a;
              const Expr& rel = side == 0 ? n->a : n->b;
              if (uses_relaxed(kept)) continue;
              Interval sign = const_int_bound(kept, known_);
              SymInterval r = bound(rel);
              auto mul = [&](const Expr& x) {
                return x.defined() ? make_binary(BinOp::Mul, x, kept) : Expr();
              };
              if (sign.lo >= 0) return {mul(r.min), mul(r.max)};
              if (sign.hi <= 0) return {mul(r.max), mul(r.min)};
            }
            return fallback(e);
          }
          case BinOp::FloorDiv: {
            int64_t c;
            if (is_const_int(simplify(n->b), &c) && c != 0) {
              SymInterval a = bound(n->a);
              Expr cc = make_imm_int(t, c);
              Expr lo = a.min.defined() ? floordiv(a.min, cc) : Expr();
              Expr hi = a.max.defined() ? floordiv(a.max, cc) : Expr();
              return c > 0 ? SymInterval{lo, hi} : SymInterval{hi, lo};
            }
            return fallback(e);
          }
          case BinOp::FloorMod: {
            int64_t c;
            if (is_const_int(simplify(n->b), &c) && c > 0) {
              SymInterval a = bound(n->a);
              if (a.bounded()) {
                // One period only: the remainder moves monotonically.
                Analyzer an(known_);
                an.set_assume_no_overflow(true);
                if (an.can_prove(make_binary(BinOp::EQ, floordiv(a.min, make_imm_int(t, c)),
                                             floordiv(a.max, make_imm_int(t, c)))))
                  return {floormod(a.min, make_imm_int(t, c)), floormod(a.max, make_imm_int(t, c))};
              }
              Interval k = const_int_bound(e, relaxed_const());
              return from_interval(k, t);
            }
            return fallback(e);
          }
          case BinOp::Min:
          case BinOp::Max: {
            SymInterval a = bound(n->a), b = bound(n->b);
            return {both(a.min, b.min, n->op), both(a.max, b.max, n->op)};
          }
          default: return fallback(e);
        }
      }
      case ExprKind::Unary: {
        auto* u = e.as<UnaryNode>();
        if (u->op == UnOp::Neg) {
          SymInterval a = bound(u->a);
          return {a.max.defined() ? make_unary(UnOp::Neg, a.max) : Expr(),
                  a.min.defined() ? make_unary(UnOp::Neg, a.min) : Expr()};
        }
        return fallback(e);
      }
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* s = as_select_like(e);
        int64_t c;
        if (is_const_int(simplify(s->cond), &c)) return bound(c ? s->t : s->f);
        SymInterval a = bound(s->t), b = bound(s->f);
        return {both(a.min, b.min, BinOp::Min), both(a.max, b.max, BinOp::Max)};
      }
      case ExprKind::Let: {
        auto* l = e.as<LetNode>();
        SymInterval v = bound(l->value);
        auto saved = relax_;
        relax_[l->var.get()] = v;
        SymInterval r = bound(l->body);
        relax_ = std::move(saved);
        return r;
      }
      case ExprKind::Cast: {
        auto* c = e.as<CastNode>();
        if (is_int(t) && is_int(c->value.dtype()) && dtype_bits(t) >= dtype_bits(c->value.dtype()) &&
            is_signed_int(t) == is_signed_int(c->value.dtype())) {
          SymInterval a = bound(c->value);
          return {a.min.defined() ? make_cast(t, a.min) : Expr(),
                  a.max.defined() ? make_cast(t, a.max) : Expr()};
        }
        return fallback(e);
      }
      default: return fallback(e);
    }
  }

 private:
  bool uses_relaxed(const Expr& e) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind() == ExprKind::Var && relax_.count(static_cast<const VarNode*>(x.get()))) found = true;
    });
    return found;
  }
  // An end computed from two constant ends must not wrap: a bound near the dtype limits
  // (e.g. from a divisor of unknown sign) plus another would fold to a small wrong constant
  // (an inverted slice). Such an end is unbounded instead.
  static bool exact_fits(i128 v, DType t) {
    Interval d = dtype_interval(t);
    return v >= static_cast<i128>(d.lo) && v <= static_cast<i128>(d.hi);
  }
  static Expr both(const Expr& a, const Expr& b, BinOp op) {
    if (!a.defined() || !b.defined()) return Expr();
    int64_t x, y;
    auto constant = [](const Expr& e, int64_t* v) {
      Interval k = const_int_bound(e);  // ends are unsimplified: `c1 * 4` is a constant too
      *v = k.lo;
      return k.is_point();
    };
    if ((op == BinOp::Add || op == BinOp::Sub) && is_int(a.dtype()) && constant(a, &x) && constant(b, &y)) {
      i128 v = op == BinOp::Add ? static_cast<i128>(x) + y : static_cast<i128>(x) - y;
      if (!exact_fits(v, a.dtype())) return Expr();
    }
    return make_binary(op, a, b);
  }
  static SymInterval scale(const SymInterval& a, int64_t c, DType t) {
    Expr cc = make_imm_int(t, c);
    auto mul = [&](const Expr& x) -> Expr {
      int64_t v;
      if (!x.defined()) return Expr();
      Interval k = const_int_bound(x);
      v = k.lo;
      if (k.is_point() && !exact_fits(static_cast<i128>(v) * c, t)) return Expr();
      return make_binary(BinOp::Mul, x, cc);
    };
    Expr lo = mul(a.min), hi = mul(a.max);
    if (c == 0) return {cc, cc};
    return c > 0 ? SymInterval{lo, hi} : SymInterval{hi, lo};
  }
  // Constant ranges of relaxed vars (when their symbolic ends are constants) plus known.
  VarRanges relaxed_const() {
    VarRanges r = known_;
    for (auto& [v, s] : relax_) {
      Interval k;
      if (s.min.defined()) k.lo = const_int_bound(s.min, known_).lo;
      if (s.max.defined()) k.hi = const_int_bound(s.max, known_).hi;
      r[v] = k;
    }
    return r;
  }
  static SymInterval from_interval(const Interval& k, DType t) {
    return {k.has_lower() ? make_imm_int(t, k.lo) : Expr(), k.has_upper() ? make_imm_int(t, k.hi) : Expr()};
  }
  SymInterval fallback(const Expr& e) {
    if (!is_int(e.dtype()) && !is_bool(e.dtype())) return {};
    Interval k = const_int_bound(e, relaxed_const());
    if (k == dtype_interval(e.dtype()) && !is_bool(e.dtype())) return {};
    return from_interval(k, e.dtype());
  }

  SymRanges relax_;
  const VarRanges& known_;
};

}  // namespace

SymInterval symbolic_bound(const Expr& e, const SymRanges& relax, const VarRanges& known) {
  SymInterval r = SymBounder(relax, known).bound(e);
  Analyzer an(known);
  an.set_assume_no_overflow(true);
  if (r.min.defined()) r.min = an.simplify(r.min);
  if (r.max.defined()) r.max = an.simplify(r.max);
  return r;
}

}  // namespace tirc

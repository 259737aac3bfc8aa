#include "transforms/simplify/simplify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"

namespace tirc {

namespace {

using i128 = __int128;

bool stmt_uses_var(const Stmt& s, const VarNode* v) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) {
    if (x.get() == static_cast<const ExprNode*>(v)) found = true;
  });
  return found;
}

int64_t fdiv64(int64_t a, int64_t c) {
  int64_t q = a / c;
  if (a % c != 0 && ((a < 0) != (c < 0))) --q;
  return q;
}

BinOp negate_cmp(BinOp op) {
  switch (op) {
    case BinOp::LT: return BinOp::GE;
    case BinOp::LE: return BinOp::GT;
    case BinOp::GT: return BinOp::LE;
    case BinOp::GE: return BinOp::LT;
    case BinOp::EQ: return BinOp::NE;
    case BinOp::NE: return BinOp::EQ;
    default: return op;
  }
}
BinOp swap_cmp(BinOp op) {
  switch (op) {
    case BinOp::LT: return BinOp::GT;
    case BinOp::LE: return BinOp::GE;
    case BinOp::GT: return BinOp::LT;
    case BinOp::GE: return BinOp::LE;
    default: return op;
  }
}

// Saves variable ranges and restores them when destroyed.
class RangeScope {
 public:
  explicit RangeScope(VarRanges& r, std::vector<LinearFact>* facts = nullptr)
      : r_(r), facts_(facts), nfacts_(facts ? facts->size() : 0) {}
  ~RangeScope() {
    if (facts_) facts_->resize(nfacts_);
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        r_[it->first] = *it->second;
      else
        r_.erase(it->first);
    }
  }
  void set(const VarNode* v, const Interval& i) {
    auto it = r_.find(v);
    saved_.push_back({v, it == r_.end() ? std::nullopt : std::optional<Interval>(it->second)});
    r_[v] = i;
  }
  RangeScope(const RangeScope&) = delete;
  RangeScope& operator=(const RangeScope&) = delete;

 private:
  VarRanges& r_;
  std::vector<LinearFact>* facts_;
  size_t nfacts_;
  std::vector<std::pair<const VarNode*, std::optional<Interval>>> saved_;
};

// Exact (unwrapped) a - b over the terms of both sum forms; nullopt on int64 overflow.
std::optional<LinearFact> exact_diff(const Expr& a, const Expr& b) {
  SumForm fa = to_sum_form(a), fb = to_sum_form(b);
  std::vector<std::pair<Expr, i128>> terms;
  auto add = [&](const Expr& t, i128 c) {
    for (auto& x : terms)
      if (expr_identical(x.first, t)) {
        x.second += c;
        return;
      }
    terms.push_back({t, c});
  };
  for (auto& t : fa.terms) add(t.term, as_signed(t.coeff, fa.dtype));
  for (auto& t : fb.terms) add(t.term, -static_cast<i128>(as_signed(t.coeff, fb.dtype)));
  i128 c = static_cast<i128>(as_signed(fa.constant, fa.dtype)) - as_signed(fb.constant, fb.dtype);
  auto ok = [](i128 v) { return v >= static_cast<i128>(INT64_MIN) && v <= static_cast<i128>(INT64_MAX); };
  LinearFact f;
  if (!ok(c)) return std::nullopt;
  f.constant = static_cast<int64_t>(c);
  for (auto& [t, k] : terms) {
    if (k == 0) continue;
    if (!ok(k)) return std::nullopt;
    f.terms.push_back({t, static_cast<int64_t>(k)});
  }
  return f;
}

// +1 when x's terms equal y's, -1 when they are negated, 0 otherwise.
int same_terms(const LinearFact& x, const LinearFact& y) {
  if (x.terms.size() != y.terms.size() || x.terms.empty()) return 0;
  int sign = 0;
  for (auto& [t, k] : x.terms) {
    bool found = false;
    for (auto& [u, m] : y.terms)
      if (expr_identical(t, u)) {
        int s = m == k ? 1 : (m == -k ? -1 : 0);
        if (s == 0 || (sign != 0 && s != sign)) return 0;
        sign = s;
        found = true;
        break;
      }
    if (!found) return 0;
  }
  return sign;
}

Interval range_of(const Expr& min, const Expr& extent, const VarRanges& r) {
  Interval m = const_int_bound(min, r), e = const_int_bound(extent, r);
  Interval out{m.lo, Interval::kPosInf};
  if (m.has_upper() && e.has_upper()) {
    i128 hi = static_cast<i128>(m.hi) + e.hi - 1;
    if (hi < static_cast<i128>(Interval::kPosInf)) out.hi = static_cast<int64_t>(hi);
  }
  if (out.has_lower() && out.has_upper() && out.hi < out.lo) out.hi = out.lo;  // empty loop: body never runs
  return out;
}

// Tightens var ranges from `cond` (or from !cond when negate).
void assume_into(const Expr& cond, bool negate, VarRanges& r, RangeScope* scope,
                 std::vector<LinearFact>* facts, bool no_overflow) {
  auto set = [&](const VarNode* v, const Interval& i) {
    if (scope)
      scope->set(v, i);
    else
      r[v] = i;
  };
  if (auto* u = cond.as<UnaryNode>(); u && u->op == UnOp::Not)
    return assume_into(u->a, !negate, r, scope, facts, no_overflow);
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if ((b->op == BinOp::And && !negate) || (b->op == BinOp::Or && negate)) {
    assume_into(b->a, negate, r, scope, facts, no_overflow);
    assume_into(b->b, negate, r, scope, facts, no_overflow);
    return;
  }
  if (!binop_is_compare(b->op) || !is_int(b->a.dtype())) return;
  BinOp op = negate ? negate_cmp(b->op) : b->op;
  // Linear fact a - b (+1) <= 0, when both sides are their mathematical values.
  if (facts && op != BinOp::NE) {
    auto fits = [&](const Expr& x) {
      SumForm f = to_sum_form(x);
      return no_overflow || interval_fits(sum_form_bound(f, r), f.dtype);
    };
    if (fits(b->a) && fits(b->b)) {
      auto d = exact_diff(b->a, b->b);   // a - b
      auto nd = exact_diff(b->b, b->a);  // b - a
      auto push = [&](std::optional<LinearFact> f, int64_t add) {
        if (!f || f->terms.empty()) return;
        if ((add > 0 && f->constant == INT64_MAX)) return;
        f->constant += add;
        facts->push_back(std::move(*f));
      };
      switch (op) {
        case BinOp::LT: push(d, 1); break;
        case BinOp::LE: push(d, 0); break;
        case BinOp::GT: push(nd, 1); break;
        case BinOp::GE: push(nd, 0); break;
        case BinOp::EQ:
          push(d, 0);
          push(nd, 0);
          break;
        default: break;
      }
    }
  }
  Expr lhs = b->a, rhs = b->b;
  if (op == BinOp::NE && !lhs.as<VarNode>() && !rhs.as<VarNode>()) {
    // `-j + 5 != 0` is `j != 5`: one variable with coefficient +-1 (exact in mathematical
    // integers when both sides fit their dtype; the range cut below needs no more).
    auto fits = [&](const Expr& x) {
      SumForm f = to_sum_form(x);
      return no_overflow || interval_fits(sum_form_bound(f, r), f.dtype);
    };
    auto d = fits(lhs) && fits(rhs) ? exact_diff(lhs, rhs) : std::nullopt;
    if (!d || d->terms.size() != 1 || !d->terms[0].first.as<VarNode>()) return;
    int64_t c = d->terms[0].second;
    if ((c != 1 && c != -1) || d->constant == INT64_MIN) return;
    Expr v = d->terms[0].first;
    lhs = v;
    rhs = make_int(c == 1 ? -d->constant : d->constant, v.dtype());
  }
  if (!lhs.as<VarNode>()) {
    if (!rhs.as<VarNode>()) return;
    std::swap(lhs, rhs);
    op = swap_cmp(op);
  }
  auto* v = static_cast<const VarNode*>(lhs.get());
  Interval cur = const_int_bound(lhs, r), o = const_int_bound(rhs, r);
  Interval nxt = cur;
  switch (op) {
    case BinOp::LT:
      if (o.has_upper() && o.hi != Interval::kNegInf) nxt.hi = std::min(nxt.hi, o.hi - 1);
      break;
    case BinOp::LE: nxt.hi = std::min(nxt.hi, o.hi); break;
    case BinOp::GT:
      if (o.has_lower() && o.lo != Interval::kPosInf) nxt.lo = std::max(nxt.lo, o.lo + 1);
      break;
    case BinOp::GE: nxt.lo = std::max(nxt.lo, o.lo); break;
    case BinOp::EQ: nxt = interval_intersect(cur, o); break;
    case BinOp::NE:
      // Only an end of the range can be cut off (`j != 0` with j in [0, 5] -> [1, 5]).
      if (o.is_point() && cur.has_lower() && cur.lo == o.lo && cur.lo != Interval::kPosInf)
        nxt.lo = cur.lo + 1;
      else if (o.is_point() && cur.has_upper() && cur.hi == o.lo && cur.hi != Interval::kNegInf)
        nxt.hi = cur.hi - 1;
      break;
    default: return;
  }
  if (nxt.lo > nxt.hi || nxt == cur) return;  // unreachable branch or nothing learnt
  set(v, nxt);
}

// ---------------------------------------------------------------- bounds checks kept
// The lowering's `__bounds_check(index, extent, site)` (Intrinsic::BoundsCheck) stops compiled
// code where the interpreter, which evaluates every operand, reports an out-of-bounds access.
// A rewrite that drops an operand (`x*0`, `x - x`, `x % 1`, a proven comparison or min/max,
// `c && false`, a select with a constant condition, an unused let) must not drop the checks
// the operand would have run: the simplifier keeps such an operand as an unused let
// `(let _ = operand in result)`, which codegen evaluates (the load itself is then dead code).

bool is_check(const Expr& x) {
  auto* c = x.as<CallNode>();
  return c && c->op == Intrinsic::BoundsCheck;
}

bool contains_check(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || is_check(x); });
  return found;
}
bool contains_check(const Stmt& s) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) { found = found || is_check(x); });
  return found;
}

void check_sites(const Expr& e, std::vector<int64_t>* out) {
  for_each_expr(e, [&](const Expr& x) {
    int64_t site;
    if (is_check(x) && x.as<CallNode>()->args.size() == 3 && is_const_int(x.as<CallNode>()->args[2], &site))
      out->push_back(site);
  });
}

// The sub-expressions of e that hold checks and run whenever e runs: checks outside every
// if_then_else arm (with the index holding them), and whole if_then_else / let nodes with
// checks in their arms / body (an arm runs only when taken; a let body may use its var).
// `top`: e itself is an if_then_else whose arms are simplified on their own (their checks
// are the arms' business): only its condition counts.
void evaluated_units(const Expr& e, bool top, std::vector<Expr>* out) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return;
    case ExprKind::Call:
      if (is_check(e)) {
        out->push_back(e);
        return;
      }
      break;
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      evaluated_units(n->cond, false, out);
      if (!top && (contains_check(n->t) || contains_check(n->f))) out->push_back(e);
      return;
    }
    case ExprKind::Let:
      if (contains_check(e)) out->push_back(e);
      return;
    default: break;
  }
  // Loads, binaries, unaries, casts, calls, selects: every operand runs.
  std::vector<Expr> kids;
  switch (e.kind()) {
    case ExprKind::Load: kids = e.as<LoadNode>()->indices; break;
    case ExprKind::Binary: kids = {e.as<BinaryNode>()->a, e.as<BinaryNode>()->b}; break;
    case ExprKind::Unary: kids = {e.as<UnaryNode>()->a}; break;
    case ExprKind::Cast: kids = {e.as<CastNode>()->value}; break;
    case ExprKind::Call: kids = e.as<CallNode>()->args; break;
    case ExprKind::Select: {
      auto* n = as_select_like(e);
      kids = {n->cond, n->t, n->f};
      break;
    }
    case ExprKind::BufferPtr: kids = e.as<BufferPtrNode>()->indices; break;
    default: break;
  }
  for (auto& k : kids) evaluated_units(k, false, out);
}

class Simplifier : public IRMutator {
 public:
  Simplifier(VarRanges& r, std::vector<LinearFact>& facts, bool no_overflow, bool checks)
      : r_(r), facts_(facts), no_overflow_(no_overflow), checks_(checks) {}

  Expr mutate(const Expr& e) override {
    Expr r = IRMutator::mutate(e);
    if (!checks_ || r.same_as(e)) return r;
    r = keep_checks(e, r);
    // Canonical forms reorder operands (`-(a - b)` -> `b - a`): with checks in several
    // operands, compiled code would report another failing access first than the
    // interpreter, which evaluates left to right. Then only the operands are simplified.
    if (!same_check_order(e, r)) {
      if (auto* b = e.as<BinaryNode>()) return make_binary(b->op, mutate(b->a), mutate(b->b));
      if (auto* u = e.as<UnaryNode>()) return make_unary(u->op, mutate(u->a));
    }
    return r;
  }
  // The check sites common to e and r are met in the same order.
  static bool same_check_order(const Expr& e, const Expr& r) {
    std::vector<int64_t> a, b;
    check_sites(e, &a);
    check_sites(r, &b);
    auto firsts = [](const std::vector<int64_t>& v, const std::vector<int64_t>& other) {
      std::vector<int64_t> out;
      for (int64_t x : v)
        if (std::find(out.begin(), out.end(), x) == out.end() &&
            std::find(other.begin(), other.end(), x) != other.end())
          out.push_back(x);
      return out;
    };
    return firsts(a, b) == firsts(b, a);
  }
  Stmt mutate(const Stmt& s) override { return IRMutator::mutate(s); }

  // r is what e simplified to: the check-holding operands of e whose checks r lost are kept
  // as unused lets around r (simplified, in e's order).
  Expr keep_checks(const Expr& e, Expr r) {
    std::vector<Expr> units;
    evaluated_units(e, e.kind() == ExprKind::IfThenElse, &units);
    if (units.empty()) return r;
    std::vector<int64_t> have;
    check_sites(r, &have);
    std::vector<Expr> lost;
    for (auto& u : units) {
      // e itself (a let, a check): the mutation that made r kept what its parts needed (a
      // check dropped with an untaken arm, `(let d = if_then_else(true, s, A[chk]) in ..)`,
      // stays dropped); simplifying e again would only recurse forever.
      if (u.same_as(e)) continue;
      std::vector<int64_t> mine;
      check_sites(u, &mine);
      bool kept = false;
      for (int64_t s : mine) kept = kept || std::find(have.begin(), have.end(), s) != have.end();
      if (kept) continue;
      Expr v = mutate(u);
      if (contains_check(v)) lost.push_back(v);
    }
    for (auto it = lost.rbegin(); it != lost.rend(); ++it) r = make_let(Var("_chk", it->dtype()), *it, r);
    return r;
  }

 protected:
  // ------------------------------------------------------------------ leaves
  Expr mutate_var(const Expr& e) override {
    if (!is_int(e.dtype())) return e;
    auto it = r_.find(static_cast<const VarNode*>(e.get()));
    if (it != r_.end() && it->second.is_point()) return make_imm_int(e.dtype(), it->second.lo);
    return e;
  }

  // ------------------------------------------------------------------ binary
  // Integer sums are simplified as a whole: the chain of + - and constant * is walked once,
  // only its leaves are simplified, and one canonical form is built at the root (building it
  // at every level would be cubic in the number of terms).
  static bool is_sum_node(const Expr& e) {
    if (!is_int(e.dtype())) return false;
    if (auto* b = e.as<BinaryNode>())
      return b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul;
    if (auto* u = e.as<UnaryNode>()) return u->op == UnOp::Neg;
    return false;
  }
  void collect_sum(const Expr& e, int64_t scale, SumForm* out) {
    DType t = out->dtype;
    auto wmul = [&](int64_t x, int64_t y) {
      return wrap_int(static_cast<uint64_t>(x) * static_cast<uint64_t>(y), t);
    };
    if (auto* b = e.as<BinaryNode>(); b && is_sum_node(e)) {
      if (b->op == BinOp::Add || b->op == BinOp::Sub) {
        collect_sum(b->a, scale, out);
        collect_sum(b->b, b->op == BinOp::Add ? scale : wmul(scale, -1), out);
        return;
      }
      // Mul: a constant side scales the other; otherwise a product term of simplified factors.
      SumForm fa, fb;
      fa.dtype = fb.dtype = t;
      collect_sum(b->a, 1, &fa);
      collect_sum(b->b, 1, &fb);
      if (fb.is_const()) return out->add(fa, wmul(scale, fb.constant));
      if (fa.is_const()) return out->add(fb, wmul(scale, fa.constant));
      out->add(to_sum_form(make_binary(BinOp::Mul, canonical(fa), canonical(fb))), scale);
      return;
    }
    if (auto* u = e.as<UnaryNode>(); u && is_sum_node(e)) return collect_sum(u->a, wmul(scale, -1), out);
    Expr leaf = mutate(e);
    out->add(to_sum_form(leaf), scale);
  }
  Expr simplify_sum(const Expr& e) {
    SumForm f;
    f.dtype = e.dtype();
    collect_sum(e, 1, &f);
    Expr r = canonical(std::move(f));
    return expr_identical(r, e) ? e : r;
  }

  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    if (is_sum_node(e)) return simplify_sum(e);
    Expr a = mutate(n->a), b = mutate(n->b);
    Expr cur = a.same_as(n->a) && b.same_as(n->b) ? e : make_binary(n->op, a, b);
    if (Expr f = fold_constant(cur); f.defined()) return f;
    DType t = a.dtype();
    Expr r;
    if (is_int(t))
      r = int_binary(n->op, a, b, cur);
    else if (is_float(t))
      r = float_binary(n->op, a, b, cur);
    else if (is_bool(t))
      r = bool_binary(n->op, a, b, cur);
    else
      r = cur;
    return expr_identical(r, e) ? e : r;
  }

  Expr canonical(SumForm f) {
    // x // c * c + x % c -> x (exact: it is the definition of floor modulo).
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t i = 0; i < f.terms.size() && !changed; ++i) {
        auto* m = f.terms[i].term.as<BinaryNode>();
        int64_t c;
        if (!m || m->op != BinOp::FloorMod || !is_const_int(m->b, &c) || c <= 0) continue;
        int64_t want = wrap_int(static_cast<uint64_t>(f.terms[i].coeff) * static_cast<uint64_t>(c), f.dtype);
        for (size_t j = 0; j < f.terms.size(); ++j) {
          auto* d = f.terms[j].term.as<BinaryNode>();
          int64_t c2;
          if (!d || d->op != BinOp::FloorDiv || !is_const_int(d->b, &c2) || c2 != c ||
              f.terms[j].coeff != want || !expr_identical(d->a, m->a))
            continue;
          int64_t k = f.terms[i].coeff;
          Expr x = m->a;
          f.terms.erase(f.terms.begin() + static_cast<long>(std::max(i, j)));
          f.terms.erase(f.terms.begin() + static_cast<long>(std::min(i, j)));
          f.add(to_sum_form(x), k);
          changed = true;
          break;
        }
      }
    }
    return from_sum_form(f);
  }

  bool fits(const SumForm& f) { return no_overflow_ || interval_fits(sum_form_bound(f, r_), f.dtype); }

  // Bound of math(a) - math(b) when a's and b's run-time values are their mathematical ones.
  std::optional<Interval> diff_bound(const Expr& a, const Expr& b) {
    SumForm fa = to_sum_form(a), fb = to_sum_form(b);
    if (!fits(fa) || !fits(fb)) return std::nullopt;
    return sum_form_diff_bound(fa, fb, r_);
  }
  // true/false when a op b is decided for every value in range.
  std::optional<bool> prove_cmp(BinOp op, const Expr& a, const Expr& b) {
    if (op == BinOp::EQ || op == BinOp::NE) {
      SumForm d = to_sum_form(a);
      d.add(to_sum_form(b), -1);
      if (d.is_const()) return (d.constant == 0) == (op == BinOp::EQ);  // exact modulo 2^bits
    }
    auto d = diff_bound(a, b);
    if (!d) return std::nullopt;
    if (!facts_.empty()) {
      if (auto ed = exact_diff(a, b)) {
        for (auto& f : facts_) {
          int s = same_terms(*ed, f);
          i128 k = s == 1 ? static_cast<i128>(ed->constant) - f.constant
                          : static_cast<i128>(ed->constant) + f.constant;
          if (k < static_cast<i128>(INT64_MIN) + 1 || k > static_cast<i128>(INT64_MAX) - 1) continue;
          if (s == 1) d->hi = std::min<int64_t>(d->hi, static_cast<int64_t>(k));   // a - b <= k
          if (s == -1) d->lo = std::max<int64_t>(d->lo, static_cast<int64_t>(k));  // a - b >= k
        }
      }
    }
    switch (op) {
      case BinOp::LT:
        if (d->hi < 0) return true;
        if (d->lo >= 0) return false;
        break;
      case BinOp::LE:
        if (d->hi <= 0) return true;
        if (d->lo > 0) return false;
        break;
      case BinOp::GT:
        if (d->lo > 0) return true;
        if (d->hi <= 0) return false;
        break;
      case BinOp::GE:
        if (d->lo >= 0) return true;
        if (d->hi < 0) return false;
        break;
      case BinOp::EQ:
        if (d->is_point() && d->lo == 0) return true;
        if (d->lo > 0 || d->hi < 0) return false;
        break;
      case BinOp::NE:
        if (d->is_point() && d->lo == 0) return false;
        if (d->lo > 0 || d->hi < 0) return true;
        break;
      default: break;
    }
    return std::nullopt;
  }

  Expr int_binary(BinOp op, const Expr& a, const Expr& b, const Expr& cur) {
    DType t = a.dtype();
    switch (op) {
      case BinOp::Add:
      case BinOp::Sub:
      case BinOp::Mul: return canonical(to_sum_form(cur));
      case BinOp::FloorDiv:
      case BinOp::FloorMod: return divmod(op, a, b, cur);
      case BinOp::Min:
      case BinOp::Max: {
        if (expr_identical(a, b)) return a;
        bool is_min = op == BinOp::Min;
        if (auto le = prove_cmp(BinOp::LE, a, b); le && *le) return is_min ? a : b;
        if (auto ge = prove_cmp(BinOp::GE, a, b); ge && *ge) return is_min ? b : a;
        // min(min(x, y), y) -> min(x, y); min(x, min(x, y)) -> min(x, y)
        if (auto* inner = a.as<BinaryNode>();
            inner && inner->op == op && (expr_identical(inner->a, b) || expr_identical(inner->b, b)))
          return a;
        if (auto* inner = b.as<BinaryNode>();
            inner && inner->op == op && (expr_identical(inner->a, a) || expr_identical(inner->b, a)))
          return b;
        return cur;
      }
      case BinOp::EQ:
      case BinOp::NE:
      case BinOp::LT:
      case BinOp::LE:
      case BinOp::GT:
      case BinOp::GE: {
        if (auto p = prove_cmp(op, a, b)) return make_bool(*p);
        return cur;
      }
      default: (void)t; return cur;
    }
  }

  Expr divmod(BinOp op, const Expr& a, const Expr& b, const Expr& cur) {
    DType t = a.dtype();
    bool is_div = op == BinOp::FloorDiv;
    int64_t c;
    if (!is_const_int(b, &c) || c == 0) return cur;
    c = as_signed(c, t);
    if (is_unsigned_int(t) && c < 0) return cur;  // huge unsigned divisor: leave it
    if (c == 1) return is_div ? a : make_imm_int(t, 0);
    if (c == -1) {
      if (!is_div) return make_imm_int(t, 0);
      SumForm f;  // floordiv(x, -1) == -x, also for INT_MIN (both wrap)
      f.dtype = t;
      f.add(to_sum_form(a), -1);
      return canonical(f);
    }
    if (c < 0) return cur;
    // Nested constant divisions (exact, no range needed).
    if (auto* in = a.as<BinaryNode>()) {
      int64_t c1;
      if (in->op == op && is_const_int(in->b, &c1) && (c1 = as_signed(c1, t)) > 0) {
        if (is_div) {
          i128 prod = static_cast<i128>(c1) * c;
          if (prod <= dtype_max_int(t) && (t != DType::I64 || prod <= static_cast<i128>(INT64_MAX)))
            return divmod(op, in->a, make_imm_int(t, static_cast<int64_t>(prod)),
                          floordiv(in->a, make_imm_int(t, static_cast<int64_t>(prod))));
        } else if (c1 % c == 0) {
          return divmod(op, in->a, b, floormod(in->a, b));
        } else if (c % c1 == 0) {
          return a;  // (x % c1) % c with c1 | c: already in [0, c1)
        }
      }
      if (is_div && in->op == BinOp::FloorMod && is_const_int(in->b, &c1) && (c1 = as_signed(c1, t)) > 0 &&
          c1 % c == 0) {
        // (x % c1) // c == (x // c) % (c1 / c) when c | c1.
        Expr fd = divmod(BinOp::FloorDiv, in->a, b, floordiv(in->a, b));
        Expr m = make_imm_int(t, c1 / c);
        if (Expr f = fold_constant(floormod(fd, m)); f.defined()) return f;
        return divmod(BinOp::FloorMod, fd, m, floormod(fd, m));
      }
    }
    SumForm s = to_sum_form(a);
    if (!fits(s)) return cur;
    SumForm q, rem;
    q.dtype = rem.dtype = t;
    for (auto& term : s.terms) {
      int64_t k = as_signed(term.coeff, t);
      if (k % c == 0)
        q.add_term(term.term, k / c);
      else
        rem.add_term(term.term, k);
    }
    int64_t k0 = as_signed(s.constant, t);
    q.constant = wrap_int(static_cast<uint64_t>(fdiv64(k0, c)), t);
    rem.constant = k0 - fdiv64(k0, c) * c;
    if (!fits(rem)) return cur;
    // Common factor g of the remainder and the divisor: (g*R) // (g*c) == R // c and
    // (g*R) % (g*c) == g * (R % c).
    auto uabs = [](int64_t x) { return x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x); };
    uint64_t ug = static_cast<uint64_t>(c);
    for (auto& term : rem.terms) ug = std::gcd(ug, uabs(as_signed(term.coeff, t)));
    ug = std::gcd(ug, uabs(rem.constant));
    int64_t g = static_cast<int64_t>(ug);  // divides c, so it fits
    int64_t cc = c;
    if (g > 1) {
      for (auto& term : rem.terms)
        term.coeff = wrap_int(static_cast<uint64_t>(as_signed(term.coeff, t) / g), t);
      rem.constant /= g;
      cc = c / g;
    }
    Expr inner_div, inner_mod;
    Interval rb = sum_form_bound(rem, r_);
    if (rem.is_const()) {
      inner_div = make_imm_int(t, fdiv64(rem.constant, cc));
      inner_mod = make_imm_int(t, rem.constant - fdiv64(rem.constant, cc) * cc);
    } else if (rb.has_lower() && rb.has_upper() && fdiv64(rb.lo, cc) == fdiv64(rb.hi, cc)) {
      int64_t k = fdiv64(rb.lo, cc);
      inner_div = make_imm_int(t, k);
      SumForm m = rem;
      m.constant = wrap_int(static_cast<uint64_t>(m.constant - k * cc), t);
      inner_mod = canonical(m);
    } else {
      Expr rx = canonical(rem);
      if (q.is_const() && q.constant == 0 && g == 1 && expr_identical(rx, a)) return cur;
      inner_div = make_binary(BinOp::FloorDiv, rx, make_imm_int(t, cc));
      inner_mod = make_binary(BinOp::FloorMod, rx, make_imm_int(t, cc));
    }
    if (is_div) {
      q.add(to_sum_form(inner_div));
      return canonical(q);
    }
    SumForm m = to_sum_form(inner_mod);
    m.scale(g);
    return canonical(m);
  }

  Expr float_binary(BinOp op, const Expr& a, const Expr& b, const Expr& cur) {
    double x;
    auto is_c = [](const Expr& e, double v, bool neg_zero = false) {
      double d;
      return is_const_float(e, &d) && d == v && (v != 0.0 || std::signbit(d) == neg_zero);
    };
    (void)x;
    switch (op) {
      case BinOp::Mul:
        if (is_c(b, 1.0)) return a;
        if (is_c(a, 1.0)) return b;
        return cur;
      case BinOp::Div:
        if (is_c(b, 1.0)) return a;
        return cur;
      case BinOp::Add:
        if (is_c(b, 0.0, true)) return a;  // x + (-0.0) == x for every x
        if (is_c(a, 0.0, true)) return b;
        return cur;
      case BinOp::Sub:
        if (is_c(b, 0.0, false)) return a;  // x - (+0.0) == x for every x
        return cur;
      case BinOp::Min:
      case BinOp::Max:
        if (expr_identical(a, b)) return a;
        return cur;
      default: return cur;
    }
  }

  Expr bool_binary(BinOp op, const Expr& a, const Expr& b, const Expr& cur) {
    int64_t x;
    switch (op) {
      case BinOp::And:
        if (is_const_int(a, &x)) return x ? b : make_bool(false);
        if (is_const_int(b, &x)) return x ? a : make_bool(false);
        if (expr_identical(a, b)) return a;
        return cur;
      case BinOp::Or:
        if (is_const_int(a, &x)) return x ? make_bool(true) : b;
        if (is_const_int(b, &x)) return x ? make_bool(true) : a;
        if (expr_identical(a, b)) return a;
        return cur;
      case BinOp::EQ:
      case BinOp::NE: {
        bool eq = op == BinOp::EQ;
        if (is_const_int(b, &x)) return (x != 0) == eq ? a : not_(a);
        if (is_const_int(a, &x)) return (x != 0) == eq ? b : not_(b);
        if (expr_identical(a, b)) return make_bool(eq);
        return cur;
      }
      default: return cur;
    }
  }

  Expr not_(const Expr& a) {
    if (auto* u = a.as<UnaryNode>(); u && u->op == UnOp::Not) return u->a;
    if (auto* c = a.as<BinaryNode>();
        c && binop_is_compare(c->op) && (is_int(c->a.dtype()) || is_bool(c->a.dtype())))
      return make_binary(negate_cmp(c->op), c->a, c->b);
    int64_t x;
    if (is_const_int(a, &x)) return make_bool(!x);
    return make_unary(UnOp::Not, a);
  }

  // ------------------------------------------------------------------ unary / cast / call
  Expr mutate_unary(const UnaryNode* n, const Expr& e) override {
    if (is_sum_node(e)) return simplify_sum(e);
    Expr a = mutate(n->a);
    Expr cur = a.same_as(n->a) ? e : make_unary(n->op, a);
    if (Expr f = fold_constant(cur); f.defined()) return f;
    Expr r = cur;
    if (n->op == UnOp::Not) {
      r = not_(a);
    } else if (auto* u = a.as<UnaryNode>(); u && u->op == UnOp::Neg) {
      r = u->a;
    }
    return expr_identical(r, e) ? e : r;
  }

  Expr mutate_cast(const CastNode* n, const Expr& e) override {
    Expr v = mutate(n->value);
    if (v.dtype() == n->dtype) return v;
    Expr cur = v.same_as(n->value) ? e : make_cast(n->dtype, v);
    if (Expr f = fold_constant(cur); f.defined()) return f;
    return cur;
  }

  Expr mutate_call(const CallNode* n, const Expr& e) override {
    bool changed = false;
    auto args = mutate_all(n->args, &changed);
    Expr cur = changed ? make_call(n->op, args) : e;
    if (Expr f = fold_constant(cur); f.defined()) return f;
    DType t = n->dtype;
    if (is_int(t)) {
      if (n->op == Intrinsic::TruncDiv || n->op == Intrinsic::TruncMod) {
        // On a non-negative dividend and positive divisor, trunc and floor agree.
        Interval ba = const_int_bound(args[0], r_), bb = const_int_bound(args[1], r_);
        if (ba.lo >= 0 && bb.lo > 0) {
          BinOp op = n->op == Intrinsic::TruncDiv ? BinOp::FloorDiv : BinOp::FloorMod;
          return mutate_binary_built(op, args[0], args[1]);
        }
      }
      if (n->op == Intrinsic::Abs && const_int_bound(args[0], r_).lo >= 0) return args[0];
    }
    return cur;
  }

  Expr mutate_binary_built(BinOp op, const Expr& a, const Expr& b) {
    Expr cur = make_binary(op, a, b);
    if (Expr f = fold_constant(cur); f.defined()) return f;
    return int_binary(op, a, b, cur);
  }

  // ------------------------------------------------------------------ select / let
  Expr mutate_select(const SelectNode* n, const Expr& e) override {
    Expr c = mutate(n->cond);
    int64_t k;
    if (is_const_int(c, &k)) return mutate(k ? n->t : n->f);
    Expr t, f;
    // select runs both arms whatever the condition: a check in an arm must keep its operands
    // as written (under the condition `n != 0`, `__bounds_check(n - 1, n)` of the other arm
    // would become `__bounds_check(-1, 0)`, failing when the arm's value is not even used).
    bool both = e.kind() == ExprKind::Select;
    {
      RangeScope s(r_, &facts_);
      if (!(both && checks_ && contains_check(n->t))) assume_into(c, false, r_, &s, &facts_, no_overflow_);
      t = mutate(n->t);
    }
    {
      RangeScope s(r_, &facts_);
      if (!(both && checks_ && contains_check(n->f))) assume_into(c, true, r_, &s, &facts_, no_overflow_);
      f = mutate(n->f);
    }
    if (expr_identical(t, f)) return t;
    int64_t tv, fv;
    if (is_bool(t.dtype()) && is_const_int(t, &tv) && is_const_int(f, &fv))
      return tv ? c : not_(c);  // tv != fv here
    if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return e;
    return e.kind() == ExprKind::Select ? make_select(c, t, f) : make_if_then_else(c, t, f);
  }

  bool trivial_value(const Expr& v) { return v.as<IntImmNode>() || v.as<FloatImmNode>() || v.as<VarNode>(); }

  Expr mutate_let(const LetNode* n, const Expr& e) override {
    Expr v = mutate(n->value);
    if (trivial_value(v)) return mutate(substitute(n->body, {{n->var.get(), v}}));
    Expr body;
    {
      RangeScope s(r_);
      if (is_int(v.dtype()) || is_bool(v.dtype())) s.set(n->var.get(), const_int_bound(v, r_));
      body = mutate(n->body);
    }
    if (!expr_uses_var(body, n->var.get()) && !(checks_ && contains_check(v))) return body;
    if (v.same_as(n->value) && body.same_as(n->body)) return e;
    return make_let(n->var, v, body);
  }

  // ------------------------------------------------------------------ statements
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Expr mn = mutate(n->min), ext = mutate(n->extent);
    Stmt body;
    {
      RangeScope sc(r_);
      sc.set(n->loop_var.get(), range_of(mn, ext, r_));
      body = mutate(n->body);
    }
    if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return s;
    return make_for(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
  }

  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    bool changed = false;
    auto bindings = mutate_all(n->bindings, &changed);
    Expr pred = mutate(n->predicate);
    Block blk;
    {
      RangeScope sc(r_);
      for (auto& iv : n->block->iter_vars)
        sc.set(iv.var.get(), range_of(make_int(0, iv.var.dtype()), iv.extent, r_));
      blk = mutate_block(n->block);
    }
    if (!changed && pred.same_as(n->predicate) && blk.same_as(n->block)) return s;
    return make_block_realize(std::move(bindings), pred, blk);
  }

  Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s) override {
    Expr c = mutate(n->cond);
    int64_t k;
    if (is_const_int(c, &k)) {
      if (k) return mutate(n->then_case);
      return n->else_case.defined() ? mutate(n->else_case) : make_seq({});
    }
    Stmt t, f;
    {
      RangeScope sc(r_, &facts_);
      assume_into(c, false, r_, &sc, &facts_, no_overflow_);
      t = mutate(n->then_case);
    }
    if (n->else_case.defined()) {
      RangeScope sc(r_, &facts_);
      assume_into(c, true, r_, &sc, &facts_, no_overflow_);
      f = mutate(n->else_case);
    }
    if (c.same_as(n->cond) && t.same_as(n->then_case) && f.same_as(n->else_case)) return s;
    return make_if(c, t, f);
  }

  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s) override {
    Expr v = mutate(n->value);
    if (trivial_value(v)) return mutate(substitute(n->body, {{n->var.get(), v}}));
    Stmt body;
    {
      RangeScope sc(r_);
      if (is_int(v.dtype()) || is_bool(v.dtype())) sc.set(n->var.get(), const_int_bound(v, r_));
      body = mutate(n->body);
    }
    // An unused let whose value holds a bounds check stays: the check must run.
    if (!stmt_uses_var(body, n->var.get()) && !(checks_ && contains_check(v))) return body;
    if (v.same_as(n->value) && body.same_as(n->body)) return s;
    return make_let_stmt(n->var, v, body);
  }

 private:
  VarRanges& r_;
  std::vector<LinearFact>& facts_;
  bool no_overflow_;
  bool checks_;  // the input holds bounds checks (lowered code): keep_checks is on
};

}  // namespace

void Analyzer::bind(const Var& v, const Expr& min, const Expr& extent) {
  ranges_[v.get()] = range_of(min, extent, ranges_);
}
void Analyzer::bind_value(const Var& v, const Expr& value) {
  ranges_[v.get()] = const_int_bound(value, ranges_);
}
void Analyzer::assume(const Expr& cond) {
  assume_into(simplify(cond), false, ranges_, nullptr, &facts_, assume_no_overflow_);
}

Expr Analyzer::simplify(const Expr& e) {
  if (!e.defined()) return e;
  return Simplifier(ranges_, facts_, assume_no_overflow_, contains_check(e)).mutate(e);
}
Stmt Analyzer::simplify(const Stmt& s) {
  if (!s.defined()) return s;
  return Simplifier(ranges_, facts_, assume_no_overflow_, contains_check(s)).mutate(s);
}
bool Analyzer::can_prove(const Expr& cond) {
  int64_t v;
  return is_const_int(simplify(cond), &v) && v != 0;
}
Interval Analyzer::const_bound(const Expr& e) { return const_int_bound(simplify(e), ranges_); }
bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  if (is_int(a.dtype()) && a.dtype() == b.dtype()) return can_prove(make_binary(BinOp::EQ, a, b));
  return expr_identical(simplify(a), simplify(b));
}

Expr simplify(const Expr& e, const VarRanges& ranges) { return Analyzer(ranges).simplify(e); }
Stmt simplify(const Stmt& s, const VarRanges& ranges) { return Analyzer(ranges).simplify(s); }
Function simplify_function(const FunctionNode& f) {
  Analyzer an;
  auto out = std::make_shared<FunctionNode>(f);
  out->body = an.simplify(f.body);
  return out;
}

std::optional<int64_t> as_const_int(const Expr& e, const VarRanges& ranges) {
  int64_t v;
  if (is_const_int(simplify(e, ranges), &v)) return v;
  return std::nullopt;
}

}  // namespace tirc

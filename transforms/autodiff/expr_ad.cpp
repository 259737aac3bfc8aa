#include "transforms/autodiff/expr_ad.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"

namespace tirc::ad {

std::string NameGen::fresh(const std::string& base) {
  int& n = next_[base];
  for (;;) {
    std::string cand = base + std::to_string(n++);
    if (!used_.count(cand)) {
      used_.insert(cand);
      return cand;
    }
  }
}

std::string NameGen::unique(const std::string& base) {
  if (!used_.count(base)) {
    used_.insert(base);
    return base;
  }
  for (int n = 1;; ++n) {
    std::string cand = base + "_" + std::to_string(n);
    if (!used_.count(cand)) {
      used_.insert(cand);
      return cand;
    }
  }
}

Expr sum_terms(const std::vector<Expr>& terms) {
  Expr out;
  for (auto& t : terms) out = out.defined() ? out + t : t;
  return out;
}

Expr rounded_const(DType t, double v) { return make_const(t, is_float(t) ? round_float(v, t) : v); }

Stmt round_float_consts(const Stmt& s) {
  struct Round : IRMutator {
    Expr mutate_float(const Expr& e) override {
      auto* f = e.as<FloatImmNode>();
      double r = round_float(f->value, e.dtype());
      // nan stays as it is (nan != nan).
      return r == f->value || std::isnan(r) ? e : make_float(r, e.dtype());
    }
  } r;
  return r.mutate(s);
}

void collect_vars(const Expr& e, std::unordered_set<const VarNode*>* out) {
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) out->insert(v);
  });
}

namespace {
bool is_simple(const Expr& e) { return e.as<VarNode>() || e.as<IntImmNode>() || e.as<FloatImmNode>(); }
Expr mul(const Expr& a, const Expr& b) {
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  return a * b;
}
Expr neg(const Expr& a) {
  if (auto* u = a.as<UnaryNode>(); u && u->op == UnOp::Neg) return u->a;
  double v;
  if (is_const_float(a, &v)) return make_float(-v, a.dtype());
  return -a;
}
Expr cst(DType t, double v) { return rounded_const(t, v); }
// Hash consistent with expr_identical (vars and buffers by identity, unlike
// structural_hash, which maps free vars by position and so puts t0 * x, t1 * x, ... of a
// product chain in one bucket).
size_t identity_hash(const Expr& e) {
  size_t h = static_cast<size_t>(e.kind()) * 1000003u + static_cast<size_t>(e.dtype());
  auto mix = [&](size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  switch (e.kind()) {
    case ExprKind::Var: mix(reinterpret_cast<size_t>(e.get())); break;
    case ExprKind::IntImm:
    case ExprKind::FloatImm: {
      double v = 0;
      int64_t k = 0;
      if (is_const_int(e, &k))
        mix(static_cast<size_t>(k));
      else if (is_const_float(e, &v))
        mix(std::hash<double>()(v));
      break;
    }
    case ExprKind::Load: {
      auto* l = e.as<LoadNode>();
      mix(reinterpret_cast<size_t>(l->buffer.get()));
      for (auto& i : l->indices) mix(identity_hash(i));
      break;
    }
    case ExprKind::Binary:
      mix(static_cast<size_t>(e.as<BinaryNode>()->op));
      mix(identity_hash(e.as<BinaryNode>()->a));
      mix(identity_hash(e.as<BinaryNode>()->b));
      break;
    case ExprKind::Unary:
      mix(static_cast<size_t>(e.as<UnaryNode>()->op));
      mix(identity_hash(e.as<UnaryNode>()->a));
      break;
    case ExprKind::Cast: mix(identity_hash(e.as<CastNode>()->value)); break;
    case ExprKind::Call:
      mix(static_cast<size_t>(e.as<CallNode>()->op));
      for (auto& a : e.as<CallNode>()->args) mix(identity_hash(a));
      break;
    case ExprKind::Select:
      mix(identity_hash(as_select_like(e)->cond));
      mix(identity_hash(as_select_like(e)->t));
      mix(identity_hash(as_select_like(e)->f));
      break;
    default: mix(reinterpret_cast<size_t>(e.get())); break;  // not shared
  }
  return h;
}
bool has_float_op(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* b = x.as<BinaryNode>(); b && is_float(b->a.dtype())) found = true;
    if (auto* c = x.as<CallNode>(); c && is_float(x.dtype())) found = true;
  });
  return found;
}
}  // namespace

Expr ExprAD::wrap(const std::vector<const std::vector<Binding>*>& lists, const Expr& e) {
  std::vector<const Binding*> all;
  for (auto* l : lists)
    for (auto& b : *l) all.push_back(&b);
  std::unordered_set<const VarNode*> need;
  collect_vars(e, &need);
  std::vector<const Binding*> kept;
  for (size_t i = all.size(); i-- > 0;) {
    if (!need.count(all[i]->var.get())) continue;
    kept.push_back(all[i]);
    collect_vars(all[i]->value, &need);
  }
  Expr out = e;
  for (auto* b : kept) out = make_let(b->var, b->value, out);  // kept is innermost-first
  return out;
}

Expr ExprAD::bind(Scope& s, const Expr& value, const char* base) {
  // Constant operands fold (f32 + - * / of f32 constants computed in double and rounded
  // once are correctly rounded), so `0.5 / 3.0 * S` costs one FLOP per element, not two.
  if (auto* b = value.as<BinaryNode>()) {
    double x, y;
    if (is_const_float(b->a, &x) && is_const_float(b->b, &y)) {
      switch (b->op) {
        case BinOp::Add: return rounded_const(value.dtype(), x + y);
        case BinOp::Sub: return rounded_const(value.dtype(), x - y);
        case BinOp::Mul: return rounded_const(value.dtype(), x * y);
        case BinOp::Div:
          if (y != 0) return rounded_const(value.dtype(), x / y);
          break;
        default: break;
      }
    }
  }
  if (auto* u = value.as<UnaryNode>(); u && u->op == UnOp::Neg) {
    double x;
    if (is_const_float(u->a, &x)) return rounded_const(value.dtype(), -x);
  }
  // Common subexpressions of one scope share their temp ((X - M) * (X - M) computes X - M
  // once): hash-consing on the (already linearised, hence shallow) value.
  size_t h = identity_hash(value);
  auto range = s.index.equal_range(h);
  for (auto it = range.first; it != range.second; ++it)
    if (expr_identical(s.lets[it->second].value, value)) return s.lets[it->second].var;
  s.index.emplace(h, s.lets.size());
  Var t(names_.fresh(base), value.dtype());
  s.lets.push_back({t, value});
  TempInfo info;
  info.def = value;
  defs_[t.get()] = std::move(info);
  return t;
}

Expr ExprAD::subst(const Expr& e) const {
  if (letmap_.empty()) return e;
  return substitute(e, letmap_);
}

Expr ExprAD::lin_int(const Expr& e, Scope& s) {
  // Inside an arm the temps would be arm temps, which the scatter target of a leaf (its
  // load's indices) cannot bind outside the arm; a let expression inside e could bind a var
  // the float part uses. Both keep the plain substitution.
  // TIRC_AD_NO_INT_TEMPS=1: the plain substitution (to measure what the temps save).
  static const bool off = [] {
    const char* v = std::getenv("TIRC_AD_NO_INT_TEMPS");
    return v && *v && std::string(v) != "0";
  }();
  if (off || arm_depth_ > 0 || !has_float_op(e)) return subst(e);
  bool has_let = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<LetNode>()) has_let = true;
  });
  if (has_let) return subst(e);
  struct Lin : IRMutator {
    ExprAD* ad;
    Scope* s;
    Expr mutate(const Expr& x) override {
      if (is_float(x.dtype()) && has_float_op(x)) return ad->linearize(x, *s);
      return IRMutator::mutate(x);
    }
  } m;
  m.ad = this;
  m.s = &s;
  return subst(m.mutate(e));
}

void ExprAD::bind_let(const Var& v, const Expr& value, Scope& s) {
  // An integer let of float values (`let i0 = i32(floor(p))`) is substituted at each use
  // (an index, a guard, the bounds check of a read), as before, but its float part is a
  // temp: computed once and shared with the other uses of the same value (`p - floor(p)`),
  // where the whole `floor(p)` was recomputed at every use (deform_conv1d 4.7x).
  if (is_float(value.dtype()))
    letmap_[v.get()] = linearize(value, s);
  else
    letmap_[v.get()] = lin_int(value, s);
}

Expr ExprAD::linearize(const Expr& e, Scope& s) {
  if (!is_float(e.dtype())) return subst(e);
  switch (e.kind()) {
    case ExprKind::FloatImm: return e;
    case ExprKind::Var: {
      auto it = letmap_.find(static_cast<const VarNode*>(e.get()));
      return it != letmap_.end() ? it->second : e;
    }
    case ExprKind::Load: {
      // Float work in the indices (`X[i32(floor(p))]`) is shared like the let above.
      auto* l = e.as<LoadNode>();
      bool changed = false;
      std::vector<Expr> idx;
      for (auto& i : l->indices) {
        idx.push_back(lin_int(i, s));
        changed = changed || !idx.back().same_as(i);
      }
      return changed ? make_load(l->buffer, idx) : e;
    }
    case ExprKind::Binary: {
      auto* b = e.as<BinaryNode>();
      Expr x = linearize(b->a, s), y = linearize(b->b, s);
      return bind(s, make_binary(b->op, x, y));
    }
    case ExprKind::Unary: {
      auto* u = e.as<UnaryNode>();
      return bind(s, make_unary(u->op, linearize(u->a, s)));
    }
    case ExprKind::Cast: {
      auto* c = e.as<CastNode>();
      if (!is_float(c->value.dtype())) return subst(e);
      return bind(s, make_cast(e.dtype(), linearize(c->value, s)));
    }
    case ExprKind::Call: {
      auto* c = e.as<CallNode>();
      std::vector<Expr> args;
      for (auto& a : c->args) args.push_back(linearize(a, s));
      return bind(s, make_call(c->op, args));
    }
    case ExprKind::Select: {
      auto* c = as_select_like(e);
      Expr cond = subst(c->cond);
      // A condition with float operations is computed once (the forward value and both
      // arms' adjoints use it).
      if (has_float_op(cond)) cond = bind(s, cond, "c");
      Expr x = linearize(c->t, s), y = linearize(c->f, s);
      return bind(s, make_select(cond, x, y));
    }
    case ExprKind::IfThenElse: {
      auto* c = as_select_like(e);
      TempInfo info;
      info.is_ite = true;
      info.cond = subst(c->cond);
      info.then_scope = std::make_shared<Scope>();
      info.else_scope = std::make_shared<Scope>();
      ++arm_depth_;
      info.then_val = linearize(c->t, *info.then_scope);
      info.else_val = linearize(c->f, *info.else_scope);
      --arm_depth_;
      Expr value = make_if_then_else(info.cond, wrap({&info.then_scope->lets}, info.then_val),
                                     wrap({&info.else_scope->lets}, info.else_val));
      Var t(names_.fresh("t"), e.dtype());
      s.lets.push_back({t, value});
      info.def = value;
      defs_[t.get()] = std::move(info);
      return t;
    }
    case ExprKind::Let: {
      auto* l = e.as<LetNode>();
      bind_let(l->var, l->value, s);
      return linearize(l->body, s);
    }
    default: throw Error("gradient: cannot differentiate expression of this kind");
  }
}

void ExprAD::push(AdjMap& adj, std::vector<LeafTerm>* leaves, const std::vector<Expr>& guards,
                  const Expr& arg, const Expr& term) {
  if (!arg.defined() || !term.defined() || !is_float(arg.dtype())) return;
  if (auto* v = arg.as<VarNode>()) {
    if (defs_.count(v)) adj[v].push_back(term);
    return;
  }
  if (auto* l = arg.as<LoadNode>()) {
    if (active_(l->buffer)) leaves->push_back({arg, guards, term});
  }
}

void ExprAD::rule(const Expr& def, const Var& z, const Expr& a, AdjMap& adj, std::vector<LeafTerm>* leaves,
                  const std::vector<Expr>& guards) {
  // An adjoint that is zero unless cur_mask_ holds (the untaken arm of a `select`, which is
  // evaluated all the same) times a local derivative that is inf or nan there (Halide's
  // select guard `select(x > 0, sqrt(x), 1)` at x = 0: 0 * inf) gave nan: the term is then
  // selected by the mask, so the untaken arm contributes exactly 0.
  // The term is built on the unmasked adjoint then (cur_unmasked_), which leaves the masked
  // adjoint let unused. Terms of a and constants only (a * 3.0, -a) stay as they are: finite.
  auto P = [&](const Expr& arg, const Expr& term) {
    bool plain = !term.defined() || !cur_mask_.defined() || as_select_like(term);
    if (!plain) {
      plain = true;
      for_each_expr(term, [&](const Expr& x) {
        if (x.as<LoadNode>() || (x.as<VarNode>() && !x.same_as(a))) plain = false;
      });
    }
    if (plain) {
      push(adj, leaves, guards, arg, term);
      return;
    }
    Expr t = term;
    if (auto* av = a.as<VarNode>(); av && cur_unmasked_.defined())
      t = substitute(term, {{av, cur_unmasked_}});
    push(adj, leaves, guards, arg, make_select(cur_mask_, t, cst(term.dtype(), 0)));
  };
  DType T = def.dtype();
  if (auto* b = def.as<BinaryNode>()) {
    const Expr &x = b->a, &y = b->b;
    switch (b->op) {
      case BinOp::Add:
        P(x, a);
        P(y, a);
        return;
      case BinOp::Sub:
        P(x, a);
        P(y, neg(a));
        return;
      case BinOp::Mul:
        if (expr_identical(x, y)) {
          // x * x: one term (a * 2) * x instead of a * x + a * x (a * 2 is hoistable).
          P(x, mul(a * cst(T, 2), x));
          return;
        }
        P(x, mul(a, y));
        P(y, mul(a, x));
        return;
      case BinOp::Div:
        // Derivatives are written a * d(x) with the local derivative d apart from the
        // adjoint a, so that a d which depends on fewer iter vars than the block can be
        // hoisted out of it (hoist.h): same FLOPs when it cannot.
        P(x, a / y);
        P(y, mul(a, neg(z / y)));
        return;
      case BinOp::Min:
      case BinOp::Max: {
        // Ties go to the first operand. The comparison is computed once for both operands.
        Expr c = b->op == BinOp::Min ? make_binary(BinOp::LE, x, y) : make_binary(BinOp::GE, x, y);
        if (cur_adj_lets_) {
          Var cv(names_.fresh("c"), c.dtype());
          cur_adj_lets_->push_back({cv, c});
          c = cv;
        }
        P(x, make_select(c, a, cst(T, 0)));
        P(y, make_select(c, cst(T, 0), a));
        return;
      }
      default:
        throw Error("gradient: operator " + std::string(binop_symbol(b->op)) +
                    " on floats is not differentiable");
    }
  }
  if (auto* u = def.as<UnaryNode>()) {
    if (u->op == UnOp::Neg) P(u->a, neg(a));
    return;
  }
  if (auto* c = def.as<CastNode>()) {
    if (is_float(c->value.dtype())) P(c->value, make_cast(c->value.dtype(), a));
    return;
  }
  if (auto* s = as_select_like(def)) {
    P(s->t, make_select(s->cond, a, cst(T, 0)));
    P(s->f, make_select(s->cond, cst(T, 0), a));
    return;
  }
  auto* c = def.as<CallNode>();
  if (!c) return;
  const Expr& x = c->args[0];
  switch (c->op) {
    case Intrinsic::Exp: P(x, mul(a, z)); return;
    case Intrinsic::Log: P(x, a / x); return;
    case Intrinsic::Log2: P(x, a / (x * cst(T, std::log(2.0)))); return;
    case Intrinsic::Log10: P(x, a / (x * cst(T, std::log(10.0)))); return;
    case Intrinsic::Log1p: P(x, a / (x + cst(T, 1))); return;
    case Intrinsic::Expm1: P(x, mul(a, z + cst(T, 1))); return;
    case Intrinsic::Sqrt: P(x, mul(a, cst(T, 0.5) / z)); return;
    case Intrinsic::Rsqrt: P(x, mul(a, (z * cst(T, -0.5)) / x)); return;
    case Intrinsic::Sin: P(x, mul(a, make_call(Intrinsic::Cos, {x}))); return;
    case Intrinsic::Cos: P(x, neg(mul(a, make_call(Intrinsic::Sin, {x})))); return;
    case Intrinsic::Tan: P(x, mul(a, z * z + cst(T, 1))); return;
    case Intrinsic::Tanh: P(x, mul(a, cst(T, 1) - z * z)); return;
    case Intrinsic::Sigmoid: P(x, mul(a, z * (cst(T, 1) - z))); return;
    case Intrinsic::Erf:
      P(x, mul(a, cst(T, 1.1283791670955126) * make_call(Intrinsic::Exp, {neg(x * x)})));
      return;
    case Intrinsic::Abs: P(x, mul(a, make_call(Intrinsic::Sign, {x}))); return;
    case Intrinsic::BoundsCheck:  // an index (lowering only)
    case Intrinsic::Floor:
    case Intrinsic::Ceil:
    case Intrinsic::Round:
    case Intrinsic::Trunc:
    case Intrinsic::Sign: return;
    case Intrinsic::Pow: {
      const Expr& y = c->args[1];
      double k;
      if (is_const_float(y, &k)) {
        if (k == 0) return;
        if (k == 1) {
          P(x, a);
          return;
        }
        if (k == 2) {
          P(x, mul(a, cst(T, 2) * x));
          return;
        }
        P(x, mul(a, cst(T, k) * make_call(Intrinsic::Pow, {x, cst(T, k - 1)})));
        return;
      }
      P(x, mul(a, y * make_call(Intrinsic::Pow, {x, y - cst(T, 1)})));
      // d/dy x^y = x^y log x; defined as 0 where x^y == 0 (x == 0, y > 0), as PyTorch.
      if (y.as<VarNode>() || y.as<LoadNode>())
        P(y, mul(a, make_select(make_binary(BinOp::EQ, z, cst(T, 0)), cst(T, 0),
                                z * make_call(Intrinsic::Log, {x}))));
      return;
    }
    case Intrinsic::TruncDiv:
    case Intrinsic::TruncMod:
      throw Error(std::string("gradient: ") + intrinsic_name(c->op) + " on floats is not differentiable");
  }
}

void ExprAD::reverse_arm(const Expr& cond, const Scope& arm, const Expr& val, const Expr& a,
                         const std::vector<Expr>& guards, AdjMap& adj, std::vector<LeafTerm>* leaves) {
  std::vector<Expr> g = guards;
  g.push_back(cond);
  AdjMap local;
  std::vector<LeafTerm> arm_leaves;
  std::vector<Binding> arm_adj;
  push(local, &arm_leaves, g, val, a);
  reverse_scope(arm, local, g, &arm_adj, &arm_leaves);
  std::vector<const std::vector<Binding>*> lists = {&arm.lets, &arm_adj};
  std::unordered_set<const VarNode*> arm_vars;
  for (auto& b : arm.lets) arm_vars.insert(b.var.get());
  for (auto& b : arm_adj) arm_vars.insert(b.var.get());
  auto uses_arm = [&](const Expr& e) {
    std::unordered_set<const VarNode*> vs;
    collect_vars(e, &vs);
    for (auto* v : vs)
      if (arm_vars.count(v)) return true;
    return false;
  };
  // Group leaf terms by (load, guards) so that each group is wrapped once.
  std::vector<LeafTerm> grouped;
  for (auto& lt : arm_leaves) {
    bool merged = false;
    for (auto& gt : grouped) {
      if (!expr_identical(gt.load, lt.load) || gt.guards.size() != lt.guards.size()) continue;
      bool same = true;
      for (size_t i = 0; i < gt.guards.size() && same; ++i) same = expr_identical(gt.guards[i], lt.guards[i]);
      if (!same) continue;
      gt.term = gt.term + lt.term;
      merged = true;
      break;
    }
    if (!merged) grouped.push_back(lt);
  }
  for (auto& lt : grouped) {
    LeafTerm out{lt.load, {}, wrap(lists, lt.term)};
    for (auto& gd : lt.guards) out.guards.push_back(uses_arm(gd) ? wrap(lists, gd) : gd);
    leaves->push_back(std::move(out));
  }
  // Adjoint terms for temps outside the arm apply only when the arm is taken.
  for (auto& [v, terms] : local) {
    if (terms.empty()) continue;
    Expr t = wrap(lists, sum_terms(terms));
    adj[v].push_back(make_if_then_else(cond, t, cst(t.dtype(), 0)));
  }
}

void ExprAD::reverse_scope(const Scope& s, AdjMap& adj, const std::vector<Expr>& guards,
                           std::vector<Binding>* adj_lets, std::vector<LeafTerm>* leaves) {
  std::vector<Binding>* saved = cur_adj_lets_;
  cur_adj_lets_ = adj_lets;
  for (size_t i = s.lets.size(); i-- > 0;) {
    const Var& t = s.lets[i].var;
    auto it = adj.find(t.get());
    if (it == adj.end()) continue;
    std::vector<Expr> terms = std::move(it->second);
    adj.erase(it);
    if (terms.empty()) continue;
    Expr a = sum_terms(terms);
    // mask: the adjoint is 0 unless it holds, when every term is a select with a zero arm (a
    // temp used in several masked places: the conditions or-ed); unmasked: the nonzero arm of
    // a single such select, when it is a var or constant.
    Expr mask, unmasked;
    for (auto& term : terms) {
      auto* sl = term.as<SelectNode>();
      Expr c, arm;
      if (sl && is_const_float(sl->f) && is_zero(sl->f))
        c = sl->cond, arm = sl->t;
      else if (sl && is_const_float(sl->t) && is_zero(sl->t))
        c = make_unary(UnOp::Not, sl->cond), arm = sl->f;
      if (!c.defined()) {
        mask = Expr();
        break;
      }
      mask = mask.defined() ? make_binary(BinOp::Or, mask, c) : c;
      unmasked = terms.size() == 1 && is_simple(arm) ? arm : Expr();
    }
    if (!is_simple(a)) {
      Var av(names_.fresh("a"), a.dtype());
      adj_lets->push_back({av, a});
      a = av;
    }
    const TempInfo& info = defs_.at(t.get());
    if (info.is_ite) {
      reverse_arm(info.cond, *info.then_scope, info.then_val, a, guards, adj, leaves);
      reverse_arm(make_unary(UnOp::Not, info.cond), *info.else_scope, info.else_val, a, guards, adj, leaves);
    } else {
      cur_mask_ = mask;
      cur_unmasked_ = unmasked;
      rule(info.def, t, a, adj, leaves, guards);
      cur_mask_ = cur_unmasked_ = Expr();
    }
  }
  cur_adj_lets_ = saved;
}

void ExprAD::reverse(const Scope& s, const std::vector<std::pair<Expr, Expr>>& seeds,
                     const std::vector<Expr>& guards, std::vector<Binding>* adj_lets,
                     std::vector<LeafTerm>* leaves) {
  AdjMap adj;
  for (auto& [e, ct] : seeds) push(adj, leaves, guards, e, ct);
  reverse_scope(s, adj, guards, adj_lets, leaves);
}

}  // namespace tirc::ad

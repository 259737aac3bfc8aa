#include "transforms/schedule/predicate.h"

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::sched {

namespace {

// Replaces sub-expressions equal (as linear forms) to a binding by the bound iter var.
class BindingsToIterVars : public IRMutator {
 public:
  explicit BindingsToIterVars(const BlockRealizeNode& br) : br_(br) {}
  Expr mutate(const Expr& e) override {
    if (e.defined() && is_int(e.dtype()) && e.kind() != ExprKind::IntImm) {
      for (size_t i = 0; i < br_.bindings.size(); ++i) {
        const Expr& b = br_.bindings[i];
        if (b.dtype() == e.dtype() && b.kind() != ExprKind::IntImm && prove_eq(e, b))
          return br_.block->iter_vars[i].var;
      }
    }
    return IRMutator::mutate(e);
  }

 private:
  const BlockRealizeNode& br_;
};

// Replaces sub-expressions equal (as linear forms) to a fused sum of loops by its value.
class SumsToIterVars : public IRMutator {
 public:
  explicit SumsToIterVars(const std::vector<std::pair<Expr, Expr>>& sums) : sums_(sums) {}
  Expr mutate(const Expr& e) override {
    if (e.defined() && is_int(e.dtype()) && e.kind() != ExprKind::IntImm)
      for (auto& [sum, value] : sums_)
        if (sum.dtype() == e.dtype() && prove_eq(e, sum)) return value;
    return IRMutator::mutate(e);
  }

 private:
  const std::vector<std::pair<Expr, Expr>>& sums_;
};

// True when conjunct c holds at every point of the block's domain (constant extents), e.g.
// `vi * 3 + vj < 12` for vi < 4, vj < 3.
bool always_true(const Expr& c, const BlockNode& b) {
  auto* bn = c.as<BinaryNode>();
  if (!bn) return false;
  RangeMap dom;
  for (auto& iv : b.iter_vars) {
    int64_t e;
    if (is_const_int(fold(iv.extent), &e) && e > 0) dom[iv.var.get()] = IntRange{0, e - 1};
  }
  switch (bn->op) {
    case BinOp::LT: return prove_lt(bn->a, bn->b, dom);
    case BinOp::LE: return prove_le(bn->a, bn->b, dom);
    case BinOp::GT: return prove_lt(bn->b, bn->a, dom);
    case BinOp::GE: return prove_le(bn->b, bn->a, dom);
    default: return false;
  }
}

// True when conjunct c only says that an iter var lies in its domain.
bool domain_fact(const Expr& c, const BlockNode& b) {
  auto* bn = c.as<BinaryNode>();
  if (!bn) return false;
  Expr lo, hi;  // c is lo < hi (strict) or lo <= hi
  bool strict;
  switch (bn->op) {
    case BinOp::LT: lo = bn->a, hi = bn->b, strict = true; break;
    case BinOp::LE: lo = bn->a, hi = bn->b, strict = false; break;
    case BinOp::GT: lo = bn->b, hi = bn->a, strict = true; break;
    case BinOp::GE: lo = bn->b, hi = bn->a, strict = false; break;
    default: return false;
  }
  for (auto& iv : b.iter_vars) {
    DType t = iv.var.dtype();
    if (expr_identical(lo, iv.var)) {  // v < hi: implied when extent <= hi (+1 if not strict)
      Expr bound = strict ? hi : fold(hi + make_int(1, t));
      if (bound.dtype() == t && prove_le(iv.extent, bound)) return true;
    }
    if (expr_identical(hi, iv.var)) {  // lo <= v: implied when lo <= 0 (-1 if strict)
      Expr bound = strict ? fold(lo + make_int(1, t)) : lo;
      if (bound.dtype() == t && prove_le(bound, make_int(0, t))) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Expr> predicate_in_iter_vars(const BlockRealizeNode& br, const std::vector<Stmt>& loops) {
  const BlockNode& b = *br.block.get();
  auto cs = conjuncts(fold(br.predicate));
  if (cs.empty()) return {};
  for (auto& c : cs)
    for_each_expr(c, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>())
        refuse("the predicate of block " + b.name + " loads buffer " + l->buffer->name);
    });
  std::unordered_set<const VarNode*> lvars;
  std::vector<LoopDom> doms;
  for (auto& l : loops) {
    auto* f = l.as<ForNode>();
    lvars.insert(f->loop_var.get());
    doms.push_back(LoopDom{f->loop_var, f->extent});
  }
  auto uses_loop = [&](const Expr& e) {
    return uses_var(e, [&](const VarNode* v) { return lvars.count(v) > 0; });
  };
  BindingsToIterVars rep(br);
  std::optional<std::unordered_map<const VarNode*, Expr>> inv;
  std::vector<std::pair<Expr, Expr>> sums;
  bool inv_tried = false;
  std::vector<Expr> out;
  for (auto& c0 : cs) {
    Expr c = rep.mutate(c0);
    if (uses_loop(c)) {
      if (!inv_tried) {
        inv_tried = true;
        bool zero_min = true;
        for (auto& l : loops) zero_min = zero_min && is_zero(l.as<ForNode>()->min);
        std::vector<Var> ivars;
        std::vector<Expr> exts;
        for (auto& iv : b.iter_vars) ivars.push_back(iv.var), exts.push_back(iv.extent);
        if (zero_min) inv = invert_bindings(br.bindings, ivars, exts, doms, br.predicate, &sums);
      }
      if (!inv) refuse("cannot express the predicate of block " + b.name + " in its iter vars");
      c = substitute(SumsToIterVars(sums).mutate(c), *inv);
      if (uses_loop(c)) refuse("cannot express the predicate of block " + b.name + " in its iter vars");
    }
    c = fold(c);
    int64_t v;
    if (is_const_int(c, &v) && v) continue;
    if (domain_fact(c, b) || always_true(c, b)) continue;
    out.push_back(c);
  }
  return out;
}

std::vector<Expr> substitute_iter_vars(const std::vector<Expr>& cs, const BlockNode& b,
                                       const std::vector<Expr>& values) {
  std::unordered_map<const VarNode*, Expr> m;
  for (size_t i = 0; i < b.iter_vars.size() && i < values.size(); ++i)
    m[b.iter_vars[i].var.get()] = values[i];
  std::vector<Expr> out;
  for (auto& c : cs) out.push_back(fold(substitute(c, m)));
  return out;
}

}  // namespace tirc::sched

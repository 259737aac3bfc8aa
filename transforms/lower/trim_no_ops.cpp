// Trimming of no-op loop iterations (model: Halide src/TrimNoOps.cpp; TVM's LoopPartition
// does the same for "likely" conditions).
//
// A block's `where` becomes `if P { body }` (convert_blocks). When P bounds the innermost
// loop var linearly, most iterations of that loop do nothing but test P: the data gradient
// of a padded or strided convolution or pool (`where h >= r && r + 27 >= h`), a split tail
// (`where io*8 + ii < 30`). Each such iteration costs a compare and a branch, and the branch
// keeps LLVM from vectorizing the loop. Here a loop whose whole body is such an `if` gets
// the range where P can hold, and the conjuncts of P that do not mention the loop var move
// out of it (loop unswitching), so the enclosing loop can be trimmed in turn.
//
// Exactness: only iterations on which the `if` does nothing are removed, the others run in
// the same order, so results are bit-identical. Conjuncts are moved or turned into bounds
// only when they are pure integer arithmetic (no loads, no division by a non-constant), so
// evaluating them outside the loop, or not at all, cannot fail; a comparison becomes a
// bound only when bounds prove that neither side wraps around in its dtype; the new loop
// ends are computed in i64 when they might not fit (linear_bounds).
#include <optional>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

void split_conjuncts(const Expr& c, std::vector<Expr>* out) {
  if (auto* b = c.as<BinaryNode>(); b && b->op == BinOp::And) {
    split_conjuncts(b->a, out);
    split_conjuncts(b->b, out);
    return;
  }
  out->push_back(c);
}

Expr join_conjuncts(const std::vector<Expr>& cs) {
  Expr r;
  for (auto& c : cs) r = r.defined() ? make_binary(BinOp::And, r, c) : c;
  return r;
}

// Integer/bool arithmetic that reads no memory and cannot fail: safe to evaluate once
// before a loop, or never.
bool is_pure_index(const Expr& e) {
  if (!is_int(e.dtype()) && e.dtype() != DType::Bool) return false;
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::Var: return true;
    case ExprKind::Unary: return is_pure_index(e.as<UnaryNode>()->a);
    case ExprKind::Cast: return is_pure_index(e.as<CastNode>()->value);
    case ExprKind::Binary: {
      auto* b = e.as<BinaryNode>();
      if (b->op == BinOp::Div) return false;
      if (b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod) {
        int64_t c = 0;
        if (!is_const_int(b->b, &c) || c == 0 || c == -1) return false;
      }
      return is_pure_index(b->a) && is_pure_index(b->b);
    }
    default: return false;
  }
}

bool uses_var(const Expr& e, const VarNode* v) { return expr_uses_var(e, v); }

// The loop var range a conjunct allows: v >= lo and v < hi (either may be undefined), as
// expressions of the loop var's dtype, or of i64 when `wide` (see linear_bounds).
struct VarBound {
  Expr lo, hi;
  bool wide = false;
};

// sum(coeff * term) + constant as an expression of dtype w (terms cast to w when theirs is
// narrower).
Expr build(const SumForm& f, DType w) {
  SumForm g;
  g.dtype = w;
  for (auto& t : f.terms) g.add_term(t.term.dtype() == w ? t.term : make_cast(w, t.term), t.coeff);
  g.constant = f.constant;
  return from_sum_form(g);
}

// c is `a CMP b` with a - b affine in v (coefficient k != 0, rest free of v): the bounds on
// v it states. Exact when neither side wraps (their sum forms are bounded inside the dtype,
// so the comparison of run-time values is the comparison of mathematical values). The
// bounds are built in the dtype when they provably fit with room to spare, else in i64 for
// an i32 loop (a symbolic size `n` has no bound), and the caller clamps them to the loop.
std::optional<std::vector<VarBound>> linear_bounds(const Expr& c, const Var& v, Analyzer& az) {
  auto* cmp = c.as<BinaryNode>();
  if (!cmp || !binop_is_compare(cmp->op) || cmp->op == BinOp::NE) return std::nullopt;
  DType t = cmp->a.dtype();
  if (t != v.dtype() || cmp->b.dtype() != t || (t != DType::I32 && t != DType::I64)) return std::nullopt;
  for (const Expr* side : {&cmp->a, &cmp->b})
    if (!interval_fits(sum_form_bound(to_sum_form(*side), az.ranges()), t)) return std::nullopt;
  auto lf = linear_form(make_binary(BinOp::Sub, cmp->a, cmp->b), {v});
  if (!lf || lf->coeffs[0] == 0) return std::nullopt;
  // Small coefficients keep every i64 intermediate exact (terms are i32 values).
  constexpr int64_t kMaxCoeff = int64_t{1} << 20;
  auto small = [&](int64_t x) { return x > -kMaxCoeff && x < kMaxCoeff; };
  int64_t k = lf->coeffs[0];
  if (!small(k) || !small(lf->constant)) return std::nullopt;
  SumForm rest;  // (a - b) - k*v, mathematical coefficients
  rest.dtype = DType::I64;
  for (auto& o : lf->opaque) {
    if (!small(o.coeff)) return std::nullopt;
    rest.add_term(o.term, o.coeff);
  }
  rest.constant = lf->constant;
  auto negated = [](SumForm f) {
    f.scale(-1);
    return f;
  };
  auto plus = [](SumForm f, int64_t x) {
    f.constant += x;
    return f;
  };
  // Each condition as kk*v + r <= 0.
  std::vector<std::pair<int64_t, SumForm>> le;
  switch (cmp->op) {
    case BinOp::LT: le.push_back({k, plus(rest, 1)}); break;
    case BinOp::LE: le.push_back({k, rest}); break;
    case BinOp::GT: le.push_back({-k, plus(negated(rest), 1)}); break;
    case BinOp::GE: le.push_back({-k, negated(rest)}); break;
    case BinOp::EQ:
      le.push_back({k, rest});
      le.push_back({-k, negated(rest)});
      break;
    default: return std::nullopt;
  }
  auto make = [&](DType w) {
    std::vector<VarBound> out;
    for (auto& [kk, r] : le) {
      VarBound vb;
      vb.wide = w != t;
      if (kk > 0) {
        // v <= floor(-r / kk), so v < floor(-r / kk) + 1.
        Expr num = build(negated(r), w);
        Expr q = kk == 1 ? num : make_binary(BinOp::FloorDiv, num, make_int(kk, w));
        vb.hi = az.simplify(make_binary(BinOp::Add, q, make_int(1, w)));
      } else {
        // -kk*v >= r, so v >= ceil(r / -kk) = floor((r - kk - 1) / -kk).
        Expr num = build(plus(r, -kk - 1), w);
        vb.lo = az.simplify(kk == -1 ? num : make_binary(BinOp::FloorDiv, num, make_int(-kk, w)));
      }
      out.push_back(vb);
    }
    return out;
  };
  // Narrow when every intermediate provably fits with headroom.
  bool narrow = true;
  for (auto& [kk, r] : le) {
    SumForm g = plus(r, kk > 0 ? 0 : -kk - 1);
    Interval b = sum_form_bound(g, az.ranges());
    int64_t lim = int64_t{1} << (t == DType::I64 ? 61 : 29);
    narrow = narrow && b.has_lower() && b.has_upper() && b.lo > -lim && b.hi < lim;
  }
  if (narrow) return make(t);
  if (t != DType::I32) return std::nullopt;
  return make(DType::I64);
}

bool has_thread_loops(const Stmt& s) {
  struct V : IRVisitor {
    bool found = false;
    void visit_for(const ForNode* n) override {
      if (n->for_kind == ForKind::ThreadBinding) found = true;
      IRVisitor::visit_for(n);
    }
  } v;
  v.visit(s);
  return v.found;
}

// Loops with fewer iterations keep their bounds (guards are only moved out of them).
constexpr int64_t kMinTrimExtent = 8;

class Trimmer : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Analyzer saved = az_;
    az_.bind(n->loop_var, n->min, n->extent);
    Stmt body = mutate(n->body);
    az_ = saved;
    Stmt loop = body.same_as(n->body) ? s
                                      : make_for(n->loop_var, n->min, n->extent, n->for_kind, body,
                                                 n->thread_tag, n->annotations);
    return trim(loop.as<ForNode>(), loop);
  }

  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s) override {
    Analyzer saved = az_;
    az_.bind_value(n->var, n->value);
    Stmt r = IRMutator::mutate_let_stmt(n, s);
    az_ = saved;
    return r;
  }

 private:
  Stmt trim(const ForNode* n, const Stmt& s) {
    auto* iff = n->body.as<IfThenElseStmtNode>();
    if (!iff || iff->else_case.defined()) return s;
    const Var& v = n->loop_var;
    // A loop of a few iterations is better left with constant bounds: LLVM unrolls it, and
    // a guard per iteration costs less than a loop of run-time trip count (measured on the
    // 2x2 windows of a strided pool's data gradient: 2.6 ms guarded, 4.5 ms trimmed).
    int64_t cext = 0;
    bool small = is_const_int(n->extent, &cext) && cext < kMinTrimExtent;
    bool can_trim = (n->for_kind == ForKind::Serial || n->for_kind == ForKind::Parallel) && !small;
    std::vector<Expr> cs, hoisted, kept;
    split_conjuncts(iff->cond, &cs);
    Analyzer az = az_;
    az.bind(v, n->min, n->extent);
    std::vector<VarBound> bounds;
    for (auto& c : cs) {
      if (!is_pure_index(c)) {
        kept.push_back(c);
      } else if (!uses_var(c, v.get())) {
        hoisted.push_back(c);
      } else if (auto bs = can_trim ? linear_bounds(c, v, az) : std::nullopt) {
        bounds.insert(bounds.end(), bs->begin(), bs->end());
      } else {
        kept.push_back(c);
      }
    }
    if (bounds.empty() && hoisted.empty()) return s;
    Stmt inner = kept.empty() ? iff->then_case : make_if(join_conjuncts(kept), iff->then_case);
    Expr min = n->min, extent = n->extent;
    if (!bounds.empty()) {
      bool wide = false;
      for (auto& b : bounds) wide = wide || b.wide;
      DType t = v.dtype(), w = wide ? DType::I64 : t;
      auto in_w = [&](const Expr& e) { return e.dtype() == w ? e : make_cast(w, e); };
      Expr lo = in_w(n->min), end = in_w(make_end(n->min, n->extent)), hi = end;
      for (auto& b : bounds) {
        if (b.lo.defined()) lo = make_binary(BinOp::Max, lo, in_w(b.lo));
        if (b.hi.defined()) hi = make_binary(BinOp::Min, hi, in_w(b.hi));
      }
      // An empty range runs no iteration: the extent is never negative. Wide bounds are
      // clamped into the loop's own range before they return to its dtype.
      if (wide) lo = make_binary(BinOp::Min, lo, end);
      Expr ext = make_binary(BinOp::Max, make_binary(BinOp::Sub, hi, lo), make_int(0, w));
      min = az_.simplify(wide ? make_cast(t, lo) : lo);
      extent = az_.simplify(wide ? make_cast(t, ext) : ext);
    }
    Stmt loop = make_for(v, min, extent, n->for_kind, inner, n->thread_tag, n->annotations);
    return hoisted.empty() ? loop : make_if(join_conjuncts(hoisted), loop);
  }

  Analyzer az_;
};

}  // namespace

Function trim_no_ops(const FunctionNode& f) {
  if (has_thread_loops(f.body)) return with_body(f, f.body);
  Trimmer t;
  return with_body(f, t.mutate(f.body));
}

}  // namespace tirc

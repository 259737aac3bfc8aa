// Bounds checks for compiled code (model: the checks every safe language inserts, with the
// static elimination of Halide's bounds inference and LLVM's IRCE: an access is checked
// only when its index cannot be proven inside the buffer from what holds where it runs).
//
// The pass sees the scheduled block form, so it knows each access's block (for the
// message) and everything the lowering would otherwise erase: loop ranges, the bindings of
// iter vars (substituted, so `vi` is read as `i0 * 8 + i1` of its loops), block predicates
// (`where`), `if` conditions and `if_then_else` guards (the arm that runs is taken as
// holding the condition), and integer lets (inlined into what is proven). Iter var domains
// are not assumed: the proof goes through the bindings, so a binding outside its domain
// cannot make an access unchecked. Loads inside the indices of other accesses (gathers)
// are checked first, then the access itself.
//
// Facts about loaded values (`if I[0] < 8`, `let x = T[0]` inlined as T[0]) hold only
// until the buffer is written: a store or call_extern pointer to it drops every fact and
// let/iter-var substitution that reads it (for the rest of the enclosing statements, and
// for a whole loop whose body writes it, since the next iteration runs after the write).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/bounds.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

// a and b in a common integer dtype (the wider; i64 when they differ in signedness).
std::pair<Expr, Expr> common(Expr a, Expr b) {
  DType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return {a, b};
  DType t = DType::I64;
  if (is_signed_int(ta) == is_signed_int(tb)) t = dtype_bits(ta) >= dtype_bits(tb) ? ta : tb;
  if (ta != t) a = make_cast(t, a);
  if (tb != t) b = make_cast(t, b);
  return {a, b};
}

using BufferSet = std::unordered_set<const BufferNode*>;

// The buffers a statement may write: stored buffers and buffers passed as pointers.
struct Written : IRVisitor {
  BufferSet bufs;
  void visit_store(const StoreNode* n) override {
    bufs.insert(n->buffer.get());
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    bufs.insert(n->buffer.get());
    IRVisitor::visit_buffer_ptr(n);
  }
};

bool reads_any(const Expr& e, const BufferSet& bufs) {
  if (!e.defined() || bufs.empty()) return false;
  bool hit = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>(); l && bufs.count(l->buffer.get())) hit = true;
  });
  return hit;
}

bool has_load(const Expr& e) {
  bool hit = false;
  if (e.defined())
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind() == ExprKind::Load) hit = true;
    });
  return hit;
}

bool same(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

class Inserter : public IRMutator {
 public:
  explicit Inserter(std::vector<BoundsCheckSite>* sites) : sites_(sites) {}

 private:
  // Runs f with the facts, substitutions and memoized checks it adds dropped afterwards
  // (a check left out under a guard must not be reused outside it).
  template <class F>
  auto scoped(F&& f) {
    Analyzer az = az_;
    auto subst = subst_;
    auto ops = ops_;
    size_t memo = memo_.size();
    auto r = f();
    az_ = std::move(az);
    subst_ = std::move(subst);
    ops_ = std::move(ops);
    if (memo_.size() > memo) memo_.resize(memo);
    return r;
  }

 public:
  using IRMutator::mutate;
  Stmt mutate(const Stmt& s) override {
    Stmt r = IRMutator::mutate(s);
    // What s wrote invalidates facts about loads for the statements after it (facts added
    // inside s were dropped with its scope; this drops those of the enclosing scopes).
    if (s.defined() && has_load_facts()) {
      Written w;
      w.visit(s);
      invalidate(w.bufs);
    }
    return r;
  }

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    auto idx = checked(n->buffer, n->indices, "load");
    return same(idx, n->indices) ? e : make_load(n->buffer, std::move(idx));
  }
  // Integer division and modulo by zero are errors of the interpreter: unless the divisor
  // is proven non-zero, `a OP b` becomes `(let _div = __bounds_check(select(b == 0, a, 0),
  // select(b == 0, a, 1), site) in a OP b)` (a and b let-bound when not a variable or a
  // constant). As a bounds check it fails exactly when b == 0 (a >=u a; else 0 <u 1), so the
  // simplifier's reading of it stays true and codegen needs nothing new; the failure
  // records a as the index, which the "divide" site prints as the interpreter does:
  // `integer division by zero: floordiv(7, 0)`.
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_binary(n, e);
    if (!is_int(n->a.dtype())) return r;
    const char* op = n->op == BinOp::FloorDiv   ? "floordiv"
                     : n->op == BinOp::FloorMod ? "floormod"
                     : n->op == BinOp::Div      ? "truncdiv"
                                                : nullptr;
    if (!op) return r;
    auto* m = r.as<BinaryNode>();
    return div_checked(op, n->b, m->a, m->b, [&](Expr a, Expr b) { return make_binary(n->op, a, b); });
  }
  Expr mutate_call(const CallNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_call(n, e);
    if (n->op == Intrinsic::Pow && n->args.size() == 2 && is_signed_int(n->args[0].dtype())) {
      auto* m = r.as<CallNode>();
      return pow_checked(n->args[1], m->args[0], m->args[1]);
    }
    if ((n->op != Intrinsic::TruncDiv && n->op != Intrinsic::TruncMod) || n->args.size() != 2 ||
        !is_int(n->args[0].dtype()))
      return r;
    auto* m = r.as<CallNode>();
    Intrinsic f = n->op;
    return div_checked(f == Intrinsic::TruncDiv ? "truncdiv" : "truncmod", n->args[1], m->args[0], m->args[1],
                       [&](Expr a, Expr b) {
                         return make_call(f, {a, b});
                       });
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    // Like the interpreter, a store's accesses are reported at the store when it is known.
    SourceLoc outer = loc_;
    if (n->loc.known()) loc_ = n->loc;
    // In an update `B[i] = B[i] + v` the load gets the very indices of the store (one site,
    // one check after LLVM's GVN), so codegen still sees the read-modify-write it makes
    // atomic in parallel loops.
    memo_.clear();
    auto idx = checked(n->buffer, n->indices, "store");
    Expr v = mutate(n->value);
    memo_.clear();
    loc_ = outer;
    invalidate({n->buffer.get()});
    if (same(idx, n->indices) && v.same_as(n->value)) return s;
    return make_store(n->buffer, std::move(idx), v, n->loc);
  }
  Expr mutate_select(const SelectNode* n, const Expr& e) override {
    // `select` evaluates both arms; only if_then_else guards the arm it takes.
    if (e.kind() == ExprKind::Select) return IRMutator::mutate_select(n, e);
    Expr c = mutate(n->cond);
    Expr t = scoped([&] {
      assume(n->cond, true);
      return mutate(n->t);
    });
    Expr f = scoped([&] {
      assume(n->cond, false);
      return mutate(n->f);
    });
    if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return e;
    return make_if_then_else(c, t, f);
  }
  Expr mutate_let(const LetNode* n, const Expr& e) override {
    Expr v = mutate(n->value);
    Expr b = scoped([&] {
      let(n->var, n->value);
      return mutate(n->body);
    });
    return v.same_as(n->value) && b.same_as(n->body) ? e : make_let(n->var, v, b);
  }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Expr mn = mutate(n->min), ext = mutate(n->extent);
    // Iterations after the first run after the body's writes: facts about what it writes
    // do not hold inside the loop (nor after it).
    if (has_load_facts()) {
      Written w;
      w.visit(n->body);
      invalidate(w.bufs);
    }
    Stmt body = scoped([&] {
      Expr lo = in_context(n->min), len = in_context(n->extent);
      ops_.push_back({n->loop_var, lo, len, Expr()});
      az_.bind(n->loop_var, lo, len);
      // Symbolic ranges (`serial(n)`) become linear facts (`i < n` then proves `i < n`).
      if (!is_const_int(lo) || !is_const_int(len)) {
        auto [v, l] = common(n->loop_var, lo);
        auto [v2, hi] = common(n->loop_var, simplify(lo + len));
        fact(make_binary(BinOp::And, make_binary(BinOp::GE, v, l), make_binary(BinOp::LT, v2, hi)));
        // The body runs only when the extent is positive: inside `serial(n)`, n >= 1, so
        // `n - 1 - i` cannot wrap and `x % n` is inside [0, n).
        if (!is_const_int(len)) fact(make_binary(BinOp::GT, len, make_int(0, len.dtype())));
      }
      return mutate(n->body);
    });
    if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return s;
    return make_for(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
  }
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    bool changed = false;
    std::vector<Expr> bindings;
    // The interpreter reports errors in bindings and `where` at the block.
    const BlockNode* outer_block = block_;
    SourceLoc outer_at = loc_;
    block_ = n->block.get();
    loc_ = n->block->loc;
    for (auto& b : n->bindings) {
      bindings.push_back(mutate(b));
      changed = changed || !bindings.back().same_as(b);
    }
    Expr pred = mutate(n->predicate);
    block_ = outer_block;
    loc_ = outer_at;
    Block blk = scoped([&] {
      const BlockNode* b = n->block.get();
      // Bindings are expressions of the enclosing loops: read in the outer context first.
      std::vector<Expr> values;
      for (auto& x : n->bindings) values.push_back(in_context(x));
      for (size_t i = 0; i < b->iter_vars.size() && i < values.size(); ++i)
        subst_[b->iter_vars[i].var.get()] = values[i];
      assume(n->predicate, true);
      const BlockNode* outer = block_;
      SourceLoc outer_loc = loc_;
      block_ = b;
      loc_ = b->loc;
      // A binding outside its iter var's domain (`vi: spatial(n) = i` with i past n) is an
      // error of the interpreter, checked after the predicate and before init and body:
      // unless proven inside, the block starts with `let _ = __bounds_check(vi, extent)`
      // (kept although unused; also before init, which lower_init puts before the body).
      std::vector<std::pair<Var, Expr>> bind_checks;
      for (size_t i = 0; i < b->iter_vars.size() && i < values.size(); ++i) {
        const IterVar& iv = b->iter_vars[i];
        if (binding_is_loop_offset(values[i], iv.extent) || provably_inside(iv.var, iv.extent)) continue;
        BoundsCheckSite site;
        site.loc = b->loc;
        site.block = b->name;
        site.access = "binding";
        site.buffer = iv.var.name();
        bind_checks.push_back(
            {Var("_bind_" + iv.var.name(), iv.var.dtype()),
             make_call(Intrinsic::BoundsCheck,
                       {iv.var, iv.extent, make_int(static_cast<int64_t>(sites_->size()), DType::I32)})});
        sites_->push_back(std::move(site));
      }
      auto guarded = [&](Stmt st) {
        for (auto it = bind_checks.rbegin(); it != bind_checks.rend(); ++it)
          st = make_let_stmt(it->first, it->second, st);
        return st;
      };
      Stmt init = b->init.defined() ? mutate(b->init) : b->init;
      Stmt body = mutate(b->body);
      block_ = outer;
      loc_ = outer_loc;
      if (!bind_checks.empty()) {
        if (init.defined()) init = guarded(init);
        body = guarded(body);
      }
      if (init.same_as(b->init) && body.same_as(b->body)) return n->block;
      BlockNode out = *b;
      out.init = init;
      out.body = body;
      return make_block(std::move(out));
    });
    if (!changed && pred.same_as(n->predicate) && blk.same_as(n->block)) return s;
    return make_block_realize(std::move(bindings), pred, blk);
  }
  Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s) override {
    Expr c = mutate(n->cond);
    Stmt t = scoped([&] {
      assume(n->cond, true);
      return mutate(n->then_case);
    });
    Stmt f = n->else_case;
    if (f.defined())
      f = scoped([&] {
        assume(n->cond, false);
        return mutate(n->else_case);
      });
    if (c.same_as(n->cond) && t.same_as(n->then_case) && f.same_as(n->else_case)) return s;
    return make_if(c, t, f);
  }
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s) override {
    Expr v = mutate(n->value);
    Stmt b = scoped([&] {
      let(n->var, n->value);
      return mutate(n->body);
    });
    return v.same_as(n->value) && b.same_as(n->body) ? s : make_let_stmt(n->var, v, b);
  }

 private:
  // The indices of an access, each wrapped in __bounds_check unless provably in range.
  std::vector<Expr> checked(const Buffer& buf, const std::vector<Expr>& indices, const char* what) {
    for (auto& [b, orig, done] : memo_) {
      if (!b.same_as(buf) || orig.size() != indices.size()) continue;
      bool all = true;
      for (size_t i = 0; i < orig.size() && all; ++i) all = expr_identical(orig[i], indices[i]);
      if (all) return done;
    }
    std::vector<Expr> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr idx = mutate(indices[d]);
      if (d < buf->shape.size() && !provably_inside(indices[d], buf->shape[d])) {
        BoundsCheckSite site;
        site.loc = loc_;
        if (block_) site.block = block_->name;
        site.access = what;
        site.buffer = buf->name;
        site.dim = static_cast<int>(d);
        site.ndim = static_cast<int>(indices.size());
        idx = make_call(Intrinsic::BoundsCheck,
                        {idx, buf->shape[d], make_int(static_cast<int64_t>(sites_->size()), DType::I32)});
        sites_->push_back(std::move(site));
      }
      out.push_back(idx);
    }
    memo_.push_back({buf, indices, out});
    return out;
  }
  // `a OP b` with the division-by-zero check described at mutate_binary, unless the
  // divisor (`orig_b`, unmutated, read in context) is proven non-zero.
  template <class Make>
  Expr div_checked(const char* op, const Expr& orig_b, Expr a, Expr b, Make make) {
    int64_t c;
    if (is_const_int(b, &c)) {
      if (c != 0) return make(a, b);
    } else {
      if (proven_nonzero(in_context(orig_b))) return make(a, b);
    }
    BoundsCheckSite site;
    site.loc = loc_;
    if (block_) site.block = block_->name;
    site.access = "divide";
    site.buffer = op;
    DType t = a.dtype();
    std::vector<std::pair<Var, Expr>> lets;
    name_operand(a, "_div_a", lets);
    name_operand(b, "_div_b", lets);
    Expr zero = make_binary(BinOp::EQ, b, make_int(0, b.dtype()));
    Expr chk = make_call(Intrinsic::BoundsCheck,
                         {make_select(zero, a, make_int(0, t)), make_select(zero, a, make_int(1, t)),
                          make_int(static_cast<int64_t>(sites_->size()), DType::I32)});
    sites_->push_back(std::move(site));
    Expr out = make_let(Var("_div", t), chk, make(a, b));
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) out = make_let(it->first, it->second, out);
    return out;
  }
  // An operand used by both the check and the operation is bound to a `let` once (unless it is
  // a variable or a constant already), so it is evaluated once.
  static void name_operand(Expr& x, const char* name, std::vector<std::pair<Var, Expr>>& lets) {
    if (x.kind() == ExprKind::Var || x.kind() == ExprKind::IntImm) return;
    Var v(name, x.dtype());
    lets.push_back({v, x});
    x = v;
  }
  // Integer `pow(a, b)` with b < 0 is an error of the interpreter (NumPy's "Integers to
  // negative integer powers are not allowed"; a TVM user gets no value for it either): unless
  // b (`orig_b` in context) is proven >= 0, two bounds checks that fail exactly when b < 0 and
  // record both operands for the interpreter's message `pow(2, -1): ...`. Widened to i64 and
  // compared unsigned, `__bounds_check(select(b < 0, b, 0), select(b < 0, a, 1))` fails when
  // b < 0 unless b <u a (b < a < 0); then the second, operands swapped, fails (a >=u b).
  // Sites "pow" (index: the exponent, extent: the base) and "pow_swapped" (the reverse).
  // Unsigned exponents are never negative (no check).
  Expr pow_checked(const Expr& orig_b, Expr a, Expr b) {
    DType t = a.dtype();
    Expr zero = make_int(0, t);
    int64_t c;
    auto [pb, pz] = common(in_context(orig_b), zero);
    if (is_const_int(b, &c) ? c >= 0 : az_.can_prove(make_binary(BinOp::GE, pb, pz)))
      return make_call(Intrinsic::Pow, {a, b});
    std::vector<std::pair<Var, Expr>> lets;
    name_operand(a, "_pow_a", lets);
    name_operand(b, "_pow_b", lets);
    Expr neg = make_binary(BinOp::LT, b, zero);
    auto check = [&](const char* access, const Expr& index, const Expr& extent) {
      BoundsCheckSite site;
      site.loc = loc_;
      if (block_) site.block = block_->name;
      site.access = access;
      site.buffer = "pow";
      Expr chk = make_call(Intrinsic::BoundsCheck, {make_select(neg, index, zero), make_select(neg, extent, make_int(1, t)),
                                                    make_int(static_cast<int64_t>(sites_->size()), DType::I32)});
      sites_->push_back(std::move(site));
      return chk;
    };
    Expr c1 = check("pow", b, a);
    Expr c2 = check("pow_swapped", a, b);
    Expr out = make_let(Var("_pow1", t), c1, make_let(Var("_pow2", t), c2, make_call(Intrinsic::Pow, {a, b})));
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) out = make_let(it->first, it->second, out);
    return out;
  }
  // b (in context) != 0 under the facts. A guarded divisor `select(d == 0, 1, d)` /
  // `if_then_else(..)` is non-zero when each arm is under its condition; a `let` is read
  // through its value.
  bool proven_nonzero(const Expr& b, std::vector<Expr> nz = {}) {
    if (auto* l = b.as<LetNode>())
      return proven_nonzero(simplify(substitute(l->body, {{l->var.get(), l->value}})), nz);
    if (auto* s = as_select_like(b)) {
      // `x == 0` / `x != 0` conditions: the interval analysis keeps no `!=` fact, so the
      // arm where x != 0 remembers x itself.
      Expr x;
      bool eq = false;
      if (auto* c = s->cond.as<BinaryNode>(); c && (c->op == BinOp::EQ || c->op == BinOp::NE)) {
        int64_t k;
        if (is_const_int(c->b, &k) && k == 0) x = c->a;
        if (is_const_int(c->a, &k) && k == 0) x = c->b;
        eq = c->op == BinOp::EQ;
      }
      auto arm = [&](bool taken, const Expr& e) {
        return scoped([&] {
          fact(taken ? s->cond : simplify(make_unary(UnOp::Not, s->cond)));
          std::vector<Expr> nz2 = nz;
          if (x.defined() && taken != eq) nz2.push_back(x);
          return proven_nonzero(e, nz2);
        });
      };
      return arm(true, s->t) && arm(false, s->f);
    }
    for (auto& x : nz)
      if (expr_identical(x, b)) return true;
    auto [p, z] = common(b, make_int(0, b.dtype()));
    return az_.can_prove(make_binary(BinOp::NE, p, z)) || az_.can_prove(make_binary(BinOp::GT, p, z)) ||
           az_.can_prove(make_binary(BinOp::LT, p, z));
  }
  bool provably_inside(const Expr& index, const Expr& extent) {
    if (!is_int(index.dtype()) || !is_int(extent.dtype())) return false;
    Expr i = in_context(index), n = in_context(extent);
    if (inside(az_, i, n)) return true;
    // `A[vi]` of `A: T[n]` with `vi = l - 3` bound to `serial(3, n + 3)`: inside by
    // construction, as for the binding itself (the analysis cannot rule out that `n + 3` wraps).
    if (binding_is_loop_offset(i, extent)) return true;
    // Case split on a loop var of few values: each value substituted into the index and
    // into every fact (adaptive pooling's window guard `vi*5//3 + vr < ((vi+1)*5+2)//3`
    // bounds the index only once vi is known). Every value of the var's range is tried, so
    // the proof holds for all of them.
    std::vector<const VarNode*> vars;
    for_each_expr(i, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>(); v && std::find(vars.begin(), vars.end(), v) == vars.end())
        vars.push_back(v);
    });
    for (const VarNode* v : vars) {
      Var var;
      for (auto& op : ops_)
        if (op.var.defined() && op.var.get() == v) var = op.var;
      if (!var.defined()) continue;
      Interval r = az_.const_bound(var);
      if (!r.has_lower() || !r.has_upper() || r.hi - r.lo >= 8) continue;
      bool all = true;
      for (int64_t c = r.lo; c <= r.hi && all; ++c) {
        std::unordered_map<const VarNode*, Expr> one{{v, make_int(c, v->dtype)}};
        Analyzer a;
        for (auto& op : ops_) {
          if (op.var.defined() && op.var.get() == v) continue;
          if (op.var.defined())
            a.bind(op.var, substitute(op.lo, one), substitute(op.len, one));
          else
            a.assume(substitute(op.cond, one));
        }
        all = inside(a, substitute(i, one), substitute(n, one));
      }
      if (all) return true;
    }
    return false;
  }
  // A binding `l - lo` (or `l`) of a loop `l in [lo, lo + len)` with len the iter var's
  // extent: in [0, extent) by construction, even where the analysis cannot rule out that a
  // symbolic `lo + len` wraps (`vc: spatial(2 * n) = c` in `grid(2 * n)`, `vi: spatial(n - 1)
  // = i - 1` in `serial(1, n)`).
  bool binding_is_loop_offset(const Expr& value, const Expr& extent) {
    Expr ext = simplify(in_context(extent));
    for (auto& op : ops_) {
      if (!op.var.defined() || op.var.dtype() != value.dtype() || op.lo.dtype() != value.dtype() ||
          ext.dtype() != op.len.dtype())
        continue;
      if (!expr_identical(simplify(op.len), ext)) continue;
      if (expr_identical(simplify(value - (op.var - op.lo)), make_int(0, value.dtype()))) return true;
    }
    return false;
  }
  // index (in context) provably inside [0, extent) under az.
  static bool inside(Analyzer& az, const Expr& i, const Expr& extent) {
    // x // c (c > 0 constant) is inside [0, n) when x is inside [0, n * c): the fact about x
    // (a split or fused tail's `where fo * 4 + fi < 15`) bounds x, not its quotient.
    int64_t c, nc;
    if (auto* d = i.as<BinaryNode>();
        d && d->op == BinOp::FloorDiv && is_const_int(d->b, &c) && c > 0 && is_const_int(extent, &nc) &&
        nc > 0 && nc <= INT32_MAX && c <= INT32_MAX && dtype_bits(d->a.dtype()) < 64 &&
        nc * c < (int64_t(1) << (dtype_bits(d->a.dtype()) - (is_signed_int(d->a.dtype()) ? 1 : 0))) &&
        inside(az, d->a, make_int(nc * c, d->a.dtype())))
      return true;
    // Floor modulo by a positive divisor is inside [0, divisor) (`(i - 3 + n) % n` of a
    // dimension n; the interval analysis cannot bound a symbolic divisor).
    if (auto* m = i.as<BinaryNode>(); m && m->op == BinOp::FloorMod) {
      auto [d, z] = common(m->b, make_int(0, m->b.dtype()));
      auto [d2, n] = common(m->b, extent);
      if (az.can_prove(make_binary(BinOp::GT, d, z)) && az.can_prove(make_binary(BinOp::LE, d2, n)))
        return true;
    }
    auto [a, zero] = common(i, make_int(0, i.dtype()));
    if (!az.can_prove(make_binary(BinOp::GE, a, zero)) && !by_scaled_fact(az, i, extent, false)) return false;
    auto [b, n] = common(i, extent);
    return az.can_prove(make_binary(BinOp::LT, b, n)) || by_scaled_fact(az, i, extent, true);
  }
  // i < extent (upper) or i >= 0 (!upper) from a linear fact times a constant: the `where io
  // * 48 + ii < 16000` of a split tail bounds `2 * (io * 48 + ii) + 1` of A: f32[32000] (the
  // analyzer relates an index to a fact only when their variable parts are equal; a strided
  // access under a split tail kept a check per lane: 6-10x the serial loop, bench/README.md
  // "Codegen r17"). With the fact F + c0 <= 0 (mathematical integers) and i = k * F + r
  // (k = i's coefficient of F's first term over F's), i <= r - k * c0 when k > 0 and
  // i >= r - k * c0 when k < 0; r - k * c0 is then compared with the bound.
  static bool by_scaled_fact(Analyzer& az, const Expr& i, const Expr& extent, bool upper) {
    if (!is_signed_int(i.dtype()) || std::getenv("TIRC_LOWER_NO_SCALED_FACTS")) return false;
    SumForm fi = to_sum_form(i);
    // i's run-time value is its mathematical one (the fact speaks of those).
    if (fi.terms.empty() || !interval_fits(sum_form_bound(fi, az.ranges()), fi.dtype)) return false;
    Interval range = dtype_interval(fi.dtype);
    auto fits = [&](__int128 v) { return v >= range.lo && v <= range.hi; };
    for (const LinearFact& f : az.facts()) {
      if (f.terms.empty()) continue;
      const LinearTerm* lead = nullptr;
      for (auto& t : fi.terms)
        if (expr_identical(t.term, f.terms[0].first)) lead = &t;
      int64_t cf = f.terms[0].second;
      if (!lead || cf == 0 || lead->coeff == INT64_MIN || lead->coeff % cf != 0) continue;
      int64_t k = lead->coeff / cf;
      if ((k > 0) != upper) continue;
      // r = i - k * F in exact arithmetic: every coefficient must fit the dtype (SumForm
      // wraps).
      std::vector<std::pair<Expr, __int128>> rt;
      for (auto& t : fi.terms) rt.push_back({t.term, t.coeff});
      for (auto& [term, c] : f.terms) {
        __int128 kc = static_cast<__int128>(k) * c;
        bool merged = false;
        for (auto& x : rt)
          if (!merged && expr_identical(x.first, term)) {
            x.second -= kc;
            merged = true;
          }
        if (!merged) rt.push_back({term, -kc});
      }
      __int128 rc = static_cast<__int128>(fi.constant) - static_cast<__int128>(k) * f.constant;
      bool ok = fits(rc);
      SumForm r;
      r.dtype = fi.dtype;
      for (auto& [term, c] : rt) {
        if (!fits(c) || term.dtype() != fi.dtype) ok = false;
        if (ok && c != 0) r.add_term(term, static_cast<int64_t>(c));
      }
      if (!ok) continue;
      r.constant = static_cast<int64_t>(rc);
      // r - k * c0 must not wrap either: can_prove compares mathematical values only when
      // both sides fit their dtype.
      Expr e = from_sum_form(r);
      if (upper) {
        auto [b, n] = common(e, extent);
        if (az.can_prove(make_binary(BinOp::LT, b, n))) return true;
      } else {
        auto [b, zero] = common(e, make_int(0, e.dtype()));
        if (az.can_prove(make_binary(BinOp::GE, b, zero))) return true;
      }
    }
    return false;
  }
  Expr in_context(const Expr& e) const { return subst_.empty() ? e : substitute(e, subst_); }
  void assume(const Expr& cond, bool holds) {
    Expr c = in_context(cond);
    fact(holds ? c : simplify(make_unary(UnOp::Not, c)));
  }
  void fact(const Expr& c) {
    ops_.push_back({Var(), Expr(), Expr(), c});
    az_.assume(c);
  }
  bool has_load_facts() const {
    for (auto& op : ops_)
      if (has_load(op.cond) || has_load(op.lo) || has_load(op.len)) return true;
    for (auto& [v, e] : subst_)
      if (has_load(e)) return true;
    return false;
  }
  // Drops the facts and substitutions that read a buffer of `bufs` (they described values
  // it held before a write): the analyzer is rebuilt from the remaining ones.
  void invalidate(const BufferSet& bufs) {
    if (bufs.empty()) return;
    bool stale = false;
    for (auto it = subst_.begin(); it != subst_.end();) {
      if (reads_any(it->second, bufs)) {
        it = subst_.erase(it);  // the var stays itself: nothing is known about it
        stale = true;
      } else {
        ++it;
      }
    }
    std::vector<Op> kept;
    for (auto& op : ops_) {
      if (reads_any(op.cond, bufs) || reads_any(op.lo, bufs) || reads_any(op.len, bufs))
        stale = true;
      else
        kept.push_back(op);
    }
    if (!stale) return;
    ops_ = std::move(kept);
    az_ = Analyzer();
    for (auto& op : ops_) {
      if (op.var.defined())
        az_.bind(op.var, op.lo, op.len);
      else
        az_.assume(op.cond);
    }
  }
  void let(const Var& v, const Expr& value) { subst_[v.get()] = in_context(value); }

  std::vector<BoundsCheckSite>* sites_;
  Analyzer az_;
  // What az_ was told, in order (loop ranges: var, lo, len; facts: cond), to rebuild it
  // without the facts a write invalidated.
  struct Op {
    Var var;
    Expr lo, len, cond;
  };
  std::vector<Op> ops_;
  // Iter vars and let vars -> their values in terms of loop vars and params.
  std::unordered_map<const VarNode*, Expr> subst_;
  const BlockNode* block_ = nullptr;
  SourceLoc loc_;  // of the enclosing store, else of the block
  // Accesses of the current store statement: buffer, indices, checked indices.
  struct Memo {
    Buffer buf;
    std::vector<Expr> indices, checked;
  };
  std::vector<Memo> memo_;
};

}  // namespace

Function insert_bounds_checks(const FunctionNode& f, std::vector<BoundsCheckSite>* sites) {
  Inserter ins(sites);
  Stmt body = ins.mutate(f.body);
  return body.same_as(f.body) ? std::make_shared<const FunctionNode>(f) : with_body(f, body);
}

std::string bounds_check_message(const BoundsCheckSite& site, int64_t index, int64_t extent) {
  std::string where = site.block.empty() ? "" : "block \"" + site.block + "\": ";
  if (site.access == "divide")  // the interpreter's words; index: the dividend
    return where + "integer division by zero: " + site.buffer + "(" + std::to_string(index) + ", 0)";
  if (site.access == "pow" || site.access == "pow_swapped") {  // the interpreter's words
    bool swapped = site.access == "pow_swapped";
    return where + "pow(" + std::to_string(swapped ? index : extent) + ", " + std::to_string(swapped ? extent : index) +
           "): integers to negative integer powers are not allowed";
  }
  if (site.access == "binding")  // the interpreter's words
    return where + "binding of iter var " + site.buffer + " = " + std::to_string(index) +
           " is outside its domain [0, " + std::to_string(extent) + ")";
  std::string pos;
  for (int d = 0; d < site.ndim; ++d)
    pos += std::string(d ? ", " : "") + (d == site.dim ? std::to_string(index) : "_");
  return where + "out-of-bounds " + site.access + " " + site.buffer + "[" + pos + "]: index " +
         std::to_string(index) + " of dimension " + std::to_string(site.dim) + " is outside [0, " +
         std::to_string(extent) + ")";
}

}  // namespace tirc

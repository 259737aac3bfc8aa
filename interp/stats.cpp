#include "interp/stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "interp/compile.h"
#include "ir/error.h"
#include "ir/visitor.h"

namespace tirc {
namespace {

OpCounts operator+(OpCounts a, const OpCounts& b) {
  a.flops += b.flops;
  a.loads += b.loads;
  a.stores += b.stores;
  a.bytes += b.bytes;
  return a;
}
OpCounts scaled(OpCounts a, double k) {
  a.flops *= k;
  a.loads *= k;
  a.stores *= k;
  a.bytes *= k;
  return a;
}
OpCounts maxc(const OpCounts& a, const OpCounts& b) {
  OpCounts r;
  r.flops = std::max(a.flops, b.flops);
  r.loads = std::max(a.loads, b.loads);
  r.stores = std::max(a.stores, b.stores);
  r.bytes = std::max(a.bytes, b.bytes);
  return r;
}
bool empty(const OpCounts& a) { return a.flops == 0 && a.loads == 0 && a.stores == 0; }

class Counter {
 public:
  // `dyn`: the counts of an interpreter run of f (dynamic mode), or null (static mode).
  Counter(const FunctionNode& f, const ArgMap& scalars, const RunStats* dyn) : f_(f), dyn_(dyn) {
    if (dyn_) count_uses(f.body);
    for (auto& p : f.params) {
      if (p.is_buffer()) continue;
      auto it = scalars.find(p.name());
      if (it == scalars.end()) {
        // Extents are integers: a float or bool scalar cannot change a static count.
        if (is_float(p.var.dtype()) || p.var.dtype() == DType::Bool) continue;
        // An integer scalar is needed only when a count depends on it (a shape, loop bound,
        // iter-var extent or predicate): `offset: i32` used as a value is not.
        missing_[p.var.get()] = p.name();
        continue;
      }
      interp::ScalarVal v;
      if (is_float(p.var.dtype()))
        v.d = it->second.get(0);
      else
        v.i = it->second.dtype() == DType::I64 ? it->second.ptr<int64_t>()[0]
                                               : static_cast<int64_t>(it->second.get(0));
      env_[p.var.get()] = v;
    }
  }

  struct Rec {
    std::string name;
    double iterations;
    OpCounts per_exec;         // the body, per execution of the block
    OpCounts init_per_exec;    // the init, per execution of the init
    double init_execs = 0;     // static executions of the init (NaN: unknown, see reduce_points)
    double reduce_points = 1;  // product of the reduce extents (init runs once per reduction)
    OpCounts total;            // dynamic mode: body and init over all their executions
  };
  std::vector<Rec> recs;

  void run() {
    if (dyn_)
      dstmt(f_.body, 1);
    else
      stmt(f_.body, 1.0);
  }

 private:
  const FunctionNode& f_;
  const RunStats* dyn_ = nullptr;
  // Dynamic mode: how often each `if` / `if_then_else` / loop node occurs in the function. A
  // node's run-time counts weigh its branches (or iterations) exactly only when it occurs
  // once: the counts of a node shared by two places are summed over both.
  std::map<const void*, int> uses_;
  void count_uses(const Stmt& body) {
    struct V : IRVisitor {
      std::map<const void*, int>* uses;
      void visit_select(const SelectNode* n) override {
        ++(*uses)[static_cast<const ExprNode*>(n)];
        IRVisitor::visit_select(n);
      }
      void visit_if(const IfThenElseStmtNode* n) override {
        ++(*uses)[n];
        IRVisitor::visit_if(n);
      }
      void visit_for(const ForNode* n) override {
        ++(*uses)[n];
        IRVisitor::visit_for(n);
      }
      // Only what runs: the reads/writes regions (inferred ones reuse the index expressions
      // of the body, `A[if_then_else(..)]`) are never executed, so they share no counts.
      void visit_block(const BlockNode* n) override {
        for (auto& iv : n->iter_vars) visit(iv.extent);
        visit(n->init);
        visit(n->body);
      }
    } v;
    v.uses = &uses_;
    v.visit(body);
  }
  // Dynamic mode: the run-time counts of a node that occurs once and ran `k` times (entries of a
  // loop, both branches of an `if`), or null. The check guards against counts the compiler
  // summed over copies of the node that it ran more than once: the static rule is used then.
  const std::pair<uint64_t, uint64_t>* site(const void* node, double k, bool loop) const {
    if (!dyn_) return nullptr;
    auto u = uses_.find(node);
    if (u == uses_.end() || u->second != 1) return nullptr;
    auto it = dyn_->sites.find(node);
    if (it == dyn_->sites.end()) return nullptr;
    auto& d = it->second;
    double runs = static_cast<double>(loop ? d.first : d.first + d.second);
    return runs == k ? &d : nullptr;
  }
  interp::ScalarEnv env_;
  // Integer scalar parameters that were not given, by variable.
  std::map<const VarNode*, std::string> missing_;
  // Error when e uses a scalar parameter that was not given (its value decides the count).
  void require_given(const Expr& e) {
    std::string name = missing_in(e);
    if (!name.empty())
      throw Error("scalar parameter " + name + " must be given (--input " + name + "=VALUE)");
  }
  // The name of a missing scalar parameter e uses, or "".
  std::string missing_in(const Expr& e) {
    std::string name;
    for_each_expr(e, [&](const Expr& x) {
      auto* v = x.as<VarNode>();
      auto it = v ? missing_.find(v) : missing_.end();
      if (it != missing_.end() && name.empty()) name = it->second;
    });
    return name;
  }
  // Enclosing loops (innermost last) and conditions (enclosing `if`s, negated in `else`, and
  // `where` predicates of enclosing blocks), for exact static counts under predicates.
  struct Loop {
    const VarNode* var;
    bool known;
    int64_t min, ext;
  };
  std::vector<Loop> loops_;
  std::vector<std::pair<Expr, bool>> conds_;

  // Maximum number of points of the loops a predicate depends on that are enumerated.
  static constexpr double kMaxEnumerated = 1 << 22;

  // Executions of a block whose loops run `mult` times in total, under the enclosing
  // conditions and the block's predicate `pred`. Exact when every condition is an integer
  // expression of scalar parameters and of enclosing loops with constant bounds whose
  // domain has at most kMaxEnumerated points (the points are enumerated); else `mult`, an
  // upper bound (TVM's estimate_tir_flops ignores predicates altogether).
  // `exact` (optional) tells whether the result is exact rather than the upper bound.
  double executions(double mult, const Expr& pred, bool* exact = nullptr) {
    std::vector<std::pair<Expr, bool>> cs = conds_;
    int64_t pv;
    if (pred.defined() && !(is_const_int(pred, &pv) && pv != 0)) cs.push_back({pred, false});
    if (exact) *exact = true;
    if (cs.empty() || !(mult > 0)) return mult;
    if (exact) *exact = false;
    std::vector<const Loop*> vars;
    bool ok = true;
    for (auto& c : cs) require_given(c.first);
    for (auto& c : cs)
      for_each_expr(c.first, [&](const Expr& e) {
        if (e.as<LoadNode>() || e.as<LetNode>()) ok = false;
        auto* v = e.as<VarNode>();
        if (!v || env_.count(v)) return;
        const Loop* l = nullptr;
        for (size_t k = loops_.size(); k-- > 0;)
          if (loops_[k].var == v) {
            l = &loops_[k];
            break;
          }
        if (!l || !l->known) {
          ok = false;
          return;
        }
        if (std::find(vars.begin(), vars.end(), l) == vars.end()) vars.push_back(l);
      });
    double points = 1;
    for (auto* l : vars) points *= static_cast<double>(l->ext);
    if (!ok || points > kMaxEnumerated || !(points > 0)) return mult;
    std::vector<int64_t> at(vars.size(), 0);
    double count = 0;
    bool failed = false;
    for (double n = 0; n < points && !failed; ++n) {
      for (size_t k = 0; k < vars.size(); ++k) {
        int64_t v = vars[k]->min + at[k];
        env_[vars[k]->var] = interp::ScalarVal{v, static_cast<double>(v)};
      }
      bool all = true;
      try {
        for (auto& [c, neg] : cs) all &= (interp::eval_int_expr(c, env_) != 0) != neg;
      } catch (const Error&) {
        failed = true;
      }
      if (all) count += 1;
      for (size_t k = vars.size(); k-- > 0;) {
        if (++at[k] < vars[k]->ext) break;
        at[k] = 0;
      }
    }
    for (auto* l : vars) env_.erase(l->var);
    if (failed) return mult;
    if (exact) *exact = true;
    return mult / points * count;
  }

  double extent(const Expr& e, bool* known) {
    require_given(e);
    try {
      *known = true;
      return static_cast<double>(interp::eval_int_expr(e, env_));
    } catch (const Error&) {
      *known = false;
      return NAN;
    }
  }

  // Counts of k executions of e (static mode: k = 1, per execution). Dynamic mode: each arm
  // of an `if_then_else` counts the executions it ran, so every count is an integer (counts
  // are summed, never scaled by ratios: `"flops": 14.999999999999998` before).
  OpCounts expr(const Expr& e, double k = 1) {
    OpCounts c;
    if (!e.defined()) return c;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        for (auto& i : n->indices) c = c + expr(i, k);
        c.loads += k;
        c.bytes += k * dtype_bytes(n->buffer->dtype);
        return c;
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        c = expr(n->a, k) + expr(n->b, k);
        if (is_float(n->a.dtype()) && !binop_is_logic(n->op)) c.flops += k;
        return c;
      }
      case ExprKind::Unary: return expr(e.as<UnaryNode>()->a, k);
      case ExprKind::Cast: return expr(e.as<CastNode>()->value, k);
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        for (auto& a : n->args) c = c + expr(a, k);
        if (is_float(n->dtype)) c.flops += k;
        return c;
      }
      case ExprKind::Select: {
        auto* n = as_select_like(e);
        return expr(n->cond, k) + expr(n->t, k) + expr(n->f, k);
      }
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        // Dynamic: each arm as often as it was taken; static: the larger arm.
        if (auto* d = site(e.get(), k, false))
          return expr(n->cond, k) + expr(n->t, static_cast<double>(d->first)) +
                 expr(n->f, static_cast<double>(d->second));
        return expr(n->cond, k) + maxc(expr(n->t, k), expr(n->f, k));
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        return expr(n->value, k) + expr(n->body, k);
      }
      case ExprKind::BufferPtr: {
        for (auto& i : e.as<BufferPtrNode>()->indices) c = c + expr(i, k);
        return c;
      }
      default: return c;
    }
  }

  // Static mode: counts of the current block's own work for one execution of s; `mult` is how
  // many times s executes in total.
  OpCounts stmt(const Stmt& s, double mult) {
    OpCounts c;
    if (!s.defined()) return c;
    switch (s.kind()) {
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) c = c + stmt(x, mult);
        return c;
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        bool known;
        double ext = extent(n->extent, &known);
        // `serial(lo, hi)` with hi < lo at run time (symbolic ends) runs no iteration.
        if (known && ext < 0) ext = 0;
        if (!known)
          throw Error("loop " + n->loop_var.name() +
                      ": its extent is not a constant of scalar parameters; use tirc stats --dynamic");
        bool min_known = false;
        // A start of a missing scalar only makes predicates on this loop inexact.
        double lo = missing_in(n->min).empty() ? extent(n->min, &min_known) : 0;
        loops_.push_back({n->loop_var.get(), known && min_known, min_known ? static_cast<int64_t>(lo) : 0,
                          known ? static_cast<int64_t>(ext) : 0});
        OpCounts body = stmt(n->body, mult * ext);
        loops_.pop_back();
        // min and extent are evaluated once per entry of the loop.
        return expr(n->min) + expr(n->extent) + scaled(body, ext);
      }
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        const BlockNode& b = *n->block.get();
        size_t idx = recs.size();
        Rec rec;
        rec.name = b.name;
        rec.iterations = executions(mult, n->predicate);
        recs.push_back(rec);
        int64_t pv;
        bool pred = n->predicate.defined() && !(is_const_int(n->predicate, &pv) && pv != 0);
        if (pred) conds_.push_back({n->predicate, false});
        OpCounts own = stmt(b.body, mult);
        if (b.init.defined()) {
          // The init runs at the instances where every reduce var is 0 (and the predicate
          // holds): counted exactly like the block's executions, by enumerating the loops
          // when the bindings and predicates allow it; else one init per
          // (product of the reduce extents) executions.
          double red = 1;
          bool all_known = true;
          Expr first = n->predicate;
          for (size_t k = 0; k < b.iter_vars.size(); ++k) {
            const IterVar& iv = b.iter_vars[k];
            if (iv.kind != IterKind::Reduce) continue;
            bool known;
            red *= extent(iv.extent, &known);
            all_known &= known;
            if (k < n->bindings.size()) {
              const Expr& v = n->bindings[k];
              Expr at0 = make_binary(BinOp::EQ, v, make_int(0, v.dtype()));
              first = first.defined() ? make_binary(BinOp::And, first, at0) : at0;
            }
          }
          if (!all_known || red <= 0) red = 1;
          double init_execs = NAN;
          {
            if (pred) conds_.pop_back();
            bool exact = false;
            double e = executions(mult, first, &exact);
            if (pred) conds_.push_back({n->predicate, false});
            if (exact) init_execs = e;
          }
          recs[idx].reduce_points = red;
          recs[idx].init_execs = init_execs;
          recs[idx].init_per_exec = stmt(b.init, std::isnan(init_execs) ? mult / red : init_execs);
        }
        if (pred) conds_.pop_back();
        recs[idx].per_exec = own;
        return c;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        for (auto& i : n->indices) c = c + expr(i);
        c = c + expr(n->value);
        c.stores += 1;
        c.bytes += dtype_bytes(n->buffer->dtype);
        return c;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        conds_.push_back({n->cond, false});
        OpCounts a = stmt(n->then_case, mult);
        conds_.back().second = true;
        OpCounts b = stmt(n->else_case, mult);
        conds_.pop_back();
        return expr(n->cond) + maxc(a, b);
      }
      case StmtKind::LetStmt: {
        // An integer let of scalar parameters (`let w = m + 1` before `for j in serial(w)`)
        // is known statically: loop extents inside may use it.
        auto* n = s.as<LetStmtNode>();
        bool known = false;
        std::string miss = missing_in(n->value);
        if (!miss.empty()) {
          // Its value is unknown: the let itself is needed only where a count uses it.
          missing_[n->var.get()] = miss;
        } else if (is_int(n->var.dtype())) {
          double v = extent(n->value, &known);
          if (known) env_[n->var.get()] = interp::ScalarVal{static_cast<int64_t>(v), v};
        }
        OpCounts body = stmt(n->body, mult);
        if (known) env_.erase(n->var.get());
        if (!miss.empty()) missing_.erase(n->var.get());
        return expr(n->value) + body;
      }
      case StmtKind::Evaluate: {
        for (auto& a : s.as<EvaluateNode>()->args) c = c + expr(a);
        return c;
      }
    }
    return c;
  }

  // Dynamic mode: counts of k executions of s in total (k: run-time executions of s). Loop
  // bodies run the iterations the interpreter counted and `if` branches the executions they
  // ran, so every count is a sum of integers. A node without its own run-time counts (one the
  // IR shares between two places) falls back to the static rule for it.
  OpCounts dstmt(const Stmt& s, double k) {
    OpCounts c;
    if (!s.defined()) return c;
    switch (s.kind()) {
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) c = c + dstmt(x, k);
        return c;
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        // min and extent are evaluated once per entry (`serial(L[v])` loads L[v] each time).
        c = expr(n->min, k) + expr(n->extent, k);
        if (auto* d = site(n, k, true)) return c + dstmt(n->body, static_cast<double>(d->second));
        bool known;
        double ext = extent(n->extent, &known);
        if (known) return c + dstmt(n->body, k * std::max(ext, 0.0));
        if (!empty(dstmt(n->body, 1)))  // only nested blocks (their own counts)
          throw Error("loop " + n->loop_var.name() +
                      " inside a block body has a non-constant extent and no run-time count");
        return c;
      }
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        const BlockNode& b = *n->block.get();
        auto runs = [](const std::map<std::string, uint64_t>& m, const std::string& name) {
          auto it = m.find(name);
          return it == m.end() ? 0.0 : static_cast<double>(it->second);
        };
        size_t idx = recs.size();
        Rec rec;
        rec.name = b.name;
        rec.iterations = runs(dyn_->block_executions, b.name);
        recs.push_back(rec);
        OpCounts own = dstmt(b.body, recs[idx].iterations);
        if (b.init.defined()) own = own + dstmt(b.init, runs(dyn_->init_executions, b.name));
        recs[idx].total = own;
        return c;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        for (auto& i : n->indices) c = c + expr(i, k);
        c = c + expr(n->value, k);
        c.stores += k;
        c.bytes += k * dtype_bytes(n->buffer->dtype);
        return c;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        c = expr(n->cond, k);
        // Each branch as often as it ran; without run-time counts the larger branch.
        if (auto* d = site(n, k, false))
          return c + dstmt(n->then_case, static_cast<double>(d->first)) +
                 dstmt(n->else_case, static_cast<double>(d->second));
        return c + maxc(dstmt(n->then_case, k), dstmt(n->else_case, k));
      }
      case StmtKind::LetStmt: {
        // As in stmt(): an integer let of scalar parameters is known to the loop extents inside.
        auto* n = s.as<LetStmtNode>();
        bool known = false;
        std::string miss = missing_in(n->value);
        if (miss.empty() && is_int(n->var.dtype())) {
          double v = NAN;
          try {
            v = static_cast<double>(interp::eval_int_expr(n->value, env_));
            known = true;
          } catch (const Error&) {
          }
          if (known) env_[n->var.get()] = interp::ScalarVal{static_cast<int64_t>(v), v};
        }
        OpCounts body = dstmt(n->body, k);
        if (known) env_.erase(n->var.get());
        return expr(n->value, k) + body;
      }
      case StmtKind::Evaluate: {
        for (auto& a : s.as<EvaluateNode>()->args) c = c + expr(a, k);
        return c;
      }
    }
    return c;
  }
};

FunctionCounts assemble(const std::vector<Counter::Rec>& recs, const RunStats* dyn) {
  FunctionCounts out;
  for (auto& r : recs) {
    BlockCounts b;
    b.name = r.name;
    double it = r.iterations;
    double init_it = std::isnan(r.init_execs) ? it / r.reduce_points : r.init_execs;
    if (dyn) {
      auto d = dyn->block_executions.find(r.name);
      it = d == dyn->block_executions.end() ? 0 : static_cast<double>(d->second);
      auto di = dyn->init_executions.find(r.name);
      init_it = di == dyn->init_executions.end() ? 0 : static_cast<double>(di->second);
    }
    bool is_root = &r == &recs.front();
    if (is_root && (dyn ? empty(r.total) : empty(r.per_exec) && empty(r.init_per_exec))) continue;
    b.counts = dyn ? r.total : scaled(r.per_exec, it) + scaled(r.init_per_exec, init_it);
    b.counts.iterations = it;
    out.total = out.total + b.counts;
    out.total.iterations += it;
    out.blocks.push_back(b);
  }
  return out;
}

}  // namespace

FunctionCounts static_counts(const FunctionNode& f, const ArgMap& scalars) {
  // A parameter shape that is negative for the given scalars is bad input, as for `tirc run`
  // (`--input n=-3` counted 0 iterations and exited 0). Shapes that use a scalar not given
  // are not needed for the counts.
  auto check = [&](const Buffer& b) {
    bool given = true;
    for (auto& e : b->shape)
      for_each_expr(e, [&](const Expr& x) {
        if (auto* v = x.as<VarNode>(); v && !scalars.count(v->name)) given = false;
      });
    if (given) eval_shape(b, scalars);  // Error on a negative extent
  };
  for (auto& p : f.params)
    if (p.is_buffer()) check(p.buffer);
  struct Allocs : IRVisitor {  // allocs too (`alloc T: f32[n - 5]` with n = 3), as `tirc run`
    std::function<void(const Buffer&)> check;
    void visit_block(const BlockNode* n) override {
      for (auto& a : n->allocs) check(a);
      IRVisitor::visit_block(n);
    }
  } allocs;
  allocs.check = check;
  allocs.visit(f.body);
  Counter c(f, scalars, nullptr);
  c.run();
  return assemble(c.recs, nullptr);
}

FunctionCounts dynamic_counts(const FunctionNode& f, const ArgMap& inputs) {
  RunStats st;
  compile_interp(f)->run_with_stats(inputs, &st);
  Counter c(f, inputs, &st);
  c.run();
  return assemble(c.recs, &st);
}

}  // namespace tirc

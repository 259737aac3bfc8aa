#include "interp/stats.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "interp/compile.h"
#include "ir/error.h"

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
  Counter(const FunctionNode& f, const ArgMap& scalars, bool dynamic) : f_(f), dynamic_(dynamic) {
    for (auto& p : f.params) {
      if (p.is_buffer()) continue;
      auto it = scalars.find(p.name());
      if (it == scalars.end()) {
        // Extents are integers: a float or bool scalar cannot change a static count.
        if (is_float(p.var.dtype()) || p.var.dtype() == DType::Bool) continue;
        throw Error("scalar parameter " + p.name() + " must be given (--input " + p.name() + "=VALUE)");
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
    OpCounts per_exec;
  };
  std::vector<Rec> recs;

  void run() { stmt(f_.body, 1.0); }

 private:
  const FunctionNode& f_;
  bool dynamic_;
  interp::ScalarEnv env_;

  double extent(const Expr& e, bool* known) {
    try {
      *known = true;
      return static_cast<double>(interp::eval_int_expr(e, env_));
    } catch (const Error&) {
      *known = false;
      return NAN;
    }
  }

  OpCounts expr(const Expr& e) {
    OpCounts c;
    if (!e.defined()) return c;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        for (auto& i : n->indices) c = c + expr(i);
        c.loads += 1;
        c.bytes += dtype_bytes(n->buffer->dtype);
        return c;
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        c = expr(n->a) + expr(n->b);
        if (is_float(n->a.dtype()) && !binop_is_logic(n->op)) c.flops += 1;
        return c;
      }
      case ExprKind::Unary: return expr(e.as<UnaryNode>()->a);
      case ExprKind::Cast: return expr(e.as<CastNode>()->value);
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        for (auto& a : n->args) c = c + expr(a);
        if (is_float(n->dtype)) c.flops += 1;
        return c;
      }
      case ExprKind::Select: {
        auto* n = as_select_like(e);
        return expr(n->cond) + expr(n->t) + expr(n->f);
      }
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        return expr(n->cond) + maxc(expr(n->t), expr(n->f));
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        return expr(n->value) + expr(n->body);
      }
      case ExprKind::BufferPtr: {
        for (auto& i : e.as<BufferPtrNode>()->indices) c = c + expr(i);
        return c;
      }
      default: return c;
    }
  }

  // Counts of the current block's own work for one execution of s; `mult` is how many times
  // s executes in total (NaN when unknown, dynamic mode only).
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
        if (!known && !dynamic_)
          throw Error("loop " + n->loop_var.name() +
                      ": its extent is not a constant of scalar parameters; use tirc stats --dynamic");
        OpCounts body = stmt(n->body, mult * ext);
        if (!known) {
          if (!empty(body))
            throw Error("loop " + n->loop_var.name() + " inside a block body has a non-constant extent");
          return c;
        }
        return scaled(body, ext);
      }
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        const BlockNode& b = *n->block.get();
        size_t idx = recs.size();
        recs.push_back({b.name, mult, {}});
        OpCounts own = stmt(b.body, mult);
        if (b.init.defined()) {
          double red = 1;
          bool all_known = true;
          for (auto& iv : b.iter_vars)
            if (iv.kind == IterKind::Reduce) {
              bool known;
              red *= extent(iv.extent, &known);
              all_known &= known;
            }
          if (!all_known || red <= 0) red = 1;
          own = own + scaled(stmt(b.init, mult / red), 1.0 / red);
        }
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
        return expr(n->cond) + maxc(stmt(n->then_case, mult), stmt(n->else_case, mult));
      }
      case StmtKind::LetStmt: {
        // An integer let of scalar parameters (`let w = m + 1` before `for j in serial(w)`)
        // is known statically: loop extents inside may use it.
        auto* n = s.as<LetStmtNode>();
        bool known = false;
        if (is_int(n->var.dtype())) {
          double v = extent(n->value, &known);
          if (known) env_[n->var.get()] = interp::ScalarVal{static_cast<int64_t>(v), v};
        }
        OpCounts body = stmt(n->body, mult);
        if (known) env_.erase(n->var.get());
        return expr(n->value) + body;
      }
      case StmtKind::Evaluate: {
        for (auto& a : s.as<EvaluateNode>()->args) c = c + expr(a);
        return c;
      }
    }
    return c;
  }
};

FunctionCounts assemble(const std::vector<Counter::Rec>& recs, const std::map<std::string, uint64_t>* dyn) {
  FunctionCounts out;
  for (auto& r : recs) {
    BlockCounts b;
    b.name = r.name;
    double it = r.iterations;
    if (dyn) {
      auto d = dyn->find(r.name);
      it = d == dyn->end() ? 0 : static_cast<double>(d->second);
    }
    bool is_root = &r == &recs.front();
    if (is_root && empty(r.per_exec)) continue;
    b.counts = scaled(r.per_exec, it);
    b.counts.iterations = it;
    out.total = out.total + b.counts;
    out.total.iterations += it;
    out.blocks.push_back(b);
  }
  return out;
}

}  // namespace

FunctionCounts static_counts(const FunctionNode& f, const ArgMap& scalars) {
  Counter c(f, scalars, false);
  c.run();
  return assemble(c.recs, nullptr);
}

FunctionCounts dynamic_counts(const FunctionNode& f, const ArgMap& inputs) {
  Counter c(f, inputs, true);
  c.run();
  RunStats st;
  compile_interp(f)->run_with_stats(inputs, &st);
  return assemble(c.recs, &st.block_executions);
}

}  // namespace tirc

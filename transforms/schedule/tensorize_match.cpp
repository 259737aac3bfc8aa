#include "transforms/schedule/tensorize_match.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"

namespace tirc::sched {
namespace {

std::string describe(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For: return "loop " + s.as<ForNode>()->loop_var.name();
    case StmtKind::BlockRealize: return "block " + s.as<BlockRealizeNode>()->block->name;
    case StmtKind::Store: return "a store to " + s.as<StoreNode>()->buffer->name;
    case StmtKind::IfThenElse: return "an if";
    case StmtKind::LetStmt: return "let " + s.as<LetStmtNode>()->var.name();
    case StmtKind::Seq: return std::to_string(s.as<SeqNode>()->stmts.size()) + " statements in sequence";
    case StmtKind::Evaluate: return "call_extern(\"" + s.as<EvaluateNode>()->extern_name + "\")";
  }
  return "?";
}

std::string dims(size_t n) { return std::to_string(n) + (n == 1 ? " dimension" : " dimensions"); }

class Matcher {
 public:
  Matcher(const FunctionNode& desc, const std::string& intrin) : intrin_(intrin) {
    for (auto& p : desc.params) {
      if (p.is_buffer())
        desc_bufs_.insert(p.buffer.get());
      else
        desc_scalars_.insert(p.var.get());
    }
  }

  TensorizeMatch result;

  void stmt(const Stmt& t, const Stmt& d) {
    if (t.kind() != d.kind())
      refuse(describe(t) + " is where the desc of " + intrin_ + " has " + describe(d));
    switch (t.kind()) {
      case StmtKind::For: return loop(t.as<ForNode>(), d.as<ForNode>());
      case StmtKind::BlockRealize: return block(t.as<BlockRealizeNode>(), d.as<BlockRealizeNode>());
      case StmtKind::Seq: {
        auto& ts = t.as<SeqNode>()->stmts;
        auto& ds = d.as<SeqNode>()->stmts;
        if (ts.size() != ds.size())
          refuse("the subtree has " + std::to_string(ts.size()) +
                 " statements in sequence where the desc of " + intrin_ + " has " +
                 std::to_string(ds.size()));
        for (size_t i = 0; i < ts.size(); ++i) stmt(ts[i], ds[i]);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* a = t.as<IfThenElseStmtNode>();
        auto* b = d.as<IfThenElseStmtNode>();
        value(a->cond, b->cond, "the condition of an if");
        stmt(a->then_case, b->then_case);
        if (a->else_case.defined() != b->else_case.defined())
          refuse(std::string("an if ") + (a->else_case.defined() ? "has" : "has no") +
                 " else branch, unlike the desc of " + intrin_);
        if (a->else_case.defined()) stmt(a->else_case, b->else_case);
        return;
      }
      case StmtKind::LetStmt: {
        auto* a = t.as<LetStmtNode>();
        auto* b = d.as<LetStmtNode>();
        value(a->value, b->value, "the value of let " + a->var.name());
        bind_inner(a->var, b->var);
        return stmt(a->body, b->body);
      }
      case StmtKind::Store: {
        auto* a = t.as<StoreNode>();
        auto* b = d.as<StoreNode>();
        access(a->buffer, a->indices, b->buffer, b->indices, true);
        value(a->value, b->value, "the value stored to " + a->buffer->name);
        return;
      }
      case StmtKind::Evaluate:
        refuse("the subtree calls " + describe(t) + "; only blocks of ordinary statements can match a desc");
    }
  }

 private:
  std::string intrin_;
  std::unordered_set<const BufferNode*> desc_bufs_;
  std::unordered_set<const VarNode*> desc_scalars_;
  std::unordered_set<const VarNode*> desc_inner_;  // desc vars bound inside the desc body
  std::unordered_map<const VarNode*, Expr> sub_;   // target inner var -> desc coordinates
  std::string detail_;                             // why a load in a value did not match

  Expr S(const Expr& e) const { return substitute(e, sub_); }
  bool inner(const Expr& e) const {
    return uses_var(e, [&](const VarNode* v) { return desc_inner_.count(v) > 0; });
  }
  // Target var t is desc var d (plus a shift made of outer variables).
  void bind_inner(const Var& t, const Var& d, const Expr& shift = Expr()) {
    desc_inner_.insert(d.get());
    sub_[t.get()] = shift.defined() && !is_zero(shift) ? fold(d + shift) : Expr(d);
  }

  void loop(const ForNode* t, const ForNode* d) {
    Expr text = fold(S(t->extent));
    if (!prove_eq(text, fold(d->extent)))
      refuse("loop " + t->loop_var.name() + " has extent " + print_expr(t->extent) +
             ", but the matching loop " + d->loop_var.name() + " of the desc of " + intrin_ + " has extent " +
             print_expr(d->extent));
    Expr shift = fold(S(t->min) - d->min);
    if (inner(shift)) refuse("the start of loop " + t->loop_var.name() + " depends on the loops of the tile");
    bind_inner(t->loop_var, d->loop_var, shift);
    stmt(t->body, d->body);
  }

  void block(const BlockRealizeNode* tr, const BlockRealizeNode* dr) {
    const BlockNode* t = tr->block.get();
    const BlockNode* d = dr->block.get();
    std::string tn = "block " + t->name, dn = "the desc's block " + d->name;
    // Iter vars bound to tile-invariant expressions (e.g. a batch index outside the tile) are
    // not part of the desc: they are plain offsets (TVM: the outer part of blockize).
    std::vector<int> pair(t->iter_vars.size(), -1);
    if (t->iter_vars.size() == d->iter_vars.size()) {
      for (size_t i = 0; i < pair.size(); ++i) pair[i] = static_cast<int>(i);
    } else {
      size_t n = 0;
      for (size_t i = 0; i < pair.size(); ++i)
        if (inner(fold(S(tr->bindings[i])))) pair[i] = static_cast<int>(n++);
      if (n != d->iter_vars.size())
        refuse(tn + " has " + std::to_string(n) + " iter vars that vary in the tile, but " + dn + " of " +
               intrin_ + " has " + std::to_string(d->iter_vars.size()) + " iter vars");
    }
    std::vector<Expr> offs;
    for (size_t i = 0; i < t->iter_vars.size(); ++i) {
      const IterVar& ti = t->iter_vars[i];
      if (pair[i] < 0) {
        Expr off = fold(S(tr->bindings[i]));
        offs.push_back(off);
        result.iter_offsets.emplace_back(ti.kind, off);
        continue;
      }
      const IterVar& di = d->iter_vars[pair[i]];
      const Expr& db = dr->bindings[pair[i]];
      if (ti.kind != di.kind)
        refuse("iter var " + ti.var.name() + " of " + tn + " is " + iter_kind_name(ti.kind) +
               ", but iter var " + di.var.name() + " of " + dn + " of " + intrin_ + " is " +
               iter_kind_name(di.kind));
      Expr off = fold(S(tr->bindings[i]) - db);
      if (inner(off))
        refuse("the binding " + print_expr(tr->bindings[i]) + " of iter var " + ti.var.name() + " of " + tn +
               " is not an offset plus the desc's binding " + print_expr(db) +
               " (the offset must not depend on the loops of the tile)");
      offs.push_back(off);
      result.iter_offsets.emplace_back(ti.kind, off);
    }
    {
      Expr tp = fold(S(tr->predicate)), dp = fold(dr->predicate);
      int64_t tv = 1, dv = 1;
      bool tt = is_const_int(tp, &tv) && tv, dt = is_const_int(dp, &dv) && dv;
      if (tt != dt || (!tt && !eq(tp, dp)))
        refuse(tn +
               (tt ? " has no predicate" : " has the predicate `where " + print_expr(tr->predicate) + "`") +
               ", but " + dn + (dt ? " has none" : " has `where " + print_expr(dr->predicate) + "`"));
    }
    if (!t->allocs.empty())
      refuse(tn + " allocates buffer " + t->allocs[0]->name + "; the tile may not allocate");
    if (!d->allocs.empty())
      refuse(dn + " of " + intrin_ + " allocates buffer " + d->allocs[0]->name + " (not supported)");
    for (size_t i = 0; i < t->iter_vars.size(); ++i) {
      if (pair[i] >= 0)
        bind_inner(t->iter_vars[i].var, d->iter_vars[pair[i]].var, offs[i]);
      else
        sub_[t->iter_vars[i].var.get()] = offs[i];
    }
    if (t->init.defined() && !d->init.defined())
      refuse(tn + " has an init, but " + dn + " of " + intrin_ +
             " has none: apply decompose_reduction first and tensorize the update");
    if (!t->init.defined() && d->init.defined())
      refuse(dn + " of " + intrin_ + " has an init, but " + tn + " has none");
    if (t->init.defined()) {
      for (size_t i = 0; i < t->iter_vars.size(); ++i)
        if (t->iter_vars[i].kind == IterKind::Reduce && !is_zero(offs[i]))
          refuse(tn + " has an init and its reduce iter var " + t->iter_vars[i].var.name() +
                 " is split outside the tile (offset " + print_expr(offs[i]) +
                 "): the desc's init would run once per tile; apply decompose_reduction first and use an "
                 "intrinsic "
                 "without init");
      stmt(t->init, d->init);
    }
    stmt(t->body, d->body);
  }

  void value(const Expr& t, const Expr& d, const std::string& what) {
    Expr ts = S(t);
    detail_.clear();
    if (!eq(ts, d))
      refuse(what + ", " + print_expr(t) + ", differs from the desc's " + print_expr(d) + " (intrinsic " +
             intrin_ + ")" + (detail_.empty() ? "" : ": " + detail_));
  }

  void access(const Buffer& tb, const std::vector<Expr>& tidx, const Buffer& db,
              const std::vector<Expr>& didx, bool write) {
    if (!desc_bufs_.count(db.get()))
      refuse("the desc of " + intrin_ + " accesses buffer " + db->name +
             ", which is not one of its parameters");
    if (tb->dtype != db->dtype)
      refuse("buffer " + tb->name + " is " + std::string(dtype_name(tb->dtype)) +
             ", but the matching parameter " + db->name + " of the desc of " + intrin_ + " is " +
             std::string(dtype_name(db->dtype)));
    if (tb->ndim() < db->ndim())
      refuse("buffer " + tb->name + " has " + dims(tb->ndim()) + ", fewer than the " + dims(db->ndim()) +
             " of the desc's parameter " + db->name);
    size_t lead = tb->ndim() - db->ndim();
    std::vector<Expr> offs;
    for (size_t k = 0; k < tidx.size(); ++k) {
      Expr ti = S(tidx[k]);
      Expr off = k < lead ? fold(ti) : fold(ti - didx[k - lead]);
      if (inner(off)) {
        if (k < lead)
          refuse("index " + print_expr(tidx[k]) + " of buffer " + tb->name + " (dimension " +
                 std::to_string(k) + ", which the desc's parameter " + db->name +
                 " does not have) depends on the loops of the tile");
        refuse("index " + print_expr(tidx[k]) + " of buffer " + tb->name +
               " is not an offset plus the desc's index " + print_expr(didx[k - lead]) + " of " + db->name +
               " (the offset must not depend on the loops of the tile)");
      }
      offs.push_back(off);
    }
    auto it = result.buffers.find(db.get());
    if (it == result.buffers.end()) {
      result.buffers[db.get()] = TensorizeBufferMatch{tb, offs, write};
      return;
    }
    TensorizeBufferMatch& m = it->second;
    if (!m.target.same_as(tb))
      refuse("the desc's parameter " + db->name + " of " + intrin_ + " matches both buffer " +
             m.target->name + " and buffer " + tb->name);
    for (size_t k = 0; k < offs.size(); ++k)
      if (!prove_eq(offs[k], m.offsets[k]))
        refuse("buffer " + tb->name + " is accessed at offset " + print_expr(m.offsets[k]) +
               " and at offset " + print_expr(offs[k]) + " in dimension " + std::to_string(k) +
               " relative to the desc's parameter " + db->name);
    m.written = m.written || write;
  }

  // Structural equality of a target expression (in desc coordinates) and a desc expression.
  bool eq(const Expr& t, const Expr& d) {
    if (d.kind() == ExprKind::Var && desc_scalars_.count(d.as<VarNode>())) {
      bool has_load = false;
      for_each_expr(t, [&](const Expr& e) { has_load = has_load || e.kind() == ExprKind::Load; });
      if (t.dtype() != d.dtype() || inner(t) || has_load) return false;
      auto [it, fresh] = result.scalars.emplace(d.as<VarNode>(), t);
      return fresh || expr_identical(it->second, t) || (tirc::is_int(t.dtype()) && prove_eq(it->second, t));
    }
    if (t.dtype() != d.dtype()) return false;
    if (structural(t, d)) return true;
    return tirc::is_int(t.dtype()) && prove_eq(fold(t), fold(d));
  }

  bool all_eq(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!eq(a[i], b[i])) return false;
    return true;
  }

  bool structural(const Expr& t, const Expr& d) {
    if (t.kind() != d.kind()) return false;
    switch (t.kind()) {
      case ExprKind::IntImm: return t.as<IntImmNode>()->value == d.as<IntImmNode>()->value;
      case ExprKind::FloatImm: {
        double a = t.as<FloatImmNode>()->value, b = d.as<FloatImmNode>()->value;
        return a == b || (a != a && b != b);
      }
      case ExprKind::Var: return t.same_as(d);
      case ExprKind::Load: {
        auto* a = t.as<LoadNode>();
        auto* b = d.as<LoadNode>();
        // The indices are in desc coordinates already (S is idempotent on them). A mismatch
        // here makes the whole value differ; its reason is kept for the message.
        try {
          access(a->buffer, a->indices, b->buffer, b->indices, false);
        } catch (const Refusal& r) {
          if (detail_.empty()) detail_ = r.what();
          return false;
        }
        return true;
      }
      case ExprKind::Binary: {
        auto* a = t.as<BinaryNode>();
        auto* b = d.as<BinaryNode>();
        return a->op == b->op && eq(a->a, b->a) && eq(a->b, b->b);
      }
      case ExprKind::Unary: {
        auto* a = t.as<UnaryNode>();
        auto* b = d.as<UnaryNode>();
        return a->op == b->op && eq(a->a, b->a);
      }
      case ExprKind::Cast: return eq(t.as<CastNode>()->value, d.as<CastNode>()->value);
      case ExprKind::Call: {
        auto* a = t.as<CallNode>();
        auto* b = d.as<CallNode>();
        return a->op == b->op && all_eq(a->args, b->args);
      }
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* a = as_select_like(t);
        auto* b = as_select_like(d);
        return eq(a->cond, b->cond) && eq(a->t, b->t) && eq(a->f, b->f);
      }
      case ExprKind::Let: {
        auto* a = t.as<LetNode>();
        auto* b = d.as<LetNode>();
        if (!eq(a->value, b->value)) return false;
        desc_inner_.insert(b->var.get());
        Expr body = substitute(a->body, std::unordered_map<const VarNode*, Expr>{{a->var.get(), b->var}});
        return eq(body, b->body);
      }
      case ExprKind::BufferPtr: return false;
    }
    return false;
  }
};

// Substitutes `let x = v` statements into their bodies when nothing in the body stores to a
// buffer v loads (so v has the same value wherever x is used). `tirc grad` names a loaded
// cotangent before the update (`let a0 = C_grad[v, r]` then `A_grad[..] += a0 * B[..]`);
// structurally the same computation as the desc's `c[i, j] += a[i, k] * b[j, k]`.
class InlinePureLets : public IRMutator {
 protected:
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& /*s*/) override {
    Stmt body = mutate(n->body);
    Expr value = mutate(n->value);
    bool pure = true;
    std::vector<const BufferNode*> loaded;
    for_each_expr(value, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>()) loaded.push_back(l->buffer.get());
      if (e.kind() == ExprKind::BufferPtr) pure = false;
    });
    bool stored = false;
    std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
      if (!t.defined()) return;
      switch (t.kind()) {
        case StmtKind::Store: {
          auto* st = t.as<StoreNode>();
          stored = stored || std::find(loaded.begin(), loaded.end(), st->buffer.get()) != loaded.end();
          return;
        }
        case StmtKind::Evaluate: stored = true; return;  // call_extern: effects unknown
        case StmtKind::For: walk(t.as<ForNode>()->body); return;
        case StmtKind::IfThenElse: {
          auto* i = t.as<IfThenElseStmtNode>();
          walk(i->then_case);
          walk(i->else_case);
          return;
        }
        case StmtKind::LetStmt: walk(t.as<LetStmtNode>()->body); return;
        case StmtKind::Seq:
          for (auto& x : t.as<SeqNode>()->stmts) walk(x);
          return;
        default: stored = true; return;  // nested blocks: keep the let
      }
    };
    walk(body);
    if (!pure || stored) return make_let_stmt(n->var, value, body);
    return substitute(body, std::unordered_map<const VarNode*, Expr>{{n->var.get(), value}});
  }
};

}  // namespace

TensorizeMatch match_tensorize_desc(const Stmt& target_in, const FunctionNode& desc, const Stmt& desc_in,
                                    const std::string& intrin) {
  if (has_extern_call(desc_in))
    refuse("the desc of " + intrin + " calls an extern function; a desc must be ordinary blocks");
  Stmt target = InlinePureLets().mutate(target_in);
  Stmt desc_body = InlinePureLets().mutate(desc_in);
  Matcher m(desc, intrin);
  m.stmt(target, desc_body);
  // Every desc parameter must have been matched: the impl may use it.
  for (auto& p : desc.params) {
    bool ok =
        p.is_buffer() ? m.result.buffers.count(p.buffer.get()) > 0 : m.result.scalars.count(p.var.get()) > 0;
    if (!ok) refuse("parameter " + p.name() + " of the desc of " + intrin + " is not used by the desc");
  }
  // Offsets are in outer variables only: a desc scalar parameter in a desc index gets its match.
  std::unordered_map<const VarNode*, Expr> scalars(m.result.scalars.begin(), m.result.scalars.end());
  for (auto& [b, bm] : m.result.buffers)
    for (auto& o : bm.offsets) o = fold(substitute(o, scalars));
  // Two desc parameters on one target buffer: only when neither is written.
  for (auto& [a, ma] : m.result.buffers)
    for (auto& [b, mb] : m.result.buffers)
      if (a < b && ma.target.same_as(mb.target) && (ma.written || mb.written)) {
        std::string x = a->name, y = b->name;
        if (y < x) std::swap(x, y);
        refuse("the desc's parameters " + x + " and " + y + " both match buffer " + ma.target->name +
               ", which the tile writes");
      }
  return m.result;
}

}  // namespace tirc::sched

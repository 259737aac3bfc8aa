#include "ir/mutator.h"

namespace tirc {

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
    case ExprKind::IntImm: return mutate_int(e);
    case ExprKind::FloatImm: return mutate_float(e);
    case ExprKind::Var: return mutate_var(e);
    case ExprKind::Load: return mutate_load(e.as<LoadNode>(), e);
    case ExprKind::Binary: return mutate_binary(e.as<BinaryNode>(), e);
    case ExprKind::Unary: return mutate_unary(e.as<UnaryNode>(), e);
    case ExprKind::Cast: return mutate_cast(e.as<CastNode>(), e);
    case ExprKind::Call: return mutate_call(e.as<CallNode>(), e);
    case ExprKind::Select:
    case ExprKind::IfThenElse: return mutate_select(as_select_like(e), e);
    case ExprKind::Let: return mutate_let(e.as<LetNode>(), e);
    case ExprKind::BufferPtr: return mutate_buffer_ptr(e.as<BufferPtrNode>(), e);
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::For: return mutate_for(s.as<ForNode>(), s);
    case StmtKind::BlockRealize: return mutate_block_realize(s.as<BlockRealizeNode>(), s);
    case StmtKind::Store: return mutate_store(s.as<StoreNode>(), s);
    case StmtKind::IfThenElse: return mutate_if(s.as<IfThenElseStmtNode>(), s);
    case StmtKind::LetStmt: return mutate_let_stmt(s.as<LetStmtNode>(), s);
    case StmtKind::Seq: return mutate_seq(s.as<SeqNode>(), s);
    case StmtKind::Evaluate: return mutate_evaluate(s.as<EvaluateNode>(), s);
  }
  return s;
}

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (auto& e : v) {
    out.push_back(mutate(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

Expr IRMutator::mutate_load(const LoadNode* n, const Expr& e) {
  bool changed = false;
  auto idx = mutate_all(n->indices, &changed);
  return changed ? make_load(n->buffer, std::move(idx)) : e;
}
Expr IRMutator::mutate_binary(const BinaryNode* n, const Expr& e) {
  Expr a = mutate(n->a), b = mutate(n->b);
  return a.same_as(n->a) && b.same_as(n->b) ? e : make_binary(n->op, a, b);
}
Expr IRMutator::mutate_unary(const UnaryNode* n, const Expr& e) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? e : make_unary(n->op, a);
}
Expr IRMutator::mutate_cast(const CastNode* n, const Expr& e) {
  Expr v = mutate(n->value);
  return v.same_as(n->value) ? e : make_cast(n->dtype, v);
}
Expr IRMutator::mutate_call(const CallNode* n, const Expr& e) {
  bool changed = false;
  auto args = mutate_all(n->args, &changed);
  return changed ? make_call(n->op, std::move(args)) : e;
}
Expr IRMutator::mutate_select(const SelectNode* n, const Expr& e) {
  Expr c = mutate(n->cond), t = mutate(n->t), f = mutate(n->f);
  if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return e;
  return e.kind() == ExprKind::Select ? make_select(c, t, f) : make_if_then_else(c, t, f);
}
Expr IRMutator::mutate_let(const LetNode* n, const Expr& e) {
  Expr v = mutate(n->value), b = mutate(n->body);
  return v.same_as(n->value) && b.same_as(n->body) ? e : make_let(n->var, v, b);
}
Expr IRMutator::mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) {
  bool changed = false;
  auto idx = mutate_all(n->indices, &changed);
  return changed ? make_buffer_ptr(n->buffer, std::move(idx)) : e;
}

Stmt IRMutator::mutate_for(const ForNode* n, const Stmt& s) {
  Expr mn = mutate(n->min), ext = mutate(n->extent);
  Stmt body = mutate(n->body);
  if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return s;
  return make_for(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
}
Stmt IRMutator::mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) {
  bool changed = false;
  auto bindings = mutate_all(n->bindings, &changed);
  Expr pred = mutate(n->predicate);
  Block blk = mutate_block(n->block);
  if (!changed && pred.same_as(n->predicate) && blk.same_as(n->block)) return s;
  return make_block_realize(std::move(bindings), pred, blk);
}
Block IRMutator::mutate_block(const Block& b) {
  const BlockNode* n = b.get();
  bool changed = false;
  BlockNode out = *n;
  for (auto& iv : out.iter_vars) {
    Expr e = mutate(iv.extent);
    if (!e.same_as(iv.extent)) changed = true;
    iv.extent = e;
  }
  for (auto* regions : {&out.reads, &out.writes})
    for (auto& r : *regions)
      for (auto& rg : r.ranges) {
        Expr b0 = mutate(rg.begin), e0 = mutate(rg.end);
        if (!b0.same_as(rg.begin) || !e0.same_as(rg.end)) changed = true;
        rg.begin = b0;
        rg.end = e0;
      }
  Stmt init = mutate(n->init), body = mutate(n->body);
  if (!init.same_as(n->init) || !body.same_as(n->body)) changed = true;
  if (!changed) return b;
  out.init = init;
  out.body = body;
  return make_block(std::move(out));
}
Stmt IRMutator::mutate_store(const StoreNode* n, const Stmt& s) {
  bool changed = false;
  auto idx = mutate_all(n->indices, &changed);
  Expr v = mutate(n->value);
  if (!changed && v.same_as(n->value)) return s;
  return make_store(n->buffer, std::move(idx), v, n->loc);
}
Stmt IRMutator::mutate_if(const IfThenElseStmtNode* n, const Stmt& s) {
  Expr c = mutate(n->cond);
  Stmt t = mutate(n->then_case), f = mutate(n->else_case);
  if (c.same_as(n->cond) && t.same_as(n->then_case) && f.same_as(n->else_case)) return s;
  return make_if(c, t, f);
}
Stmt IRMutator::mutate_let_stmt(const LetStmtNode* n, const Stmt& s) {
  Expr v = mutate(n->value);
  Stmt b = mutate(n->body);
  if (v.same_as(n->value) && b.same_as(n->body)) return s;
  return make_let_stmt(n->var, v, b);
}
Stmt IRMutator::mutate_seq(const SeqNode* n, const Stmt& s) {
  bool changed = false;
  std::vector<Stmt> out;
  for (auto& x : n->stmts) {
    out.push_back(mutate(x));
    if (!out.back().same_as(x)) changed = true;
  }
  if (!changed) return s;
  auto seq = std::make_shared<SeqNode>();
  for (auto& x : out)
    if (x.defined()) seq->stmts.push_back(x);
  return Stmt(std::move(seq));
}
Stmt IRMutator::mutate_evaluate(const EvaluateNode* n, const Stmt& s) {
  bool changed = false;
  auto args = mutate_all(n->args, &changed);
  return changed ? make_evaluate(n->extern_name, std::move(args)) : s;
}

namespace {
class VarSubstituter : public IRMutator {
 public:
  explicit VarSubstituter(const std::function<Expr(const Var&)>& f) : f_(f) {}

 protected:
  Expr mutate_var(const Expr& e) override {
    Var v(std::static_pointer_cast<const VarNode>(e.ptr()));
    Expr r = f_(v);
    return r.defined() ? r : e;
  }

 private:
  const std::function<Expr(const Var&)>& f_;
};
}  // namespace

Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& f) {
  return VarSubstituter(f).mutate(e);
}
Stmt substitute(const Stmt& s, const std::function<Expr(const Var&)>& f) {
  return VarSubstituter(f).mutate(s);
}
Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map) {
  if (map.empty()) return e;
  return substitute(e, std::function<Expr(const Var&)>([&](const Var& v) {
                      auto it = map.find(v.get());
                      return it == map.end() ? Expr() : it->second;
                    }));
}
Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, Expr>& map) {
  if (map.empty()) return s;
  return substitute(s, std::function<Expr(const Var&)>([&](const Var& v) {
                      auto it = map.find(v.get());
                      return it == map.end() ? Expr() : it->second;
                    }));
}

}  // namespace tirc

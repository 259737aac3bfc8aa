#include "ir/visitor.h"

namespace tirc {

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::IntImm: return visit_int(e.as<IntImmNode>());
    case ExprKind::FloatImm: return visit_float(e.as<FloatImmNode>());
    case ExprKind::Var: return visit_var(e.as<VarNode>());
    case ExprKind::Load: return visit_load(e.as<LoadNode>());
    case ExprKind::Binary: return visit_binary(e.as<BinaryNode>());
    case ExprKind::Unary: return visit_unary(e.as<UnaryNode>());
    case ExprKind::Cast: return visit_cast(e.as<CastNode>());
    case ExprKind::Call: return visit_call(e.as<CallNode>());
    case ExprKind::Select:
    case ExprKind::IfThenElse: return visit_select(as_select_like(e));
    case ExprKind::Let: return visit_let(e.as<LetNode>());
    case ExprKind::BufferPtr: return visit_buffer_ptr(e.as<BufferPtrNode>());
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: return visit_for(s.as<ForNode>());
    case StmtKind::BlockRealize: return visit_block_realize(s.as<BlockRealizeNode>());
    case StmtKind::Store: return visit_store(s.as<StoreNode>());
    case StmtKind::IfThenElse: return visit_if(s.as<IfThenElseStmtNode>());
    case StmtKind::LetStmt: return visit_let_stmt(s.as<LetStmtNode>());
    case StmtKind::Seq: return visit_seq(s.as<SeqNode>());
    case StmtKind::Evaluate: return visit_evaluate(s.as<EvaluateNode>());
  }
}

void IRVisitor::visit_load(const LoadNode* n) {
  for (auto& i : n->indices) visit(i);
}
void IRVisitor::visit_binary(const BinaryNode* n) {
  visit(n->a);
  visit(n->b);
}
void IRVisitor::visit_unary(const UnaryNode* n) { visit(n->a); }
void IRVisitor::visit_cast(const CastNode* n) { visit(n->value); }
void IRVisitor::visit_call(const CallNode* n) {
  for (auto& a : n->args) visit(a);
}
void IRVisitor::visit_select(const SelectNode* n) {
  visit(n->cond);
  visit(n->t);
  visit(n->f);
}
void IRVisitor::visit_let(const LetNode* n) {
  visit(n->value);
  visit(n->body);
}
void IRVisitor::visit_buffer_ptr(const BufferPtrNode* n) {
  for (auto& i : n->indices) visit(i);
}

void IRVisitor::visit_for(const ForNode* n) {
  visit(n->min);
  visit(n->extent);
  visit(n->body);
}
void IRVisitor::visit_block_realize(const BlockRealizeNode* n) {
  for (auto& b : n->bindings) visit(b);
  visit(n->predicate);
  visit_block(n->block.get());
}
void IRVisitor::visit_block(const BlockNode* n) {
  for (auto& iv : n->iter_vars) visit(iv.extent);
  for (auto* regions : {&n->reads, &n->writes})
    for (auto& r : *regions)
      for (auto& rg : r.ranges) {
        visit(rg.begin);
        visit(rg.end);
      }
  visit(n->init);
  visit(n->body);
}
void IRVisitor::visit_store(const StoreNode* n) {
  for (auto& i : n->indices) visit(i);
  visit(n->value);
}
void IRVisitor::visit_if(const IfThenElseStmtNode* n) {
  visit(n->cond);
  visit(n->then_case);
  visit(n->else_case);
}
void IRVisitor::visit_let_stmt(const LetStmtNode* n) {
  visit(n->value);
  visit(n->body);
}
void IRVisitor::visit_seq(const SeqNode* n) {
  for (auto& s : n->stmts) visit(s);
}
void IRVisitor::visit_evaluate(const EvaluateNode* n) {
  for (auto& a : n->args) visit(a);
}

}  // namespace tirc

namespace tirc {
namespace {
class ExprFnVisitor : public IRVisitor {
 public:
  explicit ExprFnVisitor(const std::function<void(const Expr&)>& f) : f_(f) {}
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    f_(e);
    IRVisitor::visit(e);
  }

 private:
  const std::function<void(const Expr&)>& f_;
};
}  // namespace

void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& f) { ExprFnVisitor(f).visit(e); }
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& f) { ExprFnVisitor(f).visit(s); }

}  // namespace tirc

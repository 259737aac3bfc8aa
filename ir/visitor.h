// Read-only traversal of expressions and statements (model: Halide IRVisitor, TVM
// StmtExprVisitor). Override the visit_* you care about and call the base to recurse.
#pragma once

#include <functional>

#include "ir/stmt.h"

namespace tirc {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
  virtual void visit_int(const IntImmNode*) {}
  virtual void visit_float(const FloatImmNode*) {}
  virtual void visit_var(const VarNode*) {}
  virtual void visit_load(const LoadNode* n);
  virtual void visit_binary(const BinaryNode* n);
  virtual void visit_unary(const UnaryNode* n);
  virtual void visit_cast(const CastNode* n);
  virtual void visit_call(const CallNode* n);
  virtual void visit_select(const SelectNode* n);  // Select and IfThenElse
  virtual void visit_let(const LetNode* n);
  virtual void visit_buffer_ptr(const BufferPtrNode* n);

  virtual void visit_for(const ForNode* n);
  // Visits bindings, predicate, then the block (visit_block).
  virtual void visit_block_realize(const BlockRealizeNode* n);
  // Visits iter var extents, region bounds, init, body.
  virtual void visit_block(const BlockNode* n);
  virtual void visit_store(const StoreNode* n);
  virtual void visit_if(const IfThenElseStmtNode* n);
  virtual void visit_let_stmt(const LetStmtNode* n);
  virtual void visit_seq(const SeqNode* n);
  virtual void visit_evaluate(const EvaluateNode* n);
};

// Calls f on every expression node below (and including) the root, pre-order.
void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& f);
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& f);

}  // namespace tirc

// Rewriting traversal (model: Halide IRMutator, TVM StmtExprMutator). Each mutate_* returns
// the original handle when nothing below changed, so unchanged subtrees stay shared.
#pragma once

#include <functional>
#include <unordered_map>

#include "ir/stmt.h"

namespace tirc {

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
  virtual Expr mutate_int(const Expr& e) { return e; }
  virtual Expr mutate_float(const Expr& e) { return e; }
  virtual Expr mutate_var(const Expr& e) { return e; }
  virtual Expr mutate_load(const LoadNode* n, const Expr& e);
  virtual Expr mutate_binary(const BinaryNode* n, const Expr& e);
  virtual Expr mutate_unary(const UnaryNode* n, const Expr& e);
  virtual Expr mutate_cast(const CastNode* n, const Expr& e);
  virtual Expr mutate_call(const CallNode* n, const Expr& e);
  virtual Expr mutate_select(const SelectNode* n, const Expr& e);  // Select and IfThenElse
  virtual Expr mutate_let(const LetNode* n, const Expr& e);
  virtual Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e);

  virtual Stmt mutate_for(const ForNode* n, const Stmt& s);
  virtual Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s);
  // Rewrites iter var extents, regions, init and body of a block.
  virtual Block mutate_block(const Block& b);
  virtual Stmt mutate_store(const StoreNode* n, const Stmt& s);
  virtual Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s);
  virtual Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s);
  virtual Stmt mutate_seq(const SeqNode* n, const Stmt& s);
  virtual Stmt mutate_evaluate(const EvaluateNode* n, const Stmt& s);

  // Helper: mutates each element; sets *changed when any element changed.
  std::vector<Expr> mutate_all(const std::vector<Expr>& v, bool* changed);
};

// Replaces variables by expressions (by identity). Does not rename binders.
Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map);
Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, Expr>& map);
// Replaces variables through a callback: return an undefined Expr to keep the variable.
Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& f);
Stmt substitute(const Stmt& s, const std::function<Expr(const Var&)>& f);

}  // namespace tirc

#include "transforms/autodiff/outer_lets.h"

#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/root_body.h"

namespace tirc::ad {

namespace {

bool reads_buffer(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<LoadNode>() || x.as<BufferPtrNode>()) found = true;
  });
  return found;
}

// Walks the statements outside user blocks; substitution reaches into the blocks in the
// let's scope (a user block's own lets are gradient()'s business and are left alone).
struct Inliner : IRMutator {
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s) override {
    if (reads_buffer(n->value)) return IRMutator::mutate_let_stmt(n, s);
    std::unordered_map<const VarNode*, Expr> m{{n->var.get(), mutate(n->value)}};
    return mutate(substitute(n->body, m));
  }
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
};

}  // namespace

Function inline_outer_lets(const FunctionNode& f) {
  Inliner in;
  return map_root_body(f, [&](const Stmt& body) { return in.mutate(body); });
}

}  // namespace tirc::ad

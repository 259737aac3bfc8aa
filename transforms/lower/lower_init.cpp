// Init lowering (TVM: LowerInitBlock): the init statement of a reduction block runs at the
// point where every reduce iter var is 0, before the body.
#include "ir/mutator.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

class InitLowerer : public IRMutator {
 protected:
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    const BlockNode* n = nb.get();
    if (!n->init.defined()) return nb;
    Expr cond;
    for (auto& iv : n->iter_vars) {
      if (iv.kind != IterKind::Reduce) continue;
      Expr c = make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype()));
      cond = cond.defined() ? make_binary(BinOp::And, cond, c) : c;
    }
    BlockNode out = *n;
    Stmt init = cond.defined() ? make_if(cond, n->init) : n->init;
    out.body = make_seq({init, n->body});
    out.init = Stmt();
    return make_block(std::move(out));
  }
};

}  // namespace

Function with_body(const FunctionNode& f, Stmt body) {
  auto g = std::make_shared<FunctionNode>(f);
  g->body = std::move(body);
  return g;
}

Function lower_init(const FunctionNode& f) { return with_body(f, InitLowerer().mutate(f.body)); }

}  // namespace tirc

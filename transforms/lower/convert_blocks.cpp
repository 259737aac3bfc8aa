// Block-to-loop conversion (TVM: ConvertBlocksToOpaque + LowerOpaqueBlock): iter vars are
// replaced by their bindings, `where` becomes an if, and a block survives only as a scope
// block (no iter vars) when it owns allocs or annotations.
#include <set>
#include <unordered_map>

#include "ir/mutator.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

class BlockConverter : public IRMutator {
 public:
  explicit BlockConverter(const Block& root) : root_(root) {}

 protected:
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt&) override {
    if (n->block.same_as(root_)) {
      // Keep the root; convert what is below it.
      BlockNode out = *n->block.get();
      out.body = mutate(out.body);
      if (out.init.defined()) out.init = mutate(out.init);
      return make_block_realize(n->bindings, n->predicate, make_block(std::move(out)));
    }
    const BlockNode* b = n->block.get();
    std::unordered_map<const VarNode*, Expr> map;
    for (size_t i = 0; i < b->iter_vars.size() && i < n->bindings.size(); ++i) {
      // The interpreter gives an iter var its binding's value (in range, so exact in the iter
      // var's dtype). A binding of another integer dtype (the parser refuses it, IR built in
      // C++ may have it: an i64 loop bound to an i32 iter var) is cast, so the substituted
      // expressions keep operands of one dtype (the LLVM backend requires it).
      Expr bind = n->bindings[i];
      DType t = b->iter_vars[i].var.dtype();
      if (bind.dtype() != t) bind = make_cast(t, bind);
      map[b->iter_vars[i].var.get()] = bind;
    }
    Stmt body = b->body;
    if (b->init.defined()) {  // same rule as lower_init, when it was not run first
      Expr cond;
      for (auto& iv : b->iter_vars) {
        if (iv.kind != IterKind::Reduce) continue;
        Expr c = make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype()));
        cond = cond.defined() ? make_binary(BinOp::And, cond, c) : c;
      }
      body = make_seq({cond.defined() ? make_if(cond, b->init) : b->init, body});
    }
    body = mutate(substitute(body, map));
    if (!b->allocs.empty() || !b->annotations.empty()) {
      BlockNode scope;
      scope.name = b->name;
      scope.allocs = b->allocs;
      scope.annotations = b->annotations;
      scope.body = body;
      body = make_block_realize({}, make_bool(true), make_block(std::move(scope)));
    }
    int64_t v;
    if (n->predicate.defined() && !(is_const_int(n->predicate, &v) && v != 0))
      body = make_if(n->predicate, body);
    return body;
  }

 private:
  Block root_;
};

}  // namespace

Function convert_blocks(const FunctionNode& f) {
  auto* br = f.body.as<BlockRealizeNode>();
  if (!br) return with_body(f, f.body);
  return with_body(f, BlockConverter(br->block).mutate(f.body));
}

}  // namespace tirc

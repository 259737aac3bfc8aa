#include "transforms/autodiff/fuse_scan_loops.h"

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/root_body.h"

namespace tirc::ad {

namespace {

bool has_scan_block(const Stmt& s) {
  struct V : IRVisitor {
    bool found = false;
    void visit_block(const BlockNode* b) override {
      for (auto& iv : b->iter_vars) found = found || iv.kind == IterKind::Scan;
      IRVisitor::visit_block(b);
    }
  } v;
  v.visit(s);
  return v.found;
}

bool uses_var(const Stmt& s, const VarNode* v) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

// Replaces every sub-expression identical to `pattern` by `by`.
struct ReplacePattern : IRMutator {
  Expr pattern, by;
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    if (expr_identical(e, pattern)) return by;
    return IRMutator::mutate_binary(n, e);
  }
};

struct Fuser : IRMutator {
  Stmt mutate_for(const ForNode* x, const Stmt& s) override {
    auto* y = x->body.as<ForNode>();
    int64_t a = 0;
    if (y && is_zero(x->min) && is_zero(y->min) && is_const_int(y->extent, &a) && a > 0 &&
        x->for_kind == ForKind::Serial && y->for_kind == ForKind::Serial && has_scan_block(y->body)) {
      Var f(x->loop_var.name() + "_" + y->loop_var.name() + "_fused", x->loop_var.dtype());
      Stmt body = y->body;
      Expr ca = make_int(a, x->loop_var.dtype());
      for (const Expr& pat :
           {make_binary(BinOp::Add, make_binary(BinOp::Mul, x->loop_var, ca), y->loop_var),
            make_binary(BinOp::Add, y->loop_var, make_binary(BinOp::Mul, x->loop_var, ca))}) {
        ReplacePattern r;
        r.pattern = pat;
        r.by = f;
        body = r.mutate(body);
      }
      if (!uses_var(body, x->loop_var.get()) && !uses_var(body, y->loop_var.get())) {
        int64_t xe = 0;
        Expr ext = is_const_int(x->extent, &xe)
                       ? make_int(xe * a, x->extent.dtype())
                       : make_binary(BinOp::Mul, x->extent, make_int(a, x->extent.dtype()));
        // The fused loop may pair with the loop inside it in turn (a loop split twice).
        Stmt fused = make_for(f, x->min, ext, ForKind::Serial, body, x->thread_tag, x->annotations);
        return mutate(fused);
      }
    }
    return IRMutator::mutate_for(x, s);
  }
  // Block bodies do not see loop vars: only bindings and predicates change.
};

}  // namespace

Function fuse_split_scan_loops(const FunctionNode& f) {
  Fuser fu;
  return map_root_body(f, [&](const Stmt& body) { return fu.mutate(body); });
}

}  // namespace tirc::ad

// Normalisation rewrite 0j (normalize_epilogue.h).
#include "transforms/autodiff/normalize_epilogue.h"

#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/root_body.h"

namespace tirc::ad {

namespace {

// Whether c is `v == k` or `k == v` with k the integer constant `last`.
bool is_last(const Expr& c, const VarNode* v, int64_t last) {
  auto* b = c.as<BinaryNode>();
  if (!b || b->op != BinOp::EQ) return false;
  int64_t k = 0;
  if (b->a.get() == v && is_const_int(b->b, &k)) return k == last;
  if (b->b.get() == v && is_const_int(b->a, &k)) return k == last;
  return false;
}

struct Epilogues : IRMutator {
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* f = r.as<ForNode>();
    int64_t lo = 0, ext = 0;
    if ((f->for_kind != ForKind::Serial && f->for_kind != ForKind::Unrolled) || !is_const_int(f->min, &lo) ||
        !is_const_int(f->extent, &ext) || ext < 1)
      return r;
    std::vector<Stmt> stmts;
    if (auto* q = f->body.as<SeqNode>())
      stmts = q->stmts;
    else
      stmts.push_back(f->body);
    if (stmts.size() < 2) return r;
    auto* i = stmts.back().as<IfThenElseStmtNode>();
    if (!i || i->else_case.defined() || !is_last(i->cond, f->loop_var.get(), lo + ext - 1)) return r;
    Stmt tail =
        substitute(i->then_case, std::unordered_map<const VarNode*, Expr>{
                                     {f->loop_var.get(), make_const(f->loop_var.dtype(), lo + ext - 1)}});
    stmts.pop_back();
    Stmt loop =
        make_for(f->loop_var, f->min, f->extent, f->for_kind, make_seq(stmts), f->thread_tag, f->annotations);
    return make_seq({loop, tail});
  }
};

}  // namespace

Function hoist_last_iteration_epilogues(const FunctionNode& f) {
  return map_root_body(f, [](const Stmt& body) { return Epilogues().mutate(body); });
}

}  // namespace tirc::ad

// fuse(l0, l1, ...): TVM Schedule.fuse. The loops must form a perfect nest in the given
// order (each one the whole body of the previous), not be thread-bound, and have ranges
// that do not depend on each other. They are replaced by one serial loop of the product
// extent (serial order is one of the orders a parallel/vectorized loop allows);
// l_k = min_k + (fused // (e_{k+1} * ... )) % e_k.
#include "ir/mutator.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_fuse(ScheduleState& st, const ScheduleInstr& ins) {
  auto pos = positional(ins);
  if (pos.size() < 1) refuse("expected at least 1 loop");
  expect_results(ins, 1);
  std::vector<Stmt> loops;
  for (size_t i = 0; i < pos.size(); ++i) {
    Stmt l = arg_loop(st, ins, i);
    for (auto& p : loops)
      if (p.same_as(l)) refuse("loop " + loop_name(l) + " is given twice");
    loops.push_back(l);
  }
  for (size_t i = 0; i < loops.size(); ++i) {
    auto* f = loops[i].as<ForNode>();
    if (f->for_kind == ForKind::ThreadBinding)
      refuse("loop " + loop_name(loops[i]) + " is bound to " + f->thread_tag + "; fuse it before binding it");
    // As TVM (HasAnnotationOrThreadBindingError): the fused loop could not keep each loop's
    // annotation, and dropping it silently changes what was asked for.
    if (!f->annotations.empty())
      refuse("loop " + loop_name(loops[i]) + " has the annotation \"" + f->annotations.begin()->first +
             "\"; fuse it before annotating it");
    if (i + 1 < loops.size() && !f->body.same_as(loops[i + 1]))
      refuse("loops " + loop_name(loops[i]) + " and " + loop_name(loops[i + 1]) +
             " are not adjacent (the second must be the whole body of the first)");
    for (size_t j = 0; j < i; ++j)
      if (uses_var(f->extent, loops[j].as<ForNode>()->loop_var.get()) ||
          uses_var(f->min, loops[j].as<ForNode>()->loop_var.get()))
        refuse("the range of loop " + loop_name(loops[i]) + " depends on loop " + loop_name(loops[j]));
  }
  if (loops.size() == 1) {
    bind_loop(st, ins, 0, loops[0].as<ForNode>()->loop_var);
    return;
  }
  auto* first = loops[0].as<ForNode>();
  DType t = first->loop_var.dtype();
  for (auto& l : loops)
    if (l.as<ForNode>()->loop_var.dtype() != t) refuse("the loops have different index types");
  // The loop is named after the result; a nested call (`parallel(fuse(i, j))`, hoisted by
  // the parser to a hidden `_N = fuse(...)`) gets TVM's name `i_j_fused` instead.
  std::string base = !ins.results.empty() && ins.results[0] != "_" ? ins.results[0] : "fused";
  if (base.size() > 1 && base[0] == '_' && base.find_first_not_of("0123456789", 1) == std::string::npos) {
    base.clear();
    for (auto& l : loops) base += loop_name(l) + "_";
    base += "fused";
  }
  Var fv(fresh_var_name(st, base), t);
  std::unordered_map<const VarNode*, Expr> sub;
  Expr stride = make_int(1, t);
  Expr total = make_int(1, t);
  for (size_t i = loops.size(); i-- > 0;) {
    auto* f = loops[i].as<ForNode>();
    Expr e = fold(f->extent);
    Expr v = is_one(stride) ? Expr(fv) : floordiv(fv, stride);
    if (i > 0) v = floormod(v, e);
    if (!is_zero(f->min)) v = fold(f->min + v);
    sub[f->loop_var.get()] = v;
    stride = fold(stride * e);
    total = fold(total * e);
  }
  Stmt body = substitute(loops.back().as<ForNode>()->body, sub);
  Stmt nl = make_for(fv, make_int(0, t), total, ForKind::Serial, body);
  st.replace(loops[0].get(), nl);
  bind_loop(st, ins, 0, fv);
}

}  // namespace tirc::sched

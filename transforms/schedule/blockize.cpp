// blk = blockize(loop): TVM Schedule.blockize. Wraps the subtree of `loop` in a new block
// "<inner>_o" placed where the loop was. The new block has one iter var per enclosing loop
// that the subtree uses (kind: spatial when the loop feeds only spatial iter vars of the
// blocks inside, reduce when only reduce ones, opaque otherwise), bound to that loop; inside,
// the loop vars are replaced by these iter vars. Its reads/writes are the inner regions
// relaxed over the inner loops. Nothing is reordered, so it is always legal once the
// subtree holds at least one block.
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_blockize(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt ls = arg_loop(st, ins, 0);
  auto inner = collect_blocks(ls, false);
  if (inner.empty()) refuse("loop " + loop_name(ls) + " holds no block");
  auto outer = st.loops_above(ls.get());
  std::vector<IterVar> ivs;
  std::vector<Expr> binds;
  std::unordered_map<const VarNode*, Expr> sub;
  std::vector<std::string> used;
  for (auto& l : outer) {
    auto* f = l.as<ForNode>();
    const VarNode* v = f->loop_var.get();
    bool mentioned = false;
    for_each_expr(ls, [&](const Expr& e) { mentioned = mentioned || e.get() == v; });
    if (!mentioned) continue;
    bool sp = false, other = false, rd = false;
    for (auto& b : inner)
      for (auto k : kinds_bound_to(*realize(b), v)) {
        if (k == IterKind::Spatial) sp = true;
        else if (k == IterKind::Reduce) rd = true;
        else other = true;
      }
    IterKind kind = other || (sp && rd) ? IterKind::Opaque : rd ? IterKind::Reduce : IterKind::Spatial;
    std::string n = fresh_var_name(st, "v" + f->loop_var.name() + "_o");
    for (int k = 1; std::find(used.begin(), used.end(), n) != used.end(); ++k) n = fresh_var_name(st, "v" + f->loop_var.name() + "_o" + std::to_string(k));
    used.push_back(n);
    Var iv(n, f->loop_var.dtype());
    ivs.push_back(IterVar{iv, kind, f->extent});
    binds.push_back(is_zero(f->min) ? Expr(f->loop_var) : fold(f->loop_var - f->min));
    sub[v] = is_zero(f->min) ? Expr(iv) : fold(iv + f->min);
    if (uses_var(f->extent, [&](const VarNode* x) {
          for (auto& o : outer)
            if (o.as<ForNode>()->loop_var.get() == x) return true;
          return false;
        }))
      refuse("the extent of loop " + loop_name(l) + " depends on another loop");
  }
  Stmt body = substitute(ls, sub);
  std::string base = inner.size() == 1 ? block_of(inner[0])->name + "_o" : "blockized";
  std::string name = st.fresh_block_name(base);
  Stmt outer_block = make_simple_block(name, ivs, binds, body);
  st.replace(ls.get(), outer_block);
  bind_block(st, ins, 0, name);
}

}  // namespace tirc::sched

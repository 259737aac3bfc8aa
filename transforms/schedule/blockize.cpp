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
  // Everything bound above the loop that the subtree may use: enclosing loops and the iter
  // vars of enclosing blocks (a block body may not use variables bound outside it).
  struct Outer {
    Var var;
    Expr min, extent;
  };
  std::vector<Outer> outer;
  auto path = st.path_to(ls.get());
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (auto* f = path[i].as<ForNode>()) outer.push_back(Outer{f->loop_var, f->min, f->extent});
    if (auto* r = path[i].as<BlockRealizeNode>())
      for (auto& iv : r->block->iter_vars) outer.push_back(Outer{iv.var, make_int(0, iv.extent.dtype()), iv.extent});
  }
  std::vector<IterVar> ivs;
  std::vector<Expr> binds;
  std::unordered_map<const VarNode*, Expr> sub;
  std::vector<std::string> used;
  for (auto& o : outer) {
    const Outer* f = &o;
    const VarNode* v = f->var.get();
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
    std::string nm = f->var.name();
    if (nm.size() > 1 && nm[0] == 'v') nm = nm.substr(1);
    std::string n = fresh_var_name(st, "v" + nm + "_o");
    for (int k = 1; std::find(used.begin(), used.end(), n) != used.end(); ++k) n = fresh_var_name(st, "v" + nm + "_o" + std::to_string(k));
    used.push_back(n);
    Var iv(n, f->var.dtype());
    ivs.push_back(IterVar{iv, kind, f->extent});
    binds.push_back(is_zero(f->min) ? Expr(f->var) : fold(f->var - f->min));
    sub[v] = is_zero(f->min) ? Expr(iv) : fold(iv + f->min);
    if (uses_var(f->extent, [&](const VarNode* x) {
          for (auto& o2 : outer)
            if (o2.var.get() == x) return true;
          return false;
        }))
      refuse("the extent of " + f->var.name() + " depends on an enclosing loop");
  }
  Stmt body = substitute(ls, sub);
  std::string base = inner.size() == 1 ? block_of(inner[0])->name + "_o" : "blockized";
  std::string name = st.fresh_block_name(base);
  Stmt outer_block = make_simple_block(name, ivs, binds, body);
  st.replace(ls.get(), outer_block);
  bind_block(st, ins, 0, name);
}

}  // namespace tirc::sched

// decompose_padding(block, loop): TVM Schedule.decompose_padding. A padding block
// `P[v0, v1] = if_then_else(cond, value, pad)` (or select) becomes two blocks:
//   - `<block>_pad_const`, placed right before `loop`, in a copy of the loops from `loop`
//     down to the block: `P[v0, v1] = pad` over the whole region (returned handle);
//   - the block itself, which now stores `value` only where `cond` holds (a `where`
//     predicate; TVM shrinks the loops instead — same iterations run).
// Legal because the block writes each element of its region with the same branch (spatial iter
// vars used as the store indices, the condition over them only), `pad` reads no buffer, and
// nothing else writes the buffer between the two nests. `loop` may hold other statements (TVM's
// "lift the pad values to an outer loop": the fill then runs for all of `loop`'s iterations
// before them) when none of them writes the padded buffer: a pad element keeps its constant
// from the fill on, an in-bounds one gets its value from the copy where the block wrote it.
// Refused otherwise, with the reason.
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_decompose_padding(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  Stmt ls = arg_loop(st, ins, 1);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  auto path = st.path_to(bs.get());
  size_t at = path.size();
  for (size_t i = 0; i < path.size(); ++i)
    if (path[i].same_as(ls)) at = i;
  if (at == path.size()) refuse("loop " + loop_name(ls) + " is not an ancestor of block " + b->name);
  for (size_t i = at + 1; i + 1 < path.size(); ++i) {
    if (path[i].kind() == StmtKind::BlockRealize)
      refuse("block " + block_of(path[i])->name + " lies between loop " + loop_name(ls) + " and block " +
             b->name);
    // The fill copies only the loops: a let or if there would be dropped from it.
    if (path[i].kind() == StmtKind::LetStmt || path[i].kind() == StmtKind::IfThenElse)
      refuse("a statement other than a loop lies between loop " + loop_name(ls) + " and block " + b->name);
  }
  // The loops from `loop` down must hold only the block.
  Stmt excl = exclusive_root(st, bs);
  bool alone = false;
  for (auto& p : st.path_to(ls.get())) alone = alone || p.same_as(excl);
  if (b->init.defined()) refuse("block " + b->name + " is a reduction");
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial)
      refuse("block " + b->name + " has the " + iter_kind_name(iv.kind) + " iter var " + iv.var.name());
  auto* store = b->body.as<StoreNode>();
  const SelectNode* sel = store ? as_select_like(store->value) : nullptr;
  if (!sel)
    refuse("block " + b->name +
           " is not a padding block (its body must be one store of "
           "if_then_else(cond, value, pad_value))");
  std::vector<bool> used(b->iter_vars.size(), false);
  for (auto& ix : store->indices) {
    size_t k = 0;
    while (k < b->iter_vars.size() && b->iter_vars[k].var.get() != ix.get()) ++k;
    if (k == b->iter_vars.size() || used[k])
      refuse("the store of block " + b->name + " is not indexed by distinct iter vars");
    used[k] = true;
  }
  // The condition must depend on the stored element only (not on an iter var missing from the
  // indices), so that every write of one element takes the same branch.
  bool cond_other = uses_var(sel->cond, [&](const VarNode* v) {
    for (size_t k = 0; k < b->iter_vars.size(); ++k)
      if (b->iter_vars[k].var.get() == v) return !used[k];
    return false;
  });
  if (cond_other)
    refuse("the padding condition of block " + b->name +
           " depends on an iter var that does not index the store");
  // Lifted: the fill runs before statements of `loop` that may read the buffer; a pad element
  // must then hold nothing else before the pad block writes it, so no other block may write the
  // buffer, inside the loop or elsewhere (an earlier value would be read in the original).
  if (!alone)
    for (auto& o : collect_blocks(st.body(), true)) {
      if (o.same_as(bs) || o.same_as(st.body()) || !block_writes(*block_of(o), store->buffer)) continue;
      bool ancestor = false;  // a block around the pad block (its regions cover the pad block's)
      for (auto& p : path) ancestor = ancestor || p.same_as(o);
      if (ancestor) continue;
      bool inside = false;
      for (auto& p : st.path_to(o.get())) inside = inside || p.same_as(ls);
      refuse(inside ? "loop " + loop_name(ls) + " holds block " + block_of(o)->name + ", which also writes " +
                          store->buffer->name
                    : "block " + block_of(o)->name + " also writes " + store->buffer->name +
                          " (the pad values would be written before loop " + loop_name(ls) + ")");
    }
  bool pad_loads = false;
  for_each_expr(sel->f, [&](const Expr& e) { pad_loads = pad_loads || e.kind() == ExprKind::Load; });
  bool pad_iter = uses_var(sel->f, [&](const VarNode* v) {
    for (auto& iv : b->iter_vars)
      if (iv.var.get() == v) return true;
    return false;
  });
  if (pad_loads || pad_iter)
    refuse("the pad value " + print_expr(sel->f) + " of block " + b->name + " is not a constant");

  // The fill nest: copies of the loops from `loop` down, with fresh loop and iter vars.
  std::unordered_map<const VarNode*, Expr> lmap;
  std::vector<const ForNode*> fors;
  for (size_t i = at; i + 1 < path.size(); ++i)
    if (auto* f = path[i].as<ForNode>()) fors.push_back(f);
  std::vector<Var> nvars;
  for (auto* f : fors) {
    Var v(fresh_var_name(st, f->loop_var.name() + "_pad"), f->loop_var.dtype());
    nvars.push_back(v);
    lmap[f->loop_var.get()] = v;
  }
  std::unordered_map<const VarNode*, Expr> imap;
  std::vector<IterVar> ivs;
  for (auto& iv : b->iter_vars) {
    Var v(iv.var.name(), iv.var.dtype());
    imap[iv.var.get()] = v;
    ivs.push_back(IterVar{v, iv.kind, iv.extent});
  }
  std::vector<Expr> binds;
  for (auto& e : br->bindings) binds.push_back(substitute(e, lmap));
  std::vector<Expr> idx;
  for (auto& ix : store->indices) idx.push_back(substitute(ix, imap));
  std::string cname = st.fresh_block_name(b->name + "_pad_const");
  Expr pred = br->predicate.defined() ? substitute(br->predicate, lmap) : Expr();
  Stmt fill = make_simple_block(cname, ivs, binds, make_store(store->buffer, idx, sel->f), Stmt(), pred);
  for (size_t i = fors.size(); i-- > 0;) {
    auto* f = fors[i];
    fill = make_for(nvars[i], substitute(f->min, lmap), substitute(f->extent, lmap), ForKind::Serial, fill);
  }
  // The in-bounds copy: `where cond` (in loop vars) and the value alone.
  std::unordered_map<const VarNode*, Expr> bind_of;
  for (size_t k = 0; k < b->iter_vars.size(); ++k) bind_of[b->iter_vars[k].var.get()] = br->bindings[k];
  Expr cond = substitute(sel->cond, bind_of);
  Stmt copy = update_realize(bs, [&](BlockRealizeNode& r) {
    int64_t one = 0;
    bool trivial = !r.predicate.defined() || (is_const_int(r.predicate, &one) && one == 1);
    r.predicate = trivial ? cond : make_binary(BinOp::And, r.predicate, cond);
    r.block = update_block(r.block, [&](BlockNode& n) {
      n.body = make_store(store->buffer, store->indices, sel->t);
      std::vector<BufferRegion> reads, writes;
      infer_regions(n, &reads, &writes);
      n.reads = reads;
    });
  });
  Stmt new_loop = replace_stmt(ls, bs.get(), copy);
  st.replace(ls.get(), make_seq({fill, new_loop}));
  bind_block(st, ins, 0, cname);
}

}  // namespace tirc::sched

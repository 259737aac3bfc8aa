// reindex(block, ("read", k)): TVM Schedule.reindex, for read buffers. The block's one load
// `A[f(v)]` of the buffer becomes `A_reindex[vs]`, where vs are the block's iter vars the
// indices use (in the block's order) and A_reindex (shape: their extents) is filled by a new
// block `A_reindex` (returned) before the block's nest: `A_reindex[w] = A[f(w)]` — the
// im2col of a conv (`P[vn, vc, vy + vr, vx + vs]` becomes `P_reindex[vn, vy, vx, vc, vr, vs]`).
// The block then reads the buffer in the layout of its iteration space.
// Checked: the buffer is read (not written) by the block through exactly one load whose
// indices use only its iter vars (no pointer to it); the copy stays inside A for every point
// of the box (constant bounds, or an index that is an iter var of A's extent); every writer of
// A comes before the block's nest (the copy runs there). Written buffers (`("write", k)`) are
// refused: not implemented.
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/index_map.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_reindex(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  const ScheduleArg& a = ins.args[1];
  if (a.kind == ScheduleArg::List && a.list.size() == 2 && a.list[0].kind == ScheduleArg::String &&
      a.list[0].text == "write")
    refuse("reindex of a written buffer is not supported (only (\"read\", k))");
  Buffer A = block_buffer_arg(*b, a);
  if (block_writes(*b, A)) refuse("block " + b->name + " also writes buffer " + A->name);
  std::vector<const LoadNode*> loads;
  bool ptr = false;
  auto scan = [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(A)) loads.push_back(l);
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(A)) ptr = true;
  };
  for_each_expr(b->body, scan);
  if (b->init.defined()) for_each_expr(b->init, scan);
  if (ptr) refuse("buffer " + A->name + " is passed to call_extern in block " + b->name);
  if (loads.size() != 1)
    refuse("block " + b->name + " loads buffer " + A->name + " " + std::to_string(loads.size()) +
           " times (reindex needs exactly one load)");
  const LoadNode* ld = loads[0];
  std::vector<size_t> used;
  for (size_t k = 0; k < b->iter_vars.size(); ++k)
    for (auto& ix : ld->indices)
      if (uses_var(ix, b->iter_vars[k].var.get())) {
        used.push_back(k);
        break;
      }
  for (auto& ix : ld->indices)
    if (uses_var(ix, [&](const VarNode* v) {
          for (auto& iv : b->iter_vars)
            if (iv.var.get() == v) return false;
          return true;
        }))
      refuse("the load of " + A->name + " in block " + b->name + " uses other variables than its iter vars");
  if (used.empty())
    refuse("the load of " + A->name + " in block " + b->name + " does not depend on its iter vars");
  // The copy stays inside A at every point of the box.
  RangeMap rm;
  for (auto& iv : b->iter_vars) {
    int64_t e;
    if (is_const_int(iv.extent, &e)) rm[iv.var.get()] = IntRange{0, e - 1};
  }
  for (size_t d = 0; d < ld->indices.size(); ++d) {
    const Expr& ix = ld->indices[d];
    bool ok = false;
    int64_t n;
    auto bnd = const_bound(ix, rm);
    if (bnd && is_const_int(A->shape[d], &n)) ok = bnd->lo >= 0 && bnd->hi < n;
    for (auto& iv : b->iter_vars)
      if (iv.var.get() == ix.get() && expr_identical(iv.extent, A->shape[d])) ok = true;
    if (!ok)
      refuse("index " + std::to_string(d) + " of the load of " + A->name + " in block " + b->name +
             " may leave the buffer over the block's whole iteration space (the copy would read outside it)");
  }
  int first = root_position(st, top_item(st, bs.get()));
  if (first < 0) refuse("block " + b->name + " is not under the root block");
  for (auto& w : writers_of(st, A))
    if (root_position(st, top_item(st, w.get())) >= first)
      refuse("block " + block_of(w)->name + " writes " + A->name + " in or after the loop nest of block " +
             b->name + " (the copy runs before that nest)");
  std::vector<Expr> shape;
  for (auto k : used) shape.push_back(b->iter_vars[k].extent);
  Buffer R(st.fresh_buffer_name(A->name + "_reindex"), A->dtype, shape, "global");
  std::string cname = st.fresh_block_name(R->name);
  std::vector<std::string> names;
  for (size_t k = 0; k < used.size(); ++k) names.push_back("ax" + std::to_string(k));
  Stmt nest = make_nest(st, shape, names, [&](const std::vector<Var>& vs) {
    std::vector<IterVar> ivs;
    std::vector<Expr> binds, idx;
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t k = 0; k < used.size(); ++k) {
      const IterVar& old = b->iter_vars[used[k]];
      Var w(old.var.name(), old.var.dtype());
      ivs.push_back(IterVar{w, IterKind::Spatial, old.extent});
      binds.push_back(vs[k]);
      idx.push_back(w);
      sub[old.var.get()] = w;
    }
    std::vector<Expr> src;
    for (auto& ix : ld->indices) src.push_back(substitute(ix, sub));
    return make_simple_block(cname, ivs, binds, make_store(R, idx, make_load(A, src)));
  });
  std::vector<Expr> ridx;
  for (auto k : used) ridx.push_back(b->iter_vars[k].var);
  Stmt nb = update_realize(bs, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) {
      auto f = [&](const std::vector<Expr>&) { return make_load(R, ridx); };
      n.body = replace_loads(n.body, A, f);
      if (n.init.defined()) n.init = replace_loads(n.init, A, f);
      BufferRegion reg{R, {}};
      for (auto& e : ridx) reg.ranges.push_back(Range{e, Expr()});
      std::vector<BufferRegion> reads;
      bool placed = false;
      for (auto& x : n.reads) {
        if (!x.buffer.same_as(A)) {
          reads.push_back(x);
        } else if (!placed) {
          reads.push_back(reg);
          placed = true;
        }
      }
      if (!placed) reads.push_back(reg);
      n.reads = reads;
    });
  });
  st.replace(bs.get(), nb);
  insert_root_item(st, static_cast<size_t>(first), nest);
  st.add_root_alloc(R);
  refresh_enclosing_regions(st, b->name);
  bind_block(st, ins, 0, cname);
}

}  // namespace tirc::sched

// reindex(block, ("read", k)): TVM Schedule.reindex, for read buffers. The block's one load
// `A[f(v)]` of the buffer becomes `A_reindex[vs]`, where vs are the block's iter vars the
// indices use (in the block's order) and A_reindex (shape: their extents) is filled by a new
// block `A_reindex` (returned) before the block's nest: `A_reindex[w] = A[f(w)]` — the
// im2col of a conv (`P[vn, vc, vy + vr, vx + vs]` becomes `P_reindex[vn, vy, vx, vc, vr, vs]`).
// The block then reads the buffer in the layout of its iteration space.
// Checked: the buffer is read (not written) by the block through exactly one load whose
// indices use only its iter vars (no pointer to it); the copy stays inside A for every point
// of the box (constant bounds, or an index that is an iter var of A's extent); every writer of
// A comes before the block's nest (the copy runs there). Written buffers: reindex_write below.
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/index_map.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

// The copy between buffer A (accessed at `indices`, expressions of b's iter vars) and its
// reindex buffer *R (new: one dimension per iter var of `used`, indexed by them): a nest over
// R's shape with one block storing R[v] = A[indices(v)] (into_reindex, before b's nest) or
// A[indices(v)] = R[v] (the copy-back after it); *cname_out gets that block's name.
static Stmt copy_nest(ScheduleState& st, const BlockNode* b, const std::vector<size_t>& used, const Buffer& A,
                      const std::vector<Expr>& indices, bool into_reindex, Buffer* R,
                      std::string* cname_out) {
  std::vector<Expr> shape;
  for (auto k : used) shape.push_back(b->iter_vars[k].extent);
  *R = Buffer(st.fresh_buffer_name(A->name + "_reindex"), A->dtype, shape, "global");
  std::string cname = st.fresh_block_name((*R)->name);
  *cname_out = cname;
  std::vector<std::string> names;
  for (size_t k = 0; k < used.size(); ++k) names.push_back("ax" + std::to_string(k));
  return make_nest(st, shape, names, [&](const std::vector<Var>& vs) {
    std::vector<IterVar> ivs;
    std::vector<Expr> binds, ridx;
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t k = 0; k < used.size(); ++k) {
      const IterVar& old = b->iter_vars[used[k]];
      Var w(old.var.name(), old.var.dtype());
      ivs.push_back(IterVar{w, IterKind::Spatial, old.extent});
      binds.push_back(vs[k]);
      ridx.push_back(w);
      sub[old.var.get()] = w;
    }
    std::vector<Expr> aidx;
    for (auto& ix : indices) aidx.push_back(substitute(ix, sub));
    Stmt copy =
        into_reindex ? make_store(*R, ridx, make_load(A, aidx)) : make_store(A, aidx, make_load(*R, ridx));
    return make_simple_block(cname, ivs, binds, copy);
  });
}

// reindex(block, ("write", k)) (TVM's, for a written buffer): the block's stores (and the
// loads of the reduction update) `C[f(v)]` become `C_reindex[vs]`, vs the spatial iter vars the
// indices use, in the block's order; a new block `C_reindex` (returned) right after the block's
// nest copies back `C[f(w)] = C_reindex[w]` over the whole box. Checked: every access of C in
// the block (init included) uses the same indices, of iter vars only, spatial ones; every
// spatial iter var of extent > 1 is used (otherwise the block would store one element from
// several iterations); no `where` (the copy covers the whole box); the block does not
// accumulate into values of C it did not write (a read of C needs an init); no other block in
// the nest touches C (it would see C before the copy).
static void reindex_write(ScheduleState& st, const ScheduleInstr& ins, const Stmt& bs, const Buffer& C) {
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  std::vector<std::vector<Expr>> accesses;
  bool ptr = false, loads = false;
  auto scan = [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(C)) {
      accesses.push_back(l->indices);
      loads = true;
    }
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(C)) ptr = true;
  };
  bool conditional = false;
  int in_if = 0;
  std::function<void(const Stmt&)> stores = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* x = s.as<StoreNode>(); x && x->buffer.same_as(C)) {
      accesses.push_back(x->indices);
      conditional = conditional || in_if > 0;
    }
    bool is_if = s.kind() == StmtKind::IfThenElse;
    in_if += is_if;
    for (auto& c : children(s)) stores(c);
    in_if -= is_if;
  };
  for_each_expr(b->body, scan);
  stores(b->body);
  if (b->init.defined()) {
    for_each_expr(b->init, scan);
    stores(b->init);
  }
  if (ptr) refuse("buffer " + C->name + " is passed to call_extern in block " + b->name);
  if (!collect_blocks(b->body).empty()) refuse("block " + b->name + " holds other blocks");
  int64_t pv = 1;
  if (br->predicate.defined() && !(is_const_int(br->predicate, &pv) && pv == 1))
    refuse("block " + b->name + " has a predicate (where " + print_expr(br->predicate) +
           "): the copy-back would copy elements it does not write");
  if (conditional)
    refuse("block " + b->name + " stores " + C->name +
           " under a condition (the copy-back would copy elements " + "it does not write)");
  // Every point of the box runs (the copy-back covers it): `for j in serial(2, 6)` binding an
  // iter var of extent 6 leaves elements unwritten.
  {
    std::vector<LoopDom> lds;
    bool ok = true;
    for (auto& l : st.loops_above(bs.get())) {
      auto* f = l.as<ForNode>();
      ok = ok && is_zero(fold(f->min));
      lds.push_back(LoopDom{f->loop_var, f->extent});
    }
    std::vector<Expr> exts;
    for (auto& iv : b->iter_vars) exts.push_back(iv.extent);
    if (!ok || !bijective_bindings(br->bindings, exts, lds, br->predicate))
      refuse("block " + b->name + " does not run every point of its iteration domain once (the copy-back " +
             "covers the whole domain)");
  }
  if (loads && !b->init.defined())
    refuse("block " + b->name + " reads buffer " + C->name + " without an init (it accumulates into values " +
           "written before it, which " + C->name + "_reindex would not hold)");
  for (size_t k = 1; k < accesses.size(); ++k)
    for (size_t d = 0; d < accesses[0].size(); ++d)
      if (!expr_identical(accesses[k][d], accesses[0][d]))
        refuse("block " + b->name + " accesses buffer " + C->name + " at different indices");
  const std::vector<Expr>& idx = accesses.at(0);
  std::vector<size_t> used;
  for (size_t k = 0; k < b->iter_vars.size(); ++k) {
    bool u = false;
    for (auto& ix : idx) u = u || uses_var(ix, b->iter_vars[k].var.get());
    const IterVar& iv = b->iter_vars[k];
    if (u && iv.kind != IterKind::Spatial)
      refuse("the store of " + C->name + " in block " + b->name + " uses the " + iter_kind_name(iv.kind) +
             " iter var " + iv.var.name());
    if (!u && iv.kind == IterKind::Spatial && !is_one(fold(iv.extent)))
      refuse("the store of " + C->name + " in block " + b->name + " does not use the spatial iter var " +
             iv.var.name());
    if (u) used.push_back(k);
  }
  for (auto& ix : idx)
    if (uses_var(ix, [&](const VarNode* v) {
          for (auto& iv : b->iter_vars)
            if (iv.var.get() == v) return false;
          return true;
        }))
      refuse("the store of " + C->name + " in block " + b->name + " uses other variables than its iter vars");
  if (used.empty())
    refuse("the store of " + C->name + " in block " + b->name + " does not depend on its iter vars");
  int first = root_position(st, top_item(st, bs.get()));
  if (first < 0) refuse("block " + b->name + " is not under the root block");
  Stmt item = top_item(st, bs.get());
  for (auto& o : collect_blocks(item))
    if (!o.same_as(bs) && (block_reads(*block_of(o), C) || block_writes(*block_of(o), C)))
      refuse("block " + block_of(o)->name + " in the loop nest of block " + b->name + " touches buffer " +
             C->name + " (it would not see the values before the copy-back)");
  Buffer R;
  std::string cname;
  Stmt nest = copy_nest(st, b, used, C, idx, /*into_reindex=*/false, &R, &cname);
  // An empty reduction (`reduce(0)`, or a symbolic extent 0 at run time) runs no point of
  // the block, its init included: the copy-back then copies nothing (it read an
  // uninitialised C_reindex before).
  std::vector<Expr> nonempty;
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial && !prove_lt(make_int(0, iv.extent.dtype()), iv.extent))
      nonempty.push_back(fold(make_binary(BinOp::LT, make_int(0, iv.extent.dtype()), iv.extent)));
  if (!nonempty.empty()) nest = add_predicate_below(nest, make_and(nonempty));
  std::vector<Expr> ridx;
  for (auto k : used) ridx.push_back(b->iter_vars[k].var);
  Stmt nb = update_realize(bs, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) {
      n.body = replace_buffer(n.body, C, R);
      if (n.init.defined()) n.init = replace_buffer(n.init, C, R);
      // The accesses now index R by the iter vars.
      auto f = [&](const std::vector<Expr>&) { return make_load(R, ridx); };
      n.body = replace_loads(n.body, R, f);
      struct StoreFix : IRMutator {
        const Buffer* R;
        const std::vector<Expr>* idx;
        Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
          Stmt t = IRMutator::mutate_store(n, s);
          auto* x = t.as<StoreNode>();
          if (x && x->buffer.same_as(*R)) return make_store(*R, *idx, x->value);
          return t;
        }
      } sf;
      sf.R = &R;
      sf.idx = &ridx;
      n.body = sf.mutate(n.body);
      if (n.init.defined()) n.init = sf.mutate(n.init);
      BufferRegion reg{R, {}};
      for (auto& e : ridx) reg.ranges.push_back(Range{e, Expr()});
      auto swap = [&](const std::vector<BufferRegion>& rs) {
        std::vector<BufferRegion> out;
        for (auto& x : rs) out.push_back(x.buffer.same_as(C) ? reg : x);
        return out;
      };
      n.reads = swap(n.reads);
      n.writes = swap(n.writes);
    });
  });
  st.replace(bs.get(), nb);
  insert_root_item(st, static_cast<size_t>(first) + 1, nest);
  st.add_root_alloc(R);
  refresh_enclosing_regions(st, b->name);
  bind_block(st, ins, 0, cname);
}

void prim_reindex(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  const ScheduleArg& a = ins.args[1];
  Buffer A = block_buffer_arg(*b, a);
  if (block_writes(*b, A)) return reindex_write(st, ins, bs, A);
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
  // The copy reads A over the block's whole iteration box (found by the fuzzer: reindex of the
  // write-back of rev_cumsum's rfactor, whose rf buffer is written only where `i + k < 7`).
  check_writers_cover(st, A, "the copy over the iteration space of block " + b->name, b, &ld->indices);
  Buffer R;
  std::string cname;
  Stmt nest = copy_nest(st, b, used, A, ld->indices, /*into_reindex=*/true, &R, &cname);
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

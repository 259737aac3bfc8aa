// reverse_compute_inline(block): TVM Schedule.reverse_compute_inline. Moves the computation
// of a consumer block C (`Y[...] = g(X[v...], ...)`) into its producer B
// (`X[u...] = f(...)`), which then stores Y directly; C and X disappear. Legal when:
// C is spatial with one store, all its loads of X use the same indices, which are distinct
// iter vars covering all of C's iter vars but those of extent 1 (which become 0); B is
// spatial with one store to distinct iter vars and its domain equals or contains C's (the
// inlined store is then guarded by C's extents), so every Y element is written exactly once
// (predicates only as bound guards of non-dividing splits) -- or else B's store and C's load
// are both one-to-one onto the same box of X (affine maps: C's iter vars are inverted from
// B's; C's domain may be widened to make its load onto the box, the store then guarded);
// X is intermediate, written only by B and read only by C; Y is written only by C and not
// read before C; what C reads besides X is not written between B and C.
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_reverse_compute_inline(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt cs = arg_block(st, ins, 0);
  const BlockRealizeNode* cr = realize(cs);
  const BlockNode* c = cr->block.get();
  if (is_reduction_block(*c)) refuse("block " + c->name + " is a reduction");
  for (auto& iv : c->iter_vars)
    if (iv.kind != IterKind::Spatial)
      refuse("block " + c->name + " has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
             iv.var.name());
  if (!collect_blocks(c->body).empty()) refuse("block " + c->name + " has nested blocks");
  Stmt cflat = flat_store(*c);  // lets become let expressions (gradient blocks)
  const StoreNode* cstore = cflat.as<StoreNode>();
  const Buffer& Y = cstore->buffer;
  if (!c->allocs.empty()) refuse("block " + c->name + " allocates buffers");
  // The producer: the single writer of the one intermediate buffer C reads from a block.
  std::vector<std::pair<Buffer, Stmt>> cands;
  for (auto& buf : read_buffers(*c)) {
    auto ws = writers_of(st, buf, c);
    if (ws.empty()) continue;
    cands.emplace_back(buf, ws[0]);
    if (ws.size() > 1) refuse("buffer " + buf->name + " read by block " + c->name + " has several producers");
  }
  if (cands.empty()) refuse("block " + c->name + " has no producer block");
  if (cands.size() > 1)
    refuse("block " + c->name + " reads buffers of several producers (" + cands[0].first->name + ", " +
           cands[1].first->name + ")");
  Buffer X = cands[0].first;
  Stmt bs = cands[0].second;
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  if (st.is_param(X)) refuse("buffer " + X->name + " is a parameter or output of the function");
  if (is_reduction_block(*b)) refuse("the producer block " + b->name + " is a reduction");
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial) refuse("the producer block " + b->name + " has a non-spatial iter var");
  if (!collect_blocks(b->body).empty()) refuse("the producer block " + b->name + " has nested blocks");
  Stmt bflat = flat_store(*b);
  const StoreNode* bstore = bflat.as<StoreNode>();
  if (!bstore->buffer.same_as(X)) refuse("the producer block " + b->name + " does not store to " + X->name);
  auto plain_iter_vars = [](const BlockNode& blk, const std::vector<Expr>& idx) {
    for (size_t k = 0; k < idx.size(); ++k) {
      auto* v = idx[k].as<VarNode>();
      bool iv = false;
      for (auto& x : blk.iter_vars) iv = iv || x.var.get() == v;
      for (size_t j = 0; j < k; ++j) iv = iv && idx[j].get() != idx[k].get();
      if (!v || !iv) return false;
    }
    return true;
  };
  const bool bplain = plain_iter_vars(*b, bstore->indices);
  std::vector<int> bivs;
  if (bplain) bivs = index_vars(*b, bstore->indices, "the store");
  if (body_reads(*b, X)) refuse("the producer block " + b->name + " reads buffer " + X->name);
  auto other_readers = readers_of(st, X, c);
  for (auto& r : other_readers)
    if (!r.same_as(bs)) refuse("buffer " + X->name + " is also read by block " + block_of(r)->name);
  // C's loads of X: identical distinct iter vars covering all C iter vars.
  std::vector<Expr> load_idx;
  bool mismatch = false, ptr = false;
  for_each_expr(cstore->value, [&](const Expr& e) {
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(X)) ptr = true;
    auto* l = e.as<LoadNode>();
    if (!l || !l->buffer.same_as(X)) return;
    if (load_idx.empty())
      load_idx = l->indices;
    else
      for (size_t k = 0; k < load_idx.size(); ++k)
        mismatch = mismatch || !expr_identical(load_idx[k], l->indices[k]);
  });
  for (auto& i : cstore->indices)
    for_each_expr(i, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(X)) mismatch = true;
    });
  if (ptr) refuse("block " + c->name + " passes a pointer to buffer " + X->name);
  if (mismatch) refuse("block " + c->name + " loads buffer " + X->name + " at different indices");
  // The store of B and the load of C as maps s: dom(B) -> X and h: dom(C) -> X. Plain distinct
  // iter vars on both sides: the identity up to the order of the dimensions (checked below).
  // Otherwise both must be one-to-one onto the same box of X (B's extents when s is plain,
  // else X's shape): TVM's iter-map reading of `B[(vi * 32 + vj * 8 + vl) // 16, ... % 16]`,
  // `B[vi * 4 + vj, vk]`, and of a producer that an earlier reverse_compute_inline left storing
  // `C[vi // 4, vi % 4, vj]` (test_reverse_compute_inline_affine_chain). Then each point u of B
  // writes the element the one point h^-1(s(u)) of C reads: C's iter vars become h^-1(s(u)).
  std::vector<int> civs;
  std::optional<std::unordered_map<const VarNode*, Expr>> inverse;
  std::vector<Expr> guards;  // the inlined store runs where these hold (C reads part of X)
  if (!bplain || !plain_iter_vars(*c, load_idx)) {
    auto domain = [](const BlockNode& blk) {
      std::vector<LoopDom> d;
      for (auto& iv : blk.iter_vars) d.push_back(LoopDom{iv.var, iv.extent});
      return d;
    };
    std::vector<Expr> box;
    if (bplain)
      for (int k : bivs) box.push_back(b->iter_vars[static_cast<size_t>(k)].extent);
    else
      box = X->shape;
    std::vector<Expr> sidx, h;
    for (auto& e : bstore->indices) sidx.push_back(fold(e));
    for (auto& e : load_idx) h.push_back(fold(e));
    bool ok_dims = box.size() == sidx.size() && box.size() == h.size();
    for (auto& e : box) ok_dims = ok_dims && e.defined();
    if (!bplain && (!ok_dims || !bijective_bindings(sidx, box, domain(*b), Expr())))
      refuse("the indices of the store in block " + b->name + " are not distinct iter vars");
    // A load one-to-one onto the box over a widened domain (C reads part of what B computes:
    // TVM's test_reverse_compute_inline_overcomputed_producer_injective_load) is inverted
    // there; the inlined store then runs only where the inverse lies in C's own domain.
    std::optional<std::vector<LoopDom>> cdom = domain(*c);
    if (ok_dims && !bijective_bindings(h, box, *cdom, Expr())) {
      cdom = widened_domain(h, box, *cdom);
      if (cdom && !bijective_bindings(h, box, *cdom, Expr())) cdom.reset();
    }
    if (ok_dims && cdom) {
      std::vector<Var> xs;
      for (size_t k = 0; k < box.size(); ++k) xs.push_back(Var("x" + std::to_string(k), box[k].dtype()));
      inverse = invert_bindings(h, xs, box, *cdom, Expr());
      std::unordered_map<const VarNode*, Expr> at_s;
      for (size_t k = 0; k < xs.size(); ++k) at_s[xs[k].get()] = sidx[k];
      if (inverse)
        for (auto& [v, e] : *inverse) e = fold(substitute(e, at_s));
      for (size_t k = 0; inverse && k < cdom->size(); ++k) {
        const Expr& ext = c->iter_vars[k].extent;
        if (prove_eq((*cdom)[k].extent, ext)) continue;
        auto it = inverse->find(c->iter_vars[k].var.get());
        if (it == inverse->end()) {
          inverse.reset();
          break;
        }
        guards.push_back(make_binary(BinOp::LT, it->second, ext));
      }
    }
  }
  if (!inverse && !bplain)
    refuse("the load of " + X->name + " in block " + c->name + " does not read each element that block " +
           b->name + " stores exactly once");
  if (!inverse) civs = index_vars(*c, load_idx, "the load of " + X->name);
  // An iter var the load does not use is allowed when its extent is 1 (TVM's
  // test_reverse_compute_inline_affine_chain: `D[vi, vj, vk, vl] = C[vj, vk, vl]` with vi of
  // extent 1): it takes the value 0 in the inlined store. Any larger one would store the same
  // value at several elements of Y, which the producer's one iteration per element cannot do.
  std::vector<const VarNode*> unit_ivs;
  for (size_t i = 0; i < c->iter_vars.size() && !inverse; ++i)
    if (std::find(civs.begin(), civs.end(), static_cast<int>(i)) == civs.end()) {
      if (!is_one(fold(c->iter_vars[i].extent)))
        refuse("the load of " + X->name + " in block " + c->name +
               " does not use every iter var of the block");
      unit_ivs.push_back(c->iter_vars[i].var.get());
    }
  if (body_reads(*c, Y)) refuse("block " + c->name + " reads buffer " + Y->name + ", which it writes");
  // Domains: both complete (no predicate, bijective bindings) and equal through the indices.
  auto complete = [&](const Stmt& s) {
    const BlockRealizeNode* r = realize(s);
    std::vector<LoopDom> loops;
    // A loop over [min, min + extent) (loop_partition, hand-written `serial(lo, hi)`) is seen
    // as a 0-based loop l' with l = l' + min: the bindings cover the domain once over the one
    // exactly when they do over the other.
    std::unordered_map<const VarNode*, Expr> rebase;
    for (auto& l : st.loops_above(s.get())) {
      auto* f = l.as<ForNode>();
      if (is_zero(f->min)) {
        loops.push_back(LoopDom{f->loop_var, f->extent});
        continue;
      }
      Var z(f->loop_var.name() + "_0", f->loop_var.dtype());
      rebase[f->loop_var.get()] = z + f->min;
      loops.push_back(LoopDom{z, f->extent});
    }
    std::vector<Expr> bindings;
    for (auto& e : r->bindings) bindings.push_back(rebase.empty() ? e : fold(substitute(e, rebase)));
    Expr predicate = rebase.empty() ? r->predicate : substitute(r->predicate, rebase);
    std::vector<Expr> exts;
    for (auto& iv : r->block->iter_vars) exts.push_back(iv.extent);
    // A predicate made only of bound guards `binding < extent` (a non-dividing split of the
    // block's loops) skips no point of the domain, only the overshoot past its end.
    for (auto& cj : conjuncts(fold(predicate))) {
      auto* lt = cj.as<BinaryNode>();
      bool guard = false;
      for (size_t i = 0; lt && lt->op == BinOp::LT && i < exts.size() && !guard; ++i) {
        guard = prove_eq(lt->a, bindings[i]) && prove_eq(lt->b, exts[i]);
        // A fuse-then-split guards the fused iterator F instead: `F < c * k` for the binding
        // `F // c` of extent k (the same bound, which bijective_bindings reads as F's extent).
        Expr bf = fold(bindings[i]);  // kept alive: dv points into it
        auto* dv = bf.as<BinaryNode>();
        if (!guard && dv && dv->op == BinOp::FloorDiv)
          guard = prove_eq(lt->a, dv->a) && prove_eq(lt->b, fold(dv->b * exts[i]));
      }
      if (!guard) return false;
    }
    return bijective_bindings(bindings, exts, loops, predicate);
  };
  if (!complete(bs))
    refuse("the producer block " + b->name + " does not cover its iteration domain exactly once");
  if (!complete(cs)) refuse("block " + c->name + " does not cover its iteration domain exactly once");
  // A producer that computes more than C reads (TVM's
  // test_reverse_compute_inline_overcomputed_producer: B over 16 x 16, C over 15 x 15): each
  // element C reads is still written by exactly one point of B, so the inlined store runs at
  // those points only, under `if u < extent of C` (as TVM's guard); the other points of B
  // computed elements of X nobody reads (X is removed). C's domain larger than B's would read
  // elements B never writes: refused.
  for (size_t k = 0; k < bivs.size() && !inverse; ++k) {
    const Expr& eb = b->iter_vars[bivs[k]].extent;
    const Expr& ec = c->iter_vars[civs[k]].extent;
    if (prove_eq(eb, ec)) continue;
    if (!prove_le(ec, eb))
      refuse("the domains of blocks " + b->name + " and " + c->name + " differ in dimension " +
             std::to_string(k) + " of buffer " + X->name);
    const Var& u = b->iter_vars[bivs[k]].var;
    guards.push_back(make_binary(BinOp::LT, u, ec.dtype() == u.dtype() ? ec : make_cast(u.dtype(), ec)));
  }
  if (bplain && bivs.size() != b->iter_vars.size())  // s one-to-one (the affine path: checked above)
    refuse("the store of the producer block " + b->name + " does not use every iter var");
  auto ys = writers_of(st, Y, c);
  if (!ys.empty()) refuse("buffer " + Y->name + " is also written by block " + block_of(ys[0])->name);
  auto order = blocks_in_order(st);
  for (auto& r : readers_of(st, Y, c))
    if (block_index(order, r) < block_index(order, cs) ||
        top_item(st, r.get()).same_as(top_item(st, cs.get())))
      refuse("block " + block_of(r)->name + " reads buffer " + Y->name + " before block " + c->name +
             " writes it");
  check_inputs_stable(st, *c, bs, cs);
  for (auto& in : read_buffers(*b))
    if (block_writes(*c, in))
      refuse("block " + c->name + " writes buffer " + in->name + ", which block " + b->name + " reads");
  // New producer body: Y[idx_C(v_C := u_B)] = g(f, ...).
  std::unordered_map<const VarNode*, Expr> sub;
  for (size_t k = 0; k < civs.size(); ++k) sub[c->iter_vars[civs[k]].var.get()] = b->iter_vars[bivs[k]].var;
  if (inverse) sub = *inverse;
  for (auto* v : unit_ivs) sub[v] = make_int(0, v->dtype);
  std::set<std::string> let_names;
  Expr value = rename_lets(st, substitute(cstore->value, sub), &let_names);
  value = replace_loads(value, X,
                        [&](const std::vector<Expr>&) { return rename_lets(st, bstore->value, &let_names); });
  std::vector<Expr> yidx;
  for (auto& i : cstore->indices) yidx.push_back(fold(substitute(i, sub)));
  Stmt nb = update_realize(bs, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) {
      n.body = make_store(Y, yidx, value);
      if (!guards.empty()) n.body = make_if(make_and(guards), n.body);
      std::vector<BufferRegion> rd, wr;
      infer_regions(n, &rd, &wr);
      n.reads = merge_regions(n.reads, rd);
      n.reads = without(n.reads, X);
      n.writes = wr;
    });
  });
  ScheduleState tmp = st;
  tmp.replace(bs.get(), nb);
  Stmt victim = exclusive_root(tmp, tmp.find_block(c->name));
  tmp.replace(victim.get(), Stmt());
  remove_alloc_if_unused(tmp, X);
  refresh_enclosing_regions(tmp, b->name);
  st.set_body(tmp.body());
}

}  // namespace tirc::sched

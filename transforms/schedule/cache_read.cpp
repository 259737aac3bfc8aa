// cache = cache_read(block, read_index, "scope"[, consumer_blocks]): TVM
// Schedule.cache_read. Copies the whole buffer read by `block` (read_index counts the block's
// read regions of buffers it does not also write, as TVM lists reads; or the buffer's name)
// into a new buffer "<A>_<scope>" in a new block placed, at the top level, after every writer
// of A and before its first reader; every reader of A that does not also write it (with
// consumer_blocks, a block or a list of blocks: those readers only) then reads the copy. Legal when A is not
// written by its readers and no loop nest both writes and reads A (the copy must sit between them),
// or the copy goes inside such a nest (cache_read_in_loop); readers after that nest then keep
// reading A, or (when `block` is one of them) read a top-level copy while the nest keeps A.
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

std::optional<SymRange> hull(const std::optional<SymRange>& a, const std::optional<SymRange>& b) {
  if (!a || !b) return std::nullopt;
  auto dl = to_linear(fold(a->lo - b->lo)), dh = to_linear(fold(a->hi - b->hi));
  if (!dl || !dh || !dl->terms.empty() || !dh->terms.empty()) return std::nullopt;
  return SymRange{dl->c <= 0 ? a->lo : b->lo, dh->c >= 0 ? a->hi : b->hi};
}

void check_no_pointers(const std::vector<Stmt>& readers, const Buffer& A) {
  for (auto& r : readers) {
    bool ptr = false;
    const BlockNode* rb = block_of(r);
    auto f = [&](const Expr& e) {
      if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(A)) ptr = true;
    };
    if (rb->init.defined()) for_each_expr(rb->init, f);
    for_each_expr(rb->body, f);
    if (ptr) refuse("block " + rb->name + " passes a pointer to buffer " + A->name);
  }
}

// A writer of A shares the readers' loop nest (e.g. compute_at moved the producer under the
// consumer's loop): as TVM's CacheLocDetector, the copy goes into the innermost loop L holding
// every reader and a writer, right before the first body item of L with a reader, and copies the region
// the readers read in one iteration of L. Legal when no writer of A sits in the items of L's
// body from the first to the last one with a reader: then between the copy and the reads of
// the same iteration nothing changes A (other writers run before the copy or after the
// iteration's reads).
void cache_read_in_loop(ScheduleState& st, const ScheduleInstr& ins, const Buffer& A,
                        const std::string& scope, const std::vector<Stmt>& readers,
                        const std::vector<Stmt>& writers) {
  const std::string why =
      "buffer " + A->name + " is written after (or in the same loop nest as) one of its readers";
  std::vector<Stmt> common;
  for (size_t k = 0; k < readers.size(); ++k) {
    if (st.scope_of(readers[k].get()).get() != st.body().get()) refuse(why);
    auto ls = st.loops_above(readers[k].get());
    if (k == 0) {
      common = ls;
      continue;
    }
    size_t n = 0;
    while (n < common.size() && n < ls.size() && common[n].same_as(ls[n])) ++n;
    common.resize(n);
  }
  if (common.empty()) refuse(why);
  // The deepest of these loops that also holds a writer (TVM places the copy after the last
  // writer in the readers' scope): the copy then covers what the writer just produced.
  Stmt L = common.back();
  for (size_t k = common.size(); k-- > 0;) {
    bool has_writer = false;
    for (auto& w : writers) has_writer = has_writer || !find_path(common[k], w.get()).empty();
    if (has_writer) {
      L = common[k];
      break;
    }
  }
  auto items = seq_items(L.as<ForNode>()->body);
  size_t first = items.size(), last = 0;
  for (size_t k = 0; k < items.size(); ++k)
    for (auto& r : readers)
      if (!find_path(items[k], r.get()).empty()) first = std::min(first, k), last = std::max(last, k);
  for (size_t k = first; k <= last; ++k)
    for (auto& w : writers)
      if (!find_path(items[k], w.get()).empty())
        refuse("block " + block_of(w)->name + " writes buffer " + A->name + " in loop " + loop_name(L) +
               " between (or in the same loop nest as) its readers");
  check_no_pointers(readers, A);
  // Region read in one iteration of L (whole dimension when unknown or of varying size).
  std::vector<std::optional<SymRange>> need(A->ndim());
  bool firstr = true;
  for (auto& r : readers) {
    bool declared = false;
    for (auto& reg : block_of(r)->reads) {
      if (!reg.buffer.same_as(A)) continue;
      declared = true;
      auto g = region_under_loop(L, r, reg);
      if (firstr)
        need = g;
      else
        for (size_t d = 0; d < need.size(); ++d) need[d] = hull(need[d], g[d]);
      firstr = false;
    }
    if (!declared) refuse("block " + block_of(r)->name + " does not declare its reads of " + A->name);
  }
  auto above = st.loops_above(L.get());
  above.push_back(L);
  RangeMap known = const_ranges(above);
  std::unordered_set<const VarNode*> loop_vars;
  for (auto& l : collect_loops(st.body())) loop_vars.insert(l.as<ForNode>()->loop_var.get());
  Buffer cache(st.fresh_buffer_name(A->name + "_" + scope), A->dtype, A->shape, scope);
  std::string bname = st.fresh_block_name(cache->name);
  std::vector<Expr> exts, los;
  for (size_t d = 0; d < A->ndim(); ++d) {
    DType t = A->shape[d].dtype();
    Expr ext_m1 = fold(A->shape[d] - make_int(1, t));
    SymRange rg = need[d] ? *need[d] : SymRange{make_int(0, t), ext_m1};
    Expr ext = fold(rg.hi - rg.lo + make_int(1, t));
    if (uses_var(ext, [&](const VarNode* v) { return loop_vars.count(v) > 0; }))
      rg = SymRange{make_int(0, t), ext_m1}, ext = A->shape[d];
    need[d] = rg;
    exts.push_back(ext);
    los.push_back(rg.lo);
  }
  // Everything copied must have been written when the copy runs (found by the fuzzer: after a
  // fuse of the readers' loops their region is unknown, the copy took whole dimensions and
  // read rows a compute_at producer writes only in later iterations). A writer in L before the
  // copy must have written, in the same iteration, every element of the copied region (a pure
  // spatial writer whose exact hull, clipped to the buffer, holds it: deps.h).
  for (auto& w : writers) {
    bool before = false;
    for (size_t k = 0; k < first && k < items.size(); ++k)
      before = before || items[k].same_as(w) || !find_path(items[k], w.get()).empty();
    if (!before) continue;
    BufferRegion wreg;
    for (auto& r : block_of(w)->writes)
      if (r.buffer.same_as(A)) wreg = r;
    if (!wreg.buffer.defined() || !region_inside_written(st, L, w, wreg, need))
      refuse("the region of " + A->name + " read in one iteration of loop " + loop_name(L) +
             " is not known to be written by block " + block_of(w)->name + " in that iteration");
  }
  std::vector<Var> nvars;
  std::vector<IterVar> ivs;
  std::vector<Expr> binds, idxs, preds;
  for (size_t d = 0; d < A->ndim(); ++d) {
    DType t = A->shape[d].dtype();
    Var ax(fresh_var_name(st, "ax" + std::to_string(d)), t);
    for (auto& v : nvars)
      if (v.name() == ax.name())
        ax = Var(fresh_var_name(st, "ax" + std::to_string(d) + "_" + std::to_string(d)), t);
    nvars.push_back(ax);
    Var v("v" + std::to_string(d), t);
    ivs.push_back(IterVar{v, IterKind::Spatial, A->shape[d]});
    Expr value = is_one(exts[d]) ? los[d] : fold(los[d] + ax);
    binds.push_back(value);
    idxs.push_back(v);
    if (!prove_le(make_int(0, t), need[d]->lo, known))
      preds.push_back(make_binary(BinOp::LE, make_int(0, t), value));
    if (!prove_le(need[d]->hi, fold(A->shape[d] - make_int(1, t)), known))
      preds.push_back(make_binary(BinOp::LT, value, A->shape[d]));
  }
  // Iterations of L in which no reader runs need no copy, and copying there may read what is
  // not written yet (found by the fuzzer, seed 305: rnn_tanh's scan loop split by a factor
  // that overshoots, `a0 * 3 + a1 + a2 < 4`; the copy of H[t - 1] at the skipped iteration t = 5
  // of the first tile read H[4], written only in the next tile). The conjuncts of the
  // readers' `where` that every reader has and that use only the loops at and above L hold
  // for the whole iteration: the copy gets them too.
  {
    std::unordered_set<const VarNode*> outer;
    for (auto& l : above) outer.insert(l.as<ForNode>()->loop_var.get());
    std::vector<Expr> common_pred;
    bool firstp = true;
    for (auto& r : readers) {
      const Expr& rp = realize(r)->predicate;
      std::vector<Expr> cs = rp.defined() ? conjuncts(fold(rp)) : std::vector<Expr>{};
      if (firstp) {
        for (auto& c : cs) {
          bool loads = false;
          for_each_expr(c, [&](const Expr& e) { loads = loads || e.as<LoadNode>() != nullptr; });
          if (!loads && !uses_var(c, [&](const VarNode* v) { return !outer.count(v); }))
            common_pred.push_back(c);
        }
        firstp = false;
      } else {
        std::erase_if(common_pred, [&](const Expr& c) {
          return std::none_of(cs.begin(), cs.end(), [&](const Expr& o) { return expr_identical(o, c); });
        });
      }
    }
    for (auto& c : common_pred) preds.push_back(c);
  }
  Stmt nest = make_simple_block(bname, ivs, binds, make_store(cache, idxs, make_load(A, idxs)), Stmt(),
                                preds.empty() ? Expr() : make_and(preds));
  for (size_t d = nvars.size(); d-- > 0;)
    if (!is_one(exts[d]))
      nest = make_for(nvars[d], make_int(0, exts[d].dtype()), exts[d], ForKind::Serial, nest);
  Stmt body = st.body();
  for (auto& r : readers) body = replace_stmt(body, r.get(), replace_buffer(r, A, cache));
  st.set_body(body);
  Stmt lnow = st.find_loop(L.as<ForNode>()->loop_var.get());
  auto now = seq_items(lnow.as<ForNode>()->body);
  now.insert(now.begin() + static_cast<long>(first), nest);
  st.replace(lnow.get(), with_body(lnow, make_seq(now)));
  st.add_root_alloc(cache);
  for (auto& r : readers) refresh_enclosing_regions(st, block_of(r)->name);
  bind_block(st, ins, 0, bname);
}

}  // namespace

void prim_cache_read(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 4);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  // TVM accepts the index in the block's read regions or the buffer's name. The index counts
  // the read regions of buffers the block does not also write: TVM does not list the output
  // of a reduction update (C in `C = C + A * B`) among its reads, so index 0 is A there.
  std::vector<Buffer> cands;
  for (auto& r : b->reads)
    if (!block_writes(*b, r.buffer)) cands.push_back(r.buffer);
  Buffer A;
  if (ins.args.size() > 1 && ins.args[1].kind == ScheduleArg::String) {
    for (size_t r = 0; r < b->reads.size() && !A.defined(); ++r)
      if (b->reads[r].buffer->name == ins.args[1].text) A = b->reads[r].buffer;
    if (!A.defined()) refuse("block " + b->name + " does not read a buffer named " + ins.args[1].text);
  } else {
    int64_t idx = arg_int(ins, 1, "the read buffer index");
    if (idx < 0 || idx >= static_cast<int64_t>(cands.size()))
      refuse("block " + b->name + " has " + std::to_string(cands.size()) + " read region" +
             (cands.size() == 1 ? "" : "s") + " of buffers it does not write; index " + std::to_string(idx) +
             " is out of range");
    A = cands[static_cast<size_t>(idx)];
  }
  std::string scope = cache_scope(ins, 2);
  if (block_writes(*b, A)) refuse("block " + b->name + " also writes buffer " + A->name);
  for (auto& blk : blocks_in_order(st))
    for (auto& a : block_of(blk)->allocs)
      if (a.same_as(A) && !blk.same_as(st.body()))
        refuse("buffer " + A->name + " is allocated inside block " + block_of(blk)->name);
  auto readers = readers_of(st, A);
  auto writers = writers_of(st, A);
  if (readers.empty())
    refuse("no block loads buffer " + A->name + " (block " + b->name + " only declares it)");
  // TVM's consumer_blocks: only these readers read the cache (default: every reader).
  if (ins.args.size() == 4) {
    std::vector<ScheduleArg> items;
    if (ins.args[3].kind == ScheduleArg::List)
      items = ins.args[3].list;
    else
      items.push_back(ins.args[3]);
    if (items.empty()) refuse("consumer_blocks is empty");
    std::vector<Stmt> chosen;
    for (auto& it : items) {
      ScheduleInstr one = ins;
      one.args = {it};
      Stmt c = arg_block(st, one, 0);
      bool reads = false;
      for (auto& r : readers) reads = reads || r.same_as(c);
      if (!reads) refuse("consumer block " + block_of(c)->name + " does not read buffer " + A->name);
      bool dup = false;
      for (auto& x : chosen) dup = dup || x.same_as(c);
      if (!dup) chosen.push_back(c);
    }
    std::vector<Stmt> kept;
    for (auto& r : readers)
      for (auto& c : chosen)
        if (r.same_as(c)) kept.push_back(r);
    readers = kept;
  } else {
    // A block that writes A itself (a scan reading its previous step, an in-place update)
    // cannot read a copy made after its own writes: it keeps reading A, as a writer, and the
    // copy goes after it (TVM's default consumers are the blocks that only read A).
    std::vector<Stmt> kept;
    for (auto& r : readers)
      if (!block_writes(*block_of(r), A)) kept.push_back(r);
    readers = kept;
  }
  int first_reader = 1 << 30, last_writer = -1;
  for (auto& r : readers)
    if (root_position(st, top_item(st, r.get())) < 0)
      refuse("reader " + block_of(r)->name + " is not under the root block");
  for (auto& w : writers) last_writer = std::max(last_writer, root_position(st, top_item(st, w.get())));
  // Readers split between the last writer's loop nest (or before it) and later top-level items
  // (TVM's test_cache_read_location: B beside A in loop i, C after the loop): the copy serves
  // the group of `block` (the copy inside the loop, or one top-level copy after the last
  // writer); the other group keeps reading A, which cache_read leaves unchanged and which holds
  // the same values. (TVM lets C read the cache, filled piecewise in the loop.)
  {
    // Only when the early group is all in the last writer's nest (a reader before it, between
    // two writers, stays refused as before: Outsider9.CacheReadSkipsReadersThatWriteTheBuffer).
    std::vector<Stmt> nest, after;
    bool block_after = false, between = false;
    for (auto& r : readers) {
      int p = root_position(st, top_item(st, r.get()));
      (p > last_writer ? after : nest).push_back(r);
      if (p > last_writer && r.same_as(bs)) block_after = true;
      if (p < last_writer) between = true;
    }
    if (!nest.empty() && !after.empty() && !between) readers = block_after ? after : nest;
  }
  for (auto& r : readers) first_reader = std::min(first_reader, root_position(st, top_item(st, r.get())));
  if (last_writer >= first_reader) {
    cache_read_in_loop(st, ins, A, scope, readers, writers);
    return;
  }
  check_no_pointers(readers, A);
  // The copy reads the whole buffer. A writer of an alloc under a `where` that skips points of
  // its domain (not just a bound guard `binding < extent` of a non-dividing split) leaves
  // elements unwritten, which the copy would read uninitialised (found by the fuzzer: rfactor of
  // the triangular `where ax1 >= k` of rev_cumsum's gradient, then cache_read of the rf buffer).
  check_writers_cover(st, A, "the copy of the whole buffer");
  Buffer cache(st.fresh_buffer_name(A->name + "_" + scope), A->dtype, A->shape, scope);
  std::string bname = st.fresh_block_name(cache->name);
  std::vector<std::string> names;
  for (size_t d = 0; d < A->ndim(); ++d) names.push_back("ax" + std::to_string(d));
  Stmt nest = make_nest(st, A->shape, names, [&](const std::vector<Var>& vs) {
    std::vector<IterVar> ivs;
    std::vector<Expr> binds, idxs;
    for (size_t d = 0; d < vs.size(); ++d) {
      Var v("v" + std::to_string(d), vs[d].dtype());
      ivs.push_back(IterVar{v, IterKind::Spatial, A->shape[d]});
      binds.push_back(vs[d]);
      idxs.push_back(v);
    }
    return make_simple_block(bname, ivs, binds, make_store(cache, idxs, make_load(A, idxs)));
  });
  Stmt body = st.body();
  for (auto& r : readers) body = replace_stmt(body, r.get(), replace_buffer(r, A, cache));
  st.set_body(body);
  insert_root_item(st, static_cast<size_t>(first_reader), nest);
  st.add_root_alloc(cache);
  for (auto& r : readers) refresh_enclosing_regions(st, block_of(r)->name);
  bind_block(st, ins, 0, bname);
}

}  // namespace tirc::sched

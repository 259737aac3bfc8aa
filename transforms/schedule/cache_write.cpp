// cache = cache_write(block, write_index, "scope"): TVM Schedule.cache_write. The block
// writes (and reads back) a new buffer "<C>_<scope>" instead of C; a new block right after
// the block's top-level loop nest copies the elements the block wrote back to C. Legal
// when the block is the only writer of C, it stores C at one index tuple of spatial iter
// vars, covers its iteration domain exactly once (so every copied element was written),
// and no reader of C shares its loop nest, or (as TVM) the copy-back can go into the loop
// those readers share with it (see below). The copy-back has the block's `where` (in the
// spatial iter vars), so it copies only elements the block wrote.
#include "ir/printer.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/predicate.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {
// True when the comparison c (in the spatial iter vars of b) holds at every point of their
// constant ranges: a conjunct over reduce iter vars that holds at their first value for every
// spatial point lets every element be written (its init runs there).
bool holds_over_spatial(const Expr& c, const BlockNode& b) {
  RangeMap ranges;
  for (auto& iv : b.iter_vars) {
    int64_t e;
    if (iv.kind != IterKind::Spatial) continue;
    if (!is_const_int(fold(iv.extent), &e) || e < 1) return false;
    ranges[iv.var.get()] = IntRange{0, e - 1};
  }
  int64_t v;
  if (is_const_int(c, &v)) return v != 0;
  auto* cmp = c.as<BinaryNode>();
  if (!cmp) return false;
  switch (cmp->op) {
    case BinOp::LT: return prove_lt(cmp->a, cmp->b, ranges);
    case BinOp::LE: return prove_le(cmp->a, cmp->b, ranges);
    case BinOp::GT: return prove_lt(cmp->b, cmp->a, ranges);
    case BinOp::GE: return prove_le(cmp->b, cmp->a, ranges);
    default: return false;
  }
}
}  // namespace

void prim_cache_write(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 4);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  // TVM's consumer_blocks (newer TVM): the listed readers read the cache instead of the
  // written-back buffer. Both hold the same values once the copy-back ran, so tirc accepts the
  // list (it must name blocks) and lets every reader read the buffer, as without it.
  if (ins.args.size() == 4) {
    std::vector<ScheduleArg> items =
        ins.args[3].kind == ScheduleArg::List ? ins.args[3].list : std::vector<ScheduleArg>{ins.args[3]};
    if (items.empty()) refuse("consumer_blocks is empty");
    for (auto& it : items) {
      ScheduleInstr one = ins;
      one.args = {it};
      arg_block(st, one, 0);
    }
  }
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  // TVM accepts the index in the block's writes regions or the buffer's name.
  int64_t idx = -1;
  if (ins.args.size() > 1 && ins.args[1].kind == ScheduleArg::String) {
    for (size_t r = 0; r < b->writes.size() && idx < 0; ++r)
      if (b->writes[r].buffer->name == ins.args[1].text) idx = static_cast<int64_t>(r);
    if (idx < 0) refuse("block " + b->name + " does not write a buffer named " + ins.args[1].text);
  } else {
    idx = arg_int(ins, 1, "the write buffer index");
  }
  std::string scope = cache_scope(ins, 2);
  if (idx < 0 || idx >= static_cast<int64_t>(b->writes.size()))
    refuse("block " + b->name + " has " + std::to_string(b->writes.size()) + " write region" +
           (b->writes.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  Buffer C = b->writes[idx].buffer;
  if (!collect_blocks(b->body).empty()) refuse("block " + b->name + " has nested blocks");
  auto others = writers_of(st, C, b);
  if (!others.empty()) refuse("buffer " + C->name + " is also written by block " + block_of(others[0])->name);
  // One store index tuple.
  std::vector<Expr> widx;
  std::vector<const VarNode*> let_vars;
  bool differ = false, conditional = false;
  int in_if = 0;
  std::function<void(const Stmt&)> rec = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* x = s.as<StoreNode>(); x && x->buffer.same_as(C)) {
      if (widx.empty())
        widx = x->indices;
      else
        for (size_t k = 0; k < widx.size(); ++k) differ = differ || !expr_identical(widx[k], x->indices[k]);
      conditional = conditional || in_if > 0;
    }
    // An inner loop varies the store with its var. A let is harmless unless the store index
    // uses its var: the copy-back then could not name the element (checked below).
    if (s.kind() == StmtKind::For) differ = true;
    if (auto* l = s.as<LetStmtNode>()) let_vars.push_back(l->var.get());
    const bool is_if = s.kind() == StmtKind::IfThenElse;
    in_if += is_if;
    for (auto& c : children(s)) rec(c);
    in_if -= is_if;
  };
  rec(b->init);
  rec(b->body);
  if (widx.empty()) refuse("block " + b->name + " has no store to buffer " + C->name);
  if (differ) refuse("block " + b->name + " stores buffer " + C->name + " at more than one index");
  for (auto* v : let_vars)
    for (auto& e : widx)
      if (uses_var(e, v))
        refuse("block " + b->name + " stores buffer " + C->name + " at an index that uses its let " + v->name +
               " (the copy-back needs the index as a function of the iter vars)");
  // The copy-back runs over the block's whole domain: a store under an `if` (a hand-written
  // guard, or reverse_compute_inline into an overcomputed producer) leaves elements of the
  // cache unwritten, which it would copy (or index past C: `if vi < 15` over 16 rows).
  if (conditional)
    refuse("block " + b->name + " stores " + C->name +
           " under a condition (the copy-back would copy elements it does not write)");
  bool ptr = false;
  auto f = [&](const Expr& e) {
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(C)) ptr = true;
  };
  if (b->init.defined()) for_each_expr(b->init, f);
  for_each_expr(b->body, f);
  if (ptr) refuse("block " + b->name + " passes a pointer to buffer " + C->name);
  for (auto& e : widx)
    for (auto& iv : b->iter_vars)
      if (iv.kind != IterKind::Spatial && uses_var(e, iv.var.get()))
        refuse("the store index of " + C->name + " uses the " + std::string(iter_kind_name(iv.kind)) +
               " iter var " + iv.var.name());
  // Complete: bindings cover the domain exactly once.
  // Loops with a non-zero min are checked rebased (`l` read as `l + min`, l from 0), which
  // visits the same points; a min using another loop of the nest (triangular) is refused.
  std::vector<LoopDom> loops;
  std::unordered_map<const VarNode*, Expr> rebase;
  auto above = st.loops_above(bs.get());
  for (auto& l : above) {
    auto* fl = l.as<ForNode>();
    if (is_zero(fl->min)) continue;
    for (auto& o : above)
      if (uses_var(fl->min, o.as<ForNode>()->loop_var.get()))
        refuse("loop " + loop_name(l) + " above block " + b->name + " starts at an expression of loop " +
               loop_name(o));
    rebase[fl->loop_var.get()] = fl->loop_var + fl->min;
  }
  for (auto& l : above) loops.push_back(LoopDom{l.as<ForNode>()->loop_var, l.as<ForNode>()->extent});
  std::vector<Expr> exts, rebased;
  for (auto& iv : b->iter_vars) exts.push_back(iv.extent);
  for (auto& e : br->bindings) rebased.push_back(rebase.empty() ? e : fold(substitute(e, rebase)));
  Expr rpred =
      rebase.empty() || !br->predicate.defined() ? br->predicate : fold(substitute(br->predicate, rebase));
  if (!bijective_bindings(rebased, exts, loops, rpred))
    refuse("block " + b->name + " does not cover its iteration domain exactly once");
  if (st.scope_of(bs.get()).get() != st.body().get())
    refuse("block " + b->name + " is not under the root block");
  // The copy-back copies exactly the elements the block writes: its `where`, in the spatial
  // iter vars. A conjunct on reduce iter vars alone is dropped when it holds at the first
  // reduce iteration (every admitted spatial point is then written); others are refused.
  std::vector<Expr> copy_pred;
  for (auto& c : predicate_in_iter_vars(*br, st.loops_above(bs.get()))) {
    bool spatial = false, other = false;
    std::unordered_map<const VarNode*, Expr> at_zero;
    for (auto& iv : b->iter_vars) {
      if (!uses_var(c, iv.var.get())) continue;
      (iv.kind == IterKind::Spatial ? spatial : other) = true;
      at_zero[iv.var.get()] = make_int(0, iv.var.dtype());
    }
    if (!other) {
      copy_pred.push_back(c);
      continue;
    }
    int64_t v;
    // `vk <= vi`: every row runs vk = 0 (the reduce vars at 0, proven over the spatial ranges).
    std::unordered_map<const VarNode*, Expr> red_at_zero;
    for (auto& iv : b->iter_vars)
      if (iv.kind != IterKind::Spatial) red_at_zero[iv.var.get()] = make_int(0, iv.var.dtype());
    if (spatial && other && holds_over_spatial(fold(substitute(c, red_at_zero)), *b)) continue;
    Expr c0 = fold(substitute(c, at_zero));
    if (spatial || !is_const_int(c0, &v) || !v)
      refuse("the predicate of block " + b->name + " (" + print_expr(c) +
             ") depends on its non-spatial iter vars, so the elements of " + C->name +
             " it writes are not known");
  }
  // A block runs no point, and writes nothing (its init included), when a reduce (or scan /
  // opaque) iter var has extent 0: `reduce(0)`, or a symbolic extent that is 0 at run time.
  // The copy-back copies only when every such extent is positive (it read an uninitialised
  // cache before).
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial && !prove_lt(make_int(0, iv.extent.dtype()), iv.extent))
      copy_pred.push_back(fold(make_binary(BinOp::LT, make_int(0, iv.extent.dtype()), iv.extent)));
  if (body_reads(*b, C) && !(b->init.defined() && is_reduction_block(*b)))
    refuse("block " + b->name + " reads buffer " + C->name +
           " before writing it (the cache would start uninitialised)");
  // Copy block over the spatial iter vars of the block.
  std::vector<Expr> cexts;
  std::vector<std::string> names;
  std::vector<const IterVar*> sp;
  for (auto& iv : b->iter_vars)
    if (iv.kind == IterKind::Spatial) {
      sp.push_back(&iv);
      cexts.push_back(iv.extent);
      names.push_back("ax" + std::to_string(names.size()));
    }
  Stmt item = top_item(st, bs.get());
  int pos = root_position(st, item);
  std::vector<Stmt> nest_readers;
  for (auto& r : readers_of(st, C, b))
    if (top_item(st, r.get()).same_as(item)) nest_readers.push_back(r);
  Buffer cache(st.fresh_buffer_name(C->name + "_" + scope), C->dtype, C->shape, scope);
  std::string bname = st.fresh_block_name(cache->name);
  if (!nest_readers.empty()) {
    // Readers share the block's loop nest (the block was computed at a consumer's loop): as
    // TVM does, the copy-back goes into the deepest loop L holding the block and those
    // readers, right after the body item of L holding the block, and copies what the block
    // wrote in that iteration. Sound when the loops at and above L feed only spatial iter
    // vars (the part written in an iteration is final there), the block stores at exactly
    // its iter vars (all spatial), and that part is the exact hull of its bindings, so every
    // copied element was written; each element is then copied once, after its last write,
    // before any reader of the iteration, and readers outside the nest run after it.
    auto refuse_nest = [&]() {
      refuse("block " + block_of(nest_readers[0])->name + " reads buffer " + C->name +
             " in the loop nest of block " + b->name);
    };
    // The copy-back's region below is computed for loops from 0 (kept as a limit).
    if (!rebase.empty())
      refuse("block " + block_of(nest_readers[0])->name + " reads buffer " + C->name +
             " in the loop nest of block " + b->name + ", whose loops do not all start at 0");
    Stmt L;
    for (auto& l : st.loops_above(bs.get())) {
      bool all = true;
      for (auto& r : nest_readers) all = all && !find_path(l, r.get()).empty();
      if (all) L = l;
    }
    if (!L.defined()) refuse_nest();
    auto upto = st.loops_above(L.get());
    upto.push_back(L);
    for (auto& l : upto)
      for (auto k : kinds_bound_to(*br, l.as<ForNode>()->loop_var.get()))
        if (k != IterKind::Spatial) refuse_nest();
    std::vector<int> ivs;
    try {
      ivs = index_vars(*b, widx, "the store");
    } catch (const Refusal&) {
      refuse_nest();
    }
    if (ivs.size() != sp.size() || !exact_hull(L, bs)) refuse_nest();
    auto items = seq_items(L.as<ForNode>()->body);
    size_t at = items.size();
    for (size_t k = 0; k < items.size(); ++k)
      if (items[k].same_as(bs) || !find_path(items[k], bs.get()).empty()) at = k;
    if (at == items.size()) refuse_nest();
    for (auto& r : nest_readers)
      if (items[at].same_as(r) || !find_path(items[at], r.get()).empty()) refuse_nest();
    auto reg = region_under_loop(L, bs, b->writes[idx]);
    RangeMap known = const_ranges(upto);
    std::vector<IterVar> civs;
    std::vector<Expr> cbinds, preds, idxs;
    std::vector<Var> lvars;
    std::vector<Expr> lexts;
    std::unordered_map<const VarNode*, Expr> iv_value;
    for (size_t d = 0; d < ivs.size(); ++d) {
      const IterVar& iv = b->iter_vars[static_cast<size_t>(ivs[d])];
      DType t = iv.var.dtype();
      if (!reg[d]) refuse_nest();
      Expr w = fold(reg[d]->hi - reg[d]->lo + make_int(1, t));
      int64_t wc;
      if (!is_const_int(w, &wc) || wc <= 0) refuse_nest();
      Var v(iv.var.name(), t);
      civs.push_back(IterVar{v, IterKind::Spatial, iv.extent});
      Expr value = reg[d]->lo;
      if (wc > 1) {
        Var ax(fresh_var_name(st, "ax" + std::to_string(d)), t);
        for (auto& o : lvars)
          if (o.name() == ax.name()) ax = Var(fresh_var_name(st, ax.name() + "_" + std::to_string(d)), t);
        lvars.push_back(ax);
        lexts.push_back(w);
        value = fold(reg[d]->lo + ax);
      }
      cbinds.push_back(value);
      iv_value[iv.var.get()] = value;
      idxs.push_back(v);
      if (!prove_le(make_int(0, t), reg[d]->lo, known))
        preds.push_back(make_binary(BinOp::LE, make_int(0, t), value));
      if (!prove_le(reg[d]->hi, fold(iv.extent - make_int(1, t)), known))
        preds.push_back(make_binary(BinOp::LT, value, iv.extent));
    }
    for (auto& c : copy_pred) preds.push_back(fold(substitute(c, iv_value)));
    Stmt copy = make_simple_block(bname, civs, cbinds, make_store(C, idxs, make_load(cache, idxs)), Stmt(),
                                  preds.empty() ? Expr() : make_and(preds));
    for (size_t k = lvars.size(); k-- > 0;)
      copy = make_for(lvars[k], make_int(0, lexts[k].dtype()), lexts[k], ForKind::Serial, copy);
    Var lv = L.as<ForNode>()->loop_var;
    Stmt nb = replace_buffer(bs, C, cache);
    st.replace(bs.get(), nb);
    Stmt lnow = st.find_loop(lv.get());
    auto now = seq_items(lnow.as<ForNode>()->body);
    now.insert(now.begin() + static_cast<long>(at) + 1, copy);
    st.replace(lnow.get(), with_body(lnow, make_seq(now)));
    st.add_root_alloc(cache);
    refresh_enclosing_regions(st, b->name);
    bind_block(st, ins, 0, bname);
    return;
  }
  Stmt nest = make_nest(st, cexts, names, [&](const std::vector<Var>& vs) {
    std::vector<IterVar> ivs;
    std::vector<Expr> binds;
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t d = 0; d < vs.size(); ++d) {
      Var v(sp[d]->var.name(), sp[d]->var.dtype());
      ivs.push_back(IterVar{v, IterKind::Spatial, sp[d]->extent});
      binds.push_back(vs[d]);
      sub[sp[d]->var.get()] = v;
    }
    std::vector<Expr> idxs;
    for (auto& e : widx) idxs.push_back(substitute(e, sub));
    std::unordered_map<const VarNode*, Expr> to_loops;
    for (size_t d = 0; d < vs.size(); ++d) to_loops[sp[d]->var.get()] = vs[d];
    Expr pred = fold(substitute(make_and(copy_pred), to_loops));
    return make_simple_block(bname, ivs, binds, make_store(C, idxs, make_load(cache, idxs)), Stmt(),
                             copy_pred.empty() ? Expr() : pred);
  });
  Stmt nb = replace_buffer(bs, C, cache);
  st.replace(bs.get(), nb);
  insert_root_item(st, static_cast<size_t>(pos + 1), nest);
  st.add_root_alloc(cache);
  refresh_enclosing_regions(st, b->name);
  bind_block(st, ins, 0, bname);
}

}  // namespace tirc::sched

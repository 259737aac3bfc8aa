// in, out = cache_inplace(block, read_buffer_index, "scope"): TVM Schedule.cache_inplace. The
// block reads and updates a buffer X in place (autodiff's accumulation without init onto a
// zero-fill block, `X_grad[i, k] = X_grad[i, k] + a * W[j, k]`, which cache_write refuses because
// the zero-fill also writes X). A new buffer "<X>_<scope>" (X's shape, the given scope) takes the
// block's accesses of X; a copy-in block right before the block's own loop nest loads what the
// block reads of X into it, and a copy-out block right after stores what it writes back. Returns
// the two copy blocks (TVM: [cache read block, cache write block]); compute_at of the copy-in and
// reverse_compute_at of the copy-out into a tile loop then keep the accumulator of a tile in the
// cache (docs/schedule.md, "Round 19").
//
// Placement: TVM puts the copies around the block inside its innermost loop, where the region
// (the block's declared one, in its iter vars) is that of one point. tirc places them around
// the block's exclusive loop nest (exclusive_root: the loops holding nothing else) and copies
// the box of the block's one accessed index tuple over those loops (review of round 19: not the
// declared regions, which may be wider), so the copies are ordinary loop nests that
// compute_at / reverse_compute_at can move into a tile (the same values: nothing else runs
// between the copies, inside that nest).
//
// Legal (else refused, naming the block and the reason): the block reads and writes X (TVM's
// NotReadWriteError), it is under the root block, has no init and no `where` other than a split's
// bound guard (the copy-in must read only elements written before the block), it accesses X at one
// index tuple of iter vars plus constants, unconditionally, loading before storing, and its iter vars
// run every value between their bounds in the nest (accesses_not_exact, exact_hull: then the copies
// hold exactly the elements the block reads), every loop above its nest is
// serial (the copies of the iterations of a parallel loop around it would overlap), its write region of X
// lies in its read region (elements written but not read would be copied back from an uninitialised cache),
// and both regions are bounded with widths that do not depend on loops (the copies run once per iteration of
// the loops above the nest: a width varying with them is refused).
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// The box `reg` (inclusive ends per dimension, in the loops above the nest) as a copy block
// over iter vars of X's extents: `to(cache idx) = from(idx)` for every element of the box,
// bound to fresh loops over the widths, guarded to X's shape where not provable.
// dom[d] (when its extent is defined): dimension d is `v + shift` of an iter var v of that
// extent, and the copy is guarded to v's domain too (a split's overshoot past the extent).
struct IvDim {
  int64_t shift = 0;
  Expr extent;
};
Stmt copy_nest(ScheduleState& st, const std::string& name, const Buffer& from, const Buffer& to,
               const Buffer& X, const std::vector<SymRange>& reg, const RangeMap& known,
               const std::vector<IvDim>& dom) {
  std::vector<IterVar> ivs;
  std::vector<Expr> binds, preds, idx;
  std::vector<Var> lvars;
  std::vector<Expr> lexts;
  std::set<std::string> used = used_var_names(st);
  for (size_t d = 0; d < reg.size(); ++d) {
    Expr ext = X->shape[d];
    DType t = ext.dtype();
    auto to_t = [&](const Expr& e) {
      int64_t c;
      if (e.dtype() == t) return e;
      return is_const_int(fold(e), &c) ? make_int(c, t) : make_cast(t, e);
    };
    Expr lo = to_t(reg[d].lo), hi = to_t(reg[d].hi);
    Expr w = fold(hi - lo + make_int(1, t));
    Var v(fresh_var_name(used, "v" + std::to_string(d)), t);
    ivs.push_back(IterVar{v, IterKind::Spatial, ext});
    Expr value = lo;
    if (!is_one(w)) {
      Var ax(fresh_var_name(used, "ax" + std::to_string(d)), t);
      lvars.push_back(ax);
      lexts.push_back(w);
      value = fold(lo + ax);
    }
    binds.push_back(value);
    idx.push_back(v);
    if (!prove_le(make_int(0, t), lo, known)) preds.push_back(make_binary(BinOp::LE, make_int(0, t), value));
    if (!prove_le(hi, fold(ext - make_int(1, t)), known)) preds.push_back(make_binary(BinOp::LT, value, ext));
    if (d < dom.size() && dom[d].extent.defined() && dom[d].extent.dtype() == t) {
      Expr k = make_int(dom[d].shift, t);
      Expr last = fold(dom[d].extent - make_int(1, t) + k);
      if (!prove_le(k, lo, known)) preds.push_back(make_binary(BinOp::LE, k, value));
      if (!prove_le(hi, last, known)) preds.push_back(make_binary(BinOp::LE, value, last));
    }
  }
  Stmt s = make_simple_block(name, ivs, binds, make_store(to, idx, make_load(from, idx)), Stmt(),
                             preds.empty() ? Expr() : make_and(preds));
  for (size_t k = lvars.size(); k-- > 0;)
    s = make_for(lvars[k], make_int(0, lexts[k].dtype()), lexts[k], ForKind::Serial, s);
  return s;
}

// Why the copies of X around block b would not hold exactly what b reads (empty when they
// do; review of round 19: the copies took the hull of the declared regions, and the copy-in
// read elements no instance reads, uninitialised when written only later). Required: every
// access of X in b's body is at one index tuple I (`*I`), each dimension an iter var of b plus
// a constant (distinct iter vars) or a constant, none conditional (under an `if`, an
// if_then_else arm, a loop or a nested block), and the first one in evaluation order a load:
// then each instance reads its element of X before it writes it, and the elements of the
// instances the nest runs are exactly the box of I (with exact_hull and the domain guard of
// copy_nest).
std::string accesses_not_exact(const BlockNode& b, const Buffer& X, std::vector<Expr>* I) {
  bool loaded = false;
  std::string why;
  auto see = [&](const std::vector<Expr>& ix, bool load) {
    if (!why.empty()) return;
    if (I->empty()) {
      *I = ix;
      if (!load) why = "it stores " + X->name + " before loading it";
      for (auto& e : ix) {
        auto lin = to_linear(e);
        bool ok = lin && (lin->terms.empty() || (lin->terms.size() == 1 && lin->terms[0].second == 1 &&
                                                 lin->terms[0].first.as<VarNode>()));
        if (ok && !lin->terms.empty()) {
          const VarNode* v = lin->terms[0].first.as<VarNode>();
          int n = 0;
          for (auto& iv : b.iter_vars) n += iv.var.get() == v;
          for (auto& f : ix) n += (&f != &e && uses_var(f, v)) ? 2 : 0;
          ok = n == 1;
        }
        if (!ok && why.empty())
          why = "it accesses " + X->name + " at an index that is not an iter var plus a constant (" +
                print_expr(e) + ")";
      }
    } else {
      bool same = I->size() == ix.size();
      for (size_t k = 0; same && k < ix.size(); ++k) same = expr_identical((*I)[k], ix[k]);
      if (!same) why = "it accesses " + X->name + " at several index tuples";
    }
    loaded = loaded || load;
  };
  auto expr = [&](const Expr& e) {
    if (!e.defined() || !why.empty()) return;
    bool cond = false, ptr = false;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* p = x.as<BufferPtrNode>(); p && p->buffer.same_as(X)) ptr = true;
      if (x.kind() != ExprKind::IfThenElse) return;
      auto* s = static_cast<const SelectNode*>(x.get());
      for (auto* arm : {&s->t, &s->f})
        for_each_expr(*arm, [&](const Expr& y) {
          if (auto* l = y.as<LoadNode>(); l && l->buffer.same_as(X)) cond = true;
        });
    });
    if (ptr) why = "it passes a pointer to " + X->name;
    if (cond) why = "it loads " + X->name + " in an arm of if_then_else";
    for_each_expr(e, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && l->buffer.same_as(X)) see(l->indices, true);
    });
  };
  auto touches = [&](const Stmt& s) {
    bool t = false;
    for_each_expr(s, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && l->buffer.same_as(X)) t = true;
    });
    std::function<void(const Stmt&)> rec = [&](const Stmt& y) {
      if (!y.defined()) return;
      if (auto* st = y.as<StoreNode>(); st && st->buffer.same_as(X)) t = true;
      if (auto* br = y.as<BlockRealizeNode>();
          br && (block_reads(*br->block.get(), X) || block_writes(*br->block.get(), X)))
        t = true;
      for (auto& ch : children(y)) rec(ch);
    };
    rec(s);
    return t;
  };
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s.defined() || !why.empty()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts) walk(x);
    } else if (auto* l = s.as<LetStmtNode>()) {
      expr(l->value);
      walk(l->body);
    } else if (auto* st = s.as<StoreNode>()) {
      for (auto& e : st->indices) expr(e);
      expr(st->value);
      if (st->buffer.same_as(X)) see(st->indices, false);
    } else if (auto* c = s.as<IfThenElseStmtNode>()) {
      expr(c->cond);
      if (touches(s)) why = "it accesses " + X->name + " under an if";
    } else if (touches(s)) {
      bool nested = false;
      for (auto& nb : collect_blocks(s))
        nested = nested || block_reads(*block_of(nb), X) || block_writes(*block_of(nb), X);
      why = "it accesses " + X->name +
            (nested || s.as<BlockRealizeNode>() ? " in a nested block"
             : s.as<ForNode>()                  ? " in a loop of its body"
                                                : " in a call");
    }
  };
  walk(b.body);
  if (why.empty() && !loaded) why = "it does not load " + X->name;
  return why;
}

}  // namespace

void prim_cache_inplace(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 3);
  // One name for both (`blocks = cache_inplace(...)`) binds a list: apply.cpp runs this with two.
  expect_results(ins, 2);
  Stmt bs = arg_block(st, ins, 0);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  // TVM takes the index in the block's read regions (the buffer's name is accepted too, as for
  // cache_read / cache_write).
  int64_t idx = -1;
  if (ins.args[1].kind == ScheduleArg::String) {
    for (size_t r = 0; r < b->reads.size() && idx < 0; ++r)
      if (b->reads[r].buffer->name == ins.args[1].text) idx = static_cast<int64_t>(r);
    if (idx < 0) refuse("block " + b->name + " does not read a buffer named " + ins.args[1].text);
  } else {
    idx = arg_int(ins, 1, "the read buffer index");
  }
  std::string scope = cache_scope(ins, 2);
  if (idx < 0 || idx >= static_cast<int64_t>(b->reads.size()))
    refuse("block " + b->name + " has " + std::to_string(b->reads.size()) + " read region" +
           (b->reads.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  const Buffer X = b->reads[static_cast<size_t>(idx)].buffer;
  if (!block_writes(*b, X)) refuse("block " + b->name + " does not both read and write buffer " + X->name);
  if (st.scope_of(bs.get()).get() != st.body().get())
    refuse("block " + b->name + " is not under the root block");
  // A reduction's init writes each element before the block reads it: the copy-in would read
  // elements not written yet (found by the fuzzer: an uninitialised output; cache_write caches
  // such a block). A `where` other than a split's bound guard skips instances whose elements the
  // copy-in would still read.
  if (b->init.defined())
    refuse("block " + b->name + " has an init: it writes " + X->name +
           " before reading it, so the copy-in would read elements not written yet (use cache_write)");
  // The same for the blocks nested in a blockized block (fuzzer: embedding_bag's `bag_o`).
  for (auto& nb : collect_blocks(b->body)) {
    const BlockNode* n = block_of(nb);
    // A nested block not touching X neither reads nor writes what the copies hold (review r1 of
    // round 19, F2: the message blamed a row sum's init writing another buffer).
    if (!block_reads(*n, X) && !block_writes(*n, X)) continue;
    if (n->init.defined())
      refuse("block " + b->name + " holds block " + n->name + ", which has an init: it writes " + X->name +
             " before reading it, so the copy-in would read elements not written yet");
    if (Expr c = non_guard_conjunct(*realize(nb)); c.defined())
      refuse("block " + b->name + " holds block " + n->name + ", which runs under the condition " +
             print_expr(c) + ": the copy-in of " + X->name +
             " would read the elements of the instances it skips");
  }
  if (Expr c = non_guard_conjunct(*br); c.defined())
    refuse("block " + b->name + " runs under the condition " + print_expr(c) + ", and the copy-in of " +
           X->name + " would read the elements of the instances it skips");
  // The copies must hold exactly the elements the instances read (review of round 19).
  std::vector<Expr> I;
  if (std::string why = accesses_not_exact(*b, X, &I); !why.empty())
    refuse("block " + b->name + " does not read each element of " + X->name +
           " it accesses before writing it at one index (" + why +
           "), so the copy-in could read elements the block does not read");
  // The copies go around the loops that hold only the block.
  Stmt E = exclusive_root(st, bs);
  // Only the loops above the nest: the copies run in their iterations (review r1 of round 19,
  // F3: a parallel or vectorized loop inside the nest holds no copy, and the block's accesses
  // there are the same on the cache as on X).
  for (auto& l : st.loops_above(E.get())) {
    auto* f = l.as<ForNode>();
    if (f->for_kind != ForKind::Serial && f->for_kind != ForKind::Unrolled)
      refuse("loop " + loop_name(l) + " above block " + b->name + " is not serial (the copies of " + X->name +
             " made in its iterations could overlap)");
  }
  // The regions of X over the nest, from the declared regions (they hold every access).
  Var dummy("cache_inplace_root", DType::I32);
  Stmt root = make_for(dummy, make_int(0, DType::I32), make_int(1, DType::I32), ForKind::Serial, E);
  auto region_of = [&](const std::vector<BufferRegion>& rs, const char* what) {
    std::vector<std::optional<SymRange>> out;
    bool first = true;
    for (auto& r : rs) {
      if (!r.buffer.same_as(X)) continue;
      auto g = region_under_loop(root, bs, r);
      if (first) out = g;
      first = false;
      for (size_t d = 0; d < g.size(); ++d) {
        if (!out[d] || !g[d]) {
          out[d].reset();
          continue;
        }
        // Several regions of one buffer: their hull when the ends compare.
        Expr lo = prove_le(out[d]->lo, g[d]->lo)   ? out[d]->lo
                  : prove_le(g[d]->lo, out[d]->lo) ? g[d]->lo
                                                   : Expr();
        Expr hi = prove_le(g[d]->hi, out[d]->hi)   ? out[d]->hi
                  : prove_le(out[d]->hi, g[d]->hi) ? g[d]->hi
                                                   : Expr();
        if (lo.defined() && hi.defined())
          out[d] = SymRange{lo, hi};
        else
          out[d].reset();
      }
    }
    std::vector<SymRange> res;
    for (size_t d = 0; d < out.size(); ++d) {
      if (!out[d])
        refuse("the region of buffer " + X->name + " that block " + b->name + " " + what +
               " is not bounded in dimension " + std::to_string(d));
      res.push_back(*out[d]);
    }
    return res;
  };
  // The box of the accessed tuple I over the nest (not the declared regions, which may be
  // wider): every element of it is read by an instance when the bindings' values over the nest
  // are dense (exact_hull: mixed-radix sums of distinct loops); past an iter var's extent
  // (a split's overshoot) the copies are guarded (dom).
  if (!exact_hull(root, bs))
    refuse("the iter vars of block " + b->name +
           " do not run every value between their bounds in its loop nest, "
           "so the copies of " +
           X->name + " would hold elements the block does not read");
  std::vector<IvDim> dom(I.size());
  for (size_t d = 0; d < I.size(); ++d) {
    auto lin = to_linear(I[d]);
    if (lin->terms.empty()) continue;
    for (auto& iv : b->iter_vars)
      if (iv.var.get() == lin->terms[0].first.get()) dom[d] = IvDim{lin->c, iv.extent};
  }
  BufferRegion acc{X, {}};
  for (auto& e : I) acc.ranges.push_back(Range{e, Expr()});
  auto rreg = region_of({acc}, "accesses");
  auto wreg = rreg;
  // The loops above E (shared with other statements): the copies run in each of their iterations.
  auto above = st.loops_above(E.get());
  RangeMap known = const_ranges(above);
  std::unordered_set<const VarNode*> loop_vars;
  for (auto& l : collect_loops(st.body())) loop_vars.insert(l.as<ForNode>()->loop_var.get());
  for (size_t d = 0; d < rreg.size(); ++d) {
    if (!prove_le(rreg[d].lo, wreg[d].lo, known) || !prove_le(wreg[d].hi, rreg[d].hi, known))
      refuse("block " + b->name + " writes buffer " + X->name + " outside the region it reads in dimension " +
             std::to_string(d) + " (the copy back would store elements the cache does not hold)");
    for (auto* r : {&rreg[d], &wreg[d]}) {
      Expr w = fold(r->hi - r->lo);
      if (uses_var(w, [&](const VarNode* v) { return loop_vars.count(v) > 0; }))
        refuse("the region of buffer " + X->name + " that block " + b->name +
               " accesses has a width depending on the loops in dimension " + std::to_string(d));
    }
  }
  Buffer cache(st.fresh_buffer_name(X->name + "_" + scope), X->dtype, X->shape, scope);
  std::string in_name = st.fresh_block_name(cache->name);
  std::string out_name = st.fresh_block_name(cache->name + "_out");
  Stmt cin = copy_nest(st, in_name, X, cache, X, rreg, known, dom);
  Stmt cout = copy_nest(st, out_name, cache, X, X, wreg, known, dom);
  Stmt nE = replace_stmt(E, bs.get(), replace_buffer(bs, X, cache));
  // Insert next to E: into its parent's sequence, or as a new sequence in E's place.
  auto path = st.path_to(E.get());
  const Stmt* parent = path.size() >= 2 ? &path[path.size() - 2] : nullptr;
  if (parent && parent->kind() == StmtKind::Seq) {
    std::vector<Stmt> items;
    for (auto& it : seq_items(*parent)) {
      if (it.same_as(E)) {
        items.push_back(cin);
        items.push_back(nE);
        items.push_back(cout);
      } else {
        items.push_back(it);
      }
    }
    st.replace(parent->get(), make_seq(items));
  } else {
    st.replace(E.get(), make_seq({cin, nE, cout}));
  }
  st.add_root_alloc(cache);
  refresh_enclosing_regions(st, b->name);
  bind_block(st, ins, 0, in_name);
  bind_block(st, ins, 1, out_name);
}

}  // namespace tirc::sched

// init = decompose_reduction(block, loop): TVM Schedule.decompose_reduction. Moves the
// block's `init` into a new block "<name>_init" placed right before `loop`, under copies of
// the loops between `loop` and the block that feed only spatial iter vars. Legal when every
// loop feeding a reduce iter var is `loop` or inside it (so the init runs once per output
// element, before all its updates), no loop feeds both kinds, and no other block under
// `loop` touches what the init writes, and the reduction loops run the reduce iter vars
// one-to-one from 0 (so the init, run where they are all 0, runs once at their first
// iteration). The init block's predicate is the block's at the first reduce point
// (conjuncts over reduce loops only are dropped when they hold there).
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_decompose_reduction(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  Stmt ls = arg_loop(st, ins, 1);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  if (!b->init.defined()) refuse("block " + b->name + " has no init");
  auto loops = st.loops_above(bs.get());
  size_t pos = loops.size();
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].same_as(ls)) pos = i;
  if (pos == loops.size()) refuse("loop " + loop_name(ls) + " is not above block " + b->name);
  auto bound_kinds = [&](const Stmt& l) { return kinds_bound_to(*br, l.as<ForNode>()->loop_var.get()); };
  for (size_t i = 0; i < pos; ++i)
    for (auto k : bound_kinds(loops[i]))
      if (k != IterKind::Spatial)
        refuse("loop " + loop_name(loops[i]) + ", outside loop " + loop_name(ls) + ", feeds a " +
               iter_kind_name(k) + " iter var of block " + b->name);
  // Every variable feeding a reduce iter var must be `loop` or a loop inside it (not an
  // outer loop, nor the iter var of an enclosing block).
  {
    std::unordered_set<const VarNode*> inside;
    for (size_t i = pos; i < loops.size(); ++i) inside.insert(loops[i].as<ForNode>()->loop_var.get());
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      if (b->iter_vars[i].kind == IterKind::Spatial) continue;
      for_each_expr(br->bindings[i], [&](const Expr& e) {
        if (auto* v = e.as<VarNode>(); v && !inside.count(v))
          refuse("the " + std::string(iter_kind_name(b->iter_vars[i].kind)) + " iter var " +
                 b->iter_vars[i].var.name() + " of block " + b->name + " depends on " + v->name +
                 ", which is outside loop " + loop_name(ls));
      });
    }
  }
  // Loops to copy: those from `loop` inward that feed spatial iter vars only.
  std::vector<Stmt> copied;
  std::unordered_set<const VarNode*> reduce_loops;
  for (size_t i = pos; i < loops.size(); ++i) {
    auto ks = bound_kinds(loops[i]);
    bool sp = false, other = false;
    for (auto k : ks) (k == IterKind::Spatial ? sp : other) = true;
    if (sp && other)
      refuse("loop " + loop_name(loops[i]) + " feeds both spatial and reduce iter vars of block " + b->name);
    // A loop feeding no iter var runs the block again at the same points, and each run
    // re-initialises (the init is at every reduce var's first value): one init before the
    // loop would make the runs accumulate instead.
    if (!sp && !other && !is_one(fold(loops[i].as<ForNode>()->extent)))
      refuse("loop " + loop_name(loops[i]) + " feeds no iter var of block " + b->name +
             " (the block runs again in each of its iterations, re-running its init)");
    if (sp)
      copied.push_back(loops[i]);
    else
      reduce_loops.insert(loops[i].as<ForNode>()->loop_var.get());
  }
  for (size_t i = pos; i < loops.size(); ++i)
    for (size_t j = pos; j < loops.size(); ++j) {
      auto* fi = loops[i].as<ForNode>();
      if (reduce_loops.count(loops[j].as<ForNode>()->loop_var.get()) &&
          (uses_var(fi->min, loops[j].as<ForNode>()->loop_var.get()) ||
           uses_var(fi->extent, loops[j].as<ForNode>()->loop_var.get())))
        refuse("the range of loop " + loop_name(loops[i]) + " depends on the reduce loop " +
               loop_name(loops[j]));
    }
  // Conjuncts of the predicate that use only reduce loops restrict the reduction, not the
  // output elements: the init block drops them. Mixed ones cannot be split.
  std::vector<Expr> init_pred;
  auto is_red = [&](const VarNode* v) { return reduce_loops.count(v) > 0; };
  std::unordered_set<const VarNode*> spatial_loops;
  for (size_t i = 0; i < loops.size(); ++i)
    if (!reduce_loops.count(loops[i].as<ForNode>()->loop_var.get()))
      spatial_loops.insert(loops[i].as<ForNode>()->loop_var.get());
  // A mixed conjunct (`ko * 8 + ki < 34` in the rf block of a non-dividing split, ki now
  // spatial) decides which output elements are initialised: the init runs where the predicate
  // holds at the first reduce point, so the init block gets it with the reduce loops at that
  // point. When every reduce iter var is a sum of reduce loops (all from 0) with positive
  // coefficients, that point is all reduce loops at 0.
  bool first_point_is_zero = true;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    if (b->iter_vars[i].kind != IterKind::Reduce) continue;
    auto lin = to_linear(br->bindings[i]);
    if (!lin || lin->c != 0) first_point_is_zero = false;
    for (auto& [a, k] : lin ? lin->terms : std::vector<std::pair<Expr, int64_t>>{}) {
      auto* v = a.as<VarNode>();
      if (!v || k <= 0 || !reduce_loops.count(v)) first_point_is_zero = false;
    }
  }
  std::unordered_map<const VarNode*, Expr> at_first;
  for (size_t i = pos; i < loops.size(); ++i) {
    auto* f = loops[i].as<ForNode>();
    if (!reduce_loops.count(f->loop_var.get())) continue;
    if (!is_zero(fold(f->min))) first_point_is_zero = false;
    at_first[f->loop_var.get()] = make_int(0, f->loop_var.dtype());
  }
  // The init runs where every reduce iter var is 0; once decomposed it runs before the
  // reduction loops. Same only when the reduction loops (from their mins) run the reduce iter
  // vars one-to-one from 0, so that point is their first iteration and comes once (found in
  // round 9: the copy of a block in the second part of a `loop_partition` of its reduce loop,
  // `vk = k` over [4, 12), never ran its init, and a binding `vk = k // 4` ran it 4 times).
  // Conjuncts over the reduction loops only then decide whether that point runs: the init
  // block gets them at the first iteration (a hand-written `where k >= 3` skips the init).
  std::unordered_map<const VarNode*, Expr> at_min, shift;
  std::vector<LoopDom> rloops;
  {
    for (size_t i = pos; i < loops.size(); ++i) {
      auto* f = loops[i].as<ForNode>();
      if (!reduce_loops.count(f->loop_var.get())) continue;
      at_min[f->loop_var.get()] = f->min;
      if (!is_zero(fold(f->min))) shift[f->loop_var.get()] = f->loop_var + f->min;
      rloops.push_back(LoopDom{f->loop_var, f->extent});
    }
  }
  for (auto& c : conjuncts(fold(br->predicate))) {
    if (!uses_var(c, is_red))
      init_pred.push_back(c);
    else if (!uses_var(c, [&](const VarNode* v) { return spatial_loops.count(v) > 0; })) {
      Expr c0 = fold(substitute(c, at_min));
      auto* cmp = c0.as<BinaryNode>();
      bool holds = is_one(c0) || (cmp && ((cmp->op == BinOp::LT && prove_lt(cmp->a, cmp->b)) ||
                                          (cmp->op == BinOp::LE && prove_le(cmp->a, cmp->b)) ||
                                          (cmp->op == BinOp::GT && prove_lt(cmp->b, cmp->a)) ||
                                          (cmp->op == BinOp::GE && prove_le(cmp->b, cmp->a))));
      if (!holds) init_pred.push_back(c0);
    } else if (uses_var(c, [&](const VarNode* v) { return spatial_loops.count(v) > 0; })) {
      if (!first_point_is_zero)
        refuse("the predicate of block " + b->name + " mixes loops of the reduction and of the output");
      init_pred.push_back(fold(substitute(c, at_first)));
    }
  }
  // Nothing else under `loop` may touch the buffers the init writes.
  std::vector<BufferRegion> init_w;
  {
    BlockNode tmp;
    tmp.body = b->init;
    infer_regions(tmp, nullptr, &init_w);
  }
  for (auto& other : collect_blocks(ls.as<ForNode>()->body, false)) {
    if (other.same_as(bs)) continue;
    for (auto& w : init_w)
      if (block_reads(*block_of(other), w.buffer) || block_writes(*block_of(other), w.buffer))
        refuse("block " + block_of(other)->name + " under loop " + loop_name(ls) + " also accesses buffer " +
               w.buffer->name);
  }
  if (has_loose_effects(ls.as<ForNode>()->body))
    refuse("loop " + loop_name(ls) + " has statements outside blocks");
  {
    std::vector<Expr> rbinds, rexts, rpred;
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      if (b->iter_vars[i].kind == IterKind::Reduce) {
        rbinds.push_back(fold(substitute(br->bindings[i], shift)));
        rexts.push_back(b->iter_vars[i].extent);
      }
    for (auto& c : conjuncts(fold(br->predicate)))
      if (!uses_var(c, [&](const VarNode* v) { return spatial_loops.count(v) > 0; }))
        rpred.push_back(fold(substitute(c, shift)));
    // Each binding a sum of reduction loops (from 0) with positive coefficients: all are 0
    // exactly at the first iteration (every reduction loop feeds one, checked above). Else a
    // one-to-one mixed-radix map (a fused reduction split again).
    bool positive_sums = true;
    for (auto& e : rbinds) {
      auto lin = to_linear(e);
      positive_sums = positive_sums && lin && lin->c == 0;
      for (auto& [a, k] : lin ? lin->terms : std::vector<std::pair<Expr, int64_t>>{}) {
        auto* v = a.as<VarNode>();
        if (!v || k <= 0 || !reduce_loops.count(v)) positive_sums = false;
      }
    }
    if (!positive_sums && !bijective_bindings(rbinds, rexts, rloops, make_and(rpred)))
      refuse("the reduction loops of block " + b->name +
             " do not run its reduce iter vars one-to-one from 0 " +
             "(its init runs where they are all 0, which would not be once before the reduction)");
  }
  // Build the init block.
  std::unordered_map<const VarNode*, Expr> loop_sub, iv_sub;
  std::vector<Var> new_loop_vars;
  for (auto& l : copied) {
    auto* f = l.as<ForNode>();
    Var v(fresh_var_name(st, f->loop_var.name() + "_init"), f->loop_var.dtype());
    for (auto& p : new_loop_vars)
      if (p.name() == v.name()) v = Var(v.name() + "_" + std::to_string(new_loop_vars.size()), v.dtype());
    new_loop_vars.push_back(v);
    loop_sub[f->loop_var.get()] = v;
  }
  std::vector<IterVar> ivs;
  std::vector<Expr> binds;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const IterVar& iv = b->iter_vars[i];
    if (iv.kind == IterKind::Reduce) {
      if (uses_var(b->init.defined() ? Expr() : Expr(), iv.var.get())) {
      }
      continue;
    }
    if (iv.kind != IterKind::Spatial)
      refuse("block " + b->name + " has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
             iv.var.name());
    Var nv(iv.var.name(), iv.var.dtype());
    iv_sub[iv.var.get()] = nv;
    ivs.push_back(IterVar{nv, IterKind::Spatial, iv.extent});
    binds.push_back(substitute(br->bindings[i], loop_sub));
  }
  // The init must not use reduce iter vars.
  bool uses_reduce = false;
  for_each_expr(b->init, [&](const Expr& e) {
    if (auto* v = e.as<VarNode>())
      for (auto& iv : b->iter_vars)
        if (iv.kind == IterKind::Reduce && iv.var.get() == v) uses_reduce = true;
  });
  if (uses_reduce) refuse("the init of block " + b->name + " uses a reduce iter var");
  // An empty reduction (`reduce(0)`, a symbolic extent 0 at run time) never runs its init
  // (docs/language.md); the decomposed init keeps that: `where 0 < n`.
  for (auto& iv : b->iter_vars)
    if (iv.kind == IterKind::Reduce && !prove_lt(make_int(0, iv.extent.dtype()), iv.extent)) {
      Expr c = make_binary(BinOp::LT, make_int(0, iv.extent.dtype()), iv.extent);
      bool dup = false;  // the guard of a split of the same extent at its first point
      for (auto& p : init_pred) dup = dup || expr_identical(fold(p), fold(c));
      if (!dup) init_pred.push_back(c);
    }
  Stmt init_body = substitute(b->init, iv_sub);
  Stmt init_br = make_simple_block(st.fresh_block_name(b->name + "_init"), ivs, binds, init_body, Stmt(),
                                   fold(substitute(make_and(init_pred), loop_sub)));
  std::string init_name = block_of(init_br)->name;
  Stmt nest = init_br;
  for (size_t k = copied.size(); k-- > 0;) {
    auto* f = copied[k].as<ForNode>();
    nest = make_for(new_loop_vars[k], substitute(f->min, loop_sub), substitute(f->extent, loop_sub),
                    ForKind::Serial, nest);
  }
  // The update block: same block without init.
  Stmt nb = update_realize(bs, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.init = Stmt(); });
  });
  Stmt body = replace_stmt(st.body(), bs.get(), nb);
  ScheduleState tmp = st;
  tmp.set_body(body);
  Stmt loop_now = tmp.find_loop(ls.as<ForNode>()->loop_var.get());
  tmp.replace(loop_now.get(), make_seq({nest, loop_now}));
  st.set_body(tmp.body());
  bind_block(st, ins, 0, init_name);
}

}  // namespace tirc::sched

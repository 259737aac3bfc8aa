// reorder(l0, l1, ...): TVM Schedule.reorder. The loops must lie on one perfect nest
// (from the outermost given loop down to the innermost one, every loop body is exactly the
// next loop); the given loops take the positions of the given loops in the nest, in the
// given order, the others stay. Legal when the blocks below are independent of each other
// (or every loop of the nest has independent iterations, as for parallel) and the order of
// every block's ordered iterations is kept: loops feeding spatial iter vars move freely, loops
// feeding the reduce iter vars of a commutative reduction too, but for a block with scan iter
// vars or a reduction whose update is not commutative the loops feeding its non-spatial iter
// vars keep their relative order; loops bound to opaque iter vars do not move.
#include "transforms/schedule/deps.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/tree.h"

namespace tirc::sched {

void prim_reorder(ScheduleState& st, const ScheduleInstr& ins) {
  auto pos = positional(ins);
  if (pos.empty()) refuse("expected at least 1 loop");
  expect_results(ins, 0);
  std::vector<Stmt> given;
  for (size_t i = 0; i < pos.size(); ++i) {
    Stmt l = arg_loop(st, ins, i);
    for (auto& p : given)
      if (p.same_as(l)) refuse("loop " + loop_name(l) + " is given twice");
    given.push_back(l);
  }
  if (given.size() == 1) return;
  // Order the given loops by depth; the outermost is the top of the chain.
  std::vector<std::pair<size_t, Stmt>> by_depth;
  for (auto& g : given) by_depth.emplace_back(st.path_to(g.get()).size(), g);
  std::sort(by_depth.begin(), by_depth.end(), [](auto& a, auto& b) { return a.first < b.first; });
  Stmt top = by_depth.front().second, bottom = by_depth.back().second;
  // Walk the chain from top to bottom.
  std::vector<Stmt> chain{top};
  while (!chain.back().same_as(bottom)) {
    Stmt body = chain.back().as<ForNode>()->body;
    if (body.kind() != StmtKind::For) {
      // Either the remaining loops are elsewhere or the nest is not perfect.
      auto path = find_path(chain.back(), bottom.get());
      if (path.empty()) {
        // Two nests often use the same loop names (i, j of each block): say which nest each
        // loop belongs to, by the first block under it.
        auto around = [](const Stmt& l) {
          auto bs = collect_blocks(l, false);
          return bs.empty() ? std::string() : " (around block " + block_of(bs[0])->name + ")";
        };
        refuse("loop " + loop_name(bottom) + around(bottom) + " is not inside loop " + loop_name(top) +
               around(top) + "; the loops must be nested");
      }
      refuse("the loops do not form a perfect nest: the body of loop " + loop_name(chain.back()) +
             " is not a single loop");
    }
    chain.push_back(body);
  }
  for (auto& g : given) {
    bool in = false;
    for (auto& c : chain) in = in || c.same_as(g);
    if (!in)
      refuse("loop " + loop_name(g) + " is not on the nest from loop " + loop_name(top) + " to loop " +
             loop_name(bottom));
  }
  for (auto& c : chain) {
    auto* f = c.as<ForNode>();
    for (auto& d : chain) {
      if (c.same_as(d)) continue;
      const VarNode* v = d.as<ForNode>()->loop_var.get();
      if (uses_var(f->min, v) || uses_var(f->extent, v))
        refuse("the range of loop " + loop_name(c) + " depends on loop " + loop_name(d));
    }
  }
  Stmt inner = bottom.as<ForNode>()->body;
  try {
    check_blocks_independent(inner, "the loop nest");
  } catch (const Refusal&) {
    // Several blocks sharing a buffer (a compute_at producer and its consumer): any order of
    // the nest is still fine when the iterations of every loop of the chain are independent
    // (as parallel requires; then any two points of the nest are), e.g. a producer recomputed
    // per tile. Otherwise the original reason stands.
    bool all_free = true;
    for (auto& c : chain) {
      try {
        check_iterations_independent(st, c, "reorder");
      } catch (const Refusal&) {
        all_free = false;
      }
    }
    if (!all_free) throw;
  }
  check_self_dependence(inner, "the loop nest");
  // Scan iter vars are ordered: their iterations must keep running in increasing order, and
  // a scan point reads what earlier points completed (reductions included). Spatial
  // iterations are independent (a block whose spatial iterations conflict is invalid), so a
  // loop feeding only spatial iter vars may move across the scan loops (TVM refuses every
  // ordered iter var; moving the rows of a row-wise scan outward is legal). For a block with
  // a scan iter var, the loops of the nest feeding its non-spatial iter vars keep their
  // relative order.
  std::vector<Stmt> new_order = chain;
  {
    size_t gk = 0;
    for (auto& c : new_order) {
      bool is_given = false;
      for (auto& g : given) is_given = is_given || g.same_as(c);
      if (is_given) c = given[gk++];
    }
  }
  // The same holds for a reduction whose update is not commutative (`C = C * 0.5 + x`): the
  // interpreter runs it in loop order, so that order of its reduce iterations must stay.
  std::set<const BlockNode*> scan_blocks;
  for (auto& bs : collect_blocks(inner, false)) {
    const BlockRealizeNode* br = realize(bs);
    bool has_scan = false, has_reduce = false;
    for (auto& iv : br->block->iter_vars) {
      has_scan = has_scan || iv.kind == IterKind::Scan;
      has_reduce = has_reduce || iv.kind == IterKind::Reduce;
    }
    std::string why;
    bool ordered_reduce = !has_scan && has_reduce && !commutative_reduction_update(*br->block.get(), &why);
    if (!has_scan && !ordered_reduce) continue;
    if (has_scan) scan_blocks.insert(br->block.get());
    std::vector<Stmt> old_ordered, new_ordered;
    auto feeds_ordered = [&](const Stmt& l) {
      for (auto k : kinds_bound_to(*br, l.as<ForNode>()->loop_var.get()))
        if (k != IterKind::Spatial) return true;
      return false;
    };
    for (auto& c : chain)
      if (feeds_ordered(c)) old_ordered.push_back(c);
    for (auto& c : new_order)
      if (feeds_ordered(c)) new_ordered.push_back(c);
    for (size_t k = 0; k < old_ordered.size(); ++k)
      if (!old_ordered[k].same_as(new_ordered[k]) && ordered_reduce)
        refuse("loop " + loop_name(new_ordered[k]) + " would move across loop " + loop_name(old_ordered[k]) +
               ": both feed the reduce iter vars of block " + br->block->name +
               ", whose update is not a commutative reduction (" + why + ")");
      else if (!old_ordered[k].same_as(new_ordered[k]))
        refuse("loop " + loop_name(new_ordered[k]) + " would move across loop " + loop_name(old_ordered[k]) +
               ": both feed the scan or reduce iter vars of block " + br->block->name +
               ", whose iterations are ordered");
  }
  for (auto& g : given) {
    // Blocks with a scan iter var were checked above (opaque iter vars stay refused).
    bool opaque = false;
    for (auto& bs : collect_blocks(inner, false)) {
      const BlockRealizeNode* br = realize(bs);
      auto kinds = kinds_bound_to(*br, g.as<ForNode>()->loop_var.get());
      for (auto k : kinds)
        opaque =
            opaque || k == IterKind::Opaque || (k == IterKind::Scan && !scan_blocks.count(br->block.get()));
    }
    if (opaque || scan_blocks.empty()) check_loop_bindings(inner, g.as<ForNode>(), true, "reorder");
  }
  // A reduction's init runs at its first iteration: that stays the first one under any
  // order only when no loop of the nest feeds both spatial and reduce iter vars (then, for
  // each output element, the reduction loops start together from their minimum).
  for (auto& bs : collect_blocks(inner, false)) {
    const BlockRealizeNode* br = realize(bs);
    if (!is_reduction_block(*br->block.get())) continue;
    for (auto& c : chain) {
      bool sp = false, rd = false;
      for (auto k : kinds_bound_to(*br, c.as<ForNode>()->loop_var.get()))
        (k == IterKind::Spatial ? sp : rd) = true;
      if (sp && rd)
        refuse("loop " + loop_name(c) + " feeds both spatial and reduce iter vars of block " +
               br->block->name + ", so reordering could move the first iteration of the reduction");
    }
  }
  // New order: positions of given loops receive the given loops in argument order.
  std::vector<Stmt> order = chain;
  size_t gi = 0;
  for (auto& c : order) {
    bool is_given = false;
    for (auto& g : given) is_given = is_given || g.same_as(c);
    if (is_given) c = given[gi++];
  }
  Stmt body = inner;
  for (size_t k = order.size(); k-- > 0;) {
    auto* f = order[k].as<ForNode>();
    body = make_for(f->loop_var, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }
  st.replace(top.get(), body);
}

}  // namespace tirc::sched

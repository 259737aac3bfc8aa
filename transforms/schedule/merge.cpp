// merge(l0, l1, ...): TVM Schedule.merge. Loops of sibling nests at the same depth are merged
// with every loop above them up to the nests' common parent: the nests
//   for i { for j { B } }   for i2 { for j2 { C } }
// become `for i { for j { B; C } }` (the first nest's loops stay; the others' loop vars are
// replaced by them). Returns the merged loop (the first argument's).
// Checked, as TVM: each loop is the only statement of the loop above it up to the nests' top,
// every merged level has min 0, equal extents, serial kind and no annotations; the nests are
// adjacent statements of one body. Merging interleaves the nests' iterations, which is only
// sure to compute the same when no buffer written under one nest is touched under another
// (tirc checks that; TVM does not check dependences here), and no statements lie outside blocks.
#include "ir/printer.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_merge(ScheduleState& st, const ScheduleInstr& ins) {
  auto pos = positional(ins);
  if (pos.size() < 2) refuse("expected at least 2 loops");
  expect_results(ins, 1);
  std::vector<Stmt> targets;
  for (size_t i = 0; i < pos.size(); ++i) {
    Stmt l = arg_loop(st, ins, i);
    for (auto& p : targets)
      if (p.same_as(l)) refuse("loop " + loop_name(l) + " is given twice");
    targets.push_back(l);
  }
  // The chains of loops from each nest's top down to the target.
  auto p0 = st.path_to(targets[0].get());
  std::vector<std::vector<Stmt>> chains;
  size_t lca = 0;  // index in p0 of the deepest common ancestor
  {
    std::vector<std::vector<Stmt>> paths;
    for (auto& t : targets) paths.push_back(st.path_to(t.get()));
    size_t k = 0;
    for (;;) {
      bool same = true;
      for (auto& p : paths) same = same && k < p.size() && p[k].same_as(paths[0][k]);
      if (!same) break;
      ++k;
    }
    if (k == 0) refuse("the loops have no common parent");
    lca = k - 1;
    for (size_t i = 0; i < paths.size(); ++i) {
      std::vector<Stmt> c(paths[i].begin() + static_cast<long>(k), paths[i].end());
      if (c.empty()) refuse("loop " + loop_name(targets[i]) + " contains another of the loops");
      chains.push_back(c);
    }
  }
  const Stmt& parent = p0[lca];
  if (parent.kind() != StmtKind::Seq) refuse("the loops are not in sibling nests");
  auto items = seq_items(parent);
  std::vector<size_t> at;
  for (auto& c : chains) {
    size_t j = 0;
    while (j < items.size() && !items[j].same_as(c[0])) ++j;
    if (j == items.size()) refuse("the loops are not in sibling nests");
    at.push_back(j);
  }
  for (size_t i = 1; i < at.size(); ++i)
    if (at[i] != at[i - 1] + 1)
      refuse("the nests of loops " + loop_name(targets[i - 1]) + " and " + loop_name(targets[i]) +
             " are not adjacent statements (in the order given)");
  size_t depth = chains[0].size();
  for (size_t i = 0; i < chains.size(); ++i) {
    if (chains[i].size() != depth)
      refuse("loops " + loop_name(targets[0]) + " and " + loop_name(targets[i]) + " are at different depths");
    for (size_t d = 0; d < depth; ++d) {
      auto* f = chains[i][d].as<ForNode>();
      if (!f) refuse("the nest of loop " + loop_name(targets[i]) + " has other statements above it");
      if (d + 1 < depth && !f->body.same_as(chains[i][d + 1]))
        refuse("loop " + loop_name(chains[i][d]) + " holds more than loop " + loop_name(chains[i][d + 1]));
      if (f->for_kind != ForKind::Serial || !f->annotations.empty())
        refuse("loop " + loop_name(chains[i][d]) +
               " is not a plain serial loop (merge before changing its kind)");
      int64_t mn;
      if (!is_const_int(f->min, &mn) || mn != 0)
        refuse("loop " + loop_name(chains[i][d]) + " does not start at 0");
      auto* g = chains[0][d].as<ForNode>();
      if (!expr_identical(fold(f->extent), fold(g->extent)))
        refuse("loops " + loop_name(chains[0][d]) + " (extent " +
               print_expr(chains[0][d].as<ForNode>()->extent) + ") and " + loop_name(chains[i][d]) +
               " (extent " + print_expr(chains[i][d].as<ForNode>()->extent) + ") have different extents");
    }
    if (has_loose_effects(chains[i][0]))
      refuse("the nest of loop " + loop_name(targets[i]) + " has statements outside blocks");
  }
  // No buffer written under one nest is touched under another.
  for (size_t i = 0; i < chains.size(); ++i)
    for (auto& wb : collect_blocks(chains[i][0]))
      for (auto& w : written_buffers(*block_of(wb)))
        for (size_t j = 0; j < chains.size(); ++j) {
          if (j == i) continue;
          for (auto& ob : collect_blocks(chains[j][0]))
            if (block_reads(*block_of(ob), w) || block_writes(*block_of(ob), w) ||
                body_reads(*block_of(ob), w))
              refuse("block " + block_of(ob)->name + " under loop " + loop_name(targets[j]) +
                     " touches buffer " + w->name + ", which block " + block_of(wb)->name + " under loop " +
                     loop_name(targets[i]) + " writes (merging would interleave them)");
        }
  // Build: the first chain's loops around all bodies (vars of the others replaced).
  std::vector<Stmt> bodies;
  for (size_t i = 0; i < chains.size(); ++i) {
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t d = 0; d < depth; ++d)
      sub[chains[i][d].as<ForNode>()->loop_var.get()] = chains[0][d].as<ForNode>()->loop_var;
    Stmt b = chains[i][depth - 1].as<ForNode>()->body;
    bodies.push_back(i == 0 ? b : substitute(b, sub));
  }
  Stmt s = make_seq(bodies);
  for (size_t d = depth; d-- > 0;) {
    auto* f = chains[0][d].as<ForNode>();
    s = rebuild_for(*f, f->loop_var, f->min, f->extent, s);
  }
  std::vector<Stmt> out;
  for (size_t j = 0; j < items.size(); ++j) {
    if (j == at[0]) out.push_back(s);
    if (j >= at.front() && j <= at.back()) continue;
    out.push_back(items[j]);
  }
  st.replace(parent.get(), make_seq(out));
  bind_loop(st, ins, 0, targets[0].as<ForNode>()->loop_var);
}

}  // namespace tirc::sched

// blk = blockize(loop): TVM Schedule.blockize. Wraps the subtree of `loop` in a new block
// "<inner>_o" placed where the loop was. The new block has one iter var per enclosing loop
// that the subtree uses (kind: spatial when the loop feeds only spatial iter vars of the
// blocks inside, reduce when only reduce ones, opaque otherwise), bound to that loop; inside,
// the loop vars are replaced by these iter vars. Its reads/writes are the inner regions
// relaxed over the inner loops. Nothing is reordered, so it is always legal once the
// subtree holds at least one block. When the outer block reduces, the init moves to it
// (see move_init_out), as TVM's blockize does.
#include <functional>
#include <set>
#include <unordered_set>

#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

// TVM's blockize of a reduction tile: when the new outer block reduces (a loop outside the
// tile feeds the inner block's reduce iter vars), the inner block's init becomes the outer
// block's init, as a nest "<B>_init" over the tile's spatial loops, and the inner block
// keeps only the update. Then decompose_reduction / tensorize see the usual shape. Done only
// when the tile is a perfect loop nest around the one block, every tile loop feeds either
// spatial or reduce iter vars (not both, not none), the init does not use reduce iter vars
// and the predicate does not involve the tile's reduce loops; otherwise the init stays inside
// (which is also correct: it runs at the first iteration of the whole reduction).
void move_init_out(const ScheduleState& st, const std::string& outer_name,
                   const std::unordered_set<const VarNode*>& outer_reduce, Stmt* body, Stmt* init) {
  std::vector<const ForNode*> loops;
  Stmt cur = *body;
  while (auto* f = cur.as<ForNode>()) {
    loops.push_back(f);
    cur = f->body;
  }
  const BlockRealizeNode* br = cur.as<BlockRealizeNode>();
  if (!br || !br->block->init.defined()) return;
  const BlockNode* b = br->block.get();
  std::vector<bool> spatial(loops.size());
  std::unordered_set<const VarNode*> red_loops;
  for (size_t i = 0; i < loops.size(); ++i) {
    bool sp = false, rd = false;
    for (auto k : kinds_bound_to(*br, loops[i]->loop_var.get())) {
      if (k == IterKind::Spatial)
        sp = true;
      else if (k == IterKind::Reduce)
        rd = true;
      else
        return;
    }
    if (sp == rd) return;
    spatial[i] = sp;
    if (rd) red_loops.insert(loops[i]->loop_var.get());
  }
  for (size_t i = 0; i < loops.size(); ++i)
    for (auto* v : red_loops)
      if (uses_var(loops[i]->min, v) || uses_var(loops[i]->extent, v)) return;
  auto is_red = [&](const VarNode* v) { return red_loops.count(v) > 0; };
  // Conjuncts of the predicate over reduce loops only (a non-dividing split of the reduction,
  // `where vko_o * 4 + ki < 10`) restrict the reduction, not the output elements: the init
  // nest drops them, as decompose_reduction does. A conjunct mixing both kinds keeps the
  // init inside.
  auto is_red_any = [&](const VarNode* v) { return red_loops.count(v) > 0 || outer_reduce.count(v) > 0; };
  std::vector<Expr> init_pred;
  for (auto& c : conjuncts(fold(br->predicate))) {
    if (!uses_var(c, is_red_any)) {
      init_pred.push_back(c);
      continue;
    }
    if (uses_var(c, [&](const VarNode* v) { return !is_red_any(v); })) return;
  }
  bool init_uses_reduce = false;
  for_each_expr(b->init, [&](const Expr& e) {
    for (auto& iv : b->iter_vars)
      if (iv.kind != IterKind::Spatial && e.get() == iv.var.get()) init_uses_reduce = true;
  });
  if (init_uses_reduce) return;
  for (size_t i = 0; i < b->iter_vars.size(); ++i)
    if (b->iter_vars[i].kind == IterKind::Spatial && uses_var(br->bindings[i], is_red)) return;
  // The init nest: copies of the spatial tile loops around a spatial copy of the block.
  std::unordered_map<const VarNode*, Expr> loop_sub, iv_sub;
  std::vector<std::pair<const ForNode*, Var>> copied;
  std::set<std::string> used;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!spatial[i]) continue;
    std::string n = fresh_var_name(st, loops[i]->loop_var.name() + "_init");
    for (int k = 1; used.count(n); ++k)
      n = fresh_var_name(st, loops[i]->loop_var.name() + "_init" + std::to_string(k));
    used.insert(n);
    Var v(n, loops[i]->loop_var.dtype());
    loop_sub[loops[i]->loop_var.get()] = v;
    copied.emplace_back(loops[i], v);
  }
  std::vector<IterVar> ivs;
  std::vector<Expr> binds;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const IterVar& iv = b->iter_vars[i];
    if (iv.kind != IterKind::Spatial) continue;
    Var nv(iv.var.name(), iv.var.dtype());
    iv_sub[iv.var.get()] = nv;
    ivs.push_back(IterVar{nv, IterKind::Spatial, iv.extent});
    binds.push_back(substitute(br->bindings[i], loop_sub));
  }
  std::string init_name = st.fresh_block_name(b->name + "_init");
  if (init_name == outer_name) init_name = st.fresh_block_name(b->name + "_init_1");
  Stmt nest = make_simple_block(init_name, ivs, binds, substitute(b->init, iv_sub), Stmt(),
                                fold(substitute(make_and(init_pred), loop_sub)));
  for (size_t k = copied.size(); k-- > 0;)
    nest = make_for(copied[k].second, substitute(copied[k].first->min, loop_sub),
                    substitute(copied[k].first->extent, loop_sub), ForKind::Serial, nest);
  Stmt nb = update_realize(cur, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.init = Stmt(); });
  });
  *body = replace_stmt(*body, cur.get(), nb);
  *init = nest;
}

}  // namespace

// Wraps `ls` (a loop of the tree, or a Seq of consecutive statements of the tree starting at
// `anchor`) in a new block; `place` puts the new block where `ls` was. Returns its name.
static std::string blockize_subtree(ScheduleState& st, const Stmt& ls, const Stmt& anchor,
                                    const std::string& base_name,
                                    const std::function<void(const Stmt&)>& place) {
  auto inner = collect_blocks(ls, false);
  // Everything bound above the loop that the subtree may use: enclosing loops and the iter
  // vars of enclosing blocks (a block body may not use variables bound outside it).
  std::vector<EnclosingVar> outer = enclosing_vars(st, anchor.get());
  std::vector<IterVar> ivs;
  std::vector<Expr> binds;
  std::unordered_map<const VarNode*, Expr> sub;
  std::vector<std::string> used;
  for (auto& o : outer) {
    const EnclosingVar* f = &o;
    const VarNode* v = f->var.get();
    bool mentioned = false;
    for_each_expr(ls, [&](const Expr& e) { mentioned = mentioned || e.get() == v; });
    if (!mentioned) continue;
    bool sp = false, other = false, rd = false;
    for (auto& b : inner)
      for (auto k : kinds_bound_to(*realize(b), v)) {
        if (k == IterKind::Spatial)
          sp = true;
        else if (k == IterKind::Reduce)
          rd = true;
        else
          other = true;
      }
    IterKind kind = other || (sp && rd) ? IterKind::Opaque : rd ? IterKind::Reduce : IterKind::Spatial;
    std::string nm = f->var.name();
    if (nm.size() > 1 && nm[0] == 'v') nm = nm.substr(1);
    std::string n = fresh_var_name(st, "v" + nm + "_o");
    for (int k = 1; std::find(used.begin(), used.end(), n) != used.end(); ++k)
      n = fresh_var_name(st, "v" + nm + "_o" + std::to_string(k));
    used.push_back(n);
    Var iv(n, f->var.dtype());
    ivs.push_back(IterVar{iv, kind, f->extent});
    binds.push_back(is_zero(f->min) ? Expr(f->var) : fold(f->var - f->min));
    sub[v] = is_zero(f->min) ? Expr(iv) : fold(iv + f->min);
    if (uses_var(f->extent, [&](const VarNode* x) {
          for (auto& o2 : outer)
            if (o2.var.get() == x) return true;
          return false;
        }))
      refuse("the extent of " + f->var.name() + " depends on an enclosing loop");
  }
  Stmt body = substitute(ls, sub);
  std::string base = !base_name.empty()  ? base_name
                     : inner.size() == 1 ? block_of(inner[0])->name + "_o"
                                         : "blockized";
  std::string name = st.fresh_block_name(base);
  Stmt init;
  // The outer block's init runs when its reduce iter vars are all 0: that is the first
  // iteration of the reduction only when no outer var feeds both kinds (opaque).
  bool outer_reduces = false, outer_opaque = false;
  for (auto& iv : ivs) {
    outer_reduces = outer_reduces || iv.kind == IterKind::Reduce;
    outer_opaque = outer_opaque || iv.kind == IterKind::Opaque;
  }
  std::unordered_set<const VarNode*> outer_reduce;
  for (auto& iv : ivs)
    if (iv.kind == IterKind::Reduce) outer_reduce.insert(iv.var.get());
  if (outer_reduces && !outer_opaque) move_init_out(st, name, outer_reduce, &body, &init);
  Stmt outer_block = make_simple_block(name, ivs, binds, body, init);
  place(outer_block);
  return name;
}

// blockize([b1, b2, ...]) (TVM: blockize of a list of blocks): the blocks' nests, consecutive
// statements of one parent, are wrapped in one block "outer_<b1>_<b2>_" (TVM's name). Nothing
// moves, so it is legal once the statements hold exactly the listed blocks.
static void blockize_blocks(ScheduleState& st, const ScheduleInstr& ins) {
  const ScheduleArg& la = ins.args[0];
  if (la.list.empty()) refuse("the list of blocks is empty");
  std::vector<Stmt> blocks;
  std::string base = "outer_";
  for (auto& item : la.list) {
    ScheduleInstr one = ins;
    one.args = {item};
    Stmt b = arg_block(st, one, 0);
    for (auto& o : blocks)
      if (o.same_as(b)) refuse("block " + block_of(b)->name + " is given twice");
    blocks.push_back(b);
    base += block_of(b)->name + "_";
  }
  // The lowest common ancestor of the blocks must be a Seq whose items are their nests.
  std::vector<std::vector<Stmt>> paths;
  for (auto& b : blocks) paths.push_back(st.path_to(b.get()));
  size_t c = 0;
  for (;; ++c) {
    bool same = true;
    for (auto& p : paths) same = same && c < p.size() && p[c].same_as(paths[0][c]);
    if (!same) break;
  }
  const SeqNode* seq = c > 0 ? paths[0][c - 1].as<SeqNode>() : nullptr;
  if (blocks.size() == 1)
    refuse("a list of one block (" + block_of(blocks[0])->name +
           "): blockize a loop of its nest instead, e.g. blockize(loops[0]) with loops = get_loops(b) (a "
           "list wraps the nests of several sibling blocks)");
  if (!seq)
    refuse("the blocks must lie in sibling statements of one parent (use blockize(loop) for one nest)");
  size_t lo = seq->stmts.size(), hi = 0;
  for (auto& p : paths)
    for (size_t k = 0; k < seq->stmts.size(); ++k)
      if (seq->stmts[k].same_as(p[c])) {
        lo = std::min(lo, k);
        hi = std::max(hi, k);
      }
  std::vector<Stmt> items(seq->stmts.begin() + static_cast<std::ptrdiff_t>(lo),
                          seq->stmts.begin() + static_cast<std::ptrdiff_t>(hi) + 1);
  for (auto& it : items)
    for (auto& b : collect_blocks(it, false)) {
      bool listed = false;
      for (auto& o : blocks) listed = listed || o.same_as(b);
      if (!listed)
        refuse("block " + block_of(b)->name + " lies among the listed blocks' statements but is not listed");
    }
  Stmt parent = paths[0][c - 1];
  Stmt sub = make_seq(items);
  std::string name = blockize_subtree(st, sub, items[0], base, [&](const Stmt& nb) {
    std::vector<Stmt> out;
    for (size_t k = 0; k < seq->stmts.size(); ++k) {
      if (k == lo) out.push_back(nb);
      if (k < lo || k > hi) out.push_back(seq->stmts[k]);
    }
    st.replace(parent.get(), make_seq(out));
  });
  bind_block(st, ins, 0, name);
}

void prim_blockize(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  if (ins.results.size() > 1) expect_results(ins, 1);
  if (ins.args[0].kind == ScheduleArg::List) return blockize_blocks(st, ins);
  Stmt ls = arg_loop(st, ins, 0);
  if (collect_blocks(ls, false).empty()) refuse("loop " + loop_name(ls) + " holds no block");
  std::string name = blockize_subtree(st, ls, ls, "", [&](const Stmt& nb) { st.replace(ls.get(), nb); });
  bind_block(st, ins, 0, name);
}

}  // namespace tirc::sched

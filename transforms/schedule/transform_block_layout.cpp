// transform_block_layout(block, index_map): TVM Schedule.transform_block_layout. Remaps the
// iteration space of a leaf block: new iter vars u = f(v) (`lambda i, j: (j // 4, i, j % 4)`),
// the body sees v = f^-1(u), and the block's loops are regenerated as one serial loop per new
// iter var (TVM: "outer loops that contain the block will be regenerated"; their handles are
// gone afterwards). The usual use: after transform_layout of a packed copy, give the copy the
// buffer's new layout as its iteration space (`B_p[u0, u1, u2] = B[u1, u0 * 4 + u2]`), so
// that compute_at can move it (its store indices are then distinct iter vars).
//
// Checked (as TVM's requirements): the block has no nested blocks and no `where`; each iter var
// is bound to its own loop (min 0, the iter var's extent) and those loops hold nothing but the
// block; the map is one-to-one from the iteration domain ONTO a box [0, e) (no padding: a
// block cannot run extra iterations) — checked point by point for constant extents — and is
// an affine mixed-radix map whose inverse is derived (arith.h invert_bindings) and checked at
// every point; each new iter var takes the kind of the old ones it mixes (spatial / reduce;
// mixing the two is refused, as TVM does). Results: none (the block keeps its name).
#include "ir/mutator.h"
#include "ir/printer.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/index_map.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"
#include "transforms/simplify/simplify.h"

namespace tirc::sched {

void prim_transform_block_layout(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = block_of(bs);
  const ScheduleArg& m = ins.args[1];
  if (m.kind != ScheduleArg::Lambda)
    refuse("the index map must be a lambda, e.g. lambda i, j: (j // 4, i, j % 4)");
  size_t n = b->iter_vars.size();
  if (m.lambda_params.size() != n)
    refuse("the index map takes " + std::to_string(m.lambda_params.size()) + " ind" +
           (m.lambda_params.size() == 1 ? "ex" : "ices") + " but block " + b->name + " has " +
           std::to_string(n) + " iter var" + (n == 1 ? "" : "s"));
  if (n == 0) refuse("block " + b->name + " has no iter vars");
  for (auto& e : m.lambda_body) check_index_map(e);
  if (collect_blocks(b->body).size() > 0 || (b->init.defined() && collect_blocks(b->init).size() > 0))
    refuse("block " + b->name + " is not a leaf block (it holds other blocks)");
  int64_t pv = 1;
  if (br->predicate.defined() && !(is_const_int(br->predicate, &pv) && pv == 1))
    refuse("block " + b->name + " has a predicate (where " + print_expr(br->predicate) + ")");
  // Trivial bindings: iter var k bound to its own loop of the same extent.
  auto loops = st.loops_above(bs.get());
  if (loops.size() != n)
    refuse("block " + b->name + " has " + std::to_string(n) + " iter vars under " +
           std::to_string(loops.size()) + " loops (each iter var must be bound to its own loop)");
  std::vector<int64_t> old_ext;
  for (size_t k = 0; k < n; ++k) {
    auto* f = loops[k].as<ForNode>();
    const IterVar& iv = b->iter_vars[k];
    int64_t e, lmin, lext;
    if (!is_const_int(iv.extent, &e))
      refuse("iter var " + iv.var.name() + " has a symbolic extent (the map is checked point by point)");
    bool own = false;
    for (size_t j = 0; j < n; ++j) {
      auto* g = loops[j].as<ForNode>();
      if (br->bindings[k].get() == g->loop_var.get() && is_const_int(g->min, &lmin) && lmin == 0 &&
          is_const_int(g->extent, &lext) && lext == e)
        own = true;
    }
    if (!own)
      refuse("iter var " + iv.var.name() + " of block " + b->name + " is bound to " +
             print_expr(br->bindings[k]) + ", not to a loop of its extent (TVM requires trivial bindings)");
    if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce)
      refuse("iter var " + iv.var.name() + " is " + iter_kind_name(iv.kind) + " (only spatial and reduce)");
    (void)f;
    old_ext.push_back(e);
  }
  for (size_t k = 0; k < n; ++k)
    for (size_t j = k + 1; j < n; ++j)
      if (br->bindings[k].get() == br->bindings[j].get())
        refuse("iter vars " + b->iter_vars[k].var.name() + " and " + b->iter_vars[j].var.name() +
               " are bound to the same loop");
  // The outermost loop must hold only the block (the exclusive root is it or above it).
  Stmt excl = exclusive_root(st, bs);
  bool alone = false;
  for (auto& p : st.path_to(loops[0].get())) alone = alone || p.same_as(excl);
  if (!alone) refuse("the loops of block " + b->name + " hold other statements too");
  // Only loops between them and the block (a let or if there would be dropped).
  {
    auto path = st.path_to(bs.get());
    bool below = false;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      if (path[i].same_as(loops[0])) below = true;
      if (below && (path[i].kind() == StmtKind::LetStmt || path[i].kind() == StmtKind::IfThenElse))
        refuse("a statement other than a loop lies between the loops of block " + b->name + " and the block");
    }
  }
  MapImage img = map_image(m.lambda_params, m.lambda_body, old_ext);
  if (img.too_big)
    refuse("block " + b->name + " has too many iterations to check the index map point by point");
  for (size_t k = 0; k < img.lo.size() && img.points > 0; ++k)
    if (img.lo[k] < 0)
      refuse("result " + std::to_string(k) + " of the index map (" + print_expr(m.lambda_body[k]) +
             ") is negative at some iteration");
  if (!img.injective) refuse("the index map is not one-to-one on the iteration domain of block " + b->name);
  if (img.box_points != img.points)
    refuse("the index map is not onto a box: block " + b->name + " has " + std::to_string(img.points) +
           " iterations, the new domain " + std::to_string(img.box_points) + " (a block cannot pad)");
  std::vector<Expr> new_ext;
  for (auto h : img.hi) new_ext.push_back(make_int(img.points > 0 ? h + 1 : 1));
  // Kinds of the new iter vars.
  std::vector<IterVar> nivs;
  std::vector<Var> uvars;
  for (size_t k = 0; k < m.lambda_body.size(); ++k) {
    bool sp = false, rd = false;
    for (size_t j = 0; j < n; ++j)
      if (uses_var(m.lambda_body[k], m.lambda_params[j].get()))
        (b->iter_vars[j].kind == IterKind::Reduce ? rd : sp) = true;
    if (sp && rd)
      refuse("result " + std::to_string(k) + " of the index map (" + print_expr(m.lambda_body[k]) +
             ") mixes spatial and reduce iter vars");
    Var u("v" + std::to_string(k), DType::I32);
    uvars.push_back(u);
    nivs.push_back(IterVar{u, rd ? IterKind::Reduce : IterKind::Spatial, new_ext[k]});
  }
  // A reduction whose update is not commutative (`C = C * 0.5 + x`) runs its terms in the
  // order of its reduce iter vars: the map must keep them, in order.
  {
    std::string why;
    std::vector<const VarNode*> old_red, new_red;
    for (size_t j = 0; j < n; ++j)
      if (b->iter_vars[j].kind == IterKind::Reduce) old_red.push_back(m.lambda_params[j].get());
    for (size_t k = 0; k < nivs.size(); ++k)
      if (nivs[k].kind == IterKind::Reduce) {
        auto* v = m.lambda_body[k].as<VarNode>();
        new_red.push_back(v);
      }
    if (!old_red.empty() && old_red != new_red && !commutative_reduction_update(*b, &why))
      refuse("the index map reorders the reduce iter vars of block " + b->name +
             ", whose update is not a commutative reduction (" + why + ")");
  }
  std::vector<LoopDom> doms;
  for (size_t j = 0; j < n; ++j) doms.push_back(LoopDom{m.lambda_params[j], make_int(old_ext[j])});
  auto inv = invert_bindings(m.lambda_body, uvars, new_ext, doms, make_bool(true));
  if (!inv || inv->size() < n)
    refuse(
        "the index map is not recognised as an affine map (splits and fusions of the iter vars), whose "
        "inverse gives the old iter vars");
  // Check the inverse at every point: g(f(x)) == x.
  std::vector<const VarNode*> pvars, uv;
  for (auto& p : m.lambda_params) pvars.push_back(p.get());
  for (auto& u : uvars) uv.push_back(u.get());
  std::vector<Expr> g;
  for (size_t j = 0; j < n; ++j) {
    g.push_back(fold(inv->at(m.lambda_params[j].get())));
    check_index_map(g.back());
  }
  {
    std::vector<int64_t> pt(n, 0), y(uvars.size());
    bool bad = false;
    for (int64_t c = 0; c < img.points && !bad; ++c) {
      int64_t rem = c;
      for (size_t d = n; d-- > 0;) {
        pt[d] = rem % old_ext[d];
        rem /= old_ext[d];
      }
      for (size_t k = 0; k < y.size(); ++k) y[k] = eval_index(m.lambda_body[k], pvars, pt);
      for (size_t j = 0; j < n && !bad; ++j) bad = eval_index(g[j], uv, y) != pt[j];
    }
    if (bad) refuse("the inverse of the index map could not be derived");
  }
  // old iter var j -> g_j(u).
  std::unordered_map<const VarNode*, Expr> sub;
  for (size_t j = 0; j < n; ++j) sub[b->iter_vars[j].var.get()] = g[j];
  // Indices simplified knowing 0 <= u_k < e_k: `(v0 * 4 + v2) // 4` is v0.
  VarRanges ur;
  for (size_t k = 0; k < uvars.size(); ++k) ur[uvars[k].get()] = Interval{0, img.hi[k]};
  auto sub_regions = [&](std::vector<BufferRegion> rs) {
    for (auto& r : rs)
      for (auto& rg : r.ranges) {
        rg.begin = simplify(substitute(rg.begin, sub), ur);
        if (rg.end.defined()) rg.end = simplify(substitute(rg.end, sub), ur);
      }
    return rs;
  };
  Block nb = update_block(br->block, [&](BlockNode& x) {
    x.iter_vars = nivs;
    x.reads = sub_regions(x.reads);
    x.writes = sub_regions(x.writes);
    if (x.init.defined()) x.init = simplify(substitute(x.init, sub), ur);
    x.body = simplify(substitute(x.body, sub), ur);
  });
  std::vector<std::string> names;
  for (size_t k = 0; k < nivs.size(); ++k) names.push_back("ax" + std::to_string(k));
  Stmt nest = make_nest(st, new_ext, names, [&](const std::vector<Var>& vs) {
    std::vector<Expr> binds(vs.begin(), vs.end());
    return make_block_realize(binds, br->predicate, nb);
  });
  st.replace(loops[0].get(), nest);
}

}  // namespace tirc::sched

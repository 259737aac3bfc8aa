// compute_at(block, loop): TVM Schedule.compute_at. Moves a producer block P under `loop`
// (at the start of its body), regenerating loops so that each iteration of `loop` computes
// exactly the part of P's output that the consumers under `loop` read in that iteration
// (their read regions, relaxed over the loops between `loop` and them). Legal when: P is
// the only writer of X outside `loop` (X not an input parameter), all readers of X are
// under `loop`, P's store indices are distinct iter vars (or `c - v` / `v + c`: see
// StoreAxis), P covers its domain exactly once (so any element of the domain may be
// recomputed), P comes before `loop`, and nothing that P reads is written after P's old
// position up to the consumers (or under `loop`).
// Recomputation is harmless: P's value depends only on stable inputs; a reduction P has an
// init, which re-runs with every recomputation. P's `where` is kept (in the new bindings),
// together with the bound checks of the recomputed region. When X is an output, or blocks
// under `loop` update it, nothing may be recomputed: the iterations must tile X exactly once
// (check_exact_tiling). P must not move between the init and the body of its scope block.
// A P that does not cover its domain is accepted when it stays inside the loops around it
// and its consumers read only what it wrote in the same iteration (recomputable_in_its_loop).
#include "ir/printer.h"
#include "ir/reducer.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/guarded_region.h"
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/predicate.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// The hull of two regions whose ends compare the same way for every value of the loops
// above the target (`known`: their constant ranges). Consumers may index one dimension by a
// unit loop's variable (`n` of extent 1) or by the constant 0 where reverse_compute_at dropped
// that unit loop: the ends differ by a non-constant that the ranges still order.
std::optional<SymRange> hull(const std::optional<SymRange>& a, const std::optional<SymRange>& b,
                             const RangeMap& known) {
  if (!a || !b) return std::nullopt;
  auto dl = to_linear(fold(a->lo - b->lo)), dh = to_linear(fold(a->hi - b->hi));
  Expr lo, hi;
  if (dl && dl->terms.empty())
    lo = dl->c <= 0 ? a->lo : b->lo;
  else if (prove_le(a->lo, b->lo, known))
    lo = a->lo;
  else if (prove_le(b->lo, a->lo, known))
    lo = b->lo;
  if (dh && dh->terms.empty())
    hi = dh->c >= 0 ? a->hi : b->hi;
  else if (prove_le(b->hi, a->hi, known))
    hi = a->hi;
  else if (prove_le(a->hi, b->hi, known))
    hi = b->hi;
  if (!lo.defined() || !hi.defined()) return std::nullopt;
  return SymRange{lo, hi};
}

// For `exact` moves of a block whose unread elements need not be computed (X is not an output
// and nothing reads it after the loop): the parts computed in different iterations of the
// loops at and above `loop` are disjoint, so no element is computed twice, and every element
// the consumers read in an iteration is computed there (need is their hull). Each dimension's
// part is [c + w * T, c + w * T + w) with T = sum a_k * l_k (a dimension computed whole in every
// iteration adds nothing); T over all dimensions is one-to-one when each loop of extent > 1
// appears in one term of one dimension and, per dimension, the terms sorted by |a| exceed
// the span of the smaller ones (a mixed-radix number: `2 * y + 1` over 8 rows of a dilated
// gradient, which computes only its odd rows).
bool disjoint_parts(const std::vector<Stmt>& above, const BlockNode& p, const std::vector<int>& ivs,
                    const std::vector<std::optional<SymRange>>& need) {
  std::unordered_map<const VarNode*, int64_t> ext;
  for (auto& l : above) {
    auto* f = l.as<ForNode>();
    int64_t e;
    if (!is_zero(f->min) || !is_const_int(fold(f->extent), &e) || e <= 0) return false;
    ext[f->loop_var.get()] = e;
  }
  std::unordered_set<const VarNode*> used;
  for (size_t d = 0; d < ivs.size(); ++d) {
    if (!need[d]) return false;
    const IterVar& iv = p.iter_vars[static_cast<size_t>(ivs[d])];
    DType t = iv.var.dtype();
    if (is_zero(fold(need[d]->lo)) && prove_eq(fold(need[d]->hi), fold(iv.extent - make_int(1, t)))) continue;
    int64_t wc;
    if (!is_const_int(fold(need[d]->hi - need[d]->lo + make_int(1, t)), &wc) || wc <= 0) return false;
    auto lin = to_linear(fold(need[d]->lo));
    if (!lin) return false;
    std::vector<std::pair<int64_t, int64_t>> terms;  // |a|, extent
    for (auto& [a, k] : lin->terms) {
      auto* v = a.as<VarNode>();
      auto it = v ? ext.find(v) : ext.end();
      if (it == ext.end() || k % wc != 0 || !used.insert(v).second) return false;
      if (it->second > 1) terms.emplace_back(k / wc < 0 ? -k / wc : k / wc, it->second);
    }
    std::sort(terms.begin(), terms.end());
    int64_t span = 0;
    for (auto& [a, e] : terms) {
      if (a <= span) return false;
      span += a * (e - 1);
    }
  }
  for (auto& [v, e] : ext)
    if (e > 1 && !used.count(v)) return false;
  return true;
}

// For `exact` moves (see prim_compute_at): the region of X computed in an iteration of `loop`
// (need, per store dimension d of iter var ivs[d]) has a constant width w_d and starts at
// w_d * T_d(loops) where the map T of the loops at and above `loop` onto tile indices is
// one-to-one and onto (as reverse_compute_at checks its tiles), so every element of P's domain
// is computed in exactly one iteration; the other writers (under the loop) must read X and
// write it only inside the region computed in their iteration.
void check_exact_tiling(
    const Stmt& ls, const std::vector<Stmt>& above, const BlockNode& p, const Buffer& X,
    const std::vector<int>& ivs, const std::vector<std::optional<SymRange>>& need,
    const std::vector<Stmt>& others, const std::string& why, bool onto,
    const std::function<std::vector<std::optional<SymRange>>(std::vector<std::optional<SymRange>>)>&
        to_need_space) {
  // A writer that only overwrites X (round 19 follow-up, h6's F4: cache_inplace's copy-out
  // `W_grad[...] = W_grad_local[...]` after W_grad_init is computed at the tile loop) is allowed
  // as one that updates it: P goes first in the loop body (before every item touching X, also
  // with `index=`), so in each iteration the writer runs after P's part; it writes only inside
  // that part, which no other iteration of P writes (the exact tiling below): its values are
  // final as before, and a reader of the iteration sees P's value or the writer's as before.
  for (auto& w : others) {
    const BlockNode* wb = block_of(w);
    bool reads = body_reads(*wb, X);
    for (auto& r : wb->writes) {
      if (!r.buffer.same_as(X)) continue;
      auto g = to_need_space(accessed_region_under_loop(ls, w, r, true, const_ranges(above)));
      for (size_t d = 0; d < g.size(); ++d)
        if (!g[d] || !need[d] || !prove_le(need[d]->lo, g[d]->lo) || !prove_le(g[d]->hi, need[d]->hi))
          refuse(reads ? "block " + wb->name + " writes " + X->name +
                             " outside the region it reads under loop " + loop_name(ls)
                       : "block " + wb->name + " overwrites buffer " + X->name + ", which block " + p.name +
                             " writes, outside the part of it computed in an iteration of loop " +
                             loop_name(ls));
    }
  }
  if (!onto && disjoint_parts(above, p, ivs, need)) return;
  std::vector<Expr> tiles, tile_exts;
  for (size_t d = 0; d < ivs.size(); ++d) {
    const IterVar& iv = p.iter_vars[static_cast<size_t>(ivs[d])];
    DType t = iv.var.dtype();
    std::string bad = "the parts of " + X->name + " computed in the iterations of loop " + loop_name(ls) +
                      " do not cover it exactly once (" + why + ")";
    if (!need[d]) refuse(bad);
    // A dimension computed whole in every iteration (`[0, n)` of a symbolic n): the parts are
    // disjoint and cover X exactly when the tiles of the other dimensions are (the loops must
    // then map one-to-one onto those tiles).
    if (is_zero(fold(need[d]->lo)) && prove_eq(fold(need[d]->hi), fold(iv.extent - make_int(1, t)))) continue;
    int64_t wc, ext;
    if (!is_const_int(fold(need[d]->hi - need[d]->lo + make_int(1, t)), &wc) || wc <= 0) refuse(bad);
    auto lin = to_linear(need[d]->lo);
    if (!lin || lin->c != 0) refuse(bad);
    Linear tl;
    tl.dtype = t;
    for (auto& [a, k] : lin->terms) {
      if (k % wc != 0) refuse(bad);
      tl.terms.emplace_back(a, k / wc);
    }
    tiles.push_back(from_linear(tl));
    if (is_const_int(fold(iv.extent), &ext))
      tile_exts.push_back(make_int((ext + wc - 1) / wc, t));
    else if (wc == 1)
      tile_exts.push_back(iv.extent);
    else  // a symbolic extent split by a constant (TVM's `None` factor): ceil(n / wc) tiles
      tile_exts.push_back(fold(floordiv(iv.extent + make_int(wc - 1, t), make_int(wc, t))));
  }
  if (tiles.empty())  // every dimension whole in every iteration: computed more than once
    refuse("the parts of " + X->name + " computed in the iterations of loop " + loop_name(ls) +
           " do not cover it exactly once (" + why + ")");
  std::vector<LoopDom> loops;
  for (auto& l : above) {
    auto* f = l.as<ForNode>();
    if (!is_zero(f->min)) refuse("loop " + loop_name(l) + " does not start at 0 (" + why + ")");
    loops.push_back(LoopDom{f->loop_var, f->extent});
  }
  // A non-dividing split of the consumer's loop (10 rows split by 3) gives iterations past the
  // last tile: allowed, as reverse_compute_at allows them, since the moved block then gets
  // `value < extent` (added below whenever the bound is not provable) and runs in none of them.
  std::vector<Expr> overshoot;
  for (size_t t = 0; t < tiles.size(); ++t)
    overshoot.push_back(make_binary(BinOp::LT, tiles[t], tile_exts[t]));
  if (!bijective_bindings(tiles, tile_exts, loops, make_and(overshoot)))
    refuse("the parts of " + X->name + " computed in the iterations of loop " + loop_name(ls) +
           " do not cover it exactly once (" + why + ")");
}

// A producer already inside a loop nest (a cache_read copy placed by cache_read under the
// k-tile loop, next to the copy it reads, then moved deeper with compute_at as TVM's
// multi-level tiling does) need not cover its domain: moving it stays sound when every loop
// around it also encloses the target loop (it stays in the same iteration of each), it is a
// pure spatial writer (recomputing an element stores the same value from the same inputs:
// the stability of its inputs is checked by the caller), nothing else writes X, and in every
// iteration of its innermost loop C the consumers read only what it wrote in that iteration
// (deps.h read_inside_written). Then each element recomputed under the target loop is one
// the old position wrote in the same iteration of C, before the consumers (which are all
// under the target loop, after it).
bool recomputable_in_its_loop(const ScheduleState& st, const Stmt& ps, const Stmt& ls, const Buffer& X,
                              bool exact, const std::vector<Stmt>& consumers) {
  if (exact) return false;
  // The loops shared with other statements (P's own nest below them is regenerated).
  auto loops = st.loops_above(exclusive_root(st, ps).get());
  if (loops.empty()) return false;
  for (auto& l : loops)
    if (find_path(l, ls.get()).empty()) return false;
  BufferRegion wreg;
  for (auto& r : block_of(ps)->writes)
    if (r.buffer.same_as(X)) wreg = r;
  if (!wreg.buffer.defined()) return false;
  for (auto& c : consumers)
    if (!read_inside_written(st, loops.back(), ps, wreg, c)) return false;
  return true;
}

// One store index of P as `off + sign * v` for an iter var v (sign +-1, off a constant):
// TVM's compute_at takes any affine store whose produced region is still a box, such as the
// reversed `Y[9 - vi, 9 - vj]` (test_compute_at_rev_iter). The region of X needed under the
// loop maps back to the range of v: [lo - off, hi - off], or [off - hi, off - lo] reversed.
struct StoreAxis {
  int iv = -1;
  int64_t sign = 1, off = 0;
  int64_t scale = 1;  // a blockized P writes the box [scale * v + off, scale * v + off + scale)
  bool operator==(const StoreAxis&) const = default;
};

// The axes of a store (refuses, as index_vars, unless every index is `off +- v` of distinct
// iter vars v).
std::vector<StoreAxis> store_axes(const BlockNode& b, const std::vector<Expr>& idx) {
  std::vector<StoreAxis> out;
  const std::string bad = "the indices of the store in block " + b.name + " are not distinct iter vars";
  for (auto& e : idx) {
    auto lin = to_linear(fold(e));
    if (!lin || lin->terms.size() != 1 || (lin->terms[0].second != 1 && lin->terms[0].second != -1))
      refuse(bad);
    auto* v = lin->terms[0].first.as<VarNode>();
    StoreAxis a;
    for (size_t i = 0; v && i < b.iter_vars.size(); ++i)
      if (b.iter_vars[i].var.get() == v) a.iv = static_cast<int>(i);
    if (a.iv < 0) refuse(bad);
    for (auto& o : out)
      if (o.iv == a.iv) refuse(bad);
    a.sign = lin->terms[0].second;
    a.off = lin->c;
    out.push_back(a);
  }
  return out;
}

// A block nested in a blockized P that reads what it writes: accepted when it is a reduction
// recomputed whole by every execution of P's body (a blockized reduction whose reduce loops are
// all inside the tile, TVM's blockize of a matmul tile then compute_at), so that recomputing a
// point of P stores the same values. Then the first instance touching an element X[e] in an
// execution is one where every reduce iter var is 0 (the init runs, overwriting X[e]): each reduce
// iter var is a sum of loops inside P with positive coefficients (0 only when they all are), and
// those loops feed no spatial iter var (setting them to 0 keeps e and comes earlier). Its update
// is `X[s] = X[s] OP x` with x and the init (storing X[s]) not reading X. Returns "" when
// accepted, else what is missing.
std::string nested_reduction_issue(const Stmt& root, const Stmt& nb, const Buffer& X) {
  const BlockRealizeNode* r = realize(nb);
  const BlockNode* n = r->block.get();
  const std::string rd = "reads buffer " + X->name + ", which it writes, ";
  if (!n->init.defined()) return rd + "and is not a reduction with init";
  if (!collect_blocks(n->body).empty()) return "has nested blocks";
  if (r->predicate.defined() && !conjuncts(fold(r->predicate)).empty()) return "is a reduction with a where";
  std::string why;
  auto upd = match_reduction_update(n->body, &why);
  if (!upd) return "is not a reduction update (" + why + ")";
  if (!upd->buffer.same_as(X)) return "reduces into buffer " + upd->buffer->name;
  auto* in = n->init.as<StoreNode>();
  bool same = in && in->buffer.same_as(X) && in->indices.size() == upd->indices.size();
  for (size_t k = 0; same && k < in->indices.size(); ++k)
    same = expr_identical(in->indices[k], upd->indices[k]);
  if (!same) return "has an init that is not a store to the element it reduces into";
  bool init_reads = false;
  for_each_expr(in->value, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(X)) init_reads = true;
  });
  if (init_reads) return "has an init that reads buffer " + X->name;
  std::unordered_set<const VarNode*> reduce_ivs;
  for (auto& iv : n->iter_vars) {
    if (iv.kind == IterKind::Reduce)
      reduce_ivs.insert(iv.var.get());
    else if (iv.kind != IterKind::Spatial)
      return "has the " + std::string(iter_kind_name(iv.kind)) + " iter var " + iv.var.name();
  }
  for (auto& e : upd->indices)
    if (uses_var(e, [&](const VarNode* v) { return reduce_ivs.count(v) > 0; }))
      return "stores at an index using a reduce iter var";
  std::unordered_map<const VarNode*, const ForNode*> loops;
  for (auto& s : find_path(root, nb.get()))
    if (auto* f = s.as<ForNode>()) loops[f->loop_var.get()] = f;
  std::unordered_set<const VarNode*> reduce_loops;
  for (size_t i = 0; i < n->iter_vars.size(); ++i) {
    if (n->iter_vars[i].kind != IterKind::Reduce) continue;
    auto lin = to_linear(fold(r->bindings[i]));
    bool ok = lin && lin->c == 0;
    for (size_t k = 0; ok && k < lin->terms.size(); ++k) {
      auto* v = lin->terms[k].first.as<VarNode>();
      auto it = v ? loops.find(v) : loops.end();
      ok = it != loops.end() && lin->terms[k].second > 0 && is_zero(fold(it->second->min));
      if (ok) reduce_loops.insert(v);
    }
    if (!ok)
      return "is a reduction whose reduce iter var " + n->iter_vars[i].var.name() +
             " is not a sum of loops inside the block";
  }
  for (size_t i = 0; i < n->iter_vars.size(); ++i)
    if (n->iter_vars[i].kind == IterKind::Spatial &&
        uses_var(r->bindings[i], [&](const VarNode* v) { return reduce_loops.count(v) > 0; }))
      return "is a reduction whose reduce loops also feed the spatial iter var " + n->iter_vars[i].var.name();
  return "";
}

// A blockized P (TVM's test_compute_at_blockized_2: `block B_o(vio, vjo)` holding the loops and
// the block B of a 4x4 tile) writes, per point of its domain, the box its write region declares:
// `X[w * v + off : w * v + off + w, ...]`. It moves like a plain producer when that box is
// exact and self-contained: P has no init and only spatial iter vars, writes one buffer X and
// does not read it (so recomputing a point stores the same values), its body uses no loop var
// from above P, and every nested block is spatial, writes only X and writes inside the declared
// box (checked on their regions relaxed over the loops inside P). Returns the box per
// dimension of X (refuses otherwise).
std::vector<StoreAxis> blockized_axes(const ScheduleState& st, const Stmt& ps, const BlockNode& p) {
  auto bad = [&](const std::string& why) { refuse("block " + p.name + " has nested blocks (" + why + ")"); };
  if (p.init.defined()) bad("and an init");
  for (auto& iv : p.iter_vars)
    if (iv.kind != IterKind::Spatial) bad("and the non-spatial iter var " + iv.var.name());
  if (p.writes.size() != 1) bad("and does not write one region");
  const BufferRegion& wr = p.writes[0];
  if (has_loose_effects(p.body)) bad("and stores outside them");
  if (has_extern_call(p.body)) bad("and an extern call");
  std::unordered_set<const VarNode*> outer;
  for (auto& l : st.loops_above(ps.get())) outer.insert(l.as<ForNode>()->loop_var.get());
  bool uses_outer = false;
  auto scan = [&](const Expr& e) {
    uses_outer = uses_outer || uses_var(e, [&](const VarNode* v) { return outer.count(v) > 0; });
  };
  for_each_expr(p.body, scan);
  if (uses_outer) bad("using a loop var from above it");
  std::vector<StoreAxis> out;
  for (auto& rg : wr.ranges) {
    auto lin = to_linear(fold(rg.begin));
    int64_t w = 1;
    if (!rg.is_point() && !is_const_int(fold(rg.end - rg.begin), &w))
      bad("and a write region of non-constant size");
    if (!lin || lin->terms.size() != 1 || lin->terms[0].second != w || w <= 0)
      bad("and a write region that is not a box of distinct iter vars");
    auto* v = lin->terms[0].first.as<VarNode>();
    StoreAxis a;
    for (size_t i = 0; v && i < p.iter_vars.size(); ++i)
      if (p.iter_vars[i].var.get() == v) a.iv = static_cast<int>(i);
    if (a.iv < 0) bad("and a write region that is not a box of distinct iter vars");
    for (auto& o : out)
      if (o.iv == a.iv) bad("and a write region that is not a box of distinct iter vars");
    a.off = lin->c;
    a.scale = w;
    out.push_back(a);
  }
  // The nested blocks write inside the box: their regions relaxed over the loops inside P.
  Var dummy("blockized_root", DType::I32);
  Stmt root = make_for(dummy, make_int(0, DType::I32), make_int(1, DType::I32), ForKind::Serial, p.body);
  Stmt rest = root;  // the body without the nested reductions: must not read the buffer
  for (auto& nb : collect_blocks(root)) {
    const BlockNode* n = block_of(nb);
    bool spatial = !n->init.defined();
    for (auto& iv : n->iter_vars) spatial = spatial && iv.kind == IterKind::Spatial;
    if (!spatial || body_reads(*n, wr.buffer)) {
      std::string issue = nested_reduction_issue(root, nb, wr.buffer);
      if (!issue.empty()) bad("block " + n->name + " inside it " + issue);
      rest = replace_stmt(rest, nb.get(), Stmt());
    }
    for (auto& r : n->writes) {
      if (!r.buffer.same_as(wr.buffer))
        bad("block " + n->name + " inside it writes buffer " + r.buffer->name);
      auto g = region_under_loop(root, nb, r);
      for (size_t d = 0; d < g.size(); ++d) {
        Expr lo = fold(wr.ranges[d].begin);
        Expr hi = fold(lo + make_int(out[d].scale - 1, lo.dtype()));
        if (!g[d] || !prove_le(lo, g[d]->lo) || !prove_le(g[d]->hi, hi))
          bad("block " + n->name + " inside it writes outside the declared region of " + wr.buffer->name);
      }
    }
  }
  bool reads_rest = false;
  for_each_expr(rest, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(wr.buffer)) reads_rest = true;
    if (auto* q = e.as<BufferPtrNode>(); q && q->buffer.same_as(wr.buffer)) reads_rest = true;
  });
  if (reads_rest) bad("that read buffer " + wr.buffer->name);
  return out;
}

// An in-place update (autodiff's accumulation without init, `X[s] = X[s] + x` after a
// separate zero-fill block, or a spatial `X[s] = X[s] * 2`): P has no init, no nested
// blocks and no extern call, stores X at one index tuple s and loads X only at s (not in
// its where). Each point of P then reads and writes its own element only, so P moves when
// every point runs exactly once, after the writers of X that preceded it (the caller forces
// the exact tiling: recomputing a point would apply its update twice).
bool in_place_update(const BlockRealizeNode& r, const Buffer& X) {
  const BlockNode& p = *r.block.get();
  if (p.init.defined() || !collect_blocks(p.body).empty() || has_extern_call(p.body)) return false;
  if (predicate_loads_any(r, {X})) return false;
  std::vector<Expr> sidx;
  bool ok = true;
  std::function<void(const Stmt&)> rec = [&](const Stmt& s) {
    if (!s.defined() || !ok) return;
    if (auto* x = s.as<StoreNode>(); x && x->buffer.same_as(X)) {
      if (sidx.empty())
        sidx = x->indices;
      else
        for (size_t k = 0; k < sidx.size(); ++k) ok = ok && expr_identical(sidx[k], x->indices[k]);
    }
    for (auto& c : children(s)) rec(c);
  };
  rec(p.body);
  if (!ok || sidx.empty()) return false;
  for_each_expr(p.body, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(X)) {
      for (size_t k = 0; k < sidx.size(); ++k) ok = ok && expr_identical(sidx[k], l->indices[k]);
    }
    if (auto* q = e.as<BufferPtrNode>(); q && q->buffer.same_as(X)) ok = false;
  });
  return ok;
}

// The first `if` on the path from the function body down to `target` that does not hold
// `other` in the same arm (null when none). An `if` above both, in the same arm, gates the old
// and the new position of P alike (every loop above it is shared), so it does not change which
// instances run. One only above the target loop skips iterations of the loop, so the parts
// computed there do not cover P's domain (the exact tiling's onto claim); one only above P skips
// instances that P, moved out of it, would then run (the claim that P covers its domain).
// Review of round 18: both were ignored (loops_above lists only the loops).
const IfThenElseStmtNode* if_apart(const ScheduleState& st, const Stmt& target, const Stmt& other) {
  auto pt = st.path_to(target.get()), po = st.path_to(other.get());
  size_t k = 0;  // the length of the common prefix
  while (k < pt.size() && k < po.size() && pt[k].same_as(po[k])) ++k;
  for (size_t i = 0; i + 1 < pt.size(); ++i)
    if (auto* f = pt[i].as<IfThenElseStmtNode>(); f && i + 1 >= k) return f;
  return nullptr;
}

// Whether every region of W that block o declares (reads and writes, relaxed over o's iter
// vars) is apart, in some dimension, from the whole region of W that P declares it writes
// (relaxed over P's domain). Such a block neither sees nor changes an element P stores, so it
// is no consumer or other writer of P for W (round 19: the LSTM's cell_dC0_dG_dG_dG updates the
// columns [0, 96) of G_grad, hidden_dC1_dG stores the columns [96, 128)).
bool apart_from(const BlockNode& p, const BlockNode& o, const Buffer& W) {
  auto box = [](const BlockNode& b, const BufferRegion& r) {
    SymRangeMap dom;
    for (auto& iv : b.iter_vars)
      dom[iv.var.get()] =
          SymRange{make_int(0, iv.var.dtype()), fold(iv.extent - make_int(1, iv.var.dtype()))};
    std::vector<std::optional<SymRange>> out;
    for (auto& rg : r.ranges) {
      Expr hi = rg.is_point() ? rg.begin : fold(rg.end - make_int(1, rg.begin.dtype()));
      auto lo = relax(rg.begin, dom), h = relax(hi, dom);
      out.push_back(lo && h ? std::optional<SymRange>(SymRange{lo->lo, h->hi}) : std::nullopt);
    }
    return out;
  };
  std::vector<std::vector<std::optional<SymRange>>> pw;
  for (auto& r : p.writes)
    if (r.buffer.same_as(W)) pw.push_back(box(p, r));
  if (pw.empty()) return false;
  bool any = false;
  auto apart = [&](const BufferRegion& r) {
    auto ob = box(o, r);
    for (auto& x : pw) {
      bool sep = false;
      for (size_t d = 0; d < x.size() && d < ob.size() && !sep; ++d)
        sep = x[d] && ob[d] && (prove_lt(x[d]->hi, ob[d]->lo) || prove_lt(ob[d]->hi, x[d]->lo));
      if (!sep) return false;
    }
    return true;
  };
  for (auto* rs : {&o.reads, &o.writes})
    for (auto& r : *rs)
      if (r.buffer.same_as(W)) {
        any = true;
        if (!apart(r)) return false;
      }
  return any;
}

}  // namespace

namespace {

// reader_msg: set when P gets the exact tiling only for a consumer after the loop (see below).
void compute_at_impl(ScheduleState& st, const ScheduleInstr& ins, std::string& reader_msg) {
  auto pos = positional(ins);
  if (pos.size() != 2) refuse("expected 2 arguments (block, loop), got " + std::to_string(pos.size()));
  expect_results(ins, 0);
  Stmt ps = arg_block(st, ins, 0);
  Stmt ls = arg_loop(st, ins, 1);
  const BlockRealizeNode* pr = realize(ps);
  const BlockNode* p = pr->block.get();
  auto* L = ls.as<ForNode>();
  if (!find_path(ls, ps.get()).empty())
    refuse("block " + p->name + " is already inside loop " + loop_name(ls));
  if (st.scope_of(ps.get()).get() != st.scope_of(ls.get()).get())
    refuse("block " + p->name + " and loop " + loop_name(ls) + " are not in the same block scope");
  const bool nested = !collect_blocks(p->body).empty();
  check_moved_block_order(st, ps);
  {
    // The init of the scope block runs once per reduction, its body every iteration: moving a
    // block between them changes how often (and when) it runs.
    const BlockNode* sb = block_of(st.scope_of(ps.get()));
    bool b_in = sb->init.defined() && !find_path(sb->init, ps.get()).empty();
    bool l_in = sb->init.defined() && !find_path(sb->init, ls.get()).empty();
    if (b_in != l_in)
      refuse(b_in ? "block " + p->name + " is in the init of block " + sb->name + " and loop " +
                        loop_name(ls) + " is not"
                  : "loop " + loop_name(ls) + " is in the init of block " + sb->name + " and block " +
                        p->name + " is not");
  }
  auto wbufs = written_buffers(*p);
  if (wbufs.empty()) refuse("block " + p->name + " writes no buffer");
  // A block writing several buffers (group norm's sum and sum of squares in one reduction)
  // moves when it stores every one at the same iter vars: the region computed under the loop
  // is then the hull of what the consumers read of any of them (TVM's compute_at takes every
  // written buffer). Outputs and buffers with other writers need the exact tiling, done for one
  // buffer only.
  const bool multi = wbufs.size() > 1;
  Buffer X = wbufs[0];
  for (auto& W : wbufs) {
    if (st.is_param(W) && !st.is_output(W))
      refuse("block " + p->name + " writes buffer " + W->name + ", a parameter of the function");
    // (A blockized P reading what it writes is judged by blockized_axes: nested reductions.)
    // (Round 19: also for a block writing several buffers, autodiff's fused pointwise adjoints,
    // each buffer read only at the element its instance stores.)
    if (!nested && body_reads(*p, W) && !(p->init.defined() && is_reduction_block(*p)) &&
        !in_place_update(*pr, W))
      refuse("block " + p->name + " reads buffer " + W->name +
             ", which it writes, and is not a reduction with init");
  }
  if (!p->allocs.empty()) refuse("block " + p->name + " allocates buffers");
  // Other writers are allowed only under the loop (accumulating consumers such as a gradient's
  // `X_grad = X_grad + ...`, checked below with the exact tiling).
  // The blocks nested in a blockized P write what P writes: they move with it.
  auto outside_p = [&](std::vector<Stmt> ws) {
    std::erase_if(ws, [&](const Stmt& w) { return !find_path(ps, w.get()).empty(); });
    return ws;
  };
  // Program order: P, the loop's blocks, and the top-level items holding them.
  auto order = blocks_in_order(st);
  int pidx = block_index(order, ps);
  int last_l = -1, first_l = 1 << 30;
  for (auto& b : collect_blocks(ls)) {
    last_l = std::max(last_l, block_index(order, b));
    first_l = std::min(first_l, block_index(order, b));
  }
  Stmt litem = top_item(st, ls.get()), ptop = top_item(st, ps.get());
  // An in-place update (P reads X only at the element it stores; no init) applies each point
  // once: every point must run exactly once, so the iterations must tile X exactly.
  bool update = false;
  for (auto& W : wbufs) update = update || (!nested && body_reads(*p, W) && !p->init.defined());
  // The buffer P updates in place (named by the refusals below).
  Buffer UX = X;
  for (auto& W : wbufs)
    if (!nested && body_reads(*p, W) && !p->init.defined()) {
      UX = W;
      break;
    }
  // With the exact tiling, every element of P's domain is computed in exactly one iteration of
  // the loop, so a block touching X that runs wholly before P (a gradient's zero-fill before
  // its accumulation) or wholly after the loop (another accumulation, a reader) sees the same
  // values: accepted for one written buffer. A block in the loop's top-level statement, or
  // between P and the loop, would see X half computed.
  auto runs_apart = [&](const Stmt& b) {
    int bi = block_index(order, b);
    Stmt t = top_item(st, b.get());
    if (t.same_as(litem)) return false;
    if (bi < pidx) return !t.same_as(ptop);
    return bi > last_l;
  };
  // Other writers under the loop (updates, checked by the tiling), per written buffer.
  std::vector<std::vector<Stmt>> others_in(wbufs.size());
  std::vector<std::string> other_name(wbufs.size());  // a writer of W outside the loop
  bool any_other = false, any_output = false;
  for (size_t wi = 0; wi < wbufs.size(); ++wi) {
    const Buffer& W = wbufs[wi];
    any_output = any_output || st.is_output(W);
    for (auto& w : outside_p(writers_of(st, W, p))) {
      if (multi && apart_from(*p, *block_of(w), W)) continue;
      any_other = true;
      if (!find_path(ls, w.get()).empty())
        others_in[wi].push_back(w);
      else if ((multi && !update) || !runs_apart(w))
        refuse("buffer " + W->name + " is also written by block " + block_of(w)->name);
      else if (other_name[wi].empty())
        other_name[wi] = block_of(w)->name;
    }
  }
  // An output must be written exactly once per element (no element may be left out, and
  // recomputing it would be visible), and so must a buffer that consumers update (recomputing
  // it would reset their updates): then the iterations must tile X exactly. A block writing
  // several buffers stores them all at the same iter vars (checked below): the tiling of its
  // iteration domain is that of each buffer, so one exact tiling covers them all (lrn's
  // norm_dX_dS stores the output X_grad, which sqr_sum_dX then updates, and S_grad).
  bool exact = any_output || any_other || update;
  std::vector<Stmt> consumers;
  for (auto& W : wbufs)
    for (auto& c : outside_p(readers_of(st, W, p)))  // a nested reduction reads what it writes
      if (!(multi && apart_from(*p, *block_of(c), W)) &&
          std::find_if(consumers.begin(), consumers.end(), [&](const Stmt& o) { return o.same_as(c); }) ==
              consumers.end())
        consumers.push_back(c);
  if (consumers.empty()) refuse("block " + p->name + " has no consumer");
  // A `where` that loads a written buffer (TVM's `T.where(B[i, j] < 10.0)`) reads it at loop
  // vars, outside the regions the consumers declare: the recomputed part might miss it.
  for (auto& b : blocks_in_order(st))
    if (block_of(b) != p)
      if (auto* w = predicate_loads_any(*realize(b), wbufs))
        refuse("the where of block " + block_of(b)->name + " loads buffer " + w->name + ", which block " +
               p->name + " writes (reads in predicates are not analysed)");
  // Consumers outside the loop: only running apart from it (see runs_apart) and with the exact
  // tiling (every element is computed, once); the region computed per iteration is what the
  // consumers under the loop read. A P that needed no exact tiling gets it for such a reader
  // (layer norm's hoist0 computed in var's row loop, read again by out_dGamma after it; round
  // 18): when that tiling fails, the refusal names the reader, as before.
  std::vector<Stmt> inner_consumers;
  std::vector<std::string> reader_after(wbufs.size());  // a consumer of W outside the loop
  std::string outside_msg;
  for (auto& c : consumers) {
    if (!find_path(ls, c.get()).empty()) {
      inner_consumers.push_back(c);
      continue;
    }
    std::string msg = "consumer block " + block_of(c)->name + " of block " + p->name + " is not under loop " +
                      loop_name(ls);
    // A cache_read copy serves every reader of the buffer unless consumer_blocks says otherwise
    // (TVM's default too): say so, the user usually meant the copy for the readers under the loop.
    if (auto* st0 = p->body.as<StoreNode>(); st0 && !p->init.defined())
      if (auto* ld = st0->value.as<LoadNode>(); ld && !ld->buffer.same_as(st0->buffer))
        msg +=
            " (the copy " + p->name + " of " + ld->buffer->name +
            " serves every reader of it: move that reader under the loop too, or copy for some readers only "
            "with cache_read(..., consumer_blocks=[...]))";
    if (!runs_apart(c)) refuse(msg);
    if (outside_msg.empty()) outside_msg = msg;
    for (size_t wi = 0; wi < wbufs.size(); ++wi)
      if (reader_after[wi].empty() && block_reads(*block_of(c), wbufs[wi]) &&
          !(multi && apart_from(*p, *block_of(c), wbufs[wi])))
        reader_after[wi] = block_of(c)->name;
  }
  const bool exact_for_reader = !exact && !outside_msg.empty();
  exact = exact || exact_for_reader;
  // Any refusal from here on names the outside reader, as before round 18 (prim_compute_at).
  if (exact_for_reader) reader_msg = outside_msg;
  if (inner_consumers.empty()) refuse("block " + p->name + " has no consumer under loop " + loop_name(ls));
  // P's store indices: distinct iter vars (the same for every written buffer); other iter vars
  // must be reduce vars.
  std::vector<int> ivs;
  std::vector<StoreAxis> axes;
  // Per written buffer, its store's axes (a block writing several buffers may store them at
  // different offsets: hidden_dC1_dG's `C1_grad_1[vb, vj]` and `G_grad[vb, vj + 96]`).
  std::vector<std::vector<StoreAxis>> waxes(wbufs.size());
  if (nested) axes = blockized_axes(st, ps, *p);
  for (size_t wi = 0; wi < wbufs.size() && !nested; ++wi) {
    const Buffer& W = wbufs[wi];
    std::vector<Expr> sidx;
    bool differ = false, inner_loops = false;
    std::function<void(const Stmt&)> rec = [&](const Stmt& s) {
      if (!s.defined()) return;
      if (auto* x = s.as<StoreNode>(); x && x->buffer.same_as(W)) {
        if (sidx.empty())
          sidx = x->indices;
        else
          for (size_t k = 0; k < sidx.size(); ++k) differ = differ || !expr_identical(sidx[k], x->indices[k]);
      }
      if (s.kind() == StmtKind::For) inner_loops = true;
      for (auto& c : children(s)) rec(c);
    };
    rec(p->init);
    rec(p->body);
    if (sidx.empty() || differ || inner_loops)
      refuse("block " + p->name + " does not store " + W->name + " at one index tuple");
    auto w_axes = store_axes(*p, sidx);
    waxes[wi] = w_axes;
    // Round 19: the same iter vars in the same order, offsets and directions may differ (the
    // regions are compared in the iter vars' space, see to_iter_space).
    bool same_vars = w_axes.size() == (wi == 0 ? w_axes.size() : axes.size());
    for (size_t d = 0; same_vars && wi > 0 && d < w_axes.size(); ++d) same_vars = w_axes[d].iv == axes[d].iv;
    if (wi == 0)
      axes = w_axes;
    else if (!same_vars || (w_axes != axes && !multi))
      refuse("block " + p->name + " stores " + X->name + " and " + W->name + " at different iter vars");
  }
  for (auto& a : axes) ivs.push_back(a.iv);
  // The exact tiling (check_exact_tiling) compares regions in X's index space with P's iter
  // var space: it is done for plain iter var stores only.
  bool affine = std::any_of(axes.begin(), axes.end(),
                            [](const StoreAxis& a) { return a.sign != 1 || a.off != 0 || a.scale != 1; });
  // A block writing several buffers (not blockized) has its regions taken to its iter vars'
  // space (to_iter_space below), where the exact tiling is checked: affine stores are fine.
  const bool iter_space = multi && !nested;
  if (iter_space) affine = false;
  // A region of W (in W's index space, per dimension) in P's iter vars' space: `v + off` takes
  // [lo - off, hi - off], `off - v` takes [off - hi, off - lo] (both one-to-one).
  auto to_iter_space = [&](const Buffer& W, std::vector<std::optional<SymRange>> reg) {
    if (!iter_space) return reg;
    size_t wi = 0;
    while (wi < wbufs.size() && !wbufs[wi].same_as(W)) ++wi;
    for (size_t d = 0; d < reg.size() && wi < wbufs.size() && d < waxes[wi].size(); ++d) {
      if (!reg[d]) continue;
      const StoreAxis& a = waxes[wi][d];
      Expr off = make_int(a.off, reg[d]->lo.dtype());
      reg[d] = a.sign == 1 ? SymRange{fold(reg[d]->lo - off), fold(reg[d]->hi - off)}
                           : SymRange{fold(off - reg[d]->hi), fold(off - reg[d]->lo)};
    }
    return reg;
  };
  // Why the exact tiling is needed, naming the buffer that needs it (review of round 18: the
  // first written buffer was named, with "has other writers" when it was no output).
  auto exact_reason = [&]() -> std::string {
    for (auto& W : wbufs)
      if (st.is_output(W)) return W->name + " is an output";
    if (update) return "block " + p->name + " updates " + UX->name + " in place";
    for (size_t wi = 0; wi < wbufs.size(); ++wi)
      if (!others_in[wi].empty() || !other_name[wi].empty()) return wbufs[wi]->name + " has other writers";
    for (size_t wi = 0; wi < wbufs.size(); ++wi)
      if (!reader_after[wi].empty())
        return "block " + reader_after[wi] + " reads " + wbufs[wi]->name + " after loop " + loop_name(ls);
    return X->name + " needs the exact tiling";
  };
  if (exact && nested) refuse("block " + p->name + " has nested blocks (" + exact_reason() + ")");
  if (exact && affine)
    refuse("the indices of the store in block " + p->name + " are not distinct iter vars (" + exact_reason() +
           ")");
  for (size_t i = 0; i < p->iter_vars.size(); ++i) {
    bool indexed = std::find(ivs.begin(), ivs.end(), static_cast<int>(i)) != ivs.end();
    const IterVar& iv = p->iter_vars[i];
    if (indexed && iv.kind != IterKind::Spatial)
      refuse("the store of block " + p->name + " uses a non-spatial iter var");
    if (!indexed && iv.kind != IterKind::Reduce && !is_one(fold(iv.extent)))
      refuse("the spatial iter var " + iv.var.name() + " of block " + p->name + " is not a store index");
  }
  // P's own predicate (which points run) moves with it, rewritten in its iter vars.
  std::vector<Expr> own_pred = predicate_in_iter_vars(*pr, st.loops_above(ps.get()));
  // P covers its domain exactly once (not when it runs under an `if` that the loop is not
  // under: moved, it would run the instances the `if` skipped).
  {
    const IfThenElseStmtNode* left = if_apart(st, ps, ls);
    std::vector<LoopDom> loops;
    for (auto& l : st.loops_above(ps.get())) {
      auto* f = l.as<ForNode>();
      if (!is_zero(f->min))
        refuse("loop " + loop_name(l) + " above block " + p->name + " does not start at 0");
      loops.push_back(LoopDom{f->loop_var, f->extent});
    }
    std::vector<Expr> exts;
    for (auto& iv : p->iter_vars) exts.push_back(iv.extent);
    if (left)
      refuse("block " + p->name + " does not cover its iteration domain exactly once (it runs under `if " +
             print_expr(left->cond) + "`, which loop " + loop_name(ls) + " is not under)");
    if (!bijective_bindings(pr->bindings, exts, loops, pr->predicate) &&
        (multi || !recomputable_in_its_loop(st, ps, ls, X, exact, consumers)))
      refuse("block " + p->name + " does not cover its iteration domain exactly once");
  }
  // Order and stability of P's inputs.
  if (first_l < pidx) refuse("loop " + loop_name(ls) + " runs blocks before block " + p->name);
  for (auto& buf : read_buffers(*p)) {
    if (std::find_if(wbufs.begin(), wbufs.end(), [&](const Buffer& w) { return w.same_as(buf); }) !=
        wbufs.end())
      continue;
    for (auto& w : writers_of(st, buf, p)) {
      int wi = block_index(order, w);
      if (wi > pidx && (wi <= last_l || top_item(st, w.get()).same_as(litem)))
        refuse("block " + block_of(w)->name + " writes buffer " + buf->name + ", which block " + p->name +
               " reads, between its old and new position");
    }
  }
  // Region of X required under the loop, per dimension.
  RangeMap known_above;
  {
    auto ab = st.loops_above(ls.get());
    ab.push_back(ls);
    known_above = const_ranges(ab);
  }
  std::vector<std::optional<SymRange>> need;
  bool first = true;
  // The stores index every written buffer by the same iter vars (checked above), so the
  // regions of all of them hull in the same index space.
  for (auto& c : inner_consumers)
    for (auto& W : wbufs) {
      if (multi && apart_from(*p, *block_of(c), W)) continue;
      for (auto& r : block_of(c)->reads) {
        if (!r.buffer.same_as(W)) continue;
        auto reg = to_iter_space(W, accessed_region_under_loop(ls, c, r, false, known_above));
        if (first)
          need = reg;
        else
          for (size_t d = 0; d < need.size(); ++d) need[d] = hull(need[d], reg[d], known_above);
        first = false;
      }
      if (!block_reads(*block_of(c), W)) continue;
      bool declared = false;
      for (auto& r : block_of(c)->reads) declared = declared || r.buffer.same_as(W);
      if (!declared)
        refuse("consumer block " + block_of(c)->name + " does not declare its reads of " + W->name);
    }
  // Loop vars at and above `loop`: their constant ranges prove the clamps unnecessary.
  auto above = st.loops_above(ls.get());
  above.push_back(ls);
  // A "shared" buffer is seen by every thread of a thread block: as TVM's compute_at
  // (LoopDomainOfSRefTreePath with the storage scope), the region is relaxed over the
  // threadIdx / vthread loops at and above `loop`, so the copy under them produces the tile
  // of the whole thread block (each thread recomputes it; binding the copy's own loops to the
  // same thread axes then shares the work, see bind).
  bool any_shared = false;
  for (auto& W : wbufs) any_shared = any_shared || W->scope == "shared";
  if (!exact && any_shared) {
    SymRangeMap thr;
    for (auto& l : above) {
      auto* f = l.as<ForNode>();
      if (f->for_kind == ForKind::ThreadBinding &&
          (f->thread_tag.rfind("threadIdx", 0) == 0 || f->thread_tag == "vthread"))
        thr[f->loop_var.get()] = SymRange{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
    }
    if (!thr.empty())
      for (auto& d : need) {
        if (!d) continue;
        auto lo = relax(d->lo, thr), hi = relax(d->hi, thr);
        if (lo && hi)
          d = SymRange{lo->lo, hi->hi};
        else
          d.reset();
      }
  }
  if (exact) {
    // Elements nobody reads need not be computed: onto only for an output or a reader after
    // the loop.
    bool onto = any_output || inner_consumers.size() < consumers.size();
    const IfThenElseStmtNode* entered = if_apart(st, ls, ps);
    // Each buffer that needs the exact tiling (an output, other writers) is checked, naming its
    // reason; a buffer of a multi-output block that needs none is tiled as the others are, its
    // parts being the same (P stores every buffer at the same iter vars).
    std::vector<size_t> order_w;
    for (size_t wi = 0; wi < wbufs.size(); ++wi)
      if (st.is_output(wbufs[wi]) || update || !others_in[wi].empty() || !other_name[wi].empty() ||
          !reader_after[wi].empty())
        order_w.push_back(wi);
    for (size_t wi : order_w) {
      const Buffer& W = wbufs[wi];
      std::string why =
          st.is_output(W)               ? W->name + " is an output"
          : update && body_reads(*p, W) ? "block " + p->name + " updates " + W->name + " in place"
          : update                      ? "block " + p->name + " updates " + UX->name + " in place"
          : !others_in[wi].empty()      ? W->name + " is updated by block " + block_of(others_in[wi][0])->name
          : !other_name[wi].empty()
              ? W->name + " is also written by block " + other_name[wi]
              : "block " + reader_after[wi] + " reads " + W->name + " after loop " + loop_name(ls);
      if (multi) {  // the other buffers are computed with W, in the same parts
        std::string also;
        for (auto& o : wbufs)
          if (!o.same_as(W)) also += (also.empty() ? "" : ", ") + o->name;
        bool same_axes = true;
        for (auto& a : waxes) same_axes = same_axes && (!iter_space || a == axes);
        why += "; block " + p->name + " also writes " + also + (same_axes ? ", at the same iter vars" : "");
      }
      // An `if` above the loop that P is not under skips iterations: their parts are not
      // computed (the other writers under the loop are skipped with them, so parts that need
      // not be onto stay disjoint).
      if (onto && entered)
        refuse("the parts of " + W->name + " computed in the iterations of loop " + loop_name(ls) +
               " do not cover it exactly once (" + why + "; loop " + loop_name(ls) + " runs under `if " +
               print_expr(entered->cond) + "`, which block " + p->name + " is not under)");
      check_exact_tiling(
          ls, above, *p, W, ivs, need, others_in[wi], why, onto,
          [&](std::vector<std::optional<SymRange>> g) { return to_iter_space(W, std::move(g)); });
    }
  }
  RangeMap known = const_ranges(above);
  std::unordered_set<const VarNode*> loop_vars;
  for (auto& l : collect_loops(st.body())) loop_vars.insert(l.as<ForNode>()->loop_var.get());
  for (auto& b : collect_blocks(st.body()))
    for (auto& l : st.loops_above(b.get())) loop_vars.insert(l.as<ForNode>()->loop_var.get());
  // New loops: one per iter var of P, in P's order.
  std::vector<Var> nvars;
  std::vector<Expr> nexts, nbinds;
  std::vector<Expr> preds;
  for (size_t i = 0; i < p->iter_vars.size(); ++i) {
    const IterVar& iv = p->iter_vars[i];
    DType t = iv.var.dtype();
    std::string base = "ax" + std::to_string(i);
    std::string nm = fresh_var_name(st, base);
    for (auto& v : nvars)
      if (v.name() == nm) nm = fresh_var_name(st, base + "_" + std::to_string(i));
    Var ax(nm, t);
    nvars.push_back(ax);
    auto it = std::find(ivs.begin(), ivs.end(), static_cast<int>(i));
    if (it == ivs.end()) {
      nexts.push_back(iv.extent);
      nbinds.push_back(is_one(fold(iv.extent)) ? make_int(0, t) : Expr(ax));
      continue;
    }
    size_t d = static_cast<size_t>(it - ivs.begin());
    Expr ext_m1 = fold(iv.extent - make_int(1, t));
    SymRange r = need[d] ? *need[d] : SymRange{make_int(0, t), ext_m1};
    if (need[d] && !iter_space) {
      // Back from X's index space to the iter var's (a reversed store swaps the ends).
      const StoreAxis& a = axes[d];
      Expr off = make_int(a.off, need[d]->lo.dtype());
      Expr w = make_int(a.scale, need[d]->lo.dtype());
      // floor(e / w), exact on a linear e whose terms w divides (8 * i_o + 7 -> 2 * i_o + 1).
      auto div = [&](const Expr& e) {
        auto lin = to_linear(fold(e));
        if (!lin ||
            std::any_of(lin->terms.begin(), lin->terms.end(), [&](auto& t) { return t.second % a.scale; }))
          return fold(floordiv(e, w));
        for (auto& t : lin->terms) t.second /= a.scale;
        lin->c = lin->c >= 0 ? lin->c / a.scale : -((-lin->c + a.scale - 1) / a.scale);
        return fold(from_linear(*lin));
      };
      if (a.scale != 1)  // the points whose boxes meet the needed region
        r = SymRange{div(need[d]->lo - off), div(need[d]->hi - off)};
      else if (a.sign == 1)
        r = SymRange{fold(need[d]->lo - off), fold(need[d]->hi - off)};
      else
        r = SymRange{fold(off - need[d]->hi), fold(off - need[d]->lo)};
    }
    // The consumers' region is in their loops' type (an i64 loop reading a buffer whose
    // dimension, hence P's iter var, is i32): the new loop and binding take the iter var's type.
    auto to_t = [&](const Expr& e) {
      int64_t c;
      if (e.dtype() == t) return e;
      return is_const_int(fold(e), &c) ? make_int(c, t) : make_cast(t, e);
    };
    r.lo = to_t(r.lo);
    r.hi = to_t(r.hi);
    Expr extent = fold(r.hi - r.lo + make_int(1, t));
    if (uses_var(extent, [&](const VarNode* v) { return loop_vars.count(v) > 0; })) {
      // The size varies with the outer loops: compute the whole dimension instead.
      r = SymRange{make_int(0, t), ext_m1};
      extent = iv.extent;
    }
    // A unit loop is not generated (TVM's preserve_unit_loops=False): bind the start.
    Expr value = is_one(extent) ? r.lo : fold(r.lo + ax);
    nexts.push_back(extent);
    nbinds.push_back(value);
    if (!prove_le(make_int(0, t), r.lo, known))
      preds.push_back(make_binary(BinOp::LE, make_int(0, t), value));
    if (!prove_le(r.hi, ext_m1, known)) preds.push_back(make_binary(BinOp::LT, value, iv.extent));
  }
  // Loops around both P and `loop` stay around P: a binding of P that uses one of them must
  // keep its value, or P would compute the instances of other iterations of that loop (a
  // reduce var bound to a shared loop recomputed whole, a row 1 - o read at o computed there:
  // review of round 17, wrong results before).
  {
    std::unordered_set<const VarNode*> at_loop;
    for (auto& l : above) at_loop.insert(l.as<ForNode>()->loop_var.get());
    std::unordered_set<const VarNode*> shared;
    for (auto& l : st.loops_above(ps.get()))
      if (at_loop.count(l.as<ForNode>()->loop_var.get())) shared.insert(l.as<ForNode>()->loop_var.get());
    // Per iteration of the shared loops, the values P's binding takes under `loop` (its new
    // loop, the loops at and above `loop` that are not shared) must lie among those it took
    // in its own loops.
    auto dom = [](const Stmt& l) {
      auto* f = l.as<ForNode>();
      return SymRange{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
    };
    SymRangeMap own, now;
    for (auto& l : st.loops_above(ps.get()))
      if (!shared.count(l.as<ForNode>()->loop_var.get())) own[l.as<ForNode>()->loop_var.get()] = dom(l);
    for (auto& l : above)
      if (!shared.count(l.as<ForNode>()->loop_var.get())) now[l.as<ForNode>()->loop_var.get()] = dom(l);
    for (size_t i = 0; i < nvars.size(); ++i)
      now[nvars[i].get()] =
          SymRange{make_int(0, nexts[i].dtype()), fold(nexts[i] - make_int(1, nexts[i].dtype()))};
    for (size_t i = 0; i < p->iter_vars.size() && !shared.empty(); ++i) {
      const Expr& old_b = pr->bindings[i];
      const VarNode* used = nullptr;
      for_each_expr(old_b, [&](const Expr& e) {
        if (auto* v = e.as<VarNode>(); v && shared.count(v)) used = v;
      });
      auto was = relax(old_b, own), will = relax(nbinds[i], now);
      bool within = was && will && prove_le(was->lo, will->lo, known) && prove_le(will->hi, was->hi, known);
      if (used && !within)
        refuse("the binding of iter var " + p->iter_vars[i].var.name() + " of block " + p->name +
               " uses loop " + used->name + ", which also encloses loop " + loop_name(ls) +
               ": under it block " + p->name + " would compute the instances of other iterations of " +
               used->name);
    }
  }
  for (auto& c : substitute_iter_vars(own_pred, *p, nbinds)) preds.push_back(c);
  Stmt nb = update_realize(ps, [&](BlockRealizeNode& r) {
    r.bindings = nbinds;
    r.predicate = make_and(preds);
  });
  Stmt nest = nb;
  for (size_t i = nvars.size(); i-- > 0;)
    if (!is_one(nexts[i]))
      nest = make_for(nvars[i], make_int(0, nexts[i].dtype()), nexts[i], ForKind::Serial, nest);
  ScheduleState tmp = st;
  Stmt victim = exclusive_root(tmp, ps);
  if (!find_path(victim, ls.get()).empty()) refuse("loop " + loop_name(ls) + " holds only block " + p->name);
  tmp.replace(victim.get(), Stmt());
  Stmt lnow = tmp.find_loop(L->loop_var.get());
  auto* lf = lnow.as<ForNode>();
  std::vector<Stmt> items = seq_items(lf->body);
  // TVM's `index=k`: insert at position k of the loop body, which must lie between the last
  // producer (none under the loop: a writer of P's inputs there is refused above) and the first
  // item that reads or writes what P writes (or writes what P reads). Every such position
  // computes the same as the first one.
  size_t at = 0;
  if (const ScheduleArg* ix = kwarg(ins, "index")) {
    size_t first_c = items.size();
    auto pr_bufs = read_buffers(*p);
    for (size_t k = 0; k < items.size() && first_c == items.size(); ++k)
      for (auto& b : collect_blocks(items[k])) {
        const BlockNode* ob = block_of(b);
        for (auto& W : wbufs)
          if (block_reads(*ob, W) || block_writes(*ob, W)) first_c = std::min(first_c, k);
        for (auto& R : pr_bufs)
          if (block_writes(*ob, R)) first_c = std::min(first_c, k);
      }
    if (ix->kind != ScheduleArg::Int || ix->int_value < 0 || static_cast<size_t>(ix->int_value) > first_c)
      refuse("index=" + std::to_string(ix->int_value) +
             " is not a position between the producers and the consumers of block " + p->name +
             " in the body of loop " + loop_name(ls) + " (0 to " + std::to_string(first_c) + ")");
    at = static_cast<size_t>(ix->int_value);
  }
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), nest);
  tmp.replace(lnow.get(), with_body(lnow, make_seq(items)));
  st.set_body(tmp.body());
}

}  // namespace

void prim_compute_at(ScheduleState& st, const ScheduleInstr& ins) {
  std::string reader_msg;
  try {
    compute_at_impl(st, ins, reader_msg);
  } catch (const Refusal&) {
    // A P computed at the loop with a consumer after it needs the exact tiling only for that
    // consumer: whatever then fails, the reason is that consumer (the message before round 18).
    if (!reader_msg.empty()) refuse(reader_msg);
    throw;
  }
}

}  // namespace tirc::sched

// reverse_compute_at(block, loop): TVM Schedule.reverse_compute_at. Moves a consumer block
// C under `loop` (at the end of its body) so that each iteration of `loop` consumes exactly
// what the producers under `loop` finished in that iteration. C's iter vars that index its
// loads of a produced buffer X (distinct iter vars, one index tuple) range over the region
// the producers write in the iteration; the others keep their full range.
// Legal when: every writer of X is under `loop` and binds `loop` and the loops around it
// only to spatial iter vars (so the region written in an iteration is final); the tiles of the
// iter vars C's loads of X map tell the iterations apart, for every X (so no other iteration
// writes what C reads of X); the regions of successive iterations tile C's domain exactly
// once (checked as a bijective map from the loops at and above `loop` to tile indices); C
// covers its domain exactly once; C is after `loop` and nothing C reads or writes is touched
// between `loop` and C's old place.
// C goes last in the loop body, or at TVM's `index=k` when k is after every producer.
// C's `where` is kept, rewritten in the new bindings. A reduce iter var is allowed when its
// loads need the whole produced extent (the reduction then runs whole in each iteration), or
// when the tiles map it and its reduction may be split over the iterations (check_reduce_tiles).
// A load of one produced buffer that is not distinct iter vars but a map one-to-one onto the
// buffer (a layout transform) runs C over the produced region in the buffer's index space, C's
// iter vars inverted from it (Affine below). An update loading and storing one produced buffer
// at several shifts of one iter var in one dimension (stacked gates, `T[j]`, `T[j + 8]`) is read
// as one shift when the bands of all shifts stay apart (shifted_copies, round 19 follow-up).
#include <set>

#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/visitor.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/predicate.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// A reduce iter var of C whose loads map it to the tiles the producers write (TVM's
// test_reverse_compute_at_factorized: `B[vi] += B_rf[vk, vi]` under the loop i_o that produces
// rows 4 * i_o ... 4 * i_o + 3 of B_rf) splits C's reduction over the iterations of the loops
// feeding its tile. That computes the same when, for every element C updates, the iteration
// holding reduce point 0 (where the init runs) comes first and the other iterations only add
// their terms: the tile is a positive combination of loops (0 only when they all are 0, the
// first of them in program order) that feed no spatial tile (so the element stays fixed while
// they run), C's body is a commutative update `C[s] = C[s] OP x` (the terms are added in
// another order: as TVM, same values up to rounding) whose init stores the element it reduces
// into, and the loops run their iterations one after the other: serial or unrolled, or bound
// to threadIdx (a cross-thread reduction: the NVPTX backend lowers it, or refuses it when the
// loop holds other blocks; the CPU runs thread loops serially). One such iter var at most.
void check_reduce_tiles(const BlockNode& c, const std::vector<Stmt>& above, const std::vector<LoopDom>& dom,
                        const std::vector<Linear>& forms, const std::vector<size_t>& reduce_tiles) {
  const std::string head = "block " + c.name + " is a reduction whose reduce iter var";
  if (reduce_tiles.size() > 1) refuse(head + "s are split over the iterations of several loops");
  const Linear& r = forms[reduce_tiles[0]];
  std::string why;
  auto upd = match_reduction_update(c.body, &why);
  if (!upd)
    refuse(head +
           " is split over the loop iterations, but its update is not a commutative reduction: " + why);
  std::unordered_set<const VarNode*> reduce_ivs;
  for (auto& iv : c.iter_vars)
    if (iv.kind == IterKind::Reduce) reduce_ivs.insert(iv.var.get());
  for (auto& e : upd->indices)
    if (uses_var(e, [&](const VarNode* v) { return reduce_ivs.count(v) > 0; }))
      refuse(head + " is split over the loop iterations, but its store index uses a reduce iter var");
  if (c.init.defined()) {
    auto* in = c.init.as<StoreNode>();
    bool same = in && in->buffer.same_as(upd->buffer) && in->indices.size() == upd->indices.size();
    for (size_t k = 0; same && k < in->indices.size(); ++k)
      same = expr_identical(in->indices[k], upd->indices[k]);
    if (!same)
      refuse(
          head +
          " is split over the loop iterations, but its init is not a store to the element it reduces into");
  }
  for (auto& [a, k] : r.terms) {
    auto* v = a.as<VarNode>();
    int li = -1;
    for (size_t i = 0; v && i < dom.size(); ++i)
      if (dom[i].var.get() == v) li = static_cast<int>(i);
    if (li < 0 || k <= 0)
      refuse(head + " is split over the loop iterations, but its tile is not a sum of loops");
    auto* f = above[static_cast<size_t>(li)].as<ForNode>();
    bool sequential = f->for_kind == ForKind::Serial || f->for_kind == ForKind::Unrolled ||
                      (f->for_kind == ForKind::ThreadBinding && f->thread_tag.rfind("threadIdx", 0) == 0);
    if (!sequential)
      refuse(head + " is split over the iterations of loop " + f->loop_var.name() +
             ", whose iterations may run at once (" + std::string(for_kind_name(f->for_kind)) + ")");
    for (size_t t = 0; t < forms.size(); ++t)
      if (t != reduce_tiles[0])
        for (auto& [b, kb] : forms[t].terms)
          if (uses_var(b, v))
            refuse(head + " is split over the iterations of loop " + f->loop_var.name() +
                   ", which also feeds the tile of a spatial iter var");
  }
}

// The box a block's declared write regions of buf cover over its iter vars' ranges (`part`:
// a narrower range per iter var, else [0, extent)); nullopt when unknown.
std::optional<std::vector<SymRange>> write_box(const BlockNode& b,
                                               const std::vector<std::optional<SymRange>>& part,
                                               const Buffer& buf) {
  SymRangeMap dom;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    dom[iv.var.get()] = i < part.size() && part[i] ? *part[i]
                                                   : SymRange{make_int(0, iv.var.dtype()),
                                                              fold(iv.extent - make_int(1, iv.var.dtype()))};
  }
  std::optional<std::vector<SymRange>> box;
  for (auto& r : b.writes) {
    if (!r.buffer.same_as(buf)) continue;
    if (box) return std::nullopt;  // several regions: not needed so far
    box.emplace();
    for (auto& rg : r.ranges) {
      auto lo = relax(rg.begin, dom);
      auto hi = relax(rg.is_point() ? rg.begin : fold(rg.end - make_int(1, rg.begin.dtype())), dom);
      if (!lo || !hi) return std::nullopt;
      box->push_back(SymRange{lo->lo, hi->hi});
    }
  }
  return box;
}

// True when the write boxes of a and b (see write_box) are apart in some dimension.
bool writes_apart(const BlockNode& a, const std::vector<std::optional<SymRange>>& pa, const BlockNode& b,
                  const std::vector<std::optional<SymRange>>& pb, const Buffer& buf) {
  auto x = write_box(a, pa, buf), y = write_box(b, pb, buf);
  if (!x || !y || x->size() != y->size()) return false;
  for (size_t d = 0; d < x->size(); ++d)
    if (prove_lt((*x)[d].hi, (*y)[d].lo) || prove_lt((*y)[d].hi, (*x)[d].lo)) return true;
  return false;
}

// The accesses of buf in a statement (loads when `loads`, and stores) as "shifted copies" of
// one index tuple: identical in every dimension but `d`, where each is `v + c` for one var v
// (the same in all) and a constant c. Fills *ref (the tuple, dimension d = v), *var and the set
// of offsets; false otherwise or when there is no access.
bool shifted_copies(const Stmt& s, const Buffer& buf, size_t d, bool loads, std::vector<Expr>* ref,
                    const VarNode** var, std::set<int64_t>* offsets) {
  bool ok = true, any = false;
  auto see = [&](const std::vector<Expr>& ix) {
    if (!ok) return;
    if (ix.size() <= d) {
      ok = false;
      return;
    }
    auto lin = to_linear(ix[d]);
    const VarNode* v = lin && lin->terms.size() == 1 && lin->terms[0].second == 1
                           ? lin->terms[0].first.as<VarNode>()
                           : nullptr;
    if (!v) {
      ok = false;
      return;
    }
    if (!any) {
      *ref = ix;
      (*ref)[d] = lin->terms[0].first;
      *var = v;
      any = true;
    } else {
      ok = v == *var;
      for (size_t k = 0; ok && k < ix.size(); ++k) ok = k == d || expr_identical(ix[k], (*ref)[k]);
    }
    offsets->insert(lin->c);
  };
  std::function<void(const Stmt&)> rec = [&](const Stmt& x) {
    if (!x.defined()) return;
    if (auto* st = x.as<StoreNode>(); st && st->buffer.same_as(buf)) see(st->indices);
    for (auto& ch : children(x)) rec(ch);
  };
  rec(s);
  if (loads)
    for_each_expr(s, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(buf)) see(l->indices);
      if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(buf)) ok = false;
    });
  return ok && any;
}

}  // namespace

namespace {

// Whether block o under `loop` reads buf only inside the tile the blocks under the loop write
// in the same iteration, along a dimension whose tiles of different iterations are apart, and
// C (to be moved to the end of the loop body) stores buf where it loads it: then no read of o
// sees C's stores of other iterations (autodiff's `X_grad[n, I[n]] -= a` and a row sum over
// X_grad[n, :] under the row loop n), and C's own iteration runs after o.
bool reads_inside_tile(const Stmt& loop, const Stmt& o, const Buffer& P, const Buffer& buf,
                       const std::vector<Stmt>& outer);

bool reads_inside_linear_tile(const Stmt& loop, const Stmt& o, const Buffer& P, const Buffer& buf,
                              const std::vector<Stmt>& outer);
bool produced_tile(const Stmt& loop, const Buffer& P, std::vector<std::optional<SymRange>>* out);

// outer: the loops above `loop` (outermost first); empty when `loop` is outermost in its scope.
bool reads_own_tile(const Stmt& loop, const Stmt& o, const BlockNode& c, const Buffer& buf,
                    const std::vector<Stmt>& outer = {}) {
  std::vector<Expr> cstore;
  bool one_store = true;
  std::function<void(const Stmt&)> rec = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* st = s.as<StoreNode>(); st && st->buffer.same_as(buf)) {
      if (cstore.empty())
        cstore = st->indices;
      else
        for (size_t k = 0; k < cstore.size(); ++k)
          one_store = one_store && expr_identical(cstore[k], st->indices[k]);
    }
    for (auto& ch : children(s)) rec(ch);
  };
  rec(c.body);
  if (!one_store || cstore.empty()) return false;
  // The buffers C loads at exactly the indices where it stores buf: buf itself (an update in
  // place), or (round 19) a buffer produced under the loop, such as cache_inplace's copy-out
  // `X[v] = X_local[v]` moved into the tile loop where the copy-in of later tiles reads X. C's
  // instances in an iteration load what the loop produced in that iteration, so its stores of
  // buf lie in that iteration's tile of the loaded buffer.
  std::vector<Buffer> same_index;
  for_each_expr(c.body, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->indices.size() == cstore.size()) {
      bool same = true;
      for (size_t k = 0; k < cstore.size(); ++k) same = same && expr_identical(cstore[k], l->indices[k]);
      if (same) same_index.push_back(l->buffer);
    }
  });
  for (auto& P : same_index)
    if (reads_inside_tile(loop, o, P, buf, outer)) return true;
  return false;
}

// Whether o reads buf under `loop` only inside the tile of an iteration (along a dimension whose
// tiles of different iterations are apart) that the blocks under the loop write of P.
// With loops above `loop` (outer), the tiles of different iterations of all of them (outer and
// loop) must be apart: each dimension's tile is [c + sum k_l * l, + w) with a constant width w, every
// loop of extent > 1 in the term of one dimension only, and per dimension the terms sorted by |k|
// each exceeding the span of the tile and the smaller terms (a mixed-radix number: two different
// iterations then start their tiles at least w apart in the dimension of a loop where they
// differ); o reads buf inside the tile in every dimension that has loop terms.
bool tiles_split_loops(const Stmt& loop, const Stmt& o, const Buffer& buf, const std::vector<Stmt>& outer,
                       const std::vector<std::optional<SymRange>>& tile);

bool reads_inside_tile(const Stmt& loop, const Stmt& o, const Buffer& P, const Buffer& buf,
                       const std::vector<Stmt>& outer) {
  if (reads_inside_linear_tile(loop, o, P, buf, outer)) return true;
  // Round 19 (F2 of h6): tiles indexed by splits of the loops (a fused loop `nc` whose blocks
  // bind `vn = nc // 16, vc = nc % 16`), which the linear forms above do not see through.
  std::vector<std::optional<SymRange>> tile;
  if (!produced_tile(loop, P, &tile)) return false;
  return tiles_split_loops(loop, o, buf, outer, tile);
}

// The region of P the blocks under `loop` write in one iteration, per dimension (unset when
// the writers' regions differ there); false when nothing under the loop writes P.
bool produced_tile(const Stmt& loop, const Buffer& P, std::vector<std::optional<SymRange>>* out) {
  std::vector<std::optional<SymRange>>& tile = *out;
  bool first = true;
  for (auto& w : collect_blocks(loop))
    for (auto& r : block_of(w)->writes) {
      if (!r.buffer.same_as(P)) continue;
      auto reg = region_under_loop(loop, w, r);
      if (first) tile = reg;
      for (size_t d = 0; d < tile.size() && !first; ++d)
        if (!tile[d] || !reg[d] || !prove_eq(fold(tile[d]->lo), fold(reg[d]->lo)) ||
            !prove_eq(fold(tile[d]->hi), fold(reg[d]->hi)))
          tile[d].reset();
      first = false;
    }
  return !first;
}

// Tiles whose starts are w_d * T_d(loops) with a constant width w_d (only the dimensions whose
// start uses a loop at or above `loop`; T_d a sum of splits `(l // a) % b * s` of the loops, as
// fused and split loops bind them), and o reading buf inside the tile in each of these
// dimensions. When the loops map one-to-one onto the tile indices (T_d)_d (bijective_bindings
// over the loops at and above `loop`, onto [0, bound_d]), two different iterations differ in
// some T_d, so their tiles [w_d T_d, w_d T_d + w_d - 1] are apart in that dimension: what o
// reads in one iteration is never stored by C (storing inside the tile, see reads_own_tile)
// in another.
bool tiles_split_loops(const Stmt& loop, const Stmt& o, const Buffer& buf, const std::vector<Stmt>& outer,
                       const std::vector<std::optional<SymRange>>& tile) {
  std::vector<Stmt> all = outer;
  all.push_back(loop);
  std::vector<LoopDom> loops;
  std::unordered_set<const VarNode*> lvars;
  for (auto& l : all) {
    auto* f = l.as<ForNode>();
    if (!is_zero(f->min)) return false;
    loops.push_back(LoopDom{f->loop_var, f->extent});
    lvars.insert(f->loop_var.get());
  }
  RangeMap known = const_ranges(all);
  std::vector<Expr> idx, exts;
  std::vector<size_t> dims;
  for (size_t d = 0; d < tile.size(); ++d) {
    if (!tile[d]) continue;
    Expr lo = fold(tile[d]->lo);
    if (!uses_var(lo, [&](const VarNode* v) { return lvars.count(v) > 0; })) continue;
    int64_t w;
    auto lin = to_linear(lo);
    if (!lin || lin->c != 0 || !is_const_int(fold(tile[d]->hi - lo + make_int(1, lo.dtype())), &w) || w <= 0)
      return false;
    Linear t = *lin;
    for (auto& [a, k] : t.terms) {
      if (k % w != 0) return false;
      k /= w;
    }
    Expr T = from_linear(t);
    auto b = const_bound(T, known);
    if (!b || b->lo != 0) return false;
    idx.push_back(T);
    exts.push_back(make_int(b->hi + 1, T.dtype()));
    dims.push_back(d);
  }
  if (idx.empty() || !bijective_bindings(idx, exts, loops, Expr())) return false;
  for (auto& r : block_of(o)->reads) {
    if (!r.buffer.same_as(buf)) continue;
    auto reg = region_under_loop(loop, o, r);
    for (size_t d : dims)
      if (d >= reg.size() || !reg[d] || !prove_le(tile[d]->lo, reg[d]->lo) ||
          !prove_le(reg[d]->hi, tile[d]->hi))
        return false;
  }
  return true;
}

// The linear forms of the tiles (rounds 17-19), see reads_inside_tile.
bool reads_inside_linear_tile(const Stmt& loop, const Stmt& o, const Buffer& P, const Buffer& buf,
                              const std::vector<Stmt>& outer) {
  const VarNode* lv = loop.as<ForNode>()->loop_var.get();
  std::vector<std::optional<SymRange>> tile;
  bool first = true;
  for (auto& w : collect_blocks(loop))
    for (auto& r : block_of(w)->writes) {
      if (!r.buffer.same_as(P)) continue;
      auto reg = region_under_loop(loop, w, r);
      if (first) tile = reg;
      for (size_t d = 0; d < tile.size() && !first; ++d)
        if (!tile[d] || !reg[d] || !prove_eq(fold(tile[d]->lo), fold(reg[d]->lo)) ||
            !prove_eq(fold(tile[d]->hi), fold(reg[d]->hi)))
          tile[d].reset();
      first = false;
    }
  if (first) return false;
  if (!outer.empty()) {
    std::unordered_map<const VarNode*, int64_t> ext;
    std::vector<Stmt> all = outer;
    all.push_back(loop);
    for (auto& l : all) {
      auto* f = l.as<ForNode>();
      int64_t e;
      if (!is_zero(f->min) || !is_const_int(fold(f->extent), &e) || e <= 0) return false;
      ext[f->loop_var.get()] = e;
    }
    std::unordered_set<const VarNode*> used;
    std::vector<size_t> tiled;
    for (size_t d = 0; d < tile.size(); ++d) {
      if (!tile[d]) continue;
      int64_t w;
      auto lin = to_linear(fold(tile[d]->lo));
      if (!lin || !is_const_int(fold(tile[d]->hi - tile[d]->lo + make_int(1, tile[d]->lo.dtype())), &w) ||
          w <= 0)
        continue;
      std::vector<std::pair<int64_t, int64_t>> terms;  // |k|, extent
      bool ok = true;
      for (auto& [a, k] : lin->terms) {
        auto* v = a.as<VarNode>();
        auto it = v ? ext.find(v) : ext.end();
        if (it == ext.end() || !used.insert(v).second) {
          ok = false;
          break;
        }
        if (it->second > 1) terms.emplace_back(k < 0 ? -k : k, it->second);
      }
      if (!ok) return false;
      if (terms.empty()) continue;
      std::sort(terms.begin(), terms.end());
      int64_t span = w - 1;
      for (auto& [k, e] : terms) {
        if (k <= span) return false;
        span += k * (e - 1);
      }
      tiled.push_back(d);
    }
    for (auto& [v, e] : ext)
      if (e > 1 && !used.count(v)) return false;
    for (auto& r : block_of(o)->reads) {
      if (!r.buffer.same_as(buf)) continue;
      auto reg = region_under_loop(loop, o, r);
      for (size_t d : tiled)
        if (d >= reg.size() || !reg[d] || !prove_le(tile[d]->lo, reg[d]->lo) ||
            !prove_le(reg[d]->hi, tile[d]->hi))
          return false;
    }
    return true;
  }
  for (size_t d = 0; d < tile.size(); ++d) {
    if (!tile[d]) continue;
    int64_t w;
    auto lin = to_linear(fold(tile[d]->lo));
    if (!is_const_int(fold(tile[d]->hi - tile[d]->lo + make_int(1, tile[d]->lo.dtype())), &w) || w <= 0 ||
        !lin || lin->coef_of(lv) < w)
      continue;
    bool inside = true;
    for (auto& r : block_of(o)->reads) {
      if (!r.buffer.same_as(buf)) continue;
      auto reg = region_under_loop(loop, o, r);
      inside = inside && d < reg.size() && reg[d] && prove_le(tile[d]->lo, reg[d]->lo) &&
               prove_le(reg[d]->hi, tile[d]->hi);
    }
    if (inside) return true;
  }
  return false;
}

}  // namespace

void prim_reverse_compute_at(ScheduleState& st, const ScheduleInstr& ins) {
  auto pos = positional(ins);
  if (pos.size() != 2) refuse("expected 2 arguments (block, loop), got " + std::to_string(pos.size()));
  expect_results(ins, 0);
  Stmt cs = arg_block(st, ins, 0);
  Stmt ls = arg_loop(st, ins, 1);
  const BlockRealizeNode* cr = realize(cs);
  const BlockNode* c = cr->block.get();
  auto* L = ls.as<ForNode>();
  if (!find_path(ls, cs.get()).empty())
    refuse("block " + c->name + " is already inside loop " + loop_name(ls));
  if (st.scope_of(cs.get()).get() != st.scope_of(ls.get()).get())
    refuse("block " + c->name + " and loop " + loop_name(ls) + " are not in the same block scope");
  check_moved_block_order(st, cs);
  if (!collect_blocks(c->body).empty()) refuse("block " + c->name + " has nested blocks");
  {
    // The init of the scope block runs once per reduction, its body every iteration: moving a
    // block between them changes how often (and when) it runs.
    const BlockNode* sb = block_of(st.scope_of(cs.get()));
    bool b_in = sb->init.defined() && !find_path(sb->init, cs.get()).empty();
    bool l_in = sb->init.defined() && !find_path(sb->init, ls.get()).empty();
    if (b_in != l_in)
      refuse(b_in ? "block " + c->name + " is in the init of block " + sb->name + " and loop " +
                        loop_name(ls) + " is not"
                  : "loop " + loop_name(ls) + " is in the init of block " + sb->name + " and block " +
                        c->name + " is not");
  }
  // Produced buffers: read by C and written under the loop. Writers after C (a gradient's
  // later `X_grad += ...`) do not produce what C reads, and C does not move past them.
  // Writers in top-level nests that end before the loop's nest starts (a gradient's zero-fill
  // `X_grad_init` before the accumulating loop) finish before every iteration; the producers
  // under the loop then write each element only in the iteration that produces its tile
  // (checked below), so it is final after that iteration as before.
  std::vector<Buffer> produced;
  auto order0 = blocks_in_order(st);
  int cidx0 = block_index(order0, cs);
  int first_l0 = 1 << 30;
  for (auto& b : collect_blocks(ls)) first_l0 = std::min(first_l0, block_index(order0, b));
  Stmt litem0 = top_item(st, ls.get());
  for (auto& buf : read_buffers(*c)) {
    auto ws = writers_of(st, buf, c);
    bool under = false, outside = false;
    for (auto& w : ws) {
      bool in_loop = !find_path(ls, w.get()).empty();
      int wi = block_index(order0, w);
      if (!in_loop && wi > cidx0 && !top_item(st, w.get()).same_as(top_item(st, cs.get()))) continue;
      if (!in_loop && wi < first_l0 && !top_item(st, w.get()).same_as(litem0)) continue;
      (in_loop ? under : outside) = true;
    }
    if (under && outside) refuse("buffer " + buf->name + " is also written outside loop " + loop_name(ls));
    if (under) produced.push_back(buf);
  }
  if (produced.empty()) refuse("block " + c->name + " reads nothing produced under loop " + loop_name(ls));
  auto above = st.loops_above(ls.get());
  above.push_back(ls);
  // Loads of the produced buffers: one index tuple of distinct iter vars each.
  std::vector<int> mapped(c->iter_vars.size(), -1);  // iter var -> (buffer index * 64 + dim)
  // A load that is an affine map h of C's iter vars (one produced buffer X): the region
  // produced per iteration in X's index space, and per dimension its tile (width, start).
  struct Affine {
    std::vector<Expr> h;
    std::vector<LoopDom> sdom;
    std::vector<std::optional<SymRange>> reg;
    std::vector<Expr> width;  // undefined: the dimension is produced whole in every iteration
  };
  std::optional<Affine> affine;
  // Each produced buffer C loads (in its init or body), with the iter vars its loads map: the
  // tiles of those alone must tell the iterations apart (checked below).
  std::vector<std::pair<size_t, std::set<int>>> load_maps;
  std::vector<std::optional<SymRange>> range_of(c->iter_vars.size());
  for (size_t bi = 0; bi < produced.size(); ++bi) {
    const Buffer& X = produced[bi];
    std::vector<Expr> idx;
    std::vector<bool> differ_at;  // per dimension: two loads index it differently
    bool ptr = false;
    auto f = [&](const Expr& e) {
      if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(X)) ptr = true;
      auto* l = e.as<LoadNode>();
      if (!l || !l->buffer.same_as(X)) return;
      if (idx.empty()) {
        idx = l->indices;
        differ_at.assign(idx.size(), false);
      } else {
        for (size_t k = 0; k < idx.size(); ++k)
          differ_at[k] = differ_at[k] || !expr_identical(idx[k], l->indices[k]);
      }
    };
    if (c->init.defined()) for_each_expr(c->init, f);
    for_each_expr(c->body, f);
    if (ptr) refuse("block " + c->name + " passes a pointer to buffer " + X->name);
    // What the producers under the loop write in one iteration.
    std::vector<std::optional<SymRange>> reg;
    bool first = true;
    for (auto& w : writers_of(st, X, c)) {
      if (find_path(ls, w.get()).empty()) continue;  // a writer after C (see above)
      const BlockRealizeNode* wr = realize(w);
      // A scan step that stores X at its scan iter var (`Y[vi, vj]`) writes elements no other
      // step writes: they are final after the step, as for a spatial iter var.
      // Checked on the stores themselves (the init's too), not on the declared regions.
      auto stores_at = [&](const Var& v) {
        struct Stores : IRVisitor {
          const BufferNode* buf;
          const VarNode* var;
          bool any = false, all = true;
          void visit_store(const StoreNode* n) override {
            if (n->buffer.get() == buf) {
              any = true;
              bool dim = false;
              for (auto& e : n->indices) dim = dim || e.as<VarNode>() == var;
              all = all && dim;
            }
            IRVisitor::visit_store(n);
          }
        } sv;
        sv.buf = X.get();
        sv.var = v.get();
        if (wr->block->init.defined()) sv.visit(wr->block->init);
        sv.visit(wr->block->body);
        return sv.any && sv.all;
      };
      for (auto& l : above) {
        const VarNode* lv = l.as<ForNode>()->loop_var.get();
        for (size_t i = 0; i < wr->block->iter_vars.size(); ++i) {
          if (!uses_var(wr->bindings[i], lv)) continue;
          const IterVar& iv = wr->block->iter_vars[i];
          IterKind k = iv.kind;
          if (k == IterKind::Spatial || (k == IterKind::Scan && stores_at(iv.var))) continue;
          refuse("loop " + loop_name(l) + " feeds the " + std::string(iter_kind_name(k)) +
                 " iter var of producer " + wr->block->name + ", so " + X->name +
                 " is not final after an iteration of loop " + loop_name(ls));
        }
      }
      for (auto& r : wr->block->writes) {
        if (!r.buffer.same_as(X)) continue;
        auto g = region_under_loop(ls, w, r);
        if (first)
          reg = g;
        else
          for (size_t d = 0; d < reg.size(); ++d) {
            if (reg[d] && g[d] && prove_eq(reg[d]->lo, g[d]->lo) && prove_eq(reg[d]->hi, g[d]->hi)) continue;
            // Regions that are the same in every iteration (a copy's whole row and a scan's
            // columns of it): their hull, when the ends compare (see free_dim below).
            auto fixed = [&](const std::optional<SymRange>& r) {
              auto loopish = [&](const VarNode* v) {
                for (auto& l : above)
                  if (l.as<ForNode>()->loop_var.get() == v) return true;
                return false;
              };
              return r && !uses_var(r->lo, loopish) && !uses_var(r->hi, loopish);
            };
            Expr lo, hi;
            if (fixed(reg[d]) && fixed(g[d])) {
              lo = prove_le(reg[d]->lo, g[d]->lo)   ? reg[d]->lo
                   : prove_le(g[d]->lo, reg[d]->lo) ? g[d]->lo
                                                    : Expr();
              hi = prove_le(g[d]->hi, reg[d]->hi)   ? reg[d]->hi
                   : prove_le(reg[d]->hi, g[d]->hi) ? g[d]->hi
                                                    : Expr();
            }
            if (!lo.defined() || !hi.defined())
              refuse("the producers of " + X->name + " under loop " + loop_name(ls) +
                     " write different regions");
            reg[d] = SymRange{lo, hi};
          }
        first = false;
      }
    }
    // A dimension whose written region is the same in every iteration (it does not depend on
    // the loops at and above `loop`) is "free": the other dimensions' tiles partition the
    // iterations (checked below), so an element whose other indices lie in this iteration's
    // tiles is written in this iteration or in none under the loop, and C may read it at any
    // index there (two loads at different indices, a strided `2 * y + 1`, a column the
    // producers do not write). Its indices then map no iter var.
    std::unordered_set<const VarNode*> above_vars;
    for (auto& l : above) above_vars.insert(l.as<ForNode>()->loop_var.get());
    std::vector<bool> free_dim(idx.size(), false);
    for (size_t d = 0; d < idx.size() && d < reg.size(); ++d) {
      bool loads = false;
      for_each_expr(idx[d], [&](const Expr& e) { loads = loads || e.as<LoadNode>() != nullptr; });
      free_dim[d] = reg[d] && !loads &&
                    !uses_var(reg[d]->lo, [&](const VarNode* v) { return above_vars.count(v) > 0; }) &&
                    !uses_var(reg[d]->hi, [&](const VarNode* v) { return above_vars.count(v) > 0; });
    }
    // Round 19 follow-up (F1 of h6, ConvLSTM's gates stacked in one dimension): C loads (and
    // stores) X in one dimension d at several shifts `v + c_k` of one iter var v, identical
    // elsewhere, and every producer under the loop stores X at shifts `u + c_k` of one of its
    // iter vars u (identical elsewhere; its own set of shifts: the ConvLSTM H1 adjoint stores a
    // gate the C1 adjoint does not touch), in every iteration over the same part V of u's
    // range. The elements of X an iteration owns are then the bands V + c_k; consecutive shifts
    // (C's and the producers') further apart than the span of V over all iterations keep the
    // bands of different shifts
    // apart, and the tiles (checked below: v ranges over V, partitioning C's domain) keep the
    // same band of two iterations apart. So C's instances of an iteration read only what the
    // producers of that iteration wrote (or what no producer under the loop writes), and store
    // only there, where no later iteration stores. Read as a plain `v + c_0` ranging over V.
    {
      std::vector<size_t> dd;
      for (size_t d = 0; d < idx.size(); ++d)
        if (differ_at[d] && !free_dim[d]) dd.push_back(d);
      if (dd.size() == 1) {
        const size_t d = dd[0];
        std::vector<Expr> cref;
        const VarNode* cv = nullptr;
        std::set<int64_t> koff;
        bool ok = !c->init.defined() && shifted_copies(c->body, X, d, true, &cref, &cv, &koff);
        std::optional<SymRange> band;
        std::set<int64_t> all_off = koff;  // C's shifts and the producers'
        for (auto& w : writers_of(st, X, c)) {
          if (!ok) break;
          if (find_path(ls, w.get()).empty()) continue;
          const BlockRealizeNode* wr = realize(w);
          std::vector<Expr> wref;
          const VarNode* wv = nullptr;
          std::set<int64_t> woff;
          ok = !wr->block->init.defined() && collect_blocks(wr->block->body).empty() &&
               shifted_copies(wr->block->body, X, d, false, &wref, &wv, &woff);
          all_off.insert(woff.begin(), woff.end());
          if (!ok) break;
          BufferRegion r{X, {}};
          for (auto& e : wref) r.ranges.push_back(Range{e, Expr()});
          auto g = region_under_loop(ls, w, r);
          ok = d < g.size() && g[d].has_value() &&
               (!band ||
                (prove_eq(fold(band->lo), fold(g[d]->lo)) && prove_eq(fold(band->hi), fold(g[d]->hi))));
          if (ok) band = g[d];
        }
        if (ok && band) {
          RangeMap kr = const_ranges(above);
          auto blo = const_bound(fold(band->lo), kr), bhi = const_bound(fold(band->hi), kr);
          ok = blo && bhi;
          // (A block only loading X at several shifts, a stencil, keeps the message below.)
          bool c_stores = block_writes(*c, X);
          for (auto it = all_off.begin(); ok && std::next(it) != all_off.end(); ++it)
            if (*std::next(it) - *it <= bhi->hi - blo->lo) {
              ok = false;
              if (!c_stores) break;
              std::string ks;
              for (int64_t k : all_off) ks += (ks.empty() ? "" : ", ") + std::to_string(k);
              refuse("block " + c->name + " loads buffer " + X->name + " in dimension " + std::to_string(d) +
                     " at shifts of " + print_expr(cref[d]) + " (with the producers': " + ks +
                     ") closer than the span " + std::to_string(bhi->hi - blo->lo + 1) +
                     " of what the producers under loop " + loop_name(ls) +
                     " write there: an iteration would read or store elements another " + "iteration writes");
            }
          if (ok) {
            const int64_t c0 = to_linear(idx[d])->c;  // idx[d] = v + c0 (shifted_copies)
            DType t = band->lo.dtype();
            reg[d] = SymRange{fold(band->lo + make_int(c0, t)), fold(band->hi + make_int(c0, t))};
            differ_at[d] = false;
          }
        }
      }
    }
    for (size_t d = 0; d < idx.size(); ++d)
      if (differ_at[d] && !free_dim[d])
        refuse("block " + c->name + " loads buffer " + X->name + " at different indices");
    // Each index is an iter var plus a constant shift (a padding's adjoint reads
    // `P_grad[v0, v1, v2 + 1, v3 + 1]`): the iter var then ranges over the written region
    // shifted back.
    std::vector<int> ivs;
    std::vector<int64_t> shifts;
    // divs[d] = c when dimensions d, d + 1 are `v // c, v % c` of one iter var v (a flattened
    // consumer reading a 2-d tile: `temp[v // 16, v % 16]`); ivs[d + 1] is then -2.
    std::vector<int64_t> divs(idx.size(), 0);
    bool not_plain = false;
    auto iter_var_index = [&](const Expr& e) {
      int found = -1;
      for (size_t i = 0; i < c->iter_vars.size(); ++i)
        if (c->iter_vars[i].var.get() == e.get()) found = static_cast<int>(i);
      return found;
    };
    for (size_t d = 0; d + 1 < idx.size(); ++d) {
      auto* q = idx[d].as<BinaryNode>();
      auto* r = idx[d + 1].as<BinaryNode>();
      int64_t cq, cr;
      if (differ_at[d] || differ_at[d + 1]) continue;
      if (q && r && q->op == BinOp::FloorDiv && r->op == BinOp::FloorMod && q->a.as<VarNode>() &&
          q->a.same_as(r->a) && is_const_int(q->b, &cq) && is_const_int(r->b, &cr) && cq == cr && cq > 0 &&
          iter_var_index(q->a) >= 0)
        divs[d] = cq;
    }
    for (size_t d = 0; d < idx.size(); ++d) {
      const Expr& e = idx[d];
      if (d > 0 && divs[d - 1] > 0) {
        ivs.push_back(-2);
        shifts.push_back(0);
        continue;
      }
      if (divs[d] > 0) {
        int found = iter_var_index(e.as<BinaryNode>()->a);
        if (std::find(ivs.begin(), ivs.end(), found) != ivs.end()) {
          not_plain = true;
          break;
        }
        ivs.push_back(found);
        shifts.push_back(0);
        continue;
      }
      if (free_dim[d] && differ_at[d]) {
        ivs.push_back(-3);
        shifts.push_back(0);
        continue;
      }
      auto lin = to_linear(e);
      // A constant index (a unit dimension, `C_rf[v2, v0, 0, v1]`): no iter var to map; the
      // element must be among those written in every iteration (checked below).
      if (lin && lin->terms.empty()) {
        ivs.push_back(-1);
        shifts.push_back(lin->c);
        continue;
      }
      const VarNode* v = nullptr;
      if (lin && lin->terms.size() == 1 && lin->terms[0].second == 1) v = lin->terms[0].first.as<VarNode>();
      int found = -1;
      for (size_t i = 0; v && i < c->iter_vars.size(); ++i)
        if (c->iter_vars[i].var.get() == v) found = static_cast<int>(i);
      bool plain = found >= 0 && std::find(ivs.begin(), ivs.end(), found) == ivs.end();
      if (free_dim[d]) {
        // A plain iter var keeps the old reading when the written region covers its whole
        // extent (its range is then reset below); otherwise the dimension maps nothing.
        bool covers = false;
        if (plain) {
          const IterVar& iv = c->iter_vars[static_cast<size_t>(found)];
          DType t = reg[d]->lo.dtype();
          Expr k = make_int(lin->c, t);
          covers = iv.var.dtype() == t && prove_le(fold(reg[d]->lo - k), make_int(0, t)) &&
                   prove_le(fold(iv.extent - make_int(1, t)), fold(reg[d]->hi - k));
        }
        if (!covers) {
          ivs.push_back(-3);
          shifts.push_back(0);
          continue;
        }
      }
      if (!plain) {
        not_plain = true;
        break;
      }
      ivs.push_back(found);
      shifts.push_back(lin->c);
    }
    if (not_plain) {
      // Another form of index (a layout transform's `B[v0, (v1 * 8 + v4) // 16, ..., (v1 * 8 +
      // v4) % 16]`, TVM's test_reverse_compute_at_layout_trans): read as a map h from the iter
      // vars it uses (all spatial) to X, one-to-one onto X's shape (TVM's iter-map). C then runs
      // over the region produced in an iteration in X's index space, its iter vars given by
      // h^-1 (see affine below). One produced buffer only.
      const std::string bad =
          "the indices of the load of " + X->name + " in block " + c->name + " are not distinct iter vars";
      if (std::find(differ_at.begin(), differ_at.end(), true) != differ_at.end())
        refuse("block " + c->name + " loads buffer " + X->name + " at different indices");
      if (produced.size() != 1) refuse(bad);
      std::vector<LoopDom> sdom;
      for (size_t i = 0; i < c->iter_vars.size(); ++i) {
        const IterVar& iv = c->iter_vars[i];
        bool used = false;
        for (auto& e : idx) used = used || uses_var(e, iv.var.get());
        if (!used) continue;
        if (iv.kind != IterKind::Spatial) refuse(bad);
        sdom.push_back(LoopDom{iv.var, iv.extent});
        mapped[i] = 0;
      }
      std::vector<Expr> h;
      for (auto& e : idx) h.push_back(fold(e));
      bool dims_ok = X->shape.size() == h.size();
      for (auto& e : X->shape) dims_ok = dims_ok && e.defined();
      // One-to-one but not onto X (C reads part of what the producers write, TVM's
      // test_reverse_compute_at_floordiv_and_floormod_recursive: `v1 < 3` of X's 8 rows): the
      // map is inverted over the widened domain, and C runs only where the inverse lies in
      // its own (the predicate added below).
      if (dims_ok && !bijective_bindings(h, X->shape, sdom, Expr())) {
        auto wide = widened_domain(h, X->shape, sdom);
        if (!wide || !bijective_bindings(h, X->shape, *wide, Expr())) refuse(bad);
        sdom = *wide;
      }
      if (!dims_ok) refuse(bad);
      affine.emplace();
      affine->h = h;
      affine->sdom = sdom;
    }
    // The tiles that tell the iterations apart must all be of iter vars X's loads map (checked
    // below, once the tiles are known): then the parts of X written in different iterations are
    // disjoint (tiles of another buffer alone would not keep a later iteration from rewriting
    // what C reads of X). Round 18 (LSTM gradient): X need no longer be the only produced
    // buffer; another one (read at this iteration's tile) may map the same iter vars. (An affine
    // load: X is the only produced buffer, its tiles are all the tiles.)
    if (!affine && !idx.empty()) {
      std::set<int> maps;
      for (int v : ivs)
        if (v >= 0) maps.insert(v);
      load_maps.emplace_back(bi, maps);
    }
    // With a free dimension, C may also store X only inside this iteration's tiles: a store
    // elsewhere could be overwritten by the producers of a later iteration.
    if (std::find(ivs.begin(), ivs.end(), -3) != ivs.end() && !affine) {
      std::function<void(const Stmt&)> rec = [&](const Stmt& st_) {
        if (!st_.defined()) return;
        if (auto* x = st_.as<StoreNode>(); x && x->buffer.same_as(X))
          for (size_t d = 0; d < ivs.size(); ++d)
            if (ivs[d] != -3 && !expr_identical(x->indices[d], idx[d]))
              refuse("block " + c->name + " stores " + X->name +
                     " at other indices than it loads it in dimension " + std::to_string(d) +
                     ", which loop " + loop_name(ls) + " tiles");
        for (auto& ch : children(st_)) rec(ch);
      };
      rec(c->init);
      rec(c->body);
    }
    if (affine) {
      for (size_t d = 0; d < reg.size(); ++d)
        if (!reg[d]) refuse("cannot bound the region of " + X->name + " written under loop " + loop_name(ls));
      affine->reg = reg;
      continue;
    }
    for (size_t d = 0; d < ivs.size(); ++d) {
      if (ivs[d] == -3) continue;
      if (!reg[d]) refuse("cannot bound the region of " + X->name + " written under loop " + loop_name(ls));
      int v = ivs[d];
      if (v == -2 || v == -3) continue;  // the `% c` half of a `// c, % c` pair (below); a free dimension
      if (divs[d] > 0) {
        // v ranges over a contiguous stretch when the `% c` dimension is written whole in each
        // iteration, or the `// c` dimension is one value.
        if (!reg[d + 1])
          refuse("cannot bound the region of " + X->name + " written under loop " + loop_name(ls));
        DType t = reg[d]->lo.dtype();
        Expr cc = make_int(divs[d], t);
        SymRange r;
        if (prove_eq(reg[d + 1]->lo, make_int(0, t)) && prove_eq(reg[d + 1]->hi, make_int(divs[d] - 1, t)))
          r = SymRange{fold(reg[d]->lo * cc), fold(reg[d]->hi * cc + cc - make_int(1, t))};
        else if (prove_eq(reg[d]->lo, reg[d]->hi))
          r = SymRange{fold(reg[d]->lo * cc + reg[d + 1]->lo), fold(reg[d]->lo * cc + reg[d + 1]->hi)};
        else
          refuse("block " + c->name + " loads " + X->name + " at " + c->iter_vars[v].var.name() + " // " +
                 std::to_string(divs[d]) + ", " + c->iter_vars[v].var.name() + " % " +
                 std::to_string(divs[d]) + ", and the part written under loop " + loop_name(ls) +
                 " is not one stretch of " + c->iter_vars[v].var.name());
        if (range_of[v] && (!prove_eq(range_of[v]->lo, r.lo) || !prove_eq(range_of[v]->hi, r.hi)))
          refuse("iter var " + c->iter_vars[v].var.name() + " of block " + c->name +
                 " gets two different ranges");
        range_of[v] = r;
        mapped[v] = static_cast<int>(bi);
        continue;
      }
      if (v < 0) {
        Expr k = make_int(shifts[d], reg[d]->lo.dtype());
        if (!prove_le(reg[d]->lo, k) || !prove_le(k, reg[d]->hi))
          refuse("block " + c->name + " loads " + X->name + " at the constant index " +
                 std::to_string(shifts[d]) + " in dimension " + std::to_string(d) +
                 ", which the producers under loop " + loop_name(ls) + " do not write in every iteration");
        continue;
      }
      if (shifts[d] != 0) {
        Expr k = make_int(shifts[d], reg[d]->lo.dtype());
        reg[d] = SymRange{fold(reg[d]->lo - k), fold(reg[d]->hi - k)};
      }
      if (range_of[v]) {
        if (!prove_eq(range_of[v]->lo, reg[d]->lo) || !prove_eq(range_of[v]->hi, reg[d]->hi))
          refuse("iter var " + c->iter_vars[v].var.name() + " of block " + c->name +
                 " gets two different ranges");
      }
      range_of[v] = reg[d];
      mapped[v] = static_cast<int>(bi);
    }
  }
  // The tiles of successive iterations partition C's domain: lo = width * T(loops) with T a
  // bijective map onto [0, ceil(extent / width)).
  std::vector<Expr> tiles, tile_exts;
  std::vector<Linear> tile_forms;    // tiles[t] as a linear form of the (rebased) loops
  std::vector<size_t> reduce_tiles;  // the tiles of reduce iter vars
  std::vector<int> tile_iv;          // the iter var of each tile (-1: an affine load's dimension)
  std::vector<Expr> widths(c->iter_vars.size());
  RangeMap known_above = const_ranges(above);
  // A loop over [min, min + extent) (`serial(3, 13)`, a loop_partition part) is seen as a
  // 0-based loop l' with l = l' + min for the tiling checks: the tiles start at multiples of
  // their size and cover the domain once over the one exactly when they do over the other.
  // (The new bindings keep the loops' own variables.)
  auto rebased = [](const std::vector<Stmt>& ls_, std::unordered_map<const VarNode*, Expr>* rebase) {
    std::vector<LoopDom> loops;
    for (auto& l : ls_) {
      auto* f = l.as<ForNode>();
      if (is_zero(f->min)) {
        loops.push_back(LoopDom{f->loop_var, f->extent});
        continue;
      }
      Var z(f->loop_var.name() + "_0", f->loop_var.dtype());
      (*rebase)[f->loop_var.get()] = z + f->min;
      loops.push_back(LoopDom{z, f->extent});
    }
    return loops;
  };
  std::unordered_map<const VarNode*, Expr> rebase_above;
  std::vector<LoopDom> loops_above_dom = rebased(above, &rebase_above);
  // The part of its domain C runs, per iter var bound to a loop of its own that covers only
  // part of the extent (`v6 = ax3` over `serial(1, 128)` for an iter var of extent 128: autodiff's
  // copy of the columns after the first, or a producer and consumer both over `serial(1, n)`):
  // [lo, hi] with lo the loop's constant start. C keeps running only that part; its tiles
  // partition it instead of [0, extent).
  std::vector<std::optional<SymRange>> own(c->iter_vars.size());
  {
    std::unordered_map<const VarNode*, Expr> rebase_c;
    std::vector<LoopDom> cloops = rebased(st.loops_above(cs.get()), &rebase_c);
    std::vector<Expr> binds;
    for (auto& e : cr->bindings) binds.push_back(fold(rebase_c.empty() ? e : substitute(e, rebase_c)));
    for (size_t i = 0; i < binds.size(); ++i) {
      auto lin = to_linear(binds[i]);
      if (!lin || lin->terms.size() != 1 || lin->terms[0].second != 1) continue;
      auto* v = lin->terms[0].first.as<VarNode>();
      const LoopDom* dom = nullptr;
      for (auto& d : cloops)
        if (d.var.get() == v) dom = &d;
      if (!dom) continue;
      bool shared = false;
      for (size_t j = 0; j < binds.size(); ++j) shared = shared || (j != i && uses_var(binds[j], v));
      if (shared) continue;
      const IterVar& iv = c->iter_vars[i];
      DType t = iv.var.dtype();
      if (dom->extent.dtype() != t) continue;
      Expr lo = make_int(lin->c, t), hi = fold(lo + dom->extent - make_int(1, t));
      Expr last = fold(iv.extent - make_int(1, t));
      if (lin->c == 0 && prove_eq(hi, last)) continue;
      if (lin->c >= 0 && prove_le(hi, last)) own[i] = SymRange{lo, hi};
    }
  }
  for (size_t i = 0; i < c->iter_vars.size(); ++i) {
    if (!range_of[i]) continue;
    const IterVar& iv = c->iter_vars[i];
    if (own[i]) {
      // Tiles over the part C runs (see own above).
      DType t = iv.var.dtype();
      if (prove_le(range_of[i]->lo, own[i]->lo, known_above) &&
          prove_le(own[i]->hi, range_of[i]->hi, known_above)) {
        range_of[i].reset();
        continue;
      }
      if (iv.kind != IterKind::Spatial)
        refuse("iter var " + iv.var.name() + " of block " + c->name +
               " runs part of its extent and is not spatial");
      Expr w = fold(range_of[i]->hi - range_of[i]->lo + make_int(1, t));
      int64_t wc, len;
      if (!is_const_int(w, &wc) || wc <= 0)
        refuse("the tile of iter var " + iv.var.name() + " has a non-constant size");
      widths[i] = w;
      Expr from = fold(range_of[i]->lo - own[i]->lo);
      auto lin = to_linear(rebase_above.empty() ? from : fold(substitute(from, rebase_above)));
      if (!lin || lin->c != 0)
        refuse("the tiles of iter var " + iv.var.name() + " do not start at multiples of their size from " +
               print_expr(own[i]->lo) + ", where block " + c->name + " starts it");
      Linear tl;
      tl.dtype = t;
      for (auto& [a, k] : lin->terms) {
        if (k % wc != 0) refuse("the tiles of iter var " + iv.var.name() + " overlap or leave gaps");
        tl.terms.emplace_back(a, k / wc);
      }
      tile_forms.push_back(tl);
      tiles.push_back(from_linear(tl));
      tile_iv.push_back(static_cast<int>(i));
      Expr n = fold(own[i]->hi - own[i]->lo + make_int(1, t));
      if (is_const_int(n, &len))
        tile_exts.push_back(make_int((len + wc - 1) / wc, t));
      else if (wc == 1)
        tile_exts.push_back(n);
      else
        tile_exts.push_back(fold(floordiv(n + make_int(wc - 1, t), make_int(wc, t))));
      continue;
    }
    // An iter var whose values are all produced in every iteration (the whole padded row of
    // P_grad for pad_dX) keeps its full range: each iteration runs all of them, reading
    // only what that iteration produced (the other dimensions tile, checked below, so no
    // other iteration writes these elements).
    if (prove_le(range_of[i]->lo, make_int(0, iv.var.dtype()), known_above) &&
        prove_le(fold(iv.extent - make_int(1, iv.var.dtype())), range_of[i]->hi, known_above)) {
      range_of[i].reset();
      continue;
    }
    // A reduce iter var whose loads need the whole produced extent (softmax's row sum
    // consuming a row of exp) keeps its full range, as if unmapped: each iteration of the
    // loop then runs whole reductions (init at the first reduce point, reduce order kept),
    // over inputs that are final in that iteration. TVM accepts this (reductions may be
    // reverse_compute_at-ed; the reduce var's domain comes from the consumed region).
    if (iv.kind == IterKind::Reduce && is_zero(fold(range_of[i]->lo)) &&
        prove_eq(fold(range_of[i]->hi), fold(iv.extent - make_int(1, iv.var.dtype())))) {
      range_of[i].reset();
      continue;
    }
    if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce)
      refuse("iter var " + iv.var.name() + " of block " + c->name + " is not spatial");
    DType t = iv.var.dtype();
    Expr w = fold(range_of[i]->hi - range_of[i]->lo + make_int(1, t));
    int64_t wc, ext;
    if (!is_const_int(w, &wc) || wc <= 0)
      refuse("the tile of iter var " + iv.var.name() + " has a non-constant size");
    widths[i] = w;
    auto lin =
        to_linear(rebase_above.empty() ? range_of[i]->lo : fold(substitute(range_of[i]->lo, rebase_above)));
    if (!lin || lin->c != 0)
      refuse("the tiles of iter var " + iv.var.name() + " do not start at multiples of their size");
    Linear tl;
    tl.dtype = t;
    for (auto& [a, k] : lin->terms) {
      if (k % wc != 0) refuse("the tiles of iter var " + iv.var.name() + " overlap or leave gaps");
      tl.terms.emplace_back(a, k / wc);
    }
    if (iv.kind == IterKind::Reduce) reduce_tiles.push_back(tiles.size());
    tile_forms.push_back(tl);
    tiles.push_back(from_linear(tl));
    tile_iv.push_back(static_cast<int>(i));
    if (is_const_int(fold(iv.extent), &ext))
      tile_exts.push_back(make_int((ext + wc - 1) / wc, t));
    else if (wc == 1)
      tile_exts.push_back(iv.extent);
    else  // a symbolic extent split by a constant (TVM's `None` factor): ceil(n / wc) tiles
      tile_exts.push_back(fold(floordiv(iv.extent + make_int(wc - 1, t), make_int(wc, t))));
  }
  if (affine) {
    // The tiles in X's index space: a dimension produced whole in every iteration has none;
    // otherwise [w * T(loops), w * T(loops) + w - 1] as for an iter var above.
    const Buffer& X = produced[0];
    affine->width.resize(X->shape.size());
    for (size_t d = 0; d < X->shape.size(); ++d) {
      const SymRange& r = *affine->reg[d];
      DType t = r.lo.dtype();
      std::string dim = "dimension " + std::to_string(d) + " of " + X->name;
      int64_t ext_c = 0;
      Expr ext = X->shape[d];
      if (ext.dtype() != t) {
        if (!is_const_int(fold(ext), &ext_c))
          refuse("the extent of " + dim + " has another type than its index");
        ext = make_int(ext_c, t);
      }
      if (prove_le(r.lo, make_int(0, t), known_above) &&
          prove_le(fold(ext - make_int(1, t)), r.hi, known_above))
        continue;
      Expr w = fold(r.hi - r.lo + make_int(1, t));
      int64_t wc;
      if (!is_const_int(w, &wc) || wc <= 0) refuse("the tile of " + dim + " has a non-constant size");
      affine->width[d] = w;
      auto lin = to_linear(rebase_above.empty() ? r.lo : fold(substitute(r.lo, rebase_above)));
      if (!lin || lin->c != 0) refuse("the tiles of " + dim + " do not start at multiples of their size");
      Linear tl;
      tl.dtype = t;
      for (auto& [a, k] : lin->terms) {
        if (k % wc != 0) refuse("the tiles of " + dim + " overlap or leave gaps");
        tl.terms.emplace_back(a, k / wc);
      }
      tile_forms.push_back(tl);
      tiles.push_back(from_linear(tl));
      tile_iv.push_back(-1);
      if (is_const_int(fold(ext), &ext_c))
        tile_exts.push_back(make_int((ext_c + wc - 1) / wc, t));
      else if (wc == 1)
        tile_exts.push_back(ext);
      else
        tile_exts.push_back(fold(floordiv(ext + make_int(wc - 1, t), make_int(wc, t))));
    }
  }
  if (!reduce_tiles.empty()) check_reduce_tiles(*c, above, loops_above_dom, tile_forms, reduce_tiles);
  {
    std::vector<LoopDom> loops = loops_above_dom;
    // A non-dividing split of the producers' loop (30 rows split by 4) gives iterations past
    // the last tile: allowed, as C's new bindings then get `value < extent` (added below, since
    // the bound is not provable), so C runs in none of them and each tile still exactly once.
    std::vector<Expr> overshoot;
    for (size_t t = 0; t < tiles.size(); ++t)
      overshoot.push_back(make_binary(BinOp::LT, tiles[t], tile_exts[t]));
    if (!bijective_bindings(tiles, tile_exts, loops, make_and(overshoot)))
      refuse("the regions produced by the iterations of loop " + loop_name(ls) +
             " do not cover the domain of block " + c->name + " exactly once");
  }
  // Every produced buffer X: the tiles (which partition the iterations, checked above) must all
  // come from iter vars X's loads map, so that X's regions written in two iterations differ
  // there and no later iteration rewrites what C read of X. Not only for a free dimension (round
  // 18 review): a producer that does not bind the loop (`X[vj]` rewritten in every iteration of
  // i) or binds only an outer loop (`X[vi, vj]` with vi = i under the target loop k) writes the
  // same region in several iterations, each time with other values (they read what the
  // iteration produced), so C moved there would read a value that a later iteration replaces.
  // (A produced buffer C loads only in its `where` is refused by predicate_in_iter_vars below;
  // one it declares but never loads is not read.)
  for (auto& [bi, maps] : load_maps)
    for (int v : tile_iv)
      if (v < 0 || !maps.count(v))
        refuse("block " + c->name + " reads " + produced[bi]->name + " at indices that loop " +
               loop_name(ls) + " does not tile, and the tiles of iter var " +
               (v < 0 ? std::string("?") : c->iter_vars[static_cast<size_t>(v)].var.name()) +
               " come from another buffer produced under it");
  // C's own predicate (which points run) moves with it, rewritten in its iter vars.
  std::vector<Expr> own_pred = predicate_in_iter_vars(*cr, st.loops_above(cs.get()));
  // C covers its domain exactly once.
  {
    std::unordered_map<const VarNode*, Expr> rebase_c;
    std::vector<LoopDom> loops = rebased(st.loops_above(cs.get()), &rebase_c);
    std::vector<Expr> exts;
    for (auto& iv : c->iter_vars) exts.push_back(iv.extent);
    std::vector<Expr> binds;
    for (auto& e : cr->bindings) binds.push_back(rebase_c.empty() ? e : fold(substitute(e, rebase_c)));
    // An iter var running part of its extent (own) is checked over that part.
    for (size_t i = 0; i < own.size(); ++i)
      if (own[i]) {
        binds[i] = fold(binds[i] - own[i]->lo);
        exts[i] = fold(own[i]->hi - own[i]->lo + make_int(1, own[i]->lo.dtype()));
      }
    Expr cpred =
        rebase_c.empty() || !cr->predicate.defined() ? cr->predicate : substitute(cr->predicate, rebase_c);
    if (!bijective_bindings(binds, exts, loops, cpred))
      refuse("block " + c->name + " does not cover its iteration domain exactly once");
  }
  // Order: C after the loop; nothing C touches changes between the loop and C.
  auto order = blocks_in_order(st);
  int cidx = block_index(order, cs);
  int last_l = -1;
  for (auto& b : collect_blocks(ls)) last_l = std::max(last_l, block_index(order, b));
  if (last_l > cidx) refuse("block " + c->name + " comes before loop " + loop_name(ls));
  Stmt litem = top_item(st, ls.get());
  // C leaves the loops it shares with other blocks (found by the fuzzer: lstm's `gates`,
  // reading H[t - 1] that `hidden` writes later in the same scan loop t): in those loops a
  // block after C may produce what C reads in the next iteration (or C feed it), an order the
  // move would break. Refused when such a block touches what C reads and one of them writes.
  {
    Stmt citem = top_item(st, cs.get());
    if (!citem.same_as(cs) && !citem.same_as(litem)) {
      for (auto& o : collect_blocks(citem)) {
        if (o.same_as(cs)) continue;
        const BlockNode* ob = block_of(o);
        for (auto& buf : read_buffers(*c))
          if (block_writes(*ob, buf))
            refuse("block " + ob->name + " writes buffer " + buf->name + ", which block " + c->name +
                   " reads, in a loop that block " + c->name + " would leave");
        for (auto& buf : written_buffers(*c))
          if (block_reads(*ob, buf) || block_writes(*ob, buf))
            refuse("block " + ob->name + " accesses buffer " + buf->name + ", which block " + c->name +
                   " writes, in a loop that block " + c->name + " would leave");
      }
    }
  }
  std::vector<Buffer> touched = read_buffers(*c);
  for (auto& b : written_buffers(*c)) touched.push_back(b);
  for (auto& buf : touched) {
    bool is_produced = false;
    for (auto& x : produced) is_produced = is_produced || x.same_as(buf);
    for (auto& o : order) {
      if (o.same_as(cs) || o.same_as(st.body())) continue;
      int oi = block_index(order, o);
      bool in_loop = !find_path(ls, o.get()).empty();
      bool between = (oi > last_l && oi < cidx) || (in_loop || top_item(st, o.get()).same_as(litem));
      if (!between) continue;
      bool writes = block_writes(*block_of(o), buf);
      bool c_writes = block_writes(*c, buf);
      // The producers under the loop run before C in each iteration, as C consumes them; but a
      // block there that reads buf while C updates buf in place would see C's stores of earlier
      // iterations (a scan reading row i - 1, a reader of the previous row; review of round 17:
      // wrong results before).
      // (Tiles along `loop` alone: with loops around it, iterations of those would meet again.)
      if (is_produced && in_loop &&
          (!(c_writes && block_reads(*block_of(o), buf)) ||
           (st.loops_above(ls.get()).empty() && reads_own_tile(ls, o, *c, buf))))
        continue;
      // A block under the loop that only reads buf, inside the tile of its own iteration, while
      // C stores buf at the indices where it loads a buffer produced there (round 19:
      // cache_inplace's copy-in of the next tile and the copy-out of this one).
      if (in_loop && c_writes && !writes && !block_reads(*c, buf) && block_reads(*block_of(o), buf) &&
          reads_own_tile(ls, o, *c, buf, st.loops_above(ls.get())))
        continue;
      if (in_loop && c_writes && block_reads(*block_of(o), buf))
        refuse("block " + block_of(o)->name + " reads buffer " + buf->name + " under loop " + loop_name(ls) +
               ", which block " + c->name +
               " updates: moved there, its updates of earlier iterations would "
               "be seen");
      // Two blocks that only store buf, at elements that are provably apart (autodiff's
      // X_grad[v, 0] and X_grad[v, 1:128] of a copy split at its first column), run in either
      // order.
      if (writes && c_writes && !block_reads(*block_of(o), buf) && !block_reads(*c, buf) &&
          writes_apart(*block_of(o), {}, *c, own, buf))
        continue;
      if (writes || (c_writes && block_reads(*block_of(o), buf)))
        refuse("block " + block_of(o)->name + " accesses buffer " + buf->name + " between loop " +
               loop_name(ls) + " and block " + c->name);
    }
  }
  // New loops: one per iter var of C.
  RangeMap known = const_ranges(above);
  std::vector<Var> nvars;
  std::vector<Expr> nexts, nbinds, preds;
  auto new_loop_var = [&](size_t i, DType t) {
    std::string nm = fresh_var_name(st, "ax" + std::to_string(i));
    for (auto& v : nvars)
      if (v.name() == nm) nm = fresh_var_name(st, "ax" + std::to_string(i) + "_" + std::to_string(i));
    Var ax(nm, t);
    nvars.push_back(ax);
    return ax;
  };
  // An affine load: loops over the produced region in X's index space (outermost), and the
  // iter vars it uses bound to h^-1 of the point (x_d = start + ax_d).
  std::unordered_map<const VarNode*, Expr> affine_binds;
  if (affine) {
    const Buffer& X = produced[0];
    std::vector<Var> xs;
    std::unordered_map<const VarNode*, Expr> at_x;
    for (size_t d = 0; d < X->shape.size(); ++d) {
      const SymRange& r = *affine->reg[d];
      DType t = r.lo.dtype();
      xs.push_back(Var("x" + std::to_string(d), X->shape[d].dtype()));
      Expr ext = X->shape[d].dtype() == t ? X->shape[d] : make_int(0, t);
      int64_t ec;
      if (X->shape[d].dtype() != t && is_const_int(fold(X->shape[d]), &ec)) ext = make_int(ec, t);
      Expr value;
      if (!affine->width[d].defined()) {
        value = is_one(fold(ext)) ? make_int(0, t) : Expr(new_loop_var(nexts.size(), t));
        if (!is_one(fold(ext))) nexts.push_back(ext);
      } else {
        if (is_one(affine->width[d])) {
          value = r.lo;
        } else {
          value = fold(r.lo + new_loop_var(nexts.size(), t));
          nexts.push_back(affine->width[d]);
        }
        if (!prove_le(r.hi, fold(ext - make_int(1, t)), known))
          preds.push_back(make_binary(BinOp::LT, value, ext));
      }
      at_x[xs.back().get()] =
          value.dtype() == xs.back().dtype() ? value : make_cast(xs.back().dtype(), value);
    }
    auto inv = invert_bindings(affine->h, xs, X->shape, affine->sdom, Expr());
    if (!inv)
      refuse("the indices of the load of " + X->name + " in block " + c->name +
             " are not distinct iter vars");
    for (auto& [v, e] : *inv) affine_binds[v] = fold(substitute(e, at_x));
    for (auto& d : affine->sdom)
      for (auto& iv : c->iter_vars)
        if (iv.var.same_as(d.var) && !prove_eq(iv.extent, d.extent)) {
          auto it = affine_binds.find(iv.var.get());
          if (it == affine_binds.end())
            refuse("the indices of the load of " + X->name + " in block " + c->name +
                   " are not distinct iter vars");
          preds.push_back(make_binary(BinOp::LT, it->second, iv.extent));
        }
  }
  for (size_t i = 0; i < c->iter_vars.size(); ++i) {
    const IterVar& iv = c->iter_vars[i];
    DType t = iv.var.dtype();
    if (auto it = affine_binds.find(iv.var.get()); it != affine_binds.end()) {
      nbinds.push_back(it->second);
      continue;
    }
    Var ax = new_loop_var(i, t);
    if (!range_of[i] && own[i]) {
      Expr n = fold(own[i]->hi - own[i]->lo + make_int(1, t));
      nexts.push_back(n);
      nbinds.push_back(is_one(n) ? own[i]->lo : fold(own[i]->lo + ax));
      continue;
    }
    if (!range_of[i]) {
      nexts.push_back(iv.extent);
      nbinds.push_back(is_one(fold(iv.extent)) ? make_int(0, t) : Expr(ax));
      continue;
    }
    Expr value = is_one(widths[i]) ? range_of[i]->lo : fold(range_of[i]->lo + ax);
    nexts.push_back(widths[i]);
    nbinds.push_back(value);
    Expr last = own[i] ? own[i]->hi : fold(iv.extent - make_int(1, t));
    if (!prove_le(range_of[i]->hi, last, known))
      preds.push_back(make_binary(BinOp::LT, value, fold(last + make_int(1, t))));
  }
  for (auto& pc : substitute_iter_vars(own_pred, *c, nbinds)) preds.push_back(pc);
  Stmt nb = update_realize(cs, [&](BlockRealizeNode& r) {
    r.bindings = nbinds;
    r.predicate = make_and(preds);
  });
  Stmt nest = nb;
  for (size_t i = nvars.size(); i-- > 0;)
    if (!is_one(fold(nexts[i])))
      nest = make_for(nvars[i], make_int(0, nexts[i].dtype()), nexts[i], ForKind::Serial, nest);
  ScheduleState tmp = st;
  Stmt victim = exclusive_root(tmp, cs);
  tmp.replace(victim.get(), Stmt());
  Stmt lnow = tmp.find_loop(L->loop_var.get());
  auto items = seq_items(lnow.as<ForNode>()->body);
  // TVM's `index=k`: insert at position k of the loop body, which must lie after the last item
  // that writes what C reads (the producers) or touches what C writes. Every such position
  // computes the same as the last one.
  size_t at = items.size();
  if (const ScheduleArg* ix = kwarg(ins, "index")) {
    size_t after_p = 0;
    auto cr_bufs = read_buffers(*c), cw_bufs = written_buffers(*c);
    for (size_t k = 0; k < items.size(); ++k)
      for (auto& b : collect_blocks(items[k])) {
        const BlockNode* ob = block_of(b);
        for (auto& X : cr_bufs)
          if (block_writes(*ob, X)) after_p = k + 1;
        for (auto& Y : cw_bufs)
          if (block_reads(*ob, Y) || block_writes(*ob, Y)) after_p = k + 1;
      }
    if (ix->kind != ScheduleArg::Int || ix->int_value < 0 || static_cast<size_t>(ix->int_value) < after_p ||
        static_cast<size_t>(ix->int_value) > items.size())
      refuse("index=" + std::to_string(ix->int_value) +
             " is not a position between the producers and the consumers of block " + c->name +
             " in the body of loop " + loop_name(ls) + " (" + std::to_string(after_p) + " to " +
             std::to_string(items.size()) + ")");
    at = static_cast<size_t>(ix->int_value);
  }
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), nest);
  tmp.replace(lnow.get(), with_body(lnow, make_seq(items)));
  st.set_body(tmp.body());
}

}  // namespace tirc::sched

#include "transforms/schedule/deps.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "ir/reducer.h"
#include "ir/visitor.h"
#include "transforms/schedule/access_pairs.h"
#include "transforms/schedule/inline_common.h"

namespace tirc::sched {

void check_self_dependence(const Stmt& s, const std::string& what) {
  for (auto& bs : collect_blocks(s, false)) {
    const BlockNode* b = block_of(bs);
    for (auto& w : b->writes) {
      for (auto& r : b->reads) {
        if (!r.buffer.same_as(w.buffer)) continue;
        // Dimensions indexed only by scan iter vars may differ: that is the scan's ordered
        // dependence, which the loop-binding checks protect. The same holds for opaque iter
        // vars (blockize of a scan's tile makes its scan var opaque in the outer block), whose
        // loops those checks keep in place too.
        auto scan_only = [&](const Range& x) {
          bool any_other = false;
          auto check = [&](const Expr& e) {
            any_other = any_other || uses_var(e, [&](const VarNode* v) {
                          for (auto& iv : b->iter_vars)
                            if (iv.var.get() == v)
                              return iv.kind != IterKind::Scan && iv.kind != IterKind::Opaque;
                          return true;
                        });
          };
          check(x.begin);
          if (!x.is_point()) check(x.end);
          return !any_other;
        };
        bool same = r.ranges.size() == w.ranges.size();
        for (size_t d = 0; same && d < r.ranges.size(); ++d) {
          const Range &x = r.ranges[d], &y = w.ranges[d];
          same = (x.is_point() == y.is_point() && prove_eq(x.begin, y.begin) &&
                  (x.is_point() || prove_eq(x.end, y.end))) ||
                 (scan_only(x) && scan_only(y));
        }
        if (!same)
          refuse(what + ": block " + b->name + " reads buffer " + w.buffer->name +
                 " at other elements than it writes, so its iterations depend on each other");
      }
    }
  }
}

void check_blocks_independent(const Stmt& s, const std::string& what) {
  if (has_loose_effects(s)) refuse(what + " has statements outside blocks");
  if (has_extern_call_outside_regions(s)) refuse(what + " contains call_extern, whose effects are unknown");
  auto blocks = collect_blocks(s, false);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockNode* a = block_of(blocks[i]);
    for (size_t j = 0; j < blocks.size(); ++j) {
      if (i == j) continue;
      const BlockNode* b = block_of(blocks[j]);
      for (auto& buf : written_buffers(*a)) {
        bool local = false;
        for (auto& al : a->allocs) local = local || al.same_as(buf);
        if (local) continue;
        if (block_reads(*b, buf) || block_writes(*b, buf))
          refuse(what + " has blocks " + a->name + " and " + b->name + " that both access buffer " +
                 buf->name + " (" + a->name + " writes it)");
      }
    }
  }
}

namespace {

// Every store of the block is `B[I] = B[I] + v` (either operand order) of an f32 / f64 /
// integer buffer B that v does not load, and B is loaded nowhere else in the block.
class AtomicAddsOnly : public IRVisitor {
 public:
  bool ok = true;
  std::vector<const LoadNode*> accumulated;  // the `B[I]` operand of each store

 protected:
  void visit_store(const StoreNode* n) override {
    DType t = n->buffer->dtype;
    auto* add = n->value.as<BinaryNode>();
    if (!add || add->op != BinOp::Add || !(t == DType::F32 || t == DType::F64 || is_int(t))) {
      ok = false;
      return;
    }
    auto same = [&](const Expr& x) -> const LoadNode* {
      auto* ld = x.as<LoadNode>();
      if (!ld || !ld->buffer.same_as(n->buffer) || ld->indices.size() != n->indices.size()) return nullptr;
      for (size_t i = 0; i < ld->indices.size(); ++i)
        if (!expr_identical(ld->indices[i], n->indices[i])) return nullptr;
      return ld;
    };
    const LoadNode* acc = same(add->a);
    if (!acc) acc = same(add->b);
    if (!acc) {
      ok = false;
      return;
    }
    accumulated.push_back(acc);
    for (auto& i : n->indices) visit(i);
    visit(n->value);
  }
};

}  // namespace

// autodiff's scatter-adds (`annotate("atomic", 1)`, reduce iter vars whose written element is
// data-dependent, `W_grad[I[vi], vj] += Y_grad[vi, vj]`; iter vars that partition the written
// elements are spatial, docs/autodiff.md) run in any order or at
// once when every store only adds to what it loads: the backend makes each such update an
// atomic add in parallel and thread-bound loops (docs/codegen.md), and the order of a sum
// does not change it (up to rounding, as any reordered reduction). Not for vectorize of the
// reduce loops: the vector code has no atomic scatter (two lanes adding to one element would
// lose one). A vectorized spatial loop around such a block inside a parallel loop over its
// reduce vars is fine (round 5): the backend keeps a vectorized loop holding an atomic block
// scalar under parallel / thread loops, each update an atomicrmw (docs/codegen.md).
bool atomic_scatter_add(const BlockNode& b) {
  if (!b.annotations.count("atomic") || b.init.defined()) return false;
  AtomicAddsOnly v;
  v.visit(b.body);
  if (!v.ok || v.accumulated.empty()) return false;
  bool other_loads = false;
  for_each_expr(b.body, [&](const Expr& e) {
    auto* ld = e.as<LoadNode>();
    if (!ld || std::find(v.accumulated.begin(), v.accumulated.end(), ld) != v.accumulated.end()) return;
    for (auto* a : v.accumulated) other_loads = other_loads || ld->buffer.same_as(a->buffer);
  });
  return !other_loads;
}

void check_loop_bindings(const Stmt& s, const ForNode* loop, bool allow_reduce, const std::string& what,
                         const std::set<const BlockNode*>& cross_thread) {
  for (auto& bs : collect_blocks(s, false)) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      if (!uses_var(br->bindings[i], loop->loop_var.get())) continue;
      IterKind k = b->iter_vars[i].kind;
      if (k == IterKind::Spatial || (allow_reduce && k == IterKind::Reduce)) continue;
      if (k == IterKind::Reduce && (what == "parallel" || what == "bind") && atomic_scatter_add(*b)) continue;
      if (k == IterKind::Reduce && cross_thread.count(b)) continue;
      (void)what;  // the dispatcher already prefixes the primitive's name
      refuse("loop " + loop->loop_var.name() + " is bound to the " + iter_kind_name(k) + " iter var " +
             b->iter_vars[i].var.name() + " of block " + b->name);
    }
    // The loop may also appear in the predicate only; that is harmless.
  }
}

}  // namespace tirc::sched

namespace tirc::sched {

namespace {

struct Access {
  const BlockNode* block;
  std::vector<std::optional<SymRange>> dims;  // relaxed per dimension, in terms of outer vars
  bool loop_dep = false;                      // some index uses the loop var (before relaxing)
};

// A buffer shared across the iterations of `loop` is still safe when every iteration
// recomputes what it reads of it (compute_at of a producer with a halo, a cache tile copied
// per tile): one writer W below the loop stores X[v...] = f(v...) (spatial, no init, no
// predicate, the store indices exactly its iter vars), f reads nothing written below the
// loop, and every other block R below the loop only reads X, after W: the paths to W and R
// part at a sequence where W comes first; with L the deepest loop the two paths share (or
// `loop`), what R reads in an iteration of L lies inside what W writes in the same
// iteration of L. W's written region is exactly the hull of its bindings over the loops
// between L and W (each binding a mixed-radix sum c1*l1 + c2*l2 ... of distinct loops with
// coefficients 1, e1, e1*e2, ...), so the containment is proven on the hulls. Then every
// write of an element stores the same value and every read sees a write of its own
// iteration, so the iterations may run in any order or at once (a benign race, which TVM
// accepts).
}  // namespace

bool exact_hull(const Stmt& from_loop, const Stmt& ws) {
  const BlockRealizeNode* wr = realize(ws);
  auto wpath = find_path(from_loop.as<ForNode>()->body, ws.get());
  std::vector<const ForNode*> inner;
  for (auto& p : wpath) {
    if (p.kind() == StmtKind::BlockRealize && !p.same_as(ws)) return false;
    if (auto* f = p.as<ForNode>()) inner.push_back(f);
  }
  auto inner_loop = [&](const VarNode* v) -> const ForNode* {
    for (auto* f : inner)
      if (f->loop_var.get() == v) return f;
    return nullptr;
  };
  std::vector<const VarNode*> used;
  for (auto& bnd : wr->bindings) {
    auto lin = to_linear(bnd);
    if (!lin) return false;
    std::vector<std::pair<int64_t, const ForNode*>> terms;
    for (auto& [atom, c] : lin->terms) {
      auto* v = atom.as<VarNode>();
      const ForNode* f = v ? inner_loop(v) : nullptr;
      if (!f) {
        if (uses_var(atom, [&](const VarNode* x) { return inner_loop(x) != nullptr; })) return false;
        continue;
      }
      if (std::find(used.begin(), used.end(), v) != used.end()) return false;
      used.push_back(v);
      terms.emplace_back(c < 0 ? -c : c, f);
    }
    std::sort(terms.begin(), terms.end(), [](auto& a, auto& b) { return a.first < b.first; });
    int64_t expect = 1;
    for (auto& [c, f] : terms) {
      int64_t ext;
      if (c != expect || !is_const_int(fold(f->extent), &ext) || ext <= 0) return false;
      // The loop's range must not depend on other loops of the hull.
      for (auto* g : inner)
        if (uses_var(f->min, g->loop_var.get()) || uses_var(f->extent, g->loop_var.get())) return false;
      expect = c * ext;
    }
    // Mixed signs would leave holes in the hull.
    int sign = 0;
    for (auto& [atom, c] : lin->terms)
      if (atom.as<VarNode>() && inner_loop(atom.as<VarNode>())) {
        int sg = c < 0 ? -1 : 1;
        if (sign != 0 && sg != sign) return false;
        sign = sg;
      }
  }
  return true;
}

namespace {

// A pure spatial writer of buf: no init/allocs/nested blocks, spatial iter vars only, one
// store at exactly its iter vars whose value neither reads buf nor takes pointers, and a
// `where` that only clips the stores to the buffer (`0 <= b`, `b < shape`, b the binding
// stored in that dimension: a cache copy with a halo, compute_at at a border). It then writes
// the hull of its bindings intersected with the buffer, which still holds every element a
// reader can load, since no valid load leaves the buffer.
bool pure_spatial_writer(const Stmt& ws, const BufferNode* buf) {
  const BlockRealizeNode* wr = realize(ws);
  const BlockNode* w = wr->block.get();
  if (w->init.defined() || !w->allocs.empty()) return false;
  if (!collect_blocks(w->body).empty()) return false;
  for (auto& iv : w->iter_vars)
    if (iv.kind != IterKind::Spatial) return false;
  Stmt flat;
  std::vector<int> ivs;
  try {
    flat = flat_store(*w);
    if (flat.as<StoreNode>()->buffer.get() != buf) return false;
    ivs = index_vars(*w, flat.as<StoreNode>()->indices, "the store");
  } catch (const Refusal&) {
    return false;
  }
  if (ivs.size() != w->iter_vars.size()) return false;
  for (auto& cj : conjuncts(fold(wr->predicate))) {
    auto* bn = cj.as<BinaryNode>();
    if (!bn) return false;
    bool clip = false;
    for (size_t d = 0; d < ivs.size() && !clip; ++d) {
      const Expr& b = wr->bindings[ivs[d]];
      const Expr& ext = buf->shape[d];
      Expr zero = make_int(0, b.dtype());
      clip = (bn->op == BinOp::LT && prove_eq(bn->a, b) && prove_eq(bn->b, ext)) ||
             (bn->op == BinOp::GT && prove_eq(bn->a, ext) && prove_eq(bn->b, b)) ||
             (bn->op == BinOp::LE && prove_eq(bn->a, zero) && prove_eq(bn->b, b)) ||
             (bn->op == BinOp::GE && prove_eq(bn->a, b) && prove_eq(bn->b, zero));
    }
    if (!clip) return false;
  }
  bool impure = false;
  for_each_expr(flat.as<StoreNode>()->value, [&](const Expr& e) {
    impure = impure || e.kind() == ExprKind::BufferPtr;
    if (auto* l = e.as<LoadNode>(); l && l->buffer.get() == buf) impure = true;
  });
  if (impure) return false;
  return true;
}

// A loop f in [0, E) used only as `f // c` and `f % c` (one constant c dividing E: a copy's
// loops fused, e.g. `fused // 16`, `fused % 16`) runs the same points in the same order as
// the two nested loops `hi` in [0, E / c), `lo` in [0, c) with f // c = hi, f % c = lo. The
// recomputation checks below reason on mixed-radix bindings of loops, so they run on that
// unfused form (same semantics, hence the same answer for the real loop nest).
class Unfuse : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt b = IRMutator::mutate_for(n, s);
    auto* f = b.as<ForNode>();
    int64_t ext;
    if (!is_zero(fold(f->min)) || !is_const_int(fold(f->extent), &ext) || ext <= 1) return b;
    const VarNode* v = f->loop_var.get();
    // The divisor c of every `v // c` / `v % c`; any other use of v keeps the loop.
    std::optional<int64_t> c;
    bool other = false;
    size_t uses = 0, pattern_uses = 0;
    for_each_expr(f->body, [&](const Expr& e) {
      if (e.get() == v) ++uses;
      if (auto* bn = e.as<BinaryNode>(); bn && (bn->op == BinOp::FloorDiv || bn->op == BinOp::FloorMod)) {
        int64_t k;
        if (bn->a.get() == v && is_const_int(bn->b, &k)) {
          if (c && *c != k) other = true;
          c = k;
          ++pattern_uses;
        }
      }
    });
    if (uses != pattern_uses) other = true;
    if (other || !c || *c <= 1 || *c >= ext || ext % *c != 0) return b;
    Var hi(f->loop_var.name() + "_hi", f->loop_var.dtype()),
        lo(f->loop_var.name() + "_lo", f->loop_var.dtype());
    struct Sub : IRMutator {
      const VarNode* v;
      Expr hi, lo;
      Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
        if (n->a.get() == v && (n->op == BinOp::FloorDiv || n->op == BinOp::FloorMod))
          return n->op == BinOp::FloorDiv ? hi : lo;
        return IRMutator::mutate_binary(n, e);
      }
    } sub;
    sub.v = v;
    sub.hi = hi;
    sub.lo = lo;
    Stmt body = sub.mutate(f->body);
    DType t = f->extent.dtype();
    return make_for(hi, make_int(0, t), make_int(ext / *c, t), f->for_kind,
                    make_for(lo, make_int(0, t), make_int(*c, t), f->for_kind, body));
  }
};

bool recomputed_per_iteration(const ScheduleState& st, const Stmt& loop_s, const BufferNode* buf,
                              const std::vector<Stmt>& blocks);

// The same on the loop nest with the fused loops below `loop_s` unfused (Unfuse above).
bool recomputed_per_iteration_unfused(const ScheduleState& st, const Stmt& loop_s, const BufferNode* buf) {
  auto* loop = loop_s.as<ForNode>();
  Stmt body = Unfuse().mutate(loop->body);
  if (body.same_as(loop->body)) return false;
  ScheduleState tmp = st;
  ForNode copy = *loop;
  copy.body = body;
  Stmt nl =
      make_for(copy.loop_var, copy.min, copy.extent, copy.for_kind, body, copy.thread_tag, copy.annotations);
  tmp.replace(loop_s.get(), nl);
  Stmt found = tmp.find_loop(loop->loop_var.get());
  if (!found.defined()) return false;
  return recomputed_per_iteration(tmp, found, buf, collect_blocks(found.as<ForNode>()->body, false));
}

bool recomputed_per_iteration(const ScheduleState& st, const Stmt& loop_s, const BufferNode* buf,
                              const std::vector<Stmt>& blocks) {
  auto* loop = loop_s.as<ForNode>();
  Stmt ws;
  for (auto& bs : blocks) {
    for (auto& w : block_of(bs)->writes)
      if (w.buffer.get() == buf) {
        if (ws.defined() && !ws.same_as(bs)) return false;
        ws = bs;
      }
  }
  if (!ws.defined()) return false;
  if (!pure_spatial_writer(ws, buf)) return false;
  const BlockNode* w = block_of(ws);
  for (auto& bs : blocks)
    for (auto& in : read_buffers(*w))
      if (block_writes(*block_of(bs), in)) return false;
  BufferRegion wreg;
  for (auto& r : w->writes)
    if (r.buffer.get() == buf) wreg = r;
  auto wpath = find_path(loop->body, ws.get());
  for (auto& bs : blocks) {
    if (bs.same_as(ws)) continue;
    const BlockNode* rb = block_of(bs);
    bool touches = false;
    for (auto& r : rb->reads) touches = touches || r.buffer.get() == buf;
    if (!touches) continue;
    // Order: the paths part at a Seq, W's branch first; L = the deepest common loop.
    auto rpath = find_path(loop->body, bs.get());
    Stmt common = loop_s;
    size_t k = 0;
    while (k < wpath.size() && k < rpath.size() && wpath[k].same_as(rpath[k])) {
      if (wpath[k].kind() == StmtKind::For) common = wpath[k];
      if (wpath[k].kind() == StmtKind::BlockRealize) return false;
      ++k;
    }
    if (k == 0 || k >= wpath.size() || k >= rpath.size()) return false;
    auto* seq = wpath[k - 1].as<SeqNode>();
    if (!seq) return false;
    int wi = -1, ri = -1;
    for (size_t i = 0; i < seq->stmts.size(); ++i) {
      if (seq->stmts[i].same_as(wpath[k])) wi = static_cast<int>(i);
      if (seq->stmts[i].same_as(rpath[k])) ri = static_cast<int>(i);
    }
    if (wi < 0 || ri < 0 || wi >= ri) return false;
    if (!read_inside_written(st, common, ws, wreg, bs)) return false;
  }
  return true;
}

}  // namespace

bool read_inside_written(const ScheduleState& st, const Stmt& common, const Stmt& ws,
                         const BufferRegion& wreg, const Stmt& bs) {
  const BlockNode* rb = block_of(bs);
  for (auto& r : rb->reads)
    if (r.buffer.same_as(wreg.buffer) &&
        !region_inside_written(st, common, ws, wreg, region_under_loop(common, bs, r)))
      return false;
  return true;
}

bool region_inside_written(const ScheduleState& st, const Stmt& common, const Stmt& ws,
                           const BufferRegion& wreg, const std::vector<std::optional<SymRange>>& region) {
  const BufferNode* buf = wreg.buffer.get();
  {
    if (!pure_spatial_writer(ws, buf) || !exact_hull(common, ws)) return false;
    RangeMap ranges;
    for (auto& p : st.path_to(common.get()))
      if (auto* f = p.as<ForNode>()) {
        int64_t lo, ext;
        if (is_const_int(fold(f->min), &lo) && is_const_int(fold(f->extent), &ext) && ext > 0)
          ranges[f->loop_var.get()] = IntRange{lo, lo + ext - 1};
      }
    auto wdims = region_under_loop(common, ws, wreg);
    {
      const auto& rdims = region;
      if (rdims.size() != wdims.size()) return false;
      // Loads stay inside the buffer, so a written end at or beyond the buffer's end covers
      // whatever the reader's region says on that side (also when it cannot be bounded).
      for (size_t d = 0; d < rdims.size(); ++d) {
        if (!wdims[d]) return false;
        DType t = wdims[d]->lo.dtype();
        bool lo_ok = prove_le(wdims[d]->lo, make_int(0, t), ranges) ||
                     (rdims[d] && prove_le(wdims[d]->lo, rdims[d]->lo, ranges));
        bool hi_ok = prove_le(fold(buf->shape[d] - make_int(1, t)), wdims[d]->hi, ranges) ||
                     (rdims[d] && prove_le(rdims[d]->hi, wdims[d]->hi, ranges));
        if (!lo_ok || !hi_ok) return false;
      }
    }
  }
  return true;
}

namespace {

// A fused loop (fuse(n, c, h), then parallel) indexes a buffer through several dimensions at
// once: S[f // 20, f // 5 % 4, f % 5, w]. Iterations touch disjoint elements when, in some set
// of dimensions, every access of the buffer is the same point expression of the loop (not of
// inner loops) and these points determine the loop's value: then two iterations differ in one
// of those dimensions. Injectivity is proven as a bijective mixed-radix map (arith.h) of the
// loop onto the buffer's extents in those dimensions.
bool fused_partition(const ForNode* loop, const BufferNode* buf, const std::vector<Access>& all) {
  if (!is_zero(fold(loop->min)) || all.empty()) return false;
  size_t nd = all[0].dims.size();
  std::vector<Expr> points, exts;
  for (size_t d = 0; d < nd && d < buf->shape.size(); ++d) {
    bool good = true;
    Expr p;
    for (auto& a : all) {
      if (a.dims.size() != nd || !a.dims[d] || !prove_eq(a.dims[d]->lo, a.dims[d]->hi)) {
        good = false;
        break;
      }
      if (!p.defined())
        p = a.dims[d]->lo;
      else if (!prove_eq(p, a.dims[d]->lo))
        good = false;
    }
    if (!good || !uses_var(p, loop->loop_var.get())) continue;
    points.push_back(p);
    exts.push_back(buf->shape[d]);
  }
  if (points.empty()) return false;
  return bijective_bindings(points, exts, {LoopDom{loop->loop_var, loop->extent}}, Expr());
}

// A copy whose loops were fused and split again (TVM's cooperative fetch: `fuse` the copy's
// loops, `split` by the thread counts, `bind` the parts) indexes its buffer as
// S[o1 + F // m, o2 + F % m] (or F // 9, F // 3 % 3, F % 3), F a linear sum of loops. The
// indices determine key = m * (o1 + F // m) + (o2 + F % m) = m * o1 + o2 + F, a function of
// the element that is linear in the loops: iterations of `loop` touch disjoint elements when, over every
// access, the key stays in [c * loop + a, c * loop + b] with b - a < |c| (o1, o2 free of the loops at and
// inside `loop`; the loops inside relaxed over their ranges).
// multi_split: also read several splits of E in one index (`32 * (E // 24) + 8 * (E // 2 % 4)`,
// MetaSchedule's interleaved fused tiles); tried only when the one-split reading fails.
bool recombined_partition(const ForNode* loop, const BufferNode* buf, const std::vector<Stmt>& blocks,
                          bool multi_split = false) {
  std::string signature;       // the dimensions and splits used, the same for every access
  std::vector<Expr> scaled_o;  // offsets of the scaled parts, the same for every access
  std::vector<SymRange> keys;
  std::vector<Var> slice_vars;  // keeps the slice variables (keys of `inner`) alive
  for (auto& bs : blocks) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    bool touches = false;
    for (auto& r : b->reads) touches = touches || r.buffer.get() == buf;
    for (auto& r : b->writes) touches = touches || r.buffer.get() == buf;
    if (!touches) continue;
    SymRangeMap inner;
    std::unordered_set<const VarNode*> in_vars{loop->loop_var.get()};
    for (auto& p : find_path(loop->body, bs.get())) {
      if (p.kind() == StmtKind::BlockRealize && !p.same_as(bs)) return false;  // nested blocks
      auto* f = p.as<ForNode>();
      if (!f) continue;
      SymRange r{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
      if (auto lo = relax(r.lo, inner)) r.lo = lo->lo;
      if (auto hi = relax(r.hi, inner)) r.hi = hi->hi;
      inner[f->loop_var.get()] = r;
      in_vars.insert(f->loop_var.get());
    }
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
    auto uses_in = [&](const Expr& e) {
      return uses_var(e, [&](const VarNode* v) { return in_vars.count(v) > 0; });
    };
    std::vector<BufferRegion> regs = b->reads;
    regs.insert(regs.end(), b->writes.begin(), b->writes.end());
    for (auto& r : regs) {
      if (r.buffer.get() != buf) continue;
      std::vector<Expr> idx;
      for (auto& rg : r.ranges) {
        if (rg.is_point()) {
          idx.push_back(fold(substitute(rg.begin, sub)));
          continue;
        }
        // A slice [b, b + w) of constant width (a tensorized tile's region from the desc,
        // `A_grad[v, vio_o * 4:vio_o * 4 + 4, ...]`) is the point b + rho with rho an inner
        // variable over [0, w - 1], as if its elements were visited by an inner loop.
        int64_t w;
        if (!is_const_int(fold(rg.end - rg.begin), &w) || w < 1) return false;
        Var rho("rho", rg.begin.dtype());
        slice_vars.push_back(rho);
        inner[rho.get()] = SymRange{make_int(0, rho.dtype()), make_int(w - 1, rho.dtype())};
        in_vars.insert(rho.get());
        idx.push_back(fold(substitute(rg.begin, sub) + rho));
      }
      // Every dimension of the form o + split(E) (or several: o + c1 * split1(E) + c2 * split2(E)),
      // split(E) one of E // L, E % X, E // L % X.
      // scale * split(E) + o + r with o free of the loops at and inside `loop` and r (inner
      // loops only) in [0, scale): split(E) = (index - o) // scale is a function of the element.
      struct Part {
        size_t dim;
        int64_t lower, ext;  // ext 0: unbounded (E // L)
        int64_t scale;
        Expr o;
      };
      std::vector<std::pair<Expr, std::vector<Part>>> groups;
      for (size_t d = 0; d < idx.size(); ++d) {
        auto l = to_linear(idx[d]);
        if (!l) continue;
        for (auto& [a, c] : l->terms) {
          auto* bn = a.as<BinaryNode>();
          if (c < 1 || !bn) continue;
          Expr E;
          int64_t lower = 1, ext = 0, k;
          if (bn->op == BinOp::FloorDiv && is_const_int(bn->b, &k) && k > 0) {
            E = bn->a;
            lower = k;
          } else if (bn->op == BinOp::FloorMod && is_const_int(bn->b, &k) && k > 0) {
            ext = k;
            auto* in = bn->a.as<BinaryNode>();
            int64_t k2;
            if (in && in->op == BinOp::FloorDiv && is_const_int(in->b, &k2) && k2 > 0) {
              E = in->a;
              lower = k2;
            } else {
              E = bn->a;
            }
          } else {
            continue;
          }
          Linear lo_part, r_part;
          lo_part.dtype = r_part.dtype = l->dtype;
          lo_part.c = l->c;
          for (auto& t : l->terms) {
            if (expr_identical(t.first, a)) continue;
            // A term of a coarser scale, a multiple of c * ext, does not change
            // (index - o) // c % ext: `32 * (E // 24) + 8 * (E // 2 % 4) + r` gives both splits
            // (MetaSchedule fuses tile loops of i and j interleaved, two splits per index).
            if (multi_split && ext > 0 && uses_in(t.first) && t.second % (c * ext) == 0) continue;
            (uses_in(t.first) ? r_part : lo_part).terms.push_back(t);
          }
          Expr o = from_linear(lo_part);
          if (!r_part.terms.empty()) {
            if (c == 1) continue;
            // Finer splits of E in the rest (`8 * (E // 2 % 4)` under `32 * (E // 24)`) are
            // bounded over the loop's own range too.
            SymRangeMap with_loop = inner;
            if (multi_split)
              with_loop[loop->loop_var.get()] =
                  SymRange{loop->min, fold(loop->min + loop->extent - make_int(1, loop->extent.dtype()))};
            auto rr = relax(from_linear(r_part), with_loop);
            int64_t rlo, rhi;
            if (!rr || !is_const_int(fold(rr->lo), &rlo) || !is_const_int(fold(rr->hi), &rhi) || rlo < 0 ||
                rhi >= c)
              continue;
          }
          bool placed = false;
          for (auto& g : groups)
            if (expr_identical(g.first, E)) {
              g.second.push_back(Part{d, lower, ext, c, o});
              placed = true;
            }
          if (!placed) groups.push_back({E, {Part{d, lower, ext, c, o}}});
          if (!multi_split) break;
        }
      }
      // A group whose splits chain (lower 1, each next lower = lower * ext, the last
      // unbounded) determines E: key = sum(lower * split) = E, as a function of the element
      // sum(lower * index) - sum(lower * o) over the unscaled parts (scaled parts must have the
      // same o in every access, so that the element determines their split the same way).
      bool found = false;
      Expr key;
      for (auto& [E, parts] : groups) {
        if (parts.size() < 2) continue;
        // E's largest value (E over `loop` and the loops inside): a split `E // L` with L above
        // it is always 0 (the unit outer loop of a fuse, `fused // 36` of a 36-long loop,
        // which another access has as the constant 0), and the highest split may be bounded
        // (`fused // 12 % 3`) when its modulus is never reached.
        std::optional<int64_t> e_max;
        {
          SymRangeMap rng = inner;
          rng[loop->loop_var.get()] =
              SymRange{loop->min, fold(loop->min + loop->extent - make_int(1, loop->extent.dtype()))};
          auto er = relax(E, rng);
          int64_t elo, ehi;
          if (er && is_const_int(fold(er->lo), &elo) && is_const_int(fold(er->hi), &ehi) && elo >= 0)
            e_max = ehi;
        }
        if (e_max) {
          std::vector<Part> live;
          for (auto& p : parts)
            if (p.lower <= *e_max || p.scale != 1 || !is_zero(fold(p.o))) live.push_back(p);
          if (live.empty()) continue;
          parts = live;
        }
        std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.lower < b.lower; });
        bool top_ok = parts.back().ext == 0 || (e_max && parts.back().lower * parts.back().ext > *e_max);
        bool chain = parts[0].lower == 1 && top_ok;
        for (size_t k = 0; chain && k + 1 < parts.size(); ++k)
          chain = parts[k].ext > 0 && parts[k + 1].lower == parts[k].lower * parts[k].ext;
        if (!chain) continue;
        std::string sig;
        std::vector<Expr> os;
        for (auto& p : parts) {
          sig += std::to_string(p.dim) + ":" + std::to_string(p.lower) + "*" + std::to_string(p.scale) + ",";
          if (p.scale != 1) os.push_back(p.o);
        }
        if (!signature.empty() && sig != signature) continue;
        if (signature.empty()) {
          scaled_o = os;
        } else {
          bool same = os.size() == scaled_o.size();
          for (size_t k = 0; same && k < os.size(); ++k) same = prove_eq(os[k], scaled_o[k]);
          if (!same) continue;
        }
        signature = sig;
        Expr k = E;
        for (auto& p : parts)
          if (p.scale == 1) k = k + make_int(p.lower, p.o.dtype()) * p.o;
        key = fold(k);
        found = true;
        break;
      }
      if (!found) return false;
      auto x = relax(key, inner);
      if (!x) return false;
      keys.push_back(*x);
    }
  }
  if (keys.empty()) return false;
  int64_t coef = 0;
  std::optional<int64_t> lo_min, hi_max;
  Expr base;
  for (auto& k : keys) {
    auto llo = to_linear(k.lo), lhi = to_linear(k.hi);
    if (!llo || !lhi) return false;
    int64_t c1 = llo->coef_of(loop->loop_var.get()), c2 = lhi->coef_of(loop->loop_var.get());
    if (c1 == 0 || c1 != c2 || (coef != 0 && c1 != coef)) return false;
    coef = c1;
    Expr rest_lo = fold(k.lo - make_int(c1, k.lo.dtype()) * loop->loop_var);
    Expr rest_hi = fold(k.hi - make_int(c1, k.hi.dtype()) * loop->loop_var);
    if (!base.defined()) base = rest_lo;
    auto dl = to_linear(fold(rest_lo - base)), dh = to_linear(fold(rest_hi - base));
    if (!dl || !dh || !dl->terms.empty() || !dh->terms.empty()) return false;
    lo_min = lo_min ? std::min(*lo_min, dl->c) : dl->c;
    hi_max = hi_max ? std::max(*hi_max, dh->c) : dh->c;
  }
  return *hi_max - *lo_min < std::abs(coef);
}

}  // namespace

void check_iterations_independent(const ScheduleState& st, const Stmt& loop_s, const std::string& prim,
                                  const std::set<const BlockNode*>& cross_thread) {
  auto* loop = loop_s.as<ForNode>();
  const std::string what = "loop " + loop->loop_var.name();
  if (has_loose_effects(loop->body)) refuse(what + " has statements outside blocks");
  if (has_extern_call_outside_regions(loop->body))
    refuse(what + " contains call_extern, whose effects are unknown");
  check_loop_bindings(loop->body, loop, false, prim, cross_thread);
  // A block the loop reaches through none of its bindings runs the same instances in every
  // iteration: at once, a reduction's updates race (`for p { for i { W[I[vi]] += 1 } }`).
  // Spatial blocks recomputed per iteration (compute_at copies) get the buffer checks below.
  int64_t one_iteration;
  if (!(is_const_int(loop->extent, &one_iteration) && one_iteration <= 1))
    for (auto& bs : collect_blocks(loop->body, false)) {
      const BlockRealizeNode* br = realize(bs);
      bool reached = false, accumulates = false;
      for (auto& e : br->bindings) reached = reached || uses_var(e, loop->loop_var.get());
      for (auto& iv : br->block->iter_vars) accumulates = accumulates || iv.kind != IterKind::Spatial;
      if (!reached && accumulates)
        refuse(what + " is bound to no iter var of block " + br->block->name +
               ": every iteration would run the same instances of it");
    }
  check_self_dependence(loop->body, what);
  auto blocks = collect_blocks(loop->body, false);
  if (blocks.empty()) return;
  // Buffers allocated by blocks below the loop are fresh in each iteration.
  std::set<const BufferNode*> private_allocs;
  for (auto& bs : collect_blocks(loop->body, true))
    for (auto& a : block_of(bs)->allocs) private_allocs.insert(a.get());
  auto is_param = [&](const BufferNode* b) {
    for (auto& p : st.func.params)
      if (p.is_buffer() && p.buffer.get() == b) return true;
    for (auto& o : st.func.outputs)
      if (o.get() == b) return true;
    return false;
  };
  // Blocks with a reduce var bound to an expression of the loop var.
  std::set<const BlockNode*> reduce_fed;
  for (auto& bs : blocks) {
    const BlockRealizeNode* br = realize(bs);
    for (size_t i = 0; i < br->block->iter_vars.size(); ++i)
      if (br->block->iter_vars[i].kind == IterKind::Reduce && uses_var(br->bindings[i], loop->loop_var.get()))
        reduce_fed.insert(br->block.get());
  }
  // Accesses of each buffer by each block, relaxed over loops inside `loop`.
  std::map<const BufferNode*, std::vector<Access>> acc;
  std::map<const BufferNode*, std::vector<const BlockNode*>> writers;
  for (auto& bs : blocks) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    SymRangeMap inner;
    auto path = find_path(loop->body, bs.get());
    for (auto& p : path) {
      auto* f = p.as<ForNode>();
      if (!f) continue;
      SymRange r{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
      if (auto lo = relax(r.lo, inner)) r.lo = lo->lo;
      if (auto hi = relax(r.hi, inner)) r.hi = hi->hi;
      inner[f->loop_var.get()] = r;
    }
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
    auto add = [&](const BufferRegion& r, bool write) {
      Access a{b, {}};
      for (auto& rg : r.ranges) {
        Expr lo = substitute(rg.begin, sub);
        Expr hi = rg.is_point() ? lo : fold(substitute(rg.end, sub) - make_int(1, rg.end.dtype()));
        a.loop_dep = a.loop_dep || uses_var(lo, loop->loop_var.get()) || uses_var(hi, loop->loop_var.get());
        auto x = relax(lo, inner), y = relax(hi, inner);
        if (x && y)
          a.dims.push_back(SymRange{x->lo, y->hi});
        else
          a.dims.push_back(std::nullopt);
      }
      acc[r.buffer.get()].push_back(a);
      if (write) writers[r.buffer.get()].push_back(b);
    };
    for (auto& r : b->reads) add(r, false);
    for (auto& r : b->writes) add(r, true);
  }
  for (auto& [buf, list] : writers) {
    auto& all = acc[buf];
    if (private_allocs.count(buf)) continue;
    // Reduced across the threads by an allreduce: every iteration adds to the same element.
    bool reduced = !cross_thread.empty();
    for (auto& a : all) reduced = reduced && cross_thread.count(a.block);
    if (reduced) continue;
    bool shared = false;
    for (auto& a : all) shared = shared || a.block != list[0];
    // A scratch buffer allocated outside the loop (a function-level `alloc`) that one block
    // writes in every iteration is one buffer for all of them: run at once, the iterations
    // overwrite each other's values (the interpreter's scratch-alloc exception holds only for
    // an order that runs each iteration whole). Outputs written so are spatial conflicts,
    // which the interpreter reports.
    bool scratch = !is_param(buf);
    if (!shared && !scratch) continue;
    // Only atomic accumulations touch it (autodiff's scatter-adds into an intermediate's
    // adjoint, or several of them into one) and the loop feeds each one's reduce vars: the
    // updates commute and each stays one atomic add, so no iteration's value is overwritten,
    // scratch or not. A block the loop reaches through spatial vars only gets the partition
    // checks below: lowering drops the atomics of such blocks (drop_unraced_atomic).
    // Global only: a "shared" / "local" scratch is one copy per thread block / thread on a GPU.
    bool atomic_only = (prim == "parallel" || prim == "bind") && buf->scope == "global";
    for (auto& a : all) {
      bool writes = false;
      for (auto& w : a.block->writes) writes = writes || w.buffer.get() == buf;
      atomic_only = atomic_only && writes && atomic_scatter_add(*a.block) && reduce_fed.count(a.block);
    }
    if (atomic_only) continue;
    // Look for a dimension that partitions every access by the loop.
    size_t nd = all[0].dims.size();
    bool ok = false;
    for (size_t d = 0; d < nd && !ok; ++d) {
      int64_t coef = 0;
      bool good = true;
      std::optional<int64_t> lo_min, hi_max;
      for (auto& a : all) {
        if (!a.dims[d]) {
          good = false;
          break;
        }
        auto llo = to_linear(a.dims[d]->lo), lhi = to_linear(a.dims[d]->hi);
        if (!llo || !lhi) {
          good = false;
          break;
        }
        int64_t c1 = llo->coef_of(loop->loop_var.get()), c2 = lhi->coef_of(loop->loop_var.get());
        if (c1 == 0 || c1 != c2 || (coef != 0 && c1 != coef)) {
          good = false;
          break;
        }
        coef = c1;
        // Remove the loop term: the rest must be the same symbolic part up to constants.
        Expr rest_lo = fold(a.dims[d]->lo - make_int(c1, a.dims[d]->lo.dtype()) * loop->loop_var);
        Expr rest_hi = fold(a.dims[d]->hi - make_int(c1, a.dims[d]->hi.dtype()) * loop->loop_var);
        Expr base = fold(all[0].dims[d]->lo - make_int(c1, rest_lo.dtype()) * loop->loop_var);
        auto dl = to_linear(fold(rest_lo - base)), dh = to_linear(fold(rest_hi - base));
        if (!dl || !dh || !dl->terms.empty() || !dh->terms.empty()) {
          good = false;
          break;
        }
        lo_min = lo_min ? std::min(*lo_min, dl->c) : dl->c;
        hi_max = hi_max ? std::max(*hi_max, dh->c) : dh->c;
      }
      if (good && *hi_max - *lo_min < std::abs(coef)) ok = true;
    }
    if (!ok) ok = fused_partition(loop, buf, all);
    // Point accesses a loop extent apart (round 18: autodiff's fused gate adjoint stores
    // G[b, j], G[b, j + 32], G[b, j + 64], j in [0, 32)), whose hull no single slice fits.
    if (!ok) ok = accesses_apart_across_iterations(st, loop_s, buf, blocks);
    if (!ok) ok = recombined_partition(loop, buf, blocks) || recombined_partition(loop, buf, blocks, true);
    if (!ok) ok = recomputed_per_iteration(st, loop_s, buf, blocks);
    if (!ok) ok = recomputed_per_iteration_unfused(st, loop_s, buf);
    // "index it by the loop" is the advice for a buffer no access of which follows the loop;
    // one indexed by the loop but at elements of other iterations (`T[vi - 1]` read after
    // `T[vi]` is written) gets the message below, which names the blocks.
    bool loop_indexed = false;
    for (auto& a : all) loop_indexed = loop_indexed || a.loop_dep;
    if (!ok && scratch && !(shared && loop_indexed)) {
      std::string names;
      for (auto* w : list)
        if (names.find(w->name) == std::string::npos) names += (names.empty() ? "" : ", ") + w->name;
      refuse(what + ": iterations share the scratch buffer " + buf->name + " (written by block" +
             (names.find(',') != std::string::npos ? "s " : " ") + names +
             "): index it by the loop or allocate it in the block");
    }
    if (!ok) {
      std::string names;
      for (auto& a : all)
        if (names.find(a.block->name) == std::string::npos)
          names += (names.empty() ? "" : ", ") + a.block->name;
      refuse(what + ": blocks " + names + " share buffer " + buf->name +
             " across its iterations (no dimension of it is partitioned by the loop)");
    }
  }
}

}  // namespace tirc::sched

namespace tirc::sched {

bool commutative_reduction_update(const BlockNode& b, std::string* why) {
  if (match_reduction_update(b.body, why)) return true;
  // An outer block (blockize) holds blocks: it is commutative when every nested reduction is.
  struct Stores : IRVisitor {
    std::vector<const StoreNode*> stores;
    std::vector<const BlockNode*> nested;
    void visit_store(const StoreNode* n) override {
      stores.push_back(n);
      IRVisitor::visit_store(n);
    }
    void visit_block_realize(const BlockRealizeNode* n) override { nested.push_back(n->block.get()); }
  } sv;
  sv.visit(b.body);
  if (!sv.nested.empty()) {
    for (auto* nb : sv.nested) {
      bool reduce = false;
      for (auto& iv : nb->iter_vars) reduce = reduce || iv.kind == IterKind::Reduce;
      if (reduce && !commutative_reduction_update(*nb, why)) return false;
    }
    return true;
  }
  if (sv.stores.empty()) return false;
  std::set<const BufferNode*> written;
  for (auto* st : sv.stores) written.insert(st->buffer.get());
  size_t self_loads = 0;
  for (auto* st : sv.stores) {
    auto* v = st->value.as<BinaryNode>();
    if (!v || !(v->op == BinOp::Add || v->op == BinOp::Sub || v->op == BinOp::Mul || v->op == BinOp::Min ||
                v->op == BinOp::Max))
      return false;
    auto is_self = [&](const Expr& e) {
      auto* l = e.as<LoadNode>();
      if (!l || !l->buffer.same_as(st->buffer) || l->indices.size() != st->indices.size()) return false;
      for (size_t k = 0; k < l->indices.size(); ++k)
        if (!expr_identical(l->indices[k], st->indices[k])) return false;
      return true;
    };
    if (!is_self(v->a) && (v->op == BinOp::Sub || !is_self(v->b))) return false;
    ++self_loads;
  }
  size_t loads = 0;
  for_each_expr(b.body, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && written.count(l->buffer.get())) ++loads;
    if (auto* p = e.as<BufferPtrNode>(); p && written.count(p->buffer.get())) loads += 2;
  });
  return loads == self_loads;
}

}  // namespace tirc::sched

namespace tirc::sched {

void check_moved_block_order(const ScheduleState& st, const Stmt& bs) {
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  bool scan = false, reduce = false;
  for (auto& iv : b->iter_vars) {
    scan = scan || iv.kind == IterKind::Scan;
    reduce = reduce || iv.kind == IterKind::Reduce;
  }
  std::string why;
  if (!scan && !(reduce && !commutative_reduction_update(*b, &why))) return;
  const std::string reason =
      scan ? "it has scan iter vars" : "its update is not a commutative reduction: " + why;
  auto fail = [&]() {
    refuse("block " + b->name + " runs its iterations in a fixed order (" + reason +
           "), and its loops do not run its non-spatial iter vars in their declared order, which the new "
           "loops (one per iter var) would");
  };
  auto loops = st.loops_above(bs.get());
  auto pos_of = [&](const VarNode* v) {
    for (size_t k = 0; k < loops.size(); ++k)
      if (loops[k].as<ForNode>()->loop_var.get() == v) return static_cast<int>(k);
    return -1;
  };
  // Loops feeding a spatial iter var may not feed an ordered one as well.
  std::set<int> spatial_loops;
  for (size_t i = 0; i < b->iter_vars.size(); ++i)
    if (b->iter_vars[i].kind == IterKind::Spatial)
      for (size_t k = 0; k < loops.size(); ++k)
        if (uses_var(br->bindings[i], loops[k].as<ForNode>()->loop_var.get()))
          spatial_loops.insert(static_cast<int>(k));
  int last = -1;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    if (b->iter_vars[i].kind == IterKind::Spatial) continue;
    if (is_one(fold(b->iter_vars[i].extent))) continue;
    // The binding must grow lexicographically with its loops (outer to inner): a mixed-radix
    // sum c1 * l1 + c2 * l2 + ... + c with each coefficient above what the inner loops add.
    auto lin = to_linear(br->bindings[i]);
    if (!lin || lin->terms.empty()) fail();
    std::vector<std::pair<int, int64_t>> terms;  // loop position, coefficient
    for (auto& [a, c] : lin->terms) {
      auto* v = a.as<VarNode>();
      int p = v ? pos_of(v) : -1;
      if (p < 0 || c <= 0 || spatial_loops.count(p)) fail();
      terms.emplace_back(p, c);
    }
    std::sort(terms.begin(), terms.end());
    int64_t inner_span = 0;  // the most the loops inside add
    for (size_t k = terms.size(); k-- > 0;) {
      if (k + 1 < terms.size() && terms[k].first == terms[k + 1].first) fail();
      if (terms[k].second <= inner_span) fail();
      int64_t ext;
      if (!is_const_int(fold(loops[terms[k].first].as<ForNode>()->extent), &ext)) {
        if (k != 0) fail();  // only the outermost loop may have a symbolic extent
        continue;
      }
      inner_span += terms[k].second * (ext - 1);
    }
    if (terms.front().first <= last) fail();
    last = terms.back().first;
  }
}

}  // namespace tirc::sched

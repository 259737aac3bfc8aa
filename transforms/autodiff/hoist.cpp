// Block-invariant values -> intermediate buffers: see hoist.h.
#include "transforms/autodiff/hoist.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/regions.h"
#include "transforms/schedule/coverage.h"

namespace tirc::ad {

namespace {

// substitute() with the binders of let expressions renamed too. A let expression may bind a
// var that a let statement of the block also binds (the temps of an if_then_else arm are
// bound inside the arm and again by the adjoint's statements); a copy of the lets renaming
// only the uses left `(let t4 = .. in t40 * t50)` with t40 bound later or not at all (F_grad
// did not re-parse: "undeclared name 't40'"). binders: old var -> its copy.
Expr substitute_renaming(const Expr& e, const std::unordered_map<const VarNode*, Expr>& m,
                         const std::unordered_map<const VarNode*, Var>& binders) {
  struct S : IRMutator {
    const std::unordered_map<const VarNode*, Expr>* m;
    const std::unordered_map<const VarNode*, Var>* binders;
    Expr mutate_var(const Expr& e) override {
      auto it = m->find(e.as<VarNode>());
      return it == m->end() ? e : it->second;
    }
    Expr mutate_let(const LetNode* n, const Expr& e) override {
      Expr v = mutate(n->value), b = mutate(n->body);
      auto it = binders->find(n->var.get());
      if (it == binders->end()) return v.same_as(n->value) && b.same_as(n->body) ? e : make_let(n->var, v, b);
      return make_let(it->second, v, b);
    }
  } s;
  s.m = &m;
  s.binders = &binders;
  return s.mutate(e);
}

// Size of e as a tree (shared sub-expressions counted once per use), saturating: keys of
// hoisted values are printed, and a DAG of squarings prints exponentially.
size_t tree_size(const Expr& e, std::unordered_map<const ExprNode*, size_t>& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  size_t n = 1;
  auto add = [&](const Expr& c) {
    if (c.defined()) n = std::min<size_t>(n + tree_size(c, memo), 1000000);
  };
  switch (e.kind()) {
    case ExprKind::Load:
      for (auto& i : e.as<LoadNode>()->indices) add(i);
      break;
    case ExprKind::Binary:
      add(e.as<BinaryNode>()->a);
      add(e.as<BinaryNode>()->b);
      break;
    case ExprKind::Unary: add(e.as<UnaryNode>()->a); break;
    case ExprKind::Cast: add(e.as<CastNode>()->value); break;
    case ExprKind::Call:
      for (auto& a : e.as<CallNode>()->args) add(a);
      break;
    case ExprKind::Select:
    case ExprKind::IfThenElse:
      add(as_select_like(e)->cond);
      add(as_select_like(e)->t);
      add(as_select_like(e)->f);
      break;
    case ExprKind::Let:
      add(e.as<LetNode>()->value);
      add(e.as<LetNode>()->body);
      break;
    default: break;
  }
  return memo[e.get()] = n;
}

// The block realize at the bottom of a perfect loop nest s (loops outermost first); null when the
// nest ends in anything else.
const BlockRealizeNode* nest_block(const Stmt& s, std::vector<const ForNode*>* loops) {
  Stmt cur = s;
  while (auto* f = cur.as<ForNode>()) {
    loops->push_back(f);
    cur = f->body;
  }
  return cur.as<BlockRealizeNode>();
}

// Integer sub-expressions that use a var of `shifted` re-canonicalised by their affine form
// (`v + 4 - 4` -> `v`, `-(2 - u) + 2` -> `u`), so that values over renamed or shifted iter
// vars print the same.
struct CanonInts : IRMutator {
  const std::unordered_set<const VarNode*>* shifted = nullptr;
  Expr mutate(const Expr& e) override {
    if (is_int(e.dtype()) && e.kind() != ExprKind::Var && e.kind() != ExprKind::IntImm) {
      bool uses = false, clean = true;
      for_each_expr(e, [&](const Expr& x) {
        if (auto* v = x.as<VarNode>()) {
          uses = uses || shifted->count(v);
          clean = clean && v->dtype == e.dtype();
        }
        if (x.kind() == ExprKind::Cast || x.kind() == ExprKind::Load) clean = false;
      });
      if (!uses) return e;
      if (clean)
        if (auto a = to_affine(e)) return affine_to_expr(*a, e.dtype());
    }
    return IRMutator::mutate(e);
  }
  using IRMutator::mutate;
};

// Calls f on every store of s.
void for_each_stmt_store(const Stmt& s, const std::function<void(const StoreNode*)>& f) {
  struct V : IRVisitor {
    const std::function<void(const StoreNode*)>* f;
    void visit_store(const StoreNode* n) override {
      (*f)(n);
      IRVisitor::visit_store(n);
    }
  } v;
  v.f = &f;
  v.visit(s);
}

struct Entry {
  Buffer H;
  std::unordered_set<const BufferNode*> loads;
  // Made for a sub-value by the cost round 4 rules (named `<outer>_pK`); blk: its block.
  bool nested = false;
  Block blk;
};

class Hoister {
 public:
  // round4: the rules of cost rounds 3 (measured) and 4 (inner_invariant, fewer_deps,
  // masked_value) on; the first pass runs without them (see hoist_invariants).
  // cond_only: the cost round 5 pass (hoist_invariants): only invariant comparisons.
  Hoister(NameGen& names, std::vector<Buffer>* allocs, bool round4, bool cond_only = false)
      : names_(names), allocs_(allocs), no_nested_(!round4), cond_only_(cond_only), no_mask_hoist_(!round4) {}

  std::vector<Stmt> run(const std::vector<Stmt>& stmts) {
    // The analyses see every nest in its shift-normalised form (normalize_nest); a nest that
    // nothing is hoisted out of is emitted as it was.
    std::vector<Stmt> norm;
    for (auto& s : stmts) norm.push_back(lift_lets(normalize_nest(s)));
    std::vector<bool> touched(norm.size(), false);
    // The comparison pass (cond_only_) hoists invariant masks out of single blocks only: no
    // step values, no sharing between blocks, nothing out of scan loops.
    if (!cond_only_ && !std::getenv("TIRC_AD_NO_STEP_TAPES")) touched = share_fwd_rev(norm);
    if (!cond_only_) find_shared(norm);
    for (size_t k = 0; k < stmts.size(); ++k) {
      Stmt t = cond_only_ ? norm[k] : process_scan_loop(norm[k]);
      if (t.same_as(norm[k])) t = process(norm[k]);
      if (t.same_as(norm[k]) && !touched[k]) t = stmts[k];
      for (auto& p : pending_) out_.push_back(p);
      pending_.clear();
      out_.push_back(t);
      std::unordered_set<const BufferNode*> w;
      stored_buffers(t, &w);
      for (auto it = reg_.begin(); it != reg_.end();) {
        bool stale = false;
        for (auto* b : w) stale = stale || it->second.loads.count(b);
        it = stale ? reg_.erase(it) : std::next(it);
      }
    }
    return out_;
  }

 private:
  static constexpr uint64_t kImpure = ~uint64_t(0);

  // A nest whose loops visit a sub-range of their iter vars' boxes: the deferred gathers of a
  // scan step (gru_torch's `for ax0 in serial(4, 6) { block g(v: spatial(6) = ax0, ..) }`
  // reading `Wi[v - 4, 0]`, `Wi[v - 2, 0]`, `Wi[v, 0]`, or `serial(2)` over an iter var of
  // extent 6) each recompute the step's cell, but match() takes only nests covering the box,
  // and the cells' texts differ by the shift. Such a nest is rewritten to cover its box: the
  // loop runs from 0 over its extent, the iter var gets that extent and the body reads it
  // plus the old minimum (integer sub-expressions using it re-canonicalised by the affine
  // form, so `v - 4` becomes `w`, `v` becomes `w + 4`, the text of the other gathers). The
  // same points, elements and values: only the iter var's range and the index text change.
  // Constant ranges only; s itself when the nest is not of this form (or is already normal).
  Stmt normalize_nest(const Stmt& s) {
    std::vector<const ForNode*> loops;
    auto* br = nest_block(s, &loops);
    if (!br || loops.empty()) return s;
    const BlockNode& b = *br->block.get();
    size_t n = b.iter_vars.size();
    if (n != loops.size() || n > 60 || !b.allocs.empty()) return s;
    bool any = false, nested = false;
    std::vector<int64_t> shift(n, 0), ext(n, 0), loop_min(n, 0);
    std::vector<const ForNode*> loop_of(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      const IterVar& iv = b.iter_vars[i];
      if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce) return s;
      // The binding: a loop var, or a loop var plus a constant (`r = t - 1` over `t in
      // serial(1, 4)`, a gather whose guard `vt > 0` became the loop's range).
      const VarNode* bv = br->bindings[i].as<VarNode>();
      int64_t c = 0;
      if (!bv) {
        auto a = to_affine(br->bindings[i]);
        if (!a || a->terms.size() != 1 || a->terms[0].second != 1) return s;
        bv = a->terms[0].first.get();
        c = a->constant;
      }
      for (auto* f : loops)
        if (f->loop_var.get() == bv) loop_of[i] = f;
      for (size_t j = 0; j < i; ++j)
        if (loop_of[j] == loop_of[i]) return s;
      const ForNode* f = loop_of[i];
      int64_t lo, e, E;
      if (!f || f->for_kind != ForKind::Serial || !is_const_int(f->min, &lo) ||
          !is_const_int(f->extent, &e) || !is_const_int(iv.extent, &E)) {
        // Symbolic: already of the form match() takes, or left alone.
        if (!f || c != 0 || !is_zero(f->min) || !expr_identical(f->extent, iv.extent)) return s;
        continue;
      }
      if (lo + c < 0 || e < 1 || lo + c + e > E || f->loop_var.dtype() != iv.var.dtype()) return s;
      if (lo == 0 && c == 0 && e == E) continue;
      shift[i] = lo + c;
      loop_min[i] = lo;
      ext[i] = e;
      any = true;
    }
    if (!any) return s;
    auto has_block = [&](const Stmt& st) {
      struct V : IRVisitor {
        bool found = false;
        void visit_block_realize(const BlockRealizeNode*) override { found = true; }
      } v;
      v.visit(st);
      return v.found;
    };
    nested = has_block(b.body) || (b.init.defined() && has_block(b.init));
    if (nested) return s;
    std::unordered_map<const VarNode*, Expr> to_new, loop_shift;
    std::unordered_set<const VarNode*> shifted;
    BlockNode nb = b;
    for (size_t i = 0; i < n; ++i) {
      if (!ext[i]) continue;
      const IterVar& iv = b.iter_vars[i];
      Var w = shift[i] ? Var(names_.fresh(iv.var.name()), iv.var.dtype()) : iv.var;
      nb.iter_vars[i] = {w, iv.kind, make_const(iv.extent.dtype(), ext[i])};
      if (shift[i]) {
        to_new[iv.var.get()] = w + make_const(w.dtype(), shift[i]);
        shifted.insert(w.get());
      }
      if (loop_min[i])
        loop_shift[loop_of[i]->loop_var.get()] =
            loop_of[i]->loop_var + make_const(loop_of[i]->loop_var.dtype(), loop_min[i]);
    }
    CanonInts canon;
    canon.shifted = &shifted;
    if (!to_new.empty()) {
      nb.body = canon.mutate(substitute(b.body, to_new));
      if (b.init.defined()) nb.init = canon.mutate(substitute(b.init, to_new));
    }
    set_regions(nb);
    Expr pred = loop_shift.empty() ? br->predicate : substitute(br->predicate, loop_shift);
    std::vector<Expr> bindings;
    for (size_t i = 0; i < n; ++i) bindings.push_back(ext[i] ? Expr(loop_of[i]->loop_var) : br->bindings[i]);
    Stmt out = make_block_realize(bindings, pred, make_block(std::move(nb)));
    for (size_t k = loops.size(); k-- > 0;) {
      auto* f = loops[k];
      int64_t e = 0;
      for (size_t i = 0; i < n; ++i)
        if (loop_of[i] == f) e = ext[i];
      Expr lo = e ? make_const(f->min.dtype(), 0) : f->min;
      Expr ex = e ? make_const(f->extent.dtype(), e) : f->extent;
      out = make_for(f->loop_var, lo, ex, f->for_kind, out, f->thread_tag, f->annotations);
    }
    return out;
  }

  // `let` expressions at unconditional positions of a nest's stored values (the arm temps of
  // an `if_then_else` whose guard became the gather's range: selective_scan's `A_grad[..] +
  // (let t2 = Dt[..] * A[..] in (let t3 = exp(t2) in ..))`) become let statements before the
  // stores, so that the analyses see their values (they never look inside a `let`
  // expression). Evaluated once either way, at a point the store is evaluated at; lets inside
  // `if_then_else` arms stay. s itself when there is none.
  Stmt lift_lets(const Stmt& s) {
    std::vector<const ForNode*> loops;
    auto* br = nest_block(s, &loops);
    if (!br || loops.empty()) return s;
    const BlockNode& b = *br->block.get();
    std::vector<Binding> outer;
    Stmt t = b.body;
    while (auto* l = t.as<LetStmtNode>()) {
      outer.push_back({l->var, l->value});
      t = l->body;
    }
    struct Lift : IRMutator {
      std::vector<Binding> lifted;
      std::unordered_map<const ExprNode*, Expr> done;
      Expr mutate(const Expr& e) override {
        if (e.kind() == ExprKind::IfThenElse) return e;
        if (auto* l = e.as<LetNode>()) {
          auto it = done.find(e.get());
          if (it != done.end()) return it->second;
          Expr v = mutate(l->value);
          lifted.push_back({l->var, v});
          return done[e.get()] = mutate(l->body);
        }
        return IRMutator::mutate(e);
      }
      using IRMutator::mutate;
    } lift;
    std::vector<Stmt> xs;
    bool seq = false;
    if (auto* q = t.as<SeqNode>()) {
      xs = q->stmts;
      seq = true;
    } else {
      xs.push_back(t);
    }
    for (auto& x : xs) {
      auto* st = x.as<StoreNode>();
      if (!st) return s;
      Expr v = lift.mutate(st->value);
      if (!v.same_as(st->value)) x = make_store(st->buffer, st->indices, v);
    }
    if (lift.lifted.empty()) return s;
    // Each var bound once (a var bound by two `let` nodes would be rebound).
    std::unordered_set<const VarNode*> bound;
    for (auto& l : outer) bound.insert(l.var.get());
    for (auto& l : lift.lifted)
      if (!bound.insert(l.var.get()).second) return s;
    Stmt body = seq ? make_seq(xs) : xs[0];
    for (size_t i = lift.lifted.size(); i-- > 0;)
      body = make_let_stmt(lift.lifted[i].var, lift.lifted[i].value, body);
    for (size_t i = outer.size(); i-- > 0;) body = make_let_stmt(outer[i].var, outer[i].value, body);
    BlockNode nb = b;
    nb.body = body;
    Stmt out = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    for (size_t k = loops.size(); k-- > 0;) {
      auto* f = loops[k];
      out = make_for(f->loop_var, f->min, f->extent, f->for_kind, out, f->thread_tag, f->annotations);
    }
    return out;
  }

  // A scan loop `for t { nest; nest; .. }` whose nests hold blocks with a scan iter var bound
  // to t (a recurrence's forward recomputation and its backward steps): their values that
  // depend neither on the scan var nor on all their other iter vars, and read no buffer any
  // statement of the loop writes, are computed once before the loop (lru_complex's
  // `exp(-exp(Nu[vn])) * cos(Th[vn])`, recomputed at every step by both pieces of the split
  // step and both backward steps). Only invariant values (no sharing between blocks); s
  // itself when nothing is hoisted.
  Stmt process_scan_loop(const Stmt& s) {
    auto* f = s.as<ForNode>();
    if (!f || f->for_kind != ForKind::Serial) return s;
    std::vector<Stmt> kids;
    if (auto* q = f->body.as<SeqNode>())
      kids = q->stmts;
    else
      kids.push_back(f->body);
    std::unordered_set<const BufferNode*> loop_written;
    stored_buffers(f->body, &loop_written);
    bool changed = false;
    scan_loop_ = &loop_written;
    auto scan_block = [&](const Stmt& k) {
      Stmt cur = k;
      while (auto* g = cur.as<ForNode>()) cur = g->body;
      auto* br = cur.as<BlockRealizeNode>();
      if (!br) return false;
      for (size_t i = 0; i < br->bindings.size(); ++i)
        if (br->block->iter_vars[i].kind == IterKind::Scan && br->bindings[i].get() == f->loop_var.get())
          return true;
      return false;
    };
    for (auto& k : kids) {
      if (!scan_block(k)) continue;
      Stmt nest = make_for(f->loop_var, f->min, f->extent, f->for_kind, k, f->thread_tag, f->annotations);
      Stmt t = process(nest);
      if (t.same_as(nest)) continue;
      k = t.as<ForNode>()->body;
      changed = true;
    }
    scan_loop_ = nullptr;
    if (!std::getenv("TIRC_AD_NO_STEP_TAPES")) changed = share_in_loop(f, &kids) || changed;
    if (!changed) return s;
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, kids.size() == 1 ? kids[0] : make_seq(kids),
                    f->thread_tag, f->annotations);
  }

  // The scan blocks of a serial loop statement s: the kids (s's body statements) and, per
  // kid, its matched realize (null when not a nest of one block with a scan iter var bound
  // to the loop var, without a `where`) and its loops inside s.
  struct LoopKid {
    Stmt stmt;
    const BlockRealizeNode* br = nullptr;
    // The realize also when br is null for its init only (a scan reduction: its stores are
    // still analysed by share_fwd_rev).
    const BlockRealizeNode* init_br = nullptr;
    std::vector<const ForNode*> inner;
    size_t scan_pos = 0;
  };
  const ForNode* scan_loop_kids(const Stmt& s, std::vector<LoopKid>* out) {
    auto* f = s.as<ForNode>();
    if (!f || f->for_kind != ForKind::Serial) return nullptr;
    std::vector<Stmt> kids;
    if (auto* q = f->body.as<SeqNode>())
      kids = q->stmts;
    else
      kids.push_back(f->body);
    std::unordered_set<const BufferNode*> none;
    for (auto& k : kids) {
      LoopKid K;
      K.stmt = k;
      Stmt nest = make_for(f->loop_var, f->min, f->extent, f->for_kind, k, f->thread_tag, f->annotations);
      holder_.push_back(nest);
      scan_loop_ = &none;
      std::vector<const ForNode*> loops;
      K.br = match(nest, loops, false);
      scan_loop_ = nullptr;
      if (K.br) {
        bool found = false;
        for (size_t i = 0; i < K.br->block->iter_vars.size(); ++i)
          if (K.br->block->iter_vars[i].kind == IterKind::Scan) {
            found = true;
            K.scan_pos = i;
          }
        if (found && K.br->block->init.defined()) K.init_br = K.br;
        if (!found || K.br->block->init.defined()) K.br = nullptr;
        K.inner.assign(loops.begin() + 1, loops.end());
      }
      out->push_back(K);
    }
    return f;
  }

  // K's block with the lets `lets` (those still used), `stores` before its terminal `t`.
  static Stmt rebuild(const LoopKid& K, const std::vector<Binding>& lets, Stmt t,
                      const std::vector<Stmt>& stores) {
    if (!stores.empty()) {
      std::vector<Stmt> xs = stores;
      if (auto* q = t.as<SeqNode>())
        xs.insert(xs.end(), q->stmts.begin(), q->stmts.end());
      else
        xs.push_back(t);
      t = make_seq(xs);
    }
    std::unordered_set<const VarNode*> need;
    for_each_expr(t, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) need.insert(v);
    });
    std::vector<bool> keep(lets.size(), false);
    for (size_t i = lets.size(); i-- > 0;) {
      if (!need.count(lets[i].var.get())) continue;
      keep[i] = true;
      collect_vars(lets[i].value, &need);
    }
    for (size_t i = lets.size(); i-- > 0;)
      if (keep[i]) t = make_let_stmt(lets[i].var, lets[i].value, t);
    BlockNode nb = *K.br->block.get();
    nb.body = t;
    set_regions(nb);
    Stmt out = make_block_realize(K.br->bindings, K.br->predicate, make_block(std::move(nb)));
    for (size_t i = K.inner.size(); i-- > 0;) {
      auto* g = K.inner[i];
      out = make_for(g->loop_var, g->min, g->extent, g->for_kind, out, g->thread_tag, g->annotations);
    }
    return out;
  }

  // enter_realize, then the analyses without the block's own stores: a value reading what
  // the block writes is not impure (the callers check those reads themselves).
  Stmt enter_relaxed(const BlockRealizeNode* br) {
    Stmt t = enter_realize(br);
    written_.clear();
    memo_.clear();
    for (auto& l : lets_) dep_[l.var.get()] = info(l.value).deps;
    return t;
  }

  // Step values of a recurrence's forward recomputation that its backward steps compute
  // again: gru_torch's cell (gates r, z, n) is computed by the forward loop `cell` and again
  // by `cell_rev` at step 2 - w; kalman_1d's gain by its two forward pieces and both backward
  // steps. A let of a forward scan block A (loop over [0, E)) whose value (lets inlined) has
  // FLOPs and uses every iter var of A, and that a block of a later loop over [0, E) binds
  // with its scan var w standing for step E - 1 - w (the text equal once w is replaced by
  // E - 1 - u and integer indices are re-canonicalised), is stored by A into a buffer over
  // its iter vars (after A's lets), and the later block loads it at E - 1 - w. Valid when the
  // elements the value reads are final when A computes it: buffers no statement from A's
  // loop on writes, or buffers the loop writes only at the scan var plus c_s (one dimension,
  // coefficient 1) read at the scan var plus c_l < every c_s (an earlier step), and no
  // statement after A's loop up to the later loop (nor that loop) writes them. Only when F_grad
  // is not differentiated again anyway (Scans): A's or the later loop has two or more scan
  // blocks (a region), or a later block stores twice into one buffer (a backward step adding
  // into several earlier elements). Returns, per statement, whether it changed.
  // Cost round 2: sub-expressions of A's unconditional stored values are candidates too (the
  // zoo's lstm computes its gates inline in `cell`; a stored one gets a let in A), and the
  // finality of a read is per kid (c_l == c_s is final when only earlier kids of the step
  // store there; a scan reduction with an init is analysed for its stores).
  std::vector<bool> share_fwd_rev(std::vector<Stmt>& norm) {
    std::vector<bool> touched(norm.size(), false);
    for (size_t a = 0; a < norm.size(); ++a) {
      std::vector<LoopKid> KA;
      const ForNode* fa = scan_loop_kids(norm[a], &KA);
      int64_t E;
      if (!fa || !is_zero(fa->min) || !is_const_int(fa->extent, &E)) continue;
      size_t nscan_a = 0;
      for (auto& K : KA) nscan_a += K.br ? 1 : 0;
      if (!nscan_a) continue;
      // Per buffer the loop writes: the scan dimension and the offsets c_s of its stores.
      // writes: (kid, c_s) of every store (cost round 2: a read at c_l is final at kid k when
      // every store has c_l < c_s, an earlier step, or c_l == c_s in a kid before k, earlier
      // in the same step: the zoo's lstm reads the gates Z[vt, ..] its `gates` kid stored).
      struct StoreInfo {
        bool bad = false;
        int dim = -1;
        int64_t cmin = INT64_MAX;
        std::vector<std::pair<size_t, int64_t>> writes;
      };
      std::unordered_map<const BufferNode*, StoreInfo> sinfo;
      for (size_t kk = 0; kk < KA.size(); ++kk) {
        auto& K = KA[kk];
        std::unordered_set<const BufferNode*> w;
        stored_buffers(K.stmt, &w);
        for (auto* b : w) sinfo[b];
        const BlockRealizeNode* kbr = K.br ? K.br : K.init_br;
        if (!kbr) {
          for (auto* b : w) sinfo[b].bad = true;
          continue;
        }
        const VarNode* v = kbr->block->iter_vars[K.scan_pos].var.get();
        std::vector<const StoreNode*> sts;
        for_each_stmt_store(kbr->block->body, [&](const StoreNode* n) { sts.push_back(n); });
        if (kbr->block->init.defined())
          for_each_stmt_store(kbr->block->init, [&](const StoreNode* n) { sts.push_back(n); });
        for (auto* st : sts) {
          StoreInfo& si = sinfo[st->buffer.get()];
          int dim = -1;
          int64_t c = 0;
          bool ok = true;
          for (size_t d = 0; d < st->indices.size(); ++d) {
            auto af = to_affine(st->indices[d]);
            if (!af) {
              bool uses = false;
              for_each_expr(st->indices[d], [&](const Expr& x) { uses = uses || x.get() == v; });
              ok = ok && !uses;
              continue;
            }
            if (!af->uses(v)) continue;
            if (dim >= 0 || af->coeff(v) != 1 || af->terms.size() != 1) ok = false;
            dim = static_cast<int>(d);
            c = af->constant;
          }
          if (!ok || dim < 0 || (si.dim >= 0 && si.dim != dim)) {
            si.bad = true;
            continue;
          }
          si.dim = dim;
          si.cmin = std::min(si.cmin, c);
          si.writes.push_back({kk, c});
        }
      }
      // The forward values: key -> (kid, let, dims, loads).
      // let: index into the kid's lets, or SIZE_MAX for a sub-expression `sub` of its stored
      // values (given a let of its own when stored); seq: registration order (inner first).
      struct FwdVal {
        size_t kid, let;
        std::vector<size_t> dims;
        std::unordered_set<const BufferNode*> loads;
        Buffer H;
        Expr sub;
        size_t seq = 0;
      };
      std::unordered_map<std::string, FwdVal> fwd;
      std::unordered_set<const VarNode*> scan_vars;
      for (size_t k = 0; k < KA.size(); ++k) {
        if (!KA[k].br) continue;
        const VarNode* v = KA[k].br->block->iter_vars[KA[k].scan_pos].var.get();
        scan_vars.clear();
        scan_vars.insert(v);
        auto consider = [&](const Expr& value, const Expr& inl, size_t let_index) {
          const Info& in = info(value);
          if (!is_float(value.dtype()) || in.flops == 0 || in.guarded || in.deps == kImpure ||
              (in.deps & eff_) != eff_ || !(in.deps & scan_mask_))
            return;
          bool ok = true;
          std::unordered_set<const BufferNode*> loads;
          for_each_expr(inl, [&](const Expr& x) {
            auto* ld = x.as<LoadNode>();
            if (!ld) return;
            loads.insert(ld->buffer.get());
            auto it = sinfo.find(ld->buffer.get());
            if (it == sinfo.end()) return;
            if (it->second.bad || it->second.dim < 0) {
              ok = false;
              return;
            }
            auto af = to_affine(ld->indices[it->second.dim]);
            if (!af || af->terms.size() != 1 || af->terms[0].first.get() != v || af->terms[0].second != 1) {
              ok = false;
              return;
            }
            for (auto& [j, c] : it->second.writes)
              if (!(af->constant < c || (af->constant == c && j < k))) ok = false;
          });
          if (!ok) return;
          CanonInts canon;
          canon.shifted = &scan_vars;
          std::vector<size_t> dims;
          std::string key = key_of(canon.mutate(inl), &dims);
          if (key[0] == '#' || fwd.count(key)) return;
          FwdVal fv{k, let_index, dims, loads, Buffer(), Expr(), fwd.size()};
          if (let_index == SIZE_MAX) fv.sub = value;
          fwd[key] = fv;
        };
        Stmt t = enter_relaxed(KA[k].br);
        for (size_t i = 0; i < lets_.size(); ++i) consider(lets_[i].value, inl_.at(lets_[i].var.get()), i);
        // Sub-expressions of the unconditional stored values (post-order: inner values first),
        // never inside an `if_then_else` or a `let` expression.
        std::vector<Stmt> terms;
        if (auto* q = t.as<SeqNode>())
          terms = q->stmts;
        else
          terms.push_back(t);
        std::function<void(const Expr&)> walk_sub = [&](const Expr& e) {
          if (!e.defined() || e.kind() == ExprKind::Let || e.kind() == ExprKind::IfThenElse) return;
          switch (e.kind()) {
            case ExprKind::Binary:
              walk_sub(e.as<BinaryNode>()->a);
              walk_sub(e.as<BinaryNode>()->b);
              break;
            case ExprKind::Unary: walk_sub(e.as<UnaryNode>()->a); break;
            case ExprKind::Cast: walk_sub(e.as<CastNode>()->value); break;
            case ExprKind::Call:
              for (auto& x : e.as<CallNode>()->args) walk_sub(x);
              break;
            default: return;
          }
          consider(e, substitute(e, inl_), SIZE_MAX);
        };
        for (auto& x : terms)
          if (auto* st = x.as<StoreNode>()) walk_sub(st->value);
      }
      if (fwd.empty()) continue;
      std::unordered_set<const BufferNode*> inter;  // written from after A's loop on
      bool any = false;
      for (size_t b = a + 1; b < norm.size(); ++b) {
        stored_buffers(norm[b], &inter);
        std::vector<LoopKid> KB;
        const ForNode* fb = scan_loop_kids(norm[b], &KB);
        int64_t Eb;
        if (!fb || !is_zero(fb->min) || !is_const_int(fb->extent, &Eb) || Eb != E) continue;
        size_t nscan_b = 0;
        bool twice = false;
        for (auto& K : KB) {
          if (!K.br) continue;
          ++nscan_b;
          std::unordered_map<const BufferNode*, int> n;
          for_each_stmt_store(K.br->block->body,
                              [&](const StoreNode* st) { twice = twice || ++n[st->buffer.get()] >= 2; });
        }
        if (nscan_a < 2 && nscan_b < 2 && !twice) continue;
        bool changed_b = false;
        std::vector<Stmt> kids;
        for (auto& K : KB) {
          kids.push_back(K.stmt);
          if (!K.br) continue;
          Stmt t = enter_relaxed(K.br);
          const BlockNode& bb = *K.br->block.get();
          const IterVar& siv = bb.iter_vars[K.scan_pos];
          Var u(names_.fresh("u"), siv.var.dtype());
          std::vector<IterVar> ivs = bb.iter_vars;
          ivs[K.scan_pos].var = u;
          Expr last = make_const(siv.var.dtype(), E - 1);
          std::unordered_map<const VarNode*, Expr> rev{{siv.var.get(), last - u}};
          std::unordered_set<const VarNode*> us{u.get()};
          CanonInts canon;
          canon.shifted = &us;
          bool here = false;
          for (size_t i = 0; i < lets_.size(); ++i) {
            const Binding& l = lets_[i];
            const Info& in = info(l.value);
            if (!is_float(l.value.dtype()) || in.flops == 0 || in.guarded) continue;
            Expr inl = canon.mutate(substitute(inl_.at(l.var.get()), rev));
            bool clean = true;
            for_each_expr(inl, [&](const Expr& x) {
              if (auto* ld = x.as<LoadNode>()) clean = clean && !inter.count(ld->buffer.get());
            });
            if (!clean) continue;
            const std::vector<IterVar>* saved = iv_;
            iv_ = &ivs;
            std::vector<size_t> dims;
            std::string key = key_of(inl, &dims);
            iv_ = saved;
            auto it = fwd.find(key);
            if (it == fwd.end()) continue;
            FwdVal& fv = it->second;
            if (!fv.H.defined()) {
              std::vector<Expr> shape;
              for (size_t d : fv.dims) shape.push_back(KA[fv.kid].br->block->iter_vars[d].extent);
              fv.H = Buffer(names_.fresh("hoist"), l.value.dtype(), shape, "global");
              allocs_->push_back(fv.H);
            }
            std::vector<Expr> idx;
            for (size_t d : dims)
              idx.push_back(d == K.scan_pos ? last - bb.iter_vars[d].var : Expr(bb.iter_vars[d].var));
            lets_[i].value = make_load(fv.H, idx);
            here = true;
          }
          if (!here) continue;
          kids.back() = rebuild(K, lets_, t, {});
          changed_b = true;
        }
        if (!changed_b) continue;
        norm[b] = make_for(fb->loop_var, fb->min, fb->extent, fb->for_kind,
                           kids.size() == 1 ? kids[0] : make_seq(kids), fb->thread_tag, fb->annotations);
        touched[b] = true;
        any = true;
      }
      if (!any) continue;
      // A stores the values some later block loads.
      std::vector<Stmt> kids;
      for (size_t k = 0; k < KA.size(); ++k) {
        kids.push_back(KA[k].stmt);
        if (!KA[k].br) continue;
        std::vector<Stmt> stores;
        Stmt t = enter_realize(KA[k].br);
        // Stored sub-expressions get lets of their own (after the block's lets, inner first),
        // and the stored values read them.
        std::vector<const FwdVal*> subs;
        for (auto& [key, fv] : fwd)
          if (fv.kid == k && fv.H.defined() && fv.sub.defined()) subs.push_back(&fv);
        std::sort(subs.begin(), subs.end(), [](const FwdVal* x, const FwdVal* y) { return x->seq < y->seq; });
        struct Replace : IRMutator {
          using IRMutator::mutate;
          std::unordered_map<const ExprNode*, Expr> m;
          const ExprNode* self = nullptr;
          Expr mutate(const Expr& e) override {
            if (e.defined() && e.get() != self)
              if (auto it = m.find(e.get()); it != m.end()) return it->second;
            return IRMutator::mutate(e);
          }
        } repl;
        std::vector<Binding> lets = lets_;
        std::unordered_map<const FwdVal*, Var> sub_var;
        for (const FwdVal* fv : subs) {
          Var sv(names_.fresh("s"), fv->sub.dtype());
          repl.self = fv->sub.get();
          lets.push_back({sv, repl.mutate(fv->sub)});
          repl.m[fv->sub.get()] = sv;
          sub_var[fv] = sv;
        }
        repl.self = nullptr;
        if (!subs.empty()) t = repl.mutate(t);
        for (auto& [key, fv] : fwd) {
          if (fv.kid != k || !fv.H.defined()) continue;
          std::vector<Expr> idx;
          for (size_t d : fv.dims) idx.push_back(KA[k].br->block->iter_vars[d].var);
          stores.push_back(
              make_store(fv.H, idx, fv.sub.defined() ? Expr(sub_var.at(&fv)) : Expr(lets_[fv.let].var)));
        }
        if (stores.empty()) continue;
        std::sort(stores.begin(), stores.end(), [](const Stmt& x, const Stmt& y) {
          return x.as<StoreNode>()->buffer->name < y.as<StoreNode>()->buffer->name;
        });
        kids.back() = rebuild(KA[k], lets, t, stores);
      }
      norm[a] = make_for(fa->loop_var, fa->min, fa->extent, fa->for_kind,
                         kids.size() == 1 ? kids[0] : make_seq(kids), fa->thread_tag, fa->annotations);
      touched[a] = true;
    }
    return touched;
  }

  // The blocks of one scan loop (the pieces of a split step, as kalman_1d's estimate and
  // variance stores, or their backward steps) recompute the same step values: the gain
  // `pp / (pp + R)` in both pieces. A let whose value (lets inlined) has FLOPs, uses every
  // iter var of its block (the scan var among them) and that a later block of the loop binds
  // too is stored by the first block into a buffer over its iter vars (`hoistN[vt] = kg`,
  // after its lets); the later blocks of the same step load it instead, while no block in
  // between writes a buffer the value reads (nor the first block itself). Each step writes
  // its own elements before the later blocks of that step read them. Only in loops of two or
  // more scan blocks (a region of F, whose F_grad is not differentiated again: Scans), blocks
  // without a `where`. Returns whether a kid changed.
  bool share_in_loop(const ForNode* f, std::vector<Stmt>* kids) {
    struct Kid {
      const BlockRealizeNode* br = nullptr;
      std::vector<const ForNode*> loops;  // the nest inside f
      std::vector<std::string> keys;      // per let ("" when not shareable)
      std::vector<std::vector<size_t>> dims;
      std::vector<bool> strict;  // per let: reads no buffer its block writes
      std::unordered_set<const BufferNode*> writes;
    };
    std::vector<Kid> ks(kids->size());
    std::unordered_map<std::string, int> count;
    size_t nscan = 0;
    for (size_t k = 0; k < kids->size(); ++k) {
      Kid& K = ks[k];
      stored_buffers((*kids)[k], &K.writes);
      Stmt nest =
          make_for(f->loop_var, f->min, f->extent, f->for_kind, (*kids)[k], f->thread_tag, f->annotations);
      holder_.push_back(nest);
      scan_loop_ = &K.writes;  // lets match() take the scan iter var
      std::vector<const ForNode*> loops;
      K.br = match(nest, loops, false);
      scan_loop_ = nullptr;
      if (!K.br) continue;
      bool has_scan = false;
      for (auto& iv : K.br->block->iter_vars) has_scan = has_scan || iv.kind == IterKind::Scan;
      if (!has_scan || K.br->block->init.defined()) {
        K.br = nullptr;
        continue;
      }
      ++nscan;
      K.loops.assign(loops.begin() + 1, loops.end());
      enter_realize(K.br);
      for (auto& l : lets_) {
        const Info& i = info(l.value);
        K.strict.push_back(i.deps != kImpure);
      }
      // A block with one point per step (its only iter var of extent > 1 is the scan var)
      // evaluates its lets before its own stores of that step: as a later block it may load
      // a value that reads what it writes (kalman_1d's variance piece reads Pv[vt - 1] and
      // writes Pv[vt]). The first block may not (its store comes first in no order).
      if (eff_ == scan_mask_) {
        written_.clear();
        memo_.clear();
        for (auto& l : lets_) dep_[l.var.get()] = info(l.value).deps;
      }
      std::unordered_set<std::string> here;
      for (auto& l : lets_) {
        std::string key;
        std::vector<size_t> d;
        const Info& i = info(l.value);
        if (is_float(l.value.dtype()) && i.flops > 0 && !i.guarded && i.deps != kImpure &&
            (i.deps & eff_) == eff_ && (i.deps & scan_mask_)) {
          key = key_of(inl_.at(l.var.get()), &d);
          if (key[0] == '#' || !here.insert(key).second) key.clear();
        }
        K.keys.push_back(key);
        K.dims.push_back(d);
        if (!key.empty()) ++count[key];
      }
    }
    if (nscan < 2) return false;
    struct Avail {
      Buffer H;
      std::unordered_set<const BufferNode*> loads;
    };
    std::unordered_map<std::string, Avail> avail;
    std::unordered_set<std::string> done;
    bool changed = false;
    for (size_t k = 0; k < kids->size(); ++k) {
      Kid& K = ks[k];
      if (K.br) {
        const BlockNode& b = *K.br->block.get();
        Stmt t = enter_realize(K.br);
        std::vector<Stmt> stores;
        bool here = false;
        for (size_t i = 0; i < lets_.size(); ++i) {
          const std::string& key = K.keys[i];
          if (key.empty()) continue;
          --count[key];  // now: how many later blocks bind it
          std::vector<Expr> idx;
          for (size_t d : K.dims[i]) idx.push_back(b.iter_vars[d].var);
          auto it = avail.find(key);
          if (it != avail.end()) {
            lets_[i].value = make_load(it->second.H, idx);
            here = true;
          } else if (count[key] >= 1 && !done.count(key) && K.strict[i]) {
            // The block may store the let already (share_fwd_rev): that buffer serves.
            Buffer H;
            for_each_stmt_store(t, [&](const StoreNode* st) {
              bool same = st->value.same_as(lets_[i].var) && st->indices.size() == idx.size();
              for (size_t q = 0; same && q < idx.size(); ++q) same = expr_identical(st->indices[q], idx[q]);
              if (same) H = st->buffer;
            });
            if (!H.defined()) {
              std::vector<Expr> shape;
              for (size_t d : K.dims[i]) shape.push_back(b.iter_vars[d].extent);
              H = Buffer(names_.fresh("hoist"), lets_[i].value.dtype(), shape, "global");
              allocs_->push_back(H);
              stores.push_back(make_store(H, idx, lets_[i].var));
            }
            Avail a;
            a.H = H;
            for_each_expr(inl_.at(lets_[i].var.get()), [&](const Expr& x) {
              if (auto* l = x.as<LoadNode>()) a.loads.insert(l->buffer.get());
            });
            avail[key] = std::move(a);
            done.insert(key);
            here = true;
          }
        }
        if (here) {
          // Lets left unused (their only users now load a buffer) are dropped.
          LoopKid lk;
          lk.br = K.br;
          lk.inner = K.loops;
          (*kids)[k] = rebuild(lk, lets_, t, stores);
          changed = true;
        }
      }
      // A block writing a buffer an available value reads ends its reuse (the first block
      // itself cannot: its values reading what it writes are impure).
      for (auto it = avail.begin(); it != avail.end();) {
        bool stale = false;
        for (auto* w : K.writes) stale = stale || it->second.loads.count(w);
        it = stale ? avail.erase(it) : std::next(it);
      }
    }
    return changed;
  }

  // Match: For(0, e0) ... For(0, ek) { BlockRealize } with bindings = the loop vars; null
  // when s is not such a nest.
  // With allow_pred, the block may have a `where` (it then only reuses buffers: see process).
  const BlockRealizeNode* match(const Stmt& s, std::vector<const ForNode*>& loops, bool allow_pred = false) {
    auto* br = nest_block(s, &loops);
    if (!br || loops.empty() || (!allow_pred && !is_one(br->predicate))) return nullptr;
    const BlockNode& b = *br->block.get();
    size_t n = b.iter_vars.size();
    if (n != loops.size() || n > 60) return nullptr;
    std::unordered_set<const VarNode*> used_loops;
    for (size_t i = 0; i < n; ++i) {
      const IterVar& iv = b.iter_vars[i];
      bool scan_ok =
          scan_loop_ && iv.kind == IterKind::Scan && loops[0]->loop_var.get() == br->bindings[i].get();
      if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce && !scan_ok) return nullptr;
      auto* bv = br->bindings[i].as<VarNode>();
      const ForNode* loop = nullptr;
      for (auto* f : loops)
        if (f->loop_var.get() == bv) loop = f;
      // Same extent: equal constants, or the same expression of scalar params (symbolic
      // sizes, `for i in serial(n)` around `vi: spatial(n) = i`).
      int64_t e1, e2;
      bool c1 = loop && is_const_int(loop->extent, &e1), c2 = is_const_int(iv.extent, &e2);
      bool same = c1 && c2 ? e1 == e2 : !c1 && !c2 && loop && expr_identical(loop->extent, iv.extent);
      if (!loop || used_loops.count(bv) || !is_zero(loop->min) || !same) return nullptr;
      used_loops.insert(bv);
    }
    return br;
  }

  // enter() for a matched realize: also its predicate over the iter vars (pred_).
  Stmt enter_realize(const BlockRealizeNode* br) {
    std::unordered_map<const VarNode*, Expr> m;
    for (size_t i = 0; i < br->bindings.size(); ++i)
      if (auto* v = br->bindings[i].as<VarNode>()) m[v] = br->block->iter_vars[i].var;
    pred_ = is_one(br->predicate) ? Expr() : substitute(br->predicate, m);
    covers_.clear();
    return enter(*br->block.get());
  }

  // Per-block state of the analyses below (iter vars, dependences, lets); returns the
  // terminal statement after the lets.
  Stmt enter(const BlockNode& b) {
    size_t n = b.iter_vars.size();
    iv_ = &b.iter_vars;
    dep_.clear();
    eff_ = 0;
    for (size_t i = 0; i < n; ++i) {
      dep_[b.iter_vars[i].var.get()] = uint64_t(1) << i;
      int64_t e;
      if (!is_const_int(b.iter_vars[i].extent, &e) || e > 1) eff_ |= uint64_t(1) << i;
    }
    written_.clear();
    scan_mask_ = 0;
    for (size_t i = 0; i < n; ++i)
      if (b.iter_vars[i].kind == IterKind::Scan) scan_mask_ |= uint64_t(1) << i;
    if (scan_loop_) written_ = *scan_loop_;
    stored_buffers(b.body, &written_);
    if (b.init.defined()) stored_buffers(b.init, &written_);
    lets_.clear();
    inl_.clear();
    memo_.clear();
    // Body: lets, then the terminal statement.
    Stmt t = b.body;
    while (auto* l = t.as<LetStmtNode>()) {
      lets_.push_back({l->var, l->value});
      t = l->body;
    }
    let_flops_.clear();
    // A let statement may bind a var that a let expression of an earlier let's value binds
    // too (an if_then_else arm's temps are bound inside the arm and again by the adjoint's
    // statements). info() of that value met the var before dep_ knew it and memoised it
    // with no deps; uses of the statement's var then read those deps from memo_ (a mask
    // `t21 == 0.0` over both iter vars seemed invariant, lost the block's `where`, and its
    // hoist_cond block loaded T0[-4]). The memo is dropped when it holds the var already.
    for (auto& l : lets_) {
      const Info vi = info(l.value);
      if (memo_.count(l.var.get())) memo_.clear();
      dep_[l.var.get()] = vi.deps;
      inl_[l.var.get()] = substitute(l.value, inl_);
      if (info(l.value).flops > 0 || uses_let_flops(l.value)) let_flops_.insert(l.var.get());
    }
    return t;
  }

  Stmt process(const Stmt& s) {
    std::vector<const ForNode*> loops;
    const BlockRealizeNode* br = match(s, loops, true);
    if (!br) return s;
    const BlockNode& b = *br->block.get();
    Stmt t = enter_realize(br);
    bool changed = false;
    std::vector<bool> inv(lets_.size());
    for (size_t i = 0; i < lets_.size(); ++i) {
      uint64_t m;
      inv[i] = candidate(lets_[i].value, &m);
    }
    // Masks over the elements of the buffers they read (cost round 5, comparison pass).
    std::vector<ElemForm> elem(lets_.size());
    if (cond_only_)
      for (size_t i = 0; i < lets_.size(); ++i)
        if (!inv[i]) elem[i] = element_form(lets_[i].value);
    // Maximal invariant sub-expressions of the varying lets and of the store value (their
    // hoisted blocks recompute the invariant lets they need).
    for (size_t i = 0; i < lets_.size(); ++i) {
      if (inv[i] || elem[i].ok) continue;
      Expr nv = rewrite(lets_[i].value, i);
      if (!nv.same_as(lets_[i].value)) changed = true;
      lets_[i].value = nv;
    }
    // The terminal: one store, or several unguarded stores (a block writing the adjoints of
    // several pointwise reads at once).
    auto rewrite_store = [&](const Stmt& x) {
      auto* st = x.as<StoreNode>();
      if (!st) return x;
      Expr nv = rewrite(st->value, lets_.size());
      // The indices too, as the value's loads of the stored buffer: an accumulation
      // `A[I] = A[I] + t` whose I holds a hoisted value (`i32(floor(f32(v) * 0.5))` of a
      // bilinear gather) kept the old I in the store only, so it was no longer of the form
      // `A[I] = A[I] + t` (second order refused it, and it is not an atomic add).
      std::vector<Expr> ni;
      bool idx_changed = false;
      for (auto& i : st->indices) {
        ni.push_back(rewrite(i, lets_.size()));
        idx_changed = idx_changed || !ni.back().same_as(i);
      }
      if (nv.same_as(st->value) && !idx_changed) return x;
      changed = true;
      return make_store(st->buffer, ni, nv);
    };
    if (auto* q = t.as<SeqNode>()) {
      std::vector<Stmt> xs;
      for (auto& x : q->stmts) xs.push_back(rewrite_store(x));
      if (changed) t = make_seq(xs);
    } else {
      t = rewrite_store(t);
    }
    // Invariant lets still used by varying code are materialised whole; lets whose only
    // users were hoisted are dead now (they would still count).
    std::unordered_set<const VarNode*> need;
    for_each_expr(t, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) need.insert(v);
    });
    std::vector<bool> keep(lets_.size(), false);
    for (size_t i = lets_.size(); i-- > 0;) {
      if (!need.count(lets_[i].var.get())) continue;
      keep[i] = true;
      if (inv[i]) {
        lets_[i].value = materialize(lets_[i].value, i);
        changed = true;
      } else if (elem[i].ok) {
        lets_[i].value = materialize_at(elem[i]);
        changed = true;
      }
      collect_vars(lets_[i].value, &need);
    }
    if (!changed) return s;
    for (size_t i = lets_.size(); i-- > 0;)
      if (keep[i]) t = make_let_stmt(lets_[i].var, lets_[i].value, t);
    BlockNode nb = b;
    nb.body = t;
    set_regions(nb);
    Stmt out = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    for (size_t i = loops.size(); i-- > 0;) {
      auto* f = loops[i];
      out = make_for(f->loop_var, f->min, f->extent, f->for_kind, out, f->thread_tag, f->annotations);
    }
    return out;
  }

  bool invariant(uint64_t m) const { return m != kImpure && (m & eff_) != eff_; }

  // A mask over the elements it reads (cost round 5, comparison pass): a bool value with
  // FLOPs whose iter vars occur only in the indices of its loads (`max(E[f, h + r - 1, w + s
  // - 1] * S1[f] + T1[f], 0.0) <= 6.0` in the gathers of a padded depthwise convolution's
  // weights and BN scale). Its template replaces each distinct such index by a var over that
  // dimension of the loaded buffer; when the block's points (under its `where`) map onto every
  // element of that box, and are more than its elements, the template is computed once per
  // element into a `hoist_condN` buffer (the key of key_of's form, so an invariant mask of
  // another block with the same value shares it) and loaded at the indices. The hoisted
  // block evaluates the value at exactly the elements the block evaluates it at.
  struct ElemForm {
    bool ok = false;
    Expr tmpl;                 // the inlined value over canonical vars
    std::vector<Var> canon;    // _h0, _h1, ...
    std::vector<Expr> idx;     // the index each canonical var stands for (block terms)
    std::vector<int64_t> ext;  // its extent
    std::string key;
  };
  ElemForm element_form(const Expr& e) {
    ElemForm f;
    if (!cond_value(e)) return f;
    const Info& in = info(e);
    if (in.guarded || in.deps == kImpure || invariant(in.deps)) return f;
    Expr inlined = substitute(e, inl_);
    std::unordered_map<const ExprNode*, size_t> sz;
    if (tree_size(inlined, sz) > 2000) return f;
    // The distinct indices using iter vars, with the extents of their dimensions.
    auto uses_iv = [&](const Expr& x) {
      bool any = false;
      for_each_expr(x, [&](const Expr& y) {
        if (auto* v = y.as<VarNode>())
          for (auto& iv : *iv_) any = any || iv.var.get() == v;
      });
      return any;
    };
    bool bad = false;
    for_each_expr(inlined, [&](const Expr& y) {
      auto* l = y.as<LoadNode>();
      if (!l || bad) return;
      for (size_t d = 0; d < l->indices.size(); ++d) {
        const Expr& ix = l->indices[d];
        if (!uses_iv(ix)) continue;
        int64_t n;
        if (!is_const_int(l->buffer->shape[d], &n)) {
          bad = true;
          return;
        }
        size_t k = 0;
        while (k < f.idx.size() && !expr_identical(f.idx[k], ix)) ++k;
        if (k == f.idx.size()) {
          f.idx.push_back(ix);
          f.ext.push_back(n);
          f.canon.push_back(Var("_h" + std::to_string(k), ix.dtype()));
        } else if (f.ext[k] != n) {
          bad = true;
        }
      }
    });
    if (bad || f.idx.empty()) return f;
    struct M : IRMutator {
      ElemForm* f;
      Expr mutate(const Expr& x) override {
        if (is_int(x.dtype()))
          for (size_t k = 0; k < f->idx.size(); ++k)
            if (expr_identical(f->idx[k], x)) return f->canon[k];
        return IRMutator::mutate(x);
      }
      using IRMutator::mutate;
    } mut;
    mut.f = &f;
    f.tmpl = mut.mutate(inlined);
    if (uses_iv(f.tmpl)) return f;
    // The block's points (under its `where`) onto the box: in range, onto, more points.
    int64_t total = 1, box = 1;
    std::vector<int64_t> ext;
    for (auto& iv : *iv_) {
      int64_t n;
      if (!is_const_int(iv.extent, &n) || n < 1 || total * n > (int64_t{1} << 16)) return f;
      ext.push_back(n);
      total *= n;
    }
    // Stops as soon as the box has as many elements as the block has points (total <= 2^16):
    // the product of huge dims wrapped (to 0: the bitmap below was empty and written out of
    // its bounds; review r3 F1).
    for (int64_t n : f.ext) {
      if (n < 1 || n >= total) return f;
      box *= n;
      if (box >= total) return f;
    }
    std::vector<bool> hit(box, false);
    int64_t visited = 0, distinct = 0;
    std::unordered_map<const VarNode*, int64_t> env;
    for (auto& iv : *iv_) env[iv.var.get()] = 0;
    for (int64_t p = 0; p < total; ++p) {
      int64_t q = p;
      for (size_t i = iv_->size(); i-- > 0;) {
        env[(*iv_)[i].var.get()] = q % ext[i];
        q /= ext[i];
      }
      if (pred_.defined()) {
        auto r = sched::eval_int(pred_, env);
        if (!r) return f;
        if (!*r) continue;
      }
      ++visited;
      int64_t off = 0;
      for (size_t k = 0; k < f.idx.size(); ++k) {
        auto r = sched::eval_int(f.idx[k], env);
        if (!r || *r < 0 || *r >= f.ext[k]) return f;
        off = off * f.ext[k] + *r;
      }
      if (!hit[off]) ++distinct;
      hit[off] = true;
    }
    if (distinct != box || visited <= box) return f;
    for (int64_t n : f.ext) f.key += std::to_string(n) + ",";
    f.key += "|" + std::string(dtype_name(e.dtype())) + "|" + print_expr(f.tmpl);
    f.ok = true;
    return f;
  }

  Expr materialize_at(const ElemForm& f) {
    auto it = reg_.find(f.key);
    if (it != reg_.end()) return make_load(it->second.H, f.idx);
    std::vector<Expr> shape;
    for (size_t k = 0; k < f.ext.size(); ++k) shape.push_back(make_const(f.idx[k].dtype(), f.ext[k]));
    Buffer H(names_.fresh("hoist_cond"), f.tmpl.dtype(), shape, "global");
    allocs_->push_back(H);
    BlockNode bn;
    bn.name = H->name;
    std::vector<Var> lvars;
    std::vector<Expr> bindings, store_idx;
    std::unordered_map<const VarNode*, Expr> m;
    for (size_t k = 0; k < shape.size(); ++k) {
      DType t = f.idx[k].dtype();
      Var l(names_.fresh("i"), t), w(names_.fresh("h"), t);
      lvars.push_back(l);
      bindings.push_back(l);
      store_idx.push_back(w);
      bn.iter_vars.push_back({w, IterKind::Spatial, shape[k]});
      m[f.canon[k].get()] = w;
    }
    bn.body = make_store(H, store_idx, substitute(f.tmpl, m));
    set_regions(bn);
    Block blk = make_block(std::move(bn));
    Stmt st = make_block_realize(bindings, make_bool(true), blk);
    for (size_t k = shape.size(); k-- > 0;)
      st = make_for(lvars[k], make_const(shape[k].dtype(), 0), shape[k], ForKind::Serial, st);
    pending_.push_back(st);
    Entry en;
    en.H = H;
    en.blk = blk;
    for_each_expr(f.tmpl, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) en.loads.insert(l->buffer.get());
    });
    reg_[f.key] = std::move(en);
    return make_load(H, f.idx);
  }

  // Whether every point of the box of the iter vars in m has a point of the whole box (the
  // same values of those vars) where the block's `where` holds, found by enumeration: constant
  // extents, at most 2^16 points, a predicate of iter vars and integers only (else false).
  bool pred_covers(uint64_t m) {
    if (!pred_.defined() || m == kImpure) return false;
    auto it = covers_.find(m);
    if (it != covers_.end()) return it->second;
    bool ok = true;
    std::vector<int64_t> ext;
    int64_t total = 1;
    for (auto& iv : *iv_) {
      int64_t e;
      if (!is_const_int(iv.extent, &e) || e < 1 || total * e > (int64_t{1} << 16)) {
        ok = false;
        break;
      }
      ext.push_back(e);
      total *= e;
    }
    // D's points in order; for each, the other vars' points until the `where` holds.
    std::vector<size_t> in, out;
    for (size_t i = 0; ok && i < ext.size(); ++i) ((m >> i) & 1 ? in : out).push_back(i);
    std::unordered_map<const VarNode*, int64_t> env;
    for (auto& iv : *iv_) env[iv.var.get()] = 0;
    auto step = [&](const std::vector<size_t>& vars) {  // odometer; false when it wraps
      for (size_t k = vars.size(); k-- > 0;) {
        const VarNode* v = (*iv_)[vars[k]].var.get();
        if (++env[v] < ext[vars[k]]) return true;
        env[v] = 0;
      }
      return false;
    };
    while (ok) {
      bool found = false;
      for (auto& i : out) env[(*iv_)[i].var.get()] = 0;
      do {
        auto r = sched::eval_int(pred_, env);
        if (!r) {
          ok = false;
          break;
        }
        found = *r != 0;
      } while (!found && step(out));
      if (!found) ok = false;
      if (!ok || !step(in)) break;
    }
    return covers_[m] = ok;
  }
  // Whether the hoisted block of the comparison pass's mask e, over the box of the iter vars
  // in m (under the block's `where` when it keeps it: pred_within), loads in bounds at every
  // point: each load whose index evaluates there (iter vars and integers) and whose guards
  // (enclosing if_then_else conditions) do not evaluate to false must be inside its buffer's
  // constant shape. A second line behind the dependences (a mask whose deps were wrong lost
  // its `where` and loaded T0[-4]); an index that does not evaluate (data-dependent) is
  // evaluated by the hoisted block as by the user's one. Enumerated: constant extents, at
  // most 2^16 points (else false: not hoisted).
  bool loads_in_bounds(const Expr& e, const uint64_t deps) {
    uint64_t m = deps;
    struct Site {
      Expr index;
      int64_t ext;
      std::vector<std::pair<Expr, bool>> guards;  // condition, the arm's polarity
    };
    std::vector<Site> sites;
    std::vector<std::pair<Expr, bool>> guards;
    std::function<void(const Expr&)> walk = [&](const Expr& x) {
      if (!x.defined()) return;
      switch (x.kind()) {
        case ExprKind::Load: {
          auto* l = x.as<LoadNode>();
          for (size_t d = 0; d < l->indices.size(); ++d) {
            walk(l->indices[d]);
            int64_t n;
            if (!is_const_int(l->buffer->shape[d], &n)) continue;
            const Expr& ix = l->indices[d];
            int64_t c;
            if (is_const_int(ix, &c) && c >= 0 && c < n) continue;
            bool in_range = false;  // a bare iter var whose extent fits the dimension
            if (auto* v = ix.as<VarNode>())
              for (auto& iv : *iv_)
                if (iv.var.get() == v && is_const_int(iv.extent, &c) && c <= n) in_range = true;
            if (!in_range) sites.push_back({ix, n, guards});
          }
          return;
        }
        case ExprKind::IfThenElse: {
          auto* c = as_select_like(x);
          walk(c->cond);
          guards.push_back({c->cond, true});
          walk(c->t);
          guards.back().second = false;
          walk(c->f);
          guards.pop_back();
          return;
        }
        default: break;
      }
      // The direct children of x (IRVisitor's visit_* call visit() on each child).
      struct Direct : IRVisitor {
        std::vector<Expr>* out;
        bool root = true;
        void visit(const Expr& k) override {
          if (root) {
            root = false;
            IRVisitor::visit(k);
          } else {
            out->push_back(k);
          }
        }
        using IRVisitor::visit;
      } dv;
      std::vector<Expr> kids;
      dv.out = &kids;
      dv.visit(x);
      for (auto& k : kids) walk(k);
    };
    Expr inlined = substitute(e, inl_);
    walk(inlined);
    if (sites.empty()) return true;
    // The box: the iter vars of m and any other the value names (deps under-counted must not
    // leave an index unevaluated).
    for_each_expr(inlined, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>())
        for (size_t i = 0; i < iv_->size(); ++i)
          if ((*iv_)[i].var.get() == v) m |= uint64_t(1) << i;
    });
    std::vector<size_t> dims;
    std::vector<int64_t> ext;
    int64_t total = 1;
    for (size_t i = 0; i < iv_->size(); ++i) {
      if (!((m >> i) & 1)) continue;
      int64_t n;
      if (!is_const_int((*iv_)[i].extent, &n) || n < 1 || total * n > (int64_t{1} << 16)) return false;
      dims.push_back(i);
      ext.push_back(n);
      total *= n;
    }
    const bool keep_pred = pred_.defined() && pred_within(deps);
    std::unordered_map<const VarNode*, int64_t> env;
    for (size_t i : dims) env[(*iv_)[i].var.get()] = 0;
    for (int64_t p = 0; p < total; ++p) {
      int64_t q = p;
      for (size_t k = dims.size(); k-- > 0;) {
        env[(*iv_)[dims[k]].var.get()] = q % ext[k];
        q /= ext[k];
      }
      if (keep_pred) {
        auto r = sched::eval_int(pred_, env);
        if (!r) return false;
        if (!*r) continue;
      }
      for (auto& s : sites) {
        bool reached = true;
        for (auto& [g, pol] : s.guards) {
          auto r = sched::eval_int(g, env);
          if (r && (*r != 0) != pol) reached = false;
        }
        if (!reached) continue;
        auto r = sched::eval_int(s.index, env);
        if (r && (*r < 0 || *r >= s.ext)) return false;
      }
    }
    return true;
  }

  // Whether every iter var the block's `where` uses is among the deps m.
  bool pred_within(uint64_t m) const {
    bool in = true;
    for_each_expr(pred_, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) {
        auto d = dep_.find(v);
        bool iter = false;
        for (auto& iv : *iv_) iter = iter || iv.var.get() == v;
        if (iter && (d == dep_.end() || (d->second & m) != d->second)) in = false;
      }
    });
    return in;
  }

  // Bottom-up facts about a sub-expression, memoised per node (a deep expression, e.g. the
  // sum of N adjoint terms of an N-deep product, must stay linear).
  struct Info {
    int flops = 0;
    bool guarded = false;
    uint64_t deps = 0;  // kImpure: reads a buffer the block writes
  };
  const Info& info(const Expr& e) {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    Info r;
    auto add = [&](const Expr& c) {
      if (!c.defined()) return;
      const Info& ci = info(c);
      r.flops += ci.flops;
      r.guarded = r.guarded || ci.guarded;
      r.deps = (r.deps == kImpure || ci.deps == kImpure) ? kImpure : (r.deps | ci.deps);
    };
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm: break;
      case ExprKind::Var: {
        auto d = dep_.find(static_cast<const VarNode*>(e.get()));
        if (d != dep_.end()) r.deps = d->second;
        break;
      }
      case ExprKind::Load: {
        auto* l = e.as<LoadNode>();
        for (auto& i : l->indices) add(i);
        if (written_.count(l->buffer.get())) r.deps = kImpure;
        break;
      }
      case ExprKind::Binary: {
        auto* b = e.as<BinaryNode>();
        add(b->a);
        add(b->b);
        if (is_float(b->a.dtype())) ++r.flops;
        break;
      }
      case ExprKind::Unary: add(e.as<UnaryNode>()->a); break;
      case ExprKind::Cast: add(e.as<CastNode>()->value); break;
      case ExprKind::Call:
        for (auto& a : e.as<CallNode>()->args) add(a);
        if (is_float(e.dtype())) ++r.flops;
        break;
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* c = as_select_like(e);
        add(c->cond);
        add(c->t);
        add(c->f);
        // An `if_then_else` inside a value is evaluated by the hoisted block as by the user,
        // lazily (its arms only where its condition holds): the value stays hoistable
        // (gru_torch's cell reads `if_then_else(vt > 0, H[vt - 1, 0], 0.0)`); values inside
        // its arms are never taken apart (rewrite, reuse and find_shared stop at it).
        break;
      }
      case ExprKind::Let: {
        auto* l = e.as<LetNode>();
        add(l->value);
        add(l->body);
        r.guarded = true;
        break;
      }
      default: {
        // Anything else (buffer pointers, ...): never hoisted.
        r.guarded = true;
        for_each_expr(e, [&](const Expr& x) {
          if (auto* v = x.as<VarNode>()) {
            auto d = dep_.find(v);
            if (d != dep_.end() && r.deps != kImpure) r.deps |= d->second;
          }
        });
        break;
      }
    }
    return memo_[e.get()] = r;
  }

  // Whether e reads a let of the current block whose value has FLOPs (its own or through
  // the lets it reads).
  bool uses_let_flops(const Expr& e) const {
    bool any = false;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) any = any || let_flops_.count(v);
    });
    return any;
  }

  // A `select` of lets with no FLOPs of its own whose lets have FLOPs (cost round 4): the
  // masked cotangent `select(c0, a0, 0.0)` of a relu, `let c0 = t1 > 0.0` over the recomputed
  // pre-activation `t1`. Its inlined value costs the FLOPs of those lets, which every block
  // computing it pays (film_layer's three gathers), as a tanh's `a0 * (1.0 - t * t)` does.
  bool masked_value(const Expr& e, const Info& i) const {
    return i.flops == 0 && !i.guarded && e.kind() == ExprKind::Select && !no_mask_hoist_ && uses_let_flops(e);
  }

  // A mask (cost round 5): a bool comparison or logic combination of float values with FLOPs
  // (a ReLU6's `t10 <= 6.0` over the recomputed activation). The comparison pass hoists it
  // into a bool buffer when it is invariant: the masked cotangent `select(c, a, 0.0)` keeps
  // its varying `a` (a gather's reduce vars), but the mask is computed once per point of D.
  static bool cond_value(const Expr& e) {
    if (e.dtype() != DType::Bool) return false;
    return e.kind() == ExprKind::Binary || e.kind() == ExprKind::Unary;
  }

  bool candidate(const Expr& e, uint64_t* m) {
    if (cond_only_) {
      if (!cond_value(e)) return false;
    } else if (!is_float(e.dtype()) || e.as<LoadNode>() || e.as<VarNode>()) {
      return false;
    }
    const Info& i = info(e);
    if ((i.flops == 0 && !masked_value(e, i)) || i.guarded) return false;
    *m = i.deps;
    // The comparison pass also takes a mask out of a block whose `where` uses other iter vars
    // when every point of D has a point of the box around it where the `where` holds
    // (pred_covers): the block evaluates the mask at every point of D then, as the hoisted
    // block (without the `where`) does. A gather of a padded convolution's input, whose
    // `where` keeps the taps r, s inside the image, evaluates the activation mask of every
    // input element.
    if (cond_only_)
      return invariant(*m) && (!pred_.defined() || pred_within(*m) || pred_covers(*m)) &&
             loads_in_bounds(e, *m);
    // A block with a `where` visits only part of its box: a value is computed for it under
    // the same `where` (see key_of), so an invariant one only when the predicate uses no
    // iter var outside the value's (causal attention's exp(S[i, j] - M[i]) / Z[i] in the
    // adjoint of V over (j, e, i) under `where j <= i`: computed once per (i, j), not per
    // e), else only as a shared one.
    if (scan_loop_) return invariant(*m) && !(*m & scan_mask_) && (!pred_.defined() || pred_within(*m));
    if (invariant(*m) && (!pred_.defined() || pred_within(*m))) return true;
    return *m != kImpure && !shared_.empty() && shared_.count(key_of(substitute(e, inl_), nullptr));
  }

  // The key under which a value is shared between blocks: the extents of the iter vars it
  // uses (in order of first appearance; *dims gets their indices) and its text with those
  // vars renamed canonically. Values too large to print get a unique key (not shared).
  // In a block with a `where` (pred_), the predicate is part of the key (canonical names
  // too): the buffer then holds the value only where the predicate holds, for blocks with
  // the same predicate; a predicate over iter vars the value does not use gives a unique
  // key (not shared). with_pred = false: the key of the value over the whole box.
  std::string key_of(const Expr& inlined, std::vector<size_t>* dims, bool with_pred = true) {
    std::vector<size_t> local;
    std::vector<size_t>& d = dims ? *dims : local;
    std::unordered_set<size_t> seen;
    for_each_expr(inlined, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>())
        for (size_t i = 0; i < iv_->size(); ++i)
          if ((*iv_)[i].var.get() == v && !seen.count(i)) {
            seen.insert(i);
            d.push_back(i);
          }
    });
    std::unordered_map<const VarNode*, Expr> canon_map;
    std::string key;
    for (size_t k = 0; k < d.size(); ++k) {
      const IterVar& iv = (*iv_)[d[k]];
      canon_map[iv.var.get()] = Var("_h" + std::to_string(k), iv.var.dtype());
      key += print_expr(iv.extent) + ",";
    }
    std::unordered_map<const ExprNode*, size_t> sz;
    if (tree_size(inlined, sz) > 4000)
      return "#" + std::to_string(reg_.size()) + "#" + std::to_string(++unique_);
    std::string where;
    if (with_pred && pred_.defined()) {
      bool inside = true;
      for_each_expr(pred_, [&](const Expr& x) {
        if (auto* v = x.as<VarNode>())
          for (auto& iv : *iv_)
            if (iv.var.get() == v && !canon_map.count(v)) inside = false;
      });
      if (!inside) return "#" + std::to_string(reg_.size()) + "#" + std::to_string(++unique_);
      where = "|where " + print_expr(substitute(pred_, canon_map));
    }
    return key + "|" + std::string(dtype_name(inlined.dtype())) + "|" +
           print_expr(substitute(inlined, canon_map)) + where;
  }

  // Values over the whole iteration space (not invariant) that two or more blocks compute:
  // softmax written without an `exp` buffer recomputes exp(X - M) in the forward sum and in
  // five adjoint blocks. Such a value is computed once into a buffer like an invariant one.
  // Only the outermost shared value of a nest is kept (exp(X - M), not also X - M inside it).
  void find_shared(const std::vector<Stmt>& stmts) {
    std::unordered_map<std::string, int> blocks;                 // key -> number of blocks computing it
    std::vector<std::vector<std::pair<std::string, bool>>> occ;  // per block: key, nested
    std::unordered_map<std::string, int> inv_blocks;             // invariant key -> blocks
    std::unordered_set<std::string> nested_inv;                  // inside an invariant value
    // Visits the maximal-first candidates of an inlined value; `f` returns whether to stop.
    std::function<void(const Expr&, const std::function<bool(const Expr&)>&)> walk =
        [&](const Expr& e, const std::function<bool(const Expr&)>& f) {
          if (!e.defined() || e.kind() == ExprKind::Let) return;
          uint64_t m;
          if (is_float(e.dtype()) && !e.as<LoadNode>() && !e.as<VarNode>()) {
            const Info& i = info(e);
            m = i.deps;
            if (i.flops > 0 && !i.guarded && m != kImpure && !invariant(m) && f(e)) return;
          }
          if (e.kind() == ExprKind::IfThenElse) return;  // taken whole or not at all
          switch (e.kind()) {
            case ExprKind::Binary:
              walk(e.as<BinaryNode>()->a, f);
              walk(e.as<BinaryNode>()->b, f);
              break;
            case ExprKind::Unary: walk(e.as<UnaryNode>()->a, f); break;
            case ExprKind::Cast: walk(e.as<CastNode>()->value, f); break;
            case ExprKind::Call:
              for (auto& a : e.as<CallNode>()->args) walk(a, f);
              break;
            case ExprKind::Select:
              walk(as_select_like(e)->t, f);
              walk(as_select_like(e)->f, f);
              break;
            default: break;
          }
        };
    // A shared value gets a buffer of its block's box: never larger than 4x the largest
    // buffer the function already touches (a 7-d convolution box would be far larger; the
    // n x n scores of attention over n x d inputs, n <= 4d, are not), and only for constant
    // boxes.
    constexpr int64_t kMaxBoxFactor = 4;
    // Saturating: a buffer of 2^60 x 16 elements must not wrap around (UBSan, CostR19).
    auto sat_mul = [](int64_t a, int64_t b) {
      int64_t r;
      return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
    };
    int64_t max_numel = 0;
    for (auto& st : stmts)
      for_each_expr(st, [&](const Expr& x) {
        auto* l = x.as<LoadNode>();
        if (!l) return;
        int64_t n = 1, e;
        for (auto& d : l->buffer->shape) n = is_const_int(d, &e) ? sat_mul(n, e) : 0;
        max_numel = std::max(max_numel, n);
      });
    // The inlined values of a matched block's lets and stores (small blocks only).
    auto roots = [&](const Stmt& s, std::vector<Expr>* out) {
      std::vector<const ForNode*> loops;
      const BlockRealizeNode* br = match(s, loops, true);
      if (!br) return false;
      int64_t box = 1, e;
      for (auto& iv : br->block->iter_vars) {
        if (!is_const_int(iv.extent, &e) || sat_mul(box, e) > sat_mul(kMaxBoxFactor, max_numel)) return false;
        box = sat_mul(box, e);
      }
      Stmt t = enter_realize(br);
      std::vector<Stmt> terms;
      if (auto* q = t.as<SeqNode>())
        terms = q->stmts;
      else
        terms.push_back(t);
      for (auto& x : terms)
        if (auto* st = x.as<StoreNode>()) out->push_back(substitute(st->value, inl_));
      std::unordered_map<const ExprNode*, size_t> sz;
      size_t total = 0;
      for (auto& e : *out) total += tree_size(e, sz);
      return total <= 2000;
    };
    // Pass 1: which keys occur in which blocks.
    std::vector<std::vector<Expr>> all(stmts.size());
    for (size_t k = 0; k < stmts.size(); ++k) {
      if (!roots(stmts[k], &all[k])) {
        all[k].clear();
        continue;
      }
      // key -> the distinct texts computing it here: one block computing a value at two index
      // maps of its iter vars (`f(A0[i, j], A0[j, i])`'s local derivatives, gathered into
      // A0_grad[i, j] at (i, j) and (j, i): tvm_basic_cubic) counts as two blocks, so that
      // the value is computed once per point of its box and loaded at both maps (cost round 2;
      // equal keys have equal extents, so both maps visit the same box).
      std::unordered_map<std::string, std::unordered_set<std::string>> here;
      for (auto& r : all[k])
        walk(r, [&](const Expr& e) {
          here[key_of(e, nullptr)].insert(print_expr(e));
          return false;
        });
      for (auto& [key, texts] : here) blocks[key] += texts.size() >= 2 ? 2 : 1;
      // Invariant values and the values inside them (helper round 17): a value inside a
      // hoisted invariant value that another block computes too (gcn_norm's rsqrt(Deg[s] *
      // Deg[d]) inside the factor Ew[e] * rsqrt(..) of one adjoint, alone in another, and
      // its product Deg[s] * Deg[d] in a third) gets its buffer first and the outer value
      // loads it (reuse), instead of each hoisted block recomputing it.
      std::unordered_set<std::string> inv_here;
      std::function<void(const Expr&, bool)> inv_walk = [&](const Expr& e, bool in_inv) {
        if (!e.defined() || e.kind() == ExprKind::Let) return;
        bool inv = false;
        if (is_float(e.dtype()) && !e.as<LoadNode>() && !e.as<VarNode>()) {
          const Info& i = info(e);
          if (i.flops > 0 && !i.guarded && i.deps != kImpure && invariant(i.deps)) {
            std::string key = key_of(e, nullptr);
            inv_here.insert(key);
            if (in_inv) nested_inv.insert(key);
            inv = true;
          }
        }
        if (e.kind() == ExprKind::IfThenElse) return;
        switch (e.kind()) {
          case ExprKind::Binary:
            inv_walk(e.as<BinaryNode>()->a, in_inv || inv);
            inv_walk(e.as<BinaryNode>()->b, in_inv || inv);
            break;
          case ExprKind::Unary: inv_walk(e.as<UnaryNode>()->a, in_inv || inv); break;
          case ExprKind::Cast: inv_walk(e.as<CastNode>()->value, in_inv || inv); break;
          case ExprKind::Call:
            for (auto& a : e.as<CallNode>()->args) inv_walk(a, in_inv || inv);
            break;
          case ExprKind::Select:
            inv_walk(as_select_like(e)->t, in_inv || inv);
            inv_walk(as_select_like(e)->f, in_inv || inv);
            break;
          default: break;
        }
      };
      if (!pred_.defined())
        for (auto& r : all[k]) inv_walk(r, false);
      for (auto& key : inv_here) ++inv_blocks[key];
    }
    for (auto& key : nested_inv)
      if (inv_blocks[key] >= 2 && !no_nested_) inner_inv_.insert(key);
    // Pass 2: a shared key is kept where some occurrence is not inside another shared one.
    // A value inside two or more different kept values (gru_torch's gate activations inside
    // the cotangent terms a * (1 - n * n) and a * n of its 20 deferred gathers) is kept too:
    // each kept value's block would recompute it otherwise (materialize loads it).
    std::unordered_map<std::string, std::unordered_set<std::string>> inside;
    for (size_t k = 0; k < stmts.size(); ++k) {
      if (all[k].empty()) continue;
      std::vector<Expr> again;
      roots(stmts[k], &again);  // the block's state (iter vars, lets) for key_of
      for (auto& r : again)
        walk(r, [&](const Expr& e) {
          std::string key = key_of(e, nullptr);
          auto it = blocks.find(key);
          if (it == blocks.end() || it->second < 2) return false;
          shared_.insert(key);
          bool root = true;
          walk(e, [&](const Expr& x) {
            if (!root) inside[key_of(x, nullptr)].insert(key);
            root = false;
            return false;
          });
          return true;  // nested shared values are computed inside this one
        });
    }
    for (auto& [key, outer] : inside)
      if (outer.size() >= 2) shared_.insert(key);
  }

  // Replaces the maximal hoistable sub-expressions of e (lets before index `nlets` visible).
  Expr rewrite(const Expr& e, size_t nlets) {
    struct M : IRMutator {
      Hoister* h;
      size_t nlets;
      Expr mutate(const Expr& e) override {
        if (e.kind() == ExprKind::Let) return e;
        uint64_t m;
        if (h->candidate(e, &m)) return h->materialize(e, nlets);
        if (e.kind() == ExprKind::IfThenElse) return e;  // taken whole or not at all
        return IRMutator::mutate(e);
      }
      using IRMutator::mutate;
    } mut;
    mut.h = this;
    mut.nlets = nlets;
    return mut.mutate(e);
  }

  // e (in the current block's terms) with its sub-values that are already in a buffer
  // (reg_, still valid) replaced by loads of it. With nlets (materialize of e, lets before
  // index nlets visible), its proper sub-values that are shared values (shared_) get their
  // buffer first, and are loaded.
  // `base`: the name of the buffer being materialized; the buffers of the sub-values that
  // the cost round 4 rules (inner_invariant, fewer_deps) add are named after it (`hoist9_p0`).
  // These rules run in the second pass only (hoist_invariants), which is what keeps the
  // first pass's hoistN names stable; the `_p` names keep the second pass's own numbering
  // readable.
  Expr reuse(const Expr& e, size_t nlets = SIZE_MAX, const std::string& base = "") {
    if (reg_.empty() && (nlets == SIZE_MAX || shared_.empty())) return e;
    struct M : IRMutator {
      Hoister* h;
      size_t nlets;
      const ExprNode* root;
      uint64_t root_deps;
      std::string base;
      Expr mutate(const Expr& x) override {
        if (x.kind() == ExprKind::Let) return x;
        if (is_float(x.dtype()) && !x.as<LoadNode>() && !x.as<VarNode>()) {
          const Info& i = h->info(x);
          if (nlets != SIZE_MAX && !h->scan_loop_ && x.get() != root && i.flops > 0 && !i.guarded &&
              i.deps != kImpure && !h->invariant(i.deps) &&
              h->shared_.count(h->key_of(substitute(x, h->inl_), nullptr)))
            return h->materialize(x, nlets);
          if (nlets != SIZE_MAX && x.get() != root && i.flops > 0 && !i.guarded && i.deps != kImpure &&
              ((h->invariant(i.deps) && h->inner_invariant(x)) || h->fewer_deps(i.deps, root_deps)))
            return h->materialize(x, nlets, base + "_p");
          if (i.flops > 0 && !i.guarded && i.deps != kImpure) {
            std::vector<size_t> dims;
            auto it = h->lookup(substitute(x, h->inl_), &dims);
            if (it != h->reg_.end()) {
              std::vector<Expr> idx;
              for (size_t d : dims) idx.push_back((*h->iv_)[d].var);
              if (dims.empty()) idx.push_back(make_int(0));
              return make_load(it->second.H, idx);
            }
          }
        }
        if (x.kind() == ExprKind::IfThenElse) return x;  // taken whole or not at all
        return IRMutator::mutate(x);
      }
      using IRMutator::mutate;
    } mut;
    mut.h = this;
    mut.nlets = nlets;
    mut.root = e.get();
    mut.root_deps = info(e).deps;
    mut.base = base;
    return mut.mutate(e);
  }

  // Whether a sub-value with deps m of a value with deps outer that materialize computes
  // depends on strictly fewer iter vars (of extent > 1): its own buffer computes it once per
  // point of a smaller box (helper round 17: the per-edge factor `rsqrt(..) * -0.5 / (..)`
  // inside gcn_norm's shared cotangent term over (edge, column) was computed per column).
  // Not in scan loops nor under a `where` (materialize needs the predicate within the dims).
  bool fewer_deps(uint64_t m, uint64_t outer) const {
    if (no_nested_ || scan_loop_ || pred_.defined() || m == kImpure || outer == kImpure) return false;
    m &= eff_;
    outer &= eff_;
    return m != outer && (m & ~outer) == 0;
  }

  // Whether e (an invariant value of the current block) is one that find_shared wants in a
  // buffer of its own because hoisted values of two or more blocks contain it (inner_inv_).
  bool inner_invariant(const Expr& e) {
    return !inner_inv_.empty() && !scan_loop_ && !pred_.defined() &&
           inner_inv_.count(key_of(substitute(e, inl_), nullptr));
  }

  // The buffer holding an inlined value for the current block: computed under the same
  // predicate, or (in a block with a `where`) over the whole box. *dims as key_of.
  std::unordered_map<std::string, Entry>::iterator lookup(const Expr& inlined, std::vector<size_t>* dims) {
    auto it = reg_.find(key_of(inlined, dims));
    if (it == reg_.end() && pred_.defined()) it = reg_.find(key_of(inlined, nullptr, false));
    return it;
  }

  // A value that materialize would give a buffer of its own without the cost round 4 rules,
  // already computed as a sub-value by them (inner_invariant, fewer_deps), takes a hoistN
  // name at that point (a `_p` name is only for values inside another). Second pass only:
  // the first pass's names do not depend on it. Both nodes were made by this pass and
  // nothing outside it refers to them yet, so they are renamed in place.
  void rename_nested(std::unordered_map<std::string, Entry>::iterator it) {
    if (!it->second.nested) return;
    std::string n = names_.fresh("hoist");
    const_cast<BufferNode*>(it->second.H.get())->name = n;
    const_cast<BlockNode*>(it->second.blk.get())->name = n;
    it->second.nested = false;
  }
  void rename_nested(const Expr& value) {
    std::vector<size_t> dims;
    auto it = lookup(substitute(value, inl_), &dims);
    if (it != reg_.end()) rename_nested(it);
  }

  Expr materialize(const Expr& e, size_t nlets, std::string name_base = "hoist") {
    // A masked value (cost round 4) takes a name family of its own, so that the hoistN
    // numbers of the other values stay as they were.
    if (name_base == "hoist" && info(e).flops == 0) name_base = "hoist_mask";
    // The comparison pass (cost round 5) names its bool buffers `hoist_condN`.
    if (cond_only_) name_base = "hoist_cond";
    // A mask taken out of a block whose `where` uses other iter vars (pred_covers) is
    // computed over the whole box of D, without the `where`.
    Expr saved_pred = pred_;
    if (cond_only_ && pred_.defined() && !pred_within(info(e).deps)) pred_ = Expr();
    struct Restore {
      Expr& p;
      Expr v;
      ~Restore() { p = v; }
    } restore{pred_, saved_pred};
    Expr inlined = substitute(e, inl_);
    std::vector<size_t> dims;
    auto it = lookup(inlined, &dims);
    std::vector<Expr> idx;
    for (size_t d : dims) idx.push_back((*iv_)[d].var);
    if (dims.empty()) idx.push_back(make_int(0));
    if (it != reg_.end()) {
      if (name_base == "hoist") rename_nested(it);
      return make_load(it->second.H, idx);
    }
    std::string key = key_of(inlined, nullptr);

    std::vector<Expr> shape;
    for (size_t d : dims) shape.push_back((*iv_)[d].extent);
    if (dims.empty()) shape.push_back(make_int(1));
    Buffer H(names_.fresh(name_base), e.dtype(), shape, "global");
    allocs_->push_back(H);
    // The block over D: fresh loop and iter vars, copies of the lets the value needs.
    std::unordered_map<const VarNode*, Expr> m;
    BlockNode bn;
    bn.name = H->name;
    std::vector<Var> lvars;
    std::vector<Expr> bindings, store_idx;
    for (size_t k = 0; k < shape.size(); ++k) {
      // Loop and iter var in the dtype of the iter var they stand for (the block's `where`
      // over i64 vars is rewritten onto the loop vars).
      DType t = dims.empty() ? DType::I32 : (*iv_)[dims[k]].var.dtype();
      Var l(names_.fresh("i"), t), w(names_.fresh("h"), t);
      lvars.push_back(l);
      bindings.push_back(l);
      store_idx.push_back(w);
      bn.iter_vars.push_back({w, IterKind::Spatial, shape[k]});
      if (!dims.empty()) m[(*iv_)[dims[k]].var.get()] = w;
    }
    // Values already in a buffer are loaded, not recomputed (a shared exp(X - M) inside a
    // hoisted a / S * exp(X - M)); the lets are collected after that, so dead ones drop out.
    Expr ev = reuse(e, nlets, H->name);
    std::unordered_set<const VarNode*> need;
    collect_vars(ev, &need);
    std::vector<size_t> used;
    std::unordered_map<size_t, Expr> let_value;
    // An invariant let that a shared (varying) value needs gets its own buffer first, as it
    // would in the block itself: a bilinear gather's shared `a * (s - f32(i32(floor(s))))`
    // over (c, h, w) recomputed `floor(s)` (invariant over c, w) at every point.
    const bool e_invariant = invariant(info(e).deps);
    // The lets e needs as written: one that the old rule below would materialize but that a
    // sub-value's buffer (round 17) holds now keeps the hoistN name it had (rename_nested).
    std::unordered_set<const VarNode*> need_written;
    collect_vars(e, &need_written);
    for (size_t i = nlets; i-- > 0;) {
      if (need_written.count(lets_[i].var.get())) collect_vars(lets_[i].value, &need_written);
      if (!need.count(lets_[i].var.get())) {
        uint64_t mv = 0;
        if (need_written.count(lets_[i].var.get()) && name_base == "hoist" &&
            candidate(lets_[i].value, &mv) && (!e_invariant || !invariant(mv)))
          rename_nested(lets_[i].value);
        continue;
      }
      used.push_back(i);
      uint64_t mv = 0;
      // A let holding a shared value (or with shared values inside) loads their buffers too.
      if (candidate(lets_[i].value, &mv) && (!e_invariant || !invariant(mv)))
        let_value[i] = materialize(lets_[i].value, i);
      else if (candidate(lets_[i].value, &mv) &&
               (inner_invariant(lets_[i].value) || fewer_deps(mv, info(e).deps)))
        let_value[i] = materialize(lets_[i].value, i, H->name + "_p");
      else
        let_value[i] = reuse(lets_[i].value, i);
      collect_vars(let_value[i], &need);
    }
    std::unordered_map<const VarNode*, Var> copy;
    for (size_t j = used.size(); j-- > 0;) {
      const Binding& l = lets_[used[j]];
      Var c(names_.fresh(l.var.name()), l.var.dtype());
      copy[l.var.get()] = c;
      m[l.var.get()] = c;
    }
    Stmt body = make_store(H, store_idx, substitute_renaming(ev, m, copy));
    for (size_t i : used)
      body = make_let_stmt(copy.at(lets_[i].var.get()), substitute_renaming(let_value.at(i), m, copy), body);
    bn.body = body;
    set_regions(bn);
    // Under the user block's `where` (over the iter vars of D: checked by key_of), on the
    // new loop vars.
    Expr pred = make_bool(true);
    if (pred_.defined()) {
      std::unordered_map<const VarNode*, Expr> to_loop;
      for (size_t k = 0; k < dims.size(); ++k) to_loop[(*iv_)[dims[k]].var.get()] = lvars[k];
      pred = substitute(pred_, to_loop);
    }
    Block blk = make_block(std::move(bn));
    Stmt st = make_block_realize(bindings, pred, blk);
    for (size_t k = shape.size(); k-- > 0;)
      st = make_for(lvars[k], make_const(shape[k].dtype(), 0), shape[k], ForKind::Serial, st);
    pending_.push_back(st);
    Entry en;
    en.H = H;
    en.nested = name_base.size() > 2 && name_base.compare(name_base.size() - 2, 2, "_p") == 0;
    en.blk = blk;
    for_each_expr(inlined, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) en.loads.insert(l->buffer.get());
    });
    reg_[key] = std::move(en);
    return make_load(H, idx);
  }

  NameGen& names_;
  std::vector<Buffer>* allocs_;
  std::unordered_map<std::string, Entry> reg_;
  std::unordered_set<std::string> shared_;  // keys of values several blocks compute (find_shared)
  // Keys of invariant values inside a hoisted invariant value that two or more blocks compute
  // (find_shared): materialize gives them a buffer first.
  std::unordered_set<std::string> inner_inv_;
  // TIRC_AD_NO_NESTED_HOIST=1: neither inner_inv_ nor fewer_deps (to measure).
  const bool no_nested_;
  const bool cond_only_;                       // cost round 5: the comparison pass
  std::unordered_map<uint64_t, bool> covers_;  // pred_covers of the current block
  std::vector<Stmt> out_, pending_;
  std::vector<Stmt> holder_;  // nests built for match() whose nodes the analyses point into
  const std::vector<IterVar>* iv_ = nullptr;
  std::unordered_map<const VarNode*, uint64_t> dep_;
  uint64_t eff_ = 0;
  std::unordered_set<const BufferNode*> written_;
  Expr pred_;  // the current block's `where` over its iter vars (undefined: none)
  // In process_scan_loop: the buffers the scan loop writes (values reading them stay), and
  // the current block's scan iter vars (values using them stay).
  const std::unordered_set<const BufferNode*>* scan_loop_ = nullptr;
  uint64_t scan_mask_ = 0;
  std::vector<Binding> lets_;
  std::unordered_map<const VarNode*, Expr> inl_;
  std::unordered_map<const ExprNode*, Info> memo_;
  // Lets of the current block whose values have FLOPs (directly or through other lets).
  std::unordered_set<const VarNode*> let_flops_;
  const bool no_mask_hoist_;  // masked_value off
  size_t unique_ = 0;
};

}  // namespace

std::vector<Stmt> hoist_invariants(const std::vector<Stmt>& stmts, NameGen& names,
                                   std::vector<Buffer>* allocs) {
  // Two passes (cost round 4). Schedules of F_grad name the hoisted blocks (`hoist3`), and the
  // names are numbered in the order the blocks are created, so a rule that creates a block
  // earlier renumbers the later ones. The first pass runs the rules of the earlier rounds
  // (the names schedules were written against); the second pass runs all the rules on its
  // result: the values it finds (a sub-value of a hoisted value over fewer iter vars, an
  // invariant value inside the hoisted values of two blocks, a masked cotangent) get buffers
  // numbered after the first pass's, whose blocks keep their names and values (a block may
  // load a new buffer instead of recomputing a sub-value). Each pass only replaces values by
  // loads of buffers computing them once, so FLOPs never increase.
  // The second pass is off unless TIRC_AD_NESTED_HOIST=1: the block names hold, but the
  // blocks it adds and the loads it puts into first-pass blocks break hand-written schedules
  // of F_grad all the same (tests/zoo/grad_sched16/batch_norm_gpu.tir: a new block's loops
  // are bound to no GPU thread; grad_sched17/rms_norm.tir: reverse_compute_at of hoist0,
  // which now reads a new buffer). Turning it on by default needs those schedules updated.
  Hoister h(names, allocs, false);
  std::vector<Stmt> out = h.run(stmts);
  const char* on = std::getenv("TIRC_AD_NESTED_HOIST");
  if (on && std::string(on) == "1") {
    Hoister h2(names, allocs, true);
    out = h2.run(out);
  }
  // Cost round 5, last so that every earlier name stays: invariant masks (comparisons with
  // FLOPs) into bool buffers `hoist_condN`. Its blocks only read what the blocks they serve
  // read (first-pass buffers included), and those blocks only lose FLOPs.
  if (std::getenv("TIRC_AD_NO_COND_HOIST")) return out;
  Hoister h3(names, allocs, false, true);
  return h3.run(out);
}

}  // namespace tirc::ad

// A `parallel` loop written in a script that feeds a block's reduce, scan or opaque iter var.
//
// Those iter vars are ordered (scan, opaque) or update one element from every iteration
// (reduce): the interpreter runs the loop in order, and compiled code running its iterations
// on the thread pool raced (a sum of 1e6 ones over `for k in parallel(1e6)` bound to
// `vk: reduce` gave 750000; prefix sums over a scan gave garbage). The `parallel` schedule
// primitive refuses such loops (transforms/schedule/deps.h, check_loop_bindings); a script can
// still write them, and TVMScript accepts them too. Here they run serially: the results are
// the interpreter's, and what the author asked for (the loop kind) is kept in the printed
// module. Blocks annotated "atomic" (autodiff's scatter-adds) stay parallel: codegen makes their
// updates atomic. The same dependence tracking tells which atomic blocks no concurrent loop
// reaches through an ordered iter var: drop_unraced_atomic makes their stores plain.
#include <cstdlib>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/bounds.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using VarSet = std::set<const VarNode*>;

// Tracks which loops of the kinds in `kinds` each variable depends on: directly, through
// `let`s, the bounds of inner loops (`for i in serial(j * 4, j * 4 + 4)` depends on j) or the
// spatial iter vars of enclosing blocks; and which such loops enclose the current statement.
class LoopDeps : public IRVisitor {
 protected:
  explicit LoopDeps(std::set<ForKind> kinds) : kinds_(std::move(kinds)) {}
  void visit_for(const ForNode* n) override {
    VarSet d = loops_of(n->min);
    VarSet e = loops_of(n->extent);
    d.insert(e.begin(), e.end());
    const bool concurrent = kinds_.count(n->for_kind) > 0;
    if (concurrent) d.insert(n->loop_var.get());
    if (!d.empty()) deps_[n->loop_var.get()] = d;
    if (concurrent) enclosing_.insert(n->loop_var.get());
    IRVisitor::visit_for(n);
    if (concurrent) enclosing_.erase(n->loop_var.get());
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    deps_[n->var.get()] = loops_of(n->value);
    IRVisitor::visit_let_stmt(n);
  }
  // The loops the non-spatial bindings of the block depend on; records its spatial vars'
  // (their union in *spatial when given).
  VarSet enter_block(const BlockRealizeNode* n, VarSet* spatial = nullptr) {
    const BlockNode& b = *n->block.get();
    VarSet ordered;
    for (size_t i = 0; i < b.iter_vars.size() && i < n->bindings.size(); ++i) {
      VarSet d = loops_of(n->bindings[i]);
      if (b.iter_vars[i].kind == IterKind::Spatial) {
        if (spatial) spatial->insert(d.begin(), d.end());
        deps_[b.iter_vars[i].var.get()] = d;
      } else {
        ordered.insert(d.begin(), d.end());
      }
    }
    return ordered;
  }
  VarSet enclosing_;  // loops of the kinds around the statement being visited

 private:
  VarSet loops_of(const Expr& e) const {
    VarSet out;
    if (deps_.empty()) return out;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>())
        if (auto it = deps_.find(v); it != deps_.end()) out.insert(it->second.begin(), it->second.end());
    });
    return out;
  }
  std::set<ForKind> kinds_;
  std::unordered_map<const VarNode*, VarSet> deps_;
};

// Finds the parallel loops whose variable reaches a non-spatial binding of a block that is
// not atomic, and the vectorized loops that reach one of any block: vector lanes have no
// atomic update, and a scatter `W[I[vk]] += ...` over a script's vectorized reduce loop lost
// the updates of lanes that met (the schedule's vectorize refuses such loops).
class OrderedParallelFinder : public LoopDeps {
 public:
  OrderedParallelFinder() : LoopDeps({ForKind::Parallel, ForKind::Vectorized}) {}
  VarSet serial;  // loop vars of parallel / vectorized loops to run serially

 protected:
  void visit_for(const ForNode* n) override {
    if (n->for_kind == ForKind::Vectorized) vectorized_.insert(n->loop_var.get());
    LoopDeps::visit_for(n);
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    VarSet d = enter_block(n);
    const bool atomic = n->block->annotations.count("atomic") > 0;
    for (auto* l : d)
      if (!atomic || vectorized_.count(l)) serial.insert(l);
    IRVisitor::visit_block_realize(n);
  }

 private:
  VarSet vectorized_;
};

// Finds the atomic blocks whose updates cannot race without the atomics. Concurrent loops are
// parallel, thread-bound and vectorized ones (vector lanes scatter too). A block qualifies when
// no concurrent loop reaches its reduce / scan / opaque vars, every concurrent loop around it
// reaches one of its spatial vars (else every iteration runs the same instances), and every
// other block under a concurrent loop around it that writes a buffer it writes is proven to
// write other elements in other iterations of each such loop (else another block's atomic
// adds, or plain stores, could meet its own from other iterations). The proof (round 18, the
// zero fill of a scatter's column tile moved into the scatter's parallel loop kept every add
// atomic: 7x slower with 2 threads, bench/README.md "Codegen r18"): some dimension of the
// buffer is stored by both blocks, at every store, at `k * l + f` with one constant k != 0
// for the loop var l, f free of l, and all the f's together within fewer than |k| values:
// iteration l touches only [k * l + lo, k * l + lo + |k|).
class UnracedAtomicFinder : public LoopDeps {
 public:
  UnracedAtomicFinder() : LoopDeps({ForKind::Parallel, ForKind::ThreadBinding, ForKind::Vectorized}) {}

  std::set<const BlockNode*> unraced() {
    std::set<const BlockNode*> out;
    for (size_t ci = 0; ci < blocks_.size(); ++ci) {
      const Info& c = blocks_[ci];
      if (!c.candidate) continue;
      bool alone = true;
      for (size_t oi = 0; oi < blocks_.size() && alone; ++oi) {
        const Info& o = blocks_[oi];
        if (oi == ci) continue;
        for (auto* b : o.writes) {
          if (!c.writes.count(b)) continue;
          for (auto* l : o.enclosing)
            if (c.enclosing.count(l) && !partitioned(ci, oi, b, l)) alone = false;
        }
      }
      if (alone) out.insert(c.block);
    }
    return out;
  }

 protected:
  void visit_for(const ForNode* n) override {
    loop_vars_[n->loop_var.get()] = n->loop_var;
    az_.bind(n->loop_var, in_context(n->min), in_context(n->extent));
    LoopDeps::visit_for(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    subst_[n->var.get()] = in_context(n->value);
    LoopDeps::visit_let_stmt(n);
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    VarSet spatial;
    VarSet ordered = enter_block(n, &spatial);
    Info info{n->block.get(), enclosing_, {}, false, false};
    for (auto& w : n->block->writes) info.writes.insert(w.buffer.get());
    if (n->block->annotations.count("atomic") && ordered.empty()) {
      info.candidate = true;
      for (auto* l : enclosing_) info.candidate = info.candidate && spatial.count(l);
    }
    const BlockNode& b = *n->block.get();
    for (size_t i = 0; i < b.iter_vars.size() && i < n->bindings.size(); ++i)
      subst_[b.iter_vars[i].var.get()] = in_context(n->bindings[i]);
    blocks_.push_back(std::move(info));
    open_.push_back(blocks_.size() - 1);
    IRVisitor::visit_block_realize(n);
    open_.pop_back();
  }
  void visit_store(const StoreNode* n) override {
    std::vector<Expr> idx;
    for (auto& i : n->indices) idx.push_back(in_context(i));
    // A store counts as a write of every enclosing block, declared or not, and as a store of
    // each for the partition proof: codegen makes every store inside an atomic block atomic, so
    // dropping a block's atomics drops those of the blocks nested in it too (review of round 18:
    // a nested block's adds meeting another block's were left plain).
    for (size_t b : open_) {
      blocks_[b].writes.insert(n->buffer.get());
      stores_.push_back({b, n->buffer.get(), idx});
    }
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    for (size_t b : open_) blocks_[b].opaque = true;  // writes we cannot see
    IRVisitor::visit_buffer_ptr(n);
  }

 private:
  struct Info {
    const BlockNode* block;
    VarSet enclosing;
    std::set<const BufferNode*> writes;
    bool candidate, opaque;
  };
  struct StoreAt {
    size_t block;
    const BufferNode* buffer;
    std::vector<Expr> indices;  // in loop vars and params
  };
  Expr in_context(const Expr& e) const { return subst_.empty() ? e : substitute(e, subst_); }
  // The stores of blocks a and o to b are at disjoint elements in different iterations of l.
  bool partitioned(size_t a, size_t o, const BufferNode* b, const VarNode* lv) {
    // TIRC_LOWER_NO_PARTITION_PROOF=1: as before round 18 (bench/bench_codegen_r18.cpp).
    if (blocks_[a].opaque || blocks_[o].opaque || !loop_vars_.count(lv) ||
        std::getenv("TIRC_LOWER_NO_PARTITION_PROOF"))
      return false;
    Var l = loop_vars_.at(lv);
    std::vector<const StoreAt*> st;
    for (auto& s : stores_)
      if (s.buffer == b && (s.block == a || s.block == o)) st.push_back(&s);
    if (st.empty()) return false;
    for (size_t d = 0; d < st[0]->indices.size(); ++d) {
      int64_t k = 0, lo = Interval::kPosInf, hi = Interval::kNegInf;
      bool ok = true;
      for (const StoreAt* s : st) {
        if (d >= s->indices.size()) ok = false;
        if (!ok) break;
        const Expr& e = s->indices[d];
        auto lf = linear_form(e, {l});
        SumForm sf = to_sum_form(e);
        // The run-time index is its mathematical value (no wrap), linear in l.
        if (!lf || lf->coeffs[0] == 0 || (k != 0 && lf->coeffs[0] != k) ||
            !interval_fits(sum_form_bound(sf, az_.ranges()), sf.dtype)) {
          ok = false;
          break;
        }
        k = lf->coeffs[0];
        LinearForm rest = *lf;
        rest.coeffs[0] = 0;
        Interval fb = az_.const_bound(from_linear_form(rest, {l}));
        if (!fb.has_lower() || !fb.has_upper()) {
          ok = false;
          break;
        }
        lo = std::min(lo, fb.lo);
        hi = std::max(hi, fb.hi);
      }
      if (ok && k != 0 && k != INT64_MIN && static_cast<__int128>(hi) - lo < (k < 0 ? -k : k)) return true;
    }
    return false;
  }
  std::vector<Info> blocks_;
  std::vector<StoreAt> stores_;
  std::vector<size_t> open_;  // the blocks around the statement being visited
  std::unordered_map<const VarNode*, Expr> subst_;
  std::unordered_map<const VarNode*, Var> loop_vars_;
  Analyzer az_;
};

class DropAtomic : public IRMutator {
 public:
  explicit DropAtomic(const std::set<const BlockNode*>& blocks) : blocks_(blocks) {}

 protected:
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_block_realize(n, s);
    if (!blocks_.count(n->block.get())) return r;
    auto* m = r.as<BlockRealizeNode>();
    BlockNode b = *m->block.get();
    b.annotations.erase("atomic");
    return make_block_realize(m->bindings, m->predicate, make_block(std::move(b)));
  }

 private:
  const std::set<const BlockNode*>& blocks_;
};

class MakeSerial : public IRMutator {
 public:
  explicit MakeSerial(const VarSet& loops) : loops_(loops) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt body = mutate(n->body);
    const bool demote =
        (n->for_kind == ForKind::Parallel || n->for_kind == ForKind::Vectorized) && loops_.count(n->loop_var.get());
    if (!demote && body.same_as(n->body)) return s;
    return make_for(n->loop_var, n->min, n->extent, demote ? ForKind::Serial : n->for_kind, body, n->thread_tag,
                    n->annotations);
  }

 private:
  const VarSet& loops_;
};

}  // namespace

Function serialize_ordered_parallel(const FunctionNode& f) {
  OrderedParallelFinder find;
  find.visit(f.body);
  if (find.serial.empty()) return with_body(f, f.body);
  return with_body(f, MakeSerial(find.serial).mutate(f.body));
}

Function drop_unraced_atomic(const FunctionNode& f) {
  UnracedAtomicFinder find;
  find.visit(f.body);
  std::set<const BlockNode*> drop = find.unraced();
  if (drop.empty()) return with_body(f, f.body);
  return with_body(f, DropAtomic(drop).mutate(f.body));
}

}  // namespace tirc

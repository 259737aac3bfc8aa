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
#include <set>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

using VarSet = std::set<const VarNode*>;

// Tracks which loops of the kinds in `kinds` each variable depends on: directly, through
// `let`s, or through the spatial iter vars of enclosing blocks.
class LoopDeps : public IRVisitor {
 protected:
  explicit LoopDeps(std::set<ForKind> kinds) : kinds_(std::move(kinds)) {}
  void visit_for(const ForNode* n) override {
    if (kinds_.count(n->for_kind)) deps_[n->loop_var.get()] = {n->loop_var.get()};
    IRVisitor::visit_for(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    deps_[n->var.get()] = loops_of(n->value);
    IRVisitor::visit_let_stmt(n);
  }
  // The loops the non-spatial bindings of the block depend on; records its spatial vars'.
  VarSet enter_block(const BlockRealizeNode* n) {
    const BlockNode& b = *n->block.get();
    VarSet ordered;
    for (size_t i = 0; i < b.iter_vars.size() && i < n->bindings.size(); ++i) {
      VarSet d = loops_of(n->bindings[i]);
      if (b.iter_vars[i].kind == IterKind::Spatial)
        deps_[b.iter_vars[i].var.get()] = d;
      else
        ordered.insert(d.begin(), d.end());
    }
    return ordered;
  }

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
// not atomic.
class OrderedParallelFinder : public LoopDeps {
 public:
  OrderedParallelFinder() : LoopDeps({ForKind::Parallel}) {}
  VarSet serial;  // loop vars of parallel loops to run serially

 protected:
  void visit_block_realize(const BlockRealizeNode* n) override {
    VarSet d = enter_block(n);
    if (!n->block->annotations.count("atomic")) serial.insert(d.begin(), d.end());
    IRVisitor::visit_block_realize(n);
  }
};

// Finds the atomic blocks whose reduce / scan / opaque vars no parallel or thread loop
// reaches.
class UnracedAtomicFinder : public LoopDeps {
 public:
  UnracedAtomicFinder() : LoopDeps({ForKind::Parallel, ForKind::ThreadBinding}) {}
  std::set<const BlockNode*> unraced;

 protected:
  void visit_block_realize(const BlockRealizeNode* n) override {
    VarSet d = enter_block(n);
    if (n->block->annotations.count("atomic") && d.empty()) unraced.insert(n->block.get());
    IRVisitor::visit_block_realize(n);
  }
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
    const bool demote = n->for_kind == ForKind::Parallel && loops_.count(n->loop_var.get());
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
  if (find.unraced.empty()) return with_body(f, f.body);
  return with_body(f, DropAtomic(find.unraced).mutate(f.body));
}

}  // namespace tirc

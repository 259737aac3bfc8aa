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
// updates atomic.
#include <set>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

using VarSet = std::set<const VarNode*>;

// Finds the parallel loops whose variable reaches a non-spatial binding: directly, through
// `let`s, or through the spatial iter vars of enclosing blocks.
class OrderedParallelFinder : public IRVisitor {
 public:
  VarSet serial;  // loop vars of parallel loops to run serially

 protected:
  void visit_for(const ForNode* n) override {
    if (n->for_kind == ForKind::Parallel) deps_[n->loop_var.get()] = {n->loop_var.get()};
    IRVisitor::visit_for(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    deps_[n->var.get()] = parallel_vars_of(n->value);
    IRVisitor::visit_let_stmt(n);
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    const BlockNode& b = *n->block.get();
    const bool atomic = b.annotations.count("atomic") > 0;
    for (size_t i = 0; i < b.iter_vars.size() && i < n->bindings.size(); ++i) {
      VarSet d = parallel_vars_of(n->bindings[i]);
      if (b.iter_vars[i].kind == IterKind::Spatial)
        deps_[b.iter_vars[i].var.get()] = d;
      else if (!atomic)
        serial.insert(d.begin(), d.end());
    }
    IRVisitor::visit_block_realize(n);
  }

 private:
  VarSet parallel_vars_of(const Expr& e) const {
    VarSet out;
    if (deps_.empty()) return out;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>())
        if (auto it = deps_.find(v); it != deps_.end()) out.insert(it->second.begin(), it->second.end());
    });
    return out;
  }
  std::unordered_map<const VarNode*, VarSet> deps_;
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

}  // namespace tirc

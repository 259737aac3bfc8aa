// Allocation placement (TVM: PlanAndUpdateBufferAllocationLocation, restricted to
// parallel loops): a root alloc used only inside one parallel loop becomes private to each
// iteration of the innermost parallel loop that encloses all its uses.
#include <map>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

bool is_parallel(const ForNode* f) {
  return f->for_kind == ForKind::Parallel || f->for_kind == ForKind::ThreadBinding;
}

// For every buffer: the common prefix of the parallel-loop stacks at its accesses.
class UseCollector : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, std::vector<const ForNode*>> common;

 protected:
  void use(const Buffer& b) {
    auto it = common.find(b.get());
    if (it == common.end()) {
      common[b.get()] = stack_;
      return;
    }
    auto& c = it->second;
    size_t k = 0;
    while (k < c.size() && k < stack_.size() && c[k] == stack_[k]) ++k;
    c.resize(k);
  }
  void visit_load(const LoadNode* n) override {
    use(n->buffer);
    IRVisitor::visit_load(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    use(n->buffer);
    IRVisitor::visit_buffer_ptr(n);
  }
  void visit_store(const StoreNode* n) override {
    use(n->buffer);
    IRVisitor::visit_store(n);
  }
  void visit_block(const BlockNode* n) override {
    for (auto* regions : {&n->reads, &n->writes})
      for (auto& r : *regions) use(r.buffer);
    IRVisitor::visit_block(n);
  }
  void visit_for(const ForNode* n) override {
    bool par = is_parallel(n);
    if (par) stack_.push_back(n);
    IRVisitor::visit_for(n);
    if (par) stack_.pop_back();
  }

 private:
  std::vector<const ForNode*> stack_;
};

class AllocPlacer : public IRMutator {
 public:
  std::map<const ForNode*, std::vector<Buffer>> place;
  int counter = 0;

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto it = place.find(n);
    if (it == place.end()) return r;
    auto* f = r.as<ForNode>();
    BlockNode scope;
    scope.name = "alloc_" + n->loop_var.name() + "_" + std::to_string(counter++);
    scope.allocs = it->second;
    scope.body = f->body;
    Stmt body = make_block_realize({}, make_bool(true), make_block(std::move(scope)));
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }
};

}  // namespace

Function plan_alloc(const FunctionNode& f) {
  auto* br = f.body.as<BlockRealizeNode>();
  if (!br || br->block->allocs.empty()) return with_body(f, f.body);
  UseCollector uses;
  uses.visit(br->block->body);
  AllocPlacer placer;
  BlockNode root = *br->block.get();
  std::vector<Buffer> keep;
  for (auto& b : root.allocs) {
    auto it = uses.common.find(b.get());
    if (it == uses.common.end() || it->second.empty()) {
      keep.push_back(b);
      continue;
    }
    placer.place[it->second.back()].push_back(b);
  }
  if (placer.place.empty()) return with_body(f, f.body);
  root.allocs = keep;
  root.body = placer.mutate(root.body);
  return with_body(f, make_block_realize(br->bindings, br->predicate, make_block(std::move(root))));
}

}  // namespace tirc

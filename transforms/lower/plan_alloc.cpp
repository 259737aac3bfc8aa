// Allocation placement (TVM: PlanAndUpdateBufferAllocationLocation): a root alloc moves
// into the body of the deepest loop enclosing all its accesses where each iteration owns a
// part of the buffer nobody else touches, so that a fresh buffer per iteration changes
// nothing (and compact_buffers can then shrink it to that part).
#include <map>
#include <unordered_map>

#include "ir/mutator.h"
#include "transforms/lower/buffer_access.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

using lower_detail::access_hull;
using lower_detail::BufferAccess;

bool is_parallel(const ForNode* f) {
  return f->for_kind == ForKind::Parallel || f->for_kind == ForKind::ThreadBinding;
}

// True when the iterations of `loop` (the depth-th common loop, 1-based) touch disjoint
// parts of the buffer for equal values of the loops above it: some dimension's hull under
// the loop is [c*l + f, c*l + f + w] with f free of l and 0 <= w < |c|. Then two iterations
// that differ in l (and agree above) never share an element, so no value written in one
// iteration is read in another, nor after the loop (every access is inside it).
bool partitioned_by(const std::vector<BufferAccess>& accs, size_t ndim, size_t depth, const ForNode* loop) {
  return lower_detail::hull_partitioned_by(access_hull(accs, ndim, depth), loop);
}

// Number of common loops the alloc may move into (0: stays at the root).
size_t placement_depth(const Buffer& b, const std::vector<BufferAccess>& accs) {
  auto common = lower_detail::common_loops(accs);
  bool pointer = false;
  for (auto& a : accs) pointer = pointer || a.pointer;
  size_t depth = 0;
  for (size_t j = 0; j < common.size(); ++j) {
    const ForNode* l = common[j];
    // A scope block inside a vectorized loop would keep the loop from being vectorized.
    if (l->for_kind == ForKind::Vectorized) break;
    // Shared memory is one buffer per thread block: never private to a thread.
    if (b->scope == "shared" && l->for_kind == ForKind::ThreadBinding &&
        (l->thread_tag.rfind("threadIdx", 0) == 0 || l->thread_tag == "vthread"))
      break;
    // Iterations of a parallel loop are independent: a private buffer per iteration is what
    // they need (and removes the race on a shared one).
    if (is_parallel(l)) {
      depth = j + 1;
      continue;
    }
    if (pointer || !partitioned_by(accs, b->ndim(), j + 1, l)) break;
    depth = j + 1;
  }
  return depth;
}

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
  auto uses = lower_detail::collect_accesses(br->block->body);
  AllocPlacer placer;
  BlockNode root = *br->block.get();
  std::vector<Buffer> keep;
  for (auto& b : root.allocs) {
    auto it = uses.find(b.get());
    size_t depth = it == uses.end() ? 0 : placement_depth(b, it->second);
    if (depth == 0) {
      keep.push_back(b);
      continue;
    }
    placer.place[lower_detail::common_loops(it->second)[depth - 1]].push_back(b);
  }
  if (placer.place.empty()) return with_body(f, f.body);
  root.allocs = keep;
  root.body = placer.mutate(root.body);
  return with_body(f, make_block_realize(br->bindings, br->predicate, make_block(std::move(root))));
}

}  // namespace tirc

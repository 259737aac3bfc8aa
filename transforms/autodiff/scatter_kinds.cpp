#include "transforms/autodiff/scatter_kinds.h"

#include <map>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::ad {

namespace {

// Index tuples of every store and load of the buffers the block stores to.
class Accesses : public IRVisitor {
 public:
  std::map<const BufferNode*, std::vector<const std::vector<Expr>*>> stores, all;

 protected:
  void visit_store(const StoreNode* n) override {
    stores[n->buffer.get()].push_back(&n->indices);
    all[n->buffer.get()].push_back(&n->indices);
    IRVisitor::visit_store(n);
  }
  void visit_load(const LoadNode* n) override {
    all[n->buffer.get()].push_back(&n->indices);
    IRVisitor::visit_load(n);
  }
};

// `B[I] = B[I] - x` -> `B[I] = B[I] + -x`: the same value (IEEE subtraction is the
// addition of the negation), the form an atomic add takes.
class SubToAdd : public IRMutator {
 protected:
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    auto* sub = n->value.as<BinaryNode>();
    if (!sub || sub->op != BinOp::Sub) return s;
    auto* ld = sub->a.as<LoadNode>();
    if (!ld || !ld->buffer.same_as(n->buffer) || ld->indices.size() != n->indices.size()) return s;
    for (size_t i = 0; i < ld->indices.size(); ++i)
      if (!expr_identical(ld->indices[i], n->indices[i])) return s;
    return make_store(n->buffer, n->indices, sub->a + make_unary(UnOp::Neg, sub->b));
  }
};

}  // namespace

void finish_scatter_block(BlockNode& b) {
  if (!b.annotations.count("atomic") || b.init.defined() || !b.body.defined()) return;
  Accesses acc;
  acc.visit(b.body);
  for (auto& iv : b.iter_vars) {
    if (iv.kind != IterKind::Reduce) continue;
    const VarNode* v = iv.var.get();
    bool partitions = !acc.stores.empty();
    for (auto& [buf, list] : acc.stores) {
      // Some dimension holds exactly v in every access of buf (stores and loads).
      bool found = false;
      size_t nd = list[0]->size();
      for (size_t d = 0; d < nd && !found; ++d) {
        bool all = true;
        for (auto* idx : acc.all.at(buf)) all = all && idx->size() == nd && (*idx)[d].as<VarNode>() == v;
        found = all;
      }
      partitions = partitions && found;
    }
    if (partitions) iv.kind = IterKind::Spatial;
  }
  bool reduce_left = false;
  for (auto& iv : b.iter_vars) reduce_left = reduce_left || iv.kind == IterKind::Reduce;
  if (!reduce_left)
    b.annotations.erase("atomic");
  else
    b.body = SubToAdd().mutate(b.body);
}

}  // namespace tirc::ad

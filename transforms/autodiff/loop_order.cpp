// Loop interchange of F_grad's blocks by access stride (loop_order.h).
#include "transforms/autodiff/loop_order.h"

#include <algorithm>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"

namespace tirc::ad {

namespace {

bool uses(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

// Total stride, in elements, of each iter var over the loads and stores of a block.
class StrideSum : public IRVisitor {
 public:
  explicit StrideSum(const std::vector<IterVar>& ivs) : ivs_(ivs), sum_(ivs.size(), 0.0) {}
  const std::vector<double>& sums() const { return sum_; }
  bool nested_block = false;

 protected:
  void visit_load(const LoadNode* n) override {
    add(n->buffer, n->indices);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    add(n->buffer, n->indices);
    IRVisitor::visit_store(n);
  }
  void visit_block_realize(const BlockRealizeNode*) override { nested_block = true; }

 private:
  void add(const Buffer& b, const std::vector<Expr>& idx) {
    double stride = 1;
    for (size_t k = idx.size(); k-- > 0;) {
      auto a = to_affine(idx[k]);
      for (size_t i = 0; i < ivs_.size(); ++i) {
        const VarNode* v = ivs_[i].var.get();
        double c = a ? double(std::llabs(a->coeff(v))) : (uses(idx[k], v) ? 1.0 : 0.0);
        sum_[i] += c * stride;
      }
      int64_t d = 0;
      stride *=
          (k < b->shape.size() && is_const_int(b->shape[k], &d)) ? double(std::max<int64_t>(d, 1)) : 64.0;
    }
  }
  const std::vector<IterVar>& ivs_;
  std::vector<double> sum_;
};

class Interchange : public IRMutator {
 public:
  explicit Interchange(const std::unordered_set<std::string>& keep) : keep_(keep) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    std::vector<const ForNode*> chain{n};
    while (chain.back()->body.kind() == StmtKind::For) chain.push_back(chain.back()->body.as<ForNode>());
    if (auto* br = chain.back()->body.as<BlockRealizeNode>()) {
      Stmt r = reorder(chain, br);
      if (r.defined()) return r;
    }
    return IRMutator::mutate_for(n, s);
  }

 private:
  // The nest with one of its bound loops moved innermost, or undefined when it stays as it is.
  Stmt reorder(const std::vector<const ForNode*>& chain, const BlockRealizeNode* br) {
    const BlockNode& b = *br->block.get();
    if (keep_.count(b.name) || b.annotations.count("atomic")) return {};
    // Loop position -> iter var index (-1: the loop binds nothing and stays where it is).
    std::vector<int> iv_of(chain.size(), -1);
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      IterKind k = b.iter_vars[i].kind;
      if (k != IterKind::Spatial && k != IterKind::Reduce) return {};
      auto* v = br->bindings[i].as<VarNode>();
      if (!v) return {};
      size_t pos = chain.size();
      for (size_t l = 0; l < chain.size(); ++l)
        if (chain[l]->loop_var.get() == v) pos = l;
      if (pos == chain.size()) continue;  // bound to a loop outside the nest
      if (iv_of[pos] != -1) return {};    // one loop feeding two iter vars
      iv_of[pos] = int(i);
    }
    for (size_t l = 0; l < chain.size(); ++l) {
      const ForNode* f = chain[l];
      if (f->for_kind != ForKind::Serial || !f->annotations.empty()) return {};
      if (iv_of[l] == -1) continue;
      // A loop var used anywhere but its own binding (another binding, the predicate, a loop
      // range) ties the loops together: leave the nest.
      for (size_t i = 0; i < br->bindings.size(); ++i)
        if (int(i) != iv_of[l] && uses(br->bindings[i], f->loop_var.get())) return {};
      if (uses(br->predicate, f->loop_var.get())) return {};
      for (auto* g : chain)
        if (uses(g->min, f->loop_var.get()) || uses(g->extent, f->loop_var.get())) return {};
    }
    StrideSum ss(b.iter_vars);
    if (b.init.defined()) ss.visit(b.init);
    ss.visit(b.body);
    if (ss.nested_block) return {};

    std::vector<size_t> bound;  // positions of bound loops, outermost first
    for (size_t l = 0; l < chain.size(); ++l)
      if (iv_of[l] != -1) bound.push_back(l);
    if (bound.size() < 2) return {};
    auto is_reduce = [&](size_t l) { return b.iter_vars[iv_of[l]].kind == IterKind::Reduce; };
    auto sum = [&](size_t l) { return ss.sums()[iv_of[l]]; };
    // Candidates for the innermost position: spatial loops, and the innermost reduce loop
    // (moving it inward keeps the reduce loops' relative order).
    size_t inner = bound.back(), best = inner;
    bool found = false;
    for (size_t l : bound) {
      bool later_reduce = false;
      for (size_t m : bound) later_reduce = later_reduce || (m > l && is_reduce(m));
      if (is_reduce(l) && later_reduce) continue;
      if (!found || sum(l) < sum(best) || (sum(l) == sum(best) && is_reduce(best) && !is_reduce(l))) best = l;
      found = true;
    }
    if (best == inner || !(sum(best) < sum(inner))) return {};
    std::vector<size_t> order;
    for (size_t l : bound)
      if (l != best) order.push_back(l);
    order.push_back(best);

    std::vector<const ForNode*> loops(chain);
    for (size_t i = 0; i < bound.size(); ++i) loops[bound[i]] = chain[order[i]];
    Stmt body = chain.back()->body;
    for (size_t k = loops.size(); k-- > 0;) {
      const ForNode* f = loops[k];
      body = make_for(f->loop_var, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
    }
    return body;
  }

  const std::unordered_set<std::string>& keep_;
};

}  // namespace

Function order_loops_by_stride(const FunctionNode& f, const std::unordered_set<std::string>& keep) {
  Interchange m(keep);
  Stmt body = m.mutate(f.body);
  if (body.same_as(f.body)) return std::make_shared<FunctionNode>(f);
  auto out = std::make_shared<FunctionNode>(f);
  out->body = body;
  return out;
}

}  // namespace tirc::ad

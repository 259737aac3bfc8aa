// Loop interchange of F_grad's blocks by access stride (loop_order.h).
#include "transforms/autodiff/loop_order.h"

#include <algorithm>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"

namespace tirc::ad {

namespace {

// Fewer iterations than this do not make a vector loop worth a reorder.
constexpr int64_t kMinVectorLoop = 8;
// The largest stride (elements) of a strided loop that may replace a short reduce loop.
constexpr double kMaxStridedLoop = 4;

bool uses(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

// Total stride, in elements, of each iter var over the loads and stores of a block.
class StrideSum : public IRVisitor {
 public:
  explicit StrideSum(const std::vector<IterVar>& ivs)
      : ivs_(ivs), sum_(ivs.size(), 0.0), max_(ivs.size(), 0.0), gather_(ivs.size(), false) {}
  const std::vector<double>& sums() const { return sum_; }
  // Whether iter var i walks every access with a stride of at most one element and indexes
  // no access through a non-affine expression: a loop over it vectorizes.
  bool unit_stride(size_t i) const { return max_[i] <= 1.0 && !gather_[i]; }
  // Whether iter var i walks every access with a stride of at most `k` elements (a strided
  // loop: interleaved vector accesses or at least independent iterations in cache lines).
  bool small_stride(size_t i, double k) const { return max_[i] <= k && !gather_[i]; }
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
    std::vector<double> acc(ivs_.size(), 0.0);
    for (size_t k = idx.size(); k-- > 0;) {
      auto a = to_affine(idx[k]);
      for (size_t i = 0; i < ivs_.size(); ++i) {
        const VarNode* v = ivs_[i].var.get();
        double c = a ? double(std::llabs(a->coeff(v))) : (uses(idx[k], v) ? 1.0 : 0.0);
        if (!a && c != 0) gather_[i] = true;
        sum_[i] += c * stride;
        acc[i] += c * stride;
      }
      int64_t d = 0;
      stride *=
          (k < b->shape.size() && is_const_int(b->shape[k], &d)) ? double(std::max<int64_t>(d, 1)) : 64.0;
    }
    for (size_t i = 0; i < ivs_.size(); ++i) max_[i] = std::max(max_[i], acc[i]);
  }
  const std::vector<IterVar>& ivs_;
  std::vector<double> sum_, max_;
  std::vector<bool> gather_;
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
      // A loop var used anywhere but its own binding (another binding, a loop range) ties
      // the loops together: leave the nest. The predicate may use any of them: it only
      // selects points, whatever order they run in.
      for (size_t i = 0; i < br->bindings.size(); ++i)
        if (int(i) != iv_of[l] && uses(br->bindings[i], f->loop_var.get())) return {};
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
    // A spatial loop of at least kMinVectorLoop iterations that walks every access with unit
    // (or zero) stride vectorizes as it stands; a reduce loop innermost is a serial chain of
    // float adds (no reassociation without fast-math). So such a loop goes innermost when
    // the innermost loop is not one, whatever the stride sums say: the data gradient of a
    // convolution then runs along the output row, not along the 3 taps of the kernel.
    auto vector_loop = [&](size_t l) {
      int64_t e = 0;
      bool big = !is_const_int(chain[l]->extent, &e) || e >= kMinVectorLoop;
      return !is_reduce(l) && big && ss.unit_stride(size_t(iv_of[l]));
    };
    size_t inner = bound.back(), best = inner;
    if (!vector_loop(inner)) {
      bool found = false;
      for (size_t l : bound)
        if (vector_loop(l) && (!found || sum(l) <= sum(best))) {
          best = l;
          found = true;
        }
      // No unit-stride loop: a short reduce loop innermost (the taps of a strided
      // convolution's phase block, 1 or 2 iterations) leaves the next reduce loop outside
      // it walking memory with a large stride for every element. A long spatial loop with a
      // small constant stride (the output row of a stride-2 phase, `X_grad[2 * x + b]`) runs
      // independent iterations through cache lines instead.
      int64_t e = 0;
      bool short_reduce = is_reduce(inner) && is_const_int(chain[inner]->extent, &e) && e < kMinVectorLoop;
      if (!found && short_reduce)
        for (size_t l : bound) {
          bool big = !is_const_int(chain[l]->extent, &e) || e >= kMinVectorLoop;
          if (!is_reduce(l) && big && ss.small_stride(size_t(iv_of[l]), kMaxStridedLoop) &&
              (!found || sum(l) <= sum(best))) {
            best = l;
            found = true;
          }
        }
    }
    if (best == inner) {
      // Otherwise, the candidates are the spatial loops and the innermost reduce loop
      // (moving it inward keeps the reduce loops' relative order); the smallest stride sum
      // wins.
      bool found = false;
      for (size_t l : bound) {
        bool later_reduce = false;
        for (size_t m : bound) later_reduce = later_reduce || (m > l && is_reduce(m));
        if (is_reduce(l) && later_reduce) continue;
        if (!found || sum(l) < sum(best) || (sum(l) == sum(best) && is_reduce(best) && !is_reduce(l)))
          best = l;
        found = true;
      }
      if (best == inner || !(sum(best) < sum(inner))) return {};
    }
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

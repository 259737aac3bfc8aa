// Buffer flattening (TVM: FlattenBuffer): N-d buffers become 1-D with row-major strides.
#include <unordered_map>

#include "ir/mutator.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

DType index_type(const std::vector<Expr>& idx, const std::vector<Expr>& shape) {
  for (auto& e : idx)
    if (e.dtype() == DType::I64) return DType::I64;
  for (auto& e : shape)
    if (e.dtype() == DType::I64) return DType::I64;
  return DType::I32;
}

Expr as_type(const Expr& e, DType t) {
  if (e.dtype() == t) return e;
  int64_t v;
  if (is_const_int(e, &v)) return make_int(v, t);
  return make_cast(t, e);
}

class Flattener : public IRMutator {
 public:
  Buffer flat(const Buffer& b) {
    auto it = map_.find(b.get());
    if (it != map_.end()) return it->second;
    Expr n;
    DType t = index_type({}, b->shape);
    for (auto& s : b->shape)
      n = n.defined() ? simplify_index_expr(as_type(n, t) * as_type(s, t)) : as_type(s, t);
    if (!n.defined()) n = make_int(1, t);
    Buffer nb(b->name, b->dtype, {n}, b->scope);
    map_[b.get()] = nb;
    return nb;
  }
  std::vector<Expr> flat_index(const Buffer& b, const std::vector<Expr>& idx) {
    if (idx.empty()) return {make_int(0)};
    DType t = index_type(idx, b->shape);
    Expr e = as_type(idx[0], t);
    for (size_t k = 1; k < idx.size(); ++k) e = e * as_type(b->shape[k], t) + as_type(idx[k], t);
    return {simplify_index_expr(e)};
  }

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    (void)e;
    return make_load(flat(n->buffer), flat_index(n->buffer, idx));
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    (void)e;
    if (idx.empty()) return make_buffer_ptr(flat(n->buffer), {});
    return make_buffer_ptr(flat(n->buffer), flat_index(n->buffer, idx));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    (void)s;
    return make_store(flat(n->buffer), flat_index(n->buffer, idx), mutate(n->value));
  }
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    BlockNode out = *nb.get();
    for (auto& a : out.allocs) a = flat(a);
    // Regions of the remaining (scope) blocks are not meaningful after lowering.
    out.reads.clear();
    out.writes.clear();
    return make_block(std::move(out));
  }

 private:
  std::unordered_map<const BufferNode*, Buffer> map_;
};

}  // namespace

Function flatten_buffers(const FunctionNode& f) {
  Flattener fl;
  auto g = std::make_shared<FunctionNode>(f);
  for (auto& p : g->params)
    if (p.is_buffer()) p.buffer = fl.flat(p.buffer);
  for (auto& o : g->outputs) o = fl.flat(o);
  g->body = fl.mutate(f.body);
  return g;
}

}  // namespace tirc

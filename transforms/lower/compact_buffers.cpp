// Buffer compaction (TVM: CompactBufferAllocation): an alloc is shrunk to the region its
// accesses inside the owning block can touch, indices shifted by the region's start.
// Combined with plan_alloc this turns a cache buffer of the whole tensor, read and written
// only through one tile per loop iteration, into a small tile-sized buffer (a packed panel,
// a register accumulator).
#include <unordered_map>

#include "ir/mutator.h"
#include "transforms/lower/buffer_access.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

struct Compacted {
  Buffer to;
  std::vector<Expr> offset;  // undefined: dimension kept as is
};

// Region-shifted accesses of the compacted buffers.
class Shifter : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, Compacted> map;

 protected:
  std::vector<Expr> shift(const Compacted& c, std::vector<Expr> idx) {
    for (size_t d = 0; d < idx.size(); ++d)
      if (c.offset[d].defined()) {
        Expr o = c.offset[d];
        idx[d] = idx[d] - (o.dtype() == idx[d].dtype() ? o : make_cast(idx[d].dtype(), o));
      }
    return idx;
  }
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_load(n, e);
    auto* l = r.as<LoadNode>();
    auto it = map.find(l->buffer.get());
    if (it == map.end()) return r;
    return make_load(it->second.to, shift(it->second, l->indices));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_store(n, s);
    auto* st = r.as<StoreNode>();
    auto it = map.find(st->buffer.get());
    if (it == map.end()) return r;
    return make_store(it->second.to, shift(it->second, st->indices), st->value);
  }
};

class Compactor : public IRMutator {
 protected:
  Block mutate_block(const Block& b0) override {
    Block b = IRMutator::mutate_block(b0);
    if (b->allocs.empty()) return b;
    auto uses = lower_detail::collect_accesses(b->body);
    Shifter sh;
    BlockNode out = *b.get();
    for (auto& a : out.allocs) {
      auto it = uses.find(a.get());
      if (it == uses.end()) continue;
      bool pointer = false;
      for (auto& acc : it->second) pointer = pointer || acc.pointer;
      if (pointer) continue;  // an extern call may touch any element
      auto hull = lower_detail::access_hull(it->second, a->ndim(), 0);
      Compacted c;
      std::vector<Expr> shape = a->shape;
      bool any = false;
      for (size_t d = 0; d < a->ndim(); ++d) {
        c.offset.emplace_back();
        int64_t sh_d = 0;
        if (!hull[d]) continue;
        // A symbolic dimension is compacted to a constant extent of at most 4096 (a tile of
        // a buffer of n rows under a predicated split: the GPU needs a constant .shared size,
        // and a row's accumulator at the row's thread block is one element). A larger
        // constant hull is only what the index dtype bounds (`v // (m + 1)` gave 2^32 rows)
        // and keeps the symbolic size.
        bool symbolic = !is_const_int(a->shape[d], &sh_d);
        auto ext =
            as_const_int(simplify(hull[d]->second - hull[d]->first + make_int(1, hull[d]->first.dtype())));
        if (!ext || *ext < 1 || (symbolic ? *ext > 4096 : *ext >= sh_d)) continue;
        // Accesses stay inside [lo, lo + ext): shifting by lo is a bijection onto [0, ext).
        shape[d] = make_int(*ext, a->shape[d].dtype());
        Expr lo = hull[d]->first;
        c.offset.back() = lo;
        any = true;
      }
      if (!any) continue;
      c.to = Buffer(a->name, a->dtype, shape, a->scope);
      sh.map[a.get()] = c;
      a = c.to;
    }
    if (sh.map.empty()) return b;
    out.body = sh.mutate(out.body);
    if (out.init.defined()) out.init = sh.mutate(out.init);
    return make_block(std::move(out));
  }
};

}  // namespace

Function compact_buffers(const FunctionNode& f) { return with_body(f, Compactor().mutate(f.body)); }

}  // namespace tirc

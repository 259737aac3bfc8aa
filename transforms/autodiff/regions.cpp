#include "transforms/autodiff/regions.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"

namespace tirc::ad {

namespace {
struct Access {
  Buffer buffer;
  std::vector<std::vector<Expr>> tuples;
};

class AccessScan : public IRVisitor {
 public:
  std::vector<Access> reads, writes;
  std::unordered_set<const VarNode*> bound;  // let vars: not allowed in regions

  void visit_load(const LoadNode* n) override {
    add(reads, n->buffer, n->indices);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    add(writes, n->buffer, n->indices);
    IRVisitor::visit_store(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    bound.insert(n->var.get());
    IRVisitor::visit_let_stmt(n);
  }
  void visit_let(const LetNode* n) override {
    bound.insert(n->var.get());
    IRVisitor::visit_let(n);
  }

 private:
  static void add(std::vector<Access>& list, const Buffer& b, const std::vector<Expr>& idx) {
    for (auto& a : list)
      if (a.buffer.same_as(b)) {
        for (auto& t : a.tuples) {
          bool same = true;
          for (size_t i = 0; i < t.size() && same; ++i) same = expr_identical(t[i], idx[i]);
          if (same) return;
        }
        a.tuples.push_back(idx);
        return;
      }
    list.push_back({b, {idx}});
  }
};

bool uses_only(const Expr& e, const std::unordered_set<const VarNode*>& bad) {
  bool ok = true;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && bad.count(v)) ok = false;
    if (x.as<LoadNode>() || x.as<LetNode>()) ok = false;
  });
  return ok;
}

std::vector<BufferRegion> regions(const std::vector<Access>& acc,
                                  const std::unordered_set<const VarNode*>& bound) {
  std::vector<BufferRegion> out;
  for (auto& a : acc) {
    // Per dimension: the index when every access uses the same one, [i + lo, i + hi + 1)
    // when they differ by constants (a scan reading the step before the one it writes),
    // else the whole extent. Keeping the exact dimensions lets the schedule see that, e.g.,
    // the rows of a backward scan are independent.
    BufferRegion r;
    r.buffer = a.buffer;
    for (size_t d = 0; d < a.buffer->ndim(); ++d) {
      const Expr& i0 = a.tuples[0][d];
      bool ok = uses_only(i0, bound);
      int64_t lo = 0, hi = 0;
      bool same = true;
      auto base = ok ? to_affine(i0) : std::nullopt;
      for (size_t t = 1; t < a.tuples.size() && ok; ++t) {
        const Expr& it = a.tuples[t][d];
        if (expr_identical(it, i0)) continue;
        same = false;
        auto x = uses_only(it, bound) ? to_affine(it) : std::nullopt;
        if (!x || !base) {
          ok = false;
          break;
        }
        x->add(*base, -1);
        if (!x->is_const()) {
          ok = false;
          break;
        }
        lo = std::min(lo, x->constant);
        hi = std::max(hi, x->constant);
      }
      const Expr& ext = a.buffer->shape[d];
      if (!ok) {
        r.ranges.push_back({make_const(ext.dtype(), 0), ext});
      } else if (same) {
        r.ranges.push_back({i0, Expr()});
      } else {
        Affine b = *base, e = *base;
        b.constant += lo;
        e.constant += hi + 1;
        r.ranges.push_back({affine_to_expr(b, i0.dtype()), affine_to_expr(e, i0.dtype())});
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

void set_regions(BlockNode& b) {
  AccessScan scan;
  scan.visit(b.init);
  scan.visit(b.body);
  b.reads = regions(scan.reads, scan.bound);
  b.writes = regions(scan.writes, scan.bound);
}

void stored_buffers(const Stmt& s, std::unordered_set<const BufferNode*>* out) {
  struct V : IRVisitor {
    std::unordered_set<const BufferNode*>* out;
    void visit_store(const StoreNode* n) override {
      out->insert(n->buffer.get());
      IRVisitor::visit_store(n);
    }
  } v;
  v.out = out;
  v.visit(s);
}

}  // namespace tirc::ad

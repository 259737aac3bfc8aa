#include "transforms/autodiff/regions.h"

#include <unordered_set>
#include <vector>

#include "ir/visitor.h"

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
    BufferRegion r;
    r.buffer = a.buffer;
    bool point = a.tuples.size() == 1;
    if (point)
      for (auto& i : a.tuples[0])
        if (!uses_only(i, bound)) point = false;
    if (point) {
      for (auto& i : a.tuples[0]) r.ranges.push_back({i, Expr()});
    } else {
      for (auto& s : a.buffer->shape) r.ranges.push_back({make_const(s.dtype(), 0), s});
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

}  // namespace tirc::ad

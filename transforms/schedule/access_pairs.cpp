// accesses_apart_across_iterations: see access_pairs.h.
#include "transforms/schedule/access_pairs.h"

#include <cstdlib>
#include <optional>
#include <unordered_set>

#include "ir/visitor.h"
#include "transforms/schedule/arith.h"
#include "transforms/schedule/tree.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

// One dimension of one access: [c * l + rest_lo, c * l + rest_hi] for every value of the loop
// var l (rest_* free of l); nullopt when not of that form.
struct DimForm {
  int64_t c;
  Expr rest_lo, rest_hi;
};

struct Access {
  bool write;
  std::vector<std::optional<DimForm>> dims;
};

// Loads and stores of one buffer in a block's init, body and predicate. `ok` turns false on
// what the indices alone do not describe: nested blocks, loops (their vars would need ranges),
// extern calls, pointers to the buffer.
class Collect : public IRVisitor {
 public:
  const BufferNode* buf = nullptr;
  bool ok = true;
  std::vector<std::pair<bool, std::vector<Expr>>> found;  // (write, indices)

 protected:
  void visit_load(const LoadNode* n) override {
    if (n->buffer.get() == buf) found.emplace_back(false, n->indices);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    if (n->buffer.get() == buf) found.emplace_back(true, n->indices);
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    if (n->buffer.get() == buf) ok = false;
    IRVisitor::visit_buffer_ptr(n);
  }
  void visit_for(const ForNode*) override { ok = false; }
  void visit_block_realize(const BlockRealizeNode*) override { ok = false; }
  void visit_evaluate(const EvaluateNode*) override { ok = false; }
};

// Whether some l != l' (|l - l'| < extent, extent 0: unbounded) has c * (l - l') in [lo, hi]
// (c == 0: whether 0 is in [lo, hi]).
bool may_meet(int64_t c, int64_t lo, int64_t hi, int64_t extent) {
  if (lo > hi) return false;
  if (c == 0) return lo <= 0 && 0 <= hi;
  if (c < 0) {
    c = -c;
    int64_t t = lo;
    lo = -hi;
    hi = -t;
  }
  // k in [ceil(lo / c), floor(hi / c)], k != 0, |k| <= extent - 1.
  auto floor_div = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  int64_t kmin = -floor_div(-lo, c), kmax = floor_div(hi, c);
  if (extent > 0) {
    kmin = std::max(kmin, -(extent - 1));
    kmax = std::min(kmax, extent - 1);
  }
  if (kmin > kmax) return false;
  return !(kmin == 0 && kmax == 0);
}

// Whether dimension forms x (of one iteration) and y (of another) provably never name one
// index.
bool apart(const std::optional<DimForm>& x, const std::optional<DimForm>& y, int64_t extent) {
  if (!x || !y || x->c != y->c || x->rest_lo.dtype() != y->rest_lo.dtype()) return false;
  // Same element: c * l + x_rest = c * l' + y_rest, so c * (l - l') = y_rest - x_rest, which
  // lies in [y_lo - x_hi, y_hi - x_lo].
  auto lo = to_linear(fold(y->rest_lo - x->rest_hi)), hi = to_linear(fold(y->rest_hi - x->rest_lo));
  if (!lo || !hi || !lo->terms.empty() || !hi->terms.empty()) return false;
  return !may_meet(x->c, lo->c, hi->c, extent);
}

}  // namespace

bool accesses_apart_across_iterations(const ScheduleState& st, const Stmt& loop_s, const BufferNode* buf,
                                      const std::vector<Stmt>& blocks) {
  auto* loop = loop_s.as<ForNode>();
  const VarNode* lv = loop->loop_var.get();
  int64_t extent = 0;
  if (!is_const_int(fold(loop->extent), &extent) || extent < 1) extent = 0;
  // Vars with one value in every iteration of the loop: loops and iter vars around it, scalar
  // parameters. (Anything else, a let name, could differ between iterations.)
  std::unordered_set<const VarNode*> invariant;
  for (auto& p : st.func.params)
    if (!p.is_buffer()) invariant.insert(p.var.get());
  for (auto& p : st.path_to(loop_s.get())) {
    if (auto* f = p.as<ForNode>(); f && p.get() != loop_s.get()) invariant.insert(f->loop_var.get());
    if (auto* br = p.as<BlockRealizeNode>())
      for (auto& iv : br->block->iter_vars) invariant.insert(iv.var.get());
  }
  std::vector<Access> accesses;
  for (auto& bs : blocks) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    Collect col;
    col.buf = buf;
    if (b->init.defined()) col.visit(b->init);
    col.visit(b->body);
    if (br->predicate.defined()) col.visit(br->predicate);
    if (!col.ok) return false;
    if (col.found.empty()) continue;
    // The loops between `loop` and the block, relaxed over their ranges (as the region checks).
    SymRangeMap inner;
    std::unordered_set<const VarNode*> inner_vars;
    for (auto& p : find_path(loop->body, bs.get())) {
      if (p.kind() == StmtKind::BlockRealize && !p.same_as(bs)) return false;
      auto* f = p.as<ForNode>();
      if (!f) continue;
      SymRange r{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
      if (auto lo = relax(r.lo, inner)) r.lo = lo->lo;
      if (auto hi = relax(r.hi, inner)) r.hi = hi->hi;
      inner[f->loop_var.get()] = r;
      inner_vars.insert(f->loop_var.get());
    }
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
    auto known_var = [&](const VarNode* v) { return v == lv || invariant.count(v) > 0; };
    for (auto& [write, indices] : col.found) {
      Access a{write, {}};
      for (auto& ix : indices) {
        Expr e = fold(substitute(ix, sub));
        bool has_load = false;
        for_each_expr(e, [&](const Expr& x) {
          has_load = has_load || x.as<LoadNode>() != nullptr || x.as<LetNode>() != nullptr;
        });
        if (has_load ||
            uses_var(e, [&](const VarNode* v) { return !known_var(v) && inner_vars.count(v) == 0; })) {
          a.dims.push_back(std::nullopt);
          continue;
        }
        auto r = relax(e, inner);
        std::optional<Linear> llo, lhi;
        if (r) llo = to_linear(fold(r->lo)), lhi = to_linear(fold(r->hi));
        if (!r || !llo || !lhi || llo->coef_of(lv) != lhi->coef_of(lv)) {
          a.dims.push_back(std::nullopt);
          continue;
        }
        int64_t c = llo->coef_of(lv);
        DType t = r->lo.dtype();
        if (c != 0 && t != loop->loop_var.dtype()) {
          a.dims.push_back(std::nullopt);
          continue;
        }
        Expr rest_lo = c == 0 ? fold(r->lo) : fold(r->lo - make_int(c, t) * loop->loop_var);
        Expr rest_hi = c == 0 ? fold(r->hi) : fold(r->hi - make_int(c, t) * loop->loop_var);
        // The rest must be free of the loop (`l // 2` is an atom of to_linear) and of anything
        // but the invariant vars.
        auto bad = [&](const VarNode* v) { return v == lv || invariant.count(v) == 0; };
        if (uses_var(rest_lo, bad) || uses_var(rest_hi, bad)) {
          a.dims.push_back(std::nullopt);
          continue;
        }
        a.dims.push_back(DimForm{c, rest_lo, rest_hi});
      }
      accesses.push_back(std::move(a));
    }
  }
  for (size_t x = 0; x < accesses.size(); ++x)
    for (size_t y = x; y < accesses.size(); ++y) {
      const Access &a = accesses[x], &b = accesses[y];
      if (!a.write && !b.write) continue;
      if (a.dims.size() != b.dims.size()) return false;
      bool sep = false;
      for (size_t d = 0; d < a.dims.size() && !sep; ++d) sep = apart(a.dims[d], b.dims[d], extent);
      if (!sep) return false;
    }
  return true;
}

}  // namespace tirc::sched

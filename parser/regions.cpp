#include "parser/regions.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc {
namespace {

// An affine form sum(coeff * atom) + c. Atoms are variables or opaque subexpressions,
// compared syntactically (expr_identical), so that `vi + 1` and `vi` differ by a constant.
// Wrapping arithmetic: pathological constants must not be undefined behaviour (the parser
// is fuzzed); a wrapped bound is merely imprecise.
int64_t wadd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wmul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
int64_t wneg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

struct Lin {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t c = 0;
};

void add_term(Lin* l, const Expr& atom, int64_t coeff) {
  if (coeff == 0) return;
  for (size_t i = 0; i < l->terms.size(); ++i)
    if (expr_identical(l->terms[i].first, atom)) {
      l->terms[i].second = wadd(l->terms[i].second, coeff);
      if (l->terms[i].second == 0) l->terms.erase(l->terms.begin() + static_cast<long>(i));
      return;
    }
  l->terms.emplace_back(atom, coeff);
}

void add_lin(Lin* l, const Lin& o, int64_t scale) {
  for (auto& [a, k] : o.terms) add_term(l, a, wmul(k, scale));
  l->c = wadd(l->c, wmul(o.c, scale));
}

// Adds scale * e to *l.
void to_lin(const Expr& e, int64_t scale, Lin* l) {
  int64_t v;
  if (is_const_int(e, &v) && e.dtype() != DType::Bool) {
    l->c = wadd(l->c, wmul(v, scale));
    return;
  }
  if (auto* b = e.as<BinaryNode>()) {
    if (b->op == BinOp::Add || b->op == BinOp::Sub) {
      to_lin(b->a, scale, l);
      to_lin(b->b, b->op == BinOp::Add ? scale : wneg(scale), l);
      return;
    }
    if (b->op == BinOp::Mul) {
      if (is_const_int(b->b, &v)) return to_lin(b->a, wmul(scale, v), l);
      if (is_const_int(b->a, &v)) return to_lin(b->b, wmul(scale, v), l);
    }
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Neg) return to_lin(u->a, wneg(scale), l);
  add_term(l, e, scale);
}

bool same_terms(const Lin& a, const Lin& b) {
  if (a.terms.size() != b.terms.size()) return false;
  for (auto& [x, k] : a.terms) {
    bool found = false;
    for (auto& [y, m] : b.terms)
      if (k == m && expr_identical(x, y)) found = true;
    if (!found) return false;
  }
  return true;
}

Expr from_lin(const Lin& l, DType t) {
  Expr e;
  for (auto& [atom, k] : l.terms) {
    if (!e.defined()) {
      e = k == 1 ? atom : atom * make_int(k, t);
    } else if (k > 0) {
      e = e + (k == 1 ? atom : atom * make_int(k, t));
    } else {
      e = e - (k == -1 ? atom : atom * make_int(wneg(k), t));
    }
  }
  if (!e.defined()) return make_int(l.c, t);
  if (l.c > 0) e = e + make_int(l.c, t);
  if (l.c < 0) e = e - make_int(wneg(l.c), t);
  return e;
}

// Inclusive bounds of a variable bound inside the block; ok=false when unknown.
struct VarBound {
  bool ok = false;
  Lin lo, hi;
};

// One access of one dimension: a point (the index as written) or an inclusive interval.
struct DimAccess {
  bool full = false;
  bool is_point = false;
  Expr point;
  Lin lo, hi;
};

struct BufferAccesses {
  Buffer buffer;
  std::vector<std::vector<DimAccess>> accesses;  // per access, per dim
};

class Detector {
 public:
  std::vector<BufferAccesses> reads, writes;
  std::unordered_set<const BufferNode*> excluded;

  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        expr(f->min);
        expr(f->extent);
        bind(f->loop_var, f->min, f->min + f->extent - make_int(1, f->extent.dtype()));
        stmt(f->body);
        bounds_.erase(f->loop_var.get());
        break;
      }
      case StmtKind::BlockRealize: {
        auto* br = s.as<BlockRealizeNode>();
        for (auto& b : br->bindings) expr(b);
        if (br->predicate.defined()) expr(br->predicate);
        nested_block(*br);
        break;
      }
      case StmtKind::Store: {
        auto* st = s.as<StoreNode>();
        record(&writes, st->buffer, st->indices);
        for (auto& i : st->indices) expr(i);
        expr(st->value);
        break;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        expr(n->cond);
        stmt(n->then_case);
        stmt(n->else_case);
        break;
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        expr(n->value);
        bind(n->var, n->value, n->value);
        stmt(n->body);
        bounds_.erase(n->var.get());
        break;
      }
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) stmt(x);
        break;
      case StmtKind::Evaluate:
        for (auto& a : s.as<EvaluateNode>()->args) expr(a);
        break;
    }
  }

  void expr(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        record(&reads, n->buffer, n->indices);
        for (auto& i : n->indices) expr(i);
        break;
      }
      case ExprKind::BufferPtr: {
        auto* n = e.as<BufferPtrNode>();
        record_full(&reads, n->buffer);
        record_full(&writes, n->buffer);
        for (auto& i : n->indices) expr(i);
        break;
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        expr(n->a);
        expr(n->b);
        break;
      }
      case ExprKind::Unary: expr(e.as<UnaryNode>()->a); break;
      case ExprKind::Cast: expr(e.as<CastNode>()->value); break;
      case ExprKind::Call:
        for (auto& a : e.as<CallNode>()->args) expr(a);
        break;
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        expr(n->cond);
        expr(n->t);
        expr(n->f);
        break;
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        expr(n->value);
        bind(n->var, n->value, n->value);
        expr(n->body);
        bounds_.erase(n->var.get());
        break;
      }
      default: break;
    }
  }

 private:
  std::unordered_map<const VarNode*, VarBound> bounds_;

  bool depends_on_relaxed(const Expr& e) const {
    bool dep = false;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>(); v && bounds_.count(v)) dep = true;
    });
    return dep;
  }

  // Relaxes the bound variables of l to their lower (maximize=false) or upper bound.
  bool relax(const Lin& l, bool maximize, Lin* out) const {
    *out = Lin();
    out->c = l.c;
    for (auto& [atom, k] : l.terms) {
      auto* v = atom.as<VarNode>();
      auto it = v ? bounds_.find(v) : bounds_.end();
      if (it != bounds_.end()) {
        if (!it->second.ok) return false;
        add_lin(out, (k > 0) == maximize ? it->second.hi : it->second.lo, k);
      } else {
        if (depends_on_relaxed(atom)) return false;
        add_term(out, atom, k);
      }
    }
    return true;
  }

  void bind(const Var& v, const Expr& lo, const Expr& hi) {
    VarBound b;
    Lin l, h;
    to_lin(lo, 1, &l);
    to_lin(hi, 1, &h);
    b.ok = relax(l, false, &b.lo) && relax(h, true, &b.hi);
    bounds_[v.get()] = std::move(b);
  }

  DimAccess dim_access(const Expr& begin, const Expr& end_excl) {
    DimAccess d;
    if (!end_excl.defined() && !depends_on_relaxed(begin)) {
      d.is_point = true;
      d.point = begin;
      to_lin(begin, 1, &d.lo);
      d.hi = d.lo;
      return d;
    }
    Lin lo, hi;
    to_lin(begin, 1, &lo);
    if (end_excl.defined()) {
      to_lin(end_excl, 1, &hi);
      hi.c = wadd(hi.c, -1);
    } else {
      hi = lo;
    }
    if (!relax(lo, false, &d.lo) || !relax(hi, true, &d.hi)) d.full = true;
    return d;
  }

  BufferAccesses& entry(std::vector<BufferAccesses>* list, const Buffer& b) {
    for (auto& e : *list)
      if (e.buffer == b) return e;
    list->push_back(BufferAccesses{b, {}});
    return list->back();
  }

  void record(std::vector<BufferAccesses>* list, const Buffer& b, const std::vector<Expr>& idx) {
    std::vector<DimAccess> dims;
    for (auto& i : idx) dims.push_back(dim_access(i, Expr()));
    entry(list, b).accesses.push_back(std::move(dims));
  }

  void record_full(std::vector<BufferAccesses>* list, const Buffer& b) {
    std::vector<DimAccess> dims(b->ndim());
    for (auto& d : dims) d.full = true;
    entry(list, b).accesses.push_back(std::move(dims));
  }

  void nested_block(const BlockRealizeNode& br) {
    const BlockNode& inner = *br.block.get();
    for (auto& a : inner.allocs) excluded.insert(a.get());
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < inner.iter_vars.size() && i < br.bindings.size(); ++i)
      sub[inner.iter_vars[i].var.get()] = br.bindings[i];
    auto subst = [&](const Expr& e) {
      if (!e.defined()) return e;
      return substitute(e, sub);
    };
    auto add = [&](std::vector<BufferAccesses>* list, const std::vector<BufferRegion>& regions) {
      for (auto& r : regions) {
        std::vector<DimAccess> dims;
        for (auto& rg : r.ranges) dims.push_back(dim_access(subst(rg.begin), subst(rg.end)));
        entry(list, r.buffer).accesses.push_back(std::move(dims));
      }
    };
    add(&reads, inner.reads);
    add(&writes, inner.writes);
  }
};

std::vector<BufferRegion> finish(const std::vector<BufferAccesses>& list,
                                 const std::unordered_set<const BufferNode*>& excluded) {
  std::vector<BufferRegion> out;
  for (auto& ba : list) {
    if (excluded.count(ba.buffer.get())) continue;
    BufferRegion r;
    r.buffer = ba.buffer;
    size_t nd = ba.buffer->ndim();
    for (size_t d = 0; d < nd; ++d) {
      DType t = d < ba.buffer->shape.size() ? ba.buffer->shape[d].dtype() : DType::I32;
      Range full{make_int(0, t), ba.buffer->shape[d]};
      bool all_points = true, any_full = false;
      for (auto& acc : ba.accesses) {
        if (d >= acc.size()) {
          any_full = true;
          continue;
        }
        if (acc[d].full) any_full = true;
        if (!acc[d].is_point || !expr_identical(acc[d].point, ba.accesses[0][d].point)) all_points = false;
      }
      if (any_full) {
        r.ranges.push_back(full);
        continue;
      }
      if (all_points) {
        r.ranges.push_back(Range{ba.accesses[0][d].point, Expr()});
        continue;
      }
      Lin lo = ba.accesses[0][d].lo, hi = ba.accesses[0][d].hi;
      bool ok = true;
      for (auto& acc : ba.accesses) {
        if (!same_terms(acc[d].lo, lo) || !same_terms(acc[d].hi, hi)) {
          ok = false;
          break;
        }
        lo.c = std::min(lo.c, acc[d].lo.c);
        hi.c = std::max(hi.c, acc[d].hi.c);
      }
      if (!ok) {
        r.ranges.push_back(full);
        continue;
      }
      DType it = ba.accesses[0][d].is_point ? ba.accesses[0][d].point.dtype() : t;
      if (same_terms(lo, hi) && lo.c == hi.c) {
        r.ranges.push_back(Range{from_lin(lo, it), Expr()});
      } else {
        hi.c = wadd(hi.c, 1);
        r.ranges.push_back(Range{from_lin(lo, it), from_lin(hi, it)});
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void infer_block_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                         std::vector<BufferRegion>* writes) {
  Detector det;
  for (auto& a : block.allocs) det.excluded.insert(a.get());
  det.stmt(block.init);
  det.stmt(block.body);
  *reads = finish(det.reads, det.excluded);
  *writes = finish(det.writes, det.excluded);
}

}  // namespace tirc

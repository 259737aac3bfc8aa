#include "transforms/simplify/region.h"

#include <algorithm>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/simplify/bounds.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc {

namespace {

struct DimHull {
  SymInterval iv;  // inclusive [min, max]; undefined end: whole dimension
  bool any = false;
};

struct Access {
  Buffer buffer;
  std::vector<DimHull> dims;
};

class ShapeVars : public IRVisitor {
 public:
  explicit ShapeVars(VarRanges& known) : known_(known) {}
  using IRVisitor::visit;

 protected:
  void add(const Buffer& b) {
    for (auto& d : b->shape)
      if (auto* v = d.as<VarNode>(); v && !known_.count(v)) known_[v] = {0, Interval::kPosInf};
  }
  void visit_load(const LoadNode* n) override {
    add(n->buffer);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    add(n->buffer);
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    add(n->buffer);
    IRVisitor::visit_buffer_ptr(n);
  }

 private:
  VarRanges& known_;
};

class RegionCollector {
 public:
  RegionCollector(const BlockNode& block, const std::unordered_set<const BufferNode*>* read_only)
      : read_only_(read_only) {
    for (auto& iv : block.iter_vars) {
      Interval r = const_int_bound(iv.extent);
      if (r.has_upper() && r.hi >= 2) known_[iv.var.get()] = {0, r.hi - 1};
    }
    for (auto& b : block.allocs) excluded_.insert(b.get());
  }

  void run(const BlockNode& block) {
    // A buffer dimension that is a plain scalar (`A: f32[n]`) is never negative in a valid
    // program: knowing n >= 0 lets strides such as `k * n` be bounded.
    ShapeVars sv(known_);
    sv.visit(block.body);
    if (block.init.defined()) sv.visit(block.init);
    if (block.init.defined()) visit(block.init);
    visit(block.body);
  }

  std::vector<BufferRegion> result(bool writes) {
    std::vector<BufferRegion> out;
    auto& list = writes ? writes_ : reads_;
    Analyzer an(known_);
    an.set_assume_no_overflow(true);
    for (auto& acc : list) {
      if (excluded_.count(acc.buffer.get())) continue;
      BufferRegion br;
      br.buffer = acc.buffer;
      for (size_t d = 0; d < acc.dims.size(); ++d) {
        const SymInterval& iv = acc.dims[d].iv;
        if (iv.min.defined() && iv.max.defined() && expr_identical(iv.min, iv.max)) {
          br.ranges.push_back({iv.min, Expr()});
          continue;
        }
        Expr extent = d < acc.buffer->shape.size() ? acc.buffer->shape[d] : Expr();
        Expr lo = iv.min, hi = iv.max;
        DType t = lo.defined() ? lo.dtype() : (hi.defined() ? hi.dtype() : DType::I32);
        if (!lo.defined()) lo = make_int(0, t);
        if (!hi.defined())
          hi = extent.defined() ? make_binary(BinOp::Sub, extent, make_int(1, extent.dtype())) : Expr();
        lo = an.simplify(lo);
        if (hi.defined()) hi = an.simplify(hi);
        if (hi.defined() && expr_identical(lo, hi)) {
          br.ranges.push_back({lo, Expr()});
          continue;
        }
        int64_t l, h, n;
        if (extent.defined() && is_const_int(extent, &n) && hi.defined() && is_const_int(lo, &l) &&
            is_const_int(hi, &h)) {
          int64_t cl = std::max<int64_t>(l, 0), ch = std::min<int64_t>(h, n - 1);
          if (cl <= ch && (cl != l || ch != h)) {
            lo = make_int(cl, lo.dtype());
            hi = make_int(ch, hi.dtype());
          }
        }
        Expr end = hi.defined() ? an.simplify(make_binary(BinOp::Add, hi, make_int(1, hi.dtype()))) : extent;
        br.ranges.push_back({lo, end});
      }
      out.push_back(std::move(br));
    }
    return out;
  }

 private:
  // An index without relaxed variables is a point kept as written (like TVM), so inferred
  // regions read like the accesses: `W[vc, vf, 2 - vr]`, not a canonical `vr * -1 + 2`.
  // Expression-level lets are bound like statement lets (the var relaxed over the capped
  // bound of its value) and dropped, so that symbolic_bound never substitutes a chain of
  // nested let values itself (exponential when each value uses the previous var twice).
  class LetStripper : public IRMutator {
   public:
    explicit LetStripper(RegionCollector& c) : c_(c) {}
    Expr mutate_let(const LetNode* n, const Expr&) override {
      Expr v = mutate(n->value);
      c_.relax_[n->var.get()] = c_.bound(v);
      return mutate(n->body);
    }

   private:
    RegionCollector& c_;
  };

  SymInterval bound(const Expr& e0) {
    Expr e = e0;
    bool has_let = false;
    for_each_expr(e, [&](const Expr& x) { has_let = has_let || x.kind() == ExprKind::Let; });
    if (has_let) e = LetStripper(*this).mutate(e);
    if (!uses_relaxed(e)) return {e, e};
    SymInterval r = symbolic_bound(e, relax_, known_);
    // A bound that does not simplify to a small expression is dropped (the whole dimension):
    // chains of lets using the previous one several times (`let t2 = t1 // 2 + t1 // 3`)
    // would otherwise grow exponentially (the parser is fuzzed: no hangs).
    if (r.min.defined() && too_big(r.min)) r.min = Expr();
    if (r.max.defined() && too_big(r.max)) r.max = Expr();
    return r;
  }
  static bool too_big(const Expr& e) {
    constexpr int kMaxBoundNodes = 256;
    int n = 0;
    for_each_expr(e, [&](const Expr&) { ++n; });
    return n > kMaxBoundNodes;
  }

  bool uses_relaxed(const Expr& e) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind() == ExprKind::Var && relax_.count(static_cast<const VarNode*>(x.get()))) found = true;
    });
    return found;
  }

  // Tightens the range of a relaxed variable from a condition that holds in a branch (or
  // whose negation holds): `k >= 1`, `vi*4 + k < n + 1`, conjunctions thereof. A new end is
  // taken only when it simplifies to a plain expression (no min/max), so regions stay
  // readable; otherwise the old end is kept (always sound).
  void narrow(const Expr& cond, bool negate) {
    if (auto* u = cond.as<UnaryNode>(); u && u->op == UnOp::Not) return narrow(u->a, !negate);
    auto* b = cond.as<BinaryNode>();
    if (!b) return;
    if ((b->op == BinOp::And && !negate) || (b->op == BinOp::Or && negate)) {
      narrow(b->a, negate);
      narrow(b->b, negate);
      return;
    }
    if (!binop_is_compare(b->op) || !is_int(b->a.dtype())) return;
    BinOp op = b->op;
    if (negate) {
      switch (op) {
        case BinOp::LT: op = BinOp::GE; break;
        case BinOp::LE: op = BinOp::GT; break;
        case BinOp::GT: op = BinOp::LE; break;
        case BinOp::GE: op = BinOp::LT; break;
        case BinOp::EQ: op = BinOp::NE; break;
        default: return;
      }
    }
    // a - b OP 0 with exactly one relaxed var, coefficient +-1: v OP' rest.
    SumForm d = to_sum_form(b->a);
    d.add(to_sum_form(b->b), -1);
    const VarNode* v = nullptr;
    int64_t coeff = 0;
    SumForm rest;
    rest.dtype = d.dtype;
    rest.constant = d.constant;
    for (auto& t : d.terms) {
      auto* tv = t.term.as<VarNode>();
      if (tv && relax_.count(tv)) {
        if (v) return;
        v = tv;
        coeff = as_signed(t.coeff, d.dtype);
        continue;
      }
      if (uses_relaxed(t.term)) return;
      rest.add_term(t.term, t.coeff);
    }
    if (!v || (coeff != 1 && coeff != -1)) return;
    // coeff*v + rest OP 0  ->  v OP -rest (coeff 1) or v OP' rest (coeff -1, OP mirrored).
    Expr other;
    if (coeff == 1) {
      rest.scale(-1);
    } else {
      switch (op) {
        case BinOp::LT: op = BinOp::GT; break;
        case BinOp::LE: op = BinOp::GE; break;
        case BinOp::GT: op = BinOp::LT; break;
        case BinOp::GE: op = BinOp::LE; break;
        default: break;
      }
    }
    other = from_sum_form(rest);
    DType t = other.dtype();
    Analyzer an(known_);
    an.set_assume_no_overflow(true);
    SymInterval& r = relax_[v];
    auto tighten = [&](Expr& end, Expr cand, BinOp pick) {
      cand = an.simplify(cand);
      if (!end.defined()) {
        end = cand;
        return;
      }
      Expr m = an.simplify(make_binary(pick, end, cand));
      auto* mb = m.as<BinaryNode>();
      if (!(mb && (mb->op == BinOp::Min || mb->op == BinOp::Max))) end = m;
    };
    switch (op) {
      case BinOp::LT: tighten(r.max, make_binary(BinOp::Sub, other, make_int(1, t)), BinOp::Min); break;
      case BinOp::LE: tighten(r.max, other, BinOp::Min); break;
      case BinOp::GT: tighten(r.min, make_binary(BinOp::Add, other, make_int(1, t)), BinOp::Max); break;
      case BinOp::GE: tighten(r.min, other, BinOp::Max); break;
      case BinOp::EQ:
        tighten(r.min, other, BinOp::Max);
        tighten(r.max, other, BinOp::Min);
        break;
      default: break;
    }
  }

  template <typename F>
  void in_branch(const Expr& cond, bool negate, F&& f) {
    SymRanges saved = relax_;
    narrow(cond, negate);
    f();
    relax_ = std::move(saved);
  }

  void add_access(std::vector<Access>& list, const Buffer& b, const std::vector<SymInterval>& dims) {
    Access* acc = nullptr;
    for (auto& a : list)
      if (a.buffer == b) acc = &a;
    if (!acc) {
      list.push_back({b, std::vector<DimHull>(dims.size())});
      acc = &list.back();
    }
    if (acc->dims.size() < dims.size()) acc->dims.resize(dims.size());
    Analyzer an(known_);
    an.set_assume_no_overflow(true);
    for (size_t d = 0; d < dims.size(); ++d) {
      DimHull& h = acc->dims[d];
      if (!h.any) {
        h.iv = dims[d];
        h.any = true;
        continue;
      }
      auto merge = [&](const Expr& x, const Expr& y, BinOp op) -> Expr {
        if (!x.defined() || !y.defined()) return Expr();
        if (expr_identical(x, y)) return x;
        // Indices of one buffer may mix i32 and i64 (X[i64(v) * 2] next to X[5 - v]): the
        // hull is taken in the wider type, so that the printed region reads back.
        if (x.dtype() != y.dtype() && is_int(x.dtype()) && is_int(y.dtype())) {
          DType w = dtype_bits(x.dtype()) >= dtype_bits(y.dtype()) ? x.dtype() : y.dtype();
          return an.simplify(
              make_binary(op, x.dtype() == w ? x : make_cast(w, x), y.dtype() == w ? y : make_cast(w, y)));
        }
        return an.simplify(make_binary(op, x, y));
      };
      h.iv = {merge(h.iv.min, dims[d].min, BinOp::Min), merge(h.iv.max, dims[d].max, BinOp::Max)};
    }
  }

  void access_point(std::vector<Access>& list, const Buffer& b, const std::vector<Expr>& idx) {
    std::vector<SymInterval> dims;
    for (auto& i : idx) dims.push_back(bound(i));
    add_access(list, b, dims);
  }
  void access_whole(const Buffer& b) {
    std::vector<SymInterval> dims(b->shape.size());
    add_access(reads_, b, dims);
    // The callee may write through a pointer, except to a buffer nobody may write.
    if (!read_only_ || !read_only_->count(b.get())) add_access(writes_, b, dims);
  }

  void visit(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        access_point(reads_, n->buffer, n->indices);
        for (auto& i : n->indices) visit(i);
        return;
      }
      case ExprKind::BufferPtr: {
        auto* n = e.as<BufferPtrNode>();
        access_whole(n->buffer);
        for (auto& i : n->indices) visit(i);
        return;
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        visit(n->a);
        visit(n->b);
        return;
      }
      case ExprKind::Unary: visit(e.as<UnaryNode>()->a); return;
      case ExprKind::Cast: visit(e.as<CastNode>()->value); return;
      case ExprKind::Call:
        for (auto& a : e.as<CallNode>()->args) visit(a);
        return;
      case ExprKind::Select: {
        // Both arms are evaluated whatever the condition: no narrowing.
        auto* n = as_select_like(e);
        visit(n->cond);
        visit(n->t);
        visit(n->f);
        return;
      }
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        visit(n->cond);
        in_branch(n->cond, false, [&] { visit(n->t); });
        in_branch(n->cond, true, [&] { visit(n->f); });
        return;
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        visit(n->value);
        relax_[n->var.get()] = bound(n->value);
        visit(n->body);
        return;
      }
      default: return;
    }
  }

  void visit(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        visit(n->min);
        visit(n->extent);
        SymInterval lo = bound(n->min);
        SymInterval hi = bound(make_binary(BinOp::Sub, make_binary(BinOp::Add, n->min, n->extent),
                                           make_int(1, n->extent.dtype())));
        relax_[n->loop_var.get()] = {lo.min, hi.max};
        visit(n->body);
        return;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        for (auto& i : n->indices) visit(i);
        visit(n->value);
        access_point(writes_, n->buffer, n->indices);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        visit(n->cond);
        in_branch(n->cond, false, [&] { visit(n->then_case); });
        in_branch(n->cond, true, [&] { visit(n->else_case); });
        return;
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        visit(n->value);
        relax_[n->var.get()] = bound(n->value);
        visit(n->body);
        return;
      }
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) visit(x);
        return;
      case StmtKind::Evaluate:
        for (auto& a : s.as<EvaluateNode>()->args) visit(a);
        return;
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        for (auto& b : n->bindings) visit(b);
        visit(n->predicate);
        const BlockNode& inner = *n->block.get();
        for (auto& b : inner.allocs) excluded_.insert(b.get());
        std::vector<BufferRegion> r = inner.reads, w = inner.writes;
        if (r.empty() && w.empty()) {
          if (read_only_)
            infer_access_regions(inner, &r, &w, *read_only_);
          else
            infer_access_regions(inner, &r, &w);
        }
        std::unordered_map<const VarNode*, Expr> sub;
        for (size_t i = 0; i < inner.iter_vars.size() && i < n->bindings.size(); ++i)
          sub[inner.iter_vars[i].var.get()] = n->bindings[i];
        SymRanges saved = relax_;
        narrow(n->predicate, false);  // `where` restricts the loop vars seen by the inner block
        for (int pass = 0; pass < 2; ++pass) {
          for (auto& br : pass == 0 ? r : w) {
            std::vector<SymInterval> dims;
            for (auto& rg : br.ranges) {
              Expr b0 = substitute(rg.begin, sub);
              if (rg.is_point()) {
                dims.push_back(bound(b0));
              } else {
                Expr last = substitute(make_binary(BinOp::Sub, rg.end, make_int(1, rg.end.dtype())), sub);
                dims.push_back({bound(b0).min, bound(last).max});
              }
            }
            add_access(pass == 0 ? reads_ : writes_, br.buffer, dims);
          }
        }
        relax_ = std::move(saved);
        return;
      }
    }
  }

  const std::unordered_set<const BufferNode*>* read_only_;
  SymRanges relax_;
  VarRanges known_;
  std::unordered_set<const BufferNode*> excluded_;
  std::vector<Access> reads_, writes_;
};

}  // namespace

namespace {

void infer(const BlockNode& block, std::vector<BufferRegion>* reads, std::vector<BufferRegion>* writes,
           const std::unordered_set<const BufferNode*>* read_only) {
  RegionCollector c(block, read_only);
  c.run(block);
  if (reads) *reads = c.result(false);
  if (writes) *writes = c.result(true);
}

}  // namespace

void infer_access_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                          std::vector<BufferRegion>* writes) {
  infer(block, reads, writes, nullptr);
}

void infer_access_regions(const BlockNode& block, std::vector<BufferRegion>* reads,
                          std::vector<BufferRegion>* writes,
                          const std::unordered_set<const BufferNode*>& read_only) {
  infer(block, reads, writes, &read_only);
}

}  // namespace tirc

// accessed_region_under_loop: see guarded_region.h.
#include "transforms/schedule/guarded_region.h"

#include <unordered_set>

#include "ir/mutator.h"
#include "transforms/schedule/tree.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

// A linear condition `L <= 0`, `L == 0` or `L != 0` over integers.
struct Cond {
  enum Op { LE, EQ, NE } op;
  Linear l;
};

// The linear conditions implied by `e` being true (negate: false); others are dropped (they
// only make the regions wider, never wrong).
void linear_conds(const Expr& e, bool negate, std::vector<Cond>* out) {
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Not) return linear_conds(u->a, !negate, out);
  auto* b = e.as<BinaryNode>();
  if (!b) return;
  if ((b->op == BinOp::And && !negate) || (b->op == BinOp::Or && negate)) {
    linear_conds(b->a, negate, out);
    linear_conds(b->b, negate, out);
    return;
  }
  BinOp op = b->op;
  if (negate) {
    switch (op) {
      case BinOp::LT: op = BinOp::GE; break;
      case BinOp::LE: op = BinOp::GT; break;
      case BinOp::GT: op = BinOp::LE; break;
      case BinOp::GE: op = BinOp::LT; break;
      case BinOp::EQ: op = BinOp::NE; break;
      case BinOp::NE: op = BinOp::EQ; break;
      default: return;
    }
  }
  Expr x = b->a, y = b->b;
  std::optional<Linear> l;
  Cond::Op cop = Cond::LE;
  int64_t add = 0;
  switch (op) {
    case BinOp::LT: l = to_linear(fold(x - y)), add = 1; break;  // x - y + 1 <= 0
    case BinOp::LE: l = to_linear(fold(x - y)); break;           // x - y <= 0
    case BinOp::GT: l = to_linear(fold(y - x)), add = 1; break;  // y - x + 1 <= 0
    case BinOp::GE: l = to_linear(fold(y - x)); break;           // y - x <= 0
    case BinOp::EQ: l = to_linear(fold(x - y)), cop = Cond::EQ; break;
    case BinOp::NE: l = to_linear(fold(x - y)), cop = Cond::NE; break;
    default: return;
  }
  if (!l) return;
  l->c += add;
  out->push_back(Cond{cop, *l});
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// k when a's terms are k times b's (k = +-1), else 0.
int64_t same_form(const Linear& a, const Linear& b) {
  if (a.terms.empty() || a.terms.size() != b.terms.size()) return 0;
  for (int64_t k : {int64_t{1}, int64_t{-1}}) {
    bool ok = true;
    for (auto& [atom, c] : a.terms) {
      bool found = false;
      for (auto& [batom, bc] : b.terms)
        if (expr_identical(atom, batom)) found = bc * k == c;
      ok = ok && found;
    }
    if (ok) return k;
  }
  return 0;
}

struct Access {
  std::vector<Expr> indices;
  std::vector<Expr> guards;  // conditions (in b's own variables) the access runs under
};

// Collects the loads or stores of buf with their guards; false when the body holds something
// not analysed.
struct Collector {
  const Buffer& buf;
  bool write;
  std::vector<Access> out;
  std::unordered_set<const VarNode*> lets;
  bool ok = true;

  void expr(const Expr& e, std::vector<Expr>& g) {
    if (!ok || !e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* l = e.as<LoadNode>();
        for (auto& i : l->indices) expr(i, g);
        if (!write && l->buffer.same_as(buf)) out.push_back(Access{l->indices, g});
        return;
      }
      case ExprKind::BufferPtr:
        if (e.as<BufferPtrNode>()->buffer.same_as(buf)) ok = false;
        for (auto& i : e.as<BufferPtrNode>()->indices) expr(i, g);
        return;
      case ExprKind::Binary:
        expr(e.as<BinaryNode>()->a, g);
        expr(e.as<BinaryNode>()->b, g);
        return;
      case ExprKind::Unary: expr(e.as<UnaryNode>()->a, g); return;
      case ExprKind::Cast: expr(e.as<CastNode>()->value, g); return;
      case ExprKind::Call:
        for (auto& a : e.as<CallNode>()->args) expr(a, g);
        return;
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* s = static_cast<const SelectNode*>(e.get());
        expr(s->cond, g);
        if (e.kind() == ExprKind::Select) {  // both arms evaluated
          expr(s->t, g);
          expr(s->f, g);
          return;
        }
        g.push_back(s->cond);
        expr(s->t, g);
        g.back() = make_unary(UnOp::Not, s->cond);
        expr(s->f, g);
        g.pop_back();
        return;
      }
      case ExprKind::Let: {
        auto* l = e.as<LetNode>();
        expr(l->value, g);
        lets.insert(l->var.get());
        expr(l->body, g);
        return;
      }
      default: return;
    }
  }

  void stmt(const Stmt& s, std::vector<Expr>& g) {
    if (!ok || !s.defined()) return;
    switch (s.kind()) {
      case StmtKind::Store: {
        auto* x = s.as<StoreNode>();
        for (auto& i : x->indices) expr(i, g);
        expr(x->value, g);
        if (write && x->buffer.same_as(buf)) out.push_back(Access{x->indices, g});
        return;
      }
      case StmtKind::IfThenElse: {
        auto* x = s.as<IfThenElseStmtNode>();
        expr(x->cond, g);
        g.push_back(x->cond);
        stmt(x->then_case, g);
        g.back() = make_unary(UnOp::Not, x->cond);
        stmt(x->else_case, g);
        g.pop_back();
        return;
      }
      case StmtKind::LetStmt: {
        auto* x = s.as<LetStmtNode>();
        expr(x->value, g);
        lets.insert(x->var.get());
        stmt(x->body, g);
        return;
      }
      case StmtKind::Seq:
        for (auto& c : s.as<SeqNode>()->stmts) stmt(c, g);
        return;
      default: ok = false;  // loops, nested blocks, extern calls
    }
  }
};

// The hull of two inclusive ranges whose ends compare the same way for all values of `known`.
std::optional<SymRange> hull(const SymRange& a, const SymRange& b, const RangeMap& known) {
  Expr lo, hi;
  if (prove_le(a.lo, b.lo, known))
    lo = a.lo;
  else if (prove_le(b.lo, a.lo, known))
    lo = b.lo;
  if (prove_le(b.hi, a.hi, known))
    hi = a.hi;
  else if (prove_le(a.hi, b.hi, known))
    hi = b.hi;
  if (!lo.defined() || !hi.defined()) return std::nullopt;
  return SymRange{lo, hi};
}

}  // namespace

std::vector<std::optional<SymRange>> accessed_region_under_loop(const Stmt& loop, const Stmt& bs,
                                                                const BufferRegion& declared, bool write,
                                                                const RangeMap& known) {
  auto fallback = region_under_loop(loop, bs, declared);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  const Buffer& buf = declared.buffer;
  if (!write && br->predicate.defined()) {
    bool loads = false;
    for_each_expr(br->predicate, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(buf)) loads = true;
    });
    if (loads) return fallback;
  }
  Collector col{buf, write, {}, {}, true};
  std::vector<Expr> g;
  col.stmt(b->init, g);
  col.stmt(b->body, g);
  if (!col.ok || col.out.empty()) return fallback;
  // As region_under_loop: b's iter vars (and those of blocks crossed on the way) replaced by
  // their bindings, the loops strictly between `loop` and b relaxed.
  SymRangeMap inner;
  std::vector<std::unordered_map<const VarNode*, Expr>> crossed;
  for (auto& p : find_path(loop.as<ForNode>()->body, bs.get())) {
    if (auto* r = p.as<BlockRealizeNode>(); r && !p.same_as(bs)) {
      std::unordered_map<const VarNode*, Expr> m;
      for (size_t i = 0; i < r->block->iter_vars.size(); ++i)
        m[r->block->iter_vars[i].var.get()] = r->bindings[i];
      crossed.push_back(std::move(m));
      continue;
    }
    auto* f = p.as<ForNode>();
    if (!f) continue;
    SymRange rg{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
    if (auto lo = relax(rg.lo, inner)) rg.lo = lo->lo;
    if (auto hi = relax(rg.hi, inner)) rg.hi = hi->hi;
    inner[f->loop_var.get()] = rg;
  }
  std::unordered_map<const VarNode*, Expr> sub;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
  auto down = [&](Expr e) {
    e = substitute(e, sub);
    for (size_t k = crossed.size(); k-- > 0;) e = substitute(e, crossed[k]);
    return fold(e);
  };
  const size_t nd = declared.ranges.size();
  std::vector<std::optional<SymRange>> acc(nd);
  bool first = true;
  std::vector<bool> bad(nd, false);
  for (auto& a : col.out) {
    if (a.indices.size() != nd) return fallback;
    std::vector<Cond> conds;
    if (br->predicate.defined()) linear_conds(down(br->predicate), false, &conds);
    for (auto& c : a.guards) linear_conds(down(c), false, &conds);
    // Narrow the relaxed loops by the conditions on one of them.
    SymRangeMap nar = inner;
    bool dead = false;
    for (auto& c : conds) {
      if (c.l.terms.size() != 1) continue;
      auto* v = c.l.terms[0].first.as<VarNode>();
      auto it = v ? nar.find(v) : nar.end();
      int64_t lo, hi;
      if (it == nar.end() || !is_const_int(fold(it->second.lo), &lo) ||
          !is_const_int(fold(it->second.hi), &hi))
        continue;
      int64_t k = c.l.terms[0].second, cc = c.l.c;  // k * v + cc OP 0
      if (c.op == Cond::LE) {
        if (k > 0)
          hi = std::min(hi, floor_div(-cc, k));
        else
          lo = std::max(lo, ceil_div(cc, -k));
      } else if (c.op == Cond::EQ) {
        if (cc % k != 0) {
          dead = true;
          break;
        }
        lo = std::max(lo, -cc / k);
        hi = std::min(hi, -cc / k);
      } else if (cc % k == 0) {
        if (-cc / k == lo) ++lo;
        if (-cc / k == hi) --hi;
      }
      if (lo > hi) {
        dead = true;
        break;
      }
      DType t = it->second.lo.dtype();
      it->second = SymRange{make_int(lo, t), make_int(hi, t)};
    }
    if (dead) continue;
    std::vector<std::optional<SymRange>> reg(nd);
    for (size_t d = 0; d < nd; ++d) {
      Expr e = down(a.indices[d]);
      bool local = uses_var(e, [&](const VarNode* v) { return col.lets.count(v) > 0 || sub.count(v) > 0; });
      bool has_load = false;
      for_each_expr(e, [&](const Expr& x) { has_load = has_load || x.kind() == ExprKind::Load; });
      auto r = relax(e, nar);
      if (local || has_load || !r) continue;
      // Clip by conditions on the same linear form as the index.
      auto le = to_linear(e);
      for (auto& c : conds) {
        if (!le || c.op == Cond::NE) continue;
        int64_t k = same_form(c.l, *le);  // c.l = k * (e - le.c) + c.l.c
        if (k == 0) continue;
        DType t = e.dtype();
        std::optional<int64_t> clo, chi;
        if (c.op == Cond::EQ)
          clo = chi = le->c - k * c.l.c;
        else if (k == 1)
          chi = le->c - c.l.c;  // e - le.c + c.l.c <= 0
        else
          clo = le->c + c.l.c;  // -(e - le.c) + c.l.c <= 0
        int64_t x;
        if (clo && (!is_const_int(fold(r->lo), &x) || x < *clo) &&
            (is_const_int(fold(r->lo), &x) || prove_le(r->lo, make_int(*clo, t), known)))
          r->lo = make_int(*clo, t);
        if (chi && (!is_const_int(fold(r->hi), &x) || x > *chi) &&
            (is_const_int(fold(r->hi), &x) || prove_le(make_int(*chi, t), r->hi, known)))
          r->hi = make_int(*chi, t);
      }
      int64_t l0, h0;
      if (is_const_int(fold(r->lo), &l0) && is_const_int(fold(r->hi), &h0) && l0 > h0) {
        dead = true;
        break;
      }
      reg[d] = SymRange{fold(r->lo), fold(r->hi)};
    }
    if (dead) continue;
    for (size_t d = 0; d < nd; ++d) {
      if (bad[d]) continue;
      if (!reg[d]) {
        bad[d] = true;
        continue;
      }
      if (first) {
        acc[d] = reg[d];
        continue;
      }
      acc[d] = hull(*acc[d], *reg[d], known);
      if (!acc[d]) bad[d] = true;
    }
    first = false;
  }
  if (first) return fallback;  // no access runs: keep the declared region
  for (size_t d = 0; d < nd; ++d)
    if (!bad[d] && acc[d]) fallback[d] = acc[d];
  return fallback;
}

}  // namespace tirc::sched

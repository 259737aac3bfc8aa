#include "transforms/schedule/coverage.h"

#include <functional>

#include "ir/visitor.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

std::optional<int64_t> eval_int(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& env) {
  if (!e.defined()) return std::nullopt;
  if (is_float(e.dtype())) return std::nullopt;
  if (auto* c = e.as<IntImmNode>()) return c->value;
  if (auto* v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  if (auto* c = e.as<CastNode>()) {
    auto x = eval_int(c->value, env);
    if (!x) return std::nullopt;
    return e.dtype() == DType::Bool ? int64_t{*x != 0} : *x;
  }
  if (auto* u = e.as<UnaryNode>()) {
    auto x = eval_int(u->a, env);
    if (!x) return std::nullopt;
    return u->op == UnOp::Neg ? -*x : int64_t{*x == 0};
  }
  if (e.kind() == ExprKind::Select || e.kind() == ExprKind::IfThenElse) {
    auto* s = static_cast<const SelectNode*>(e.get());
    auto c = eval_int(s->cond, env);
    if (!c) return std::nullopt;
    return eval_int(*c ? s->t : s->f, env);
  }
  auto* b = e.as<BinaryNode>();
  if (!b) return std::nullopt;
  auto x = eval_int(b->a, env), y = eval_int(b->b, env);
  if (!x || !y) return std::nullopt;
  switch (b->op) {
    case BinOp::Add: return *x + *y;
    case BinOp::Sub: return *x - *y;
    case BinOp::Mul: return *x * *y;
    case BinOp::FloorDiv:
      if (*y == 0) return std::nullopt;
      return floordiv(*x, *y);
    case BinOp::FloorMod:
      if (*y == 0) return std::nullopt;
      return *x - floordiv(*x, *y) * *y;
    case BinOp::Min: return std::min(*x, *y);
    case BinOp::Max: return std::max(*x, *y);
    case BinOp::EQ: return int64_t{*x == *y};
    case BinOp::NE: return int64_t{*x != *y};
    case BinOp::LT: return int64_t{*x < *y};
    case BinOp::LE: return int64_t{*x <= *y};
    case BinOp::GT: return int64_t{*x > *y};
    case BinOp::GE: return int64_t{*x >= *y};
    case BinOp::And: return int64_t{*x != 0 && *y != 0};
    case BinOp::Or: return int64_t{*x != 0 || *y != 0};
    default: return std::nullopt;
  }
}

int64_t element_offset(const Buffer& A, const std::vector<int64_t>& idx) {
  if (idx.size() != A->ndim()) return -1;
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t n;
    if (!is_const_int(A->shape[d], &n) || idx[d] < 0 || idx[d] >= n) return -1;
    off = off * n + idx[d];
  }
  return off;
}

namespace {

// The stores to A in a block body with the conditions of the `if`s and the loops around them
// (evaluated per point by the caller). A store the listing cannot place (inside a nested
// block) sets *unlisted: the caller gives up rather than take its elements as unwritten.
struct GuardedStore {
  const StoreNode* store;
  std::vector<Expr> conds;              // all must hold (an else branch holds the negation)
  std::vector<const ForNode*> loops;    // outermost first
};

void guarded_stores(const Stmt& s, const Buffer& A, std::vector<Expr>& conds, std::vector<const ForNode*>& loops,
                    std::vector<GuardedStore>* out, bool* unlisted) {
  if (!s.defined()) return;
  if (auto* st = s.as<StoreNode>()) {
    if (st->buffer.same_as(A)) out->push_back(GuardedStore{st, conds, loops});
  } else if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) guarded_stores(x, A, conds, loops, out, unlisted);
  } else if (auto* l = s.as<LetStmtNode>()) {
    // Indices using the let name do not evaluate: the walk gives up.
    guarded_stores(l->body, A, conds, loops, out, unlisted);
  } else if (auto* i = s.as<IfThenElseStmtNode>()) {
    conds.push_back(i->cond);
    guarded_stores(i->then_case, A, conds, loops, out, unlisted);
    conds.back() = make_unary(UnOp::Not, i->cond);
    guarded_stores(i->else_case, A, conds, loops, out, unlisted);
    conds.pop_back();
  } else if (auto* f = s.as<ForNode>()) {
    loops.push_back(f);
    guarded_stores(f->body, A, conds, loops, out, unlisted);
    loops.pop_back();
  } else {
    // Nested blocks, call_extern: whatever they store of A is not listed.
    struct Touches : IRVisitor {
      const Buffer* A;
      bool found = false;
      void visit_store(const StoreNode* n) override {
        found = found || n->buffer.same_as(*A);
        IRVisitor::visit_store(n);
      }
      void visit_evaluate(const EvaluateNode*) override { found = true; }
    } t;
    t.A = &A;
    t.visit(s);
    if (t.found) *unlisted = true;
  }
}

// Whether the statements between the function's root and w hold a condition or a binding
// the loop walk does not see (an `if`, a `let`, an enclosing block and its `where`).
bool hidden_context(const ScheduleState& st, const Stmt& w) {
  auto path = st.path_to(w.get());
  for (size_t i = 1; i + 1 < path.size(); ++i)
    if (!path[i].as<ForNode>() && !path[i].as<SeqNode>()) return true;
  return false;
}

}  // namespace

std::optional<std::vector<bool>> written_elements(const ScheduleState& st, const Buffer& A, int64_t budget) {
  int64_t total = 1;
  for (auto& e : A->shape) {
    int64_t n;
    if (!is_const_int(e, &n) || n < 0 || n > (int64_t{1} << 22)) return std::nullopt;
    total *= n;
    if (total > (int64_t{1} << 22)) return std::nullopt;
  }
  std::vector<bool> written(static_cast<size_t>(total), false);
  int64_t points = 0;
  for (auto& w : writers_of(st, A)) {
    const BlockRealizeNode* r = realize(w);
    const BlockNode* b = r->block.get();
    std::vector<GuardedStore> body_stores, init_stores;
    std::vector<Expr> conds;
    std::vector<const ForNode*> inner;
    bool unlisted = false;
    guarded_stores(b->body, A, conds, inner, &body_stores, &unlisted);
    guarded_stores(b->init, A, conds, inner, &init_stores, &unlisted);
    if (unlisted || hidden_context(st, w)) return std::nullopt;
    auto loops = st.loops_above(w.get());
    std::unordered_map<const VarNode*, int64_t> env;
    bool ok = true;
    std::function<void(size_t)> walk = [&](size_t depth) {
      if (!ok) return;
      if (depth < loops.size()) {
        auto* f = loops[depth].as<ForNode>();
        auto lo = eval_int(f->min, env), ext = eval_int(f->extent, env);
        if (!lo || !ext) {
          ok = false;
          return;
        }
        for (int64_t i = 0; i < *ext && ok; ++i) {
          env[f->loop_var.get()] = *lo + i;
          walk(depth + 1);
        }
        env.erase(f->loop_var.get());
        return;
      }
      if (++points > budget) {
        ok = false;
        return;
      }
      if (r->predicate.defined()) {
        auto p = eval_int(r->predicate, env);
        if (!p) {
          ok = false;
          return;
        }
        if (!*p) return;
      }
      std::unordered_map<const VarNode*, int64_t> ivs;
      bool first_reduce_point = true;
      for (size_t k = 0; k < b->iter_vars.size(); ++k) {
        auto v = eval_int(r->bindings[k], env);
        if (!v) {
          ok = false;
          return;
        }
        ivs[b->iter_vars[k].var.get()] = *v;
        if (b->iter_vars[k].kind != IterKind::Spatial && *v != 0) first_reduce_point = false;
      }
      // One store at the point `env2` (iter vars and the body's loop vars set).
      auto mark_one = [&](const GuardedStore& g, std::unordered_map<const VarNode*, int64_t>& env2) {
        bool runs = true;
        for (auto& c : g.conds) {
          auto v = eval_int(c, env2);
          if (!v) {  // a condition on loaded values: the caller decides otherwise
            ok = false;
            return;
          }
          runs = runs && *v != 0;
        }
        if (!runs) return;
        std::vector<int64_t> idx;
        for (auto& e : g.store->indices) {
          auto v = eval_int(e, env2);
          if (!v) break;  // let names, scalar parameters
          idx.push_back(*v);
        }
        if (idx.size() != g.store->indices.size()) {  // not evaluable: the caller decides otherwise
          ok = false;
          return;
        }
        int64_t off = element_offset(A, idx);
        if (off >= 0) written[static_cast<size_t>(off)] = true;
      };
      auto mark = [&](const std::vector<GuardedStore>& stores) {
        for (auto& g : stores) {
          // The loops of the body around the store (a tensorized block's impl), point by point.
          std::unordered_map<const VarNode*, int64_t> env2 = ivs;
          std::function<void(size_t)> inner_walk = [&](size_t d) {
            if (!ok) return;
            if (d == g.loops.size()) return mark_one(g, env2);
            auto lo = eval_int(g.loops[d]->min, env2), ext = eval_int(g.loops[d]->extent, env2);
            if (!lo || !ext) {
              ok = false;
              return;
            }
            for (int64_t i = 0; i < *ext && ok; ++i) {
              if (++points > budget) {
                ok = false;
                return;
              }
              env2[g.loops[d]->loop_var.get()] = *lo + i;
              inner_walk(d + 1);
            }
          };
          inner_walk(0);
          if (!ok) return;
        }
      };
      mark(body_stores);
      if (first_reduce_point) mark(init_stores);
    };
    walk(0);
    if (!ok) return std::nullopt;
  }
  return written;
}

bool stores_whole_buffer(const ScheduleState& st, const Stmt& w, const Buffer& A) {
  if (hidden_context(st, w)) return false;
  const BlockNode* b = realize(w)->block.get();
  std::vector<GuardedStore> stores;
  std::vector<Expr> conds;
  std::vector<const ForNode*> loops;
  bool unlisted = false;
  guarded_stores(b->body, A, conds, loops, &stores, &unlisted);
  for (auto& g : stores) {
    if (!g.conds.empty() || !g.loops.empty() || g.store->indices.size() != A->ndim()) continue;
    std::vector<const VarNode*> seen;
    bool whole = true;
    for (size_t d = 0; d < A->ndim() && whole; ++d) {
      auto* v = g.store->indices[d].as<VarNode>();
      const IterVar* iv = nullptr;
      for (auto& x : b->iter_vars)
        if (v && x.var.get() == v) iv = &x;
      whole = iv && std::find(seen.begin(), seen.end(), v) == seen.end() && expr_identical(iv->extent, A->shape[d]);
      seen.push_back(v);
    }
    if (whole) return true;
  }
  return false;
}

}  // namespace tirc::sched

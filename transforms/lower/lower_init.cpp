// Init lowering (TVM: LowerInitBlock): the init statement of a reduction block runs at the
// point where every reduce iter var is 0, before the body.
#include <cstdlib>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

class InitLowerer : public IRMutator {
 protected:
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    const BlockNode* n = nb.get();
    if (!n->init.defined()) return nb;
    Expr cond;
    for (auto& iv : n->iter_vars) {
      if (iv.kind != IterKind::Reduce) continue;
      Expr c = make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype()));
      cond = cond.defined() ? make_binary(BinOp::And, cond, c) : c;
    }
    BlockNode out = *n;
    Stmt init = cond.defined() ? make_if(cond, n->init) : n->init;
    out.body = make_seq({init, n->body});
    out.init = Stmt();
    return make_block(std::move(out));
  }
};

}  // namespace

Function with_body(const FunctionNode& f, Stmt body) {
  auto g = std::make_shared<FunctionNode>(f);
  g->body = std::move(body);
  return g;
}

Function lower_init(const FunctionNode& f) { return with_body(f, InitLowerer().mutate(f.body)); }

// ---- unswitch_init_tests ----
namespace {

// Integer arithmetic and comparisons of variables and constants only: evaluating it before a
// loop (also one that runs no iteration) can neither trap nor read memory.
bool pure_int_cond(const Expr& e) {
  bool ok = true;
  for_each_expr(e, [&](const Expr& x) {
    switch (x.kind()) {
      case ExprKind::IntImm:
      case ExprKind::Var: break;
      case ExprKind::Binary: {
        auto* b = x.as<BinaryNode>();
        if (b->op == BinOp::Div || b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod) {
          int64_t d = 0;
          if (!is_const_int(b->b, &d) || d == 0) ok = false;
        }
        if (is_float(b->a.dtype())) ok = false;
        break;
      }
      default: ok = false;
    }
  });
  return ok;
}

bool uses_var(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == static_cast<const ExprNode*>(v); });
  return found;
}

// The test lower_init put first in the body of a block with reduce vars: `if (r1 == 0 && ..
// && rn == 0) { INIT }` over exactly its reduce vars, in order.
bool is_init_test(const BlockNode& b, const IfThenElseStmtNode* i) {
  if (!i || i->else_case.defined()) return false;
  std::vector<const VarNode*> rv;
  for (auto& iv : b.iter_vars)
    if (iv.kind == IterKind::Reduce) rv.push_back(iv.var.get());
  Expr c = i->cond;
  for (size_t k = rv.size(); k-- > 0;) {
    Expr eq = c;
    if (k > 0) {
      auto* a = c.as<BinaryNode>();
      if (!a || a->op != BinOp::And) return false;
      eq = a->b;
      c = a->a;
    }
    auto* e = eq.as<BinaryNode>();
    int64_t z = -1;
    if (!e || e->op != BinOp::EQ || e->a.get() != static_cast<const ExprNode*>(rv[k]) ||
        !is_const_int(e->b, &z) || z != 0)
      return false;
  }
  return !rv.empty();
}

class InitUnswitcher : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* f = r.as<ForNode>();
    // Thread-bound loops decide launch sizes and barriers: left alone.
    if (f->for_kind == ForKind::ThreadBinding) return r;
    const VarNode* lv = f->loop_var.get();
    auto loop = [&](Stmt body) {
      return make_for(f->loop_var, f->min, f->extent, f->for_kind, std::move(body), f->thread_tag,
                      f->annotations);
    };
    if (auto* i = f->body.as<IfThenElseStmtNode>(); i && ours_.count(i) && !uses_var(i->cond, lv)) {
      // An invariant test made here: it moves out of this loop too.
      return mark(make_if(i->cond, loop(i->then_case), i->else_case.defined() ? loop(i->else_case) : Stmt()));
    }
    if (auto* i = f->body.as<IfThenElseStmtNode>(); i && ours_.count(i) && i->else_case.defined())
      if (Stmt p = peel(f, i); p.defined()) return p;
    auto* br = f->body.as<BlockRealizeNode>();
    if (!br) return r;
    const BlockNode* b = br->block.get();
    auto* seq = b->body.as<SeqNode>();
    if (!seq || seq->stmts.size() < 2 || !b->allocs.empty()) return r;
    auto* test = seq->stmts[0].as<IfThenElseStmtNode>();
    if (!is_init_test(*b, test)) return r;
    // A copy of the block per branch, sharing its statements: only plain bodies (no nested
    // blocks, allocs or loops, whose nodes later passes key placements on) are duplicated.
    struct Nested : IRVisitor {
      bool found = false;
      void visit_block_realize(const BlockRealizeNode*) override { found = true; }
      void visit_for(const ForNode*) override { found = true; }
    } nested;
    nested.visit(b->body);
    if (nested.found) return r;
    std::unordered_map<const VarNode*, Expr> bind;
    for (size_t k = 0; k < b->iter_vars.size(); ++k) bind[b->iter_vars[k].var.get()] = br->bindings[k];
    Expr cond = substitute(test->cond, bind);
    if (!pure_int_cond(cond) || uses_var(cond, lv)) return r;
    auto with = [&](bool init) {
      BlockNode nb = *b;
      std::vector<Stmt> st(seq->stmts.begin() + 1, seq->stmts.end());
      if (init) st.insert(st.begin(), test->then_case);
      nb.body = make_seq(std::move(st));
      return make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    };
    return mark(make_if(cond, loop(with(true)), loop(with(false))));
  }

 private:
  // `for v in [m, m + e) { if (R && v == m) { X } else { Y } }` (R free of v: the reduce loop
  // of the test) runs X only in its first iteration: `if (e > 0) { if (R) { X } else { Y }
  // (v = m); for v in [m + 1, m + e) { Y } }`, the same iterations in the same order. The
  // loop body is then unconditional, so LLVM keeps an accumulator in registers across it
  // (LICM does not promote under the test).
  Stmt peel(const ForNode* f, const IfThenElseStmtNode* i) {
    DType t = f->loop_var.dtype();
    // i32 / i64 loops only (others count their iterations in i64, codegen emit_for).
    if (f->for_kind != ForKind::Serial || !f->annotations.empty() || !(t == DType::I32 || t == DType::I64) ||
        f->extent.dtype() != t || f->min.dtype() != t)
      return Stmt();
    const VarNode* lv = f->loop_var.get();
    std::vector<Expr> conj, rest;
    std::function<void(const Expr&)> split = [&](const Expr& e) {
      auto* a = e.as<BinaryNode>();
      if (a && a->op == BinOp::And) {
        split(a->a);
        split(a->b);
      } else {
        conj.push_back(e);
      }
    };
    split(i->cond);
    bool first = false;
    int64_t m = 0, z = 0;
    if (!is_const_int(f->min, &m)) return Stmt();
    for (auto& c : conj) {
      if (!uses_var(c, lv)) {
        rest.push_back(c);
        continue;
      }
      auto* eq = c.as<BinaryNode>();
      if (first || !eq || eq->op != BinOp::EQ || eq->a.get() != static_cast<const ExprNode*>(lv) ||
          !is_const_int(eq->b, &z) || z != m)
        return Stmt();
      first = true;
    }
    if (!first) return Stmt();
    Stmt at_first;
    if (rest.empty()) {
      at_first = i->then_case;
    } else {
      Expr r = rest[0];
      for (size_t k = 1; k < rest.size(); ++k) r = make_binary(BinOp::And, r, rest[k]);
      at_first = make_if(r, i->then_case, i->else_case);
    }
    std::unordered_map<const VarNode*, Expr> first_it{{lv, f->min}};
    at_first = substitute(at_first, first_it);
    Stmt later = make_for(f->loop_var, make_int(m + 1, t),
                          simplify_index_expr(make_binary(BinOp::Sub, f->extent, make_int(1, t))),
                          f->for_kind, i->else_case, f->thread_tag, f->annotations);
    Stmt both = make_seq({at_first, later});
    int64_t e = 0;
    if (is_const_int(f->extent, &e)) return e > 0 ? both : make_seq({});
    return make_if(make_binary(BinOp::GT, f->extent, make_int(0, t)), both);
  }

  Stmt mark(Stmt s) {
    ours_.insert(s.as<IfThenElseStmtNode>());
    keep_.push_back(s);
    return s;
  }
  std::unordered_set<const IfThenElseStmtNode*> ours_;
  std::vector<Stmt> keep_;  // keeps the marked nodes alive (their addresses are the keys)
};

}  // namespace

Function unswitch_init_tests(const FunctionNode& f) {
  if (std::getenv("TIRC_LOWER_NO_INIT_UNSWITCH")) return with_body(f, f.body);
  return with_body(f, InitUnswitcher().mutate(f.body));
}

}  // namespace tirc

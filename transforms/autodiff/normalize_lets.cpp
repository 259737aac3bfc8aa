// Normalisation rewrite 0i (normalize_lets.h).
#include "transforms/autodiff/normalize_lets.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/autodiff/root_body.h"
#include "transforms/autodiff/wrap_stores.h"

namespace tirc::ad {

namespace {

using BufSet = std::unordered_set<const BufferNode*>;
using VarMap = std::unordered_map<const VarNode*, Expr>;

// Buffers an expression reads (loads and pointers).
BufSet read_buffers(const Expr& e) {
  BufSet out;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>()) out.insert(l->buffer.get());
    if (auto* p = x.as<BufferPtrNode>()) out.insert(p->buffer.get());
  });
  return out;
}

// Buffers a statement may write: stores (nested blocks included) and every buffer handed to
// call_extern by pointer (it may write through it).
BufSet written_buffers(const Stmt& s) {
  struct V : IRVisitor {
    BufSet out;
    void visit_store(const StoreNode* n) override {
      out.insert(n->buffer.get());
      IRVisitor::visit_store(n);
    }
    void visit_evaluate(const EvaluateNode* n) override {
      for (auto& a : n->args)
        for (auto* b : read_buffers(a)) out.insert(b);
      IRVisitor::visit_evaluate(n);
    }
  } v;
  v.visit(s);
  return v.out;
}

bool uses(const Stmt& s, const VarNode* x) {
  bool found = false;
  for_each_expr(s, [&](const Expr& e) { found = found || e.get() == x; });
  return found;
}
bool uses(const Expr& s, const VarNode* x) {
  bool found = false;
  for_each_expr(s, [&](const Expr& e) { found = found || e.get() == x; });
  return found;
}

// A store not inside any block (gradient() refuses it when rewrite 0 cannot wrap it).
const StoreNode* blockless_store(const Stmt& s) {
  struct Find : IRVisitor {
    const StoreNode* st = nullptr;
    void visit_store(const StoreNode* n) override {
      if (!st) st = n;
    }
    void visit_block_realize(const BlockRealizeNode*) override {}
  } v;
  v.visit(s);
  return v.st;
}

bool intersects(const BufSet& a, const BufSet& b) {
  for (auto* x : a)
    if (b.count(x)) return true;
  return false;
}

// The statements of s, seen through the lets and sequences at its top.
void top_statements(const Stmt& s, std::vector<Stmt>* out) {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) top_statements(x, out);
  } else if (auto* l = s.as<LetStmtNode>()) {
    top_statements(l->body, out);
  } else {
    out->push_back(s);
  }
}

// Whether a statement of s (through lets and sequences) reads a buffer that an earlier one
// writes.
bool dependent_statements(const Stmt& s) {
  std::vector<Stmt> items;
  top_statements(s, &items);
  BufSet written;
  for (auto& x : items) {
    BufSet r;
    for_each_expr(x, [&](const Expr& e) {
      if (auto* l = e.as<LoadNode>()) r.insert(l->buffer.get());
    });
    if (intersects(r, written)) return true;
    for (auto* b : written_buffers(x)) written.insert(b);
  }
  return false;
}

// Copies `let x = v` into the scope s: around each loop-free statement using x (a fresh
// variable per copy after the first, so that no two binders share one), substituted into the
// expressions of the statements between. nullopt when a user block uses x in its body,
// regions or init (a block body may not see such a let: the parser refuses it anyway).
class Sinker {
 public:
  // split_seqs: also distribute over the statements of loop-free sequences (and the lets
  // around them), so that rewrite 0 wraps each statement as a block of its own.
  Sinker(const Var& x, const Expr& v, bool split_seqs = false) : x_(x), v_(v), split_(split_seqs) {}

  std::optional<Stmt> sink(const Stmt& s) {
    if (!uses(s, x_.get())) return s;
    bool leaf = !has_loop_or_block(s) && !(split_ && (s.as<SeqNode>() || s.as<LetStmtNode>()));
    if (leaf) {
      if (copies_++ == 0) return make_let_stmt(x_, v_, s);
      Var y(x_.name(), x_.dtype());
      return make_let_stmt(y, v_, substitute(s, VarMap{{x_.get(), Expr(y)}}));
    }
    VarMap m{{x_.get(), v_}};
    switch (s.kind()) {
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        auto body = sink(f->body);
        if (!body) return std::nullopt;
        return make_for(f->loop_var, substitute(f->min, m), substitute(f->extent, m), f->for_kind, *body,
                        f->thread_tag, f->annotations);
      }
      case StmtKind::Seq: {
        std::vector<Stmt> items;
        for (auto& x : s.as<SeqNode>()->stmts) {
          auto y = sink(x);
          if (!y) return std::nullopt;
          items.push_back(*y);
        }
        return make_seq(items);
      }
      case StmtKind::IfThenElse: {
        auto* i = s.as<IfThenElseStmtNode>();
        auto t = sink(i->then_case);
        if (!t) return std::nullopt;
        Stmt e;
        if (i->else_case.defined()) {
          auto ee = sink(i->else_case);
          if (!ee) return std::nullopt;
          e = *ee;
        }
        return make_if(substitute(i->cond, m), *t, e);
      }
      case StmtKind::LetStmt: {
        auto* l = s.as<LetStmtNode>();
        auto body = sink(l->body);
        if (!body) return std::nullopt;
        return make_let_stmt(l->var, substitute(l->value, m), *body);
      }
      case StmtKind::BlockRealize: {
        auto* br = s.as<BlockRealizeNode>();
        const BlockNode& b = *br->block.get();
        bool inside = uses(b.body, x_.get()) || (b.init.defined() && uses(b.init, x_.get()));
        for (auto* rs : {&b.reads, &b.writes})
          for (auto& r : *rs)
            for (auto& rg : r.ranges)
              inside = inside || uses(rg.begin, x_.get()) || (rg.end.defined() && uses(rg.end, x_.get()));
        for (auto& iv : b.iter_vars) inside = inside || uses(iv.extent, x_.get());
        if (inside) return std::nullopt;
        std::vector<Expr> bindings;
        for (auto& e : br->bindings) bindings.push_back(substitute(e, m));
        return make_block_realize(bindings, substitute(br->predicate, m), br->block);
      }
      default: return std::nullopt;
    }
  }

 private:
  Var x_;
  Expr v_;
  bool split_;
  int copies_ = 0;
};

// Walks the statements outside user blocks, outermost lets first (a let whose value uses an
// outer one gets that value substituted, then sinks in turn).
struct LetSinker : IRMutator {
  std::string fname;
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt& s) override {
    BufSet reads = read_buffers(n->value);
    if (reads.empty()) return IRMutator::mutate_let_stmt(n, s);
    if (!has_loop_or_block(n->body)) {
      // Rewrite 0 wraps `let f = sigmoid(X[t]) { c[0] = c[0] * f + X[t]; H[t] = c[0] * f }`
      // as one block, whose stores read each other (a C-style recurrence step: refused). Split
      // over the statements, each gets a block of its own, as without the let.
      if (!dependent_statements(n->body) || intersects(reads, written_buffers(n->body))) return s;
      auto sunk = Sinker(n->var, n->value, true).sink(n->body);
      if (!sunk) return s;
      return mutate(*sunk);
    }
    BufSet writes = written_buffers(n->body);
    const BufferNode* clash = nullptr;
    for (auto* b : reads)
      if (writes.count(b) && (!clash || b->name < clash->name)) clash = b;
    if (clash) {
      if (auto* st = blockless_store(n->body); st && uses(n->body, n->var.get()))
        throw Error("gradient of " + fname + ": let " + n->var.name() + " = " + print_expr(n->value) +
                    " (outside any block, around loops) reads " + clash->name +
                    ", which a statement in its scope writes, so its value cannot move into the "
                    "blocks that use it (and the store to " +
                    st->buffer->name +
                    " stays outside of any block): store the value to a buffer of its own before "
                    "those statements (`R[i] = ...`) and read that instead");
      return IRMutator::mutate_let_stmt(n, s);
    }
    auto sunk = Sinker(n->var, n->value).sink(n->body);
    if (!sunk) return IRMutator::mutate_let_stmt(n, s);
    return mutate(*sunk);
  }
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
};

}  // namespace

Function sink_outer_lets(const FunctionNode& f) {
  LetSinker ls;
  ls.fname = f.name;
  return map_root_body(f, [&](const Stmt& body) { return ls.mutate(body); });
}

}  // namespace tirc::ad

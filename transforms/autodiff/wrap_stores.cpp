// Normalisation rewrite 0 (wrap_stores.h).
#include "transforms/autodiff/wrap_stores.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/simplify/region.h"

namespace tirc::ad {

namespace {

const StoreNode* first_store(const Stmt& s) {
  struct Find : IRVisitor {
    const StoreNode* st = nullptr;
    void visit_store(const StoreNode* n) override {
      if (!st) st = n;
    }
  } v;
  v.visit(s);
  return v.st;
}

bool uses(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

class Wrapper : public IRMutator {
 public:
  explicit Wrapper(std::function<std::string(const std::string&)> fresh) : fresh_(std::move(fresh)) {}

  Stmt wrap(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        loops_.push_back(f);
        Stmt body = wrap(f->body);
        loops_.pop_back();
        if (body.same_as(f->body)) return s;
        return make_for(f->loop_var, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
      }
      case StmtKind::Seq: {
        auto* q = s.as<SeqNode>();
        std::vector<Stmt> items;
        bool changed = false;
        for (size_t i = 0; i < q->stmts.size(); ++i) {
          const Stmt& x = q->stmts[i];
          size_t run = 1;
          while (i + run < q->stmts.size() && hand_init_pair(x, q->stmts[i + run])) ++run;
          if (run > 1) {
            // `if k == 0 { Y[i] = 0; Z[i] = 1 }` then `Y[i] += ...; Z[i] *= ...`: one block, so
            // that normalisation (rewrites 8 and 4) reads the guarded stores as the init of a
            // reduction.
            std::vector<Stmt> group(q->stmts.begin() + i, q->stmts.begin() + i + run);
            items.push_back(make_wrapped(make_seq(group)));
            changed = true;
            i += run - 1;
            continue;
          }
          items.push_back(wrap(x));
          changed = changed || !items.back().same_as(x);
        }
        return changed ? make_seq(items) : s;
      }
      case StmtKind::BlockRealize: return s;
      default: break;
    }
    if (!first_store(s) || has_loop_or_block(s)) return s;  // nothing to wrap, or mixed
    return make_wrapped(s);
  }

 private:
  // a: an `if` without else around stores (no loop or block), b: a block-free statement
  // storing to one of the buffers a stores to.
  static bool hand_init_pair(const Stmt& a, const Stmt& b) {
    auto* i = a.as<IfThenElseStmtNode>();
    if (!i || i->else_case.defined() || has_loop_or_block(a) || !first_store(a)) return false;
    if (has_loop_or_block(b) || !first_store(b)) return false;
    std::unordered_set<const BufferNode*> wa;
    for_each_store(a, [&](const StoreNode* n) { wa.insert(n->buffer.get()); });
    bool shared = false;
    for_each_store(b, [&](const StoreNode* n) { shared = shared || wa.count(n->buffer.get()); });
    return shared;
  }
  template <typename Fn>
  static void for_each_store(const Stmt& s, Fn fn) {
    struct V : IRVisitor {
      Fn* fn;
      void visit_store(const StoreNode* n) override {
        (*fn)(n);
        IRVisitor::visit_store(n);
      }
    } v;
    v.fn = &fn;
    v.visit(s);
  }

  Stmt make_wrapped(const Stmt& s) {
    // The loops' ranges must not depend on other loops: an iter var's extent is fixed.
    for (auto* l : loops_)
      for (auto* m : loops_)
        if (uses(l->min, m->loop_var.get()) || uses(l->extent, m->loop_var.get())) return s;
    BlockNode b;
    b.name = fresh_(first_store(s)->buffer->name);
    std::vector<Expr> bindings;
    std::unordered_map<const VarNode*, Expr> to_iv;
    for (auto* l : loops_) {
      Var v("v" + l->loop_var.name(), l->loop_var.dtype());
      b.iter_vars.push_back(IterVar{v, IterKind::Opaque, l->extent});
      int64_t m = 0;
      bool zero_min = is_const_int(l->min, &m) && m == 0;
      bindings.push_back(zero_min ? Expr(l->loop_var) : Expr(l->loop_var) - l->min);
      to_iv[l->loop_var.get()] = zero_min ? Expr(v) : Expr(v) + l->min;
    }
    b.body = substitute(s, to_iv);
    infer_access_regions(b, &b.reads, &b.writes);
    return make_block_realize(bindings, make_bool(true), make_block(std::move(b)));
  }

  std::function<std::string(const std::string&)> fresh_;
  std::vector<const ForNode*> loops_;
};

}  // namespace

Stmt wrap_blockless_statements(const Stmt& body,
                               const std::function<std::string(const std::string&)>& fresh) {
  return Wrapper(fresh).wrap(body);
}

Function wrap_blockless_stores(const FunctionNode& f) {
  auto* rr = f.body.as<BlockRealizeNode>();
  auto out = std::make_shared<FunctionNode>(f);
  if (!rr) return out;
  const BlockNode& root = *rr->block.get();
  std::unordered_set<std::string> names;
  struct Names : IRVisitor {
    std::unordered_set<std::string>* out;
    void visit_block(const BlockNode* n) override {
      out->insert(n->name);
      IRVisitor::visit_block(n);
    }
  } nv;
  nv.out = &names;
  nv.visit(f.body);
  Wrapper w([&names](const std::string& base) {
    std::string n = base;
    for (int k = 1; names.count(n); ++k) n = base + "_" + std::to_string(k);
    names.insert(n);
    return n;
  });
  Stmt body = w.wrap(root.body);
  if (body.same_as(root.body)) return out;
  BlockNode rb = root;
  rb.body = body;
  out->body = make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
  return out;
}

bool has_loop_or_block(const Stmt& s) {
  struct Find : IRVisitor {
    bool found = false;
    void visit_for(const ForNode*) override { found = true; }
    void visit_block_realize(const BlockRealizeNode*) override { found = true; }
  } v;
  v.visit(s);
  return v.found;
}

}  // namespace tirc::ad

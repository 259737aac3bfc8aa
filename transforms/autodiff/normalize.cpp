// Normalisation of block bodies before differentiation: see normalize.h.
//
// A block body is flattened into an ordered list of items: a leaf (a store or a loop) with
// its context, the lets and `if` guards around it in the original body. Every rewrite
// re-evaluates some context value or stored value at a later point than the original, or
// once per iteration of a lifted loop instead of once; the conditions below make sure that
// no statement in between writes a buffer such a value reads, so every value is unchanged.
#include "transforms/autodiff/normalize.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/expr_ad.h"
#include "transforms/autodiff/fuse_scan_loops.h"
#include "transforms/autodiff/normalize_region.h"
#include "transforms/autodiff/normalize_epilogue.h"
#include "transforms/autodiff/normalize_lets.h"
#include "transforms/autodiff/normalize_scan_guards.h"
#include "transforms/autodiff/normalize_scan_sums.h"
#include "transforms/autodiff/outer_lets.h"
#include "transforms/autodiff/redundant.h"
#include "transforms/autodiff/regions.h"
#include "transforms/autodiff/wrap_stores.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using ad::NameGen;
using BufSet = std::unordered_set<const BufferNode*>;
using VarSet = std::unordered_set<const VarNode*>;
using VarMap = std::unordered_map<const VarNode*, Expr>;

// One let or guard around a leaf. Items of the same body share these nodes (identity tells
// two items that they sit in the same scope).
struct Ctx {
  bool is_let = false;
  Var var;           // lets
  Expr value;        // let value, or guard condition (not negated)
  int if_id = -1;    // guards: the if statement they come from
  bool neg = false;  // guards: the else branch (the condition is !value)
  size_t start = 0;  // index of the first item after the point where value was evaluated
};
using CtxP = std::shared_ptr<const Ctx>;
using CtxList = std::vector<CtxP>;

struct Item {
  CtxList ctx;
  Stmt leaf;  // a Store or a For; undefined when merged into a later item
};

// ---- small analyses ----

void add_loads(const Expr& e, BufSet* out) {
  if (!e.defined()) return;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>()) out->insert(l->buffer.get());
    if (auto* p = x.as<BufferPtrNode>()) out->insert(p->buffer.get());
  });
}
void add_loads(const Stmt& s, BufSet* out) {
  if (!s.defined()) return;
  for_each_expr(s, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>()) out->insert(l->buffer.get());
    if (auto* p = x.as<BufferPtrNode>()) out->insert(p->buffer.get());
  });
}
BufSet loads_of(const Expr& e) {
  BufSet s;
  add_loads(e, &s);
  return s;
}

struct StoreScan : IRVisitor {
  BufSet* out = nullptr;
  void visit_store(const StoreNode* n) override {
    out->insert(n->buffer.get());
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {  // call_extern may write it
    out->insert(n->buffer.get());
    IRVisitor::visit_buffer_ptr(n);
  }
};
BufSet writes_of(const Stmt& s) {
  BufSet w;
  StoreScan sc;
  sc.out = &w;
  if (s.defined()) sc.visit(s);
  return w;
}

// An integer constant inside [0, extent) (a scalar state's element `S[0]`).
bool const_in_bounds(const Expr& i, const Expr& extent) {
  int64_t c, n;
  return is_const_int(i, &c) && is_const_int(extent, &n) && c >= 0 && c < n;
}

// `a*s + c` with a = +-1 (the scan var alone): the step's own elements in that dimension.
bool step_form(const Expr& e, const VarNode* s, int64_t* a, int64_t* c) {
  auto aff = ad::to_affine(e);
  if (!aff || aff->terms.size() != 1 || aff->terms[0].first.get() != s) return false;
  *a = aff->terms[0].second;
  *c = aff->constant;
  return *a == 1 || *a == -1;
}

// An access at `idx` reads an element of another step than the store at `st` writes: in some
// dimension the store writes `a*s + c1` and the access is at `a*s + c2`, c1 != c2.
bool other_step(const std::vector<Expr>& idx, const std::vector<Expr>& st, const VarNode* s) {
  if (idx.size() != st.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t a1, c1, a2, c2;
    if (step_form(st[d], s, &a1, &c1) && step_form(idx[d], s, &a2, &c2) && a1 == a2 && c1 != c2) return true;
  }
  return false;
}

// In a scan step with scan var s: every load of y in `value` reads an element of another step
// than the store `leaf` to y writes (other_step). The store writes only elements of the
// current step in that dimension, so such a load reads what the store (over every spatial
// point of the step) leaves alone: the value is the same when evaluated before or after it
// (a Welford / LSTM step `let pm = M[s - 1, j]; M[s, j] = ..pm..; V[s, j] = ..pm.. M[s, j]..`).
bool other_step_loads(const Expr& value, const BufferNode* y, const Stmt& leaf, const VarNode* s) {
  auto* st = leaf.as<StoreNode>();
  if (!st || st->buffer.get() != y) return false;
  bool ok = true, any = false;
  for_each_expr(value, [&](const Expr& x) {
    if (auto* p = x.as<BufferPtrNode>(); p && p->buffer.get() == y) ok = false;
    auto* ld = x.as<LoadNode>();
    if (!ld || ld->buffer.get() != y) return;
    any = true;
    ok = ok && other_step(ld->indices, st->indices, s);
  });
  return ok && any;
}

void for_each_stmt_store_indices(const Stmt& s,
                                 std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>>* out) {
  struct V : IRVisitor {
    std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>>* out;
    void visit_store(const StoreNode* n) override {
      (*out)[n->buffer.get()].push_back(n->indices);
      IRVisitor::visit_store(n);
    }
  } v;
  v.out = out;
  if (s.defined()) v.visit(s);
}

BufSet item_loads(const Item& it) {
  BufSet s;
  for (auto& c : it.ctx) add_loads(c->value, &s);
  add_loads(it.leaf, &s);
  return s;
}

bool intersects(const BufSet& a, const BufSet& b) {
  for (auto* x : a)
    if (b.count(x)) return true;
  return false;
}

// Whether a guard or let around an item loads a buffer one of `stores` writes (a rewrite that
// reorders the iterations would then change what the guard sees).
bool guards_read_stores(const std::vector<Item>& items, const std::vector<const StoreNode*>& stores) {
  for (auto& it : items)
    for (auto& c : it.ctx)
      for (auto* st : stores)
        if (loads_of(c->value).count(st->buffer.get())) return true;
  return false;
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!expr_identical(a[i], b[i])) return false;
  return true;
}

VarSet vars_of(const Expr& e) {
  VarSet s;
  ad::collect_vars(e, &s);
  return s;
}

bool uses_var(const Stmt& s, const VarNode* v) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) {
    if (x.get() == v) found = true;
  });
  return found;
}
bool uses_var(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.get() == v) found = true;
  });
  return found;
}

void for_each_stmt_store(const Stmt& s, std::vector<const StoreNode*>* out) {
  struct V : IRVisitor {
    std::vector<const StoreNode*>* out;
    void visit_store(const StoreNode* n) override {
      out->push_back(n);
      IRVisitor::visit_store(n);
    }
  } v;
  v.out = out;
  if (s.defined()) v.visit(s);
}

bool has_load_or_let(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<LoadNode>() || x.as<LetNode>() || x.as<BufferPtrNode>()) found = true;
  });
  return found;
}

// Every load and store index tuple per buffer; buffers passed by pointer are `opaque`.
struct AccessScan : IRVisitor {
  std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> acc;
  BufSet opaque;
  void visit_load(const LoadNode* n) override {
    acc[n->buffer.get()].push_back(n->indices);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    acc[n->buffer.get()].push_back(n->indices);
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    opaque.insert(n->buffer.get());
    IRVisitor::visit_buffer_ptr(n);
  }
  // Loops inside the scanned statements with constant bounds: var -> [first, last].
  std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>> loops;
  void visit_for(const ForNode* n) override {
    int64_t lo, ext;
    if (is_const_int(n->min, &lo) && is_const_int(n->extent, &ext) && ext > 0)
      loops[n->loop_var.get()] = {lo, lo + ext - 1};
    IRVisitor::visit_for(n);
  }
};

// The coefficient of k in e when e = c*k + (terms without k); nullopt otherwise.
std::optional<int64_t> lin_coeff(const Expr& e, const VarNode* k) {
  if (!uses_var(e, k)) return 0;
  if (e.get() == k) return 1;
  if (auto* b = e.as<BinaryNode>()) {
    int64_t c;
    switch (b->op) {
      case BinOp::Add:
      case BinOp::Sub: {
        auto x = lin_coeff(b->a, k), y = lin_coeff(b->b, k);
        if (!x || !y) return std::nullopt;
        return b->op == BinOp::Add ? *x + *y : *x - *y;
      }
      case BinOp::Mul:
        if (is_const_int(b->a, &c)) {
          auto y = lin_coeff(b->b, k);
          if (y) return c * *y;
        } else if (is_const_int(b->b, &c)) {
          auto x = lin_coeff(b->a, k);
          if (x) return c * *x;
        }
        return std::nullopt;
      default: return std::nullopt;
    }
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnOp::Neg) {
    auto x = lin_coeff(u->a, k);
    if (x) return -*x;
  }
  return std::nullopt;
}

// `Y[I] = Y[I] op e` (op + - * max min; e does not read Y): (op, e).
std::optional<std::pair<BinOp, Expr>> split_acc(const StoreNode* st) {
  auto* bin = st->value.as<BinaryNode>();
  if (!bin) return std::nullopt;
  auto self = [&](const Expr& e) {
    auto* l = e.as<LoadNode>();
    return l && l->buffer.same_as(st->buffer) && same_indices(l->indices, st->indices);
  };
  Expr e;
  switch (bin->op) {
    case BinOp::Add:
    case BinOp::Mul:
    case BinOp::Max:
    case BinOp::Min:
      if (self(bin->a))
        e = bin->b;
      else if (self(bin->b))
        e = bin->a;
      break;
    case BinOp::Sub:
      if (self(bin->a)) e = bin->b;
      break;
    default: break;
  }
  if (!e.defined() || loads_of(e).count(st->buffer.get())) return std::nullopt;
  return std::make_pair(bin->op, e);
}

// `Y[I] = Y[I] + e` or `Y[I] - e` where e reads Y only at other elements than I (in a
// recurrence: earlier steps, which the caller checks), so the partial sum is read only by the
// update itself and the order of the summed terms does not matter.
bool sum_onto_self(const StoreNode* st) {
  auto* bin = st->value.as<BinaryNode>();
  if (!bin || (bin->op != BinOp::Add && bin->op != BinOp::Sub)) return false;
  auto self = [&](const Expr& e) {
    auto* l = e.as<LoadNode>();
    return l && l->buffer.same_as(st->buffer) && same_indices(l->indices, st->indices);
  };
  Expr e = self(bin->a) ? bin->b : (bin->op == BinOp::Add && self(bin->b)) ? bin->a : Expr();
  if (!e.defined()) return false;
  bool ok = true;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>();
        l && l->buffer.same_as(st->buffer) && same_indices(l->indices, st->indices))
      ok = false;
    if (auto* p = x.as<BufferPtrNode>(); p && p->buffer.same_as(st->buffer)) ok = false;
  });
  return ok;
}

// Stores to distinct buffers, none reading another's buffer: what gradient() accepts as
// the independent stores of one block body.
bool independent_stores(const std::vector<Item>& items) {
  std::vector<const BufferNode*> ys;
  for (auto& it : items) {
    auto* st = it.leaf.as<StoreNode>();
    if (!st) return false;
    ys.push_back(st->buffer.get());
  }
  for (size_t i = 0; i < items.size(); ++i) {
    BufSet l = item_loads(items[i]);
    for (size_t j = 0; j < items.size(); ++j)
      if (i != j && (ys[i] == ys[j] || l.count(ys[j]))) return false;
  }
  return true;
}

// Reserves every name of the function and counts binders per name.
class NameScan : public IRVisitor {
 public:
  NameScan(NameGen& g, std::unordered_map<std::string, int>& counts) : g_(g), counts_(counts) {}
  void add(const std::string& n) {
    g_.reserve(n);
    ++counts_[n];
  }
  void visit_var(const VarNode* v) override { g_.reserve(v->name); }
  void visit_load(const LoadNode* n) override {
    g_.reserve(n->buffer->name);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    g_.reserve(n->buffer->name);
    IRVisitor::visit_store(n);
  }
  void visit_for(const ForNode* n) override {
    add(n->loop_var.name());
    IRVisitor::visit_for(n);
  }
  void visit_block(const BlockNode* n) override {
    add(n->name);
    for (auto& iv : n->iter_vars) add(iv.var.name());
    for (auto& b : n->allocs) add(b->name);
    IRVisitor::visit_block(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    add(n->var.name());
    IRVisitor::visit_let_stmt(n);
  }
  void visit_let(const LetNode* n) override {
    add(n->var.name());
    IRVisitor::visit_let(n);
  }

 private:
  NameGen& g_;
  std::unordered_map<std::string, int>& counts_;
};

// Names bound inside a block (iter vars, lets, allocs). Its loops are all lifted out when
// the rewrite succeeds, so their names are free again.
struct LocalNames : IRVisitor {
  std::unordered_map<std::string, int> names;
  void visit_block(const BlockNode* n) override {
    for (auto& iv : n->iter_vars) ++names[iv.var.name()];
    for (auto& a : n->allocs) ++names[a->name];
    IRVisitor::visit_block(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    ++names[n->var.name()];
    IRVisitor::visit_let_stmt(n);
  }
  void visit_let(const LetNode* n) override {
    ++names[n->var.name()];
    IRVisitor::visit_let(n);
  }
};

// A loop of a block body turned into block iter vars (rewrite 3).
struct LiftPlan {
  std::vector<const ForNode*> loops;  // outermost first (a perfect chain up to lets/guards)
  std::vector<CtxList> levels;        // levels[j]: context around loops[j] inside loops[j-1]
  std::vector<IterKind> kinds;
  std::vector<Item> stores;  // the innermost body, contexts relative to it
  // `Y[I] = e0; for k {...accumulate into Y[I]...}` inside the nest: the store becomes the
  // init (its context: every level above it plus its own lets); loops[0, init_at) are
  // spatial, the others reduce.
  std::optional<Item> init;
  size_t init_at = 0;
};

struct Piece {
  std::vector<Item> items;
  std::optional<Item> init;  // becomes the block's init
  std::optional<LiftPlan> lift;
};

bool has_block_realize(const Stmt& s);

// True when c is a conjunction of equations each pinning one reduce var to 0, every reduce
// var once: `rv == 0`, or any affine equation that says the same (`rv + 1 == 1`, the form
// rewrite 0 gives a C-style `if k == 1` over `serial(1, n)`).
bool pins_to_zero(const Expr& c, const VarSet& reduce) {
  VarSet seen;
  std::vector<Expr> todo{c};
  while (!todo.empty()) {
    Expr e = todo.back();
    todo.pop_back();
    auto* bin = e.as<BinaryNode>();
    if (!bin) return false;
    if (bin->op == BinOp::And) {
      todo.push_back(bin->a);
      todo.push_back(bin->b);
      continue;
    }
    if (bin->op != BinOp::EQ) return false;
    auto d = is_int(bin->a.dtype()) ? ad::to_affine(bin->a - bin->b) : std::nullopt;
    if (!d || d->constant != 0 || d->terms.size() != 1 ||
        (d->terms[0].second != 1 && d->terms[0].second != -1))
      return false;
    const VarNode* vn = d->terms[0].first.get();
    if (!reduce.count(vn) || seen.count(vn)) return false;
    seen.insert(vn);
  }
  return seen.size() == reduce.size();
}

// Rewrite 10: a running extremum written as a conditional replacement,
//   if e > Y[I] { Y[I] = e; Z[J] = f; ... }     (also Y[I] < e, >=, <=; min with < / >)
// becomes `Z[J] = select(c, f, Z[J]); ...; Y[I] = max(Y[I], e)`: the same values (max(Y, e)
// is e exactly when e > Y, and equals Y on a tie of >=; NaN aside), a reduction gradient()
// differentiates. The other stores (an argmax index next to the max) move before Y's and
// keep the condition; sound when they neither read Y nor write what c, e or I read, and no
// two of them write one buffer. Lets between the if and the stores are not handled. A
// float side store becomes `Z = select(c, f, Z)`, which gradient() refuses in a reduction.
struct CondReplace : IRMutator {
  bool changed = false;
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
  Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s) override {
    if (n->else_case.defined()) return IRMutator::mutate_if(n, s);
    auto* c = n->cond.as<BinaryNode>();
    if (!c) return IRMutator::mutate_if(n, s);
    std::vector<const StoreNode*> st;
    if (auto* q = n->then_case.as<SeqNode>()) {
      for (auto& x : q->stmts)
        if (auto* w = x.as<StoreNode>())
          st.push_back(w);
        else
          return s;
    } else if (auto* w = n->then_case.as<StoreNode>()) {
      st.push_back(w);
    } else {
      return IRMutator::mutate_if(n, s);
    }
    // c as (bigger side, smaller side): e > Y means max, e < Y means min.
    Expr big, small;
    switch (c->op) {
      case BinOp::GT:
      case BinOp::GE: big = c->a, small = c->b; break;
      case BinOp::LT:
      case BinOp::LE: big = c->b, small = c->a; break;
      default: return s;
    }
    for (size_t k = 0; k < st.size(); ++k) {
      const StoreNode* y = st[k];
      Expr cur = make_load(y->buffer, y->indices);
      BinOp op;
      if (expr_identical(small, cur) && expr_identical(big, y->value))
        op = BinOp::Max;
      else if (expr_identical(big, cur) && expr_identical(small, y->value))
        op = BinOp::Min;
      else
        continue;
      // What is evaluated after the moved stores: the condition (again, per store), e and I.
      BufSet cond_reads = loads_of(n->cond);
      add_loads_expr(y->value, &cond_reads);
      for (auto& i : y->indices) add_loads_expr(i, &cond_reads);
      std::vector<Stmt> out;
      BufSet others;
      bool ok = true;
      for (size_t j = 0; j < st.size() && ok; ++j) {
        if (j == k) continue;
        const StoreNode* z = st[j];
        BufSet zl = loads_of(z->value);
        for (auto& i : z->indices) add_loads_expr(i, &zl);
        ok = !zl.count(y->buffer.get()) && !cond_reads.count(z->buffer.get()) &&
             !z->buffer.same_as(y->buffer) && others.insert(z->buffer.get()).second;
        out.push_back(make_store(z->buffer, z->indices,
                                 make_select(n->cond, z->value, make_load(z->buffer, z->indices))));
      }
      if (!ok) return s;
      out.push_back(make_store(y->buffer, y->indices, make_binary(op, cur, y->value)));
      changed = true;
      return make_seq(out);
    }
    return s;
  }
  static void add_loads_expr(const Expr& e, BufSet* out) {
    for_each_expr(e, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) out->insert(l->buffer.get());
    });
  }
};

class Normalizer : public IRMutator {
 public:
  explicit Normalizer(const FunctionNode& f) : f_(f) {
    NameScan ns(names_, counts_);
    for (auto& p : f.params) {
      ns.add(p.name());
      global_.insert(p.name());
      if (!p.is_buffer()) scalars_.insert(p.var.get());
    }
    for (auto& o : f.outputs) {
      ns.add(o->name);
      global_.insert(o->name);
    }
    ns.visit(f.body);
    for (auto& a : root_block(f).allocs) global_.insert(a->name);
  }

  Function run() {
    const BlockNode& root = root_block(f_);
    auto fn = std::make_shared<FunctionNode>(f_);
    if (!root.iter_vars.empty() || root.init.defined()) return fn;  // gradient() refuses it
    Stmt body = mutate(root.body);
    if (body.same_as(root.body)) return fn;
    BlockNode rb = root;
    rb.body = body;
    for (auto& a : new_allocs_) rb.allocs.push_back(a);
    auto* rr = f_.body.as<BlockRealizeNode>();
    fn->body = make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
    return fn;
  }

 protected:
  // A loop whose whole body is a split block is distributed over the pieces (fresh loop
  // vars for the copies), recursively outwards: the normalised function then runs all of
  // piece 1 before piece 2, as gradient() reads it, and the interpreter can check that this
  // equals the original (the conditions of iterations_disjoint / instances_distinct).
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = mutate_for_inner(n, s);
    auto it = after_loop_.find(n);
    if (it == after_loop_.end()) return r;
    std::vector<Stmt> all{r};
    for (auto& x : it->second) all.push_back(x);
    after_loop_.erase(it);
    return make_seq(all);
  }
  Stmt mutate_for_inner(const ForNode* n, const Stmt& s) {
    loop_scope_.push_back(n->loop_var.name());
    loops_.push_back(n);
    Stmt body = mutate(n->body);
    loops_.pop_back();
    loop_scope_.pop_back();
    if (body.same_as(n->body)) return s;
    if (split_.count(body.get()) && scan_stop_.erase(n)) {
      // The scan loop of a split scan step (rewrite 9): its steps keep interleaving the pieces.
      return make_for(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag, n->annotations);
    }
    if (split_.count(body.get())) {
      auto* q = body.as<SeqNode>();
      std::vector<Stmt> copies;
      for (size_t i = 0; i < q->stmts.size(); ++i) {
        Var v = i == 0 ? n->loop_var : Var(n->loop_var.name(), n->loop_var.dtype());
        Stmt b = i == 0 ? q->stmts[i] : substitute(q->stmts[i], VarMap{{n->loop_var.get(), v}});
        copies.push_back(make_for(v, n->min, n->extent, n->for_kind, b, n->thread_tag, n->annotations));
      }
      Stmt r = make_seq(copies);
      split_.insert(r.get());
      return r;
    }
    return make_for(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag, n->annotations);
  }
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    auto sr = state_readers_.find(n);
    if (sr != state_readers_.end()) {
      // A block reading a state that rewrite 6 turned into a history (after the state's
      // block, in the same step): it reads the history at its step instead.
      Stmt r = read_history(n, sr->second);
      state_readers_.erase(sr);
      Stmt out = mutate_block_realize(r.as<BlockRealizeNode>(), r);
      return out;
    }
    {
      CondReplace cr;
      Stmt body = cr.mutate(n->block->body);
      if (cr.changed) {
        BlockNode nb = *n->block.get();
        nb.body = body;
        ad::set_regions(nb);
        Stmt r = make_block_realize(n->bindings, n->predicate, make_block(std::move(nb)));
        return mutate_block_realize(r.as<BlockRealizeNode>(), r);
      }
    }
    if (auto r = inline_scope_block(n)) return *r;
    auto r = normalize_block(n);
    if (!r) {
      if (auto w = wrap_opaque_block(n)) return *w;
      return s;
    }
    Stmt q = make_seq(*r);
    if (r->size() > 1 && q.as<SeqNode>()) split_.insert(q.get());
    return q;
  }

 private:
  bool flatten(const Stmt& s, CtxList& ctx, std::vector<Item>& out, bool* saw_else);
  bool merge_if_else(std::vector<Item>& items, bool guarded = false);
  bool try_merge(std::vector<Item>& items, size_t ia, size_t ib, size_t g);
  bool ctx_stable(const std::vector<Item>& items, const VarNode* scan = nullptr);
  bool iterations_disjoint(const BlockNode& b, const std::vector<Item>& items, const VarNode* scan = nullptr);
  bool instances_distinct(const BlockRealizeNode* br);
  bool instances_distinct_enumerated(const BlockRealizeNode* br);
  std::optional<LiftPlan> plan_lift(const BlockNode& b, const Item& it, bool has_init);
  bool can_become_init(const BlockNode& b, const Item& st, const LiftPlan& p);
  std::optional<Item> manual_init(const BlockNode& b, const std::vector<Item>& items);
  // stable = false: the items even when a context value reads what an item before it writes
  // (for rewrites that place each context themselves: rewrite 6 with several states).
  std::optional<std::vector<Item>> body_items(const Stmt& body, const VarNode* scan = nullptr,
                                              bool stable = true);
  std::optional<std::vector<Stmt>> normalize_block(const BlockRealizeNode* br);
  std::optional<Stmt> wrap_opaque_block(const BlockRealizeNode* br);
  std::optional<Stmt> inline_scope_block(const BlockRealizeNode* br);
  std::optional<Stmt> inline_outer_block(const BlockRealizeNode* br);
  std::optional<std::vector<Stmt>> expand_state(const BlockRealizeNode* br, const std::vector<Item>& items);
  std::optional<std::vector<Stmt>> split_init(const BlockRealizeNode* br);
  std::optional<std::vector<Stmt>> opaque_kinds(const BlockRealizeNode* br);
  std::optional<std::vector<Stmt>> opaque_kinds_plain(const BlockRealizeNode* br, bool* partial);
  std::optional<std::vector<Stmt>> opaque_recurrence(const BlockRealizeNode* br);
  std::optional<std::vector<Stmt>> opaque_scatter_sum(const BlockRealizeNode* br, const BlockNode& b,
                                                      const std::vector<const StoreNode*>& stores,
                                                      const std::vector<Item>& items);
  std::optional<std::vector<Stmt>> split_scan_step(const BlockRealizeNode* br,
                                                   const std::vector<Item>& items);
  bool init_accepted(const BlockNode& b);
  // nb (a rewritten copy of br's block) with its regions re-derived, realized with br's
  // bindings and predicate, and normalised further.
  std::vector<Stmt> realize_rewritten(const BlockRealizeNode* br, BlockNode nb) {
    ad::set_regions(nb);
    return {mutate(make_block_realize(br->bindings, br->predicate, make_block(std::move(nb))))};
  }
  bool all_blocks_plain(const Stmt& s);
  Stmt build(const CtxList& ctx, const Stmt& leaf, VarMap m);
  Stmt build_piece(const BlockRealizeNode* br, const Piece& p, const std::string& name, bool fresh);
  // base, base_1, base_2, ...: the first that no enclosing loop, parameter, buffer or
  // variable of the block (`taken`) uses. Names only need to be unique in their scope.
  std::string scoped_name(const std::string& base, std::unordered_set<std::string>& taken) {
    auto free = [&](const std::string& n) {
      return !taken.count(n) && !global_.count(n) &&
             std::find(loop_scope_.begin(), loop_scope_.end(), n) == loop_scope_.end();
    };
    std::string n = base;
    for (int i = 1; !free(n); ++i) n = base + "_" + std::to_string(i);
    taken.insert(n);
    names_.reserve(n);
    return n;
  }
  std::string reuse_name(const std::string& n) {
    auto it = counts_.find(n);
    if (it != counts_.end() && it->second == 1) {
      it->second = 2;  // the binder that owned it disappears; reuse once
      return n;
    }
    return names_.unique(n);
  }

  const FunctionNode& f_;
  NameGen names_;
  std::unordered_map<std::string, int> counts_;
  VarSet scalars_;
  std::unordered_set<std::string> global_;  // params, outputs, function allocs
  std::vector<std::string> loop_scope_;     // loop vars around the block being rewritten
  std::vector<const ForNode*> loops_;       // the loops themselves
  // A block realize built by a rewrite (rewrite 8's scan reading) -> the one in the tree it
  // replaces, for rewrites that look for the block among its loop's statements (rewrite 6).
  std::unordered_map<const BlockRealizeNode*, const BlockRealizeNode*> stands_for_;
  std::vector<Stmt> stands_alive_;  // the keys of stands_for_
  std::unordered_set<const StmtNode*> split_;  // Seqs of pieces of one block (or their loops)
  std::vector<Buffer> new_allocs_;
  // Blocks after a state's block in its scan loop that read the state (rewrite 6): the
  // state, its history, the reader's iter var bound to the scan loop and the step offset
  // (history step = that iter var + offset).
  struct StateReader {
    const BufferNode* y;
    Buffer hist;
    int iv;
    int64_t offset;
    std::vector<bool> fixed;  // dims of a constant element (`S[0]`): not in the history
  };
  std::unordered_map<const BlockRealizeNode*, std::vector<StateReader>> state_readers_;
  Stmt read_history(const BlockRealizeNode* n, const std::vector<StateReader>& rs);
  // Scan loops around a split scan block (rewrite 9): the loops between the loop and the
  // block are distributed over the pieces, the scan loop itself is not.
  std::unordered_set<const ForNode*> scan_stop_;
  // Blocks to run right after a loop (the final state of an expanded scan, rewrite 6).
  std::unordered_map<const ForNode*, std::vector<Stmt>> after_loop_;
  int next_if_ = 0;
};

namespace {
// c2 is the negation of c1, syntactically: `!c1` (or c1 = `!c2`), or the same comparison
// operands under the opposite operator (`a == b` / `a != b`, `a < b` / `a >= b` or `b <= a`).
bool complementary(const Expr& c1, const Expr& c2) {
  if (auto* u = c2.as<UnaryNode>(); u && u->op == UnOp::Not && expr_identical(u->a, c1)) return true;
  if (auto* u = c1.as<UnaryNode>(); u && u->op == UnOp::Not && expr_identical(u->a, c2)) return true;
  auto* x = c1.as<BinaryNode>();
  auto* y = c2.as<BinaryNode>();
  if (!x || !y || !binop_is_compare(x->op) || !binop_is_compare(y->op)) return false;
  // Orderings of floats are not complements of each other (NaN fails both).
  if (is_float(x->a.dtype()) && x->op != BinOp::EQ && x->op != BinOp::NE) return false;
  auto neg = [](BinOp o) {
    switch (o) {
      case BinOp::EQ: return BinOp::NE;
      case BinOp::NE: return BinOp::EQ;
      case BinOp::LT: return BinOp::GE;
      case BinOp::GE: return BinOp::LT;
      case BinOp::LE: return BinOp::GT;
      default: return BinOp::LE;  // GT
    }
  };
  auto swap = [](BinOp o) {
    switch (o) {
      case BinOp::LT: return BinOp::GT;
      case BinOp::GT: return BinOp::LT;
      case BinOp::LE: return BinOp::GE;
      case BinOp::GE: return BinOp::LE;
      default: return o;  // EQ, NE
    }
  };
  BinOp want = neg(x->op);
  if (y->op == want && expr_identical(x->a, y->a) && expr_identical(x->b, y->b)) return true;
  return y->op == swap(want) && expr_identical(x->a, y->b) && expr_identical(x->b, y->a);
}
}  // namespace

bool Normalizer::flatten(const Stmt& s, CtxList& ctx, std::vector<Item>& out, bool* saw_else) {
  if (!s.defined()) return true;
  switch (s.kind()) {
    case StmtKind::LetStmt: {
      auto* l = s.as<LetStmtNode>();
      auto c = std::make_shared<Ctx>();
      c->is_let = true;
      c->var = l->var;
      c->value = l->value;
      c->start = out.size();
      ctx.push_back(c);
      bool ok = flatten(l->body, ctx, out, saw_else);
      ctx.pop_back();
      return ok;
    }
    case StmtKind::IfThenElse: {
      auto* i = s.as<IfThenElseStmtNode>();
      int id = next_if_++;
      size_t start = out.size();  // the condition is evaluated once, before either branch
      auto t = std::make_shared<Ctx>();
      t->value = i->cond;
      t->if_id = id;
      t->start = start;
      ctx.push_back(t);
      bool ok = flatten(i->then_case, ctx, out, saw_else);
      ctx.pop_back();
      if (!ok) return false;
      if (i->else_case.defined()) {
        *saw_else = true;
        auto e = std::make_shared<Ctx>(*t);
        e->neg = true;
        ctx.push_back(e);
        ok = flatten(i->else_case, ctx, out, saw_else);
        ctx.pop_back();
      }
      return ok;
    }
    case StmtKind::Seq: {
      const auto& xs = s.as<SeqNode>()->stmts;
      for (size_t k = 0; k < xs.size(); ++k) {
        // `if c { A }` then `if c' { B }` with c' the complement of c (`vi != 1` / `vi == 1`,
        // `!c`), A writing nothing c reads: an if/else, so that rewrite 1 can merge a store
        // of both arms into one (split into two blocks, the second version's copy read the
        // elements only the first arm writes, uninitialised in F_grad).
        auto* a = xs[k].as<IfThenElseStmtNode>();
        auto* b = k + 1 < xs.size() ? xs[k + 1].as<IfThenElseStmtNode>() : nullptr;
        if (a && b && !a->else_case.defined() && !b->else_case.defined() && complementary(a->cond, b->cond) &&
            !intersects(writes_of(a->then_case), loads_of(a->cond))) {
          if (!flatten(make_if(a->cond, a->then_case, b->then_case), ctx, out, saw_else)) return false;
          ++k;
          continue;
        }
        if (!flatten(xs[k], ctx, out, saw_else)) return false;
      }
      return true;
    }
    case StmtKind::Store:
    case StmtKind::For: out.push_back({ctx, s}); return true;
    default: return false;  // nested blocks, call_extern: left to gradient()'s refusal
  }
}

// Rewrite 1: the then-store a and the else-store b of one if/else write the same element.
// a (at ia) has context P + [guard c] + La (lets), b (at ib > ia) P + [guard !c] + Lb.
// They become one store at ib: Y[I] = if_then_else(c, (La in va), (Lb in vb)), or for two
// accumulations with the same operator Y[I] = Y[I] op if_then_else(c, (La in ea), (Lb in eb)).
// Sound when (1) no item strictly between a and b touches Y (a's store moves to ib) and
// (2) every moved value -- a's value, the La values, c and the Lb values -- reads no buffer
// written by an item between its original evaluation point and ib (a itself excepted:
// its store is the one being moved). The arms are evaluated only under their condition,
// as before, so guarded loads stay guarded.
// Repeated until nothing changes: `if a {..} else if b {..} else {..}` merges the inner
// if/else first, then the outer one.
// `guarded` (tried only when no such merge is left): the arms may hold further guards
// after c (`if c1 { Y += a } else if c2 { Y += b }`, no final else: the element is left
// alone when neither holds). The store then keeps a guard that holds exactly where one
// of the two ran, `if_then_else(c, Ga, Gb)` (Ga, Gb: the arms' guards, their lets as
// let expressions), around `Y[I] = if_then_else(c, va, vb)` (or the accumulation form
// above): Y is read and written under the same conditions as before, and each arm's
// guards and values are evaluated only where the arm ran. One merge per call, the
// innermost if/else first (`if c1 {..} else if c2 {..} else if c3 {..}` merges the c2 / c3
// arms, then c1 with them).
bool Normalizer::merge_if_else(std::vector<Item>& items, bool guarded) {
  bool any = false;
  std::vector<std::tuple<int, size_t, size_t>> cands;  // guarded: (g, ia, ib)
  for (size_t ia = 0; ia < items.size(); ++ia) {
    const Item& a = items[ia];
    if (!a.leaf.as<StoreNode>()) continue;
    auto* sa = a.leaf.as<StoreNode>();
    for (int g = static_cast<int>(a.ctx.size()) - 1; g >= 0; --g) {
      if (a.ctx[g]->is_let) continue;
      if (a.ctx[g]->neg) {
        if (!guarded) break;
        continue;
      }
      bool merged = false;
      for (size_t ib = ia + 1; ib < items.size(); ++ib) {
        const Item& b = items[ib];
        auto* sb = b.leaf.as<StoreNode>();
        if (!sb || b.ctx.size() <= static_cast<size_t>(g)) continue;
        bool same_scope = true;
        for (int i = 0; i < g && same_scope; ++i) same_scope = b.ctx[i] == a.ctx[i];
        const Ctx& gb = *b.ctx[g];
        if (!same_scope || gb.is_let || gb.if_id != a.ctx[g]->if_id || !gb.neg) continue;
        bool lets_only = true;
        for (size_t i = g + 1; i < b.ctx.size(); ++i) lets_only = lets_only && b.ctx[i]->is_let;
        for (size_t i = g + 1; i < a.ctx.size(); ++i) lets_only = lets_only && a.ctx[i]->is_let;
        if (lets_only == guarded || !sb->buffer.same_as(sa->buffer) ||
            !same_indices(sa->indices, sb->indices))
          continue;
        if (guarded) {
          cands.emplace_back(g, ia, ib);
          break;
        }
        merged = try_merge(items, ia, ib, g);
        any = merged || any;
        break;
      }
      if (merged || !guarded) break;
    }
  }
  std::stable_sort(cands.begin(), cands.end(),
                   [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
  for (auto& [g, ia, ib] : cands)
    if (try_merge(items, ia, ib, g)) return true;
  return any;
}

bool Normalizer::try_merge(std::vector<Item>& items, size_t ia, size_t ib, size_t g) {
  const Item& a = items[ia];
  const Item& b = items[ib];
  auto* sa = a.leaf.as<StoreNode>();
  auto* sb = b.leaf.as<StoreNode>();
  const BufferNode* Y = sa->buffer.get();
  std::vector<CtxP> La(a.ctx.begin() + g + 1, a.ctx.end()), Lb(b.ctx.begin() + g + 1, b.ctx.end());
  // The indices must not depend on the branch lets.
  VarSet iv;
  for (auto& i : sa->indices) ad::collect_vars(i, &iv);
  for (auto* L : {&La, &Lb})
    for (auto& l : *L)
      if (iv.count(l->var.get())) return false;
  std::vector<BufSet> writes(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].leaf.defined()) writes[i] = writes_of(items[i].leaf);
  for (size_t i = ia + 1; i < ib; ++i) {
    if (!items[i].leaf.defined()) continue;
    if (writes[i].count(Y) || item_loads(items[i]).count(Y)) return false;
  }
  auto moved_ok = [&](const Expr& e, size_t from) {
    BufSet l = loads_of(e);
    for (size_t i = from; i < ib; ++i)
      if (i != ia && items[i].leaf.defined() && intersects(writes[i], l)) return false;
    return true;
  };
  if (!moved_ok(sa->value, ia) || !moved_ok(a.ctx[g]->value, a.ctx[g]->start)) return false;
  for (auto& i : sa->indices)
    if (!moved_ok(i, ia)) return false;
  for (auto* L : {&La, &Lb})
    for (auto& l : *L)
      if (!moved_ok(l->value, l->start)) return false;
  // (let x = v in e) for the branch lets e needs, with fresh variables (the arm's guards,
  // if any, hold where its value is evaluated: they become the store's guard below).
  auto wrap = [](const std::vector<CtxP>& lets, const Expr& e) {
    VarMap m;
    std::vector<std::pair<Var, Expr>> bs;
    for (auto& l : lets) {
      if (!l->is_let) continue;
      Var nv(l->var.name(), l->var.dtype());
      bs.push_back({nv, substitute(l->value, m)});
      m[l->var.get()] = nv;
    }
    Expr out = substitute(e, m);
    for (size_t i = bs.size(); i-- > 0;)
      if (uses_var(out, bs[i].first.get())) out = make_let(bs[i].first, bs[i].second, out);
    return out;
  };
  const Expr& c = a.ctx[g]->value;
  Expr val;
  auto pa = split_acc(sa), pb = split_acc(sb);
  auto is_sum = [](BinOp op) { return op == BinOp::Add || op == BinOp::Sub; };
  if (pa && pb && pa->first == pb->first) {
    Expr arm = make_if_then_else(c, wrap(La, pa->second), wrap(Lb, pb->second));
    val = make_binary(pa->first, make_load(sa->buffer, sa->indices), arm);
  } else if (pa && pb && is_sum(pa->first) && is_sum(pb->first)) {
    // Y += e1 / Y -= e2: Y = Y + if_then_else(c, e1, -e2).
    auto signed_arm = [&](const std::vector<CtxP>& L, const std::pair<BinOp, Expr>& p) {
      Expr e = wrap(L, p.second);
      return p.first == BinOp::Sub ? make_unary(UnOp::Neg, e) : e;
    };
    Expr arm = make_if_then_else(c, signed_arm(La, *pa), signed_arm(Lb, *pb));
    val = make_binary(BinOp::Add, make_load(sa->buffer, sa->indices), arm);
  } else {
    val = make_if_then_else(c, wrap(La, sa->value), wrap(Lb, sb->value));
  }
  Item merged;
  merged.ctx.assign(a.ctx.begin(), a.ctx.begin() + g);
  // Guards inside an arm (merge_if_else's `guarded` form): the condition under which the
  // arm stores, its lets bound where its guards use them. A guard without loads and lets
  // combines with && / ||, which evaluate both sides; anything else with if_then_else,
  // which evaluates only the side that the original evaluated.
  auto arm_cond = [](const std::vector<CtxP>& tail) {
    std::function<Expr(size_t, const VarMap&)> rec = [&](size_t k, const VarMap& m) -> Expr {
      if (k == tail.size()) return Expr();
      const Ctx& x = *tail[k];
      if (x.is_let) {
        Var nv(x.var.name(), x.var.dtype());
        VarMap m2 = m;
        m2[x.var.get()] = nv;
        Expr inner = rec(k + 1, m2);
        if (!inner.defined() || !uses_var(inner, nv.get())) return inner;
        return make_let(nv, substitute(x.value, m), inner);
      }
      Expr c = substitute(x.value, m);
      if (x.neg) c = make_unary(UnOp::Not, c);
      Expr inner = rec(k + 1, m);
      if (!inner.defined()) return c;
      if (loads_of(inner).empty() && !inner.as<LetNode>()) return make_binary(BinOp::And, c, inner);
      return make_if_then_else(c, inner, make_bool(false));
    };
    return rec(0, {});
  };
  Expr ga = arm_cond(La), gb = arm_cond(Lb);
  if (ga.defined() || gb.defined()) {
    auto plain = [](const Expr& e) { return loads_of(e).empty() && !e.as<LetNode>(); };
    Expr guard;
    if (!ga.defined())
      guard = plain(gb) ? make_binary(BinOp::Or, c, gb) : make_if_then_else(c, make_bool(true), gb);
    else if (!gb.defined())
      guard = plain(ga) ? make_binary(BinOp::Or, make_unary(UnOp::Not, c), ga)
                        : make_if_then_else(c, ga, make_bool(true));
    else
      guard = make_if_then_else(c, ga, gb);
    auto gc = std::make_shared<Ctx>();
    gc->value = guard;
    gc->if_id = next_if_++;
    gc->start = a.ctx[g]->start;
    merged.ctx.push_back(gc);
  }
  merged.leaf = make_store(sa->buffer, sa->indices, val);
  items[ib] = merged;
  items[ia].leaf = Stmt();
  return true;
}

// Every item re-evaluates its context right before its leaf (after splitting or lifting):
// sound when no item between the original evaluation point of a context value and the
// item writes a buffer the value reads.
bool Normalizer::ctx_stable(const std::vector<Item>& items, const VarNode* scan) {
  std::vector<BufSet> writes(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].leaf.defined()) writes[i] = writes_of(items[i].leaf);
  for (size_t j = 0; j < items.size(); ++j) {
    if (!items[j].leaf.defined()) continue;
    for (auto& c : items[j].ctx) {
      BufSet l = loads_of(c->value);
      for (size_t i = c->start; i < j; ++i)
        for (auto* y : l)
          if (writes[i].count(y) && !(scan && other_step_loads(c->value, y, items[i].leaf, scan)))
            return false;
    }
  }
  return true;
}

}  // namespace

// (normalize.h)
bool ad::offsets_apart(int64_t c, const Expr& extent, const std::vector<std::pair<int64_t, int64_t>>& offs) {
  int64_t e;
  if (c <= 0 || !is_const_int(extent, &e) || e < 1) return false;
  auto floor_div = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  for (auto& [alo, ahi] : offs)
    for (auto& [blo, bhi] : offs) {
      // c*k in [blo - ahi, bhi - alo] for some k != 0 with |k| <= e - 1?
      int64_t dlo = blo - ahi, dhi = bhi - alo;
      int64_t klo = std::max<int64_t>(-floor_div(-dlo, c), -(e - 1));
      int64_t khi = std::min<int64_t>(floor_div(dhi, c), e - 1);
      if (klo > khi) continue;
      if (klo != 0 || khi != 0) return false;
    }
  return true;
}

namespace {

// Splitting the body into blocks (all of statement 1, then all of statement 2, ...) or
// lifting a loop keeps the result when iterations of the block touch disjoint elements of
// every buffer the block writes (LANGUAGE.md: spatial iterations that conflict make a block
// invalid; this checks it instead of trusting it). Sufficient condition used: there are
// index dimensions in which every access of the buffer has the same expression of the
// spatial iter vars, and that tuple of expressions is injective over the iteration box
// (per dimension an affine form whose coefficients satisfy the mixed-radix condition
// |c_k| > sum_{j<k} |c_j| (extent_j - 1), or offsets_apart for a dimension of one iter var,
// the dimensions using disjoint iter vars that together cover every iter var of extent > 1).
bool Normalizer::iterations_disjoint(const BlockNode& b, const std::vector<Item>& items,
                                     const VarNode* step) {
  AccessScan scan;
  BufSet written;
  for (auto& it : items) {
    for (auto& c : it.ctx) scan.visit(c->value);
    scan.visit(it.leaf);
    for (auto* w : writes_of(it.leaf)) written.insert(w);
  }
  if (step) {
    // A scan step (rewrite 9): accesses at another step than every store of the buffer writes
    // (`A[vt - 1, 1 - vj]` next to the store `A[vt, vj]`) touch nothing the step writes, so
    // they cannot conflict with its spatial iterations: only the step's own accesses count.
    std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> stores;
    for (auto& it : items) for_each_stmt_store_indices(it.leaf, &stores);
    for (auto& [Y, tuples] : scan.acc) {
      auto sit = stores.find(Y);
      if (sit == stores.end()) continue;
      std::vector<std::vector<Expr>> keep;
      for (auto& t : tuples) {
        bool apart = true;
        for (auto& st : sit->second) apart = apart && other_step(t, st, step);
        if (!apart) keep.push_back(t);
      }
      tuples = std::move(keep);
    }
  }
  if (b.init.defined()) {
    scan.visit(b.init);
    for (auto* w : writes_of(b.init)) written.insert(w);
  }
  std::unordered_map<const VarNode*, Expr> spatial;
  for (auto& iv : b.iter_vars)
    if (iv.kind == IterKind::Spatial) spatial[iv.var.get()] = iv.extent;
  auto unit = [&](const VarNode* v) {
    int64_t e;
    return is_const_int(spatial.at(v), &e) && e == 1;
  };
  for (auto* Y : written) {
    if (scan.opaque.count(Y)) return false;
    auto& tuples = scan.acc[Y];
    if (tuples.empty()) return false;
    VarSet covered;
    // Columns: one expression per access. A pair of dimensions `A // c`, `A % c` (the same A
    // and c in every access, e.g. `Y[vf // 3, vf % 3]` of a fused loop) determines A: it is
    // one column A.
    std::vector<std::vector<Expr>> cols(tuples[0].size());
    for (auto& t : tuples) {
      if (t.size() != cols.size()) return false;
      for (size_t d = 0; d < t.size(); ++d) cols[d].push_back(t[d]);
    }
    auto divmod = [&](const std::vector<Expr>& col, BinOp op, const Expr* a, const Expr* c) {
      for (auto& e : col) {
        auto* bin = e.as<BinaryNode>();
        if (!bin || bin->op != op || !is_const_int(bin->b) || (a && !expr_identical(bin->a, *a)) ||
            (c && !expr_identical(bin->b, *c)))
          return false;
      }
      return true;
    };
    for (size_t d = 0; d < cols.size(); ++d) {
      if (cols[d].empty() || !divmod(cols[d], BinOp::FloorDiv, nullptr, nullptr)) continue;
      auto* b0 = cols[d][0].as<BinaryNode>();
      if (!divmod(cols[d], BinOp::FloorDiv, &b0->a, &b0->b)) continue;
      for (size_t d2 = 0; d2 < cols.size(); ++d2)
        if (d2 != d && !cols[d2].empty() && divmod(cols[d2], BinOp::FloorMod, &b0->a, &b0->b)) {
          Expr a = b0->a;
          for (auto& e : cols[d]) e = a;
          cols[d2].clear();
          break;
        }
    }
    for (size_t d = 0; d < cols.size(); ++d) {
      if (cols[d].empty()) continue;
      // Every access: the same spatial part (coefficients of the spatial iter vars and scalar
      // params) plus an offset (constant and inner loop vars of constant bounds, e.g.
      // `C[vo * 4 + ii]` of an inner loop ii in [0, 4)) whose range over all accesses is
      // [lo, hi]; the spatial part must then be injective with gaps larger than hi - lo.
      bool ok = true;
      std::optional<ad::Affine> key;
      int64_t lo = 0, hi = 0;
      std::vector<std::pair<int64_t, int64_t>> offs;  // each access's offset range
      for (size_t a = 0; a < cols[d].size() && ok; ++a) {
        const Expr& e = cols[d][a];
        if (has_load_or_let(e)) {
          ok = false;
          break;
        }
        auto aff = ad::to_affine(e);
        if (!aff) {
          ok = false;
          break;
        }
        ad::Affine sp;
        int64_t omin = aff->constant, omax = aff->constant;
        for (auto& [v, c] : aff->terms) {
          const VarNode* vn = v.get();
          if (spatial.count(vn) || scalars_.count(vn)) {
            sp.add(v, c);
          } else if (auto it = scan.loops.find(vn); it != scan.loops.end()) {
            omin += c > 0 ? c * it->second.first : c * it->second.second;
            omax += c > 0 ? c * it->second.second : c * it->second.first;
          } else {
            ok = false;
          }
        }
        if (!ok) break;
        offs.push_back({omin, omax});
        if (!key) {
          key = sp;
          lo = omin;
          hi = omax;
        } else {
          bool same = key->terms.size() == sp.terms.size();
          for (auto& [v, c] : sp.terms) same = same && key->coeff(v.get()) == c;
          ok = same;
          lo = std::min(lo, omin);
          hi = std::max(hi, omax);
        }
      }
      if (!ok || !key) continue;
      std::vector<std::pair<int64_t, const VarNode*>> terms;  // (|coefficient|, var)
      for (auto& [v, c] : key->terms) {
        const VarNode* vn = v.get();
        if (!spatial.count(vn)) continue;  // a scalar param: the same shift for every iteration
        if (unit(vn)) continue;
        if (covered.count(vn)) ok = false;
        terms.push_back({c < 0 ? -c : c, vn});
      }
      if (!ok || terms.empty()) continue;
      std::sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      if (terms.size() == 1 && terms[0].first <= hi - lo &&
          ad::offsets_apart(terms[0].first, spatial.at(terms[0].second), offs)) {
        covered.insert(terms[0].second);
        continue;
      }
      int64_t span = hi - lo;
      for (size_t q = 0; q < terms.size(); ++q) {
        auto [c, v] = terms[q];
        int64_t ext = 0;  // the last term's extent does not matter (symbolic allowed)
        if (c <= span || (q + 1 < terms.size() && !is_const_int(spatial.at(v), &ext))) {
          ok = false;
          break;
        }
        span += c * (ext - 1);
      }
      if (!ok) continue;
      for (auto& t : terms) covered.insert(t.second);
    }
    for (auto& [v, ext] : spatial)
      if (!unit(v) && !covered.count(v)) return false;
  }
  return true;
}

// Splitting also assumes that each point of the iteration space runs once: a block
// instance repeated by a loop its bindings ignore (or by a non-injective binding) would run
// `s1, s2, s1, s2` in the original and `s1, s1, s2, s2` split. Checked: the bindings,
// affine in the enclosing loop vars, are injective over the loop box (same mixed-radix
// test as above), every enclosing loop of extent > 1 being used.
bool Normalizer::instances_distinct(const BlockRealizeNode* br) {
  std::unordered_map<const VarNode*, const ForNode*> loops;
  for (auto* f : loops_) loops[f->loop_var.get()] = f;
  auto unit = [&](const VarNode* v) {
    int64_t e;
    return is_const_int(loops.at(v)->extent, &e) && e == 1;
  };
  VarSet covered;
  // A predicate conjunct `e1 == e2` pins an injective affine form of the loops to one value,
  // just as a binding does (the init block of rewrite 7 runs where the reduce bindings are 0).
  std::vector<Expr> forms = br->bindings;
  std::vector<Expr> todo{br->predicate};
  while (!todo.empty()) {
    Expr e = todo.back();
    todo.pop_back();
    auto* bin = e.defined() ? e.as<BinaryNode>() : nullptr;
    if (!bin) continue;
    if (bin->op == BinOp::And) {
      todo.push_back(bin->a);
      todo.push_back(bin->b);
    } else if (bin->op == BinOp::EQ && is_int(bin->a.dtype())) {
      forms.push_back(bin->a - bin->b);
    }
  }
  for (auto& bnd : forms) {
    auto aff = ad::to_affine(bnd);
    if (!aff) continue;
    std::vector<std::pair<int64_t, const VarNode*>> terms;
    bool ok = true;
    for (auto& [v, c] : aff->terms) {
      if (!loops.count(v.get())) continue;  // a scalar param
      if (unit(v.get())) continue;
      if (covered.count(v.get())) ok = false;
      terms.push_back({c < 0 ? -c : c, v.get()});
    }
    if (!ok || terms.empty()) continue;
    if (terms.size() > 1) {
      std::sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      int64_t span = 0;
      for (auto& [c, v] : terms) {
        int64_t ext;
        if (!is_const_int(loops.at(v)->extent, &ext) || c <= span) {
          ok = false;
          break;
        }
        span += c * (ext - 1);
      }
    }
    if (!ok) continue;
    for (auto& t : terms) covered.insert(t.second);
  }
  bool all = true;
  for (auto& [v, f] : loops)
    if (!unit(v) && !covered.count(v)) all = false;
  return all || instances_distinct_enumerated(br);
}

// Bindings that are not affine (`vr = r % 3`, `vi = i // 2` under `where i % 2 == 0`) are
// checked point by point: every point of the loop box where the predicate holds (an `if`
// between the loops is ignored: more points, so a stricter test) gives another tuple of
// binding values. Only constant loop bounds and at most 2^14 points; false otherwise.
bool Normalizer::instances_distinct_enumerated(const BlockRealizeNode* br) {
  std::vector<const ForNode*> loops;
  std::vector<int64_t> lo, ext;
  int64_t total = 1;
  // A loop L whose bounds are not constant (a symbolic `n`) is left out when one binding is
  // L's var (minus its min) and nothing else uses it: its points differ in that binding.
  VarSet skipped;
  auto own_coordinate = [&](const ForNode* f) {
    const VarNode* v = f->loop_var.get();
    if (uses_var(br->predicate, v)) return false;
    int own = 0;
    for (auto& bd : br->bindings) {
      if (!uses_var(bd, v)) continue;
      auto* sub = bd.as<BinaryNode>();
      bool plain = bd.get() == v ||
                   (sub && sub->op == BinOp::Sub && sub->a.get() == v && expr_identical(sub->b, f->min));
      if (!plain) return false;
      ++own;
    }
    return own == 1;
  };
  for (auto* f : loops_) {
    int64_t a = 0, e = 0;
    if (!is_const_int(f->min, &a) || !is_const_int(f->extent, &e)) {
      if (own_coordinate(f)) {
        skipped.insert(f->loop_var.get());
        continue;
      }
      return false;
    }
    if (e <= 0) return true;  // the block never runs
    total *= e;
    if (total > (int64_t{1} << 14)) return false;
    loops.push_back(f);
    lo.push_back(a);
    ext.push_back(e);
  }
  auto eval = [](const Expr& e, const std::unordered_map<const VarNode*, Expr>& at, int64_t* v) {
    auto r = ad::eval_at(e, at);
    if (r) *v = *r;
    return r.has_value();
  };
  std::set<std::vector<int64_t>> seen;
  std::vector<int64_t> pt(loops.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    std::unordered_map<const VarNode*, Expr> at;
    for (size_t i = 0; i < loops.size(); ++i)
      at[loops[i]->loop_var.get()] = make_int(lo[i] + pt[i], loops[i]->loop_var.dtype());
    int64_t p = 1;
    if (!eval(br->predicate, at, &p)) return false;
    if (p) {
      std::vector<int64_t> tuple;
      for (auto& b : br->bindings) {
        int64_t v = 0;
        bool own = false;
        for (auto* sv : skipped) own = own || uses_var(b, sv);
        if (own) continue;
        if (!eval(b, at, &v)) return false;
        tuple.push_back(v);
      }
      if (!seen.insert(std::move(tuple)).second) return false;
    }
    for (size_t i = loops.size(); i-- > 0;) {
      if (++pt[i] < ext[i]) break;
      pt[i] = 0;
    }
  }
  return true;
}

std::optional<std::vector<Item>> Normalizer::body_items(const Stmt& body, const VarNode* scan, bool stable) {
  std::vector<Item> items;
  CtxList ctx;
  bool saw_else = false;
  if (!flatten(body, ctx, items, &saw_else)) return std::nullopt;
  do {
    while (merge_if_else(items)) {
    }
  } while (saw_else && merge_if_else(items, true));
  if (stable && !ctx_stable(items, scan)) return std::nullopt;
  std::vector<Item> live;
  for (auto& it : items)
    if (it.leaf.defined()) live.push_back(it);
  return live;
}

// Rewrite 3: a chain of loops (each body is one loop, up to lets/guards) ending in
// independent stores. Each loop var k becomes a new iter var:
//  - spatial when every store's indices have a dimension c*k + (no k) with c != 0 and every
//    access of the stored buffer in the loop nest uses exactly the store's indices:
//    iterations with different k touch different elements, none reads another's;
//  - reduce when every store is an accumulation Y[I] = Y[I] op e (op + - * max min) whose
//    indices do not use k and nothing else in the nest reads Y: the iterations update one
//    element with an associative, commutative operator, which is what reduce declares.
// The contexts between loops are re-evaluated for every iteration of the inner loops:
// they must not read a buffer the nest writes. Loop bounds must be expressions of scalar
// parameters (iter var extents). The new loops go directly around the block realize, in
// the same order, so the body instances run in exactly the original order.
// With an init, only reduce vars may be added (init runs once per output element, at the
// first value of every reduce var, as before) and their extents must be positive
// constants (an empty loop would skip the init).
std::optional<LiftPlan> Normalizer::plan_lift(const BlockNode& b, const Item& it, bool has_init) {
  LiftPlan p;
  p.levels.push_back(it.ctx);
  const ForNode* f = it.leaf.as<ForNode>();
  std::vector<Item> inner;
  while (true) {
    for (auto* e : {&f->min, &f->extent}) {
      if (has_load_or_let(*e)) return std::nullopt;
      for (auto* v : vars_of(*e))
        if (!scalars_.count(v)) return std::nullopt;
    }
    p.loops.push_back(f);
    auto items = body_items(f->body);
    if (!items || items->empty()) return std::nullopt;
    if (items->size() == 1 && (*items)[0].leaf.as<ForNode>()) {
      p.levels.push_back((*items)[0].ctx);
      f = (*items)[0].leaf.as<ForNode>();
      continue;
    }
    if (items->size() == 2 && !p.init && (*items)[0].leaf.as<StoreNode>() && (*items)[1].leaf.as<ForNode>()) {
      Item init = (*items)[0];
      CtxList full;
      for (auto& lv : p.levels) full.insert(full.end(), lv.begin(), lv.end());
      full.insert(full.end(), init.ctx.begin(), init.ctx.end());
      init.ctx = full;
      p.init = init;
      p.init_at = p.loops.size();
      p.levels.push_back((*items)[1].ctx);
      f = (*items)[1].leaf.as<ForNode>();
      continue;
    }
    inner = *items;
    break;
  }
  if (!independent_stores(inner)) return std::nullopt;
  p.stores = inner;
  BufSet written;
  for (auto& s : inner) written.insert(s.leaf.as<StoreNode>()->buffer.get());
  for (auto& lv : p.levels)
    for (auto& c : lv)
      if (intersects(loads_of(c->value), written)) return std::nullopt;
  AccessScan scan;
  for (auto& lv : p.levels)
    for (auto& c : lv) scan.visit(c->value);
  for (auto& s : inner) {
    for (auto& c : s.ctx) scan.visit(c->value);
    scan.visit(s.leaf);
  }
  if (p.init) {
    // The init inside the nest (see can_become_init for why this is init's semantics):
    // one accumulation into the element e0 is stored to, a block without reduce vars or
    // init, lets only above the store (init runs whatever the body's guards say).
    bool ok = !has_init && inner.size() == 1;
    for (auto& iv : b.iter_vars) ok = ok && iv.kind == IterKind::Spatial;
    for (auto& c : p.init->ctx) ok = ok && c->is_let;
    if (ok) {
      auto* s0 = p.init->leaf.as<StoreNode>();
      auto* s1 = inner[0].leaf.as<StoreNode>();
      ok = s1->buffer.same_as(s0->buffer) && same_indices(s0->indices, s1->indices) && split_acc(s1) &&
           !loads_of(s0->value).count(s0->buffer.get());
      for (auto& c : p.init->ctx) ok = ok && !intersects(loads_of(c->value), written);
    }
    if (!ok) return std::nullopt;
    scan.visit(p.init->leaf);
  }
  // Lets bound inside the nest may depend on the loop vars: indices using them are not
  // known to ignore a loop var.
  VarSet nest_lets;
  for (size_t l = 1; l < p.levels.size(); ++l)
    for (auto& c : p.levels[l])
      if (c->is_let) nest_lets.insert(c->var.get());
  for (auto& s : inner)
    for (auto& c : s.ctx)
      if (c->is_let) nest_lets.insert(c->var.get());
  if (p.init)
    for (auto& c : p.init->ctx)
      if (c->is_let) nest_lets.insert(c->var.get());
  for (auto& s : inner)
    for (auto& i : s.leaf.as<StoreNode>()->indices)
      for (auto* v : vars_of(i))
        if (nest_lets.count(v)) return std::nullopt;
  for (size_t j = 0; j < p.loops.size(); ++j) {
    const ForNode* loop = p.loops[j];
    const VarNode* k = loop->loop_var.get();
    bool spatial = !has_init, reduce = true;
    for (auto& s : inner) {
      auto* st = s.leaf.as<StoreNode>();
      const BufferNode* Y = st->buffer.get();
      // spatial
      bool inj = false;
      for (auto& i : st->indices) {
        auto c = lin_coeff(i, k);
        if (c && *c != 0) inj = true;
      }
      bool exact = !scan.opaque.count(Y);
      for (auto& t : scan.acc[Y]) exact = exact && same_indices(t, st->indices);
      spatial = spatial && inj && exact;
      // reduce
      bool idx_k = false;
      for (auto& i : st->indices) idx_k = idx_k || uses_var(i, k);
      bool ctx_reads = false;
      for (auto& c : s.ctx) ctx_reads = ctx_reads || loads_of(c->value).count(Y);
      reduce = reduce && !idx_k && !ctx_reads && split_acc(st).has_value();
    }
    if (p.init) {
      if (j < p.init_at)
        reduce = false;
      else
        spatial = false;
    }
    if (!spatial && !reduce) return std::nullopt;
    IterKind kind = spatial ? IterKind::Spatial : IterKind::Reduce;
    if (kind == IterKind::Reduce && (has_init || p.init)) {
      int64_t e;
      if (!is_const_int(loop->extent, &e) || e <= 0) return std::nullopt;
    }
    p.kinds.push_back(kind);
  }
  return p;
}

// A store `Y[I] = e0` (lets around it only, e0 not reading Y) right before a lifted nest
// of reduce loops accumulating into Y[I] (one store, the same I, the block without reduce
// vars or init) becomes the new block's init: init runs for each spatial point when every
// reduce var is 0, before the body, i.e. exactly where e0 was stored (loop extents must be
// positive constants so that the init still runs).
bool Normalizer::can_become_init(const BlockNode& b, const Item& st, const LiftPlan& p) {
  auto* s0 = st.leaf.as<StoreNode>();
  if (!s0 || b.init.defined() || p.init || p.stores.size() != 1) return false;
  for (auto& iv : b.iter_vars)
    if (iv.kind != IterKind::Spatial) return false;
  for (auto& c : st.ctx)
    if (!c->is_let || loads_of(c->value).count(s0->buffer.get())) return false;
  for (size_t j = 0; j < p.loops.size(); ++j) {
    int64_t e;
    if (p.kinds[j] != IterKind::Reduce || !is_const_int(p.loops[j]->extent, &e) || e <= 0) return false;
  }
  auto* s1 = p.stores[0].leaf.as<StoreNode>();
  if (!s1->buffer.same_as(s0->buffer) || !same_indices(s0->indices, s1->indices)) return false;
  for (auto& i : s0->indices)
    if (has_load_or_let(i)) return false;
  if (loads_of(s0->value).count(s0->buffer.get())) return false;
  return split_acc(s1).has_value();
}

// Rewrite 4: in a block with reduce vars and no init, a first item
// `if rv1 == 0 && ... { Y[I] = e0 }` (every reduce var exactly once, lets only besides the
// guard, e0 not reading Y) followed by an accumulation into Y[I] is the hand-written init
// of TVM's opaque style: at the point where every reduce var is 0 it runs before the rest
// of the body, elsewhere it does nothing -- which is init's semantics.
std::optional<Item> Normalizer::manual_init(const BlockNode& b, const std::vector<Item>& items) {
  if (items.size() < 2 || b.init.defined()) return std::nullopt;
  auto* s0 = items[0].leaf.as<StoreNode>();
  if (!s0) return std::nullopt;
  VarSet reduce;
  for (auto& iv : b.iter_vars)
    if (iv.kind == IterKind::Reduce) reduce.insert(iv.var.get());
  if (reduce.empty()) return std::nullopt;
  int guard = -1;
  for (size_t i = 0; i < items[0].ctx.size(); ++i)
    if (!items[0].ctx[i]->is_let) {
      if (guard >= 0 || items[0].ctx[i]->neg) return std::nullopt;
      guard = static_cast<int>(i);
    }
  if (guard < 0) return std::nullopt;
  if (!pins_to_zero(items[0].ctx[guard]->value, reduce)) return std::nullopt;
  if (loads_of(s0->value).count(s0->buffer.get())) return std::nullopt;
  for (auto& c : items[0].ctx)
    if (loads_of(c->value).count(s0->buffer.get())) return std::nullopt;
  bool acc = false;
  for (size_t i = 1; i < items.size(); ++i) {
    auto* st = items[i].leaf.as<StoreNode>();
    if (st && st->buffer.same_as(s0->buffer) && same_indices(st->indices, s0->indices) && split_acc(st))
      acc = true;
    if (items[i].leaf.as<ForNode>()) acc = true;  // a loop to lift: plan_lift checks it
  }
  if (!acc) return std::nullopt;
  Item init = items[0];
  init.ctx.erase(init.ctx.begin() + guard);
  return init;
}

Stmt Normalizer::build(const CtxList& ctx, const Stmt& leaf, VarMap m) {
  struct B {
    bool is_let;
    Var v;
    Expr val;
  };
  std::vector<B> bs;
  for (auto& c : ctx) {
    Expr v = substitute(c->value, m);
    if (c->is_let) {
      Var nv(c->var.name(), c->var.dtype());
      m[c->var.get()] = nv;
      bs.push_back({true, nv, v});
    } else {
      bs.push_back({false, Var(), c->neg ? make_unary(UnOp::Not, v) : v});
    }
  }
  Stmt s = substitute(leaf, m);
  for (size_t i = bs.size(); i-- > 0;) {
    if (bs[i].is_let) {
      if (uses_var(s, bs[i].v.get())) s = make_let_stmt(bs[i].v, bs[i].val, s);
    } else {
      s = make_if(bs[i].val, s);
    }
  }
  return s;
}

Stmt Normalizer::build_piece(const BlockRealizeNode* br, const Piece& p, const std::string& name,
                             bool fresh) {
  const BlockNode& b = *br->block.get();
  VarMap m;
  BlockNode nb;
  nb.name = name;
  nb.annotations = b.annotations;
  for (auto& iv : b.iter_vars) {
    Var nv = fresh ? Var(iv.var.name(), iv.var.dtype()) : iv.var;
    m[iv.var.get()] = nv;
    nb.iter_vars.push_back({nv, iv.kind, iv.extent});
  }
  std::vector<Expr> bindings = br->bindings;
  std::vector<std::pair<Var, Expr>> loops;  // new loops around the realize
  std::vector<Stmt> body;
  if (p.lift) {
    const LiftPlan& lp = *p.lift;
    LocalNames ln;
    ln.visit_block(&b);
    std::unordered_set<std::string> taken;
    for (auto& [n, c] : ln.names)
      if (c > 0) taken.insert(n);
    for (auto& a : new_allocs_) taken.insert(a->name);
    for (size_t j = 0; j < lp.loops.size(); ++j) {
      const ForNode* f = lp.loops[j];
      Var lv(scoped_name(f->loop_var.name(), taken), f->loop_var.dtype());
      Var v(scoped_name("v" + f->loop_var.name(), taken), f->loop_var.dtype());
      loops.push_back({lv, f->extent});
      bindings.push_back(lv);
      nb.iter_vars.push_back({v, lp.kinds[j], f->extent});
      m[f->loop_var.get()] = is_zero(f->min) ? Expr(v) : v + f->min;
    }
    for (auto& s : lp.stores) {
      CtxList all;
      for (auto& lv : lp.levels) all.insert(all.end(), lv.begin(), lv.end());
      all.insert(all.end(), s.ctx.begin(), s.ctx.end());
      body.push_back(build(all, s.leaf, m));
    }
  } else {
    for (auto& it : p.items) body.push_back(build(it.ctx, it.leaf, m));
  }
  nb.body = make_seq(body);
  if (p.lift && p.lift->init)
    nb.init = build(p.lift->init->ctx, p.lift->init->leaf, m);
  else if (p.init)
    nb.init = build(p.init->ctx, p.init->leaf, m);
  else if (b.init.defined())
    nb.init = substitute(b.init, m);
  ad::set_regions(nb);
  Stmt s = make_block_realize(bindings, br->predicate, make_block(std::move(nb)));
  for (size_t j = loops.size(); j-- > 0;)
    s = make_for(loops[j].first, make_const(loops[j].second.dtype(), 0), loops[j].second, ForKind::Serial, s);
  return s;
}

// Block-local buffers of a block split into several: each iteration had its own copy, so
// the buffer gets one slice per iteration (leading dimensions = the iter vars) and becomes
// a function alloc.
class AllocExpander : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> map;
  std::vector<Expr> prefix;
  bool bad = false;

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    auto it = map.find(n->buffer.get());
    if (it == map.end()) return changed ? make_load(n->buffer, idx) : e;
    std::vector<Expr> full = prefix;
    full.insert(full.end(), idx.begin(), idx.end());
    return make_load(it->second, full);
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Expr v = mutate(n->value);
    auto it = map.find(n->buffer.get());
    if (it == map.end()) return changed || !v.same_as(n->value) ? make_store(n->buffer, idx, v) : s;
    std::vector<Expr> full = prefix;
    full.insert(full.end(), idx.begin(), idx.end());
    return make_store(it->second, full, v);
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    if (map.count(n->buffer.get())) bad = true;
    return IRMutator::mutate_buffer_ptr(n, e);
  }
};

// Rewrite 5 with block-local allocs (TVM's per-row scratch: `block row(vi) { alloc Mu: f32[1];
// for k { block mu(vr = vi, vk: reduce) { Mu[0] += .. } } for j { block y(vr = vi, vj) { ..
// Mu[0] .. } } }`): each alloc gets the scope block's iter vars as leading dimensions (one slice
// per instance, which is what a buffer local to each instance is). Inside a nested block the
// scope's iter var is not visible: the leading index is the nested block's iter var bound to
// exactly that var (`vr = vi`), recursively; a nested block touching the alloc without such a
// binding, or a pointer to it, sets `bad` (the block is then left as written).
class ScopeAllocExpander : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> map;
  std::vector<Expr> prefix;  // the leading indices, in the scope being rewritten
  bool bad = false;

 protected:
  std::vector<Expr> full(const std::vector<Expr>& idx) const {
    std::vector<Expr> r = prefix;
    r.insert(r.end(), idx.begin(), idx.end());
    return r;
  }
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    auto it = map.find(n->buffer.get());
    if (it == map.end()) return changed ? make_load(n->buffer, idx) : e;
    return make_load(it->second, full(idx));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Expr v = mutate(n->value);
    auto it = map.find(n->buffer.get());
    if (it == map.end()) return changed || !v.same_as(n->value) ? make_store(n->buffer, idx, v) : s;
    return make_store(it->second, full(idx), v);
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    if (map.count(n->buffer.get())) bad = true;
    return IRMutator::mutate_buffer_ptr(n, e);
  }
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    const BlockNode& b = *n->block.get();
    bool touches = false;
    auto scan = [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && map.count(l->buffer.get())) touches = true;
      if (auto* p = x.as<BufferPtrNode>(); p && map.count(p->buffer.get())) touches = true;
    };
    for_each_expr(b.body, scan);
    if (b.init.defined()) for_each_expr(b.init, scan);
    std::unordered_set<const BufferNode*> st;
    ad::stored_buffers(b.body, &st);
    if (b.init.defined()) ad::stored_buffers(b.init, &st);
    for (auto& [k, v] : map) touches = touches || st.count(k);
    for (auto* rs : {&b.reads, &b.writes})
      for (auto& r : *rs) touches = touches || map.count(r.buffer.get());
    if (!touches) return s;
    // Bindings and `where` are evaluated in the outer scope: left to the refusal.
    touches = false;
    for_each_expr(n->predicate, scan);
    for (auto& x : n->bindings) for_each_expr(x, scan);
    if (touches) {
      bad = true;
      return s;
    }
    std::vector<Expr> inner;
    for (auto& p : prefix) {
      size_t k = 0;
      while (k < n->bindings.size() && !n->bindings[k].same_as(p) &&
             !(n->bindings[k].as<VarNode>() && p.as<VarNode>() && n->bindings[k].get() == p.get()))
        ++k;
      if (k == n->bindings.size()) {
        bad = true;
        return s;
      }
      inner.push_back(b.iter_vars[k].var);
    }
    std::vector<Expr> saved = prefix;
    prefix = inner;
    BlockNode nb = b;
    nb.body = mutate(b.body);
    if (b.init.defined()) nb.init = mutate(b.init);
    for (auto* rs : {&nb.reads, &nb.writes})
      for (auto& r : *rs) {
        auto it = map.find(r.buffer.get());
        if (it == map.end()) continue;
        std::vector<Range> rg;
        for (auto& p : prefix) rg.push_back(Range{p, Expr()});
        rg.insert(rg.end(), r.ranges.begin(), r.ranges.end());
        r.buffer = it->second;
        r.ranges = rg;
      }
    prefix = saved;
    return make_block_realize(n->bindings, n->predicate, make_block(std::move(nb)));
  }
};

std::optional<std::vector<Stmt>> Normalizer::normalize_block(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  bool all_spatial = true, scan = false;
  const VarNode* scan_var = nullptr;  // a step's own elements: see other_step_loads
  for (auto& iv : b.iter_vars) {
    if (iv.kind == IterKind::Opaque) return opaque_kinds(br);
    if (iv.kind == IterKind::Scan) {
      scan_var = scan ? nullptr : iv.var.get();
      scan = true;
    }
    if (iv.kind != IterKind::Spatial) all_spatial = false;
  }
  const bool has_init = b.init.defined();
  if (has_init && !scan)
    if (auto r = split_init(br)) return r;
  if (scan && !has_init && b.allocs.empty()) {
    auto items = body_items(b.body);
    if (items && items->size() == 1)
      if (auto r = expand_state(br, *items)) return r;
    // Several states in one step (`let z = f(S, Q); S = g(z); Q = h(z, Q)`): the lets read
    // states that items before them store, which expand_state places itself. Only lets,
    // stores and `if`s without else, one item per store (merging if/else or complementary
    // `if`s would move conditions past stores).
    struct Shape : IRVisitor {
      bool has_else = false;
      size_t stores = 0;
      void visit_if(const IfThenElseStmtNode* n) override {
        has_else = has_else || n->else_case.defined();
        IRVisitor::visit_if(n);
      }
      void visit_store(const StoreNode* n) override {
        ++stores;
        IRVisitor::visit_store(n);
      }
    } sh;
    sh.visit(b.body);
    if (!sh.has_else) {
      auto all = body_items(b.body, nullptr, false);
      if (all && all->size() >= 2 && all->size() == sh.stores)
        if (auto r = expand_state(br, *all)) return r;
    }
  }
  {
    // Blocks gradient() accepts as they are stay untouched.
    std::vector<Item> items;
    CtxList ctx;
    bool saw_else = false;
    if (!flatten(b.body, ctx, items, &saw_else) || items.empty()) return std::nullopt;
    if (!saw_else && b.allocs.empty() && independent_stores(items)) return std::nullopt;
  }
  Stmt body = b.body;
  if (scan) {
    // A scan step may read what earlier steps wrote: only rewrite 1 (if/else merged in
    // place, within one step) keeps the order of its statements, so only that one applies.
    if (!b.allocs.empty()) return std::nullopt;
    auto items = body_items(body, scan_var);
    if (!items || items->empty()) return std::nullopt;
    for (auto& it : *items)
      if (it.leaf.as<ForNode>()) return std::nullopt;
    if (!independent_stores(*items)) return split_scan_step(br, *items);
    return std::vector<Stmt>{build_piece(br, Piece{*items, std::nullopt, std::nullopt}, b.name, false)};
  }
  std::vector<Buffer> expanded;
  if (!b.allocs.empty()) {
    if (!all_spatial || has_init) return std::nullopt;
    AllocExpander ex;
    for (auto& iv : b.iter_vars) ex.prefix.push_back(iv.var);
    for (auto& a : b.allocs) {
      std::vector<Expr> shape;
      for (auto& iv : b.iter_vars) shape.push_back(iv.extent);
      shape.insert(shape.end(), a->shape.begin(), a->shape.end());
      Buffer nb(reuse_name(a->name), a->dtype, shape, "global");
      ex.map[a.get()] = nb;
      expanded.push_back(nb);
    }
    body = ex.mutate(body);
    if (ex.bad) return std::nullopt;
  }
  auto items_opt = body_items(body);
  if (!items_opt || items_opt->empty()) return std::nullopt;
  std::vector<Item> items = std::move(*items_opt);

  std::vector<Piece> pieces;
  if (expanded.empty() && independent_stores(items)) {
    // One block is enough (e.g. after merging an if/else): nothing moves across iterations.
    pieces.push_back(Piece{items, std::nullopt, std::nullopt});
  } else if (all_spatial && !has_init && (items.size() > 1 || !expanded.empty())) {
    // Rewrite 2: one block per group of independent statements.
    if (!iterations_disjoint(b, items) || !instances_distinct(br)) return std::nullopt;
    std::vector<std::optional<LiftPlan>> plans(items.size());
    for (size_t j = 0; j < items.size(); ++j)
      if (items[j].leaf.as<ForNode>()) {
        plans[j] = plan_lift(b, items[j], false);
        if (!plans[j]) return std::nullopt;
      }
    bool open = false;
    for (size_t j = 0; j < items.size(); ++j) {
      if (plans[j]) {
        Piece p;
        p.items = {items[j]};
        p.lift = plans[j];
        if (j > 0 && !plans[j - 1] && can_become_init(b, items[j - 1], *plans[j])) {
          // items[j-1] was put in the last piece: move it to this piece's init.
          Piece& last = pieces.back();
          last.items.pop_back();
          if (last.items.empty()) pieces.pop_back();
          p.init = items[j - 1];
        }
        pieces.push_back(p);
        open = false;
        continue;
      }
      if (open) {
        std::vector<Item> trial = pieces.back().items;
        trial.push_back(items[j]);
        if (independent_stores(trial)) {
          pieces.back().items.push_back(items[j]);
          continue;
        }
      }
      pieces.push_back(Piece{{items[j]}, std::nullopt, std::nullopt});
      open = true;
    }
  } else {
    Piece p;
    p.items = items;
    if (!all_spatial && !has_init) {
      if (auto init = manual_init(b, items)) {
        p.init = init;
        p.items.erase(p.items.begin());
      }
    }
    if (p.items.size() == 1 && p.items[0].leaf.as<ForNode>()) {
      if (!iterations_disjoint(b, p.items)) return std::nullopt;
      p.lift = plan_lift(b, p.items[0], has_init || p.init.has_value());
      if (!p.lift) return std::nullopt;
    } else if (!independent_stores(p.items)) {
      return std::nullopt;
    }
    pieces.push_back(p);
  }
  std::vector<Stmt> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string name = i == 0 ? b.name : names_.unique(b.name + "_" + std::to_string(i));
    out.push_back(build_piece(br, pieces[i], name, pieces.size() > 1 && i > 0));
  }
  for (auto& e : expanded) new_allocs_.push_back(e);
  return out;
}

// Rewrite 9: a scan step with several stores, a later one reading what an earlier one
// wrote (an LSTM cell `C[t, j] = ...; H[t, j] = o * tanh(C[t, j])`, two coupled states
// reading each other's previous step). gradient() reads one store per block, so the step
// becomes one block per group of independent stores, all inside the scan loop L (the loops
// between L and the block are distributed over the pieces, L is not): step t runs piece 1
// at every spatial point, then piece 2, ..., where the original ran all pieces at one point
// before the next. Equal when the points of one step touch disjoint elements of every
// buffer the block writes (iterations_disjoint: the scan var's dimension is left out, the
// spatial vars must be covered) and each instance runs once (instances_distinct); the
// order of the steps is unchanged. gradient() then reads the pieces as a recurrence through
// several blocks (docs/autodiff.md, Scans).
std::optional<std::vector<Stmt>> Normalizer::split_scan_step(const BlockRealizeNode* br,
                                                             const std::vector<Item>& items) {
  const BlockNode& b = *br->block.get();
  if (b.init.defined() || !b.allocs.empty()) return std::nullopt;
  const ForNode* L = nullptr;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    if (iv.kind == IterKind::Spatial) continue;
    if (iv.kind != IterKind::Scan || L) return std::nullopt;
    VarSet vs = vars_of(br->bindings[i]);
    for (auto* f : loops_)
      if (vs.size() == 1 && vs.count(f->loop_var.get())) L = f;
    if (!L) return std::nullopt;
  }
  const VarNode* step = nullptr;
  for (auto& iv : b.iter_vars)
    if (iv.kind == IterKind::Scan) step = iv.var.get();
  if (!L || !iterations_disjoint(b, items, step) || !instances_distinct(br)) return std::nullopt;
  std::vector<Piece> pieces;
  for (auto& it : items) {
    if (!pieces.empty()) {
      std::vector<Item> trial = pieces.back().items;
      trial.push_back(it);
      if (independent_stores(trial)) {
        pieces.back().items.push_back(it);
        continue;
      }
    }
    pieces.push_back(Piece{{it}, std::nullopt, std::nullopt});
  }
  if (pieces.size() < 2) return std::nullopt;
  std::vector<Stmt> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string name = i == 0 ? b.name : names_.unique(b.name + "_" + std::to_string(i));
    out.push_back(build_piece(br, pieces[i], name, i > 0));
  }
  scan_stop_.insert(L);
  return out;
}

// An init gradient() reads as it is: reduce vars, and stores (lets around them only) each
// to an element that some store of the body (possibly inside its loops) updates.
bool Normalizer::init_accepted(const BlockNode& b) {
  bool reduce = false;
  for (auto& iv : b.iter_vars) reduce = reduce || iv.kind == IterKind::Reduce;
  if (!reduce) return false;
  std::vector<Item> items;
  CtxList ctx;
  bool saw_else = false;
  if (!flatten(b.init, ctx, items, &saw_else) || saw_else || items.empty()) return false;
  std::vector<const StoreNode*> body;
  for_each_stmt_store(b.body, &body);
  for (auto& it : items) {
    auto* st = it.leaf.as<StoreNode>();
    if (!st) return false;
    for (auto& c : it.ctx)
      if (!c->is_let) return false;
    bool match = false;
    for (auto* s : body)
      match = match || (s->buffer.same_as(st->buffer) && same_indices(s->indices, st->indices));
    if (!match) return false;
  }
  return true;
}

// Rewrite 0 inside a block without iter vars (TVM's opaque block: `block b() { reads ..
// writes .. for i { for k { if k == 0 { T[i] = 0 } T[i] += .. } } }`), when the rewrites above
// leave it as written (rewrite 3 reads a loop chain, not C's `if k == 0` init): its
// block-free statements get blocks with opaque iter vars for the loops inside it, exactly as
// under the root, and the block becomes a scope block (rewrite 5 dissolves it, rewrite 8
// classifies the vars). Kept only when every resulting block is one gradient() accepts and
// no opaque var is left; the body must not use loop vars from outside the block (only the
// loops inside become iter vars).
std::optional<Stmt> Normalizer::wrap_opaque_block(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  if (!b.iter_vars.empty() || b.init.defined() || !b.allocs.empty()) return std::nullopt;
  for (auto* l : loops_)
    if (uses_var(b.body, l->loop_var.get())) return std::nullopt;
  // Only a body with loops of its own (a block-free statement alone would be wrapped into
  // a block like this one again).
  struct Loops : IRVisitor {
    bool found = false;
    void visit_for(const ForNode*) override { found = true; }
    void visit_block_realize(const BlockRealizeNode*) override {}
  } lv;
  lv.visit(b.body);
  if (!lv.found) return std::nullopt;
  // The pieces are named after the block (b, b_1, ...): it is dissolved, and refusals then
  // name a block the user wrote.
  bool first = true;
  Stmt body = ad::wrap_blockless_statements(b.body, [&](const std::string&) {
    if (first) {
      first = false;
      return b.name;
    }
    return names_.unique(b.name);
  });
  if (body.same_as(b.body)) return std::nullopt;
  BlockNode nb = b;
  nb.body = body;
  Stmt r = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
  // A rejected attempt must leave no trace in the rewrites' shared state.
  // (The sets keyed by node address too: a freed node's address may be reused.)
  size_t n_allocs = new_allocs_.size();
  auto readers = state_readers_;
  auto after = after_loop_;
  auto stands = stands_for_;
  auto split = split_;
  auto stop = scan_stop_;
  Stmt out = mutate(r);
  auto undo = [&]() {
    new_allocs_.resize(n_allocs);
    state_readers_ = readers;
    after_loop_ = after;
    stands_for_ = stands;
    split_ = split;
    scan_stop_ = stop;
    return std::nullopt;
  };
  if (!all_blocks_plain(out)) return undo();
  bool opaque = false;
  struct V : IRVisitor {
    bool* opaque;
    void visit_block(const BlockNode* n) override {
      for (auto& iv : n->iter_vars) *opaque = *opaque || iv.kind == IterKind::Opaque;
      IRVisitor::visit_block(n);
    }
  } v;
  v.opaque = &opaque;
  v.visit(out);
  if (opaque) return undo();
  return out;
}

// Every block realize in s has a body gradient() accepts as it is: lets and guards (no
// else) around independent stores, no loops, no local allocations.
bool Normalizer::all_blocks_plain(const Stmt& s) {
  std::vector<const BlockRealizeNode*> brs;
  struct V : IRVisitor {
    std::vector<const BlockRealizeNode*>* out;
    void visit_block_realize(const BlockRealizeNode* n) override { out->push_back(n); }
  } v;
  v.out = &brs;
  v.visit(s);
  for (auto* br : brs) {
    const BlockNode& b = *br->block.get();
    std::vector<Item> items;
    CtxList ctx;
    bool saw_else = false;
    if (!b.allocs.empty() || !flatten(b.body, ctx, items, &saw_else) || saw_else || items.empty() ||
        !independent_stores(items))
      return false;
    for (auto& it : items)
      if (!it.leaf.as<StoreNode>()) return false;
    if (b.init.defined() && !init_accepted(b)) return false;
  }
  return !brs.empty();
}

// Rewrite 7: an init gradient() cannot read as it is -- a loop that fills a row
// (`init { for j { C[vi, j] = 0 } }`), several statements, guards, a store to an element the
// body does not update, or an init in a block without reduce vars -- moves to a block of its
// own, `<name>_init`, run before the block: same spatial iter vars and bindings, no reduce
// vars (replaced by 0 in the init), predicate `P && r1 == 0 && ...` over the reduce bindings,
// i.e. exactly the instances where the init ran. The block keeps its body without init (an
// accumulation onto the init block's result). Both are then normalised as any block. Sound
// when every point of the iteration space runs once (instances_distinct: else a repeated
// instance would re-run its init between accumulations) and the spatial iterations touch
// disjoint elements of every buffer the block writes (iterations_disjoint, init included):
// then the init of a point still runs before every body instance of that point, no other
// point touches what it writes or reads of the written buffers, so running all inits first
// changes nothing. Kept only when both pieces become blocks gradient() accepts, so that a
// block still refused is refused under its own name.
std::optional<std::vector<Stmt>> Normalizer::split_init(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  if (!b.allocs.empty() || init_accepted(b)) return std::nullopt;
  std::vector<Item> items;
  CtxList ctx;
  bool saw_else = false;
  if (!flatten(b.body, ctx, items, &saw_else) || items.empty()) return std::nullopt;
  if (!iterations_disjoint(b, items) || !instances_distinct(br)) return std::nullopt;
  BlockNode ib;
  ib.name = names_.unique(b.name + "_init");
  ib.annotations = b.annotations;
  ib.loc = b.loc;
  VarMap m;
  std::vector<Expr> ibind;
  Expr pred = br->predicate;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    if (iv.kind == IterKind::Reduce) {
      m[iv.var.get()] = make_int(0, iv.var.dtype());
      Expr z = make_binary(BinOp::EQ, br->bindings[i], make_int(0, br->bindings[i].dtype()));
      pred = is_one(pred) ? z : make_binary(BinOp::And, pred, z);
      continue;
    }
    Var nv(iv.var.name(), iv.var.dtype());
    m[iv.var.get()] = nv;
    ib.iter_vars.push_back({nv, iv.kind, iv.extent});
    ibind.push_back(br->bindings[i]);
  }
  ib.body = substitute(b.init, m);
  ad::set_regions(ib);
  BlockNode mb = b;
  mb.init = Stmt();
  ad::set_regions(mb);
  Stmt a = mutate(make_block_realize(ibind, pred, make_block(std::move(ib))));
  Stmt c = mutate(make_block_realize(br->bindings, br->predicate, make_block(std::move(mb))));
  if (!all_blocks_plain(a) || !all_blocks_plain(c)) return std::nullopt;
  return std::vector<Stmt>{a, c};
}

// Rewrite 8: opaque iter vars (TVM: no promise about how iterations relate) get the kind
// their use proves: a var used in the indices of the stores becomes spatial, the others
// reduce. Kept only when that is what the block computes: the spatial iterations touch
// disjoint elements of every written buffer (iterations_disjoint) and each instance runs
// once (instances_distinct), and when there are reduce vars every store is an accumulation
// `Y[I] = Y[I] op e` (op + - * max min, e not reading Y) whose indices do not use them and
// no other access of Y in the body uses other indices -- so reordering the reduce
// iterations changes nothing but the rounding, as for any reduce var. The block is then
// normalised as any other.
std::optional<std::vector<Stmt>> Normalizer::opaque_kinds(const BlockRealizeNode* br) {
  // A reduce reading in which a store reads what another store accumulates (NeRF compositing
  // in C: `Rgb[r] += T[0] * a; T[0] = T[0] * e`, helper round 18) would see partial values
  // (gradient() refused: "a store reads T_p, which another store of the same block writes"):
  // the recurrence reading, exact by its own conditions, is tried first (the accumulators
  // become states with histories, rewrite 6); the reduce reading is kept when it does not apply.
  bool partial = false;
  auto r = opaque_kinds_plain(br, &partial);
  if (r && !partial) return r;
  if (auto q = opaque_recurrence(br)) return q;
  return r;
}

std::optional<std::vector<Stmt>> Normalizer::opaque_kinds_plain(const BlockRealizeNode* br, bool* partial) {
  const BlockNode& b = *br->block.get();
  if (b.init.defined() || !b.allocs.empty()) return std::nullopt;
  std::vector<const StoreNode*> stores;
  for_each_stmt_store(b.body, &stores);
  if (stores.empty()) return std::nullopt;
  BlockNode nb = b;
  VarSet reduce;
  for (auto& iv : nb.iter_vars) {
    if (iv.kind == IterKind::Scan) return std::nullopt;
    if (iv.kind != IterKind::Opaque) continue;
    bool used = false;
    for (auto* st : stores)
      for (auto& i : st->indices) used = used || uses_var(i, iv.var.get());
    iv.kind = used ? IterKind::Spatial : IterKind::Reduce;
    if (!used) reduce.insert(iv.var.get());
  }
  std::vector<Item> items;
  CtxList ctx;
  bool saw_else = false;
  if (!flatten(b.body, ctx, items, &saw_else) || items.empty()) return std::nullopt;
  if (!instances_distinct(br)) return std::nullopt;
  if (!iterations_disjoint(nb, items)) return opaque_scatter_sum(br, b, stores, items);
  if (!reduce.empty()) {
    // A hand-written init first (`if vk == 0 { Y[vi] = 0 }`, C-style plain loops wrapped by
    // rewrite 0): rewrite 4 turns it into the init of the classified block. The guarded store
    // runs first for each element only when every reduce var is 0 at the first iteration of
    // its own enclosing loop (binding: that loop var minus its min, one loop each).
    std::unordered_set<const ForNode*> used_loops;
    bool first_is_zero = true;
    for (size_t q = 0; q < nb.iter_vars.size() && first_is_zero; ++q) {
      if (nb.iter_vars[q].kind != IterKind::Reduce) continue;
      const ForNode* loop = nullptr;
      for (auto* l : loops_) {
        const Expr& bd = br->bindings[q];
        auto* sub = bd.as<BinaryNode>();
        if (expr_identical(bd, l->loop_var) && is_zero(l->min)) loop = l;
        if (sub && sub->op == BinOp::Sub && expr_identical(sub->a, l->loop_var) &&
            expr_identical(sub->b, l->min))
          loop = l;
      }
      first_is_zero = loop && used_loops.insert(loop).second;
    }
    const StoreNode* hand_init = nullptr;
    auto* seq = nb.body.as<SeqNode>();
    auto* first = seq ? seq->stmts[0].as<IfThenElseStmtNode>() : nullptr;
    if (first_is_zero && first && !first->else_case.defined() && pins_to_zero(first->cond, reduce)) {
      // Several accumulators set by one guard (`if k == 0 { S[i] = 0; Q[i] = 1 }`): the
      // guarded statement becomes the init when it is only stores of elements the rest
      // accumulates into, reading none of them.
      std::vector<const StoreNode*> init_stores;
      for_each_stmt_store(first->then_case, &init_stores);
      bool ok = !init_stores.empty() && !has_block_realize(first->then_case);
      struct HasFor : IRVisitor {
        bool found = false;
        void visit_for(const ForNode*) override { found = true; }
      } hf;
      hf.visit(first->then_case);
      ok = ok && !hf.found && init_stores.size() > 1;
      std::vector<Stmt> rest(seq->stmts.begin() + 1, seq->stmts.end());
      Stmt rest_body = make_seq(rest);
      std::vector<const StoreNode*> rest_stores;
      for_each_stmt_store(rest_body, &rest_stores);
      for (auto* is : init_stores) {
        bool acc = false;
        for (auto* rs : rest_stores)
          acc = acc ||
                (rs->buffer.same_as(is->buffer) && same_indices(rs->indices, is->indices) && split_acc(rs));
        BufSet l = loads_of(is->value);
        for (auto* o : init_stores) ok = ok && !l.count(o->buffer.get());
        ok = ok && acc;
      }
      if (ok) {
        nb.init = first->then_case;
        nb.body = rest_body;
        stores = rest_stores;
        items.clear();
        CtxList c2;
        bool e2 = false;
        if (!flatten(nb.body, c2, items, &e2) || items.empty()) return std::nullopt;
      }
    }
    if (!nb.init.defined() && first_is_zero && manual_init(nb, items))
      hand_init = items[0].leaf.as<StoreNode>();
    AccessScan scan;
    scan.visit(nb.body);
    for (auto* st : stores) {
      if ((st != hand_init && !split_acc(st)) || scan.opaque.count(st->buffer.get())) return std::nullopt;
      for (auto& i : st->indices)
        for (auto* v : reduce)
          if (uses_var(i, v)) return std::nullopt;
      for (auto& t : scan.acc[st->buffer.get()])
        if (!same_indices(t, st->indices)) return std::nullopt;
    }
    if (guards_read_stores(items, stores)) return std::nullopt;
    // A float store reading a buffer another store of the block accumulates (partial values).
    // Not with a hand-written init in the block (`if j == 0 { acc[i] = 0 }`): the recurrence
    // reading then stores acc twice per step and is refused with a less helpful message.
    if (nb.init.defined() || hand_init) return realize_rewritten(br, std::move(nb));
    BufSet stored_bufs;
    for (auto* st : stores) stored_bufs.insert(st->buffer.get());
    for (auto& it : items) {
      auto* st = it.leaf.as<StoreNode>();
      if (!st || !is_float(st->buffer->dtype)) continue;
      BufSet l = loads_of(st->value);
      for (auto& cx : it.ctx) {
        BufSet l2 = loads_of(cx->value);
        l.insert(l2.begin(), l2.end());
      }
      for (auto* y : l) *partial = *partial || (y != st->buffer.get() && stored_bufs.count(y));
    }
    // Or another block inside a reduce var's loop reads what this one accumulates (the same
    // code without a shared let: `T[0] = T[0] * e` and `Rgb[r] += T[0] * c` wrapped as two
    // blocks; refused later as reading the reduction's partial values).
    const BlockRealizeNode* self = stands_for_.count(br) ? stands_for_.at(br) : br;
    for (size_t q = 0; q < nb.iter_vars.size(); ++q) {
      if (nb.iter_vars[q].kind != IterKind::Reduce) continue;
      for (auto* l : loops_) {
        if (!uses_var(br->bindings[q], l->loop_var.get())) continue;
        struct Readers : IRVisitor {
          const BlockRealizeNode* self;
          const BufSet* bufs;
          bool found = false;
          int depth = 0;
          std::string name;
          void visit_block_realize(const BlockRealizeNode* n) override {
            // Names are unique in a function; the tree's node may be an earlier form of br.
            if (n == self || n->block->name == self->block->name || n->block->name == name) return;
            ++depth;
            IRVisitor::visit_block_realize(n);
            --depth;
          }
          void visit_load(const LoadNode* n) override {
            found = found || (depth > 0 && bufs->count(n->buffer.get()) && is_float(n->buffer->dtype));
            IRVisitor::visit_load(n);
          }
        } rd;
        rd.self = self;
        rd.name = b.name;
        rd.bufs = &stored_bufs;
        rd.visit(l->body);
        *partial = *partial || rd.found;
      }
    }
  }
  return realize_rewritten(br, std::move(nb));
}

// Rewrite 8, third form: a recurrence over an opaque var (a cumsum written as plain loops,
// `Y[0] = X[0]; for i in serial(1, 8) { Y[i] = Y[i - 1] + X[i] }`, wrapped by rewrite 0 with
// `vi = i - 1`; a linear state `S[i] = S[i] * a + X[t, i]` under an outer t loop). Opaque and
// plain loops run in loop order (LANGUAGE.md), so when one opaque var v is bound to `L + c`
// for a serial (or unrolled) loop L, v increases with the steps and the block is the scan
// block with v as its `scan` var -- provided the scan machinery's reading of every access of
// a buffer the block writes is what the sequential loops compute. That holds when each
// access of a written buffer Y (all stores of Y at the same indices I):
//   - is at I in every dimension that does not use v (the same spatial point: points are
//     independent chains, whatever the loop order), or
//   - (only when L is outside every loop of the other vars) reads a strictly earlier step
//     (`v - k`, k >= 1, in the dimension of I that is `+-v + c`): all points of that step
//     are complete before step v starts.
// The other opaque vars must index the stores (they become spatial). Whatever the scan
// machinery cannot read (a data-dependent step `Y[I[i]]`, a read of an element nobody has
// written yet, two scan dims) it refuses with its own reason; a parallel, vectorized or
// thread-bound L, a decreasing binding, or any other access keeps the opaque refusal.
std::optional<std::vector<Stmt>> Normalizer::opaque_recurrence(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  if (b.init.defined() || !b.allocs.empty()) return std::nullopt;
  std::vector<const StoreNode*> stores;
  for_each_stmt_store(b.body, &stores);
  if (stores.empty()) return std::nullopt;
  std::unordered_map<const BufferNode*, const StoreNode*> first_store;
  for (auto* st : stores) {
    auto [it, fresh] = first_store.emplace(st->buffer.get(), st);
    if (!fresh && !same_indices(it->second->indices, st->indices)) return std::nullopt;
  }
  AccessScan scan;
  scan.visit(b.body);
  if (br->predicate.defined()) scan.visit(br->predicate);
  for (auto& [Y, st] : first_store)
    if (scan.opaque.count(Y)) return std::nullopt;
  // The loop an iter var's binding follows (`L + c`, coefficient 1), or null.
  auto loop_of = [&](size_t q) -> const ForNode* {
    auto aff = ad::to_affine(br->bindings[q]);
    if (!aff || aff->terms.size() != 1 || aff->terms[0].second != 1) return nullptr;
    for (auto* l : loops_)
      if (l->loop_var.get() == aff->terms[0].first.get()) return l;
    return nullptr;
  };
  auto depth = [&](const ForNode* l) {
    for (size_t k = 0; k < loops_.size(); ++k)
      if (loops_[k] == l) return k;
    return loops_.size();
  };
  for (size_t q = 0; q < b.iter_vars.size(); ++q) {
    const IterVar& sv = b.iter_vars[q];
    if (sv.kind != IterKind::Opaque) continue;
    const ForNode* L = loop_of(q);
    if (!L || (L->for_kind != ForKind::Serial && L->for_kind != ForKind::Unrolled) || !L->thread_tag.empty())
      continue;
    const VarNode* s = sv.var.get();
    // The others: opaque ones must index a store (spatial); scan outside all their loops?
    bool ok = true;
    // Opaque vars indexing no store (helper round h5): reduce vars when every store is a sum
    // `Y[I] = Y[I] + e` (`- e`), e.g. an RNN's pre-activation `H[b, t, j] += U[j, k] *
    // H[b, t - 1, k]` over k: each step's sum over k commutes, and gradient() reads the loop
    // as a recurrence with a reduction (Scans; rewrite 12 gives it its init).
    VarSet reduce;
    // Iter vars whose bindings use only loops inside L: at step v, the points of an earlier
    // step of L are all complete, whichever of them an access reads.
    VarSet inner;
    for (size_t r = 0; r < b.iter_vars.size() && ok; ++r) {
      if (r == q) continue;
      const IterVar& ov = b.iter_vars[r];
      if (ov.kind == IterKind::Opaque) {
        bool used = false;
        for (auto* st : stores)
          for (auto& i : st->indices) used = used || uses_var(i, ov.var.get());
        if (!used) {
          for (auto* st : stores) ok = ok && sum_onto_self(st);
          reduce.insert(ov.var.get());
        }
      } else if (ov.kind != IterKind::Spatial) {
        ok = false;
      }
      bool in = true;
      for (auto* l : loops_)
        if (uses_var(br->bindings[r], l->loop_var.get()) && depth(l) <= depth(L)) in = false;
      if (in) inner.insert(ov.var.get());
    }
    // An index all of whose vars are such inner iter vars (or constants).
    auto inner_only = [&](const Expr& e) {
      bool only = true;
      for_each_expr(e, [&](const Expr& x) {
        if (auto* v = x.as<VarNode>()) only = only && inner.count(v);
      });
      return only;
    };
    // Store indices the scan machinery can read: no data-dependent element (a scatter stays
    // rewrite 8's), and a state overwritten at every step (no index uses v) indexed by the
    // other iter vars, each once, all of them -- the form rewrite 6 keeps a history of.
    for (auto* st : stores) {
      bool steps = false;
      VarSet seen;
      size_t consts = 0;  // a scalar state `S[0]` (helper round h5): constant, in bounds
      for (size_t d = 0; d < st->indices.size(); ++d) {
        const Expr& i = st->indices[d];
        ok = ok && !has_load_or_let(i);
        steps = steps || uses_var(i, s);
        auto* v = i.as<VarNode>();
        if (v && v != s) seen.insert(v);
        consts += const_in_bounds(i, st->buffer->shape[d]);
      }
      if (!steps && (!reduce.empty() || seen.size() + consts != st->indices.size() ||
                     seen.size() + 1 != b.iter_vars.size()))
        ok = false;
    }
    if (!ok) continue;
    for (auto& [Y, st] : first_store) {
      const auto& I = st->indices;
      for (auto& t : scan.acc[Y]) {
        if (t.size() != I.size()) {
          ok = false;
          break;
        }
        bool same_point = true, earlier = false, later = false, inner_dims = true;
        for (size_t d = 0; d < I.size(); ++d) {
          int64_t a1, c1, a2, c2;
          if (uses_var(I[d], s)) {
            bool sf = step_form(I[d], s, &a1, &c1) && step_form(t[d], s, &a2, &c2) && a1 == a2;
            if (sf && a1 * (c2 - c1) < 0) earlier = true;
            // A later step's element: not written yet in loop order (a decreasing-order
            // read), refused rather than read as the previous version.
            if (sf && a1 * (c2 - c1) > 0) later = true;
          } else if (!expr_identical(t[d], I[d])) {
            same_point = false;
            // Another point of an earlier step: only along vars of loops inside L (the same
            // point of loops outside it, e.g. the batch of `H[b, t - 1, k]`).
            inner_dims = inner_dims && inner_only(t[d]) && inner_only(I[d]);
          }
        }
        if (later || (!same_point && !(inner_dims && earlier))) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
    }
    if (!ok) continue;
    BlockNode nb = b;
    for (size_t r = 0; r < nb.iter_vars.size(); ++r)
      if (nb.iter_vars[r].kind == IterKind::Opaque)
        nb.iter_vars[r].kind = r == q                                    ? IterKind::Scan
                               : reduce.count(nb.iter_vars[r].var.get()) ? IterKind::Reduce
                                                                         : IterKind::Spatial;
    ad::set_regions(nb);
    Stmt realize = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    stands_for_[realize.as<BlockRealizeNode>()] = stands_for_.count(br) ? stands_for_.at(br) : br;
    // Kept alive: stands_for_ is keyed by address, and a freed node's address reused by a later
    // block made the lookup answer for the wrong block (the refusal differed between builds).
    stands_alive_.push_back(realize);
    Stmt out = mutate(realize);
    return std::vector<Stmt>{out};
  }
  return std::nullopt;
}

// Rewrite 8, second form: a scatter-add (Halide's histogram `H(clamp(I(r), 0, 3)) += K(r)`,
// written `block h(vr: opaque(4) = r) { H[min(max(I[vr], 0), 3)] += K[vr] }`), whose opaque
// vars index the stores at data-dependent elements, so the spatial reading above fails (two
// iterations may write one element). When every store accumulates a sum `Y[f] = Y[f] + e`
// (or `- e`; e and the store's guards read no stored buffer, and the body touches Y only at
// f), every opaque var becomes a reduce var: the iterations then commute (up to rounding) and
// gradient() differentiates the block as the scatter sum `Y[f(v)] += E(v)` it accepts for
// reduce vars without an init. Anything else stays refused.
std::optional<std::vector<Stmt>> Normalizer::opaque_scatter_sum(const BlockRealizeNode* br,
                                                                const BlockNode& b,
                                                                const std::vector<const StoreNode*>& stores,
                                                                const std::vector<Item>& items) {
  BlockNode nb = b;
  for (auto& iv : nb.iter_vars)
    if (iv.kind == IterKind::Opaque) iv.kind = IterKind::Reduce;
  if (!iterations_disjoint(nb, items)) return std::nullopt;
  AccessScan scan;
  scan.visit(nb.body);
  for (auto* st : stores) {
    auto acc = split_acc(st);
    if (!acc || (acc->first != BinOp::Add && acc->first != BinOp::Sub) || scan.opaque.count(st->buffer.get()))
      return std::nullopt;
    for (auto& t : scan.acc[st->buffer.get()])
      if (!same_indices(t, st->indices)) return std::nullopt;
    for (auto* o : stores)
      if (loads_of(acc->second).count(o->buffer.get())) return std::nullopt;
  }
  if (guards_read_stores(items, stores)) return std::nullopt;
  return realize_rewritten(br, std::move(nb));
}

// Loads of `y` at `idx` replaced by `by`.
class ReplaceStateLoad : public IRMutator {
 public:
  ReplaceStateLoad(const BufferNode* y, const std::vector<Expr>& idx, Expr by) : y_(y), idx_(idx), by_(by) {}
  bool other = false;  // a load of y elsewhere

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    if (n->buffer.get() != y_) return IRMutator::mutate_load(n, e);
    if (!same_indices(n->indices, idx_)) {
      other = true;
      return e;
    }
    return by_;
  }

 private:
  const BufferNode* y_;
  const std::vector<Expr>& idx_;
  Expr by_;
};

// Rewrite 6: a scan block that overwrites a state at every step (`H[vj] = tanh(H[vj] * w +
// X[vt, vj])`, the scan var not among the store's indices) keeps the state's history
// instead, so that each step writes elements of its own (what gradient() needs, the tape of
// reverse mode): `H_hist[vt, vj] = f(if_then_else(vt == first, H[vj], H_hist[vt - 1, vj]))`,
// then a block `H[vj] = H_hist[last, vj]` (predicate: the last step). Sound when every step
// runs for every spatial point (the scan var bound to a loop var plus a constant, predicate
// true or free of the scan loop, each instance once) and the step reads the state only at
// the element it writes. Several states of one step (one store each, helper round 16) get a
// history each; loads before a state's store read its previous value, after it the new one.
std::optional<std::vector<Stmt>> Normalizer::expand_state(const BlockRealizeNode* br,
                                                           const std::vector<Item>& items) {
  const BlockNode& b = *br->block.get();
  if (items.empty()) return std::nullopt;
  // A `where` (helper round 16) only on the loops of the other iter vars (`where j % 2 == 0`
  // with `vj = j // 2`): a spatial point then runs at every step or at none; checked below.
  const bool predicated = !is_one(br->predicate);
  for (auto& it : items)
    if (!it.leaf.as<StoreNode>()) return std::nullopt;
  int sv = -1;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    if (b.iter_vars[i].kind == IterKind::Scan) {
      if (sv >= 0) return std::nullopt;
      sv = static_cast<int>(i);
    } else if (b.iter_vars[i].kind != IterKind::Spatial) {
      return std::nullopt;
    }
  }
  if (sv < 0) return std::nullopt;
  const Var& s = b.iter_vars[sv].var;
  // Stores indexed by the scan var (`H[vt, vj] = c[vj]`, a per-step output of the state in the
  // same step; helper round 18) are not states: they stay stores of the step, their loads of a
  // state rewritten as any value's (the new value after the state's store), and rewrite 9
  // splits the step afterwards. Only beside at least one state, one store per buffer.
  std::vector<bool> plain(items.size(), false);
  for (size_t j = 0; j < items.size(); ++j) {
    auto* st = items[j].leaf.as<StoreNode>();
    for (auto& i : st->indices) plain[j] = plain[j] || uses_var(i, s.get());
  }
  if (std::all_of(plain.begin(), plain.end(), [](bool x) { return x; })) return std::nullopt;
  for (size_t j = 0; j < items.size(); ++j) {
    auto* st = items[j].leaf.as<StoreNode>();
    const Buffer& Y0 = st->buffer;
    // Several states (helper round 16): one store each.
    for (size_t k = 0; k < j; ++k)
      if (items[k].leaf.as<StoreNode>()->buffer.same_as(Y0)) return std::nullopt;
    if (plain[j]) continue;
    // The store: distinct spatial iter vars, all of them, not the scan var (or constants).
    VarSet seen;
    for (size_t d = 0; d < st->indices.size(); ++d) {
      const Expr& i = st->indices[d];
      if (const_in_bounds(i, Y0->shape[d])) continue;  // a scalar state `S[0]` (helper round h5)
      auto* v = i.as<VarNode>();
      bool spatial = false;
      for (size_t k = 0; k < b.iter_vars.size(); ++k)
        if (static_cast<int>(k) != sv && v && b.iter_vars[k].var.get() == v) spatial = true;
      if (!spatial || seen.count(v)) return std::nullopt;
      seen.insert(v);
    }
    if (seen.size() + 1 != b.iter_vars.size()) return std::nullopt;
  }
  // The scan var's binding: a loop var (plus a constant) of a loop with fixed bounds.
  auto a = ad::to_affine(br->bindings[sv]);
  if (!a || a->terms.size() != 1 || a->terms[0].second != 1) return std::nullopt;
  const ForNode* L = nullptr;
  for (auto* f : loops_)
    if (f->loop_var.same_as(a->terms[0].first)) L = f;
  if (!L) return std::nullopt;
  for (const Expr& e : {L->min, L->extent})
    for (auto* v : vars_of(e))
      if (!scalars_.count(v)) return std::nullopt;
  // A predicate that loads (`where S[j] > 0.0`) may change from step to step when the loaded
  // buffer is written in the loop; after the rewrite it would see the state before the loop.
  bool predicate_loads = false;
  if (predicated)
    for_each_expr(br->predicate, [&](const Expr& e) { predicate_loads = predicate_loads || e.as<LoadNode>(); });
  if (predicated && (predicate_loads || uses_var(br->predicate, L->loop_var.get()) || !instances_distinct(br)))
    return std::nullopt;
  for (size_t k = 0; k < b.iter_vars.size(); ++k)
    if (static_cast<int>(k) != sv && vars_of(br->bindings[k]).count(L->loop_var.get())) return std::nullopt;
  for (auto* f : loops_)
    if (vars_of(f->min).count(L->loop_var.get()) || vars_of(f->extent).count(L->loop_var.get()))
      return std::nullopt;
  int64_t ext;
  if (is_const_int(L->extent, &ext) && ext < 1) return std::nullopt;
  const BlockRealizeNode* in_tree = stands_for_.count(br) ? stands_for_.at(br) : br;
  // Per state: its store, the constant dims of its element, its readers after the block.
  struct State {
    const StoreNode* st;
    std::vector<bool> fixed;
    std::vector<std::pair<const BlockRealizeNode*, std::pair<int, int64_t>>> readers;
    Buffer hist;
    std::vector<Expr> prev_idx, cur_idx;
    Expr old;  // the state before this step
  };
  std::vector<State> states;
  std::vector<size_t> state_pos;  // the item of each state
  for (size_t ii = 0; ii < items.size(); ++ii) {
  if (plain[ii]) continue;
  state_pos.push_back(ii);
  const Item& it = items[ii];
  auto* st = it.leaf.as<StoreNode>();
  const Buffer& Y = st->buffer;
  // Nothing else in the scan loop may touch the state (it now changes only after the loop),
  // except blocks after the state's block, in a later statement of the scan loop's body,
  // that only read it and have an iter var bound to the scan loop's var (plus a constant):
  // at step t they see the state after step t, i.e. the history at t.
  struct Others : IRVisitor {
    const BlockRealizeNode* self;
    const BufferNode* y;
    const VarNode* lv;
    bool bad = false, after = false;
    int depth = 0;
    std::vector<std::pair<const BlockRealizeNode*, std::pair<int, int64_t>>> readers;
    const BlockRealizeNode* cur = nullptr;
    bool touches = false, writes = false, nested = false;
    // A block beside the state's block in its statement of L's body, after it (helper round
    // 18: `for j { c[j] = c[j] * a + x; H[t, j] = c[j] }`): at each iteration of the loops
    // they share it runs after the state's block, so a load of the element the state's block
    // has just written there (the same element as a function of the loop vars) sees the new
    // value, i.e. the history at the step. Any other element could be old or new.
    bool passed_self = false;
    std::vector<std::vector<Expr>> cur_loads;
    std::function<bool(const BlockRealizeNode*)> same_element;
    void visit_block_realize(const BlockRealizeNode* n) override {
      if (n == self) {
        passed_self = true;
        return;
      }
      if (depth > 0) {
        nested = true;
        IRVisitor::visit_block_realize(n);
        return;
      }
      cur = n;
      touches = writes = nested = false;
      cur_loads.clear();
      ++depth;
      IRVisitor::visit_block_realize(n);
      --depth;
      if (!touches) return;
      // The history rewrite (read_history) redirects body and init loads, not the predicate's.
      bool pred_reads = false;
      for_each_expr(n->predicate, [&](const Expr& e) {
        auto* ld = e.as<LoadNode>();
        pred_reads = pred_reads || (ld && ld->buffer.get() == y);
      });
      const bool beside = !after && passed_self && same_element && same_element(n);
      if ((!after && !beside) || writes || nested || pred_reads) {
        bad = true;
        return;
      }
      int iv = -1;
      int64_t off = 0;
      for (size_t k = 0; k < n->bindings.size() && iv < 0; ++k) {
        auto a = ad::to_affine(n->bindings[k]);
        if (a && a->terms.size() == 1 && a->terms[0].second == 1 && a->terms[0].first.get() == lv)
          iv = static_cast<int>(k), off = a->constant;
      }
      if (iv < 0) bad = true;
      readers.push_back({n, {iv, off}});
    }
    const std::vector<Expr>* state_idx = nullptr;
    const std::vector<bool>* fixed = nullptr;
    void visit_load(const LoadNode* n) override {
      if (n->buffer.get() == y) (depth > 0 ? touches : bad) = true;
      if (n->buffer.get() == y && depth > 0) cur_loads.push_back(n->indices);
      // A reader of a scalar state reads its element (the history keeps only that one).
      if (n->buffer.get() == y)
        for (size_t d = 0; d < fixed->size(); ++d)
          bad = bad || ((*fixed)[d] && !expr_identical(n->indices[d], (*state_idx)[d]));
      IRVisitor::visit_load(n);
    }
    void visit_store(const StoreNode* n) override {
      if (n->buffer.get() == y) touches = writes = true;
      IRVisitor::visit_store(n);
    }
    void visit_block(const BlockNode* n) override {
      for (auto& x : n->reads) touches = touches || x.buffer.get() == y;
      for (auto& x : n->writes)
        if (x.buffer.get() == y) touches = writes = true;
      IRVisitor::visit_block(n);
    }
  } others;
  others.self = in_tree;
  others.y = Y.get();
  others.lv = L->loop_var.get();
  std::vector<bool> fixed;  // constant dims of the state's element: left out of the history
  for (size_t d = 0; d < st->indices.size(); ++d) fixed.push_back(is_const_int(st->indices[d]));
  others.state_idx = &st->indices;
  others.fixed = &fixed;
  {
    // The state's element as a function of the loop vars, against each load of a reader.
    VarMap own;
    for (size_t k = 0; k < b.iter_vars.size(); ++k) own[b.iter_vars[k].var.get()] = br->bindings[k];
    std::vector<Expr> elem;
    for (auto& i : st->indices) elem.push_back(simplify(substitute(i, own)));
    others.same_element = [&others, elem](const BlockRealizeNode* n) {
      VarMap m;
      const BlockNode& nb = *n->block.get();
      for (size_t k = 0; k < nb.iter_vars.size(); ++k) m[nb.iter_vars[k].var.get()] = n->bindings[k];
      for (auto& idx : others.cur_loads) {
        if (idx.size() != elem.size()) return false;
        for (size_t d = 0; d < idx.size(); ++d)
          if (!expr_identical(simplify(substitute(idx[d], m)), elem[d])) return false;
      }
      return !others.cur_loads.empty();
    };
  }
  {
    // The statement of L's body holding the state's block: later statements run after the
    // whole step of the state's block.
    std::vector<Stmt> parts;
    if (auto* q = L->body.as<SeqNode>())
      parts = q->stmts;
    else
      parts.push_back(L->body);
    for (auto& part : parts) {
      struct Has : IRVisitor {
        const BlockRealizeNode* self;
        bool found = false;
        void visit_block_realize(const BlockRealizeNode* n) override {
          found = found || n == self;
          IRVisitor::visit_block_realize(n);
        }
      } has;
      has.self = in_tree;
      has.visit(part);
      if (has.found) {
        others.after = false;  // other blocks beside the state's block in its statement
        others.visit(part);
        others.after = true;
      } else {
        others.visit(part);
      }
    }
  }
  if (others.bad) return std::nullopt;
  // A reader would load the history of a point the predicate skips (never written).
  if (predicated && !others.readers.empty()) return std::nullopt;
  states.push_back(State{st, fixed, others.readers, Buffer(), {}, {}, Expr()});
  }
  DType it_t = s.dtype();
  Expr c = make_const(it_t, a->constant);
  auto fold = [&](const Expr& e) {
    auto f = ad::to_affine(e);
    return f ? ad::affine_to_expr(*f, it_t) : e;
  };
  Expr first = fold(L->min + c), last = fold(L->min + L->extent - make_const(it_t, 1) + c);
  for (auto& S : states) {
    const StoreNode* st = S.st;
    const Buffer& Y = st->buffer;
    std::vector<Expr> shape{b.iter_vars[sv].extent};
    S.prev_idx = {s - make_const(it_t, 1)};
    S.cur_idx = {s};
    for (size_t d = 0; d < st->indices.size(); ++d) {
      if (S.fixed[d]) continue;
      shape.push_back(Y->shape[d]);
      S.prev_idx.push_back(st->indices[d]);
      S.cur_idx.push_back(st->indices[d]);
    }
    S.hist = Buffer(names_.unique(Y->name + "_hist"), Y->dtype, shape, "global");
    S.old = make_if_then_else(make_binary(BinOp::EQ, s, first), make_load(Y, st->indices),
                              make_load(S.hist, S.prev_idx));
  }
  // The statements of the step run in order: a let or store value evaluated after state k's
  // store (an item after it, or a let first bound there) sees the new value, hist_k[s, ..];
  // before it, the old one. A let shared by several items (one Ctx node) is rewritten once,
  // at the position where it is bound: the first item holding it.
  bool other = false;
  auto rewrite = [&](const Expr& e, size_t pos) {
    Expr r = e;
    for (size_t k = 0; k < states.size(); ++k) {
      const State& S = states[k];
      ReplaceStateLoad rp(S.st->buffer.get(), S.st->indices,
                          state_pos[k] < pos ? make_load(S.hist, S.cur_idx) : S.old);
      r = rp.mutate(r);
      other = other || rp.other;
    }
    return r;
  };
  std::unordered_map<const Ctx*, std::shared_ptr<const Ctx>> ctx_map;
  std::vector<Item> nis;
  bool reads_state = false;
  for (size_t j = 0; j < items.size(); ++j) {
    const Item& it = items[j];
    Item ni;
    for (auto& cx : it.ctx) {
      auto m = ctx_map.find(cx.get());
      if (m != ctx_map.end()) {
        ni.ctx.push_back(m->second);
        continue;
      }
      Expr v = rewrite(cx->value, j);
      std::shared_ptr<const Ctx> nc = cx;
      if (!v.same_as(cx->value)) {
        auto m2 = std::make_shared<Ctx>(*cx);
        m2->value = v;
        nc = m2;
        reads_state = true;
      }
      ctx_map[cx.get()] = nc;
      ni.ctx.push_back(nc);
    }
    const StoreNode* st = it.leaf.as<StoreNode>();
    Expr value = rewrite(st->value, j);
    if (plain[j]) {
      std::vector<Expr> idx;
      for (auto& i : st->indices) idx.push_back(rewrite(i, j));
      ni.leaf = make_store(st->buffer, idx, value, st->loc);
      nis.push_back(std::move(ni));
      continue;
    }
    reads_state = reads_state || !value.same_as(st->value);
    size_t k = std::find(state_pos.begin(), state_pos.end(), j) - state_pos.begin();
    ni.leaf = make_store(states[k].hist, states[k].cur_idx, value, st->loc);
    nis.push_back(std::move(ni));
  }
  if (other) return std::nullopt;
  if (!reads_state) return std::nullopt;  // the last step's value wins: not a recurrence
  for (size_t j = 0; j < nis.size(); ++j) {
    if (plain[j]) continue;  // a guarded output store stays guarded
    Item& ni = nis[j];
    const Expr& state = states[std::find(state_pos.begin(), state_pos.end(), j) - state_pos.begin()].old;
    auto* hs = ni.leaf.as<StoreNode>();
    Expr value = hs->value;
    // Guards around the update (`if vr >= 1 { S[vx] = tanh(S[vx] + X[vr, vx]) }`): a step they
    // skip keeps the state, so its history element must hold it too (it was left unwritten and
    // the next step read it: "read of uninitialised element S_hist[0, 0]", outsider round 12):
    // the value becomes if_then_else(guards, value, state). A let after a guard may be valid
    // only under it: refused (left as written). With several states each store gets its own
    // arm (a later state reading this one's new value then reads the kept one).
    Expr cond;
    CtxList lets;
    for (auto& cx : ni.ctx) {
      if (cx->is_let) {
        if (cond.defined()) return std::nullopt;
        lets.push_back(cx);
        continue;
      }
      Expr g = cx->neg ? make_unary(UnOp::Not, cx->value) : cx->value;
      cond = cond.defined() ? make_binary(BinOp::And, cond, g) : g;
    }
    if (cond.defined()) {
      value = make_if_then_else(cond, value, state);
      ni.ctx = lets;
    }
    ni.leaf = make_store(hs->buffer, hs->indices, value, hs->loc);
  }
  Stmt hist = build_piece(br, Piece{nis, std::nullopt, std::nullopt}, b.name, false);
  // Several histories in one step: normalised again (rewrite 9 splits the stores).
  if (nis.size() > 1) hist = mutate(hist);
  size_t at = 0;
  while (loops_[at] != L) ++at;
  for (auto& S : states) {
    const StoreNode* st = S.st;
    const Buffer& Y = st->buffer;
    // The state after the loop: the last step's value.
    BlockNode cb;
    cb.name = names_.unique(b.name + "_last");
    VarMap m;
    for (auto& iv : b.iter_vars) {
      Var nv(iv.var.name(), iv.var.dtype());
      m[iv.var.get()] = nv;
      cb.iter_vars.push_back({nv, IterKind::Spatial, iv.extent});
    }
    std::vector<Expr> idx;
    for (auto& i : st->indices) idx.push_back(substitute(i, m));
    std::vector<Expr> hidx{m.at(s.get())};
    for (size_t d = 0; d < idx.size(); ++d)
      if (!S.fixed[d]) hidx.push_back(idx[d]);
    cb.body = make_store(Y, idx, make_load(S.hist, hidx));
    ad::set_regions(cb);
    Expr at_last = make_binary(BinOp::EQ, br->bindings[sv], last);
    if (predicated) at_last = make_binary(BinOp::And, br->predicate, at_last);
    Stmt copy = make_block_realize(br->bindings, at_last,
                                   make_block(std::move(cb)));
    // It runs after the scan loop (other blocks of the loop may read the state): inside copies
    // of the loops from the scan loop inwards, with fresh loop vars.
    VarMap fresh;
    std::vector<Var> fv;
    for (size_t k = at; k < loops_.size(); ++k) {
      fv.emplace_back(loops_[k]->loop_var.name(), loops_[k]->loop_var.dtype());
      fresh[loops_[k]->loop_var.get()] = fv.back();
    }
    copy = substitute(copy, fresh);
    for (size_t k = loops_.size(); k-- > at;)
      copy = make_for(fv[k - at], loops_[k]->min, loops_[k]->extent, ForKind::Serial, copy);
    after_loop_[L].push_back(copy);
    new_allocs_.push_back(S.hist);
    // A block reading several states (of this block or of other expanded blocks) reads each
    // history: the readers are kept per state.
    for (auto& [n, kv] : S.readers)
      state_readers_[n].push_back(StateReader{Y.get(), S.hist, kv.first, a->constant - kv.second, S.fixed});
  }
  return std::vector<Stmt>{hist};
}

// Loads of the state r.y (any element) in block n become loads of its history at the step
// of n's iter var r.iv (rewrite 6, readers after the state's block).
Stmt Normalizer::read_history(const BlockRealizeNode* n, const std::vector<StateReader>& rs) {
  const BlockNode& b = *n->block.get();
  struct M : IRMutator {
    const std::vector<StateReader>* rs;
    const BlockNode* b;
    Expr mutate_load(const LoadNode* l, const Expr& e) override {
      for (auto& r : *rs) {
        if (l->buffer.get() != r.y) continue;
        Expr step = b->iter_vars[r.iv].var;
        if (r.offset != 0) step = step + make_const(step.dtype(), r.offset);
        std::vector<Expr> idx{step};
        for (size_t d = 0; d < l->indices.size(); ++d)
          if (d >= r.fixed.size() || !r.fixed[d]) idx.push_back(mutate(l->indices[d]));
        return make_load(r.hist, idx);
      }
      return IRMutator::mutate_load(l, e);
    }
    using IRMutator::mutate;
  } m;
  m.rs = &rs;
  m.b = &b;
  BlockNode nb = b;
  nb.body = m.mutate(b.body);
  if (b.init.defined()) nb.init = m.mutate(b.init);
  ad::set_regions(nb);
  return make_block_realize(n->bindings, n->predicate, make_block(std::move(nb)));
}

// Rewrite 5: a block with only spatial iter vars whose body holds nested blocks (TVM's
// opaque scope blocks, `S[vi] = 0; for k { block acc(vj = vi, ...) {...} }`) disappears: its
// iter vars are replaced by their bindings in the nested blocks, and each maximal run of its
// statements without blocks becomes a block of its own (same iter vars, bindings and
// predicate). The loops around are distributed over the pieces (split_), which is sound
// because the iterations of a spatial block do not depend on each other (LANGUAGE.md: a
// block whose spatial iterations conflict is invalid), so running all of one piece before the
// next gives the same result.
bool has_block_realize(const Stmt& s) {
  struct V : IRVisitor {
    bool found = false;
    void visit_block_realize(const BlockRealizeNode*) override { found = true; }
  } v;
  if (s.defined()) v.visit(s);
  return v.found;
}

// True when every store and call_extern of s lies inside a nested block.
bool only_nested_effects(const Stmt& s) {
  struct V : IRVisitor {
    bool own = false;
    void visit_block_realize(const BlockRealizeNode*) override {}
    void visit_store(const StoreNode*) override { own = true; }
    void visit_evaluate(const EvaluateNode*) override { own = true; }
  } v;
  if (s.defined()) v.visit(s);
  return !v.own;
}

// The outermost block realizes of s get `cond && own predicate`.
Stmt guard_nested_blocks(const Stmt& s, const Expr& cond) {
  struct M : IRMutator {
    Expr cond;
    Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt&) override {
      Expr p = is_one(n->predicate) ? cond : make_binary(BinOp::And, cond, n->predicate);
      return make_block_realize(n->bindings, p, n->block);
    }
  } m;
  m.cond = cond;
  return m.mutate(s);
}

std::optional<Stmt> Normalizer::inline_scope_block(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  bool nested = has_block_realize(b.body);
  if (!nested) return std::nullopt;
  if (!b.allocs.empty()) {
    if (b.init.defined() || std::any_of(b.iter_vars.begin(), b.iter_vars.end(),
                                        [](const IterVar& v) { return v.kind != IterKind::Spatial; }))
      return std::nullopt;
    ScopeAllocExpander ex;
    std::vector<Buffer> expanded;
    for (auto& iv : b.iter_vars) ex.prefix.push_back(iv.var);
    for (auto& a : b.allocs) {
      std::vector<Expr> shape;
      for (auto& iv : b.iter_vars) shape.push_back(iv.extent);
      shape.insert(shape.end(), a->shape.begin(), a->shape.end());
      Buffer nb(reuse_name(a->name), a->dtype, shape, "global");
      ex.map[a.get()] = nb;
      expanded.push_back(nb);
    }
    BlockNode nb = b;
    nb.body = ex.mutate(b.body);
    if (ex.bad) return std::nullopt;
    nb.allocs.clear();
    ad::set_regions(nb);
    Stmt r = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    auto out = inline_scope_block(r.as<BlockRealizeNode>());
    if (out)
      for (auto& e : expanded) new_allocs_.push_back(e);
    return out;
  }
  if (b.init.defined() || std::any_of(b.iter_vars.begin(), b.iter_vars.end(),
                                      [](const IterVar& v) { return v.kind != IterKind::Spatial; }))
    return inline_outer_block(br);
  VarMap m;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    if (b.iter_vars[i].kind != IterKind::Spatial) return std::nullopt;
    m[b.iter_vars[i].var.get()] = br->bindings[i];
  }
  std::vector<Stmt> stmts;
  if (auto* q = b.body.as<SeqNode>())
    stmts = q->stmts;
  else
    stmts.push_back(b.body);
  std::vector<Stmt> out, run;
  int pieces = 0;
  auto flush = [&] {
    if (run.empty()) return;
    BlockNode nb;
    nb.name = pieces++ == 0 ? b.name : names_.unique(b.name + "_" + std::to_string(pieces - 1));
    nb.iter_vars = b.iter_vars;
    nb.annotations = b.annotations;
    nb.loc = b.loc;
    nb.body = make_seq(run);
    ad::set_regions(nb);
    Stmt piece = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
    out.push_back(mutate(piece));
    run.clear();
  };
  for (auto& st : stmts) {
    if (!has_block_realize(st)) {
      run.push_back(st);
      continue;
    }
    flush();
    Stmt t = substitute(st, m);
    if (!is_one(br->predicate)) t = make_if(br->predicate, t);
    out.push_back(mutate(t));
  }
  flush();
  Stmt r = make_seq(out);
  if (out.size() > 1 && r.as<SeqNode>()) split_.insert(r.get());
  return r;
}

// Rewrite 5b: an outer block (reduce vars, an init) whose statements all live in nested
// blocks, as TVM's blockize prints a tiled reduction: `block outer(vio, vko: reduce) { init
// { for ii { block c_init(vi = vio * 2 + ii) {...} } } for ii, ki { block inner(vi = vio * 2
// + ii, vk = vko * 3 + ki) {...} } }`. Its init runs where every reduce var is 0, before the
// body, for each instance in loop order; the outer block's own effects are none. So the
// statements themselves, outer iter vars replaced by their bindings, with the nested blocks
// of the init under `where P && (reduce bindings == 0)` and those of the body under `where
// P`, run exactly the same instances in the same order (no reordering: no soundness
// condition beyond "no store outside the nested blocks"). Scan blocks are left alone.
std::optional<Stmt> Normalizer::inline_outer_block(const BlockRealizeNode* br) {
  const BlockNode& b = *br->block.get();
  if (!only_nested_effects(b.body) || (b.init.defined() && !only_nested_effects(b.init))) return std::nullopt;
  if (b.init.defined() && !has_block_realize(b.init)) return std::nullopt;
  VarMap m;
  Expr first = make_bool(true);
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    if (iv.kind == IterKind::Scan) return std::nullopt;
    m[iv.var.get()] = br->bindings[i];
    if (iv.kind == IterKind::Reduce) {
      Expr z = make_binary(BinOp::EQ, br->bindings[i], make_const(br->bindings[i].dtype(), 0));
      first = is_one(first) ? z : make_binary(BinOp::And, first, z);
    }
  }
  std::vector<Stmt> out;
  if (b.init.defined()) {
    Expr c = is_one(br->predicate) ? first : make_binary(BinOp::And, br->predicate, first);
    out.push_back(mutate(guard_nested_blocks(substitute(b.init, m), c)));
  }
  Stmt body = substitute(b.body, m);
  if (!is_one(br->predicate)) body = guard_nested_blocks(body, br->predicate);
  out.push_back(mutate(body));
  return make_seq(out);
}

}  // namespace

namespace {

// Rewrite 0f: a block-local temp in a block with reduce vars (TVM's opaque style
// `alloc T: f32[1]; T[0] = A[vi, vk] * 2.0; S[vi] = S[vi] + T[0] * T[0]`) is inlined: each
// load of T becomes the stored value, then rewrite 0e drops the alloc. Sound when, in every
// instance, T is written before it is read and carries nothing between instances:
//   - exactly one store to T, a top-level statement of the body (no guard, loop or let
//     around it: its execution does not depend on the reduce vars), T untouched by the init,
//     by the store's own value and indices, and by every statement before it;
//   - every later access of T is a load at the store's indices (identical expressions), so
//     it reads the element this instance just wrote; constant indices must be in bounds;
//   - the value has T's dtype (no conversion on store) and no later statement writes a
//     buffer the value reads, so the value evaluates the same at each load;
//   - no nested blocks and no call_extern (BufferPtr) in the body.
// Anything else is left as it was: gradient() then refuses it with its usual message.
// Rewrite 0f, general form (helper round h5): a temp stored several times, under `if` guards
// or in both arms of an if/else (`T[0] = A[vi, vk]; if A[vi, vk] < 0.0 { T[0] = 0.0 }`,
// `T[0] = T[0] * T[0] + 1.0`). The body is executed symbolically: each element of T holds an
// expression (a store sets it, with the loads of T in its value replaced by the current ones;
// after an if, an element an arm changed holds `if_then_else(c, then value, else value)`), and
// each load of T becomes the value its element holds there. Sound when every value read is set
// earlier in the same instance (else it comes from another instance: refused), the values and
// merged conditions read no buffer the body writes (so they evaluate the same at every load)
// and no let-bound name they use goes out of scope; T's elements are constant in-bounds indices
// (or one index tuple used everywhere), T untouched by the init, by loops, blocks or pointers.
class TempValues {
 public:
  static std::optional<std::vector<Stmt>> run(const std::vector<Stmt>& items, const Stmt& init,
                                              const BufferNode* t) {
    if (init.defined() && touches_buf(init, t)) return std::nullopt;
    TempValues tv;
    tv.t_ = t;
    BufSet w;
    for (auto& it : items) ad::stored_buffers(it, &w);
    w.erase(t);
    tv.written_ = w;
    std::vector<Stmt> out;
    for (auto& it : items) {
      Stmt r;
      if (!tv.stmt(it, &r)) return std::nullopt;
      if (r.defined()) out.push_back(r);
    }
    if (out.empty()) return std::nullopt;
    return out;
  }

 private:
  using Key = std::vector<Expr>;
  struct State {
    std::vector<std::pair<Key, Expr>> vals;
    Expr* find(const Key& k) {
      for (auto& [kk, v] : vals)
        if (same_indices(kk, k)) return &v;
      return nullptr;
    }
  };
  static bool touches_buf(const Stmt& s, const BufferNode* t) {
    BufSet b;
    add_loads(s, &b);
    ad::stored_buffers(s, &b);
    return b.count(t) > 0;
  }
  // Elements are told apart by their index tuple: constants in bounds, or one tuple everywhere.
  bool key_ok(const Key& k) {
    bool consts = true;
    for (size_t d = 0; d < k.size(); ++d)
      consts = consts && d < t_->shape.size() && const_in_bounds(k[d], t_->shape[d]);
    if (consts) return !any_symbolic_;
    for (auto& e : k)
      if (has_load_or_let(e)) return false;
    if (!symbolic_key_) {
      if (!state_.vals.empty() || any_const_) return false;
      symbolic_key_ = k;
      any_symbolic_ = true;
      return true;
    }
    return same_indices(*symbolic_key_, k);
  }
  // e with the loads of T replaced by the current values.
  std::optional<Expr> subst(const Expr& e) {
    if (!e.defined()) return e;
    struct M : IRMutator {
      TempValues* self;
      bool bad = false;
      Expr mutate_load(const LoadNode* n, const Expr& e) override {
        if (n->buffer.get() != self->t_) return IRMutator::mutate_load(n, e);
        Expr* v = self->key_ok(n->indices) ? self->state_.find(n->indices) : nullptr;
        if (!v) {
          bad = true;
          return e;
        }
        return *v;
      }
      Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
        if (n->buffer.get() == self->t_) bad = true;
        return IRMutator::mutate_buffer_ptr(n, e);
      }
    } m;
    m.self = this;
    Expr r = m.mutate(e);
    if (m.bad) return std::nullopt;
    return r;
  }
  bool stable(const Expr& v) const { return !intersects(loads_of(v), written_); }
  bool stmt(const Stmt& s, Stmt* out) {
    *out = Stmt();
    if (auto* st = s.as<StoreNode>()) {
      std::vector<Expr> idx;
      for (auto& i : st->indices) {
        auto r = subst(i);
        if (!r) return false;
        idx.push_back(*r);
      }
      auto v = subst(st->value);
      if (!v) return false;
      if (st->buffer.get() != t_) {
        *out = make_store(st->buffer, idx, *v, st->loc);
        return true;
      }
      if (st->value.dtype() != t_->dtype || !key_ok(st->indices) || !stable(*v)) return false;
      any_const_ = any_const_ || !any_symbolic_;
      if (Expr* cur = state_.find(st->indices))
        *cur = *v;
      else
        state_.vals.push_back({st->indices, *v});
      return true;
    }
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> xs;
      for (auto& x : q->stmts) {
        Stmt r;
        if (!stmt(x, &r)) return false;
        if (r.defined()) xs.push_back(r);
      }
      if (!xs.empty()) *out = xs.size() == 1 ? xs[0] : make_seq(xs);
      return true;
    }
    if (auto* l = s.as<LetStmtNode>()) {
      auto v = subst(l->value);
      if (!v) return false;
      Stmt body;
      if (!stmt(l->body, &body)) return false;
      for (auto& [k, val] : state_.vals)
        if (uses_var(val, l->var.get())) return false;  // would leave the let's scope
      if (body.defined()) *out = make_let_stmt(l->var, *v, body);
      return true;
    }
    if (auto* i = s.as<IfThenElseStmtNode>()) {
      auto c = subst(i->cond);
      if (!c) return false;
      State before = state_;
      Stmt a, b;
      if (!stmt(i->then_case, &a)) return false;
      State after_then = state_;
      state_ = before;
      if (i->else_case.defined() && !stmt(i->else_case, &b)) return false;
      State after_else = state_;
      state_ = before;
      std::vector<Key> keys;
      for (auto* st : {&after_then, &after_else})
        for (auto& [k, v] : st->vals) {
          bool seen = false;
          for (auto& kk : keys) seen = seen || same_indices(kk, k);
          if (!seen) keys.push_back(k);
        }
      for (auto& k : keys) {
        Expr *vt = after_then.find(k), *ve = after_else.find(k), *v0 = before.find(k);
        if (vt && ve && v0 && vt->same_as(*v0) && ve->same_as(*v0)) continue;
        if (!vt || !ve) return false;  // an arm leaves an element unset that the other sets
        // Both arms store one value (the same expression object): it replaces the element's
        // value. Pushing a second entry left find() returning the stale first one (tv1).
        Expr m = vt->same_as(*ve) ? *vt : Expr();
        if (!m.defined()) {
          if (!stable(*c)) return false;
          m = make_if_then_else(*c, *vt, *ve);
        }
        if (Expr* cur = state_.find(k))
          *cur = m;
        else
          state_.vals.push_back({k, m});
      }
      if (a.defined() || b.defined())
        *out = a.defined() ? make_if(*c, a, b) : make_if(make_unary(UnOp::Not, *c), b);
      return true;
    }
    // Anything else (loops, blocks, call_extern) must leave T alone.
    if (touches_buf(s, t_)) return false;
    *out = s;
    return true;
  }

  const BufferNode* t_ = nullptr;
  BufSet written_;
  State state_;
  std::optional<Key> symbolic_key_;
  bool any_symbolic_ = false, any_const_ = false;
};

class InlineReduceTemps : public IRMutator {
 protected:
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    if (nb->allocs.empty() || !nb->body.defined()) return nb;
    bool has_reduce = false;
    for (auto& iv : nb->iter_vars) {
      if (iv.kind == IterKind::Reduce) has_reduce = true;
      if (iv.kind != IterKind::Reduce && iv.kind != IterKind::Spatial) return nb;
    }
    if (!has_reduce || has_block_realize(nb->body)) return nb;
    std::vector<Stmt> items;
    if (auto* sq = nb->body.as<SeqNode>())
      items = sq->stmts;
    else
      items = {nb->body};
    bool changed = false;
    for (auto& t : nb->allocs) {
      if (auto r = inline_temp(items, nb->init, t.get())) {
        items = std::move(*r);
        changed = true;
      } else if (auto r2 = TempValues::run(items, nb->init, t.get())) {
        items = std::move(*r2);
        changed = true;
      }
    }
    if (!changed) return nb;
    BlockNode copy = *nb.get();
    copy.body = items.size() == 1 ? items[0] : make_seq(items);
    return make_block(std::move(copy));
  }

 private:
  static bool touches(const Stmt& s, const BufferNode* t) {
    if (!s.defined()) return false;
    BufSet b;
    add_loads(s, &b);
    ad::stored_buffers(s, &b);
    return b.count(t) > 0;
  }
  static bool touches(const Expr& e, const BufferNode* t) {
    if (!e.defined()) return false;
    return loads_of(e).count(t) > 0;
  }

  static std::optional<std::vector<Stmt>> inline_temp(const std::vector<Stmt>& items, const Stmt& init,
                                                      const BufferNode* t) {
    if (touches(init, t)) return std::nullopt;
    size_t p = items.size();
    for (size_t i = 0; i < items.size(); ++i) {
      auto* st = items[i].as<StoreNode>();
      if (st && st->buffer.get() == t) {
        p = i;
        break;
      }
      if (touches(items[i], t)) return std::nullopt;  // read or written (nested) before
    }
    if (p == items.size()) return std::nullopt;
    auto* st = items[p].as<StoreNode>();
    if (st->value->dtype != t->dtype) return std::nullopt;
    for (auto& ix : st->indices)
      if (touches(ix, t)) return std::nullopt;
    if (touches(st->value, t)) return std::nullopt;
    for (size_t d = 0; d < st->indices.size(); ++d)
      if (auto* c = st->indices[d].as<IntImmNode>()) {
        if (d >= t->shape.size()) return std::nullopt;
        auto* n = t->shape[d].as<IntImmNode>();
        if (!n || c->value < 0 || c->value >= n->value) return std::nullopt;
      }
    BufSet value_reads = loads_of(st->value);
    for (auto& ix : st->indices) add_loads(ix, &value_reads);
    std::vector<Stmt> out(items.begin(), items.begin() + p);
    bool ok = true;
    struct Inline : IRMutator {
      const BufferNode* t;
      const StoreNode* st;
      bool* ok;
      Expr mutate_load(const LoadNode* n, const Expr& e) override {
        if (n->buffer.get() != t) return IRMutator::mutate_load(n, e);
        if (!same_indices(n->indices, st->indices)) *ok = false;
        return st->value;
      }
      Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
        *ok = false;
        return IRMutator::mutate_buffer_ptr(n, e);
      }
      Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
        if (n->buffer.get() == t) *ok = false;
        return IRMutator::mutate_store(n, s);
      }
    } in;
    in.t = t;
    in.st = st;
    in.ok = &ok;
    for (size_t i = p + 1; i < items.size(); ++i) {
      if (intersects(writes_of(items[i]), value_reads)) return std::nullopt;
      out.push_back(in.mutate(items[i]));
      if (!ok) return std::nullopt;
    }
    return out;
  }
};

// Rewrite 0g: an `if` around a loop outside any block (`if t > 0 { for k { G[t, g] += U[g, k] *
// H[t - 1, k] } }`, an LSTM written as plain loops) goes inside the loop, `for k { if t > 0 {
// ... } }`, so that rewrite 0 wraps the statement as a block (it wraps block-free statements
// without loops only; the store was refused as "outside of any block"). The same iterations
// run the same statements, provided the condition reads nothing the loop writes (it is now
// evaluated at every iteration); a loop's bounds have no effects.
class SinkGuards : public IRMutator {
 public:
  // The function body: the root block's body is outside any user block.
  Stmt run(const Stmt& body) {
    auto* rr = body.as<BlockRealizeNode>();
    if (!rr) return body;
    Stmt b = mutate(rr->block->body);
    if (b.same_as(rr->block->body)) return body;
    BlockNode rb = *rr->block.get();
    rb.body = b;
    return make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
  }

 protected:
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
  Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s) override {
    auto* f = n->then_case.as<ForNode>();
    if (n->else_case.defined() || !f || intersects(loads_of(n->cond), writes_of(n->then_case)))
      return IRMutator::mutate_if(n, s);
    Stmt inner = mutate(make_if(n->cond, f->body));
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, inner, f->thread_tag, f->annotations);
  }
};

// Rewrite 0h: a function-level scratch reused by every iteration of a plain loop nest (C's
// `float acc`: `S[0] = X[t, j]; for k { S[0] += W[j, k] * H[t - 1, k] } H[t, j] = tanh(S[0])`
// under `for t, j`) gets one copy per iteration, `S_p[t - 1, j]`: every iteration of the
// nest sets the element before it reads it, so no value flows between iterations and the
// copies hold the same values at every read. Then rewrites 0, 8 and 10b read the nest (a
// recurrence through the scratch's blocks was refused: "opaque iter vars are not supported").
// Conditions: S is an alloc of the root block, every access of S lies in the body B of one
// loop (the innermost holding them all) with no block inside B; the first statement of B
// touching S is an unconditional store of S at constant indices e, at the top level of B;
// every access of S is at e; the loops around B have extents free of loop vars.
class PrivatizeScratch : public IRMutator {
 public:
  std::vector<Buffer> new_allocs;
  std::vector<const BufferNode*> dropped;
  NameGen* names = nullptr;
  Stmt run(const Stmt& root_body, const std::vector<Buffer>& allocs) {
    Stmt body = root_body;
    for (auto& a : allocs) {
      std::vector<const ForNode*> path;
      const ForNode* owner = nullptr;
      std::vector<const ForNode*> owner_path;
      if (!find_owner(body, a.get(), path, &owner, &owner_path) || !owner) continue;
      auto r = privatize(body, a, owner, owner_path);
      if (r) {
        body = *r;
        dropped.push_back(a.get());
      }
    }
    return body;
  }

 private:
  static bool touches(const Stmt& s, const BufferNode* t) {
    BufSet b;
    add_loads(s, &b);
    ad::stored_buffers(s, &b);
    return b.count(t) > 0;
  }
  // The innermost loop whose body holds every access of t (with the loops around it).
  static bool find_owner(const Stmt& s, const BufferNode* t, std::vector<const ForNode*>& path,
                         const ForNode** owner, std::vector<const ForNode*>* owner_path) {
    if (!touches(s, t)) return true;
    if (auto* f = s.as<ForNode>()) {
      path.push_back(f);
      *owner = f;
      *owner_path = path;
      bool ok = find_owner(f->body, t, path, owner, owner_path);
      path.pop_back();
      return ok;
    }
    if (auto* q = s.as<SeqNode>()) {
      int n = 0;
      for (auto& x : q->stmts) n += touches(x, t);
      if (n > 1) return true;  // the current owner holds them all
      for (auto& x : q->stmts)
        if (touches(x, t)) return find_owner(x, t, path, owner, owner_path);
    }
    return true;  // a store, if, let or block: the current owner
  }
  std::optional<Stmt> privatize(const Stmt& body, const Buffer& a, const ForNode* owner,
                                const std::vector<const ForNode*>& path) {
    if (has_block_realize(owner->body)) return std::nullopt;
    std::vector<Stmt> stmts;
    if (auto* q = owner->body.as<SeqNode>())
      stmts = q->stmts;
    else
      stmts = {owner->body};
    const StoreNode* first = nullptr;
    for (auto& x : stmts) {
      if (!touches(x, a.get())) continue;
      first = x.as<StoreNode>();
      break;
    }
    if (!first || first->buffer.get() != a.get()) return std::nullopt;
    for (size_t d = 0; d < first->indices.size(); ++d)
      if (!const_in_bounds(first->indices[d], a->shape[d])) return std::nullopt;
    if (loads_of(first->value).count(a.get())) return std::nullopt;
    // Every access at the first store's element.
    bool ok = true;
    for_each_expr(owner->body, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && l->buffer.get() == a.get())
        ok = ok && same_indices(l->indices, first->indices);
      if (auto* p = x.as<BufferPtrNode>(); p && p->buffer.get() == a.get()) ok = false;
    });
    std::vector<const StoreNode*> sts;
    for_each_stmt_store(owner->body, &sts);
    for (auto* st : sts)
      ok = ok && (st->buffer.get() != a.get() || same_indices(st->indices, first->indices));
    if (!ok) return std::nullopt;
    std::vector<Expr> shape, prefix;
    for (auto* f : path) {
      for (auto* g : path)
        if (uses_var(f->extent, g->loop_var.get()) || uses_var(f->min, g->loop_var.get()))
          return std::nullopt;
      shape.push_back(f->extent);
      prefix.push_back(is_zero(f->min) ? Expr(f->loop_var) : Expr(f->loop_var) - f->min);
    }
    // Every access is at the one element e: the copies drop S's own dimensions.
    Buffer np(names->unique(a->name + "_p"), a->dtype, shape, "global");
    struct M : IRMutator {
      const BufferNode* a;
      Buffer np;
      std::vector<Expr> prefix;
      Expr mutate_load(const LoadNode* n, const Expr& e) override {
        if (n->buffer.get() != a) return IRMutator::mutate_load(n, e);
        return make_load(np, prefix);
      }
      Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
        if (n->buffer.get() != a) return IRMutator::mutate_store(n, s);
        return make_store(np, prefix, mutate(n->value), n->loc);
      }
    } m;
    m.a = a.get();
    m.np = np;
    m.prefix = prefix;
    Stmt nbody = m.mutate(owner->body);
    struct R : IRMutator {
      const ForNode* owner;
      Stmt nbody;
      Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
      Stmt mutate_for(const ForNode* n, const Stmt& s) override {
        if (n != owner) return IRMutator::mutate_for(n, s);
        return make_for(n->loop_var, n->min, n->extent, n->for_kind, nbody, n->thread_tag, n->annotations);
      }
    } r;
    r.owner = owner;
    r.nbody = nbody;
    new_allocs.push_back(np);
    return r.mutate(body);
  }
};

// Rewrite 0e: a block-local `alloc` that nothing in the block touches (LANGUAGE.md's Blocks
// example lists an optional `alloc` line) is dropped with its region entries, so that it does
// not make a block gradient() would otherwise accept refused ("block-local allocations").
class DropUnusedAllocs : public IRMutator {
 protected:
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    if (nb->allocs.empty()) return nb;
    std::unordered_set<const BufferNode*> used;
    auto note = [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) used.insert(l->buffer.get());
      if (auto* p = x.as<BufferPtrNode>()) used.insert(p->buffer.get());
    };
    for (const Stmt& st : {nb->body, nb->init})
      if (st.defined()) {
        for_each_expr(st, note);
        ad::stored_buffers(st, &used);
      }
    std::vector<Buffer> keep;
    std::unordered_set<const BufferNode*> dropped;
    for (auto& a : nb->allocs) (used.count(a.get()) ? keep.push_back(a) : (void)dropped.insert(a.get()));
    if (dropped.empty()) return nb;
    BlockNode copy = *nb.get();
    copy.allocs = keep;
    auto strip = [&](std::vector<BufferRegion>& rs) {
      std::erase_if(rs, [&](const BufferRegion& r) { return dropped.count(r.buffer.get()) > 0; });
    };
    strip(copy.reads);
    strip(copy.writes);
    return make_block(std::move(copy));
  }
};

// A block reading what a reduction accumulates, inside a loop that feeds one of the
// reduction's reduce iter vars (`for k { block a(vk: reduce = k) { A[0] += X[vk] } block
// z(vk = k) { Z[vk] = A[0] } }`, also as plain loops, or a scan step's reduction read per
// term): at each iteration it sees a partial sum. gradient() reads a reduction's instances
// as complete before any other block reads its result (blocks run whole, one after the
// other), so F_grad differentiated the finished sum there: a wrong gradient, silently
// (review round 1). Refused on the normalised function, naming both blocks. Checked per
// buffer (not per element): a read of an element already finished is refused too.
void refuse_partial_reduction_reads(const FunctionNode& f) {
  struct Info {
    const BlockRealizeNode* br;
    std::vector<const ForNode*> loops;  // enclosing loops, outermost first
    BufSet loads, stores;
  };
  struct V : IRVisitor {
    std::vector<const ForNode*> path;
    std::vector<Info> blocks;
    void visit_for(const ForNode* n) override {
      path.push_back(n);
      IRVisitor::visit_for(n);
      path.pop_back();
    }
    void visit_block_realize(const BlockRealizeNode* n) override {
      Info in{n, path, {}, {}};
      const BlockNode& b = *n->block.get();
      if (b.iter_vars.empty()) {  // the root (or a scope): only its contents are blocks
        IRVisitor::visit_block_realize(n);
        return;
      }
      // A block holding loops or blocks is refused by gradient() with its own message.
      struct Nest : IRVisitor {
        bool found = false;
        void visit_for(const ForNode*) override { found = true; }
        void visit_block_realize(const BlockRealizeNode*) override { found = true; }
      } nest;
      nest.visit(b.body);
      if (b.init.defined()) nest.visit(b.init);
      if (nest.found) return;
      add_loads(n->predicate, &in.loads);
      add_loads(b.body, &in.loads);
      if (b.init.defined()) add_loads(b.init, &in.loads);
      ad::stored_buffers(b.body, &in.stores);
      blocks.push_back(std::move(in));
    }
  } v;
  v.visit(f.body);
  for (auto& r : v.blocks) {
    const BlockNode& rb = *r.br->block.get();
    for (size_t q = 0; q < rb.iter_vars.size(); ++q) {
      if (rb.iter_vars[q].kind != IterKind::Reduce) continue;
      for (const ForNode* L : r.loops) {
        if (!uses_var(r.br->bindings[q], L->loop_var.get())) continue;
        for (auto& z : v.blocks) {
          if (&z == &r || std::find(z.loops.begin(), z.loops.end(), L) == z.loops.end()) continue;
          for (const BufferNode* y : r.stores) {
            if (!z.loads.count(y)) continue;
            const std::string& rn = rb.name;
            throw Error("block " + z.br->block->name + ": reads " + y->name + ", which block " + rn +
                        " accumulates over loop " + L->loop_var.name() + " (reduce iter var " +
                        rb.iter_vars[q].var.name() + "), inside that loop: it sees the reduction's partial "
                        "values, and gradient() reads a reduction as finished before its readers; finish "
                        "the reduction in a loop of its own before reading " + y->name +
                        ", or store each running value to an element of its own (a scan)");
          }
        }
      }
    }
  }
}

}  // namespace

Function normalize_for_autodiff(const FunctionNode& f_in) {
  if (std::getenv("TIRC_AD_NO_NORMALIZE")) return std::make_shared<FunctionNode>(f_in);
  FunctionNode dropped = *ad::hoist_last_iteration_epilogues(*ad::sink_outer_lets(f_in));  // 0i, 0j
  dropped.body = InlineReduceTemps().mutate(dropped.body);  // rewrite 0f
  dropped.body = DropUnusedAllocs().mutate(dropped.body);  // rewrite 0e
  dropped.body = SinkGuards().run(dropped.body);           // rewrite 0g
  if (auto* rr = dropped.body.as<BlockRealizeNode>()) {    // rewrite 0h
    NameGen names;
    struct Names : IRVisitor {
      NameGen* g;
      void visit_load(const LoadNode* n) override {
        g->reserve(n->buffer->name);
        IRVisitor::visit_load(n);
      }
      void visit_block(const BlockNode* n) override {
        for (auto& a : n->allocs) g->reserve(a->name);
        IRVisitor::visit_block(n);
      }
    } nv;
    nv.g = &names;
    for (auto& p : f_in.params) names.reserve(p.name());
    for (auto& o : f_in.outputs) names.reserve(o->name);
    nv.visit(dropped.body);
    PrivatizeScratch ps;
    ps.names = &names;
    Stmt b = ps.run(rr->block->body, rr->block->allocs);
    if (!ps.dropped.empty()) {
      BlockNode rb = *rr->block.get();
      rb.body = b;
      std::erase_if(rb.allocs, [&](const Buffer& x) {
        return std::find(ps.dropped.begin(), ps.dropped.end(), x.get()) != ps.dropped.end();
      });
      for (auto& x : ps.new_allocs) rb.allocs.push_back(x);
      dropped.body = make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
    }
  }
  const FunctionNode& f = dropped;
  Function wrapped = ad::wrap_blockless_stores(*ad::inline_outer_lets(f));  // rewrites 0b, 0
  wrapped = ad::fuse_split_scan_loops(*wrapped);                            // rewrite 0d
  wrapped = ad::run_redundant_blocks_once(*wrapped);                        // rewrite 0c
  Function out = ad::split_scan_sums(*Normalizer(*wrapped).run());  // rewrite 13
  out = ad::pin_guarded_scan_loads(*out);                            // rewrite 14
  Function scanned = ad::scan_carried_loops(*out);  // rewrite 10b
  if (!scanned->body.same_as(out->body)) out = Normalizer(*scanned).run();
  out = ad::shift_region_steps(*out);       // rewrite 11
  out = ad::version_region_buffers(*out);   // rewrite 12
  refuse_partial_reduction_reads(*out);
  ad::refuse_scan_sums(*out);
  return out;
}

}  // namespace tirc

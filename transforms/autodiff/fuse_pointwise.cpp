#include "transforms/autodiff/fuse_pointwise.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/expr_ad.h"
#include "transforms/autodiff/regions.h"

namespace tirc::ad {

namespace {

// A loop nest over one block that may take part in a fusion.
struct Nest {
  std::vector<const ForNode*> loops;
  const BlockRealizeNode* br = nullptr;
  const BlockNode* b = nullptr;
};

bool has_nested_control(const Stmt& s) {
  struct Scan : IRVisitor {
    bool found = false;
    void visit_for(const ForNode*) override { found = true; }
    void visit_block_realize(const BlockRealizeNode*) override { found = true; }
    void visit_evaluate(const EvaluateNode*) override { found = true; }
    void visit_buffer_ptr(const BufferPtrNode*) override { found = true; }
  } scan;
  scan.visit(s);
  return scan.found;
}

std::optional<Nest> match_nest(const Stmt& s) {
  Nest n;
  Stmt cur = s;
  while (auto* f = cur.as<ForNode>()) {
    if (f->for_kind != ForKind::Serial || !f->thread_tag.empty() || !f->annotations.empty() ||
        !is_zero(f->min))
      return std::nullopt;
    n.loops.push_back(f);
    cur = f->body;
  }
  n.br = cur.as<BlockRealizeNode>();
  if (!n.br || n.loops.empty()) return std::nullopt;
  n.b = n.br->block.get();
  const BlockNode& b = *n.b;
  if (b.init.defined() || !b.allocs.empty() || !b.annotations.empty() || b.iter_vars.size() != n.loops.size())
    return std::nullopt;
  for (size_t k = 0; k < n.loops.size(); ++k) {
    auto* v = n.br->bindings[k].as<VarNode>();
    if (b.iter_vars[k].kind != IterKind::Spatial || v != n.loops[k]->loop_var.get()) return std::nullopt;
    // The loop may visit a prefix of a constant box (an adjoint gather over `serial(2)` bound to
    // `spatial(4)`, next to the mask over `spatial(2)` of the same points): the points are
    // the loop's either way (the fused block takes the first block's iter vars).
    int64_t le, ie;
    bool prefix = !std::getenv("TIRC_AD_NO_INIT_SINK") && is_const_int(n.loops[k]->extent, &le) &&
                  is_const_int(b.iter_vars[k].extent, &ie) && le <= ie;
    if (!expr_identical(b.iter_vars[k].extent, n.loops[k]->extent) && !prefix) return std::nullopt;
  }
  if (has_nested_control(b.body)) return std::nullopt;
  return n;
}

// Every access of each buffer in a body: index tuples, and whether it is stored.
struct Accesses {
  std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> tuples;
  std::unordered_set<const BufferNode*> written;
};

Accesses accesses(const Stmt& body) {
  struct Scan : IRVisitor {
    Accesses* out;
    void visit_load(const LoadNode* n) override {
      out->tuples[n->buffer.get()].push_back(n->indices);
      IRVisitor::visit_load(n);
    }
    void visit_store(const StoreNode* n) override {
      out->tuples[n->buffer.get()].push_back(n->indices);
      out->written.insert(n->buffer.get());
      IRVisitor::visit_store(n);
    }
  } scan;
  Accesses a;
  scan.out = &a;
  scan.visit(body);
  return a;
}

// True when every tuple is the same permutation of `ivs` (each point its own element).
bool own_element(const std::vector<std::vector<Expr>>& tuples, const std::vector<Var>& ivs) {
  const std::vector<Expr>& t0 = tuples.front();
  if (t0.size() != ivs.size()) return false;
  std::unordered_set<const VarNode*> seen;
  for (auto& e : t0) {
    auto* v = e.as<VarNode>();
    bool iv = false;
    for (auto& x : ivs) iv = iv || x.get() == v;
    if (!v || !iv || !seen.insert(v).second) return false;
  }
  for (auto& t : tuples)
    for (size_t d = 0; d < t.size(); ++d)
      if (!expr_identical(t[d], t0[d])) return false;
  return true;
}

// The fused nest being built: its loops and block come from the first statement of the run.
struct Run {
  Nest head;
  std::vector<Var> ivs;
  std::vector<Stmt> bodies;
  std::vector<std::string> names;
  std::vector<Stmt> originals;  // returned unchanged when no block of the run computes
};

bool try_append(Run& run, const Nest& n, const Stmt& s) {
  const Nest& h = run.head;
  if (n.loops.size() != h.loops.size()) return false;
  std::unordered_map<const VarNode*, Expr> m;
  for (size_t k = 0; k < n.loops.size(); ++k) {
    if (!expr_identical(n.loops[k]->extent, h.loops[k]->extent)) return false;
    m[n.loops[k]->loop_var.get()] = h.loops[k]->loop_var;
    m[n.b->iter_vars[k].var.get()] = run.ivs[k];
  }
  if (!expr_identical(substitute(n.br->predicate, m), h.br->predicate)) return false;
  Stmt body = substitute(n.b->body, m);
  Accesses a = accesses(make_seq(run.bodies)), b = accesses(body);
  for (auto& [buf, ta] : a.tuples) {
    auto it = b.tuples.find(buf);
    if (it == b.tuples.end() || (!a.written.count(buf) && !b.written.count(buf))) continue;
    std::vector<std::vector<Expr>> all = ta;
    all.insert(all.end(), it->second.begin(), it->second.end());
    if (!own_element(all, run.ivs)) return false;
  }
  run.bodies.push_back(body);
  run.names.push_back(n.b->name);
  run.originals.push_back(s);
  return true;
}

// True when some store of s stores more than a constant.
bool computes(const Stmt& s) {
  struct Scan : IRVisitor {
    bool found = false;
    void visit_store(const StoreNode* n) override {
      if (!n->value.as<IntImmNode>() && !n->value.as<FloatImmNode>()) found = true;
    }
  } scan;
  scan.visit(s);
  return scan.found;
}

// A zero-initialisation stays in the fused block only when a computing block of the run
// accesses its buffer (it then turns into the first store, or is dropped); the others go
// to *out ahead of the fused block (they touch nothing the run touches: order is free).
void drop_unrelated_inits(Run& run, std::vector<Stmt>* out) {
  std::unordered_set<const BufferNode*> used;
  for (auto& b : run.bodies)
    if (computes(b))
      for (auto& [buf, t] : accesses(b).tuples) used.insert(buf);
  Run kept = run;
  kept.bodies.clear(), kept.names.clear(), kept.originals.clear();
  for (size_t k = 0; k < run.bodies.size(); ++k) {
    bool related = computes(run.bodies[k]);
    for (auto* w : accesses(run.bodies[k]).written) related = related || used.count(w);
    if (!related) {
      out->push_back(run.originals[k]);
      continue;
    }
    kept.bodies.push_back(run.bodies[k]);
    kept.names.push_back(run.names[k]);
    kept.originals.push_back(run.originals[k]);
  }
  run = std::move(kept);
}

Stmt finish(const Run& run) {
  if (run.bodies.size() == 1) return run.originals[0];
  BlockNode bn;
  // Named after the first block that computes something (not a zero-initialisation).
  bn.name = run.names[0];
  for (size_t k = 0; k < run.bodies.size(); ++k)
    if (computes(run.bodies[k])) {
      bn.name = run.names[k];
      break;
    }
  bn.iter_vars = run.head.b->iter_vars;
  bn.loc = run.head.b->loc;
  bn.body = merge_lets_and_guards(make_seq(run.bodies));
  set_regions(bn);
  Stmt st = make_block_realize(run.head.br->bindings, run.head.br->predicate, make_block(std::move(bn)));
  for (size_t k = run.head.loops.size(); k-- > 0;) {
    const ForNode* f = run.head.loops[k];
    st = make_for(f->loop_var, f->min, f->extent, f->for_kind, st);
  }
  return st;
}

// ---- tidying of a fused body ----

struct Item {
  bool is_let = false;
  Var var;
  Expr value;
  Stmt stmt;
};

void flatten(const Stmt& s, std::vector<Item>* out) {
  if (auto* l = s.as<LetStmtNode>()) {
    out->push_back({true, l->var, l->value, Stmt()});
    flatten(l->body, out);
  } else if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) flatten(x, out);
  } else {
    out->push_back({false, Var(), Expr(), s});
  }
}

bool reads_any(const Expr& e, const std::unordered_set<const BufferNode*>& bufs) {
  bool r = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>(); l && bufs.count(l->buffer.get())) r = true;
  });
  return r;
}

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  std::unordered_set<const VarNode*> vs;
  collect_vars(e, &vs);
  for (auto* v : vs)
    if (vars.count(v)) return true;
  return false;
}

// c is !d or d is !c.
bool negation_of(const Expr& c, const Expr& d) {
  auto* u = c.as<UnaryNode>();
  if (u && u->op == UnOp::Not && expr_identical(u->a, d)) return true;
  auto* w = d.as<UnaryNode>();
  return w && w->op == UnOp::Not && expr_identical(w->a, c);
}

// ---- stores of constants: forwarded to later loads of the same element, dropped when
// overwritten on every path before any load (the zero-initialisation of an adjoint that a
// fused block then writes) ----

struct Known {
  std::vector<Expr> index;
  Expr value;
  bool general = false;  // not a constant or a copy: forwarded only into a store to the element
};
using KnownMap = std::unordered_map<const BufferNode*, Known>;

bool same_tuple(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!expr_identical(a[d], b[d])) return false;
  return true;
}

class ForwardConstants : public IRMutator {
 public:
  explicit ForwardConstants(KnownMap* known, const BufferNode* store_to = nullptr)
      : known_(known), store_to_(store_to) {}

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    auto it = known_->find(n->buffer.get());
    if (it != known_->end() && same_tuple(it->second.index, n->indices) &&
        (!it->second.general || n->buffer.get() == store_to_))
      return it->second.value;
    return IRMutator::mutate_load(n, e);
  }
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_binary(n, e);
    auto* b = r.as<BinaryNode>();
    if (b && b->op == BinOp::Add && is_float(r.dtype())) {
      // 0 + x is x (up to the sign of a zero x).
      if (is_zero(b->a)) return b->b;
      if (is_zero(b->b)) return b->a;
    }
    return r;
  }

 private:
  KnownMap* known_;
  const BufferNode* store_to_;
};

Stmt forward_constants(const Stmt& s, KnownMap& known) {
  if (auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> out;
    for (auto& x : q->stmts) out.push_back(forward_constants(x, known));
    return make_seq(out);
  }
  if (auto* st = s.as<StoreNode>()) {
    ForwardConstants fc(&known), fv(&known, st->buffer.get());
    Expr v = fv.mutate(st->value);
    std::vector<Expr> idx;
    for (auto& i : st->indices) idx.push_back(fc.mutate(i));
    known.erase(st->buffer.get());
    // A forwarded value stays valid while no buffer it loads is written.
    std::erase_if(known, [&](const auto& kv) {
      bool reads = false;
      for_each_expr(kv.second.value, [&](const Expr& x) {
        if (auto* l = x.as<LoadNode>(); l && l->buffer.get() == st->buffer.get()) reads = true;
      });
      return reads;
    });
    // Constants, and plain copies of another buffer's element (the copy initialising an
    // adjoint version, `T_grad_1[v] = T_grad[v]`, then `T_grad_1[v] = T_grad_1[v] + t`: one
    // store `T_grad_1[v] = T_grad[v] + t`; the two stores to one buffer made the second
    // order refuse the block).
    // Any other value reading nothing of the buffer is forwarded into a later store to the same
    // element only (`X_grad[v] = a * t; X_grad[v] = X_grad[v] + b`, two adjoint blocks of one
    // forward block writing one element: `X_grad[v] = a * t + b`), so it is not recomputed.
    auto* ld = v.as<LoadNode>();
    bool self = false;
    for_each_expr(v, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && l->buffer.get() == st->buffer.get()) self = true;
    });
    if (v.as<FloatImmNode>() || v.as<IntImmNode>() || (ld && !self))
      known[st->buffer.get()] = {idx, v};
    else if (!self)
      known[st->buffer.get()] = {idx, v, true};
    return make_store(st->buffer, idx, v, st->loc);
  }
  if (auto* l = s.as<LetStmtNode>()) {
    ForwardConstants fc(&known);
    Expr v = fc.mutate(l->value);
    Stmt body = forward_constants(l->body, known);
    // Values using the let var are not forwarded out of its scope.
    std::erase_if(known, [&](const auto& kv) {
      bool uses = false;
      for_each_expr(kv.second.value, [&](const Expr& x) {
        if (x.as<VarNode>() == l->var.get()) uses = true;
      });
      for (auto& i : kv.second.index)
        for_each_expr(i, [&](const Expr& x) {
          if (x.as<VarNode>() == l->var.get()) uses = true;
        });
      return uses;
    });
    return make_let_stmt(l->var, v, body);
  }
  if (auto* f = s.as<IfThenElseStmtNode>()) {
    ForwardConstants fc(&known);
    Expr c = fc.mutate(f->cond);
    KnownMap kt = known, ke = known;
    Stmt t = forward_constants(f->then_case, kt);
    Stmt e = f->else_case.defined() ? forward_constants(f->else_case, ke) : Stmt();
    known.clear();
    for (auto& [b, k] : kt) {
      auto it = ke.find(b);
      if (it != ke.end() && same_tuple(it->second.index, k.index) &&
          expr_identical(it->second.value, k.value))
        known[b] = k;
    }
    return make_if(c, t, e);
  }
  known.clear();
  return s;
}

// (buffer, index) pairs stored on every path from here before any load of the buffer.
using Overwritten = std::vector<std::pair<const BufferNode*, std::vector<Expr>>>;

void forget_loaded(const Expr& e, Overwritten& ow) {
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>())
      std::erase_if(ow, [&](const auto& p) { return p.first == l->buffer.get(); });
  });
}

bool overwritten(const Overwritten& ow, const BufferNode* b, const std::vector<Expr>& idx) {
  for (auto& [x, i] : ow)
    if (x == b && same_tuple(i, idx)) return true;
  return false;
}

// Walks s backwards from the state after it (ow), dropping dead stores.
Stmt drop_dead_stores(const Stmt& s, Overwritten& ow) {
  if (auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> out;
    for (size_t k = q->stmts.size(); k-- > 0;) {
      Stmt x = drop_dead_stores(q->stmts[k], ow);
      auto* xs = x.as<SeqNode>();
      if (!xs || !xs->stmts.empty()) out.insert(out.begin(), x);
    }
    return make_seq(out);
  }
  if (auto* st = s.as<StoreNode>()) {
    if (overwritten(ow, st->buffer.get(), st->indices)) return make_seq({});
    // The value and indices are read before the store writes.
    ow.push_back({st->buffer.get(), st->indices});
    forget_loaded(st->value, ow);
    for (auto& i : st->indices) forget_loaded(i, ow);
    return s;
  }
  if (auto* l = s.as<LetStmtNode>()) {
    Stmt b = drop_dead_stores(l->body, ow);
    forget_loaded(l->value, ow);
    return make_let_stmt(l->var, l->value, b);
  }
  if (auto* f = s.as<IfThenElseStmtNode>()) {
    Overwritten ot = ow, oe = ow;
    Stmt t = drop_dead_stores(f->then_case, ot);
    Stmt e = f->else_case.defined() ? drop_dead_stores(f->else_case, oe) : Stmt();
    ow.clear();
    for (auto& p : ot)
      if (overwritten(oe, p.first, p.second)) ow.push_back(p);
    forget_loaded(f->cond, ow);
    if (auto* es = e.as<SeqNode>(); es && es->stmts.empty()) e = Stmt();
    if (auto* ts = t.as<SeqNode>(); ts && ts->stmts.empty()) {
      if (!e.defined()) return make_seq({});
      return make_if(make_unary(UnOp::Not, f->cond), e);
    }
    return make_if(f->cond, t, e);
  }
  ow.clear();
  return s;
}

// The fused bodies bind the same let vars (the adjoint blocks of one forward block share its
// Var nodes: `let a0 = Z_grad[v]` in one, `let a0 = Z_grad[(v + 1) % 6]` in the next), each
// scoped over its own statements. Flattening moves lets to the front, where a later binding
// of the same Var would capture the earlier statements' uses (a silently wrong gradient):
// every binding after the first of a Var gets a fresh Var in its scope first.
Stmt uniquify_lets(const Stmt& s, std::unordered_set<const VarNode*>& bound) {
  if (auto* l = s.as<LetStmtNode>()) {
    Var v = l->var;
    Stmt body = l->body;
    if (bound.count(v.get())) {
      Var fresh(v.name(), v.dtype());
      body = substitute(body, std::unordered_map<const VarNode*, Expr>{{v.get(), fresh}});
      v = fresh;
    }
    bound.insert(v.get());
    return make_let_stmt(v, l->value, uniquify_lets(body, bound));
  }
  if (auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> out;
    for (auto& x : q->stmts) out.push_back(uniquify_lets(x, bound));
    return make_seq(out);
  }
  if (auto* f = s.as<IfThenElseStmtNode>()) {
    Stmt t = uniquify_lets(f->then_case, bound);
    Stmt e = f->else_case.defined() ? uniquify_lets(f->else_case, bound) : Stmt();
    return make_if(f->cond, t, e);
  }
  return s;
}

}  // namespace

Stmt merge_lets_and_guards(const Stmt& body_in) {
  std::unordered_set<const VarNode*> bound;
  Stmt body = uniquify_lets(body_in, bound);
  std::vector<Item> items;
  flatten(body, &items);
  std::unordered_set<const BufferNode*> written;
  stored_buffers(body, &written);

  // Lets: invariant ones (reading nothing written, using no let that stays in place) go to
  // the front, one per distinct value.
  std::vector<Item> front, rest;
  std::unordered_set<const VarNode*> kept;  // lets left in place
  std::unordered_map<const VarNode*, Expr> repl;
  for (auto& it : items) {
    if (!it.is_let) {
      rest.push_back({false, Var(), Expr(), substitute(it.stmt, repl)});
      continue;
    }
    Expr v = substitute(it.value, repl);
    if (reads_any(v, written) || uses_any(v, kept)) {
      kept.insert(it.var.get());
      rest.push_back({true, it.var, v, Stmt()});
      continue;
    }
    bool dup = false;
    for (auto& f : front)
      if (f.var.dtype() == it.var.dtype() && expr_identical(f.value, v)) {
        repl[it.var.get()] = f.var;
        dup = true;
        break;
      }
    if (!dup) front.push_back({true, it.var, v, Stmt()});
  }

  // Runs of ifs over one invariant condition.
  std::vector<Item> merged;
  for (size_t i = 0; i < rest.size();) {
    auto* f = rest[i].is_let ? nullptr : rest[i].stmt.as<IfThenElseStmtNode>();
    if (!f || reads_any(f->cond, written) || uses_any(f->cond, kept)) {
      merged.push_back(rest[i++]);
      continue;
    }
    Expr c = f->cond;
    std::vector<Stmt> then_s, else_s;
    size_t j = i;
    for (; j < rest.size(); ++j) {
      auto* g = rest[j].is_let ? nullptr : rest[j].stmt.as<IfThenElseStmtNode>();
      if (!g) break;
      if (expr_identical(g->cond, c)) {
        then_s.push_back(g->then_case);
        if (g->else_case.defined()) else_s.push_back(g->else_case);
      } else if (negation_of(g->cond, c)) {
        else_s.push_back(g->then_case);
        if (g->else_case.defined()) then_s.push_back(g->else_case);
      } else {
        break;
      }
    }
    if (j == i + 1) {
      merged.push_back(rest[i++]);
      continue;
    }
    Stmt t = then_s.empty() ? Stmt() : make_seq(then_s);
    Stmt e = else_s.empty() ? Stmt() : make_seq(else_s);
    Stmt s = t.defined() ? make_if(c, t, e) : make_if(make_unary(UnOp::Not, c), e);
    merged.push_back({false, Var(), Expr(), s});
    i = j;
  }

  // Rebuild: lets scope over everything after them.
  std::vector<Item> all = front;
  all.insert(all.end(), merged.begin(), merged.end());
  std::vector<Stmt> tail;
  for (size_t k = all.size(); k-- > 0;) {
    if (all[k].is_let) {
      Stmt inner = make_seq(tail);
      tail.clear();
      tail.push_back(make_let_stmt(all[k].var, all[k].value, inner));
    } else {
      tail.insert(tail.begin(), all[k].stmt);
    }
  }
  Stmt out = make_seq(tail);
  KnownMap known;
  out = forward_constants(out, known);
  Overwritten ow;
  return drop_dead_stores(out, ow);
}

std::vector<Stmt> fuse_pointwise_blocks(const std::vector<Stmt>& stmts_in,
                                        const std::vector<int>& groups_in) {
  // A zero-initialisation emitted ahead (with the others, before the backward scans) whose
  // buffer the first block accessing it could fuse with (the same nest, the point's own
  // element) moves down to just before that block: nothing in between accesses the buffer, so
  // the order is free. It then fuses, and its zero is forwarded into the block's first
  // `A + t` (cumprod_reset's `X_grad[v] = X_grad[v] + a0 * Y[v - 1]` in the else arm of the
  // reset test, after X_grad_init: `X_grad[v] = a0 * Y[v - 1]`, one add less per element).
  std::vector<Stmt> stmts = stmts_in;
  std::vector<int> groups = groups_in;
  // TIRC_AD_NO_INIT_SINK=1 turns it off (to measure).
  const bool sink = !std::getenv("TIRC_AD_NO_INIT_SINK");
  for (size_t k = stmts.size(); sink && k-- > 0;) {
    auto n = match_nest(stmts[k]);
    if (!n || computes(n->b->body)) continue;
    Accesses a = accesses(n->b->body);
    if (a.written.size() != 1) continue;
    const BufferNode* buf = *a.written.begin();
    size_t j = k + 1;
    while (j < stmts.size() && !accesses(stmts[j]).tuples.count(buf)) ++j;
    if (j >= stmts.size() || j == k + 1) continue;
    auto m = match_nest(stmts[j]);
    if (!m || !computes(m->b->body)) continue;
    Run trial;
    trial.head = *n;
    for (auto& iv : n->b->iter_vars) trial.ivs.push_back(iv.var);
    trial.bodies.push_back(n->b->body);
    if (!try_append(trial, *m, stmts[j])) continue;
    Stmt s = stmts[k];
    int g = groups[k];
    stmts.erase(stmts.begin() + k);
    groups.erase(groups.begin() + k);
    stmts.insert(stmts.begin() + (j - 1), s);
    groups.insert(groups.begin() + (j - 1), g);
  }
  std::vector<Stmt> out;
  Run run;
  bool open = false;
  int run_group = -1;
  auto close = [&] {
    // Zero-initialisations alone stay apart (each writes one buffer, as compute_at wants).
    if (open && run_group < 0)
      out.insert(out.end(), run.originals.begin(), run.originals.end());
    else if (open)
      drop_unrelated_inits(run, &out), out.push_back(finish(run));
    open = false;
  };
  for (size_t k = 0; k < stmts.size(); ++k) {
    const Stmt& s = stmts[k];
    auto n = match_nest(s);
    if (!n) {
      close();
      out.push_back(s);
      continue;
    }
    bool init = !computes(n->b->body);
    int g = init ? -1 : groups[k];
    if (open && (init || (g >= 0 && (run_group < 0 || run_group == g))) && try_append(run, *n, s)) {
      if (g >= 0) run_group = g;
      continue;
    }
    close();
    run = Run();
    run.head = *n;
    for (auto& iv : n->b->iter_vars) run.ivs.push_back(iv.var);
    run.bodies.push_back(n->b->body);
    run.names.push_back(n->b->name);
    run.originals = {s};
    run_group = g;
    open = true;
  }
  close();
  return out;
}

}  // namespace tirc::ad

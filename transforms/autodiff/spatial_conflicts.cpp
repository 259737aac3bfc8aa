#include "transforms/autodiff/spatial_conflicts.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/redundant.h"

namespace tirc::ad {

namespace {

using BufSet = std::unordered_set<const BufferNode*>;
using Lets = std::unordered_map<const VarNode*, Expr>;

bool float_reads(const Expr& e) {
  bool r = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>()) r = r || is_float(l->buffer->dtype);
  });
  return r;
}

// Buffers stored by the statements of a body (loops and nested blocks not entered, as below).
void stored(const Stmt& s, const BufSet& local, BufSet* out) {
  if (!s.defined()) return;
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) stored(x, local, out);
  } else if (auto* i = s.as<IfThenElseStmtNode>()) {
    stored(i->then_case, local, out);
    stored(i->else_case, local, out);
  } else if (auto* l = s.as<LetStmtNode>()) {
    stored(l->body, local, out);
  } else if (auto* st = s.as<StoreNode>()) {
    if (!local.count(st->buffer.get())) out->insert(st->buffer.get());
  }
}

struct Walker {
  const BufSet* written;
  bool in_init = false;
  std::vector<BlockAccess>* out;

  // Loads in e, in evaluation order, with the guards of the if_then_else arms around them.
  void loads(const Expr& e, std::vector<Expr>& conds, Lets& lets) {
    if (!e.defined()) return;
    if (auto* l = e.as<LoadNode>()) {
      for (auto& i : l->indices) loads(i, conds, lets);
      if (written->count(l->buffer.get())) {
        BlockAccess a{l->buffer.get(), {}, conds, false, in_init, false};
        for (auto& i : l->indices) a.index.push_back(substitute(i, lets));
        out->push_back(std::move(a));
      }
    } else if (auto* s = as_select_like(e)) {
      loads(s->cond, conds, lets);
      if (e.kind() == ExprKind::IfThenElse) {
        Expr c = substitute(s->cond, lets);
        conds.push_back(c);
        loads(s->t, conds, lets);
        conds.back() = make_unary(UnOp::Not, c);
        loads(s->f, conds, lets);
        conds.pop_back();
      } else {
        loads(s->t, conds, lets);
        loads(s->f, conds, lets);
      }
    } else if (auto* b = e.as<BinaryNode>()) {
      loads(b->a, conds, lets);
      loads(b->b, conds, lets);
    } else if (auto* u = e.as<UnaryNode>()) {
      loads(u->a, conds, lets);
    } else if (auto* c = e.as<CastNode>()) {
      loads(c->value, conds, lets);
    } else if (auto* c = e.as<CallNode>()) {
      for (auto& a : c->args) loads(a, conds, lets);
    } else if (auto* l = e.as<LetNode>()) {
      loads(l->value, conds, lets);
      Lets inner = lets;
      inner[l->var.get()] = substitute(l->value, lets);
      loads(l->body, conds, inner);
    } else if (auto* p = e.as<BufferPtrNode>()) {
      for (auto& i : p->indices) loads(i, conds, lets);
    }
  }

  void stmt(const Stmt& s, std::vector<Expr>& conds, Lets& lets) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts) stmt(x, conds, lets);
    } else if (auto* i = s.as<IfThenElseStmtNode>()) {
      loads(i->cond, conds, lets);
      Expr c = substitute(i->cond, lets);
      conds.push_back(c);
      stmt(i->then_case, conds, lets);
      conds.back() = make_unary(UnOp::Not, c);
      stmt(i->else_case, conds, lets);
      conds.pop_back();
    } else if (auto* l = s.as<LetStmtNode>()) {
      loads(l->value, conds, lets);
      Lets inner = lets;
      inner[l->var.get()] = substitute(l->value, lets);
      stmt(l->body, conds, inner);
    } else if (auto* st = s.as<StoreNode>()) {
      // The value and indices are read before the element is written.
      for (auto& i : st->indices) loads(i, conds, lets);
      loads(st->value, conds, lets);
      if (written->count(st->buffer.get())) {
        BlockAccess a{st->buffer.get(),
                      {},
                      conds,
                      true,
                      in_init,
                      is_float(st->buffer->dtype) && float_reads(st->value)};
        for (auto& i : st->indices) a.index.push_back(substitute(i, lets));
        out->push_back(std::move(a));
      }
    }
    // Loops and nested blocks: not entered (normalisation rewrites them later).
  }
};

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vs) {
  bool r = false;
  for_each_expr(e, [&](const Expr& x) { r = r || (x.as<VarNode>() && vs.count(x.as<VarNode>())); });
  return r;
}

}  // namespace

std::vector<BlockAccess> written_buffer_accesses(const BlockNode& blk) {
  BufSet local, written;
  for (auto& a : blk.allocs) local.insert(a.get());
  stored(blk.body, local, &written);
  stored(blk.init, local, &written);
  std::vector<BlockAccess> out;
  Walker w{&written, false, &out};
  std::vector<Expr> conds;
  Lets lets;
  w.in_init = true;
  w.stmt(blk.init, conds, lets);
  w.in_init = false;
  w.stmt(blk.body, conds, lets);
  return out;
}

bool reads_only_own_elements(const BlockNode& blk, const std::vector<BlockAccess>& acc) {
  std::unordered_set<const VarNode*> scan;
  for (auto& iv : blk.iter_vars)
    if (iv.kind == IterKind::Scan) scan.insert(iv.var.get());
  for (auto& r : acc) {
    if (r.write) continue;
    for (auto& w : acc) {
      if (!w.write || w.buffer != r.buffer) continue;
      if (w.index.size() != r.index.size()) return false;
      for (size_t d = 0; d < w.index.size(); ++d)
        if (!expr_identical(w.index[d], r.index[d]) && !(!scan.empty() && uses_any(w.index[d], scan)))
          return false;
    }
  }
  return true;
}

std::vector<const VarNode*> access_scalars(const BlockNode& blk, const std::vector<BlockAccess>& acc) {
  // Vars outside loads (an index under a load is data-dependent: skipped, not enumerable),
  // neither iter vars nor bound by an expression-level let.
  struct V : IRVisitor {
    std::unordered_set<const VarNode*> bound, found;
    void visit_var(const VarNode* n) override {
      if (!bound.count(n)) found.insert(n);
    }
    void visit_load(const LoadNode*) override {}
    void visit_let(const LetNode* n) override {
      bound.insert(n->var.get());
      IRVisitor::visit_let(n);
    }
  } v;
  for (auto& iv : blk.iter_vars) v.bound.insert(iv.var.get());
  for (auto& a : acc) {
    for (auto& e : a.index) v.visit(e);
    for (auto& e : a.conds) v.visit(e);
  }
  std::vector<const VarNode*> out(v.found.begin(), v.found.end());
  std::sort(out.begin(), out.end(), [](const VarNode* x, const VarNode* y) { return x->name < y->name; });
  return out;
}

SpatialConflicts::SpatialConflicts(const BlockNode& blk, std::vector<BlockAccess> acc,
                                   std::vector<size_t> ordering)
    : blk_(blk), acc_(std::move(acc)), skipped_(acc_.size(), false), ordering_(std::move(ordering)) {
  const bool given = !ordering_.empty();
  for (size_t q = 0; q < blk.iter_vars.size(); ++q) {
    IterKind k = blk.iter_vars[q].kind;
    if (k == IterKind::Spatial) spatial_.push_back(q);
    // Opaque vars order their iterations as scan vars do (the interpreter runs them in loop
    // order): without them a recurrence written with an opaque var (rewrite 8 reads it as a
    // scan) was refused as a conflict between its spatial points.
    if ((k == IterKind::Scan || k == IterKind::Opaque) && !given) ordering_.push_back(q);
    if (k == IterKind::Scan) scan_ = true;
    if (k == IterKind::Reduce) reduce_.push_back(q);
  }
}

std::string SpatialConflicts::show(const std::vector<int64_t>& inst) const {
  std::string t;
  for (size_t i = 0; i < inst.size() && i < blk_.iter_vars.size(); ++i)
    t += (i ? ", " : "") + blk_.iter_vars[i].var.name() + " = " + std::to_string(inst[i]);
  return "(" + t + ")";
}

bool SpatialConflicts::shared_scratch(const BufferNode* b) const {
  std::unordered_set<const VarNode*> sp;
  for (size_t q : spatial_) sp.insert(blk_.iter_vars[q].var.get());
  for (auto& a : acc_) {
    if (!a.write || a.buffer != b) continue;
    bool uses = false;
    for (auto& e : a.index) uses = uses || uses_any(e, sp);
    if (!uses) return true;
  }
  return false;
}

std::string SpatialConflicts::visit(const std::vector<int64_t>& inst, const Lets& iv_at) {
  if (spatial_.empty()) return "";
  std::vector<int64_t> sp;
  for (size_t q : spatial_) sp.push_back(inst[q]);
  // Steps are compared lexicographically over the ordering vars (several scan vars are
  // refused later, with their own reason).
  std::vector<int64_t> step;
  for (size_t q : ordering_) step.push_back(inst[q]);
  bool first_reduce = true;
  for (size_t q : reduce_) first_reduce = first_reduce && inst[q] == 0;
  for (size_t k = 0; k < acc_.size(); ++k) {
    const BlockAccess& a = acc_[k];
    if (a.in_init && !first_reduce) continue;
    bool on = true;
    for (auto& c : a.conds) {
      auto v = eval_at(c, iv_at);
      if (!v) {
        on = false;  // data-dependent guard: not checked
        skipped_[k] = true;
        break;
      }
      on = on && *v != 0;
    }
    if (!on) continue;
    std::vector<int64_t> el;
    for (auto& e : a.index) {
      auto v = eval_at(e, iv_at);
      if (!v) break;
      el.push_back(*v);
    }
    if (el.size() != a.index.size()) {
      skipped_[k] = true;
      continue;
    }
    Entry& en = seen_[{a.buffer, el}];
    // An earlier access (in nest order) by another spatial point conflicts unless it ran at a
    // strictly earlier step (for blocks without scan or opaque var: always).
    auto clash = [&](const std::map<std::vector<int64_t>, Seen>& m) -> const Seen* {
      for (auto& [p, s] : m)
        if (p != sp && !(s.max_step < step)) return &s;
      return nullptr;
    };
    const Seen* other = nullptr;
    bool other_writes = true;
    if (a.write) {
      other = clash(en.reads);
      other_writes = false;
      if (!other && scan_ && a.carries) {
        other = clash(en.writes);
        other_writes = true;
      }
    } else {
      other = clash(en.writes);
    }
    if (other) {
      std::string elem;
      for (size_t k = 0; k < el.size(); ++k) elem += (k ? ", " : "") + std::to_string(el[k]);
      const std::string e = a.buffer->name + "[" + elem + "]";
      const std::string first = show(other->inst), second = show(inst);
      std::string why = "its spatial iterations " + first + " and " + second + " conflict on " + e + ": " +
                        first + (other_writes ? " writes" : " reads") + " it and " + second +
                        (a.write ? " writes" : " reads") +
                        " it, so the result depends on the order of "
                        "the spatial iterations";
      const std::string rule =
          "; LANGUAGE.md requires the spatial iterations of a block to be independent (a block whose "
          "spatial iterations conflict is invalid): ";
      // A scratch every spatial point writes at one element (`T[0] = ..; H[..] = T[0] * ..`):
      // neither a copy nor another loop order helps, each iteration needs its own.
      // (A block-local alloc in a scan block is refused by the scan machinery: not advised there.)
      if (shared_scratch(a.buffer))
        return why + rule + "give each iteration its own scratch (a `let`, " +
               (scan_ ? "or index " + a.buffer->name + " by every spatial iter var and the scan var)"
                      : "a block-local alloc, or index " + a.buffer->name + " by every spatial iter var)");
      if (!ordering_.empty()) {
        std::vector<int64_t> s0;
        for (size_t q : ordering_) s0.push_back(other->inst[q]);
        why += s0 == step ? (scan_ ? " (at one step of the scan)" : " (at one step of its opaque iter vars)")
                          : std::string(" (the loop nest runs the later step's iteration first: run the ") +
                                (scan_ ? "scan loop" : "loops of the opaque vars") +
                                " outside the loops of the spatial vars)";
      }
      return why + rule + "read the old values from a copy of " + a.buffer->name +
             ", or make the var a scan var for a recurrence";
    }
    auto& m = a.write ? en.writes : en.reads;
    auto [it, fresh] = m.emplace(sp, Seen{step, inst});
    if (!fresh && it->second.max_step < step) it->second = Seen{step, inst};
  }
  return "";
}

}  // namespace tirc::ad

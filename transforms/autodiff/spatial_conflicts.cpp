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

SpatialConflicts::SpatialConflicts(const BlockNode& blk, std::vector<BlockAccess> acc)
    : blk_(blk), acc_(std::move(acc)) {
  for (size_t q = 0; q < blk.iter_vars.size(); ++q) {
    IterKind k = blk.iter_vars[q].kind;
    if (k == IterKind::Spatial) spatial_.push_back(q);
    if (k == IterKind::Scan) scan_vars_.push_back(q);
    if (k == IterKind::Reduce) reduce_.push_back(q);
  }
  scan_ = !scan_vars_.empty();
}

std::string SpatialConflicts::show(const std::vector<int64_t>& inst) const {
  std::string t;
  for (size_t i = 0; i < inst.size() && i < blk_.iter_vars.size(); ++i)
    t += (i ? ", " : "") + blk_.iter_vars[i].var.name() + " = " + std::to_string(inst[i]);
  return "(" + t + ")";
}

std::string SpatialConflicts::visit(const std::vector<int64_t>& inst, const Lets& iv_at) {
  if (spatial_.empty()) return "";
  std::vector<int64_t> sp;
  for (size_t q : spatial_) sp.push_back(inst[q]);
  // Steps are compared lexicographically over the scan vars (several are refused later).
  int64_t step = 0;
  for (size_t q : scan_vars_) step = inst[q];
  bool first_reduce = true;
  for (size_t q : reduce_) first_reduce = first_reduce && inst[q] == 0;
  for (auto& a : acc_) {
    if (a.in_init && !first_reduce) continue;
    bool on = true;
    for (auto& c : a.conds) {
      auto v = eval_at(c, iv_at);
      if (!v) {
        on = false;  // data-dependent guard: not checked
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
    if (el.size() != a.index.size()) continue;
    Entry& en = seen_[{a.buffer, el}];
    // An earlier access (in nest order) by another spatial point conflicts unless it ran at a
    // strictly earlier step of the scan (for blocks without scan var: always).
    auto clash = [&](const std::map<std::vector<int64_t>, Seen>& m) -> const Seen* {
      for (auto& [p, s] : m)
        if (p != sp && s.max_scan >= step) return &s;
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
      if (scan_) {
        int64_t s0 = 0;
        for (size_t q : scan_vars_) s0 = other->inst[q];
        why += s0 == step
                   ? " (at one step of the scan)"
                   : " (the loop nest runs the later step's iteration first: run the scan loop outside "
                     "the loops of the spatial vars)";
      }
      return why +
             "; LANGUAGE.md requires the spatial iterations of a block to be independent (a block whose "
             "spatial iterations conflict is invalid): read the old values from a copy of " +
             a.buffer->name + ", or make the var a scan var for a recurrence";
    }
    auto& m = a.write ? en.writes : en.reads;
    auto [it, fresh] = m.emplace(sp, Seen{step, inst});
    if (!fresh && step > it->second.max_scan) it->second = Seen{step, inst};
  }
  return "";
}

}  // namespace tirc::ad

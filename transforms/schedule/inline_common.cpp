#include "transforms/schedule/inline_common.h"

namespace tirc::sched {

const StoreNode* single_store(const BlockNode& b) {
  auto* s = b.body.as<StoreNode>();
  if (!s) refuse("the body of block " + b.name + " is not a single store");
  return s;
}

Stmt flat_store(const BlockNode& b) {
  std::vector<const LetStmtNode*> lets;
  Stmt cur = b.body;
  while (auto* l = cur.as<LetStmtNode>()) {
    lets.push_back(l);
    cur = l->body;
  }
  auto* s = cur.as<StoreNode>();
  if (!s) refuse("the body of block " + b.name + " is not a single store");
  if (lets.empty()) return cur;
  // Indices: let names replaced by their values (innermost first, values may use earlier lets).
  std::vector<Expr> idx = s->indices;
  for (size_t k = lets.size(); k-- > 0;) {
    std::unordered_map<const VarNode*, Expr> sub{{lets[k]->var.get(), lets[k]->value}};
    for (auto& e : idx) e = substitute(e, sub);
  }
  Expr value = s->value;
  for (size_t k = lets.size(); k-- > 0;) value = make_let(lets[k]->var, lets[k]->value, value);
  return make_store(s->buffer, idx, value);
}

Expr rename_lets(const ScheduleState& st, const Expr& e, std::set<std::string>* used) {
  auto* l = e.as<LetNode>();
  if (!l) return e;
  std::string n = fresh_var_name(st, l->var.name());
  for (int k = 1; used->count(n); ++k) n = fresh_var_name(st, l->var.name() + "_" + std::to_string(k));
  used->insert(n);
  Var nv(n, l->var.dtype());
  Expr body = substitute(l->body, std::unordered_map<const VarNode*, Expr>{{l->var.get(), nv}});
  return make_let(nv, l->value, rename_lets(st, body, used));
}

std::vector<int> index_vars(const BlockNode& b, const std::vector<Expr>& idx, const std::string& what) {
  std::vector<int> out;
  for (auto& e : idx) {
    auto* v = e.as<VarNode>();
    int found = -1;
    for (size_t i = 0; v && i < b.iter_vars.size(); ++i)
      if (b.iter_vars[i].var.get() == v) found = static_cast<int>(i);
    if (found < 0) refuse("the indices of " + what + " in block " + b.name + " are not distinct iter vars");
    for (int o : out)
      if (o == found)
        refuse("the indices of " + what + " in block " + b.name + " are not distinct iter vars");
    out.push_back(found);
  }
  return out;
}

void check_inputs_stable(const ScheduleState& st, const BlockNode& b, const Stmt& from, const Stmt& to) {
  auto order = blocks_in_order(st);
  int lo = std::min(block_index(order, from), block_index(order, to));
  int hi = std::max(block_index(order, from), block_index(order, to));
  Stmt item_from = top_item(st, from.get()), item_to = top_item(st, to.get());
  for (auto& buf : read_buffers(b)) {
    for (auto& w : writers_of(st, buf, &b)) {
      if (w.same_as(from) || w.same_as(to)) continue;
      int i = block_index(order, w);
      Stmt item = top_item(st, w.get());
      bool between = (i > lo && i < hi) || item.same_as(item_from) || item.same_as(item_to);
      if (between)
        refuse("block " + block_of(w)->name + " writes buffer " + buf->name + ", which block " + b.name +
               " reads, between the two positions");
    }
  }
}

const BufferNode* predicate_loads_any(const BlockRealizeNode& r, const std::vector<Buffer>& bufs) {
  const BufferNode* hit = nullptr;
  if (!r.predicate.defined()) return nullptr;
  for_each_expr(r.predicate, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && !hit)
      for (auto& b : bufs)
        if (l->buffer.same_as(b)) hit = b.get();
  });
  return hit;
}

}  // namespace tirc::sched

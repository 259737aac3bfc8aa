#include "transforms/schedule/cache_common.h"

#include "ir/printer.h"

namespace tirc::sched {

std::string cache_scope(const ScheduleInstr& ins, size_t i) {
  std::string s = arg_string(ins, i, "the storage scope");
  if (s != "global" && s != "shared" && s != "local")
    refuse("unknown storage scope \"" + s + "\" (expected global, shared or local)");
  return s;
}

int root_position(const ScheduleState& st, const Stmt& item) {
  auto items = seq_items(block_of(st.body())->body);
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].same_as(item)) return static_cast<int>(i);
  return -1;
}

void insert_root_item(ScheduleState& st, size_t pos, const Stmt& s) {
  Stmt rb = block_of(st.body())->body;
  auto items = seq_items(rb);
  if (pos > items.size()) refuse("internal: insertion point out of range");
  items.insert(items.begin() + static_cast<long>(pos), s);
  st.set_body(update_realize(st.body(), [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.body = make_seq(items); });
  }));
}

Expr non_guard_conjunct(const BlockRealizeNode& r) {
  if (!r.predicate.defined()) return Expr();
  for (auto& cj : conjuncts(fold(r.predicate))) {
    auto* lt = cj.as<BinaryNode>();
    bool guard = false;
    for (size_t i = 0; lt && lt->op == BinOp::LT && i < r.bindings.size() && !guard; ++i) {
      const Expr& ext = r.block->iter_vars[i].extent;
      Expr bf = fold(r.bindings[i]);  // kept alive: dv points into it
      guard = prove_eq(lt->a, bf) && prove_eq(lt->b, fold(ext));
      auto* dv = bf.as<BinaryNode>();
      if (!guard && dv && dv->op == BinOp::FloorDiv)
        guard = prove_eq(lt->a, dv->a) && prove_eq(lt->b, fold(dv->b * ext));
    }
    if (!guard) return cj;
  }
  return Expr();
}

void check_writers_cover(const ScheduleState& st, const Buffer& A, const std::string& what) {
  if (st.is_param(A)) return;
  // Refused when every writer skips points: a writer without such a condition (decompose_padding's
  // constant fill beside its in-bounds copy `where h >= 1 && ...`) is taken to write the buffer.
  Stmt first;
  Expr cond;
  for (auto& w : writers_of(st, A)) {
    Expr c = non_guard_conjunct(*realize(w));
    if (!c.defined()) return;
    if (!first.defined()) {
      first = w;
      cond = c;
    }
  }
  if (first.defined())
    refuse("block " + block_of(first)->name + " writes buffer " + A->name + " under the condition " +
           print_expr(cond) + ", and " + what + " would read the elements it skips");
}

}  // namespace tirc::sched

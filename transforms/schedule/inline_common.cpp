#include "transforms/schedule/inline_common.h"

namespace tirc::sched {

const StoreNode* single_store(const BlockNode& b) {
  auto* s = b.body.as<StoreNode>();
  if (!s) refuse("the body of block " + b.name + " is not a single store");
  return s;
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
      if (o == found) refuse("the indices of " + what + " in block " + b.name + " are not distinct iter vars");
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

}  // namespace tirc::sched

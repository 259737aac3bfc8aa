#include "transforms/schedule/cache_common.h"

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

}  // namespace tirc::sched

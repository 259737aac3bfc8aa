// get_producers, get_consumers (TVM Schedule.get_producers / get_consumers): the blocks of the
// same scope (the nearest enclosing block) that write a buffer the block reads / read a buffer
// the block writes, in program order. Queries only: the function is unchanged. They return a
// list (`ps = get_producers(b)`, `get_consumers(b)[0]`, or one name per block).
#include "transforms/schedule/prims.h"

namespace tirc::sched {

std::vector<Stmt> producers_or_consumers(ScheduleState& st, const ScheduleInstr& ins, bool producers) {
  expect_args(ins, 1, 1);
  Stmt b = arg_block(st, ins, 0);
  const BlockNode* self = block_of(b);
  Stmt scope = st.scope_of(b.get());
  std::vector<Stmt> out;
  if (!scope.defined()) return out;
  for (auto& c : children(scope))
    for (auto& o : collect_blocks(c, false)) {
      if (o.same_as(b)) continue;
      const BlockNode* other = block_of(o);
      bool linked = false;
      for (auto& buf : producers ? read_buffers(*self) : written_buffers(*self))
        linked = linked || (producers ? block_writes(*other, buf) : block_reads(*other, buf));
      if (linked) out.push_back(o);
    }
  return out;
}

static void bind_all(ScheduleState& st, const ScheduleInstr& ins, const std::vector<Stmt>& blocks,
                     const char* what) {
  if (ins.results.size() != blocks.size() && !ins.results.empty())
    refuse("block " + arg_handle(st, ins, 0).block + " has " + std::to_string(blocks.size()) + " " + what +
           (blocks.size() == 1 ? "" : "s") + ", but " + std::to_string(ins.results.size()) + " name" +
           (ins.results.size() == 1 ? " is" : "s are") + " bound");
  for (size_t i = 0; i < blocks.size(); ++i) bind_block(st, ins, i, block_of(blocks[i])->name);
}

void prim_get_producers(ScheduleState& st, const ScheduleInstr& ins) {
  bind_all(st, ins, producers_or_consumers(st, ins, true), "producer");
}

void prim_get_consumers(ScheduleState& st, const ScheduleInstr& ins) {
  bind_all(st, ins, producers_or_consumers(st, ins, false), "consumer");
}

}  // namespace tirc::sched

// set_axis_separator(block, buffer, axis_separators): TVM Schedule.set_axis_separator. In TVM
// the separators make a buffer flatten to an N-d physical buffer (texture memory, Hexagon
// VTCM); on the flat memory of tirc's CPU / NVPTX targets every buffer is 1-D after
// flattening, so this is accepted as a no-op after checking its arguments: the buffer
// (("read", k), ("write", k) or a name, as transform_layout takes it) and the separators, a
// list of strictly increasing axes in [1, ndim - 1] (TVM's valid positions). Nothing is
// recorded: no backend would read it, and what is computed never depends on it.
#include "transforms/schedule/index_map.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_set_axis_separator(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 3);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  Buffer buf = block_buffer_arg(*block_of(bs), ins.args[1]);
  const ScheduleArg& l = ins.args[2];
  if (l.kind != ScheduleArg::List) refuse("the axis separators are a list of axes, e.g. [1]");
  int64_t prev = 0;
  for (auto& a : l.list) {
    if (a.kind != ScheduleArg::Int) refuse("the axis separators are a list of integers");
    if (a.int_value <= prev || a.int_value >= static_cast<int64_t>(buf->ndim()))
      refuse("axis separator " + std::to_string(a.int_value) + " is not in increasing order inside [1, " +
             std::to_string(buf->ndim() - 1) + "] for buffer " + buf->name);
    prev = a.int_value;
  }
}

}  // namespace tirc::sched

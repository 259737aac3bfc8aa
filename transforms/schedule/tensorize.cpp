// tensorize(loop_or_block, "INTRIN"): accepted syntactically, refused for now (matching a
// subtree against an intrinsic's desc up to renaming is not implemented yet).
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_tensorize(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  arg_handle(st, ins, 0);
  arg_string(ins, 1, "the intrinsic name");
  refuse("not supported yet");
}

}  // namespace tirc::sched

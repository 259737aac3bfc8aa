// enter_postproc(): the marker MetaSchedule prints in a trace between the sampled schedule
// and its postprocessors (`sch.enter_postproc()`); it changes nothing, so a pasted trace
// applies as written.
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_enter_postproc(ScheduleState&, const ScheduleInstr& ins) {
  expect_args(ins, 0, 0);
  expect_results(ins, 0);
}

}  // namespace tirc::sched

// Primitives not implemented yet: refused clearly.
#include "transforms/schedule/prims.h"

namespace tirc::sched {
void prim_compute_at(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_reverse_compute_at(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_cache_read(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_cache_write(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_decompose_reduction(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_rfactor(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
void prim_blockize(ScheduleState&, const ScheduleInstr&) { refuse("not supported yet"); }
}  // namespace tirc::sched

// Shared pieces of cache_read / cache_write.
#pragma once

#include "transforms/schedule/util.h"

namespace tirc::sched {

// Validates the storage scope argument ("global", "shared", "local").
std::string cache_scope(const ScheduleInstr& ins, size_t i);
// Position of a root-level item in the root body; -1 when absent.
int root_position(const ScheduleState& st, const Stmt& item);
// Inserts `s` into the root body at position pos (0 = first).
void insert_root_item(ScheduleState& st, size_t pos, const Stmt& s);

}  // namespace tirc::sched

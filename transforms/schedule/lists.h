// List variables in schedules (TVM's Python lists of block / loop handles):
//   loops = get_loops(b)            a name bound to several handles (also split, get_child_blocks)
//   i, j, k = loops                 unpacking (an instruction without a call)
//   l = loops[-1]; ls = loops[1:]   indexing and slicing (Python semantics, negative indices,
//                                   slices with optional bounds and step)
//   reorder(*loops), fuse(*loops[:2]), parallel(loops[0]), compute_at(b, loop=parts[1])
// A single handle counts as a list of one where a list is expected (`*h`, `h[0]`), and a list
// of one as its handle where one handle is expected (`l = get_loops(b)` on a one-loop nest).
// Errors (Refusal): unknown names, an index out of range, an unpacking count mismatch, a list
// of several handles where one is expected.
#pragma once

#include <string>
#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// `i, j = loops` / `l = loops[0]` / `ls = loops[1:]` (ins.primitive empty, args[0] the value):
// binds the results.
void assign_list_value(ScheduleState& st, const ScheduleInstr& ins);

// The instruction with every list-valued argument replaced by plain handle names: `x[k]` and
// one-handle lists become temporary handles in st.handles (names listed in *temps, for the
// caller to erase), `*x` becomes one argument per item, and a list where the primitive takes
// loops as varargs (reorder, fuse) becomes a List argument of its items.
ScheduleInstr resolve_list_args(ScheduleState& st, const ScheduleInstr& ins, std::vector<std::string>* temps);

// Binds the handles named `hidden` (bound by a primitive run with those result names) as the
// list `name`, and erases the hidden names.
void bind_list(ScheduleState& st, const std::string& name, const std::vector<std::string>& hidden);

// A script-like text of an argument, for messages (`loops[1:]`, `*loops`).
std::string list_arg_text(const ScheduleArg& a);

}  // namespace tirc::sched

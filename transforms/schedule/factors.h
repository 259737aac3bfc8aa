// The factor list shared by split and loop_partition: `prim(loop, [f0, f1, ...])` or
// `prim(loop, factors=[...])`, positive integers with at most one inferred factor (`_`, or
// TVM's `None`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// The deepest loop nest split may make (split.cpp).
constexpr size_t kMaxSplitNestDepth = 1024;

// The list argument; refuses a wrong argument count (call it before resolving the loop, so
// that a count error comes first).
const ScheduleArg& factor_list_arg(const ScheduleInstr& ins);

struct FactorList {
  std::vector<int64_t> values;  // values[wild] is 0
  int wild = -1;                // index of the inferred factor, -1 if none
};

// Refuses a non-list, fewer than 2 factors, a non-positive or non-integer factor, and two
// inferred ones; `example` is shown in the non-list message (e.g. "[_, 8]").
FactorList parse_factors(const ScheduleArg& list, const std::string& example);

// The loop vars of the n pieces of `loop`: named by the instruction's results (`_` or a
// missing one: LOOPVAR_k), unique in the function, of the loop var's dtype.
std::vector<Var> piece_vars(const ScheduleState& st, const ScheduleInstr& ins, const ForNode& loop, size_t n);

}  // namespace tirc::sched

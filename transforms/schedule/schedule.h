// Applying `schedule` items (LANGUAGE.md, "Schedules"): TVM tir.Schedule primitives over
// the .tir IR. Each primitive checks its own legality; a refused instruction raises
// SourceError "FILE:LINE:COL: error: <primitive>: <reason>" at the instruction and the
// function is returned unchanged (nothing of the item is applied).
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace tirc {

// Applies the instructions of `item` to f, in order. Throws SourceError on the first refused
// instruction (position of that instruction).
// `intrins` are the module's tensor intrinsics (used by tensorize).
Function apply_schedule(const FunctionNode& f, const ScheduleItem& item,
                        const std::vector<IntrinItem>& intrins = {});

// Applies every schedule item of m in order to its function (only items of `only_func`
// when it is not empty) and returns the module with the scheduled functions. Applied
// schedule items are consumed: they are removed from the module (printing them again would
// make a second `tirc schedule` apply them twice).
Module apply_module_schedules(const Module& m, const std::string& only_func = "");

// Names of the primitives understood by apply_schedule.
std::vector<std::string> schedule_primitive_names();

}  // namespace tirc

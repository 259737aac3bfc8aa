// Test helpers shared by the schedule outsider suites: apply a script's schedule and compare
// with the unscheduled function, or get the message of the instruction it refuses.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc::testing {

// Applies the module's single schedule item and checks the result against the unscheduled
// function in the interpreter (seeds 1..5: symbolic sizes are drawn from their ranges);
// returns the scheduled function's text.
inline std::string apply_and_compare(const std::string& text) {
  Module m = parse_module(text, "t.tir");
  EXPECT_EQ(m.schedules.size(), 1u);
  Function f = m.find_func(m.schedules[0].func);
  Function g = apply_schedule(*f, m.schedules[0], m.intrins);
  EXPECT_FALSE(structural_equal(*f, *g));
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*f, *g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail << "\n" << print_function(*g);
  }
  return print_function(*g);
}

// The message of the refused instruction (after "FILE:LINE:COL: error: ").
inline std::string schedule_refusal(const std::string& text) {
  Module m = parse_module(text, "t.tir");
  try {
    apply_module_schedules(m);
  } catch (const SourceError& e) {
    return e.message();
  }
  return "(not refused)";
}

}  // namespace tirc::testing

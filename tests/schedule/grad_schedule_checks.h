// Test helpers for schedules written on a derived gradient: the module's forward function is
// differentiated (`tirc grad`), then its single schedule item (of `<fwd>_grad`) is applied.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "schedule_checks.h"
#include "tests/schedule/tvm_style_files.h"
#include "transforms/autodiff/gradient.h"

namespace tirc::testing {

// Derives `<fwd>_grad`, applies the module's schedule of it and compares with the unscheduled
// F_grad; returns the scheduled function's text.
inline std::string grad_schedule_matches(const std::string& text, const std::string& fwd) {
  Module m = parse_module(text, "t.tir");
  m.add_func(gradient(*m.find_func(fwd), {}));
  EXPECT_EQ(m.schedules.size(), 1u);
  Function f = m.find_func(m.schedules[0].func);
  EXPECT_TRUE(f) << m.schedules[0].func;
  if (!f) return "";
  Function g = apply_schedule(*f, m.schedules[0], m.intrins);
  expect_scheduled_matches(*f, *g);
  return print_function(*g);
}

// The message of the refused instruction of the gradient's schedule, or "(not refused)".
inline std::string grad_schedule_refusal(const std::string& text, const std::string& fwd) {
  Module m = parse_module(text, "t.tir");
  m.add_func(gradient(*m.find_func(fwd), {}));
  try {
    apply_module_schedules(m);
  } catch (const SourceError& e) {
    return e.message();
  }
  return "(not refused)";
}

}  // namespace tirc::testing

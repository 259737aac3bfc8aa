// Test helper shared by the autodiff suites: one function of a .tir text.
#pragma once

#include <string>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc::testing {

// Parses `src` (named NAME.tir in messages) and returns its function `name`; throws
// tirc::Error when the text has no such function.
inline Function parse_one(const std::string& src, const std::string& name) {
  Module m = parse_module(src, name + ".tir");
  Function f = m.find_func(name);
  if (!f) throw Error("no function " + name);
  return f;
}

}  // namespace tirc::testing

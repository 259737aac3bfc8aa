// Test helper of the parser suites: parse a module and report how it went.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {

// Parses src (as "t.tir"); returns "" on success or the SourceError message. Any other
// exception fails the test: bad input must always be a positioned error.
inline std::string outcome(const std::string& src) {
  try {
    parse_module(src, "t.tir");
    return "";
  } catch (const SourceError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-SourceError exception: " << e.what();
    return "?";
  }
}

}  // namespace tirc

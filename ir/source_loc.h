// A position in a .tir script, for diagnostics (parser errors, schedule instructions, and
// the interpreter's run-time errors, which point at the block or store being run).
#pragma once

#include <string>

namespace tirc {

// Source position (1-based line and column); line == 0 means unknown (IR built in code).
struct SourceLoc {
  std::string file;
  int line = 0, col = 0;
  bool known() const { return line > 0; }
};

}  // namespace tirc

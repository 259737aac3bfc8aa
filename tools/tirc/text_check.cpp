// The canonical text a subcommand prints must read back (CLI.md: parse(print(m)) equals m). The
// printer refuses text whose brackets nest deeper than the parser reads; expressions have their
// own limit (docs/language.md, Limits), which only the parser's grammar measures exactly, so a
// function whose text has a line long enough to reach it is read back here.
#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"

namespace tirc::cli {

namespace {

// An expression nests one parser level per token at most, so a line of at most this many
// non-blank characters cannot exceed the expression limit (256 levels).
constexpr size_t kShortLine = 256;

bool has_long_line(const std::string& text) {
  size_t n = 0;
  for (char c : text) {
    if (c == '\n') {
      n = 0;
    } else if (c != ' ' && ++n > kShortLine) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string unreadable_text_reason(const FunctionNode& f) {
  int depth = function_text_depth(f);
  if (depth > kMaxTextNesting)
    return "its text would nest " + std::to_string(depth) +
           " levels deep (loops, blocks and brackets), more than the " + std::to_string(kMaxTextNesting) +
           " levels the parser reads";
  std::string text = print_function(f);
  if (!has_long_line(text)) return "";
  try {
    parse_module(text, "<text>");
  } catch (const SourceError& e) {
    const std::string& msg = e.message();
    // Only the parser's limits count here; any other error would be a printer bug, outside
    // this check (the text is printed as before).
    if (msg.find("too deep") != std::string::npos || msg.find("too many") != std::string::npos)
      return "its text would not read back (" + msg + ")";
  }
  return "";
}

std::string print_module_checked(const Module& m) {
  for (auto& f : m.funcs) {
    std::string why = unreadable_text_reason(*f);
    if (!why.empty()) throw Error("cannot print function " + f->name + ": " + why);
  }
  return print_module(m);
}

}  // namespace tirc::cli

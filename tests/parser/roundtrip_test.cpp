// parse -> print -> parse gives a structurally equal module, and printing is a fixpoint
// (CLI.md, `tirc parse`), for a file exercising every construct of the language.
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

void check_roundtrip(const std::string& path) {
  Module m1 = parse_file(path);
  std::string t1 = print_module(m1);
  Module m2 = parse_module(t1, "printed.tir");
  auto diff = structural_diff(m1, m2);
  EXPECT_FALSE(diff.has_value()) << path << ": " << *diff << "\n" << t1;
  EXPECT_EQ(print_module(m2), t1) << path;
}

TEST(ParserRoundTrip, KitchenSink) {
  check_roundtrip(std::string(TIRC_SOURCE_DIR) + "/tests/parser/data/kitchen_sink.tir");
}

TEST(ParserRoundTrip, SharedExamples) {
  for (const char* f : {"matmul.tir", "conv2d.tir", "softmax.tir"})
    check_roundtrip(std::string(TIRC_SOURCE_DIR) + "/examples/" + f);
}

}  // namespace
}  // namespace tirc

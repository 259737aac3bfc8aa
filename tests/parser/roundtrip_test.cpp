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

// LANGUAGE.md allows a value range on any buffer: an output's is kept and printed (it was
// dropped), and two functions differing only in it are not structurally equal.
TEST(ParserRoundTrip, OutputValueRangesArePrinted) {
  const char* src =
      "func f(A: f32[4]) -> (B: f32[4] in [0.0, 1.5], C: f32[4], K: i32[2] in [0, 3]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] C[vi] = A[vi] } }\n"
      "  for i in serial(2) { block k(vi: spatial(2) = i) { K[vi] = vi } }\n"
      "}\n";
  Module m = parse_module(src, "out_range.tir");
  std::string text = print_module(m);
  EXPECT_NE(text.find("-> (B: f32[4] in [0.0, 1.5], C: f32[4], K: i32[2] in [0, 3])"), std::string::npos)
      << text;
  Module again = parse_module(text, "printed.tir");
  EXPECT_FALSE(structural_diff(m, again).has_value());
  std::string other = src;
  other.replace(other.find("1.5"), 3, "2.5");
  auto diff = structural_diff(m, parse_module(other, "other.tir"));
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("outputs[0]"), std::string::npos) << *diff;
}

}  // namespace
}  // namespace tirc

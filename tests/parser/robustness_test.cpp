// The parser never crashes: deep nesting, long chains, garbage and truncated input all give a
// SourceError (the parser is also fuzzed with libFuzzer: tests/fuzz/fuzz_parser.cc).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "parser/parser.h"
#include "tests/parser/outcome.h"

namespace tirc {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ParserRobustness, DeepNestingIsAnError) {
  for (const char* open : {"(", "[", "{", "-", "!"}) {
    std::string src = "func f(A: f32[4]) -> (B: f32[4]) { B[0] = " + std::string(20000, open[0]) + "1 }";
    EXPECT_NE(outcome(src).find("error:"), std::string::npos) << open;
  }
  std::string loops = "func f(A: f32[4]) -> (B: f32[4]) {";
  for (int i = 0; i < 5000; ++i) loops += " for i in serial(2) {";
  EXPECT_NE(outcome(loops).find("nesting too deep"), std::string::npos);
}

TEST(ParserRobustness, LongFlatInputs) {
  std::string sum = "func f(A: f32[4]) -> (B: f32[4]) { B[0] = A[0]";
  for (int i = 0; i < 20000; ++i) sum += " + A[0]";
  EXPECT_NE(outcome(sum + " }").find("expression nested too deeply"), std::string::npos);
  std::string lets = "func f(A: f32[4]) -> (B: f32[4]) {";
  for (int i = 0; i < 2000; ++i) lets += " let x = 1";
  EXPECT_NE(outcome(lets + " }").find("too many nested let"), std::string::npos);
  std::string stmts = "func f(A: f32[4]) -> (B: f32[4]) {";
  for (int i = 0; i < 5000; ++i) stmts += " B[0] = A[0]";
  EXPECT_EQ(outcome(stmts + " }"), "");
  std::string elifs = "func f(n: i32) -> (B: f32[4]) { if n < 0 { B[0] = 0.0 }";
  for (int i = 0; i < 2000; ++i) elifs += " else if n < 1 { B[0] = 0.0 }";
  EXPECT_NE(outcome(elifs + " }").find("else-if"), std::string::npos);
  // Long but legal: 200 nested parentheses are over the limit, 50 are fine.
  EXPECT_EQ(outcome("func f(A: f32[4]) -> (B: f32[4]) { B[0] = " + std::string(50, '(') + "1.0" +
                    std::string(50, ')') + " }"),
            "");
}

TEST(ParserRobustness, EveryPrefixOfAnExampleFailsCleanly) {
  std::string src = read(std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir");
  ASSERT_FALSE(src.empty());
  for (size_t n = 0; n < src.size(); n += 3) outcome(src.substr(0, n));
  std::string conv = read(std::string(TIRC_SOURCE_DIR) + "/examples/conv2d.tir");
  for (size_t n = 0; n < conv.size(); n += 7) outcome(conv.substr(0, n));
}

TEST(ParserRobustness, RandomMutationsNeverCrash) {
  std::string base = read(std::string(TIRC_SOURCE_DIR) + "/examples/softmax.tir") +
                     read(std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir");
  std::mt19937 rng(1234);
  const std::string alphabet = "(){}[]<>=+-*/%!&|,:;.\"#_ \n0123456789.eEafijklnrsvx\x01\xff";
  for (int iter = 0; iter < 600; ++iter) {
    std::string s = base;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 1:
          if (pos < s.size()) s.erase(pos, 1 + rng() % 8);
          break;
        default:
          if (pos < s.size()) s[pos] = alphabet[rng() % alphabet.size()];
          break;
      }
    }
    outcome(s);
  }
}

TEST(ParserRobustness, BinaryGarbage) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s(rng() % 200, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    outcome(s);
  }
  EXPECT_NE(outcome(std::string("func\0f", 6)).find("invalid character 0x00"), std::string::npos);
}

TEST(ParserRobustness, UnreadableFile) {
  try {
    parse_file("/nonexistent/dir/x.tir");
    FAIL();
  } catch (const SourceError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/dir/x.tir");
    EXPECT_EQ(e.message(), "cannot open file (No such file or directory)");
  }
}

}  // namespace
}  // namespace tirc

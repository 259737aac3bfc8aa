// Hostile but plausible inputs a stranger tries first: 100 000 nested brackets, huge literals,
// unicode, CRLF / tabs, empty and comment-only files. Each parses
// or gives one SourceError with an exact message (never a crash, assert or hang).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/parser/outcome.h"

namespace tirc {
namespace {

const char* kHead = "func f(A: f32[4], I: i32[4]) -> (B: f32[4], J: i32[4]) {\n";

TEST(ParserHostile, HundredThousandNestedBrackets) {
  std::string deep = std::string(kHead) + "  B[0] = " + std::string(100000, '(') + "1.0" +
                     std::string(100000, ')') + "\n}\n";
  EXPECT_EQ(outcome(deep), "t.tir:2:109: error: nesting too deep (more than 100 levels)");
  std::string idx = std::string(kHead) + "  J[0] = ";
  for (int i = 0; i < 50000; ++i) idx += "I[";
  idx += "0" + std::string(50000, ']') + "\n}\n";
  EXPECT_EQ(outcome(idx), "t.tir:2:209: error: nesting too deep (more than 100 levels)");
}

TEST(ParserHostile, HugeLiterals) {
  EXPECT_EQ(outcome(std::string(kHead) + "  J[0] = 99999999999999999999999999999\n}\n"),
            "t.tir:2:10: error: integer literal 99999999999999999999999999999 is too large");
  EXPECT_EQ(outcome(std::string(kHead) + "  J[0] = 3000000000\n}\n"),
            "t.tir:2:10: error: integer literal 3000000000 does not fit in i32");
  // A float literal past the dtype's range is inf (Python's float("1e99999")).
  Module m = parse_module(std::string(kHead) + "  B[0] = 1e99999\n}\n", "t.tir");
  EXPECT_NE(print_module(m).find("B[0] = inf"), std::string::npos) << print_module(m);
}

// Division by a constant zero parses (the IR may hold it in a branch never taken, and
// printed modules must read back); running it is the interpreter's positioned error
// (cli_test.cpp: DivisionByZeroAtRunTime).
TEST(ParserHostile, ConstantDivisionByZeroParses) {
  for (const char* body : {"  B[1 // 0] = 1.0\n", "  J[0] = I[0] % 0\n", "  J[0] = truncdiv(I[0], 0)\n",
                           "  B[0] = f32(7 // 0)\n"})
    EXPECT_EQ(outcome(std::string(kHead) + body + "}\n"), "") << body;
}

TEST(ParserHostile, ShapesAndExtents) {
  // Zero-size dimensions are allowed (NumPy, TVM); negative ones are not.
  EXPECT_EQ(outcome("func f(A: f32[0]) -> (B: f32[1]) { B[0] = 1.0 }"), "");
  EXPECT_EQ(outcome("func f(A: f32[-1]) -> (B: f32[1]) { B[0] = 1.0 }"),
            "t.tir:1:15: error: buffer shape must not be negative, got -1");
  EXPECT_EQ(outcome("func f(A: f32[4]) -> (B: f32[4]) { for i in serial(-3) { B[i] = 1.0 } }"),
            "t.tir:1:52: error: loop extent must not be negative, got -3");
  EXPECT_EQ(outcome("func f(A: f32[4]) -> (B: f32[4]) { for i in serial(3, 1) { B[i] = 1.0 } }"),
            "t.tir:1:55: error: empty loop range [3, 1)");
  // Parses: the size is checked when the function runs (cannot allocate ...).
  EXPECT_EQ(outcome("func f(A: f32[1000000000, 1000000000]) -> (B: f32[1]) { B[0] = A[0, 0] }"), "");
}

TEST(ParserHostile, UnknownIntrinsic) {
  EXPECT_EQ(outcome(std::string(kHead) + "  B[0] = gelu(A[0])\n}\n"),
            "t.tir:2:10: error: unknown function 'gelu'");
  // Names with a .tir spelling say it (outsider round 19).
  EXPECT_EQ(outcome(std::string(kHead) + "  B[0] = softplus(A[0])\n}\n"),
            "t.tir:2:10: error: unknown function 'softplus' (write log1p(exp(x)))");
}

TEST(ParserHostile, UnicodeWhitespaceAndEmptyFiles) {
  EXPECT_EQ(outcome("func f(Aé: f32[4]) -> (B: f32[4]) { B[0] = 1.0 }"),
            "t.tir:1:9: error: invalid character 'é'");
  EXPECT_EQ(outcome("func f(A: f32[4]) -> (B: f32[4]) { call_extern(\"fé✓\", A.data) } # ünïcode ✓"), "");
  EXPECT_EQ(outcome("func f(A: f32[4]) -> (B: f32[4]) {\r\n\tfor i in serial(4) {\r\n\t\tB[i] = A[i] $ "
                    "1.0\r\n\t}\r\n}\r\n"),
            "t.tir:3:15: error: invalid character '$'");
  EXPECT_EQ(
      outcome("func f(A: f32[4]) -> (B: f32[4]) {\r\n\tfor i in serial(4) {\r\n\t\tB[i] = A[i]\r\n\t}\r\n}"),
      "");
  EXPECT_EQ(outcome("\xef\xbb\xbf"
                    "func f(A: f32[4]) -> (B: f32[4]) { B[0] = A[0] }"),
            "");
  EXPECT_EQ(outcome(std::string("func f(A: f32[4]) -> (B: f32[4]) { B[0] = A[0] }") + '\0'),
            "t.tir:1:49: error: invalid character 0x00");
  for (const char* src : {"", "\n", "# only a comment", "# one\n# two\n", "  \t\r\n"}) {
    Module m = parse_module(src, "t.tir");
    EXPECT_TRUE(m.funcs.empty() && m.schedules.empty() && m.intrins.empty()) << src;
    EXPECT_EQ(print_module(m), "") << src;
  }
}

}  // namespace
}  // namespace tirc

// LANGUAGE.md: scan iterations run in increasing order. A binding with a negative coefficient
// on a loop var (`vt: scan(5) = 4 - t`) runs them backwards; the interpreter and the JIT ran
// it in loop order without a word (zoo round 16), and only autodiff refused it. The parser
// refuses it where it is written.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

std::string parse_error(const std::string& loops, const std::string& binding) {
  std::string text = "func f(X: f32[5], I: i32[5] in [0, 4]) -> (H: f32[5]) {\n" + loops +
                     "    block s(vt: scan(5) = " + binding +
                     ") {\n"
                     "      H[vt] = X[vt]\n"
                     "    }\n"
                     "  }\n"
                     "}\n";
  try {
    parse_module(text, "t.tir");
  } catch (const SourceError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ScanOrder, DecreasingBindingIsRefused) {
  EXPECT_EQ(parse_error("  for t in serial(5) {\n", "4 - t"),
            "t.tir:3:27: error: scan iter var vt of block 's' decreases along loop t: scan iterations run in "
            "increasing order (to run a recurrence backwards, bind vt increasing and index the buffers at "
            "(N - 1 - vt))");
}

// Decreasing along an inner loop, increasing along the outer one: still out of order.
TEST(ScanOrder, DecreasingAlongAnInnerLoopIsRefused) {
  EXPECT_NE(parse_error("  for a, b in grid(2, 2) {\n", "2 * a + 1 - b").find("decreases along loop b"),
            std::string::npos);
}

TEST(ScanOrder, IncreasingAndUnjudgedBindingsAreAccepted) {
  EXPECT_EQ(parse_error("  for t in serial(5) {\n", "t"), "(accepted)");
  EXPECT_EQ(parse_error("  for a, b in grid(2, 3) {\n", "b + a * 2"), "(accepted)");
  // A loop of one iteration does not run backwards.
  EXPECT_EQ(parse_error("  for u, t in grid(1, 5) {\n", "t - u"), "(accepted)");
  // Not affine in the loop var: not judged at parse time.
  EXPECT_EQ(parse_error("  for t in serial(5) {\n", "(9 - t) % 5"), "(accepted)");
}

// A loop whose bounds move with an outer loop: `t - c * 8` increases within each row (a
// row-wise cumulative sum written with flat indices).
TEST(ScanOrder, InnerLoopBoundsMovingWithAnOuterLoopAreNotJudged) {
  EXPECT_NO_THROW(parse_module(R"(func S(X: f32[4, 8]) -> (Y: f32[4, 8]) {
  for c in serial(4) {
    for t in serial(c * 8, c * 8 + 8) {
      block b(vr: spatial(4) = c, vk: scan(8) = t - c * 8) {
        Y[vr, vk] = if_then_else(vk == 0, X[vr, vk], Y[vr, vk - 1] + X[vr, vk])
      }
    }
  }
}
)",
                               "t.tir"));
}

}  // namespace
}  // namespace tirc

// hoist_short_reductions (round 19): the short reduce loops of a strided accumulation move
// above its spatial row loop; outputs bit-identical (interpreter, random inputs); other nests
// are left alone.
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/lower/lower_checks.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

// One phase of avg_pool2d_grad (stride 2, 3x3 window): X[2 * vl0, 2 * vl1] accumulates the
// two-tap window of Y under its `where`. STORE_COL: the written column (stride 2 or 1),
// T: the taps per reduce loop.
std::string phase(const std::string& store_col, int t) {
  std::string T = std::to_string(t);
  return R"(
func f(Y: f32[4, 16, 16], X0: f32[4, 33, 33]) -> (X: f32[4, 33, 33]) {
  for i0, i1, i2 in grid(4, 33, 33) {
    block cp(v0: spatial(4) = i0, v1: spatial(33) = i1, v2: spatial(33) = i2) {
      X[v0, v1, v2] = X0[v0, v1, v2]
    }
  }
  for c in serial(4) {
    for al0 in serial(16) {
      for t1 in serial()" +
         T + R"() {
        for t2 in serial()" +
         T + R"() {
          for al1 in serial(16) {
            block ph(vc: spatial(4) = c, vl0: spatial(16) = al0, vl1: spatial(16) = al1,
                     r0: reduce()" +
         T + R"() = t1, r1: reduce()" + T + R"() = t2) {
              where al0 >= t1 && al1 >= t2
              X[vc, 2 * vl0, )" +
         store_col + R"(] = X[vc, 2 * vl0, )" + store_col + R"(] + Y[vc, vl0 - r0, vl1 - r1] * 0.25
            }
          }
        }
      }
    }
  }
}
)";
}

// The loop variables of f's second nest, outside in.
std::string loop_order(const FunctionNode& f) {
  std::string p = print_function(f), out;
  size_t at = p.find("for c in");
  while ((at = p.find("for ", at)) != std::string::npos) {
    size_t e = p.find(' ', at + 4);
    out += p.substr(at + 4, e - at - 4) + " ";
    at = e;
  }
  return out;
}

TEST(HoistShortReductions, StridedPhaseGetsItsTapsOutside) {
  Function f = parse_module(phase("2 * vl1", 2), "test.tir").find_func("f");
  ASSERT_TRUE(f);
  Function g = hoist_short_reductions(*lower_init(*f));
  EXPECT_EQ(loop_order(*g), "c t1 t2 al0 al1 ") << print_function(*g);
  for (uint64_t seed : {1, 2, 3}) expect_identical(*f, *g, seed);
  Function l = lower_function(*f, false, nullptr);
  for (uint64_t seed : {1, 2}) expect_identical(*f, *l, seed);
}

// A unit-stride column (LLVM's vectorizer does well, no span stores) and more than 16 taps
// in all (a pass over the slice per tap): unchanged.
TEST(HoistShortReductions, UnitStrideOrLongReductionsAreLeftAlone) {
  for (auto& [col, t] : std::vector<std::pair<std::string, int>>{{"vl1", 2}, {"2 * vl1", 5}}) {
    SCOPED_TRACE(col + " " + std::to_string(t));
    Function f = parse_module(phase(col, t), "test.tir").find_func("f");
    ASSERT_TRUE(f);
    Function g = hoist_short_reductions(*lower_init(*f));
    EXPECT_EQ(loop_order(*g), "c al0 t1 t2 al1 ") << print_function(*g);
  }
}

}  // namespace
}  // namespace tirc

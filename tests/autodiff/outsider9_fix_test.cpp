// Fixes found by the ninth outsider round (tests/zoo/outsider9), each test failed before,
// checked against finite differences.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

// A max reduction whose candidates are masked by an index buffer (scatter_reduce amax): its
// arg-extremum scatter `m_dX` stores under `if Y_arg != none { if I[Y_arg] == vs { .. } }`. The
// gather of that block's cotangent read (second order) kept both data-dependent conditions as
// residuals of the gather and joined them by `&&`, which evaluates both sides (LANGUAGE.md):
// F_grad's F_grad loaded I[2147483647] where no candidate was the maximum ("out-of-bounds
// load"). The residuals now nest in order (gradient.cpp, gather emission: guard_all).
TEST(Outsider9Fix, GatherResidualsNestInOrder) {
  Function f =
      parse_one(R"(func scatter_amax(Base: f32[3, 2], I: i32[6] in [0, 2], X: f32[6, 2]) -> (Y: f32[3, 2]) {
  for s, d, i in grid(3, 2, 6) {
    block m(vs: spatial(3) = s, vd: spatial(2) = d, vi: reduce(6) = i) {
      init { Y[vs, vd] = Base[vs, vd] }
      Y[vs, vd] = max(Y[vs, vd], if_then_else(I[vi] == vs, X[vi, vd] * 2.0, min_value(f32)))
    }
  }
})",
                "scatter_amax");
  expect_full_checks(*f);
  Function g = grad_of_printed(*f);
  expect_full_checks(*g);
  // The nested form is in the printed second order: no `&&` joins a guard with a load at an
  // index the other guard checks.
  std::string text = print_function(*gradient(*g, {}));
  EXPECT_EQ(text.find("!= 2147483647 && I["), std::string::npos) << text;
}

}  // namespace
}  // namespace tirc

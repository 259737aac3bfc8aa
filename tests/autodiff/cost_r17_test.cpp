// Cost round of helper round 17 (docs/autodiff.md, Cost of F_grad, "Cost round 3 (h17)"):
// each test is a variant written for its rule (not a zoo function), bounds the FLOPs of
// F_grad below what it was before the rule, and checks the gradient with check_grad --full
// in f64.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "interp/stats.h"
#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

double flops(const FunctionNode& f) { return static_counts(f, {}).total.flops; }

// Rule 1: a deferred contribution equal to a carried one. The step's operands
// `S[t - 1, k] -/+ B[k, j]` give the carried read and the read of B the same cotangent term
// (up to its sign), computed in the arm of an if_then_else. The backward step stores the
// carried term in a tape next to its own store; the gathers into B load it (one add per
// point) instead of recomputing the step's arm through hoist blocks: 346 -> 306 FLOPs.
TEST(CostR17, DeferredTermEqualToCarriedTermIsTaped) {
  Function f = parse_one(R"(func lse_chain(X: f32[6, 2], B: f32[2, 2]) -> (S: f32[6, 2]) {
  for t, j in grid(6, 2) {
    block s(vt: scan(6) = t, vj: spatial(2) = j) {
      S[vt, vj] = if_then_else(vt == 0, X[0, vj],
        (let a0 = S[vt - 1, 0] - B[0, vj] in
         (let a1 = S[vt - 1, 1] + B[1, vj] in
          X[vt, vj] * log(exp(a0) + exp(a1)))))
    }
  }
})",
                         "lse_chain");
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  EXPECT_EQ(flops(*f), 84);
  EXPECT_LE(flops(*g), 306) << text;  // 346 before
  // B[0, j] enters with a minus: the tape holds the term, the gather subtracts it.
  EXPECT_NE(text.find("B_grad[0, v10] - s_tape_1[r1 + 1, v10]"), std::string::npos) << text;
  ::setenv("TIRC_AD_NO_STEP_TAPES", "1", 1);
  Function g0 = gradient(*f, {});
  ::unsetenv("TIRC_AD_NO_STEP_TAPES");
  EXPECT_EQ(flops(*g0), 346);
  expect_full_checks(*f);
}

}  // namespace
}  // namespace tirc

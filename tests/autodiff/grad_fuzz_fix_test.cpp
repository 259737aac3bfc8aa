// Fixes found by the gradient fuzzer (tests/autodiff/grad_fuzz_test.cpp, helper round h1);
// each test failed before its fix.
#include <gtest/gtest.h>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

// One window var in two strided dimensions: `X[3 * vj + vi, vi + 2 * vj]` with vi longer than
// both strides gave two residue splits of vi; the second one's counter was left unbound in
// F_grad (check_grad: `block "b_dX": unbound variable t2`; `tirc grad` printed a block that
// did not re-parse). Now vi is split once and the other dimension solved by elimination.
TEST(GradFuzzFix, OneWindowVarInTwoStridedDims) {
  Function f = parse_one(R"(func f(X: f32[16, 16]) -> (Y: f32[7, 4]) {
  for i, j in grid(7, 4) {
    block b(vi: spatial(7) = i, vj: spatial(4) = j) {
      Y[vi, vj] = if_then_else(3 * vj + vi < 7, X[3 * vj + vi, vi + 2 * vj], 0.0)
    }
  }
})",
                         "f");
  expect_full_checks(*f);
  Function g = grad_of_printed(*f);  // prints and re-parses
  EXPECT_NO_THROW(run_interp(*g, random_inputs(*g, 1)));
}

// F_grad printed and parsed back must be the same IR (CLI.md: printing is a fixpoint).
void expect_grad_round_trip(const FunctionNode& f) {
  Module gm;
  gm.add_func(gradient(f, {}));
  std::string text = print_module(gm);
  Module back = parse_module(text, "g.tir");
  auto d = structural_diff(gm, back);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << text;
}

// The adjoint stores of a block fused into one block each kept their own lets:
// [let a0 = .. { S1 }, let a0_1 = .. { S2 }] prints as four lines that parse back as
// let a0 = .. { S1; let a0_1 = .. { S2 } }, another IR (structural_diff: "let a0: end of list
// vs extra statement let a0_1 = ..."). gradient() now gives the parser's scopes.
TEST(GradFuzzFix, FusedAdjointLetsRoundTrip) {
  Function f = parse_one(R"(func f(X0: f32[6, 6], X1: f32[6, 6]) -> (Y0: f32[5]) {
  for t in serial(5) {
    block b0(vt: scan(5) = t) {
      Y0[vt] = if_then_else(vt == 0, X1[0, 0], Y0[vt - 1] * (X1[vt % 6, vt] * X0[vt, max(vt - 1, 0)]))
    }
  }
})",
                         "f");
  expect_grad_round_trip(*f);
  expect_full_checks(*f);
}

// A value invariant over the reduce var (hoisted into a buffer over vi) whose if_then_else arm
// binds its temps as let expressions, the same vars the adjoint binds again as let statements:
// the hoisted block's copy renamed the uses but not the arm's binders, `(let t0 = .. in t00 *
// ..)` (`tirc grad` output did not re-parse: "undeclared name 't00'").
TEST(GradFuzzFix, HoistedCopyOfArmLets) {
  Function f = parse_one(R"(func f(X: f32[4]) -> (Y: f32[4]) {
  for i, k in grid(4, 3) {
    block b(vi: spatial(4) = i, vk: reduce(3) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += sin(if_then_else(vi < 2, exp(X[vi]) * X[3 - vi], 1.5))
    }
  }
})",
                         "f");
  expect_grad_round_trip(*f);
  expect_full_checks(*f);
  expect_full_checks(*grad_of_printed(*f));
}

}  // namespace
}  // namespace tirc

// trim_no_ops: loops whose body is a `where` guard get the range where the guard can hold;
// the trimmed function computes bit-identical outputs (interpreter on random inputs), and
// the guard is gone where it was linear in the loop var.
#include <gtest/gtest.h>

#include <cstring>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/lower/lower_checks.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

struct Shape {
  int ifs = 0, const_loops = 0, loops = 0;
  int guarded_long_loops = 0;  // loops of >= 8 iterations whose whole body is an if
};
Shape shape_of(const FunctionNode& f) {
  struct V : IRVisitor {
    Shape s;
    void visit_if(const IfThenElseStmtNode* n) override {
      ++s.ifs;
      IRVisitor::visit_if(n);
    }
    void visit_for(const ForNode* n) override {
      ++s.loops;
      int64_t a = 0, b = 0;
      if (is_const_int(n->min, &a) && is_const_int(n->extent, &b)) ++s.const_loops;
      if ((!is_const_int(n->extent, &b) || b >= 8) && n->body.kind() == StmtKind::IfThenElse)
        ++s.guarded_long_loops;
      IRVisitor::visit_for(n);
    }
  } v;
  v.visit(f.body);
  return v.s;
}

// Lowered without flattening up to convert_blocks, then trimmed.
std::pair<Function, Function> before_after(const Function& f) {
  Function b = convert_blocks(*lower_init(*f));
  return {b, trim_no_ops(*b)};
}

Function parse_one(const std::string& text, const std::string& name) {
  return parse_module(text, "trim.tir").find_func(name);
}

TEST(TrimNoOps, WindowGuardBecomesLoopBounds) {
  // A 1-D transposed gather, output position innermost (as F_grad orders it): the guard
  // bounds the h loop by the tap, h in [r, r + 28). In `g2` the guarded loop is the 3-tap
  // one: too short to trim, it keeps its constant bounds and its guard.
  const char* src = R"(
func g(D: f32[28], W: f32[3]) -> (X: f32[30]) {
  for h in serial(30) {
    block z(vh: spatial(30) = h) { X[vh] = 0.0 }
  }
  for r, h in grid(3, 30) {
    block b(vh: spatial(30) = h, vr: reduce(3) = r) {
      where h >= r && r + 27 >= h
      X[vh] += D[vh - vr] * W[vr]
    }
  }
}
func g2(D: f32[28], W: f32[3]) -> (X: f32[30]) {
  for h in serial(30) {
    block z(vh: spatial(30) = h) { X[vh] = 0.0 }
  }
  for h, r in grid(30, 3) {
    block b(vh: spatial(30) = h, vr: reduce(3) = r) {
      where h >= r && r + 27 >= h
      X[vh] += D[vh - vr] * W[vr]
    }
  }
})";
  Function f = parse_one(src, "g"), f2 = parse_one(src, "g2");
  ASSERT_TRUE(f && f2);
  auto [b, t] = before_after(f);
  EXPECT_EQ(shape_of(*b).ifs, 1) << print_function(*b);
  EXPECT_EQ(shape_of(*t).ifs, 0) << print_function(*t);
  EXPECT_EQ(shape_of(*t).const_loops, 2) << print_function(*t);
  for (uint64_t seed : {1, 2, 3}) expect_identical(*f, *t, seed);
  auto [b2, t2] = before_after(f2);
  EXPECT_EQ(print_function(*b2), print_function(*t2));
}

TEST(TrimNoOps, InvariantConjunctsMoveOutAndOuterLoopsTrimInTurn) {
  Function f = parse_one(R"(
func g(A: f32[16, 16]) -> (B: f32[16, 16]) {
  for i, j in grid(16, 16) {
    block b(vi: spatial(16) = i, vj: spatial(16) = j) {
      where i >= 3 && i < 11 && 2 * j + 1 < 20 && j >= i - 5
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(16, 16) {
    block c(vi: spatial(16) = i, vj: spatial(16) = j) {
      where !(i >= 3 && i < 11 && 2 * j + 1 < 20 && j >= i - 5)
      B[vi, vj] = A[vi, vj]
    }
  }
})",
                         "g");
  ASSERT_TRUE(f);
  auto [b, t] = before_after(f);
  std::string p = print_function(*t);
  // Block b: both loops trimmed, no guard left; block c's negated guard is not a conjunction
  // of bounds and stays.
  EXPECT_EQ(shape_of(*t).ifs, 1) << p;
  EXPECT_NE(p.find("serial(3, 11)"), std::string::npos) << p;
  for (uint64_t seed : {1, 2}) expect_identical(*f, *t, seed);
}

TEST(TrimNoOps, NegativeCoefficientsEqualitiesAndEmptyRanges) {
  Function f = parse_one(R"(
func g(n: i32, A: f32[20]) -> (B: f32[20], C: f32[20]) {
  for i in serial(20) {
    block z(vi: spatial(20) = i) {
      B[vi] = 0.0
      C[vi] = 0.0
    }
  }
  for i in serial(20) {
    block b(vi: spatial(20) = i) {
      where 17 - 3 * i >= n && 5 * i - 7 <= n
      B[vi] = A[vi] + 1.0
    }
  }
  for i in serial(20) {
    block c(vi: spatial(20) = i) {
      where 2 * i - 1 == n
      C[vi] = A[vi]
    }
  }
})",
                         "g");
  ASSERT_TRUE(f);
  auto [b, t] = before_after(f);
  EXPECT_EQ(shape_of(*t).ifs, 0) << print_function(*t);
  // Every n from "nothing runs" to "everything runs", including odd/even and negative ones.
  for (int n = -70; n <= 70; ++n) {
    NDArray nv(DType::I32, {});
    nv.set(0, n);
    expect_identical(*f, *t, 7, {{"n", nv}});
  }
}

TEST(TrimNoOps, LoadsAndNonLinearConditionsStay) {
  // A data-dependent condition must be evaluated per iteration (and not hoisted: the loop
  // writes what it reads); i * i is not linear; i // 3 is not affine for the bound.
  Function f = parse_one(R"(
func g(A: f32[12], I: i32[12] in [0, 11]) -> (B: f32[12]) {
  for i in serial(12) {
    block z(vi: spatial(12) = i) { B[vi] = 0.0 }
  }
  for i in serial(12) {
    block b(vi: spatial(12) = i) {
      if I[vi] < 6 && vi * vi < 50 && vi // 3 != 2 {
        B[vi] = A[vi]
      }
    }
  }
})",
                         "g");
  ASSERT_TRUE(f);
  auto [b, t] = before_after(f);
  EXPECT_EQ(print_function(*b), print_function(*t));
  expect_identical(*f, *t, 3);
}

TEST(TrimNoOps, ThreadBoundFunctionsAreLeftAlone) {
  Function f = parse_one(R"(
func g(A: f32[64]) -> (B: f32[64]) {
  for t in thread_binding(64, "threadIdx.x") {
    for k in serial(4) {
      block b(vi: spatial(64) = t, vk: spatial(4) = k) {
        where k < 1
        B[vi] = A[vi]
      }
    }
  }
})",
                         "g");
  ASSERT_TRUE(f);
  auto [b, t] = before_after(f);
  EXPECT_EQ(print_function(*b), print_function(*t));
}

TEST(TrimNoOps, ConvDataGradientLosesItsWindowGuards) {
  // The padded conv of the contract examples: its data gradient is a gather with a `where`
  // over the kernel window, with the output row innermost (loop_order.h); after trimming no
  // loop of 8 or more iterations is guarded.
  Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/conv2d.tir");
  Function f = m.funcs.at(0);
  Function g = gradient(*f, {});
  auto [b, t] = before_after(g);
  EXPECT_GT(shape_of(*b).guarded_long_loops, 0) << print_function(*b);
  EXPECT_EQ(shape_of(*t).guarded_long_loops, 0) << print_function(*t);
  EXPECT_EQ(shape_of(*lower_function(*g, false)).guarded_long_loops, 0);
  for (uint64_t seed : {1, 2}) expect_identical(*g, *t, seed);
}

}  // namespace
}  // namespace tirc

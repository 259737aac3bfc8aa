// Cost round of helper round 19 (docs/autodiff.md, Cost of F_grad, "Cost round 5"): masks
// hoisted into bool buffers by the comparison pass of hoist.cpp. Each test is a variant
// written for the rule (not a zoo function): it bounds the FLOPs of F_grad below what they
// were before the rule (TIRC_AD_NO_COND_HOIST=1), checks that every block name of F_grad
// before the rule still names a block writing the same buffer (schedules of F_grad use them),
// and checks the gradient with check_grad --full in f64 with the rule off and on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

constexpr const char* kOff = "TIRC_AD_NO_COND_HOIST";

double flops(const FunctionNode& f) { return static_counts(f, {}).total.flops; }

// Block name -> the buffers it writes, with their shapes.
std::map<std::string, std::string> block_writes(const FunctionNode& f) {
  std::map<std::string, std::string> out;
  struct V : IRVisitor {
    std::map<std::string, std::string>* out;
    void visit_block_realize(const BlockRealizeNode* br) override {
      std::string w;
      for (auto& r : br->block->writes) {
        w += r.buffer->name + "[";
        for (auto& d : r.buffer->shape) w += print_expr(d) + ",";
        w += "] ";
      }
      (*out)[br->block->name] = w;
      IRVisitor::visit_block_realize(br);
    }
  } v;
  v.out = &out;
  v.visit(f.body);
  return out;
}

// F_grad with the rule off and on: FLOPs, every block name of the first still in the second
// writing the same buffers, and check_grad --full (f64) passing on both.
std::string expect_names_kept(const FunctionNode& f, double* before, double* after) {
  ::setenv(kOff, "1", 1);
  Function g0 = gradient(f, {});
  expect_full_checks(f);
  ::unsetenv(kOff);
  Function g1 = gradient(f, {});
  *before = flops(*g0);
  *after = flops(*g1);
  auto b0 = block_writes(*g0), b1 = block_writes(*g1);
  for (auto& [name, w] : b0) {
    auto it = b1.find(name);
    EXPECT_NE(it, b1.end()) << name << " lost\n" << print_function(*g1);
    if (it != b1.end()) {
      EXPECT_EQ(it->second, w) << name << "\n" << print_function(*g1);
    }
  }
  expect_full_checks(f);
  return print_function(*g1);
}

// An invariant mask (gathers without a `where`): the ReLU6 of a pointwise convolution's input.
// The gathers into D, S and T (reduce var c) each compared the hoisted activation with 0 and 6
// at every (f, h, c); the comparisons are computed once per (f, h) into hoist_cond0 / 1 and
// loaded; the masked cotangent select(c, a, 0.0) stays (a varies with c).
TEST(CostR19, InvariantMaskIsComputedOnce) {
  Function f =
      parse_one(R"(func pw_relu6(D: f32[4, 5], S: f32[4], T: f32[4], W: f32[3, 4]) -> (P: f32[3, 5]) {
  for c, h, f in grid(3, 5, 4) {
    block project(vc: spatial(3) = c, vh: spatial(5) = h, vf: reduce(4) = f) {
      init { P[vc, vh] = 0.0 }
      P[vc, vh] += W[vc, vf] * min(max(D[vf, vh] * S[vf] + T[vf], 0.0), 6.0)
    }
  }
})",
                "pw_relu6");
  double before = 0, after = 0;
  std::string text = expect_names_kept(*f, &before, &after);
  EXPECT_EQ(before, 1140);
  EXPECT_LE(after, 820);
  EXPECT_NE(text.find("alloc hoist_cond0: bool[4, 5]"), std::string::npos) << text;
}

// A padded depthwise convolution with the activation in its `if_then_else` (the forward applies
// it per tap). The gather into E has a `where` over its reduce var r; every element of E has a
// tap inside the image (pred_covers), so the mask is computed once per element of E without
// the `where`. The gathers into W, S and T read E at vh + vr - 1: the mask over the elements
// of E (element_form; their points hit every element) is the same value, so they load the
// same buffers.
TEST(CostR19, MaskOverReadElementsIsComputedOnce) {
  Function f = parse_one(
      R"(func dw_relu6(E: f32[2, 5] in [-4.0, 8.0], S: f32[2], T: f32[2], W: f32[2, 3]) -> (D: f32[2, 5]) {
  for f, h, r in grid(2, 5, 3) {
    block dw(vf: spatial(2) = f, vh: spatial(5) = h, vr: reduce(3) = r) {
      init { D[vf, vh] = 0.0 }
      let ih = vh + vr - 1
      D[vf, vh] += W[vf, vr] * if_then_else(ih >= 0 && ih < 5, min(max(E[vf, ih] * S[vf] + T[vf], 0.0), 6.0), 0.0)
    }
  }
})",
      "dw_relu6");
  double before = 0, after = 0;
  std::string text = expect_names_kept(*f, &before, &after);
  EXPECT_EQ(before, 778);
  EXPECT_LE(after, 458);
  EXPECT_NE(text.find("hoist_cond1[h2, h3] = max(E[h2, h3] * S[h2] + T[h2], 0.0) <= 6.0"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("hoist_cond2"), std::string::npos) << text;
}

// Strided windows: 2 * h + r hits every element of E (a mask per element), 3 * h + r with a
// window of 2 does not (elements 2, 5, 8, 11 are never read): nothing is hoisted there, as the
// hoisted block would evaluate the activation at elements the user's code never reads.
TEST(CostR19, MaskOverReadElementsOnlyWhenEveryElementIsRead) {
  Function f2 = parse_one(
      R"(func dw_stride2(E: f32[2, 9] in [-4.0, 8.0], S: f32[2], T: f32[2], W: f32[2, 3]) -> (D: f32[2, 4]) {
  for f, h, r in grid(2, 4, 3) {
    block dw(vf: spatial(2) = f, vh: spatial(4) = h, vr: reduce(3) = r) {
      init { D[vf, vh] = 0.0 }
      D[vf, vh] += W[vf, vr] * min(max(E[vf, 2 * vh + vr] * S[vf] + T[vf], 0.0), 6.0)
    }
  }
})",
      "dw_stride2");
  double before = 0, after = 0;
  std::string text = expect_names_kept(*f2, &before, &after);
  EXPECT_EQ(before, 696);
  EXPECT_LE(after, 572);
  EXPECT_NE(text.find("hoist_cond1[h2, h3] = max(E[h2, h3] * S[h2] + T[h2], 0.0) <= 6.0"), std::string::npos)
      << text;

  Function f3 = parse_one(
      R"(func dw_stride3(E: f32[2, 12] in [-4.0, 8.0], S: f32[2], T: f32[2], W: f32[2, 2]) -> (D: f32[2, 4]) {
  for f, h, r in grid(2, 4, 2) {
    block dw(vf: spatial(2) = f, vh: spatial(4) = h, vr: reduce(2) = r) {
      init { D[vf, vh] = 0.0 }
      D[vf, vh] += W[vf, vr] * min(max(E[vf, 3 * vh + vr] * S[vf] + T[vf], 0.0), 6.0)
    }
  }
})",
      "dw_stride3");
  text = expect_names_kept(*f3, &before, &after);
  EXPECT_EQ(after, before);
  EXPECT_EQ(text.find("hoist_cond"), std::string::npos) << text;
}

// F_grad must run: every hoist_cond block is evaluated on inputs drawn at random (the
// interpreter refuses an out-of-bounds load), and check_grad --full passes in f64.
void expect_grad_runs(const FunctionNode& f) {
  Function g = gradient(f, {});
  EXPECT_NO_THROW(run_interp(*g, random_inputs(*g, 1))) << print_function(*g);
  expect_full_checks(f);
}

// Grad fuzzer seed 292 program 57 (seed 293 program 41 alike), reduced. The adjoint of the
// pow under `if_then_else(v0 < 2, ..)` binds the arm's temps (t10 .. t21) inside the arm and
// again as let statements of the gather into X; the analysis memoised those vars with no
// dependences when it met them in the arm, so the mask `t21 == 0.0` (over both iter vars)
// looked invariant, was hoisted without the gather's `where`, and its hoist_cond block
// loaded T[-4] (F_grad did not run).
TEST(CostR19, MaskOverArmTempsKeepsItsDependences) {
  Function f = parse_one(R"(func f(T: f32[5] in [-1.0, 1.0], X: f32[3] in [-1.0, 1.0]) -> (Y: f64[3]) {
  for lv0 in serial(6) {
    block b(v0: spatial(3) = lv0 // 2) {
      where lv0 % 2 == 0
      Y[v0] = min(f64(X[v0]), if_then_else(v0 < 2, pow(exp(f64(if_then_else(4 * v0 < 5, T[4 * v0], 0.0))), f64(X[(v0 + 1) % 3]) * f64(X[(v0 + 1) % 3]) + 0.5), 0.0))
    }
  }
})",
                         "f");
  expect_grad_runs(*f);
}

// Review r3 F1: element_form multiplied the dims of the loaded buffer without a bound; 2^20 *
// 2^20 * 2^20 * 16 wrapped to 0 and the bitmap of the box was written out of its bounds
// (tirc grad crashed). The box is compared with the block's points while it is multiplied.
TEST(CostR19, HugeLoadedBufferDoesNotOverflowTheBox) {
  Function f = parse_one(R"(func big(X: f32[1048576, 1048576, 1048576, 16], W: f32[2]) -> (Y: f32[2, 2, 2]) {
  for i, j, k, l in grid(2, 2, 2, 2) {
    block b(vi: spatial(2) = i, vj: spatial(2) = j, vk: spatial(2) = k, vl: reduce(2) = l) {
      init { Y[vi, vj, vk] = 0.0 }
      Y[vi, vj, vk] += W[vl] * max(X[vi, vj, vk, vl] * 2.0, 0.0)
    }
  }
})",
                         "big");
  Function g = gradient(*f, {});
  EXPECT_EQ(print_function(*g).find("hoist_cond"), std::string::npos) << print_function(*g);
}

}  // namespace
}  // namespace tirc

// Cost round of helper round 18 (docs/autodiff.md, Cost of F_grad, "Cost round 4"): each
// test is a variant written for its rule (not a zoo function), bounds the FLOPs of F_grad
// below what it was before the rule, checks that the block names of F_grad before the rule
// still name blocks writing the same buffers (schedules of F_grad use them), and checks the
// gradient with check_grad --full in f64.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

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

double flops(const FunctionNode& f) { return static_counts(f, {}).total.flops; }

// Block name -> printed shape of the buffer it writes (one store each for hoist blocks).
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

// F_grad without the env var `on` and with it (the rules turned on): FLOPs, and every
// block name of the first still in the second, writing the same buffer.
void expect_names_kept(const FunctionNode& f, const char* on, double* before, double* after) {
  ::unsetenv(on);
  Function g0 = gradient(f, {});
  ::setenv(on, "1", 1);
  Function g1 = gradient(f, {});
  *before = flops(*g0);
  *after = flops(*g1);
  auto b0 = block_writes(*g0), b1 = block_writes(*g1);
  for (auto& [name, w] : b0) {
    auto it = b1.find(name);
    ASSERT_NE(it, b1.end()) << name << " lost\n" << print_function(*g1);
    EXPECT_EQ(it->second, w) << name << "\n" << print_function(*g1);
  }
}

// Rules 1-3 run in a second hoisting pass that TIRC_AD_NESTED_HOIST=1 turns on (off by default:
// docs/autodiff.md, "Cost round 4"); without it, the F_grad of cost round 3.
constexpr const char* kOn = "TIRC_AD_NESTED_HOIST";

// Rule 1 (hoist.cpp inner_invariant): rsqrt(Deg[Src[e]] * Deg[Dst[e]]) is inside the hoisted
// per-edge factor of one adjoint and computed alone by another: it gets its buffer first and
// the outer value loads it. The new buffers are numbered after those of the first pass, whose
// names stay as they were.
TEST(CostR18, InvariantInsideHoistedInvariantIsComputedOnce) {
  Function f = parse_one(
      R"(func edge_norm(X: f32[4, 3], Ew: f32[6] in [0.5, 1.5], Src: i32[6] in [0, 3], Dst: i32[6] in [0, 3]) -> (Out: f32[4, 3]) {
  alloc Deg: f32[4]
  for n in serial(4) {
    block deg0(vn: spatial(4) = n) {
      Deg[vn] = 1.0
    }
  }
  for e in serial(6) {
    block deg(ve: reduce(6) = e) {
      Deg[Dst[ve]] += Ew[ve]
    }
  }
  for n, j in grid(4, 3) {
    block self(vn: spatial(4) = n, vj: spatial(3) = j) {
      Out[vn, vj] = X[vn, vj] * 0.5
    }
  }
  for e, j in grid(6, 3) {
    block msg(ve: reduce(6) = e, vj: spatial(3) = j) {
      Out[Dst[ve], vj] += Ew[ve] * rsqrt(Deg[Src[ve]] * Deg[Dst[ve]]) * X[Src[ve], vj]
    }
  }
})",
      "edge_norm");
  double before = 0, after = 0;
  expect_names_kept(*f, kOn, &before, &after);
  EXPECT_LT(after, before);
  EXPECT_EQ(before, 306);
  EXPECT_LE(after, 264);
  expect_full_checks(*f);
  ::unsetenv(kOn);
}

// Rule 2 (hoist.cpp fewer_deps): the per-row factor of a row normalisation inside a hoisted
// per-element value (rsqrt(V[i] + eps) times a per-row constant inside the (i, j) value) gets
// a buffer over the rows instead of being computed at every element.
TEST(CostR18, SubValueWithFewerIterVarsGetsItsOwnBuffer) {
  Function f = parse_one(R"(func row_scale(X: f32[4, 6], G: f32[6]) -> (Y: f32[4, 6]) {
  alloc V: f32[4]
  for i, k in grid(4, 6) {
    block var(vi: spatial(4) = i, vk: reduce(6) = k) {
      init { V[vi] = 0.0 }
      V[vi] += X[vi, vk] * X[vi, vk]
    }
  }
  for i, j in grid(4, 6) {
    block out(vi: spatial(4) = i, vj: spatial(6) = j) {
      Y[vi, vj] = X[vi, vj] * rsqrt(V[vi] + 1e-05) * G[vj]
    }
  }
})",
                         "row_scale");
  double before = 0, after = 0;
  expect_names_kept(*f, kOn, &before, &after);
  EXPECT_LT(after, before);
  EXPECT_EQ(before, 312);
  EXPECT_LE(after, 308);
  expect_full_checks(*f);
  ::unsetenv(kOn);
}

// Rule 3 (hoist.cpp masked_value): the relu's masked cotangent select(c, dY, 0.0), whose
// condition is a let over the recomputed pre-activation, is computed by the gathers into S
// and B and the pointwise adjoint of X: one buffer (`hoist_mask0`) instead of three copies.
TEST(CostR18, MaskedCotangentIsComputedOnce) {
  Function f = parse_one(R"(func mod_relu(X: f32[3, 5], S: f32[3], B: f32[3]) -> (Y: f32[3, 5]) {
  for c, l in grid(3, 5) {
    block y(vc: spatial(3) = c, vl: spatial(5) = l) {
      Y[vc, vl] = max(S[vc] * X[vc, vl] + B[vc], 0.0)
    }
  }
})",
                         "mod_relu");
  double before = 0, after = 0;
  expect_names_kept(*f, kOn, &before, &after);
  EXPECT_EQ(before, 195);
  EXPECT_LE(after, 105);
  std::string text = print_function(*gradient(*f, {}));
  EXPECT_NE(text.find("hoist_mask0[h0, h1] = select(c00, a00, 0.0)"), std::string::npos) << text;
  expect_full_checks(*f);
  ::unsetenv(kOn);
}

}  // namespace
}  // namespace tirc

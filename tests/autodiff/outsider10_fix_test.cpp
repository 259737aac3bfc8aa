// Fixes found by the tenth outsider round (tests/zoo/outsider10), each test failed before,
// checked against finite differences.
#include <gtest/gtest.h>

#include <string>

#include "interp/interp.h"
#include "interp/stats.h"
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

// An in-place accumulation whose added term reads the same buffer elsewhere (`x[2:] += x[:2]`,
// `T[i + 2, j] += T[i, j]`) passes the cotangent through whole, as one whose term does not read
// it: before, it was a pass-through, a mask zeroing the rows it writes and a block adding the
// cotangent back there (8 adds for nothing). The term's own reads of T (other rows, the same
// element, after a subtraction) still get their gathers on top of the pass-through.
TEST(Outsider10Fix, AccumulationReadingItsBufferPassesThrough) {
  Function f = parse_one(R"(func acc(X: f32[4, 4]) -> (Y: f32[4, 4]) {
  alloc T: f32[4, 4]
  for i, j in grid(4, 4) {
    block cp(vi: spatial(4) = i, vj: spatial(4) = j) { T[vi, vj] = X[vi, vj] * X[vi, 0] }
  }
  for i, j in grid(2, 4) {
    block ad(vi: spatial(2) = i, vj: spatial(4) = j) { T[vi + 2, vj] += T[vi, vj] }
  }
  for i, j in grid(4, 4) {
    block sq(vi: spatial(4) = i, vj: spatial(4) = j) { T[vi, vj] = T[vi, vj] + T[vi, vj] * T[vi, vj] * 0.5 }
  }
  for i, j in grid(2, 4) {
    block sb(vi: spatial(2) = i, vj: spatial(4) = j) { T[vi, vj] = T[vi, vj] - sin(T[3 - vi, 3 - vj]) }
  }
  for i, j in grid(4, 4) {
    block y(vi: spatial(4) = i, vj: spatial(4) = j) { Y[vi, vj] = T[vi, vj] * X[vi, vj] }
  }
})",
                         "acc");
  expect_full_checks(*f);
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  for (const char* mask : {"block ad_mask", "block sq_mask", "block sb_mask"})
    EXPECT_EQ(text.find(mask), std::string::npos) << mask << "\n" << text;
  // ad: 8 adds (its read of rows 0..1); sq: 3 FLOPs per element; sb: sin's derivative.
  ArgMap none;
  EXPECT_LE(static_counts(*g, none).total.flops, 2.9 * static_counts(*f, none).total.flops) << text;
  expect_full_checks(*grad_of_printed(*f));
}

// A gather whose forward loop var is pinned to one value per element (`j0 = (x - 2) // 4`
// from `vi = j0 * 4 + ax0`, X read at vi + 2) must keep that var's own range 0 <= j0 < 3:
// `tirc schedule` of tests/schedule/tvm_style/compute_at_split_predicate.tir gives this
// function, whose F_grad loaded T_grad[-1] (x = 0, 1) and failed to run ("out-of-bounds
// load"); the pinned var's loop box had been dropped with its bounds (gather.cpp, pinned
// unknowns).
TEST(Outsider10Fix, PinnedGatherVarKeepsItsRange) {
  Function f = parse_one(R"(func ca2(X: f32[12]) -> (Y: f32[10]) {
  alloc T: f32[10]
  for j0 in serial(3) {
    for ax0 in serial(4) {
      block t(vi: spatial(10) = j0 * 4 + ax0) {
        where j0 * 4 + ax0 < 10 && (j0 * 4 + ax0) % 3 != 1
        T[vi] = X[vi + 2] * 2.0
      }
    }
    for j1 in serial(4) {
      block y(vi: spatial(10) = j0 * 4 + j1) {
        where j0 * 4 + j1 < 10
        Y[vi] = if_then_else(vi % 3 != 1, T[vi], 1.0)
      }
    }
  }
})",
                         "ca2");
  expect_full_checks(*f);
  // Exactly: X_grad[x] = 2 * Y_grad[x - 2] where (x - 2) % 3 != 1, for x in [2, 12).
  Function g = gradient(*f, {});
  NDArray x(DType::F32, {12}), c(DType::F32, {10});
  for (int i = 0; i < 12; ++i) x.set(i, 0.1 * i);
  for (int i = 0; i < 10; ++i) c.set(i, 1.0 + i);
  ArgMap out = run_interp(*g, {{"X", x}, {"Y_grad", c}});
  for (int i = 0; i < 12; ++i) {
    double want = i >= 2 && (i - 2) % 3 != 1 ? 2.0 * (1.0 + (i - 2)) : 0.0;
    EXPECT_EQ(out.at("X_grad").get(i), want) << i;
  }
}

// A block run twice per instance over a nest too large to enumerate whole (the cooperative
// fetch of tests/schedule/tvm_style/outsider4_mm_gpu_unit_tiles_vthread.tir: `v0 = bx // 2 * 16
// + ...` repeats every instance for bx % 2, under a `where` on a loop) is refused, naming the
// block and two loop points. Before, the check by independent groups of loops gave up on any
// condition that uses a loop, and the gradient summed both repeats (A's gradient doubled).
TEST(Outsider10Fix, RepeatedInstancesUnderLoopConditionRefused) {
  Function f = parse_one(R"(func rep(A: f32[128, 128]) -> (C: f32[128, 128]) {
  alloc S: f32[128, 128]
  for bx in serial(4) {
    for f in serial(80) {
      for k in serial(128) {
        block s(v0: spatial(128) = bx // 2 * 64 + f, v1: spatial(128) = k) {
          where f < 64
          S[v0, v1] = A[v0, v1]
        }
      }
    }
  }
  for i, j in grid(128, 128) {
    block c(vi: spatial(128) = i, vj: spatial(128) = j) { C[vi, vj] = S[vi, vj] * 2.0 }
  }
})",
                         "rep");
  try {
    gradient(*f, {});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(
        msg.find(
            "block s: the loop iterations (bx = 0, f = 0, k = 0) and (bx = 1, f = 0, k = 0) run the same "
            "instance"),
        std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace tirc

// Inits gradient() cannot read as they are (a loop filling a row, several statements,
// guards, a store the body does not update): normalize_for_autodiff moves them to a block of
// their own (docs/autodiff.md, Normalisation, rewrite 7). Each accepted form is checked by
// the interpreter (same outputs before/after on random inputs) and by check_grad --full in
// f64; what stays refused keeps an exact message naming the block and the construct.
#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/rewrite_check.h"

namespace tirc {
namespace {

using testing::check_rewrite;
using testing::contains;
using testing::refusal;

TEST(InitRewrite, LoopZeroFillsARow) {
  std::string t = check_rewrite(R"(func rowsq(A: f32[4, 8, 6]) -> (C: f32[4, 8]) {
  for i, k in grid(4, 6) {
    block C(vi: spatial(4) = i, vk: reduce(6) = k) {
      init { for j in serial(8) { C[vi, j] = 0.0 } }
      for j in serial(8) { C[vi, j] = C[vi, j] + A[vi, j, vk] * A[vi, j, vk] }
    }
  }
})",
                                "rowsq");
  EXPECT_TRUE(contains(t, "block C_init(")) << t;
  EXPECT_TRUE(contains(t, "where k == 0")) << t;
}

TEST(InitRewrite, InitLoopReadsAnInput) {
  check_rewrite(R"(func initrow(X: f32[4, 8]) -> (C: f32[4, 8]) {
  for i, k in grid(4, 8) {
    block C(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { for j in serial(8) { C[vi, j] = X[vi, j] } }
      for j in serial(8) { C[vi, j] += X[vi, vk] * X[vi, j] }
    }
  }
})",
                "initrow");
}

TEST(InitRewrite, TwoInitLoopsMaxAndSum) {
  check_rewrite(R"(func twoloops(X: f32[4, 6, 8]) -> (M: f32[4, 8], S: f32[4, 8]) {
  for i, k in grid(4, 6) {
    block B(vi: spatial(4) = i, vk: reduce(6) = k) {
      init {
        for j in serial(8) { M[vi, j] = min_value(f32) }
        for j in serial(8) { S[vi, j] = 0.0 }
      }
      for j in serial(8) {
        M[vi, j] = max(M[vi, j], X[vi, vk, j])
        S[vi, j] += X[vi, vk, j] * 0.5
      }
    }
  }
})",
                "twoloops");
}

TEST(InitRewrite, InitStoreTheBodyDoesNotUpdate) {
  // D's init used to be ignored by gradient() (its adjoint into B lost).
  std::string t = check_rewrite(R"(func extra(X: f32[4, 8], B: f32[4]) -> (Y: f32[4], D: f32[4]) {
  for i, k in grid(4, 8) {
    block B(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0; D[vi] = B[vi] * B[vi] }
      Y[vi] += X[vi, vk]
    }
  }
})",
                                "extra");
  EXPECT_TRUE(contains(t, "D[vi] = B[vi] * B[vi]")) << t;
}

TEST(InitRewrite, IfElseInInit) {
  check_rewrite(R"(func guarded(X: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block B(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { if vi < 2 { Y[vi] = 1.0 } else { Y[vi] = X[vi, 0] } }
      Y[vi] += X[vi, vk] * X[vi, vk]
    }
  }
})",
                "guarded");
}

TEST(InitRewrite, InitReadsTheReduceVar) {
  // init runs where vk == 0: the init block reads X[vi, 0].
  std::string t = check_rewrite(R"(func initred(X: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block B(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = X[vi, vk] * 2.0; for j in serial(1) { Y[vi] = Y[vi] + 1.0 } }
      Y[vi] += X[vi, vk]
    }
  }
})",
                                "initred");
  EXPECT_TRUE(contains(t, "X[vi, 0]")) << t;
}

TEST(InitRewrite, OpaqueStyleRowsOfFour) {
  // A blockized reduction: the outer block owns rows vio*4 + ii of an inner loop ii.
  check_rewrite(R"(func opq(A: f32[8, 16], W: f32[16]) -> (C: f32[8]) {
  for io, k in grid(2, 16) {
    block outer(vio: spatial(2) = io, vk: reduce(16) = k) {
      init { for ii in serial(4) { C[vio * 4 + ii] = 0.0 } }
      for ii in serial(4) { C[vio * 4 + ii] += A[vio * 4 + ii, vk] * W[vk] }
    }
  }
})",
                "opq");
}

TEST(InitRewrite, InitFillsMoreThanTheBodyUpdates) {
  check_rewrite(R"(func partrow(X: f32[4, 8, 3]) -> (C: f32[4, 8]) {
  for i, k in grid(4, 3) {
    block C(vi: spatial(4) = i, vk: reduce(3) = k) {
      init { for j in serial(8) { C[vi, j] = X[vi, j, 0] } }
      for j in serial(4) { C[vi, j * 2] += X[vi, j, vk] * X[vi, j * 2, vk] }
    }
  }
})",
                "partrow");
}

TEST(InitRewrite, ReduceLoopOutermost) {
  check_rewrite(R"(func korder(X: f32[4, 8]) -> (Y: f32[4], Z: f32[4]) {
  for k, i in grid(8, 4) {
    block B(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0 Z[vi] = min_value(f32) if vi > 9 { Y[vi] = 1.0 } }
      Y[vi] += X[vi, vk]
      Z[vi] = max(Z[vi], X[vi, vk] * 2.0)
    }
  }
})",
                "korder");
}

TEST(InitRewrite, RepeatedInstanceIsRefused) {
  // The binding i // 2 runs every instance twice: the init re-zeroes C between the two
  // passes, which a separate init block would not do. (With constant sizes, and for a loop
  // that no binding uses, repeated instances are found before, by rewrite 0c:
  // tests/autodiff/outsider5_fix_test.cpp; a symbolic size keeps this check reachable.)
  std::string m = refusal(R"(func repeated(n: i32, X: f32[n, 8]) -> (C: f32[n, 8]) {
  for i2, k in grid(2 * n, 8) {
    block C(vi: spatial(n) = i2 // 2, vk: reduce(8) = k) {
      init { for j in serial(8) { C[vi, j] = 0.0 } }
      for j in serial(8) { C[vi, j] += X[vi, vk] * X[vi, j] }
    }
  }
})",
                          "repeated");
  EXPECT_EQ(m,
            "block C: a loop in init is not supported (it moves to a block of its own only when each "
            "instance of the block runs once and its spatial iterations touch disjoint elements of the "
            "buffers it writes)");
}

TEST(InitRewrite, InitSharedByAllRowsIsRefused) {
  // T is zeroed by every row's init: the rows' iterations overlap on T.
  std::string m = refusal(R"(func shared(X: f32[4, 8]) -> (Y: f32[4], T: f32[8]) {
  for i, k in grid(4, 8) {
    block B(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0; for j in serial(8) { T[j] = 0.0 } }
      Y[vi] += X[vi, vk]
    }
  }
})",
                          "shared");
  EXPECT_EQ(m,
            "block B: a loop in init is not supported (it moves to a block of its own only when each "
            "instance of the block runs once and its spatial iterations touch disjoint elements of the "
            "buffers it writes)");
}

TEST(InitRewrite, UnupdatedInitStoreIsRefusedWhenItCannotMove) {
  std::string m = refusal(R"(func extra_rep(n: i32, X: f32[n, 8], B: f32[n]) -> (Y: f32[n], D: f32[n]) {
  for i2, k in grid(2 * n, 8) {
    block B(vi: spatial(n) = i2 // 2, vk: reduce(8) = k) {
      init { Y[vi] = 0.0; D[vi] = B[vi] * B[vi] }
      Y[vi] += X[vi, vk]
    }
  }
})",
                          "extra_rep");
  EXPECT_EQ(m,
            "block B: init stores to D, which the block body does not update (it moves to a block of its "
            "own only when each instance of the block runs once and its spatial iterations touch disjoint "
            "elements of the buffers it writes)");
}

}  // namespace
}  // namespace tirc

// Three silently wrong gradients (or an invalid F_grad) a reviewer found in normalisation
// (docs/autodiff.md, "Normalisation"), review round 1. Each test fails without its fix:
//   1. rewrite 0f (TempValues): both arms of an `if` storing one expression object to a temp
//      element that already holds a value left the stale value in place (F_grad
//      differentiated T[0] = A instead of A * A);
//   2. rewrite 12 (versions): a decreasing step `K - v` versioned y with y's shape, indexed by
//      v, whose range is not y's (`vt = t + 4` over scan(8)): F_grad stored H_s1[4] of an
//      f32[4];
//   3. a reduction read inside the loop feeding its reduce var (the reader sees partial sums)
//      was differentiated as if the reader saw the finished sum: now refused, naming both
//      blocks; the same reads after the loop stay accepted and correct.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/refusal_of.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

using testing::refusal_of;

// ---- 1. Rewrite 0f: one value stored by both arms ----

TEST(ReviewFix, TempSameValueInBothArms) {
  const char* src = R"(func tv(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[2]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk]
      T[1] = A[vi, vk] * A[vi, vk]
      if vk % 2 == 0 {
        T[0] = T[1]
      } else {
        T[0] = T[1]
      }
      S[vi] = S[vi] + T[0]
    }
  }
})";
  testing::check_rewrite(src, "tv");
  Function f = parse_one(src, "tv");
  expect_full_checks(*f);  // F_grad differentiated T[0] = A (not A * A) before
}

// ---- 2. Rewrite 12: versions of a decreasing step cover the step var's range ----

TEST(ReviewFix, DecreasingStepVersionsCoverTheStepRange) {
  const char* src = R"(func f(X: f32[4], W: f32[1]) -> (H: f32[4], C: f32[4]) {
  for t in serial(4) {
    block h(vt: scan(8) = t + 4) { H[7 - vt] = tanh(if_then_else(vt > 4, H[8 - vt], 0.0) * W[0] + if_then_else(vt > 4, C[8 - vt], 1.0)) }
    block c(vt: scan(8) = t + 4) { C[7 - vt] = if_then_else(vt > 4, C[8 - vt], 0.0) * 0.5 + H[7 - vt] * X[7 - vt] }
  }
})";
  Function f = parse_one(src, "f");
  std::string g = print_function(*gradient(*f, {}));
  // vt reaches 7: the versions (indexed by vt) need 8 elements, not H's 4.
  EXPECT_NE(g.find("alloc H_s1: f32[8]"), std::string::npos) << g;
  EXPECT_NE(g.find("alloc C_s1: f32[8]"), std::string::npos) << g;
  expect_full_checks(*f);  // threw "out-of-bounds store H_s1[4]" before
}

// The usual decreasing step (binding t over scan(4)) keeps versions of y's shape.
TEST(ReviewFix, DecreasingStepOverTheWholeRangeUnchanged) {
  const char* src = R"(func f(X: f32[4], W: f32[1]) -> (H: f32[4], C: f32[4]) {
  for t in serial(4) {
    block h(vt: scan(4) = t) { H[3 - vt] = tanh(if_then_else(vt > 0, H[4 - vt], 0.0) * W[0] + if_then_else(vt > 0, C[4 - vt], 1.0)) }
    block c(vt: scan(4) = t) { C[3 - vt] = if_then_else(vt > 0, C[4 - vt], 0.0) * 0.5 + H[3 - vt] * X[3 - vt] }
  }
})";
  Function f = parse_one(src, "f");
  std::string g = print_function(*gradient(*f, {}));
  EXPECT_NE(g.find("alloc H_s1: f32[4]"), std::string::npos) << g;
  expect_full_checks(*f);
}

// ---- 3. A reduction read inside the loop that feeds its reduce var ----

TEST(ReviewFix, PartialReductionReadRefused) {
  // Explicit blocks: z sees A after each term.
  EXPECT_EQ(refusal_of(R"(func f(X: f32[3]) -> (A: f32[1], Z: f32[3]) {
  for k in serial(3) {
    block a(vk: reduce(3) = k) {
      init { A[0] = 0.0 }
      A[0] = A[0] + X[vk]
    }
    block z(vk: spatial(3) = k) { Z[vk] = A[0] }
  }
})",
                       "f"),
            "block z: reads A, which block a accumulates over loop k (reduce iter var vk), inside that loop: "
            "it sees the reduction's partial values, and gradient() reads a reduction as finished before "
            "its readers; finish the reduction in a loop of its own before reading A, or store each running "
            "value to an element of its own (a scan)");
  // The reader before the reduction (it sees the sum of the earlier terms).
  std::string m = refusal_of(R"(func f(X: f32[3]) -> (A: f32[1], Z: f32[3]) {
  for k in serial(3) {
    block z(vk: spatial(3) = k) { Z[vk] = A[0] * X[vk] }
    block a(vk: reduce(3) = k) {
      init { A[0] = 0.0 }
      A[0] = A[0] + X[vk]
    }
  }
})",
                             "f");
  EXPECT_EQ(m.rfind("block z: reads A, which block a accumulates over loop k", 0), 0u) << m;
}

TEST(ReviewFix, PartialReductionReadPlainLoopsRefused) {
  // Plain statements (wrapped as blocks A_1, Z by rewrite 0): a running sum read at every step
  // is a recurrence over the serial loop k, accepted since helper round 18 (normalisation
  // rewrite 8 reads k as a scan when a reader sees the partial sums; Z is the prefix sum).
  expect_full_checks(*parse_one(R"(func f(X: f32[3]) -> (A: f32[1], Z: f32[3]) {
  A[0] = 0.0
  for k in serial(3) {
    A[0] = A[0] + X[k]
    Z[k] = A[0]
  }
})",
                                "f"));
  // Per time step and row, a recurrence's init and a sum, read per term.
  std::string m = refusal_of(R"(func f(X: f32[5, 3], U: f32[3, 3]) -> (A: f32[5, 3], Z: f32[5, 3, 3]) {
  for t in serial(5) {
    for j in serial(3) {
      A[t, j] = if_then_else(t > 0, A[t - 1, j] * 0.5, 0.0)
      for k in serial(3) {
        A[t, j] = A[t, j] + U[j, k] * X[t, k]
        Z[t, j, k] = A[t, j] * 2.0
      }
    }
  }
})",
                 "f");
  EXPECT_EQ(m.rfind("block Z: reads A, which block A_1 accumulates over loop k", 0), 0u) << m;
  m = refusal_of(R"(func f(X: f32[5, 3], U: f32[3, 3]) -> (A: f32[5, 3], Z: f32[5, 3, 3]) {
  for t in serial(5) {
    for j in serial(3) {
      A[t, j] = 0.0
      for k in serial(3) {
        A[t, j] = A[t, j] + U[j, k] * X[t, k]
        Z[t, j, k] = A[t, j] * 2.0
      }
    }
  }
})",
                 "f");
  EXPECT_EQ(m.rfind("block Z: reads A, which block A_1 accumulates over loop k", 0), 0u) << m;
}

TEST(ReviewFix, PartialReductionReadInScanRefused) {
  std::string m = refusal_of(R"(func f(X: f32[5, 3], U: f32[3, 3]) -> (A: f32[5, 3], Z: f32[5, 3, 3]) {
  for t in serial(5) {
    for j in serial(3) {
      for k in serial(3) {
        block w(vt: scan(5) = t, vj: spatial(3) = j, vk: reduce(3) = k) {
          init { A[vt, vj] = if_then_else(vt > 0, A[vt - 1, vj] * 0.5, 0.0) }
          A[vt, vj] = A[vt, vj] + U[vj, vk] * X[vt, vk]
        }
        block z(vt: scan(5) = t, vj: spatial(3) = j, vk: spatial(3) = k) {
          Z[vt, vj, vk] = A[vt, vj] * 2.0
        }
      }
    }
  }
})",
                             "f");
  EXPECT_EQ(m.rfind("block z: reads A, which block w accumulates over loop k", 0), 0u) << m;
}

// The same reads once the reduction's loop is done stay accepted, and correct.
TEST(ReviewFix, FinishedReductionReadsAccepted) {
  for (const char* src : {R"(func f(X: f32[3]) -> (A: f32[1], Z: f32[3]) {
  for k in serial(3) {
    block a(vk: reduce(3) = k) {
      init { A[0] = 0.0 }
      A[0] = A[0] + X[vk]
    }
  }
  for k in serial(3) {
    block z(vk: spatial(3) = k) { Z[vk] = A[0] * X[vk] }
  }
})",
                          R"(func f(X: f32[4, 3]) -> (A: f32[4], Z: f32[4]) {
  for i in serial(4) {
    for k in serial(3) {
      block a(vi: spatial(4) = i, vk: reduce(3) = k) {
        init { A[vi] = 0.0 }
        A[vi] = A[vi] + X[vi, vk] * X[vi, vk]
      }
    }
    block z(vi: spatial(4) = i) { Z[vi] = sqrt(A[vi]) }
  }
})",
                          R"(func f(X: f32[5, 3], U: f32[3, 3]) -> (A: f32[5, 3], Z: f32[5, 3, 3]) {
  for t in serial(5) {
    for j in serial(3) {
      for k in serial(3) {
        block w(vt: scan(5) = t, vj: spatial(3) = j, vk: reduce(3) = k) {
          init { A[vt, vj] = if_then_else(vt > 0, A[vt - 1, vj] * 0.5, 0.0) }
          A[vt, vj] = A[vt, vj] + U[vj, vk] * X[vt, vk]
        }
      }
      for k in serial(3) {
        block z(vt: scan(5) = t, vj: spatial(3) = j, vk: spatial(3) = k) {
          Z[vt, vj, vk] = A[vt, vj] * 2.0
        }
      }
    }
  }
})"}) {
    Function f = parse_one(src, "f");
    expect_full_checks(*f);
  }
}

}  // namespace
}  // namespace tirc

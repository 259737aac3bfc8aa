// LANGUAGE.md's Blocks example lists an optional block-local `alloc`: one that the block never
// touches must not make a reduction block refused (normalisation rewrite 0e drops it); a
// used temp written before it is read is inlined (rewrite 0f), other used ones in a reduction
// block stay refused with a reason (docs/autodiff.md: block-local allocs in blocks with
// reduce vars).
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

TEST(UnusedAlloc, SpecBlocksExampleWithAnAllocDifferentiates) {
  Function f = parse_one(R"(func mm(A: f32[12, 8], B: f32[8, 6]) -> (C: f32[12, 6]) {
  for i, j, k in grid(12, 6, 8) {
    block C(vi: spatial(12) = i, vj: spatial(6) = j, vk: reduce(8) = k) {
      where i < 10
      reads A[vi, vk], B[vk, vj]
      writes C[vi, vj]
      alloc T: f32[16, 16]
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
  for i, j in grid(12, 6) {
    block C2(vi: spatial(12) = i, vj: spatial(6) = j) {
      where i >= 10
      C[vi, vj] = 0.0
    }
  }
}
)",
                         "mm");
  expect_full_checks(*f);
}

TEST(UnusedAlloc, UsedAllocInAReductionDifferentiates) {
  // A temp written before it is read in each instance is inlined (normalisation rewrite 0f);
  // the other used ones stay refused (tests/autodiff/local_alloc_reduce_test.cpp).
  Function f = parse_one(R"(func rs(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk] * 2.0
      S[vi] = S[vi] + T[0]
    }
  }
}
)",
                         "rs");
  expect_full_checks(*f);
}

}  // namespace
}  // namespace tirc

// Block-local temps in blocks with reduce vars (TVM's opaque style: `alloc T: f32[1];
// T[0] = ...; S[vi] = S[vi] + T[0] * T[0]`): normalisation rewrite 0f inlines a temp written
// once, unconditionally, before it is read in each instance (docs/autodiff.md,
// "Normalisation"); temps read before written or stored under reduce-dependent control stay
// refused with gradient()'s usual messages.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

void expect_refused(const std::string& src, const std::string& name, const std::string& msg) {
  Function f = parse_one(src, name);
  try {
    gradient(*f, {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
  }
}

TEST(LocalAllocReduce, OpaqueTempSquaredDifferentiates) {
  Function f = parse_one(R"(func rs(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk] * 2.0
      S[vi] = S[vi] + T[0] * T[0]
    }
  }
}
)",
                         "rs");
  expect_full_checks(*f);
  expect_full_checks(*grad_of_printed(*f));  // second order
}

TEST(LocalAllocReduce, TwoTempsAndATwoDimTempDifferentiate) {
  Function f = parse_one(R"(func mm(A: f32[3, 5], B: f32[5, 4]) -> (C: f32[3, 4]) {
  for i, j, k in grid(3, 4, 5) {
    block C(vi: spatial(3) = i, vj: spatial(4) = j, vk: reduce(5) = k) {
      alloc T: f32[2]
      alloc U: f32[2, 2]
      init { C[vi, vj] = 0.0 }
      T[1] = A[vi, vk] * B[vk, vj]
      U[1, 0] = sin(T[1]) + B[vk, vj]
      C[vi, vj] = C[vi, vj] + U[1, 0] * T[1]
    }
  }
}
)",
                         "mm");
  expect_full_checks(*f);
  expect_full_checks(*grad_of_printed(*f));
}

TEST(LocalAllocReduce, TempReadBeforeWrittenStaysRefused) {
  // The first load reads the previous instance's value: inlining would change it.
  expect_refused(R"(func rb(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + T[0]
      T[0] = A[vi, vk] * 2.0
    }
  }
}
)",
                 "rb", "block S: a store reads T, which another store of the same block writes");
}

TEST(LocalAllocReduce, TempStoredUnderReduceControlStaysRefused) {
  // T keeps A[vi, 0..3] for k >= 4: a value carried between instances.
  expect_refused(R"(func rc(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      if vk < 4 {
        T[0] = A[vi, vk]
      }
      S[vi] = S[vi] + T[0] * T[0]
    }
  }
}
)",
                 "rc", "block S: a store reads T, which another store of the same block writes");
}

TEST(LocalAllocReduce, TempLoadOfAnotherElementStaysRefused) {
  // T[1] is never written in the instance: its value comes from elsewhere.
  expect_refused(R"(func re(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[2]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk]
      S[vi] = S[vi] + T[0] * T[1]
    }
  }
}
)",
                 "re", "block S: a store reads T, which another store of the same block writes");
}

}  // namespace
}  // namespace tirc

// Block-local temps of reductions stored several times, under `if` guards or in both arms of
// an if/else (normalisation rewrite 0f, general form, helper round h5: docs/autodiff.md
// "Normalisation"). Each accepted block: the normalised function computes what it does
// (interpreter, three seeds), check_grad --full, F_grad re-parses, and the second order.
// A temp whose value may come from another instance stays refused.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;

void expect_temp_inlined(const char* src, const char* name) {
  std::string text = testing::check_rewrite(src, name);
  EXPECT_EQ(text.find("alloc"), std::string::npos) << text;  // the temp is gone
  Function f = parse_one(src, name);
  expect_full_checks(*f);
  expect_full_checks(*grad_of_printed(*f));  // second order
}

TEST(LocalTempValues, StoredTwice) {
  expect_temp_inlined(R"(func twice(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk]
      T[0] = T[0] * T[0] + 1.0
      S[vi] = S[vi] + T[0]
    }
  }
}
)",
                      "twice");
}

// A leaky relu through the temp: the guarded store keeps the earlier value where it is skipped.
TEST(LocalTempValues, StoredUnderAGuard) {
  expect_temp_inlined(R"(func leaky(A: f32[4, 8], B: f32[8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      T[0] = A[vi, vk]
      if A[vi, vk] < 0.0 { T[0] = T[0] * 0.1 }
      S[vi] = S[vi] + T[0] * B[vk]
    }
  }
}
)",
                      "leaky");
}

// Two elements set in both arms of an if/else on a reduce var, read by a sum and a max.
TEST(LocalTempValues, BothArmsTwoElements) {
  expect_temp_inlined(R"(func arms(A: f32[4, 8]) -> (S: f32[4], M: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[2]
      init {
        S[vi] = 0.0
        M[vi] = min_value(f32)
      }
      if vk % 2 == 0 {
        T[0] = A[vi, vk]
        T[1] = exp(A[vi, vk])
      } else {
        T[0] = -A[vi, vk]
        T[1] = 1.0
      }
      S[vi] = S[vi] + T[0] * T[1]
      M[vi] = max(M[vi], T[0])
    }
  }
}
)",
                      "arms");
}

// Refused: for vk >= 4 the temp keeps the value of an earlier instance.
TEST(LocalTempValues, ValueFromAnotherInstanceRefused) {
  Function f = parse_one(R"(func carried(A: f32[4, 8]) -> (S: f32[4]) {
  for i, k in grid(4, 8) {
    block S(vi: spatial(4) = i, vk: reduce(8) = k) {
      alloc T: f32[1]
      init { S[vi] = 0.0 }
      if vk < 4 { T[0] = A[vi, vk] }
      T[0] = T[0] * 2.0
      S[vi] = S[vi] + T[0]
    }
  }
}
)",
                         "carried");
  try {
    gradient(*f, {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "block S: several stores to T in one block body are not supported");
  }
}

}  // namespace
}  // namespace tirc

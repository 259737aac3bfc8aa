// check_grad --full spreads its finite differences over threads (check_grad.cpp
// parallel_chunks): the result must not depend on how many, including a wrong gradient's
// failure and its notes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ir/printer.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"

namespace tirc {
namespace {

using tirc::testing::parse_one;

std::string summary(const CheckGradResult& r) {
  std::string s = std::to_string(r.passed) + " passed, " + std::to_string(r.failed) + " failed\n";
  for (auto& in : r.inputs) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %d checks %d skipped %.17g %.17g %d\n", in.name.c_str(),
                  static_cast<int>(in.checks), static_cast<int>(in.skipped), in.max_abs_err, in.max_rel_err,
                  in.passed ? 1 : 0);
    s += buf;
    for (auto& n : in.notes) s += "  " + n + "\n";
  }
  return s;
}

CheckGradResult full_check(const FunctionNode& f, const char* threads) {
  setenv("TIRC_CHECK_GRAD_THREADS", threads, 1);
  CheckGradOptions o;
  o.full = true;
  o.seed = 7;
  CheckGradResult r = check_grad(f, o);
  unsetenv("TIRC_CHECK_GRAD_THREADS");
  return r;
}

TEST(CheckGradThreads, SameResultWhateverTheThreads) {
  // 40 + 24 elements: several chunks per worker count, uneven splits.
  Function f = parse_one(R"(func mm(A: f32[5, 8], B: f32[8, 3]) -> (C: f32[5, 3]) {
  for i, j, k in grid(5, 3, 8) {
    block C(vi: spatial(5) = i, vj: spatial(3) = j, vk: reduce(8) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += tanh(A[vi, vk]) * B[vk, vj]
    }
  }
})",
                         "mm");
  std::string one = summary(full_check(*f, "1"));
  EXPECT_NE(one.find("2 passed, 0 failed"), std::string::npos) << one;
  for (const char* t : {"2", "3", "7"}) EXPECT_EQ(summary(full_check(*f, t)), one) << t << " threads";
}

// A kink at 0 (abs): finite differences straddling it disagree with the one-sided gradient,
// so some elements fail; which ones, and the notes, must not depend on the threads.
TEST(CheckGradThreads, FailuresIdenticalWhateverTheThreads) {
  Function f = parse_one(R"(func k(X: f32[32] in [-1.0e-7, 1.0e-7]) -> (Y: f32[32]) {
  for i in serial(32) {
    block Y(vi: spatial(32) = i) { Y[vi] = abs(X[vi]) }
  }
})",
                         "k");
  CheckGradResult r1 = full_check(*f, "1");
  EXPECT_EQ(r1.failed, 1) << summary(r1);
  EXPECT_EQ(summary(full_check(*f, "2")), summary(r1));
  EXPECT_EQ(summary(full_check(*f, "5")), summary(r1));
}

}  // namespace
}  // namespace tirc

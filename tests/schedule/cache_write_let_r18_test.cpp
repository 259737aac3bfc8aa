// cache_write of a block whose body binds a let (TVM's `T.let` / a local inside a block body,
// e.g. `let a = A[vi, vk]` in a matmul). Found by the round-18 zoo outsider: it was refused with
// "stores buffer C at more than one index" although the block stores C at one index only.
#include <gtest/gtest.h>

#include <string>

#include "schedule_checks.h"

namespace tirc {
namespace {

std::string matmul(const std::string& body, const std::string& more = "") {
  return R"(func mm(A: f32[4, 4], B: f32[4, 4], I: i32[4]) -> (C: f32[4, 4]) {
  for i, j, k in grid(4, 4, 4) {
    block c(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
      init { C[vi, vj] = 0.0 }
      )" + body + R"(
    }
  }
}
schedule mm {
  b = get_block("c")
  c = cache_write(b, 0, "local")
  )" + more + R"(
}
)";
}

TEST(CacheWriteLetR18, LetNotInTheStoreIndexIsAccepted) {
  std::string out = testing::apply_and_compare(matmul("let a = A[vi, vk]\n      C[vi, vj] += a * B[vk, vj]"));
  EXPECT_NE(out.find("C_local"), std::string::npos) << out;
}

TEST(CacheWriteLetR18, LetReadingTheCachedBufferIsRedirected) {
  // The let reads C itself: it must read the cache (the partial sum), not the stale output.
  testing::apply_and_compare(matmul("let acc = C[vi, vj]\n      C[vi, vj] = acc + A[vi, vk] * B[vk, vj]"));
}

TEST(CacheWriteLetR18, ThenComputeAtOfTheCopyBack) {
  testing::apply_and_compare(matmul("let a = A[vi, vk]\n      C[vi, vj] += a * B[vk, vj]",
                                    "i, j, k = get_loops(b)\n  reverse_compute_at(c, i)"));
}

TEST(CacheWriteLetR18, StoreIndexUsingTheLetIsRefused) {
  EXPECT_EQ(testing::schedule_refusal(R"(func cp(A: f32[4, 4]) -> (C: f32[4, 4]) {
  for i, j in grid(4, 4) {
    block c(vi: spatial(4) = i, vj: spatial(4) = j) {
      let r = 3 - vi
      C[r, vj] = A[vi, vj]
    }
  }
}
schedule cp {
  c = cache_write(get_block("c"), 0, "local")
}
)"),
            "cache_write: block c stores buffer C at an index that uses its let r (the copy-back needs the "
            "index as a function of the iter vars)");
}

}  // namespace
}  // namespace tirc

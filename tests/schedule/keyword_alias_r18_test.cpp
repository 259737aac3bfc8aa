// TVM <= 0.12 spelled blockize's parameter `loop` (0.13 renamed it `target`); a schedule copied
// from an older TVM script was refused with "unknown keyword argument 'loop'" (round-18 outsider).
#include <gtest/gtest.h>

#include <string>

#include "schedule_checks.h"

namespace tirc {
namespace {

std::string mm(const std::string& instr) {
  return R"(func mm(A: f32[16, 8], B: f32[8, 12]) -> (C: f32[16, 12]) {
  for i, j, k in grid(16, 12, 8) {
    block C(vi: spatial(16) = i, vj: spatial(12) = j, vk: reduce(8) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += A[vi, vk] * B[vk, vj]
    }
  }
}
schedule mm {
  b = get_block("C")
  i, j, k = get_loops(b)
  )" + instr + R"(
}
)";
}

TEST(KeywordAliasR18, BlockizeLoopKeywordOfOlderTvm) {
  std::string a = testing::apply_and_compare(mm("o = blockize(loop=j)"));
  std::string b = testing::apply_and_compare(mm("o = blockize(target=j)"));
  EXPECT_EQ(a, b);
  EXPECT_EQ(testing::schedule_refusal(mm("o = blockize(loops=j)")),
            "blockize: unknown keyword argument 'loops'");
}

}  // namespace
}  // namespace tirc

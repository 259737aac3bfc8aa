// Round 19 fuzzer findings (docs/schedule.md, "Round 19", Fuzzer). The generator drew the new
// cache_inplace on blocks whose copy-in would read elements not written yet; refused now.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

using testing::schedule_refusal;

// Seed 346 (embedding_bag, max_pool2d_overlap, softmax_temp's T_max, cosine_similarity's dots):
// a reduction with init writes each element before reading it, so the copy-in read an
// uninitialised output ("block "Y_local": read of uninitialised element Y[0, 0] of output buffer
// Y" in the interpreter).
TEST(SchedFuzzR19, CacheInplaceOfAReductionWithInit) {
  EXPECT_EQ(
      schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block s(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += A[vi, vk]
    }
  }
}
schedule f {
  cache_inplace(get_block("s"), 0, "local")
}
)"),
      "cache_inplace: block s has an init: it writes Y before reading it, so the copy-in would read elements "
      "not written yet (use cache_write)");
}

// Seed 346 on the first fix: the reduction nested in a blockized block (embedding_bag's bag_o).
TEST(SchedFuzzR19, CacheInplaceOfABlockizedReduction) {
  EXPECT_EQ(schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block s(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += A[vi, vk]
    }
  }
}
schedule f {
  i, k = get_loops(get_block("s"))
  so = blockize(i)
  cache_inplace(so, 0, "local")
}
)"),
            "cache_inplace: block s_o holds block s, which has an init: it writes Y before reading it, so "
            "the copy-in "
            "would read elements not written yet");
}

// The same for a `where` skipping instances (the copy-in reads their elements too; here the odd
// rows that nothing wrote).
TEST(SchedFuzzR19, CacheInplaceUnderACondition) {
  EXPECT_EQ(schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4, 8]) {
  for i, j in grid(4, 8) {
    block z(vi: spatial(4) = i, vj: spatial(8) = j) {
      where i % 2 == 0
      Y[vi, vj] = 0.0
    }
  }
  for i, j in grid(4, 8) {
    block u(vi: spatial(4) = i, vj: spatial(8) = j) {
      where i % 2 == 0
      Y[vi, vj] = Y[vi, vj] + A[vi, vj]
    }
  }
}
schedule f {
  cache_inplace(get_block("u"), 0, "local")
}
)"),
            "cache_inplace: block u runs under the condition i % 2 == 0, and the copy-in of Y would read the "
            "elements of the instances it skips");
}

}  // namespace
}  // namespace tirc

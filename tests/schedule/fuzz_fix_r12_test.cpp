// Round 12: wrong schedules found by the schedule fuzzer's long mode (seed 7302), each now
// refused with its reason (docs/schedule.md, "Round 12").
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// pad_einsum of the init block of a blockized reduction (`reorder(j, k, i)`, `blockize(k)`,
// `pad_einsum(sum_init, [4])` on examples/ops/mean.tir) padded S into S_pad for the init only:
// the update block in the same nest kept accumulating into the never initialised S, and the
// copy-back then overwrote S with the zeros of S_pad.
TEST(SchedFuzzR12, PadEinsumOfABlockSharingItsOutputInTheNest) {
  EXPECT_EQ(
      testing::schedule_refusal(R"(func mean(X: f32[3, 4, 5]) -> (Y: f32[3, 1, 1]) {
  alloc S: f32[3]
  for i, j, k in grid(3, 4, 5) {
    block sum(vi: spatial(3) = i, vj: reduce(4) = j, vk: reduce(5) = k) {
      init { S[vi] = 0.0 }
      S[vi] += X[vi, vj, vk]
    }
  }
  for i in serial(3) {
    block div(vi: spatial(3) = i) { Y[vi, 0, 0] = S[vi] / 20.0 }
  }
}
schedule mean {
  i, j, k = sch.get_loops(sch.get_block("sum"))
  sch.reorder(j, k, i)
  sch.blockize(k)
  sch.pad_einsum(sch.get_block("sum_init"), [4])
}
)"),
      "pad_einsum: block sum accesses buffer S in the loop nest of block sum_init (the padded copy S_pad "
      "would not match it)");
}

// cache_read of a buffer written under a triangular `where` (rfactor of rev_cumsum's gradient)
// copied the whole buffer, reading the elements the writer skips (uninitialised: an error in the
// interpreter). A bound guard of a non-dividing split stays accepted
// (tvm_ported_a/cache_read_write__test_cache_read_with_block_predicate.tir).
TEST(SchedFuzzR12, CacheReadOfAPartlyWrittenBuffer) {
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(G: f32[3, 7]) -> (D: f32[3, 7]) {
  alloc R: f32[3, 7, 7]
  for a, b, k in grid(3, 7, 7) {
    block rf(v2: spatial(3) = a, v3: spatial(7) = b, vk: spatial(7) = k) {
      where b >= k
      R[v2, vk, v3] = G[v2, v3 - vk]
    }
  }
  for a, b, k in grid(3, 7, 7) {
    block wb(v2: spatial(3) = a, v3: spatial(7) = b, vk: reduce(7) = k) {
      where b >= k
      init { D[v2, v3] = 0.0 }
      D[v2, v3] = D[v2, v3] + R[v2, vk, v3]
    }
  }
}
schedule f {
  sch.cache_read(sch.get_block("wb"), 0, "global")
}
)"),
      "cache_read: block rf writes buffer R under the condition b >= k, and the copy of the whole buffer "
      "would read the elements it skips");
}

// The same for reindex of a read (seed 7304: `rfactor(k, 2)`, `fuse` of the write-back's loops,
// `reindex(rcs, ("read", 0))` on examples/ops/rev_cumsum.tir): its copy runs over the block's
// whole iteration box.
TEST(SchedFuzzR12, ReindexOfAPartlyWrittenBuffer) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(X: f32[3, 14]) -> (Y: f32[3, 7]) {
  alloc R: f32[3, 7, 7]
  for b, i, k in grid(3, 7, 7) {
    block rf(vb: spatial(3) = b, vi: spatial(7) = i, vk: spatial(7) = k) {
      where i + k < 7
      R[vb, vi, vk] = X[vb, vi + vk]
    }
  }
  for b, i, k in grid(3, 7, 7) {
    block wb(vb: spatial(3) = b, vi: spatial(7) = i, vk: reduce(7) = k) {
      where i + k < 7
      init { Y[vb, vi] = 0.0 }
      Y[vb, vi] = Y[vb, vi] + R[vb, vi, vk]
    }
  }
}
schedule f {
  sch.reindex(sch.get_block("wb"), "R")
}
)"),
            "reindex: block rf writes buffer R under the condition i + k < 7, and the copy over the "
            "iteration space "
            "of block wb would read the elements it skips");
}

}  // namespace
}  // namespace tirc

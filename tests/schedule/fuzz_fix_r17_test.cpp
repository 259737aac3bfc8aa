// Round 17: wrong schedules found by the schedule fuzzer's long mode (seeds 300-320), each now
// refused or corrected (docs/schedule.md, "Round 17").
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// Seed 305: rnn_tanh's scan loop split by `[_, 4]`, its inner part split again by `[5, 3, _]`
// (15 iterations for 4: the blocks run under `a0 * 3 + a1 + a2 < 4`), then cache_read of H for
// hw. The copy, placed in the innermost loop next to hw, ran in every iteration, also in the
// skipped ones: at tile 0, iteration 5 it copied H[4] (t - 1 = 4), which only tile 1 writes
// (interpreter: "read of uninitialised element H[4, 0] of output buffer H"; the JIT copied
// garbage nobody used). The copy now gets the readers' common conjuncts over the loops at and
// above its loop.
TEST(SchedFuzzR17, CacheReadInSkippedIterations) {
  std::string text =
      R"(func rnn_tanh(X: f32[6, 3], W: f32[4, 4] in [-0.5, 0.5], U: f32[4, 3], Bias: f32[4]) -> (H: f32[6, 4]) {
  alloc XU: f32[6, 4]
  alloc A: f32[6, 4]
  for t in serial(6) {
    for i, k in grid(4, 3) {
      block xu(vt: scan(6) = t, vi: spatial(4) = i, vk: reduce(3) = k) {
        init { XU[vt, vi] = Bias[vi] }
        XU[vt, vi] = XU[vt, vi] + U[vi, vk] * X[vt, vk]
      }
    }
    for i, k in grid(4, 4) {
      block hw(vt: scan(6) = t, vi: spatial(4) = i, vk: reduce(4) = k) {
        init { A[vt, vi] = XU[vt, vi] }
        A[vt, vi] = A[vt, vi] + if_then_else(vt > 0, W[vi, vk] * H[vt - 1, vk], 0.0)
      }
    }
    for i in serial(4) {
      block h(vt: scan(6) = t, vi: spatial(4) = i) { H[vt, vi] = tanh(A[vt, vi]) }
    }
  }
}
schedule rnn_tanh {
  t, i, k = get_loops(get_block("xu"))
  s0, s1 = split(t, [_, 4])
  a0, a1, a2 = split(s1, [5, 3, _])
  c0 = cache_read(get_block("hw"), 2, "local")
}
)";
  std::string out = testing::apply_and_compare(text);
  EXPECT_NE(out.find("a0 * 3 + a1 + a2 < 4\n              reads H["), std::string::npos) << out;
}

}  // namespace
}  // namespace tirc

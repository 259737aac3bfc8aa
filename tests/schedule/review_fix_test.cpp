// Wrong schedules found by reviewing this round's affine-load paths: `x % c` over a symbolic
// extent E was read as a full digit of extent c whatever E (transforms/schedule/arith.cpp,
// parse_split_atom). With `vf // 4` of extent ceil(n / 4) the pair looked one-to-one onto
// [4, ceil(n / 4)] although it reaches only n of those points, so reverse_compute_at ran C
// outside its domain, reverse_compute_inline stored past the end of Y, and the plain
// reverse_compute_at path gave C 4 * ceil(n / 4) iterations instead of n. Each is refused now;
// the same schedules over an extent 4 divides (TVM's test_shape_var_as_bound) stay accepted.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

const char* kLayoutLoad = R"(func f(n: i32 in [1, 8], A: f32[4, (n + 3) // 4]) -> (Y: f32[n]) {
  alloc X: f32[4, (n + 3) // 4]
  for i, j in grid(4, (n + 3) // 4) {
    block B(vi: spatial(4) = i, vj: spatial((n + 3) // 4) = j) { X[vi, vj] = A[vi, vj] + 1.0 }
  }
  for l in serial(n) {
    block C(vf: spatial(n) = l) { Y[vf] = X[vf % 4, vf // 4] * 2.0 }
  }
}
)";

TEST(ScheduleReviewFix, ReverseComputeAtOfAModuloLoadOverASymbolicExtent) {
  EXPECT_EQ(testing::schedule_refusal(std::string(kLayoutLoad) + R"(schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i)
}
)"),
            "reverse_compute_at: the indices of the load of X in block C are not distinct iter vars");
}

TEST(ScheduleReviewFix, ReverseComputeInlineOfAModuloLoadOverASymbolicExtent) {
  EXPECT_EQ(testing::schedule_refusal(std::string(kLayoutLoad) + R"(schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)"),
            "reverse_compute_inline: the indices of the load of X in block C are not distinct iter vars");
}

TEST(ScheduleReviewFix, ModuloBindingsOverASymbolicExtentDoNotCoverTheDomain) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(n: i32 in [1, 8], A: f32[4, (n + 3) // 4]) -> (Y: f32[4, (n + 3) // 4]) {
  alloc X: f32[4, (n + 3) // 4]
  for i, j in grid(4, (n + 3) // 4) {
    block Z(vi: spatial(4) = i, vj: spatial((n + 3) // 4) = j) { Y[vi, vj] = 0.0 }
  }
  for i, j in grid(4, (n + 3) // 4) {
    block B(vi: spatial(4) = i, vj: spatial((n + 3) // 4) = j) { X[vi, vj] = A[vi, vj] + 1.0 }
  }
  for l in serial(n) {
    block C(v0: spatial(4) = l % 4, v1: spatial((n + 3) // 4) = l // 4) { Y[v0, v1] = X[v0, v1] * 2.0 }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i)
}
)"),
            "reverse_compute_at: block C does not cover its iteration domain exactly once");
}

}  // namespace
}  // namespace tirc

// Schedule outsider round 10 (docs/schedule.md, "Outsider round 10"): schedules written as TVM
// users write them (tests/schedule/tvm_style_r10/*.tir, same headers as tvm_style/: `# grad: F`,
// `# refuse: MSG` with `# <- refused`), aimed at primitives composed after loop_partition,
// predicates (`where`, non-dividing splits), non-zero loop mins, symbolic extents, reductions
// whose init does not run or is not the identity, and in-place updates. Run by two TESTs over the
// whole folder (one ctest entry each), and one test per fix that fails without it.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "tests/schedule/tvm_style_files.h"

namespace tirc {
namespace {

// Every file refused as its header says or applied and equal to the unscheduled function
// (testing::expect_folder_schedules), and the applied ones through `tirc verify`.
TEST(Outsider10, TvmStyleFiles) { testing::expect_folder_schedules("tests/schedule/tvm_style_r10", 30); }

TEST(Outsider10, TvmStyleFilesVerifyCli) {
  testing::expect_folder_verifies_cli("tests/schedule/tvm_style_r10");
}

// ---- the fixes ----

// reverse_compute_inline refused a producer under a loop that does not start at 0
// (`serial(3, 13)` with `vi = i - 3`: "the producer block B does not cover its iteration domain
// exactly once"): its cover check required 0-based loops. Loops are now rebased (`i = i' + 3`)
// before the check. A producer that misses a row (`serial(4, 13)`, `vi = i - 3`) is still
// refused.
TEST(Outsider10, ReverseComputeInlineIntoNonZeroMinLoops) {
  auto text = [](const std::string& lo) {
    return R"(func f(A: f32[10, 6]) -> (C: f32[10, 6]) {
  alloc B: f32[10, 6]
  for i in serial()" +
           lo + R"(, 13) {
    for j in serial(6) {
      block B(vi: spatial(10) = i - 3, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] + 1.0 }
    }
  }
  for i, j in grid(10, 6) {
    block C(vi: spatial(10) = i, vj: spatial(6) = j) { C[vi, vj] = B[vi, vj] * 2.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)";
  };
  std::string out = testing::apply_and_compare(text("3"));
  EXPECT_NE(out.find("C[vi, vj] = (A[vi, vj] + 1.0) * 2.0"), std::string::npos) << out;
  EXPECT_EQ(testing::schedule_refusal(text("4")),
            "reverse_compute_inline: the producer block B does not cover its iteration domain exactly once");
}

}  // namespace
}  // namespace tirc

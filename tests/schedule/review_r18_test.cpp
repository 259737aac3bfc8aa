// Review of round 18's compute_at lifts: wrong schedules that were accepted (tirc verify showed
// mismatches in the interpreter and the JIT), each now refused with its reason.
//   * a target loop under a loop-level `if` that the producer is not under: the exact tiling
//     (an output, a reader after the loop) took only the loops into account, so the rows the
//     `if` skips were never computed;
//   * a producer under a loop-level `if` that the target loop is not under: the coverage check
//     ignored it, so the moved producer ran the instances the `if` skipped (after a zero-fill);
//   * the reason given when a store that is not plain iter vars meets the exact tiling named the
//     first written buffer, not the one needing the tiling.
// An `if` above both the producer and the loop, or one only above a loop whose parts need not be
// onto, still lets the block move.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// The consumer loop nest of B, with the column loop j under `if i < 4` (C2 in the other arm).
constexpr const char* kGuardedConsumer = R"(
  for i in serial(8) {
    if i < 4 {
      for j in serial(8) {
        block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
      }
    } else {
      for j in serial(8) {
        block C2(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = 5.0 }
      }
    }
  }
)";

constexpr const char* kProducerB = R"(
  for i, j in grid(8, 8) {
    block B(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
)";

constexpr const char* kComputeAtJ = R"(
schedule f {
  b = get_block("B")
  c = get_block("C")
  i, j = get_loops(c)
  compute_at(b, j)
}
)";

// F1: B is read whole by D after the loop, but the loop j runs only for rows 0-3.
TEST(ScheduleReviewR18, ReaderAfterALoopUnderAnIf) {
  std::string text =
      std::string("func f(A: f32[8, 8]) -> (C: f32[8, 8], D: f32[8, 8]) {\n  alloc B: f32[8, 8]") +
      kProducerB + kGuardedConsumer + R"(
  for i, j in grid(8, 8) {
    block D(vi: spatial(8) = i, vj: spatial(8) = j) { D[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)" + kComputeAtJ;
  EXPECT_EQ(testing::schedule_refusal(text), "compute_at: consumer block D of block B is not under loop j");
}

// F1, the path before round 18: B is an output.
TEST(ScheduleReviewR18, OutputComputedAtALoopUnderAnIf) {
  std::string text = std::string("func f(A: f32[8, 8]) -> (B: f32[8, 8], C: f32[8, 8]) {") + kProducerB +
                     kGuardedConsumer + "}\n" + kComputeAtJ;
  EXPECT_EQ(
      testing::schedule_refusal(text),
      "compute_at: the parts of B computed in the iterations of loop j do not cover it exactly once (B is "
      "an output; loop j runs under `if i < 4`, which block B is not under)");
}

// Without a reader after the loop (B an alloc), the rows the `if` skips need not be computed.
TEST(ScheduleReviewR18, LoopUnderAnIfWithoutReaderAfterStillMoves) {
  std::string text = std::string("func f(A: f32[8, 8]) -> (C: f32[8, 8]) {\n  alloc B: f32[8, 8]") +
                     kProducerB + kGuardedConsumer + "}\n" + kComputeAtJ;
  std::string out = testing::apply_and_compare(text);
  EXPECT_NE(out.find("if i < 4 {\n      for j in serial(8) {\n        block B("), std::string::npos) << out;
}

// An `if` above both B and the loop gates the old and the new position alike.
TEST(ScheduleReviewR18, IfAboveBothStillMoves) {
  std::string out =
      testing::apply_and_compare(R"(func f(n: i32 in [1, 4], A: f32[8, 8]) -> (B: f32[8, 8], C: f32[8, 8]) {
  if n > 0 {
    for i, j in grid(8, 8) {
      block B(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
    }
    for i in serial(8) {
      for j in serial(8) {
        block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
      }
    }
  }
}
)" + std::string(kComputeAtJ));
  EXPECT_NE(out.find("for j in serial(8) {\n        block B("), std::string::npos) << out;
}

// F2: P runs under `if i < 4` after a zero-fill; moved into C's loop it ran for every row.
TEST(ScheduleReviewR18, ProducerLeavingAnIf) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8]) -> (C: f32[8]) {
  alloc B: f32[8]
  for i in serial(8) {
    block Z(vi: spatial(8) = i) { B[vi] = 0.0 }
  }
  for i in serial(8) {
    if i < 4 {
      block B(vi: spatial(8) = i) { B[vi] = A[vi] * 2.0 }
    }
  }
  for i in serial(8) {
    block C(vi: spatial(8) = i) { C[vi] = B[vi] + 1.0 }
  }
}
schedule f {
  b = get_block("B")
  i, = get_loops(get_block("C"))
  compute_at(b, i)
}
)"),
            "compute_at: block B does not cover its iteration domain exactly once (it runs under `if i < 4`, "
            "which loop i is not under)");
}

// P and the loop in the two arms of one `if`: P leaves the arm it ran in.
TEST(ScheduleReviewR18, ProducerAndLoopInTwoArms) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(n: i32 in [0, 1], A: f32[8]) -> (C: f32[8]) {
  alloc B: f32[8]
  for i in serial(8) {
    block Z(vi: spatial(8) = i) { B[vi] = 0.0 }
  }
  if n > 0 {
    for i in serial(8) {
      block B(vi: spatial(8) = i) { B[vi] = A[vi] * 2.0 }
    }
  } else {
    for i in serial(8) {
      block C(vi: spatial(8) = i) { C[vi] = B[vi] + 1.0 }
    }
  }
}
schedule f {
  b = get_block("B")
  i, = get_loops(get_block("C"))
  compute_at(b, i)
}
)"),
            "compute_at: block B does not cover its iteration domain exactly once (it runs under `if n > 0`, "
            "which loop i is not under)");
}

// F3: X (an alloc, no other writer) needs no exact tiling; S, an output, does. Round 19: a block
// writing several buffers has its exact tiling checked in its iter vars' space, so the stores at
// `vi + 1` are applied now; a consumer reading the previous element still makes the parts miss the
// tiling, naming S.
const char* kAffineTwoStores = R"(func f(A: f32[8]) -> (S: f32[9], C: f32[8]) {
  alloc X: f32[9]
  for i in serial(8) {
    block P(vi: spatial(8) = i) {
      X[vi + 1] = A[vi] * 2.0
      S[vi + 1] = A[vi] + 1.0
    }
  }
  for i in serial(8) {
    block C(vi: spatial(8) = i) { C[vi] = X[READ] }
  }
}
schedule f {
  compute_at(get_block("P"), get_loops(get_block("C"))[0])
}
)";

TEST(ScheduleReviewR18, AffineStoreNamesTheBufferNeedingTheTiling) {
  auto with_read = [](const std::string& r) {
    std::string t = kAffineTwoStores;
    return t.replace(t.find("READ"), 4, r);
  };
  testing::apply_and_compare(with_read("vi + 1"));
  EXPECT_EQ(
      testing::schedule_refusal(with_read("vi")),
      "compute_at: the parts of S computed in the iterations of loop i do not cover it exactly once (S is an "
      "output; block P also writes X, at the same iter vars)");
}

}  // namespace
}  // namespace tirc

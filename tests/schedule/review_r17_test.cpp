// Review of round 17's schedule lifts: wrong schedules that were accepted (tirc verify showed
// mismatches in the interpreter and the JIT), each now refused with its reason.
//   * compute_at of a block whose binding uses a loop that also encloses the target loop: the
//     rebuilt iter vars lost it (a reduce var bound to the outer loop recomputed whole at each
//     of its iterations; a row `1 - o` computed at o, before a reader of the old value);
//   * reverse_compute_at of an in-place consumer under a loop where another block reads the
//     buffer it updates (a scan reading row i - 1, a reader of the previous row).
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

TEST(ScheduleReviewR17, ReduceVarBoundToASharedLoop) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[2, 16]) -> (D: f32[2, 8]) {
  alloc X: f32[16]
  for i in serial(16) {
    block Z(vi: spatial(16) = i) { X[vi] = 0.0 }
  }
  for o in serial(2) {
    for i in serial(16) {
      block P(vo: reduce(2) = o, vi: spatial(16) = i) { X[vi] = X[vi] + A[vo, vi] }
    }
    for j in serial(8) {
      block C(vo: spatial(2) = o, vj: spatial(8) = j) { D[vo, vj] = X[vo * 8 + vj] * 2.0 }
    }
  }
}
schedule f {
  c = get_block("C")
  o, j = get_loops(c)
  compute_at(get_block("P"), j)
}
)"),
            "compute_at: the binding of iter var vo of block P uses loop o, which also encloses loop j: "
            "under it block P would compute the instances of other iterations of o");
}

TEST(ScheduleReviewR17, ReductionWithInitBoundToASharedLoop) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[2, 16]) -> (D: f32[2, 8]) {
  alloc X: f32[16]
  for o in serial(2) {
    for i in serial(16) {
      block P(vo: reduce(2) = o, vi: spatial(16) = i) {
        init { X[vi] = 0.0 }
        X[vi] = X[vi] + A[vo, vi]
      }
    }
    for j in serial(8) {
      block C(vo: spatial(2) = o, vj: spatial(8) = j) { D[vo, vj] = X[vo * 8 + vj] * 2.0 }
    }
  }
}
schedule f {
  c = get_block("C")
  o, j = get_loops(c)
  compute_at(get_block("P"), j)
}
)"),
            "compute_at: the binding of iter var vo of block P uses loop o, which also encloses loop j: "
            "under it block P would compute the instances of other iterations of o");
}

TEST(ScheduleReviewR17, RowOfAnotherIterationOfASharedLoop) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[2, 8], B: f32[2, 8]) -> (D: f32[2, 8]) {
  alloc X: f32[2, 8]
  for o, i in grid(2, 8) {
    block Z(vo: spatial(2) = o, vi: spatial(8) = i) { X[vo, vi] = B[vo, vi] }
  }
  for o in serial(2) {
    for i in serial(8) {
      block P(vo: spatial(2) = o, vi: spatial(8) = i) { X[vo, vi] = A[vo, vi] * 2.0 }
    }
    for j in serial(8) {
      block C(vo: spatial(2) = o, vj: spatial(8) = j) { D[vo, vj] = X[1 - vo, vj] }
    }
  }
}
schedule f {
  c = get_block("C")
  o, j = get_loops(c)
  compute_at(get_block("P"), j)
}
)"),
            "compute_at: the binding of iter var vo of block P uses loop o, which also encloses loop j: "
            "under it block P would compute the instances of other iterations of o");
}

TEST(ScheduleReviewR17, InPlaceConsumerOverPartOfTheRow) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8, 6]) -> (X: f32[8, 6]) {
  for i, j in grid(8, 6) {
    block P(vi: scan(8) = i, vj: spatial(6) = j) {
      X[vi, vj] = if_then_else(vi == 0, A[vi, vj], X[vi - 1, vj] + A[vi, vj])
    }
  }
  for i in serial(8) {
    for j in serial(1, 6) {
      block C(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = X[vi, vj] + X[vi, 0] }
    }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), i)
}
)"),
            "reverse_compute_at: block P reads buffer X under loop i, which block C updates: moved there, "
            "its updates of earlier iterations would be seen");
}

TEST(ScheduleReviewR17, InPlaceConsumerOfAScan) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8, 6]) -> (X: f32[8, 6]) {
  for i, j in grid(8, 6) {
    block P(vi: scan(8) = i, vj: spatial(6) = j) {
      X[vi, vj] = if_then_else(vi == 0, A[vi, vj], X[vi - 1, vj] + A[vi, vj])
    }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = X[vi, vj] * 2.0 }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), i)
}
)"),
            "reverse_compute_at: block P reads buffer X under loop i, which block C updates: moved there, "
            "its updates of earlier iterations would be seen");
}

TEST(ScheduleReviewR17, InPlaceConsumerWithAReaderOfThePreviousRow) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8, 6]) -> (X: f32[8, 6], Y: f32[8, 6]) {
  for i in serial(8) {
    for j in serial(6) {
      block P(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = A[vi, vj] }
    }
    for j in serial(6) {
      block Q(vi: spatial(8) = i, vj: spatial(6) = j) {
        Y[vi, vj] = if_then_else(vi == 0, 0.0, X[vi - 1, vj])
      }
    }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = X[vi, vj] * 2.0 }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), i)
}
)"),
            "reverse_compute_at: block Q reads buffer X under loop i, which block C updates: moved there, "
            "its updates of earlier iterations would be seen");
}

// The same nest where the consumer reads its own row: the binding keeps its value (vo = o).
TEST(ScheduleReviewR17, SharedLoopBindingThatKeepsItsValueMoves) {
  testing::apply_and_compare(R"(func f(A: f32[2, 8], B: f32[2, 8]) -> (D: f32[2, 8]) {
  alloc X: f32[2, 8]
  for o in serial(2) {
    for i in serial(8) {
      block P(vo: spatial(2) = o, vi: spatial(8) = i) { X[vo, vi] = A[vo, vi] * 2.0 }
    }
    for j in serial(8) {
      block C(vo: spatial(2) = o, vj: spatial(8) = j) { D[vo, vj] = X[vo, vj] + B[vo, vj] }
    }
  }
}
schedule f {
  c = get_block("C")
  o, j = get_loops(c)
  compute_at(get_block("P"), j)
}
)");
}

}  // namespace
}  // namespace tirc

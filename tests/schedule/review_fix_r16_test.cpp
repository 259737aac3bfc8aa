// Found by reviewing round 16's schedule changes (coverage.h, the writers' listing for
// cache_read / reindex, and parallel's checks). Each was a wrong schedule: accepted, then the
// scheduled function read elements nobody wrote (an `if` between a writer's loops and its block
// was not seen; a writer under a body `if` or at computed indices was taken to write the whole
// buffer when the listing gave up), or raced (a parallel loop bound to no iter var of a
// reduction). And one false refusal: a writer storing through loops of its body (a tensorized
// block) was taken to write nothing.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

TEST(ScheduleReviewFixR16, IfBetweenTheLoopsAndAComplementaryWriter) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8, 4]) -> (C: f32[8, 4]) {
  alloc B: f32[8, 4]
  for i, j in grid(8, 4) {
    if i != 2 {
      block B1(vi: spatial(8) = i, vj: spatial(4) = j) {
        where i < 4
        B[vi, vj] = A[vi, vj] * 2.0
      }
    }
  }
  for i, j in grid(8, 4) {
    block B2(vi: spatial(8) = i, vj: spatial(4) = j) {
      where i >= 4
      B[vi, vj] = A[vi, vj] + 3.0
    }
  }
  for i, j in grid(8, 4) {
    block C(vi: spatial(8) = i, vj: spatial(4) = j) { C[vi, vj] = if_then_else(vi == 2, 1.0, B[vi, vj] * 0.5) }
  }
}
schedule f {
  c = get_block("C")
  s = cache_read(c, 0, "shared")
}
)"),
            "cache_read: block B1 writes buffer B under the condition i < 4, and the copy of the whole buffer "
            "would read the elements it skips");
}

TEST(ScheduleReviewFixR16, WriterStoringThroughALoopOfItsBody) {
  testing::apply_and_compare(R"(func f(A: f32[8, 4]) -> (C: f32[8, 4]) {
  alloc B: f32[8, 4]
  for i in grid(8) {
    block B(vi: spatial(8) = i) {
      for j in grid(4) {
        B[vi, j] = A[vi, j] * 2.0
      }
    }
  }
  for i, j in grid(8, 4) {
    block C(vi: spatial(8) = i, vj: spatial(4) = j) { C[vi, vj] = B[vi, vj] * 0.5 }
  }
}
schedule f {
  c = get_block("C")
  s = cache_read(c, 0, "shared")
}
)");
}

TEST(ScheduleReviewFixR16, TensorizedWriterStoresTheWholeBuffer) {
  testing::apply_and_compare(R"(func f(A: f32[8, 8]) -> (C: f32[8, 8]) {
  alloc X: f32[8, 8]
  for i, j in grid(8, 8) {
    block P(vi: spatial(8) = i, vj: spatial(8) = j) { X[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = X[vi, vj] + 1.0 }
  }
}

intrin scale_4x4 {
  desc(a: f32[4, 4], c: f32[4, 4]) {
    for i, j in grid(4, 4) {
      block s(vi: spatial(4) = i, vj: spatial(4) = j) { c[vi, vj] = a[vi, vj] * 2.0 }
    }
  }
  impl(a: f32[4, 4], c: f32[4, 4]) {
    for i in unroll(4) {
      for j in serial(4) {
        c[i, j] = a[i, j] * 2.0
      }
    }
  }
}

schedule f {
  blk = get_block("P")
  i, j = get_loops(blk)
  io, ii = split(i, factors=[None, 4])
  jo, ji = split(j, factors=[None, 4])
  reorder(io, jo, ii, ji)
  t = tensorize(ii, "scale_4x4")
  s = cache_read(get_block("C"), 0, "shared")
}
)");
}

TEST(ScheduleReviewFixR16, WriterUnderABodyIfOverASymbolicSize) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(n: i32 in [5, 9], A: f32[n]) -> (C: f32[n]) {
  alloc B: f32[n]
  for i in grid(n) {
    block B(vi: spatial(n) = i) {
      if vi < 4 { B[vi] = A[vi] * 2.0 }
    }
  }
  for i in grid(n) {
    block C(vi: spatial(n) = i) { C[vi] = if_then_else(vi < 4, B[vi] * 0.5, 0.0) }
  }
}
schedule f {
  s = cache_read(get_block("C"), 0, "shared")
}
)"),
            "cache_read: block B stores buffer B under conditions or at computed indices, and the copy of the "
            "whole buffer could read elements it skips");
}

TEST(ScheduleReviewFixR16, WriterAtDataDependentIndices) {
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8], I: i32[4]) -> (C: f32[4]) {
  alloc B: f32[8]
  for i in grid(4) {
    block B(vi: spatial(4) = i) { B[I[vi] % 2] = A[vi] * 2.0 }
  }
  for i in grid(4) {
    block C(vi: spatial(4) = i) { C[vi] = B[I[vi] % 2] * 0.5 }
  }
}
schedule f {
  c = get_block("C")
  s = cache_read(c, 0, "shared")
}
)"),
            "cache_read: block B stores buffer B under conditions or at computed indices, and the copy of the "
            "whole buffer could read elements it skips");
}

TEST(ScheduleReviewFixR16, ParallelLoopBoundToNoIterVarOfAReduction) {
  EXPECT_EQ(testing::schedule_refusal(R"(func F(I: i32[64] in [0, 3]) -> (W_grad: f32[4]) {
  for i0 in serial(4) {
    block W_grad_init(v0: spatial(4) = i0) { W_grad[v0] = 0.0 }
  }
  for p in serial(2) {
    for i in serial(64) {
        block Y_dW(vi0: reduce(64) = i) {
          W_grad[I[vi0]] = W_grad[I[vi0]] + 1.0
        }
    }
  }
}
schedule F {
  b = get_block("Y_dW")
  p, i = get_loops(b)
  parallel(p)
}
)"),
            "parallel: loop p is bound to no iter var of block Y_dW: every iteration would run the same "
            "instances of it");
}

}  // namespace
}  // namespace tirc

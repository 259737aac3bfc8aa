// Refusals lifted where TVM accepts (docs/schedule.md, round 11 part A, "Refused where TVM
// accepts"), helper b: each case is applied and compared with the unscheduled function; the
// variants that really change the result stay refused.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// cache_write of a block under a loop with a non-zero min (`serial(2, 10)` bound `vi = i - 2`)
// was refused ("loop i above block B does not start at 0"): the bijectivity check now reads the
// loop rebased (`i` as `i + 2` from 0), which visits the same points.
TEST(TvmLiftedB, CacheWriteUnderNonZeroMinLoops) {
  testing::apply_and_compare(R"(func f(A: f32[8, 4]) -> (B: f32[8, 4]) {
  for i in serial(2, 10) {
    for j in serial(1, 5) {
      block B(vi: spatial(8) = i - 2, vj: spatial(4) = j - 1) { B[vi, vj] = A[vi, vj] * 2.0 }
    }
  }
}
schedule f {
  sch.cache_write(sch.get_block("B"), 0, "local")
})");
  // A reduction under a shifted loop (its init and update both go to the cache).
  testing::apply_and_compare(R"(func f(A: f32[6, 5]) -> (B: f32[6]) {
  for i in serial(3, 9) {
    for k in serial(5) {
      block B(vi: spatial(6) = i - 3, vk: reduce(5) = k) {
        init { B[vi] = 0.0 }
        B[vi] = B[vi] + A[vi, vk]
      }
    }
  }
}
schedule f {
  sch.cache_write(sch.get_block("B"), 0, "global")
})");
  // A loop missing a row (rows 1..7 only) does not write B[0]: still refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8, 4]) -> (B: f32[8, 4]) {
  for i in serial(3, 10) {
    for j in serial(4) {
      block B(vi: spatial(8) = i - 2, vj: spatial(4) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
    }
  }
}
schedule f {
  sch.cache_write(sch.get_block("B"), 0, "local")
})"),
            "cache_write: block B does not cover its iteration domain exactly once");
  // A min that uses an outer loop (triangular) is refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[4, 8]) -> (B: f32[4, 8]) {
  for i in serial(4) {
    for j in serial(i, i + 4) {
      block B(vi: spatial(4) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
    }
  }
}
schedule f {
  sch.cache_write(sch.get_block("B"), 0, "local")
})"),
            "cache_write: loop j above block B starts at an expression of loop i");
}

const char* kMultiConsumer = R"(func f(X: f32[16]) -> (B: f32[16], C: f32[16]) {
  alloc A: f32[16]
  for i in serial(4) {
    for j in serial(4) {
      block A(vi: spatial(16) = i * 4 + j) { A[vi] = X[vi] + 1.0 }
    }
    for j in serial(4) {
      block B(vi: spatial(16) = i * 4 + j) { B[vi] = A[vi] + 1.0 }
    }
  }
  for i in serial(16) {
    block C(vi: spatial(16) = i) { C[vi] = A[vi] * 3.0 }
  }
}
)";

// cache_read of a buffer whose writer shares loop i with reader B but not with reader C
// (TVM's test_cache_read_location) was refused ("buffer A is written after (or in the same loop
// nest as) one of its readers"). The copy now serves the group of the given block: inside loop
// i for B, or one top-level copy after the loop for C; the other group keeps reading A.
TEST(TvmLiftedB, CacheReadReadersInsideAndAfterTheWriterNest) {
  std::string out = testing::apply_and_compare(std::string(kMultiConsumer) + R"(schedule f {
  sch.cache_read(sch.get_block("B"), 0, "global")
})");
  EXPECT_NE(out.find("B[vi] = A_global[vi] + 1.0"), std::string::npos) << out;
  EXPECT_NE(out.find("C[vi] = A[vi] * 3.0"), std::string::npos) << out;
  out = testing::apply_and_compare(std::string(kMultiConsumer) + R"(schedule f {
  sch.cache_read(sch.get_block("C"), 0, "local")
})");
  EXPECT_NE(out.find("B[vi] = A[vi] + 1.0"), std::string::npos) << out;
  EXPECT_NE(out.find("C[vi] = A_local[vi] * 3.0"), std::string::npos) << out;
  testing::apply_and_compare(std::string(kMultiConsumer) + R"(schedule f {
  sch.cache_read("B", 0, "global", consumer_blocks=["B", "C"])
})");
  // A reader between two writer nests cannot share one copy with a reader inside the second:
  // still refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(X: f32[16]) -> (B: f32[16], D: f32[16]) {
  alloc A: f32[16]
  for i in serial(16) {
    block A0(vi: spatial(16) = i) { A[vi] = X[vi] }
  }
  for i in serial(16) {
    block D(vi: spatial(16) = i) { D[vi] = A[vi] * 2.0 }
  }
  for i in serial(4) {
    for j in serial(4) {
      block A(vi: spatial(16) = i * 4 + j) { A[vi] = X[vi] + 1.0 }
    }
    for j in serial(4) {
      block B(vi: spatial(16) = i * 4 + j) { B[vi] = A[vi] + 1.0 }
    }
  }
}
schedule f {
  sch.cache_read(sch.get_block("B"), 0, "global")
})"),
            "cache_read: buffer A is written after (or in the same loop nest as) one of its readers");
}

// A fused split by a symbolic size (the loop nest of TVM's test_shape_var_as_bound): fuse(i, j)
// of extents n, m split by 4 gets `where o * 4 + k < m * n` and bindings `f // m`, `f % m`.
// Pins that split / fuse accept it (the refusal that test still meets is reverse_compute_at's
// cover check, compute_at's area).
TEST(TvmLiftedB, FusedSplitBySymbolicSize) {
  std::string out = testing::apply_and_compare(
      R"(func f(n: i32 in [1, 6], m: i32 in [1, 5], A: f32[n, m]) -> (B: f32[n, m]) {
  for i, j in grid(n, m) {
    block B(vi: spatial(n) = i, vj: spatial(m) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  o, k = sch.split(sch.fuse(i, j), factors=[None, 4])
  sch.parallel(o)
})");
  EXPECT_NE(out.find("where o * 4 + k < m * n"), std::string::npos) << out;
}

const char* kPaddedConv = R"(func f(A: f32[8, 8], W: f32[3, 3]) -> (C: f32[8, 8]) {
  alloc P: f32[10, 10]
  for i, j in grid(10, 10) {
    block P(vi: spatial(10) = i, vj: spatial(10) = j) {
      P[vi, vj] = if_then_else(1 <= vi && vi < 9 && 1 <= vj && vj < 9, A[vi - 1, vj - 1], 0.0)
    }
  }
  for h, w, rh, rw in grid(8, 8, 3, 3) {
    block C(vh: spatial(8) = h, vw: spatial(8) = w, vrh: reduce(3) = rh, vrw: reduce(3) = rw) {
      init { C[vh, vw] = 0.0 }
      C[vh, vw] = C[vh, vw] + P[vh + vrh, vw + vrw] * W[vrh, vrw]
    }
  }
}
)";

// parallel / vectorize of a loop after a compute_at that made a padding halo (rows h + 1, h + 2
// recomputed by the next iterations). Decision: accepted when the halo's one writer is pure
// (every iteration writing P[r, c] stores the same value: a benign recomputation, loop_kind's
// independence check), refused when decompose_padding split it into a fill and a copy: the fill
// of iteration h zeroes row h + 1 that iteration h + 1 may have copied and be reading (a real
// race, which TVM does not check; the interpreter's sequential runs would not show it).
TEST(TvmLiftedB, ParallelAfterComputeAtWithPaddingHalo) {
  testing::apply_and_compare(std::string(kPaddedConv) + R"(schedule f {
  h, w, rh, rw = sch.get_loops(sch.get_block("C"))
  sch.compute_at(sch.get_block("P"), h)
  sch.parallel(h)
})");
  testing::apply_and_compare(std::string(kPaddedConv) + R"(schedule f {
  h, w, rh, rw = sch.get_loops(sch.get_block("C"))
  sch.compute_at(sch.get_block("P"), w)
  sch.vectorize(w)
})");
  EXPECT_EQ(
      testing::schedule_refusal(std::string(kPaddedConv) + R"(schedule f {
  h, w, rh, rw = sch.get_loops(sch.get_block("C"))
  sch.compute_at(sch.get_block("P"), h)
  pi, pj = sch.get_loops(sch.get_block("P"))[1:]
  sch.decompose_padding(sch.get_block("P"), pi)
  sch.parallel(h)
})"),
      "parallel: loop h: blocks P_pad_const, C share buffer P across its iterations (no dimension of it "
      "is partitioned by the loop)");
}

}  // namespace
}  // namespace tirc

// Schedule outsider round 9 (docs/schedule.md, "Outsider round 9"): schedules written as TVM
// users write them (tests/schedule/tvm_style_r9/*.tir, same headers as tvm_style/: `# grad: F`,
// `# refuse: MSG` with `# <- refused`), run by two TESTs over the whole folder (one ctest entry
// each, not one per file), and one test per fix that fails without it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/mutator.h"
#include "ir/reducer.h"
#include "schedule_checks.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/shell.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

// Every file refused as its header says or applied and equal to the unscheduled function
// (testing::expect_folder_schedules), and the applied ones through `tirc verify`.
TEST(Outsider9, TvmStyleFiles) { testing::expect_folder_schedules("tests/schedule/tvm_style_r9", 30); }

TEST(Outsider9, TvmStyleFilesVerifyCli) {
  testing::expect_folder_verifies_cli("tests/schedule/tvm_style_r9");
}

// ---- the fixes ----

// A producer whose fused loop was split by a non-dividing factor carries the guard of the fused
// iterator (`fo * 8 + fi < 70`), not of one binding: reverse_compute_inline refused it ("the
// producer block C does not cover its iteration domain exactly once"). `F < c * k` now counts as
// the bound guard of the binding `F // c` of extent k. A predicate that clips the domain is
// still refused.
TEST(Outsider9, ReverseComputeInlineIntoFusedNonDividingSplit) {
  const std::string f = R"(func f(A: f32[10, 7]) -> (D: i32[10, 7]) {
  alloc C: f32[10, 7]
  for i, j in grid(10, 7) {
    block C(vi: spatial(10) = i, vj: spatial(7) = j) { C[vi, vj] = A[vi, vj] * 100.0 }
  }
  for i, j in grid(10, 7) {
    block D(vi: spatial(10) = i, vj: spatial(7) = j) { D[vi, vj] = i32(floor(C[vi, vj])) }
  }
}
)";
  for (int factor : {8, 3, 7}) {
    SCOPED_TRACE(factor);
    std::string out = testing::apply_and_compare(f + R"(schedule f {
  c = sch.get_block("C")
  i, j = sch.get_loops(c)
  fu = sch.fuse(i, j)
  fo, fi = sch.split(fu, [None, )" + std::to_string(factor) +
                                                 R"(])
  sch.reverse_compute_inline(sch.get_block("D"))
  sch.parallel(fo)
})");
    EXPECT_NE(out.find("D[vi, vj] = i32(floor(A[vi, vj] * 100.0))"), std::string::npos) << out;
  }
  // The guard clips the last row: C never writes row 9, so D's row 9 would not be written.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[10, 7]) -> (D: i32[10, 7]) {
  alloc C: f32[10, 7]
  for fo, fi in grid(8, 8) {
    block C(vi: spatial(10) = (fo * 8 + fi) // 7, vj: spatial(7) = (fo * 8 + fi) % 7) {
      where fo * 8 + fi < 63
      C[vi, vj] = A[vi, vj] * 100.0
    }
  }
  for i, j in grid(10, 7) {
    block D(vi: spatial(10) = i, vj: spatial(7) = j) { D[vi, vj] = i32(floor(C[vi, vj])) }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("D"))
})"),
            "reverse_compute_inline: the producer block C does not cover its iteration domain exactly once");
}

// cache_read without consumer_blocks counted the writer of a scan (which reads its previous
// step) among the readers that should read the copy, so every cache_read of a scan's output was
// refused ("buffer Y is written after (or in the same loop nest as) one of its readers"; an
// in-place update the same). Blocks that also write the buffer now keep reading it; the copy
// goes after them, for the blocks that only read it.
TEST(Outsider9, CacheReadSkipsReadersThatWriteTheBuffer) {
  const std::string scan = R"(func f(X: f32[4, 12]) -> (Z: f32[4, 12]) {
  alloc Y: f32[4, 12]
  for i, j in grid(4, 12) {
    block Y(vi: spatial(4) = i, vj: scan(12) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] * 0.9 + X[vi, vj])
    }
  }
  for i, j in grid(4, 12) {
    block Z(vi: spatial(4) = i, vj: spatial(12) = j) { Z[vi, vj] = Y[vi, vj] * 2.0 }
  }
}
)";
  std::string out = testing::apply_and_compare(scan + R"(schedule f {
  yc = sch.cache_read(sch.get_block("Z"), 0, "local")
  sch.reverse_compute_at(yc, sch.get_loops(sch.get_block("Y"))[0])
})");
  EXPECT_NE(out.find("Y[vi, vj - 1] * 0.9"), std::string::npos) << out;
  EXPECT_NE(out.find("Z[vi, vj] = Y_local[vi, vj] * 2.0"), std::string::npos) << out;
  // An in-place update between the producer and the reader: it keeps reading B, the copy
  // follows it.
  testing::apply_and_compare(R"(func f(A: f32[8]) -> (C: f32[8]) {
  alloc B: f32[8]
  for i in serial(8) {
    block B(vi: spatial(8) = i) { B[vi] = A[vi] * 2.0 }
  }
  for i in serial(8) {
    block U(vi: spatial(8) = i) { B[vi] = B[vi] + 1.0 }
  }
  for i in serial(8) {
    block C(vi: spatial(8) = i) { C[vi] = B[vi] * B[7 - vi] }
  }
}
schedule f {
  sch.cache_read(sch.get_block("C"), 0, "local")
})");
  // A pure reader before the last writer still cannot read a copy made after it.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8]) -> (C: f32[8], D: f32[8]) {
  alloc B: f32[8]
  for i in serial(8) {
    block B(vi: spatial(8) = i) { B[vi] = A[vi] * 2.0 }
  }
  for i in serial(8) {
    block D(vi: spatial(8) = i) { D[vi] = B[vi] }
  }
  for i in serial(8) {
    block U(vi: spatial(8) = i) { B[vi] = B[vi] + 1.0 }
  }
  for i in serial(8) {
    block C(vi: spatial(8) = i) { C[vi] = B[vi] * B[7 - vi] }
  }
}
schedule f {
  sch.cache_read(sch.get_block("C"), 0, "local")
})"),
            "cache_read: buffer B is written after (or in the same loop nest as) one of its readers");
}

// decompose_reduction put the init before the loop unconditionally, but a block runs its init
// only where every reduce iter var is 0 (wrong code): the copy of a row sum in the second part
// of a loop_partition of its reduce loop (`vk = k` over [4, 12)) never runs it, and got an init
// that reset the first part's sum; a binding `vk = k // 4` runs it 4 times; a hand-written
// `where k >= 3` skips it. Now the reduction loops must run the reduce iter vars one-to-one from
// 0 (refused otherwise), and conjuncts over the reduction loops only guard the init at the first
// iteration.
TEST(Outsider9, DecomposedInitRunsOnlyWhereTheBlockRanIt) {
  const std::string sum = R"(func f(A: f32[6, 12]) -> (S: f32[6]) {
  for i, k in grid(6, 12) {
    block S(vi: spatial(6) = i, vk: reduce(12) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
)";
  const std::string why =
      " do not run its reduce iter vars one-to-one from 0 (its init runs where they are all 0, which would "
      "not "
      "be once before the reduction)";
  EXPECT_EQ(testing::schedule_refusal(sum + R"(schedule f {
  i, k = sch.get_loops(sch.get_block("S"))
  parts = sch.loop_partition(k, [4, None])
  sch.decompose_reduction(sch.get_block("S_1"), parts[1])
})"),
            "decompose_reduction: the reduction loops of block S_1" + why);
  // The first part is fine.
  testing::apply_and_compare(sum + R"(schedule f {
  i, k = sch.get_loops(sch.get_block("S"))
  parts = sch.loop_partition(k, [4, None])
  sch.decompose_reduction(sch.get_block("S"), parts[0])
})");
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[6, 12]) -> (S: f32[6]) {
  for i, k in grid(6, 12) {
    block S(vi: spatial(6) = i, vk: reduce(3) = k // 4) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk * 4]
    }
  }
}
schedule f {
  i, k = sch.get_loops(sch.get_block("S"))
  sch.decompose_reduction(sch.get_block("S"), k)
})"),
            "decompose_reduction: the reduction loops of block S" + why);
  std::string out = testing::apply_and_compare(R"(func f(A: f32[6, 12]) -> (S: f32[6]) {
  for i in serial(6) {
    block S0(vi: spatial(6) = i) { S[vi] = A[vi, 0] }
  }
  for i, k in grid(6, 12) {
    block S(vi: spatial(6) = i, vk: reduce(12) = k) {
      where k >= 3
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
schedule f {
  i, k = sch.get_loops(sch.get_block("S"))
  sch.decompose_reduction(sch.get_block("S"), k)
})");
  EXPECT_NE(out.find("where false"), std::string::npos) << out;
  // Loops that start elsewhere but run the reduce iter var from 0 (`vk = k - 1`) still apply.
  testing::apply_and_compare(R"(func f(A: f32[6, 12]) -> (S: f32[6]) {
  for i in serial(6) {
    for k in serial(1, 13) {
      block S(vi: spatial(6) = i, vk: reduce(12) = k - 1) {
        init { S[vi] = 0.0 }
        S[vi] = S[vi] + A[vi, vk]
      }
    }
  }
}
schedule f {
  i, k = sch.get_loops(sch.get_block("S"))
  sch.decompose_reduction(sch.get_block("S"), k)
})");
}

}  // namespace
}  // namespace tirc

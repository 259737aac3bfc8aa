// Schedule outsider round 8 (docs/schedule.md, "Outsider round 8"): schedules written as TVM
// users write them (tests/schedule/tvm_style_r8/*.tir, same headers as tvm_style/: `# grad: F`,
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
TEST(Outsider8, TvmStyleFiles) { testing::expect_folder_schedules("tests/schedule/tvm_style_r8", 30); }

TEST(Outsider8, TvmStyleFilesVerifyCli) {
  testing::expect_folder_verifies_cli("tests/schedule/tvm_style_r8");
}

// ---- the fixes ----

const char* kRowScan = R"(func f(X: f32[12, 16]) -> (Y: f32[12, 16]) {
  for i, j in grid(12, 16) {
    block S(vi: spatial(12) = i, vj: scan(16) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] * 0.9 + X[vi, vj])
    }
  }
}
)";

// reorder moved a loop bound to a scan iter var only if it was not moved at all: moving the
// independent rows of a row-wise scan inside the scan loop (to vectorize them) was refused
// ("loop j is bound to the scan iter var vj"). Now the loops feeding a scan block's ordered
// (scan, reduce) iter vars keep their relative order, the others move freely.
TEST(Outsider8, ReorderMovesRowsAcrossScanLoop) {
  std::string out = testing::apply_and_compare(std::string(kRowScan) + R"(schedule f {
  s = sch.get_block("S")
  i, j = sch.get_loops(s)
  io, ii = sch.split(i, [None, 4])
  sch.reorder(j, io, ii)
  sch.vectorize(ii)
  sch.parallel(io)
})");
  EXPECT_NE(out.find("for j in serial(16) {\n    for io in parallel(3) {\n      for ii in vectorized(4)"),
            std::string::npos)
      << out;
  EXPECT_EQ(
      testing::schedule_refusal(std::string(kRowScan) + R"(schedule f {
  s = sch.get_block("S")
  i, j = sch.get_loops(s)
  jo, ji = sch.split(j, [None, 4])
  sch.reorder(i, ji, jo)
})"),
      "reorder: loop ji would move across loop jo: both feed the scan or reduce iter vars of block S, whose "
      "iterations are ordered");
  // A scan over the results of a reduction: the reduce loop may not pass the scan loop (the
  // scan reads the previous step's finished sum).
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(X: f32[4, 8, 6]) -> (Y: f32[4, 8]) {
  for i, j, k in grid(4, 8, 6) {
    block S(vi: spatial(4) = i, vj: scan(8) = j, vk: reduce(6) = k) {
      init { Y[vi, vj] = if_then_else(vj == 0, 0.0, Y[vi, vj - 1]) }
      Y[vi, vj] = Y[vi, vj] + X[vi, vj, vk]
    }
  }
}
schedule f {
  s = sch.get_block("S")
  i, j, k = sch.get_loops(s)
  sch.reorder(k, j)
})"),
      "reorder: loop k would move across loop j: both feed the scan or reduce iter vars of block S, whose "
      "iterations are ordered");
}

// reverse_compute_at into a scan step: a producer whose scan iter var is fed by a loop at or
// above the target was refused ("loop j feeds the scan iter var of producer S, so Y is not final
// after an iteration of loop j"), but a step that stores Y at its scan var writes elements no
// later step touches. Still refused when the step does not store at the scan var.
TEST(Outsider8, ReverseComputeAtIntoScanStep) {
  const std::string f = R"(func f(A: f32[16, 12]) -> (Z: f32[16, 12]) {
  alloc Y: f32[16, 12]
  for i, j in grid(16, 12) {
    block S(vi: spatial(16) = i, vj: scan(12) = j) {
      Y[vi, vj] = if_then_else(vj == 0, A[vi, vj], Y[vi, vj - 1] * 0.9 + A[vi, vj])
    }
  }
  for i, j in grid(16, 12) {
    block Z(vi: spatial(16) = i, vj: spatial(12) = j) { Z[vi, vj] = Y[vi, vj] * 2.0 }
  }
}
)";
  std::string out = testing::apply_and_compare(f + R"(schedule f {
  s = sch.get_block("S")
  i, j = sch.get_loops(s)
  sch.reorder(j, i)
  sch.reverse_compute_at(sch.get_block("Z"), j)
})");
  EXPECT_NE(out.find("block Z(vi: spatial(16) = ax0, vj: spatial(12) = j)"), std::string::npos) << out;
  // A scan accumulating into one element per row (S[vi] for every step): not final per step.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[16, 12]) -> (Z: f32[16]) {
  alloc S: f32[16]
  for i, j in grid(16, 12) {
    block S(vi: spatial(16) = i, vj: scan(12) = j) {
      S[vi] = if_then_else(vj == 0, A[vi, vj], S[vi] * 0.5 + A[vi, vj])
    }
  }
  for i in serial(16) {
    block Z(vi: spatial(16) = i) { Z[vi] = S[vi] + 1.0 }
  }
}
schedule f {
  s = sch.get_block("S")
  i, j = sch.get_loops(s)
  sch.reorder(j, i)
  sch.reverse_compute_at(sch.get_block("Z"), j)
})"),
            "reverse_compute_at: loop j feeds the scan iter var of producer S, so S is not final after an "
            "iteration "
            "of loop j");
}

// A reduction whose update is not commutative (`C = C * 0.5 + x`, tirc runs it in loop order)
// was silently reordered: reorder of its reduce loops, transform_block_layout swapping its
// reduce iter vars, and compute_at / reverse_compute_at (which rebuild the moved block's loops
// in iter-var order) of a block whose loops ran the reduce iter vars in another order all
// changed what it computes. Each is now refused; the same schedules of a commutative update and
// in-order moves still apply.
TEST(Outsider8, NonCommutativeReductionKeepsItsOrder) {
  const std::string one = R"(func f(A: f32[4, 16]) -> (C: f32[4]) {
  for i, k in grid(4, 16) {
    block C(vi: spatial(4) = i, vk: reduce(16) = k) {
      init { C[vi] = 0.0 }
      C[vi] = C[vi] * 0.5 + A[vi, vk]
    }
  }
}
)";
  const std::string split_reorder = R"(schedule f {
  c = sch.get_block("C")
  i, k = sch.get_loops(c)
  ko, ki = sch.split(k, [None, 4])
  sch.reorder(ki, ko)
})";
  const std::string why = "it is not an update C = C + x (or - * min max)";
  EXPECT_EQ(testing::schedule_refusal(one + split_reorder),
            "reorder: loop ki would move across loop ko: both feed the reduce iter vars of block C, whose "
            "update is "
            "not a commutative reduction (" +
                why + ")");
  std::string sum = one;
  sum.replace(sum.find("C[vi] * 0.5 + A"), 15, "C[vi] + A");
  testing::apply_and_compare(sum + split_reorder);
  // Moving the rows across the reduction keeps each row's order.
  testing::apply_and_compare(one + R"(schedule f {
  c = sch.get_block("C")
  i, k = sch.get_loops(c)
  ko, ki = sch.split(k, [None, 4])
  sch.reorder(ko, i, ki)
})");
  const std::string two = R"(func f(A: f32[4, 4, 4]) -> (D: f32[4]) {
  alloc C: f32[4]
  for i, k1, k0 in grid(4, 4, 4) {
    block C(vi: spatial(4) = i, r0: reduce(4) = k0, r1: reduce(4) = k1) {
      init { C[vi] = 0.0 }
      C[vi] = C[vi] * 0.5 + A[vi, r0, r1]
    }
  }
  for i in serial(4) {
    block D(vi: spatial(4) = i) { D[vi] = C[vi] + 1.0 }
  }
}
)";
  EXPECT_EQ(
      testing::schedule_refusal(two + R"(schedule f {
  sch.transform_block_layout(sch.get_block("C"), lambda i, a, b: (i, b, a))
})"),
      "transform_block_layout: the index map reorders the reduce iter vars of block C, whose update is not a "
      "commutative reduction (" +
          why + ")");
  const std::string moved =
      "block C runs its iterations in a fixed order (its update is not a commutative reduction: " + why +
      "), and its loops do not run its non-spatial iter vars in their declared order, which the new loops "
      "(one "
      "per iter var) would";
  EXPECT_EQ(testing::schedule_refusal(two + R"(schedule f {
  (i,) = sch.get_loops(sch.get_block("D"))
  sch.compute_at(sch.get_block("C"), i)
})"),
            "compute_at: " + moved);
  std::string in_order = two;
  in_order.replace(in_order.find("i, k1, k0"), 9, "i, k0, k1");
  testing::apply_and_compare(in_order + R"(schedule f {
  (i,) = sch.get_loops(sch.get_block("D"))
  sch.compute_at(sch.get_block("C"), i)
})");
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(A: f32[4, 4, 4]) -> (D: f32[4]) {
  alloc C: f32[4]
  for i in serial(4) {
    block C(vi: spatial(4) = i) { C[vi] = A[vi, 0, 0] }
  }
  for i, k1, k0 in grid(4, 4, 4) {
    block D(vi: spatial(4) = i, r0: reduce(4) = k0, r1: reduce(4) = k1) {
      init { D[vi] = C[vi] }
      D[vi] = D[vi] * 0.5 + A[vi, r0, r1]
    }
  }
}
schedule f {
  (i,) = sch.get_loops(sch.get_block("C"))
  sch.reverse_compute_at(sch.get_block("D"), i)
})"),
      "reverse_compute_at: block D runs its iterations in a fixed order (its update is not a commutative "
      "reduction: " +
          why +
          "), and its loops do not run its non-spatial iter vars in their declared order, which the new "
          "loops (one per iter var) would");
}

const char* kDenseRelu = R"(func f(A: f32[9, 10], W: f32[10, 6]) -> (Y: f32[9, 6]) {
  alloc T: f32[9, 6]
  for b, j, k in grid(9, 6, 10) {
    block T(vb: spatial(9) = b, vj: spatial(6) = j, vk: reduce(10) = k) {
      init { T[vb, vj] = 0.0 }
      T[vb, vj] = T[vb, vj] + A[vb, vk] * W[vk, vj]
    }
  }
  for b, j in grid(9, 6) {
    block Y(vb: spatial(9) = b, vj: spatial(6) = j) { Y[vb, vj] = max(T[vb, vj], 0.0) }
  }
}
)";

// reverse_compute_at under a non-dividing split of a fused loop (54 outputs in tiles of 4)
// was refused ("the regions produced by the iterations of loop bi do not cover the domain of
// block Y exactly once"): the tile bound `(bo * 4 + bi) // 6 < 9` was not read as a bound of
// the fused iterator, so its inner part `% 6` did not split the 56 fused iterations exactly.
TEST(Outsider8, ReverseComputeAtUnderNonDividingFusedSplit) {
  for (int factor : {4, 5, 3}) {
    SCOPED_TRACE(factor);
    std::string out = testing::apply_and_compare(std::string(kDenseRelu) + R"(schedule f {
  t = sch.get_block("T")
  y = sch.get_block("Y")
  b, j, k = sch.get_loops(t)
  fu = sch.fuse(b, j)
  bo, bi = sch.split(fu, [None, )" + std::to_string(factor) +
                                                 R"(])
  sch.bind(bo, "blockIdx.x")
  sch.bind(bi, "threadIdx.x")
  sch.reverse_compute_at(y, bi)
})");
    EXPECT_NE(out.find("block Y(vb: spatial(9) = (bo * " + std::to_string(factor) + " + bi) // 6"),
              std::string::npos)
        << out;
  }
  // Still refused: tiles that overlap (the epilogue reads a neighbour column).
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[9, 6]) -> (Y: f32[9, 5]) {
  alloc T: f32[9, 6]
  for b, j in grid(9, 6) {
    block T(vb: spatial(9) = b, vj: spatial(6) = j) { T[vb, vj] = A[vb, vj] * 2.0 }
  }
  for b, j in grid(9, 5) {
    block Y(vb: spatial(9) = b, vj: spatial(5) = j) { Y[vb, vj] = T[vb, vj] + T[vb, vj + 1] }
  }
}
schedule f {
  t = sch.get_block("T")
  y = sch.get_block("Y")
  b, j = sch.get_loops(t)
  fu = sch.fuse(b, j)
  bo, bi = sch.split(fu, [None, 4])
  sch.reverse_compute_at(y, bi)
})"),
            "reverse_compute_at: block Y loads buffer T at different indices");
}

// compute_at / reverse_compute_at took `index=-1` only; TVM's `index=-2` (first possible
// insertion point) was "unknown keyword argument 'index'". -2 is now accepted (any valid
// position computes the same); an explicit position is refused by name.
TEST(Outsider8, ComputeAtIndexKeyword) {
  const std::string f = R"(func f(A: f32[16, 8]) -> (C: f32[16, 8]) {
  alloc B: f32[16, 8]
  for i, j in grid(16, 8) {
    block B(vi: spatial(16) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(16, 8) {
    block C(vi: spatial(16) = i, vj: spatial(8) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)";
  testing::apply_and_compare(f + R"(schedule f {
  i, j = sch.get_loops(sch.get_block("C"))
  sch.compute_at(block=sch.get_block("B"), loop=i, preserve_unit_loops=True, index=-2)
})");
  testing::apply_and_compare(f + R"(schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i, index=-2)
})");
  EXPECT_EQ(
      testing::schedule_refusal(f + R"(schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i, index=0)
})"),
      "reverse_compute_at: index=0 is not a position between the producers and the consumers of block C in "
      "the body of loop i (1 to 1)");
}

}  // namespace
}  // namespace tirc

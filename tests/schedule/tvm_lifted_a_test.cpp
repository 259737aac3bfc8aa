// Round 11, part A follow-up (docs/schedule.md, "Refused where TVM accepts"): compute_at-family
// schedules of TVM's tests that tirc refused and now applies. Each test applies a schedule that
// was refused before the fix (compared with the unscheduled function on random inputs) and
// checks that the cases that would change the result stay refused.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "tests/sanitized.h"

namespace tirc {
namespace {

// compute_at of a producer storing at reversed indices `Y[9 - vi, 9 - vj]` was refused ("the
// indices of the store in block b0 are not distinct iter vars"); the produced region is still a
// box, mapped back to the iter vars with its ends swapped. test_compute_at_rev_iter.
TEST(TvmLiftedA, ComputeAtReversedStore) {
  // A split consumer: each iteration of io needs rows [5 io, 5 io + 4] of Y, i.e. vi in
  // [5 - 5 io, 9 - 5 io]; a shifted store `Y[vi + 1]` needs vi one lower.
  std::string out = testing::apply_and_compare(R"(func f(X: f32[10, 8]) -> (Z: f32[10, 8]) {
  alloc Y: f32[10, 8]
  alloc W: f32[11, 8]
  for i, j in grid(10, 8) {
    block b0(vi: spatial(10) = i, vj: spatial(8) = j) { Y[9 - vi, 7 - vj] = X[vi, vj] * 3.0 + 1.0 }
  }
  for i, j in grid(10, 8) {
    block w(vi: spatial(10) = i, vj: spatial(8) = j) { W[vi + 1, vj] = X[vi, vj] - 2.0 }
  }
  for i, j in grid(10, 8) {
    block b1(vi: spatial(10) = i, vj: spatial(8) = j) { Z[vi, vj] = Y[vi, vj] + W[vi + 1, vj] }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("b1"))
  io, ii = sch.split(i, factors=[2, 5])
  sch.compute_at(sch.get_block("w"), io)
  sch.compute_at(sch.get_block("b0"), io)
})");
  EXPECT_NE(out.find("block b0(vi: spatial(10) = io * -5 + ax0_1 + 5, vj: spatial(8) = ax1_1)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("block w(vi: spatial(10) = io * 5 + ax0, vj: spatial(8) = ax1)"), std::string::npos)
      << out;
  // An output must be tiled exactly once (check_exact_tiling works on plain iter var stores).
  EXPECT_EQ(testing::schedule_refusal(R"(func f(X: f32[10]) -> (Y: f32[10], Z: f32[10]) {
  for i in serial(10) {
    block b0(vi: spatial(10) = i) { Y[9 - vi] = X[vi] + 1.0 }
  }
  for i in serial(10) {
    block b1(vi: spatial(10) = i) { Z[vi] = Y[vi] * 2.0 }
  }
}
schedule f {
  sch.compute_at(sch.get_block("b0"), sch.get_loops(sch.get_block("b1"))[0])
})"),
            "compute_at: the indices of the store in block b0 are not distinct iter vars (Y is an output)");
  // A coefficient other than +-1 stays refused (the produced region is strided).
  EXPECT_EQ(testing::schedule_refusal(R"(func f(X: f32[10]) -> (Z: f32[20]) {
  alloc Y: f32[20]
  for i in serial(10) {
    block b0(vi: spatial(10) = i) { Y[2 * vi] = X[vi] + 1.0 }
  }
  for i in serial(20) {
    block b1(vi: spatial(20) = i) { Z[vi] = Y[vi] * 2.0 }
  }
}
schedule f {
  sch.compute_at(sch.get_block("b0"), sch.get_loops(sch.get_block("b1"))[0])
})"),
            "compute_at: the indices of the store in block b0 are not distinct iter vars");
}

// reverse_compute_inline of a consumer with a unit iter var its load does not use (`D[vi, vj,
// vk] = C[vj, vk] + 1.0`, vi of extent 1) was refused ("does not use every iter var of the
// block"); the unit iter var is 0 in the inlined store. test_reverse_compute_inline_affine_chain.
TEST(TvmLiftedA, ReverseComputeInlineUnitIterVar) {
  std::string out = testing::apply_and_compare(R"(func f(A: f32[4, 6]) -> (D: f32[1, 4, 6]) {
  alloc C: f32[4, 6]
  for i, j in grid(4, 6) {
    block C(vi: spatial(4) = i, vj: spatial(6) = j) { C[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j, k in grid(1, 4, 6) {
    block D(vi: spatial(1) = i, vj: spatial(4) = j, vk: spatial(6) = k) { D[vi, vj, vk] = C[vj, vk] + 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("D"))
})");
  EXPECT_NE(out.find("D[0, vi, vj] = A[vi, vj] * 2.0 + 1.0"), std::string::npos) << out;
  // An unused iter var of extent 2 would store each value twice: still refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[4, 6]) -> (D: f32[2, 4, 6]) {
  alloc C: f32[4, 6]
  for i, j in grid(4, 6) {
    block C(vi: spatial(4) = i, vj: spatial(6) = j) { C[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j, k in grid(2, 4, 6) {
    block D(vi: spatial(2) = i, vj: spatial(4) = j, vk: spatial(6) = k) { D[vi, vj, vk] = C[vj, vk] + 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("D"))
})"),
            "reverse_compute_inline: the load of C in block D does not use every iter var of the block");
}

// compute_at / reverse_compute_at with an explicit `index=k` (k >= 0) was refused ("index=1 is
// not supported"); TVM inserts at position k of the loop body when k lies between the last
// producer and the first consumer. test_reverse_compute_at_to_index.
TEST(TvmLiftedA, ComputeAtExplicitIndex) {
  // Loop i of C's nest holds an unrelated block E first, then C's loop: B may go at 0 or 1.
  std::string f = R"(func f(A: f32[8, 6]) -> (C: f32[8, 6], E: f32[8]) {
  alloc B: f32[8, 6]
  for i, j in grid(8, 6) {
    block B(vi: spatial(8) = i, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i in serial(8) {
    block E(vi: spatial(8) = i) { E[vi] = A[vi, 0] - 1.0 }
    for j in serial(6) {
      block C(vi: spatial(8) = i, vj: spatial(6) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
    }
  }
}
)";
  for (int k : {0, 1}) {
    std::string out = testing::apply_and_compare(
        f + "schedule f {\n  i = sch.get_loops(sch.get_block(\"C\"))[0]\n" +
        "  sch.compute_at(sch.get_block(\"B\"), i, index=" + std::to_string(k) + ")\n}\n");
    size_t b = out.find("block B("), e = out.find("block E(");
    ASSERT_NE(b, std::string::npos);
    ASSERT_NE(e, std::string::npos);
    EXPECT_EQ(k == 0, b < e) << out;
  }
  EXPECT_EQ(testing::schedule_refusal(f + R"(schedule f {
  i = sch.get_loops(sch.get_block("C"))[0]
  sch.compute_at(sch.get_block("B"), i, index=2)
})"),
            "compute_at: index=2 is not a position between the producers and the consumers of block B in the "
            "body of loop i (0 to 1)");
  EXPECT_EQ(testing::schedule_refusal(f + R"(schedule f {
  i = sch.get_loops(sch.get_block("C"))[0]
  sch.compute_at(sch.get_block("B"), i, index=-3)
})"),
            "compute_at: index=-3 is not supported (only -1, -2 or a position in the loop body)");
  // reverse_compute_at: D after B's loop (position 1 or 2 of loop i's body, around E).
  std::string g = R"(func g(A: f32[8, 6]) -> (D: f32[8, 6], E: f32[8]) {
  alloc B: f32[8, 6]
  for i in serial(8) {
    for j in serial(6) {
      block B(vi: spatial(8) = i, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
    }
    block E(vi: spatial(8) = i) { E[vi] = A[vi, 1] + 3.0 }
  }
  for i, j in grid(8, 6) {
    block D(vi: spatial(8) = i, vj: spatial(6) = j) { D[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)";
  for (int k : {1, 2}) {
    std::string out = testing::apply_and_compare(
        g + "schedule g {\n  i = sch.get_loops(sch.get_block(\"B\"))[0]\n" +
        "  sch.reverse_compute_at(sch.get_block(\"D\"), i, index=" + std::to_string(k) + ")\n}\n");
    size_t d = out.find("block D("), e = out.find("block E(");
    ASSERT_NE(d, std::string::npos);
    ASSERT_NE(e, std::string::npos);
    EXPECT_EQ(k == 1, d < e) << out;
  }
  EXPECT_EQ(
      testing::schedule_refusal(g + R"(schedule g {
  i = sch.get_loops(sch.get_block("B"))[0]
  sch.reverse_compute_at(sch.get_block("D"), i, index=0)
})"),
      "reverse_compute_at: index=0 is not a position between the producers and the consumers of block D in "
      "the body of loop i (1 to 2)");
}

// compute_at of a blockized block was refused ("block B_o has nested blocks"); it now moves
// when the box its write region declares per point is exact and self-contained (see
// blockized_axes in compute_at.cpp). test_compute_at_blockized_2.
TEST(TvmLiftedA, ComputeAtBlockized) {
  std::string f = R"(func f(A: f32[16, 12]) -> (C: f32[16, 12]) {
  alloc B: f32[16, 12]
  for i, j in grid(16, 12) {
    block B(vi: spatial(16) = i, vj: spatial(12) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(16, 12) {
    block C(vi: spatial(16) = i, vj: spatial(12) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  io, ii = sch.split(i, factors=[None, 4])
  jo, ji = sch.split(j, factors=[None, 4])
  sch.reorder(io, jo, ii, ji)
  b = sch.blockize(ii)
)";
  // C tiled 8 x 6: rows [8 io, 8 io + 7] are the tiles 2 io, 2 io + 1 of B_o; columns
  // [6 jo, 6 jo + 5] are not tile aligned, so the whole dimension is recomputed.
  std::string out = testing::apply_and_compare(f + R"(  ci, cj = sch.get_loops(sch.get_block("C"))
  cio, cii = sch.split(ci, factors=[None, 8])
  cjo, cji = sch.split(cj, factors=[None, 6])
  sch.reorder(cio, cjo, cii, cji)
  sch.compute_at(b, cjo)
})");
  EXPECT_NE(out.find("block B_o(vio_o: spatial(4) = cio * 2 + ax0, vjo_o: spatial(3) = ax1)"),
            std::string::npos)
      << out;
  // Compute_at of a blockized block into a loop of its only consumer, once per row.
  testing::apply_and_compare(f + R"(  sch.compute_at(b, sch.get_loops(sch.get_block("C"))[0])
})");
  // A blockized output must be tiled exactly once: refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[8]) -> (B: f32[8], C: f32[8]) {
  for i in serial(8) {
    block B(vi: spatial(8) = i) { B[vi] = A[vi] * 2.0 }
  }
  for i in serial(8) {
    block C(vi: spatial(8) = i) { C[vi] = B[vi] + 1.0 }
  }
}
schedule f {
  io, ii = sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 4])
  b = sch.blockize(ii)
  sch.compute_at(b, sch.get_loops(sch.get_block("C"))[0])
})"),
            "compute_at: block B_o has nested blocks (B is an output)");
  // Boxes wider than their stride (overlapping: 8 elements every 4): refused.
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(A: f32[12]) -> (C: f32[12]) {
  alloc B: f32[12]
  for io in serial(2) {
    block B_o(vo: spatial(2) = io) {
      reads A[vo * 4:vo * 4 + 8]
      writes B[vo * 4:vo * 4 + 8]
      for ii in serial(8) {
        block B(vi: spatial(12) = vo * 4 + ii) { B[vi] = A[vi] * 2.0 }
      }
    }
  }
  for i in serial(8) {
    block C(vi: spatial(12) = i) { C[vi] = B[vi] + 1.0 }
  }
}
schedule f {
  sch.compute_at(sch.get_block("B_o"), sch.get_loops(sch.get_block("C"))[0])
})"),
      "compute_at: block B_o has nested blocks (and a write region that is not a box of distinct iter vars)");
  // A blockized reduction reads what it writes: accepted since round 12 (its reduce loops are
  // inside the tile, so every recomputation re-runs the init first; tvm_lifted_r12_test.cpp).
  testing::apply_and_compare(R"(func f(A: f32[4, 8]) -> (C: f32[4]) {
  alloc B: f32[4]
  for i in serial(4) {
    block B_o(vi: spatial(4) = i) {
      for k in serial(8) {
        block B(vi2: spatial(4) = vi, vk: reduce(8) = k) {
          init { B[vi2] = 0.0 }
          B[vi2] = B[vi2] + A[vi2, vk]
        }
      }
    }
  }
  for i in serial(4) {
    block C(vi: spatial(4) = i) { C[vi] = B[vi] * 2.0 }
  }
}
schedule f {
  sch.compute_at(sch.get_block("B_o"), sch.get_loops(sch.get_block("C"))[0])
})");
}

}  // namespace
}  // namespace tirc

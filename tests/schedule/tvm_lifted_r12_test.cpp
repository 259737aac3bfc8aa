// Round 12: refusals of TVM-accepted schedules lifted (docs/schedule.md, "Lifted refusals, round
// 12"). Each test applies a schedule that was refused before the fix (compared with the
// unscheduled function on random inputs) and checks that the cases that would change the result
// stay refused with their reason.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "transforms/schedule/arith.h"

namespace tirc {
namespace {

// A consumer reduction whose reduce iter var the produced tiles map (TVM's
// test_reverse_compute_at_factorized) was refused ("iter var vk of block B is not spatial"): its
// reduction is now split over the iterations of the loop (init at the first, in order).
std::string split_reduction(const std::string& io_kind, const std::string& update) {
  return R"(func f(A: f32[8, 12]) -> (B: f32[8]) {
  alloc R: f32[12, 8]
  for j in serial(8) {
    for io in )" +
         io_kind + R"( {
      for ii in serial(4) {
        block R(vi: spatial(12) = io * 4 + ii, vj: spatial(8) = j) { R[vi, vj] = A[vj, vi] * 2.0 }
      }
    }
  }
  for i, k in grid(8, 12) {
    block B(vi: spatial(8) = i, vk: reduce(12) = k) {
      init { B[vi] = 1.0 }
      B[vi] = )" +
         update + R"(
    }
  }
}
schedule f {
  sch.reverse_compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("R"))[1])
}
)";
}

TEST(TvmLiftedR12, ReverseComputeAtSplitsReductionOverTiles) {
  // The init (1.0) must run once per element: a re-run per tile would drop the earlier tiles.
  std::string out = testing::apply_and_compare(split_reduction("serial(3)", "B[vi] + R[vk, vi]"));
  EXPECT_NE(out.find("block B(vi: spatial(8) = j, vk: reduce(12) = io * 4 + ax1)"), std::string::npos) << out;
  // Also under a threadIdx loop (serial on the CPU; the NVPTX backend refuses the cross-thread
  // reduction whose loop holds block R too) and with min as the combiner.
  testing::apply_and_compare(split_reduction("thread_binding(3, \"threadIdx.x\")", "min(B[vi], R[vk, vi])"));
  EXPECT_EQ(
      testing::schedule_refusal(split_reduction("parallel(3)", "B[vi] + R[vk, vi]")),
      "reverse_compute_at: block B is a reduction whose reduce iter var is split over the iterations of "
      "loop io, whose iterations may run at once (parallel)");
  EXPECT_EQ(
      testing::schedule_refusal(split_reduction("thread_binding(3, \"blockIdx.x\")", "B[vi] + R[vk, vi]")),
      "reverse_compute_at: block B is a reduction whose reduce iter var is split over the iterations of "
      "loop io, whose iterations may run at once (thread_binding)");
  // A body that is not a commutative update depends on the order of the terms.
  std::string msg = testing::schedule_refusal(split_reduction("serial(3)", "B[vi] * 0.5 + R[vk, vi]"));
  EXPECT_EQ(
      msg.rfind("reverse_compute_at: block B is a reduction whose reduce iter var is split over the loop "
                "iterations, but its update is not a commutative reduction: ",
                0),
      0u)
      << msg;
}

// Two reduce iter vars of B mapped to the tiles of two loops: refused (one at most).
TEST(TvmLiftedR12, ReverseComputeAtTwoSplitReductionsRefused) {
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(A: f32[4, 6]) -> (B: f32[1]) {
  alloc R: f32[4, 6]
  for io, jo in grid(2, 3) {
    for ii, ji in grid(2, 2) {
      block R(vi: spatial(4) = io * 2 + ii, vj: spatial(6) = jo * 2 + ji) { R[vi, vj] = A[vi, vj] + 1.0 }
    }
  }
  for k, l in grid(4, 6) {
    block B(vk: reduce(4) = k, vl: reduce(6) = l) {
      init { B[0] = 0.0 }
      B[0] = B[0] + R[vk, vl]
    }
  }
}
schedule f {
  sch.reverse_compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("R"))[1])
}
)"),
      "reverse_compute_at: block B is a reduction whose reduce iter vars are split over the iterations of "
      "several loops");
}

// A fused loop split by a symbolic size (TVM's test_shape_var_as_bound: `f // n`, `f % n` over
// `n * 4` iterations) was not read as one-to-one, so reverse_compute_at refused ("the regions
// produced by the iterations of loop f do not cover the domain of block C exactly once").
TEST(TvmLiftedR12, ReverseComputeAtSymbolicFusedSplit) {
  testing::apply_and_compare(R"(func f(n: i32 in [1, 5], A: f32[3, n]) -> (C: f32[3, n]) {
  alloc B: f32[3, n]
  for f in serial(n * 3) {
    block B(v0: spatial(3) = f // n, v1: spatial(n) = f % n) { B[v0, v1] = A[v0, v1] + 1.0 }
  }
  for f in serial(n * 3) {
    block C(v0: spatial(3) = f // n, v1: spatial(n) = f % n) { C[v0, v1] = B[v0, v1] * 2.0 }
  }
}
schedule f {
  sch.reverse_compute_at(sch.get_block("C"), sch.get_loops(sch.get_block("B"))[0])
}
)");
}

// The mixed-radix reading of symbolic splits (arith.cpp exact_quotient): only when the loop's
// extent is a constant multiple of the divisor, so that it holds for every value of n.
TEST(TvmLiftedR12, BijectiveBindingsSymbolicSplits) {
  using namespace sched;
  Var n("n", DType::I32), f("f", DType::I32);
  Expr four = make_int(4, DType::I32), two = make_int(2, DType::I32);
  std::vector<LoopDom> loops{{f, n * four}};
  EXPECT_TRUE(bijective_bindings({floordiv(f, n), floormod(f, n)}, {four, n}, loops, Expr()));
  EXPECT_TRUE(bijective_bindings({floormod(f, n), floormod(floordiv(f, n), two), floordiv(f, n * two)},
                                 {n, two, two}, loops, Expr()));
  // Not a multiple of n: for n = 3, 8 iterations do not fill [0, 8 // 3) x [0, 3).
  EXPECT_FALSE(bijective_bindings({floordiv(f, n), floormod(f, n)}, {make_int(8, DType::I32) / n, n},
                                  {{f, make_int(8, DType::I32)}}, Expr()));
  // `f % n` alone repeats every element 4 times.
  EXPECT_FALSE(bijective_bindings({floormod(f, n)}, {n}, loops, Expr()));
  // A quotient that is not a constant (n * n iterations) is not read.
  EXPECT_FALSE(bijective_bindings({floordiv(f, n), floormod(f, n)}, {n, n}, {{f, n * n}}, Expr()));
  auto inv = invert_bindings({floordiv(f, n), floormod(f, n)}, {Var("a", DType::I32), Var("b", DType::I32)},
                             {four, n}, loops, Expr());
  ASSERT_TRUE(inv.has_value());
}

// reverse_compute_inline of loads that are not plain iter vars (TVM's
// test_reverse_compute_inline_affine_load, _multi_affine_load, _affine_chain) was refused ("the
// indices of the load of B in block C are not distinct iter vars"): a load one-to-one onto the
// producer's domain is inverted, and a producer left storing at `C[vi // 4, vi % 4, vj]` by an
// earlier inline is inlined into again.
TEST(TvmLiftedR12, ReverseComputeInlineAffineLoad) {
  std::string out =
      testing::apply_and_compare(R"(func f(A: f32[16, 16], E: f32[4, 4, 16]) -> (C: f32[4, 16, 4]) {
  alloc B: f32[16, 16]
  for i, j in grid(16, 16) {
    block B(vi: spatial(16) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j, k in grid(4, 4, 16) {
    block C(vi: spatial(4) = i, vj: spatial(4) = j, vk: spatial(16) = k) { C[vj, vk, vi] = B[vi * 4 + vj, vk] + E[vi, vj, vk] }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)");
  EXPECT_NE(out.find("C[vi % 4, vj, vi // 4] = A[vi, vj] * 2.0 + E[vi // 4, vi % 4, vj]"), std::string::npos)
      << out;
  // A fused then split load (a layout transform), then a second inline into the new store.
  testing::apply_and_compare(R"(func f(A: f32[8, 6]) -> (D: f32[3, 16]) {
  alloc B: f32[8, 6]
  alloc C: f32[6, 8]
  for i, j in grid(8, 6) {
    block B(vi: spatial(8) = i, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] + 1.0 }
  }
  for i, j in grid(6, 8) {
    block C(vi: spatial(6) = i, vj: spatial(8) = j) { C[vi, vj] = B[(vi * 8 + vj) // 6, (vi * 8 + vj) % 6] * 3.0 }
  }
  for i, j in grid(3, 16) {
    block D(vi: spatial(3) = i, vj: spatial(16) = j) { D[vi, vj] = C[vi * 2 + vj // 8, vj % 8] - 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
  sch.reverse_compute_inline(sch.get_block("D"))
}
)");
}

TEST(TvmLiftedR12, ReverseComputeInlineAffineLoadRefusals) {
  // Half of B read: the other producer points would have no consumer point.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[16, 16]) -> (C: f32[8, 16]) {
  alloc B: f32[16, 16]
  for i, j in grid(16, 16) {
    block B(vi: spatial(16) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 16) {
    block C(vi: spatial(8) = i, vj: spatial(16) = j) { C[vi, vj] = B[vi * 2, vj] }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)"),
            "reverse_compute_inline: the indices of the load of B in block C are not distinct iter vars");
  // A producer storing at `C[vi // 4, vi % 4, vj]` and a consumer reading a quarter of C.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[16, 4]) -> (D: f32[4, 4]) {
  alloc C: f32[4, 4, 4]
  for i, j in grid(16, 4) {
    block B(vi: spatial(16) = i, vj: spatial(4) = j) { C[vi // 4, vi % 4, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(4, 4) {
    block D(vi: spatial(4) = i, vj: spatial(4) = j) { D[vi, vj] = C[vi, vj, 0] }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("D"))
}
)"),
            "reverse_compute_inline: the load of C in block D does not read each element that block B stores "
            "exactly once");
  // A plain producer store that does not use every iter var of B: several points per element.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[16, 2]) -> (C: f32[4, 4]) {
  alloc B: f32[16]
  for i, r in grid(16, 2) {
    block B(vi: spatial(16) = i, vr: spatial(2) = r) { B[vi] = A[vi, vr] * 2.0 }
  }
  for i, j in grid(4, 4) {
    block C(vi: spatial(4) = i, vj: spatial(4) = j) { C[vi, vj] = B[vi * 4 + vj] }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)"),
            "reverse_compute_inline: the store of the producer block B does not use every iter var");
  // A producer whose store is not one-to-one (two points per element).
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[16, 4]) -> (D: f32[8, 4]) {
  alloc C: f32[8, 4]
  for i, j in grid(16, 4) {
    block B(vi: spatial(16) = i, vj: spatial(4) = j) { C[vi // 2, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 4) {
    block D(vi: spatial(8) = i, vj: spatial(4) = j) { D[vi, vj] = C[vi, vj] }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("D"))
}
)"),
            "reverse_compute_inline: the indices of the store in block B are not distinct iter vars");
}

// reverse_compute_at of a consumer loading through a layout transform (TVM's
// test_reverse_compute_at_layout_trans: `B[v0, (v1 * 8 + v4) // 16, ..., (v1 * 8 + v4) % 16]`) was
// refused ("the indices of the load of B in block C are not distinct iter vars"): a load
// one-to-one onto B runs the consumer over the region produced per iteration in B's index space.
std::string layout_consumer(const std::string& load, const std::string& sched) {
  return R"(func f(A: f32[4, 16]) -> (C: f32[8, 8]) {
  alloc B: f32[4, 16]
  for i, j in grid(4, 16) {
    block B(vi: spatial(4) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] + 1.0 }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = )" +
         load + R"( * 2.0 }
  }
}
schedule f {
)" + sched +
         "}\n";
}

TEST(TvmLiftedR12, ReverseComputeAtAffineLoad) {
  const std::string flat = "B[(vi * 8 + vj) // 16, (vi * 8 + vj) % 16]";
  std::string out = testing::apply_and_compare(layout_consumer(
      flat, "  sch.reverse_compute_at(sch.get_block(\"C\"), sch.get_loops(sch.get_block(\"B\"))[0])\n"));
  EXPECT_NE(out.find("vi: spatial(8) = (i * 16 + ax0) // 8 % 8, vj: spatial(8) = (i * 16 + ax0) % 8"),
            std::string::npos)
      << out;
  // Tiles of 4 columns: each iteration of jo runs the 4 consumer points reading them.
  testing::apply_and_compare(layout_consumer(flat, R"(  i, j = sch.get_loops(sch.get_block("B"))
  jo, ji = sch.split(j, factors=[4, 4])
  sch.reverse_compute_at(sch.get_block("C"), jo)
)"));
  // Not one-to-one onto B: refused as before.
  EXPECT_EQ(testing::schedule_refusal(layout_consumer(
                "B[(vi + vj) // 4, 0]",
                "  sch.reverse_compute_at(sch.get_block(\"C\"), sch.get_loops(sch.get_block(\"B\"))[0])\n")),
            "reverse_compute_at: the indices of the load of B in block C are not distinct iter vars");
}

// compute_at of a blockized reduction (blockize of a matmul tile whose reduce loop is inside the
// tile) was refused ("block B_o reads buffer B, which it writes, and is not a reduction with
// init"): the nested reduction re-runs its init first in every execution of the tile, so a
// recomputed tile stores the same values.
std::string blockized_matmul(const std::string& init, const std::string& kbind, const std::string& at) {
  return R"(func f(A: f32[8, 12], W: f32[12, 8]) -> (C: f32[8, 8]) {
  alloc B: f32[8, 8]
  for i, j, k in grid(8, 8, 12) {
    block B(vi: spatial(8) = i, vj: spatial(8) = j, vk: reduce(12) = k) {
      )" +
         init + R"(
      B[vi, vj] = B[vi, vj] + A[vi, vk] * W[vk, vj]
    }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = B[vi, vj] * 2.0 + B[vi, min(vj + 1, 7)] }
  }
}
schedule f {
  i, j, k = sch.get_loops(sch.get_block("B"))
  io, ii = sch.split(i, factors=[None, 4])
  jo, jj = sch.split(j, factors=[None, 2])
  sch.reorder(io, jo, ii, jj, k)
  bo = sch.blockize()" +
         kbind + R"()
  ci, cj = sch.get_loops(sch.get_block("C"))
  cio, cii = sch.split(ci, factors=[None, 4])
  sch.compute_at(bo, )" +
         at + R"()
}
)";
}

TEST(TvmLiftedR12, ComputeAtBlockizedReduction) {
  const std::string init = "init { B[vi, vj] = 0.5 }";
  std::string out = testing::apply_and_compare(blockized_matmul(init, "ii", "cio"));
  EXPECT_NE(out.find("block B_o(vio_o: spatial(2) = cio, vjo_o: spatial(4) = ax1)"), std::string::npos)
      << out;
  // At the column loop: each iteration needs columns j and j + 1, so tiles are recomputed.
  testing::apply_and_compare(blockized_matmul(init, "ii", "cj"));
  // Without init the reduction accumulates onto B: a recomputed tile would add twice.
  EXPECT_EQ(
      testing::schedule_refusal(blockized_matmul("", "ii", "cj")),
      "compute_at: block B_o has nested blocks (block B inside it reads buffer B, which it writes, and is "
      "not a reduction with init)");
  // The reduce loop outside the tile (blockize of jj only): refused by blockize's own reduce
  // iter var (B_o would have the non-spatial iter var).
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(A: f32[4, 8]) -> (C: f32[4]) {
  alloc B: f32[4]
  for i, ko in grid(4, 2) {
    block B_o(vi: spatial(4) = i, vko: spatial(2) = ko) {
      for k in serial(4) {
        block B(vi2: spatial(4) = vi, vk: reduce(8) = vko * 4 + k) {
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
}
)"),
      "compute_at: block B_o has nested blocks (block B inside it is a reduction whose reduce iter var vk is "
      "not a sum of loops inside the block)");
}

// compute_inline substitutes the load indices, so loads like `B[vi * 4 + vj, vk]` inline as they
// are (no change needed in round 12; kept as a guard).
TEST(TvmLiftedR12, ComputeInlineAffineLoad) {
  testing::apply_and_compare(R"(func f(A: f32[16, 16]) -> (C: f32[4, 4, 16]) {
  alloc B: f32[16, 16]
  for i, j in grid(16, 16) {
    block B(vi: spatial(16) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j, k in grid(4, 4, 16) {
    block C(vi: spatial(4) = i, vj: spatial(4) = j, vk: spatial(16) = k) { C[vi, vj, vk] = B[vi * 4 + vj, vk] + B[(vi * 64 + vj * 16 + vk) // 16, vk] }
  }
}
schedule f {
  sch.compute_inline(sch.get_block("B"))
}
)");
}

}  // namespace
}  // namespace tirc

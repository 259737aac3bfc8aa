// Round 16: another batch of TVM's own schedule tests translated into `.tir` files
// (tests/schedule/tvm_ported_r16/<TVM file>__<TVM test>.tir; same headers as tvm_style/: `# refuse:
// MSG` with `# <- refused`), and the refusals lifted while porting them (docs/schedule.md,
// "Round 16"). Where TVM succeeds the schedule must compute what the unscheduled function does;
// where TVM raises ScheduleError tirc must refuse with the message in the header.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "tests/schedule/tvm_style_files.h"

namespace tirc {
namespace {

TEST(TvmPortedR16, Files) { testing::expect_folder_schedules("tests/schedule/tvm_ported_r16", 30); }

TEST(TvmPortedR16, FilesVerifyCli) { testing::expect_folder_verifies_cli("tests/schedule/tvm_ported_r16"); }

// reverse_compute_inline into a producer that computes more than the consumer reads (TVM's
// test_reverse_compute_inline_overcomputed_producer: B over 16 x 16, C over 15 x 15) was refused
// ("the domains of blocks B and C differ in dimension 0 of buffer B"). The inlined store now runs
// under `if vi < 15 && vj < 15`; a consumer larger than its producer stays refused.
TEST(TvmPortedR16, ReverseComputeInlineOvercomputedProducer) {
  for (const char* f :
       {"compute_inline__test_reverse_compute_inline_overcomputed_producer.tir",
        "compute_inline__test_reverse_compute_inline_overcomputed_producer_simplify_predicate.tir"}) {
    SCOPED_TRACE(f);
    std::string out = testing::apply_and_compare(
        testing::read_text(std::string(TIRC_SOURCE_DIR) + "/tests/schedule/tvm_ported_r16/" + f));
    EXPECT_NE(out.find("if vi < 15 && vj < 15 {"), std::string::npos) << out;
    EXPECT_EQ(out.find("block C("), std::string::npos) << out;
  }
  // Only one dimension smaller: one guard.
  std::string one = testing::apply_and_compare(R"(func f(A: f32[6, 4]) -> (C: f32[5, 4]) {
  alloc B: f32[6, 4]
  for i, j in grid(6, 4) {
    block B(vi: spatial(6) = i, vj: spatial(4) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for j, i in grid(4, 5) {
    block C(cj: spatial(4) = j, ci: spatial(5) = i) { C[ci, cj] = B[ci, cj] + 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)");
  EXPECT_NE(one.find("if vi < 5 {"), std::string::npos) << one;
  // The consumer reads more rows than the producer computes: refused.
  EXPECT_EQ(testing::schedule_refusal(R"(func f(A: f32[6, 4]) -> (C: f32[6, 4]) {
  alloc B: f32[6, 4]
  for i, j in grid(5, 4) {
    block B(vi: spatial(5) = i, vj: spatial(4) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(6, 4) {
    block C(vi: spatial(6) = i, vj: spatial(4) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)"),
            "reverse_compute_inline: the domains of blocks B and C differ in dimension 0 of buffer B");
}

// cache_read / reindex of a buffer whose writers are all under conditions was refused even when
// the conditions are complementary ("block B1 writes buffer B under the condition i < 4, and the
// copy of the whole buffer would read the elements it skips"). The writers' stores are now
// enumerated point by point (small constant nests, transforms/schedule/coverage.h): together
// they write every element, so the copy reads only written values. A row nobody writes is still
// refused.
TEST(TvmPortedR16, CacheReadOfComplementaryWriters) {
  std::string text = R"(func f(A: f32[8, 4]) -> (C: f32[8, 4]) {
  alloc B: f32[8, 4]
  for i, j in grid(8, 4) {
    block B1(vi: spatial(8) = i, vj: spatial(4) = j) {
      where i < 4
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(8, 4) {
    block B2(vi: spatial(8) = i, vj: spatial(4) = j) {
      where i >= 4
      B[vi, vj] = A[vi, vj] + 3.0
    }
  }
  for i, j in grid(8, 4) {
    block C(vi: spatial(8) = i, vj: spatial(4) = j) { C[vi, vj] = B[vi, vj] * 0.5 }
  }
}
schedule f {
  c = get_block("C")
  PRIM
}
)";
  auto with = [&](const std::string& prim, const std::string& cond) {
    std::string t = text;
    t.replace(t.find("PRIM"), 4, prim);
    t.replace(t.find("i >= 4"), 6, cond);
    return t;
  };
  for (const char* prim : {"s = cache_read(c, 0, \"shared\")", "r = reindex(c, (\"read\", 0))"}) {
    SCOPED_TRACE(prim);
    testing::apply_and_compare(with(prim, "i >= 4"));
  }
  EXPECT_EQ(
      testing::schedule_refusal(with("s = cache_read(c, 0, \"shared\")", "i >= 5")),
      "cache_read: block B1 writes buffer B under the condition i < 4, and the copy of the whole buffer "
      "would read the elements it skips");
  EXPECT_EQ(
      testing::schedule_refusal(with("r = reindex(c, (\"read\", 0))", "i >= 5")),
      "reindex: block B1 writes buffer B under the condition i < 4, and the copy over the iteration space "
      "of block C would read the elements it skips");
}

// TVM's test_two_elementwise_unit_dim: transform_layout with the identity map on a buffer with a
// unit dimension leaves the function as it was (the folder's files must change something, so
// this one is checked here).
TEST(TvmPortedR16, TransformLayoutIdentityUnitDim) {
  Module m = parse_module(R"(func two_elementwise_unit_dim(A: f32[1, 16]) -> (C: f32[1, 16]) {
  alloc B: f32[1, 16]
  for i, j in grid(1, 16) {
    block B(vi: spatial(1) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(1, 16) {
    block C(vi: spatial(1) = i, vj: spatial(16) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
schedule two_elementwise_unit_dim {
  block = sch.get_block("B")
  sch.transform_layout(block, ("write", 0), lambda i, j: (i, j))
}
)",
                          "t.tir");
  Function f = m.funcs[0];
  Function g = apply_schedule(*f, m.schedules[0], m.intrins);
  EXPECT_TRUE(structural_equal(*f, *g)) << print_function(*g);
}

// A consumer load one-to-one but not onto the producer's buffer (TVM's
// test_reverse_compute_inline_overcomputed_producer_injective_load: C over 15 x 15 reads
// B[cvi // 4, cvj // 4, cvi % 4, cvj % 4] of a 4 x 4 x 4 x 4 B) was refused ("the indices of the
// load of B in block C are not distinct iter vars"). The map is now inverted over C's domain
// widened until it is onto B (arith.h widened_domain: 16 x 16), and the inlined store runs where
// the inverse lies in C's domain. reverse_compute_at does the same with a `where` (TVM's
// test_reverse_compute_at_floordiv_and_floormod_recursive). Loads that are not one-to-one over
// the widened domain, or read past the producer, stay refused.
TEST(TvmPortedR16, AffineLoadsOfPartOfTheProducer) {
  const std::string dir = std::string(TIRC_SOURCE_DIR) + "/tests/schedule/tvm_ported_r16/";
  std::string inl = testing::apply_and_compare(testing::read_text(
      dir + "compute_inline__test_reverse_compute_inline_overcomputed_producer_injective_load.tir"));
  EXPECT_NE(inl.find("if vi * 4 + vm < 15 && vj * 4 + vn < 15 {"), std::string::npos) << inl;
  std::string rca = testing::apply_and_compare(
      testing::read_text(dir + "compute_at__test_reverse_compute_at_floordiv_and_floormod_recursive.tir"));
  EXPECT_NE(rca.find("where ax0_1 < 3"), std::string::npos) << rca;
  std::string text = R"(func f(A: f32[16, 16]) -> (C: f32[ROWS, 15]) {
  alloc B: f32[4, 4, 4, 4]
  for i0, j0, i1, j1 in grid(4, 4, 4, 4) {
    block B(vi: spatial(4) = i0, vj: spatial(4) = j0, vm: spatial(4) = i1, vn: spatial(4) = j1) {
      B[vi, vj, vm, vn] = A[vi * 4 + vm, vj * 4 + vn] * 2.0
    }
  }
  for i, j in grid(ROWS, 15) {
    block C(cvi: spatial(ROWS) = i, cvj: spatial(15) = j) { C[cvi, cvj] = LOAD + 1.0 }
  }
}
schedule f {
  sch.reverse_compute_inline(sch.get_block("C"))
}
)";
  auto with = [&](const std::string& rows, const std::string& load) {
    std::string t = text;
    for (size_t p; (p = t.find("ROWS")) != std::string::npos;) t.replace(p, 4, rows);
    t.replace(t.find("LOAD"), 4, load);
    return t;
  };
  testing::apply_and_compare(with("15", "B[cvi // 4, cvj // 4, cvi % 4, cvj % 4]"));
  EXPECT_EQ(testing::schedule_refusal(with("15", "B[cvi // 4, cvj // 4, cvi % 4, cvi % 4]")),
            "reverse_compute_inline: the indices of the load of B in block C are not distinct iter vars");
  // Transposed inner parts: still one-to-one over 16 x 16.
  std::string tr = testing::apply_and_compare(with("14", "B[cvi // 4, cvj // 4, cvj % 4, cvi % 4]"));
  EXPECT_NE(tr.find("if vi * 4 + vn < 14 && vj * 4 + vm < 15 {"), std::string::npos) << tr;
  // 17 rows: more than B holds.
  EXPECT_EQ(testing::schedule_refusal(with("17", "B[cvi // 4, cvj // 4, cvi % 4, cvj % 4]")),
            "reverse_compute_inline: the indices of the load of B in block C are not distinct iter vars");
}

}  // namespace
}  // namespace tirc

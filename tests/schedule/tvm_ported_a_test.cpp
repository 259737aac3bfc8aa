// Schedule round 11, part A (docs/schedule.md, "Round 11: TVM's schedule tests ported"): TVM's own
// tests/python/tir-schedule tests of split / fuse / reorder / compute_at / reverse_compute_at /
// compute_inline / cache_read / cache_write / loop kinds / storage_align / set_scope /
// transform_layout / reindex / set_axis_separator translated to `.tir` schedule files
// (tests/schedule/tvm_ported_a/<tvm file>__<tvm test>.tir, same headers as tvm_style_r10/: `# refuse:
// MSG` with `# <- refused`). Run by two TESTs over the whole folder, and one test per fix.
#include <gtest/gtest.h>

#include "schedule_checks.h"
#include "tests/sanitized.h"
#include "tests/schedule/tvm_style_files.h"

namespace tirc {
namespace {

// Every file refused as its header says, or applied and equal to the unscheduled function.
TEST(TvmPortedA, Files) { testing::expect_folder_schedules("tests/schedule/tvm_ported_a", 60); }

// Through `tirc verify` (the JIT too when tirc has LLVM): ~100 files, so not under sanitizers,
// where TvmPortedA.Files covers them in process.
TEST(TvmPortedA, FilesVerifyCli) {
#ifdef TIRC_TEST_SANITIZED
  GTEST_SKIP() << "TvmPortedA.Files checks these files in process";
#endif
  testing::expect_folder_verifies_cli("tests/schedule/tvm_ported_a");
}

// ---- the fixes ----

const char* kAnnotated = R"(func f(A: f32[4, 12]) -> (B: f32[4, 12]) {
  for i in serial(4) {
    for k in serial(12) annotate("pragma_unroll", 1) {
      block B(vi: spatial(4) = i, vk: spatial(12) = k) { B[vi, vk] = A[vi, vk] * 2.0 }
    }
  }
}
)";

// split / fuse of an annotated loop dropped the annotation silently; TVM refuses both
// (HasAnnotationOrThreadBindingError). test_fuse_split_fail_with_annotation.
TEST(TvmPortedA, SplitFuseRefuseAnnotatedLoops) {
  EXPECT_EQ(testing::schedule_refusal(std::string(kAnnotated) + R"(schedule f {
  i, k = sch.get_loops(sch.get_block("B"))
  sch.split(k, factors=[None, 4])
})"),
            "split: loop k has the annotation \"pragma_unroll\"; split it before annotating it");
  EXPECT_EQ(testing::schedule_refusal(std::string(kAnnotated) + R"(schedule f {
  i, k = sch.get_loops(sch.get_block("B"))
  sch.fuse(i, k)
})"),
            "fuse: loop k has the annotation \"pragma_unroll\"; fuse it before annotating it");
  // Annotating after splitting is the order TVM asks for.
  testing::apply_and_compare(R"(func f(A: f32[4, 12]) -> (B: f32[4, 12]) {
  for i, k in grid(4, 12) {
    block B(vi: spatial(4) = i, vk: spatial(12) = k) { B[vi, vk] = A[vi, vk] * 2.0 }
  }
}
schedule f {
  i, k = sch.get_loops(sch.get_block("B"))
  ko, ki = sch.split(k, factors=[None, 4])
  sch.annotate(ki, "pragma_unroll", 1)
})");
}

// Newer TVM spells get_block `get_sblock` (was "unknown schedule primitive 'get_sblock'") and
// takes a block name where a block handle goes (`sch.get_loops("C")`, `sch.compute_at("B",
// loop)`; state.cpp's arg_handle, added by the other round-11 helper).
TEST(TvmPortedA, GetSblockAndBlockNames) {
  std::string f = R"(func f(A: f32[8, 6]) -> (C: f32[8, 6]) {
  alloc B: f32[8, 6]
  for i, j in grid(8, 6) {
    block B(vi: spatial(8) = i, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)";
  std::string out = testing::apply_and_compare(f + R"(schedule f {
  c = sch.get_sblock("C")
  i, j = sch.get_loops("C")
  sch.compute_at("B", i)
  sch.parallel(sch.get_loops(c)[0])
})");
  EXPECT_NE(out.find("parallel(8)"), std::string::npos) << out;
  EXPECT_EQ(testing::schedule_refusal(f + R"(schedule f {
  i, j = sch.get_loops("D")
})"),
            "get_loops: no block named \"D\"");
}

// compute_at of a block whose iter var is i32 (the buffer's dimension) at an i64 loop of its
// consumer bound it to the i64 loop var: the printed function did not parse back ("type
// mismatch: iter var v0 is i32 but its binding is i64"). The region is now converted to the
// iter var's type. test_compute_at_simplify_symbolic_predicate.
TEST(TvmPortedA, ComputeAtI32IterVarUnderI64Loop) {
  std::string out = testing::apply_and_compare(R"(func f(X: f32[8, 64]) -> (Y: f32[8, 64]) {
  for i, k in grid(i64(8), i64(64)) {
    block Y(vi: spatial(i64(8)) = i, vk: spatial(i64(64)) = k) { Y[vi, vk] = X[vi, vk] }
  }
}
schedule f {
  block = sch.get_block("Y")
  i, k = sch.get_loops(block)
  xx = sch.cache_read(block, 0, "global")
  sch.compute_at(xx, i)
})");
  EXPECT_NE(out.find("v0: spatial(8) = i32(i)"), std::string::npos) << out;
  EXPECT_NO_THROW(parse_module(out, "again.tir")) << out;
}

// A consumer whose `where` loads the inlined buffer (TVM's test_compute_inline_predicate,
// `T.where(B[i, j] < 10.0)`): compute_inline rewrote the body only, so the predicate read the
// removed buffer (interpreter: "read of uninitialised element B[0, 0]"). The predicate now gets
// the value inlined as the body does, also for a block that reads the buffer only there.
TEST(TvmPortedA, ComputeInlineIntoPredicate) {
  std::string f = R"(func f(A: f32[8, 8]) -> (C: f32[8, 8]) {
  alloc B: f32[8, 8]
  for i, j in grid(8, 8) {
    block B(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) {
      where B[i, 7 - j] < 0.5
      C[vi, vj] = BODY
    }
  }
}
schedule f {
  sch.compute_inline(sch.get_block("B"))
}
)";
  auto with = [&](const std::string& body) {
    std::string t = f;
    return t.replace(t.find("BODY"), 4, body);
  };
  std::string out = testing::apply_and_compare(with("B[vi, vj] + 1.0"));
  EXPECT_NE(out.find("where A[i, 7 - j] * 2.0 < 0.5"), std::string::npos) << out;
  out = testing::apply_and_compare(with("A[vi, vj] + 1.0"));
  EXPECT_NE(out.find("where A[i, 7 - j] * 2.0 < 0.5"), std::string::npos) << out;
}

// compute_at of a producer whose buffer a consumer's `where` loads at other elements than its
// body reads: the recomputed part covered the body's reads only (interpreter: "read of
// uninitialised element B[0, 15]"). Refused now.
TEST(TvmPortedA, ComputeAtRefusesPredicateLoadOfProducedBuffer) {
  EXPECT_EQ(
      testing::schedule_refusal(R"(func f(A: f32[8, 8]) -> (C: f32[8, 8]) {
  alloc B: f32[8, 8]
  for i, j in grid(8, 8) {
    block B(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) {
      where B[i, 7 - j] < 0.5
      C[vi, vj] = B[vi, vj] + 1.0
    }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("C"))
  sch.compute_at(sch.get_block("B"), j)
})"),
      "compute_at: the where of block C loads buffer B, which block B writes (reads in predicates are not "
      "analysed)");
}

// A non-dividing split below a block whose `where` loads a buffer at the loop var: the bound
// `i < 16` was conjoined after the load, and `&&` evaluates both sides, so the load ran past
// the end (interpreter: "out-of-bounds load B[-1, 0]"). Such conjuncts are now guarded by the
// bound (if_then_else).
TEST(TvmPortedA, SplitGuardsPredicateLoads) {
  std::string out = testing::apply_and_compare(R"(func f(A: f32[16, 4], B: f32[16, 4]) -> (C: f32[16, 4]) {
  for i, j in grid(16, 4) {
    block C(vi: spatial(16) = i, vj: spatial(4) = j) {
      where B[15 - i, j] < 0.5
      C[vi, vj] = A[vi, vj] + 1.0
    }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("C"))
  sch.split(i, [None, 3])
})");
  EXPECT_NE(out.find("where if_then_else(i_0 * 3 + i_1 < 16, B[15 - (i_0 * 3 + i_1), j] < 0.5, true) && "
                     "i_0 * 3 + i_1 < 16"),
            std::string::npos)
      << out;
}

// A thread-bound loop was never rebound nor unrolled ("unroll: loop i is already bound to
// blockIdx.x"); TVM replaces the binding (test_unroll_after_bind, test_bind_after_bind), and
// so does tirc now, running the new kind's checks. A loop with a nested binding of the same axis
// (the cooperative copy of a GPU GEMM) stays bound.
TEST(TvmPortedA, RebindAndUnrollBoundLoops) {
  std::string f = R"(func f(A: f32[8, 6]) -> (B: f32[8, 6]) {
  for i, j in grid(8, 6) {
    block B(vi: spatial(8) = i, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
}
)";
  std::string out = testing::apply_and_compare(f + R"(schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.bind(i, "blockIdx.x")
  sch.bind(i, "threadIdx.x")
  sch.bind(j, "blockIdx.x")
  sch.unroll(j)
})");
  EXPECT_NE(out.find("for i in thread_binding(8, \"threadIdx.x\")"), std::string::npos) << out;
  EXPECT_NE(out.find("for j in unroll(6)"), std::string::npos) << out;
  std::string coop = testing::read_text(std::string(TIRC_SOURCE_DIR) +
                                        "/tests/schedule/tvm_style/outsider2_gpu_mm_coop_nondiv.tir");
  coop = coop.substr(0, coop.rfind('}'));
  EXPECT_EQ(testing::schedule_refusal(coop + "  sch.unroll(gtx)\n}\n"),
            "unroll: loop gtx is already bound to threadIdx.x");
  EXPECT_EQ(testing::schedule_refusal(coop + "  sch.bind(tx, \"threadIdx.z\")\n}\n"),
            "bind: loop tx is already bound to threadIdx.x");
}

// transform_layout of a buffer indexed by i64 iter vars (test_transform_layout_with_cache_write_
// and_axis_separators): the i32 map was applied to i64 indices ("operands of // have different
// dtypes i64 and i32" in the interpreter) and the padded loop got an i32 extent under an i64
// min (the printed function did not parse back). Indices are now converted to the map's type
// and the grown loop and iter var keep theirs.
TEST(TvmPortedA, TransformLayoutPadOfI64Nest) {
  std::string out =
      testing::apply_and_compare(R"(func f(p0: f32[i64(33), i64(4)]) -> (T: f32[i64(33), i64(4)]) {
  for ax0, ax1 in grid(i64(33), i64(4)) {
    block T(v0: spatial(i64(33)) = ax0, v1: spatial(i64(4)) = ax1) { T[v0, v1] = p0[v0, v1] + 1.0 }
  }
}
schedule f {
  b = sch.get_sblock("T")
  sch.cache_write(b, 0, "global")
  sch.transform_layout(b, ("write", 0), lambda x, y: (x // 32, y, x % 32), pad_value=0.0)
})");
  EXPECT_NE(out.find("for ax0 in serial(i64(64))"), std::string::npos) << out;
  EXPECT_NO_THROW(parse_module(out, "again.tir")) << out;
}

// Accepted without a visible change (the folder check wants a change): set_axis_separator is
// a no-op in tirc (also on a parameter, as TVM's test_set_axis_separator_input_buffer), and
// the identity layout of test_two_elementwise_unit_dim leaves the function as it was.
TEST(TvmPortedA, NoOpLayoutInstructions) {
  std::string f = R"(func f(A: f32[1, 16]) -> (C: f32[1, 16]) {
  alloc B: f32[1, 16]
  for i, j in grid(1, 16) {
    block B(vi: spatial(1) = i, vj: spatial(16) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(1, 16) {
    block C(vi: spatial(1) = i, vj: spatial(16) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)";
  for (const char* s : {"sch.set_axis_separator(sch.get_block(\"B\"), (\"write\", 0), [1])",
                        "sch.set_axis_separator(sch.get_block(\"B\"), (\"read\", 0), [1])",
                        "sch.set_axis_separator(\"B\", \"B\", [1])",
                        "sch.transform_layout(block=\"B\", buffer=\"B\", index_map=lambda i, j: (i, j))"}) {
    Module m = parse_module(f + "schedule f {\n  " + s + "\n}\n", "t.tir");
    Function g = apply_schedule(*m.funcs[0], m.schedules[0], m.intrins);
    EXPECT_TRUE(structural_equal(*m.funcs[0], *g)) << s << "\n" << print_function(*g);
  }
}

// reverse_compute_at of a consumer loading the produced buffer at a constant index (a unit
// dimension: TVM's test_shape_var_as_bound reads `C_rf[v2, v0, 0, v1]`) was refused ("the
// indices of the load of C_rf ... are not distinct iter vars"). A constant index is accepted
// when the producers under the loop write that element in every iteration.
TEST(TvmPortedA, ReverseComputeAtConstantLoadIndex) {
  std::string f = R"(func f(A: f32[6, 4]) -> (C: f32[6]) {
  alloc X: f32[6, 1, 4]
  for i, j in grid(6, 4) {
    block X(vi: spatial(6) = i, vj: spatial(4) = j) { X[vi, 0, vj] = A[vi, vj] * 2.0 }
  }
  for i in serial(6) {
    block C(vi: spatial(6) = i) { C[vi] = X[vi, 0, INDEX] + 1.0 }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("X"))
  sch.reverse_compute_at(sch.get_block("C"), LOOP)
}
)";
  auto with = [&](const std::string& index, const std::string& loop) {
    std::string t = f;
    t.replace(t.find("INDEX"), 5, index);
    t.replace(t.find("LOOP"), 4, loop);
    return t;
  };
  std::string out = testing::apply_and_compare(with("3", "i"));
  EXPECT_NE(out.find("for i in serial(6) {\n    for j in serial(4)"), std::string::npos) << out;
  // At loop j only X[i, 0, j] is written in an iteration: X[i, 0, 3] is not final yet.
  EXPECT_EQ(testing::schedule_refusal(with("3", "j")),
            "reverse_compute_at: block C loads X at the constant index 3 in dimension 2, which the producers "
            "under loop j do not write in every iteration");
}

// reverse_compute_at of a flattened consumer reading `temp[v // 16, v % 16]` (TVM's
// test_reverse_compute_at_floordiv_and_floormod_indices) was refused ("not distinct iter
// vars"). v now ranges over the produced part when that part is one stretch of v: whole rows,
// or part of one row.
TEST(TvmPortedA, ReverseComputeAtFloorDivModLoad) {
  std::string f = R"(func f(X: f32[16, 16]) -> (Y: f32[256]) {
  alloc temp: f32[16, 16]
  for i_o, j_o, i_i, j_i in grid(2, 2, 8, 8) {
    block A(v_i: spatial(16) = i_o * 8 + i_i, v_j: spatial(16) = j_o * 8 + j_i) { temp[v_i, v_j] = X[v_j, v_i] + 1.0 }
  }
  for i in serial(256) {
    block B(v_i: spatial(256) = i) { Y[v_i] = temp[v_i // 16, v_i % 16] }
  }
}
schedule f {
  i_o, j_o, i_i, j_i = sch.get_loops(sch.get_block("A"))
  sch.reverse_compute_at(sch.get_block("B"), LOOP)
}
)";
  auto at = [&](const std::string& loop) {
    std::string t = f;
    return t.replace(t.find("LOOP"), 4, loop);
  };
  std::string out = testing::apply_and_compare(at("i_i"));
  EXPECT_NE(out.find("v_i: spatial(256) = i_o * 128 + i_i * 16 + j_o * 8 + ax0"), std::string::npos) << out;
  testing::apply_and_compare(at("i_o"));
  testing::apply_and_compare(at("j_i"));
  // Under j_o an iteration writes an 8x8 tile: rows of 8 that are not adjacent in v.
  EXPECT_EQ(
      testing::schedule_refusal(at("j_o")),
      "reverse_compute_at: block B loads temp at v_i // 16, v_i % 16, and the part written under loop j_o "
      "is not one stretch of v_i");
}

// reverse_compute_at into a producer loop that does not start at 0 (`serial(3, 13)` bound
// `vi = i - 3`) was refused ("the tiles of iter var vi do not start at multiples of their
// size"; round 10 kept it). Such loops (and the consumer's own) are rebased to 0 for the tiling
// checks, as reverse_compute_inline does since round 10. A producer missing a row stays refused.
TEST(TvmPortedA, ReverseComputeAtNonZeroMinLoops) {
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
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i)
}
)";
  };
  std::string out = testing::apply_and_compare(text("3"));
  EXPECT_NE(out.find("block C(vi: spatial(10) = i - 3, vj: spatial(6) = ax1)"), std::string::npos) << out;
  // The consumer under non-zero-min loops too.
  testing::apply_and_compare(R"(func f(A: f32[10, 6]) -> (C: f32[10, 6]) {
  alloc B: f32[10, 6]
  for i in serial(3, 13) {
    for j in serial(6) {
      block B(vi: spatial(10) = i - 3, vj: spatial(6) = j) { B[vi, vj] = A[vi, vj] + 1.0 }
    }
  }
  for i in serial(2, 12) {
    for j in serial(6) {
      block C(vi: spatial(10) = i - 2, vj: spatial(6) = j) { C[vi, vj] = B[vi, vj] * 2.0 }
    }
  }
}
schedule f {
  i, j = sch.get_loops(sch.get_block("B"))
  sch.reverse_compute_at(sch.get_block("C"), i)
}
)");
  EXPECT_EQ(testing::schedule_refusal(text("4")),
            "reverse_compute_at: the tiles of iter var vi do not start at multiples of their size");
}

}  // namespace
}  // namespace tirc

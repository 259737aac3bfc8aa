// Bounds checks of compiled code (transforms/lower/bounds_checks.cpp, codegen): an index
// outside its buffer stops the call with a FILE:LINE:COL error instead of touching memory;
// accesses the lowering can prove in range carry no check (counted on the check sites).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "ir/error.h"
#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "transforms/lower/lower.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

NDArray zeros(DType t, std::vector<int64_t> shape) { return NDArray(t, std::move(shape)); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kGather = R"(func f(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[I[vi]]
    }
  }
}
)";

}  // namespace

TEST(BoundsCheck, GatherPastTheEndIsAnErrorAtTheStore) {
  Function f = parse_func(kGather, "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", zeros(DType::F32, {8})}, {"I", values(DType::I32, {4}, {1, 2, 9, 3})}};
  EXPECT_EQ(
      jit_error(*f, in),
      "test.tir:4:7: error: block \"b\": out-of-bounds load A[9]: index 9 of dimension 0 is outside [0, 8)");
}

TEST(BoundsCheck, NegativeAndHugeIndicesAreCaught) {
  Function f = parse_func(kGather, "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", zeros(DType::F32, {8})}, {"I", values(DType::I32, {4}, {0, -1, 0, 0})}};
  EXPECT_NE(jit_error(*f, in).find("index -1 of dimension 0 is outside [0, 8)"), std::string::npos);
  in["I"] = values(DType::I32, {4}, {0, 0, 0, 2000000000});
  EXPECT_NE(jit_error(*f, in).find("index 2000000000 of dimension 0"), std::string::npos);
}

TEST(BoundsCheck, InRangeGatherMatchesTheInterpreterAndACallAfterAFailureRuns) {
  Function f = parse_func(kGather, "f");
  ASSERT_TRUE(f);
  auto prog = compile_jit(*f);
  ArgMap bad{{"A", zeros(DType::F32, {8})}, {"I", values(DType::I32, {4}, {8, 0, 0, 0})}};
  EXPECT_THROW(prog->run(bad), SourceError);
  NDArray a = values(DType::F32, {8}, {10, 11, 12, 13, 14, 15, 16, 17});
  ArgMap good{{"A", a}, {"I", values(DType::I32, {4}, {7, 0, 3, 3})}};
  ArgMap out = prog->run(good);
  EXPECT_TRUE(arrays_close(out.at("B"), values(DType::F32, {4}, {17, 10, 13, 13}), 0, 0));
}

TEST(BoundsCheck, UnsignedAndI64IndexBuffers) {
  Function f = parse_func(R"(func f(A: f32[8], I: u8[2], J: i64[2]) -> (B: f32[2]) {
  for i in serial(2) {
    block b(vi: spatial(2) = i) {
      B[vi] = A[I[vi]] + A[J[vi]]
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", zeros(DType::F32, {8})},
            {"I", values(DType::U8, {2}, {1, 200})},
            {"J", values(DType::I64, {2}, {0, 0})}};
  EXPECT_NE(jit_error(*f, in).find("index 200 of dimension 0"), std::string::npos);
  in["I"] = values(DType::U8, {2}, {1, 2});
  in["J"] = values(DType::I64, {2}, {0, -5000000000.0});
  EXPECT_NE(jit_error(*f, in).find("index -5000000000 of dimension 0"), std::string::npos);
}

TEST(BoundsCheck, ScatterStoreIsCheckedInEveryDimension) {
  Function f = parse_func(R"(func f(X: f32[4, 3], I: i32[4]) -> (Y: f32[5, 3]) {
  for i, j in grid(5, 3) {
    block z(vi: spatial(5) = i, vj: spatial(3) = j) { Y[vi, vj] = 0.0 }
  }
  for i, j in grid(4, 3) {
    block s(vi: reduce(4) = i, vj: spatial(3) = j) {
      Y[I[vi], vj] = Y[I[vi], vj] + X[vi, vj]
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  EXPECT_EQ(check_sites(*f), 1u);  // Y's first dimension, shared by the load and the store
  ArgMap in{{"X", zeros(DType::F32, {4, 3})}, {"I", values(DType::I32, {4}, {0, 4, 5, 1})}};
  EXPECT_EQ(
      jit_error(*f, in),
      "test.tir:7:7: error: block \"s\": out-of-bounds store Y[5, _]: index 5 of dimension 0 is outside "
      "[0, 5)");
  in["I"] = values(DType::I32, {4}, {0, 4, 4, 1});
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(BoundsCheck, ParallelLoopStopsAndReportsOneFailure) {
  // A large heap buffer (freed on the way out) and a parallel loop where many iterations fail.
  Function f = parse_func(R"(func f(A: f32[100000], I: i32[64]) -> (B: f32[64]) {
  alloc T: f32[100000]
  for i in parallel(100000) {
    block t(vi: spatial(100000) = i) { T[vi] = A[vi] * 2.0 }
  }
  for i in parallel(64) {
    block b(vi: spatial(64) = i) { B[vi] = T[I[vi]] }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  std::vector<double> idx(64, -3);
  idx[0] = 0;
  ArgMap in{{"A", zeros(DType::F32, {100000})}, {"I", values(DType::I32, {64}, idx)}};
  auto prog = compile_jit(*f);
  for (int rep = 0; rep < 3; ++rep) {
    try {
      prog->run(in);
      ADD_FAILURE() << "no error";
    } catch (const SourceError& e) {
      EXPECT_NE(std::string(e.what()).find("out-of-bounds load T[-3]"), std::string::npos) << e.what();
    }
  }
  for (auto& v : idx) v = 99999;
  in["I"] = values(DType::I32, {64}, idx);
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(BoundsCheck, LockedAtomicUpdateReleasesTheLock) {
  // max= in a parallel atomic block goes through tirc_atomic_lock; a failure inside must
  // unlock, or the next call would hang.
  Function f = parse_func(R"(func f(X: f32[8], I: i32[8]) -> (Y: f32[4]) {
  for i in serial(4) {
    block z(vi: spatial(4) = i) { Y[vi] = -1000.0 }
  }
  for i in parallel(8) {
    block s(vi: reduce(8) = i) {
      annotate("atomic", 1)
      Y[I[vi]] = max(Y[I[vi]], X[vi])
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  auto prog = compile_jit(*f);
  ArgMap bad{{"X", zeros(DType::F32, {8})}, {"I", values(DType::I32, {8}, {0, 1, 2, 3, 4, 0, 0, 0})}};
  EXPECT_THROW(prog->run(bad), SourceError);
  ArgMap good{{"X", values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
              {"I", values(DType::I32, {8}, {0, 1, 2, 3, 0, 1, 2, 3})}};
  ArgMap out = prog->run(good);
  EXPECT_TRUE(arrays_close(out.at("Y"), values(DType::F32, {4}, {5, 6, 7, 8}), 0, 0));
}

TEST(BoundsCheck, VectorizedGatherReportsTheFirstFailingLane) {
  Function f = parse_func(R"(func f(A: f32[16], I: i32[8]) -> (B: f32[8]) {
  for j in vectorized(8) {
    block b(vj: spatial(8) = j) { B[vj] = A[I[vj]] }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", zeros(DType::F32, {16})}, {"I", values(DType::I32, {8}, {0, 1, 2, 3, 17, 5, 16, 7})}};
  EXPECT_NE(jit_error(*f, in).find("index 17 of dimension 0 is outside [0, 16)"), std::string::npos);
  in["I"] = values(DType::I32, {8}, {0, 15, 2, 3, 14, 5, 6, 7});
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(BoundsCheck, MaskedVectorLanesDoNotFail) {
  // Lanes whose guard is false never load: an out-of-range index there is no error.
  Function f = parse_func(R"(func f(A: f32[16], I: i32[8]) -> (B: f32[8]) {
  for j in vectorized(8) {
    block b(vj: spatial(8) = j) { B[vj] = if_then_else(vj < 4, A[I[vj]], 0.0) }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", zeros(DType::F32, {16})}, {"I", values(DType::I32, {8}, {0, 1, 2, 3, 99, 99, -99, 99})}};
  EXPECT_EQ(jit_error(*f, in), "");
  in["I"] = values(DType::I32, {8}, {0, 1, 99, 3, 4, 5, 6, 7});
  EXPECT_NE(jit_error(*f, in).find("index 99"), std::string::npos);
}

TEST(BoundsCheck, GuardedGatherNeedsNoCheck) {
  // The guard bounds the loaded index: the proof uses it as a fact about the load I[vi].
  Function f = parse_func(R"(func f(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = if_then_else(I[vi] >= 0 && I[vi] < 8, A[I[vi]], 0.0)
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  EXPECT_EQ(check_sites(*f), 0u);
  ArgMap in{{"A", values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
            {"I", values(DType::I32, {4}, {-1, 7, 8, 2})}};
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(BoundsCheck, ProvableAccessesCarryNoCheck) {
  // Affine nests, padding guards, a split with a tail predicate, symbolic extents, a scan
  // reading its previous step under `vj != 0`, a reversed index.
  Function pad = parse_func(read_file(std::string(TIRC_SOURCE_DIR) + "/examples/conv2d.tir"), "conv2d");
  ASSERT_TRUE(pad);
  EXPECT_EQ(check_sites(*pad), 0u);
  Module mm = parse_module(read_file(std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir"), "matmul.tir");
  EXPECT_EQ(check_sites(*apply_module_schedules(mm).find_func("matmul")), 0u);
  Module m = parse_module(R"(func tail(A: f32[100]) -> (B: f32[100]) {
  for i in serial(100) {
    block b(vi: spatial(100) = i) { B[vi] = A[99 - vi] }
  }
}
schedule tail {
  i, = get_loops(get_block("b"))
  io, ii = split(i, [_, 8])
}
func sym(n: i32, m: i32, A: f32[n, m]) -> (B: f32[n, m]) {
  for i, j in grid(n, m) {
    block b(vi: spatial(n) = i, vj: spatial(m) = j) { B[vi, vj] = A[vi, vj] + 1.0 }
  }
}
func scan(X: f32[3, 6]) -> (Y: f32[3, 6]) {
  for i, j in grid(3, 6) {
    block s(vi: spatial(3) = i, vj: scan(6) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] + X[vi, vj])
    }
  }
}
func rev(X: f32[6]) -> (Y: f32[6]) {
  for j in serial(6) {
    block s(vj: scan(6) = j) {
      if !(-vj + 5 == 0) { Y[4 - vj] = X[5 - vj] } else { Y[5] = 0.0 }
    }
  }
}
)",
                          "t.tir");
  Module s = apply_module_schedules(m);
  for (const char* name : {"tail", "sym", "scan", "rev"}) {
    Function f = s.find_func(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(check_sites(*f), 0u) << name;
  }
}

TEST(BoundsCheck, AnUnprovableIndexIsCheckedButAnUncheckedCompileIsNot) {
  // (i * 7) % 11 is always inside 11 but not inside 10: the check must stay.
  Function f = parse_func(R"(func f(A: f32[10]) -> (B: f32[11]) {
  for i in serial(11) {
    block b(vi: spatial(11) = i) { B[vi] = A[(vi * 7) % 11] }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  EXPECT_EQ(check_sites(*f), 1u);
  EXPECT_NE(jit_error(*f, {{"A", zeros(DType::F32, {10})}}).find("out-of-bounds load A[10]"),
            std::string::npos);
  std::string ir = compile_to({f}, EmitKind::LLVM);
  EXPECT_NE(ir.find("@__tirc_bounds_sites_f"), std::string::npos);
  EXPECT_NE(ir.find("block \\22b\\22: load A, dimension 0"), std::string::npos) << ir;
  CodegenOptions off;
  off.bounds_checks = false;
  std::string unchecked = compile_to({f}, EmitKind::LLVM, off);
  EXPECT_EQ(unchecked.find("cmpxchg"), std::string::npos);
}

}  // namespace tirc

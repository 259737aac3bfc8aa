// The LLVM JIT against the interpreter: examples, every intrinsic, every dtype, loop kinds,
// symbolic shapes, allocations, atomic blocks in parallel loops, defined integer division.
#include "codegen/jit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "tests/codegen/compare.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string example(const std::string& name) { return std::string(TIRC_SOURCE_DIR) + "/examples/" + name; }
}  // namespace

TEST(JitExamples, Matmul) {
  expect_jit_matches_interp(read_file(example("matmul.tir")), "matmul", 1, 1e-5, 1e-5);
}
TEST(JitExamples, Conv2d) {
  expect_jit_matches_interp(read_file(example("conv2d.tir")), "conv2d", 2, 1e-5, 1e-5);
}
TEST(JitExamples, Softmax) {
  expect_jit_matches_interp(read_file(example("softmax.tir")), "softmax", 3, 1e-6, 1e-7);
}

TEST(JitExpr, FloatIntrinsicsF32) {
  const char* ops[] = {"exp", "log",  "log2",    "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",   "cos",
                       "tan", "tanh", "sigmoid", "erf",   "abs",   "floor", "ceil", "round", "trunc", "sign"};
  for (const char* op : ops) {
    std::string text =
        "func f(X: f32[257] in [0.05, 3.0]) -> (Y: f32[257]) {\n"
        "  for i in serial(257) { block b(vi: spatial(257) = i) { Y[vi] = " +
        std::string(op) + "(X[vi] * 2.0 - 1.5) } }\n}\n";
    SCOPED_TRACE(op);
    expect_jit_matches_interp(text, "f", 11, 2e-7, 1e-30);
  }
}

TEST(JitExpr, FloatIntrinsicsF64AndBinary) {
  std::string text = R"(
func f(X: f64[100] in [0.1, 3.0], Z: f64[100] in [-2.0, 2.0]) -> (Y: f64[100]) {
  for i in serial(100) {
    block b(vi: spatial(100) = i) {
      Y[vi] = pow(X[vi], Z[vi]) + exp(Z[vi]) * tanh(X[vi]) - erf(Z[vi]) / sigmoid(X[vi])
              + min(X[vi], Z[vi]) - max(X[vi], Z[vi]) + select(X[vi] < Z[vi], log(X[vi]), sqrt(X[vi]))
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 5, 1e-15, 1e-300);
}

TEST(JitDtype, HalfAndBfloatRoundAfterEveryOp) {
  for (const char* t : {"f16", "bf16"}) {
    std::string T = t;
    std::string text = "func f(A: " + T + "[300] in [-4.0, 4.0], B: " + T + "[300]) -> (C: " + T +
                       "[300], D: f32[300]) {\n"
                       "  for i in serial(300) { block b(vi: spatial(300) = i) {\n"
                       "    C[vi] = A[vi] * B[vi] + A[vi] / (B[vi] + 3.0) - exp(B[vi])\n"
                       "    D[vi] = f32(A[vi] * A[vi] * A[vi]) } }\n}\n";
    SCOPED_TRACE(t);
    expect_jit_matches_interp(text, "f", 7, 0, 0);
  }
}

TEST(JitDtype, IntegerWraparoundAndFloorDivision) {
  std::string text = R"(
func f(A: i32[200] in [-1000000, 1000000], B: i32[200] in [1, 7], C: i8[200] in [-128, 127], U: u8[200] in [0, 255])
    -> (X: i32[200], Y: i32[200], Z: i8[200], W: u8[200], V: i32[200], Q: i64[200]) {
  for i in serial(200) {
    block b(vi: spatial(200) = i) {
      X[vi] = A[vi] * A[vi] * 977
      Y[vi] = (A[vi] - 500000) // B[vi] + (A[vi] - 500000) % B[vi] * 1000
      Z[vi] = C[vi] * i8(3) + i8(100)
      W[vi] = U[vi] * u8(7) - u8(200)
      V[vi] = truncdiv(A[vi] - 500000, B[vi] - 4 + i32(B[vi] == 4)) + truncmod(A[vi], -B[vi])
      Q[vi] = i64(A[vi]) * i64(A[vi]) * i64(A[vi]) // i64(-7)
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 9, 0, 0);
}

TEST(JitDtype, CastsSaturateAndRound) {
  std::string text = R"(
func f(A: f32[256] in [-400.0, 400.0]) -> (B: i8[256], C: u8[256], D: i32[256], E: bool[256], F: f16[256], G: bf16[256], H: f64[256]) {
  for i in serial(256) {
    block b(vi: spatial(256) = i) {
      B[vi] = i8(A[vi])
      C[vi] = u8(A[vi])
      D[vi] = i32(A[vi] * 1e8)
      E[vi] = bool(A[vi] > 0.0) && A[vi] != 3.0
      F[vi] = f16(A[vi] * 300.0)
      G[vi] = bf16(f64(A[vi]) * 1.0000001)
      H[vi] = f64(B[vi]) + f64(C[vi]) + f64(i64(A[vi]))
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 13, 0, 0);
}

TEST(JitDtype, IntegerDivisionByZeroIsDefinedWithoutChecks) {
  // The interpreter reports division by zero, and so does checked compiled code
  // (div_by_zero_test.cpp); without checks (--no-bounds-check) x // 0 = x % 0 = 0.
  Function f = parse_func(R"(
func f(A: i32[4], B: i32[4]) -> (Q: i32[4], R: i32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      Q[vi] = A[vi] // B[vi]
      R[vi] = A[vi] % B[vi]
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  NDArray a(DType::I32, {4}), b(DType::I32, {4});
  int av[] = {7, -7, -2147483647 - 1, 5}, bv[] = {0, 2, -1, -3};
  for (int i = 0; i < 4; ++i) {
    a.set(i, av[i]);
    b.set(i, bv[i]);
  }
  CodegenOptions unchecked;
  unchecked.bounds_checks = false;
  auto out = compile_jit(*f, unchecked)->run({{"A", a}, {"B", b}});
  EXPECT_EQ(out["Q"].ptr<int32_t>()[0], 0);
  EXPECT_EQ(out["R"].ptr<int32_t>()[0], 0);
  EXPECT_EQ(out["Q"].ptr<int32_t>()[1], -4);
  EXPECT_EQ(out["R"].ptr<int32_t>()[1], 1);
  EXPECT_EQ(out["Q"].ptr<int32_t>()[2], -2147483647 - 1);  // wraps
  EXPECT_EQ(out["R"].ptr<int32_t>()[2], 0);
  EXPECT_EQ(out["Q"].ptr<int32_t>()[3], -2);
  EXPECT_EQ(out["R"].ptr<int32_t>()[3], -1);
}

TEST(JitLoops, ParallelVectorizedUnrolled) {
  std::string text = R"(
func f(A: f32[64, 96], B: f32[96]) -> (C: f32[64, 96]) {
  for i in parallel(64) {
    for j0 in serial(6) {
      for j1 in vectorized(16) {
        for u in unroll(1) {
          block b(vi: spatial(64) = i, vj: spatial(96) = j0 * 16 + j1) {
            C[vi, vj] = A[vi, vj] * B[vj] + max(A[vi, vj], 0.0)
          }
        }
      }
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 3, 0, 0);
}

TEST(JitLoops, ParallelReductionWithBlockLocalAlloc) {
  std::string text = R"(
func f(A: f32[37, 50], W: f32[50]) -> (S: f32[37]) {
  for i in parallel(37) {
    block row(vi: spatial(37) = i) {
      alloc T: f32[50]
      for k in serial(50) {
        block t(wi: spatial(37) = vi, vk: spatial(50) = k) { T[vk] = A[wi, vk] * W[vk] }
      }
      for k in serial(50) {
        block s(wi: spatial(37) = vi, vk: reduce(50) = k) {
          init { S[wi] = 0.0 }
          S[wi] += T[vk]
        }
      }
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 4, 0, 0);
}

TEST(JitLoops, PredicatesSymbolicShapesAndLets) {
  std::string text = R"(
func f(n: i32, m: i32, A: f32[n, m], s: f32) -> (B: f32[n, m]) {
  for i0, i1, j in grid((n + 3) // 4, 4, m) {
    block b(vi: spatial(n) = i0 * 4 + i1, vj: spatial(m) = j) {
      where i0 * 4 + i1 < n
      let t = A[vi, vj] * s
      B[vi, vj] = if_then_else(vj > 0, t + A[vi, vj - 1], t)
    }
  }
}
)";
  expect_jit_matches_interp(
      text, "f", 5, 0, 0,
      {{"n", scalar(DType::I32, 13)}, {"m", scalar(DType::I32, 7)}, {"s", scalar(DType::F32, 1.5)}});
}

TEST(JitLoops, AtomicScatterAddInParallelLoop) {
  std::string text = R"(
func f(X: f32[4096], I: i32[4096] in [0, 15]) -> (H: f32[16]) {
  for j in serial(16) {
    block z(vj: spatial(16) = j) { H[vj] = 0.0 }
  }
  for i in parallel(4096) {
    block acc(vi: reduce(4096) = i) {
      annotate("atomic", 1)
      H[I[vi]] = H[I[vi]] + X[vi]
    }
  }
}
)";
  // The order of the additions differs between threads: compare with a tolerance.
  for (int rep = 0; rep < 5; ++rep) expect_jit_matches_interp(text, "f", 6 + rep, 1e-4, 1e-4);
}

TEST(JitErrors, WrongInputShapeNamesTheParameter) {
  Function f = parse_func(read_file(example("matmul.tir")), "matmul");
  ASSERT_TRUE(f);
  auto prog = compile_jit(*f);
  ArgMap in = random_inputs(*f, 1);
  in["A"] = NDArray(DType::F32, {3, 3});
  try {
    prog->run(in);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "input A: expected f32[128, 64], got f32[3, 3]");
  }
}

}  // namespace tirc

namespace tirc {
using namespace tirc::cgtest;

TEST(JitVector, MasksGathersIntrinsicsAndFallbacks) {
  std::string text = R"(
func f(X: f32[8, 40] in [0.1, 2.0], H: f16[8, 40], I: i32[40] in [0, 39]) -> (Y: f32[8, 40], Z: f32[8, 20], S: f32[8], G: f16[8, 40], W: f32[8, 40]) {
  for i in serial(8) {
    for j in vectorized(40) {
      block y(vi: spatial(8) = i, vj: spatial(40) = j) {
        Y[vi, vj] = if_then_else(vj >= 1 && vj < 39, X[vi, vj - 1] + X[vi, vj + 1], 0.0) * tanh(X[vi, vj]) + exp(X[vi, vj])
        G[vi, vj] = H[vi, vj] * H[vi, vj] + f16(X[vi, I[vj]])
        if vj % 3 == 0 {
          W[vi, vj] = sqrt(X[vi, vj]) + f32(vj // 3)
        } else {
          W[vi, vj] = log1p(X[vi, vj]) - f32(I[vj])
        }
      }
    }
    for j in vectorized(20) {
      block z(vi: spatial(8) = i, vj: spatial(20) = j) { Z[vi, vj] = X[vi, vj * 2] - X[vi, 39 - vj] }
    }
    for k in vectorized(40) {
      block s(vi: spatial(8) = i, vk: reduce(40) = k) {
        init { S[vi] = 0.0 }
        S[vi] += X[vi, vk]
      }
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 21, 0, 0);
}

// A vectorized loop inside an atomic scatter block under a parallel loop (what compute_at of a
// vectorized block into F_grad's parallel scatter leaves): vector stores would race between
// threads, so the loop stays scalar and each update is an atomicrmw.
TEST(JitVector, NoVectorStoresInsideParallelAtomicBlock) {
  Function f = parse_func(R"(
func f(X: f32[4, 8], I: i32[4] in [0, 1]) -> (Y: f32[2, 8]) {
  for i, j in grid(2, 8) {
    block z(vi: spatial(2) = i, vj: spatial(8) = j) { Y[vi, vj] = 0.0 }
  }
  for i in parallel(4) {
    block s(vi: reduce(4) = i) {
      annotate("atomic", 1)
      for j in vectorized(8) {
        Y[I[vi], j] = Y[I[vi], j] + X[vi, j]
      }
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  CodegenOptions o;
  o.opt_level = 0;
  std::string ir = compile_to({f}, EmitKind::LLVM, o);
  EXPECT_EQ(ir.find("<8 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("atomicrmw fadd"), std::string::npos) << ir;
  expect_jit_matches_interp(*f, 5, 1e-6, 1e-7);
}

TEST(JitVector, EmitsVectorInstructions) {
  Function f = parse_func(R"(
func f(A: f32[64], B: f32[64]) -> (C: f32[64]) {
  for j in vectorized(64) {
    block c(vj: spatial(64) = j) { C[vj] = A[vj] * B[vj] + 1.0 }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  CodegenOptions o;
  o.opt_level = 0;
  std::string ir = compile_to({f}, EmitKind::LLVM, o);
  // 64 lanes wider than the target's registers run as chunks of one register since round 19
  // (tests/codegen/init_vector_r19_test.cpp): <16 x float> with AVX-512, <8 x float> with AVX2.
  EXPECT_NE(ir.find("fmul <"), std::string::npos) << ir;
  EXPECT_NE(ir.find(" x float> "), std::string::npos) << ir;
}

}  // namespace tirc

namespace tirc {
using namespace tirc::cgtest;

TEST(JitLoops, ThreadBindingScanAndI64IndicesOnCpu) {
  std::string text = R"(
func f(X: f32[4, 64], I: i64[64] in [0, 63]) -> (Y: f32[4, 64], Z: f32[4, 64]) {
  for b in thread_binding(4, "blockIdx.x") {
    for t in serial(64) {
      block s(vb: spatial(4) = b, vt: scan(64) = t) {
        Y[vb, vt] = if_then_else(vt == 0, X[vb, vt], Y[vb, vt - 1] + X[vb, vt])
      }
    }
    for t in thread_binding(64, "threadIdx.x") {
      block g(vb: spatial(4) = b, vt: spatial(64) = t) {
        Z[vb, vt] = X[vb, i32(I[vt])] * 2.0
      }
    }
  }
}
)";
  expect_jit_matches_interp(text, "f", 8, 0, 0);
}

}  // namespace tirc

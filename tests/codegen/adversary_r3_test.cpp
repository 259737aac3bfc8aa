// Compiled code vs the interpreter, third adversarial round. The interpreter is the
// reference: the JIT must give the same outputs (bit-exact here: same operations in the same
// order) and stop where it reports an out-of-bounds access.
//   DeadLoads*: a load whose value the lowering's simplifier proves unused (`x*0`, `x - x`,
//     `x % 1`, a comparison proven from the dtype's range, `c && false`, a select with a
//     constant condition, an unused let, also in a vectorized loop) keeps its bounds check
//     (unfixed: the JIT ran on where the interpreter failed); checks in untaken
//     if_then_else arms stay out (no false failure).
//   CastsAndSpecials / ScheduledShapes: casts at the ends of every range, NaN, -0.0, i64
//     indices, zero-size extents, scans, atomic scatter in a parallel loop, split tails under
//     parallel/unroll/vectorize: regression guards found in agreement.
#ifdef TIRC_WITH_LLVM
#include <gtest/gtest.h>

#include <string>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

// Same outputs when the interpreter runs; the same out-of-bounds message when it fails.
void expect_same(const FunctionNode& f, const ArgMap& in) {
  std::string ie = interp_error(f, in);
  if (ie.empty()) {
    expect_jit_matches_interp(f, 1, 0, 0, in);
    return;
  }
  std::string je = jit_error(f, in);
  ASSERT_NE(ie.find("out-of-bounds load A[100]"), std::string::npos) << ie;
  // Same site (file:line:col, block, access); the JIT's message gives the dimension's extent.
  EXPECT_EQ(je.substr(0, je.find(':', je.find("A[100]"))), ie.substr(0, ie.find(':', ie.find("A[100]"))))
      << "jit: '" << je << "' interp: '" << ie << "'";
}

const char* kDead = R"(func sel(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = select(vi > 8, A[I[vi]], 0.5) }
  }
}
func mul0(A: i32[8], I: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = A[I[vi]] * 0 + vi }
  }
}
func sub(A: i32[8], I: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = A[I[vi]] - A[I[vi]] }
  }
}
func mod1(A: i32[8], I: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = A[I[vi]] % 1 }
  }
}
func andf(A: i32[8], I: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = select(A[I[vi]] > 0 && vi > 8, 1, 2) }
  }
}
func cmpu8(A: u8[8], I: i32[8]) -> (B: bool[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = A[I[vi]] < u8(255) || vi < 100 }
  }
}
func unused(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      let x = A[I[vi]]
      B[vi] = 1.0
    }
  }
}
func unusedexpr(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = (let x = A[I[vi]] in 2.0) }
  }
}
func vec(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) {
      let x = A[I[vi]]
      B[vi] = 1.0
    }
  }
}
func vec2(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) { B[vi] = (let y = A[I[7 - vi]] in 1.0) }
  }
}
func par(A: i32[8], I: i32[8]) -> (B: i32[8]) {
  for i in parallel(8) {
    block b(vi: spatial(8) = i) { B[vi] = min(vi, max(A[I[vi]], 100)) }
  }
}
)";

const char* kDeadNames[] = {"sel",    "mul0",       "sub", "mod1", "andf", "cmpu8",
                            "unused", "unusedexpr", "vec", "vec2", "par"};

ArgMap dead_inputs(const FunctionNode& f, double bad) {
  DType at = f.params[0].buffer->dtype;
  NDArray a(at, {8});
  for (int64_t k = 0; k < 8; ++k) a.set(k, static_cast<double>(k + 1));
  return {{"A", a}, {"I", values(DType::I32, {8}, {0, 1, 2, 3, bad, 5, 6, 7})}};
}

}  // namespace

TEST(AdversaryR3, DeadLoadsKeepTheirBoundsChecks) {
  Module m = parse_module(kDead, "test.tir");
  for (const char* name : kDeadNames) {
    SCOPED_TRACE(name);
    Function f = m.find_func(name);
    ASSERT_TRUE(f);
    EXPECT_NE(jit_error(*f, dead_inputs(*f, 100)).find("out-of-bounds load A[100]"), std::string::npos);
    expect_same(*f, dead_inputs(*f, 100));
    expect_same(*f, dead_inputs(*f, 4));  // in bounds: the same outputs
  }
}

TEST(AdversaryR3, DeadLoadsInUntakenIfThenElseArmsStayUnchecked) {
  // The interpreter never evaluates these arms: the JIT must not fail on them either.
  Function f = parse_func(R"(func ite(A: f32[8], I: i32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = if_then_else(vi > 8, A[I[vi]], 0.5) * 2.0 + if_then_else(vi < 8, 1.0, A[I[vi]])
    }
  }
}
)",
                          "ite");
  ASSERT_TRUE(f);
  ArgMap in = dead_inputs(*f, 100);
  EXPECT_EQ(interp_error(*f, in), "");
  EXPECT_EQ(jit_error(*f, in), "");
  expect_same(*f, in);
}

TEST(AdversaryR3, CastsAndSpecialValues) {
  // Float -> int saturation and NaN, i64 -> bf16/f32 rounding, narrow wraparound, min/max
  // with NaN and -0.0, in scalar and vector loops.
  Module m = parse_module(
      R"(func cv(A: i64[8], F: f64[8]) -> (B: bf16[8], D: f32[8], E: i64[8], G: u32[8], H: i8[8], K: u16[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = bf16(A[vi])
      D[vi] = f32(A[vi])
      E[vi] = i64(F[vi])
      G[vi] = u32(F[vi])
      H[vi] = i8(F[vi])
      K[vi] = u16(i8(A[vi]))
    }
  }
}
func cvv(A: i64[8], F: f64[8]) -> (B: bf16[8], D: f32[8], E: i64[8], G: u32[8], H: i8[8], K: u16[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = bf16(A[vi])
      D[vi] = f32(A[vi])
      E[vi] = i64(F[vi])
      G[vi] = u32(F[vi])
      H[vi] = i8(F[vi])
      K[vi] = u16(i8(A[vi]))
    }
  }
}
func mm(F: f64[8]) -> (B: f32[8], C: f32[8], S: f32[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = max(f32(F[vi]), -0.0) + min(f32(F[vi]), 0.0)
      C[vi] = select(f32(F[vi]) > 0.0, f32(F[vi]), -0.0)
      S[vi] = sign(f32(F[vi])) + round(f32(F[vi])) + f32(truncdiv(i32(F[vi]), -1)) + f32(i32(F[vi]) % -3)
    }
  }
}
)",
      "test.tir");
  NDArray a = values(DType::I64, {8},
                     {4.6116860184273879e18 + 18014398509481984.0, -4.6116860184273879e18, 9007199254740993.0,
                      1152921573326323712.0, 9.2233720368547758e18, -9.2233720368547758e18, 16777217, -129});
  NDArray f = values(DType::F64, {8}, {NAN, -1.5, 1e300, -1e300, 4294967295.9, -0.0, 127.9, -128.9});
  for (const char* name : {"cv", "cvv"}) {
    SCOPED_TRACE(name);
    expect_jit_matches_interp(*m.find_func(name), 1, 0, 0, {{"A", a}, {"F", f}});
  }
  NDArray g = values(DType::F64, {8}, {NAN, -0.0, 0.0, 2.5, -2.5, -2147483648.0, INFINITY, -3.5});
  expect_jit_matches_interp(*m.find_func("mm"), 1, 0, 0, {{"F", g}});
}

TEST(AdversaryR3, ScheduledShapesAndEmptyExtents) {
  Module m =
      apply_module_schedules(parse_module(R"(func ew(A: f32[37], I: i32[37] in [-2, 40]) -> (B: f32[37]) {
  for i in serial(37) {
    block b(vi: spatial(37) = i) {
      B[vi] = if_then_else(I[vi] >= 0 && I[vi] < 37, A[I[vi]], -1.0) + f32(i8(vi * 9))
    }
  }
}
schedule ew {
  b = get_block("b")
  i = get_loops(b)
  o, m, v = split(i, [_, 3, 4])
  parallel(o)
  unroll(m)
  vectorize(v)
}
func mm(A: i32[19, 23], B: i32[23, 21]) -> (C: i32[19, 21]) {
  for i, j, k in grid(19, 21, 23) {
    block c(vi: spatial(19) = i, vj: spatial(21) = j, vk: reduce(23) = k) {
      init { C[vi, vj] = 7 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj] * 100000
    }
  }
}
schedule mm {
  b = get_block("c")
  i, j, k = get_loops(b)
  i0, i1 = split(i, [_, 4])
  j0, j1 = split(j, [_, 8])
  reorder(i0, j0, k, i1, j1)
  parallel(i0)
  vectorize(j1)
  unroll(i1)
  init = decompose_reduction(b, k)
}
func sc(X: f32[50], I: i32[50] in [0, 9]) -> (Y: f64[10]) {
  for i in serial(10) {
    block z(vi: spatial(10) = i) { Y[vi] = 0.0 }
  }
  for i in serial(50) {
    block s(vi: reduce(50) = i) {
      annotate("atomic", 1)
      Y[I[vi]] += f64(X[vi])
    }
  }
}
schedule sc {
  b = get_block("s")
  i = get_loops(b)
  parallel(i)
}
func scan(n: i32, X: i64[n]) -> (Y: i64[n]) {
  for j in serial(n) {
    block s(vj: scan(n) = j) { Y[vj] = if_then_else(vj == 0, X[vj], Y[vj - 1] * i64(3) + X[vj]) }
  }
}
func zsym(n: i32, A: f32[n]) -> (B: f32[n]) {
  for i in parallel(n) {
    block b(vi: spatial(n) = i) { B[vi] = A[vi] * 2.0 }
  }
}
)",
                                          "test.tir"));
  for (const char* name : {"ew", "mm"}) {
    SCOPED_TRACE(name);
    expect_jit_matches_interp(*m.find_func(name), 3, 0, 0);
  }
  // Float atomics in parallel: any order of additions (f64 sums of f32 values: exact enough).
  expect_jit_matches_interp(*m.find_func("sc"), 3, 1e-12, 1e-12);
  for (double n : {0.0, 1.0, 45.0}) {
    SCOPED_TRACE(n);
    expect_jit_matches_interp(*m.find_func("scan"), 2, 0, 0, {{"n", scalar(DType::I32, n)}});
    expect_jit_matches_interp(*m.find_func("zsym"), 2, 0, 0, {{"n", scalar(DType::I32, n)}});
  }
}

TEST(AdversaryR3, BindingsOutsideTheirDomainAreTheInterpretersError) {
  // `vi: spatial(n) = i` over serial(8): for n < 8 the interpreter stops at the binding.
  // Unfixed, the JIT ran on (and read A[vi] for vi >= n: in bounds of A, so unchecked).
  Module m = parse_module(R"(func bind(n: i32, A: f32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(n) = i) { B[vi] = A[vi] }
  }
}
func red(n: i32, A: f32[8]) -> (S: f32[1]) {
  for k in serial(8) {
    block r(vk: reduce(n) = k) {
      init { S[0] = 0.0 }
      S[0] += A[vk]
    }
  }
}
)",
                          "test.tir");
  NDArray a = values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  for (const char* name : {"bind", "red"}) {
    SCOPED_TRACE(name);
    Function f = m.find_func(name);
    ArgMap small{{"n", scalar(DType::I32, 4)}, {"A", a}};
    std::string ie = interp_error(*f, small);
    ASSERT_NE(ie.find("binding of iter var"), std::string::npos) << ie;
    EXPECT_EQ(jit_error(*f, small), ie);
    expect_jit_matches_interp(*f, 1, 0, 0, {{"n", scalar(DType::I32, 8)}, {"A", a}});
  }
  EXPECT_EQ(jit_error(*m.find_func("bind"), {{"n", scalar(DType::I32, 4)}, {"A", a}}),
            "test.tir:3:5: error: block \"b\": binding of iter var vi = 4 is outside its domain [0, 4)");
}

TEST(AdversaryR3, ProvableBindingsAndQuotientsNeedNoCheck) {
  // Bindings equal to a loop's offset over the very extent, a fused tail's quotient under its
  // `where`, a strided gather's quotient under its guard: no check (the last two were
  // checked before this round).
  Module m = parse_module(R"(func offs(n: i32, X: f32[n, 4]) -> (Y: f32[n, 4]) {
  for i, j in grid(2 * n, 4) {
    block y(vi: spatial(2 * n) = i, vj: spatial(4) = j) {
      where i < n
      Y[vi, vj] = X[vi, vj]
    }
  }
}
func shift(n: i32, X: f32[n]) -> (Y: f32[n]) {
  for i in serial(1, n) {
    block y(vi: spatial(n - 1) = i - 1) { Y[vi + 1] = X[vi] }
  }
}
func fused(X: f32[3, 5]) -> (Y: f32[3, 5]) {
  for fo, fi in grid(4, 4) {
    block y(vi: spatial(3) = (fo * 4 + fi) // 5, vj: spatial(5) = (fo * 4 + fi) % 5) {
      where fo * 4 + fi < 15
      Y[vi, vj] = X[vi, vj]
    }
  }
}
func conv_t(X: f32[5], W: f32[3]) -> (Y: f32[11]) {
  for i, k in grid(11, 3) {
    block t(vi: spatial(11) = i, vk: reduce(3) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += if_then_else((vi - vk) % 2 == 0 && vi - vk >= 0 && vi - vk < 10, X[(vi - vk) // 2] * W[vk], 0.0)
    }
  }
}
)",
                          "test.tir");
  EXPECT_EQ(check_sites(*m.find_func("offs")), 0u);
  EXPECT_EQ(check_sites(*m.find_func("shift")), 0u);
  EXPECT_EQ(check_sites(*m.find_func("fused")), 0u);
  EXPECT_EQ(check_sites(*m.find_func("conv_t")), 0u);
  for (double n : {0.0, 1.0, 5.0}) {
    expect_jit_matches_interp(*m.find_func("offs"), 1, 0, 0, {{"n", scalar(DType::I32, n)}});
    expect_jit_matches_interp(*m.find_func("shift"), 1, 0, 0, {{"n", scalar(DType::I32, n)}});
  }
  expect_jit_matches_interp(*m.find_func("fused"), 1, 0, 0);
  expect_jit_matches_interp(*m.find_func("conv_t"), 1, 0, 0);
}

TEST(AdversaryR3, SpecialValueKernelsAgreeAndPassPtxas) {
  // Casts at the ends of ranges, f16/bf16, trunc/floor division by negative divisors, NaN
  // min/max, libm calls and a dead load, and a float64 atomic scatter: the JIT (thread loops
  // run serially) agrees with the interpreter and the NVPTX kernels are valid PTX.
  const char* text =
      R"(func gcast(A: i64[256], F: f64[256], I: i32[256]) -> (B: bf16[256], C: f16[256], E: u32[256], G: i8[256], H: f32[256]) {
  for bx in thread_binding(4, "blockIdx.x") {
    for tx in thread_binding(64, "threadIdx.x") {
      block b(vi: spatial(256) = bx * 64 + tx) {
        B[vi] = bf16(A[vi])
        C[vi] = f16(F[vi]) * f16(3.0)
        E[vi] = u32(F[vi]) // u32(I[vi] % 7 + 1)
        G[vi] = i8(truncdiv(I[vi] - 20, I[vi] + 1) + I[vi] % -5)
        H[vi] = min(f32(F[vi]), nan) + max(erf(f32(F[vi])), -0.0) + sign(f32(F[vi])) + round(f32(F[vi])) + pow(f32(F[vi]), 2.5) + select(I[vi] > 3, f32(A[I[vi] % 256]) * 0.0, 1.0)
      }
    }
  }
}
func gsc(X: f32[300], I: i32[300] in [0, 9]) -> (Y: f64[10]) {
  for i in thread_binding(10, "threadIdx.x") {
    block z(vi: spatial(10) = i) { Y[vi] = 0.0 }
  }
  for bx in thread_binding(3, "blockIdx.x") {
    for tx in thread_binding(100, "threadIdx.x") {
      block s(vi: reduce(300) = bx * 100 + tx) {
        annotate("atomic", 1)
        Y[I[vi]] += f64(X[vi])
      }
    }
  }
})";
  Module m = parse_module(text, "gpu.tir");
  for (const char* name : {"gcast", "gsc"}) {
    SCOPED_TRACE(name);
    expect_jit_matches_interp(*m.find_func(name), 5, 1e-12, 1e-12);
    CodegenOptions o;
    o.triple = "nvptx64-nvidia-cuda";
    std::string log;
    int rc = testing::run_ptxas(compile_to({m.find_func(name)}, EmitKind::Asm, o), &log);
    if (rc == -2) GTEST_SKIP() << "ptxas not installed";
    EXPECT_EQ(rc, 0) << log;
  }
}

TEST(AdversaryR3, FuzzFoundDeadLoads) {
  // From the random differential fuzz (cases that failed before the fix): a select with a
  // constant condition whose dropped arm is an if_then_else with a gather in its condition
  // (select evaluates both arms, the if_then_else its condition), and a comparison proven
  // true from `abs(INT_MIN) == INT_MIN` dropping a gather, in a 13-lane vectorized loop.
  Module m = parse_module(R"(func f1(A: bool[1], X: i32[1]) -> (O: i32[1]) {
  for i in serial(1) {
    block b(vi: spatial(1) = i) {
      O[vi] = -max(i32(sigmoid(f16(A[vi]))), select((bool(1) || A[vi]), i32(A[vi]),
                   if_then_else(A[X[vi]], i32(-5), i32(A[X[vi]]))))
    }
  }
}
func f2(A: u32[13], X: i32[13]) -> (O: f64[13]) {
  for i in vectorized(13) {
    block b(vi: spatial(13) = i) {
      O[vi] = select((abs(-i32(-2147483648)) <= i32((f32(A[X[vi]]) + f32(1.5)))), f64(-2.5),
                     pow(f64(A[vi]), f64(-2.5)))
    }
  }
}
)",
                          "test.tir");
  Function f1 = m.find_func("f1"), f2 = m.find_func("f2");
  NDArray a1 = values(DType::Bool, {1}, {1});
  EXPECT_NE(jit_error(*f1, {{"A", a1}, {"X", values(DType::I32, {1}, {2})}}).find("out-of-bounds load A[2]"),
            std::string::npos);
  expect_jit_matches_interp(*f1, 1, 0, 0, {{"A", a1}, {"X", values(DType::I32, {1}, {0})}});
  NDArray a2(DType::U32, {13});
  for (int64_t k = 0; k < 13; ++k) a2.set(k, static_cast<double>(k * 7));
  NDArray x(DType::I32, {13});
  for (int64_t k = 0; k < 13; ++k) x.set(k, static_cast<double>(12 - k));
  expect_jit_matches_interp(*f2, 1, 0, 0, {{"A", a2}, {"X", x}});
  x.set(9, 13);
  EXPECT_NE(jit_error(*f2, {{"A", a2}, {"X", x}}).find("out-of-bounds load A[13]"), std::string::npos);
}

}  // namespace tirc
#endif  // TIRC_WITH_LLVM

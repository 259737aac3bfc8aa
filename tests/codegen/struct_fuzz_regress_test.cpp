// Minimised programs from the structured-program fuzz (struct_fuzz_test.cpp): each one made
// compiled code differ from the interpreter before its fix.
#include <gtest/gtest.h>

#include <string>

#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/default_gpu_schedule.h"

#ifdef TIRC_WITH_LLVM
namespace tirc {
using namespace tirc::cgtest;

namespace {
// Up to the buffer name (the engines word the rest differently: docs/codegen.md).
std::string error_key(const std::string& e) {
  size_t p = e.find("out-of-bounds ");
  size_t b = p == std::string::npos ? p : e.find('[', p);
  return b == std::string::npos ? e : e.substr(0, b);
}
}  // namespace

// select runs both arms: the simplifier rewrote the bounds check of the arm taken when
// `n != 0` is false under `n == 0` (`__bounds_check(n - 1, n)` -> `__bounds_check(-1, 0)`),
// so the JIT stopped with "out-of-bounds load I[-1] ... outside [0, 0)" for every n >= 1,
// where the interpreter reads I[n - 1] (fix: transforms/simplify/simplify.cpp, mutate_select).
TEST(StructFuzzRegress, SelectArmCheckIsNotRewrittenUnderTheCondition) {
  const char* text = R"(
func f(n: i32, I: i32[n]) -> (D: bool[1], E: f32[1]) {
  block b1() {
    D[0] = select(n != 0, true, I[n - 1] <= 0)
    E[0] = select(n == 0, 2.5, f32(I[n - 1]))
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  for (int n : {1, 2, 6}) {
    ArgMap in{{"n", scalar(DType::I32, n)}, {"I", values(DType::I32, {n}, {3, 4, 5, 6, 7, 8})}};
    EXPECT_EQ(interp_error(*f, in), "");
    EXPECT_EQ(jit_error(*f, in), "") << "n = " << n;
    expect_jit_matches_interp(*f, 1, 0, 0, in);
  }
  // n = 0: both engines report the load of I[-1].
  ArgMap in0{{"n", scalar(DType::I32, 0)}, {"I", values(DType::I32, {0}, {})}};
  EXPECT_NE(interp_error(*f, in0).find("out-of-bounds load I[-1]"), std::string::npos);
  EXPECT_NE(jit_error(*f, in0).find("out-of-bounds load I[-1]"), std::string::npos);
}

// A let whose value holds a check only in an if_then_else arm that folds away (`if_then_else
// (true, s0, I[vi])`): the simplifier's check keeping took the whole let as a part to keep,
// simplified it again, lost the same (dead) check again, and recursed until the stack
// overflowed: `tirc run --engine jit` and `tirc build` died with SIGSEGV (fix:
// transforms/simplify/simplify.cpp, keep_checks). The loop's non-zero min leaves the
// index checks in place (they are what the let's value carried).
TEST(StructFuzzRegress, DeadCheckInLetValueDoesNotRecurseForever) {
  const char* text = R"(
func f(n: i32, s0: i32, I: i32[n]) -> (D: i32[n]) {
  for l in serial(3, n + 3) {
    block b(vi: spatial(n) = l - 3) {
      D[vi] = I[vi] // (let d6 = if_then_else(true, s0, I[vi]) in if_then_else(d6 == 0, 2, d6))
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  for (int s0 : {0, -3})
    expect_jit_matches_interp(*f, 1, 0, 0,
                              {{"n", scalar(DType::I32, 5)},
                               {"s0", scalar(DType::I32, s0)},
                               {"I", values(DType::I32, {5}, {7, -8, 9, 0, 4})}});
}

// An unsigned conversion of a sign-extended value, `f32(u16(A[i]))` of an i8 -13: LLVM 19's
// SLP vectorizer narrowed `uitofp (sext i8 to i16)` to `uitofp i8`, giving 243 for 65523
// (fix: codegen converts unsigned integers as zero-extended signed ones).
TEST(StructFuzzRegress, UnsignedToFloatOfSignExtendedValue) {
  const char* text = R"(
func f(A: i8[4], U: u8[4]) -> (B: f32[4], C: f32[4], D: f64[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = f32(u16(A[vi])) * 10.0
      C[vi] = f32(i16(U[vi])) * 10.0
      D[vi] = f64(u32(A[vi])) * 2.0
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", values(DType::I8, {4}, {-13, 5, -128, 127})},
            {"U", values(DType::U8, {4}, {200, 0, 255, 7})}};
  expect_jit_matches_interp(*f, 1, 0, 0, in);
  EXPECT_EQ(compile_jit(*f)->run(in).at("B").get(0), 655230.0);
}

// Gathers and scatters of a vectorized loop of 17 or 24 lanes under a mask: LLVM 19's x86
// backend widened them to 32 lanes and allocated the undefined index of the all-padding part
// to the destination (`vpgatherdq (%rsi,%ymm0,8), %zmm0 {%k3}`, an invalid encoding): the JIT
// died with SIGILL (fix: codegen pads gathers / scatters to a power of two itself).
TEST(StructFuzzRegress, NonPowerOfTwoMaskedGatherAndScatter) {
  for (int w : {17, 24, 7}) {
    std::string text = R"(
func f(A: i16[W], X: i64[W]) -> (D: i16[W], E: i64[W]) {
  for l in vectorized(W) {
    block b(vj: spatial(W) = l) {
      D[vj] = A[vj]
      if A[vj] != i16(100) {
        D[vj] = max(i16(X[W - 1 - vj]), A[vj])
      }
    }
  }
  for l in vectorized(W) {
    block c(vj: spatial(W) = l) {
      E[vj] = X[vj]
    }
  }
  for l in vectorized(W) {
    block e(vj: spatial(W) = l) {
      if A[vj] != i16(100) {
        E[W - 1 - vj] = X[vj] * 3
      }
    }
  }
}
)";
    for (size_t p; (p = text.find('W')) != std::string::npos;) text.replace(p, 1, std::to_string(w));
    SCOPED_TRACE(text);
    Function f = parse_func(text, "f");
    ASSERT_TRUE(f);
    for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
  }
}

// `-(S - M)` with a checked gather in each operand: the simplifier's canonical `M - S`
// evaluated M's check first, so serial compiled code reported `B[-1]` where the interpreter
// (left to right) reports `A[-1]` (tests/codegen/fuzz_jit_vs_interp.py seed 60122; fix:
// transforms/simplify keeps the operands' order when it would reorder checks).
TEST(StructFuzzRegress, ReorderedOperandsKeepTheFirstFailingCheck) {
  const char* text = R"(
func f(A: i64[13], B: f32[13] in [0, 300], X: i32[13] in [-1, 12]) -> (O: i64[13]) {
  for i in unroll(13) {
    block b(vi: spatial(13) = i) {
      O[vi] = -(select((sign(u16(A[vi])) < u16(A[vi])), truncdiv(A[vi], select(i64(0 - i64(9223372036854775807)) == i64(0), i64(7), i64(0 - i64(9223372036854775807)))), A[X[vi]]) - (-i64(i32(-5)) % select(i64(B[X[vi]]) == i64(0), i64(7), i64(B[X[vi]]))))
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  ArgMap in = random_inputs(*f, 60122);
  std::string want = interp_error(*f, in);
  EXPECT_NE(want.find("out-of-bounds load A[-1]"), std::string::npos) << want;
  EXPECT_EQ(error_key(jit_error(*f, in)), error_key(want));
}

// `(vi + 7) % n` (loop-invariant in the inner loop) under an `if` on the inner loop var: LLVM
// 19's loop vectorizer predicated the division on lane 0's mask only, so lanes after a
// masked-off lane 0 used a poison row (wrong values, or SIGSEGV) (fix: codegen disables
// auto-vectorization of loops holding an integer division by a variable).
TEST(StructFuzzRegress, InvariantDivisionUnderAMaskInAnAutoVectorizedLoop) {
  const char* text = R"(
func f(n: i32, A: bf16[n, 12] in [-100, 100], B: i16[n, 12] in [-20, 20]) -> (D: i64[n, 12]) {
  for l2 in serial(n) {
    for l3 in serial(12) {
      block b1(vi: spatial(n) = l2, vj: spatial(12) = l3) {
        if i32(B[vi, 11 - vj]) > vj {
          D[vi, vj] = sign(-i64(A[(vi + 7) % n, vj]))
        } else {
          D[vi, vj] = i64(5)
        }
      }
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  for (uint64_t seed : {1, 2, 3}) expect_jit_matches_interp(*f, seed, 0, 0, {{"n", scalar(DType::I32, 4)}});
}

// docs/codegen.md: where nothing is checked (NVPTX kernels, CPU code built with
// --no-bounds-check) integer division and modulo by zero give 0 and `INT_MIN // -1` wraps;
// the NVPTX emulator and the unchecked CPU JIT agree on every operator.
TEST(StructFuzzRegress, UncheckedDivisionByZeroIsZeroOnNvptxAndCpu) {
  const char* text = R"(
func f(A: i32[6], D: i32[6]) -> (Q: i32[6], R: i32[6], T: i32[6], M: i32[6]) {
  for i in serial(6) {
    block b(vi: spatial(6) = i) {
      Q[vi] = A[vi] // D[vi]
      R[vi] = A[vi] % D[vi]
      T[vi] = truncdiv(A[vi], D[vi])
      M[vi] = truncmod(A[vi], D[vi])
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  ArgMap in{{"A", values(DType::I32, {6}, {7, -7, 5, -2147483648.0, -2147483648.0, 9})},
            {"D", values(DType::I32, {6}, {0, 0, 2, -1, 0, -4})}};
  // Expected: lanes with a zero divisor give 0; INT_MIN // -1 == INT_MIN, INT_MIN % -1 == 0.
  const double q[] = {0, 0, 2, -2147483648.0, 0, -3}, r[] = {0, 0, 1, 0, 0, -3},
               t[] = {0, 0, 2, -2147483648.0, 0, -2}, m[] = {0, 0, 1, 0, 0, 1};
  auto expect = [&](const ArgMap& got, const char* who) {
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(got.at("Q").get(i), q[i]) << who << " Q " << i;
      EXPECT_EQ(got.at("R").get(i), r[i]) << who << " R " << i;
      EXPECT_EQ(got.at("T").get(i), t[i]) << who << " T " << i;
      EXPECT_EQ(got.at("M").get(i), m[i]) << who << " M " << i;
    }
  };
  CodegenOptions unchecked;
  unchecked.bounds_checks = false;
  expect(compile_jit(*f, unchecked)->run(in), "cpu --no-bounds-check");
  std::string err;
  ArgMap gpu = testing::emulate(default_gpu_schedule(*f), in, &err);
  ASSERT_EQ(err, "");
  expect(gpu, "nvptx emulator");
  // The checked JIT reports the first zero divisor as the interpreter does.
  EXPECT_EQ(jit_error(*f, in), interp_error(*f, in));
}

}  // namespace tirc
#endif  // TIRC_WITH_LLVM

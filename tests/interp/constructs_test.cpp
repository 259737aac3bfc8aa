// Statements and expressions written as .tir text (through the parser): loop kinds and
// ranges, lets, ifs, nested blocks, call_extern, i64 indices, f16 data under promote_f64.
#include <gtest/gtest.h>

#include <cmath>

#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

ArgMap run_text(const std::string& text, const std::string& fn, ArgMap in = {}, uint64_t seed = 1,
                InterpOptions o = {}) {
  Module m = parse_module(text, "t.tir");
  Function f = m.find_func(fn);
  if (!f) throw std::runtime_error("no function " + fn);
  return run_interp(*f, random_inputs(*f, seed, in), o);
}

std::string error_text(const std::string& text, const std::string& fn) {
  try {
    run_text(text, fn);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(InterpConstructs, LoopKindsRangesLetsAndIfs) {
  const char* src = R"(
func f(A: i32[10]) -> (B: i32[10]) {
  for i in serial(0, 3) {
    block b0(vi: spatial(10) = i) { B[vi] = 100 }
  }
  for i in parallel(3, 5) {
    block b1(vi: spatial(10) = i) { B[vi] = 200 }
  }
  for i in vectorized(5, 7) {
    block b2(vi: spatial(10) = i) { B[vi] = 300 }
  }
  for i in unroll(7, 9) {
    block b3(vi: spatial(10) = i) {
      let t = A[vi] * 2
      if t > 10 { B[vi] = t } else { B[vi] = -t }
    }
  }
  for i in thread_binding(1, "threadIdx.x") {
    block b4(vi: spatial(10) = i + 9) { B[vi] = (let y = A[vi] in y * y + 1) }
  }
}
)";
  NDArray a(DType::I32, {10});
  for (int k = 0; k < 10; ++k) a.set(k, k);
  ArgMap out = run_text(src, "f", {{"A", a}});
  int want[10] = {100, 100, 100, 200, 200, 300, 300, 14, 16, 82};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(out["B"].get(k), want[k]) << k;
  // if/else: 7*2=14 > 10 -> 14; with A[7] = 1 -> -2.
  a.set(7, 1);
  EXPECT_EQ(run_text(src, "f", {{"A", a}})["B"].get(7), -2);
}

TEST(InterpConstructs, NestedBlocksAndLocalAllocs) {
  const char* src = R"(
func f(A: f32[4, 3]) -> (S: f32[4]) {
  for i in serial(4) {
    block outer(vi: spatial(4) = i) {
      alloc T: f32[3]
      for j in serial(3) {
        block fill(wi: spatial(4) = vi, vj: spatial(3) = j) { T[vj] = A[wi, vj] * 2.0 }
      }
      S[vi] = T[0] + T[1] + T[2]
    }
  }
}
)";
  Module m = parse_module(src, "t.tir");
  Function f = m.find_func("f");
  ArgMap in = random_inputs(*f, 3);
  RunStats st;
  ArgMap out = compile_interp(*f)->run_with_stats(in, &st);
  for (int r = 0; r < 4; ++r) {
    const float* a = in["A"].ptr<float>() + 3 * r;
    EXPECT_EQ(out["S"].ptr<float>()[r], a[0] * 2.0f + a[1] * 2.0f + a[2] * 2.0f);
  }
  EXPECT_EQ(st.block_executions["outer"], 4u);
  EXPECT_EQ(st.block_executions["fill"], 12u);
}

TEST(InterpConstructs, CallExternOnlyFailsWhenExecuted) {
  const char* src = R"(
func f(A: f32[2]) -> (B: f32[2]) {
  for i in serial(2) {
    block b(vi: spatial(2) = i) {
      if vi > 5 { call_extern("never", A.data) }
      B[vi] = A[vi]
    }
  }
}
func g(A: f32[2]) -> (B: f32[2]) {
  for i in serial(2) {
    block b(vi: spatial(2) = i) {
      call_extern("memcpy", B.ptr(vi), A.ptr(vi), 4)
    }
  }
}
)";
  EXPECT_NO_THROW(run_text(src, "f"));
  EXPECT_EQ(error_text(src, "g"),
            "t.tir:12:5: error: block \"b\": call_extern(\"memcpy\") cannot be run by the interpreter");
}

TEST(InterpConstructs, I64IndicesAndScalarsInExtents) {
  const char* src = R"(
func f(n: i64, A: f32[n]) -> (B: f32[n]) {
  for i in serial(n) {
    block b(vi: spatial(n) = i) { B[vi] = A[n - vi - i64(1)] }
  }
}
)";
  NDArray n(DType::I64, {});
  n.ptr<int64_t>()[0] = 5;
  Module m = parse_module(src, "t.tir");
  Function f = m.find_func("f");
  ArgMap in = random_inputs(*f, 2, {{"n", n}});
  ArgMap out = run_interp(*f, in);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(out["B"].get(k), in["A"].get(4 - k));
}

TEST(InterpConstructs, HalfDataRoundsPerOpAndPromotes) {
  const char* src = R"(
func f(A: f16[3], B: f16[3]) -> (C: f16[3], D: f32[3]) {
  for i in serial(3) {
    block b(vi: spatial(3) = i) {
      C[vi] = A[vi] + B[vi] + B[vi]
      D[vi] = f32(A[vi]) + f32(B[vi]) + f32(B[vi])
    }
  }
}
)";
  NDArray a(DType::F16, {3}), b(DType::F16, {3});
  a.set(0, 2048);
  b.set(0, 1);  // f16: (2048 + 1) + 1 = 2048 + 1 = 2048 (ties to even each time); f32: 2050
  a.set(1, 1);
  b.set(1, 0.5);
  a.set(2, -3);
  b.set(2, 0.25);
  ArgMap out = run_text(src, "f", {{"A", a}, {"B", b}});
  EXPECT_EQ(out["C"].get(0), 2048);
  EXPECT_EQ(out["D"].get(0), 2050);
  EXPECT_EQ(out["C"].get(1), 2);
  InterpOptions o;
  o.promote_f64 = true;
  ArgMap out64 = run_text(src, "f", {{"A", a}, {"B", b}}, 1, o);
  EXPECT_EQ(out64["C"].dtype(), DType::F64);
  EXPECT_EQ(out64["C"].get(0), 2050);  // no f16 rounding in f64 mode
  EXPECT_EQ(out64["D"].get(2), -2.5);
}

TEST(InterpConstructs, InPlaceUpdateOfAnOutputAfterWriting) {
  const char* src = R"(
func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block w(vi: spatial(4) = i) { B[vi] = A[vi] }
  }
  for i in serial(4) {
    block u(vi: spatial(4) = i) { B[vi] = B[vi] * 3.0 }
  }
}
)";
  NDArray a(DType::F32, {4});
  for (int k = 0; k < 4; ++k) a.set(k, k + 1);
  ArgMap out = run_text(src, "f", {{"A", a}});
  for (int k = 0; k < 4; ++k) EXPECT_EQ(out["B"].get(k), 3.0 * (k + 1));
}

}  // namespace tirc

namespace tirc {
TEST(InterpConstructs, IntrinDescWithoutOutputsReturnsWrittenParams) {
  const char* src = R"(
intrin add4 {
  desc(A: f32[4], B: f32[4], C: f32[4]) {
    for i in serial(4) {
      block c(vi: spatial(4) = i) { C[vi] = A[vi] + B[vi] }
    }
  }
  impl(A: f32[4], B: f32[4], C: f32[4]) {
    call_extern("vadd4", C.data, A.data, B.data)
  }
}
)";
  Module m = parse_module(src, "t.tir");
  ASSERT_EQ(m.intrins.size(), 1u);
  const FunctionNode& desc = *m.intrins[0].desc;
  ArgMap in = random_inputs(desc, 1);
  NDArray c0 = in["C"].copy();
  ArgMap out = run_interp(desc, in);
  ASSERT_TRUE(out.count("C"));
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(out["C"].ptr<float>()[k], in["A"].ptr<float>()[k] + in["B"].ptr<float>()[k]);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(in["C"].get(k), c0.get(k));  // caller's array untouched
}
}  // namespace tirc

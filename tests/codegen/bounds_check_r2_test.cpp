// Bounds checks, second round (adversarial): accesses that go out of bounds only for some
// data or sizes. Each case runs the interpreter (the reference) and the JIT on the same
// inputs: when the interpreter reports an out-of-bounds access the JIT must stop with an
// out-of-bounds error (never touch the memory), and when it runs the JIT must give the
// same outputs (no false failure).
#include <gtest/gtest.h>

#include <string>

#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "transforms/lower/lower.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

// The interpreter's verdict decides: an out-of-bounds error there must be one in the JIT
// (any dimension), a run there must give the same outputs in the JIT.
void expect_agree(const FunctionNode& f, const ArgMap& in) {
  std::string ie = interp_error(f, in);
  if (ie.empty()) {
    expect_jit_matches_interp(f, 1, 0, 0, in);
    return;
  }
  ASSERT_NE(ie.find("out-of-bounds"), std::string::npos) << "interp: " << ie;
  std::string je = jit_error(f, in);
  EXPECT_NE(je.find("out-of-bounds"), std::string::npos) << "jit: '" << je << "' (interp: " << ie << ")";
}

}  // namespace

TEST(BoundsCheckR2, FactsAboutALoadDieWhenItsBufferIsWritten) {
  // `if T[0] < 8` proves nothing about T[0] after `T[0] = ...` (in sequence, or in a later
  // iteration of a loop that writes it); `let x = T[0]` keeps the value read before.
  // Unfixed, all three stores were unchecked: a write 100000003 floats past B.
  Module m = parse_module(R"(func f(I: i32[1]) -> (B: f32[8], T: i32[1]) {
  block b() {
    T[0] = I[0]
    if T[0] >= 0 && T[0] < 8 {
      T[0] = T[0] + 100000000
      B[T[0]] = 1.0
    }
  }
}
func g(I: i32[1]) -> (B: f32[8], T: i32[1]) {
  block b() {
    T[0] = I[0]
    if T[0] >= 0 && T[0] < 8 {
      for k in serial(3) {
        B[T[0]] = 1.0
        T[0] = T[0] + 50000000
      }
    }
  }
}
func h(I: i32[1]) -> (B: f32[8], T: i32[1]) {
  block b() {
    T[0] = I[0]
    let x = T[0]
    T[0] = 0
    if T[0] >= 0 && T[0] < 8 {
      B[x] = 1.0
    }
  }
}
)",
                          "test.tir");
  ArgMap in{{"I", values(DType::I32, {1}, {3})}};
  EXPECT_EQ(
      jit_error(*m.find_func("f"), in),
      "test.tir:6:7: error: block \"b\": out-of-bounds store B[100000003]: index 100000003 of dimension 0 is "
      "outside [0, 8)");
  EXPECT_EQ(
      jit_error(*m.find_func("g"), in),
      "test.tir:15:9: error: block \"b\": out-of-bounds store B[50000003]: index 50000003 of dimension 0 is "
      "outside [0, 8)");
  for (const char* name : {"f", "g", "h"}) expect_agree(*m.find_func(name), in);
  ArgMap far{{"I", values(DType::I32, {1}, {100000000})}};
  EXPECT_NE(jit_error(*m.find_func("h"), far).find("out-of-bounds store B[100000000]"), std::string::npos);
  expect_agree(*m.find_func("h"), far);
  // Facts about buffers nobody writes stay: the guarded gather needs no check.
  Function keep = parse_func(R"(func k(A: f32[8], I: i32[1]) -> (B: f32[8]) {
  block b() {
    if I[0] >= 0 && I[0] < 8 {
      B[0] = 0.0
      B[I[0]] = A[I[0]]
    }
  }
}
)",
                             "k");
  EXPECT_EQ(check_sites(*keep), 0u);
}

TEST(BoundsCheckR2, AGuardedAccessDoesNotLendItsProofToAnUnguardedOne) {
  // One store statement reads A[I[vi]] under the guard (no check needed) and again outside
  // it: the second read needs its own check (it used to reuse the first, unchecked).
  Function f = parse_func(R"(func f(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = if_then_else(I[vi] >= 0 && I[vi] < 8, A[I[vi]], 0.0) + A[I[vi]]
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  EXPECT_EQ(check_sites(*f), 1u);
  ArgMap in{{"A", values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
            {"I", values(DType::I32, {4}, {0, 1, 100000000, 3})}};
  EXPECT_EQ(
      jit_error(*f, in),
      "test.tir:4:7: error: block \"b\": out-of-bounds load A[100000000]: index 100000000 of dimension 0 is "
      "outside [0, 8)");
  in["I"] = values(DType::I32, {4}, {0, 1, 7, 3});
  expect_agree(*f, in);
}

TEST(BoundsCheckR2, MaskedOffVectorLanesRunNoUniformCheck) {
  // The index n is the same for every lane; under `if vi + n < 4` no lane loads A[n] when
  // n >= 4, so the interpreter runs. The vector loop computed lane-invariant indices (with
  // their checks) unmasked and failed.
  Module m = parse_module(R"(func f(n: i32, A: f32[8]) -> (B: f32[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = 0.0
      if vi + n < 4 { B[vi] = A[n] }
    }
  }
}
func g(n: i32, A: f32[16], I: i32[8]) -> (B: f32[8]) {
  for i in vectorized(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = if_then_else(vi + n < 4, A[vi + I[n]], 1.0)
    }
  }
}
)",
                          "test.tir");
  NDArray a8 = values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  NDArray a16(DType::F32, {16});
  NDArray idx = values(DType::I32, {8}, {0, 1, 2, 3, 4, 5, 6, 7});
  for (double n : {-100000.0, -1.0, 0.0, 3.0, 4.0, 100000000.0}) {
    SCOPED_TRACE(n);
    expect_agree(*m.find_func("f"), {{"n", scalar(DType::I32, n)}, {"A", a8}});
    expect_agree(*m.find_func("g"), {{"n", scalar(DType::I32, n)}, {"A", a16}, {"I", idx}});
  }
  EXPECT_EQ(jit_error(*m.find_func("f"), {{"n", scalar(DType::I32, 100000000)}, {"A", a8}}), "");
  EXPECT_NE(jit_error(*m.find_func("f"), {{"n", scalar(DType::I32, -1)}, {"A", a8}})
                .find("out-of-bounds load A[-1]"),
            std::string::npos);
}

TEST(BoundsCheckR2, ModuloAndReverseOfASymbolicExtentNeedNoCheck) {
  // Inside `serial(n)` n >= 1: `(i - 3 + n) % n` is inside [0, n) and `n - 1 - i` cannot
  // wrap. Outside such a loop n may be 0 (the interpreter then fails on `% 0`): checked.
  Module m = parse_module(R"(func roll(n: i32, X: f32[2, n]) -> (Y: f32[2, n]) {
  for b, i in grid(2, n) {
    block roll(vb: spatial(2) = b, vi: spatial(n) = i) {
      Y[vb, vi] = X[vb, (vi - 3 + n) % n]
    }
  }
}
func flip(n: i32, A: f32[n]) -> (B: f32[n]) {
  for i in serial(n) {
    block b(vi: spatial(n) = i) { B[vi] = A[n - 1 - vi] }
  }
}
func modn(n: i32, A: f32[n]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = A[vi % n] }
  }
}
func modm(n: i32, m: i32, A: f32[n]) -> (B: f32[m]) {
  for i in serial(m) {
    block b(vi: spatial(m) = i) { B[vi] = A[(vi + 1) % m] }
  }
}
)",
                          "test.tir");
  EXPECT_EQ(check_sites(*m.find_func("roll")), 0u);
  EXPECT_EQ(check_sites(*m.find_func("flip")), 0u);
  EXPECT_EQ(check_sites(*m.find_func("modn")), 2u);  // the index and the divisor (div_by_zero_test)
  EXPECT_EQ(check_sites(*m.find_func("modm")), 1u);  // m may exceed n
  for (int64_t n : {1, 3, 10}) {
    NDArray x(DType::F32, {2, n}), a(DType::F32, {n});
    for (int64_t k = 0; k < 2 * n; ++k) x.set(k, static_cast<double>(k));
    for (int64_t k = 0; k < n; ++k) a.set(k, static_cast<double>(k));
    expect_agree(*m.find_func("roll"), {{"n", scalar(DType::I32, static_cast<double>(n))}, {"X", x}});
    expect_agree(*m.find_func("flip"), {{"n", scalar(DType::I32, static_cast<double>(n))}, {"A", a}});
    expect_agree(*m.find_func("modn"), {{"n", scalar(DType::I32, static_cast<double>(n))}, {"A", a}});
    expect_agree(*m.find_func("modm"),
                 {{"n", scalar(DType::I32, static_cast<double>(n))}, {"m", scalar(DType::I32, 4)}, {"A", a}});
  }
  EXPECT_NE(jit_error(*m.find_func("modm"), {{"n", scalar(DType::I32, 3)},
                                             {"m", scalar(DType::I32, 4)},
                                             {"A", values(DType::F32, {3}, {1, 2, 3})}})
                .find("out-of-bounds load A[3]"),
            std::string::npos);
  NDArray empty(DType::F32, {0});
  expect_agree(*m.find_func("flip"), {{"n", scalar(DType::I32, 0)}, {"A", empty}});
  EXPECT_NE(jit_error(*m.find_func("modn"), {{"n", scalar(DType::I32, 0)}, {"A", empty}}), "");
}

TEST(BoundsCheckR2, SmallLoopVarsAreSplitCaseByCase) {
  // adaptive_avg_pool's window guard bounds the index only per value of vi (the guard's
  // right side depends on vi): the proof tries vi = 0, 1, 2 one by one. With the guard one
  // too wide (`+ 1`) the last window reads X[_, 5, _]: the check stays and fires.
  const char* src = R"(func pool(X: f32[2, 5, 7]) -> (Y: f32[2, 3, 3]) {
  for c, i, j, r, s in grid(2, 3, 3, 3, 3) {
    block acc(vc: spatial(2) = c, vi: spatial(3) = i, vj: spatial(3) = j, vr: reduce(3) = r,
              vs: reduce(3) = s) {
      init { Y[vc, vi, vj] = 0.0 }
      Y[vc, vi, vj] += if_then_else(vi * 5 // 3 + vr < ((vi + 1) * 5 + 2) // 3 WIDEN &&
                                    vj * 7 // 3 + vs < ((vj + 1) * 7 + 2) // 3,
                                    X[vc, vi * 5 // 3 + vr, vj * 7 // 3 + vs], 0.0)
    }
  }
}
)";
  std::string ok = src, wide = src;
  ok.replace(ok.find("WIDEN"), 5, "");
  wide.replace(wide.find("WIDEN"), 5, "+ 1");
  Function f = parse_func(ok, "pool"), g = parse_func(wide, "pool");
  ASSERT_TRUE(f && g);
  EXPECT_EQ(check_sites(*f), 0u);
  EXPECT_EQ(check_sites(*g), 1u);
  NDArray x(DType::F32, {2, 5, 7});
  for (int64_t k = 0; k < x.numel(); ++k) x.set(k, static_cast<double>(k % 11));
  expect_agree(*f, {{"X", x}});
  expect_agree(*g, {{"X", x}});
  EXPECT_NE(jit_error(*g, {{"X", x}}).find("out-of-bounds load X[_, 5, _]"), std::string::npos);
}

TEST(BoundsCheckR2, DataDependentIndicesAgreeWithTheInterpreter) {
  // Indices that leave the buffer only for some data: wrapping narrow casts, float casts,
  // u16/i16/i8/i64 index buffers, select (both arms evaluated) vs if_then_else, && (both
  // sides evaluated), a scan reading an earlier step, an atomic scatter in a parallel loop,
  // a heap buffer (> 64 KiB) in a block inside a parallel loop, a nested block.
  Module m = parse_module(R"(func narrow(A: f32[256]) -> (B: f32[16]) {
  for i in serial(16) {
    block b(vi: spatial(16) = i) { B[vi] = A[i32(i8(vi + 120))] }
  }
}
func wrap(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = A[(vi * 1073741824) // 1073741824] }
  }
}
func fl(X: f32[4], A: f32[8]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = A[i32(floor(X[vi] * 8.0))] }
  }
}
func narrowidx(A: f32[8], I: u16[4], J: i16[4], K: i8[4], L: i64[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = A[I[vi]] + A[J[vi]] + A[K[vi]] + A[i32(L[vi])] }
  }
}
func sel(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = select(I[vi] >= 0 && I[vi] < 8, A[I[vi]], 0.0) }
  }
}
func ite(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = if_then_else(I[vi] < 0 || I[vi] >= 8, -1.0, A[I[vi]]) }
  }
}
func andand(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = if_then_else(I[vi] < 8 && A[I[vi]] > 0.0, 1.0, 0.0) }
  }
}
func scan(X: f32[4], I: i32[4]) -> (Y: f32[4]) {
  for j in serial(4) {
    block s(vj: scan(4) = j) { Y[vj] = if_then_else(vj == 0, X[vj], Y[I[vj]] + X[vj]) }
  }
}
func scat(X: f32[4], I: i32[4]) -> (Y: f32[8]) {
  for i in serial(8) {
    block z(vi: spatial(8) = i) { Y[vi] = 0.0 }
  }
  for i in parallel(4) {
    block s(vi: reduce(4) = i) {
      annotate("atomic", 1)
      Y[I[vi]] += X[vi]
    }
  }
}
func heap(X: f32[4], I: i32[4]) -> (Y: f32[4]) {
  for i in parallel(4) {
    block o(vi: spatial(4) = i) {
      alloc T: f32[20000]
      for k in serial(20000) {
        block t(vk: spatial(20000) = k, vo: spatial(4) = vi) { T[vk] = X[vo] + f32(vk) }
      }
      block u(vo: spatial(4) = vi) { Y[vo] = T[I[vo] * 5000] }
    }
  }
}
)",
                          "test.tir");
  NDArray a4 = values(DType::F32, {4}, {1, 2, 3, 4}), a8 = values(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  NDArray a256(DType::F32, {256});
  expect_agree(*m.find_func("narrow"), {{"A", a256}});  // i8(128) = -128
  expect_agree(*m.find_func("wrap"), {{"A", a4}});      // 2 * 2^30 wraps to INT_MIN
  for (double x : {0.99, 1.0, -0.01, 1e30, -1e30}) {
    SCOPED_TRACE(x);
    expect_agree(*m.find_func("fl"), {{"X", values(DType::F32, {4}, {0, 0.5, x, 0.2})}, {"A", a8}});
  }
  auto narrow_in = [&](double i, double j, double k, double l) {
    return ArgMap{{"A", a8},
                  {"I", values(DType::U16, {4}, {0, 1, i, 3})},
                  {"J", values(DType::I16, {4}, {0, 1, j, 3})},
                  {"K", values(DType::I8, {4}, {0, 1, k, 3})},
                  {"L", values(DType::I64, {4}, {0, 1, l, 3})}};
  };
  expect_agree(*m.find_func("narrowidx"), narrow_in(7, 7, 7, 4294967303.0));  // i32(2^32 + 7) = 7
  expect_agree(*m.find_func("narrowidx"), narrow_in(65535, 7, 7, 7));
  expect_agree(*m.find_func("narrowidx"), narrow_in(7, -32768, 7, 7));
  expect_agree(*m.find_func("narrowidx"), narrow_in(7, 7, -128, 7));
  expect_agree(*m.find_func("narrowidx"), narrow_in(7, 7, 7, 4294967304.0));
  for (double bad : {7.0, 8.0, -5.0, 70000000.0}) {
    SCOPED_TRACE(bad);
    ArgMap in{{"A", a8}, {"I", values(DType::I32, {4}, {0, 1, bad, 3})}};
    for (const char* name : {"sel", "ite", "andand"}) expect_agree(*m.find_func(name), in);
    expect_agree(*m.find_func("scan"), {{"X", a4}, {"I", values(DType::I32, {4}, {0, 0, 1, bad - 6})}});
    expect_agree(*m.find_func("scat"), {{"X", a4}, {"I", values(DType::I32, {4}, {0, bad, 3, 3})}});
    expect_agree(*m.find_func("heap"), {{"X", a4}, {"I", values(DType::I32, {4}, {0, 1, 3, bad - 4})}});
  }
  // select evaluates its untaken arm: an index outside A there is an error in both engines.
  EXPECT_NE(jit_error(*m.find_func("sel"), {{"A", a8}, {"I", values(DType::I32, {4}, {0, 8, 1, 1})}})
                .find("out-of-bounds load A[8]"),
            std::string::npos);
}

}  // namespace tirc

// Bad but parseable input never crashes the interpreter: value ranges outside the dtype or
// not finite, negative alloc sizes from scalar parameters (errors with positions).
#include <gtest/gtest.h>

#include <cmath>

#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

Function func(const std::string& text, const std::string& name) {
  static std::vector<Module> keep;
  keep.push_back(parse_module(text, "r.tir"));
  return keep.back().find_func(name);
}

std::string random_error(const Function& f, const ArgMap& given = {}) {
  try {
    random_inputs(*f, 1, given);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(InterpRobustness, IntegerRangesAreIntersectedWithTheDtype) {
  Function f = func(R"(func f(A: i64[64] in [-9223372036854775808, 9223372036854775807],
    U: u8[256] in [-5, 300], I: i32[64] in [0, 1e30]) -> (B: i64[64]) {
  for i in serial(64) { block b(vi: spatial(64) = i) { B[vi] = A[vi] + i64(U[vi]) + i64(I[vi]) } }
})",
                    "f");
  ArgMap in = random_inputs(*f, 7);
  // Full i64 range: values spread over it (this once gave INT64_MIN everywhere).
  const int64_t* a = in.at("A").ptr<int64_t>();
  int negative = 0, positive = 0;
  for (int i = 0; i < 64; ++i) (a[i] < 0 ? negative : positive)++;
  EXPECT_GT(negative, 10);
  EXPECT_GT(positive, 10);
  // u8 in [-5, 300] draws from [0, 255] (no wrapping: both ends are hit in 256 draws rarely,
  // but every value is a valid u8 and the spread covers the byte).
  double lo = 1e9, hi = -1e9;
  for (int i = 0; i < 256; ++i) lo = std::min(lo, in.at("U").get(i)), hi = std::max(hi, in.at("U").get(i));
  EXPECT_GE(lo, 0);
  EXPECT_LE(hi, 255);
  EXPECT_GT(hi - lo, 200);
  // i32 in [0, 1e30]: [0, 2^31 - 1].
  for (int i = 0; i < 64; ++i) EXPECT_GE(in.at("I").get(i), 0);
  EXPECT_NO_THROW(run_interp(*f, in));
}

TEST(InterpRobustness, RangeErrors) {
  EXPECT_EQ(random_error(func(R"(func f(A: i32[4] in [0.5, 0.7]) -> (B: i32[4]) {
  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] } }
})",
                              "f")),
            "parameter A: value range [0.5, 0.7] holds no i32 value");
  EXPECT_EQ(random_error(func(R"(func f(A: u8[4] in [-9, -1]) -> (B: u8[4]) {
  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] } }
})",
                              "f")),
            "parameter A: value range [-9, -1] holds no u8 value");
  EXPECT_EQ(random_error(func(R"(func f(A: f32[4] in [-inf, inf]) -> (B: f32[4]) {
  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] } }
})",
                              "f")),
            "parameter A: value range [-inf, inf] is not finite (random values need finite ends)");
}

TEST(InterpRobustness, WideFloatRangeStaysFinite) {
  Function f = func(R"(func f(A: f64[32] in [-1e308, 1e308]) -> (B: f64[32]) {
  for i in serial(32) { block b(vi: spatial(32) = i) { B[vi] = A[vi] } }
})",
                    "f");
  ArgMap in = random_inputs(*f, 3);
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isfinite(in.at("A").get(i))) << i;
}

// A float range that holds no value of the dtype but lies between two neighbouring values (a point
// range like `eps: f32 in [1e-5, 1e-5]`) draws the dtype's values nearest to the range (outsider
// round 15: "holds no finite f32 value"). Every draw is one of the two neighbours, the nearest to
// a point; negative ranges and ranges next to 0 step the bit pattern the right way.
TEST(InterpRobustness, RangeBetweenTwoDtypeValuesDrawsTheNearest) {
  Function f = func(R"(func f(a: f32 in [1e-5, 1e-5], b: f16 in [-0.1, -0.1], c: bf16 in [1e-41, 1e-41],
    d: f64 in [0.1, 0.1], H: f16[64] in [0.10001, 0.10002], N: f16[64] in [-0.10002, -0.10001],
    Z: f16[64] in [1e-9, 2e-9]) -> (B: f32[1]) {
  B[0] = a
})",
                    "f");
  for (uint64_t seed : {0, 1, 2}) {
    ArgMap in = random_inputs(*f, seed);
    EXPECT_EQ(in.at("a").get(0), static_cast<double>(1e-5f));
    EXPECT_EQ(in.at("b").get(0), -0.0999755859375);  // the f16 nearest -0.1
    EXPECT_EQ(in.at("c").get(0), 0.0);               // below bf16's smallest subnormal / 2
    EXPECT_EQ(in.at("d").get(0), 0.1);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(in.at("H").get(i), 0.10003662109375) << i;
      EXPECT_EQ(in.at("N").get(i), -0.10003662109375) << i;
      EXPECT_EQ(in.at("Z").get(i), 0.0) << i;  // f16's smallest subnormal is 6e-8
    }
  }
  // A range that does hold dtype values still draws only those (0.1 rounds outside [0.1, 4]).
  Function g = func(R"(func g(S: f16[256] in [0.1, 4]) -> (B: f32[1]) {
  B[0] = 0.0
})",
                    "g");
  ArgMap in = random_inputs(*g, 5);
  for (int i = 0; i < 256; ++i) EXPECT_GE(in.at("S").get(i), 0.1) << i;
}

TEST(InterpRobustness, NegativeAllocSizeHasAPosition) {
  Function f = func(R"(func f(n: i32, A: f32[4]) -> (B: f32[4]) {
  alloc T: f32[n]
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      alloc U: f32[n + 1]
      U[0] = A[vi]
      B[vi] = U[0]
    }
  }
})",
                    "f");
  auto err = [&](int n) -> std::string {
    ArgMap in;
    in["n"] = NDArray(DType::I32, {});
    in["n"].set(0, n);
    try {
      run_interp(*f, random_inputs(*f, 1, in));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(err(-1), "r.tir:1:6: error: block \"root\": alloc buffer T has a negative extent -1");
  EXPECT_EQ(err(1), "(no error)");
}

}  // namespace
}  // namespace tirc

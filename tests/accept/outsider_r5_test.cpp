// Acceptance round 5 (outsider): LANGUAGE.md / CLI.md sentences that rounds 1-4 left out, each
// checked through the tirc binary: literals adopting the dtype of the other operand inside
// nested expressions (f16, bf16, i64, u8) against NumPy / PyTorch, f16 and bf16 intrinsics
// against NumPy float16 / torch.bfloat16, integer semantics of i8/u16/u32/i64 against NumPy,
// `if_then_else` guarding only its taken arm, block-local allocs of one name in sibling blocks,
// exact stats of a reduction's init under a `where`, printing of `serial(lo, hi)` with a
// symbolic start, .npy headers as other writers format them, random inputs (ranges, seeds),
// scalar values on the command line, options before the file, reductions whose reduce var
// runs backwards, zero-size runs and check-grad at a kink.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {
namespace fs = std::filesystem;

std::string input_dir() { return scratch_dir("r5_inputs"); }

std::string save(const std::string& name, DType t, const std::vector<double>& v) {
  NDArray a(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), v[i]);
  std::string p = input_dir() + name + ".npy";
  write_npy(p, a);
  return p;
}

// Integer arrays are written through their own type (i64 values beyond 2^53 are exact).
template <typename T>
std::string save_ints(const std::string& name, DType t, const std::vector<T>& v) {
  NDArray a(t, {static_cast<int64_t>(v.size())});
  std::memcpy(a.data(), v.data(), v.size() * sizeof(T));
  std::string p = input_dir() + name + ".npy";
  write_npy(p, a);
  return p;
}

std::string one_block(const std::string& params, const std::string& body) {
  return "func f(" + params + ") {\n  for i in serial(4) {\n    block b(vi: spatial(4) = i) { " + body +
         " }\n  }\n}\n";
}

// LANGUAGE.md: "a literal adopts the dtype of the other operand (an integer literal in a float
// context becomes that float)", in nested expressions `x * 2 + 1`; a literal-only expression is
// typed by the store target. Values from NumPy (float16, int64, uint8) and torch.bfloat16.
TEST(AcceptR5, LiteralAdoptsTheOperandDtype) {
  const std::string script =
      "func f16op(X: f16[4]) -> (Y: f16[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { Y[vi] = X[vi] * 2 + 1 } }\n"
      "}\n"
      "func bfop(X: bf16[4]) -> (Y: bf16[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { Y[vi] = X[vi] * 2 + 1.1 } }\n"
      "}\n"
      "func i64op(X: i64[4]) -> (Y: i64[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { Y[vi] = X[vi] * 3000000 + 1 } }\n"
      "}\n"
      "func u8op(X: u8[4]) -> (Y: u8[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { Y[vi] = X[vi] * 200 + 100 } }\n"
      "}\n"
      "func lit() -> (B: f32[2], C: i32[3], D: f64[1]) {\n"
      "  block b() {\n"
      "    B[0] = 1 / 3\n"
      "    B[1] = -7 // 2\n"
      "    C[0] = -7 // 2\n"
      "    C[1] = -7 % 3\n"
      "    C[2] = 7 // 2 * 3 % 4\n"
      "    D[0] = 1 / 3\n"
      "  }\n"
      "}\n";
  std::string x16 = save("x16", DType::F16, {1.5, -3.25, 60000, 0.1});
  std::string xbf = save("xbf", DType::BF16, {1.5, -3.25, 60000, 0.1});
  std::string xi = save_ints<int64_t>("xi64", DType::I64, {int64_t(1) << 40, -5, 3000000000, 7});
  std::string xu = save_ints<uint8_t>("xu8", DType::U8, {0, 1, 2, 255});
  struct Case {
    const char* func;
    std::string input, want;
  } cases[] = {
      // np.float16: x * 2 + 1 = [4, -5.5, inf, 1.2]
      {"f16op", x16, "Y: f16[4] sum=inf first=[4, -5.5, inf, 1.2002]\n"},
      // torch.bfloat16: x * 2 + 1.1 = [4.0938, -5.4062, 1.1981e+05, 1.3047]
      {"bfop", xbf, "Y: bf16[4] sum=119808 first=[4.09375, -5.40625, 119808, 1.30469]\n"},
      {"i64op", xi,
       "Y: i64[4] sum=3307534883334000004 first=[3298534883328000001, -14999999, 9000000000000001, "
       "21000001]\n"},
      // np.uint8 wraps: [100, 44, 244, 156]
      {"u8op", xu, "Y: u8[4] sum=544 first=[100, 44, 244, 156]\n"},
  };
  for (auto& c : cases) {
    CliRun r = run(std::string("run - --func ") + c.func + " --input X=" + c.input, script);
    EXPECT_EQ(r.code, 0) << c.func << r.err;
    EXPECT_EQ(r.out, c.want) << c.func;
  }
  CliRun r = run("run - --func lit --output D=%/d.npy", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "B: f32[2] sum=-3.66667 first=[0.333333, -4]\n"
            "C: i32[3] sum=-1 first=[-4, 2, 1]\n"
            "D: f64[1] sum=0.333333 first=[0.333333]\n");
  EXPECT_EQ(read_npy(tmp() + "d.npy").get(0), 1.0 / 3.0);  // computed in f64, not f32

  // Mixed types name both types at the operator; `/` on integers; literals that do not fit.
  struct Err {
    std::string params, body, msg;
  } errs[] = {
      {"A: f32[4], B: i32[4]) -> (C: f32[4]", "C[vi] = A[vi] * 2 + B[vi]",
       "<stdin>:3:53: error: type mismatch: f32 + i32"},
      {"A: f16[4]) -> (C: f16[4]", "C[vi] = A[vi] * 2.5 + A[vi] / 3 - f16(vi) * 1.5 + f32(A[vi])",
       "<stdin>:3:83: error: type mismatch: f16 + f32"},
      {"A: i32[4]) -> (C: i32[4]", "C[vi] = (A[vi] + 1) / 2",
       "<stdin>:3:55: error: '/' is float division and is not defined on i32; use // for integer division"},
      {"A: f32[4]) -> (C: i32[4]", "C[vi] = 1 / 3",
       "<stdin>:3:45: error: '/' is float division and is not defined on i32; use // for integer division"},
      {"A: u8[4]) -> (C: u8[4]", "C[vi] = A[vi] + 256",
       "<stdin>:3:51: error: integer literal 256 does not fit in u8"},
  };
  for (auto& e : errs) {
    CliRun p = run("parse -", one_block(e.params, e.body));
    EXPECT_EQ(p.code, 2) << e.body;
    EXPECT_EQ(p.out, "");
    EXPECT_EQ(p.err, e.msg + "\n");
  }
}

// f16 arithmetic and intrinsics round every operation to half (np.float16), bf16 likewise
// (torch.bfloat16): exp, log, sqrt, tanh, sin, pow, /, round, and a literal in a chain.
TEST(AcceptR5, HalfIntrinsicsMatchNumPyAndTorch) {
  const std::string body =
      "(X: T[6], P: T[6]) -> (Y: T[6, 8]) {\n"
      "  for i, j in grid(6, 1) {\n"
      "    block b(vi: spatial(6) = i) {\n"
      "      Y[vi, 0] = exp(X[vi])\n"
      "      Y[vi, 1] = log(P[vi])\n"
      "      Y[vi, 2] = sqrt(P[vi])\n"
      "      Y[vi, 3] = tanh(X[vi])\n"
      "      Y[vi, 4] = sin(X[vi] * 10)\n"
      "      Y[vi, 5] = pow(P[vi], X[vi])\n"
      "      Y[vi, 6] = X[vi] / P[vi]\n"
      "      Y[vi, 7] = round(X[vi] * 3) + X[vi] * P[vi] - 1\n"
      "    }\n"
      "  }\n"
      "}\n";
  auto with = [&](const std::string& t) {
    std::string s = "func h" + body;
    for (size_t p; (p = s.find("T[")) != std::string::npos;) s.replace(p, 1, t);
    return s;
  };
  const std::vector<double> x = {-2.5, -0.3, 0, 0.7, 1.9, 2.9}, p = {0.05, 0.5, 1, 3.3, 4.9, 0.2};
  CliRun r = run(
      "run - --show 48 --input X=" + save("hx", DType::F16, x) + " --input P=" + save("hp", DType::F16, p),
      with("f16"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "Y: f16[6, 8] sum=1827.48 first=[0.0820923, -2.99609, 0.223633, -0.986816, 0.132324, 1790, -50, "
      "-9.125, 0.740723, -0.693359, 0.707031, -0.29126, -0.141113, 1.23145, -0.600098, -2.15039, 1, 0, 1, 0, "
      "0, 1, 0, -1, 2.01367, 1.19434, 1.81641, 0.604492, 0.657227, 2.30664, 0.212158, 3.3125, 6.6875, "
      "1.58887, 2.21289, 0.956055, 0.149902, 20.4844, 0.387939, 14.3125, 18.1875, -1.60938, 0.447266, "
      "0.994141, -0.663574, 0.00938416, 14.5078, 8.57812]\n");
  r = run(
      "run - --show 48 --input X=" + save("bx", DType::BF16, x) + " --input P=" + save("bp", DType::BF16, p),
      with("bf16"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "Y: bf16[6, 8] sum=1821.52 first=[0.0820312, -3, 0.223633, -0.988281, 0.132812, 1784, -50, -9.125, "
      "0.742188, -0.691406, 0.707031, -0.292969, -0.141602, 1.23438, -0.601562, -2.15625, 1, 0, 1, 0, 0, 1, "
      "0, -1, 2.01562, 1.19531, 1.8125, 0.605469, 0.65625, 2.29688, 0.211914, 3.3125, 6.6875, 1.59375, "
      "2.21875, 0.957031, 0.149414, 20.5, 0.386719, 14.3125, 18.25, -1.60938, 0.447266, 0.992188, "
      "-0.664062, 0.00933838, 14.5, 8.5625]\n");
}

// Integer semantics against NumPy: i8 wrap, floor // and % by negatives, truncdiv/truncmod,
// abs/sign, u16/u32 wrap, float -> int casts that truncate, saturate (also to i64) and map NaN
// to 0, bool() of floats, i64 products.
TEST(AcceptR5, IntegerOpsMatchNumPy) {
  const std::string script =
      "func ints(A: i8[6], U: u16[6], W: u32[6], F: f32[6]) -> (OA: i8[6], OU: u16[6], OW: u32[6], OC: "
      "u8[6], "
      "OI: i32[6], OS: i16[6], OB: bool[6], OL: i64[6]) {\n"
      "  for i in serial(6) {\n"
      "    block b(vi: spatial(6) = i) {\n"
      "      OA[vi] = A[vi] * 3 - -128 + abs(A[vi]) + sign(A[vi]) + A[vi] // -3 + A[vi] % -3 + "
      "truncdiv(A[vi], -3) + "
      "truncmod(A[vi], 5)\n"
      "      OU[vi] = U[vi] * U[vi] - 7 + U[vi] // 3 + max(U[vi], 40000) % 1000\n"
      "      OW[vi] = W[vi] * 3000000000 + W[vi] // 7 - 1\n"
      "      OC[vi] = u8(F[vi]) + u8(A[vi])\n"
      "      OI[vi] = i32(F[vi]) + i32(round(F[vi])) * 10 + i32(floor(F[vi])) * 100 + i32(ceil(F[vi])) * "
      "1000\n"
      "      OS[vi] = i16(F[vi] * 10000.0) + i16(U[vi])\n"
      "      OB[vi] = bool(F[vi]) && F[vi] >= -0.0 || bool(A[vi]) == false\n"
      "      OL[vi] = i64(W[vi]) * i64(A[vi]) + i64(F[vi] * 1e12)\n"
      "    }\n"
      "  }\n"
      "}\n";
  std::string in =
      " --input A=" + save_ints<int8_t>("A", DType::I8, {-128, 127, -7, 0, 5, -1}) +
      " --input U=" + save_ints<uint16_t>("U", DType::U16, {0, 65535, 300, 40001, 7, 256}) +
      " --input W=" + save_ints<uint32_t>("W", DType::U32, {0, 4294967295u, 7, 123456789, 2, 1}) +
      " --input F=" + save("F", DType::F32, {-2.5, NAN, 1e10, -0.0, 2.5, -1e10});
  CliRun r = run("run -" + in, script);
  ASSERT_EQ(r.code, 0) << r.err;
  // NumPy (OL[2]: 7 * -7 + the saturated i64(1e22) = 9223372036854775807 - 49).
  EXPECT_EQ(r.out,
            "OA: i8[6] sum=-12 first=[-50, 40, 114, -128, -111, 123]\n"
            "OU: u16[6] sum=144470 first=[65529, 22374, 24557, 31888, 44, 78]\n"
            "OW: u32[6] sum=18778974827 first=[4294967295, 1908534051, 3820130816, 4050309963, 1705032703, "
            "2999999999]\n"
            "OC: u8[6] sum=765 first=[128, 127, 248, 0, 7, 255]\n"
            "OI: i32[6] sum=-211 first=[-2322, 0, 2147482537, 0, 3222, -2147483648]\n"
            "OS: i16[6] sum=-90510 first=[-25000, -1, -32469, -25535, 25007, -32512]\n"
            "OB: bool[6] sum=3 first=[0, 0, 1, 1, 1, 0]\n"
            "OL: i64[6] sum=545460846424 first=[-2499999956992, 545460846465, 9223372036854775758, 0, "
            "2499999957002, "
            "9223372036854775807]\n");
}

// LANGUAGE.md: `if_then_else` evaluates only the taken arm (an out-of-bounds load in the other
// arm is not an error, on either side); `select` evaluates both.
TEST(AcceptR5, IfThenElseGuardsOnlyTheTakenArm) {
  std::string a = save("a1234", DType::F32, {1, 2, 3, 4});
  CliRun r = run("run - --input A=" + a,
                 "func g(A: f32[4]) -> (B: f32[4]) {\n"
                 "  for i in serial(4) {\n"
                 "    block b(vi: spatial(4) = i) {\n"
                 "      B[vi] = if_then_else(vi >= 1, A[vi - 1], 0.0) + if_then_else(vi < 3, A[vi + 1], A[vi "
                 "- 3] * 2.0)\n"
                 "    }\n"
                 "  }\n"
                 "}\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=17 first=[2, 4, 6, 5]\n");
  r = run("run - --input A=" + a,
          "func g(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) {\n"
          "    block b(vi: spatial(4) = i) {\n"
          "      B[vi] = select(vi < 3, A[vi + 1], 0.0)\n"
          "    }\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "<stdin>:4:7: error: block \"b\": out-of-bounds load A[4]: A has shape [4]\n");
}

// LANGUAGE.md: `alloc` is "local to the enclosing func / block": sibling blocks (and sibling
// loop bodies) may each allocate a buffer named T. Found: "duplicate buffer 'T'". A buffer
// still cannot be allocated under the name of a visible one.
TEST(AcceptR5, SiblingBlocksAllocateTheSameName) {
  const std::string script =
      "func two(A: f32[4]) -> (B: f32[4]) {\n"
      "  for i in serial(4) { block x(vi: spatial(4) = i) { alloc T: f32[1]; T[0] = A[vi]; B[vi] = T[0] } }\n"
      "  for i in serial(4) { block y(vi: spatial(4) = i) { alloc T: f32[2]; T[1] = B[vi]; B[vi] = T[1] * "
      "2.0 } }\n"
      "}\n"
      "func loops(A: f32[4]) -> (B: f32[4]) {\n"
      "  block r() {\n"
      "    for i in serial(4) { alloc T: f32[4]; block x(vi: spatial(4) = i) { T[vi] = A[vi] } "
      "block x2(vi: spatial(4) = i) { B[vi] = T[vi] } }\n"
      "    for i in serial(4) { alloc T: f32[4]; block y(vi: spatial(4) = i) { T[vi] = B[vi] } "
      "block y2(vi: spatial(4) = i) { B[vi] = T[vi] * 3.0 } }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --func two --input A=1.5", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=12 first=[3, 3, 3, 3]\n");
  r = run("run - --func loops --input A=1.5", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=18 first=[4.5, 4.5, 4.5, 4.5]\n");
  // Printed with distinct names; a fixpoint that runs the same.
  r = run("parse -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("      alloc T: f32[1]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("      alloc T_1: f32[2]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    alloc T: f32[4]\n    alloc T_1: f32[4]\n"), std::string::npos) << r.out;
  std::string printed = r.out;
  r = run("parse -", printed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, printed);
  r = run("run - --func loops --input A=1.5", printed);
  EXPECT_EQ(r.out, "B: f32[4] sum=18 first=[4.5, 4.5, 4.5, 4.5]\n");
  r = run("check-grad - --func two", script);
  expect_passed(r, 1);
  // Shadowing a visible buffer (a function-level alloc, a parameter) is still refused.
  r = run("parse -",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  alloc T: f32[4]\n"
          "  for i in serial(4) { block y(vi: spatial(4) = i) { alloc T: f32[2]; B[vi] = A[vi] } }\n"
          "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:3:60: error: duplicate buffer 'T'\n");
  r = run("parse -",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) { block y(vi: spatial(4) = i) { alloc A: f32[2]; B[vi] = 1.0 } }\n"
          "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:2:60: error: duplicate buffer 'A'\n");
}

// `tirc stats`: a reduction's init runs where every reduce var is 0, so under a `where` it runs
// once per surviving row: whole numbers, the same statically and with --dynamic. Found: init
// stores were iterations / reduce extent (D: 40.5 stores).
TEST(AcceptR5, StatsInitUnderWhereIsWhole) {
  const std::string script =
      "func mm(n: i32, A: f32[n, 16], B: f32[16, 8]) -> (C: f32[n, 8], D: f32[n]) {\n"
      "  for i, j, k in grid(n, 8, 16) {\n"
      "    block C(vi: spatial(n) = i, vj: spatial(8) = j, vk: reduce(16) = k) {\n"
      "      init { C[vi, vj] = 0.0 }\n"
      "      C[vi, vj] += A[vi, vk] * B[vk, vj]\n"
      "    }\n"
      "  }\n"
      "  for i in serial(n) {\n"
      "    for j in serial(8) {\n"
      "      block D(vi: spatial(n) = i, vj: reduce(8) = j) {\n"
      "        where j % 2 == 0 && i < n - 1\n"
      "        init { D[vi] = 0.0 }\n"
      "        D[vi] = max(D[vi], exp(C[vi, vj]) / 2.0)\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  // D: 9 rows x 4 even columns = 36 body runs (3 FLOPs, 2 loads, 1 store each) + 9 inits.
  const std::string table =
      "block                    iterations          flops          loads         stores          bytes\n"
      "C                              1280           2560           3840           1360          20800\n"
      "D                                36            108             72             45            468\n"
      "total                          1316           2668           3912           1405          21268\n";
  CliRun r = run("stats - --input n=10", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, table);
  r = run("stats - --input n=10 --dynamic", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, table);
  r = run("stats - --input n=10 --json", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"stores\": 1405\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"stores\": 45\n"), std::string::npos) << r.out;
  // A reduce var bound backwards (7 - k): its init runs at k = 7, still once per row.
  r = run("stats -",
          "func rev(A: f32[4, 8]) -> (C: f32[4]) {\n"
          "  for i, k in grid(4, 8) {\n"
          "    block s(vi: spatial(4) = i, vk: reduce(8) = 7 - k) {\n"
          "      init { C[vi] = 0.0 }\n"
          "      C[vi] += A[vi, vk]\n"
          "    }\n"
          "  }\n"
          "}\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\ns                                32             32             64             36   "
                       "         400\n"),
            std::string::npos)
      << r.out;
}

// LANGUAGE.md: init runs at the point where every reduce var equals 0: with the reduce var
// bound to `7 - k` the first iterations read the output before the init wrote it (an error that
// names the element); scan vars must run in increasing order. A reduction with the reduce
// loop outside the spatial loop is fine.
TEST(AcceptR5, ReductionOrder) {
  const std::string script =
      "func rev(A: f32[4, 8]) -> (C: f32[4]) {\n"
      "  for i, k in grid(4, 8) {\n"
      "    block s(vi: spatial(4) = i, vk: reduce(8) = 7 - k) {\n"
      "      init { C[vi] = 0.0 }\n"
      "      C[vi] += A[vi, vk]\n"
      "    }\n"
      "  }\n"
      "}\n"
      "func outer_k(A: f32[4, 8]) -> (C: f32[4]) {\n"
      "  for k, i in grid(8, 4) {\n"
      "    block s(vi: spatial(4) = i, vk: reduce(8) = k) {\n"
      "      init { C[vi] = 0.0 }\n"
      "      C[vi] += A[vi, vk]\n"
      "    }\n"
      "  }\n"
      "}\n";
  const std::string scan_rev =
      "func scan_rev(A: f32[8]) -> (C: f32[8]) {\n"
      "  for k in serial(8) {\n"
      "    block s(vk: scan(8) = 7 - k) {\n"
      "      C[vk] = if_then_else(vk == 0, A[vk], C[vk - 1] + A[vk])\n"
      "    }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --func rev --input A=1", script);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:5:7: error: block \"s\": read of uninitialised element C[0] of output buffer C\n");
  r = run("run - --func outer_k --input A=0.5", script);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "C: f32[4] sum=16 first=[4, 4, 4, 4]\n");
  // A decreasing scan binding is refused where it is written (it was a run-time error at the
  // first read of a later step's element).
  r = run("run - --func scan_rev --input A=1", scan_rev);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:3:27: error: scan iter var vk of block 's' decreases along loop k: scan iterations run "
            "in increasing order (to run a recurrence backwards, bind vk increasing and index the buffers at "
            "(N - 1 - vk))\n");
}

// Printing `serial(lo, hi)` with a symbolic start gives back what was written (it printed
// `serial(n // 2, n // 2 + (n - n // 2))`); the text is a fixpoint and runs the same.
TEST(AcceptR5, PrintSymbolicLoopStart) {
  const std::string script =
      "func sym(n: i32, A: f32[n, n]) -> (B: f32[n]) {\n"
      "  for i in serial(n // 2, n) {\n"
      "    for j in serial(n) {\n"
      "      block b(vi: spatial(n) = i, vj: reduce(n) = j) {\n"
      "        init { B[vi] = 0.0 }\n"
      "        for k in serial(vj, n) { B[vi] = B[vi] + A[vi, k] * 0.5 }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  CliRun r = run("parse -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  for i in serial(n // 2, n) {\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("        for k in serial(vj, n) {\n"), std::string::npos) << r.out;
  std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  // Rows 2..3 of n = 4: sum over vj of (4 - vj) halves = 5 per row.
  r = run("run - --input n=4 --input A=1", printed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=10 first=[0, 0, 5, 5]\n");
}

// .npy headers as other writers format them (cnpy: a trailing ", }"; no blanks; keys in
// another order; double quotes; Python 2's `3L`): the header is a Python dict literal. Bytes
// missing at the end are an error naming the file.
TEST(AcceptR5, NpyHeadersFromOtherWriters) {
  auto write = [](const std::string& name, const std::string& dict, size_t data_bytes) {
    std::string h = dict;
    size_t total = 10 + h.size() + 1;
    h += std::string((64 - total % 64) % 64, ' ') + "\n";
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(h.size() & 0xff);
    bytes += static_cast<char>(h.size() >> 8);
    bytes += h;
    const float v[3] = {0.5f, 1.5f, -2.0f};
    bytes.append(reinterpret_cast<const char*>(v), data_bytes);
    std::string p = input_dir() + name + ".npy";
    write_file(p, bytes);
    return p;
  };
  const std::string script =
      "func c(A: f32[3]) -> (B: f32[3]) { for i in serial(3) { block b(vi: spatial(3) = i) { B[vi] = A[vi] } "
      "} }\n";
  const char* dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
      "{'descr':'<f4','fortran_order':False,'shape':(3,)}",
      "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}",
  };
  int k = 0;
  for (const char* d : dicts) {
    CliRun r = run("run - --input A=" + write("hdr" + std::to_string(k++), d, 12), script);
    EXPECT_EQ(r.code, 0) << d << r.err;
    EXPECT_EQ(r.out, "B: f32[3] sum=0 first=[0.5, 1.5, -2]\n") << d;
  }
  std::string cut = write("cut", dicts[0], 8);
  CliRun r = run("run - --input A=" + cut, script);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: " + cut + ": truncated .npy data (8 bytes, expected 12)\n");
}

// `--random SEED`: reproducible, one seed differs from another, integer ranges include both
// ends, defaults [0, 9] for integers and [-1, 1] for floats, ranges intersected with nothing
// else. A seed that is not a non-negative integer is a usage error (`--random -1` used to be
// read as 2^64 - 1, and 99999999999999999999 saturated to the same seed).
TEST(AcceptR5, RandomInputsRangesAndSeeds) {
  const std::string script =
      "func r(I: i32[1000] in [-2, 2], U: u8[1000], F: f64[1000] in [-1e-3, 1e-3], G: f32[1000], "
      "S: i64[1000] in [-9000000000, -8999999990]) -> (O: i32[1]) {\n"
      "  block b() { O[0] = I[0] }\n"
      "}\n";
  auto draw = [&](const std::string& seed) {
    CliRun r = run("run - --random " + seed + " --dump %/d", script);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<NDArray> v;
    for (auto* n : {"I", "U", "F", "G", "S"}) v.push_back(read_npy(tmp() + "d/in_" + n + ".npy"));
    return v;
  };
  std::vector<NDArray> a = draw("7"), b = draw("7"), c = draw("8");
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(std::memcmp(a[k].data(), b[k].data(), a[k].nbytes()), 0) << k;
    EXPECT_NE(std::memcmp(a[k].data(), c[k].data(), a[k].nbytes()), 0) << k;
  }
  auto values = [](const NDArray& x) {
    std::set<double> s;
    for (int64_t i = 0; i < x.numel(); ++i) s.insert(x.get(i));
    return s;
  };
  EXPECT_EQ(values(a[0]), (std::set<double>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(values(a[1]), (std::set<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_LE(std::abs(a[2].get(i)), 1e-3);
    ASSERT_LE(std::abs(a[3].get(i)), 1.0);
  }
  EXPECT_EQ(a[2].dtype(), DType::F64);
  std::set<int64_t> s;
  for (int64_t i = 0; i < 1000; ++i) s.insert(a[4].ptr<int64_t>()[i]);
  EXPECT_EQ(s.size(), 11u);
  EXPECT_EQ(*s.begin(), -9000000000);
  EXPECT_EQ(*s.rbegin(), -8999999990);
  for (const char* bad : {"-1", "99999999999999999999", "1.5", "x"}) {
    CliRun r = run(std::string("run - --random ") + bad, script);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("--random: must be an integer in [0, 18446744073709551615], got ") + bad +
                         "\nRun with --help for more information.\n");
  }
  CliRun r = run("check-grad - --seed -3", "func f(A: f32[2]) -> (B: f32[2]) { B[0] = A[0] B[1] = A[1] }\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--seed: must be an integer in [0, 18446744073709551615], got -3"), std::string::npos)
      << r.err;
}

// Scalar values on the command line (`--input n=16`): Python's spellings of bools and floats,
// an explicit `+`, inf; integers that do not fit their dtype say so.
TEST(AcceptR5, ScalarValuesOnTheCommandLine) {
  const std::string script =
      "func f(c: bool, n: i32, x: f32, h: f16, u: u8, l: i64) -> (B: f32[6]) {\n"
      "  block b() { B[0] = f32(c); B[1] = f32(n); B[2] = x; B[3] = f32(h); B[4] = f32(u); B[5] = f32(l) }\n"
      "}\n";
  CliRun r = run(
      "run - --input c=True --input n=+5 --input x=-inf --input h=70000 --input u=255 --input l=-9000000000",
      script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[6] sum=nan first=[1, 5, -inf, inf, 255, -9e+09]\n");
  r = run("run - --input c=false --input n=0 --input x=1e-3 --input h=0.1 --input u=0 --input l=1", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[6] sum=1.10098 first=[0, 0, 0.001, 0.0999756, 0, 1]\n");
  struct Bad {
    const char *arg, *msg;
  } bad[] = {
      {"l=9223372036854775808", "tirc: error: parameter l: 9223372036854775808 is out of range for i64\n"},
      {"n=2147483648", "tirc: error: parameter n: 2147483648 is out of range for i32\n"},
      {"u=-1", "tirc: error: parameter u: -1 is out of range for u8\n"},
      {"n=1e3", "tirc: error: parameter n: '1e3' is not an integer\n"},
      {"c=2", "tirc: error: parameter c: '2' is not a bool (true/false)\n"},
      {"x=", "tirc: error: parameter x: '' is not a number\n"},
  };
  for (auto& b : bad) {
    std::string all = "c=0 n=1 x=1 h=1 u=1 l=1", args;
    std::string name = std::string(b.arg).substr(0, 1);
    for (auto* kv : {"c=0", "n=1", "x=1", "h=1", "u=1", "l=1"})
      args += std::string(" --input ") + (std::string(kv).substr(0, 1) == name ? b.arg : kv);
    r = run("run -" + args, script);
    EXPECT_EQ(r.code, 2) << b.arg;
    EXPECT_EQ(r.err, b.msg);
  }
}

// Options may come before the file (as users type `tirc run --func f --input A=1 file`), and
// `-` reads standard input for every subcommand.
TEST(AcceptR5, OptionsBeforeTheFile) {
  const std::string script =
      "func c(A: f32[3]) -> (B: f32[3]) { for i in serial(3) { block b(vi: spatial(3) = i) { B[vi] = A[vi] * "
      "A[vi] "
      "} } }\n";
  CliRun r = run("run --func c --input A=2 -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=12 first=[4, 4, 4]\n");
  r = run("check-grad --func c --wrt A --input A=2 -", script);
  expect_passed(r, 1);
  r = run("stats --json -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"flops\": 3,"), std::string::npos) << r.out;
  r = run("grad --wrt A -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("func c_grad(A: f32[3], B_grad: f32[3]) -> (A_grad: f32[3]) {"), std::string::npos)
      << r.out;
  // An unknown option before the subcommand names the option (it said "A subcommand is required").
  r = run("--bogus run -", script);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: unknown option '--bogus' before the subcommand (usage: tirc SUBCOMMAND FILE "
            "[OPTIONS]; see "
            "tirc --help)\n");
}

// Sizes that are 0 at run time (a symbolic `n`): nothing runs, outputs are empty arrays.
TEST(AcceptR5, ZeroSizeRuns) {
  const std::string script =
      "func f(n: i64, A: f32[n]) -> (B: f32[n]) {\n"
      "  for i in serial(n) { block b(vi: spatial(n) = i) { B[vi] = A[vi] + f32(vi) } }\n"
      "}\n";
  CliRun r = run("run - --input n=0 --random 3 --output B=%/b.npy", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[0] sum=0 first=[]\n");
  EXPECT_EQ(read_npy(tmp() + "b.npy").shape(), std::vector<int64_t>{0});
  r = run("stats - --input n=0", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\ntotal                             0              0              0              0   "
                       "           0\n"),
            std::string::npos)
      << r.out;
  // n from the size of an i64-shaped .npy input.
  r = run("run - --input A=" + save("a5", DType::F32, {0, 1, 2, 3, 4}), script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[5] sum=20 first=[0, 2, 4, 6, 8]\n");
}

// check-grad at a point where F is not differentiable (relu at 0: finite differences give
// 1/2, the gradient 0 or 1) fails with exit 1; elsewhere it passes.
TEST(AcceptR5, CheckGradAtAKink) {
  const std::string script =
      "func relu(X: f32[8]) -> (Y: f32[8]) {\n"
      "  for i in serial(8) { block b(vi: spatial(8) = i) { Y[vi] = max(X[vi], 0.0) } }\n"
      "}\n";
  CliRun r = run("check-grad - --input X=0", script);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0 passed, 1 failed\n"), std::string::npos) << r.out;
  r = run("check-grad - --input X=0 --json", script);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("\"failed\": 1,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"passed\": false"), std::string::npos) << r.out;
  r = run("check-grad - --input X=0.25", script);
  expect_passed(r, 1);
}

// LANGUAGE.md reserves neither `true` nor loop kinds, iter-var kinds or intrinsic names: a
// function `serial` with parameters `exp`, `true`, `false` and an output `select`. Printing keeps
// the parameter names (they are the function's interface: `--input true=1` must work on the
// printed text; `true` used to print as `true_1`) and writes the literal as `bool(1)` there.
TEST(AcceptR5, NamesThatLookLikeWords) {
  const std::string script =
      "func serial(exp: f32[4], true: i32, false: bool) -> (select: f32[4], W: bool[4]) {\n"
      "  for spatial in serial(4) {\n"
      "    block reduce(serial: spatial(4) = spatial) {\n"
      "      where true > 0 && (false || !false)\n"
      "      select[serial] = f32(true) + exp(exp[serial])\n"
      "      W[serial] = select(false, true == 1, false) && True\n"
      "    }\n"
      "  }\n"
      "}\n";
  const std::string in = " --input exp=0 --input true=2 --input false=true";
  CliRun r = run("run -" + in, script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "select: f32[4] sum=12 first=[3, 3, 3, 3]\nW: bool[4] sum=0 first=[0, 0, 0, 0]\n");
  r = run("parse -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("func serial(exp: f32[4], true: i32, false: bool) -> (select: f32[4], W: bool[4]) {\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      W[serial] = select(false, true == 1, false) && bool(1)\n"), std::string::npos)
      << r.out;
  std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  r = run("run -" + in, printed);
  EXPECT_EQ(r.out, "select: f32[4] sum=12 first=[3, 3, 3, 3]\nW: bool[4] sum=0 first=[0, 0, 0, 0]\n")
      << r.err;
}

// CLI.md: errors in a script carry FILE:LINE:COL. A block that `tirc grad` / `tirc check-grad`
// cannot differentiate is reported at its `block` keyword (it was `tirc: error: block b: ...`).
TEST(AcceptR5, NotDifferentiableBlockIsPositioned) {
  const std::string script =
      "func f(A: f32[4]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      B[vi] = A[vi]\n"
      "      call_extern(\"ext\", A.ptr(vi), B.data)\n"
      "    }\n"
      "  }\n"
      "}\n";
  for (const char* cmd : {"grad -", "check-grad -"}) {
    CliRun r = run(cmd, script);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(r.err.rfind("<stdin>:3:5: error: block b: ", 0), 0u) << cmd << ": " << r.err;
  }
  // A usage error (no such buffer) stays a plain message.
  CliRun r = run("grad - --wrt Q", script);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("tirc: error: gradient of f: --wrt Q ", 0), 0u) << r.err;
}

// Value ranges of integer parameters print as integers up to i64's limits (they printed
// `9223372036854775808.0`) and read back to the same ranges; random draws stay inside.
TEST(AcceptR5, IntegerRangeEndsPrintAsIntegers) {
  const std::string script =
      "func f(S: i64[64] in [-9223372036854775808, 9223372036854775807], U: u32[64] in [0, 4294967295], "
      "k: i64 in [4611686018427387904, 4611686018427387904]) -> (B: i64[1]) {\n"
      "  block b() { B[0] = S[0] + k }\n"
      "}\n";
  const std::string header =
      "func f(S: i64[64] in [-9223372036854775808, 9223372036854775807], U: u32[64] in [0, 4294967295], "
      "k: i64 in [4611686018427387904, 4611686018427387904]) -> (B: i64[1]) {\n";
  CliRun r = run("parse -", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, header.size()), header);
  std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  r = run("run - --random 5 --dump %/d", script);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(tmp() + "d/in_k.npy").ptr<int64_t>()[0], int64_t(1) << 62);
  NDArray u = read_npy(tmp() + "d/in_U.npy");
  std::set<uint32_t> distinct(u.ptr<uint32_t>(), u.ptr<uint32_t>() + 64);
  EXPECT_GT(distinct.size(), 60u);  // drawn over the whole u32 range, not clamped
}

// CLI.md: `verify` exits 1 when its check fails. An rfactor reassociates an f32 sum: equal
// within the default tolerances, different bit for bit (--rtol 0 --atol 0).
TEST(AcceptR5, VerifyFailsWithExitOne) {
  const std::string script =
      "func s(A: f32[1024] in [0, 1]) -> (B: f32[1]) {\n"
      "  for k in serial(1024) {\n"
      "    block r(vk: reduce(1024) = k) {\n"
      "      init { B[0] = 0.0 }\n"
      "      B[0] += A[vk]\n"
      "    }\n"
      "  }\n"
      "}\n"
      "schedule s {\n"
      "  b = get_block(\"r\")\n"
      "  k, = get_loops(b)\n"
      "  k0, k1 = split(k, [_, 32])\n"
      "  rf = rfactor(k1, 0)\n"
      "}\n";
  CliRun r = run("verify - --engine interp", script);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n1 passed, 0 failed\n"), std::string::npos) << r.out;
  r = run("verify - --engine interp --rtol 0 --atol 0", script);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0 passed, 1 failed\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tirc::accept

// Acceptance round 4 (outsider): the CLI, parser and interpreter driven only from LANGUAGE.md /
// CLI.md, on what rounds 1-3 left out: .npy inputs of every dtype written by NumPy (inputs in
// cases/r4/, written by cases/r4/gen_r4.py), 0-d arrays for scalars, exact integer summaries
// (i64 beyond 2^53), integer semantics on negatives and overflow, precedence, dtype limits and
// saturating casts, f16/bf16, `&&` that does not guard a load, NumPy dtypes outside the
// contract, `--wrt` lists as users type them, `.5` literals, and failed writes of --output.
#include <gtest/gtest.h>

#include <string>

#include "runtime/ndarray.h"
#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

std::string r4_inputs(std::initializer_list<const char*> names) {
  std::string s;
  for (auto* n : names) s += std::string(" --input ") + n + "=@/r4/" + n + ".npy";
  return s;
}

// Every dtype of the contract but bf16 (below) as a NumPy .npy input and as an output that
// NumPy reads back with its dtype and shape. Found: i64 values above 2^53 were printed
// rounded through a double (9223372036854775807 as ...808), and the sum of an i64 output
// was not NumPy's (int64 accumulator, wrapping).
TEST(AcceptR4, EveryDtypeThroughNpy) {
  std::string outs;
  for (auto* n : {"Bb", "B8", "B16", "B32", "B64", "V8", "V16", "V32", "G", "E", "C"})
    outs += std::string(" --output ") + n + "=%/" + n + ".npy";
  CliRun r = run("run @/r4/dtypes_io.tir" +
                     r4_inputs({"Ab", "A8", "A16", "A32", "A64", "U8", "U16", "U32", "H", "F", "D"}) + outs,
                 "");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Bb: bool[3] sum=1 first=[0, 1, 0]\n"
            "B8: i8[3] sum=-251 first=[-128, -127, 4]\n"
            "B16: i16[3] sum=-32768 first=[-32768, -4, 4]\n"
            "B32: i32[3] sum=-2147483648 first=[-2147483648, -4, 4]\n"
            "B64: i64[3] sum=-9214364837600034818 first=[-9223372036854775808, -4, 9007199254740994]\n"
            "V8: u8[3] sum=5 first=[0, 1, 4]\n"
            "V16: u16[3] sum=5 first=[0, 1, 4]\n"
            "V32: u32[3] sum=5 first=[0, 1, 4]\n"
            "G: f16[3] sum=65509.1 first=[65504, 1.09961, 4]\n"
            "E: f32[3] sum=1e+38 first=[1e+38, 1.1, 4]\n"
            "C: f64[3] sum=1e+308 first=[1e+308, 1.1, 4]\n");
  const std::pair<const char*, DType> want[] = {{"Bb", DType::Bool}, {"B8", DType::I8},   {"B16", DType::I16},
                                                {"B32", DType::I32}, {"B64", DType::I64}, {"V8", DType::U8},
                                                {"V16", DType::U16}, {"V32", DType::U32}, {"G", DType::F16},
                                                {"E", DType::F32},   {"C", DType::F64}};
  for (auto& [n, t] : want) {
    NDArray a = read_npy(tmp() + n + ".npy");
    EXPECT_EQ(a.dtype(), t) << n;
    EXPECT_EQ(a.shape(), std::vector<int64_t>{3}) << n;
  }
  EXPECT_EQ(read_npy(tmp() + "B64.npy").ptr<int64_t>()[2], 9007199254740994);
  // NumPy's format versions 2.0 and 3.0.
  for (const char* f : {"F_v2", "F_v3"}) {
    CliRun v = run(std::string("run @/r4/dtypes_io.tir --random 1 --input F=@/r4/") + f + ".npy --show 3");
    ASSERT_EQ(v.code, 0) << v.err;
    EXPECT_NE(v.out.find("E: f32[3] sum=1e+38 first=[1e+38, 1.1, 4]\n"), std::string::npos) << v.out;
  }
}

// i64 and u32 summaries are exact (the first values and the sum).
TEST(AcceptR4, IntegerSummariesAreExact) {
  const std::string fn =
      "func big(A: i64[2], U: u32[2]) -> (B: i64[2], V: u32[2]) {\n"
      "  for i in serial(2) { block b(vi: spatial(2) = i) { B[vi] = A[vi] - i64(1)  V[vi] = U[vi] } }\n"
      "}\n";
  CliRun r = run("run - --input A=9223372036854775807 --input U=4294967295", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "B: i64[2] sum=-4 first=[9223372036854775806, 9223372036854775806]\n"
            "V: u32[2] sum=8589934590 first=[4294967295, 4294967295]\n");
}

// Scalar parameters from 0-d .npy files (NumPy's np.array(3, dtype=np.int32)); a 0-d array of
// the wrong dtype is refused like a buffer of the wrong dtype.
TEST(AcceptR4, ScalarsFromZeroDimNpy) {
  std::string base = "run @/r4/scalars.tir --input A=@/r4/A3.npy";
  CliRun r = run(base +
                 " --input n=@/r4/n0.npy --input a=@/r4/a0.npy --input k=@/r4/k0.npy --input u=@/r4/u0.npy"
                 " --input h=@/r4/h0.npy --input flag=@/r4/f0.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=43.5 first=[12.5, 14.5, 16.5]\n");
  // The same as values on the command line.
  r = run(base + " --input n=3 --input a=2 --input k=5 --input u=7 --input h=0.5 --input flag=True");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=43.5 first=[12.5, 14.5, 16.5]\n");
  r = run(base + " --input n=@/r4/n64.npy --input a=2 --input k=5 --input u=7 --input h=0.5 --input flag=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter n: " + cases() +
                       "r4/n64.npy: expected dtype i32 ('<i4'), file has '<i8'\n");
  r =
      run("run @/r4/scalars.tir --input A=@/r4/A3d.npy --input n=3 --input a=2 --input k=5 --input u=7 "
          "--input h=0.5 --input flag=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: " + cases() +
                       "r4/A3d.npy: expected dtype f32 ('<f4'), file has '<f8'\n");
  // A 0-d buffer (f32[]) in and out.
  const std::string zd =
      "func z(A: f32[], x: f32) -> (B: f32[]) {\n"
      "  block r() { B[] = A[] * x }\n"
      "}\n";
  r = run("run - --input A=@/r4/a0.npy --input x=3 --output B=%/b.npy", zd);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[] sum=6 first=[6]\n");
  NDArray b = read_npy(tmp() + "b.npy");
  EXPECT_TRUE(b.shape().empty());
  EXPECT_EQ(b.get(0), 6.0);
  r = run("run - --input A=@/r4/A3.npy --input x=3", zd);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: expected shape [], got [3]\n");
}

// NumPy dtypes and layouts outside the contract, as NumPy itself writes them: exit 2, a
// message naming the parameter, the file and the reason.
TEST(AcceptR4, NpyOutsideTheContract) {
  const std::string fn =
      "func m(A: f32[2, 3]) -> (B: f32[2, 3]) {\n"
      "  for i, j in grid(2, 3) { block b(vi: spatial(2) = i, vj: spatial(3) = j) { B[vi, vj] = A[vi, vj] } "
      "}\n"
      "}\n";
  const std::pair<const char*, const char*> bad[] = {
      {"cplx", "unsupported .npy dtype '<c8'"},
      {"str", "unsupported .npy dtype '<U1'"},
      {"rec", "structured .npy dtypes are not supported"},
      {"obj", "unsupported .npy dtype '|O'"},
  };
  for (auto& [f, msg] : bad) {
    SCOPED_TRACE(f);
    CliRun r = run(std::string("run - --input A=@/r4/") + f + ".npy", fn);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "tirc: error: parameter A: " + cases() + "r4/" + f + ".npy: " + msg + "\n");
  }
}

// What NumPy writes for a transposed array (Fortran order) and for an explicit '>f4' array
// is read as the same [[0, 1, 2], [3, 4, 5]] (both files hold that array).
TEST(AcceptR4, NpyFortranOrderAndBigEndianAreRead) {
  const std::string fn =
      "func m(A: f32[2, 3]) -> (B: f32[2, 3]) {\n"
      "  for i, j in grid(2, 3) { block b(vi: spatial(2) = i, vj: spatial(3) = j) { B[vi, vj] = A[vi, vj] * "
      "10.0 "
      "} }\n"
      "}\n";
  for (const char* f : {"fo", "be"}) {
    SCOPED_TRACE(f);
    CliRun r = run(std::string("run - --input A=@/r4/") + f + ".npy", fn);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("first=[0, 10, 20, 30, 40, 50]"), std::string::npos) << r.out;
  }
}

// f16 arithmetic rounds every operation to half (NumPy float16), bf16 likewise (PyTorch
// bfloat16); a bf16 .npy holds raw bits ('<u2').
TEST(AcceptR4, HalfAndBfloat16) {
  CliRun r = run("run @/r4/half.tir --input A=@/r4/h_a.npy --input B=@/r4/h_b.npy --output D=%/d.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  // NumPy: a*a+np.float16(0.1) = [2.35, inf, 5.164, 0.1, inf]; torch bf16:
  // [2.3438, 90112, 5.1562, 0.1001, inf].
  EXPECT_EQ(r.out,
            "C: f16[5] sum=inf first=[2.34961, inf, 5.16406, 0.0999756, inf]\n"
            "D: bf16[5] sum=inf first=[2.34375, 90112, 5.15625, 0.100098, inf]\n"
            "E: f32[5] sum=inf first=[5.34375, 90712, 0.65625, 0.102098, inf]\n");
  std::string d = slurp(tmp() + "d.npy");
  EXPECT_NE(d.find("'descr': '<u2'"), std::string::npos) << d.substr(0, 80);
}

// Floor vs truncating division and modulo on negatives (Python // % vs C), INT_MIN // -1
// (wraps, as NumPy), and wrapping arithmetic of i8, u8, u32 and i64, checked with NumPy.
TEST(AcceptR4, IntegerSemantics) {
  CliRun r = run("run @/r4/ints.tir --input A=@/r4/ia.npy --input B=@/r4/ib.npy --show 6");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "Fd: i32[6] sum=-2147483649 first=[3, -4, -4, 3, -2147483648, 1]\n"
      "Fm: i32[6] sum=2 first=[1, 1, -1, -1, 0, 2]\n"
      "Td: i32[6] sum=-2147483647 first=[3, -3, -3, 3, -2147483648, 1]\n"
      "Tm: i32[6] sum=2 first=[1, -1, 1, -1, 0, 2]\n"
      "W8: i8[6] sum=-6 first=[-67, 69, -67, 69, 1, -11]\n"
      "WU: u8[6] sum=1481 first=[253, 239, 253, 239, 246, 251]\n"
      "WU32: u32[6] sum=10705032704 first=[3820130816, 474836480, 3820130816, 474836480, 0, 2115098112]\n"
      "W64: i64[6] sum=4611686018427387904 first=[-4611686018427387904, 4611686018427387904, "
      "-4611686018427387904, 4611686018427387904, 0, 4611686018427387904]\n");
}

// Precedence (LANGUAGE.md: || < && < comparisons < + - < * / // % < unary < postfix), left
// associativity, checked against Python; the printed form keeps the meaning.
TEST(AcceptR4, Precedence) {
  const char* want =
      "R: i32[8] sum=41 first=[8, -6, -1, -2, 20, 1, 9, 12]\n"
      "L: bool[4] sum=3 first=[1, 1, 0, 1]\n";
  std::string args = " --input a=7 --input b=-3 --input c=2 --input p=true --input q=false";
  CliRun r = run("run @/r4/prec.tir" + args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  CliRun p = run("parse @/r4/prec.tir");
  ASSERT_EQ(p.code, 0) << p.err;
  CliRun q = run("run -" + args, p.out);
  EXPECT_EQ(q.out, want);
  EXPECT_EQ(run("parse -", p.out).out, p.out);
}

// min_value/max_value of f32, f16, i64, u8, f64; float->int casts saturate, NaN gives 0.
TEST(AcceptR4, LimitsAndSaturatingCasts) {
  CliRun r = run("run @/r4/limits.tir --input X=@/r4/mv_x.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "F: f32[2] sum=0 first=[-3.40282e+38, 3.40282e+38]\n"
            "H: f16[2] sum=0 first=[-65504, 65504]\n"
            "L: i64[2] sum=-1 first=[-9223372036854775808, 9223372036854775807]\n"
            "U: u8[2] sum=255 first=[0, 255]\n"
            "S: i32[5] sum=297 first=[2147483647, -2147483648, 0, -2, 300]\n"
            "T: u8[5] sum=510 first=[255, 0, 0, 0, 255]\n"
            "Bo: bool[5] sum=5 first=[1, 1, 1, 1, 1]\n"
            "D: f64[2] sum=1.79769e+308 first=[3.40282e+38, 1.79769e+308]\n");
  CliRun p = run("parse @/r4/limits.tir");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(run("parse -", p.out).out, p.out);
}

// `&&` evaluates both sides (LANGUAGE.md), so it does not guard a load; an `if` statement
// does, and so does if_then_else.
TEST(AcceptR4, AndDoesNotGuardALoad) {
  CliRun r =
      run("run - --input A=1",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) {\n"
          "    block b(vi: spatial(4) = i) { B[vi] = if_then_else(vi > 0 && A[vi - 1] > 0.0, 1.0, 2.0) }\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:3:35: error: block \"b\": out-of-bounds load A[-1]: A has shape [4]\n");
  r = run("run - --input A=1",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) {\n"
          "    block b(vi: spatial(4) = i) { if vi > 0 { B[vi] = A[vi - 1] } else { B[vi] = 0.0 } }\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=3 first=[0, 1, 1, 1]\n");
}

// Float literals as Python writes them: `.5`, `.25e1`, `1.` (an extension: the contract lists
// `1.0`, `1e-3`, `2.5e+4`); a block named after an intrinsic; `;` and comments.
TEST(AcceptR4, PythonFloatLiterals) {
  const std::string fn =
      "func f(A: f32[4]) -> (B: f32[4]) {  # comment\n"
      "  for i in serial(4) {\n"
      "    block exp(vi: spatial(4) = i) { B[vi] = exp(A[vi] * .5) + .25e1 + 1. + 1e-3; }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --input A=0", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=18.004 first=[4.501, 4.501, 4.501, 4.501]\n");
  CliRun p = run("parse -", fn);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("B[vi] = exp(A[vi] * 0.5) + 2.5 + 1.0 + 0.001"), std::string::npos) << p.out;
  EXPECT_EQ(run("parse -", p.out).out, p.out);
}

// `--wrt "X, W"` (blanks after the commas, as users type lists) names X and W; an empty
// name is a usage error. Found: " W" was looked up with its blank.
TEST(AcceptR4, WrtListWithBlanks) {
  const std::string fn =
      "func f(X: f32[4], W: f32[4]) -> (Y: f32[4]) {\n"
      "  for i in serial(4) { block y(vi: spatial(4) = i) { Y[vi] = X[vi] * W[vi] } }\n"
      "}\n";
  CliRun r = run("grad - --wrt 'X, W'", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("-> (X_grad: f32[4], W_grad: f32[4])"), std::string::npos) << r.out;
  r = run("check-grad - --wrt ' W ,X'", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 passed, 0 failed\n"), std::string::npos) << r.out;
  r = run("grad - --wrt ' '", fn);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --wrt: empty buffer name (expected --wrt A,B,...)\n");
}

// An --output path that cannot be written: exit 2 and nothing on stdout (the summary used to
// be printed before the write failed).
TEST(AcceptR4, OutputWriteFailure) {
  CliRun r = run("run - --input A=1 --output B=/nonexistent_dir_r4/b.npy",
                 "func f(A: f32[2]) -> (B: f32[2]) {\n"
                 "  for i in serial(2) { block b(vi: spatial(2) = i) { B[vi] = A[vi] } }\n"
                 "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tirc: error: cannot write /nonexistent_dir_r4/b.npy (No such file or directory)\n");
}

// `tirc stats` needs the integer scalars that decide counts (shapes, loop bounds, predicates),
// not one used only as a value. Found: `off: i32` added to the data made stats exit 2.
TEST(AcceptR4, StatsNeedsOnlyScalarsThatDecideCounts) {
  const std::string fn =
      "func f(n: i32, off: i32, m: i32, A: i32[n]) -> (B: i32[n]) {\n"
      "  let w = m + 1\n"
      "  for i in serial(n) {\n"
      "    block b(vi: spatial(n) = i) { B[vi] = A[vi] + off }\n"
      "  }\n"
      "  for i in serial(n) {\n"
      "    block c(vi: spatial(n) = i) {\n"
      "      where i < w\n"
      "      B[vi] = B[vi] * 2\n"
      "    }\n"
      "  }\n"
      "}\n";
  CliRun r = run("stats - --json --input n=6 --input m=2", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"iterations\": 9,"), std::string::npos) << r.out;  // 6 + 3 under the where
  r = run("stats - --input n=6", fn);  // m decides the where (through the let w)
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: scalar parameter m must be given (--input m=VALUE)\n");
  r = run("stats - --input m=6", fn);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: scalar parameter n must be given (--input n=VALUE)\n");
}

// A cast is a conversion: `u8(-1)`, `i8(200)`, `u32(-1)` wrap as NumPy's astype (int -> int
// wraps, LANGUAGE.md "convert with a cast call"); a float literal cast to u8 saturates
// (docs/interp.md). Found: "integer literal -1 does not fit in u8" at the cast.
TEST(AcceptR4, CastOfLiteralThatDoesNotFit) {
  CliRun r = run("run @/r4/cast_literals.tir --input A=0 --show 10");
  ASSERT_EQ(r.code, 0) << r.err;
  // np.array([-1, 256, -2, 300, 255]).astype(np.uint8), [200, -129] -> int8, -1 -> uint32.
  EXPECT_EQ(r.out,
            "V: u8[6] sum=1063 first=[255, 0, 254, 44, 255, 255]\n"
            "I: i8[2] sum=71 first=[-56, 127]\n"
            "W: u32[2] sum=8589934590 first=[4294967295, 4294967295]\n"
            "L: i64[1] sum=9223372036854775807 first=[9223372036854775807]\n");
  CliRun p = run("parse @/r4/cast_literals.tir");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(run("parse -", p.out).out, p.out);
  CliRun q = run("run - --input A=0 --show 10", p.out);
  EXPECT_EQ(q.out, r.out);
}

// `func add(n: i32, m: i32, A: f32[n, m], B: f32[m])` run with the arrays alone: n and m are
// the arrays' sizes (as TVM binds shape variables); a given value must agree with them.
TEST(AcceptR4, ShapeScalarsFromArrays) {
  const std::string fn =
      "func add(n: i32, m: i32, A: f32[n, m], B: f32[m]) -> (C: f32[n, m]) {\n"
      "  for i, j in grid(n, m) {\n"
      "    block c(vi: spatial(n) = i, vj: spatial(m) = j) { C[vi, vj] = A[vi, vj] + B[vj] }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --input A=@/r4/A23.npy --input B=@/r4/A3.npy", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "C: f32[2, 3] sum=21 first=[0, 2, 4, 3, 5, 7]\n");
  r = run("run - --input A=@/r4/A23.npy --input B=7", fn);  // B filled: m from A
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "C: f32[2, 3] sum=57 first=[7, 8, 9, 10, 11, 12]\n");
  r = run("run - --input A=@/r4/A23.npy --input n=5 --input B=@/r4/A3.npy", fn);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: expected shape [5, 3], got [2, 3]\n");
  r = run("check-grad - --input A=@/r4/A23.npy", fn);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 passed, 0 failed\n"), std::string::npos) << r.out;
}

// The same parameter given twice is a usage error (it used to keep the last value silently).
TEST(AcceptR4, InputGivenTwice) {
  const std::string fn =
      "func f(A: f32[2]) -> (B: f32[2]) {\n"
      "  for i in serial(2) { block b(vi: spatial(2) = i) { B[vi] = A[vi] } }\n"
      "}\n";
  CliRun r = run("run - --input A=1 --input A=2", fn);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tirc: error: --input A=2: parameter A is given twice\n");
  r = run("run - --input A=1", fn);
  EXPECT_EQ(r.code, 0) << r.err;
}

}  // namespace
}  // namespace tirc::accept

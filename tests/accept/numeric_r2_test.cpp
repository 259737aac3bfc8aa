// Acceptance round 2: `tirc run` on lang_r2.tir (language corners) against NumPy references
// (cases/gen_refs2.py, files data/r2_*.npy), with both engines and every way of giving inputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct RunCase {
  const char* func;
  std::vector<std::pair<std::string, std::string>> inputs;   // NAME -> r2_ data stem, or "=VALUE"
  std::vector<std::pair<std::string, std::string>> outputs;  // NAME -> r2_ data stem
  double tol = 1e-6;
};

std::vector<RunCase> run_cases() {
  return {
      // A block called `exp`, an output called `exp`, loop vars `serial`/`grid`, iter vars
      // `sqrt`/`spatial`; a nested block with an opaque iter var.
      {"names", {{"A", "names_A"}}, {{"B", "names_B"}, {"exp", "names_exp"}}},
      // Precedence / associativity, floor division and modulo with negative divisors.
      {"prec", {{"A", "prec_A"}, {"B", "prec_B"}}, {{"R", "prec_R"}, {"P", "prec_P"}}, 0},
      // `if` on loop vars and on a bool scalar outside blocks, a loop-level `let` in bindings.
      {"ctl", {{"n", "=3"}, {"flip", "=true"}, {"A", "ctl_A"}}, {{"B", "ctl_B"}, {"C", "ctl_C_true"}}, 0},
      {"ctl", {{"n", "=3"}, {"flip", "=false"}, {"A", "ctl_A"}}, {{"B", "ctl_B"}, {"C", "ctl_C_false"}}, 0},
      // A scan iter var (running product).
      {"cumprod", {{"X", "cumprod_X"}}, {{"Y", "cumprod_Y"}}, 0},
      // i64 loop extents and iter vars, vectorized(7), blockIdx/threadIdx loops run on the CPU.
      {"widx", {{"A", "widx_A"}}, {{"B", "widx_B"}, {"S", "widx_S"}}},
      // parallel + unroll, `min=` reduction from max_value, symbolic size 37.
      {"par", {{"n", "=37"}, {"A", "par_A"}}, {{"M", "par_M"}}, 0},
      // Two symbolic sizes, shape `n * (m + 1)`, function-level let, symbolic alloc, `where`.
      {"tile_sum", {{"n", "=3"}, {"m", "=4"}, {"A", "tile_A"}}, {{"S", "tile_S"}, {"T", "tile_T"}}},
      // Casts between every pair of interest, as NumPy astype (bf16 compared as bits).
      {"casts",
       {{"X", "casts_X"}, {"L", "casts_L"}, {"W", "casts_W"}, {"V", "casts_V"}},
       {{"I", "casts_I"},
        {"B8", "casts_B8"},
        {"U8", "casts_U8"},
        {"H", "casts_H"},
        {"BF", "casts_BF"},
        {"D", "casts_D"},
        {"Bo", "casts_Bo"},
        {"S16", "casts_S16"},
        {"U16", "casts_U16"},
        {"LL", "casts_LL"},
        {"F", "casts_F"}},
       0},
      // i64 / i8 / u32 division family, abs/sign on ints, min_value/max_value of int dtypes.
      {"ints",
       {{"A", "ints_A"}, {"B", "ints_B"}, {"C", "ints_C"}, {"D", "ints_D"}},
       {{"Q", "ints_Q"}, {"R", "ints_R"}, {"U", "ints_U"}, {"M", "ints_M"}},
       0},
      // Scalars of every kind from the command line: f64, i64 beyond i32, bool, f16, u8.
      {"scal",
       {{"a", "=0.1"},
        {"k", "=10000000000"},
        {"flag", "=true"},
        {"h", "=0.5"},
        {"u", "=255"},
        {"X", "scal_X"}},
       {{"Y", "scal_Y"}, {"Z", "scal_Z"}, {"H", "scal_H"}},
       1e-12},
      // f64 literals and intrinsics keep f64 precision (NumPy, within an ulp or two) ...
      {"fp", {{"D", "fp_D"}, {"H", "fp_H"}, {"G", "fp_G"}}, {{"E", "fp_E"}}, 1e-14},
      // ... and f16 / bf16 arithmetic rounds after every operation, exactly as NumPy / PyTorch
      // (bf16 compared as bits), also in an f16 reduction.
      {"fp",
       {{"D", "fp_D"}, {"H", "fp_H"}, {"G", "fp_G"}},
       {{"HH", "fp_HH"}, {"GG", "fp_GG"}, {"HS", "fp_HS"}},
       0},
  };
}

void check_case(const RunCase& c, const std::string& engine) {
  check_run_against_npy("lang_r2.tir", c.func, engine, c.inputs, c.outputs, c.tol, "r2_");
}

TEST(AcceptRunR2, InterpMatchesNumpy) {
  for (auto& c : run_cases()) check_case(c, "interp");
}

TEST(AcceptRunR2, JitMatchesNumpy) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  for (auto& c : run_cases()) check_case(c, "jit");
}

// The printed summary of integer outputs: exact values, the sum in a wide type.
TEST(AcceptRunR2, SummaryOfIntegerOutputs) {
  CliRun r = run(
      "run @/lang_r2.tir --func prec --input A=@/data/r2_prec_A.npy --input B=@/data/r2_prec_B.npy --show 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "R: i32[6, 8] sum=-400 first=[2, -9, 6, 1, 9, 11, 6, -203, ...]\n"
            "P: bool[6, 3] sum=9 first=[1, 1, 0, 0, 1, 0, 0, 1, ...]\n");
}

// .npy inputs as NumPy writes them: format versions 2.0 and 3.0, bool ('|b1') data.
TEST(AcceptRunR2, NpyVersionsAndBool) {
  // Files written here by hand in NumPy's format (version byte and 4-byte header length).
  auto npy = [](int major, const std::string& descr, const std::string& shape, const std::string& data) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    size_t pre = 6 + 2 + (major == 1 ? 2 : 4);
    while ((pre + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string h = std::string("\x93NUMPY", 6) + char(major) + '\0';
    uint32_t n = static_cast<uint32_t>(dict.size());
    for (int b = 0; b < (major == 1 ? 2 : 4); ++b) h += char((n >> (8 * b)) & 0xff);
    return h + dict + data;
  };
  namespace fs = std::filesystem;
  std::string dir =
      (fs::temp_directory_path() / ("tirc_accept_r2_npy_" + std::to_string(::getpid()))).string() + "/";
  fs::create_directories(dir);
  std::string x;
  for (double v : {1.5, -2.0, 0.25, 8.0}) x.append(reinterpret_cast<const char*>(&v), 8);
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    write_file(dir + "x.npy", npy(major, "<f8", "(4,)", x));
    CliRun r =
        run("run @/lang_r2.tir --func scal --input a=2 --input k=1 --input flag=1 --input h=1 --input u=0 "
            "--input X=" +
            dir + "x.npy --output Y=%/Y.npy");
    ASSERT_EQ(r.code, 0) << r.err;
    NDArray y = read_npy(tmp() + "Y.npy");
    ASSERT_EQ(y.numel(), 4);
    EXPECT_EQ(y.get(0), 3.0);
    EXPECT_EQ(y.get(1), -4.0);
    EXPECT_EQ(y.get(3), 16.0);
  }
  // A bool buffer from a NumPy bool array ('|b1', one byte per element).
  write_file(dir + "m.npy", npy(1, "|b1", "(6,)", std::string("\1\0\1\1\0\0", 6)));
  CliRun r =
      run("run @/corners.tir --func flags --input X=2.5 --input M=" + dir + "m.npy --output N=%/N.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "Y: f32[6] sum=13.5 first=[3.5, 1, 3.5, 3.5, 1, 1]");
  NDArray n = read_npy(tmp() + "N.npy");
  ASSERT_EQ(n.dtype(), DType::Bool);
  std::vector<double> got;
  for (int64_t i = 0; i < n.numel(); ++i) got.push_back(n.get(i));
  EXPECT_EQ(got, (std::vector<double>{0, 1, 0, 0, 1, 1}));
  // A bool buffer of the wrong shape is refused naming the parameter.
  r = run("run @/corners.tir --func flags --input X=2.5 --input M=@/data/r2_casts_Bo.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter M: expected shape [6], got [8]\n");
  fs::remove_all(dir);
}

// Output .npy files carry NumPy's descr for every dtype (so np.load gives the right dtype).
TEST(AcceptRunR2, OutputDescrs) {
  CliRun r =
      run("run @/lang_r2.tir --func casts --random 3 --output I=%/I.npy --output B8=%/B8.npy --output "
          "U8=%/U8.npy "
          "--output H=%/H.npy --output D=%/D.npy --output Bo=%/Bo.npy --output S16=%/S16.npy --output "
          "U16=%/U16.npy "
          "--output LL=%/LL.npy --output F=%/F.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::pair<const char*, const char*> want[] = {
      {"I", "'<i4'"},  {"B8", "'|i1'"},  {"U8", "'|u1'"},  {"H", "'<f2'"},  {"D", "'<f8'"},
      {"Bo", "'|b1'"}, {"S16", "'<i2'"}, {"U16", "'<u2'"}, {"LL", "'<i8'"}, {"F", "'<f4'"}};
  for (auto& [n, d] : want) {
    std::string s = slurp(tmp() + n + ".npy");
    ASSERT_GT(s.size(), 10u) << n;
    EXPECT_EQ(s.substr(0, 6), "\x93NUMPY") << n;
    EXPECT_NE(s.find(std::string("'descr': ") + d), std::string::npos) << n << ": " << s.substr(0, 80);
    EXPECT_NE(s.find("'shape': (8,)"), std::string::npos) << n << ": " << s.substr(0, 80);
  }
}

// Run-time errors of the interpreter: division by zero, `select` evaluating an out-of-bounds
// arm (LANGUAGE.md: select evaluates both arms).
TEST(AcceptRunR2, RunTimeErrors) {
  std::string dz =
      "func dz(A: i32[4], B: i32[4]) -> (Q: i32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block q(vi: spatial(4) = i) { Q[vi] = A[vi] // B[vi] }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --input A=5 --input B=0", dz);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:3:35: error: block \"q\": integer division by zero: floordiv(5, 0)\n");
  std::string sel =
      "func shift(A: f32[5]) -> (B: f32[5]) {\n"
      "  for i in serial(5) {\n"
      "    block b(vi: spatial(5) = i) { B[vi] = select(vi > 0, A[vi - 1], 0.0) }\n"
      "  }\n"
      "}\n";
  r = run("run - --random 1", sel);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:3:35: error: block \"b\": out-of-bounds load A[-1]: A has shape [5]\n");
  // The same with if_then_else is fine (only the taken arm is evaluated).
  std::string ite = sel;
  ite.replace(ite.find("select"), 6, "if_then_else");
  r = run("run - --input A=2", ite);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[5] sum=8 first=[0, 2, 2, 2, 2]\n");
  // Scalar values are checked against their dtype.
  r =
      run("run @/lang_r2.tir --func scal --input a=0.1 --input k=1 --input flag=1 --input h=1 --input u=256 "
          "--input X=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter u: 256 is out of range for u8\n");
}

// A module with one function needs no --func; with several, --func is required.
TEST(AcceptRunR2, FuncSelection) {
  std::string one =
      "func only(A: f32[3]) -> (B: f32[3]) {\n"
      "  for i in serial(3) { block b(vi: spatial(3) = i) { B[vi] = A[vi] + 1.0 } }\n"
      "}\n";
  CliRun r = run("run - --input A=1", one);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=6 first=[2, 2, 2]\n");
  r = run("run @/lang_r2.tir --random 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("choose one with --func"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tirc::accept

namespace tirc::accept {
namespace {

// Literal-only expressions are typed by their context (LANGUAGE.md): `1 / 2` in an f32 / f64
// store is 0.5 (f64 precision in an f64 store), `max(1, 2) * min(3.5, 2)` and `exp(0)` fold in
// the float type; integer-only `//` and `%` of integer literals keep their integer meaning
// (`f32(7 // 2)` = 3, as Python / TVMScript evaluate it); float-to-int casts truncate.
TEST(AcceptRunR2, LiteralOnlyExpressions) {
  const std::string text =
      "func lit(A: f32[2]) -> (B: f32[2, 6], E: f64[2, 2], J: i32[2, 3]) {\n"
      "  for i in serial(2) {\n"
      "    block b(vi: spatial(2) = i) {\n"
      "      B[vi, 0] = 1 / 2\n"
      "      B[vi, 1] = f32(7 // 2) + A[vi] * 0\n"
      "      B[vi, 2] = -(3 - 5) * 2 + 0.25\n"
      "      B[vi, 3] = max(1, 2) * min(3.5, 2) + A[vi]\n"
      "      B[vi, 4] = exp(0) + sqrt(16)\n"
      "      B[vi, 5] = 7 // 2 * 1.5 + f32(-7 % 3) + 1 % 2\n"
      "      E[vi, 0] = 1 / 3\n"
      "      E[vi, 1] = 0.1 + 0.2\n"
      "      J[vi, 0] = 7 // -2\n"
      "      J[vi, 1] = -7 % 3 + 2147483647 // 2\n"
      "      J[vi, 2] = i32(2.7) + i32(-2.7)\n"
      "    }\n"
      "  }\n"
      "}\n";
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    SCOPED_TRACE(engine);
    CliRun r = run(std::string("run - --input A=1 --output E=%/E.npy --show 12 --engine ") + engine, text);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("B: f32[2, 6] sum=50.5 first=[0.5, 3, 4.25, 5, 5, 7.5, 0.5, 3, 4.25, 5, 5, 7.5]\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("J: i32[2, 3] sum=2147483642 first=[-4, 1073741825, 0, -4, 1073741825, 0]\n"),
              std::string::npos)
        << r.out;
    NDArray e = read_npy(tmp() + "E.npy");
    ASSERT_EQ(e.numel(), 4);
    EXPECT_EQ(e.get(0), 1.0 / 3.0);  // f64 precision, not an f32 third
    EXPECT_EQ(e.get(1), 0.1 + 0.2);
  }
  // The printed form reads back to the same module.
  CliRun p = run("parse -", text);
  ASSERT_EQ(p.code, 0) << p.err;
  CliRun q = run("parse -", p.out);
  EXPECT_EQ(q.out, p.out);
}

}  // namespace
}  // namespace tirc::accept

namespace tirc::accept {
namespace {

// acceptance round 2, finding I1 (interp): LANGUAGE.md "a block whose spatial iterations conflict is
// invalid" — two spatial iterations of one block writing the same element should be reported
// (the interpreter is the checking engine), not resolved silently by the serial order.
TEST(AcceptRunR2, SpatialConflictIsAnError) {
  const std::string text =
      "func f(A: f32[8]) -> (B: f32[8]) {\n"
      "  for i in serial(8) { block b(vi: spatial(8) = i) { B[vi // 2] = A[vi] } }\n"
      "}\n";
  CliRun r = run("run - --random 1", text);
  if (r.code == 0) GTEST_SKIP() << "bug: I1 (interp): spatial write conflict accepted: " << r.out;
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("block \"b\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("B[0]"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tirc::accept

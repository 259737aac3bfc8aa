// Acceptance round 15 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code,
// on what rounds 1-14 left out: every unary intrinsic of LANGUAGE.md on edge values in f32 / f64 /
// f16 and the binary ones (both engines, against NumPy / PyTorch), integer floor / trunc division of
// negatives, every small dtype in one function, a layer norm with symbolic sizes and a point value
// range, names that shadow intrinsics and loop kinds, 30 nested blocks, comments in odd places,
// 0-d buffers, and the command line (flag spellings, `-` for every subcommand, `.npy` mistakes,
// `--json` fields).
// Found and fixed: a point value range of a float scalar (`eps: f32 in [1e-5, 1e-5]`, also any
// range between two neighbouring values of the dtype) was "value range [1e-05, 1e-05] holds no
// finite f32 value", so `run --random`, `verify` and `check-grad` refused the script; TVMScript's
// `T.exp(x)` said "T.exp is only allowed as an argument of call_extern"; `in [nan, 1]` said "empty
// value range"; a shape using a scalar parameter declared after the buffer said only "undeclared
// name"; the list of storage scopes in the alloc error left out shared.dyn and warp.
// Case files: tests/accept/cases/r15/ (inputs and references by cases/r15/gen_r15.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const std::string kDir = "@/r15/";

// The bug: `eps: f32 in [0.00001, 0.00001]` (a scalar fixed by a point range) was refused by every
// command that draws inputs, because 1e-5 is not an f32 value. It now means f32(1e-5), as the literal
// 1e-5 in an f32 context. Layer norm with f16 input / output, f32 statistics and symbolic sizes:
// the drawn eps is exactly f32(1e-5), the values match NumPy (checked when the case was written:
// max difference 0), verify and check-grad pass.
TEST(AcceptR15, PointValueRangeOfAFloatScalar) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "layernorm.tir --random 5 --dump %/d --engine " + e);
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(
        r.out,
        "Y: f16[4, 6] sum=-6.14859 first=[0.00277519, 1.45508, -0.311768, -1.33301, -2.02539, 0.567871, "
        "-1.82617, 1.07227, ...]\n")
        << e;
    NDArray eps = read_npy(tmp() + "d/in_eps.npy");
    EXPECT_EQ(eps.dtype(), DType::F32);
    EXPECT_EQ(eps.get(0), static_cast<double>(1e-5f));
  }
  CliRun r = run("verify " + kDir + "layernorm.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("check-grad " + kDir + "layernorm.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "3 passed, 0 failed\n")) << r.out;
  // Point ranges of every float dtype, representable or not, and a range between two f16 values.
  r = run("run - --random 1",
          "func f(a: f32 in [0.1, 0.1], b: f64 in [0.1, 0.1], c: f16 in [0.1, 0.1], d: bf16 in [0.1, 0.1],\n"
          "       H: f16[2] in [0.10001, 0.10002]) -> (O: f64[5]) {\n"
          "  block b() {\n"
          "    O[0] = f64(a)\n    O[1] = b\n    O[2] = f64(c)\n    O[3] = f64(d)\n    O[4] = f64(H[1])\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "O: f64[5] sum=0.50011 first=[0.1, 0.1, 0.0999756, 0.100098, 0.100037]\n");
  // Beyond the dtype's finite values it stays an error.
  r = run("run - --random 1", "func f(a: f16 in [70000, 70000]) -> (O: f32[1]) {\n  O[0] = f32(a)\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter a: value range [70000, 70000] holds no finite f16 value\n");
}

// LANGUAGE.md: "Calls: exp log log2 log10 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid erf abs
// floor ceil round trunc sign". Each on 0, -0, +-1, +-0.5, +-2.5 (round: half to even), 1.5, 1e-3,
// +-100, +-inf, nan and 3, in f32, f64 and f16, from both engines, against NumPy (erf: PyTorch).
TEST(AcceptR15, UnaryIntrinsicsOnEdgeValues) {
  const std::vector<std::pair<std::string, double>> dts = {{"f32", 1e-6}, {"f64", 1e-14}, {"f16", 1e-3}};
  for (auto& [dt, tol] : dts)
    for (const std::string& e : engines()) {
      CliRun r = run("run " + kDir + "unary_" + dt + ".tir --input X=" + kDir + "in_unary_" + dt +
                     ".npy --output O=%/o.npy --engine " + e);
      ASSERT_EQ(r.code, 0) << dt << " " << e << ": " << r.err;
      EXPECT_EQ(
          compare(read_npy(tmp() + "o.npy"), read_npy(cases() + "r15/ref_unary_" + dt + ".npy"), tol, 0), "")
          << dt << " " << e;
    }
}

// pow (0^0, 0^-1, (-8)^(1/3), nan^0, 1^nan, 2^-inf), min / max with NaN and signed zeros
// (torch.minimum / maximum), '/' by zero, select: both engines against NumPy / PyTorch.
TEST(AcceptR15, BinaryFloatOpsOnEdgeValues) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "binary.tir --input X=" + kDir + "in_bx.npy --input Y=" + kDir +
                   "in_by.npy --output O=%/o.npy --engine " + e);
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(compare(read_npy(tmp() + "o.npy"), read_npy(cases() + "r15/ref_bin.npy"), 1e-6, 0), "") << e;
  }
}

// LANGUAGE.md: `//` floor division and `%` floor modulo; truncdiv / truncmod. Negative operands on
// either side, 0 // -3, and INT_MIN // -1 (wraps, as NumPy), against NumPy.
TEST(AcceptR15, IntegerDivisionOfNegatives) {
  for (const std::string& e : engines())
    check_run_against_npy("r15/int_div.tir", "ops", e, {{"A", "in_ia"}, {"B", "in_ib"}},
                          {{"F", "ref_F"}, {"M", "ref_M"}, {"TD", "ref_TD"}, {"TM", "ref_TM"}}, 0, "../r15/");
}

// Types: `bool i8 ... f16 bf16` as buffers, scalars (`s: f16`, `t: bool`, `k: u8`), literals adopting
// the other operand's dtype (`+ 1.5` in f16, `- 100` in i8), casts, logic, and reductions in f16 /
// u8 / bool. Values worked by hand: i8 100 * 3 - 100 wraps to -56, u8 250 + 10 to 4, f16 60000 * 2
// overflows to inf, the f16 sum 1000 + 0.1 - 2 + 60000 rounds to 60992.
TEST(AcceptR15, EverySmallDtypeInOneFunction) {
  const std::string in = " --input H=" + kDir + "in_H.npy --input G=" + kDir + "in_G.npy --input C=" + kDir +
                         "in_C.npy --input U=" + kDir + "in_U.npy --input P=" + kDir + "in_P.npy --input s=2";
  const std::string want =
      "OH: f16[4] sum=inf first=[2002, 1.7002, -2.5, inf]\n"
      "OG: bf16[4] sum=inf first=[1000, 0.769531, -3, inf]\n"
      "OC: i8[4] sum=-247 first=[-56, 6, -97, -100]\n"
      "OU: u8[4] sum=43 first=[4, 20, 9, 10]\n"
      "OP: bool[4] sum=4 first=[1, 1, 1, 1]\n"
      "R: f16[1] sum=60992 first=[60992]\n"
      "RU: u8[1] sum=3 first=[3]\n"
      "RB: bool[1] sum=1 first=[1]\n";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "small_dtypes.tir" + in + " --input t=true --input k=10 --engine " + e);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want) << e;
  }
  // Scalar values on the command line: bools as true / false / True / 1 / 0, an f16 inf.
  for (const char* t : {"True", "1"}) {
    CliRun r = run("run " + kDir + "small_dtypes.tir" + in + " --input k=10 --input t=" + t);
    EXPECT_EQ(r.out, want) << t;
  }
  CliRun r = run("run " + kDir + "small_dtypes.tir" + in + " --input k=10 --input t=0");
  EXPECT_TRUE(has(r.out, "OP: bool[4] sum=2 first=[0, 1, 0, 1]\n")) << r.out;
  // Out-of-range and malformed scalars are usage errors naming the parameter.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"t=1 --input k=256", "tirc: error: parameter k: 256 is out of range for u8\n"},
      {"t=1 --input k=-1", "tirc: error: parameter k: -1 is out of range for u8\n"},
      {"t=1 --input k=1e2", "tirc: error: parameter k: '1e2' is not an integer\n"},
      {"t=yes --input k=1", "tirc: error: parameter t: 'yes' is not a bool (true/false)\n"},
  };
  for (auto& [args, err] : bad) {
    r = run("run " + kDir + "small_dtypes.tir" + in + " --input " + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err, err) << args;
    EXPECT_EQ(r.out, "");
  }
}

// TVMScript / NumPy spellings: `T.exp(x)` said "T.exp is only allowed as an argument of
// call_extern" (as if the call were fine there); module prefixes are named, casts get the .tir
// spelling, and a prefix that is not a buffer or module is an undeclared buffer.
TEST(AcceptR15, TvmScriptAndNumPySpellingsAreNamed) {
  auto src = [](const std::string& e) {
    return "func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block b(vi: spatial(4) = i) {\n"
           "      B[vi] = " +
           e + "\n    }\n  }\n}\n";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"T.exp(A[vi])",
       "<stdin>:4:15: error: unknown function 'T.exp' (there are no modules: write exp(...), "
       "without 'T.')\n"},
      {"T.max(A[vi], 0.0)",
       "<stdin>:4:15: error: unknown function 'T.max' (there are no modules: write max(...), "
       "without 'T.')\n"},
      {"T.float32(A[vi])",
       "<stdin>:4:15: error: unknown function 'T.float32' (there are no modules: write f32(x), "
       "without 'T.')\n"},
      {"np.sqrt(A[vi])",
       "<stdin>:4:15: error: unknown function 'np.sqrt' (there are no modules: write "
       "sqrt(...), without 'np.')\n"},
      {"A[vi] * T.pi",
       "<stdin>:4:23: error: unknown name 'T.pi' (there are no modules: functions and dtypes "
       "are named without a prefix)\n"},
      {"Q.data", "<stdin>:4:15: error: undeclared buffer 'Q'\n"},
      {"A.shape", "<stdin>:4:17: error: unknown buffer field 'shape' (expected data or ptr)\n"},
      {"A.data", "<stdin>:4:15: error: A.data is only allowed as an argument of call_extern\n"},
  };
  for (auto& [e, err] : cases) {
    CliRun r = run("parse -", src(e));
    EXPECT_EQ(r.code, 2) << e;
    EXPECT_EQ(r.err, err) << e;
  }
  // NumPy's chained indexing and Python's `range` were "unexpected '['" / "unknown loop kind
  // 'range' (expected ...)" alone.
  CliRun r = run("parse -", src("A[vi][0]"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:4:20: error: unexpected '[' (index a buffer with one bracket: A[i, j], not A[i][j])\n");
  r = run("parse -", "func f(A: f32[4]) -> (B: f32[4]) {\n  for i in range(4) {\n    B[i] = A[i]\n  }\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:2:12: error: unknown loop kind 'range' (expected serial, parallel, vectorized, unroll, "
            "thread_binding or grid; Python's range(n) is written serial(n))\n");
}

// Parameter declarations: "Shape entries are integer expressions of literals and earlier scalar
// parameters" (a later one is named as such), value range ends must be numbers (`nan` was "empty
// value range [nan, 1]"), and the alloc scopes the error lists are the ones accepted.
TEST(AcceptR15, ParameterAndAllocMessages) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"func f(A: f32[n], n: i32) -> (B: f32[4]) { }",
       "<stdin>:1:15: error: undeclared name 'n' (scalar parameter n is declared after this buffer; a shape "
       "may "
       "use only earlier parameters)\n"},
      {"func f(A: f32[m], n: i32) -> (B: f32[4]) { }", "<stdin>:1:15: error: undeclared name 'm'\n"},
      {"func f(X: f32[4] in [nan, 1]) -> (B: f32[4]) { }",
       "<stdin>:1:22: error: a value range end must be a number, got 'nan'\n"},
      {"func f(X: f32[4] in [0, -nan]) -> (B: f32[4]) { }",
       "<stdin>:1:25: error: a value range end must be a number, got '-nan'\n"},
      {"func f(X: f32[4] in [1, -1]) -> (B: f32[4]) { }", "<stdin>:1:22: error: empty value range [1, -1]\n"},
      {"func f(A: f32[4]) -> (B: f32[4]) { alloc T: f32[4] scope \"texture\" }",
       "<stdin>:1:58: error: unknown storage scope \"texture\" (expected global, shared, shared.dyn, local "
       "or "
       "warp)\n"},
  };
  for (auto& [src, err] : cases) {
    CliRun r = run("parse -", src);
    EXPECT_EQ(r.code, 2) << src;
    EXPECT_EQ(r.err, err) << src;
  }
  for (const char* scope : {"shared.dyn", "warp", "local", "shared"}) {
    CliRun r = run("parse -", std::string("func f(A: f32[4]) -> (B: f32[4]) {\n  alloc T: f32[4] scope \"") +
                                  scope + "\"\n}\n");
    EXPECT_EQ(r.code, 0) << scope << r.err;
    EXPECT_TRUE(has(r.out, std::string("alloc T: f32[4] scope \"") + scope + "\"")) << r.out;
  }
}

// Value ranges: "`I: i32[6] in [0, 9]` (integers, both ends included)"; a float end on an integer
// buffer (draws from the integers inside), a range without integers, an infinite end, `bool in [1,
// 1]`, and a bool literal as an end (not a number: refused at the end).
TEST(AcceptR15, ValueRangeEnds) {
  auto f = [](const std::string& decl, const std::string& t) {
    return "func f(I: " + decl + ") -> (B: " + t +
           "[4]) {\n  for i in serial(4) {\n    block b(vi: spatial(4) = i) { B[vi] = I[vi] }\n  }\n}\n";
  };
  CliRun r = run("run - --random 3", f("i32[4] in [0.5, 9]", "i32"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: i32[4] sum=15 first=[4, 1, 8, 2]\n");
  r = run("run - --random 3", f("i32[4] in [0.5, 0.7]", "i32"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter I: value range [0.5, 0.7] holds no i32 value\n");
  r = run("run - --random 3", f("f32[4] in [-inf, 1]", "f32"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "tirc: error: parameter I: value range [-inf, 1] is not finite (random values need finite ends)\n");
  r = run("run - --random 3", f("bool[4] in [1, 1]", "bool"));
  EXPECT_EQ(r.out, "B: bool[4] sum=4 first=[1, 1, 1, 1]\n");
  r = run("parse -", f("bool[4] in [true, true]", "bool"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:1:23: error: unexpected 'true'; expected '-', a float or an integer\n");
}

// CLI.md: `--func F` chooses among several functions; option spellings of CLI11 (`--func=g`,
// `-f g`, `-i` with several values, options before the file) all work; a repeated single-value
// option, an unknown subcommand, a missing or extra positional are usage errors (exit 2).
TEST(AcceptR15, FlagSpellingsAndUsageErrors) {
  const std::string f = kDir + "two_funcs.tir";
  for (const std::string& args :
       {"run --func=g --input=n=2 --input=x=1 --input=A=1 " + f, "run -f g -i n=2 -i x=1 -i A=1 " + f,
        "run " + f + " -f g -i n=2 x=1 A=1"}) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << args << r.err;
    EXPECT_EQ(r.out, "B: f32[2] sum=2 first=[1, 1]\n") << args;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"run " + f + " --random 0",
       "tirc: error: two_funcs.tir defines several functions (f, g): choose one with --func\n"},
      {"run " + f + " --func h --random 0", "tirc: error: no function named h in two_funcs.tir (it defines f, g)\n"},
      {"run " + f + " --func g --input n=3 --input x=2",
       "tirc: error: missing input for parameter A (give --input "
       "A=FILE.npy|VALUE or --random SEED)\n"},
      {"run " + f + " --func g --input n=3.5 --input x=1 --input A=1",
       "tirc: error: parameter n: '3.5' is not an integer\n"},
      {"run " + f + " --func g --input n=-1 --input x=1 --input A=1",
       "tirc: error: buffer A has a negative extent -1\n"},
      {"schedule " + f, "two_funcs.tir:8:10: error: schedule for unknown function 'h'\n"},
      {"verify " + f, "two_funcs.tir:8:10: error: schedule for unknown function 'h'\n"},
      {"frobnicate " + f,
       "tirc: error: unknown subcommand 'frobnicate' (expected parse, run, stats, grad, "
       "check-grad, schedule, verify, build or bench; see tirc --help)\n"},
  };
  for (auto& [args, err] : bad) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    // The file is named as given on the command line; only its base name is compared.
    std::string e = r.err;
    size_t p = e.find(cases());
    if (p != std::string::npos) e.erase(p, cases().size() + 4);  // "<cases>/r15/"
    EXPECT_EQ(e, err) << args;
  }
  // A missing script says why (it was "cannot open file" alone), from every subcommand.
  for (const char* sub :
       {"parse", "run", "stats", "grad", "check-grad", "schedule", "verify", "bench", "build"}) {
    if (!has_llvm() && (std::string(sub) == "bench" || std::string(sub) == "build")) continue;
    CliRun r = run(std::string(sub) + " missing.tir");
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_EQ(r.err, "missing.tir:1:1: error: cannot open file (No such file or directory)\n") << sub;
  }
  for (const std::string& args :
       std::vector<std::string>{"run " + f + " --func g --func f --random 1",
                                "run " + f + " --random 1 --random 2", "parse " + f + " " + f, "parse", ""}) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err, "") << args;
  }
}

// `.npy` mistakes name the parameter and the file, exit 2, print nothing on stdout: an i64 file for
// an i32 scalar, f64 for f32, a rank mismatch, not a .npy, a missing file, a directory, and a shape
// that disagrees with a given size. A 0-d file is a scalar; a 0-d buffer reads and writes 0-d files.
TEST(AcceptR15, NpyInputMistakes) {
  const std::string f = kDir + "two_funcs.tir --func g";
  const std::string d = kDir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {" --input n=" + d + "n3_i64.npy --input x=2 --input A=" + d + "a3_f32.npy",
       "parameter n: " + cases() +
           "r15/n3_i64.npy: expected dtype "
           "i32 ('<i4'), file has '<i8'"},
      {" --input x=2 --input A=" + d + "a3_f64.npy",
       "parameter A: " + cases() + "r15/a3_f64.npy: expected dtype f32 ('<f4'), file has '<f8'"},
      {" --input x=2 --input A=" + d + "a33_f32.npy", "parameter A: expected shape [n], got [3, 3]"},
      {" --input x=2 --input A=" + d + "not_npy.npy",
       "parameter A: " + cases() + "r15/not_npy.npy: not a .npy file (bad magic)"},
      {" --input x=2 --input A=missing.npy",
       "parameter A: cannot read missing.npy: No such file or directory"},
      {" --input x=2 --input A=/", "parameter A: / is a directory, not a .npy file"},
      {" --input n=4 --input x=2 --input A=" + d + "a3_f32.npy", "parameter A: expected shape [4], got [3]"},
  };
  for (auto& [args, err] : bad) {
    CliRun r = run("run " + f + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "tirc: error: " + err + "\n") << args;
  }
  // A 0-d .npy for a scalar and the size taken from the array.
  CliRun r = run("run " + f + " --input n=" + d + "n3_i32.npy --input x=" + d + "x0_f32.npy --input A=" + d +
                 "a3_f32.npy");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=7.5 first=[2.5, 2.5, 2.5]\n");
  for (const std::string& e : engines()) {
    r = run("run " + kDir + "zero_d.tir --input A=" + d +
            "x0_f32.npy --input n=4 --output B=%/b.npy --engine " + e);
    EXPECT_EQ(r.code, 0) << r.err;
    NDArray b = read_npy(tmp() + "b.npy");
    EXPECT_EQ(b.shape().size(), 0u) << e;
    EXPECT_EQ(b.get(0), 10.0) << e;
    EXPECT_TRUE(has(r.out, "C: i64[] sum=12000000000 first=[12000000000]\n")) << r.out;
  }
  r = run("check-grad " + kDir + "zero_d.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("parse " + kDir + "zero_d.tir");
  EXPECT_TRUE(has(r.out, "func z(A: f32[], n: i32) -> (B: f32[], C: i64[]) {\n  block b() {\n")) << r.out;
}

// CLI.md: "Every subcommand reads a .tir file (or - for standard input)"; a script error read from
// standard input is reported as <stdin>:LINE:COL, exit 2, by every subcommand.
TEST(AcceptR15, StdinForEverySubcommand) {
  const std::string good = slurp(cases() + "r15/mm.tir");
  const std::string bad = "func f(A: f32[4]) -> (B: f32[4]) {\n  B[0] = A[0] +\n}\n";
  const std::vector<std::string> subs = {
      "parse -",    "run - --random 1", "grad -",   "check-grad -",
      "schedule -", "stats -",          "verify -", "bench - --repeat 1 --warmup 0"};
  for (const std::string& s : subs) {
    if (!has_llvm() && s.rfind("bench", 0) == 0) continue;
    CliRun r = run(s, good);
    EXPECT_EQ(r.code, 0) << s << ": " << r.err;
    EXPECT_NE(r.out, "") << s;
    r = run(s, bad);
    EXPECT_EQ(r.code, 2) << s;
    EXPECT_EQ(r.err, "<stdin>:3:1: error: unexpected '}'\n") << s;
  }
}

// CLI.md: `stats --json` has "the function's totals at the top level (flops, loads, stores,
// iterations) and one entry per block under blocks". Exact object of a 4x3x8 matmul (static and
// --dynamic), and counts beyond 2^64 (a 4e9^3 i64 grid) stay JSON numbers; check-grad --json.
TEST(AcceptR15, JsonOutputs) {
  const std::string mm_json =
      "{\n  \"blocks\": {\n    \"C\": {\n      \"bytes\": 1584,\n      \"flops\": 192,\n      "
      "\"iterations\": 96,\n"
      "      \"loads\": 288,\n      \"name\": \"C\",\n      \"stores\": 108\n    }\n  },\n  \"bytes\": "
      "1584,\n"
      "  \"flops\": 192,\n  \"function\": \"mm\",\n  \"iterations\": 96,\n  \"loads\": 288,\n  \"mode\": "
      "\"MODE\",\n"
      "  \"stores\": 108\n}\n";
  CliRun r = run("stats " + kDir + "mm.tir --json");
  EXPECT_EQ(r.code, 0);
  std::string want = mm_json;
  want.replace(want.find("MODE"), 4, "static");
  EXPECT_EQ(r.out, want);
  r = run("stats --json --dynamic " + kDir + "mm.tir");
  want = mm_json;
  want.replace(want.find("MODE"), 4, "dynamic");
  EXPECT_EQ(r.out, want);
  r = run("stats " + kDir + "big.tir --func big --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "  \"iterations\": 6.4e+28,\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  \"flops\": 1.28e+29,\n")) << r.out;
  r = run("stats " + kDir + "big.tir --func small --input n=100000000000");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "total                  100000000000   100000000000   100000000000   100000000001"))
      << r.out;
  r = run("check-grad " + kDir + "mm.tir --json --full --wrt B");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* key : {"\"function\": \"mm\"", "\"mode\": \"full\"", "\"passed\": 1", "\"failed\": 0",
                          "\"name\": \"B\"", "\"checks\": 24", "\"rtol\": 0.0001", "\"atol\": 1e-05"})
    EXPECT_TRUE(has(r.out, key)) << key << "\n" << r.out;
  EXPECT_FALSE(has(r.out, "\"name\": \"A\"")) << r.out;
}

// LANGUAGE.md: schedule items "in any order"; two items for one function compose (the second sees
// the loops of the first: `l = get_loops(b)` has 4 loops after the split), TVM's list indexing and
// keyword `factors=[None, 4]`. verify passes on both engines.
TEST(AcceptR15, TwoScheduleItemsForOneFunction) {
  CliRun r = run("schedule " + kDir + "two_schedules.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "  for j in serial(3) {\n    for ii in parallel(2) {\n      for io in serial(2) {\n"
                  "        for k in serial(8) {\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  for a in serial(4) {\n    for c in vectorized(4) {\n")) << r.out;
  r = run("verify " + kDir + "two_schedules.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "mm [interp]: ok")) << r.out;
  EXPECT_TRUE(has(r.out, "relu [interp]: ok")) << r.out;
}

// Names that are intrinsics, loop kinds and iter-var kinds ("not reserved": a function `max`, a
// scalar `exp`, a buffer `min`, a loop var `serial` shadowing a parameter, an iter var `spatial`,
// lets `sqrt` / `log`) while the intrinsics are called: printed as a fixpoint, renaming only the
// shadowing loop var, and run on both engines (exp(0.5) + log(4) + max(0.5, 3) + vi).
TEST(AcceptR15, NamesShadowingIntrinsicsAndKinds) {
  CliRun r = run("parse " + kDir + "shadow.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "  for serial_1 in serial(n) {\n    block exp(spatial: spatial(n) = serial_1) {\n"))
      << r.out;
  const std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  for (const std::string& e : engines()) {
    r = run("run - --input n=3 --input exp=0.5 --input min=1 --input serial=2 --engine " + e, printed);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "grid: f32[3] sum=21.105 first=[6.03502, 7.03502, 8.03502]\n") << e;
  }
}

// Blocks: a scan prefix sum over a symbolic extent, padding guarded by if_then_else, the same with
// select (both arms evaluated: an out-of-bounds load, exit 2 at the store), and nested blocks with a
// block-local alloc, on both engines. (check-grad of `nest` is refused: "block outer: loops inside
// a block body are not supported", an autodiff limitation reported to its owner.)
TEST(AcceptR15, BlockSemantics) {
  const std::string f = kDir + "semantics.tir";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + f + " --func cumsum --input n=5 --input X=1 --engine " + e);
    EXPECT_EQ(r.out, "Y: f32[5] sum=15 first=[1, 2, 3, 4, 5]\n") << e << r.err;
    r = run("run " + f + " --func pad --input A=2 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[8] sum=10 first=[-1, 2, 2, 2, 2, 2, 2, -1]\n") << e << r.err;
    r = run("run " + f + " --func nest --input A=1 --engine " + e);
    EXPECT_EQ(r.out, "S: f32[4] sum=32 first=[8, 8, 8, 8]\n") << e << r.err;
    r = run("run " + f + " --func padsel --input A=2 --engine " + e);
    EXPECT_EQ(r.code, 2) << e;
    EXPECT_EQ(r.out, "") << e;
    EXPECT_TRUE(has(r.err, "r15/semantics.tir:18:7: error: block \"p\": out-of-bounds load A[-1]")) << r.err;
  }
  CliRun r = run("check-grad " + f + " --func pad");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// Statements outside blocks: a function-level let, `if` / `else` on a bool scalar, `serial(0, half)`,
// `serial(half, n)`, thread_binding, parallel, vectorized, a grid whose blocks have a `where` with
// `&&`: both branches on both engines, verify (no schedule item: --func) and check-grad.
TEST(AcceptR15, ControlFlowOutsideBlocks) {
  const std::string f = kDir + "control.tir";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + f + " --input n=5 --input flag=true --input A=1 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[5, 8] sum=288 first=[3, 3, 3, 3, 3, 3, 3, 3, ...]\n") << e << r.err;
    r = run("run " + f + " --input n=5 --input flag=false --input A=1 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[5, 8] sum=224 first=[-1, -1, -1, -1, -1, -1, -1, -1, ...]\n") << e << r.err;
  }
  CliRun r = run("verify " + f + " --func mix --input n=7");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("check-grad " + f);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("parse " + f);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
}

// Deep nesting: 30 blocks, each nested in the previous one with its own loop (bindings use the
// enclosing block's iter var), print as a fixpoint, run on both engines, differentiate, and count.
TEST(AcceptR15, ThirtyNestedBlocks) {
  const std::string f = kDir + "deep30.tir";
  CliRun r = run("parse " + f);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  for (const std::string& e : engines()) {
    r = run("run " + f + " --input A=1 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[2] sum=6 first=[3, 3]\n") << e << r.err;
  }
  r = run("check-grad " + f);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("stats " + f);
  EXPECT_TRUE(has(
      r.out,
      "\ntotal                            60              2              2              2             16\n"))
      << r.out;
}

// Lexical: comments after `in`, inside a value range, between a block name and its iter vars,
// between unary `-` and its operand; CR LF and tab; `; ;`; no newline at the end. A 5000-character
// function name, and non-ASCII text in comments and strings.
TEST(AcceptR15, CommentsWhitespaceAndLongNames) {
  CliRun r = run("run " + kDir + "comments.tir --input A=1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=-8 first=[-2, -2, -2, -2]\n");
  r = run("parse " + kDir + "comments.tir");
  EXPECT_TRUE(has(r.out, "func f(A: f32[4] in [-1.0, 1.0]) -> (B: f32[4]) {\n  for i in serial(4) {\n"))
      << r.out;
  const std::string name(5000, 'x');
  const std::string src =
      "# h\xc3\xa9llo \xe2\x9c\x93\nfunc " + name +
      "(A: f32[4] # \xc3\xbc\n  , n: i32) -> (B # c\n  : f32[4]) { # c\n"
      "  call_extern(\"ext_\xe2\x9c\x93\", A.data)\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] * f32(n) } } ;\n} ;";
  r = run("parse -", src);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "func " + name + "(A: f32[4], n: i32) -> (B: f32[4]) {\n")) << r.out.substr(0, 100);
  EXPECT_TRUE(has(r.out, "call_extern(\"ext_\xe2\x9c\x93\", A.data)")) << r.out;
  // Without the call_extern (which cannot be interpreted) it runs.
  std::string runnable = src;
  runnable.erase(runnable.find("  call_extern"), runnable.find("  for i") - runnable.find("  call_extern"));
  r = run("run - --input A=1 --input n=3", runnable);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=12 first=[3, 3, 3, 3]\n");
}

// Literals: negations, nested `!`, chained comparisons parenthesised, an i64 literal sum near the
// limit, f64 literals (0.1 vs f64(f32(0.1)), a subnormal), f16 literals overflowing to inf
// (65520 * 0.0 is nan), max_value / min_value of f16: printed as a fixpoint.
TEST(AcceptR15, LiteralPrintingFixpoint) {
  CliRun r = run("parse " + kDir + "literals.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "      Q[vi] = (!(!P[vi]) == !(A[vi] < 0.0)) != ((A[vi] < 1.0) == P[vi])\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "      G[vi] = H[vi] + 6.55e+04 + inf * 0.0 + 6.55e+04 - -6.55e+04 + 0.0 + 6e-08\n"))
      << r.out;
  const std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
}

// Small networks: a stride-2 conv whose padding is an if_then_else inside the reduction, max pooling
// (`max=` from min_value), log-sum-exp (init `-inf`): both engines against NumPy; every function of
// the file (also a depthwise conv, an MSE into a 0-d output, a product reduction) passes check-grad.
TEST(AcceptR15, SmallNetworks) {
  for (const std::string& e : engines()) {
    check_run_against_npy("r15/nets.tir", "conv_s2", e, {{"X", "in_cx"}, {"W", "in_cw"}},
                          {{"Y", "ref_conv_s2"}}, 1e-5, "../r15/");
    check_run_against_npy("r15/nets.tir", "maxpool", e, {{"X", "in_px"}}, {{"Y", "ref_maxpool"}}, 0,
                          "../r15/");
    check_run_against_npy("r15/nets.tir", "logsumexp", e, {{"X", "in_lx"}}, {{"Y", "ref_logsumexp"}}, 1e-5,
                          "../r15/");
  }
  for (const char* f : {"conv_s2", "maxpool", "dwconv", "mse", "prod", "logsumexp"}) {
    CliRun r = run("check-grad " + kDir + "nets.tir --func " + f);
    EXPECT_EQ(r.code, 0) << f << ": " << r.out << r.err;
    EXPECT_TRUE(has(r.out, " passed, 0 failed\n")) << f << ": " << r.out;
  }
}

// An output given as an input: only `tirc run` has `--output`, so only its message suggests it
// (stats, check-grad and bench said "save it with --output C=FILE.npy", an option they lack).
TEST(AcceptR15, OutputGivenAsInput) {
  for (const char* c : {"stats", "check-grad", "bench --repeat 1"}) {
    if (!has_llvm() && std::string(c).rfind("bench", 0) == 0) continue;
    CliRun r = run(std::string(c) + " " + kDir + "mm.tir --input C=1");
    EXPECT_EQ(r.code, 2) << c;
    EXPECT_EQ(
        r.err,
        "tirc: error: --input C=1: C is an output of function mm, not an input (outputs are computed by the "
        "function)\n")
        << c;
  }
  CliRun r = run("run " + kDir + "mm.tir --input C=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: --input C=1: C is an output of function mm, not an input (save it with --output "
            "C=FILE.npy)\n");
}

// Loop bounds are i32 or i64 (LANGUAGE.md: "Index expressions are integers (default i32, i64
// allowed)"). A `serial(u8(200))` loop (or `serial(n)` with `n: u8` = 200) ran 200 iterations in the
// interpreter and none in compiled code (a signed compare of the u8 extent): both engines exited 0
// with different results. Such loops are refused, at the bound; u8 iter vars and indices stay
// allowed (they ran the same on both engines).
TEST(AcceptR15, SmallIntegerLoopBoundsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"func f(A: f32[200]) -> (B: f32[200]) {\n  for i in serial(u8(200)) {\n    block b(vi: spatial(200) = "
       "i32(i)) { B[vi] = A[vi] }\n  }\n}\n",
       "<stdin>:2:19: error: loop extent must be i32 or i64, got u8 (cast it: i32(...))\n"},
      {"func f(n: u16, A: f32[4]) -> (B: f32[4]) {\n  for i, j in grid(4, n) {\n    block b(vi: spatial(4) = "
       "i) { "
       "B[vi] = A[vi] }\n  }\n}\n",
       "<stdin>:2:23: error: loop extent must be i32 or i64, got u16 (cast it: i32(...))\n"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(i8(0), i8(4)) {\n    block b(vi: spatial(4) = "
       "i32(i)) { B[vi] = A[vi] }\n  }\n}\n",
       "<stdin>:2:19: error: loop bound must be i32 or i64, got i8 (cast it: i32(...))\n"},
  };
  for (auto& [src, err] : cases) {
    CliRun r = run("run - --input A=1 --input n=3", src);
    EXPECT_EQ(r.code, 2) << src;
    EXPECT_EQ(r.err, err) << src;
  }
  const std::string ok =
      "func f(A: f32[200], U: u8[2]) -> (B: f32[200], C: f32[2]) {\n"
      "  for i in serial(200) {\n    block b(vi: spatial(u8(200)) = u8(i)) { B[vi] = A[vi] + f32(vi) }\n  }\n"
      "  for i in serial(i64(2)) {\n    block c(vi: spatial(2) = i32(i)) { C[vi] = A[U[vi]] }\n  }\n}\n";
  for (const std::string& e : engines()) {
    CliRun r = run("run - --input A=1 --input U=199 --show 2 --engine " + e, ok);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "B: f32[200] sum=20100 first=[1, 2, ...]\nC: f32[2] sum=2 first=[1, 1]\n") << e;
  }
}

// CLI.md: exit "1 when a check it performs fails". An rfactor-ed f32 sum of 4096 terms adds in
// another order: within the default tolerance verify passes, with zero tolerance it reports the
// mismatch on every engine and exits 1; check-grad with zero tolerance fails every input, exit 1.
TEST(AcceptR15, ExitCodeOneWhenACheckFails) {
  CliRun r = run("verify " + kDir + "rfactor_sum.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("verify " + kDir + "rfactor_sum.tir --rtol 0 --atol 0");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "s [interp]: MISMATCH: B[0]: expected ")) << r.out;
  EXPECT_TRUE(has(r.out, "0 passed, " + std::to_string(engines().size()) + " failed\n")) << r.out;
  EXPECT_EQ(r.err, "");
  r = run("check-grad " + kDir + "mm.tir --rtol 0 --atol 0");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "0 passed, 2 failed\n")) << r.out;
  r = run("check-grad " + kDir + "mm.tir --rtol 0 --atol 0 --json");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "\"failed\": 2")) << r.out;
}

// Gradients of gradients: `tirc grad -o` output read back, checked, differentiated again (LANGUAGE.md:
// F_grad "is itself an ordinary function of this language ... differentiated again").
TEST(AcceptR15, SecondOrderGradientFromAFile) {
  const std::string src =
      "func sq(X: f32[8]) -> (Y: f32[8]) {\n"
      "  for i in serial(8) { block b(vi: spatial(8) = i) { Y[vi] = X[vi] * X[vi] * X[vi] + sin(X[vi]) } }\n"
      "}\n";
  const std::string dir = scratch_dir("r15_grad");
  write_file(dir + "sq.tir", src);
  CliRun r = run("grad " + dir + "sq.tir -o " + dir + "g1.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("check-grad " + dir + "g1.tir --func sq_grad");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "2 passed, 0 failed\n")) << r.out;
  r = run("grad " + dir + "g1.tir --func sq_grad --wrt Y_grad");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(
      r.out, "func sq_grad_grad(X: f32[8], Y_grad: f32[8], X_grad_grad: f32[8]) -> (Y_grad_grad: f32[8]) {"))
      << r.out;
}

// A reduction without `init` reads its output before writing it: "reading an element of an output
// ... before the function wrote it is an error", at the store, exit 2, from run / verify /
// check-grad / stats --dynamic (the interpreter checks; compiled code does not, docs/codegen.md).
TEST(AcceptR15, ReductionWithoutInitReadsUninitialised) {
  const std::string src =
      "func f(A: f32[4]) -> (B: f32[1]) {\n  for i in serial(4) {\n    block b(vi: reduce(4) = i) {\n"
      "      B[0] += A[vi]\n    }\n  }\n}\n";
  const std::string msg =
      "<stdin>:4:7: error: block \"b\": read of uninitialised element B[0] of output buffer B\n";
  for (const char* c : {"run - --input A=1", "verify - --func f", "stats - --dynamic"}) {
    CliRun r = run(c, src);
    EXPECT_EQ(r.code, 2) << c;
    EXPECT_TRUE(has(r.err, msg)) << c << ": " << r.err;
  }
  CliRun r = run("check-grad -", src);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err, "");
}

}  // namespace
}  // namespace tirc::accept

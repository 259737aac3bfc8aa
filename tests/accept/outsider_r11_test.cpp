// Acceptance round 11 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code, on
// what rounds 1-10 left out: product reductions whose `init` reads at the reduce var (the init
// runs where every reduce var is 0), several outputs of `tirc run` named to one file, the spec's
// examples piped through chains of subcommands (`grad | grad | check-grad`, `grad | build
// --target nvptx` checked by ptxas), odd but legal layout (trailing commas, CR LF, tabs, comments
// with non-ASCII text between tokens) read and printed as a fixpoint, and the engines agreeing on
// integer division of the most negative values and on NaN / inf through casts and select.
// Case files: tests/accept/cases/r11/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"
#include "tests/shell.h"

namespace tirc::accept {
namespace {

// LANGUAGE.md, Blocks: "`init` runs at the point where every reduce var equals 0". An init that
// reads at the reduce var (`init { C[vi] = A[vk] }`) starts the product at A[0]. F_grad multiplied
// the factor of every reduce point by the init evaluated at that point's vk instead of vk = 0:
// `check-grad --full` said "A: max abs err 1.854e-02, max rel err 7.263e-01 ... FAILED", and the
// gradient of the product 2 * 3 * 5 * 7 was [210, 140, 126, 150] instead of [210, 140, 84, 60] (a
// silently wrong gradient from `tirc grad`). Sums, max and min reductions were right.
TEST(AcceptR11, ProductWhoseInitReadsAtTheReduceVar) {
  CliRun r = run("check-grad @/r11/prod_init.tir --func f --full");
  expect_passed(r, 1);
  r = run("check-grad @/r11/prod_init.tir --func g --full");
  expect_passed(r, 2);
  r = run("check-grad @/r11/prod_init.tir --func g --full --seed 3");
  expect_passed(r, 2);
  r = run("check-grad @/r11/prod_init.tir --func h --full");
  expect_passed(r, 1);

  // Exact values: C[vi] = A[0] * A[1] * A[2] * A[3] for both rows, cotangent 1.
  const std::string dir = scratch_dir("r11_prod");
  r = run("grad @/r11/prod_init.tir --func f -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  {
    NDArray a(DType::F32, {4});
    const double v[] = {2, 3, 5, 7};
    for (int i = 0; i < 4; ++i) a.set(i, v[i]);
    write_npy(dir + "a.npy", a);
  }
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    r = run("run " + dir + "g.tir --func f_grad --input A=" + dir + "a.npy --input C_grad=1 --engine " +
            engine);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "A_grad: f32[4] sum=494 first=[210, 140, 84, 60]\n") << engine;
  }
  // F_grad is an ordinary function: its own gradient checks too.
  r = run("check-grad " + dir + "g.tir --func f_grad --full");
  expect_passed(r, 2);
}

// CLI.md: `tirc run ... [--output B=b.npy ...]` writes outputs as .npy. Two different outputs named
// to one file left only the last one written, exit 0 (`--output B=o.npy --output C=./o.npy`: o.npy
// held C, B was lost without a word). Now a usage error naming both outputs, before anything runs;
// the same output named twice (or to two files) is still fine.
TEST(AcceptR11, TwoOutputsToOneFileAreRefused) {
  const std::string src =
      "func f(A: f32[3]) -> (B: f32[3], C: i32[3]) {\n"
      "  for i in serial(3) {\n"
      "    block b(vi: spatial(3) = i) {\n"
      "      B[vi] = A[vi] * 2.0\n"
      "      C[vi] = i32(A[vi]) + 1\n"
      "    }\n"
      "  }\n"
      "}\n";
  CliRun r = run("run - --input A=1.5 --output B=%/o.npy --output C=%/./o.npy", src);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tirc: error: --output: outputs B and C are both written to " + tmp() +
                       "./o.npy (one file holds one array)\n");
  EXPECT_EQ(slurp(tmp() + "o.npy"), "");  // nothing written
  r = run("run - --input A=1.5 --output B=o.npy --output C=o.npy", src);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: --output: outputs B and C are both written to o.npy (one file holds one array)\n");
  // One output to two files, or twice to one file: both written, B in each.
  r = run("run - --input A=1.5 --output B=%/x.npy --output B=%/y.npy --output B=%/x.npy --output C=%/c.npy",
          src);
  ASSERT_EQ(r.code, 0) << r.err;
  NDArray x = read_npy(tmp() + "x.npy"), y = read_npy(tmp() + "y.npy"), c = read_npy(tmp() + "c.npy");
  EXPECT_EQ(x.get(2), 3.0);
  EXPECT_EQ(y.get(0), 3.0);
  EXPECT_EQ(c.dtype(), DType::I32);
  EXPECT_EQ(c.get(1), 2.0);
}

// CLI.md: every subcommand reads `-` (standard input), so subcommands chain through pipes as a user
// chains them: the spec's examples differentiated twice and checked, a gradient verified against
// the file's schedule items (`tirc grad` keeps them), a gradient compiled for the GPU and accepted
// by ptxas, and printed text that prints back the same. A third derivative hits the names
// LANGUAGE.md fixes (the cotangent of softmax_grad_grad's output X_grad is X_grad_grad, already an
// input): refused with the reason.
TEST(AcceptR11, SpecExamplesThroughPipes) {
  const std::string ex = std::string(TIRC_SOURCE_DIR) + "/examples/";
  const std::string tirc = TIRC_BINARY;
  auto sh = [&](const std::string& cmd) {
    return tirc::testing::sh("cd " + scratch_dir("r11_pipes") + " && " + cmd);
  };
  auto r = sh(tirc + " grad " + ex + "softmax.tir | " + tirc + " grad - --func softmax_grad | " + tirc +
              " check-grad - --func softmax_grad");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 passed, 0 failed\n"), std::string::npos) << r.out;
  r = sh(tirc + " grad " + ex + "softmax.tir | " + tirc + " grad - --func softmax_grad | " + tirc +
         " grad - --func softmax_grad_grad");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(
      r.out,
      "tirc: error: gradient of softmax_grad_grad: the cotangent of output X_grad is named X_grad_grad, "
      "which "
      "is also the name of input X_grad_grad of softmax_grad_grad (LANGUAGE.md fixes both names): rename one "
      "of them\n");
  // parse | parse is a fixpoint on what grad printed.
  r = sh(tirc + " grad " + ex + "conv2d.tir | " + tirc + " parse - > a.tir && " + tirc + " parse a.tir | " +
         tirc + " parse - > b.tir && cmp a.tir b.tir");
  EXPECT_EQ(r.code, 0) << r.out;
#ifdef TIRC_WITH_LLVM
  r = sh(tirc + " grad " + ex + "matmul.tir | " + tirc + " verify -");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(
      r.out,
      "matmul [interp]: ok (max abs error 0)\nmatmul [jit]: ok (max abs error 0)\n2 passed, 0 failed\n");
  r = sh(tirc + " grad " + ex + "conv2d.tir | " + tirc + " build - --target nvptx -o k.ptx");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(slurp(scratch_dir("r11_pipes") + "k.ptx").find(".visible .entry conv2d_grad"), std::string::npos);
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (std::system((std::string("test -x ") + ptxas).c_str()) != 0) GTEST_SKIP() << "ptxas not installed";
  r = sh(std::string(ptxas) + " -arch=sm_80 k.ptx -o k.cubin");
  EXPECT_EQ(r.code, 0) << r.out;
#endif
}

// LANGUAGE.md, Lexical: "Newlines are white space", `#` comments, optional `;`. A script with CR LF
// line ends, tabs, comments holding non-ASCII text between tokens, trailing commas in every list
// (a value range `in [lo, hi, ]` too: it was "unexpected ','; expected ']'" while shapes,
// parameters, grids and iter vars took one) and `;` after statements and items reads, prints the
// canonical text, and runs.
TEST(AcceptR11, OddButLegalLayout) {
  CliRun r = run("parse @/r11/odd_layout.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "func f(A: f32[4, 3] in [-2.0, 2.5], n: i64 in [1, 3]) -> (B: f32[4]) {\n"
            "  for i in serial(4) {\n"
            "    for k in serial(3) {\n"
            "      block b(vi: spatial(4) = i, vk: reduce(3) = k) {\n"
            "        reads B[vi], A[vi, vk]\n"
            "        writes B[vi]\n"
            "        init {\n"
            "          B[vi] = 0.0\n"
            "        }\n"
            "        B[vi] = B[vi] + A[vi, vk] * f32(n)\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n"
            "\n"
            "schedule f {\n"
            "  b = get_block(\"b\")\n"
            "  i, k = get_loops(b)\n"
            "  parallel(i)\n"
            "}\n");
  const std::string canon = r.out;
  r = run("parse -", canon);
  EXPECT_EQ(r.out, canon);
  r = run("run @/r11/odd_layout.tir --input A=1.5 --input n=2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=36 first=[9, 9, 9, 9]\n");
  // The range is still a pair.
  r = run("parse -", "func f(A: f32[2] in [0, 1, 2]) -> (B: f32[2]) {}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:1:28: error: unexpected '2'; expected ']'\n");
}

// LANGUAGE.md: `//` floor division and `%` floor modulo, `truncdiv` / `truncmod`. The most negative
// i32 / i64 divided by -1 does not fit: it wraps as NumPy's (`np.int32(-2**31) // -1` is
// -2147483648, `% -1` is 0), in a vectorized loop too, and the engines agree (x86's idiv traps on
// it).
TEST(AcceptR11, MostNegativeDividedByMinusOne) {
  const std::string dir = scratch_dir("r11_int");
  auto save = [&](const std::string& name, DType t, std::vector<double> v) {
    NDArray a(t, {8});
    for (int i = 0; i < 8; ++i) a.set(i, v[i]);
    write_npy(dir + name, a);
  };
  const double i32min = -2147483648.0, i32max = 2147483647.0;
  const double i64min = -9223372036854775808.0;
  save("a.npy", DType::I32, {i32min, i32min, -7, 7, i32min, i32max, -1, 0});
  save("d.npy", DType::I32, {-1, 1, 2, -2, -1, -1, -1, -1});
  save("m.npy", DType::I64, {-1, 1, 2, -2, -1, -1, -1, -1});
  // (L[5] is 0: the NDArray is filled through doubles, which do not hold 2^63 - 1.)
  save("l.npy", DType::I64, {i64min, i64min, -7, 7, i64min, 0, -1, 0});
  const std::string expect =
      "B: i32[8] sum=-8589934598 first=[-2147483648, -2147483648, -4, -4, -2147483648, -2147483647, 1, 0]\n"
      "C: i32[8] sum=0 first=[0, 0, 1, -1, 0, 0, 0, 0]\n"
      "T: i32[8] sum=-8589934596 first=[-2147483648, -2147483648, -3, -3, -2147483648, -2147483647, 1, 0]\n"
      "U: i32[8] sum=0 first=[0, 0, -1, 1, 0, 0, 0, 0]\n"
      "P: i64[8] sum=9223372036854775801 first=[-9223372036854775808, -9223372036854775808, -5, -3, "
      "-9223372036854775808, 0, 1, "
      "0]\n"
      "Q: i64[8] sum=9223372036854775803 first=[-9223372036854775808, -9223372036854775808, -4, -2, "
      "-9223372036854775808, 0, 1, "
      "0]\n";
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    CliRun r = run("run @/r11/int_extremes.tir --input A=" + dir + "a.npy --input D=" + dir +
                   "d.npy --input L=" + dir + "l.npy --input M=" + dir + "m.npy --engine " + engine);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expect) << engine;
  }
}

}  // namespace
}  // namespace tirc::accept

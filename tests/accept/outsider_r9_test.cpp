// Acceptance round 9 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code, on
// what rounds 1-8 left out: text that `tirc schedule` and `tirc parse` printed but the parser did
// not read back (loops, brackets and expressions nested deeper than the parser's limits).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

std::string work() { return scratch_dir("r9_work"); }

// A `for` header over `n` variables of a grid with extents `ext` inside `nested` serial(1)
// loops, around `body`.
std::string nest(int n, int nested, const std::string& ext, const std::string& body) {
  std::string names, exts;
  for (int k = 0; k < n; ++k) {
    names += (k ? ", v" : "v") + std::to_string(k);
    exts += (k ? ", " : "") + ext;
  }
  std::string s = "func f(A: f32[4]) -> (B: f32[4]) {\n";
  for (int k = 0; k < nested; ++k) s += "for w" + std::to_string(k) + " in serial(1) {\n";
  s += "  for " + names + " in grid(" + exts + ") { " + body + " }\n";
  for (int k = 0; k < nested; ++k) s += "}\n";
  return s + "}\n";
}

// CLI.md: "Printing is a fixpoint: parse(print(m)) is structurally equal to m". The parser reads
// brackets nested at most 100 deep (docs/language.md, Limits), but a `grid` of N loops inside
// one pair of braces counted against a separate limit of 100 loops, and the canonical text prints
// a grid as N nested loops: `tirc parse` accepted 2 serial loops around a 98-variable grid and
// printed 102 levels of brackets, text that did not parse ("nesting too deep"). A schedule can
// nest loops deeper still: 40 splits of a 61-deep nest were printed by `tirc schedule` as text
// that did not read back. Now the `{` of a grid header counts one level per loop (every accepted
// function prints back), and `tirc schedule` refuses the instruction that makes the text too deep,
// at its position, as any refused instruction; running and verifying such a schedule still works.
TEST(AcceptR9, DeepNestingReadsBack) {
  // func `{` + 2 serial + 96 grid loops + `B[` = 100 levels: accepted, printed, read back.
  const std::string fits = nest(96, 2, "1", "B[0] = A[0] + 1.0");
  CliRun r = run("parse -", fits);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string printed = r.out;
  CliRun back = run("parse -", printed);
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(back.out, printed);
  r = run("run - --input A=1", printed);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=2 first=[2, 0, 0, 0]\n");

  // One loop more is refused at the `[` of the store (the text would nest 101 deep) ...
  const std::string over = nest(97, 2, "1", "B[0] = A[0] + 1.0");
  r = run("parse -", over);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  const size_t store = over.find("B[0]") - over.rfind('\n', over.find("B[0]"));
  EXPECT_EQ(r.err,
            "<stdin>:4:" + std::to_string(store + 1) + ": error: nesting too deep (more than 100 levels)\n");
  // ... and a grid that crosses the limit by itself at the variable that crosses it.
  const std::string wide = nest(120, 1, "1", "B[0] = A[0]");
  r = run("parse -", wide);
  EXPECT_EQ(r.code, 2);
  const std::string line3 = wide.substr(wide.find("  for "));
  EXPECT_EQ(r.err, "<stdin>:3:" + std::to_string(line3.find("v98,") + 1) +
                       ": error: nesting too deep (more than 100 levels, counting each loop of a grid as one "
                       "level)\n");

  // Sugar that prints one level deeper than written, at exactly the limit: `*=` prints as
  // `B[0] = B[0] * (...)`. `tirc parse` refuses to print it rather than print text that does
  // not read back (docs/language.md, Limits, known corner); nothing is written to -o.
  std::string idx = "0";
  for (int k = 0; k < 98; ++k) idx = "I[" + idx + "]";
  const std::string sugar =
      "func f(A: f32[4], I: i32[4]) -> (B: f32[4]) {\n  B[0] = 1.0\n  B[0] *= A[0] + A[" + idx + "]\n}\n";
  r = run("parse - -o %/out.tir", sugar);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "tirc: error: cannot print function f: its text would nest 101 levels deep (loops, blocks and "
            "brackets), more than the 100 levels the parser reads\n");
  EXPECT_FALSE(std::filesystem::exists(tmp() + "out.tir"));

  // A 60-deep nest (func + 60 + block + init + `B[` = 64 levels) split loop by loop: the 37th
  // split makes 97 loops, 101 levels.
  std::vector<std::string> names;
  for (int k = 0; k < 60; ++k) names.push_back("l" + std::to_string(k));
  std::string src = "func f(A: f32[4]) -> (B: f32[1]) {\n  for ";
  for (int k = 0; k < 60; ++k) src += (k ? ", " : "") + names[k];
  src += " in grid(4";
  for (int k = 1; k < 60; ++k) src += ", 1";
  src += ") {\n    block b(v: reduce(4) = l0) { init { B[0] = 0.0 } B[0] += A[v] * A[v] }\n  }\n}\n";
  src += "schedule f {\n  b = get_block(\"b\")\n  ";
  for (int k = 0; k < 60; ++k) src += (k ? ", " : "") + names[k];
  src += " = get_loops(b)\n";
  for (int k = 0; k < 60; ++k)
    src += "  a" + std::to_string(k) + ", c" + std::to_string(k) + " = split(l" + std::to_string(k) +
           ", [1, _])\n";
  src += "}\n";
  write_file(work() + "deep.tir", src);
  r = run("schedule " + work() + "deep.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            work() +
                "deep.tir:45:14: error: split: the scheduled function's text would nest 101 levels deep "
                "(loops, blocks and brackets), more than the 100 levels the parser reads\n");
  // 36 splits fit: the scheduled text reads back to the same text.
  std::string fewer = src.substr(0, src.find("  a36, c36"));
  fewer += "}\n";
  write_file(work() + "deep36.tir", fewer);
  r = run("schedule " + work() + "deep36.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  back = run("parse -", r.out);
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(back.out, r.out);
  // The deep schedule is legal: it runs and verifies (nothing is printed).
  r = run("verify " + work() + "deep.tir --engine interp");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "f [interp]: ok (max abs error 0)\n1 passed, 0 failed\n");
#ifdef TIRC_WITH_LLVM
  r = run("verify " + work() + "deep.tir --engine jit");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "f [jit]: ok (max abs error 0)\n1 passed, 0 failed\n");
#endif
}

// The same for expressions, which the parser reads at most 256 levels deep: compute_inline of a
// chain of blocks composes their expressions, 50 blocks of `X[vi] + 1.0 + 1.0 + 1.0 + 1.0 + 1.0`
// make a sum of 256 terms. `tirc schedule` printed it, and the text said "expression nested too
// deeply (more than 256 levels)" when read back; the instruction is now refused.
TEST(AcceptR9, DeepExpressionsReadBack) {
  const int n = 60;
  std::string src = "func f(A: f32[4]) -> (B" + std::to_string(n) + ": f32[4]) {\n";
  for (int k = 1; k < n; ++k) src += "  alloc B" + std::to_string(k) + ": f32[4]\n";
  for (int k = 1; k <= n; ++k)
    src += "  for i in serial(4) { block b" + std::to_string(k) + "(vi: spatial(4) = i) { B" +
           std::to_string(k) + "[vi] = " + (k == 1 ? std::string("A") : "B" + std::to_string(k - 1)) +
           "[vi] + 1.0 + 1.0 + 1.0 + 1.0 + 1.0 } }\n";
  src += "}\nschedule f {\n";
  for (int k = 1; k < n; ++k) src += "  compute_inline(get_block(\"b" + std::to_string(k) + "\"))\n";
  src += "}\n";
  write_file(work() + "inline.tir", src);
  CliRun r = run("schedule " + work() + "inline.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  // Line 172 is the 50th compute_inline (1 + 59 allocs + 60 blocks + 2 lines before the first).
  EXPECT_EQ(r.err,
            work() +
                "inline.tir:172:3: error: compute_inline: the scheduled function's text would not read back "
                "(expression nested too deeply (more than 256 levels))\n");
  // 49 inlines fit and read back; the whole schedule is legal and verifies.
  std::string fewer = src.substr(0, src.find("  compute_inline(get_block(\"b50\"))")) + "}\n";
  r = run("schedule -", fewer);
  ASSERT_EQ(r.code, 0) << r.err;
  CliRun back = run("parse -", r.out);
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(back.out, r.out);
  r = run("verify " + work() + "inline.tir --engine interp");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "f [interp]: ok (max abs error 0)\n1 passed, 0 failed\n");
}

// Round 8 made `--rtol 1e999` / `--rtol inf` legal (Python's float() reads inf). A tolerance of
// inf failed every value that is zero: `err <= atol + rtol * |x|` with |x| = 0 is `0 <= NaN`, so
// `tirc verify --rtol inf` said "MISMATCH: B[0]: expected -0, got -0" (exit 1) and `check-grad
// --rtol inf` failed a gradient of 0 computed exactly. An infinite tolerance now accepts any
// finite error.
TEST(AcceptR9, InfiniteTolerancesAcceptZeros) {
  const std::string src =
      "func f(A: f32[16]) -> (B: f32[16]) {\n"
      "  for i in serial(16) { block b(vi: spatial(16) = i) { B[vi] = max(A[vi], 0.5) * 0.0 } }\n"
      "}\n"
      "schedule f {\n  b = get_block(\"b\")\n  i, = get_loops(b)\n  i0, i1 = split(i, [4, 4])\n}\n";
  for (const char* tol : {"--rtol inf", "--rtol 1e999 --atol inf", "--atol 1e999"}) {
    SCOPED_TRACE(tol);
    CliRun r = run(std::string("verify - --engine interp ") + tol, src);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "f [interp]: ok (max abs error 0)\n1 passed, 0 failed\n");
  }
#ifdef TIRC_WITH_LLVM
  CliRun j = run("verify - --engine jit --rtol inf", src);
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out, "f [jit]: ok (max abs error 0)\n1 passed, 0 failed\n");
#endif
  // The gradient of max(A, 0.5) * 0.0 is 0 everywhere.
  CliRun r = run("check-grad - --rtol inf", src);
  expect_passed(r, 1);
  // At the kink A = 0.5 the one-sided gradient differs from central differences by 0.5: an
  // infinite tolerance accepts it, the default fails it (exit 1).
  const std::string kink =
      "func f(A: f32[4]) -> (B: f32[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = max(A[vi], 0.5) } }\n"
      "}\n";
  r = run("check-grad - --input A=0.5 --rtol inf", kink);
  expect_passed(r, 1);
  r = run("check-grad - --input A=0.5", kink);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("0 passed, 1 failed\n"), std::string::npos) << r.out;
}

// docs/language.md (round 7/8): command-line values and numeric options read as Python's int() /
// float(). strtod also read C's hex floats and `nan(...)`: `--input X=0x10` filled X with 16 and
// `--rtol 0x1p-3` was 0.125, while float('0x10') is an error in Python and an integer parameter
// already refused `n=0x10`.
TEST(AcceptR9, ValuesReadAsPythonFloat) {
  const std::string src = "func f(n: i32, X: f32[2]) -> (Y: f32[2]) {\n  Y[0] = f32(n)\n  Y[1] = X[0]\n}\n";
  struct Bad {
    std::string args, msg;
  } bad[] = {
      {"run - --input n=1 --input X=0x10", "tirc: error: parameter X: '0x10' is not a number\n"},
      {"run - --input n=1 --input X=0X1p3", "tirc: error: parameter X: '0X1p3' is not a number\n"},
      {"run - --input n=1 --input 'X=nan(5)'", "tirc: error: parameter X: 'nan(5)' is not a number\n"},
      {"run - --input n=0x10 --input X=1", "tirc: error: parameter n: '0x10' is not an integer\n"},
      {"check-grad - --input n=1 --rtol 0x1p-3",
       "--rtol: '0x1p-3' is not a number\nRun with --help for more information.\n"},
  };
  for (auto& b : bad) {
    SCOPED_TRACE(b.args);
    CliRun r = run(b.args, src);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, b.msg);
  }
  // What float() reads still works: inf, infinity, nan in any case, exponents, leading dots.
  CliRun r = run("run - --input n=2 --input X=-Infinity", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Y: f32[2] sum=-inf first=[2, -inf]\n");
  r = run("run - --input n=2 --input 'X= .5e1 '", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Y: f32[2] sum=7 first=[2, 5]\n");
  r = run("run - --input n=2 --input X=NaN", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Y: f32[2] sum=nan first=[2, nan]\n");
}

}  // namespace
}  // namespace tirc::accept

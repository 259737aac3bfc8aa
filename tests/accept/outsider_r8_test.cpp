// Acceptance round 8 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code, on
// what rounds 1-7 left out: zero-size dimensions written as constants (`f32[0]`, `spatial(0)`)
// against the ones that were already accepted (`f32[2 - 2]`, `serial(0)`, a size 0 at run time);
// constant extents written as expressions (`serial(2 - 3)`, `f32[2147483647 + 1]`); a `grid` of
// thousands of loops inside one pair of braces; the key names and validity of every `--json`
// output; numeric options (`--threads -2`, `--repeat 2.5`, `--rtol 1e999`, blanks around values);
// .npy headers whose dtype has no byte-order character; `-o` for schedule and parse; invisible
// characters in the text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

std::string work() { return scratch_dir("r8_work"); }

// ---------------------------------------------------------------------------------------------
// Zero-size dimensions, as NumPy's np.zeros((0, 3)) and TVM's T.Buffer((0,), ...): `f32[0]` said
// "buffer shape must be positive, got 0" and `spatial(0)` "iter var extent must be positive, got
// 0", while `f32[2 - 2]`, `serial(0)` and `n = 0` at run time were accepted, and `tirc grad` of
// such a function printed `spatial(0)`, text that did not read back. Now 0 is accepted wherever an
// extent is written; every subcommand handles it (NumPy: the sum over an empty axis is 0).
TEST(AcceptR8, ZeroSizeDimensionsEverywhere) {
  const std::string src =
      "func f(A: f32[4, 0], E: f32[0]) -> (B: f32[4], C: f32[0, 3]) {\n"
      "  alloc T: f32[0]\n"
      "  for i, k in grid(4, 0) {\n"
      "    block b(vi: spatial(4) = i, vk: reduce(0) = k) {\n"
      "      init { B[vi] = 0.0 }\n"
      "      B[vi] += A[vi, vk]\n"
      "    }\n"
      "  }\n"
      "  for i, j in grid(0, 3) {\n"
      "    block c(vi: spatial(0) = i, vj: spatial(3) = j) { C[vi, vj] = E[vi] * 2.0 }\n"
      "  }\n"
      "}\n";
  write_file(work() + "zero.tir", src);
  const std::string want = "B: f32[4] sum=0 first=[0, 0, 0, 0]\nC: f32[0, 3] sum=0 first=[]\n";
  std::vector<std::string> engines = {"interp"};
#ifdef TIRC_WITH_LLVM
  engines.push_back("jit");
#endif
  for (const std::string& e : engines) {
    SCOPED_TRACE(e);
    CliRun r = run("run " + work() + "zero.tir --random 1 --engine " + e + " -o C=%/c.npy");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want);
    EXPECT_EQ(read_npy(tmp() + "c.npy").shape(), (std::vector<int64_t>{0, 3}));
  }
  // Inputs of size 0 from NumPy.
  write_npy(work() + "a.npy", NDArray(DType::F32, {4, 0}));
  write_npy(work() + "e.npy", NDArray(DType::F32, {0}));
  CliRun r = run("run " + work() + "zero.tir --input A=" + work() + "a.npy --input E=" + work() + "e.npy");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);

  // The canonical text and the gradient read back.
  r = run("parse " + work() + "zero.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("func f(A: f32[4, 0], E: f32[0]) -> (B: f32[4], C: f32[0, 3]) {\n  alloc T: f32[0]\n"),
            std::string::npos)
      << r.out;
  write_file(work() + "zero_p.tir", r.out);
  EXPECT_EQ(run("parse " + work() + "zero_p.tir").out, r.out);
  r = run("grad " + work() + "zero.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  write_file(work() + "zero_g.tir", r.out);
  CliRun back = run("parse " + work() + "zero_g.tir");
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(back.out, r.out);
  r = run("check-grad " + work() + "zero.tir");
  expect_passed(r, 2);
  r = run("stats " + work() + "zero.tir --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["iterations"], 0);
  EXPECT_EQ(j["blocks"]["b"]["iterations"], 0);
  EXPECT_EQ(j["blocks"]["c"]["flops"], 0);

  // `serial(0)` and `spatial(0)` alike, also under a schedule (verify compares both engines).
  const std::string sched = src +
                            "schedule f {\n  b = get_block(\"c\")\n  x, y = get_loops(b)\n  z = fuse(x, y)\n"
                            "  z0, z1 = split(z, [2, _])\n}\n";
  r = run("verify - --engine interp", sched);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "f [interp]: ok (max abs error 0)\n1 passed, 0 failed\n");

  // Negative constants stay errors, at the extent.
  struct Case {
    std::string text, msg;
  } cases_[] = {
      {"func f(A: f32[-1]) -> (B: f32[1]) { B[0] = 1.0 }\n",
       ":1:15: error: buffer shape must not be negative, got -1"},
      {"func f(A: f32[1]) -> (B: f32[1]) { alloc T: f32[2, -3]\n B[0] = 1.0 }\n",
       ":1:52: error: alloc shape must not be negative, got -3"},
      {"func f(A: f32[1]) -> (B: f32[1]) {\n  for i in serial(1) { block b(v: spatial(-2) = i) { B[0] = 1.0 "
       "} }\n}\n",
       ":2:43: error: iter var extent must not be negative, got -2"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.text);
    r = run("parse -", c.text);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "<stdin>" + c.msg + "\n");
  }
}

// LANGUAGE.md: shape entries and extents are "integer expressions of literals and scalar
// parameters". The parse-time checks looked only at a bare literal: `serial(2 - 3)` ran no
// iteration, `f32[0 - 1]` and `alloc T: f32[1 - 2]` failed only when run (without a position;
// the JIT ran the latter), `spatial(2 - 3)` said "binding ... is outside its domain [0, -1)". A
// constant whose i32 arithmetic wraps (`f32[2147483647 + 1]`, `65536 * 65536`) was the wrapped
// value, and `serial(-2147483648, 2147483647)` (2^32 - 1 iterations, more than its i32 extent
// holds) silently ran none; `f32[4 // 0]` said "integer division by zero in a shape expression"
// without a position when run. Each is now one positioned error.
TEST(AcceptR8, ConstantExpressionsAsExtents) {
  const std::string head = "func f(A: f32[1]) -> (B: f32[1]) {\n";
  struct Case {
    std::string text, msg;
  } cases_[] = {
      {head + "  for i in serial(2 - 3) { B[0] = 1.0 }\n}\n",
       ":2:19: error: loop extent must not be negative, got -1"},
      {head + "  for i in serial(3, 4 - 2) { B[0] = 1.0 }\n}\n", ":2:22: error: empty loop range [3, 2)"},
      {head + "  for i, j in grid(2, 1 - 2) { B[0] = 1.0 }\n}\n",
       ":2:23: error: loop extent must not be negative, got -1"},
      {head + "  for i in serial(1) { block b(v: spatial(2 - 3) = i) { B[0] = 1.0 } }\n}\n",
       ":2:43: error: iter var extent must not be negative, got -1"},
      {head + "  alloc T: f32[1 - 2]\n  B[0] = 1.0\n}\n",
       ":2:16: error: alloc shape must not be negative, got -1"},
      {"func f(A: f32[0 - 1]) -> (B: f32[1]) { B[0] = 1.0 }\n",
       ":1:15: error: buffer shape must not be negative, got -1"},
      {"func f(A: f32[2147483647 + 1]) -> (B: f32[1]) { B[0] = 1.0 }\n",
       ":1:15: error: buffer shape 2147483647 + 1 overflows i32"},
      {"func f(A: f32[65536 * 65536]) -> (B: f32[1]) { B[0] = 1.0 }\n",
       ":1:15: error: buffer shape 65536 * 65536 overflows i32"},
      {"func f(A: f32[4 // 0]) -> (B: f32[1]) { B[0] = 1.0 }\n",
       ":1:15: error: buffer shape 4 // 0 divides by zero"},
      {head + "  alloc T: f32[2, 1 % (1 - 1)]\n  B[0] = 1.0\n}\n",
       ":2:19: error: alloc shape 1 % (1 - 1) divides by zero"},
      {head + "  for i in serial(2147483647 + 1) { B[0] = 1.0 }\n}\n",
       ":2:19: error: loop extent 2147483647 + 1 overflows i32"},
      {head + "  for i in serial(-2147483648, 2147483647) { B[0] = 1.0 }\n}\n",
       ":2:32: error: loop range [-2147483648, 2147483647) has more than 2147483647 iterations, too many "
       "for i32 (use i64 bounds)"},
      {head + "  for i in serial(i64(-9223372036854775807), i64(9223372036854775807)) { B[0] = 1.0 }\n}\n",
       ":2:46: error: loop range [-9223372036854775807, 9223372036854775807) has more than "
       "9223372036854775807 iterations, too many for i64 (use a smaller range)"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.text);
    for (const char* sub : {"parse -", "run - --input A=1"}) {
      CliRun r = run(sub, c.text);
      EXPECT_EQ(r.code, 2);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err, "<stdin>" + c.msg + "\n");
    }
  }
  // Within range they are ordinary extents; an explicit cast converts as written (u8(300) = 44).
  CliRun r = run("run - --input A=1",
                 "func f(A: f32[1]) -> (B: f32[u8(300)], C: f32[i64(65536) * 2]) {\n"
                 "  for i in serial(2 - 1, 7 - 2) { B[i] = f32(i) }\n"
                 "  for i in serial(-2147483648, -2147483647) { C[0] = f32(i) }\n"
                 "}\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "B: f32[44] sum=10 first=[0, 1, 2, 3, 4, 0, 0, 0, ...]\n"
            "C: f32[131072] sum=-2.14748e+09 first=[-2.14748e+09, 0, 0, 0, 0, 0, 0, 0, ...]\n");
}

// Deep nesting (LANGUAGE.md is silent; docs/language.md, Limits): brackets nest at most 100 deep,
// but `for v0, v1, ... in grid(1, 1, ...)` makes any number of loops inside one pair of braces.
// A 20,000-loop grid crashed every subcommand (stack overflow, after a minute); loops now nest at
// most 100 deep, a grid of N variables counting N. Round 9 made the count the bracket count of
// the canonical text (which prints a grid as N nested loops): the function's `{` and the store's
// `[` count too, so that every accepted function prints as text that reads back
// (outsider_r9_test.cpp, DeepNestingReadsBack).
TEST(AcceptR8, GridOfThousandsOfLoops) {
  auto grid = [](int n, int nested) {
    std::string names, ext;
    for (int k = 0; k < n; ++k) {
      names += (k ? ", v" : "v") + std::to_string(k);
      ext += k ? ", 1" : "1";
    }
    std::string s = "func f(A: f32[4]) -> (B: f32[4]) {\n";
    for (int k = 0; k < nested; ++k) s += "for w" + std::to_string(k) + " in serial(1) {\n";
    s += "  for " + names + " in grid(" + ext + ") { B[0] = A[0] + 1.0 }\n";
    for (int k = 0; k < nested; ++k) s += "}\n";
    return s + "}\n";
  };
  std::string big = grid(20000, 0);
  write_file(work() + "grid.tir", big);
  const std::string col = std::to_string(big.find("v99,") - big.find("  for ") + 1);
  for (const char* sub : {"parse", "run --input A=1", "stats", "grad", "check-grad", "schedule"}) {
    SCOPED_TRACE(sub);
    std::string s = sub, name = s.substr(0, s.find(' '));
    CliRun r = run(name + " " + work() + "grid.tir" + (name == s ? "" : s.substr(s.find(' '))));
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err,
              work() + "grid.tir:2:" + col +
                  ": error: nesting too deep (more than 100 levels, counting each loop of a grid as one "
                  "level)\n");
  }
  // Loops written with braces count too: func + 2 + 97 + `B[` is one too many, func + 2 + 96 + `B[`
  // fits and runs.
  CliRun r = run("parse -", grid(97, 2));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(": error: nesting too deep (more than 100 levels)\n"), std::string::npos) << r.err;
  r = run("run - --input A=1", grid(96, 2));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=2 first=[2, 0, 0, 0]\n");
}

// CLI.md: `tirc stats --json` and `tirc check-grad --json` print one JSON object naming the
// function "function"; `tirc bench --json` said "func" (and was built with printf: a long name
// was cut, leaving invalid JSON). Every --json output parses, with the same key.
TEST(AcceptR8, EveryJsonOutputNamesTheFunction) {
  std::string name(600, 'x');
  const std::string src = "func " + name +
                          "(A: f32[8]) -> (B: f32[8]) {\n"
                          "  for i in serial(8) { block b(vi: spatial(8) = i) { B[vi] = A[vi] * A[vi] } }\n"
                          "}\n";
  std::vector<std::string> cmds = {"stats - --json", "check-grad - --json",
                                   "bench - --json --engine interp --repeat 2"};
#ifdef TIRC_WITH_LLVM
  cmds.push_back("bench - --json --repeat 2 --threads 1");
#endif
  for (const std::string& cmd : cmds) {
    SCOPED_TRACE(cmd);
    CliRun r = run(cmd, src);
    ASSERT_EQ(r.code, 0) << r.err;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
    EXPECT_EQ(j.value("function", ""), name);
    EXPECT_FALSE(j.contains("func"));
    if (cmd.rfind("bench", 0) == 0) {
      EXPECT_EQ(j["flops"], 8);
      EXPECT_EQ(j["repeat"], 2);
      for (const char* k : {"median_ms", "min_ms", "max_ms", "gflops", "compile_ms", "threads"})
        EXPECT_TRUE(j[k].is_number()) << k;
      EXPECT_EQ(j["engine"], cmd.find("interp") != std::string::npos ? "interp" : "jit");
    }
  }
  // The human-readable line keeps the whole name too.
  CliRun r = run("bench - --engine interp --repeat 1", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(name + ": median ", 0), 0u) << r.out;
}

// Numeric options: `--threads -2` was silently the default (now a usage error; 0 still asks for
// the default, TIRC_NUM_THREADS or all cores); `--repeat 2.5` said CLI11's "Could not convert";
// `--rtol 1e999` and `--atol 1e-400` said "is not a number" (Python's float() reads inf and 0);
// a blank after a number was refused although R7 made blanks around values legal.
TEST(AcceptR8, NumericOptions) {
  const char* src =
      "func f(X: f32[4]) -> (Y: f32[4]) {\n"
      "  for i in serial(4) { block b(vi: spatial(4) = i) { Y[vi] = X[vi] * X[vi] } }\n"
      "}\n";
  struct Bad {
    std::string args, msg;
  } bad[] = {
      {"bench - --threads -2", "--threads: must be >= 0, got -2"},
      {"bench - --threads 1.5", "--threads: must be an integer, got 1.5"},
      {"bench - --repeat 2.5", "--repeat: must be an integer, got 2.5"},
      {"bench - --repeat 99999999999", "--repeat: must be at most 2147483647, got 99999999999"},
      {"bench - --warmup -1", "--warmup: must be >= 0, got -1"},
      {"check-grad - --directions 1.5", "--directions: must be an integer, got 1.5"},
      {"run - --show 2.5", "--show: must be an integer, got 2.5"},
      {"check-grad - --rtol nan", "--rtol: must be >= 0, got nan"},
      {"check-grad - --rtol -1e-3", "--rtol: must be >= 0, got -1e-3"},
      {"verify - --atol x", "--atol: 'x' is not a number"},
  };
  for (auto& b : bad) {
    SCOPED_TRACE(b.args);
    CliRun r = run(b.args, src);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, b.msg + "\nRun with --help for more information.\n");
  }
  CliRun r = run("check-grad - --input X=0.5 --rtol 1e999 --atol '1e-400 ' --seed ' 7 '", src);
  expect_passed(r, 1);
  r = run("check-grad - --input X=0.5 --rtol 0 --atol 1e-400 --json", src);
  EXPECT_EQ(nlohmann::json::parse(r.out)["atol"], 0.0) << r.out;
  r = run("run - --input X=2 --show ' 2 '", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Y: f32[4] sum=16 first=[4, 4, ...]\n");
  r = run("bench - --engine interp --repeat ' 3' --warmup '0 ' --threads 0", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" over 3 runs "), std::string::npos) << r.out;
#ifdef TIRC_WITH_LLVM
  r = run("bench - --repeat 1 --threads 1 --json", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["threads"], 1) << r.out;
#endif
}

// CLI.md: data files are NumPy .npy. A descr without a byte-order character ('f4', as
// np.dtype('f4') accepts and some writers put it) said "unsupported .npy dtype 'f4'"; it is the
// native (little-endian) order. The messages keep the text of the file.
TEST(AcceptR8, NpyDescrWithoutByteOrder) {
  const char* src =
      "func f(A: f32[2, 3]) -> (B: f32[2, 3]) {\n"
      "  for i, j in grid(2, 3) { block b(vi: spatial(2) = i, vj: spatial(3) = j) { B[vi, vj] = A[vi, vj] * "
      "2.0 } }\n"
      "}\n";
  write_file(work() + "p.tir", src);
  NDArray a(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) a.set(i, i);
  std::string bytes = serialize_npy(a);
  std::string data = bytes.substr(bytes.size() - 24);
  auto npy = [&](const std::string& dict, const std::string& payload) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string s = "\x93NUMPY";
    s += '\x01';
    s += '\x00';
    s += static_cast<char>(h.size() & 0xff);
    s += static_cast<char>(h.size() >> 8);
    return s + h + payload;
  };
  write_file(work() + "f4.npy", npy("{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  CliRun r = run("run " + work() + "p.tir --input A=" + work() + "f4.npy");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[2, 3] sum=30 first=[0, 2, 4, 6, 8, 10]\n");
  write_file(work() + "f8.npy",
             npy("{'descr': 'f8', 'fortran_order': False, 'shape': (2, 3), }", data + data));
  r = run("run " + work() + "p.tir --input A=" + work() + "f8.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: parameter A: " + work() + "f8.npy: expected dtype f32 ('<f4'), file has 'f8'\n");
  write_file(work() + "x.npy", npy("{'descr': 'q9', 'fortran_order': False, 'shape': (2, 3), }", data));
  r = run("run " + work() + "p.tir --input A=" + work() + "x.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: " + work() + "x.npy: unsupported .npy dtype 'q9'\n");
}

// CLI.md lists `-o OUT` for grad and build; a user writes `tirc schedule f.tir -o s.tir` and
// `tirc parse f.tir -o p.tir` the same way ("The following arguments were not expected: s.tir
// -o"). Both write the text they print (`-` standard output); an unwritable path is exit 2.
TEST(AcceptR8, ScheduleAndParseWriteOutputFiles) {
  const std::string src = slurp(std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir");
  for (const char* sub : {"schedule", "parse"}) {
    SCOPED_TRACE(sub);
    CliRun plain = run(std::string(sub) + " -", src);
    ASSERT_EQ(plain.code, 0) << plain.err;
    CliRun r = run(std::string(sub) + " - -o %/out.tir", src);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(slurp(tmp() + "out.tir"), plain.out);
    r = run(std::string(sub) + " - --output -", src);
    EXPECT_EQ(r.out, plain.out);
    r = run(std::string(sub) + " - -o %/no/such/dir.tir", src);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "tirc: error: cannot write " + tmp() + "no/such/dir.tir (No such file or directory)\n");
  }
}

// docs/language.md: non-ASCII characters are allowed only in comments and strings. A no-break
// space pasted from a web page, a zero-width space or a byte-order mark inside the text said
// "invalid character ' '" (or nothing visible between the quotes); they are named by code point.
// Visible ones keep their quoted form; in comments and strings all are kept.
TEST(AcceptR8, InvisibleCharactersAreNamed) {
  struct Case {
    std::string ch, msg;
  } cases_[] = {
      {"\xc2\xa0", "invalid character U+00A0 (invisible; only ASCII blanks separate tokens)"},
      {"\xe2\x80\x8b", "invalid character U+200B (invisible; only ASCII blanks separate tokens)"},
      {"\xef\xbb\xbf", "invalid character U+FEFF (invisible; only ASCII blanks separate tokens)"},
      {"\xe3\x80\x80", "invalid character U+3000 (invisible; only ASCII blanks separate tokens)"},
      {"\xe2\x80\x9c", "invalid character '\xe2\x80\x9c'"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.msg);
    CliRun r = run("parse -", "func f(A: f32[1]) ->" + c.ch + "(B: f32[1]) { B[0] = A[0] }\n");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "<stdin>:1:21: error: " + c.msg + "\n");
    r = run("parse -", "# comment" + c.ch + "\nfunc f(A: f32[1]) -> (B: f32[1]) {\n  call_extern(\"x" + c.ch +
                           "\", A.data)\n  B[0] = A[0]\n}\n");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("call_extern(\"x" + c.ch + "\", A.data)"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tirc::accept

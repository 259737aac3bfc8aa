// Acceptance round 12 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code, on
// what rounds 1-11 left out: i64 values a double does not hold (2^53 + 1, 2^63 - 1) as scalar
// parameters of the JIT and as ends of declared value ranges (random inputs, printing), the
// points where `init` runs (reversed, shifted and fused reduce bindings, a scan var next to a
// reduce var, an empty symbolic reduce domain through a decomposed schedule), `tirc stats`
// against a hand count, and `--target nvptx` for every intrinsic and dtype checked by ptxas.
// Case files: tests/accept/cases/r12/.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"
#include "tests/shell.h"

namespace tirc::accept {
namespace {

// CLI.md: "A scalar parameter is given on the command line: `--input n=16`". The JIT passed an
// i64 scalar through a double: `--input e=-9007199254740993 --engine jit` computed with
// -9007199254740992 (`first=[-9007199254740992, ...]`, exit 0) while the interpreter kept the
// value: a silently different result between the engines. Now both keep every i64.
TEST(AcceptR12, I64ScalarsBeyondADoubleBothEngines) {
  const std::string src =
      "func f(e: i64, d: u32, A: i64[1]) -> (O: i64[3]) {\n"
      "  block r() {\n"
      "    O[0] = e\n"
      "    O[1] = i64(d)\n"
      "    O[2] = A[0] // (e + 9007199254740994)\n"
      "  }\n"
      "}\n";
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    CliRun r = run(std::string("run - --input e=-9007199254740993 --input d=4294967295 --input "
                               "A=9223372036854775807 --engine ") +
                       engine,
                   src);
    EXPECT_EQ(r.code, 0) << r.err;
    // 2^63 - 1 divided by 1 (-(2^53 + 1) + 2^53 + 2): a rounded e makes it a division by 2.
    EXPECT_EQ(
        r.out,
        "O: i64[3] sum=9214364841895002109 first=[-9007199254740993, 4294967295, 9223372036854775807]\n")
        << engine;
  }
}

// LANGUAGE.md: `I: i32[6] in [0, 9]` "(integers, both ends included)". Ranges were kept as
// doubles: `i64 in [9007199254740993, 9007199254740995]` printed as [9007199254740992,
// 9007199254740996] and `tirc run --random` drew 9007199254740996; `in [9223372036854775806,
// 9223372036854775807]` (both ends round to 2^63) drew from the whole of i64 (the cast of 2^63
// to int64 is undefined). The integer ends are now kept exactly: printed as written, every drawn
// value inside.
TEST(AcceptR12, IntegerRangeEndsAreExact) {
  CliRun r = run("parse @/r12/i64_ranges.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string head =
      "func f(A: i64[64] in [9007199254740993, 9007199254740995], B: i64[64] in [9223372036854775806, "
      "9223372036854775807], u: i64 in [9007199254740993, 9007199254740993], D: i64[64] in "
      "[-9223372036854775808, -9223372036854775807]) -> (O: i64[64], P: i64[64], Q: i64[1], R: i64[64]) {\n";
  EXPECT_EQ(r.out.substr(0, head.size()), head);
  const std::string canon = r.out;
  r = run("parse -", canon);
  EXPECT_EQ(r.out, canon);
  // An integral float end of an integer range reads back as the integer the printer writes.
  r = run("parse -",
          "func g(n: i64 in [1.0, 9007199254740993.0]) -> (O: i64[1]) { block b() { O[0] = n } }\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("n: i64 in [1, 9007199254740992]"), std::string::npos) << r.out;
  r = run("parse -", r.out);
  EXPECT_NE(r.out.find("n: i64 in [1, 9007199254740992]"), std::string::npos) << r.out;
  // An empty range is still refused, also when the doubles of its ends are equal.
  r = run(
      "parse -",
      "func g(n: i64 in [9007199254740993, 9007199254740992]) -> (O: i64[1]) { block b() { O[0] = n } }\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:1:19: error: empty value range [9007199254740993, 9007199254740992]\n");

  for (const char* seed : {"1", "7"}) {
    r = run(std::string("run @/r12/i64_ranges.tir --random ") + seed +
            " --output O=%/o.npy --output P=%/p.npy --output Q=%/q.npy --output R=%/r.npy");
    ASSERT_EQ(r.code, 0) << r.err;
    NDArray o = read_npy(tmp() + "o.npy"), p = read_npy(tmp() + "p.npy"), q = read_npy(tmp() + "q.npy"),
            d = read_npy(tmp() + "r.npy");
    ASSERT_EQ(o.dtype(), DType::I64);
    const int64_t two53 = int64_t(1) << 53;
    bool seen[3] = {false, false, false};
    for (int i = 0; i < 64; ++i) {
      int64_t a = o.ptr<int64_t>()[i], b = p.ptr<int64_t>()[i], c = d.ptr<int64_t>()[i];
      EXPECT_TRUE(a >= two53 + 1 && a <= two53 + 3) << a;
      if (a >= two53 + 1 && a <= two53 + 3) seen[a - two53 - 1] = true;
      EXPECT_TRUE(b >= INT64_MAX - 1) << b;
      EXPECT_TRUE(c <= INT64_MIN + 1) << c;
    }
    EXPECT_TRUE(seen[0] && seen[1] && seen[2]);
    EXPECT_EQ(q.ptr<int64_t>()[0], two53 + 1);
  }
}

// LANGUAGE.md, Blocks: "`init` runs at the point where every reduce var equals 0, before the
// body". A reversed binding (vk = 7 - k) reaches vk = 0 last, so its first update reads the
// output before anything wrote it: an error at the store, as LANGUAGE.md's
// "reading an element of an output ... before the function wrote it is an error". Shifted
// (serial(2, 8), vk = k - 2) and fused (vk = f // 4) bindings start at vk = 0, so their product
// whose init reads at the reduce var runs, agrees between the engines and differentiates; a
// scan var next to a reduce var does not delay the init.
TEST(AcceptR12, WhereTheInitRuns) {
  CliRun r = run("run @/r12/init_points.tir --func rev --input A=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, cases() +
                       "r12/init_points.tir:7:7: error: block \"c\": read of uninitialised element C[0] "
                       "of output buffer C\n");
  // A = 2: the init gives 3, then six factors of 2.
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    for (const char* f : {"shifted", "fused"}) {
      r = run(std::string("run @/r12/init_points.tir --func ") + f + " --input A=2 --engine " + engine);
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(r.out, "C: f32[4] sum=768 first=[192, 192, 192, 192]\n") << f << " " << engine;
    }
    // C[t] = C[t - 1] + 4 * A: 4, 8, ..., 24.
    r = run(std::string("run @/r12/init_points.tir --func scan_red --input A=1 --engine ") + engine);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "C: f32[6] sum=84 first=[4, 8, 12, 16, 20, 24]\n") << engine;
  }
  for (const char* f : {"shifted", "fused", "scan_red"}) {
    r = run(std::string("check-grad @/r12/init_points.tir --full --func ") + f);
    expect_passed(r, 1);
  }
}

// An empty symbolic reduce domain (n = 0) never runs the init, through `tirc verify` of a
// decomposed schedule (the init block runs under `0 < n`), both engines, and an empty .npy
// giving n.
TEST(AcceptR12, EmptyReduceDomainThroughASchedule) {
  CliRun r = run("schedule @/r12/empty_reduce.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("      where 0 < n\n"), std::string::npos) << r.out;
#ifdef TIRC_WITH_LLVM
  for (const char* n : {"0", "5"}) {
    r = run(std::string("verify @/r12/empty_reduce.tir --input n=") + n);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "f [interp]: ok (max abs error 0)\nf [jit]: ok (max abs error 0)\n2 passed, 0 failed\n");
  }
#endif
  const std::string dir = scratch_dir("r12_empty");
  write_npy(dir + "a.npy", NDArray(DType::F32, {0, 8}));
  r = run("schedule @/r12/empty_reduce.tir -o " + dir + "s.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
    if (std::string(engine) == "jit") continue;
#endif
    for (const std::string& file : {cases() + "r12/empty_reduce.tir", dir + "s.tir"}) {
      r = run("run " + file + " --input A=" + dir + "a.npy --engine " + engine);
      EXPECT_EQ(r.code, 0) << r.err;
      // C is never written: docs/interp.md, outputs nobody wrote are zeros.
      EXPECT_EQ(r.out, "C: f32[8] sum=0 first=[0, 0, 0, 0, 0, 0, 0, 0]\n") << file << " " << engine;
    }
  }
}

// CLI.md: exit 2 on bad input. A .npy of the wrong shape for a symbolic buffer was worded by each
// engine its own way (`--engine jit`, `tirc bench`: "input A: expected f32[3, 8], got f32[3, 4]");
// now every engine and subcommand says it as the interpreter does.
TEST(AcceptR12, WrongShapeIsWordedOnceForEveryEngine) {
  const std::string dir = scratch_dir("r12_shape");
  write_npy(dir + "a.npy", NDArray(DType::F32, {3, 4}));
  const std::string want = "tirc: error: parameter A: expected shape [3, 8], got [3, 4]\n";
  std::vector<std::string> cmds = {"run @/r12/empty_reduce.tir --input n=3 --engine interp",
                                   "run @/r12/empty_reduce.tir --input n=3 --random 1 --engine interp",
                                   "stats @/r12/empty_reduce.tir --input n=3 --dynamic"};
#ifdef TIRC_WITH_LLVM
  cmds.push_back("run @/r12/empty_reduce.tir --input n=3 --engine jit");
  cmds.push_back("bench @/r12/empty_reduce.tir --input n=3 --repeat 1");
#endif
  for (const std::string& c : cmds) {
    CliRun r = run(c + " --input A=" + dir + "a.npy");
    EXPECT_EQ(r.code, 2) << c;
    EXPECT_EQ(r.out, "") << c;
    EXPECT_EQ(r.err, want) << c;
  }
}

// CLI.md: `tirc stats` prints FLOPs, loads, stores, iterations of every block. Hand count of a
// reduction under `where i + k < 10` (8 x 8 points, 49 pass; the init runs at k = 0 for all 8
// rows): 49 iterations, 2 FLOPs, 2 loads and 1 store each plus 8 init stores, 4 bytes each.
TEST(AcceptR12, StatsAgainstAHandCount) {
  const std::string src =
      "func f(A: f32[8, 8]) -> (C: f32[8]) {\n"
      "  for i, k in grid(8, 8) {\n"
      "    block c(vi: spatial(8) = i, vk: reduce(8) = k) {\n"
      "      where i + k < 10\n"
      "      init { C[vi] = 0.0 }\n"
      "      C[vi] += A[vi, vk] * 2.0\n"
      "    }\n"
      "  }\n"
      "}\n";
  const std::string table =
      "block                    iterations          flops          loads         stores          bytes\n"
      "c                                49             98             98             57            620\n"
      "total                            49             98             98             57            620\n";
  CliRun r = run("stats -", src);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, table);
  r = run("stats - --dynamic", src);
  EXPECT_EQ(r.out, table);
}

// CLI.md: `tirc build FILE --target nvptx`: every intrinsic of LANGUAGE.md on f16, bf16, f32 and
// f64, and the integer operators, casts and logic on every integer dtype, with symbolic sizes and
// thread bindings, in one module that ptxas accepts.
TEST(AcceptR12, NvptxEveryIntrinsicEveryDtype) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  const std::string dir = scratch_dir("r12_ptx");
  CliRun r = run("build @/r12/nvptx_dtypes.tir --target nvptx -o " + dir + "k.ptx");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string ptx = slurp(dir + "k.ptx");
  for (const char* f : {"fl_f16", "fl_bf16", "fl_f32", "fl_f64", "in_i8", "in_i16", "in_i32", "in_i64",
                        "in_u8", "in_u16", "in_u32"})
    EXPECT_NE(ptx.find(std::string(".visible .entry ") + f + "("), std::string::npos) << f;
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (std::system((std::string("test -x ") + ptxas).c_str()) != 0) GTEST_SKIP() << "ptxas not installed";
  auto s = tirc::testing::sh(std::string(ptxas) + " -arch=sm_80 " + dir + "k.ptx -o " + dir + "k.cubin");
  EXPECT_EQ(s.code, 0) << s.out;
}

}  // namespace
}  // namespace tirc::accept

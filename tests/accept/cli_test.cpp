// The command-line contract (CLI.md): --help everywhere, exit codes, stats/check-grad JSON,
// build/bench/verify, and no crash on bad files or arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/ndarray.h"
#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

TEST(AcceptCli, HelpForEverySubcommand) {
  CliRun top = run("--help");
  EXPECT_EQ(top.code, 0);
  for (const char* sub :
       {"parse", "run", "grad", "check-grad", "schedule", "verify", "build", "bench", "stats"}) {
    SCOPED_TRACE(sub);
    EXPECT_NE(top.out.find(std::string("  ") + sub + " "), std::string::npos) << top.out;
    CliRun h = run(std::string(sub) + " --help");
    EXPECT_EQ(h.code, 0);
    EXPECT_NE(h.out.find("Usage"), std::string::npos) << h.out;
    EXPECT_NE(run(std::string(sub) + " -h").out, "");
  }
  // Options named by CLI.md appear in the help of their subcommand.
  auto has = [](const char* sub, std::vector<const char*> opts) {
    CliRun h = run(std::string(sub) + " --help");
    for (auto* o : opts) EXPECT_NE(h.out.find(o), std::string::npos) << sub << " " << o << "\n" << h.out;
  };
  has("run", {"--func", "--input", "--random", "--output", "--engine"});
  has("grad", {"--func", "--wrt", "-o"});
  has("check-grad", {"--func", "--wrt", "--input", "--seed", "--rtol", "--atol", "--full", "--json"});
  has("schedule", {"--func"});
  has("verify", {"--func", "--seed"});
  has("build", {"--target", "--emit", "-o"});
  has("bench", {"--func", "--repeat"});
  has("stats", {"--func", "--json"});
}

TEST(AcceptCli, UsageErrorsExitTwo) {
  CliRun r = run("");
  EXPECT_EQ(r.code, 2);
  r = run("frobnicate x.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.err;
  r = run("run @/structure.tir --func padded --random abc");
  EXPECT_EQ(r.code, 2);
  r = run("run @/structure.tir --func padded --random 1 --engine gpu");
  EXPECT_EQ(r.code, 2);
  r = run("run @/structure.tir --func padded --random 1 --bogus");
  EXPECT_EQ(r.code, 2);
  r = run("bench @/structure.tir --func conv1d --repeat 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("must be at least 1"), std::string::npos) << r.err;
  r = run("check-grad @/structure.tir --func conv1d --rtol -1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("must be >= 0"), std::string::npos) << r.err;
  r = run("parse %/missing.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, tmp() + "missing.tir:1:1: error: cannot open file (No such file or directory)\n");
  r = run("parse @/data");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, cases() + "data:1:1: error: cannot read file: it is a directory\n");
  r = run("parse " + std::string(TIRC_BINARY));  // a binary file
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: invalid"), std::string::npos) << r.err;
  r = run("parse -", "");  // an empty module is valid
  EXPECT_EQ(r.code, 0) << r.err;
}

// Bad inputs to `run`: exit 2 with a message naming the parameter, never a crash.
TEST(AcceptCli, BadInputsAreErrors) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  namespace fs = std::filesystem;
  std::string bad =
      (fs::temp_directory_path() / ("tirc_accept_bad_" + std::to_string(::getpid()))).string() + "/";
  fs::create_directories(bad);
  std::string good = slurp(cases() + "data/padded_A.npy");
  write_file(bad + "garbage.npy", "hello, this is not an npy file");
  write_file(bad + "empty.npy", "");
  write_file(bad + "trunc.npy", good.substr(0, 40));
  write_file(bad + "short.npy", good.substr(0, good.size() - 8));  // data cut short
  std::string d = "@/data/";
  struct {
    std::string spec;
    std::string msg;
  } cases_[] = {
      {"A=" + d + "scale_A.npy", "tirc: error: parameter A: expected shape [10], got [3, 6]\n"},
      {"A=" + d + "dtypes_D.npy", "expected dtype f32 ('<f4'), file has '<f8'\n"},
      {"A=" + bad + "nope.npy",
       "tirc: error: parameter A: cannot read " + bad + "nope.npy: No such file or directory\n"},
      {"A=" + bad + "garbage.npy", "not a .npy file (bad magic)\n"},
      {"A=" + bad + "empty.npy", "not a .npy file (bad magic)\n"},
      {"A=" + bad + "trunc.npy", "truncated .npy header\n"},
      {"A=" + bad + "short.npy", "tirc: error: parameter A: " + bad + "short.npy: "},
      {"Q=1", "tirc: error: --input Q=1: function padded has no parameter named Q\n"},
      {"A", "tirc: error: --input A: expected NAME=FILE.npy or NAME=VALUE\n"},
      {"A=abc", "tirc: error: parameter A: 'abc' is not a number\n"},
      {"A=" + bad, "tirc: error: parameter A: " + bad + " is a directory, not a .npy file\n"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.spec);
    CliRun r = run("run @/structure.tir --func padded --input " + c.spec + " --random 1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.err.find(c.msg), std::string::npos) << r.err;
  }
  fs::remove_all(bad);
  // Unknown function, unknown output, missing input without --random.
  CliRun r = run("run @/structure.tir --func nope --random 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: no function named nope in " + cases() + "structure.tir (it defines inplace, cumsum, nested, padded, gather, conv1d)\n");
  r = run("run @/structure.tir --func padded --random 1 --output Z=%/z.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --output Z=" + tmp() + "z.npy: function padded has no output named Z\n");
  r = run("run @/structure.tir --func padded");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: missing input for parameter A (give --input A=FILE.npy|VALUE or --random SEED)\n");
  for (const char* sub : {"stats", "grad", "check-grad", "bench"}) {
    r = run(std::string(sub) + " @/structure.tir --func nope");
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_NE(r.err.find("nope"), std::string::npos) << sub << r.err;
  }
}

// Symbolic shapes from the command line: negative, zero and absurd sizes.
TEST(AcceptCli, ScalarShapeInputs) {
  CliRun r = run("run @/symbolic.tir --func scale --input n=-5 --input alpha=1 --random 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: buffer A has a negative extent -5\n");
  r = run("run @/symbolic.tir --func scale --input n=0 --input alpha=1 --random 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[0, 0] sum=0 first=[]\nS: f32[0] sum=0 first=[]\n");
  r = run("run @/symbolic.tir --func scale --input n=100000000 --input alpha=1 --random 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("cannot allocate f32[100000000, 200000000]"), std::string::npos) << r.err;
  r = run("run @/symbolic.tir --func scale --input n=2.5 --random 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter n: '2.5' is not an integer\n");
  // An integer scalar that fixes shapes is drawn from [1, 9] when not given (never 0: empty
  // shapes); the same seed draws the same size, and check-grad and verify draw it too.
  r = run("run @/symbolic.tir --func scale --random 1");
  EXPECT_EQ(r.code, 0) << r.err;
  {
    size_t at = r.out.find("S: f32[");
    ASSERT_NE(at, std::string::npos) << r.out;
    int n = std::stoi(r.out.substr(at + 7));
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 9);
    EXPECT_NE(r.out.find("B: f32[" + std::to_string(n) + ", " + std::to_string(2 * n) + "]"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(run("run @/symbolic.tir --func scale --random 1").out, r.out);
  }
  r = run("check-grad @/symbolic.tir --func scale --seed 3");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1 passed, 0 failed\n"), std::string::npos) << r.out;
  r = run("verify @/sched_sym_r2.tir --seed 5");  // CLI.md's verify synopsis has no --input
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sv"), std::string::npos) << r.out;
  r = run("run @/symbolic.tir --func scale --input n=2 --random 1");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("check-grad @/grads.tir --func scaled");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 passed, 0 failed\n"), std::string::npos) << r.out;
  // Static stats need only the integer scalars.
  r = run("stats @/symbolic.tir --func scale --input n=3 --json");
  EXPECT_EQ(r.code, 0) << r.err;
}

// `stats`: the exact key names of CLI.md, totals = sum over blocks, numbers from the IR.
TEST(AcceptCli, StatsJson) {
  CliRun r = run("stats @/structure.tir --func conv1d --json");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* k :
       {"\"flops\": 72", "\"loads\": 108", "\"stores\": 48", "\"iterations\": 36", "\"blocks\": {"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << "\n" << r.out;
  EXPECT_EQ(r.out.front(), '{');
  CliRun t = run("stats @/structure.tir --func conv1d");
  ASSERT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("flops"), std::string::npos);
  EXPECT_NE(t.out.find("\nc "), std::string::npos) << t.out;  // one row per block
  // Two blocks: matmul-like totals.
  r = run("stats @/schedules.tir --func mm --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"flops\": 196608"), std::string::npos) << r.out;  // 2 * 64 * 48 * 32
  EXPECT_NE(r.out.find("\"iterations\": 98304"), std::string::npos) << r.out;
  r = run("stats @/symbolic.tir --func scale --input n=4 --input alpha=2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"iterations\": 64"), std::string::npos) << r.out;  // 2 blocks * 4 * 8
}

TEST(AcceptCli, CheckGradJson) {
  CliRun r = run("check-grad @/grads.tir --func two_out --json --seed 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  for (const char* k : {"\"passed\": 2", "\"failed\": 0", "\"name\": \"X\"", "\"name\": \"W\""})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << "\n" << r.out;
  // An impossible tolerance fails: exit 1, still one JSON object.
  r = run("check-grad @/grads.tir --func two_out --json --rtol 0 --atol 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("\"failed\": 2"), std::string::npos) << r.out;
}

TEST(AcceptCli, BuildEveryEmit) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  struct {
    const char* target;
    const char* emit;
    const char* file;
    const char* needle;
  } cases_[] = {
      {"cpu", "llvm", "structure.tir", "define"},
      {"cpu", "asm", "structure.tir", ".text"},
      {"cpu", "obj", "structure.tir",
       "\x7f"
       "ELF"},
      {"nvptx", "ptx", "gpu.tir", ".entry rowsum"},
      {"nvptx", "llvm", "gpu.tir", "define"},
      {"cpu", "llvm", "symbolic.tir", "define"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(std::string(c.target) + " " + c.emit + " " + c.file);
    CliRun r =
        run(std::string("build @/") + c.file + " --target " + c.target + " --emit " + c.emit + " -o %/out");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(tmp() + "out").find(c.needle), std::string::npos);
  }
  // nvptx without thread bindings: bound by the default GPU schedule (docs/codegen.md), or
  // refused with a reason when told not to.
  CliRun r = run("build @/structure.tir --target nvptx --emit ptx -o %/out");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(tmp() + "out").find(".entry"), std::string::npos);
  r = run("build @/structure.tir --target nvptx --no-default-gpu-schedule --emit ptx -o %/out");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("blockIdx/threadIdx"), std::string::npos) << r.err;
  r = run("build @/structure.tir --target tpu -o %/out");
  EXPECT_EQ(r.code, 2);
}

TEST(AcceptCli, BenchAndVerify) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("bench @/structure.tir --func conv1d --repeat 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  r = run("bench @/symbolic.tir --func scale --input n=8 --repeat 2");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("verify @/schedules.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("8 passed, 0 failed"), std::string::npos) << r.out;
  r = run("verify @/module_order.tir --seed 9");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("verify @/gpu.tir --input n=100");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("add [interp]: ok"), std::string::npos) << r.out;
  // verify reads --input like run: dtype-checked values, unknown names refused.
  r = run("verify @/gpu.tir --input n=1.5");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter n: '1.5' is not an integer\n");
  r = run("verify @/gpu.tir --input m=3");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --input m=3: no verified function has a parameter named m\n");
  // Without --input (CLI.md's synopsis), n is drawn from [1, 9].
  r = run("verify @/gpu.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("add [interp]: ok"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tirc::accept

// The AOT path end to end: `tirc build` an object + header, compile examples/aot/main.c with
// the system C compiler against it and the C runtime, run it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Result {
  int code;
  std::string out;
};

Result sh(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST(AotExample, CompilesLinksAndRuns) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_aot_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string src = TIRC_SOURCE_DIR;
  Result b = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/aot/ops.tir") + " --target cpu -o " +
                q((dir / "ops.o").string()));
  ASSERT_EQ(b.code, 0) << b.out;
  ASSERT_TRUE(fs::exists(dir / "ops.h"));
  Result c = sh("cc -O2 -I" + q(dir.string()) + " " + q(src + "/examples/aot/main.c") + " " +
                q((dir / "ops.o").string()) + " " + q(src + "/runtime/tirc_runtime.c") + " -I" +
                q(src + "/runtime") + " -lpthread -lm -o " + q((dir / "demo").string()));
  ASSERT_EQ(c.code, 0) << c.out;
  for (const char* threads : {"1", "2", "3"}) {
    Result r = sh(std::string("TIRC_NUM_THREADS=") + threads + " " + q((dir / "demo").string()));
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "ok\n");
  }
  fs::remove_all(dir);
}

TEST(AotBuild, EmitsLlvmAndAsm) {
  std::string src = TIRC_SOURCE_DIR;
  Result ll = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/matmul.tir") + " --emit llvm");
  ASSERT_EQ(ll.code, 0) << ll.out;
  EXPECT_NE(ll.out.find("i32 @matmul(ptr noalias nocapture readonly %A, ptr noalias nocapture readonly %B, "
                        "ptr noalias nocapture %C)"),
            std::string::npos)
      << ll.out;
  EXPECT_NE(ll.out.find("tirc_parallel_for"), std::string::npos);
  Result as = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/matmul.tir") + " --emit asm");
  ASSERT_EQ(as.code, 0) << as.out;
  EXPECT_NE(as.out.find("matmul:"), std::string::npos);
}

TEST(CliJit, RunEngineJitPrintsTheSameAsTheInterpreter) {
  std::string src = TIRC_SOURCE_DIR;
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    std::string base = q(TIRC_BINARY) + " run " + q(src + "/examples/" + ex + ".tir") + " --random 3";
    Result a = sh(base);
    Result b = sh(base + " --engine jit");
    ASSERT_EQ(a.code, 0) << a.out;
    ASSERT_EQ(b.code, 0) << b.out;
    EXPECT_EQ(a.out, b.out) << ex;  // the unscheduled examples are bit-identical
  }
}

TEST(CliJit, BenchPrintsMedianAndGflops) {
  std::string src = TIRC_SOURCE_DIR;
  Result r =
      sh(q(TIRC_BINARY) + " bench " + q(src + "/examples/matmul.tir") + " --func matmul --repeat 3 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"func\": \"matmul\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"flops\": 524288,"), std::string::npos) << r.out;  // 2 * 128 * 32 * 64
  EXPECT_NE(r.out.find("\"gflops\": "), std::string::npos) << r.out;
  Result h = sh(q(TIRC_BINARY) + " bench " + q(src + "/examples/matmul.tir") + " --func nope");
  EXPECT_EQ(h.code, 2) << h.out;
}

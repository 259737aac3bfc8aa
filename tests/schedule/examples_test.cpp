// The schedules shipped in examples/ (examples/matmul.tir and examples/schedules/*.tir):
// they apply, compute the same as the unscheduled functions (also with parallel loops run
// backwards), and their printed result re-parses to the same IR. Also the comparison
// helper itself (it must be able to fail) and the tirc schedule / verify commands.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/schedule/tvm_style_files.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> example_files() {
  std::vector<std::string> out{std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir"};
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "examples/schedules"))
    if (e.path().extension() == ".tir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

class ScheduleExample : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleExample, VerifiesAndRoundTrips) {
  Module m = parse_file(GetParam());
  ASSERT_FALSE(m.schedules.empty());
  for (auto& item : m.schedules) {
    Function f = m.find_func(item.func);
    Function g = apply_schedule(*f, item, m.intrins);
    EXPECT_FALSE(structural_equal(*f, *g)) << "the schedule changed nothing";
    CompareResult r = compare_functions(*f, *g, CompareOptions{}, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail;
    FunctionNode rev = *g;
    rev.body = testing::ReverseParallelLoops().mutate(g->body);
    CompareResult r2 = compare_functions(*f, rev, CompareOptions{}, interp_runner(), interp_runner());
    EXPECT_TRUE(r2.ok) << r2.detail;
  }
  Module out = apply_module_schedules(m);
  std::string text = print_module(out);
  Module again = parse_module(text, "again.tir");
  auto d = structural_diff(out, again);
  EXPECT_FALSE(d.has_value()) << *d;
  EXPECT_EQ(print_module(again), text);
}

INSTANTIATE_TEST_SUITE_P(Examples, ScheduleExample, ::testing::ValuesIn(example_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

TEST(CompareFunctions, DetectsADifference) {
  Module m = parse_module(R"(
func a(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block Y(vi: spatial(4) = i) { Y[vi] = X[vi] * 2.0 }
  }
}
func b(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block Y(vi: spatial(4) = i) { Y[vi] = X[vi] * 2.0 + select(vi == 2, 0.5, 0.0) }
  }
}
func c(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block Y(vi: spatial(4) = i) { Y[vi] = X[vi] * 2.000001 }
  }
}
)",
                          "cmp.tir");
  CompareResult r =
      compare_functions(*m.funcs[0], *m.funcs[1], CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail.rfind("Y[2]: expected ", 0), 0u) << r.detail;
  // Within the default tolerance.
  EXPECT_TRUE(
      compare_functions(*m.funcs[0], *m.funcs[2], CompareOptions{}, interp_runner(), interp_runner()).ok);
  CompareOptions strict;
  strict.rtol = 0;
  strict.atol = 0;
  EXPECT_FALSE(compare_functions(*m.funcs[0], *m.funcs[2], strict, interp_runner(), interp_runner()).ok);
}

// ---- the CLI ----

struct CmdResult {
  int code;
  std::string out;
};

CmdResult run(const std::string& args) {
  std::string cmd = std::string(TIRC_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string write_temp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("tirc_sched_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(Cli, ScheduleAndVerify) {
  std::string src = std::string(TIRC_SOURCE_DIR) + "/examples/schedules/conv2d_tiled.tir";
  CmdResult s = run("schedule " + src);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(s.out.find("schedule conv2d"), std::string::npos);
  Module printed = parse_module(s.out, "printed.tir");
  Module direct = apply_module_schedules(parse_file(src));
  EXPECT_TRUE(structural_equal(printed, direct));
  CmdResult v = run("verify " + src + " --seed 5");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("conv2d [interp]: ok"), std::string::npos) << v.out;
#ifdef TIRC_WITH_LLVM
  EXPECT_NE(v.out.find("conv2d [jit]: ok"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("2 passed, 0 failed"), std::string::npos) << v.out;
#else
  EXPECT_NE(v.out.find("1 passed, 0 failed"), std::string::npos) << v.out;
#endif
}

TEST(Cli, RefusalIsReportedAtTheInstruction) {
  std::string f = write_temp("refuse.tir", R"(func mm(A: f32[4, 4], B: f32[4, 4]) -> (C: f32[4, 4]) {
  for i, j, k in grid(4, 4, 4) {
    block C(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += A[vi, vk] * B[vk, vj]
    }
  }
}
schedule mm {
  b = get_block("C")
  compute_inline(b)
}
)");
  for (const char* sub : {"schedule", "verify"}) {
    CmdResult r = run(std::string(sub) + " " + f);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(f + ":11:3: error: compute_inline: block C is a reduction"), std::string::npos)
        << r.out;
  }
  fs::remove(f);
}

TEST(Cli, SymbolicVerifyNeedsScalars) {
  std::string src = std::string(TIRC_SOURCE_DIR) + "/tests/schedule/cases/get_child_blocks.tir";
  CmdResult r = run("verify " + src + " --input n=13");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sym [interp]: ok"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tirc

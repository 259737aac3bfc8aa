// Schedules written the way TVM users write them (tutorial-style `tir.Schedule` scripts) on
// the shared examples, zoo ops and the gradient functions produced by `tirc grad`.
//
// Each tests/schedule/tvm_style/*.tir holds functions and `schedule` items. Header comments:
//   # grad: F            F_grad (all float inputs) is added with transforms/autodiff before
//                        the schedules are applied (schedules may name F_grad blocks).
//   # refuse: MESSAGE    the file's schedules must be refused with exactly this message
//                        (after "FILE:LINE:COL: error: "), at the line of the refused
//                        instruction, which carries the comment "# <- refused".
// tests/schedule/tvm_style/todo/ holds reproducers of known bugs (disabled tests).
//   # ptx: yes           also `tirc build --target nvptx --emit ptx`, checked with ptxas.
// Otherwise every schedule must apply, change the function, compute the same as the
// unscheduled function in the interpreter (also with parallel / vectorized / thread-bound
// loops run backwards, which exposes order dependences), and print to text that re-parses to
// the same IR.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/shell.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> files(const std::string& dir = "tests/schedule/tvm_style") {
  return testing::tvm_style_files(dir);
}
using testing::header_value;
using testing::read_text;

using testing::load_with_grad;

class TvmStyle : public ::testing::TestWithParam<std::string> {};

TEST_P(TvmStyle, Schedule) {
  std::string text = read_text(GetParam());
  Module m = load_with_grad(GetParam(), text);
  ASSERT_FALSE(m.schedules.empty());
  std::string want_refusal = header_value(text, "refuse");
  if (!want_refusal.empty()) {
    int want_line = testing::refused_line(text);
    ASSERT_GT(want_line, 0) << "mark the refused instruction with '# <- refused'";
    try {
      apply_module_schedules(m);
      ADD_FAILURE() << "not refused";
    } catch (const SourceError& e) {
      EXPECT_EQ(e.message(), want_refusal) << e.what();
      EXPECT_EQ(e.line(), want_line) << e.what();
      std::string prefix = fs::path(GetParam()).filename().string() + ":" + std::to_string(want_line) + ":";
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
    return;
  }
  for (auto& item : m.schedules) {
    Function f = m.find_func(item.func);
    ASSERT_TRUE(f) << item.func;
    Function g = apply_schedule(*f, item, m.intrins);
    testing::expect_scheduled_matches(*f, *g);
  }
  // The whole module (grad functions included) prints and re-parses after scheduling.
  Module out = apply_module_schedules(m);
  std::string printed = print_module(out);
  Module again = parse_module(printed, "again.tir");
  EXPECT_EQ(print_module(again), printed);
}

// ---- the CLI: `tirc verify` (interpreter and JIT) and, for `# ptx:` files, the NVPTX build ----

using CmdResult = testing::ShellResult;
using testing::sh;

std::string ptxas_path() {
  for (const char* c : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (fs::exists(c)) return c;
  return "";
}

// Every applied file (grad functions added first, as `tirc grad` prints them) goes through
// `tirc verify`, which also runs the scheduled functions with the JIT when tirc has LLVM.
// Header `# ptx: yes`: `tirc build --target nvptx --emit ptx` must succeed and ptxas
// (sm_80) must accept the PTX.
class TvmStyleCli : public ::testing::TestWithParam<std::string> {};

TEST_P(TvmStyleCli, VerifyAndPtx) {
  std::string text = read_text(GetParam());
  if (!header_value(text, "refuse").empty()) GTEST_SKIP() << "refusal file";
  Module m = load_with_grad(GetParam(), text);
  fs::path tmp = fs::temp_directory_path() / ("tirc_tvm_style_" + std::to_string(::getpid()) + "_" +
                                              fs::path(GetParam()).filename().string());
  std::ofstream(tmp) << print_module(m);
  CmdResult v = sh(std::string("'") + TIRC_BINARY + "' verify '" + tmp.string() + "'");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find(" 0 failed"), std::string::npos) << v.out;
  if (header_value(text, "ptx") == "yes") {
    fs::path ptx = tmp;
    ptx += ".ptx";
    CmdResult b = sh(std::string("'") + TIRC_BINARY + "' build '" + tmp.string() +
                     "' --target nvptx --emit ptx -o '" + ptx.string() + "'");
    if (b.code != 0 && b.out.find("LLVM") != std::string::npos) {
      fs::remove(tmp);
      GTEST_SKIP() << "tirc without LLVM: " << b.out;
    }
    EXPECT_EQ(b.code, 0) << b.out;
    std::string pa = ptxas_path();
    if (b.code == 0 && !pa.empty()) {
      CmdResult a = sh(pa + " -arch=sm_80 -o /dev/null '" + ptx.string() + "'");
      EXPECT_EQ(a.code, 0) << a.out;
    }
    fs::remove(ptx);
  }
  fs::remove(tmp);
}

INSTANTIATE_TEST_SUITE_P(Files, TvmStyleCli, ::testing::ValuesIn(files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

INSTANTIATE_TEST_SUITE_P(Files, TvmStyle, ::testing::ValuesIn(files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

// Outsider round 7 (tests/schedule/tvm_style_r7, same headers and checks).
INSTANTIATE_TEST_SUITE_P(R7, TvmStyle, ::testing::ValuesIn(files("tests/schedule/tvm_style_r7")),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });
INSTANTIATE_TEST_SUITE_P(R7, TvmStyleCli, ::testing::ValuesIn(files("tests/schedule/tvm_style_r7")),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

// Known bugs of primitives owned elsewhere (tests/schedule/tvm_style/todo, each file says
// why): they fail today; run with --gtest_also_run_disabled_tests, move a file up when fixed.
INSTANTIATE_TEST_SUITE_P(DISABLED_KnownBugs, TvmStyle,
                         ::testing::ValuesIn(files("tests/schedule/tvm_style/todo")),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

}  // namespace
}  // namespace tirc

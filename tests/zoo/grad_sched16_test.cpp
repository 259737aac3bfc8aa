// Helper round 16 (h6): schedules a user writes against the F_grad that `tirc grad` prints
// (tests/zoo/grad_sched16/*.tir: the forward F, `# grad: F`, and `schedule F_grad { ... }`,
// often `schedule F { ... }` too). For every file:
//   GradSched16.Schedules     F_grad is derived (transforms/autodiff), the schedules applied and
//                             compared with the unscheduled functions in the interpreter (two
//                             seeds, and with parallel / bound loops run backwards); `# refuse:`
//                             files must be refused with exactly that message at the marked line;
//   GradSched16.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched16.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas;
//   GradSched16.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h: one host thread per GPU
//                             thread, serialized between barriers) equal the interpreter's run of
//                             the unscheduled function (shared tiles, barriers, atomic scatters);
//   GradSched16.GradThenSchedule  the CLI round trip a user does: `tirc grad -o g.tir` of a file
//                             that already holds the F_grad schedule, then `tirc schedule g.tir`,
//                             and the printed F_grad (block names) is a print fixpoint.
// JIT and ptxas parts are skipped under sanitizers (tests/sanitized.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "ir/printer.h"
#include "parser/parser.h"
#ifdef TIRC_WITH_LLVM
#include "codegen/codegen.h"
#include "interp/interp.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/verify.h"
#endif
#include "tests/codegen/ptxas_util.h"
#include "tests/sanitized.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/shell.h"

using namespace tirc;
namespace fs = std::filesystem;

namespace {

const char* kDir = "tests/zoo/grad_sched16";

std::string tmp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tirc_grad_sched16_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string tirc_bin() { return std::string("'") + TIRC_BINARY + "'"; }

}  // namespace

TEST(GradSched16, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient take about 20 s under sanitizers: the refusals and
  // the smallest applied files only.
  const std::vector<std::string> keep = {"cumsum.tir", "take.tir", "upsampling_nearest.tir"};
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string name = fs::path(path).filename().string();
    std::string text = tirc::testing::read_text(path);
    if (tirc::testing::header_value(text, "refuse").empty() &&
        std::find(keep.begin(), keep.end(), name) == keep.end())
      continue;
    SCOPED_TRACE(name);
    Module m = tirc::testing::load_with_grad(path, text);
    std::string want = tirc::testing::header_value(text, "refuse");
    if (!want.empty()) {
      try {
        apply_module_schedules(m);
        ADD_FAILURE() << "not refused";
      } catch (const SourceError& e) {
        EXPECT_EQ(e.message(), want) << e.what();
        EXPECT_EQ(e.line(), tirc::testing::refused_line(text)) << e.what();
      }
      continue;
    }
    for (auto& item : m.schedules) {
      Function f = m.find_func(item.func);
      ASSERT_TRUE(f) << item.func;
      tirc::testing::expect_scheduled_matches(*f, *apply_schedule(*f, item, m.intrins));
    }
  }
#else
  tirc::testing::expect_folder_schedules(kDir, 15);
#endif
}

TEST(GradSched16, VerifyCli) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  GTEST_SKIP() << "JIT runs of every file: needs LLVM, too slow under sanitizers";
#else
  // The interpreter already compared every schedule in process (Schedules): the CLI runs the
  // scheduled functions with the JIT only.
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (!tirc::testing::header_value(text, "refuse").empty()) continue;
    ++n;
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string mod = tmp_path(fs::path(path).filename().string());
    std::ofstream(mod) << print_module(tirc::testing::load_with_grad(path, text));
    auto [code, out] = tirc::testing::sh(tirc_bin() + " verify '" + mod + "' --engine jit");
    fs::remove(mod);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
#ifdef TIRC_WITH_LLVM
    EXPECT_NE(out.find("[jit]: ok"), std::string::npos) << out;
#endif
  }
  EXPECT_GE(n, 15);
#endif
}

TEST(GradSched16, Ptx) {
#ifdef TIRC_TEST_SANITIZED
  GTEST_SKIP() << "LLVM builds: too slow under sanitizers";
#else
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (tirc::testing::header_value(text, "ptx") != "yes") continue;
    ++n;
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string mod = tmp_path(fs::path(path).filename().string());
    std::ofstream(mod) << print_module(tirc::testing::load_with_grad(path, text));
    std::string ptx = mod + ".ptx";
    auto [code, out] =
        tirc::testing::sh(tirc_bin() + " build '" + mod + "' --target nvptx --emit ptx -o '" + ptx + "'");
    fs::remove(mod);
    if (code != 0 && out.find("LLVM") != std::string::npos) GTEST_SKIP() << "tirc without LLVM: " << out;
    ASSERT_EQ(code, 0) << out;
    std::string text_ptx = tirc::testing::read_text(ptx);
    fs::remove(ptx);
    // The scatter of max-pool's gradient is an atomic add on the GPU (bound window loops).
    if (text.find("max_pool2d") != std::string::npos) {
      EXPECT_NE(text_ptx.find("atom.global.add.f32"), std::string::npos);
    }
    std::string log;
    int rc = tirc::testing::run_ptxas(text_ptx, &log);
    if (rc == -2) GTEST_SKIP() << "no ptxas";
    EXPECT_EQ(rc, 0) << log;
  }
  EXPECT_GT(n, 0);
#endif
}

TEST(GradSched16, Emulated) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  GTEST_SKIP() << "needs LLVM; too slow under sanitizers";
#else
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (tirc::testing::header_value(text, "ptx") != "yes") continue;
    SCOPED_TRACE(fs::path(path).filename().string());
    Module m = tirc::testing::load_with_grad(path, text);
    for (auto& item : m.schedules) {
      Function f = m.find_func(item.func);
      ASSERT_TRUE(f) << item.func;
      Function g = apply_schedule(*f, item, m.intrins);
      ++n;
      CompareOptions o;
      o.seed = 5;
      ArgMap in = verify_inputs(*f, o);
      ArgMap want = run_interp(*f, in);
      std::string err;
      ArgMap got = tirc::testing::emulate(g, in, &err);
      ASSERT_EQ(err, "") << g->name;
      for (auto& [name, arr] : want) {
        CompareResult r = compare_arrays(name, arr, got.at(name), o);
        EXPECT_TRUE(r.ok) << g->name << " on the emulated GPU: " << r.detail;
      }
    }
  }
  EXPECT_GT(n, 0);
#endif
}

// `tirc grad FILE -o g.tir` on a file whose `schedule F_grad` names blocks that do not exist
// yet keeps the schedule item; `tirc schedule g.tir` then applies it; `tirc parse` of g.tir is
// a fixpoint (block names survive the round trip).
TEST(GradSched16, GradThenSchedule) {
  std::string src = (fs::path(TIRC_SOURCE_DIR) / kDir / "matmul.tir").string();
  std::string g = tmp_path("g.tir"), p1 = tmp_path("p1.tir"), p2 = tmp_path("p2.tir");
  auto r = tirc::testing::sh(tirc_bin() + " grad '" + src + "' --func matmul -o '" + g + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  auto s = tirc::testing::sh(tirc_bin() + " schedule '" + g + "' --func matmul_grad");
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("parallel("), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("block C_dA("), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("block C_dB("), std::string::npos) << s.out;
  ASSERT_EQ(tirc::testing::sh(tirc_bin() + " parse '" + g + "' > '" + p1 + "'").code, 0);
  ASSERT_EQ(tirc::testing::sh(tirc_bin() + " parse '" + p1 + "' > '" + p2 + "'").code, 0);
  EXPECT_EQ(tirc::testing::read_text(p1), tirc::testing::read_text(p2));
  // Deterministic names: a second derivation prints the same text.
  std::string g2 = tmp_path("g2.tir");
  ASSERT_EQ(tirc::testing::sh(tirc_bin() + " grad '" + src + "' --func matmul -o '" + g2 + "'").code, 0);
  EXPECT_EQ(tirc::testing::read_text(g), tirc::testing::read_text(g2));
  for (auto& f : {g, g2, p1, p2}) fs::remove(f);
}

// Helper round 18 (h6): schedules a user writes against the F_grad that `tirc grad` prints, third
// round (operators not in grad_sched16/17, whole layers; primitives the earlier rounds used little:
// tensorize of the GEMM-shaped adjoints (dA = dC . B^T, a conv's dW) with user intrinsics after
// split / reorder, blockize, rfactor of the gradients' big reductions (dW / db summed over the batch
// or the pixels), decompose_reduction, cache_write + reverse_compute_at, F and F_grad scheduled in
// one file, second-order gradients (a file holding F_grad as `tirc grad -o` prints it, `# grad:
// F_grad`: F_grad_grad is derived and scheduled), GPU binds with shared caches).
// tests/zoo/grad_sched18/*.tir hold the forward F, `# grad: F` and `schedule F_grad { ... }`
// (often `schedule F` too); a file without `# grad:` holds F_grad as text (its schedule names
// hoisted blocks, whose names depend on the tirc version); `*_refuse_*` files are sound schedules
// still refused (the exact message; the FINDINGS of helper h6, round 18, name them). For every file:
//   GradSched18.Schedules     F_grad is derived (transforms/autodiff), the schedules applied and
//                             compared with the unscheduled functions in the interpreter (two
//                             seeds, and with parallel / bound loops run backwards); `# refuse:`
//                             files must be refused with exactly that message at the marked line;
//   GradSched18.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched18.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas
//                             (`# shared: yes`: shared tiles and barriers in the PTX; `# atomic:
//                             yes`: atomic adds);
//   GradSched18.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h) equal the interpreter's
//                             run of the unscheduled function;
//                             these three take the `# quick: yes` files; DISABLED_*All take every
//                             file (`test_zoo --gtest_also_run_disabled_tests
//                             --gtest_filter='GradSched18.*'`);
//   GradSched18.Tensorized    every `tensorize` of an F_grad block replaced its tile: the
//                             scheduled function holds the intrinsic's impl (no block of the desc
//                             remains, the `<block>_o` block is there).
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

const char* kDir = "tests/zoo/grad_sched18";

[[maybe_unused]] std::string tmp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tirc_grad_sched18_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

[[maybe_unused]] std::string tirc_bin() { return std::string("'") + TIRC_BINARY + "'"; }

}  // namespace

TEST(GradSched18, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient take about 20 s under sanitizers: the refusals and
  // the smallest applied files only.
  const std::vector<std::string> keep = {"linear.tir"};
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
  tirc::testing::expect_folder_schedules(kDir, 20);
#endif
}

namespace {

// Whether a file takes part in the default (quick) runs of VerifyCli / Ptx / Emulated.
[[maybe_unused]] bool selected(const std::string& text, bool all) {
  return all || tirc::testing::header_value(text, "quick") == "yes";
}

void verify_cli(bool all) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  (void)all;
  GTEST_SKIP() << "JIT runs of every file: needs LLVM, too slow under sanitizers";
#else
  // The interpreter already compared every schedule in process (Schedules): the CLI runs the
  // scheduled functions with the JIT only.
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (!tirc::testing::header_value(text, "refuse").empty() || !selected(text, all)) continue;
    ++n;
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string mod = tmp_path(fs::path(path).filename().string());
    std::ofstream(mod) << print_module(tirc::testing::load_with_grad(path, text));
    auto [code, out] = tirc::testing::sh(tirc_bin() + " verify '" + mod + "' --engine jit");
    fs::remove(mod);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
    EXPECT_NE(out.find("[jit]: ok"), std::string::npos) << out;
  }
  EXPECT_GE(n, all ? 18 : 3);
#endif
}

void ptx(bool all) {
#ifdef TIRC_TEST_SANITIZED
  (void)all;
  GTEST_SKIP() << "LLVM builds: too slow under sanitizers";
#else
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (tirc::testing::header_value(text, "ptx") != "yes" || !selected(text, all)) continue;
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
    // `# atomic: yes`: an "atomic" scatter bound to threads whose threads may hit one element.
    if (tirc::testing::header_value(text, "atomic") == "yes") {
      EXPECT_NE(text_ptx.find("atom.global.add.f32"), std::string::npos);
    }
    // Shared tiles staged by cache_read(..., "shared") and copied cooperatively.
    if (tirc::testing::header_value(text, "shared") == "yes") {
      EXPECT_NE(text_ptx.find(".shared .align"), std::string::npos);
      EXPECT_NE(text_ptx.find("bar.sync"), std::string::npos);
    }
    std::string log;
    int rc = tirc::testing::run_ptxas(text_ptx, &log);
    if (rc == -2) GTEST_SKIP() << "no ptxas";
    EXPECT_EQ(rc, 0) << log;
  }
  EXPECT_GE(n, all ? 6 : 2);
#endif
}

void emulated(bool all) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  (void)all;
  GTEST_SKIP() << "needs LLVM; too slow under sanitizers";
#else
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (tirc::testing::header_value(text, "ptx") != "yes" || !selected(text, all)) continue;
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
  EXPECT_GE(n, all ? 6 : 2);
#endif
}

}  // namespace

TEST(GradSched18, VerifyCli) { verify_cli(false); }
TEST(GradSched18, DISABLED_VerifyCliAll) { verify_cli(true); }
TEST(GradSched18, Ptx) { ptx(false); }
TEST(GradSched18, DISABLED_PtxAll) { ptx(true); }
TEST(GradSched18, Emulated) { emulated(false); }
TEST(GradSched18, DISABLED_EmulatedAll) { emulated(true); }

// Every tensorize of a gradient block replaced its tile: the scheduled function contains a
// block `<name>_o` (the replaced tile) and, for each intrinsic applied, none of the desc's block
// names (the desc blocks are called `upd` in these files; the impls have no blocks).
TEST(GradSched18, Tensorized) {
  int n = 0;
  for (auto& path : tirc::testing::tvm_style_files(kDir)) {
    std::string text = tirc::testing::read_text(path);
    if (!tirc::testing::header_value(text, "refuse").empty() || text.find("tensorize(") == std::string::npos)
      continue;
    SCOPED_TRACE(fs::path(path).filename().string());
#ifdef TIRC_TEST_SANITIZED
    if (fs::path(path).filename() != "linear.tir") continue;
#endif
    Module m = tirc::testing::load_with_grad(path, text);
    for (auto& item : m.schedules) {
      Function f = m.find_func(item.func);
      ASSERT_TRUE(f) << item.func;
      std::string printed = print_function(*apply_schedule(*f, item, m.intrins));
      EXPECT_EQ(printed.find("block upd("), std::string::npos) << printed;
      bool tensorizes = false;
      for (auto& ins : item.instrs) tensorizes = tensorizes || ins.primitive == "tensorize";
      if (!tensorizes) continue;
      ++n;
      EXPECT_NE(printed.find("_o("), std::string::npos) << item.func << "\n" << printed;
    }
  }
#ifndef TIRC_TEST_SANITIZED
  EXPECT_GE(n, 8);
#else
  EXPECT_GE(n, 1);
#endif
}

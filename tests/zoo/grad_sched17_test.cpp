// Helper round 17 (h6): schedules a user writes against the F_grad that `tirc grad` prints, second
// round (operators not in grad_sched16; GPU and fusion heavy: bind after split/fuse, shared
// caches, cross-thread reductions, compute_inline / compute_at / reverse_compute_at across
// gradient blocks, rfactor). tests/zoo/grad_sched17/*.tir hold the forward F, `# grad: F` and
// `schedule F_grad { ... }` (sometimes `schedule F` too); `*_refuse_*` files are sound schedules
// still refused (the exact message; the FINDINGS of helper h6, round 17, name them). For every file:
//   GradSched17.Schedules     F_grad is derived (transforms/autodiff), the schedules applied and
//                             compared with the unscheduled functions in the interpreter (two
//                             seeds, and with parallel / bound loops run backwards); `# refuse:`
//                             files must be refused with exactly that message at the marked line;
//   GradSched17.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched17.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas;
//   GradSched17.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h: one host thread per GPU
//                             thread, serialized between barriers) equal the interpreter's run of
//                             the unscheduled function (shared tiles, barriers, atomic scatters);
//                             these three take the `# quick: yes` files (about 6 s together);
//                             DISABLED_{VerifyCli,Ptx,Emulated}All take every file (about 30 s:
//                             `test_zoo --gtest_also_run_disabled_tests --gtest_filter='GradSched17.*'`);
//   GradSched17.CacheReadIndexInGrad  cache_read's integer index on an F_grad accumulation block
//                             counts the reads of buffers it does not write (the printed `reads`
//                             list also shows the accumulated buffer): index 1 is B, 2 is refused.
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

const char* kDir = "tests/zoo/grad_sched17";

[[maybe_unused]] std::string tmp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tirc_grad_sched17_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

[[maybe_unused]] std::string tirc_bin() { return std::string("'") + TIRC_BINARY + "'"; }

}  // namespace

TEST(GradSched17, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient take about 20 s under sanitizers: the refusals and
  // the smallest applied files only.
  const std::vector<std::string> keep = {"embedding_bag_gpu.tir", "concat_slice.tir"};
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
  tirc::testing::expect_folder_schedules(kDir, 25);
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
  EXPECT_GE(n, all ? 20 : 5);
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
    // The "atomic" scatters (bag rows, bilinear corners) bound to threads are atomic adds.
    if (text.find("# grad: embedding_bag") != std::string::npos ||
        text.find("# grad: upsampling_bilinear") != std::string::npos) {
      EXPECT_NE(text_ptx.find("atom.global.add.f32"), std::string::npos);
    }
    // Shared tiles: the staged operands of the tiled batch matmul gradient.
    if (text.find("# grad: batch_matmul") != std::string::npos) {
      EXPECT_NE(text_ptx.find(".shared .align"), std::string::npos);
      EXPECT_NE(text_ptx.find("bar.sync"), std::string::npos);
    }
    std::string log;
    int rc = tirc::testing::run_ptxas(text_ptx, &log);
    if (rc == -2) GTEST_SKIP() << "no ptxas";
    EXPECT_EQ(rc, 0) << log;
  }
  EXPECT_GE(n, all ? 10 : 3);
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
  EXPECT_GE(n, all ? 10 : 3);
#endif
}

}  // namespace

TEST(GradSched17, VerifyCli) { verify_cli(false); }
TEST(GradSched17, DISABLED_VerifyCliAll) { verify_cli(true); }
TEST(GradSched17, Ptx) { ptx(false); }
TEST(GradSched17, DISABLED_PtxAll) { ptx(true); }
TEST(GradSched17, Emulated) { emulated(false); }
TEST(GradSched17, DISABLED_EmulatedAll) { emulated(true); }

// The index of cache_read on an accumulation block of F_grad (`C_dA`: `A_grad[..] = A_grad[..] +
// C_grad[..] * B[..]`, no init): the printed block lists `reads C_grad, A_grad, B`, and the index
// counts the reads of buffers the block does not also write, as TVM lists a reduction's reads
// (docs/schedule.md, "Predicates, caches and outputs"): 1 is B, 2 is out of range. A user counting
// the printed list (B at 2) gets this message, which names the rule.
TEST(GradSched17, CacheReadIndexInGrad) {
  std::string fwd = R"(
func batch_matmul(A: f32[2, 4, 8], B: f32[2, 6, 8]) -> (C: f32[2, 4, 6]) {
  for b, i, j, k in grid(2, 4, 6, 8) {
    block C(vb: spatial(2) = b, vi: spatial(4) = i, vj: spatial(6) = j, vk: reduce(8) = k) {
      init { C[vb, vi, vj] = 0.0 }
      C[vb, vi, vj] += A[vb, vi, vk] * B[vb, vj, vk]
    }
  }
}
)";
  auto with_schedule = [&](const std::string& index) {
    Module m =
        parse_module(fwd + "schedule batch_matmul_grad {\n  a = get_block(\"C_dA\")\n  s = cache_read(a, " +
                         index + ", \"shared\", consumer_blocks=[a])\n}\n",
                     "t.tir");
    m.add_func(gradient(*m.find_func("batch_matmul"), {}));
    return m;
  };
  std::string printed = print_module(with_schedule("1"));
  EXPECT_NE(printed.find("reads C_grad[v6, v7, r0], A_grad[v6, v7, v8], B[v6, r0, v8]"), std::string::npos)
      << printed;
  Module ok = apply_module_schedules(with_schedule("1"));
  EXPECT_NE(print_module(ok).find("B_shared"), std::string::npos) << print_module(ok);
  Module bad = with_schedule("2");
  try {
    apply_module_schedules(bad);
    ADD_FAILURE() << "index 2 accepted";
  } catch (const SourceError& e) {
    EXPECT_EQ(
        e.message(),
        "cache_read: block C_dA has 2 read regions of buffers it does not write; index 2 is out of range");
  }
}

// The checks shared by the scheduled-gradient rounds (tests/zoo/grad_sched17_test.cpp,
// grad_sched18_test.cpp): each folder holds forward functions with `# grad: F` and
// `schedule F_grad { ... }`, and header lines `# refuse:`, `# quick: yes`, `# ptx: yes`.
// Each check takes the folder and the least number of files (or scheduled functions) it must
// see with and without `all` (the DISABLED_*All variants), so a folder emptied by accident fails.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "parser/parser.h"
#ifdef TIRC_WITH_LLVM
#include "codegen/codegen.h"
#include "interp/interp.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"
#endif
#include "tests/codegen/ptxas_util.h"
#include "tests/sanitized.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/shell.h"

namespace tirc::testing {

// Whether a file takes part in the default (quick) runs of VerifyCli / Ptx / Emulated.
inline bool grad_sched_selected(const std::string& text, bool all) {
  return all || header_value(text, "quick") == "yes";
}

// A temp file for `name`, unique to this process.
inline std::string grad_sched_tmp(const std::string& name) {
  namespace fs = std::filesystem;
  return (fs::temp_directory_path() / ("tirc_grad_sched_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Schedules under sanitizers: the interpreter runs of every gradient are too slow there, so only
// the refusals (exact message at the marked line) and the files in `keep` are applied.
inline void grad_sched_sanitized_schedules(const char* dir, const std::vector<std::string>& keep) {
  namespace fs = std::filesystem;
  for (auto& path : tvm_style_files(dir)) {
    std::string name = fs::path(path).filename().string();
    std::string text = read_text(path);
    if (header_value(text, "refuse").empty() && std::find(keep.begin(), keep.end(), name) == keep.end())
      continue;
    SCOPED_TRACE(name);
    Module m = load_with_grad(path, text);
    std::string want = header_value(text, "refuse");
    if (!want.empty()) {
      try {
        apply_module_schedules(m);
        ADD_FAILURE() << "not refused";
      } catch (const SourceError& e) {
        EXPECT_EQ(e.message(), want) << e.what();
        EXPECT_EQ(e.line(), refused_line(text)) << e.what();
      }
      continue;
    }
    for (auto& item : m.schedules) {
      Function f = m.find_func(item.func);
      ASSERT_TRUE(f) << item.func;
      expect_scheduled_matches(*f, *apply_schedule(*f, item, m.intrins));
    }
  }
}

// `tirc verify --engine jit` on the module `tirc grad` prints (the interpreter already compared
// every schedule in process).
inline void grad_sched_verify_cli(const char* dir, bool all, int min_all, int min_quick) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  (void)dir, (void)all, (void)min_all, (void)min_quick;
  GTEST_SKIP() << "JIT runs of every file: needs LLVM, too slow under sanitizers";
#else
  namespace fs = std::filesystem;
  int n = 0;
  for (auto& path : tvm_style_files(dir)) {
    std::string text = read_text(path);
    if (!header_value(text, "refuse").empty() || !grad_sched_selected(text, all)) continue;
    ++n;
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string mod = grad_sched_tmp(fs::path(path).filename().string());
    std::ofstream(mod) << print_module(load_with_grad(path, text));
    auto [code, out] = sh(std::string("'") + TIRC_BINARY + "' verify '" + mod + "' --engine jit");
    fs::remove(mod);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
    EXPECT_NE(out.find("[jit]: ok"), std::string::npos) << out;
  }
  EXPECT_GE(n, all ? min_all : min_quick);
#endif
}

// `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas; `extra(text, ptx)` adds
// the round's checks of the PTX.
inline void grad_sched_ptx(const char* dir, bool all, int min_all, int min_quick,
                           const std::function<void(const std::string&, const std::string&)>& extra) {
#ifdef TIRC_TEST_SANITIZED
  (void)dir, (void)all, (void)min_all, (void)min_quick, (void)extra;
  GTEST_SKIP() << "LLVM builds: too slow under sanitizers";
#else
  namespace fs = std::filesystem;
  int n = 0;
  for (auto& path : tvm_style_files(dir)) {
    std::string text = read_text(path);
    if (header_value(text, "ptx") != "yes" || !grad_sched_selected(text, all)) continue;
    ++n;
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string mod = grad_sched_tmp(fs::path(path).filename().string());
    std::ofstream(mod) << print_module(load_with_grad(path, text));
    std::string ptx = mod + ".ptx";
    auto [code, out] = sh(std::string("'") + TIRC_BINARY + "' build '" + mod +
                          "' --target nvptx --emit ptx -o '" + ptx + "'");
    fs::remove(mod);
    if (code != 0 && out.find("LLVM") != std::string::npos) GTEST_SKIP() << "tirc without LLVM: " << out;
    ASSERT_EQ(code, 0) << out;
    std::string text_ptx = read_text(ptx);
    fs::remove(ptx);
    extra(text, text_ptx);
    std::string log;
    int rc = run_ptxas(text_ptx, &log);
    if (rc == -2) GTEST_SKIP() << "no ptxas";
    EXPECT_EQ(rc, 0) << log;
  }
  EXPECT_GE(n, all ? min_all : min_quick);
#endif
}

// `# ptx: yes` files: the kernels of each GPU-scheduled function run in the GPU emulator equal
// the interpreter's run of the unscheduled function.
inline void grad_sched_emulated(const char* dir, bool all, int min_all, int min_quick) {
#if defined(TIRC_TEST_SANITIZED) || !defined(TIRC_WITH_LLVM)
  (void)dir, (void)all, (void)min_all, (void)min_quick;
  GTEST_SKIP() << "needs LLVM; too slow under sanitizers";
#else
  namespace fs = std::filesystem;
  int n = 0;
  for (auto& path : tvm_style_files(dir)) {
    std::string text = read_text(path);
    if (header_value(text, "ptx") != "yes" || !grad_sched_selected(text, all)) continue;
    SCOPED_TRACE(fs::path(path).filename().string());
    Module m = load_with_grad(path, text);
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
      ArgMap got = emulate(g, in, &err);
      ASSERT_EQ(err, "") << g->name;
      for (auto& [name, arr] : want) {
        CompareResult r = compare_arrays(name, arr, got.at(name), o);
        EXPECT_TRUE(r.ok) << g->name << " on the emulated GPU: " << r.detail;
      }
    }
  }
  EXPECT_GE(n, all ? min_all : min_quick);
#endif
}

// `# atomic: yes`: an "atomic" scatter bound to threads whose threads may hit one element;
// `# shared: yes`: shared tiles staged by cache_read(..., "shared") and copied cooperatively.
inline void grad_sched_ptx_header_checks(const std::string& text, const std::string& ptx) {
  if (header_value(text, "atomic") == "yes") {
    EXPECT_NE(ptx.find("atom.global.add.f32"), std::string::npos);
  }
  if (header_value(text, "shared") == "yes") {
    EXPECT_NE(ptx.find(".shared .align"), std::string::npos);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  }
}

// Every tensorize of a gradient block in `dir` replaced its tile: the scheduled function holds a
// block `<name>_o` (the replaced tile) and none of the desc's blocks (called `upd` in these
// files; the impls have no blocks). At least `min_n` tensorizing items (`min_sanitized` under
// sanitizers, where only `sanitized_file` runs).
inline void grad_sched_tensorized(const char* dir, const std::string& sanitized_file, int min_n,
                                  int min_sanitized) {
  int n = 0;
  for (auto& path : tvm_style_files(dir)) {
    std::string text = read_text(path);
    if (!header_value(text, "refuse").empty() || text.find("tensorize(") == std::string::npos) continue;
    std::string file = std::filesystem::path(path).filename().string();
    SCOPED_TRACE(file);
#ifdef TIRC_TEST_SANITIZED
    if (file != sanitized_file) continue;
#else
    (void)sanitized_file;
#endif
    Module m = load_with_grad(path, text);
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
  EXPECT_GE(n, min_n);
  (void)min_sanitized;
#else
  EXPECT_GE(n, min_sanitized);
  (void)min_n;
#endif
}

}  // namespace tirc::testing

// Shared by the suites that run folders of TVM-style schedule files (tvm_style_test.cpp,
// outsider8/9_test.cpp ...): the files of a folder, their `# key: value` header lines, the
// mutator that runs parallel-like loops backwards, and the two checks every outsider round
// runs over its folder (expect_folder_schedules, expect_folder_verifies_cli).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/shell.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc::testing {

// The .tir files of DIR (relative to the source tree), sorted; none when DIR is missing.
inline std::vector<std::string> tvm_style_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::is_directory(fs::path(TIRC_SOURCE_DIR) / dir)) return out;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / dir))
    if (e.path().extension() == ".tir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Value of a `# key: value` header line, or "".
inline std::string header_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("# " + key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 3);
      while (!v.empty() && v[0] == ' ') v.erase(0, 1);
      return v;
    }
  return "";
}

// Parallel-like loops run backwards (serially): a schedule that relies on the order of
// iterations of such a loop computes something else.
class ReverseParallelLoops : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt b = IRMutator::mutate_for(n, s);
    auto* f = b.as<ForNode>();
    if (f->for_kind == ForKind::Serial || f->for_kind == ForKind::Unrolled) return b;
    // A thread-bound reduction loop (a cross-thread reduction) keeps its order: its init
    // runs at the first iteration.
    if (f->for_kind == ForKind::ThreadBinding && loop_feeds_reduction(*f)) return b;
    Var nv(f->loop_var.name(), f->loop_var.dtype());
    // nv runs over [min, min + extent): the reversed value is min + (min + extent - 1 - nv).
    Expr rev = f->min + f->min + f->extent - make_int(1, f->extent.dtype()) - nv;
    return make_for(nv, f->min, f->extent, ForKind::Serial,
                    substitute(f->body, std::unordered_map<const VarNode*, Expr>{{f->loop_var.get(), rev}}));
  }
};

// g, the schedule of f: changes something, computes what f does in the interpreter (seeds 1
// and 2, and with its parallel-like loops reversed), and prints text that parses back to it.
inline void expect_scheduled_matches(const FunctionNode& f, const FunctionNode& g) {
  EXPECT_FALSE(structural_equal(f, g)) << "the schedule changed nothing";
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(f, g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << f.name << ": " << r.detail << "\n" << print_function(g);
  }
  FunctionNode rev = g;
  rev.body = ReverseParallelLoops().mutate(g.body);
  CompareResult r2 = compare_functions(f, rev, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r2.ok) << f.name << " (parallel loops reversed): " << r2.detail;
  Module again = parse_module(print_function(g), "again.tir");
  ASSERT_EQ(again.funcs.size(), 1u);
  auto d = structural_diff(g, *again.funcs[0]);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << print_function(g);
}

// The module of a schedule file, with the gradient of its `# grad: F` function added (as
// `tirc grad` prints it, so that a schedule may name F_grad's blocks).
inline Module load_with_grad(const std::string& path, const std::string& text) {
  Module m = parse_module(text, std::filesystem::path(path).filename().string());
  std::string g = header_value(text, "grad");
  if (!g.empty()) {
    Function f = m.find_func(g);
    if (!f) throw Error("no function " + g + " to differentiate");
    m.add_func(gradient(*f, {}));
  }
  return m;
}

// The line marked `# <- refused` (1-based), or 0.
inline int refused_line(const std::string& text) {
  int line = 0;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    ++line;
    if (l.find("# <- refused") != std::string::npos) return line;
  }
  return 0;
}

// Every file of DIR (at least min_files): refused with exactly its `# refuse:` message at its
// marked line, or applied, changed, equal to the unscheduled function in the interpreter (two
// seeds, and with parallel-like loops reversed) and printed to text that re-parses to the same IR.
inline void expect_folder_schedules(const std::string& dir, size_t min_files) {
  namespace fs = std::filesystem;
  auto files = tvm_style_files(dir);
  ASSERT_GE(files.size(), min_files);
  for (auto& path : files) {
    SCOPED_TRACE(fs::path(path).filename().string());
    std::string text = read_text(path);
    Module m = load_with_grad(path, text);
    ASSERT_FALSE(m.schedules.empty());
    std::string want = header_value(text, "refuse");
    if (!want.empty()) {
      int line = refused_line(text);
      ASSERT_GT(line, 0) << "mark the refused instruction with '# <- refused'";
      try {
        apply_module_schedules(m);
        ADD_FAILURE() << "not refused";
      } catch (const SourceError& e) {
        EXPECT_EQ(e.message(), want) << e.what();
        EXPECT_EQ(e.line(), line) << e.what();
      }
      continue;
    }
    for (auto& item : m.schedules) {
      Function f = m.find_func(item.func);
      ASSERT_TRUE(f) << item.func;
      Function g;
      try {
        g = apply_schedule(*f, item, m.intrins);
      } catch (const SourceError& e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      expect_scheduled_matches(*f, *g);
    }
  }
}

// The applied files of DIR through `tirc verify` (gradients added first, as `tirc grad` prints
// them), which also runs the JIT when tirc has LLVM. Without the JIT, `tirc verify` repeats what
// expect_folder_schedules checked in process: a few files exercise the command (keeps the
// sanitizer job short).
inline void expect_folder_verifies_cli(const std::string& dir) {
  namespace fs = std::filesystem;
  size_t run_count = 0;
  for (auto& path : tvm_style_files(dir)) {
    std::string text = read_text(path);
    if (!header_value(text, "refuse").empty()) continue;
#ifndef TIRC_WITH_LLVM
    if (++run_count > 4) break;
#else
    ++run_count;
#endif
    SCOPED_TRACE(fs::path(path).filename().string());
    Module m = load_with_grad(path, text);
    fs::path tmp =
        fs::temp_directory_path() / ("tirc_" + fs::path(dir).filename().string() + "_" +
                                     std::to_string(::getpid()) + "_" + fs::path(path).filename().string());
    std::ofstream(tmp) << print_module(m);
    auto [code, out] = sh(std::string("'") + TIRC_BINARY + "' verify '" + tmp.string() + "'");
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
#ifdef TIRC_WITH_LLVM
    EXPECT_NE(out.find("[jit]: ok"), std::string::npos) << out;
#endif
    fs::remove(tmp);
  }
  EXPECT_GT(run_count, 0u);
}

}  // namespace tirc::testing

// Shared by the suites that run folders of TVM-style schedule files (tvm_style_test.cpp,
// outsider8_test.cpp): the files of a folder, their `# key: value` header lines, and the
// mutator that runs parallel-like loops backwards.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
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

}  // namespace tirc::testing

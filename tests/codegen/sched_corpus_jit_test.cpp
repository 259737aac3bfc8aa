// Every scheduled function of the schedule corpora (examples/schedules,
// tests/schedule/cases, tests/schedule/tvm_style) compiled by the JIT and compared with the
// interpreter running the same scheduled function on the same random inputs: the lowering
// and codegen of what the primitives produce (caches, compute_at tiles, predicates, parallel
// and vectorized loops, tensorized impls) must agree with the reference semantics.
// Files with a `# refuse:` header are refusal tests and are skipped; `# grad: F` adds F_grad
// first (as tests/schedule/tvm_style_test.cpp does).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/jit.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> corpus() {
  std::vector<std::string> out;
  for (const char* dir : {"examples/schedules", "tests/schedule/cases", "tests/schedule/tvm_style"})
    for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / dir))
      if (e.path().extension() == ".tir") out.push_back(fs::relative(e.path(), TIRC_SOURCE_DIR).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string header(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("# " + key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 3);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      return v;
    }
  return "";
}

class SchedCorpusJit : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedCorpusJit, JitMatchesInterpreter) {
  std::string path = std::string(TIRC_SOURCE_DIR) + "/" + GetParam();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (!header(text, "refuse").empty()) GTEST_SKIP() << "refusal test";
  Module m = parse_module(text, GetParam());
  std::string g = header(text, "grad");
  if (!g.empty()) {
    Function f = m.find_func(g);
    ASSERT_TRUE(f) << g;
    m.funcs.push_back(gradient(*f, {}));
  }
  FunctionRunner jit = [](const FunctionNode& f, const ArgMap& inputs) {
    return compile_jit(f)->run(inputs);
  };
  int checked = 0;
  for (auto& item : m.schedules) {
    Function f = m.find_func(item.func);
    ASSERT_TRUE(f) << item.func;
    Function s = apply_schedule(*f, item, m.intrins);
    CompareOptions o;
    o.seed = 3;
    CompareResult r = compare_functions(*s, *s, o, interp_runner(), jit);
    EXPECT_TRUE(r.ok) << item.func << ": " << r.detail;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no schedule item";
}

INSTANTIATE_TEST_SUITE_P(Corpus, SchedCorpusJit, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = fs::path(i.param).parent_path().filename().string() + "_" +
                                           fs::path(i.param).stem().string();
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace tirc

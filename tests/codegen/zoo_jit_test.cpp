// Every zoo op (examples/ops/OP.tir, found at test time) and every shared example, forward and
// OP_grad (transforms/autodiff/gradient.h), runs through the JIT and matches the interpreter
// on the same random inputs. Functions the autodiff refuses are skipped for the grad test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "interp/runner.h"
#include "ir/error.h"
#include "tests/codegen/compare.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> zoo_files() {
  std::vector<std::string> out;
  fs::path dir = fs::path(TIRC_SOURCE_DIR) / "examples" / "ops";
  if (fs::exists(dir))
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tir") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back("<none>");
  return out;
}

// `# zoo-input: NAME=VALUE` lines give scalar parameters.
ArgMap scalar_inputs(const fs::path& file, const FunctionNode& f) {
  std::ifstream in(file);
  std::string line;
  std::vector<std::string> specs;
  std::regex re(R"(#\s*zoo-input:\s*(\S+=\S+))");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) specs.push_back(m[1]);
  return parse_input_specs(f, specs);
}

void check_op(const std::string& op, bool grad) {
  if (op == "<none>") GTEST_SKIP() << "no zoo ops yet";
  fs::path file = fs::path(TIRC_SOURCE_DIR) / "examples" / "ops" / (op + ".tir");
  Module m = parse_file(file.string());
  Function f = m.find_func(op);
  ASSERT_TRUE(f) << op;
  ArgMap given = scalar_inputs(file, *f);
  if (!grad) {
    expect_jit_matches_interp(*f, 31, 1e-5, 1e-6, given);
    if (!m.schedules.empty()) {  // the op's own schedule, when it has one
      Module s = apply_module_schedules(m);
      expect_jit_matches_interp(*s.find_func(op), 31, 1e-5, 1e-6, given);
    }
    return;
  }
  Function g;
  try {
    g = gradient(*f, {});
  } catch (const Error& e) {
    GTEST_SKIP() << "autodiff refuses " << op << ": " << e.what();
  }
  expect_jit_matches_interp(*g, 32, 1e-5, 1e-6, given);
}

}  // namespace

class ZooJit : public ::testing::TestWithParam<std::string> {};
TEST_P(ZooJit, Forward) { check_op(GetParam(), false); }
TEST_P(ZooJit, Grad) { check_op(GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(Ops, ZooJit, ::testing::ValuesIn(zoo_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(ExamplesJit, ScheduledMatchInterpreter) {
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    SCOPED_TRACE(ex);
    Module m = apply_module_schedules(parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + ex + ".tir"));
    expect_jit_matches_interp(*m.find_func(ex), 4, 1e-5, 1e-6);
  }
}

TEST(ExamplesJit, GradientsMatchInterpreter) {
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    SCOPED_TRACE(ex);
    Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + ex + ".tir");
    Function f = m.find_func(ex);
    Function g = gradient(*f, {});
    expect_jit_matches_interp(*g, 3, 1e-5, 1e-6);
  }
}

}  // namespace tirc

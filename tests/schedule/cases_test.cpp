// Before/after tests: every tests/schedule/cases/*.tir holds a function F, a `schedule F`
// and the expected result as `func F__expected`. The schedule's result must be
// structurally equal to the expected function, compute the same as F in the interpreter,
// and print to text that re-parses to the same IR.
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> case_files() {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "tests/schedule/cases"))
    if (e.path().extension() == ".tir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

class ScheduleCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleCase, MatchesExpectedAndInterpreter) {
  Module m = parse_file(GetParam());
  ASSERT_EQ(m.schedules.size(), 1u);
  const ScheduleItem& item = m.schedules[0];
  Function f = m.find_func(item.func);
  Function want = m.find_func(item.func + "__expected");
  ASSERT_TRUE(f && want);
  Function got = apply_schedule(*f, item);
  FunctionNode expected = *want;
  expected.name = f->name;
  auto diff = structural_diff(*got, expected);
  EXPECT_FALSE(diff.has_value()) << *diff << "\n" << print_function(*got);
  CompareOptions o;
  o.seed = 3;
  if (f->name == "sym") {
    NDArray n(DType::I32, {});
    n.set(0, 10);
    o.scalars["n"] = n;
  }
  CompareResult r = compare_functions(*f, *got, o, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
  Module again = parse_module(print_function(*got), "again.tir");
  ASSERT_EQ(again.funcs.size(), 1u);
  EXPECT_TRUE(structural_equal(*got, *again.funcs[0]));
}

INSTANTIATE_TEST_SUITE_P(Cases, ScheduleCase, ::testing::ValuesIn(case_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return fs::path(i.param).stem().string();
                         });

// The module-level application consumes the schedule items and keeps everything else.
TEST(ScheduleModule, ConsumesScheduleItems) {
  Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/matmul.tir");
  ASSERT_EQ(m.schedules.size(), 1u);
  Module out = apply_module_schedules(m);
  EXPECT_TRUE(out.schedules.empty());
  ASSERT_EQ(out.funcs.size(), 1u);
  std::string text = print_module(out);
  EXPECT_EQ(text.find("schedule"), std::string::npos);
  Module again = parse_module(text, "again.tir");
  EXPECT_TRUE(structural_equal(out, again));
  EXPECT_EQ(print_module(again), text);
}

}  // namespace
}  // namespace tirc

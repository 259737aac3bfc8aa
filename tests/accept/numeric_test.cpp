// `tirc run` on .npy inputs, results written with --output and compared with NumPy
// references (cases/gen_refs.py), with both engines.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct RunCase {
  const char* file;
  const char* func;
  std::vector<std::pair<std::string, std::string>> inputs;   // NAME -> data file stem or VALUE
  std::vector<std::pair<std::string, std::string>> outputs;  // NAME -> data file stem
  double tol = 1e-5;
};

std::vector<RunCase> run_cases() {
  auto d = [](const char* s) { return std::string(s); };
  return {
      {"intrinsics.tir", "unary", {{"X", d("unary_X")}}, {{"Y", d("unary_Y")}}, 2e-6},
      {"intrinsics.tir", "intdiv", {{"A", "intdiv_A"}, {"B", "intdiv_B"}}, {{"Q", "intdiv_Q"}}, 0},
      {"intrinsics.tir",
       "literals",
       {{"X", "literals_X"}},
       {{"Y", "literals_Y"}, {"L", "literals_L"}, {"Bo", "literals_Bo"}},
       0},
      {"dtypes.tir",
       "conv_types",
       {{"H", "dtypes_H"},
        {"I8", "dtypes_I8"},
        {"U8", "dtypes_U8"},
        {"B", "dtypes_B"},
        {"L", "dtypes_L"},
        {"D", "dtypes_D"}},
       {{"Hs", "dtypes_Hs"},
        {"Bf", "dtypes_Bf"},
        {"Iu", "dtypes_Iu"},
        {"Lo", "dtypes_Lo"},
        {"Df", "dtypes_Df"},
        {"Bo", "dtypes_Bo"}},
       1e-12},
      {"symbolic.tir",
       "scale",
       {{"n", "=3"}, {"alpha", "=0.5"}, {"A", "scale_A"}},
       {{"B", "scale_B"}, {"S", "scale_S"}}},
      {"structure.tir", "inplace", {{"A", "inplace_A"}}, {{"B", "inplace_B"}, {"RowSum", "inplace_RowSum"}}},
      {"structure.tir", "cumsum", {{"X", "cumsum_X"}}, {{"Y", "cumsum_Y"}}},
      {"structure.tir", "nested", {{"A", "nested_A"}}, {{"B", "nested_B"}}},
      {"structure.tir", "padded", {{"A", "padded_A"}}, {{"B", "padded_B"}}, 0},
      {"structure.tir", "gather", {{"T", "gather_T"}, {"Idx", "gather_Idx"}}, {{"O", "gather_O"}}, 0},
      {"structure.tir", "conv1d", {{"X", "conv1d_X"}, {"W", "conv1d_W"}}, {{"Y", "conv1d_Y"}}},
      {"syntax_kitchen.tir",
       "compound",
       {{"A", "compound_A"}, {"I", "compound_I"}},
       {{"B", "compound_B"}, {"J", "compound_J"}},
       0},
      {"semantics.tir",
       "f",
       {{"X", "sem_X"}, {"I", "sem_I"}, {"U", "sem_U"}},
       {{"R", "sem_R"}, {"J", "sem_J"}, {"V", "sem_V"}, {"K", "sem_K"}},
       0},
      {"syntax_kitchen.tir",
       "bindings",
       {{"A", "bindings_A"}},
       {{"B", "bindings_B"}, {"H", "bindings_H"}, {"M", "bindings_M"}}},
  };
}

void check_case(const RunCase& c, const std::string& engine) {
  check_run_against_npy(c.file, c.func, engine, c.inputs, c.outputs, c.tol);
}

TEST(AcceptRun, InterpMatchesNumpy) {
  for (auto& c : run_cases()) check_case(c, "interp");
}

TEST(AcceptRun, JitMatchesNumpy) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  for (auto& c : run_cases()) check_case(c, "jit");
}

// Without --output: one summary line per output (name, dtype, shape, sum, first values).
TEST(AcceptRun, PrintsSummaryPerOutput) {
  CliRun r = run("run @/structure.tir --func padded --input A=@/data/padded_A.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("B: f32[10] sum=", 0), 0u) << r.out;
  CliRun m = run("run @/symbolic.tir --func scale --input n=2 --input alpha=1 --input A=1.5");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out,
            "B: f32[2, 4] sum=28 first=[3.5, 3.5, 3.5, 3.5, 3.5, 3.5, 3.5, 3.5]\n"
            "S: f32[2] sum=28 first=[14, 14]\n");
}

// The module can come on standard input.
TEST(AcceptRun, ModuleFromStdin) {
  CliRun r = run("run - --func padded --input A=@/data/padded_A.npy --output B=%/B.npy",
                 slurp(cases() + "structure.tir"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(compare(read_npy(tmp() + "B.npy"), read_npy(cases() + "data/padded_B.npy"), 0, 0), "");
}

// --random is deterministic, and both engines agree on it.
TEST(AcceptRun, RandomIsDeterministic) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r1 = run("run @/structure.tir --func conv1d --random 42");
  CliRun r2 = run("run @/structure.tir --func conv1d --random 42");
  CliRun r3 = run("run @/structure.tir --func conv1d --random 43");
  CliRun r4 = run("run @/structure.tir --func conv1d --random 42 --engine jit");
  ASSERT_EQ(r1.code, 0) << r1.err;
  EXPECT_EQ(r1.out, r2.out);
  EXPECT_NE(r1.out, r3.out);
  EXPECT_EQ(r1.out, r4.out);
  // Declared ranges are honoured: Idx in [0, 9] indexes T[10, 3] (no out-of-bounds error).
  for (int seed = 0; seed < 5; ++seed) {
    CliRun g = run("run @/structure.tir --func gather --random " + std::to_string(seed));
    EXPECT_EQ(g.code, 0) << g.err;
  }
}

}  // namespace
}  // namespace tirc::accept

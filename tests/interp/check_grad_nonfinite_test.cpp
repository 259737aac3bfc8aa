// check_grad (`tirc check-grad`) on functions whose outputs or gradients are not finite
// (docs/autodiff.md, "check-grad and non-finite values"): non-finite outputs are left out,
// non-finite finite differences are skipped with a note, a nan gradient where finite
// differences are finite fails, and an input with nothing compared never passes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "parser/parser.h"
#include "transforms/autodiff/check_grad.h"

namespace tirc {
namespace {

const char* kScript = R"(func lg(X: f32[4] in [0.5, 2]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { Y[vi] = log(X[vi]) }
  }
}
func sq(X: f32[4] in [0.5, 2]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { Y[vi] = sqrt(X[vi]) }
  }
}
func ab(X: f32[4] in [0.5, 2]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { Y[vi] = sqrt(X[vi] * X[vi]) }
  }
}
func lits(X: f32[4]) -> (Y: f32[4, 3]) {
  for i in serial(4) {
    block l(vi: spatial(4) = i) {
      Y[vi, 0] = X[vi] * 2.0
      Y[vi, 1] = if_then_else(vi < 2, nan, inf)
      Y[vi, 2] = select(X[vi] != X[vi], 0.0, -inf)
    }
  }
}
func allinf(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { Y[vi] = X[vi] * inf }
  }
}
)";

// X = [0, 1.5, 0.7, 2]: element 0 is where log, sqrt and |x| misbehave.
NDArray x_with_zero() {
  NDArray a(DType::F32, {4});
  double v[] = {0.0, 1.5, 0.7, 2.0};
  for (int i = 0; i < 4; ++i) a.set(i, v[i]);
  return a;
}

CheckGradResult check(const std::string& fn, bool full, bool zero) {
  Module m = parse_module(kScript, "cg.tir");
  CheckGradOptions o;
  o.full = full;
  if (zero) o.given["X"] = x_with_zero();
  return check_grad(*m.find_func(fn), o);
}

TEST(CheckGradNonFinite, NonFiniteOutputsAreLeftOut) {
  for (bool full : {false, true}) {
    CheckGradResult r = check("lits", full, false);
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_TRUE(r.inputs[0].passed);
    EXPECT_EQ(r.inputs[0].checks, full ? 4 : 3);
    EXPECT_EQ(r.inputs[0].skipped, 0);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0], "output Y: 8 of 12 elements are not finite at the inputs (left out of the check)");
  }
}

TEST(CheckGradNonFinite, GradientAtANonFiniteOutputIsSkipped) {
  // log at 0: Y[0] = -inf is left out; its gradient 0/0 = nan is not compared.
  for (bool full : {false, true}) {
    CheckGradResult r = check("lg", full, true);
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.inputs[0].checks, 3);
    EXPECT_EQ(r.inputs[0].skipped, 1);
    ASSERT_EQ(r.inputs[0].notes.size(), 1u);
    EXPECT_EQ(r.inputs[0].notes[0], "1 skipped: gradient not finite where an output is not finite");
  }
}

TEST(CheckGradNonFinite, NonFiniteDifferencesAreSkipped) {
  // sqrt at 0: sqrt(-h) is nan, so the element cannot be checked; the others pass.
  CheckGradResult r = check("sq", true, true);
  EXPECT_EQ(r.passed, 1);
  EXPECT_EQ(r.inputs[0].checks, 3);
  EXPECT_EQ(r.inputs[0].skipped, 1);
  ASSERT_EQ(r.inputs[0].notes.size(), 1u);
  EXPECT_EQ(r.inputs[0].notes[0], "1 skipped: finite differences not finite");
  EXPECT_TRUE(r.notes.empty());
}

TEST(CheckGradNonFinite, NanGradientWhereDifferencesAreFiniteFails) {
  // sqrt(x * x) at 0: the output is finite, finite differences give 0, F_grad gives 0/0.
  for (bool full : {false, true}) {
    CheckGradResult r = check("ab", full, true);
    EXPECT_EQ(r.failed, 1);
    EXPECT_FALSE(r.inputs[0].passed);
    ASSERT_FALSE(r.inputs[0].notes.empty());
    EXPECT_EQ(r.inputs[0].notes[0], "gradient at X[0] is nan where finite differences give 0.000e+00");
  }
}

TEST(CheckGradNonFinite, NothingComparedNeverPasses) {
  // sqrt at 0 everywhere: the outputs are finite, every finite difference is nan.
  Module m = parse_module(kScript, "cg.tir");
  CheckGradOptions o;
  o.given["X"] = NDArray(DType::F32, {4});
  for (int i = 0; i < 4; ++i) o.given["X"].set(i, 0.0);
  CheckGradResult r = check_grad(*m.find_func("sq"), o);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.inputs[0].checks, 0);
  EXPECT_EQ(r.inputs[0].skipped, 4);
  ASSERT_EQ(r.inputs[0].notes.size(), 2u);
  EXPECT_EQ(r.inputs[0].notes[0], "4 skipped: finite differences not finite");
  EXPECT_EQ(r.inputs[0].notes[1], "no check could be compared");
}

TEST(CheckGradNonFinite, NoFiniteOutputNeverPasses) {
  // log(inf) = inf everywhere: L is empty, so 0 == 0 would "pass" every element.
  Module m = parse_module(kScript, "cg.tir");
  CheckGradOptions o;
  o.full = true;
  o.given["X"] = NDArray(DType::F32, {4});
  for (int i = 0; i < 4; ++i) o.given["X"].set(i, INFINITY);
  CheckGradResult r = check_grad(*m.find_func("lg"), o);
  EXPECT_EQ(r.failed, 1);
  ASSERT_EQ(r.inputs[0].notes.size(), 1u);
  EXPECT_EQ(r.inputs[0].notes[0], "no output element is finite at the inputs: nothing to compare");
  o.full = false;
  o.directions = 0;
  EXPECT_THROW(check_grad(*m.find_func("lg"), o), Error);
}

// ---- through the tirc binary: human and JSON output ----

struct Cmd {
  int code;
  std::string out, err;
};

Cmd tirc(const std::string& args) {
  std::string base = "/tmp/tirc_cgnf_" + std::to_string(::getpid());
  std::ofstream(base + ".tir") << kScript;
  std::string cmd =
      std::string(TIRC_BINARY) + " " + args + " " + base + ".tir > " + base + ".out 2> " + base + ".err";
  int rc = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Cmd r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(base + ".out"), slurp(base + ".err")};
  for (const char* ext : {".tir", ".out", ".err"}) std::filesystem::remove(base + ext);
  return r;
}

TEST(CheckGradNonFiniteCli, HumanOutput) {
  Cmd r = tirc("check-grad --func lits");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("X: max abs err ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" over 3 directions: passed\n1 passed, 0 failed\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "note: output Y: 8 of 12 elements are not finite at the inputs (left out of the check)\n");
  r = tirc("check-grad --func sq --input X=0");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "X: max abs err 0.000e+00, max rel err 0.000e+00 over 0 directions: FAILED (4 skipped: finite "
            "differences not finite; no check could be compared)\n0 passed, 1 failed\n");
  EXPECT_EQ(r.err, "");
  r = tirc("check-grad --func allinf --full");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(
      r.out,
      "X: max abs err 0.000e+00, max rel err 0.000e+00 over 0 elements: FAILED (no output element is finite "
      "at the inputs: nothing to compare)\n0 passed, 1 failed\n");
  EXPECT_EQ(r.err, "note: output Y: 4 of 4 elements are not finite at the inputs (left out of the check)\n");
  r = tirc("check-grad --func sq --directions 0");
  EXPECT_EQ(r.code, 2);
}

TEST(CheckGradNonFiniteCli, Json) {
  Cmd r = tirc("check-grad --func lits --full --json");
  EXPECT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], 1);
  EXPECT_EQ(j["failed"], 0);
  ASSERT_EQ(j["notes"].size(), 1u);
  EXPECT_EQ(j["notes"][0], "output Y: 8 of 12 elements are not finite at the inputs (left out of the check)");
  EXPECT_EQ(j["inputs"][0]["checks"], 4);
  EXPECT_EQ(j["inputs"][0]["skipped"], 0);
  EXPECT_TRUE(j["inputs"][0]["notes"].empty());
  r = tirc("check-grad --func sq --input X=0 --json");
  EXPECT_EQ(r.code, 1);
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["inputs"][0]["passed"], false);
  EXPECT_EQ(j["inputs"][0]["skipped"], 4);
  EXPECT_EQ(j["inputs"][0]["notes"][1], "no check could be compared");
}

}  // namespace
}  // namespace tirc

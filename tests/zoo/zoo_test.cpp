// The operator zoo: every examples/ops/OP.tir (found at test time, so a new file is covered
// without editing this one) is checked five ways, one parameterised test each:
//   parse       parser/parser.h parses it and it defines a function named OP;
//   forward     the interpreter's outputs on random inputs match the PyTorch reference
//               (examples/ops/ref/zoo_ref.py, computed by examples/ops/ref/check.py);
//   grad_torch  OP_grad from `tirc grad`, run by the interpreter in f64, matches the
//               vector-Jacobian product of torch.autograd on the same inputs/cotangents;
//   check_grad  `tirc check-grad OP.tir --func OP` exits 0 (finite differences);
//   flop_ratio  FLOPs of OP_grad <= 3x FLOPs of OP (`tirc stats --json`); for an op whose
//               forward has no FLOPs (pure data movement) the bound is 3x its stores.
// Known failures of other components are listed, with reasons, in known_failures.txt: such a
// test still runs; its failure is reported as a skip (with the reason and the failure), and
// if it passes the test fails asking to remove the stale line (strict xfail). Ops are never
// removed from the zoo to dodge a failure.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tests/zoo/torch_refs.h"
#include "tests/zoo/zoo_util.h"

namespace fs = std::filesystem;
using namespace tirc;
using namespace tirc::zoo;

namespace {

constexpr uint64_t kSeed = 20261121;
constexpr double kMaxFlopRatio = 3.0;

std::string tirc_bin() { return shell_quote(TIRC_BINARY); }
std::string op_file(const std::string& op) { return (ops_dir() / (op + ".tir")).string(); }

// Runs one check of the zoo. For an (op, test) listed in known_failures.txt the check's
// failures are intercepted and turned into a skip; a listed check that passes fails.
void run_check(const std::string& op, const std::string& test, const std::function<void()>& body) {
  const std::string reason = known_failure(op, test);
  if (reason.empty()) {
    body();
    return;
  }
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    body();
  }
  std::string failures;
  for (int i = 0; i < results.size(); ++i)
    if (results.GetTestPartResult(i).failed()) failures += results.GetTestPartResult(i).message();
  if (!failures.empty()) {
    if (failures.size() > 1500) failures = failures.substr(0, 1500) + "...";
    GTEST_SKIP() << "known failure (tests/zoo/known_failures.txt): " << reason << "\n" << failures;
  }
  FAIL() << op << " " << test << " is listed in tests/zoo/known_failures.txt (" << reason
         << ") but passes now: remove the line";
}

// The op's function, parsed from its file (fails the test when absent).
Function load_op(const std::string& op) {
  Module m = parse_file(op_file(op));
  Function f = m.find_func(op);
  if (!f) throw Error("examples/ops/" + op + ".tir defines no function named '" + op + "'");
  return f;
}

// Scalar params given by `# zoo-input:` lines, as 0-d arrays of the param's dtype.
ArgMap scalar_inputs(const std::string& op, const FunctionNode& f) {
  ArgMap given;
  for (const auto& [name, value] : zoo_inputs(op)) {
    for (const auto& p : f.params) {
      if (p.is_buffer() || p.name() != name) continue;
      NDArray a(p.var.dtype(), {});
      a.set(0, std::stod(value));
      given[name] = a;
    }
  }
  return given;
}

// Runs `tirc grad` on the op and returns the module text's path inside dir.
fs::path run_grad(const std::string& op, const fs::path& dir, std::string* log) {
  fs::path out = dir / (op + "_grad.tir");
  CommandResult r = run_command(tirc_bin() + " grad " + shell_quote(op_file(op)) + " --func " + op + " -o " +
                                shell_quote(out.string()));
  *log = r.output;
  if (r.exit_code != 0) return {};
  return out;
}

// Top-level totals of `tirc stats --json`.
nlohmann::json run_stats(const std::string& file, const std::string& func, const std::string& op,
                         std::string* log) {
  CommandResult r = run_command(tirc_bin() + " stats " + shell_quote(file) + " --func " + func + " --json" +
                                zoo_input_flags(op));
  *log = r.output;
  if (r.exit_code != 0) return nullptr;
  // Tolerate a trailing newline or log lines before the object.
  size_t b = r.output.find('{');
  if (b == std::string::npos) return nullptr;
  return nlohmann::json::parse(r.output.substr(b), nullptr, /*allow_exceptions=*/false);
}

// ---- the five checks; each is a plain function so that run_check can intercept it ----

void check_parse(const std::string& op) {
  try {
    Function f = load_op(op);
    EXPECT_EQ(f->name, op);
    EXPECT_FALSE(f->outputs.empty()) << op << " has no outputs";
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// ---- PyTorch references (tests/zoo/torch_refs.h) ----
// Computed for the whole zoo by one Python process (the ctest fixture ZooSetup.torch_refs,
// `check.py refs`) into <build>/zoo_torch_refs/OP/; forward and grad_torch compare against
// them with check.py's tolerances. A test run without the fixture (or after the op's file
// changed) recomputes its own op's references.

// forward: tirc computes in f32 (the interpreter's own arithmetic), the reference in f64.
// grad: tirc runs OP_grad with promote_f64; only f32-rounded literals of the .tir differ.
constexpr double kFwdRtol = 1e-4, kFwdAtol = 1e-5;
constexpr double kGradRtol = 1e-5, kGradAtol = 1e-6;

TorchRefs& refs() {
  static TorchRefs r(ops_dir() / "ref" / "check.py", refs_dir("zoo_torch_refs"));
  return r;
}

RefCase make_case(const std::string& op) {
  Function f = load_op(op);
  return make_ref_case(*f, kSeed, scalar_inputs(op, *f));
}

void check_forward(const std::string& op) {
  try {
    RefCase c = refs().case_with_refs(op, make_case);
    std::map<std::string, NDArray> ref = refs().load(op, "out");
    std::map<std::string, NDArray> got(c.outputs.begin(), c.outputs.end());
    ASSERT_EQ(key_list(got), key_list(ref)) << "outputs of tirc vs the reference";
    for (const auto& [name, want] : ref)
      expect_close(op + " output " + name, got.at(name), want, kFwdRtol, kFwdAtol);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

void check_grad_torch(const std::string& op) {
  ScratchDir dir("gradt_" + op);
  std::string log;
  fs::path gfile = run_grad(op, dir.path(), &log);
  ASSERT_FALSE(gfile.empty()) << "tirc grad " << op_file(op) << " --func " << op << " failed:\n" << log;
  try {
    RefCase c = refs().case_with_refs(op, make_case);
    Module gm = parse_file(gfile.string());
    Function g = gm.find_func(op + "_grad");
    ASSERT_TRUE(g) << "tirc grad output has no function " << op << "_grad";
    expect_vjp_matches(*g, c, refs().load(op, "grad"), kGradRtol, kGradAtol);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

void check_check_grad(const std::string& op) {
  std::string cmd =
      tirc_bin() + " check-grad " + shell_quote(op_file(op)) + " --func " + op + zoo_input_flags(op);
  CommandResult r = run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
}

void check_flop_ratio(const std::string& op) {
  ScratchDir dir("flops_" + op);
  std::string log;
  fs::path gfile = run_grad(op, dir.path(), &log);
  ASSERT_FALSE(gfile.empty()) << "tirc grad failed:\n" << log;
  nlohmann::json fwd = run_stats(op_file(op), op, op, &log);
  ASSERT_TRUE(fwd.is_object() && fwd.contains("flops")) << "tirc stats " << op << ":\n" << log;
  nlohmann::json bwd = run_stats(gfile.string(), op + "_grad", op, &log);
  ASSERT_TRUE(bwd.is_object() && bwd.contains("flops")) << "tirc stats " << op << "_grad:\n" << log;
  double f = fwd["flops"].get<double>(), g = bwd["flops"].get<double>();
  if (f > 0) {
    EXPECT_LE(g, kMaxFlopRatio * f) << op << ": forward " << f << " FLOPs, gradient " << g << " FLOPs (ratio "
                                    << g / f << ")";
  } else {
    double stores = fwd.value("stores", 0.0);
    EXPECT_LE(g, kMaxFlopRatio * stores)
        << op << ": forward has no FLOPs and " << stores << " stores, gradient " << g << " FLOPs";
  }
}

class Zoo : public ::testing::TestWithParam<std::string> {};

TEST_P(Zoo, parse) {
  run_check(GetParam(), "parse", [&] { check_parse(GetParam()); });
}
TEST_P(Zoo, forward) {
  run_check(GetParam(), "forward", [&] { check_forward(GetParam()); });
}
TEST_P(Zoo, grad_torch) {
  run_check(GetParam(), "grad_torch", [&] { check_grad_torch(GetParam()); });
}
TEST_P(Zoo, check_grad) {
  run_check(GetParam(), "check_grad", [&] { check_check_grad(GetParam()); });
}
TEST_P(Zoo, flop_ratio) {
  run_check(GetParam(), "flop_ratio", [&] { check_flop_ratio(GetParam()); });
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Ops, Zoo, ::testing::ValuesIn(discover_ops()), param_name);

// The zoo is not empty, and every op has a reference (a missing one would fail `forward`
// too, but this names them all at once).
TEST(ZooMeta, every_op_has_a_reference) {
  std::vector<std::string> ops = discover_ops();
  ASSERT_GE(ops.size(), 60u) << "examples/ops looks incomplete";
  try {
    refs().ensure(ops, make_case);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  std::string missing;
  for (const auto& op : ops)
    if (refs().status(op).find("no reference for operator") != std::string::npos) missing += " " + op;
  EXPECT_TRUE(missing.empty()) << "no PyTorch reference in examples/ops/ref/zoo_ref.py for:" << missing;
}

// The ctest fixture that computes every op's references in one Python process before the
// forward and grad_torch tests run (CMakeLists.txt: FIXTURES_SETUP zoo_torch_refs). Not
// discovered as a test of its own; running it by hand only refreshes the references.
TEST(ZooSetup, torch_refs) {
  try {
    refs().ensure(discover_ops(), make_case);
  } catch (const Error& e) {
    // The dependent tests recompute and report it each for its op.
    std::cout << "no references computed: " << e.what() << "\n";
  }
}

// Every known_failures.txt entry names an existing op and test, so stale entries show up.
TEST(ZooMeta, known_failures_are_well_formed) {
  std::ifstream in(source_dir() / "tests" / "zoo" / "known_failures.txt");
  std::vector<std::string> ops = discover_ops();
  const std::vector<std::string> tests = {"parse", "forward", "grad_torch", "check_grad", "flop_ratio"};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    std::istringstream ss(line);
    std::string o, t, reason;
    ss >> o >> t;
    std::getline(ss, reason);
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), o) != ops.end())
        << "known_failures.txt:" << lineno << ": no op " << o;
    EXPECT_TRUE(std::find(tests.begin(), tests.end(), t) != tests.end())
        << "known_failures.txt:" << lineno << ": no test " << t;
    EXPECT_NE(reason.find_first_not_of(" \t"), std::string::npos)
        << "known_failures.txt:" << lineno << ": a skip needs a reason";
  }
}

}  // namespace

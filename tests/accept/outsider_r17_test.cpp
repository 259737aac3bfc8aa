// Acceptance round 17 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code,
// leaning on every command and option combined (option order, --func on files with several
// functions and intrins, -o to paths that cannot be written, --json read by Python's json,
// exit codes and stdout / stderr), modules mixing functions, schedules and intrins in unusual
// order (a schedule written before its function, an intrin used by two schedules, a schedule of
// F_grad written before `tirc grad` creates it), gradients of functions with scalar and integer
// parameters, outputs that are read again or do not depend on the inputs, zero-size and
// 1-element buffers, tensorize near-misses, and numeric corners (integer floor / trunc division
// of negatives and by zero, f16 / bf16, NaN and inf through select / min / max / reductions /
// intrinsics / casts, float literals of random bit patterns printed and read back).
// Found and fixed: `-o` / `--output` / `--dump` to a path that cannot be written said only
// `cannot write PATH`, now with the system's reason (`No such file or directory`, `Is a
// directory`, ...); a file with several functions and no --func said `choose one with --func`
// without naming them, and `--func NAME` for an intrin (or a typo) said only `no function named
// NAME`: both now list the functions, and an intrin is called one.
// Case files: tests/accept/cases/r17/ (inputs and references by cases/r17/gen_r17.py).
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const std::string kDir = "@/r17/";

std::string case_file(const std::string& name) { return cases() + "r17/" + name; }

// Replaces the first `from` in `text` (which must hold it).
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Python's json module reads `path` (CLI.md: "--json print one JSON object"); empty when it
// parses as one object, else Python's message. Skipped (empty) without /usr/bin/python3.
std::string python_json_error(const std::string& path) {
  if (access("/usr/bin/python3", X_OK) != 0) return "";
  std::string cmd =
      "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "assert isinstance(d, dict)' " +
      path + " 2>/dev/null";
  return std::system(cmd.c_str()) == 0 ? "" : "python's json.load refused " + path;
}

// ---------------------------------------------------------------------------------------------
// Command line

// A file with several functions and an intrin: without --func every subcommand that needs one
// names the functions; --func naming the intrin says it is one; a typo lists the functions.
TEST(AcceptR17, SeveralFunctionsAreNamed) {
  const std::string f = kDir + "module_mix.tir", name = case_file("module_mix.tir");
  for (const char* sub : {"run", "stats", "grad", "check-grad", "bench"}) {
    SCOPED_TRACE(sub);
    if (!has_llvm() && std::string(sub) == "bench") continue;
    CliRun r = run(std::string(sub) + " " + f);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err,
              "tirc: error: " + name + " defines several functions (f, g, scale): choose one with --func\n");
  }
  for (const char* sub : {"run", "stats", "grad", "check-grad", "schedule", "verify", "build", "bench"}) {
    SCOPED_TRACE(sub);
    if (!has_llvm() && (std::string(sub) == "bench" || std::string(sub) == "build")) continue;
    std::string extra = std::string(sub) == "build" ? " --emit llvm" : "";
    CliRun r = run(std::string(sub) + " " + f + " --func add4" + extra);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "tirc: error: no function named add4 in " + name +
                         " (add4 is an intrin, used by tensorize; the functions are f, g, scale)\n");
    r = run(std::string(sub) + " " + f + " -f scael" + extra);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "tirc: error: no function named scael in " + name + " (it defines f, g, scale)\n");
  }
  // Standard input, a module of intrins only.
  CliRun r =
      run("run - --func x", "intrin x { desc(a: f32[1]) { a[0] = 1.0 } impl(a: f32[1]) { a[0] = 1.0 } }\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "tirc: error: no function named x in <stdin> (x is an intrin, used by tensorize; the file defines "
      "no function)\n");
}

// `-o` (parse, grad, schedule, build), `--output` and `--dump` (run) to a path that cannot be
// written: exit 2, nothing on standard output, and the reason. Found: the reason was missing.
TEST(AcceptR17, UnwritableOutputPathsSayWhy) {
  const std::string f = kDir + "module_mix.tir";
  const std::string missing = "/nonexistent_dir_r17/out";
  std::vector<std::string> cmds = {
      "parse " + f + " -o " + missing + ".tir", "grad " + f + " --func scale -o " + missing + ".tir",
      "schedule " + f + " --func f -o " + missing + ".tir",
      "run " + f + " --func scale -i n=2 -i s=1 -i A=1 --output B=" + missing + ".npy"};
  if (has_llvm()) cmds.push_back("build " + f + " --func f -o " + missing + ".o");
  for (const std::string& c : cmds) {
    CliRun r = run(c);
    EXPECT_EQ(r.code, 2) << c;
    EXPECT_EQ(r.out, "") << c;
    std::string ext = c.substr(c.size() - 4);
    if (ext != ".tir") ext = c.substr(c.size() - 2) == ".o" ? ".o" : ".npy";
    EXPECT_EQ(r.err, "tirc: error: cannot write " + missing + ext + " (No such file or directory)\n") << c;
  }
  // A directory, a device that is full, a file used as a directory.
  CliRun r = run("parse " + f + " -o /tmp");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: cannot write /tmp (Is a directory)\n");
  r = run("grad " + f + " --func scale -o /dev/full");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: cannot write /dev/full (No space left on device)\n");
  r = run("run " + f + " --func scale -i n=2 -i s=1 -i A=1 --dump /dev/null/d");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tirc: error: cannot write /dev/null/d/in_A.npy (Not a directory)\n");
  // A read-only file (root may write it anyway: checked only as another user).
  const std::string dir = scratch_dir("r17_ro");
  write_file(dir + "ro.tir", "");
  ASSERT_EQ(std::system(("chmod 444 " + dir + "ro.tir").c_str()), 0);
  if (geteuid() != 0) {
    r = run("parse " + f + " -o " + dir + "ro.tir");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "tirc: error: cannot write " + dir + "ro.tir (Permission denied)\n");
  }
}

// `--json` prints one object that Python's json reads, on standard output only, for stats
// (static and --dynamic, symbolic sizes given with --input), check-grad (also failing: exit 1)
// and bench; the human-readable forms never mix into it.
TEST(AcceptR17, JsonOutputsAreOneObjectOnStdout) {
  const std::string dir = scratch_dir("r17_json");
  const std::string f = kDir + "module_mix.tir";
  std::vector<std::string> cmds = {"stats " + f + " --func g --input n=5 --json",
                                   "stats " + f + " --func scale --input n=7 --json --dynamic",
                                   "check-grad " + f + " --func scale --input n=4 --json",
                                   "check-grad " + f + " --func g --json --input n=3 --seed 5"};
  if (has_llvm()) cmds.push_back("bench " + f + " --func g --input n=100 --repeat 2 --json");
  for (size_t i = 0; i < cmds.size(); ++i) {
    CliRun r = run(cmds[i]);
    EXPECT_EQ(r.code, 0) << cmds[i] << r.err;
    EXPECT_EQ(r.err, "") << cmds[i];
    ASSERT_FALSE(r.out.empty()) << cmds[i];
    EXPECT_EQ(r.out.front(), '{') << cmds[i];
    write_file(dir + std::to_string(i) + ".json", r.out);
    EXPECT_EQ(python_json_error(dir + std::to_string(i) + ".json"), "") << cmds[i] << "\n" << r.out;
  }
  CliRun r = run("stats " + f + " --func g --input n=5 --json");
  for (const char* k : {"\"flops\": 40", "\"loads\": 80", "\"stores\": 40", "\"iterations\": 40"})
    EXPECT_TRUE(has(r.out, k)) << k << r.out;
  // A failing check-grad (an edited gradient) is still one object, and exit 1.
  r = run("grad " + f + " --func scale -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  write_file(dir + "bad.tir",
             replace_once(slurp(dir + "g.tir"), "A_grad[v1] = a0 * s", "A_grad[v1] = a0 * s * 1.01"));
  r = run("check-grad " + dir + "bad.tir --func scale --input n=3 --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(has(r.out, "\"failed\": 1")) << r.out;
  write_file(dir + "bad.json", r.out);
  EXPECT_EQ(python_json_error(dir + "bad.json"), "") << r.out;
}

// Options before or after FILE, `--func=g`, `-f g`, `-i`, `--input=`: the same run. The bug:
// `--input`, `--output` and `--wrt` take several values (`-i n=3 s=2`), and CLI11 gave them FILE
// too when it came after them (`tirc run --input s=2 f.tir ...`, `tirc grad --wrt X f.tir`):
// "file is required", exit 2. A word that cannot be such a value is FILE.
TEST(AcceptR17, OptionOrderDoesNotMatter) {
  const std::string f = kDir + "module_mix.tir";
  for (const std::string& args :
       {"run " + f + " --func scale --input n=3 --input s=2 --input A=1",
        "run --func=scale --input=n=3 --input=s=2 --input=A=1 " + f,
        "run -i A=1 -f scale " + f + " -i s=2 -i n=3",
        "run --input s=2 " + f + " --input A=1 --func scale --input n=3 --engine interp",
        "run -i n=3 s=2 A=1 " + f + " --func scale", "run --input=s=2 n=3 " + f + " -i A=1 --func scale",
        std::string("run --func scale -i n=3 s=2 A=1 -")}) {
    CliRun r = run(args, slurp(case_file("module_mix.tir")));
    EXPECT_EQ(r.code, 0) << args << r.err;
    EXPECT_EQ(r.out, "B: f32[3] sum=6 first=[2, 2, 2]\n") << args;
  }
  const std::string g = kDir + "grad_scalar_int.tir";
  CliRun want = run("grad " + g + " --wrt X,Y");
  ASSERT_EQ(want.code, 0) << want.err;
  for (const std::string& args :
       {"grad --wrt X,Y " + g, "grad --wrt X Y " + g + " --func f", "grad --wrt=X,Y " + g}) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << args << r.err;
    EXPECT_EQ(r.out, want.out) << args;
  }
  CliRun r = run("check-grad --wrt X -i s=0.5 " + g + " --seed 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "1 passed, 0 failed\n")) << r.out;
  r = run("stats -i n=5 " + kDir + "module_mix.tir --func g");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("run --output B=%/b.npy " + f + " --func scale -i n=2 s=1 A=4");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(tmp() + "b.npy").get(1), 4.0);
  // FILE given first: a later stray word is still refused as a value of the option.
  r = run("run " + f + " --func scale -i n=2 s=1 A=4 extra.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --input extra.tir: expected NAME=FILE.npy or NAME=VALUE\n");
}

// `tirc run -o out.npy`, as `-o` is written for parse / grad / schedule / build: the message says
// which NAME goes in front, before FILE too (the .npy is not taken for the script).
TEST(AcceptR17, OutputSpecWithoutNameIsExplained) {
  const std::string g = kDir + "grad_scalar_int.tir";
  for (const std::string& args :
       {"run " + g + " --random 0 -o out.npy", "run -o out.npy " + g + " --random 0"}) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(
        r.err,
        "tirc: error: --output out.npy: expected NAME=FILE.npy (write --output O=out.npy; the outputs of f "
        "are O, K, Z)\n")
        << args;
  }
  CliRun r = run("run " + g + " --random 0 --output K=");
  EXPECT_EQ(r.err, "tirc: error: --output K=: expected NAME=FILE.npy (write --output K=K.npy)\n");
}

// A mistaken option value placed before FILE (review of round 17): FILE stays the script, and the
// option's own message names the mistake (it named the value as the script: "B:1:1: error:
// cannot open file").
TEST(AcceptR17, MistakenValueBeforeFileKeepsTheScript) {
  const std::string g = kDir + "grad_scalar_int.tir";
  for (const std::string& tail : {std::string(""), std::string(" --random 0")}) {
    CliRun r = run("run -o K " + g + tail);
    EXPECT_EQ(r.code, 2) << tail;
    EXPECT_EQ(r.err, "tirc: error: --output K: expected NAME=FILE.npy (write --output K=K.npy)\n") << tail;
    r = run("run -i 16 " + g + tail);
    EXPECT_EQ(r.code, 2) << tail;
    EXPECT_EQ(r.err, "tirc: error: --input 16: expected NAME=FILE.npy or NAME=VALUE\n") << tail;
  }
  // The script named after other options: the mistaken value stays the option's.
  CliRun r0 = run("run -o K --random 0 " + g);
  EXPECT_EQ(r0.code, 2);
  EXPECT_EQ(r0.err, "tirc: error: --output K: expected NAME=FILE.npy (write --output K=K.npy)\n");
  CliRun want = run("grad " + g + " --wrt X");
  ASSERT_EQ(want.code, 0) << want.err;
  // The script under a name without extension, after a --wrt list and before more options.
  const std::string kern = scratch_dir("r17_kern") + "kern";
  std::ofstream(kern) << slurp(case_file("grad_scalar_int.tir"));
  CliRun r = run("grad --wrt X " + kern + " --func f");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want.out);
}

// ---------------------------------------------------------------------------------------------
// Modules mixing items

// Intrin (impl written before desc) first, a schedule of g before f's, both tensorizing with the
// same intrin (g through blockize, with a symbolic row count), then the functions, then a
// function of scalar parameters: parse is a fixpoint, verify passes with n given, both
// scheduled functions hold the impl, and the scalar-parameter function runs at any size.
TEST(AcceptR17, ScheduleBeforeFunctionAndIntrinUsedTwice) {
  const std::string dir = scratch_dir("r17_mix");
  const std::string f = kDir + "module_mix.tir";
  CliRun r = run("parse " + f + " -o " + dir + "p.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("parse " + dir + "p.tir");
  EXPECT_EQ(r.out, slurp(dir + "p.tir"));
  EXPECT_LT(r.out.find("intrin add4"), r.out.find("schedule g")) << "items keep their order";
  EXPECT_LT(r.out.find("schedule f"), r.out.find("func f(")) << "items keep their order";
  r = run("verify " + f + " --input n=3");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, std::to_string(2 * engines().size()) + " passed, 0 failed\n")) << r.out;
  r = run("schedule " + f);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string s = r.out;
  size_t gpos = s.find("func g("), fpos = s.find("func f(");
  ASSERT_NE(gpos, std::string::npos);
  ASSERT_NE(fpos, std::string::npos);
  EXPECT_TRUE(has(s.substr(fpos, gpos > fpos ? gpos - fpos : std::string::npos), "in vectorized(4)")) << s;
  EXPECT_TRUE(has(s.substr(gpos), "in vectorized(4)")) << s;
  EXPECT_TRUE(has(s, "block g_o(")) << s;
  for (const std::string& e : engines()) {
    r = run("run " + f + " --func scale --input n=0 --input s=2 --input A=1 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[0] sum=0 first=[]\n") << e << r.err;
    r = run("run " + f + " --func scale --input n=1 --input s=-0.5 --input A=3 --engine " + e);
    EXPECT_EQ(r.out, "B: f32[1] sum=-1.5 first=[-1.5]\n") << e << r.err;
    r = run("run " + f + " --func g --input n=2 --input A=1.25 --input B=0.5 --engine " + e);
    EXPECT_EQ(r.out, "C: f32[2, 8] sum=28 first=[1.75, 1.75, 1.75, 1.75, 1.75, 1.75, 1.75, 1.75, ...]\n")
        << e << r.err;
  }
  if (!has_llvm()) return;
  for (const char* n : {"0", "1", "1000"}) {
    r = run("bench " + f + " --func g --input n=" + n + " --repeat 2");
    EXPECT_EQ(r.code, 0) << n << r.err;
    EXPECT_TRUE(has(r.out, ", " + std::to_string(std::atoi(n) * 8) + " FLOPs, ")) << r.out;
  }
}

// A schedule of f_grad written before `tirc grad` creates f_grad: `schedule` / `verify` of the
// file refuse the unknown function at the item, `--func f` ignores it, and after `grad -o` the
// same item tensorizes the gradient, which verifies, benches and passes check-grad.
TEST(AcceptR17, ScheduleOfTheGradientWrittenFirst) {
  const std::string dir = scratch_dir("r17_gfirst");
  const std::string f = kDir + "grad_sched_first.tir";
  for (const char* sub : {"schedule", "verify"}) {
    CliRun r = run(std::string(sub) + " " + f);
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_EQ(r.err,
              case_file("grad_sched_first.tir") + ":1:10: error: schedule for unknown function 'f_grad'\n");
  }
  CliRun r = run("verify " + f + " --func f");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("grad " + f + " --wrt X -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("schedule " + dir + "g.tir --func f_grad");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "block y_dX_o(vi0_o: spatial(4) = i0) {")) << r.out;
  EXPECT_TRUE(has(r.out, "in vectorized(4)")) << r.out;
  r = run("verify " + dir + "g.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "f_grad [interp]: ok")) << r.out;
  r = run("check-grad " + dir + "g.tir --func f");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "1 passed, 0 failed\n")) << r.out;
  EXPECT_EQ(r.err, "note: checking f_grad as defined in " + dir + "g.tir\n");
  // The gradient of both inputs has one block storing X_grad and W_grad: tensorize refuses it
  // (the intrin stores one buffer) at the instruction, and the item is not applied.
  r = run("grad " + f + " -o " + dir + "g2.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  write_file(dir + "g3.tir",
             replace_once(slurp(dir + "g2.tir"), "get_block(\"y_dX\")", "get_block(\"y_dX_dW\")"));
  r = run("schedule " + dir + "g3.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(
      r.err, ": error: tensorize: 2 statements in sequence is where the desc of vmul4 has a store to c\n"))
      << r.err;
  if (!has_llvm()) return;
  r = run("bench " + dir + "g.tir --func f_grad --repeat 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "16 FLOPs")) << r.out;
}

// tensorize with a user intrin (c = a * b on 4 elements): matches up to renaming (operands
// swapped, one buffer bound to both a and b) and is refused, with the reason, for a different
// operator, another tile size, a reversed index, or an extra factor.
TEST(AcceptR17, TensorizeMatchesAndNearMisses) {
  const std::string dir = scratch_dir("r17_tens");
  const std::string base = slurp(case_file("tensorize_near.tir"));
  const std::string body = "Y[vi] = X[vi] * W[vi]\n";
  for (const char* ok : {"Y[vi] = W[vi] * X[vi]\n", "Y[vi] = X[vi] * X[vi]\n", "Y[vi] = X[vi] * W[vi]\n"}) {
    write_file(dir + "ok.tir", replace_once(base, body, ok));
    CliRun r = run("verify " + dir + "ok.tir");
    EXPECT_EQ(r.code, 0) << ok << r.out << r.err;
    r = run("schedule " + dir + "ok.tir");
    EXPECT_TRUE(has(r.out, "block y_o(")) << ok << r.out;
  }
  struct Miss {
    std::string body, factor, msg;
  };
  const std::vector<Miss> misses = {
      {"Y[vi] = X[vi] + W[vi]\n", "4",
       "tensorize: the value stored to Y, X[vi] + W[vi], differs from the desc's a[vi] * b[vi] (intrinsic "
       "vmul4)"},
      {body, "8",
       "tensorize: loop i1 has extent 8, but the matching loop i of the desc of vmul4 has extent 4"},
      {body, "2",
       "tensorize: loop i1 has extent 2, but the matching loop i of the desc of vmul4 has extent 4"},
      {"Y[vi] = X[15 - vi] * W[vi]\n", "4",
       "tensorize: the value stored to Y, X[15 - vi] * W[vi], differs from the desc's a[vi] * b[vi] "
       "(intrinsic "
       "vmul4): index 15 - (vi + i0 * 4) of buffer X is not an offset plus the desc's index vi of a (the "
       "offset "
       "must not depend on the loops of the tile)"},
      {"Y[vi] = X[vi] * W[vi] * 1.0\n", "4",
       "tensorize: the value stored to Y, X[vi] * W[vi] * 1.0, differs from the desc's a[vi] * b[vi] "
       "(intrinsic "
       "vmul4)"},
  };
  for (const Miss& m : misses) {
    std::string text = replace_once(replace_once(base, body, m.body), "[_, 4]", "[_, " + m.factor + "]");
    write_file(dir + "miss.tir", text);
    CliRun r = run("schedule " + dir + "miss.tir");
    EXPECT_EQ(r.code, 2) << m.body;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, dir + "miss.tir:28:3: error: " + m.msg + "\n") << m.body;
    r = run("verify " + dir + "miss.tir");
    EXPECT_EQ(r.code, 2) << m.body;
  }
}

// ---------------------------------------------------------------------------------------------
// Gradients

// A scalar f32 parameter, an integer input and an integer output: F_grad keeps the parameters,
// takes an i32 cotangent for the i32 output, and returns the float inputs' gradients only;
// --wrt of the scalar or the integer buffer is refused.
TEST(AcceptR17, GradientWithScalarAndIntegerParameters) {
  const std::string f = kDir + "grad_scalar_int.tir";
  CliRun r = run("grad " + f);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(
      has(r.out,
          "func f_grad(s: f32, I: i32[4], X: f32[4], Y: f32[4], O_grad: f32[4], K_grad: i32[4], Z_grad: "
          "f32[4]) -> (X_grad: f32[4], Y_grad: f32[4]) {\n"))
      << r.out;
  r = run("check-grad " + f + " --full");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "over 4 elements: passed\n2 passed, 0 failed\n")) << r.out;
  r = run("check-grad " + f + " --wrt Y --input s=0.5");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.substr(0, 3), "Y: ");
  EXPECT_TRUE(has(r.out, "1 passed, 0 failed\n")) << r.out;
  for (const char* w : {"I", "s", "K"}) {
    r = run("grad " + f + " --wrt " + w);
    EXPECT_EQ(r.code, 2) << w;
    EXPECT_TRUE(r.err.rfind("tirc: error: gradient of f: --wrt " + std::string(w) +
                                " is not a float input buffer of f",
                            0) == 0)
        << r.err;
  }
}

// Outputs read again by later blocks (H feeds Y, Y is normalised in place by N), an output that
// depends on no input (C = 2), and --wrt subsets; second order on the written gradient.
TEST(AcceptR17, GradientOfOutputsReadAgainAndConstant) {
  const std::string dir = scratch_dir("r17_gout");
  const std::string f = kDir + "grad_outputs.tir";
  CliRun r = run("check-grad " + f);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "2 passed, 0 failed\n")) << r.out;
  r = run("check-grad " + f + " --wrt W --full --seed 4");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "W: ") && has(r.out, "over 16 elements: passed\n1 passed, 0 failed\n")) << r.out;
  r = run("grad " + f + " --wrt X -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(
      has(slurp(dir + "g.tir"),
          "func f_grad(X: f32[4], W: f32[4, 4], H_grad: f32[4], Y_grad: f32[4], C_grad: f32[4], N_grad: "
          "f32[1]) -> (X_grad: f32[4]) {\n"))
      << slurp(dir + "g.tir");
  r = run("check-grad " + dir + "g.tir --func f_grad --seed 3");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "6 passed, 0 failed\n")) << r.out;
}

// Zero-size and one-element buffers, by a size given on the command line: check-grad passes in
// both modes, and `run` at n = 0 prints empty outputs.
TEST(AcceptR17, GradientOfZeroSizeAndOneElementBuffers) {
  const std::string f = kDir + "grad_sizes.tir";
  for (const char* n : {"0", "1", "3"})
    for (const char* mode : {"", " --full"}) {
      CliRun r = run("check-grad " + f + " --input n=" + n + mode);
      EXPECT_EQ(r.code, 0) << n << mode << r.out << r.err;
      EXPECT_TRUE(has(r.out, "2 passed, 0 failed\n")) << n << mode << r.out;
    }
  CliRun r = run("check-grad " + f + " --input n=0 --full");
  EXPECT_TRUE(has(r.out, "over 0 elements: passed\n")) << r.out;
  r = run("run " + f + " --input n=0 --random 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "Y: f32[0] sum=0 first=[]\n")) << r.out;
  r = run("run " + f + " --input n=1 --input X=2 --input W=3");
  EXPECT_EQ(r.out, "S: f32[1] sum=6 first=[6]\nY: f32[1] sum=6 first=[6]\n") << r.err;
}

// ---------------------------------------------------------------------------------------------
// Numeric semantics

// Floor division / modulo and truncdiv / truncmod of negatives, INT_MIN // -1 (wraps), and a
// division by zero at run time (exit 2, positioned, both engines); constant folding agrees.
TEST(AcceptR17, IntegerDivisionOfNegatives) {
  const std::string in = " --input A=" + kDir + "div_A.npy --input B=" + kDir;
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "int_div.tir" + in + "div_B.npy --engine " + e);
    EXPECT_EQ(r.code, 0) << e << r.err;
    EXPECT_EQ(r.out,
              "Q: i32[6] sum=-2147483650 first=[3, -4, -4, 3, -2147483648, 0]\n"
              "R: i32[6] sum=0 first=[1, 1, -1, -1, 0, 0]\n"
              "TQ: i32[6] sum=-2147483648 first=[3, -3, -3, 3, -2147483648, 0]\n"
              "TR: i32[6] sum=0 first=[1, -1, 1, -1, 0, 0]\n")
        << e;
    r = run("run " + kDir + "int_div.tir" + in + "div_B0.npy --engine " + e);
    EXPECT_EQ(r.code, 2) << e;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, case_file("int_div.tir") +
                         ":4:7: error: block \"q\": integer division by zero: floordiv(-2147483648, 0)\n")
        << e;
    r = run("run " + kDir + "int_fold.tir --input a=-7 --input b=2 --show 12 --engine " + e);
    EXPECT_EQ(r.code, 0) << e << r.err;
    EXPECT_EQ(r.out,
              "R: i32[12] sum=-6442450948 first=[-4, 2, -2, -4, 1, 3, 4, -3, -1, -2147483648, -2147483648, "
              "-2147483648]\n"
              "L: i64[4] sum=9223372015854775807 first=[-21000000000, -9223372036854775808, -1, 0]\n"
              "F: f32[3] sum=5.5 first=[4.5, 1, -0]\n")
        << e;
  }
}

// f16 / bf16 arithmetic rounds at every step (NumPy's / PyTorch's half), overflow gives inf,
// casts between the half types and f32 are exact or round to nearest even.
TEST(AcceptR17, HalfPrecisionArithmeticAndCasts) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "half.tir --input A=" + kDir +
                   "h_A.npy --input B=1.5 --output C=%/C.npy "
                   "--output E=%/E.npy --output G=%/G.npy --engine " +
                   e);
    ASSERT_EQ(r.code, 0) << e << r.err;
    for (const char* x : {"C", "E", "G"}) {
      // Byte-exact: the same rounding as NumPy / PyTorch at every step.
      EXPECT_EQ(slurp(tmp() + x + ".npy").substr(128),
                slurp(case_file(std::string("ref_h_") + x + ".npy")).substr(128))
          << x << " " << e;
    }
    r = run("run " + kDir + "half.tir --input A=" + kDir + "h_A.npy --input B=1.5 --engine " + e);
    EXPECT_TRUE(has(r.out, "D: bf16[4] sum=6016 first=[1504, 1504, 1504, 1504]\n")) << r.out;
    EXPECT_TRUE(has(r.out, "F: f16[4] sum=6 first=[1.5, 1.5, 1.5, 1.5]\n")) << r.out;
  }
}

// NaN and infinities through select, min / max (NaN wins, as torch), max / min reductions,
// exp overflow, log of 0 and negatives; float -> int casts saturate, NaN -> 0, bool(NaN) true.
TEST(AcceptR17, NanAndInfinities) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "nan_inf.tir --input A=" + kDir + "nan_A1.npy --engine " + e);
    EXPECT_EQ(r.out,
              "S: f32[4] sum=-1 first=[-1, -1, 2, -1]\nM: f32[1] sum=nan first=[nan]\nN: f32[1] sum=nan "
              "first=[nan]\n"
              "E: f32[4] sum=nan first=[nan, 0, inf, 1]\nL: f32[4] sum=nan first=[nan, nan, 0.693147, -inf]\n"
              "P: f32[4] sum=nan first=[nan, -inf, 0, 0]\nQ: f32[4] sum=nan first=[nan, 0, 2, 0]\n")
        << e << r.err;
    r = run("run " + kDir + "nan_inf.tir --input A=" + kDir + "nan_A2.npy --engine " + e);
    EXPECT_EQ(r.out,
              "S: f32[4] sum=-2 first=[1, -1, -1, -1]\nM: f32[1] sum=nan first=[nan]\nN: f32[1] sum=nan "
              "first=[nan]\n"
              "E: f32[4] sum=nan first=[inf, 0, nan, 1]\nL: f32[4] sum=nan first=[0, nan, nan, -inf]\n"
              "P: f32[4] sum=nan first=[0, -inf, nan, 0]\nQ: f32[4] sum=nan first=[1, 0, nan, 0]\n")
        << e << r.err;
    r = run("run " + kDir + "nan_inf.tir --input A=-inf --engine " + e);
    EXPECT_TRUE(has(r.out, "M: f32[1] sum=-inf first=[-inf]\nN: f32[1] sum=-inf first=[-inf]\n")) << r.out;
    r = run("run " + kDir + "casts.tir --input A=" + kDir + "cast_A.npy --engine " + e);
    EXPECT_EQ(r.out,
              "I: i32[6] sum=298 first=[0, -2147483648, 2147483647, -1, 300, 0]\n"
              "U: u8[6] sum=510 first=[0, 0, 255, 0, 255, 0]\n"
              "B: bool[6] sum=5 first=[1, 1, 1, 1, 1, 0]\n"
              "H: f16[6] sum=nan first=[nan, -inf, inf, -1.5, 300.75, -0]\n"
              "L: i64[6] sum=298 first=[0, -9223372036854775808, 9223372036854775807, -1, 300, 0]\n"
              "W: u32[6] sum=4294967595 first=[0, 0, 4294967295, 0, 300, 0]\n")
        << e << r.err;
  }
}

// Intrinsics at ±0, ±inf, halves and negatives match NumPy / PyTorch (round half to even,
// sigmoid / expm1 saturating, log1p(-1) = -inf, rsqrt(-0) = -inf, pow(x, 0) = 1, sign(±0) = 0).
TEST(AcceptR17, IntrinsicsAtSpecialValues) {
  const char* outs[] = {"R", "S", "E", "L", "Q", "H", "G", "P"};
  std::string o;
  for (const char* x : outs) o += std::string(" --output ") + x + "=%/" + x + ".npy";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "unary.tir --input X=" + kDir + "un_X.npy" + o + " --engine " + e);
    ASSERT_EQ(r.code, 0) << e << r.err;
    for (const char* x : outs)
      EXPECT_EQ(compare(read_npy(tmp() + x + ".npy"),
                        read_npy(case_file(std::string("ref_un_") + x + ".npy")), 1e-6, 0),
                "")
          << x << " " << e;
  }
}

// Float literals of random bit patterns of f16, f32, f64 and bf16 (gen_r17.py) are stored
// exactly, and `tirc parse` prints text that reads back to the same bits (and is a fixpoint).
TEST(AcceptR17, FloatLiteralsPrintAndReadBackBitExact) {
  const std::string dir = scratch_dir("r17_floats");
  CliRun r = run("parse " + kDir + "floats.tir -o " + dir + "p.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("parse " + dir + "p.tir");
  EXPECT_EQ(r.out, slurp(dir + "p.tir"));
  for (const std::string& file : {kDir + "floats.tir", dir + "p.tir"})
    for (const std::string& e : engines()) {
      r = run("run " + file +
              " --output H=%/H.npy --output F=%/F.npy --output D=%/D.npy --output G=%/G.npy --engine " + e);
      ASSERT_EQ(r.code, 0) << file << e << r.err;
      for (const char* x : {"H", "F", "D", "G"})
        EXPECT_EQ(slurp(tmp() + x + ".npy"), slurp(case_file(std::string("ref_fl_") + x + ".npy")))
            << x << file << e;
    }
}

// ---------------------------------------------------------------------------------------------
// Language

// Intrinsic, loop-kind and iter-var-kind names used as a function, parameters, buffers, a loop
// variable, a block, an iter var and a let (LANGUAGE.md: they are not reserved), next to calls of
// the same names; printing keeps them and reads back.
TEST(AcceptR17, IntrinsicNamesAsOrdinaryNames) {
  const std::string dir = scratch_dir("r17_names");
  CliRun r = run("parse " + kDir + "names.tir -o " + dir + "p.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(slurp(dir + "p.tir"), "min[reduce] = max(max[reduce], pow) + exp(exp) + f32(spatial)\n"));
  const std::string want =
      "min: f32[4] sum=26.8731 first=[6.71828, 6.71828, 6.71828, 6.71828]\n"
      "grid: f32[4] sum=6 first=[0, 0, 3, 3]\n";
  for (const std::string& file : {kDir + "names.tir", dir + "p.tir"})
    for (const std::string& e : engines()) {
      r = run("run " + file + " --func select --input exp=1 --input max=-3 --input spatial=2 --engine " + e);
      EXPECT_EQ(r.out, want) << file << e << r.err;
    }
}

// Precedence (unary minus and ! bind tighter than * and comparisons), left associativity,
// comparisons of comparisons: values as Python computes them, kept by the printer.
TEST(AcceptR17, PrecedenceAndPrinting) {
  const std::string dir = scratch_dir("r17_prec");
  CliRun r = run("parse " + kDir + "precedence.tir -o " + dir + "p.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string p = slurp(dir + "p.tir");
  for (const char* line : {"R[4] = -(-a) + -(-b)\n", "R[5] = -a // b\n", "B[1] = ((a < b) == (b < c)) != p\n",
                           "B[3] = (a < b) == p\n", "F[5] = select(!p || x < y && !(y < x), -x, -(-y))\n"})
    EXPECT_TRUE(has(p, line)) << line << p;
  const std::string want =
      "R: i32[10] sum=29 first=[12, -8, -8, 0, -4, 2, 3, 30, 2, 0]\n"
      "F: f32[6] sum=9.5625 first=[0, 3.5, 1, 5.625, -0.3125, -0.25]\n"
      "B: bool[6] sum=5 first=[1, 1, 1, 1, 1, 0]\n";
  for (const std::string& file : {kDir + "precedence.tir", dir + "p.tir"})
    for (const std::string& e : engines()) {
      r = run("run " + file +
              " --input a=-7 --input b=3 --input c=2 --input x=1.5 --input y=-0.25 --input p=true "
              "--show 10 --engine " +
              e);
      EXPECT_EQ(r.out, want) << file << e << r.err;
    }
}

// C's shift operators and `<>` are not in the language (LANGUAGE.md lists the operators): the
// error names what to write instead (it was a bare "unexpected '<'").
TEST(AcceptR17, ShiftOperatorsAreNamed) {
  struct Case {
    std::string expr, msg;
  };
  const std::vector<Case> cases_ = {
      {"I[0] << 2",
       "<stdin>:2:16: error: unexpected '<' (there are no shift operators: multiply or floor-divide by a "
       "power "
       "of 2, x * 4 or x // 4)\n"},
      {"I[0] >> 1",
       "<stdin>:2:16: error: unexpected '>' (there are no shift operators: multiply or floor-divide by a "
       "power "
       "of 2, x * 4 or x // 4)\n"},
      {"I[0] <> 1", "<stdin>:2:16: error: unexpected '>' (not equal is written !=)\n"},
      {"I[0] < < 1", "<stdin>:2:17: error: unexpected '<'\n"},
  };
  for (const Case& c : cases_) {
    CliRun r = run("parse -", "func f(I: i32[2]) -> (O: i32[1]) {\n  O[0] = " + c.expr + "\n}\n");
    EXPECT_EQ(r.code, 2) << c.expr;
    EXPECT_EQ(r.err, c.msg) << c.expr;
  }
}

// `init` runs where every reduce var is 0: under a `where` that excludes that point, or with a
// binding that never reaches 0, it never runs and the interpreter reports the read of the
// uninitialised output; spatial iterations writing one element are a conflict.
TEST(AcceptR17, InitPointAndSpatialConflicts) {
  CliRun r = run("run " + kDir + "where_init.tir --input A=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, case_file("where_init.tir") +
                       ":6:7: error: block \"c\": read of uninitialised element C[0] of output buffer C\n");
  std::string text = slurp(case_file("where_init.tir"));
  r = run("run - --input A=1", replace_once(text, "where k >= 2", "where k < 8"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:12:7: error: block \"d\": read of uninitialised element D[0] of output buffer D\n");
  r = run("run " + kDir + "conflict.tir --random 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      case_file("conflict.tir") +
          ":4:7: error: block \"b\": spatial iterations conflict: (vi = 0) and (vi = 1) both write B[0] "
          "(use a reduce iter var for a reduction)\n");
}

// Scalar parameters of every kind on the command line: bool as true/True/1/false/False/0 (other
// spellings refused), an f16 value beyond its range is inf, a u8 value beyond it is refused.
TEST(AcceptR17, ScalarParametersOfEveryDtype) {
  const std::string rest =
      " --input h=70000 --input q=0.1 --input u=255 --input l=9007199254740993 --input d=1e-300 "
      "--input A=-2";
  for (const std::string& e : engines()) {
    for (const char* t : {"true", "True", "1"}) {
      CliRun r = run("run " + kDir + "scalars.tir --input flag=" + t + rest + " --engine " + e);
      EXPECT_EQ(r.out, "B: f32[6] sum=inf first=[-2, inf, 0.100098, 255, 9.0072e+15, 0]\n")
          << t << e << r.err;
    }
    for (const char* t : {"false", "False", "0"}) {
      CliRun r = run("run " + kDir + "scalars.tir --input flag=" + t + rest + " --engine " + e);
      EXPECT_EQ(r.code, 0) << t << e << r.err;
    }
  }
  CliRun r = run("run " + kDir + "scalars.tir --input flag=yes" + rest);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter flag: 'yes' is not a bool (true/false)\n");
  r = run("run " + kDir +
          "scalars.tir --input flag=1 --input h=1 --input q=1 --input u=256 --input l=1 --input d=1 "
          "--input A=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter u: 256 is out of range for u8\n");
}

// 0-d buffers, an i64 scalar through a function-level let, an `else if` chain on a bool
// parameter, unsigned wrap-around and an f16 max-reduction from min_value(f16).
TEST(AcceptR17, ZeroDimBuffersAndUnsignedWrap) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "zero_d.tir --input X=-1.5 --input n=5 --input flag=false --engine " + e);
    EXPECT_EQ(r.out,
              "Y: f32[] sum=1.5 first=[1.5]\nM: f16[1] sum=0 first=[-0]\n"
              "U: u32[2] sum=4499999999 first=[4294967295, 205032704]\nV: u8[2] sum=398 first=[254, 144]\n"
              "L: i64[2] sum=4999999999 first=[5000000001, -2]\n")
        << e << r.err;
    r = run("run " + kDir + "zero_d.tir --input X=-1.5 --input n=5 --input flag=true --engine " + e);
    EXPECT_TRUE(has(r.out, "Y: f32[] sum=-3 first=[-3]\n")) << r.out;
  }
  CliRun r = run("check-grad " + kDir + "zero_d.tir --input n=5 --input flag=true");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "1 passed, 0 failed\n")) << r.out;
}

// A scan with if / else, a max-reduction from min_value(f32), padding by if_then_else with a
// function-level let, select of literals, bool and u8 outputs, under thread_binding: compared
// element by element with what the inputs (written by --dump) give.
TEST(AcceptR17, KitchenScanPaddingSelect) {
  const std::string dir = scratch_dir("r17_kitchen");
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "kitchen.tir --input n=6 --random 3 --dump " + dir + e + " --engine " + e);
    ASSERT_EQ(r.code, 0) << e << r.err;
    NDArray A = read_npy(dir + e + "/in_A.npy"), I = read_npy(dir + e + "/in_I.npy");
    NDArray S = read_npy(dir + e + "/out_S.npy"), M = read_npy(dir + e + "/out_M.npy"),
            P = read_npy(dir + e + "/out_P.npy"), B = read_npy(dir + e + "/out_B.npy"),
            U = read_npy(dir + e + "/out_U.npy");
    float acc = 0, mx = -3.4028234663852886e38f;
    for (int64_t i = 0; i < 6; ++i) {
      float a = static_cast<float>(A.get(i));
      acc += a;
      mx = std::max(mx, a);
      EXPECT_EQ(S.get(i), acc) << i << e;
      float pad = i >= 3 ? static_cast<float>(A.get(i - 3)) : 0.0f;
      EXPECT_EQ(P.get(i), pad + (static_cast<int64_t>(I.get(i)) % 2 == 1 ? 1.0f : 0.0f)) << i << e;
      EXPECT_EQ(B.get(i), ((I.get(i) > 4) == (a > 0)) ? 1 : 0) << i << e;
      EXPECT_EQ(U.get(i), static_cast<double>(static_cast<uint8_t>(static_cast<int>(I.get(i)) - 5)))
          << i << e;
    }
    EXPECT_EQ(M.get(0), mx) << e;
  }
}

// `tirc stats` of nested blocks (a block-local buffer filled by an inner block and reduced by
// another) and of a store outside every block (the root): per-block numbers, totals that are
// the sums, and the same object in --json.
TEST(AcceptR17, StatsOfNestedBlocks) {
  CliRun r = run("stats " + kDir + "stats_nested.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "root                              1              1              1              1              8\n"
      "outer                             4              0              0              0              0\n"
      "inner                            16             16             16             16            128\n"
      "red                              16             32             48             20            272\n"
      "total                            37             49             65             37            408\n");
  r = run("stats " + kDir + "stats_nested.tir --json");
  for (const char* k :
       {"\"flops\": 49", "\"loads\": 65", "\"stores\": 37", "\"iterations\": 37", "\"root\": {"})
    EXPECT_TRUE(has(r.out, k)) << k << r.out;
}

}  // namespace
}  // namespace tirc::accept

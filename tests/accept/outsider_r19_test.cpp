// Acceptance round 19 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code,
// leaning on whole programs for a small model (a dense layer with a scalar slope and a loss in one
// file, `grad --wrt` subsets then `check-grad` of the written file, the gradient run against
// NumPy), `.npy` inputs and outputs of every dtype read back by NumPy (both engines), the rules
// of LANGUAGE.md run in both engines (floor / trunc division, padding with `if_then_else`, scan
// order, casts, literal typing, function-level `let` / `if` / `alloc`, `where`, `max=` sugar,
// `else if`, rounding), the mistakes of a learner (each a positioned error, exit 2), `.npy`
// mistakes, and `tirc stats --dynamic` against hand counts.
// Found and fixed: `tirc stats --dynamic` claimed exactness under data-dependent control flow
// but counted the larger branch of every `if` (32 FLOPs for 17) and refused loops whose extent
// depends on data or iter vars; it now counts branch, arm and loop-iteration executions.
// `cat f.tir | tirc run - --input A=-` and two `--input X=-` said "not a .npy file (bad magic)";
// `tirc bench` of a symbolic function timed random sizes without saying which; an unknown
// thread tag did not list the tags; `relu(x)` / `clip` / `square` did not name the spelling.
// Case files: tests/accept/cases/r19/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const std::string kDir = "@/r19/";

std::string case_file(const std::string& name) { return cases() + "r19/" + name; }

bool has_numpy() { return access("/usr/bin/python3", X_OK) == 0; }

// Runs `script` with /usr/bin/python3 in directory `dir`; the exit code (0: every assert held)
// and its output (the failing assert's message) in `out`.
int python(const std::string& dir, const std::string& script, std::string* out) {
  write_file(dir + "check.py", script);
  std::string cmd = "cd " + dir + " && /usr/bin/python3 check.py > py.log 2>&1";
  int rc = std::system(cmd.c_str());
  *out = slurp(dir + "py.log");
  return rc;
}

// ---------------------------------------------------------------------------------------------
// A small model: dense layer (matmul + bias in init + leaky ReLU with a scalar slope) and a loss

TEST(AcceptR19, DenseLayerAgainstNumpyBothEngines) {
  if (!has_numpy()) GTEST_SKIP() << "needs /usr/bin/python3 with numpy";
  const std::string d = scratch_dir("r19_dense");
  std::string log;
  ASSERT_EQ(python(d,
                   "import numpy as np\nr = np.random.default_rng(3)\n"
                   "np.save('X.npy', r.uniform(-1, 1, (3, 8)).astype(np.float32))\n"
                   "np.save('W.npy', r.uniform(-1, 1, (8, 4)).astype(np.float32))\n"
                   "np.save('b.npy', r.uniform(-1, 1, 4).astype(np.float32))\n"
                   "np.save('Yg.npy', r.uniform(-1, 1, (3, 4)).astype(np.float32))\n",
                   &log),
            0)
      << log;
  const std::string in = " --input n=3 --input alpha=0.1 --input X=" + d + "X.npy --input W=" + d +
                         "W.npy --input b=" + d + "b.npy";
  for (const std::string& e : engines()) {
    SCOPED_TRACE(e);
    CliRun r = run("run " + kDir + "mlp.tir --func dense --engine " + e + in + " --output Y=" + d + "Y_" + e +
                   ".npy");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(python(d,
                     "import numpy as np\nX, W, b = (np.load(n + '.npy') for n in 'XWb')\n"
                     "y = X.astype(np.float64) @ W + b\ny = np.where(y > 0, y, 0.1 * y)\n"
                     "Y = np.load('Y_" +
                         e +
                         ".npy')\nassert Y.dtype == np.float32 and Y.shape == (3, 4), Y\n"
                         "assert np.allclose(Y, y, rtol=1e-5, atol=1e-6), (Y, y)\n",
                     &log),
              0)
        << log;
  }
  // The gradient with respect to W and b only, written to a file and run: X_grad is not made,
  // W_grad = X^T (Y_grad * slope), b_grad = column sums of Y_grad * slope.
  CliRun g = run("grad " + kDir + "mlp.tir --func dense --wrt W,b -o " + d + "g.tir");
  ASSERT_EQ(g.code, 0) << g.err;
  std::string gt = slurp(d + "g.tir");
  EXPECT_TRUE(has(gt,
                  "func dense_grad(n: i32, alpha: f32, X: f32[n, 8], W: f32[8, 4], b: f32[4], Y_grad: f32[n, "
                  "4]) -> (W_grad: f32[8, 4], b_grad: f32[4]) {"))
      << gt;
  EXPECT_FALSE(has(gt, "X_grad"));
  for (const std::string& e : engines()) {
    SCOPED_TRACE(e);
    CliRun r = run("run " + d + "g.tir --func dense_grad --engine " + e + in + " --input Y_grad=" + d +
                   "Yg.npy --output W_grad=" + d + "Wg.npy --output b_grad=" + d + "bg.npy");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(python(d,
                     "import numpy as np\nX, W, b, G = (np.load(n + '.npy') for n in ['X', 'W', 'b', 'Yg'])\n"
                     "y = X.astype(np.float64) @ W + b\nt = G * np.where(y > 0, 1.0, 0.1)\n"
                     "assert np.allclose(np.load('Wg.npy'), X.T @ t, rtol=1e-5, atol=1e-6)\n"
                     "assert np.allclose(np.load('bg.npy'), t.sum(0), rtol=1e-5, atol=1e-6)\n",
                     &log),
              0)
        << log;
  }
}

TEST(AcceptR19, GradSubsetsThenCheckGradOfTheFile) {
  const std::string d = scratch_dir("r19_grad");
  CliRun g = run("grad " + kDir + "mlp.tir --func dense --wrt W,b -o " + d + "g.tir");
  ASSERT_EQ(g.code, 0) << g.err;
  CliRun c = run("check-grad " + d + "g.tir --func dense --wrt W,b --input n=3 --input alpha=0.1");
  expect_passed(c, 2);
  EXPECT_EQ(c.err, "note: checking dense_grad as defined in " + d + "g.tir\n");
  // The file's gradient has W only: asking for b names what it has.
  g = run("grad " + kDir + "mlp.tir --func dense --wrt W -o " + d + "gw.tir");
  ASSERT_EQ(g.code, 0) << g.err;
  c = run("check-grad " + d + "gw.tir --func dense --wrt b --input n=2");
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err,
            "tirc: error: --wrt b: dense_grad in " + d +
                "gw.tir has no result b_grad (it computes the gradients of W; remove dense_grad from the "
                "file to check a generated gradient)\n");
  c = run("check-grad " + d + "gw.tir --func dense --input n=2");
  expect_passed(c, 1);
  // The loss: both inputs, a symbolic size and a division by the (cast) element count.
  c = run("check-grad " + kDir + "mlp.tir --func mse --input n=5");
  expect_passed(c, 2);
  // --wrt of a scalar, an output, twice.
  struct Bad {
    std::string wrt, err;
  } bad[] = {
      {"n,W", "tirc: error: gradient of dense: --wrt n is not a float input buffer of dense\n"},
      {"W,W", "tirc: error: gradient of dense: --wrt W is listed twice\n"},
      {"Y",
       "tirc: error: gradient of dense: --wrt Y is not a float input buffer of dense (it is an output)\n"}};
  for (auto& b : bad) {
    CliRun r = run("grad " + kDir + "mlp.tir --func dense --wrt " + b.wrt);
    EXPECT_EQ(r.code, 2) << b.wrt;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, b.err);
  }
}

// Hand count of the dense layer at n = 10: mm runs 10*4*8 = 320 times (2 FLOPs, 3 loads, 1
// store) and its init 40 times (1 load of b, 1 store); act 40 times (a float comparison and a
// product; 1 load, 1 store).
TEST(AcceptR19, StatsOfTheDenseLayerByHand) {
  CliRun r = run("stats " + kDir + "mlp.tir --func dense --input n=10");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "mm                              320            640           1000            360           5440\n"
      "act                              40             80             40             40            320\n"
      "total                           360            720           1040            400           5760\n");
  r = run("stats " + kDir + "mlp.tir --func dense");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: scalar parameter n must be given (--input n=VALUE)\n");
}

// bench of a symbolic function: the sizes it drew at random are named (it timed n = 9 without
// saying so: 648 FLOPs for a size the user never saw).
TEST(AcceptR19, BenchNamesTheScalarsItDrew) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("bench " + kDir + "mlp.tir --func dense -n 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "dense: median ")) << r.out;
  EXPECT_TRUE(has(r.out, ", 648 FLOPs, ")) << r.out;  // n = 9: 9*4*8*2 + 9*4*2
  EXPECT_EQ(r.err,
            "note: scalar parameter n was not given; timed with n=9 (random; give --input n=VALUE)\n"
            "note: scalar parameter alpha was not given; timed with alpha=-0.189320475 (random; give --input "
            "alpha=VALUE)\n");
  r = run("bench " + kDir + "mlp.tir --func dense -n 2 --input n=64 --input alpha=0.2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(has(r.out, "\"flops\": 4608, ")) << r.out;
}

// ---------------------------------------------------------------------------------------------
// Every dtype of LANGUAGE.md through .npy files, read back by NumPy (PyTorch for bf16)

TEST(AcceptR19, EveryDtypeThroughNpyBothEngines) {
  if (!has_numpy()) GTEST_SKIP() << "needs /usr/bin/python3 with numpy";
  const std::string d = scratch_dir("r19_dtypes");
  std::string log;
  const std::string make =
      "import numpy as np\n"
      "np.save('a.npy', np.array([True, False, True, False]))\n"
      "np.save('b.npy', np.array([-128, -1, 63, 127], np.int8))\n"
      "np.save('c.npy', np.array([-7, -1, 7, 32767], np.int16))\n"
      "np.save('d.npy', np.array([-7, -1, 7, 2**31 - 1], np.int32))\n"
      "np.save('e.npy', np.array([-3, 2**31, 7, 3037000499], np.int64))\n"
      "np.save('f.npy', np.array([0, 55, 56, 255], np.uint8))\n"
      "np.save('g.npy', np.array([0, 1, 2, 65535], np.uint16))\n"
      "np.save('h.npy', np.array([0, 1, 2**31, 2**32 - 1], np.uint32))\n"
      "np.save('p.npy', np.array([1.5, -2, 65504, np.inf], np.float16))\n"
      // bf16 is not a NumPy dtype: its raw bits (the high half of an f32), as docs/interp.md.
      "q = np.array([1.0, -2.5, 3.140625, 9.9692e37], np.float32).view(np.uint32) >> 16\n"
      "np.save('q.npy', q.astype(np.uint16))\n"
      "np.save('r.npy', np.array([1, 2, 3, -1e30], np.float32))\n"
      "np.save('s.npy', np.array([0, 1, 2, -1], np.float64))\n";
  ASSERT_EQ(python(d, make, &log), 0) << log;
  // PREFIX_X.npy holds output X of one engine.
  const std::string check =
      "import numpy as np, sys\n"
      "L = lambda n: np.load(n + '.npy')\n"
      "o = lambda n: np.load(sys.argv[1] + '_' + n + '.npy')\n"
      "a, b, c, d, e, f, g, h, p, r, s = (L(x) for x in 'abcdefghprs')\n"
      "with np.errstate(all='ignore'):\n"
      "  want = {'A': ~a, 'B': b * np.int8(2) + np.int8(1), 'C': c // np.int16(3),\n"
      "          'D': d % np.int32(5), 'E': e * e, 'F': f + np.uint8(200), 'G': g - np.uint16(1),\n"
      "          'H': h * np.uint32(3), 'P': p * np.float16(2), 'R': r / np.float32(3),\n"
      "          'S': np.sqrt(s)}\n"
      "for k, v in want.items():\n"
      "  got = o(k)\n"
      "  assert got.dtype == v.dtype and np.array_equal(got, v, equal_nan=True), (k, got, v)\n"
      // bf16 + 1: widen to f32, add, round to nearest even.
      "u = ((L('q').astype(np.uint32) << 16).view(np.float32) + np.float32(1)).view(np.uint32)\n"
      "want = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)\n"
      "Q = o('Q')\n"
      "assert Q.dtype == np.uint16 and np.array_equal(Q, want), (Q, want)\n";
  write_file(d + "check_dtypes.py", check);
  std::string args;
  for (char c : std::string("abcdefghpqrs")) args += std::string(" --input ") + c + "=" + d + c + ".npy";
  for (const std::string& e : engines()) {
    SCOPED_TRACE(e);
    std::string outs;
    for (char c : std::string("ABCDEFGHPQRS"))
      outs += std::string(" --output ") + c + "=" + d + e + "_" + c + ".npy";
    CliRun r = run("run " + kDir + "dtypes.tir --engine " + e + args + outs);
    ASSERT_EQ(r.code, 0) << r.err;
    std::string cmd = "cd " + d + " && /usr/bin/python3 check_dtypes.py " + e + " > py.log 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(d + "py.log");
  }
}

// ---------------------------------------------------------------------------------------------
// Rules of LANGUAGE.md in both engines

// Floor division / modulo vs truncdiv / truncmod on negatives and INT_MIN // -1, padding guarded
// by if_then_else, a scan reading what earlier iterations wrote, i64 arithmetic after a cast,
// float -> int truncation, a max reduction from min_value(f32).
TEST(AcceptR19, DivisionPaddingScanCastsAgainstNumpy) {
  if (!has_numpy()) GTEST_SKIP() << "needs /usr/bin/python3 with numpy";
  const std::string d = scratch_dir("r19_rules");
  std::string log;
  ASSERT_EQ(python(d,
                   "import numpy as np\n"
                   "np.save('A.npy', np.array([7, -7, 7, -7, 0, -2**31, 5, -1], np.int32))\n"
                   "np.save('B.npy', np.array([2, 2, -2, -2, 3, -1, -3, 7], np.int32))\n"
                   "np.save('X.npy', np.array([0.5, -1, 2, 3.5, -4, 1e-3, 7, -0.25], np.float32))\n",
                   &log),
            0)
      << log;
  for (const std::string& e : engines()) {
    SCOPED_TRACE(e);
    std::string outs;
    for (const char* o : {"Q", "R", "TQ", "TR", "P", "S", "C", "M"})
      outs += std::string(" --output ") + o + "=" + d + e + "_" + o + ".npy";
    CliRun r = run("run " + kDir + "rules.tir --engine " + e + " --input A=" + d + "A.npy --input B=" + d +
                   "B.npy --input X=" + d + "X.npy" + outs);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(
        python(
            d,
            "import numpy as np\nA, B, X = (np.load(n + '.npy') for n in 'ABX')\n"
            "o = lambda n: np.load('" +
                e +
                "_' + n + '.npy')\n"
                "with np.errstate(all='ignore'):\n"
                "  q = A // B\n  r = A % B\n"
                "tq = np.array([int(np.int32(np.trunc(a / b))) if a != -2**31 else -2**31 for a, b in "
                "zip(A.tolist(), B.tolist())], np.int32)\n"
                "tr = np.fmod(A, B)\n"
                "assert np.array_equal(o('Q'), q), o('Q')\nassert np.array_equal(o('R'), r), o('R')\n"
                "assert np.array_equal(o('TQ'), tq), o('TQ')\nassert np.array_equal(o('TR'), tr), o('TR')\n"
                "p = np.array([-1, -1] + X[:6].tolist(), np.float32)\nassert np.array_equal(o('P'), p), "
                "o('P')\n"
                "assert np.allclose(o('S'), np.cumsum(X), rtol=1e-6), o('S')\n"
                "c = A.astype(np.int64) * 1000000000 + np.trunc(B.astype(np.float32) * "
                "np.float32(0.5)).astype(np.int64)\n"
                "assert np.array_equal(o('C'), c), (o('C'), c)\n"
                "assert o('M').tolist() == [7.0]\n",
            &log),
        0)
        << log;
  }
}

// A literal-only expression is typed by its store target (1e-300 * 1e300 is 1 in f64), unary
// minus binds tighter than %, bool(nan) is true, integer casts wrap, float -> u8 saturates,
// f16 overflows to inf.
TEST(AcceptR19, LiteralsTakeTheirContext) {
  const std::string d = scratch_dir("r19_lits");
  NDArray x(DType::F32, {4}), i(DType::I32, {4});
  const double xs[] = {0.0, -0.5, 1.0, NAN};
  const double is[] = {0, 1, 3, 2};
  for (int k = 0; k < 4; ++k) x.set(k, xs[k]), i.set(k, is[k]);
  write_npy(d + "X.npy", x);
  write_npy(d + "I.npy", i);
  const std::string want =
      "A: f32[4] sum=28 first=[7, 7, 7, 7]\n"
      "B: i32[4] sum=20 first=[5, 5, 5, 5]\n"
      "C: f32[4] sum=nan first=[0.25, -0.75, 2.25, nan]\n"
      "D: bool[4] sum=3 first=[0, 1, 1, 1]\n"
      "E: f64[4] sum=nan first=[1, 0.5, 2, nan]\n"
      "F: i8[4] sum=88 first=[0, 100, 44, -56]\n"
      "G: u8[4] sum=1 first=[0, 0, 1, 0]\n"
      "H: f16[4] sum=nan first=[0, -35008, inf, nan]\n";
  for (const std::string& e : engines()) {
    CliRun r =
        run("run " + kDir + "lits.tir --engine " + e + " --input X=" + d + "X.npy --input I=" + d + "I.npy");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want) << e;
  }
}

// A function-level `let` used in a block, an `if` on a bool scalar around blocks, a "local"
// alloc, a `where` on a loop one longer than the block's domain, a scan through if_then_else.
TEST(AcceptR19, FunctionLevelLetIfAllocWhereScan) {
  for (const std::string& e : engines()) {
    SCOPED_TRACE(e);
    CliRun r = run("run " + kDir + "prog.tir --engine " + e + " --input n=5 --input flag=true --input X=2");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              "Y: f32[5] sum=100 first=[20, 20, 20, 20, 20]\n"
              "Z: f32[5] sum=5 first=[1, 1, 1, 1, 1]\n"
              "S: f32[5] sum=300 first=[20, 40, 60, 80, 100]\n");
    r = run("run " + kDir + "prog.tir --engine " + e + " --input n=5 --input flag=0 --input X=2");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              "Y: f32[5] sum=-100 first=[-20, -20, -20, -20, -20]\n"
              "Z: f32[5] sum=5 first=[1, 1, 1, 1, 1]\n"
              "S: f32[5] sum=-300 first=[-20, -40, -60, -80, -100]\n");
  }
  // Static counts: the branch not taken under the given flag counts nothing, the `where`
  // drops the sixth point, the scan's if_then_else counts its larger arm (2 loads).
  CliRun s = run("stats " + kDir + "prog.tir --input n=5 --input flag=1");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(
      s.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "t                                 5              5              5              5             40\n"
      "y                                 5              0              5              5             40\n"
      "y2                                0              0              0              0              0\n"
      "z                                 5              0              0              5             20\n"
      "z2                                5              5              5              5             40\n"
      "s                                 5              5             10              5             60\n"
      "total                            25             15             25             25            200\n");
  // Dynamic: the arm not taken at v = 0 loads nothing.
  s = run("stats " + kDir + "prog.tir --input n=5 --input flag=1 --dynamic");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_TRUE(has(
      s.out,
      "s                                 5              5              9              5             56\n"))
      << s.out;
  EXPECT_TRUE(has(
      s.out,
      "total                            25             15             24             25            196\n"))
      << s.out;
  // Gradient of the whole program (through the alloc, the branch and the scan).
  CliRun c = run("check-grad " + kDir + "prog.tir --input n=4 --input flag=1");
  expect_passed(c, 1);
}

// `max=` / `min=` / `*=` / `-=`, `;` after statements, `inf` literals, `else if`, a comment on
// the last line without a newline; printed as a fixpoint.
TEST(AcceptR19, SugarElseIfAndSemicolons) {
  const std::string d = scratch_dir("r19_sugar");
  std::string text = slurp(case_file("sugar.tir"));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  write_file(d + "sugar.tir", text);
  NDArray x(DType::F32, {8});
  for (int k = 0; k < 8; ++k) x.set(k, k - 4.0);
  write_npy(d + "X.npy", x);
  for (const std::string& e : engines()) {
    CliRun r = run("run " + d + "sugar.tir --engine " + e + " --input X=" + d + "X.npy");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              "M: f32[2] sum=2 first=[-1, 3]\n"
              "N: f32[2] sum=-4 first=[-4, 0]\n"
              "P: f32[2] sum=217.125 first=[0.5625, 216.562]\n"
              "Q: f32[8] sum=84 first=[14, 13, 12, 11, 10, 9, 8, 7]\n"
              "C: i32[8] sum=-1 first=[-1, -1, -1, -1, 0, 1, 1, 1]\n")
        << e;
  }
  CliRun p = run("parse " + d + "sugar.tir");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(has(p.out, "      } else if X[v] < 0.5 {\n")) << p.out;
  EXPECT_TRUE(has(p.out, "M[v] = max(M[v], X[v * 4 + vk])")) << p.out;
  CliRun q = run("parse -", p.out);
  EXPECT_EQ(q.out, p.out);
}

// round is half to even (as NumPy and TVM), abs / sign / min / max on integers (abs(INT_MIN)
// wraps as NumPy's), sign of floats (+0 for -0, as TVM's select lowering), trunc / floor / ceil.
TEST(AcceptR19, RoundingAndIntegerIntrinsics) {
  const std::string d = scratch_dir("r19_intr");
  NDArray x(DType::F32, {6}), i(DType::I32, {6});
  const double xs[] = {0.5, 1.5, 2.5, -0.5, -2.5, -0.0};
  const double is[] = {-5, 0, 7, -2147483648.0, 3, -1};
  for (int k = 0; k < 6; ++k) x.set(k, xs[k]), i.set(k, is[k]);
  write_npy(d + "X.npy", x);
  write_npy(d + "I.npy", i);
  for (const std::string& e : engines()) {
    CliRun r =
        run("run " + kDir + "intr.tir --engine " + e + " --input X=" + d + "X.npy --input I=" + d + "I.npy");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              "R: f32[6] sum=2 first=[0, 2, 2, -0, -2, -0]\n"
              "A: i32[6] sum=-2147483632 first=[5, 0, 7, -2147483648, 3, 1]\n"
              "S: i32[6] sum=-1 first=[-1, 0, 1, -1, 1, -1]\n"
              "M: i32[6] sum=-1 first=[-3, 0, 3, -3, 3, -1]\n"
              "G: f32[6] sum=1 first=[1, 1, 1, -1, -1, 0]\n"
              "T: f32[6] sum=391 first=[100, 211, 322, -10, -232, -0]\n")
        << e;
  }
}

// ---------------------------------------------------------------------------------------------
// Mistakes

// Run-time strictness of the interpreter (LANGUAGE.md: bindings inside [0, EXTENT), outputs
// read before written, conflicting spatial iterations) and out-of-bounds accesses in both engines.
TEST(AcceptR19, StrictRunTimeErrors) {
  struct Case {
    std::string file, args, interp, jit;  // jit empty: the JIT does not check it
  } cases_[] = {
      {"oob.tir", "", "4:7: error: block \"b\": out-of-bounds load A[8]: A has shape [8]",
       "4:7: error: block \"b\": out-of-bounds load A[8]: index 8 of dimension 0 is outside [0, 8)"},
      {"bind.tir", "", "3:29: error: binding of iter var v takes values in [0, 8], outside its domain [0, 8)",
       "3:29: error: binding of iter var v takes values in [0, 8], outside its domain [0, 8)"},
      {"oobstore.tir", " --input I=8", "9:7: error: block \"c\": out-of-bounds store B[8]: B has shape [8]",
       "9:7: error: block \"c\": out-of-bounds store B[8]: index 8 of dimension 0 is outside [0, 8)"},
      {"oobstore.tir", " --input I=-1", "9:7: error: block \"c\": out-of-bounds store B[-1]: B has shape [8]",
       "9:7: error: block \"c\": out-of-bounds store B[-1]: index -1 of dimension 0 is outside [0, 8)"},
      {"uninit.tir", "", "4:7: error: block \"b\": read of uninitialised element B[0] of output buffer B",
       ""},
      {"conflict.tir", "",
       "4:7: error: block \"b\": spatial iterations conflict: (v = 0) and (v = 1) both write B[0] (use a "
       "reduce "
       "iter var for a reduction)",
       ""},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.file + c.args);
    CliRun r = run("run " + kDir + c.file + " --random 0" + c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, case_file(c.file) + ":" + c.interp + "\n");
    if (!has_llvm() || c.jit.empty()) continue;
    r = run("run " + kDir + c.file + " --random 0 --engine jit" + c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, case_file(c.file) + ":" + c.jit + "\n");
  }
}

// A learner's mistakes: each is `FILE:LINE:COL: error: MSG` on stderr, nothing on stdout, exit 2,
// the same through every subcommand that reads the script (schedule mistakes: the commands that
// apply schedules).
TEST(AcceptR19, ScriptMistakesArePositioned) {
  struct Case {
    const char* file;
    const char* msg;
  } cases_[] = {
      {"andint.tir", "2:65: error: operator && expects bool operands, got i32 and i32"},
      {"arity1.tir", "2:60: error: exp expects 1 argument, got 2"},
      {"arity3.tir", "2:60: error: select expects 3 arguments, got 2"},
      {"badkind.tir",
       "2:35: error: unknown iter var kind 'sptial' (expected spatial, reduce, scan or opaque)"},
      {"badloopkind.tir",
       "2:12: error: unknown loop kind 'serail' (expected serial, parallel, vectorized, unroll, "
       "thread_binding or "
       "grid)"},
      {"badthread.tir",
       "2:30: error: unknown thread tag \"threadIdx.w\" (expected blockIdx.x/y/z, threadIdx.x/y/z, vthread "
       "or "
       "vthread.x/y/z)"},
      {"casebool.tir", "2:60: error: type mismatch: cannot store i32 into bool buffer B"},
      {"castarity.tir", "2:60: error: cast to i32 expects 1 argument, got 2"},
      {"condf.tir", "2:56: error: if condition must be bool, got f32"},
      {"dupfunc.tir", "4:6: error: duplicate function 'f'"},
      {"dupout.tir", "1:23: error: duplicate parameter 'A'"},
      {"exttype.tir", "2:19: error: loop extent must be an integer, got f32"},
      {"floatidx.tir", "2:62: error: buffer index must be an integer, got f32"},
      {"floatshape.tir", "1:23: error: buffer shape must be an integer, got f32"},
      {"ivdup.tir", "2:55: error: duplicate iter var 'v'"},
      {"minvalue_i.tir", "2:70: error: min_value expects 1 argument, got 2"},
      {"storedtype.tir", "2:60: error: type mismatch: cannot store f64 into f32 buffer B"},
      {"unknowncall.tir", "2:60: error: unknown function 'relu' (write max(x, 0.0))"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.file);
    const std::string path = case_file(std::string("err/") + c.file);
    // Every subcommand reads a script the same way (pinned by rounds 2-18): `parse` for every
    // case, `check-grad` for every third (the suite stays fast).
    for (const char* sub : {"parse", "check-grad"}) {
      if (std::string(sub) != "parse" && (&c - cases_) % 3 != 0) continue;
      CliRun r = run(std::string(sub) + " " + path);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.out, "") << sub;
      EXPECT_EQ(r.err, path + ":" + c.msg + "\n") << sub;
    }
  }
  struct Sched {
    const char* file;
    const char* msg;
  } sched[] = {{"missblock.tir", "5:7: error: get_block: no block named \"c\" in function f"},
               {"missfunc.tir", "4:10: error: schedule for unknown function 'g'"}};
  for (auto& c : sched) {
    SCOPED_TRACE(c.file);
    const std::string path = case_file(std::string("err/") + c.file);
    for (const char* sub : {"schedule", "verify"}) {
      CliRun r = run(std::string(sub) + " " + path);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.out, "") << sub;
      EXPECT_EQ(r.err, path + ":" + c.msg + "\n") << sub;
    }
  }
}

// Names a user writing a model reaches for are answered with the .tir spelling.
TEST(AcceptR19, ActivationNamesSuggestTheSpelling) {
  struct Case {
    const char* call;
    const char* hint;
  } cases_[] = {{"relu(A[v])", "max(x, 0.0)"},
                {"clip(A[v], 0.0, 1.0)", "min(max(x, lo), hi)"},
                {"clamp(A[v], 0.0, 1.0)", "min(max(x, lo), hi)"},
                {"square(A[v])", "x * x"},
                {"reciprocal(A[v])", "1.0 / x"},
                {"softplus(A[v])", "log1p(exp(x))"},
                {"fmax(A[v], 0.0)", "max(a, b)"},
                {"ln(A[v])", "log(x)"}};
  for (auto& c : cases_) {
    std::string name = c.call;
    name = name.substr(0, name.find('('));
    CliRun r =
        run("parse -",
            "func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block b(v: spatial(4) = i) "
            "{\n      B[v] = " +
                std::string(c.call) + "\n    }\n  }\n}\n");
    EXPECT_EQ(r.code, 2) << c.call;
    EXPECT_EQ(r.err, "<stdin>:4:14: error: unknown function '" + name + "' (write " + c.hint + ")\n");
  }
}

// .npy mistakes name the parameter and what was expected.
TEST(AcceptR19, NpyMistakesNameTheParameter) {
  const std::string d = scratch_dir("r19_npy");
  NDArray ones(DType::F32, {4, 3});
  for (int k = 0; k < 12; ++k) ones.set(k, 1.0);
  write_npy(d + "a43.npy", ones);
  write_npy(d + "a34.npy", NDArray(DType::F32, {3, 4}));
  write_npy(d + "a43d.npy", NDArray(DType::F64, {4, 3}));
  write_npy(d + "a12.npy", NDArray(DType::F32, {12}));
  write_file(d + "text.npy", "func f() -> () { }\n");
  struct Case {
    std::string args, err;
  } cases_[] = {
      {"--input n=4 --input A=" + d + "a34.npy", "parameter A: expected shape [4, 3], got [3, 4]"},
      {"--input n=4 --input A=" + d + "a43d.npy",
       "parameter A: " + d + "a43d.npy: expected dtype f32 ('<f4'), file has '<f8'"},
      {"--input n=4 --input A=" + d + "a12.npy", "parameter A: expected shape [n, 3], got [12]"},
      {"--input n=4 --input A=" + d + "none.npy",
       "parameter A: cannot read " + d + "none.npy: No such file or directory"},
      {"--input n=4 --input A=" + d + "text.npy",
       "parameter A: " + d + "text.npy: not a .npy file (bad magic)"},
      {"--input n=4.5 --input A=" + d + "a43.npy", "parameter n: '4.5' is not an integer"},
      {"--input n=4 --input A=" + d + "a43.npy --input C=1",
       "--input C=1: function f has no parameter named C"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.args);
    // The inputs are read by one function for every subcommand: all three on the first case.
    for (const char* sub : {"run", "check-grad", "stats --dynamic"}) {
      if (std::string(sub) != "run" && &c != cases_) continue;
      CliRun r = run(std::string(sub) + " " + kDir + "rt.tir " + c.args);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.out, "") << sub;
      EXPECT_EQ(r.err, "tirc: error: " + c.err + "\n") << sub;
    }
  }
  // The size of A gives n when n is not given.
  CliRun r = run("run " + kDir + "rt.tir --input A=" + d + "a43.npy");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=12 first=[3, 3, 3, 3]\n");
}

// Standard input holds one thing: the script or one .npy (both said "not a .npy file (bad magic)").
TEST(AcceptR19, StandardInputIsReadOnce) {
  const std::string d = scratch_dir("r19_stdin");
  NDArray a(DType::F32, {4, 3});
  std::string npy = serialize_npy(a);
  CliRun r = run("run " + kDir + "rt.tir --input n=4 --input A=-", npy);
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("run - --input n=4 --input A=-", slurp(case_file("rt.tir")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(
      r.err,
      "tirc: error: parameter A: standard input is empty (when the script is read from `-`, standard input "
      "holds the script: give the .npy as a file)\n");
  write_file(
      d + "two.tir",
      "func f(A: f32[2], B: f32[2]) -> (C: f32[2]) {\n  for i in serial(2) {\n    block b(v: spatial(2) = i) "
      "{ C[v] = A[v] + B[v] }\n  }\n}\n");
  r = run("run " + d + "two.tir --input A=- --input B=-", serialize_npy(NDArray(DType::F32, {2})));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "tirc: error: --input B=-: standard input is already read by --input A=- (it holds one .npy; give the "
      "other as a file)\n");
  r = run("check-grad " + d + "two.tir --input A=- --input B=-", serialize_npy(NDArray(DType::F32, {2})));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "standard input is already read by --input A=-")) << r.err;
}

// ---------------------------------------------------------------------------------------------
// tirc stats --dynamic is exact for the inputs it runs

// `if A[v] > 0.0 { B = exp(A) * 2 + 1 } else { B = 0 }` on 3 positives of 8: the condition is
// 8 loads and 8 FLOPs, the taken branch 3 x (1 load, 3 FLOPs), 8 stores. Static: the larger
// branch for every element (an upper bound). Until round 19 --dynamic gave the static 32 / 16.
TEST(AcceptR19, StatsDynamicWeighsBranches) {
  const std::string d = scratch_dir("r19_dyn");
  NDArray a(DType::F32, {8});
  const double av[] = {1, -1, 1, -1, -1, -1, -1, 2};
  for (int k = 0; k < 8; ++k) a.set(k, av[k]);
  write_npy(d + "A.npy", a);
  const std::string head =
      "block                    iterations          flops          loads         stores          bytes\n";
  CliRun r = run("stats " + kDir + "dyn.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      head +
          "b                                 8             32             16              8             96\n"
          "total                             8             32             16              8             "
          "96\n");
  r = run("stats " + kDir + "dyn.tir --dynamic --input A=" + d + "A.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      head +
          "b                                 8             17             11              8             76\n"
          "total                             8             17             11              8             "
          "76\n");
  r = run("stats " + kDir + "dyn.tir --dynamic --json --input A=" + d + "A.npy");
  EXPECT_TRUE(has(r.out, "\"flops\": 17,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"mode\": \"dynamic\"")) << r.out;
}

// Nested ifs and an if_then_else inside a loop whose extent is data (L[v]): counted by hand
// (41 FLOPs, 50 loads with the 4 of L[v] in the extent, 18 stores); static counting cannot
// bound the loop and says so.
// A triangular loop `serial(v + 1)` inside a block: 21 iterations of 1 FLOP and 2 loads.
// A data-dependent `where` over a select (both arms evaluated): 4 of 8 executions x 3 FLOPs.
TEST(AcceptR19, StatsDynamicCountsDataDependentLoops) {
  const std::string d = scratch_dir("r19_dyn2");
  NDArray l(DType::I32, {4}), a(DType::F32, {4, 8});
  const double lv[] = {8, 3, 0, 5};
  const double av[4][8] = {{1, -1, 2, -2, 3, -3, 4, -4},
                           {-1, -1, -1, -1, -1, -1, -1, -1},
                           {1, 1, 1, 1, 1, 1, 1, 1},
                           {1, 2, -3, 4, -5, 6, 7, 8}};
  for (int k = 0; k < 4; ++k) l.set(k, lv[k]);
  for (int k = 0; k < 32; ++k) a.set(k, av[k / 8][k % 8]);
  write_npy(d + "L.npy", l);
  write_npy(d + "A.npy", a);
  const std::string head =
      "block                    iterations          flops          loads         stores          bytes\n";
  CliRun r = run("stats " + kDir + "dyn2.tir --dynamic --input L=" + d + "L.npy --input A=" + d + "A.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      head +
          "row                               4             41             50             18            272\n"
          "total                             4             41             50             18            "
          "272\n");
  r = run("stats " + kDir + "dyn2.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "tirc: error: loop k: its extent is not a constant of scalar parameters; use tirc stats --dynamic\n");
  r = run("stats " + kDir + "dyn3.tir --dynamic");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      head +
          "row                               6             21             42             27            276\n"
          "total                             6             21             42             27            "
          "276\n");
  NDArray m(DType::Bool, {8}), x(DType::F32, {8});
  const double mv[] = {1, 0, 1, 0, 0, 0, 1, 1};
  for (int k = 0; k < 8; ++k) m.set(k, mv[k]), x.set(k, k - 4.0);
  write_npy(d + "M.npy", m);
  write_npy(d + "X.npy", x);
  r = run("stats " + kDir + "dynw.tir --dynamic --input M=" + d + "M.npy --input A=" + d + "X.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      head +
          "z                                 8              0              0              8             32\n"
          "b                                 4             12             16              4             80\n"
          "total                            12             12             16             12            "
          "112\n");
  // The help says what is exact.
  r = run("stats --help");
  EXPECT_TRUE(has(r.out, "so the counts are exact for those inputs")) << r.out;
  EXPECT_FALSE(has(r.out, "exact under predicates and data-dependent")) << r.out;
}

// Reviewer round 4 of 5014ae1 (each of these failed before the fix):
// - counts were weighed by ratios ta / (ta + tb): `"flops": 14.999999999999998`, `6.00001e+06`;
// - an if_then_else in an index fell back to the larger arm (the inferred reads/writes region
//   reuses the index expression, so the node looked shared): 16 loads for 10;
// - loads in a loop extent inside a block body (`serial(L[v])`) were not counted;
// - `tirc verify --input n=-` of two functions taking n read standard input twice.
const char* kPositives =
    "func f(A: f32[9]) -> (B: f32[9]) {\n  for i in serial(9) {\n    block b(v: spatial(9) = i) {\n"
    "      B[v] = if_then_else(A[v] > 0.0, exp(A[v]), 0.0)\n    }\n  }\n}\n";
const char* kLongLoop =
    "func f(A: f32[9]) -> (B: f32[9]) {\n  for i in serial(9) {\n    block b(v: spatial(9) = i) {\n"
    "      B[v] = 0.0\n      if A[v] > 0.0 {\n        for k in serial(10001) { B[v] = B[v] + 1.0 }\n"
    "      }\n    }\n  }\n}\n";

// 6 positives of 9: the condition is 9 loads and 9 FLOPs, the exp arm 6 x (1 load, 1 FLOP).
// With a loop: 9 stores and 9 conditions, then 6 x 10001 x (1 load, 1 FLOP, 1 store).
TEST(AcceptR19, StatsDynamicCountsAreWholeNumbers) {
  const std::string d = scratch_dir("r19_dyn_whole");
  NDArray a(DType::F32, {9});
  for (int k = 0; k < 9; ++k) a.set(k, k < 6 ? 1.0 : -1.0);
  write_npy(d + "A.npy", a);
  write_file(d + "pos.tir", kPositives);
  write_file(d + "loop.tir", kLongLoop);
  CliRun r = run("stats " + d + "pos.tir --dynamic --json --input A=" + d + "A.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"flops\": 15,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"loads\": 15,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"bytes\": 96,")) << r.out;
  r = run("stats " + d + "loop.tir --dynamic --input A=" + d + "A.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "b                                 9          60015          60015          60015         480120\n"
      "total                             9          60015          60015          60015         "
      "480120\n");
}

// B[v] = A[if_then_else(v > 5, L[v], 0)] and B[if_then_else(v > 5, L[v] + 8, v)] = A[v] over
// 8 points: 8 loads of A and 2 of L (v = 6, 7), 8 stores, 72 bytes, with or without written
// reads/writes regions.
TEST(AcceptR19, StatsDynamicIfThenElseInAnIndex) {
  const std::string d = scratch_dir("r19_dyn_index");
  NDArray l(DType::I32, {8}), a(DType::F32, {8});
  for (int k = 0; k < 8; ++k) l.set(k, k), a.set(k, k);
  write_npy(d + "L.npy", l);
  write_npy(d + "A.npy", a);
  write_file(d + "load.tir",
             "func f(L: i32[8], A: f32[8]) -> (B: f32[8]) {\n  for i in serial(8) {\n"
             "    block b(v: spatial(8) = i) { B[v] = A[if_then_else(v > 5, L[v], 0)] }\n  }\n}\n");
  write_file(d + "store.tir",
             "func f(L: i32[8], A: f32[8]) -> (B: f32[16]) {\n  for i in serial(8) {\n"
             "    block b(v: spatial(8) = i) { B[if_then_else(v > 5, L[v] + 8, v)] = A[v] }\n  }\n}\n");
  for (const char* f : {"load.tir", "store.tir"}) {
    CliRun r = run("stats " + d + f + " --dynamic --input L=" + d + "L.npy --input A=" + d + "A.npy");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(
        r.out,
        "block                    iterations          flops          loads         stores          bytes\n"
        "b                                 8              0             10              8             72\n"
        "total                             8              0             10              8             "
        "72\n")
        << f;
  }
}

// for k in serial(L[v]) with L = [1, 2, 3, 0]: 4 loads of L in the extent, 6 iterations of
// (1 load, 1 FLOP, 1 store), 4 stores of B[v] = 0. (Static counting refuses both extents.)
TEST(AcceptR19, StatsDynamicCountsLoopExtents) {
  const std::string d = scratch_dir("r19_dyn_ext");
  NDArray l(DType::I32, {4});
  for (int k = 0; k < 4; ++k) l.set(k, k < 3 ? k + 1 : 0);
  write_npy(d + "L.npy", l);
  write_file(
      d + "ext.tir",
      "func f(L: i32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block row(v: spatial(4) = i) {\n"
      "      B[v] = 0.0\n      for k in serial(L[v]) { B[v] = B[v] + 1.0 }\n    }\n  }\n}\n");
  CliRun r = run("stats " + d + "ext.tir --dynamic --input L=" + d + "L.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "row                               4              6             10             10             80\n"
      "total                             4              6             10             10             "
      "80\n");
  // A FLOP in the extent, once per entry: 4 x (1 + 3 iterations of 1 FLOP) for n = 6.
  write_file(
      d + "fext.tir",
      "func f(n: i32) -> (B: f32[4]) {\n  for i in serial(4) {\n    block row(v: spatial(4) = i) {\n"
      "      B[v] = 0.0\n      for k in serial(i32(f32(n) * 0.5)) { B[v] = B[v] + 1.0 }\n    }\n  }\n}\n");
  r = run("stats " + d + "fext.tir --dynamic --input n=6");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "block                    iterations          flops          loads         stores          bytes\n"
      "row                               4             16             12             16            112\n"
      "total                             4             16             12             16            "
      "112\n");
}

// Two functions taking n, both verified with n from standard input: read once, used by both
// (the second said "standard input is empty"). An empty standard input names the spec, not a
// script read from `-` that was not.
TEST(AcceptR19, VerifyReadsStandardInputOnce) {
  const std::string d = scratch_dir("r19_verify_stdin");
  std::string fn =
      "(n: i32, A: f32[8]) -> (B: f32[8]) {\n  for i in serial(8) {\n    block b(v: spatial(8) = i) {\n"
      "      B[v] = A[v] * f32(n)\n    }\n  }\n}\n";
  std::string sched =
      " {\n  b = sch.get_block(\"b\")\n  i, = sch.get_loops(b)\n  io, ii = sch.split(i, factors=[2, 4])\n}\n";
  write_file(d + "two.tir", "func f" + fn + "func g" + fn + "schedule f" + sched + "schedule g" + sched);
  NDArray n(DType::I32, {});
  n.set(0, 3);
  CliRun r = run("verify " + d + "two.tir --engine interp --input n=-", serialize_npy(n));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "f [interp]: ok (max abs error 0)\ng [interp]: ok (max abs error 0)\n2 passed, 0 failed\n");
  r = run("verify " + d + "two.tir --engine interp --input n=-");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: parameter n: standard input is empty (`--input n=-` reads one .npy from it)\n");
}
}  // namespace
}  // namespace tirc::accept

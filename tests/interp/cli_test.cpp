// The shared examples parsed from examples/ and run by the interpreter, compared with an
// independent NumPy/PyTorch reference; `tirc run` and `tirc stats` end to end.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "runtime/npy.h"

namespace tirc {
namespace {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/tirc_cli_XXXXXX";
    path = mkdtemp(t);
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return path + "/" + f; }
};

struct Cmd {
  int code;
  std::string out, err;
};
Cmd sh(const std::string& args, const TmpDir& d) {
  std::string cmd =
      std::string(TIRC_BINARY) + " " + args + " > " + (d / "out.txt") + " 2> " + (d / "err.txt");
  int rc = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(d / "out.txt"), slurp(d / "err.txt")};
}

int python(const std::string& code, const TmpDir& d) {
  std::ofstream(d / "check.py") << code;
  return std::system(("/usr/bin/python3 " + (d / "check.py") + " > " + (d / "py.txt") + " 2>&1").c_str());
}

std::string example(const std::string& name) {
  return std::string(TIRC_SOURCE_DIR) + "/examples/" + name + ".tir";
}

}  // namespace

// Runs each shared example through the parser + interpreter and checks it with PyTorch in f64.
TEST(InterpParsedExamples, MatchTorch) {
  TmpDir d;
  for (std::string name : {"matmul", "softmax", "conv2d"}) {
    Module m = parse_file(example(name));
    Function f = m.find_func(name);
    ASSERT_TRUE(f) << name;
    ArgMap in = random_inputs(*f, 11);
    ArgMap out = run_interp(*f, in);
    for (auto& [k, v] : in) write_npy(d / (name + "_" + k + ".npy"), v);
    for (auto& [k, v] : out) write_npy(d / (name + "_" + k + ".npy"), v);
  }
  std::string code = "import numpy as np, torch\nd='" + d.path + "'\n" + R"(
L = lambda n: torch.tensor(np.load(f'{d}/{n}.npy')).double()
A, B, C = L('matmul_A'), L('matmul_B'), L('matmul_C')
assert torch.allclose(C, A @ B, rtol=1e-5, atol=1e-5), 'matmul'
X, Y = L('softmax_X'), L('softmax_Y')
assert torch.allclose(Y, torch.softmax(X, dim=1), rtol=1e-5, atol=1e-6), 'softmax'
X, W, Y = L('conv2d_X'), L('conv2d_W'), L('conv2d_Y')
assert torch.allclose(Y, torch.nn.functional.conv2d(X, W, padding=1), rtol=1e-5, atol=1e-5), 'conv2d'
print('ok')
)";
  EXPECT_EQ(python(code, d), 0) << std::ifstream(d / "py.txt").rdbuf();
}

TEST(TircRun, NpyInputsAndOutputsMatchNumPy) {
  TmpDir d;
  ASSERT_EQ(python("import numpy as np\nd='" + d.path +
                       "'\nr=np.random.default_rng(0)\nnp.save(f'{d}/a.npy', r.standard_normal((128, "
                       "64)).astype(np.float32))\n"
                       "np.save(f'{d}/b.npy', r.standard_normal((64, 32)).astype(np.float32))\n",
                   d),
            0);
  Cmd c = sh("run " + example("matmul") + " --func matmul --input A=" + (d / "a.npy") +
                 " --input B=" + (d / "b.npy") + " --output C=" + (d / "c.npy"),
             d);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out.rfind("C: f32[128, 32] sum=", 0), 0u) << c.out;
  EXPECT_NE(c.out.find("first=["), std::string::npos);
  EXPECT_EQ(
      python("import numpy as np\nd='" + d.path +
                 "'\nc=np.load(f'{d}/c.npy')\nassert c.dtype==np.float32 and c.shape==(128,32)\n"
                 "ref=np.load(f'{d}/a.npy').astype(np.float64)@np.load(f'{d}/b.npy').astype(np.float64)\n"
                 "assert np.allclose(c, ref, rtol=1e-5, atol=1e-4)\n",
             d),
      0);
}

TEST(TircRun, RandomSeedIsDeterministic) {
  TmpDir d;
  Cmd a = sh("run " + example("softmax") + " --func softmax --random 5", d);
  Cmd b = sh("run " + example("softmax") + " --func softmax --random 5", d);
  Cmd c = sh("run " + example("softmax") + " --func softmax --random 6", d);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_NE(a.out.find("Y: f32[32, 100] sum=32 "), std::string::npos) << a.out;
}

TEST(TircRun, Errors) {
  TmpDir d;
  Cmd c = sh("run " + example("matmul") + " --func matmul", d);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err,
            "tirc: error: missing input for parameter A (give --input A=FILE.npy|VALUE or --random SEED)\n");
  c = sh("run " + example("matmul") + " --func matmul --random 1 --engine jit", d);
#ifdef TIRC_WITH_LLVM
  EXPECT_EQ(c.code, 0) << c.err;  // the LLVM build registers the jit engine
#else
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("engine 'jit' is not available"), std::string::npos) << c.err;
#endif
  c = sh("run " + example("matmul") + " --func matmul --random 1 --engine nope", d);
  EXPECT_EQ(c.code, 2);
  ASSERT_EQ(python("import numpy as np\nnp.save('" + (d / "a64.npy") + "', np.zeros((128, 64)))\nnp.save('" +
                       (d / "a_bad.npy") + "', np.zeros((64, 64), dtype=np.float32))\n",
                   d),
            0);
  c = sh("run " + example("matmul") + " --func matmul --random 1 --input A=" + (d / "a64.npy"), d);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err, "tirc: error: parameter A: " + (d / "a64.npy") +
                       ": expected dtype f32 ('<f4'), file has '<f8'\n");
  c = sh("run " + example("matmul") + " --func matmul --random 1 --input A=" + (d / "a_bad.npy"), d);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err, "tirc: error: parameter A: expected shape [128, 64], got [64, 64]\n");
  c = sh("run " + example("matmul") + " --func matmul --random 1 --input Q=1", d);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err, "tirc: error: --input Q=1: function matmul has no parameter named Q\n");
  c = sh("run " + example("matmul") + " --func nope --random 1", d);
  EXPECT_EQ(c.code, 2);
}

TEST(TircRun, ScalarInputsAndFills) {
  TmpDir d;
  std::ofstream(d / "scale.tir") << R"(
func scale(n: i32, a: f32, X: f32[n]) -> (Y: f32[n]) {
  for i in serial(n) {
    block s(vi: spatial(n) = i) {
      Y[vi] = X[vi] * a
    }
  }
}
)";
  Cmd c = sh("run " + (d / "scale.tir") + " --func scale --input n=5 --input a=2.5 --input X=2", d);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, "Y: f32[5] sum=25 first=[5, 5, 5, 5, 5]\n");
  c = sh("run " + (d / "scale.tir") + " --func scale --input n=x --input a=1 --input X=2", d);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.err, "tirc: error: parameter n: 'x' is not an integer\n");
}

TEST(TircStats, JsonCountsOfTheExamples) {
  TmpDir d;
  Cmd c = sh("stats " + example("matmul") + " --func matmul --json", d);
  ASSERT_EQ(c.code, 0) << c.err;
  auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["flops"], 2 * 128 * 32 * 64);
  EXPECT_EQ(j["iterations"], 128 * 32 * 64);
  EXPECT_EQ(j["loads"], 3 * 128 * 32 * 64);
  EXPECT_EQ(j["stores"], 128 * 32 * 64 + 128 * 32);  // body + init
  EXPECT_EQ(j["bytes"], 4 * (4 * 128 * 32 * 64 + 128 * 32));
  EXPECT_EQ(j["blocks"]["C"]["flops"], 2 * 128 * 32 * 64);

  c = sh("stats " + example("softmax") + " --func softmax --json", d);
  ASSERT_EQ(c.code, 0) << c.err;
  j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["blocks"]["row_max"]["flops"], 3200);  // max
  EXPECT_EQ(j["blocks"]["exp"]["flops"], 6400);      // - and exp
  EXPECT_EQ(j["blocks"]["row_sum"]["flops"], 3200);
  EXPECT_EQ(j["blocks"]["norm"]["flops"], 3200);
  EXPECT_EQ(j["flops"], 16000);
  EXPECT_EQ(j["iterations"], 4 * 3200);

  c = sh("stats " + example("conv2d") + " --func conv2d --json --dynamic", d);
  ASSERT_EQ(c.code, 0) << c.err;
  j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["blocks"]["conv"]["iterations"], 2 * 16 * 16 * 16 * 8 * 9);
  EXPECT_EQ(j["blocks"]["pad"]["iterations"], 2 * 8 * 18 * 18);
  EXPECT_EQ(j["flops"], 2 * 2 * 16 * 16 * 16 * 8 * 9);

  c = sh("stats " + example("conv2d") + " --func conv2d", d);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("conv"), std::string::npos);
  EXPECT_NE(c.out.find("total"), std::string::npos);
}

TEST(TircStats, DynamicCountsFollowPredicates) {
  TmpDir d;
  std::ofstream(d / "tri.tir") << R"(
func tri(A: f32[8, 8]) -> (B: f32[8, 8]) {
  for i, j in grid(8, 8) {
    block t(vi: spatial(8) = i, vj: spatial(8) = j) {
      where j <= i
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
}
)";
  Cmd c = sh("stats " + (d / "tri.tir") + " --json", d);
  ASSERT_EQ(c.code, 0) << c.err;
  // Static counts enumerate the loops of the predicate (docs/interp.md): exact too.
  EXPECT_EQ(nlohmann::json::parse(c.out)["iterations"], 36);
  c = sh("stats " + (d / "tri.tir") + " --json --dynamic", d);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["iterations"], 36);
  EXPECT_EQ(nlohmann::json::parse(c.out)["flops"], 36);
}

}  // namespace tirc

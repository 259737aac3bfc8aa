// Acceptance round 2: gradients of cases/grads_r2.tir (every differentiable intrinsic, an MLP
// with allocs, logsumexp with a float scalar, two reduce axes + in-place update, padded conv2d,
// a `where` triangle, an output read by a later block with an int output beside it):
// check-grad passes, and F_grad run on fixed inputs matches PyTorch (cases/gen_refs2.py).
#include <gtest/gtest.h>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct GradCase {
  const char* func;
  const char* extra;
  int n_inputs;
};
const GradCase kGrads[] = {
    {"unary_all", "", 2},
    {"mlp", "", 4},
    {"lse", " --input t=0.7", 1},
    {"sum2", "", 1},
    {"conv2d", "", 2},
    {"tri", "", 2},
    {"chain", "", 1},
    {"multi", "", 1},
    {"shiftp", "", 1},
    {"shiftp", " --input s=3", 1},
    {"predred", "", 1},
    {"powmix", "", 2},
    {"scan2", "", 1},
    {"ptrel", "", 1},
};

TEST(AcceptGradR2, CheckGrad) {
  for (auto& g : kGrads) {
    SCOPED_TRACE(g.func);
    expect_passed(run("check-grad @/grads_r2.tir --func " + std::string(g.func) + g.extra), g.n_inputs);
    expect_passed(
        run("check-grad @/grads_r2.tir --func " + std::string(g.func) + g.extra + " --full --seed 7"),
        g.n_inputs);
  }
}

// The signature of F_grad: every parameter of F (scalars and int buffers too), one cotangent
// per output with the output's dtype (also an int output), one result per --wrt buffer.
TEST(AcceptGradR2, Signatures) {
  CliRun g = run("grad @/grads_r2.tir --func chain");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("func chain_grad(X: f32[6], Y_grad: f32[6], Z_grad: f32[6], C_grad: i32[6]) -> "
                       "(X_grad: f32[6]) {"),
            std::string::npos)
      << g.out;
  g = run("grad @/grads_r2.tir --func lse");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(
      g.out.find("func lse_grad(t: f32 in [0.5, 2.0], X: f32[3, 5], L_grad: f32[3]) -> (X_grad: f32[3, 5])"),
      std::string::npos)
      << g.out;
  g = run("grad @/grads_r2.tir --func mlp --wrt W2,X");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(
      g.out.find("func mlp_grad(X: f32[4, 8], W1: f32[8, 16], B1: f32[16], W2: f32[16, 3], Y_grad: f32[4, "
                 "3]) -> (W2_grad: f32[16, 3], X_grad: f32[4, 8])"),
      std::string::npos)
      << g.out;
  // -o writes the module to a file and nothing to stdout; the file re-parses to a fixpoint.
  g = run("grad @/grads_r2.tir --func tri --wrt V -o %/tri.tir");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out, "");
  std::string mod = slurp(tmp() + "tri.tir");
  EXPECT_NE(mod.find("func tri_grad(X: f32[5, 5], V: f32[5], Y_grad: f32[5, 5]) -> (V_grad: f32[5])"),
            std::string::npos)
      << mod;
  CliRun p = run("parse -", mod);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, mod);
  // An output name or an unknown name in --wrt is refused.
  CliRun bad = run("grad @/grads_r2.tir --func chain --wrt Y");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.rfind("tirc: error: gradient of chain: --wrt Y is not a float input buffer of chain", 0),
            0u)
      << bad.err;
}

// F_grad on fixed inputs equals PyTorch's vector-Jacobian product, in both engines.
TEST(AcceptGradR2, MatchesTorch) {
  struct {
    const char* func;
    const char* wrt;
    std::vector<std::pair<std::string, std::string>> in, out;
  } cases_[] = {
      {"unary_all",
       "X,P",
       {{"X", "gu_X"}, {"P", "gu_P"}, {"Y_grad", "gu_Ygrad"}},
       {{"X_grad", "gu_Xgrad"}, {"P_grad", "gu_Pgrad"}}},
      {"mlp",
       "X,W1,B1,W2",
       {{"X", "gmlp_X"}, {"W1", "gmlp_W1"}, {"B1", "gmlp_B1"}, {"W2", "gmlp_W2"}, {"Y_grad", "gmlp_Ygrad"}},
       {{"X_grad", "gmlp_Xgrad"},
        {"W1_grad", "gmlp_W1grad"},
        {"B1_grad", "gmlp_B1grad"},
        {"W2_grad", "gmlp_W2grad"}}},
      {"conv2d",
       "I,W",
       {{"I", "gconv_I"}, {"W", "gconv_W"}, {"O_grad", "gconv_Ograd"}},
       {{"I_grad", "gconv_Igrad"}, {"W_grad", "gconv_Wgrad"}}},
      {"lse", "X", {{"t", "=0.7"}, {"X", "glse_X"}, {"L_grad", "glse_Lgrad"}}, {{"X_grad", "glse_Xgrad"}}},
      {"chain",
       "X",
       {{"X", "gchain_X"},
        {"Y_grad", "gchain_Ygrad"},
        {"Z_grad", "gchain_Zgrad"},
        {"C_grad", "gchain_Cgrad"}},
       {{"X_grad", "gchain_Xgrad"}}},
      {"multi",
       "X",
       {{"X", "gmulti_X"}, {"Y_grad", "gmulti_Ygrad"}, {"Z_grad", "gmulti_Zgrad"}},
       {{"X_grad", "gmulti_Xgrad"}}},
      {"shiftp",
       "X",
       {{"s", "=2"}, {"X", "gshift_X"}, {"Y_grad", "gshift_Ygrad"}},
       {{"X_grad", "gshift_Xgrad"}}},
      {"predred", "X", {{"X", "gpred_X"}, {"S_grad", "gpred_Sgrad"}}, {{"X_grad", "gpred_Xgrad"}}},
      {"scan2", "X", {{"X", "gscan_X"}, {"Y_grad", "gscan_Ygrad"}}, {{"X_grad", "gscan_Xgrad"}}},
      {"ptrel", "X", {{"X", "gptrel_X"}, {"Y_grad", "gptrel_Ygrad"}}, {{"X_grad", "gptrel_Xgrad"}}},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.func);
    CliRun g = run("grad @/grads_r2.tir --func " + std::string(c.func) + " --wrt " + c.wrt);
    ASSERT_EQ(g.code, 0) << g.err;
    for (const char* engine : {"interp", "jit"}) {
#ifndef TIRC_WITH_LLVM
      if (std::string(engine) == "jit") continue;
#endif
      std::string args = "run - --func " + std::string(c.func) + "_grad --engine " + engine;
      for (auto& [n, f] : c.in)
        args += " --input " + n + "=" + (f[0] == '=' ? f.substr(1) : "@/data/r2_" + f + ".npy");
      for (auto& [n, f] : c.out) args += " --output " + n + "=%/" + n + ".npy";
      CliRun r = run(args, g.out);
      ASSERT_EQ(r.code, 0) << r.err;
      for (auto& [n, f] : c.out)
        EXPECT_EQ(
            compare(read_npy(tmp() + n + ".npy"), read_npy(cases() + "data/r2_" + f + ".npy"), 2e-5, 2e-5),
            "")
            << engine << " " << n;
    }
  }
}

// check-grad with given inputs (a .npy file and a scalar) and its JSON object.
TEST(AcceptGradR2, CheckGradInputsAndJson) {
  CliRun r = run("check-grad @/grads_r2.tir --func lse --input t=0.7 --input X=@/data/r2_glse_X.npy --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.front(), '{');
  for (const char* k : {"\"function\": \"lse\"", "\"passed\": 1", "\"failed\": 0", "\"name\": \"X\"",
                        "\"mode\": \"directions\"", "\"passed\": true"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << "\n" << r.out;
  r = run("check-grad @/grads_r2.tir --func tri --full --json --wrt V");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"name\": \"V\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"name\": \"X\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"checks\": 5"), std::string::npos) << r.out;  // --full: one per element of V
}

// The gradient module can be compiled and benchmarked like any other.
TEST(AcceptGradR2, GradBuildsAndBenches) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun g = run("grad @/grads_r2.tir --func conv2d");
  ASSERT_EQ(g.code, 0) << g.err;
  CliRun b = run("build - --func conv2d_grad --emit llvm -o %/g.ll", g.out);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(slurp(tmp() + "g.ll").find("conv2d_grad"), std::string::npos);
  b = run("bench - --func conv2d_grad --repeat 2", g.out);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out.rfind("conv2d_grad: median ", 0), 0u) << b.out;
}

// acceptance round 2, finding G1 (fixed): nested blocks under a loop inside a block body, the way
// TVMScript writes opaque reductions (docs/autodiff.md, normalisation rewrite 5).
TEST(AcceptGradR2, NestedBlocksInBlockBody) {
  CliRun r = run("run @/grads_nested_r2.tir --func nest --input X=1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "S: f32[3] sum=12 first=[4, 4, 4]\n");
  expect_passed(run("check-grad @/grads_nested_r2.tir --func nest"), 1);
  expect_passed(run("check-grad @/grads_nested_r2.tir --func nest2 --full"), 1);
  expect_passed(run("check-grad @/structure.tir --func nested --full"), 1);
}

}  // namespace
}  // namespace tirc::accept

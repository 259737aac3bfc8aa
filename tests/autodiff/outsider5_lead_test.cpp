// Autodiff defects found by the fifth outsider round, fixed in gradient.cpp / expr_ad.cpp /
// normalize.cpp (rewrite 1): each test below failed before its fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::check_rewrite;
using testing::contains;
using testing::parse_one;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Function zoo_op(const std::string& op) {
  std::string path = std::string(TIRC_SOURCE_DIR) + "/examples/ops/" + op + ".tir";
  Module m = parse_module(read_text(path), path);
  Function f = m.find_func(op);
  if (!f) throw Error("no function " + op + " in " + path);
  return f;
}

// `func NAME(params) -> (outputs)`: the interface line of a printed function.
std::string header(const FunctionNode& f) {
  std::string t = print_function(f);
  return t.substr(0, t.find(" {"));
}

// ---- A. Interface names win over internal names ----

// LANGUAGE.md fixes F_grad's names. The second gradient of f_grad recomputes f_grad's
// output A_grad (an internal buffer of f_grad_grad) while its result for input A is named
// A_grad too: the internal buffer took the name first and the result became `A_grad_1`
// (`B_grad_grad` came out right only because nothing internal held it).
TEST(Outsider5Lead, GradOfGradKeepsTheInterfaceNames) {
  struct Case {
    const char* op;
    const char* want;
  };
  for (const Case& c :
       {Case{"tanh",
             "func tanh_grad_grad(X: f32[4, 8] in [-3.0, 3.0], Y_grad: f32[4, 8], X_grad_grad: f32[4, 8]) -> "
             "(X_grad: f32[4, 8], Y_grad_grad: f32[4, 8])"},
        Case{"softmax",
             "func softmax_grad_grad(X: f32[4, 10] in [-3.0, 3.0], Y_grad: f32[4, 10], X_grad_grad: "
             "f32[4, 10]) -> (X_grad: f32[4, 10], Y_grad_grad: f32[4, 10])"},
        Case{"matmul",
             "func matmul_grad_grad(A: f32[4, 8], B: f32[8, 6], C_grad: f32[4, 6], A_grad_grad: f32[4, "
             "8], B_grad_grad: f32[8, 6]) -> (A_grad: f32[4, 8], B_grad: f32[8, 6], C_grad_grad: f32[4, "
             "6])"}}) {
    SCOPED_TRACE(c.op);
    Function g = gradient(*zoo_op(c.op), {});
    Function gg = gradient(*g, {});
    EXPECT_EQ(header(*gg), c.want);
    // The renamed internal buffer still prints and parses back, and the second-order
    // gradient is right.
    Module m;
    m.add_func(gg);
    std::string text = print_module(m);
    Module back = parse_module(text, "gg.tir");
    ASSERT_TRUE(back.find_func(gg->name)) << text;
    EXPECT_EQ(print_function(*back.find_func(gg->name)), print_function(*gg));
    CheckGradOptions o;
    o.full = true;
    CheckGradResult r = check_grad(*g, o);
    EXPECT_EQ(r.failed, 0);
    EXPECT_GT(r.passed, 0);
    EXPECT_EQ(header(*r.grad), c.want);
  }
}

// An output of F named like a result of F_grad: the result keeps `X_grad`, the recomputed
// output is renamed (it came out as `-> (X_grad_1: ...)`).
TEST(Outsider5Lead, OutputNamedLikeAResultIsRenamed) {
  const char* src = R"(func f(X: f32[4]) -> (X_grad: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      X_grad[vi] = X[vi] * X[vi]
    }
  }
})";
  Function f = parse_one(src, "f");
  CheckGradOptions o;
  o.full = true;
  CheckGradResult r = check_grad(*f, o);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(header(*r.grad), "func f_grad(X: f32[4], X_grad_grad: f32[4]) -> (X_grad: f32[4])");
  // F itself is unchanged (F_grad renames a copy of the buffer, not F's node).
  EXPECT_EQ(f->outputs[0]->name, "X_grad");
}

// Two interface names that coincide cannot both be kept: refused naming both, never a
// silent `_1`. With --wrt X_grad only, there is no clash.
TEST(Outsider5Lead, CoincidingInterfaceNamesAreRefused) {
  const char* src = R"(func f(X: f32[4], X_grad: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      Y[vi] = X[vi] * X_grad[vi]
    }
  }
})";
  Function f = parse_one(src, "f");
  std::string msg;
  try {
    gradient(*f, {});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_EQ(
      msg,
      "gradient of f: the gradient of input X is named X_grad, which is also the name of input X_grad of f "
      "(LANGUAGE.md fixes both names): rename one of them");
  Function g = gradient(*f, {"X_grad"});
  EXPECT_EQ(header(*g), "func f_grad(X: f32[4], X_grad: f32[4], Y_grad: f32[4]) -> (X_grad_grad: f32[4])");

  const char* src2 = R"(func h(X: f32[4], Y_grad: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      Y[vi] = X[vi] * Y_grad[vi]
    }
  }
})";
  msg.clear();
  try {
    gradient(*parse_one(src2, "h"), {"X"});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_EQ(
      msg,
      "gradient of h: the cotangent of output Y is named Y_grad, which is also the name of input Y_grad of h "
      "(LANGUAGE.md fixes both names): rename one of them");
}

// ---- B. Float constants of F_grad are rounded to their dtype ----

// `tirc grad` output is a print fixpoint only when every constant holds its dtype's
// value: erf's 2/sqrt(pi) and log10's log(10) were f32 immediates holding the double
// (printed 1.1283791670955126, parsed back as 1.1283792).
TEST(Outsider5Lead, GradOfEveryZooOpIsAPrintFixpoint) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(std::string(TIRC_SOURCE_DIR) + "/examples/ops")) {
    if (e.path().extension() != ".tir") continue;
    std::string op = e.path().stem().string();
    SCOPED_TRACE(op);
    Module m = parse_module(read_text(e.path().string()), e.path().string());
    Function f = m.find_func(op);
    ASSERT_TRUE(f);
    Function g = gradient(*f, {});
    Module gm;
    gm.add_func(g);
    std::string text = print_module(gm);
    EXPECT_EQ(print_module(parse_module(text, op + "_grad.tir")), text);
    ++n;
  }
  EXPECT_GT(n, 100);
}

TEST(Outsider5Lead, ConstantsRoundedInEveryFloatDtype) {
  for (const char* t : {"f32", "f16", "bf16", "f64"}) {
    SCOPED_TRACE(t);
    std::string src =
        std::string("func f(X: ") + t + "[8] in [0.1, 2.0]) -> (Y: " + t +
        "[8]) {\n  for i in serial(8) {\n    block b(vi: spatial(8) = i) {\n      Y[vi] = erf(X[vi]) + "
        "log10(X[vi] + 2.0) + log2(X[vi]) * 0.3\n    }\n  }\n}\n";
    Function g = gradient(*parse_one(src, "f"), {});
    Module gm;
    gm.add_func(g);
    std::string text = print_module(gm);
    EXPECT_EQ(print_module(parse_module(text, "g.tir")), text);
    if (std::string(t) == "f32") {
      EXPECT_TRUE(contains(text, "1.1283792 *")) << text;
      EXPECT_TRUE(contains(text, "2.3025851)")) << text;
    }
    if (std::string(t) == "f64") {
      EXPECT_TRUE(contains(text, "1.1283791670955126")) << text;
    }
    if (std::string(t) == "f32" || std::string(t) == "f64") {
      CheckGradOptions o;
      o.full = true;
      CheckGradResult r = check_grad(*parse_one(src, "f"), o);
      EXPECT_EQ(r.failed, 0);
      EXPECT_EQ(r.passed, 1);
    }
  }
}

// ---- C. if / else-if chains in a block body ----

// The outsider's reduction: the else arm holds a further guard and no final else (the
// element is left alone when neither holds). It was refused ("if/else in a block body is
// not supported"); normalisation rewrite 1 now merges it under one guard.
TEST(Outsider5Lead, ReductionWithElseIfChain) {
  const char* src = R"(func f(A: f32[4, 4]) -> (B: f32[4]) {
  for i, j in grid(4, 4) {
    block b(vi: spatial(4) = i, vj: reduce(4) = j) {
      init { B[vi] = 0.0 }
      if vj == 0 { B[vi] = B[vi] + A[vj, vi] } else if vj % 2 == 1 { B[vi] = B[vi] + 1.0 }
    }
  }
})";
  std::string text = check_rewrite(src, "f");
  // Second order too (F_grad of the merged block differentiates again).
  CheckGradOptions o;
  o.full = true;
  CheckGradResult r = check_grad(*parse_one(src, "f"), o);
  ASSERT_TRUE(r.grad);
  CheckGradResult r2 = check_grad(*r.grad, o);
  EXPECT_EQ(r2.failed, 0);
  EXPECT_EQ(r2.passed, 2);
  EXPECT_TRUE(contains(text, "if vj == 0 || vj % 2 == 1 {")) << text;
  EXPECT_TRUE(contains(text, "B[vi] = B[vi] + if_then_else(vj == 0, A[vj, vi], 1.0)")) << text;
}

// Longer chains, guards inside the then arm, lets between guards, guards that load
// (if_then_else keeps them evaluated only where the original evaluated them), `-=` next
// to `+=`, max and product reductions.
TEST(Outsider5Lead, ReductionChainsOfEveryOperator) {
  const char* src = R"(func red(A: f32[4, 6], W: f32[6]) -> (B: f32[4]) {
  for i, j in grid(4, 6) {
    block b(vi: spatial(4) = i, vj: reduce(6) = j) {
      init { B[vi] = 0.0 }
      let w = W[vj] * 2.0
      if vj < 2 {
        if A[vi, vj] > 0.0 { B[vi] = B[vi] + A[vi, vj] * w }
      } else if A[vi, vj] < 0.5 {
        let t = A[vi, vj] * A[vi, vj]
        B[vi] = B[vi] - t * w
      } else if vj == 5 { B[vi] += 1.0 }
    }
  }
})";
  std::string text = check_rewrite(src, "red");
  {
    CheckGradOptions o;
    o.full = true;
    CheckGradResult r = check_grad(*parse_one(src, "red"), o);
    ASSERT_TRUE(r.grad);
    CheckGradResult r2 = check_grad(*r.grad, o);
    EXPECT_EQ(r2.failed, 0);
    EXPECT_EQ(r2.passed, 3);
  }
  EXPECT_FALSE(contains(text, "} else")) << text;
  // The arms' guards load A: each is evaluated only where the original evaluated it.
  EXPECT_TRUE(contains(text, "if if_then_else(vj < 2, A[vi, vj] > 0.0, A[vi, vj] < 0.5 || vj == 5) {"))
      << text;
  const char* src_max = R"(func mx(A: f32[4, 6], W: f32[6]) -> (M: f32[4]) {
  for i, j in grid(4, 6) {
    block m(vi: spatial(4) = i, vj: reduce(6) = j) {
      init { M[vi] = -10.0 }
      if vj % 2 == 0 { M[vi] = max(M[vi], A[vi, vj] * W[vj]) } else if A[vi, vj] > 0.0 { M[vi] = max(M[vi], sin(A[vi, vj])) }
    }
  }
})";
  check_rewrite(src_max, "mx");
  const char* src_prod = R"(func pr(A: f32[4, 6], W: f32[6]) -> (P: f32[4]) {
  for i, j in grid(4, 6) {
    block p(vi: spatial(4) = i, vj: reduce(6) = j) {
      init { P[vi] = 1.0 }
      if vj == 0 { P[vi] = P[vi] * A[vi, vj] } else if vj == 3 { P[vi] *= W[vj] + A[vi, vj] } else { P[vi] *= 1.5 }
    }
  }
})";
  check_rewrite(src_prod, "pr");
}

// Spatial blocks: an in-place else-if without a final else (the element keeps its earlier
// value), and arms storing different buffers.
TEST(Outsider5Lead, SpatialElseIfChains) {
  const char* src = R"(func sp(X: f32[8], Z: f32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block a(vi: spatial(8) = i) { B[vi] = Z[vi] * 2.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if X[vi] > 0.3 { B[vi] = X[vi] * X[vi] } else if X[vi] < -0.3 { B[vi] = sin(X[vi]) + B[vi] }
    }
  }
})";
  std::string text = check_rewrite(src, "sp");
  EXPECT_TRUE(contains(text, "if if_then_else(X[vi] > 0.3, true, X[vi] < -0.3) {")) << text;
  const char* src2 = R"(func two(X: f32[8]) -> (B: f32[8], C: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if X[vi] > 0.0 {
        B[vi] = X[vi] * 3.0
        C[vi] = 1.0
      } else {
        C[vi] = exp(X[vi])
        B[vi] = X[vi]
      }
    }
  }
})";
  check_rewrite(src2, "two");
}

// ---- D. max / min reduction with an `if` testing a let ----

// The arg-extremum adjoint (emit_argext) evaluates the block's lets at the recorded arg
// point, where every guard of the forward held when it was recorded: T (written only where
// M > 0) is read there only. Checked to first and second order, an if testing a let and
// an if_then_else arm reading T.
TEST(Outsider5Lead, MaxReductionWithAnIfTestingALet) {
  const char* src = R"(func mr(M: f32[4, 6], X: f32[4, 6]) -> (Y: f32[4], Z: f32[4]) {
  alloc T: f32[4, 6]
  for i, j in grid(4, 6) {
    block t(vi: spatial(4) = i, vj: spatial(6) = j) {
      if M[vi, vj] > 0.0 { T[vi, vj] = X[vi, vj] * 3.0 }
    }
  }
  for i, j in grid(4, 6) {
    block b(vi: spatial(4) = i, vj: reduce(6) = j) {
      init { Y[vi] = -100.0 }
      let m = M[vi, vj] * 2.0
      if m > 0.0 {
        let t = T[vi, vj] * 3.0
        Y[vi] = max(Y[vi], t * X[vi, vj])
      }
    }
  }
  for i, j in grid(4, 6) {
    block c(vi: spatial(4) = i, vj: reduce(6) = j) {
      init { Z[vi] = 100.0 }
      let m = M[vi, vj] * 2.0
      Z[vi] = min(Z[vi], if_then_else(m > 0.0, sin(T[vi, vj]) * X[vi, vj], X[vi, vj] * 0.5))
    }
  }
})";
  Function f = parse_one(src, "mr");
  CheckGradOptions o;
  o.full = true;
  for (uint64_t seed : {1, 2}) {
    o.seed = seed;
    CheckGradResult r = check_grad(*f, o);
    EXPECT_EQ(r.failed, 0);
    EXPECT_EQ(r.passed, 2);
    CheckGradResult r2 = check_grad(*r.grad, o);
    EXPECT_EQ(r2.failed, 0);
    EXPECT_GT(r2.passed, 0);
  }
}

}  // namespace
}  // namespace tirc

// Codegen round 19 follow-ups (acceptance round 19s, F4 and F5; bench/README.md "Codegen r19").
// F4: a block's init under loops that feed no reduce var was tested (`if (vk == 0)`) in every
// iteration of those loops; LLVM made it a masked store followed by a load of the same
// element, 2-5x the decompose_reduction form. Lowering now unswitches the test out of those
// loops and peels the reduce loop's first iteration (unswitch_init_tests). F5: a `vectorized`
// loop of 48 lanes was one <48 x float> that LLVM scalarised (3.4x the serial loop); it now
// runs as chunks of one vector register. Every case is checked bit for bit against the
// interpreter, and the shape of the code against the switches that turn each change off.
#include <gtest/gtest.h>

#include <cstdlib>

#include "codegen/codegen.h"
#include "ir/printer.h"
#include "tests/codegen/compare.h"
#include "transforms/lower/lower.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

std::string llvm_ir(const Function& f) {
  CodegenOptions o;
  o.opt_level = 0;
  return compile_to({f}, EmitKind::LLVM, o);
}

Function scheduled(const std::string& text) {
  Module m = apply_module_schedules(parse_module(text, "test.tir"));
  return m.find_func("f");
}

// The acceptance round's W_grad-like block (vec48.tir family): W[a, c] over G[k, c] * A[k, a],
// the init under the column loop c (no reduce var), or (!init) a zero-fill block before it.
// SCHED: schedule lines.
std::string wgrad(int width, const std::string& sched, bool init = true) {
  std::string w = std::to_string(width);
  std::string s =
      "func f(A: f32[64, 32], G: f32[64, " + w + "]) -> (W: f32[32, " + w + "]) {\n" +
      (init ? ""
            : "  for a, c in grid(32, " + w + ") {\n    block Z(va: spatial(32) = a, vc: spatial(" + w +
                  ") = c) { W[va, vc] = 0.0 }\n  }\n") +
      "  for a, k, c in grid(32, 64, " + w + ") {\n    block W(va: spatial(32) = a, vc: spatial(" + w +
      ") = c, vk: reduce(64) = k) {\n" + (init ? "      init { W[va, vc] = 0.0 }\n" : "") +
      "      W[va, vc] += G[vk, vc] * A[vk, va]\n    }\n  }\n}\n";
  if (!sched.empty()) s += "schedule f {\n" + sched + "\n}\n";
  return s;
}

}  // namespace

// F4: the lowered nest runs the init in a peeled first iteration of k (k from 1 afterwards, no
// test of k left) for the unscheduled and the vectorized block; TIRC_LOWER_NO_INIT_UNSWITCH=1
// keeps the test. Bit-identical to the interpreter both ways.
TEST(InitUnswitch, InitLeavesTheColumnLoop) {
  for (const char* sched : {"", "  l = get_loops(get_block(\"W\"))\n  vectorize(l[2])"}) {
    SCOPED_TRACE(sched);
    Function f = scheduled(wgrad(16, sched));
    ASSERT_TRUE(f);
    std::string low = print_function(*lower_function(*f));
    EXPECT_EQ(low.find("== 0"), std::string::npos) << low;
    EXPECT_NE(low.find("serial(1, 64)"), std::string::npos) << low;
    for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
    setenv("TIRC_LOWER_NO_INIT_UNSWITCH", "1", 1);
    std::string off = print_function(*lower_function(*f));
    expect_jit_matches_interp(*f, 3, 0, 0);
    unsetenv("TIRC_LOWER_NO_INIT_UNSWITCH");
    EXPECT_NE(off.find("== 0"), std::string::npos) << off;
  }
}

// Cases the unswitching must keep exact: a `where` on the output elements and one on the
// reduction, a split reduce loop (test `ko * 4 + ki == 0`: unswitched, not peeled), two reduce
// vars, an init reading what an earlier block wrote, a symbolic reduce extent (also 0: the
// peeled iteration must not run), the reduce loop innermost, and a blockized tile (nested
// blocks: left alone).
TEST(InitUnswitch, BitIdenticalVariants) {
  const char* texts[] = {
      R"(
func f(A: f32[16, 8], G: f32[16, 12]) -> (W: f32[8, 12]) {
  for a, k, c in grid(8, 16, 12) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, vk: reduce(16) = k) {
      where c < 10 && k < 15
      init { W[va, vc] = 1.5 }
      W[va, vc] += G[vk, vc] * A[vk, va]
    }
  }
}
)",
      R"(
func f(A: f32[16, 8], G: f32[16, 12]) -> (W: f32[8, 12]) {
  for a, k, c in grid(8, 16, 12) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, vk: reduce(16) = k) {
      init { W[va, vc] = 0.0 }
      W[va, vc] += G[vk, vc] * A[vk, va]
    }
  }
}
schedule f {
  b = get_block("W")
  a, k, c = get_loops(b)
  ko, ki = split(k, [None, 4])
  vectorize(c)
}
)",
      R"(
func f(A: f32[4, 6, 8], G: f32[4, 6, 12]) -> (W: f32[8, 12]) {
  for a, k1, k2, c in grid(8, 4, 6, 12) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, r1: reduce(4) = k1, r2: reduce(6) = k2) {
      init { W[va, vc] = 0.25 }
      W[va, vc] += G[r1, r2, vc] * A[r1, r2, va]
    }
  }
}
)",
      R"(
func f(A: f32[16, 8], G: f32[16, 12], X: f32[12]) -> (W: f32[8, 12], Y: f32[12]) {
  for c in serial(12) {
    block Y(vc: spatial(12) = c) { Y[vc] = X[vc] * 2.0 }
  }
  for a, k, c in grid(8, 16, 12) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, vk: reduce(16) = k) {
      init { W[va, vc] = Y[vc] + Y[11 - vc] }
      W[va, vc] += G[vk, vc] * A[vk, va]
    }
  }
}
)",
      R"(
func f(A: f32[8, 16], G: f32[12, 16]) -> (W: f32[8, 12]) {
  for a, c, k in grid(8, 12, 16) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, vk: reduce(16) = k) {
      init { W[va, vc] = 0.0 }
      W[va, vc] += G[vc, vk] * A[va, vk]
    }
  }
}
)",
      R"(
func f(A: f32[16, 16], B: f32[16, 16]) -> (C: f32[16, 16]) {
  for i, j, k in grid(16, 16, 16) {
    block C(vi: spatial(16) = i, vj: spatial(16) = j, vk: reduce(16) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += A[vi, vk] * B[vk, vj]
    }
  }
}
schedule f {
  c = get_block("C")
  i, j, k = get_loops(c)
  io, ii = split(i, [None, 4])
  jo, ji = split(j, [None, 4])
  reorder(io, jo, k, ii, ji)
  outer = blockize(ii)
}
)",
  };
  for (const char* t : texts) {
    SCOPED_TRACE(t);
    Function f = scheduled(t);
    ASSERT_TRUE(f);
    for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
  }
  std::string sym = R"(
func f(n: i32, A: f32[n, 8], G: f32[n, 12]) -> (W: f32[8, 12]) {
  for a, k, c in grid(8, n, 12) {
    block W(va: spatial(8) = a, vc: spatial(12) = c, vk: reduce(n) = k) {
      init { W[va, vc] = 3.0 }
      W[va, vc] += G[vk, vc] * A[vk, va]
    }
  }
}
)";
  Function f = scheduled(sym);
  ASSERT_TRUE(f);
  for (int n : {0, 1, 5}) expect_jit_matches_interp(*f, 7, 0, 0, {{"n", scalar(DType::I32, n)}});
}

// F5: a vectorized loop of 48 f32 lanes is three 16-lane chunks (not one <48 x float>) when
// the target's vector registers hold 16 floats or fewer; TIRC_CODEGEN_NO_VEC_CHUNKS=1 gives
// the single vector back. Widths that are not powers of two (48, 24, 10, 7, 3) and other
// dtypes, with an `if`, bit-identical to the interpreter.
TEST(VectorChunks, NonPowerOfTwoWidthsRunAsRegisterChunks) {
  Function f = scheduled(wgrad(48, "  l = get_loops(get_block(\"W\"))\n  vectorize(l[2])", false));
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f);
  EXPECT_EQ(ir.find("<48 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("x float>"), std::string::npos) << ir;
  for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
  setenv("TIRC_CODEGEN_NO_VEC_CHUNKS", "1", 1);
  std::string off = llvm_ir(f);
  unsetenv("TIRC_CODEGEN_NO_VEC_CHUNKS");
  EXPECT_NE(off.find("<48 x float>"), std::string::npos);
  for (int w : {24, 10, 7, 3})
    for (const char* dt : {"f32", "f64", "i8", "i16"}) {
      std::string W = std::to_string(w);
      std::string text = std::string("func f(A: ") + dt + "[5, " + W + "], B: " + dt + "[" + W +
                         "]) -> (C: " + dt + "[5, " + W + "]) {\n  for i, j in grid(5, " + W +
                         ") {\n    block C(vi: spatial(5) = i, vj: spatial(" + W +
                         ") = j) {\n      if vj % 3 != 1 { C[vi, vj] = A[vi, vj] * B[vj] + A[vi, " + W +
                         " - 1 - vj] } else { C[vi, vj] = B[vj] }\n    }\n  }\n}\nschedule f {\n  l = "
                         "get_loops(get_block(\"C\"))\n  vectorize(l[1])\n}\n";
      SCOPED_TRACE(text);
      Function g = scheduled(text);
      ASSERT_TRUE(g);
      expect_jit_matches_interp(*g, 1, 0, 0);
    }
}

}  // namespace tirc

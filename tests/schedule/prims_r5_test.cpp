// Primitives added in schedule round 5 (docs/schedule.md): transform_layout,
// transform_block_layout, add_unit_loop, decompose_padding, loop_partition, reindex, merge,
// set_axis_separator, and vectorize + parallel of an atomic scatter-add. Exact refusal
// messages, the lambda / tuple arguments' print-parse round trip, differential checks in the
// interpreter (before / after on random inputs) and, with LLVM, `tirc verify` (interpreter and
// JIT) with several threads. TVM-style scripts: tests/schedule/tvm_style/outsider5_*.tir.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

// B writes two buffers (B and the i32 K); C reads both.
const char* kEW = R"(func ew(A: f32[10, 6], I: i32[10, 6]) -> (C: f32[10, 6]) {
  alloc B: f32[10, 6]
  alloc K: i32[10, 6]
  for i, j in grid(10, 6) {
    block B(vi: spatial(10) = i, vj: spatial(6) = j) {
      B[vi, vj] = A[vi, vj] * 2.0
      K[vi, vj] = I[vi, vj] + 1
    }
  }
  for i, j in grid(10, 6) {
    block C(vi: spatial(10) = i, vj: spatial(6) = j) {
      C[vi, vj] = B[vi, vj] + f32(K[vi, vj])
    }
  }
})";

const char* kPad = R"(func pad(X: f32[2, 8, 8]) -> (Y: f32[2, 10, 10]) {
  alloc P: f32[2, 10, 10]
  for c, h, w in grid(2, 10, 10) {
    block P(vc: spatial(2) = c, vh: spatial(10) = h, vw: spatial(10) = w) {
      P[vc, vh, vw] = if_then_else(vh >= 1 && vh < 9 && vw >= 1 && vw < 9, X[vc, vh - 1, vw - 1], -1.5)
    }
  }
  for c, h, w in grid(2, 10, 10) {
    block Y(vc: spatial(2) = c, vh: spatial(10) = h, vw: spatial(10) = w) {
      Y[vc, vh, vw] = P[vc, vh, vw] * 3.0
    }
  }
})";

const char* kSym = R"(func sym(n: i32 in [1, 5], A: f32[n, 4]) -> (B: f32[n, 4]) {
  alloc T: f32[n, 4]
  for i, j in grid(n, 4) {
    block T(vi: spatial(n) = i, vj: spatial(4) = j) {
      T[vi, vj] = A[vi, vj] + 1.0
    }
  }
  for i, j in grid(n, 4) {
    block B(vi: spatial(n) = i, vj: spatial(4) = j) {
      B[vi, vj] = T[vi, vj] * 2.0
    }
  }
})";

std::string func_name(const std::string& text) { return text.substr(5, text.find('(') - 5); }

std::string with_schedule(const std::string& func_text, const std::string& lines) {
  return func_text + "\n\nschedule " + func_name(func_text) + " {\n" + lines + "}\n";
}

// Applies the lines; expects the last one refused at its line; returns the message.
std::string refusal(const std::string& func_text, const std::string& lines) {
  std::string name = func_name(func_text);
  int func_lines = 1;
  for (char c : func_text) func_lines += c == '\n';
  int n_instr = 0;
  for (char c : lines) n_instr += c == '\n';
  Module m = parse_module(with_schedule(func_text, lines), "t.tir");
  try {
    apply_schedule(*m.find_func(name), m.schedules.at(0));
  } catch (const SourceError& e) {
    EXPECT_EQ(e.line(), func_lines + 2 + n_instr) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "not refused:\n" << lines;
  return "";
}

// Applies the lines, checks the result against the unscheduled function in the interpreter
// (two seeds) and the print / parse round trip; returns the scheduled function's text.
std::string applied(const std::string& func_text, const std::string& lines) {
  std::string name = func_name(func_text);
  Module m = parse_module(with_schedule(func_text, lines), "t.tir");
  Function f = m.find_func(name);
  Function g = apply_schedule(*f, m.schedules.at(0));
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*f, *g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail << "\n" << print_function(*g);
  }
  std::string text = print_function(*g);
  Module again = parse_module(text, "again.tir");
  auto d = structural_diff(*g, *again.funcs.at(0));
  EXPECT_FALSE(d.has_value()) << *d << "\n" << text;
  return text;
}

const std::string kGet = "  b = get_block(\"B\")\n  c = get_block(\"C\")\n";

TEST(PrimsR5, TransformLayoutRefusals) {
  auto tl = [&](const std::string& args) {
    return refusal(kEW, kGet + "  transform_layout(" + args + ")\n");
  };
  EXPECT_EQ(
      tl("b, (\"write\", 0), lambda i, j: (i, j % 2)"),
      "transform_layout: the index map is not one-to-one on B[10, 6]: element B[0, 2] lands where another "
      "element does");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i, j: (i - 1, j)"),
            "transform_layout: result 0 of the index map (i - 1) is negative at some element of B");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i: (i,)"),
            "transform_layout: the index map takes 1 index but buffer B has 2 dimensions");
  EXPECT_EQ(tl("b, (\"write\", 0), 3"),
            "transform_layout: the index map must be a lambda, e.g. lambda i, j: (j // 4, i, j % 4)");
  EXPECT_EQ(tl("b, (\"foo\", 0), lambda i, j: (j, i)"),
            "transform_layout: unknown buffer kind \"foo\" (expected \"read\" or \"write\")");
  EXPECT_EQ(tl("b, (\"write\", 2), lambda i, j: (j, i)"),
            "transform_layout: block B has 2 write regions; index 2 is out of range");
  EXPECT_EQ(
      tl("c, (\"read\", 2), lambda i, j: (j, i)"),
      "transform_layout: block C has 2 read regions of buffers it does not write; index 2 is out of range");
  EXPECT_EQ(tl("b, \"Q\", lambda i, j: (j, i)"),
            "transform_layout: block B does not access a buffer named Q");
  EXPECT_EQ(
      tl("b, 0, lambda i, j: (j, i)"),
      "transform_layout: the buffer is given as (\"read\", INDEX), (\"write\", INDEX) or a buffer name");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i, j: (i // j, j)"),
            "transform_layout: the index map divides by j (only positive constant divisors)");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i, j: (select(i < 3, i, j), j)"),
            "transform_layout: the index map uses select(i < 3, i, j) (supported: + - * // % min max of the "
            "indices and constants)");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i, j: (i, j // 4, j % 4)"),
            "transform_layout: the index map pads B from [10, 6] (60 elements) to [10, 2, 4] (80): give "
            "pad_value (TVM refuses padding without it)");
  EXPECT_EQ(tl("b, (\"write\", 1), lambda i, j: (i, j // 4, j % 4), pad_value=0.5"),
            "transform_layout: pad_value 0.5 is a float but buffer K holds i32");
  EXPECT_EQ(tl("b, (\"write\", 1), lambda i, j: (i, j // 4, j % 4), pad_value=\"x\""),
            "transform_layout: pad_value must be a number");
  EXPECT_EQ(
      tl("c, (\"write\", 0), lambda i, j: (j, i)"),
      "transform_layout: buffer C is a parameter of function ew (TVM would change the function's "
      "signature; transform a cache instead: cache_read / cache_write, then transform_layout of the cache)");
  EXPECT_EQ(tl("b, (\"write\", 0), lambda i, j: (j, i), foo=1"),
            "transform_layout: unknown keyword argument 'foo'");
  EXPECT_EQ(
      refusal(
          kSym,
          "  t = get_block(\"T\")\n  transform_layout(t, (\"write\", 0), lambda i, j: (i // 2, j, i % 2))\n"),
      "transform_layout: buffer T has a symbolic shape: only a permutation of its dimensions can be "
      "checked one-to-one");
}

TEST(PrimsR5, LambdaParseErrors) {
  auto err = [](const std::string& line) {
    try {
      parse_module(with_schedule(kEW, kGet + line), "t.tir");
    } catch (const SourceError& e) {
      return e.message();
    }
    return std::string("parsed");
  };
  EXPECT_EQ(err("  transform_layout(b, (\"write\", 0), lambda i, i: (i, i))\n"),
            "duplicate lambda parameter 'i'");
  EXPECT_EQ(err("  transform_layout(b, (\"write\", 0), lambdo i, j: (j, i))\n"),
            "expected a schedule argument, got 'lambdo i' (an index map is written lambda i, j: (...))");
  EXPECT_EQ(err("  transform_layout(b, (\"write\", 0), lambda i, j: (i / 2, j))\n"),
            "'/' is float division and is not defined on i32; use // for integer division");
  EXPECT_EQ(err("  transform_layout(b, (\"write\", 0), lambda i, j: (B[i, j], j))\n"),
            "undeclared buffer 'B'");
}

// `("read", 0)`, `(x,)` and `lambda` print as written and parse back to the same module.
TEST(PrimsR5, LambdaAndTupleRoundTrip) {
  std::string src = with_schedule(
      kEW,
      kGet +
          "  transform_layout(block=c, buffer=(\"read\", 0), index_map=lambda i, j: (j // 2, i, j % 2))\n"
          "  transform_block_layout(b, lambda x, y: [y, x])\n"
          "  transform_layout(c, \"K\", lambda p, q: p * 6 + q, pad_value=None)\n"
          "  set_axis_separator(c, (\"read\", 0), (1,))\n");
  Module m = parse_module(src, "t.tir");
  std::string printed = print_module(m);
  EXPECT_NE(printed.find("transform_layout(block=c, buffer=(\"read\", 0), index_map=lambda i, j: (j // 2, i, "
                         "j % 2))"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("transform_block_layout(b, lambda x, y: (y, x))"), std::string::npos) << printed;
  EXPECT_NE(printed.find("lambda p, q: (p * 6 + q), pad_value=None"), std::string::npos) << printed;
  EXPECT_NE(printed.find("set_axis_separator(c, (\"read\", 0), (1,))"), std::string::npos) << printed;
  Module again = parse_module(printed, "again.tir");
  EXPECT_EQ(print_module(again), printed);
  EXPECT_TRUE(structural_equal(m, again));
  // Different maps differ.
  Module other = parse_module(
      with_schedule(
          kEW, kGet + "  transform_layout(block=c, buffer=(\"read\", 0), index_map=lambda i, j: (j // 2, i, "
                      "j % 3))\n  transform_block_layout(b, lambda x, y: [y, x])\n  transform_layout(c, "
                      "\"K\", lambda p, q: p * 6 + q, pad_value=None)\n  set_axis_separator(c, (\"read\", "
                      "0), (1,))\n"),
      "o.tir");
  EXPECT_FALSE(structural_equal(m, other));
  // And the schedule applies (compared in the interpreter).
  applied(kEW,
          kGet +
              "  transform_layout(block=c, buffer=(\"read\", 0), index_map=lambda i, j: (j // 2, i, j % 2))\n"
              "  transform_block_layout(b, lambda x, y: [y, x])\n"
              "  transform_layout(c, \"K\", lambda p, q: p * 6 + q, pad_value=None)\n"
              "  set_axis_separator(c, (\"read\", 0), [1])\n");
}

TEST(PrimsR5, TransformLayoutRewritesAccessesAndShape) {
  std::string t =
      applied(kEW, kGet + "  transform_layout(c, (\"read\", 0), lambda i, j: (j // 2, i, j % 2))\n");
  EXPECT_NE(t.find("alloc B: f32[3, 10, 2]"), std::string::npos) << t;
  EXPECT_NE(t.find("B[vj // 2, vi, vj % 2] = A[vi, vj] * 2.0"), std::string::npos) << t;
  EXPECT_NE(t.find("C[vi, vj] = B[vj // 2, vi, vj % 2] + f32(K[vi, vj])"), std::string::npos) << t;
  // Symbolic shapes: permutations.
  std::string s =
      applied(kSym, "  t = get_block(\"T\")\n  transform_layout(t, (\"write\", 0), lambda i, j: (j, i))\n");
  EXPECT_NE(s.find("alloc T: f32[4, n]"), std::string::npos) << s;
}

// TVM <= 0.9 spelled the buffer as buffer_index + buffer_index_type.
TEST(PrimsR5, TransformLayoutLegacyBufferIndex) {
  std::string want = applied(kEW, kGet + "  transform_layout(c, (\"read\", 0), lambda i, j: (j, i))\n");
  EXPECT_EQ(applied(kEW, kGet + "  transform_layout(block=c, buffer_index=0, buffer_index_type=\"read\", "
                                "index_map=lambda i, j: (j, i))\n"),
            want);
  EXPECT_EQ(applied(kEW, kGet + "  transform_layout(c, 0, \"read\", lambda i, j: (j, i))\n"), want);
}

// Padding: folded into the only writer when it is a plain copy (loops grow, the value is
// guarded); with a writer of two buffers, a fill block `<buf>_pad` before it.
TEST(PrimsR5, TransformLayoutPadding) {
  std::string t = applied(kEW, kGet +
                                   "  transform_layout(b, (\"write\", 1), lambda i, j: (i, j // 4, j % 4), "
                                   "pad_value=7)\n");
  EXPECT_NE(t.find("alloc K: i32[10, 2, 4]"), std::string::npos) << t;
  EXPECT_NE(t.find("block K_pad("), std::string::npos) << t;
  EXPECT_NE(t.find("K[v0, v1, v2] = 7"), std::string::npos) << t;
  const char* copy = R"(func cp(A: f32[10]) -> (B: f32[10]) {
  alloc T: f32[10]
  for i in serial(10) {
    block T(vi: spatial(10) = i) {
      T[vi] = A[vi]
    }
  }
  for i in serial(10) {
    block B(vi: spatial(10) = i) {
      B[vi] = T[vi] + 1.0
    }
  }
})";
  std::string f = applied(copy,
                          "  t = get_block(\"T\")\n  transform_layout(t, (\"write\", 0), lambda i: (i // 4, "
                          "i % 4), pad_value=-2.0)\n");
  EXPECT_NE(f.find("for i in serial(12)"), std::string::npos) << f;
  EXPECT_NE(f.find("T[vi // 4, vi % 4] = if_then_else(vi < 10, A[vi], -2.0)"), std::string::npos) << f;
}

TEST(PrimsR5, TransformBlockLayout) {
  auto tbl = [&](const std::string& map) {
    return refusal(kEW, kGet + "  transform_block_layout(b, " + map + ")\n");
  };
  EXPECT_EQ(
      tbl("lambda i, j: (i, j + 1)"),
      "transform_block_layout: the index map is not onto a box: block B has 60 iterations, the new domain 70 "
      "(a block cannot pad)");
  EXPECT_EQ(
      tbl("lambda i, j: ((i * 7) % 10, j)"),
      "transform_block_layout: the index map is not recognised as an affine map (splits and fusions of the "
      "iter vars), whose inverse gives the old iter vars");
  EXPECT_EQ(tbl("lambda i: (i,)"),
            "transform_block_layout: the index map takes 1 index but block B has 2 iter vars");
  EXPECT_EQ(
      refusal(kEW, kGet +
                       "  i, j = get_loops(b)\n  jo, ji = split(j, [None, 4])\n  transform_block_layout(b, "
                       "lambda i, j: (j, i))\n"),
      "transform_block_layout: block B has a predicate (where jo * 4 + ji < 6)");
  EXPECT_EQ(
      refusal(kEW, kGet + "  i, j = get_loops(b)\n  jo, ji = split(j, [2, 3])\n  transform_block_layout(b, "
                          "lambda i, j: (j, i))\n"),
      "transform_block_layout: block B has 2 iter vars under 3 loops (each iter var must be bound to its own "
      "loop)");
  const char* mm = R"(func mm(A: f32[4, 6], B: f32[6, 8]) -> (C: f32[4, 8]) {
  for i, j, k in grid(4, 8, 6) {
    block C(vi: spatial(4) = i, vj: spatial(8) = j, vk: reduce(6) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";
  EXPECT_EQ(
      refusal(mm, "  b = get_block(\"C\")\n  transform_block_layout(b, lambda i, j, k: (i, j * 6 + k))\n"),
      "transform_block_layout: result 1 of the index map (j * 6 + k) mixes spatial and reduce iter vars");
  std::string t =
      applied(mm,
              "  b = get_block(\"C\")\n  transform_block_layout(b, lambda i, j, k: (j // 4, k, i, j % "
              "4))\n");
  EXPECT_NE(
      t.find(
          "block C(v0: spatial(2) = ax0, v1: reduce(6) = ax1, v2: spatial(4) = ax2, v3: spatial(4) = ax3)"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("C[v2, v0 * 4 + v3] = C[v2, v0 * 4 + v3] + A[v2, v1] * B[v1, v0 * 4 + v3]"),
            std::string::npos)
      << t;
}

TEST(PrimsR5, AddUnitLoop) {
  std::string t = applied(kEW, kGet +
                                   "  u = add_unit_loop(b)\n  i, j = get_loops(c)\n  w = add_unit_loop(j)\n  "
                                   "parallel(w)\n");
  EXPECT_NE(t.find("for u in serial(1) {\n        block B("), std::string::npos) << t;
  EXPECT_NE(t.find("for w in parallel(1) {\n      for j in serial(6)"), std::string::npos) << t;
  EXPECT_EQ(refusal(kEW, "  r = get_block(\"root\")\n  add_unit_loop(r)\n"),
            "add_unit_loop: the root block cannot be scheduled");
}

TEST(PrimsR5, DecomposePadding) {
  std::string t =
      applied(kPad,
              "  p = get_block(\"P\")\n  c, h, w = get_loops(p)\n  k = decompose_padding(p, h)\n  "
              "vectorize(get_loops(k)[-1])\n  parallel(c)\n");
  EXPECT_NE(t.find("block P_pad_const(vc: spatial(2) = c, vh: spatial(10) = h_pad, vw: spatial(10) = w_pad)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("P[vc, vh, vw] = -1.5"), std::string::npos) << t;
  EXPECT_NE(t.find("where h >= 1 && h < 9 && w >= 1 && w < 9"), std::string::npos) << t;
  EXPECT_NE(t.find("P[vc, vh, vw] = X[vc, vh - 1, vw - 1]"), std::string::npos) << t;
  auto dp = [&](const std::string& lines) {
    return refusal(kPad, "  p = get_block(\"P\")\n  y = get_block(\"Y\")\n" + lines);
  };
  EXPECT_EQ(dp("  decompose_padding(p, get_loops(y)[0])\n"),
            "decompose_padding: loop c is not an ancestor of block P");
  EXPECT_EQ(
      dp("  decompose_padding(y, get_loops(y)[0])\n"),
      "decompose_padding: block Y is not a padding block (its body must be one store of if_then_else(cond, "
      "value, pad_value))");
  // Round 11: a loop that holds other statements (none writing P) takes the fill before it, as
  // TVM's "lift the pad values to an outer loop".
  std::string lifted =
      applied(kPad,
              "  p = get_block(\"P\")\n  y = get_block(\"Y\")\n  c, h, w = get_loops(y)\n  compute_at(p, h)\n"
              "  decompose_padding(p, c)\n");
  EXPECT_NE(lifted.find("block P_pad_const("), std::string::npos) << lifted;
}

TEST(PrimsR5, LoopPartition) {
  std::string t = applied(kEW, kGet +
                                   "  i, j = get_loops(b)\n  parts = loop_partition(i, factors=[4, None])\n  "
                                   "parallel(parts[1])\n  j0, j1, j2 = loop_partition(j, [1, 2, 3])\n");
  EXPECT_NE(t.find("for i_1 in parallel(4, 10)"), std::string::npos) << t;
  EXPECT_NE(t.find("for j2 in serial(3, 6)"), std::string::npos) << t;
  EXPECT_NE(t.find("block B_1("), std::string::npos) << t;
  auto lp = [&](const std::string& f) {
    return refusal(kEW, kGet + "  i, j = get_loops(b)\n  a, x = loop_partition(" + f + ")\n");
  };
  EXPECT_EQ(lp("j, [4, 4]"), "loop_partition: the parts add up to 8, more than the extent 6 of loop j");
  EXPECT_EQ(lp("j, [6, None]"),
            "loop_partition: the given parts add up to 6, leaving nothing of the extent 6 of loop j for the "
            "inferred "
            "one");
  EXPECT_EQ(lp("j, [0, None]"), "loop_partition: factor 0 is not positive");
  EXPECT_EQ(
      refusal(kEW, kGet + "  i, j = get_loops(b)\n  bind(i, \"blockIdx.x\")\n  a, x = loop_partition(i, [4, "
                          "None])\n"),
      "loop_partition: loop i is bound to blockIdx.x; partition it before binding it");
}

TEST(PrimsR5, SetAxisSeparator) {
  EXPECT_EQ(refusal(kEW, kGet + "  set_axis_separator(b, (\"write\", 0), [0])\n"),
            "set_axis_separator: axis separator 0 is not in increasing order inside [1, 1] for buffer B");
  EXPECT_EQ(refusal(kEW, kGet + "  set_axis_separator(b, (\"write\", 0), 1)\n"),
            "set_axis_separator: the axis separators are a list of axes, e.g. [1]");
  // A no-op on flat memory.
  Module m =
      parse_module(with_schedule(kEW, kGet + "  set_axis_separator(b, (\"write\", 0), [1])\n"), "t.tir");
  Function g = apply_schedule(*m.funcs[0], m.schedules[0]);
  EXPECT_TRUE(structural_equal(*m.funcs[0], *g));
}

TEST(PrimsR5, Reindex) {
  const char* conv = R"(func conv(P: f32[1, 2, 6, 6], W: f32[3, 2, 3, 3]) -> (Y: f32[1, 3, 4, 4]) {
  for n, f, y, x, c, r, s in grid(1, 3, 4, 4, 2, 3, 3) {
    block conv(vn: spatial(1) = n, vf: spatial(3) = f, vy: spatial(4) = y, vx: spatial(4) = x,
               vc: reduce(2) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] = Y[vn, vf, vy, vx] + P[vn, vc, vy + vr, vx + vs] * W[vf, vc, vr, vs]
    }
  }
})";
  std::string t = applied(
      conv, "  b = get_block(\"conv\")\n  col = reindex(b, (\"read\", 0))\n  parallel(get_loops(b)[1])\n");
  EXPECT_NE(t.find("alloc P_reindex: f32[1, 4, 4, 2, 3, 3]"), std::string::npos) << t;
  EXPECT_NE(t.find("P_reindex[vn, vy, vx, vc, vr, vs] = P[vn, vc, vy + vr, vx + vs]"), std::string::npos)
      << t;
  EXPECT_NE(t.find("P_reindex[vn, vy, vx, vc, vr, vs] * W[vf, vc, vr, vs]"), std::string::npos) << t;
  // Written buffers: round 6 (outsider6_test.cpp, ReindexWrite).
  EXPECT_NE(applied(kEW, kGet + "  reindex(c, (\"write\", 0))\n").find("C[vi, vj] = C_reindex[vi, vj]"),
            std::string::npos);
  const char* twice = R"(func f(A: f32[8, 8]) -> (C: f32[8]) {
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: reduce(8) = j) {
      init { C[vi] = 0.0 }
      C[vi] = C[vi] + A[vi, vj] * A[vj, vi]
    }
  }
})";
  EXPECT_EQ(refusal(twice, "  b = get_block(\"C\")\n  x = reindex(b, (\"read\", 0))\n"),
            "reindex: block C loads buffer A 2 times (reindex needs exactly one load)");
  const char* shifted = R"(func f(A: f32[10]) -> (C: f32[8]) {
  for i in serial(8) {
    block C(vi: spatial(8) = i) {
      where i < 7
      C[vi] = A[vi + 3]
    }
  }
})";
  EXPECT_EQ(
      refusal(shifted, "  b = get_block(\"C\")\n  x = reindex(b, (\"read\", 0))\n"),
      "reindex: index 0 of the load of A in block C may leave the buffer over the block's whole iteration "
      "space (the copy would read outside it)");
}

TEST(PrimsR5, Merge) {
  const char* two = R"(func f(A: f32[8, 6]) -> (B: f32[8, 6], C: f32[8, 6]) {
  for i, j in grid(8, 6) {
    block B(vi: spatial(8) = i, vj: spatial(6) = j) {
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) {
      C[vi, vj] = A[vi, vj] + 1.0
    }
  }
})";
  std::string t = applied(two,
                          "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  m = merge(get_loops(b)[1], "
                          "get_loops(c)[1])\n  vectorize(m)\n");
  EXPECT_NE(t.find("for j in vectorized(6) {\n      block B("), std::string::npos) << t;
  EXPECT_EQ(refusal(kEW, kGet + "  m = merge(get_loops(b)[1], get_loops(c)[1])\n"),
            "merge: block C under loop j touches buffer B, which block B under loop j writes (merging would "
            "interleave them)");
  EXPECT_EQ(refusal(kEW, kGet + "  m = merge(get_loops(b)[1], get_loops(c)[0])\n"),
            "merge: loops j and i are at different depths");
  EXPECT_EQ(refusal(kEW, kGet + "  m = merge(get_loops(b)[1], get_loops(b)[0])\n"),
            "merge: loop i contains another of the loops");
  EXPECT_EQ(refusal(two,
                    "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  parallel(get_loops(b)[0])\n  m = "
                    "merge(get_loops(b)[1], get_loops(c)[1])\n"),
            "merge: loop i is not a plain serial loop (merge before changing its kind)");
}

// autodiff's embedding gradient: the lookups (reduce, atomic) parallel and the columns
// vectorized. Many lookups of 4 rows, so threads add to the same rows at once.
const char* kTake = R"(func take(W: f32[4, 16], I: i32[256] in [0, 3]) -> (Y: f32[256, 16]) {
  for i, j in grid(256, 16) {
    block Y(vi: spatial(256) = i, vj: spatial(16) = j) {
      Y[vi, vj] = W[I[vi], vj]
    }
  }
}

schedule take_grad {
  d = sch.get_block("Y_dW")
  i, j = sch.get_loops(d)
  sch.parallel(i)
  sch.vectorize(j)
}
)";

TEST(PrimsR5, AtomicScatterParallelVectorize) {
  Module m = parse_module(kTake, "take.tir");
  m.add_func(gradient(*m.find_func("take"), {}));
  Function f = m.find_func("take_grad");
  Function g = apply_schedule(*f, m.schedules.at(0));
  CompareResult r = compare_functions(*f, *g, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
#ifdef TIRC_WITH_LLVM
  fs::path tmp = fs::temp_directory_path() / ("tirc_prims_r5_take_" + std::to_string(::getpid()) + ".tir");
  std::ofstream(tmp) << print_module(m);
  for (uint64_t seed : {1, 2, 3}) {
    std::string cmd = "TIRC_NUM_THREADS=4 '" + std::string(TIRC_BINARY) + "' verify '" + tmp.string() +
                      "' --func take_grad --seed " + std::to_string(seed) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int st = pclose(p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
    EXPECT_NE(out.find("take_grad [jit]: ok"), std::string::npos) << out;
  }
  fs::remove(tmp);
#endif
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// rfactor of a reduction without init starts each partial at the reducer's identity. The
// i64 min identity was built from the double 9.22e18, which does not convert to i64 (it
// became INT64_MIN, so every partial min was INT64_MIN).
TEST(PrimsR5, RfactorIntegerIdentitiesAreExact) {
  for (const char* op : {"min", "max"}) {
    std::string f = std::string(R"(func g(X: i64[4, 8] in [-1000, 1000]) -> (Y: i64[4]) {
  for i in serial(4) {
    block Y0(vi: spatial(4) = i) { Y[vi] = 7 }
  }
  for i, k in grid(4, 8) {
    block Y(vi: spatial(4) = i, vk: reduce(8) = k) {
      Y[vi] = )") + op +
                    R"((Y[vi], X[vi, vk])
    }
  }
}
)";
    SCOPED_TRACE(op);
    applied(f,
            "  b = get_block(\"Y\")\n  i, k = get_loops(b)\n  ko, ki = split(k, [2, 4])\n  rf = rfactor(ki, "
            "0)\n");
  }
}

}  // namespace
}  // namespace tirc

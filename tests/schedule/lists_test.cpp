// List variables in schedules (transforms/schedule/lists.h), the way TVM users write them:
// `loops = sch.get_loops(b)`, `loops[0]`, `loops[-1]`, `i, j, k = loops`, `*loops`, slices,
// `parts = sch.split(...)`, `blocks = sch.get_child_blocks(root)`. Each accepted form is applied,
// compared with the unscheduled function in the interpreter, compared with the same schedule
// written with plain names (structurally equal), and printed: the printed module re-parses to
// the same text. Each error has its exact message and position.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

const char* kMM = R"(func mm(A: f32[32, 24], B: f32[24, 20]) -> (C: f32[32, 20]) {
  for i, j, k in grid(32, 20, 24) {
    block C(vi: spatial(32) = i, vj: spatial(20) = j, vk: reduce(24) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";

const char* kEW = R"(func ew(A: f32[12, 10]) -> (C: f32[12, 10]) {
  alloc B: f32[12, 10]
  for i, j in grid(12, 10) {
    block B(vi: spatial(12) = i, vj: spatial(10) = j) {
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(12, 10) {
    block C(vi: spatial(12) = i, vj: spatial(10) = j) {
      C[vi, vj] = B[vi, vj] + 1.0
    }
  }
})";

Module with_schedule(const std::string& func_text, const std::string& lines) {
  std::string name = func_text.substr(5, func_text.find('(') - 5);
  return parse_module(func_text + "\n\nschedule " + name + " {\n" + lines + "}\n", "l.tir");
}

Function apply_lines(const std::string& func_text, const std::string& lines) {
  Module m = with_schedule(func_text, lines);
  return apply_schedule(*m.funcs[0], m.schedules.at(0));
}

// `lines` (with list variables) gives the same function as `plain` (plain names), computes
// what the unscheduled function computes, and its printed module is a fixpoint.
void same_as(const std::string& func_text, const std::string& lines, const std::string& plain) {
  SCOPED_TRACE(lines);
  Module m = with_schedule(func_text, lines);
  Function g = apply_schedule(*m.funcs[0], m.schedules.at(0));
  Function h = apply_lines(func_text, plain);
  auto d = structural_diff(*g, *h);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << print_function(*g);
  EXPECT_FALSE(structural_equal(*m.funcs[0], *g)) << "the schedule changed nothing";
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*m.funcs[0], *g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail;
  }
  std::string printed = print_module(m);
  Module again = parse_module(printed, "again.tir");
  EXPECT_EQ(print_module(again), printed);
  EXPECT_TRUE(structural_equal(m, again));
  // The re-parsed schedule applies to the same function.
  Function g2 = apply_schedule(*again.funcs[0], again.schedules.at(0));
  EXPECT_FALSE(structural_diff(*g, *g2).has_value());
}

std::string error(const std::string& func_text, const std::string& lines, int col);

const std::string kLoops = "  b = sch.get_block(\"C\")\n  loops = sch.get_loops(b)\n";

TEST(Lists, IndexAsArgument) {
  same_as(kMM, kLoops + "  sch.parallel(loops[0])\n  sch.unroll(loops[-1])\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  parallel(i)\n  unroll(k)\n");
  same_as(kMM, kLoops + "  sch.split(loops[1], factors=[None, 4])\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  split(j, [_, 4])\n");
  // A keyword argument takes an item too.
  same_as(kMM, kLoops + "  init = sch.decompose_reduction(block=b, loop=loops[2])\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  init = decompose_reduction(b, k)\n");
}

TEST(Lists, Unpack) {
  same_as(kMM, kLoops + "  i, j, k = loops\n  sch.reorder(k, i, j)\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  reorder(k, i, j)\n");
  same_as(kMM, kLoops + "  _, j, _ = loops\n  sch.vectorize(j)\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  vectorize(j)\n");
  same_as(kMM, kLoops + "  l = loops[-1]\n  sch.unroll(l)\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  unroll(k)\n");
  // A slice bound to a name, then unpacked.
  same_as(kMM, kLoops + "  inner = loops[1:]\n  j, k = inner\n  sch.reorder(k, j)\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  reorder(k, j)\n");
}

TEST(Lists, StarAndSlices) {
  const std::string plain = "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n";
  same_as(kMM, kLoops + "  sch.reorder(loops[2], loops[0], loops[1])\n", plain + "  reorder(k, i, j)\n");
  same_as(kMM, kLoops + "  sch.reorder(*loops[::-1])\n", plain + "  reorder(k, j, i)\n");
  same_as(kMM, kLoops + "  f = sch.fuse(*loops[:2])\n  sch.parallel(f)\n",
          plain + "  f = fuse(i, j)\n  parallel(f)\n");
  same_as(kMM, kLoops + "  f = sch.fuse(*loops[0:-1])\n", plain + "  f = fuse(i, j)\n");
  // A nested call sliced (`*sch.get_loops(b)[1:]`), a list passed whole to a varargs primitive.
  same_as(kMM, "  b = sch.get_block(\"C\")\n  sch.reorder(*sch.get_loops(b)[1:][::-1])\n",
          plain + "  reorder(k, j)\n");
  same_as(kMM, kLoops + "  sch.reorder(loops[::-1])\n", plain + "  reorder(k, j, i)\n");
  same_as(kMM, kLoops + "  sch.reorder([loops[1], *loops[::2]])\n", plain + "  reorder(j, i, k)\n");
  // A slice bound by a call: `ls = get_loops(b)[1:]`.
  same_as(kMM, "  b = get_block(\"C\")\n  ls = get_loops(b)[1:]\n  sch.reorder(*ls[::-1])\n",
          plain + "  reorder(k, j)\n");
}

TEST(Lists, SplitResult) {
  same_as(kMM,
          kLoops +
              "  parts = sch.split(loops[0], factors=[None, 8])\n  sch.parallel(parts[0])\n"
              "  sch.reorder(parts[1], loops[2])\n  sch.vectorize(loops[1])\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i_0, i_1 = split(i, [None, 8])\n"
          "  parallel(i_0)\n  reorder(i_1, k)\n  vectorize(j)\n");
}

TEST(Lists, ChildBlocks) {
  same_as(kEW,
          "  root = sch.get_block(\"root\")\n  blocks = sch.get_child_blocks(root)\n"
          "  sch.compute_inline(blocks[0])\n  sch.parallel(sch.get_loops(blocks[-1])[0])\n",
          "  x = get_block(\"B\")\n  compute_inline(x)\n  c = get_block(\"C\")\n  i, j = get_loops(c)\n"
          "  parallel(i)\n");
  // compute_at with keywords and list items.
  same_as(kEW,
          "  blocks = sch.get_child_blocks(sch.get_block(\"root\"))\n  cl = sch.get_loops(blocks[1])\n"
          "  sch.compute_at(block=blocks[0], loop=cl[0], preserve_unit_loops=True)\n",
          "  x = get_block(\"B\")\n  c = get_block(\"C\")\n  i, j = get_loops(c)\n  compute_at(x, i)\n");
}

TEST(Lists, ProducersConsumers) {
  same_as(kEW, "  sch.compute_inline(sch.get_producers(sch.get_block(\"C\"))[0])\n",
          "  x = get_block(\"B\")\n  compute_inline(x)\n");
  same_as(kEW, "  cs = sch.get_consumers(sch.get_block(\"B\"))\n  sch.reverse_compute_inline(cs[0])\n",
          "  x = get_block(\"C\")\n  reverse_compute_inline(x)\n");
  EXPECT_EQ(error(kEW, "  p, q = sch.get_producers(sch.get_block(\"C\"))\n", 14),
            "get_producers: block C has 1 producer, but 2 names are bound");
  // The input A has no producer: an empty list.
  EXPECT_EQ(error(kEW, "  ps = sch.get_producers(sch.get_block(\"B\"))\n  sch.compute_inline(ps[0])\n", 7),
            "compute_inline: index 0 is out of range: ps has 0 handles");
}

// A single handle is a list of one where a list is expected, and a list of one is its handle.
TEST(Lists, OneHandle) {
  const char* one = R"(func one(A: f32[64]) -> (B: f32[64]) {
  for i in serial(64) {
    block B(vi: spatial(64) = i) { B[vi] = A[vi] + 1.0 }
  }
})";
  same_as(one, "  l = sch.get_loops(sch.get_block(\"B\"))\n  sch.split(l, factors=[None, 8])\n",
          "  b = get_block(\"B\")\n  i = get_loops(b)\n  split(i, [_, 8])\n");
  same_as(
      one,
      "  l = sch.get_loops(sch.get_block(\"B\"))\n  p = sch.split(l[0], [None, 8])\n  sch.vectorize(p[1])\n",
      "  b = get_block(\"B\")\n  i = get_loops(b)\n  a, c = split(i, [_, 8])\n  vectorize(c)\n");
  same_as(one, "  l = sch.get_loops(sch.get_block(\"B\"))[0:1]\n  sch.parallel(l)\n",
          "  b = get_block(\"B\")\n  i = get_loops(b)\n  parallel(i)\n");
}

// The message of the refused instruction (without "FILE:LINE:COL: error: "), checking that it
// is reported at the last line of `lines`, column `col` (the primitive's name, or for `names =
// value` the value).
std::string error(const std::string& func_text, const std::string& lines, int col) {
  int func_lines = 1;
  for (char c : func_text) func_lines += c == '\n';
  int n = 0;
  for (char c : lines) n += c == '\n';
  try {
    apply_lines(func_text, lines);
  } catch (const SourceError& e) {
    EXPECT_EQ(e.line(), func_lines + 2 + n) << e.what();
    EXPECT_EQ(e.col(), col) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "not refused:\n" << lines;
  return "";
}

// `k, = value` is Python's one-element unpack: the value must hold exactly one handle.
TEST(Lists, OneElementUnpack) {
  EXPECT_EQ(error(kMM, kLoops + "  k, = loops\n", 8), "cannot unpack loops (3 handles) into 1 name");
  EXPECT_EQ(error(kMM, "  b = sch.get_block(\"C\")\n  (k,) = sch.get_loops(b)\n", 14),
            "get_loops: cannot unpack the 3 handles get_loops returns into 1 name");
  same_as(kMM, kLoops + "  k, = loops[2:]\n  sch.unroll(k)\n",
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  unroll(k)\n");
}

TEST(Lists, Errors) {
  EXPECT_EQ(error(kMM, kLoops + "  sch.parallel(loops[3])\n", 7),
            "parallel: index 3 is out of range: loops has 3 handles");
  EXPECT_EQ(error(kMM, kLoops + "  sch.parallel(loops[-4])\n", 7),
            "parallel: index -4 is out of range: loops has 3 handles");
  EXPECT_EQ(error(kMM, kLoops + "  l = loops[5]\n", 7), "index 5 is out of range: loops has 3 handles");
  EXPECT_EQ(error(kMM, kLoops + "  i, j = loops\n", 10), "cannot unpack loops (3 handles) into 2 names");
  EXPECT_EQ(error(kMM, kLoops + "  i, j = loops[1:][0]\n", 10),
            "cannot unpack loops[1:][0] (one handle) into 2 names");
  EXPECT_EQ(error(kMM, kLoops + "  a, b2, c, d = loops[::-1]\n", 17),
            "cannot unpack loops[::-1] (3 handles) into 4 names");
  EXPECT_EQ(error(kMM, kLoops + "  sch.parallel(loops)\n", 7),
            "parallel: loops is a list of 3 handles where one handle is expected (pick one, e.g. loops[0])");
  EXPECT_EQ(error(kMM, kLoops + "  sch.split(loops[1:], factors=[None, 4])\n", 7),
            "split: loops[1:] is a list of 2 handles where one handle is expected (pick one, e.g. "
            "loops[1:][0])");
  EXPECT_EQ(
      error(kMM, kLoops + "  sch.compute_at(b, loop=loops)\n", 7),
      "compute_at: loops is a list of 3 handles where one handle is expected (pick one, e.g. loops[0])");
  EXPECT_EQ(error(kMM, kLoops + "  sch.parallel(nope[0])\n", 7), "parallel: unknown handle 'nope'");
  EXPECT_EQ(error(kMM, kLoops + "  x = nope\n", 7), "unknown handle 'nope'");
  EXPECT_EQ(error(kMM, kLoops + "  sch.parallel(b[0])\n", 7),
            "parallel: 'b[0]' is a block handle, expected a loop");
  EXPECT_EQ(error(kMM, kLoops + "  sch.unroll(b[1])\n", 7),
            "unroll: index 1 is out of range: b is one handle");
  EXPECT_EQ(error(kMM, kLoops + "  sch.compute_at(b, *loops)\n", 7),
            "compute_at: expected 2 arguments (block, loop), got 4");
  // Items stay bound to their loops: a loop replaced by split is gone from the list too.
  EXPECT_EQ(error(kMM, kLoops + "  sch.split(loops[0], [None, 4])\n  sch.parallel(loops[0])\n", 7),
            "parallel: loop 'loops[0]' no longer exists (replaced by an earlier primitive)");
  // The middle loop made parallel through its item.
  Function g = apply_lines(kMM, kLoops + "  sch.parallel(loops[1])\n");
  EXPECT_NE(print_function(*g).find("for j in parallel(20)"), std::string::npos) << print_function(*g);
}

TEST(Lists, ParseErrors) {
  auto parse_error = [](const std::string& lines) {
    try {
      with_schedule(kMM, lines);
    } catch (const SourceError& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  EXPECT_EQ(parse_error("  loops = get_loops(get_block(\"C\"))\n  reorder(*loops[::0])\n"),
            "l.tir:12:20: error: slice step cannot be zero");
  EXPECT_EQ(parse_error("  loops = get_loops(get_block(\"C\"))\n  loops\n"),
            "l.tir:12:3: error: expected a schedule instruction, e.g. loops(...), or names bound to a list: "
            "i, j = loops");
}

// The printed forms: as written (nested calls hoisted to `_N = ...`, as before).
TEST(Lists, Printed) {
  Module m = with_schedule(kMM,
                           "  loops = sch.get_loops(sch.get_block(\"C\"))\n  i, j, k = loops\n"
                           "  sch.reorder(*loops[::-1])\n  f = sch.fuse(*loops[1:3])\n  x = loops[-1:0:-2]\n"
                           "  y = sch.get_loops(sch.get_block(\"C\"))[1:]\n");
  std::string p = print_module(m);
  EXPECT_NE(p.find("  _0 = get_block(\"C\")\n  loops = get_loops(_0)\n  i, j, k = loops\n"
                   "  reorder(*loops[::-1])\n  f = fuse(*loops[1:3])\n  x = loops[-1:0:-2]\n"
                   "  _1 = get_block(\"C\")\n  _2 = get_loops(_1)\n  y = _2[1:]\n"),
            std::string::npos)
      << p;
  EXPECT_EQ(print_module(parse_module(p, "again.tir")), p);
}

}  // namespace
}  // namespace tirc

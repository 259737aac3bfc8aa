// Schedule outsider round 6 (docs/schedule.md, "Outsider round 6"): MetaSchedule's sampling
// instructions (sample_perfect_tile, sample_categorical, sample_compute_location) with and
// without decisions, sampled values in later instructions, exact refusal messages, and the
// fixes of the round (each test fails without its fix). TVM-style scripts:
// tests/schedule/tvm_style/outsider6_*.tir.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

const char* kMM = R"(func mm(A: f32[24, 16], B: f32[16, 40]) -> (C: f32[24, 40]) {
  for i, j, k in grid(24, 40, 16) {
    block C(vi: spatial(24) = i, vj: spatial(40) = j, vk: reduce(16) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";

// P pads X (a producer that can be inlined); Y reduces over a window of P.
const char* kPool = R"(func pool(X: f32[4, 10]) -> (Y: f32[4, 10]) {
  alloc P: f32[4, 12]
  for c, h in grid(4, 12) {
    block P(vc: spatial(4) = c, vh: spatial(12) = h) {
      P[vc, vh] = if_then_else(vh >= 1 && vh < 11, X[vc, vh - 1], 0.0)
    }
  }
  for c, y, r in grid(4, 10, 3) {
    block Y(vc: spatial(4) = c, vy: spatial(10) = y, vr: reduce(3) = r) {
      init { Y[vc, vy] = 0.0 }
      Y[vc, vy] = Y[vc, vy] + P[vc, vy + vr]
    }
  }
})";

// E is an elementwise epilogue of the reduction S (reverse_compute_inline-able into a copy).
const char* kEpi = R"(func epi(A: f32[8, 6]) -> (E: f32[8, 6]) {
  alloc T: f32[8, 6]
  for i, j in grid(8, 6) {
    block T(vi: spatial(8) = i, vj: spatial(6) = j) {
      T[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(8, 6) {
    block E(vi: spatial(8) = i, vj: spatial(6) = j) {
      E[vi, vj] = T[vi, vj] + 1.0
    }
  }
})";

std::string func_name(const std::string& text) { return text.substr(5, text.find('(') - 5); }

std::string with_schedule(const std::string& func_text, const std::string& lines) {
  return func_text + "\n\nschedule " + func_name(func_text) + " {\n" + lines + "}\n";
}

Function apply_lines(const std::string& func_text, const std::string& lines) {
  Module m = parse_module(with_schedule(func_text, lines), "t.tir");
  return apply_schedule(*m.find_func(func_name(func_text)), m.schedules.at(0));
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

// Applies the lines, compares with the unscheduled function in the interpreter (two seeds)
// and checks the print / parse round trip.
Function applied(const std::string& func_text, const std::string& lines) {
  Module m = parse_module(with_schedule(func_text, lines), "t.tir");
  Function f = m.find_func(func_name(func_text));
  Function g = apply_schedule(*f, m.schedules.at(0));
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*f, *g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail << "\n" << print_function(*g);
  }
  Module again = parse_module(print_function(*g), "again.tir");
  auto d = structural_diff(*g, *again.funcs.at(0));
  EXPECT_FALSE(d.has_value()) << *d;
  return g;
}

void expect_same(const Function& a, const Function& b) {
  auto d = structural_diff(*a, *b);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << print_function(*a) << "\nvs\n" << print_function(*b);
}

const std::string kGetC = "  b = sch.get_block(\"C\")\n  i, j, k = sch.get_loops(b)\n";

TEST(Outsider6, PerfectTileDecisionIsTheSplit) {
  Function sampled =
      applied(kMM, kGetC +
                       "  v0, v1, v2 = sch.sample_perfect_tile(loop=i, n=3, max_innermost_factor=16, "
                       "decision=[2, 3, 4])\n"
                       "  i0, i1, i2 = sch.split(loop=i, factors=[v0, v1, v2], preserve_unit_iters=True)\n"
                       "  v3 = sch.sample_categorical(candidates=[0, 16, 64], probs=[0.5, 0.25, 0.25], "
                       "decision=2)\n"
                       "  sch.annotate(block_or_loop=i0, ann_key=\"pragma_auto_unroll_max_step\", "
                       "ann_val=v3)\n");
  Function literal = apply_lines(kMM, kGetC +
                                          "  i0, i1, i2 = split(i, [2, 3, 4])\n"
                                          "  annotate(i0, \"pragma_auto_unroll_max_step\", 64)\n");
  expect_same(sampled, literal);
}

TEST(Outsider6, DefaultDecisions) {
  // No decision: [1, ..., extent / f, f], f the largest divisor <= max_innermost_factor
  // (40 under 10: f = 10; 24 with TVM's default 16: f = 12); the most probable candidate.
  Function s =
      applied(kMM, kGetC +
                       "  a, b2, c = sch.sample_perfect_tile(j, n=3, max_innermost_factor=10)\n"
                       "  j0, j1, j2 = sch.split(j, factors=[a, b2, c])\n"
                       "  fs = sch.sample_perfect_tile(loop=i, n=2)\n"
                       "  i0, i1 = sch.split(i, factors=fs)\n"
                       "  u = sch.sample_categorical(candidates=[0, 16, 64], probs=[0.2, 0.5, 0.3])\n"
                       "  sch.annotate(i0, \"u\", u)\n"
                       "  sch.annotate(i1, \"f\", fs[-1])\n");
  Function l = apply_lines(kMM, kGetC +
                                    "  j0, j1, j2 = split(j, [1, 4, 10])\n"
                                    "  i0, i1 = split(i, [2, 12])\n"
                                    "  annotate(i0, \"u\", 16)\n"
                                    "  annotate(i1, \"f\", 12)\n");
  expect_same(s, l);
  // n=1 and unlimited innermost factor (None).
  Function one = apply_lines(kMM, kGetC +
                                      "  (v,) = sch.sample_perfect_tile(k, n=1, max_innermost_factor=None)\n"
                                      "  sch.annotate(k, \"v\", v)\n");
  Function one_l = apply_lines(kMM, kGetC + "  annotate(k, \"v\", 16)\n");
  expect_same(one, one_l);
}

TEST(Outsider6, ComputeLocation) {
  const std::string get = "  p = sch.get_block(\"P\")\n  y = sch.get_block(\"Y\")\n";
  // -1 (also the default): root, compute_at does nothing.
  Module m = parse_module(kPool, "p.tir");
  Function root =
      apply_lines(kPool, get +
                             "  l = sch.sample_compute_location(block=p, decision=-1)\n"
                             "  sch.compute_at(block=p, loop=l, preserve_unit_loops=True, index=-1)\n"
                             "  l2 = sch.sample_compute_location(p)\n"
                             "  sch.compute_at(p, l2)\n");
  expect_same(root, m.funcs.at(0));
  // -2: inline.
  Function inl = applied(kPool, get +
                                    "  l = sch.sample_compute_location(block=p, decision=-2)\n"
                                    "  sch.compute_at(block=p, loop=l)\n");
  expect_same(inl, apply_lines(kPool, get + "  compute_inline(p)\n"));
  // K >= 0: the K-th loop of the first consumer.
  Function at = applied(kPool, get +
                                   "  l = sch.sample_compute_location(block=p, decision=1)\n"
                                   "  sch.compute_at(block=p, loop=l)\n");
  expect_same(at, apply_lines(kPool, get + "  c, yl, r = get_loops(y)\n  compute_at(p, yl)\n"));
  // reverse_compute_at with the inline mark reverse-inlines (TVM's ReverseComputeAt).
  Function rev = applied(kEpi,
                         "  e = sch.get_block(\"E\")\n"
                         "  l = sch.sample_compute_location(e, decision=-2)\n"
                         "  sch.reverse_compute_at(e, l)\n");
  expect_same(rev, apply_lines(kEpi, "  reverse_compute_inline(get_block(\"E\"))\n"));
}

TEST(Outsider6, SamplingRefusals) {
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(i, n=2, decision=[4, 5])\n"),
            "sample_perfect_tile: decision [4, 5] is not a perfect tiling of loop i (extent 24, product 20)");
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(i, n=2, decision=[1, 24])\n"),
            "sample_perfect_tile: decision [1, 24]: the innermost factor 24 exceeds max_innermost_factor 16");
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(i, n=2, decision=[2, 3, 4])\n"),
            "sample_perfect_tile: decision [2, 3, 4] has 3 factors, but n is 2");
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(i, n=3)\n"),
            "sample_perfect_tile: returns 3 values, but 2 names are bound");
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(i, n=2, seed=3)\n"),
            "sample_perfect_tile: unknown keyword argument 'seed'");
  EXPECT_EQ(refusal(kMM, kGetC + "  v0, v1 = sch.sample_perfect_tile(b, n=2)\n"),
            "sample_perfect_tile: 'b' is a block handle, expected a loop");
  EXPECT_EQ(refusal(kMM, kGetC + "  v = sch.sample_categorical(candidates=[1, 2], probs=[0.5])\n"),
            "sample_categorical: candidates has 2 items but probs has 1");
  EXPECT_EQ(
      refusal(kMM, kGetC + "  v = sch.sample_categorical(candidates=[1, 2], probs=[0.5, 0.5], decision=2)\n"),
      "sample_categorical: decision 2 is out of range: there are 2 candidates");
  EXPECT_EQ(refusal(kMM, kGetC + "  v = sch.sample_categorical(candidates=[1, 2], probs=[0.5, -0.5])\n"),
            "sample_categorical: probability -0.5 is negative or not finite");
  const std::string get = "  p = sch.get_block(\"P\")\n  y = sch.get_block(\"Y\")\n";
  EXPECT_EQ(
      refusal(kPool, get + "  l = sch.sample_compute_location(y, decision=0)\n"),
      "sample_compute_location: block Y has no consumer: its only locations are -1 (root) and -2 (inline)");
  EXPECT_EQ(refusal(kPool, get + "  l = sch.sample_compute_location(p, decision=3)\n"),
            "sample_compute_location: decision 3 is out of range: consumer Y has 3 loops");
  EXPECT_EQ(refusal(kPool, get + "  l = sch.sample_compute_location(p, decision=-3)\n"),
            "sample_compute_location: decision -3 is not a location (-2 inline, -1 root, or a loop index)");
  EXPECT_EQ(refusal(kPool, get + "  l = sch.sample_compute_location(p, decision=-2)\n"
                                 "  sch.parallel(l)\n"),
            "parallel: l is the compute location \"inline\" of sample_compute_location: only compute_at / "
            "reverse_compute_at take it");
  // The inline mark on a block that cannot be inlined: compute_inline's refusal (TVM's too).
  EXPECT_EQ(refusal(kPool, get + "  l = sch.sample_compute_location(y, decision=-2)\n"
                                 "  sch.compute_at(y, l)\n"),
            "compute_at: block Y is a reduction");
}

TEST(Outsider6, SymbolicExtentRefused) {
  const char* sym = R"(func s(n: i32 in [1, 9], A: f32[n]) -> (B: f32[n]) {
  for i in serial(n) {
    block B(vi: spatial(n) = i) {
      B[vi] = A[vi] + 1.0
    }
  }
})";
  EXPECT_EQ(
      refusal(sym, "  i, = sch.get_loops(sch.get_block(\"B\"))\n  a, b = sch.sample_perfect_tile(i, n=2)\n"),
      "sample_perfect_tile: loop i has a symbolic extent: no perfect tiling is known (split it with None, "
      "e.g. [None, 8])");
}

// A name rebound by a primitive no longer names a sampled value (and the other way round).
TEST(Outsider6, RebindingNames) {
  Function g = applied(kMM, kGetC +
                                "  v = sch.sample_categorical(candidates=[4, 8], probs=[1, 0])\n"
                                "  v = sch.get_block(\"C\")\n"
                                "  sch.annotate(v, \"x\", 1)\n"
                                "  i0, i1 = sch.sample_perfect_tile(i, n=2, decision=[6, 4])\n"
                                "  a, b2 = sch.split(i, [i0, i1])\n");
  expect_same(g, apply_lines(kMM, kGetC + "  annotate(b, \"x\", 1)\n  a, b2 = split(i, [6, 4])\n"));
}

// The sampling instructions print back as written (an unapplied schedule item round-trips).
TEST(Outsider6, SamplingPrintsBack) {
  std::string text =
      with_schedule(kMM, kGetC +
                             "  v0, v1 = sch.sample_perfect_tile(loop=i, n=2, max_innermost_factor=64, "
                             "decision=[2, 12])\n"
                             "  v2 = sch.sample_categorical(candidates=[0, 16], probs=[0.5, 0.5], "
                             "decision=1)\n"
                             "  l = sch.sample_compute_location(block=b, decision=-1)\n");
  Module m = parse_module(text, "t.tir");
  std::string p1 = print_module(m);
  Module again = parse_module(p1, "again.tir");
  EXPECT_EQ(print_module(again), p1);
  EXPECT_NE(p1.find("decision=[2, 12]"), std::string::npos) << p1;
  EXPECT_NE(p1.find("probs=[0.5, 0.5]"), std::string::npos) << p1;
}

// Fix (deps.cpp recombined_partition): MetaSchedule fuses the outer tile loops of i and j
// interleaved (i0, j0, i1, j1), so each index holds two splits of the fused loop
// (`f // 24 * 32 + f // 2 % 4 * 8 + ...`). `parallel` refused ("blocks C, C_global share
// buffer C_global across its iterations") although the fused loop partitions the buffer.
TEST(Outsider6, ParallelInterleavedFusedTiles) {
  const char* mm = R"(func mm(A: f32[64, 8], B: f32[8, 96]) -> (C: f32[64, 96]) {
  for i, j, k in grid(64, 96, 8) {
    block C(vi: spatial(64) = i, vj: spatial(96) = j, vk: reduce(8) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";
  const std::string lines = kGetC +
                            "  i0, i1, i2 = sch.split(i, factors=[2, 4, 8])\n"
                            "  j0, j1, j2 = sch.split(j, factors=[3, 2, 16])\n"
                            "  sch.reorder(i0, j0, i1, j1, k, i2, j2)\n"
                            "  cw = sch.cache_write(b, 0, \"global\")\n"
                            "  sch.reverse_compute_at(cw, j1)\n"
                            "  f = sch.fuse(i0, j0, i1, j1)\n"
                            "  sch.parallel(f)\n";
  applied(mm, lines);
  // Still refused when the finer split overlaps the coarser one (T[f // 4 * 2 + f % 4]:
  // iterations 2 and 4 share T[2]).
  const char* overlap = R"(func ov(A: f32[16]) -> (B: f32[16]) {
  alloc T: f32[10]
  for f in serial(16) {
    block t(v: spatial(16) = f) {
      T[v // 4 * 2 + v % 4] = A[v]
    }
    block b(v: spatial(16) = f) {
      B[v] = T[v // 4 * 2 + v % 4] * 2.0
    }
  }
})";
  EXPECT_EQ(refusal(overlap, "  f, = sch.get_loops(sch.get_block(\"t\"))\n  sch.parallel(f)\n"),
            "parallel: loop f: blocks t, b share buffer T across its iterations (no dimension of it is "
            "partitioned by the loop)");
}

// Fix (compute_at.cpp): a block writing several buffers (group norm's sum and sum of squares
// in one reduction) was refused ("block st writes 2 buffers (need exactly 1)"); TVM's
// compute_at takes every written buffer.
const char* kTwo = R"(func two(A: f32[4, 6]) -> (B: f32[4, 6]) {
  alloc S: f32[4]
  alloc Q: f32[4]
  for i, k in grid(4, 6) {
    block st(vi: spatial(4) = i, vk: reduce(6) = k) {
      init {
        S[vi] = 0.0
        Q[vi] = min_value(f32)
      }
      S[vi] = S[vi] + A[vi, vk]
      Q[vi] = max(Q[vi], A[vi, vk])
    }
  }
  for i, j in grid(4, 6) {
    block B(vi: spatial(4) = i, vj: spatial(6) = j) {
      B[vi, vj] = A[vi, vj] - S[vi] + Q[vi]
    }
  }
})";

TEST(Outsider6, ComputeAtTwoOutputBlock) {
  Function g = applied(kTwo,
                       "  i, j = sch.get_loops(sch.get_block(\"B\"))\n"
                       "  sch.compute_at(sch.get_block(\"st\"), i)\n"
                       "  sch.parallel(i)\n");
  std::string text = print_function(*g);
  EXPECT_NE(text.find("for i in parallel(4) {\n    for ax1 in serial(6) {\n      block st("),
            std::string::npos)
      << text;
  // An output among the buffers: the rows of loop i tile the domain exactly once, so the
  // output is still written once per element (round 18; refused as "the exact tiling is checked
  // for a block writing one buffer only" before). Under loop j every row would be computed six
  // times.
  std::string two_out = kTwo;
  two_out.replace(two_out.find("-> (B: f32[4, 6])"), 17, "-> (B: f32[4, 6], Q: f32[4])");
  two_out.erase(two_out.find("  alloc Q: f32[4]\n"), 18);
  applied(two_out,
          "  i, j = sch.get_loops(sch.get_block(\"B\"))\n"
          "  sch.compute_at(sch.get_block(\"st\"), i)\n");
  EXPECT_EQ(refusal(two_out,
                    "  i, j = sch.get_loops(sch.get_block(\"B\"))\n"
                    "  sch.compute_at(sch.get_block(\"st\"), j)\n"),
            "compute_at: the parts of Q computed in the iterations of loop j do not cover it exactly once (Q "
            "is an output; block st also writes S, at the same iter vars)");
  const char* transposed = R"(func tr(A: f32[4, 6]) -> (B: f32[4, 6]) {
  alloc S: f32[4, 6]
  alloc Q: f32[6, 4]
  for i, j in grid(4, 6) {
    block st(vi: spatial(4) = i, vj: spatial(6) = j) {
      S[vi, vj] = A[vi, vj] * 2.0
      Q[vj, vi] = A[vi, vj] + 1.0
    }
  }
  for i, j in grid(4, 6) {
    block B(vi: spatial(4) = i, vj: spatial(6) = j) {
      B[vi, vj] = S[vi, vj] + Q[vj, vi]
    }
  }
})";
  EXPECT_EQ(refusal(transposed,
                    "  i, j = sch.get_loops(sch.get_block(\"B\"))\n"
                    "  sch.compute_at(sch.get_block(\"st\"), i)\n"),
            "compute_at: block st stores S and Q at different iter vars");
}

// reindex(block, ("write", k)) (round 6; was "reindex of a written buffer is not supported").
TEST(Outsider6, ReindexWrite) {
  const char* mt = R"(func mt(A: f32[6, 4], B: f32[4, 5]) -> (C: f32[5, 6]) {
  for i, j, k in grid(6, 5, 4) {
    block C(vi: spatial(6) = i, vj: spatial(5) = j, vk: reduce(4) = k) {
      init { C[vj, vi] = 0.0 }
      C[vj, vi] = C[vj, vi] + A[vi, vk] * B[vk, vj]
    }
  }
})";
  Function g = applied(mt,
                       "  b = sch.get_block(\"C\")\n"
                       "  r = sch.reindex(b, (\"write\", 0))\n"
                       "  i, j, k = sch.get_loops(b)\n"
                       "  sch.parallel(i)\n"
                       "  sch.vectorize(sch.get_loops(r)[-1])\n");
  std::string t = print_function(*g);
  EXPECT_NE(t.find("alloc C_reindex: f32[6, 5]"), std::string::npos) << t;
  EXPECT_NE(t.find("C_reindex[vi, vj] = C_reindex[vi, vj] + A[vi, vk] * B[vk, vj]"), std::string::npos) << t;
  EXPECT_NE(t.find("C[vj, vi] = C_reindex[vi, vj]"), std::string::npos) << t;
  const char* acc = R"(func acc(A: f32[6, 4]) -> (C: f32[6]) {
  for i in serial(6) {
    block Z(vi: spatial(6) = i) {
      C[vi] = 1.0
    }
  }
  for i, k in grid(6, 4) {
    block C(vi: spatial(6) = i, vk: reduce(4) = k) {
      C[vi] = C[vi] + A[vi, vk]
    }
  }
})";
  EXPECT_EQ(refusal(acc, "  r = sch.reindex(sch.get_block(\"C\"), (\"write\", 0))\n"),
            "reindex: block C reads buffer C without an init (it accumulates into values written before it, "
            "which C_reindex would not hold)");
  const char* pred = R"(func pr(A: f32[6]) -> (C: f32[8]) {
  for i in serial(8) {
    block C(vi: spatial(8) = i) {
      where i < 6
      C[vi] = A[vi]
    }
  }
})";
  EXPECT_EQ(
      refusal(pred, "  r = sch.reindex(sch.get_block(\"C\"), (\"write\", 0))\n"),
      "reindex: block C has a predicate (where i < 6): the copy-back would copy elements it does not write");
  const char* red_idx = R"(func ri(A: f32[6, 4]) -> (C: f32[4]) {
  for i, k in grid(6, 4) {
    block C(vi: reduce(6) = i, vk: spatial(4) = k) {
      init { C[vk] = 0.0 }
      C[vk] = C[vk] + A[vi, vk]
    }
  }
})";
  Function g2 = applied(red_idx, "  r = sch.reindex(sch.get_block(\"C\"), (\"write\", 0))\n");
  EXPECT_NE(print_function(*g2).find("C_reindex[vk] = C_reindex[vk] + A[vi, vk]"), std::string::npos)
      << print_function(*g2);
}

// pad_einsum (round 6).
TEST(Outsider6, PadEinsum) {
  const char* mm = R"(func mm(A: f32[10, 7], B: f32[7, 6]) -> (C: f32[10, 6]) {
  for i, j, k in grid(10, 6, 7) {
    block C(vi: spatial(10) = i, vj: spatial(6) = j, vk: reduce(7) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";
  Function g = applied(mm,
                       "  b = sch.get_block(\"C\")\n"
                       "  sch.pad_einsum(b, padding=[4, 4, 4])\n"
                       "  i, j, k = sch.get_loops(b)\n"
                       "  io, ii = sch.split(i, [None, 4])\n"
                       "  sch.parallel(io)\n");
  std::string t = print_function(*g);
  EXPECT_NE(t.find("alloc A_pad: f32[12, 8]"), std::string::npos) << t;
  EXPECT_NE(t.find("A_pad[v0, v1] = if_then_else(v0 < 10 && v1 < 7, A[v0, v1], 0.0)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("C[vi, vj] = C_pad[vi, vj]"), std::string::npos) << t;
  EXPECT_EQ(t.find("where"), std::string::npos) << t;
  // Already a multiple: nothing changes.
  Module m = parse_module(mm, "m.tir");
  expect_same(apply_lines(mm, "  sch.pad_einsum(sch.get_block(\"C\"), [2, 3, 7])\n"), m.funcs.at(0));
  const char* mx = R"(func mx(A: f32[10, 7]) -> (C: f32[10]) {
  for i, k in grid(10, 7) {
    block C(vi: spatial(10) = i, vk: reduce(7) = k) {
      init { C[vi] = min_value(f32) }
      C[vi] = max(C[vi], A[vi, vk])
    }
  }
})";
  EXPECT_EQ(
      refusal(mx, "  sch.pad_einsum(sch.get_block(\"C\"), [4, 4])\n"),
      "pad_einsum: padding the reduce iter var vk of block C adds terms that are not zero (only a sum of "
      "products with a factor loaded from a zero-padded input indexed by vk can be padded along its "
      "reduction)");
  // Padding only the spatial var of the max reduction is fine.
  applied(mx, "  sch.pad_einsum(sch.get_block(\"C\"), [4, 1])\n");
  const char* shift = R"(func sh(A: f32[12]) -> (C: f32[10]) {
  for i in serial(10) {
    block C(vi: spatial(10) = i) {
      C[vi] = A[vi + 2]
    }
  }
})";
  EXPECT_EQ(
      refusal(shift, "  sch.pad_einsum(sch.get_block(\"C\"), [4])\n"),
      "pad_einsum: the access A[vi + 2] of block C is not an einsum access (each index an iter var or a "
      "constant)");
  EXPECT_EQ(
      refusal(mm,
              "  b = sch.get_block(\"C\")\n  i, j, k = sch.get_loops(b)\n  sch.split(i, [2, 5])\n"
              "  sch.pad_einsum(b, [4, 4, 4])\n"),
      "pad_einsum: block C has 3 iter vars under 4 loops (each iter var must be bound to its own loop)");
  EXPECT_EQ(refusal(mm, "  sch.pad_einsum(sch.get_block(\"C\"), [4, 4])\n"),
            "pad_einsum: block C has 3 iter vars but the padding has 2 factors");
}

// Newer TVM prints split's disable_predication (round 6).
TEST(Outsider6, SplitDisablePredication) {
  expect_same(applied(kMM, kGetC + "  a, b2 = sch.split(loop=i, factors=[None, 8], preserve_unit_iters=True, "
                                   "disable_predication=False)\n"),
              apply_lines(kMM, kGetC + "  a, b2 = split(i, [3, 8])\n"));
  expect_same(applied(kMM, kGetC + "  a, b2 = sch.split(i, [None, 6], disable_predication=True)\n"),
              apply_lines(kMM, kGetC + "  a, b2 = split(i, [4, 6])\n"));
  EXPECT_EQ(
      refusal(kMM, kGetC + "  a, b2 = sch.split(i, [None, 5], disable_predication=True)\n"),
      "split: disable_predication=True, but the factors do not divide the extent of loop i (the iterations "
      "past it would run: TVM leaves that to the user; drop it to get the predicate)");
}

// Found by the fuzzer (pad_einsum and reindex were added to it): a block that runs part of its
// domain (`serial(2, 6)` binding an iter var of extent 6) or stores a diagonal.
TEST(Outsider6, CopyBackCoversWhatTheBlockWrites) {
  const char* part = R"(func part(G: f32[4, 4]) -> (X: f32[4, 6]) {
  for i, j in grid(4, 6) {
    block Z(vi: spatial(4) = i, vj: spatial(6) = j) {
      X[vi, vj] = 0.0
    }
  }
  for i in serial(4) {
    for j in serial(2, 6) {
      block P(vi: spatial(4) = i, vj: spatial(6) = j) {
        X[vi, vj] = G[vi, vj - 2]
      }
    }
  }
})";
  EXPECT_EQ(
      refusal(part, "  r = sch.reindex(sch.get_block(\"P\"), (\"write\", 0))\n"),
      "reindex: block P does not run every point of its iteration domain once (the copy-back covers the "
      "whole domain)");
  EXPECT_EQ(
      refusal(part, "  sch.pad_einsum(sch.get_block(\"P\"), [4, 4])\n"),
      "pad_einsum: iter var vj of block P is not bound to its own loop of extent 6 (TVM's trivial binding)");
  const char* diag = R"(func diag(A: f32[5]) -> (D: f32[5, 5]) {
  for i, j in grid(5, 5) {
    block Z(vi: spatial(5) = i, vj: spatial(5) = j) {
      D[vi, vj] = 0.0
    }
  }
  for i in serial(5) {
    block S(vi: spatial(5) = i) {
      D[vi, vi] = A[vi] * 2.0
    }
  }
})";
  std::string t = print_function(*applied(diag, "  sch.pad_einsum(sch.get_block(\"S\"), [4])\n"));
  EXPECT_NE(t.find("D[vi, vi] = D_pad[vi, vi]"), std::string::npos) << t;
  std::string r = print_function(*applied(diag, "  x = sch.reindex(sch.get_block(\"S\"), \"D\")\n"));
  EXPECT_NE(r.find("D[vi, vi] = D_reindex[vi]"), std::string::npos) << r;
  const char* cond = R"(func cond(A: f32[6]) -> (C: f32[6]) {
  for i in serial(6) {
    block Z(vi: spatial(6) = i) {
      C[vi] = 0.0
    }
  }
  for i in serial(6) {
    block S(vi: spatial(6) = i) {
      if A[vi] > 0.0 {
        C[vi] = A[vi]
      }
    }
  }
})";
  EXPECT_EQ(
      refusal(cond, "  x = sch.reindex(sch.get_block(\"S\"), (\"write\", 0))\n"),
      "reindex: block S stores C under a condition (the copy-back would copy elements it does not write)");
  EXPECT_EQ(
      refusal(cond, "  sch.pad_einsum(sch.get_block(\"S\"), [4])\n"),
      "pad_einsum: block S stores C under a condition (the copy-back would copy elements it does not write)");
}

}  // namespace
}  // namespace tirc

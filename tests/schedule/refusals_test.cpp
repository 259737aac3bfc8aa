// Every refusal path of the primitives, with its exact message. A refused instruction is
// reported at its own line as "FILE:LINE:COL: error: <primitive>: <reason>".
#include <gtest/gtest.h>

#include <sstream>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

const char* kMM = R"(func mm(A: f32[16, 8], B: f32[8, 12]) -> (C: f32[16, 12]) {
  for i, j, k in grid(16, 12, 8) {
    block C(vi: spatial(16) = i, vj: spatial(12) = j, vk: reduce(8) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
})";

const char* kEW = R"(func ew(A: f32[10, 6]) -> (C: f32[10, 6]) {
  alloc B: f32[10, 6]
  for i, j in grid(10, 6) {
    block B(vi: spatial(10) = i, vj: spatial(6) = j) {
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
  for i, j in grid(10, 6) {
    block C(vi: spatial(10) = i, vj: spatial(6) = j) {
      C[vi, vj] = B[vi, vj] + 1.0
    }
  }
})";

// A producer with a halo: conv1d reading P[vx + vr].
const char* kConv = R"(func conv(X: f32[10], W: f32[3]) -> (Y: f32[8]) {
  alloc P: f32[10]
  for h in serial(10) {
    block pad(vh: spatial(10) = h) {
      P[vh] = X[vh] * 2.0
    }
  }
  for x, r in grid(8, 3) {
    block conv(vx: spatial(8) = x, vr: reduce(3) = r) {
      init { Y[vx] = 0.0 }
      Y[vx] += P[vx + vr] * W[vr]
    }
  }
})";

const char* kScan = R"(func cs(X: f32[3, 6]) -> (Y: f32[3, 6]) {
  for i, j in grid(3, 6) {
    block scan(vi: spatial(3) = i, vj: scan(6) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] + X[vi, vj])
    }
  }
})";

const char* kSym = R"(func sym(n: i32, A: f32[n]) -> (B: f32[n]) {
  for i in serial(n) {
    block B(vi: spatial(n) = i) {
      B[vi] = A[vi] + 1.0
    }
  }
})";

const char* kTri = R"(func tri(A: f32[8, 8]) -> (B: f32[8, 8]) {
  for i in serial(8) {
    for j in serial(i + 1) {
      block B(vi: spatial(8) = i, vj: spatial(8) = j) {
        B[vi, vj] = A[vi, vj]
      }
    }
  }
})";

// Applies the instruction lines to the function of func_text; expects the last one to be
// refused at its line and returns the message without the position.
std::string refusal(const std::string& func_text, const std::string& lines) {
  std::string name = func_text.substr(5, func_text.find('(') - 5);
  std::string src = func_text + "\n\nschedule " + name + " {\n" + lines + "}\n";
  int func_lines = 1;
  for (char c : func_text) func_lines += c == '\n';
  int n_instr = 0;
  for (char c : lines) n_instr += c == '\n';
  int want_line = func_lines + 2 + n_instr;  // the last instruction
  Module m = parse_module(src, "t.tir");
  try {
    apply_schedule(*m.find_func(name), m.schedules.at(0));
  } catch (const SourceError& e) {
    EXPECT_EQ(e.line(), want_line) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("t.tir:" + std::to_string(e.line()) + ":", 0), 0u) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "not refused:\n" << lines;
  return "";
}

const std::string kGetC = "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n";

TEST(Refusal, Handles) {
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"X\")\n"), "get_block: no block named \"X\" in function mm");
  EXPECT_EQ(refusal(kMM, "  b = get_block(C)\n"),
            "get_block: the block name must be a string literal, e.g. get_block(\"C\")");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  i, j = get_loops(b)\n"),
            "get_loops: block C has 3 loops, but 2 names are bound");
  EXPECT_EQ(refusal(kMM, "  parallel(q)\n"), "parallel: unknown handle 'q'");
  EXPECT_EQ(refusal(kMM, kGetC + "  parallel(b)\n"), "parallel: 'b' is a block handle, expected a loop");
  EXPECT_EQ(refusal(kMM, kGetC + "  compute_inline(i)\n"),
            "compute_inline: 'i' is a loop handle, expected a block");
  EXPECT_EQ(refusal(kMM, kGetC + "  i0, i1 = split(i, [4, 4])\n  parallel(i)\n"),
            "parallel: loop 'i' no longer exists (replaced by an earlier primitive)");
  EXPECT_EQ(refusal(kEW, "  b = get_block(\"B\")\n  compute_inline(b)\n  compute_inline(b)\n"),
            "compute_inline: block B no longer exists (removed by an earlier primitive)");
  EXPECT_EQ(refusal(kMM, kGetC + "  parallel(i, j)\n"), "parallel: expected 1 argument, got 2");
  EXPECT_EQ(refusal(kMM, kGetC + "  x = parallel(i)\n"), "parallel: returns 0 handles, but 1 name is bound");
  // One name binds a list (lists_test.cpp); several must match the count.
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b, c = split(i, [4, 4])\n"),
            "split: returns 2 handles, but 3 names are bound");
  EXPECT_EQ(refusal(kMM, kGetC + "  x = get_child_blocks(i)\n  y, z = get_child_blocks(i)\n"),
            "get_child_blocks: 'i' has 1 child block, but 2 names are bound");
}

TEST(Refusal, UnknownPrimitive) {
  Module m = parse_module(std::string(kMM) + "\nschedule mm {\n  frobnicate()\n}\n", "t.tir");
  try {
    apply_schedule(*m.funcs[0], m.schedules[0]);
    FAIL();
  } catch (const SourceError& e) {
    EXPECT_EQ(e.message(), "unknown schedule primitive 'frobnicate'");
  }
}

TEST(Refusal, Split) {
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b2 = split(i, [2, 4])\n"),
            "split: factors multiply to 8, less than the extent 16 of loop i");
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b2 = split(i, [_, _])\n"),
            "split: at most one factor may be inferred (_ or None)");
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b2 = split(i, [0, _])\n"), "split: factor 0 is not positive");
  EXPECT_EQ(refusal(kMM, kGetC + "  a = split(i, [16])\n"), "split: needs at least 2 factors, got 1");
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b2 = split(i, 4)\n"),
            "split: the factors must be a list, e.g. [_, 8]");
  EXPECT_EQ(refusal(kMM, kGetC + "  a, b2 = split(i, [x, 4])\n"),
            "split: a factor must be a positive integer or _");
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(i, \"blockIdx.x\")\n  a, b2 = split(i, [_, 4])\n"),
            "split: loop i is bound to blockIdx.x; split it before binding it");
  EXPECT_EQ(
      refusal(kSym, "  b = get_block(\"B\")\n  i = get_loops(b)\n  a, c = split(i, [4, 4])\n"),
      "split: loop i has a symbolic extent that the factors (product 16) may not cover; write _ (or None) "
      "for one factor");
}

TEST(Refusal, Fuse) {
  EXPECT_EQ(refusal(kMM, kGetC + "  f = fuse(i, k)\n"),
            "fuse: loops i and k are not adjacent (the second must be the whole body of the first)");
  EXPECT_EQ(refusal(kMM, kGetC + "  f = fuse(j, i)\n"),
            "fuse: loops j and i are not adjacent (the second must be the whole body of the first)");
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(j, \"threadIdx.x\")\n  f = fuse(i, j)\n"),
            "fuse: loop j is bound to threadIdx.x; fuse it before binding it");
  EXPECT_EQ(refusal(kTri, "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  f = fuse(i, j)\n"),
            "fuse: the range of loop j depends on loop i");
  EXPECT_EQ(refusal(kMM, kGetC + "  f = fuse(i, i)\n"), "fuse: loop i is given twice");
}

TEST(Refusal, Reorder) {
  EXPECT_EQ(
      refusal(kEW,
              "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  i, j = get_loops(b)\n"
              "  i2, j2 = get_loops(c)\n  reorder(j, i2)\n"),
      "reorder: loop j (around block B) is not inside loop i (around block C); the loops must be nested");
  EXPECT_EQ(refusal(kConv,
                    "  p = get_block(\"pad\")\n  c = get_block(\"conv\")\n  x, r = get_loops(c)\n"
                    "  compute_at(p, x)\n  x2, h = get_loops(p)\n  reorder(h, x)\n"),
            "reorder: the loops do not form a perfect nest: the body of loop x is not a single loop");
  EXPECT_EQ(refusal(kTri, "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  reorder(j, i)\n"),
            "reorder: the range of loop j depends on loop i");
  // Moving the independent rows inside the scan loop is legal (outsider round 8); reversing
  // the two parts of the split scan loop is not.
  EXPECT_EQ(
      refusal(kScan,
              "  b = get_block(\"scan\")\n  i, j = get_loops(b)\n  jo, ji = split(j, [2, 3])\n"
              "  reorder(ji, jo)\n"),
      "reorder: loop ji would move across loop jo: both feed the scan or reduce iter vars of block scan, "
      "whose iterations are ordered");
  EXPECT_EQ(
      refusal(kMM, kGetC + "  f = fuse(j, k)\n  reorder(f, i)\n"),
      "reorder: loop f feeds both spatial and reduce iter vars of block C, so reordering could move the "
      "first iteration of the reduction");
  // Two blocks sharing a buffer under the nest, not partitioned by its loops (a temporary
  // reused by every iteration). With B computed at j instead, every iteration has its own
  // elements and the reorder is accepted (tests/schedule/tvm_style).
  const char* shared_tmp = R"(func sh2(A: f32[8, 4]) -> (C: f32[8, 4]) {
  alloc T: f32[1]
  for i, j in grid(8, 4) {
    block t(vi: spatial(8) = i, vj: spatial(4) = j) {
      T[0] = A[vi, vj] * 2.0
    }
    block c(vi: spatial(8) = i, vj: spatial(4) = j) {
      C[vi, vj] = T[0] + 1.0
    }
  }
})";
  EXPECT_EQ(refusal(shared_tmp, "  b = get_block(\"c\")\n  i, j = get_loops(b)\n  reorder(j, i)\n"),
            "reorder: the loop nest has blocks t and c that both access buffer T (t writes it)");
}

TEST(Refusal, LoopKinds) {
  EXPECT_EQ(refusal(kMM, kGetC + "  parallel(k)\n"),
            "parallel: loop k is bound to the reduce iter var vk of block C");
  EXPECT_EQ(refusal(kMM, kGetC + "  vectorize(k)\n"),
            "vectorize: loop k is bound to the reduce iter var vk of block C");
  EXPECT_EQ(refusal(kSym, "  b = get_block(\"B\")\n  i = get_loops(b)\n  vectorize(i)\n"),
            "vectorize: loop i has a non-constant extent (as in TVM; split it by a constant inner factor, "
            "e.g. [None, 8], and vectorize the inner loop)");
  // (A bound loop may be rebound or unrolled since round 11, as in TVM: tvm_ported_a_test.cpp.)
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(i, \"warp.x\")\n"),
            "bind: unknown thread axis \"warp.x\" (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread)");
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(i, \"threadIdx.x\")\n  bind(j, \"threadIdx.x\")\n"),
            "bind: thread axis threadIdx.x is already bound by the enclosing loop i and the body of loop j "
            "depends on it");
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(j, \"threadIdx.x\")\n  bind(i, \"threadIdx.x\")\n"),
            "bind: thread axis threadIdx.x is already bound by the inner loop j and the body of loop j "
            "depends on it");
  // A reduce loop bound to threadIdx is a cross-thread reduction (accepted); across thread
  // blocks it is refused.
  EXPECT_EQ(refusal(kMM, kGetC + "  bind(k, \"blockIdx.x\")\n"),
            "bind: loop k is bound to the reduce iter var vk of block C");
  EXPECT_EQ(refusal(kScan, "  b = get_block(\"scan\")\n  i, j = get_loops(b)\n  parallel(j)\n"),
            "parallel: loop j is bound to the scan iter var vj of block scan");
  // A temporary reused by every iteration: a real race.
  const char* tmp = R"(func sh(A: f32[8]) -> (C: f32[8]) {
  alloc T: f32[1]
  for i in serial(8) {
    block t(vi: spatial(8) = i) {
      T[0] = A[vi] * 2.0
    }
    block c(vi: spatial(8) = i) {
      C[vi] = T[0] + 1.0
    }
  }
})";
  EXPECT_EQ(refusal(tmp, "  b = get_block(\"c\")\n  i = get_loops(b)\n  parallel(i)\n"),
            "parallel: loop i: iterations share the scratch buffer T (written by block t): index it by the "
            "loop or allocate it in the block");
}

// A function-level scratch buffer written and read by one block in every iteration (the
// interpreter's scratch-alloc exception): one buffer for all iterations, a race once they
// run at once. parallel, vectorize and bind refuse it; the same buffer indexed by the loop,
// or allocated in the block, is accepted.
TEST(Refusal, ScratchShared) {
  const char* one = R"(func sc(A: f32[4, 8]) -> (C: f32[4, 8]) {
  alloc T: f32[1]
  for o, i in grid(4, 8) {
    block c(vo: spatial(4) = o, vi: spatial(8) = i) {
      T[0] = A[vo, vi] * 2.0
      C[vo, vi] = T[0] + 1.0
    }
  }
})";
  const std::string get = "  o, i = get_loops(get_block(\"c\"))\n";
  EXPECT_EQ(refusal(one, get + "  parallel(o)\n"),
            "parallel: loop o: iterations share the scratch buffer T (written by block c): index it by the "
            "loop or allocate it in the block");
  EXPECT_EQ(refusal(one, get + "  parallel(i)\n"),
            "parallel: loop i: iterations share the scratch buffer T (written by block c): index it by the "
            "loop or allocate it in the block");
  EXPECT_EQ(refusal(one, get + "  vectorize(i)\n"),
            "vectorize: loop i: iterations share the scratch buffer T (written by block c): index it by the "
            "loop or allocate it in the block");
  EXPECT_EQ(refusal(one, get + "  bind(o, \"threadIdx.x\")\n"),
            "bind: loop o: iterations share the scratch buffer T (written by block c): index it by the "
            "loop or allocate it in the block");
  // Written in the loop, read after it: the value left by the last iteration.
  const char* after = R"(func la(A: f32[8]) -> (C: f32[1]) {
  alloc T: f32[1]
  for i in serial(8) {
    block w(vi: spatial(8) = i) {
      T[0] = A[vi]
    }
  }
  block r() {
    C[0] = T[0]
  }
})";
  EXPECT_EQ(refusal(after, "  i = get_loops(get_block(\"w\"))[0]\n  parallel(i)\n"),
            "parallel: loop i: iterations share the scratch buffer T (written by block w): index it by the "
            "loop or allocate it in the block");
  // Indexed by the loop: each iteration its own element.
  const char* idx = R"(func ix(A: f32[4, 8]) -> (C: f32[4, 8]) {
  alloc T: f32[4]
  for o, i in grid(4, 8) {
    block c(vo: spatial(4) = o, vi: spatial(8) = i) {
      T[vo] = A[vo, vi] * 2.0
      C[vo, vi] = T[vo] + 1.0
    }
  }
})";
  // A copy whose loop is fused (read as two loops by the recomputation check) but whose values
  // depend on the parallel loop: still a shared scratch.
  const char* fz = R"(func fz(A: f32[4, 16]) -> (C: f32[4, 16]) {
  alloc T: f32[4, 4]
  for i in serial(4) {
    for f in serial(16) {
      block t(vi: spatial(4) = i, a: spatial(4) = f // 4, b: spatial(4) = f % 4) {
        T[a, b] = A[vi, a * 4 + b] * 2.0
      }
    }
    for j in serial(16) {
      block c(vi: spatial(4) = i, vj: spatial(16) = j) {
        C[vi, vj] = T[vj // 4, vj % 4] + 1.0
      }
    }
  }
})";
  EXPECT_EQ(refusal(fz, "  i, j = get_loops(get_block(\"c\"))\n  parallel(i)\n"),
            "parallel: loop i: iterations share the scratch buffer T (written by block t): index it by the "
            "loop or allocate it in the block");
  Module ok = parse_module(std::string(idx) + "\nschedule ix {\n" + get + "  parallel(o)\n}\n", "t.tir");
  EXPECT_NO_THROW(apply_schedule(*ok.find_func("ix"), ok.schedules.at(0)));
  EXPECT_EQ(refusal(idx, get + "  parallel(i)\n"),
            "parallel: loop i: iterations share the scratch buffer T (written by block c): index it by the "
            "loop or allocate it in the block");
}

// A function-level buffer indexed by the loop, but read at an element another iteration writes
// (`T[vi - 1]`): the reason names the blocks, not "index it by the loop" (it is indexed by it).
TEST(Refusal, ScratchReadAcrossIterations) {
  const char* src = R"(func ac(A: f32[16, 32]) -> (B: f32[16, 32]) {
  alloc T: f32[16, 32]
  for i, j in grid(16, 32) {
    block X(vi: spatial(16) = i, vj: spatial(32) = j) {
      T[vi, vj] = A[vi, vj] * 2.0
    }
    block Y(vi: spatial(16) = i, vj: spatial(32) = j) {
      B[vi, vj] = if_then_else(vi > 0, T[vi - 1, vj], 0.0) + T[vi, vj]
    }
  }
})";
  const std::string get = "  i, j = get_loops(get_block(\"Y\"))\n";
  EXPECT_EQ(refusal(src, get + "  vectorize(i)\n"),
            "vectorize: loop i: blocks X, Y share buffer T across its iterations (no dimension of it is "
            "partitioned by the loop)");
  EXPECT_EQ(refusal(src, get + "  parallel(i)\n"),
            "parallel: loop i: blocks X, Y share buffer T across its iterations (no dimension of it is "
            "partitioned by the loop)");
  Module ok = parse_module(std::string(src) + "\nschedule ac {\n" + get + "  vectorize(j)\n}\n", "t.tir");
  EXPECT_NO_THROW(apply_schedule(*ok.find_func("ac"), ok.schedules.at(0)));
}

// Re-binding a thread axis inside a loop bound to it (TVM's cooperative fetch of a shared copy)
// is accepted only for a body independent of the outer loop, no longer than it, writing only
// "shared" buffers.
TEST(Refusal, RebindThreadAxis) {
  const char* src = R"(func rb(A: f32[64, 32]) -> (C: f32[64, 32]) {
  alloc S: f32[64, 32] scope "shared"
  alloc L: f32[64, 32] scope "local"
  for bi in thread_binding(4, "blockIdx.x") {
    for tx in thread_binding(16, "threadIdx.x") {
      for c in serial(32) {
        block S(vi: spatial(64) = bi * 16 + c // 2, vj: spatial(32) = c % 2 * 16) {
          S[vi, vj] = A[vi, vj]
        }
      }
      for c2 in serial(8) {
        block L(vi: spatial(64) = bi * 16 + c2, vj: spatial(32) = 0) {
          L[vi, vj] = A[vi, vj]
        }
      }
      for j in serial(32) {
        block C(vi: spatial(64) = bi * 16 + tx, vj: spatial(32) = j) {
          C[vi, vj] = if_then_else(vj % 16 == 0, S[vi, vj], 0.0) + if_then_else(vi % 16 < 8 && vj == 0, L[vi, vj], 0.0)
        }
      }
    }
  }
})";
  EXPECT_EQ(
      refusal(src, "  bi, tx, c = get_loops(get_block(\"S\"))\n  bind(c, \"threadIdx.x\")\n"),
      "bind: thread axis threadIdx.x is already bound by the enclosing loop tx and loop c is not known to "
      "be at most as long (32 > 16)");
  EXPECT_EQ(
      refusal(src, "  bi, tx, c = get_loops(get_block(\"L\"))\n  bind(c, \"threadIdx.x\")\n"),
      "bind: thread axis threadIdx.x is already bound by the enclosing loop tx and loop c2 writes buffer L, "
      "which is not \"shared\" (its other threads would not see the values)");
  Module ok = parse_module(std::string(src) +
                               "\nschedule rb {\n  bi, tx, c = get_loops(get_block(\"S\"))\n"
                               "  co, ci = split(c, [None, 16])\n  bind(ci, \"threadIdx.x\")\n}\n",
                           "t.tir");
  EXPECT_NO_THROW(apply_schedule(*ok.find_func("rb"), ok.schedules.at(0)));
}

// A scratch buffer indexed through splits of a fused loop (a cooperative copy: `F // 8`,
// `F % 8`) is partitioned by the loop when the recombined key F stays in one window per
// iteration; a reader of the previous iteration's elements still shares it.
TEST(Refusal, RecombinedSplitPartition) {
  auto src = [](const std::string& shift) {
    return std::string(R"(func rc(A: f32[8, 8]) -> (C: f32[8, 8]) {
  alloc T: f32[8, 8]
  for i in serial(8) {
    for f in serial(8) {
      block t(vi: spatial(8) = (i * 8 + f) // 8, vj: spatial(8) = (i * 8 + f) % 8) {
        T[vi, vj] = A[vi, vj] * 2.0
      }
    }
    for j in serial(8) {
      block c(vi: spatial(8) = i, vj: spatial(8) = j) {
        C[vi, vj] = if_then_else(vi * 8 + vj - )") +
           shift + R"( >= 0, T[(vi * 8 + vj - )" + shift + R"() // 8, (vi * 8 + vj - )" + shift +
           R"() % 8], 0.0)
      }
    }
  }
})";
  };
  const std::string get = "  i, j = get_loops(get_block(\"c\"))\n";
  Module ok = parse_module(src("0") + "\nschedule rc {\n" + get + "  parallel(i)\n}\n", "t.tir");
  EXPECT_NO_THROW(apply_schedule(*ok.find_func("rc"), ok.schedules.at(0)));
  EXPECT_EQ(refusal(src("8"), get + "  parallel(i)\n"),
            "parallel: loop i: blocks t, c share buffer T across its iterations (no dimension of it is "
            "partitioned by the loop)");
}

// Tiles of a fused loop: C[(t // 5) * 8 + ii, (t % 5) * 8 + ji] (ii, ji < 8) are disjoint per
// iteration of t (TVM's fuse-then-parallel of a tiled matmul); a reader of the tile one row up
// (a different offset) shares C across iterations.
TEST(Refusal, ScaledSplitTiles) {
  auto src = [](const std::string& shift) {
    return R"(func st(A: f32[48, 40]) -> (D: f32[48, 40]) {
  alloc C: f32[48, 40]
  for t in serial(30) {
    for ii, ji in grid(8, 8) {
      block C(vi: spatial(48) = t // 5 * 8 + ii, vj: spatial(40) = t % 5 * 8 + ji) {
        C[vi, vj] = A[vi, vj] * 2.0
      }
    }
    for ii, ji in grid(8, 8) {
      block D(vi: spatial(48) = t // 5 * 8 + ii, vj: spatial(40) = t % 5 * 8 + ji) {
        D[vi, vj] = if_then_else(vi - )" +
           shift + R"( >= 0, C[vi - )" + shift + R"(, vj], 0.0)
      }
    }
  }
})";
  };
  const std::string get = "  t = get_loops(get_block(\"C\"))[0]\n";
  Module ok = parse_module(src("0") + "\nschedule st {\n" + get + "  parallel(t)\n}\n", "t.tir");
  EXPECT_NO_THROW(apply_schedule(*ok.find_func("st"), ok.schedules.at(0)));
  EXPECT_EQ(refusal(src("8"), get + "  parallel(t)\n"),
            "parallel: loop t: blocks C, D share buffer C across its iterations (no dimension of it is "
            "partitioned by the loop)");
}

TEST(Refusal, SelfDependentBlock) {
  const char* src = R"(func sd(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block first(vi: spatial(8) = i) { Y[vi] = X[vi] }
  }
  for i in serial(7) {
    block acc(vi: spatial(7) = i) {
      Y[vi + 1] = Y[vi] + X[vi + 1]
    }
  }
})";
  EXPECT_EQ(refusal(src, "  b = get_block(\"acc\")\n  i = get_loops(b)\n  parallel(i)\n"),
            "parallel: loop i: block acc reads buffer Y at other elements than it writes, so its iterations "
            "depend on each other");
  EXPECT_EQ(
      refusal(
          src,
          "  b = get_block(\"acc\")\n  i = get_loops(b)\n  i0, i1 = split(i, [_, 2])\n  reorder(i1, i0)\n"),
      "reorder: the loop nest: block acc reads buffer Y at other elements than it writes, so its iterations "
      "depend on each other");
}

TEST(Refusal, Inline) {
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  compute_inline(b)\n"),
            "compute_inline: block C is a reduction");
  EXPECT_EQ(refusal(kEW, "  c = get_block(\"C\")\n  compute_inline(c)\n"),
            "compute_inline: block C writes buffer C, a parameter or output of the function");
  EXPECT_EQ(refusal(kScan, "  b = get_block(\"scan\")\n  compute_inline(b)\n"),
            "compute_inline: block scan has the scan iter var vj");
  EXPECT_EQ(refusal(kEW, "  b = get_block(\"B\")\n  reverse_compute_inline(b)\n"),
            "reverse_compute_inline: block B has no producer block");
  EXPECT_EQ(refusal(kConv, "  c = get_block(\"conv\")\n  reverse_compute_inline(c)\n"),
            "reverse_compute_inline: block conv is a reduction");
}

TEST(Refusal, ComputeAt) {
  EXPECT_EQ(
      refusal(kEW,
              "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  c = get_block(\"C\")\n  compute_at(c, i)\n"),
      "compute_at: block C has no consumer");
  EXPECT_EQ(refusal(kEW, "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  compute_at(b, j)\n"),
            "compute_at: block B is already inside loop j");
  EXPECT_EQ(refusal(kMM, kGetC + "  compute_at(b, i)\n"), "compute_at: block C is already inside loop i");
  EXPECT_EQ(refusal(kMM, R"(  b = get_block("C")
  i, j, k = get_loops(b)
  compute_at(b, k)
)"),
            "compute_at: block C is already inside loop k");
  // The consumer of P reads it; P's consumer is not under the pad loop.
  EXPECT_EQ(
      refusal(
          kConv,
          "  c = get_block(\"conv\")\n  p = get_block(\"pad\")\n  h = get_loops(p)\n  compute_at(c, h)\n"),
      "compute_at: block conv has no consumer");
  EXPECT_EQ(refusal(kEW,
                    "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  i, j = get_loops(c)\n"
                    "  reverse_compute_at(b, i)\n"),
            "reverse_compute_at: block B reads nothing produced under loop i");
  EXPECT_EQ(refusal(kConv,
                    "  p = get_block(\"pad\")\n  c = get_block(\"conv\")\n  h = get_loops(p)\n"
                    "  reverse_compute_at(c, h)\n"),
            "reverse_compute_at: the indices of the load of P in block conv are not distinct iter vars");
}

TEST(Refusal, ReverseComputeAtReduction) {
  const char* src = R"(func mr(A: f32[4, 6]) -> (D: f32[4]) {
  alloc S: f32[4]
  for i, k in grid(4, 6) {
    block S(vi: spatial(4) = i, vk: reduce(6) = k) {
      init { S[vi] = 0.0 }
      S[vi] += A[vi, vk]
    }
  }
  for i in serial(4) {
    block D(vi: spatial(4) = i) {
      D[vi] = S[vi] * 2.0
    }
  }
})";
  EXPECT_EQ(refusal(src,
                    "  s = get_block(\"S\")\n  i, k = get_loops(s)\n  d = get_block(\"D\")\n  "
                    "reverse_compute_at(d, k)\n"),
            "reverse_compute_at: loop k feeds the reduce iter var of producer S, so S is not final after an "
            "iteration of loop k");
}

TEST(Refusal, Caches) {
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_read(b, 7, \"shared\")\n"),
            "cache_read: block C has 2 read regions of buffers it does not write; index 7 is out of range");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_read(b, 1, \"texture\")\n"),
            "cache_read: unknown storage scope \"texture\" (expected global, shared or local)");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_read(b, 2, \"shared\")\n"),
            "cache_read: block C has 2 read regions of buffers it does not write; index 2 is out of range");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_read(b, \"C\", \"shared\")\n"),
            "cache_read: block C also writes buffer C");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_write(b, 1, \"local\")\n"),
            "cache_write: block C has 1 write region; index 1 is out of range");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_write(b, 0, 5)\n"),
            "cache_write: the storage scope must be a string literal");
}

TEST(Refusal, DecomposeReduction) {
  EXPECT_EQ(refusal(kEW, "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  x = decompose_reduction(b, i)\n"),
            "decompose_reduction: block B has no init");
  EXPECT_EQ(refusal(kMM, kGetC + "  reorder(k, i)\n  x = decompose_reduction(b, i)\n"),
            "decompose_reduction: loop k, outside loop i, feeds a reduce iter var of block C");
  EXPECT_EQ(refusal(kMM, kGetC + "  f = fuse(j, k)\n  x = decompose_reduction(b, f)\n"),
            "decompose_reduction: loop f feeds both spatial and reduce iter vars of block C");
}

TEST(Refusal, Rfactor) {
  EXPECT_EQ(refusal(kMM, kGetC + "  r = rfactor(i, 0)\n"),
            "rfactor: loop i feeds a spatial iter var of block C");
  EXPECT_EQ(refusal(kMM, kGetC + "  r = rfactor(k, 5)\n"),
            "rfactor: factor_axis 5 is out of range for buffer C");
  const char* bad_init = R"(func s1(A: f32[8]) -> (S: f32[1]) {
  for k in serial(8) {
    block S(v: spatial(1) = 0, vk: reduce(8) = k) {
      init { S[v] = 1.0 }
      S[v] = S[v] + A[vk]
    }
  }
})";
  EXPECT_EQ(refusal(bad_init, "  b = get_block(\"S\")\n  k = get_loops(b)\n  r = rfactor(k, 0)\n"),
            "rfactor: the init value of block S is not the identity of +");
  EXPECT_EQ(refusal(kEW, "  b = get_block(\"B\")\n  i, j = get_loops(b)\n  r = rfactor(j, 0)\n"),
            "rfactor: loop j feeds a spatial iter var of block B");
}

TEST(Refusal, Others) {
  EXPECT_EQ(refusal(kMM, kGetC + "  tensorize(i, \"mma\")\n"),
            "tensorize: unknown intrinsic \"mma\" (the module defines no intrin)");
  EXPECT_EQ(refusal(kMM, kGetC + "  annotate(i, \"k\", j)\n"),
            "annotate: the annotation value must be an int, float or string literal");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"root\")\n  compute_inline(b)\n"),
            "compute_inline: the root block cannot be scheduled");
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

Function scheduled(const std::string& func_text, const std::string& lines) {
  std::string name = func_text.substr(5, func_text.find('(') - 5);
  Module m = parse_module(func_text + "\n\nschedule " + name + " {\n" + lines + "}\n", "k.tir");
  return apply_schedule(*m.find_func(name), m.schedules.at(0));
}

// TVM's keyword spellings give the same result as the positional forms.
TEST(Keywords, SameAsPositional) {
  auto same = [](const std::string& f, const std::string& a, const std::string& b) {
    Function x = scheduled(f, a), y = scheduled(f, b);
    auto d = structural_diff(*x, *y);
    EXPECT_FALSE(d.has_value()) << *d << "\n" << a;
  };
  same(kMM, kGetC + "  k0, k1 = split(k, factors=[_, 2])\n  r = rfactor(k1, factor_axis=1)\n",
       kGetC + "  k0, k1 = split(k, [_, 2])\n  r = rfactor(k1, 1)\n");
  same(kMM,
       "  b = get_block(\"C\", func_name=\"mm\")\n  x = cache_read(b, \"A\", storage_scope=\"shared\")\n",
       "  b = get_block(\"C\")\n  x = cache_read(b, 0, \"shared\")\n");
  same(kEW,
       "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  i, j = get_loops(c)\n  compute_at(b, i, "
       "preserve_unit_loops=1)\n",
       "  b = get_block(\"B\")\n  c = get_block(\"C\")\n  i, j = get_loops(c)\n  compute_at(b, i)\n");
}

TEST(Keywords, Refusals) {
  EXPECT_EQ(refusal(kMM, kGetC + "  parallel(loop=i, x=1)\n"), "parallel: unknown keyword argument 'x'");
  EXPECT_EQ(refusal(kMM, kGetC + "  r = rfactor(k, loop=k)\n"), "rfactor: argument loop is given twice");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\", func_name=\"other\")\n"),
            "get_block: func_name \"other\" does not name the scheduled function mm");
  EXPECT_EQ(refusal(kMM, "  b = get_block(\"C\")\n  x = cache_write(b, \"A\", \"local\")\n"),
            "cache_write: block C does not write a buffer named A");
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// A scan depends on earlier iterations along its scan var only: the rows stay independent.
TEST(Accepted, ParallelRowsOfAScan) {
  Function g = scheduled(kScan, "  b = get_block(\"scan\")\n  i, j = get_loops(b)\n  parallel(i)\n");
  auto* f = g->body.as<BlockRealizeNode>()->block->body.as<ForNode>();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->for_kind, ForKind::Parallel);
}

}  // namespace
}  // namespace tirc

#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

// Regression (fuzzer): a consumer indexing the producer's buffer through a load
// (W[I[vi], vj]) must not make compute_at evaluate that load outside the consumer's
// predicate; the producer then computes the whole dimension per iteration.
TEST(Accepted, ComputeAtWithDataDependentIndex) {
  const char* take = R"(func take(W: f32[10, 4], I: i32[6] in [0, 9]) -> (Y: f32[6, 4]) {
  for i, j in grid(6, 4) {
    block Y(vi: spatial(6) = i, vj: spatial(4) = j) {
      Y[vi, vj] = W[I[vi], vj]
    }
  }
})";
  std::string lines =
      "  y = get_block(\"Y\")\n  i, j = get_loops(y)\n  s0, s1, s2 = split(i, [1, 8, _])\n"
      "  c = cache_read(y, 0, \"shared\")\n  compute_at(c, s2)\n";
  Function g = scheduled(take, lines);
  Module m = parse_module(take, "take.tir");
  CompareResult r = compare_functions(*m.funcs[0], *g, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
}

// `prim(...)[k]`: TVM's list indexing (round 3). Out of range, several names, and a primitive
// that returns one handle are refused; the printed item keeps the `[k]` form (a fixpoint).
TEST(Refusal, IndexedHandles) {
  EXPECT_EQ(refusal(kMM, kGetC + "  l = get_loops(b)[3]\n"),
            "get_loops: index 3 is out of range: get_loops returns 3 handles");
  EXPECT_EQ(refusal(kMM, kGetC + "  l = get_loops(b)[-4]\n"),
            "get_loops: index -4 is out of range: get_loops returns 3 handles");
  EXPECT_EQ(refusal(kMM, kGetC + "  x, y = get_loops(b)[0]\n"),
            "get_loops: an indexed result `get_loops(...)[0]` binds exactly one name");
  EXPECT_EQ(refusal(kMM, kGetC + "  x = fuse(i, j)[0]\n"),
            "fuse: only get_loops, get_child_blocks, get_producers, get_consumers, split and cache_inplace "
            "return several handles; fuse(...) cannot be indexed");
}

TEST(Accepted, IndexedHandles) {
  std::string lines =
      "  c = get_block(\"C\")\n  k = get_loops(c)[-1]\n  jo = split(get_loops(c)[1], [None, 4])[0]\n"
      "  reorder(get_loops(c)[0], k, jo)\n  vectorize(get_loops(c)[-1])\n";
  Function g = scheduled(kMM, lines);
  std::string text = print_function(*g);
  // reorder puts i, k, jo_0 at the places of i, jo_0, k (TVM): jo_1 stays in between.
  EXPECT_NE(
      text.find("    for k in serial(8) {\n      for jo_1 in serial(4) {\n        for jo_0 in vectorized(3)"),
      std::string::npos)
      << text;
  Module m = parse_module(std::string(kMM) + "\nschedule mm {\n" + lines + "}\n", "mm.tir");
  std::string printed = print_module(m);
  EXPECT_NE(printed.find("  k = get_loops(c)[-1]\n  _0 = get_loops(c)[1]\n  jo = split(_0, [None, 4])[0]\n"),
            std::string::npos)
      << printed;
  EXPECT_EQ(print_module(parse_module(printed, "again.tir")), printed);
  CompareResult r = compare_functions(*m.funcs[0], *g, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
}

// compute_at of an output whose every dimension would be computed whole in each iteration:
// the output would be written once per iteration (round 3, next to the accepted symbolic rows).
TEST(Refusal, ComputeAtOutputWholeEveryIteration) {
  const char* f = R"(func f(n: i32, A: f32[n, n]) -> (C: f32[n, n], D: f32[n]) {
  for i, j in grid(n, n) {
    block C(vi: spatial(n) = i, vj: spatial(n) = j) { C[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, k in grid(n, n) {
    block D(vi: spatial(n) = i, vk: reduce(n) = k) {
      init { D[vi] = 0.0 }
      D[vi] += C[vk, vk]
    }
  }
})";
  EXPECT_EQ(
      refusal(f, "  d = get_block(\"D\")\n  i, k = get_loops(d)\n  compute_at(get_block(\"C\"), i)\n"),
      "compute_at: the parts of C computed in the iterations of loop i do not cover it exactly once (C is an "
      "output)");
}

}  // namespace
}  // namespace tirc

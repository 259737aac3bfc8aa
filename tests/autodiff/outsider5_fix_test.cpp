// Fixes found by the fifth outsider round (tests/zoo/outsider5): each test failed before.
#include <gtest/gtest.h>

#include <string>

#include "interp/stats.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/autodiff/normalize.h"

namespace tirc {
namespace {

using testing::check_rewrite;
using testing::contains;
using testing::parse_one;
using testing::refusal;

// Rewrite 0b: a function-level `let` (a value of literals / scalar params) used inside a
// block body. F_grad's adjoint blocks are built from the block bodies, outside the let:
// `tirc grad` printed them reading an unbound `two` ("block b_dX: unbound variable two").
TEST(Outsider5Fix, FunctionLevelLetUsedInABlock) {
  const char* src = R"(func fl(X: f32[8], W: f32[8]) -> (Y: f32[8]) {
  let half = 0.5
  let two = 2
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      let w = W[(vi + two) % 8]
      Y[vi] = X[vi] * w * half + X[vi] * X[vi]
    }
  }
})";
  std::string text = check_rewrite(src, "fl");
  EXPECT_FALSE(contains(text, "let two")) << text;
  EXPECT_TRUE(contains(text, "W[(vi + 2) % 8]")) << text;
}

// Rewrite 5b: TVM's blockize output, an outer block with a reduce var and an init that
// hold only nested blocks. It was refused ("block outer: a loop in init is not supported").
TEST(Outsider5Fix, BlockizedReductionIsDissolved) {
  const char* src = R"(func bz(A: f32[5, 6], B: f32[6]) -> (C: f32[5]) {
  for io, ko in grid(3, 2) {
    block outer(vio: spatial(3) = io, vko: reduce(2) = ko) {
      init {
        for ii in serial(2) {
          block c_init(vi: spatial(5) = vio * 2 + ii) {
            where vio * 2 + ii < 5
            C[vi] = B[vi] * 0.5
          }
        }
      }
      for ii, ki in grid(2, 3) {
        block inner(vi: spatial(5) = vio * 2 + ii, vk: reduce(6) = vko * 3 + ki) {
          where vio * 2 + ii < 5
          C[vi] = C[vi] + A[vi, vk] * B[vk] * B[vk]
        }
      }
    }
  }
})";
  std::string text = check_rewrite(src, "bz");
  EXPECT_FALSE(contains(text, "block outer")) << text;
  EXPECT_TRUE(contains(text, "where ko == 0 && io * 2 + ii < 5")) << text;
}

// An outer block whose body stores on its own (not only through nested blocks) is left as
// written: gradient() keeps its refusal.
TEST(Outsider5Fix, OuterBlockWithOwnStoresStaysRefused) {
  const char* src = R"(func ob(A: f32[4, 6]) -> (C: f32[4], D: f32[2]) {
  for io, ko in grid(2, 2) {
    block outer(vio: spatial(2) = io, vko: reduce(2) = ko) {
      init { D[vio] = 0.0 }
      D[vio] = D[vio] + 1.0
      for ii, ki in grid(2, 3) {
        block inner(vi: spatial(4) = vio * 2 + ii, vk: reduce(6) = vko * 3 + ki) {
          init { C[vi] = 0.0 }
          C[vi] = C[vi] + A[vi, vk]
        }
      }
    }
  }
})";
  EXPECT_EQ(refusal(src, "ob"), "block outer: loops inside a block body are not supported");
}

// Rewrite 10: a running max / min written as a conditional replacement, with the argmax
// updated under the same condition. It was refused ("block r: unsupported reduction update
// of M ...").
TEST(Outsider5Fix, ConditionalReplacementIsAMaxReduction) {
  const char* src = R"(func ca(X: f32[4, 6]) -> (M: f32[4], A: i32[4], N: f32[4]) {
  for i, k in grid(4, 6) {
    block r(vi: spatial(4) = i, vk: reduce(6) = k) {
      init {
        M[vi] = min_value(f32)
        A[vi] = -1
        N[vi] = max_value(f32)
      }
      if X[vi, vk] > M[vi] {
        M[vi] = X[vi, vk]
        A[vi] = vk
      }
      if N[vi] >= X[vi, vk] * 2.0 { N[vi] = X[vi, vk] * 2.0 }
    }
  }
})";
  std::string text = check_rewrite(src, "ca");
  EXPECT_TRUE(contains(text, "A[vi] = select(X[vi, vk] > M[vi], vk, A[vi])")) << text;
  EXPECT_TRUE(contains(text, "M[vi] = max(M[vi], X[vi, vk])")) << text;
  EXPECT_TRUE(contains(text, "N[vi] = min(N[vi], X[vi, vk] * 2.0)")) << text;
}

// The same form as an in-place update by a spatial block (a clamp from below).
TEST(Outsider5Fix, ConditionalReplacementInPlace) {
  const char* src = R"(func cr(X: f32[8], Z: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block a(vi: spatial(8) = i) { Y[vi] = X[vi] * X[vi] }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if Y[vi] < Z[vi] { Y[vi] = Z[vi] }
    }
  }
})";
  std::string text = check_rewrite(src, "cr");
  EXPECT_TRUE(contains(text, "Y[vi] = max(Y[vi], Z[vi])")) << text;
}

// Another store under the condition that reads the running max would see the new value:
// not rewritten, still refused.
TEST(Outsider5Fix, ConditionalReplacementReadByAnotherStoreStaysRefused) {
  const char* src = R"(func cn(X: f32[4, 6]) -> (M: f32[4], S: f32[4]) {
  for i, k in grid(4, 6) {
    block r(vi: spatial(4) = i, vk: reduce(6) = k) {
      init {
        M[vi] = min_value(f32)
        S[vi] = 0.0
      }
      if X[vi, vk] > M[vi] {
        M[vi] = X[vi, vk]
        S[vi] = S[vi] + M[vi]
      }
    }
  }
})";
  EXPECT_TRUE(contains(refusal(src, "cn"), "block r: ")) << refusal(src, "cn");
}

// Rewrites 0 and 4 with opaque vars (8): C-style plain loops whose accumulator is set by
// `if k == 1` over serial(1, 5). Rewrite 0 wrapped the guarded store and the accumulation
// in two blocks ("block C: opaque iter vars are not supported"); now they share one block,
// and the guard `vk + 1 == 1` is read as the first reduce iteration.
TEST(Outsider5Fix, CStyleHandWrittenInit) {
  const char* src = R"(func pc(A: f32[3, 4], B: f32[4]) -> (C: f32[3]) {
  for i in serial(3) {
    for k in serial(1, 5) {
      if k == 1 { C[i] = B[0] * 2.0 }
      C[i] += A[i, k - 1] * B[k - 1]
    }
  }
})";
  std::string text = check_rewrite(src, "pc");
  EXPECT_TRUE(contains(text, "init {")) << text;
}

// The same with an explicit opaque block.
TEST(Outsider5Fix, OpaqueBlockHandWrittenInit) {
  const char* src = R"(func oi(X: f32[3, 4]) -> (Y: f32[3]) {
  for i, k in grid(3, 4) {
    block r(vi: opaque(3) = i, vk: opaque(4) = k) {
      if vk == 0 { Y[vi] = 1.0 }
      Y[vi] = Y[vi] + X[vi, vk] * X[vi, vk]
    }
  }
})";
  std::string text = check_rewrite(src, "oi");
  EXPECT_TRUE(contains(text, "vk: reduce(4) = k")) << text;
}

// With the reduce loop running backwards, `vk == 0` is the last iteration: the guarded
// store would discard the earlier terms, so it is no init. Left as written and refused.
TEST(Outsider5Fix, OpaqueHandWrittenInitOnAReversedLoopStaysRefused) {
  const char* src = R"(func orv(X: f32[3, 4]) -> (Y: f32[3]) {
  for i, k in grid(3, 4) {
    block r(vi: opaque(3) = i, vk: opaque(4) = 3 - k) {
      if vk == 0 { Y[vi] = 1.0 }
      Y[vi] = Y[vi] + X[vi, vk] * X[vi, vk]
    }
  }
})";
  EXPECT_TRUE(contains(refusal(src, "orv"), "block r: ")) << refusal(src, "orv");
}

// Rewrite 0c: compute_at / cache_read put a copy under a loop (j0) it does not depend on;
// each element is copied twice, the same value. gradient() summed both repeats' adjoints:
// A's gradient was twice the right one (check_grad: "max rel err 5.000e-01").
TEST(Outsider5Fix, RecomputedCopyCountsOnce) {
  const char* src = R"(func rc(A: f32[4, 3], B: f32[3, 2]) -> (C: f32[4, 2]) {
  alloc As: f32[4, 3] scope "shared"
  for i0, j0 in grid(2, 2) {
    for k in serial(3) {
      for a in serial(2) {
        block cp(v0: spatial(4) = i0 * 2 + a, v1: spatial(3) = k) { As[v0, v1] = A[v0, v1] }
      }
    }
    for i1, j1, k in grid(2, 1, 3) {
      block mm(vi: spatial(4) = i0 * 2 + i1, vj: spatial(2) = j0 + j1, vk: reduce(3) = k) {
        init { C[vi, vj] = 0.0 }
        C[vi, vj] += As[vi, vk] * B[vk, vj]
      }
    }
  }
})";
  std::string text = check_rewrite(src, "rc");
  EXPECT_TRUE(contains(text, "where j0 == 0")) << text;
}

// A reduction with its init recomputed per column tile (a row statistic at a tile loop).
TEST(Outsider5Fix, RecomputedReductionCountsOnce) {
  const char* src = R"(func rr(X: f32[3, 8]) -> (Y: f32[3, 8]) {
  alloc S: f32[3]
  for i, jo in grid(3, 2) {
    for k in serial(8) {
      block s(vi: spatial(3) = i, vk: reduce(8) = k) {
        init { S[vi] = 1.0 }
        S[vi] += X[vi, vk] * X[vi, vk]
      }
    }
    for ji in serial(4) {
      block y(vi: spatial(3) = i, vj: spatial(8) = jo * 4 + ji) { Y[vi, vj] = X[vi, vj] * S[vi] }
    }
  }
})";
  std::string text = check_rewrite(src, "rr");
  EXPECT_TRUE(contains(text, "where jo == 0")) << text;
}

// Repeats that differ (an in-place update applied at every iteration of a loop the block
// ignores) are a recurrence over a non-scan loop: refused. gradient() gave a wrong
// gradient before (the adjoints of the two applications summed as if independent).
TEST(Outsider5Fix, RepeatedInPlaceUpdateIsRefused) {
  Function f = parse_one(R"(func ri(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block a(vi: spatial(4) = i) { Y[vi] = X[vi] }
  }
  for r in serial(2) {
    for i in serial(4) {
      block u(vi: spatial(4) = i) { Y[vi] = Y[vi] * X[vi] }
    }
  }
})",
                         "ri");
  try {
    gradient(*f, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "block u runs again at every iteration of loop r, which none of its bindings uses, and the "
              "repeats are not plain recomputations (it reads what the loop body writes, or another "
              "statement of the loop writes what it writes): bind r to a scan iter var of the block");
  }
}

// Instances repeated through a non-injective binding (`vi = i // 2`): gradient() summed the
// repeats' adjoints (twice the gradient, silently). Refused, naming two loop points.
TEST(Outsider5Fix, RepeatedInstancesThroughABindingAreRefused) {
  Function f = parse_one(R"(func nb(X: f32[4, 3]) -> (Y: f32[4]) {
  for i, k in grid(8, 3) {
    block b(vi: spatial(4) = i // 2, vk: reduce(3) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += X[vi, vk] * X[vi, vk]
    }
  }
})",
                         "nb");
  try {
    gradient(*f, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(),
                         "block b: the loop iterations (i = 0, k = 0) and (i = 1, k = 0) run the same "
                         "instance (its bindings are not one-to-one): each instance must run once"))
        << e.what();
  }
}

// The same binding with a `where` that keeps one loop point per instance is fine.
TEST(Outsider5Fix, BindingMadeOneToOneByItsWhere) {
  std::string text = check_rewrite(R"(func nw(X: f32[4], Z: f32[4]) -> (Y: f32[4]) {
  for r in serial(2) {
    for i in serial(8) {
      block b(vi: spatial(4) = i // 2) {
        where i % 2 == 0
        Y[vi] = X[vi] * X[vi] * Z[vi]
      }
    }
  }
})",
                                   "nw");
  EXPECT_TRUE(contains(text, "where r == 0 && i % 2 == 0")) << text;
}

// A scratch tile reused by every iteration of the tile loop (what lowered TIR looks like):
// the block's spatial iterations write the same T elements. gradient() gave one adjoint
// buffer to all the reuses: wrong X and W gradients. LANGUAGE.md calls such a block invalid;
// it is refused, naming two conflicting iterations. A block-local scratch buffer is fine.
TEST(Outsider5Fix, ScratchTileReusedAcrossIterationsIsRefused) {
  Function f = parse_one(R"(func rt(X: f32[8], W: f32[8]) -> (Y: f32[8]) {
  alloc T: f32[4] scope "local"
  for io in serial(2) {
    for ii in serial(4) {
      block load(vo: spatial(2) = io, v: spatial(4) = ii) { T[v] = X[vo * 4 + v] * X[vo * 4 + v] }
    }
    for ii in serial(4) {
      block use(vi: spatial(8) = io * 4 + ii, v: spatial(4) = ii) { Y[vi] = T[v] * W[vi] }
    }
  }
})",
                         "rt");
  try {
    gradient(*f, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(),
                         "block load: its iterations (vo = 0, v = 0) and (vo = 1, v = 0) both write T[0] "
                         "(a block whose spatial iterations conflict is invalid"))
        << e.what();
  }
}

// Two accumulators set by one hand-written guard (C-style): the guarded stores become the
// init of the classified reduction (it was refused: "several stores to S").
TEST(Outsider5Fix, CStyleInitOfTwoAccumulators) {
  const char* src = R"(func ps(X: f32[4, 5]) -> (S: f32[4], Q: f32[4]) {
  for i in serial(4) {
    for k in serial(5) {
      if k == 0 {
        S[i] = 0.0
        Q[i] = 1.0
      }
      S[i] += X[i, k]
      Q[i] *= X[i, k]
    }
  }
})";
  std::string text = check_rewrite(src, "ps");
  EXPECT_TRUE(contains(text, "init {")) << text;
}

// Rewrite 0d: a scan loop split by a schedule (binding `to * 3 + ti`, a where tail) was
// refused ("the scan var vt must be bound to a loop var (plus a constant)"); the two loops
// are fused back.
TEST(Outsider5Fix, SplitScanLoopIsFusedBack) {
  const char* src = R"(func st(X: f32[2, 7]) -> (Y: f32[2, 7]) {
  for i in serial(2) {
    for to in serial(3) {
      for ti in serial(3) {
        block c(vi: spatial(2) = i, vt: scan(7) = to * 3 + ti) {
          where to * 3 + ti < 7
          Y[vi, vt] = if_then_else(vt == 0, X[vi, 0], Y[vi, vt - 1] * 0.9 + X[vi, vt])
        }
      }
    }
  }
})";
  std::string text = check_rewrite(src, "st");
  EXPECT_TRUE(contains(text, "for to_ti_fused in serial(9)")) << text;
  EXPECT_TRUE(contains(text, "vt: scan(7) = to_ti_fused")) << text;
}

// A block recomputed at every step of a scan loop, the same way (a weight transform at the
// RNN's time loop): it was refused ("inside the scan loop t, a block needs an iter var bound
// to t"); rewrite 0c moves it in front of the loop.
TEST(Outsider5Fix, RecomputedBlockMovesOutOfTheScanLoop) {
  const char* src = R"(func rw(X: f32[5, 3], W: f32[3]) -> (H: f32[5, 3]) {
  alloc Wt: f32[3]
  for t in serial(5) {
    for j in serial(3) {
      block w(vj: spatial(3) = j) { Wt[vj] = W[vj] * 2.0 }
    }
    for j in serial(3) {
      block s(vt: scan(5) = t, vj: spatial(3) = j) {
        H[vt, vj] = tanh(if_then_else(vt == 0, 0.0, H[vt - 1, vj]) * Wt[vj] + X[vt, vj])
      }
    }
  }
})";
  std::string text = check_rewrite(src, "rw");
  EXPECT_LT(text.find("block w("), text.find("for t in serial(5)")) << text;
}

// gather.cpp: the index solver works in i32; with i64 loops whose reduce loop is split
// (binding x0 * 2 + y0), the value it gives an i64 loop var was an i32 expression, and F_grad
// failed to run ("block c_dW: operands of * have different dtypes i32 and i64").
TEST(Outsider5Fix, I64SplitLoopsInAGather) {
  Function f = parse_one(R"(func is(X: f32[10], W: f32[3]) -> (Y: f32[4]) {
  for i in serial(i64(4)) {
    for x0 in serial(i64(2)) {
      for y0 in serial(i64(2)) {
        block c(vi: spatial(i64(4)) = i, vk: reduce(i64(3)) = x0 * i64(2) + y0) {
          where x0 * i64(2) + y0 < i64(3)
          init { Y[vi] = 0.0 }
          Y[vi] += X[vi * i64(2) + vk] * W[vk]
        }
      }
    }
  }
})",
                         "is");
  CheckGradOptions o;
  o.full = true;
  CheckGradResult r = check_grad(*f, o);
  EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
  EXPECT_GT(r.passed, 0);
}

// The same with a symbolic length and the loop split twice (3 nested loops).
TEST(Outsider5Fix, SplitScanLoopSymbolicAndTwice) {
  Function f = parse_one(R"(func s2(n: i32, X: f32[n]) -> (Y: f32[n]) {
  for x1 in serial((n + 5) // 6) {
    for y1 in serial(3) {
      for y0 in serial(2) {
        block s(vt: scan(n) = (x1 * 3 + y1) * 2 + y0) {
          where (x1 * 3 + y1) * 2 + y0 < n
          Y[vt] = if_then_else(vt == 0, X[n - 1], Y[vt - 1] * 0.5 + X[n - 1 - vt] * X[vt])
        }
      }
    }
  }
})",
                         "s2");
  CheckGradOptions o;
  o.full = true;
  NDArray n(DType::I32, {});
  n.set(0, 7);
  o.given["n"] = n;
  CheckGradResult r = check_grad(*f, o);
  EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
  EXPECT_GT(r.passed, 0);
}

// Cost: a read at a permuted index (W[(vi + 2) % 8]) had an adjoint block of its own that
// recomputed every let of the block (4.1x); its contribution is now stored by the pointwise
// block at the permuted element, an injective index (split_injective): 2.3x.
TEST(Outsider5Fix, PermutedReadSharesTheBlocksLets) {
  Function f = parse_one(R"(func pr(X: f32[8], W: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      let t = X[vi] * W[(vi + 2) % 8] * 0.5 + 0.3
      let u = sin(t) * t
      Y[vi] = u * u + X[vi]
    }
  }
})",
                         "pr");
  Function g = gradient(*f, {});
  EXPECT_LE(static_counts(*g, {}).total.flops, 3.0 * static_counts(*f, {}).total.flops) << print_function(*g);
  CheckGradOptions o;
  o.full = true;
  EXPECT_EQ(check_grad(*f, o).failed, 0);
  // W_grad stored at the permuted element by the pointwise block: still differentiable.
  CheckGradResult second = check_grad(*g, o);
  EXPECT_EQ(second.failed, 0);
  EXPECT_GT(second.passed, 0);
}

// The if/else arms of outsider5 ifelse_swap (5x -> 2x): FusePointwise.IfThenElseArmsShareTheCondition.

}  // namespace
}  // namespace tirc

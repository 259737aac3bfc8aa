// Normalisation rewrite 0 (transforms/autodiff/wrap_stores.h): stores written straight from
// loops, outside any block, get blocks of their own; outputs and gradients are checked by
// check_rewrite (interpreter before/after, f64 finite differences, F_grad re-parses).
#include "transforms/autodiff/wrap_stores.h"

#include "tests/autodiff/rewrite_check.h"

using namespace tirc;
using namespace tirc::testing;

namespace {
std::string grad_error(const std::string& src, const std::string& name) {
  try {
    gradient(*parse_one(src, name), {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(WrapStores, LoopWithoutBlock) {
  std::string t = check_rewrite(R"(
func f(A: f32[4], W: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    B[i] = A[i] * W[i] + 1.0
  }
}
)",
                                "f");
  EXPECT_TRUE(contains(t, "block B(vi: spatial(4) = i)")) << t;
}

// A matmul written with plain loops: the init and the update become two blocks, the update's
// k classified as a reduce var.
TEST(WrapStores, MatmulWithoutBlocks) {
  std::string t = check_rewrite(R"(
func mm(A: f32[4, 5], B: f32[5, 3]) -> (C: f32[4, 3]) {
  for i, j in grid(4, 3) {
    C[i, j] = 0.0
    for k in serial(5) {
      C[i, j] += A[i, k] * B[k, j]
    }
  }
}
)",
                                "mm");
  EXPECT_TRUE(contains(t, "vk: reduce(5) = k")) << t;
}

// Lets and if/else under the loop go into the block with the stores; a loop with a non-zero
// start binds `i - 2`.
TEST(WrapStores, LetsBranchesAndShiftedLoops) {
  check_rewrite(R"(
func guarded(A: f32[6]) -> (B: f32[6]) {
  for i in serial(6) {
    let t = A[i] * 2.0
    if i < 3 {
      B[i] = t * t
    } else {
      B[i] = exp(t)
    }
  }
}
)",
                "guarded");
  std::string t = check_rewrite(R"(
func shifted(A: f32[8]) -> (B: f32[8]) {
  for i in serial(2, 8) {
    B[i] = A[i - 2] * A[i]
  }
  for i in serial(2) {
    B[i] = 0.0
  }
}
)",
                                "shifted");
  EXPECT_TRUE(contains(t, "= i - 2")) << t;
}

// The body written as one user block with no iter vars (it is the root) storing directly.
TEST(WrapStores, RootBlockStoringDirectly) {
  check_rewrite(R"(
func s(A: f32[4]) -> (S: f32[1]) {
  block r() {
    S[0] = 0.0
    for i in serial(4) {
      S[0] += A[i] * A[i]
    }
  }
}
)",
                "s");
}

// A recurrence written with plain loops: its serial loop runs in order, so rewrite 8 reads
// the wrapped block's opaque var as a scan var (refused before, as the same opaque block
// written by hand was; now both are differentiated).
TEST(WrapStores, RecurrenceIsDifferentiated) {
  std::string t = check_rewrite(R"(
func rec(A: f32[6]) -> (B: f32[6]) {
  B[0] = A[0]
  for i in serial(1, 6) {
    B[i] = B[i - 1] * A[i]
  }
}
)",
                                "rec");
  EXPECT_TRUE(contains(t, "vi: scan(5) = i - 1")) << t;
}

// The same over a parallel loop (no order between its iterations) stays refused, naming
// the wrapped block.
TEST(WrapStores, ParallelRecurrenceIsRefusedWithTheBlockNamed) {
  std::string e = grad_error(R"(
func rec(A: f32[6]) -> (B: f32[6]) {
  B[0] = A[0]
  for i in parallel(1, 6) {
    B[i] = B[i - 1] * A[i]
  }
}
)",
                             "rec");
  EXPECT_TRUE(contains(e, "block B_1: opaque iter vars are not supported")) << e;
}

// Functions whose stores are all in blocks are left as they are.
TEST(WrapStores, BlocksUntouched) {
  Function f = parse_one(R"(
func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = A[vi] }
  }
}
)",
                         "f");
  Function w = ad::wrap_blockless_stores(*f);
  EXPECT_TRUE(structural_equal(*w, *f));
}

// Round 16: wrong schedules found by the schedule fuzzer's long mode (seeds 201 and up), each now
// refused with its reason (docs/schedule.md, "Round 16").
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// Seed 201: pad_einsum of diagonal's gradient block `X_grad[v2, v2] = ...` made X_grad_pad
// (8 x 8) written on its diagonal only; cache_read of the copy-back's read then copied the whole
// buffer and read its never-written elements (interpreter: "read of uninitialised element
// X_grad_pad[0, 1]"). The writer has no `where`, so the old check took it to write everything;
// the writers' stores are now enumerated (transforms/schedule/coverage.h).
TEST(SchedFuzzR16, CacheReadOfADiagonalWriter) {
  std::string text = R"(func diagonal_grad(X: f32[5, 5], Y_grad: f32[5]) -> (X_grad: f32[5, 5]) {
  for i0, i1 in grid(5, 5) {
    block X_grad_init(v0: spatial(5) = i0, v1: spatial(5) = i1) { X_grad[v0, v1] = 0.0 }
  }
  for ax0 in serial(5) {
    block D_dX(v2: spatial(5) = ax0) { X_grad[v2, v2] = Y_grad[v2] * 2.0 }
  }
}
schedule diagonal_grad {
  pad_einsum(get_block("D_dX"), [4])
  PRIM
}
)";
  auto with = [&](const std::string& prim) {
    std::string t = text;
    t.replace(t.find("PRIM"), 4, prim);
    return t;
  };
  EXPECT_EQ(
      testing::schedule_refusal(with("c0 = cache_read(get_block(\"X_grad_unpad\"), 0, \"global\")")),
      "cache_read: block D_dX writes only part of buffer X_grad_pad (not X_grad_pad[0, 1]), and the copy "
      "of the whole buffer would read the elements it skips");
  // reindex copies only what the copy-back reads (the diagonal): fine.
  testing::apply_and_compare(with("r = reindex(get_block(\"X_grad_unpad\"), (\"read\", 0))"));
  // The pad_einsum alone is fine.
  testing::apply_and_compare(with(""));
}

// Found while checking what follows the round-16 reverse_compute_inline lift (which leaves the
// producer storing under `if vi < 15 && vj < 15`), and reproducible with a hand-written guard:
// cache_write's copy-back ran over the block's whole 16 x 16 domain and read C_local[0, 15]
// (out of bounds of the 15 x 15 cache; elsewhere it would copy elements nobody wrote). A store
// under an `if` is now refused, as reindex and pad_einsum do. cache_read of such a buffer
// evaluates the `if` per point: accepted when the guarded stores still write every element.
TEST(SchedFuzzR16, CacheWriteOfAStoreUnderAnIf) {
  std::string text = R"(func f(A: f32[16, 16]) -> (D: f32[15, 15]) {
  alloc C: f32[15, 15]
  for i, j in grid(16, 16) {
    block B(vi: spatial(16) = i, vj: spatial(16) = j) {
      if vi < 15 && vj < COLS {
        C[vi, vj] = A[vi, vj] * 2.0 + 1.0
      }
    }
  }
  for i, j in grid(15, 15) {
    block D(vi: spatial(15) = i, vj: spatial(15) = j) { D[vi, vj] = C[vi, vj] * 3.0 }
  }
}
schedule f {
  PRIM
}
)";
  auto with = [&](const std::string& cols, const std::string& prim) {
    std::string t = text;
    t.replace(t.find("COLS"), 4, cols);
    t.replace(t.find("PRIM"), 4, prim);
    return t;
  };
  EXPECT_EQ(testing::schedule_refusal(with("15", "cache_write(get_block(\"B\"), 0, \"local\")")),
            "cache_write: block B stores C under a condition (the copy-back would copy elements it does not "
            "write)");
  testing::apply_and_compare(with("15", "cache_read(get_block(\"D\"), 0, \"local\")"));
  // Column 14 is never written: the function itself reads it uninitialised, but the copy is
  // refused first, naming the element.
  EXPECT_EQ(
      testing::schedule_refusal(with("14", "cache_read(get_block(\"D\"), 0, \"local\")")),
      "cache_read: block B writes only part of buffer C (not C[0, 14]), and the copy of the whole buffer "
      "would read the elements it skips");
}

}  // namespace
}  // namespace tirc

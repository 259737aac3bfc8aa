// Review of round 18 (reverse_compute_at; reviewer r5, repros d3/d5): a consumer C moved under a
// loop read a produced buffer X whose region written per iteration does not tell the iterations
// apart, so a later iteration rewrote (with other values) what C had read. The round-18 check
// (every tile must be of an iter var X's own loads map) ran only when X had a free dimension read
// at two indices or at a non-plain index; it now runs for every produced buffer
// (transforms/schedule/reverse_compute_at.cpp, load_maps; docs/schedule.md, "Round 18 (LSTM
// gradient ...)"). Each refused form was accepted before and gave a mismatch in tirc verify
// (interpreter and JIT); the sound forms next to them stay accepted.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

std::string with(std::string text, const std::string& key, const std::string& value) {
  auto at = text.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  if (at != std::string::npos) text.replace(at, key.size(), value);
  return text;
}

// p does not bind loop i: it rewrites all of X in every iteration, with row 3 of Y, which is
// final only after i = 3.
const char* kRewrittenEveryIteration = R"(func g(B: f32[4, 8]) -> (Z: f32[4, 8]) {
  alloc X: f32[8]
  alloc Y: f32[4, 8]
  for i, j in grid(4, 8) {
    block y0(vi: spatial(4) = i, vj: spatial(8) = j) { Y[vi, vj] = 0.0 }
  }
  for i in serial(4) {
    for j in serial(8) {
      block y(vi: spatial(4) = i, vj: spatial(8) = j) { Y[vi, vj] = B[vi, vj] }
    }
    for j in serial(8) {
      block p(vj: spatial(8) = j) { X[vj] = Y[3, vj] }
    }
  }
  for i, j in grid(4, 8) {
    block c(vi: spatial(4) = i, vj: spatial(8) = j) { Z[vi, vj] = X[vj] + Y[vi, vj] }
  }
}
schedule g {
  i, j = get_loops(get_block("y"))
  reverse_compute_at(get_block("c"), i)
}
)";

TEST(ReviewR18Rca, ProducerNotBindingTheLoop) {
  const std::string msg =
      "reverse_compute_at: block c reads X at indices that loop i does not tile, and the tiles of iter var "
      "vi come from another buffer produced under it";
  // X read at a plain iter var covering the whole written row (d3).
  EXPECT_EQ(testing::schedule_refusal(kRewrittenEveryIteration), msg);
  // At a constant index inside what every iteration writes.
  EXPECT_EQ(testing::schedule_refusal(with(kRewrittenEveryIteration, "X[vj] + Y", "X[2] + Y")), msg);
  // Two loads (d4, refused before too).
  EXPECT_EQ(testing::schedule_refusal(with(kRewrittenEveryIteration, "X[vj] + Y", "X[vj] + X[7 - vj] + Y")),
            msg);
  // Sound: p binds i and writes row i, which C reads at any column (a free dimension).
  testing::apply_and_compare(
      with(with(with(kRewrittenEveryIteration, "alloc X: f32[8]", "alloc X: f32[4, 8]"),
                "block p(vj: spatial(8) = j) { X[vj] = Y[3, vj] }",
                "block p(vi: spatial(4) = i, vj: spatial(8) = j) { X[vi, vj] = Y[vi, vj] * 2.0 }"),
           "X[vj] + Y", "X[vi, 7 - vj] + Y"));
}

// p binds only the outer loop i: it rewrites row i of X in every iteration of k, with Y[i, 7],
// final only after k = 7 (d5).
const char* kOuterLoopOnly = R"(func g(B: f32[4, 8]) -> (Z: f32[4, 8, 8]) {
  alloc X: f32[4, 8]
  alloc Y: f32[4, 8]
  for i, k in grid(4, 8) {
    block y0(vi: spatial(4) = i, vk: spatial(8) = k) { Y[vi, vk] = 0.0 }
  }
  for i, k in grid(4, 8) {
    block y(vi: spatial(4) = i, vk: spatial(8) = k) { Y[vi, vk] = B[vi, vk] }
    for j in serial(8) {
      block p(vi: spatial(4) = i, vj: spatial(8) = j) { X[vi, vj] = Y[vi, 7] }
    }
  }
  for i, k, j in grid(4, 8, 8) {
    block c(vi: spatial(4) = i, vk: spatial(8) = k, vj: spatial(8) = j) { Z[vi, vk, vj] = X[vi, vj] + Y[vi, vk] }
  }
}
schedule g {
  i, k = get_loops(get_block("y"))
  reverse_compute_at(get_block("c"), k)
}
)";

TEST(ReviewR18Rca, ProducerBindingOnlyAnOuterLoop) {
  EXPECT_EQ(testing::schedule_refusal(kOuterLoopOnly),
            "reverse_compute_at: block c reads X at indices that loop k does not tile, and the tiles of iter "
            "var vk come from another buffer produced under it");
  // Sound: at loop i, row i of X is final after the iteration (the last k wrote it).
  testing::apply_and_compare(with(kOuterLoopOnly, "reverse_compute_at(get_block(\"c\"), k)",
                                  "reverse_compute_at(get_block(\"c\"), i)"));
}

// Checked, not a bug: a produced buffer read only in C's `where` is refused (the predicate is
// moved in C's iter vars, which refuses loads), so C never reads it at a wrong iteration.
TEST(ReviewR18Rca, WhereLoadingAProducedBuffer) {
  const char* text = R"(func g(A: f32[4, 8]) -> (Z: f32[4, 8]) {
  alloc X: f32[4]
  alloc Y: f32[4, 8]
  for i0, j0 in grid(4, 8) {
    block z0(vi: spatial(4) = i0, vj: spatial(8) = j0) { Z[vi, vj] = 0.0 }
  }
  for i in serial(4) {
    for j in serial(8) {
      block y(vi: spatial(4) = i, vj: spatial(8) = j) { Y[vi, vj] = A[vi, vj] }
    }
    block p(vi: spatial(4) = i) { X[vi] = A[vi, 0] }
  }
  for i, j in grid(4, 8) {
    block c(vi: spatial(4) = i, vj: spatial(8) = j) {
      where X[3] > 0.0
      Z[vi, vj] = Y[vi, vj]
    }
  }
}
schedule g {
  i, j = get_loops(get_block("y"))
  reverse_compute_at(get_block("c"), i)
}
)";
  EXPECT_EQ(testing::schedule_refusal(text), "reverse_compute_at: the predicate of block c loads buffer X");
}

}  // namespace
}  // namespace tirc

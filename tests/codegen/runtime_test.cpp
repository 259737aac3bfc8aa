// The thread pool of compiled code (runtime/tirc_runtime.h): every iteration runs exactly
// once, for any n and thread count, when the count grows, nested, and from several callers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/tirc_runtime.h"

namespace {

struct Counter {
  std::vector<std::atomic<int>> hits;
  explicit Counter(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void count_body(int64_t b, int64_t e, void* c) {
  auto* k = static_cast<Counter*>(c);
  for (int64_t i = b; i < e; ++i) k->hits[static_cast<size_t>(i)]++;
}

void expect_each_once(int64_t n) {
  Counter c(n);
  tirc_parallel_for(n, count_body, &c);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(c.hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
}

void nested_body(int64_t b, int64_t e, void* c) {
  for (int64_t i = b; i < e; ++i) {
    Counter inner(7);
    tirc_parallel_for(7, count_body, &inner);  // runs serially inside a parallel region
    for (auto& h : inner.hits) EXPECT_EQ(h.load(), 1);
    static_cast<Counter*>(c)->hits[static_cast<size_t>(i)]++;
  }
}

}  // namespace

TEST(Runtime, ParallelForCoversEveryIterationOnce) {
  for (int threads : {1, 2, 3, 5, 2, 8}) {  // growing and shrinking the pool
    tirc_set_num_threads(threads);
    EXPECT_EQ(tirc_num_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 4097}) expect_each_once(n);
  }
  tirc_set_num_threads(0);
}

TEST(Runtime, NestedAndConcurrentCallers) {
  tirc_set_num_threads(3);
  Counter c(50);
  tirc_parallel_for(50, nested_body, &c);
  for (auto& h : c.hits) EXPECT_EQ(h.load(), 1);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([] {
      for (int r = 0; r < 50; ++r) expect_each_once(333);
    });
  for (auto& t : ts) t.join();
  tirc_set_num_threads(0);
}

TEST(Runtime, AllocIsAligned) {
  for (int64_t n : {0, 1, 100, 1 << 20}) {
    void* p = tirc_alloc(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    tirc_free(p);
  }
}

// Large blocks come back from the cache: a second call of a function reuses the pages of its
// intermediates instead of faulting in fresh ones.
TEST(Runtime, LargeBlocksAreReused) {
  const int64_t big = 3 << 20;
  void* p = tirc_alloc(big);
  std::memset(p, 1, big);
  tirc_free(p);
  void* q = tirc_alloc(big - 100);  // same size class
  EXPECT_EQ(p, q);
  void* r = tirc_alloc(big);  // p is in use: another block
  EXPECT_NE(q, r);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r) % 64, 0u);
  std::memset(r, 2, big);
  tirc_free(q);
  tirc_free(r);
  void* small = tirc_alloc(100);
  void* small2 = tirc_alloc(100);
  EXPECT_NE(small, small2);
  tirc_free(small);
  tirc_free(small2);
  tirc_free(nullptr);
}

// Reductions whose first point (every reduce var 0, where the init runs) may not run, onto an
// earlier value of their buffer (found by contract outsider round 11 and the lead). Before,
// the earlier value's cotangent went only through that point: with a symbolic reduce extent
// 0 at run time, F_grad gave B_grad = 0 for a sum with an init (check_grad FAILED) and read the
// unfilled arg / zero buffers of max and product reductions (`read of uninitialised element
// C_arg[0]`). Now the earlier value's cotangent is the whole cotangent there (block
// `<name>_empty`), and a `where` that may skip the first point is refused with a reason.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "runtime/ndarray.h"
#include "tests/autodiff/full_checks.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

const char* kEmptyDomain = R"(
func sum_init(n: i32, A: f32[6, n], B: f32[6]) -> (S: f32[6]) {
  for i in serial(6) { block S0(vi: spatial(6) = i) { S[vi] = B[vi] * 3.0 } }
  for i, k in grid(6, n) {
    block S(vi: spatial(6) = i, vk: reduce(n) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
func prod_onto(n: i32, A: f32[n], B: f32[3]) -> (C: f32[3]) {
  for i in serial(3) { block c(vi: spatial(3) = i) { C[vi] = B[vi] * 2.0 } }
  for i, k in grid(3, n) { block d(vi: spatial(3) = i, vk: reduce(n) = k) { C[vi] = C[vi] * A[vk] } }
}
func max_onto(n: i32, A: f32[n], B: f32[3]) -> (C: f32[3]) {
  for i in serial(3) { block c(vi: spatial(3) = i) { C[vi] = B[vi] * 2.0 } }
  for i, k in grid(3, n) { block d(vi: spatial(3) = i, vk: reduce(n) = k) { C[vi] = max(C[vi], A[vk]) } }
}
func max_part(n: i32, A: f32[n], B: f32[4]) -> (C: f32[4]) {
  for i in serial(4) { block c(vi: spatial(4) = i) { C[vi] = B[vi] * 2.0 } }
  for i, k in grid(3, n) { block d(vi: spatial(3) = i, vk: reduce(n) = k) { C[vi] = max(C[vi], A[vk]) } }
}
func sum_init_part(n: i32, A: f32[n], B: f32[4]) -> (C: f32[4]) {
  for i in serial(4) { block c(vi: spatial(4) = i) { C[vi] = B[vi] * 2.0 } }
  for i, k in grid(3, n) {
    block d(vi: spatial(3) = i, vk: reduce(n) = k) {
      init { C[vi] = B[vi] }
      C[vi] = C[vi] + A[vk]
    }
  }
}
func min_two_axes(n: i32, m: i32, A: f32[n, m], B: f32[3]) -> (C: f32[3]) {
  for i in serial(3) { block c(vi: spatial(3) = i) { C[vi] = sin(B[vi]) } }
  for i, k, l in grid(3, n, m) {
    block d(vi: spatial(3) = i, vk: reduce(n) = k, vl: reduce(m) = l) { C[vi] = min(C[vi], A[vk, vl] * B[vi]) }
  }
}
)";

void expect_passes(const FunctionNode& f, const ArgMap& given) { testing::expect_full_checks(f, given); }

ArgMap sizes(int64_t n, int64_t m) { return testing::i32_scalars({{"n", n}, {"m", m}}); }

TEST(EmptyReduction, EarlierValueFlowsWhereTheDomainIsEmpty) {
  Module mod = parse_module(kEmptyDomain, "empty.tir");
  for (const char* name :
       {"sum_init", "prod_onto", "max_onto", "max_part", "sum_init_part", "min_two_axes"}) {
    Function f = mod.find_func(name);
    ASSERT_TRUE(f) << name;
    ArgMap given = sizes(0, 2);
    if (std::string(name) != "min_two_axes") given.erase("m");
    expect_passes(*f, given);  // empty: C is the earlier value
    given = sizes(3, 2);
    if (std::string(name) != "min_two_axes") given.erase("m");
    expect_passes(*f, given);  // not empty: as before
  }
  // One of two reduce extents 0 empties the domain too.
  expect_passes(*mod.find_func("min_two_axes"), sizes(2, 0));
  // The guard is on the blocks that read the arg buffer, and the pass-through is its own block.
  std::string g = print_function(*gradient(*mod.find_func("max_onto"), {}));
  EXPECT_NE(g.find("block d_empty("), std::string::npos) << g;
  EXPECT_NE(g.find("where !(n >= 1)"), std::string::npos) << g;
}

TEST(EmptyReduction, WhereSkippingTheFirstPointIsRefused) {
  Module mod = parse_module(R"(
func skip(A: f32[6, 12], B: f32[6]) -> (S: f32[6]) {
  for i in serial(6) { block S0(vi: spatial(6) = i) { S[vi] = B[vi] * 3.0 } }
  for i, k in grid(6, 12) {
    block S(vi: spatial(6) = i, vk: reduce(12) = k) {
      where k >= 3
      S[vi] = S[vi] * A[vi, vk]
    }
  }
}
func causal(A: f32[6, 6], B: f32[6]) -> (S: f32[6]) {
  for i in serial(6) { block S0(vi: spatial(6) = i) { S[vi] = B[vi] } }
  for i, k in grid(6, 6) {
    block S(vi: spatial(6) = i, vk: reduce(6) = k) {
      where k < 4
      S[vi] = max(S[vi], A[vi, vk])
    }
  }
}
)",
                            "skip.tir");
  try {
    gradient(*mod.find_func("skip"), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "block S: its condition k >= 3 may skip the reduction's first point (every "
                  "reduce var 0), where S's earlier value would flow on: not differentiated"),
              std::string::npos)
        << e.what();
  }
  // A condition true at the first point is differentiated.
  expect_passes(*mod.find_func("causal"), {});
}

// Without an earlier value an empty domain leaves the output unwritten; the arg / zero
// buffers of a max, min or product with an init are then unfilled, and the blocks reading
// them must not run (contract round 13: `check-grad --input n=0` read M_arg[0]).
TEST(EmptyReduction, FirstWriterWithAnInitOverAnEmptyDomain) {
  Module mod = parse_module(R"(
func mx(n: i32, A: f32[4, n]) -> (M: f32[4]) {
  for i, k in grid(4, n) {
    block m(vi: spatial(4) = i, vk: reduce(n) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], A[vi, vk])
    }
  }
}
func mn(n: i32, A: f32[4, n]) -> (M: f32[4]) {
  for i, k in grid(4, n) {
    block m(vi: spatial(4) = i, vk: reduce(n) = k) {
      init { M[vi] = max_value(f32) }
      M[vi] = min(M[vi], A[vi, vk] * 2.0)
    }
  }
}
func pr(n: i32, A: f32[4, n]) -> (M: f32[4]) {
  for i, k in grid(4, n) {
    block m(vi: spatial(4) = i, vk: reduce(n) = k) {
      init { M[vi] = 1.0 }
      M[vi] = M[vi] * A[vi, vk]
    }
  }
}
)",
                            "first.tir");
  for (const char* name : {"mx", "mn", "pr"}) {
    Function f = mod.find_func(name);
    for (int64_t n : {0, 3}) expect_passes(*f, testing::i32_scalars({{"n", n}}));
  }
  std::string g = print_function(*gradient(*mod.find_func("mx"), {}));
  EXPECT_NE(g.find("where n >= 1"), std::string::npos) << g;
}

}  // namespace
}  // namespace tirc

// A buffer indexed with both i32 and i64 expressions in one block (found by the fifth
// autodiff outsider round, tests/zoo/outsider5): the inferred read region was the hull
// `min(i64(vi) * 2, vi * -1 + 5)`, which printed but did not read back ("type mismatch:
// min(i64, i32)"): printing was not a fixpoint. The hull is now taken in the wider type.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

TEST(MixedIndexDtype, InferredHullReadsBack) {
  const char* src = R"(func mix(X: f32[6]) -> (Y: f32[3]) {
  for i in serial(3) {
    block b(vi: spatial(3) = i) { Y[vi] = X[i64(vi) * i64(2)] + X[5 - vi] }
  }
})";
  try {
    Module m = parse_module(src, "mix.tir");
    std::string text = print_module(m);
    Module back = parse_module(text, "mix_printed.tir");
    EXPECT_EQ(print_module(back), text);
    EXPECT_TRUE(structural_equal(*back.find_func("mix"), *m.find_func("mix"))) << text;
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

}  // namespace
}  // namespace tirc

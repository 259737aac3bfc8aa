// compute_inline of a producer that reads a buffer its consumer also reads, at another index.
// Found by the round-17 scheduled-gradient outsider (compute_inline(hoist0) into resize_dX of a
// bilinear upsampling's gradient): the consumer kept its own region of the shared buffer, so the
// scheduled function declared less than it read (it did not re-parse), and a cache_read after it
// copied only the declared part (interpreter: "read of uninitialised element R_local[1]", JIT:
// zeros).
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

const char* kTwoReadsOfR = R"(func f(X: f32[8, 8], R: f32[8]) -> (Y: f32[8, 8]) {
  alloc T: f32[8, 8]
  for i, j in grid(8, 8) {
    block t(vi: spatial(8) = i, vj: spatial(8) = j) {
      T[vi, vj] = R[vi] * X[vi, vj]
    }
  }
  for i, j in grid(8, 8) {
    block y(vi: spatial(8) = i, vj: spatial(8) = j) {
      Y[vi, vj] = T[vi, vj] * R[vj]
    }
  }
}
schedule f {
  compute_inline(get_block("t"))
  MORE
}
)";

std::string with(const std::string& more) {
  std::string t = kTwoReadsOfR;
  t.replace(t.find("MORE"), 4, more);
  return t;
}

TEST(InlineRegionR17, SharedInputKeepsBothLoadsInTheRegion) {
  std::string out = testing::apply_and_compare(with(""));
  // The declared region covers R[vi] and R[vj]; the scheduled text re-parses (the parser checks
  // every load against its block's declared region).
  EXPECT_NE(out.find("R[min(vi, vj):max(vi, vj) + 1]"), std::string::npos) << out;
  EXPECT_NO_THROW(parse_module(out, "s.tir"));
}

TEST(InlineRegionR17, CacheReadAfterInlineCopiesWhatIsRead) {
  testing::apply_and_compare(
      with("b = get_block(\"y\")\n  i, j = get_loops(b)\n  reorder(j, i)\n"
           "  c = cache_read(b, \"R\", \"local\")\n  compute_at(c, i)"));
}

}  // namespace
}  // namespace tirc

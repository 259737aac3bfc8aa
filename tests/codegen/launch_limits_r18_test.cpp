// Kernels no CUDA device can launch are refused by `tirc build --target nvptx` (found by the
// round-18 schedule outsider): a "shared" tile over the 48 KiB of static shared memory built with
// exit 0 and ptxas then rejected the PTX; a threadIdx.x extent of 4096 built and assembled, but a
// launch with more than 1024 threads per block always fails (TVM's VerifyGPUCode checks both).
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include <string>

#include "ir/error.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

// A copy of a rows x cols f32 input through a "shared" tile of `tile` rows per blockIdx.x, with
// `threads` columns bound to threadIdx.x.
std::string copy(int rows, int cols, int tile, int threads) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  return "func big(A: f32[" + r + ", " + c + "]) -> (B: f32[" + r + ", " + c + R"(]) {
  for i, j in grid()" + r + ", " + c + R"() {
    block b(vi: spatial()" + r + R"() = i, vj: spatial()" + c + R"() = j) {
      B[vi, vj] = A[vi, vj] * 2.0
    }
  }
}
schedule big {
  b = get_block("b")
  i, j = get_loops(b)
  io, ii = split(i, [_, )" + std::to_string(tile) + R"(])
  jo, ji = split(j, [_, )" + std::to_string(threads) + R"(])
  reorder(io, ii, jo, ji)
  bind(io, "blockIdx.x")
  bind(ji, "threadIdx.x")
  s = cache_read(b, "A", "shared")
  compute_at(s, io)
}
)";
}

std::string refusal(const std::string& text) {
  Module m = apply_module_schedules(parse_module(text, "t.tir"));
  try {
    testing::nvptx(m.find_func("big"), EmitKind::Asm);
  } catch (const Error& e) {
    return e.what();
  }
  return "(built)";
}

TEST(LaunchLimitsR18, WithinTheLimitsBuilds) {
  EXPECT_EQ(refusal(copy(64, 512, 16, 128)), "(built)");  // 16 x 512 x 4 bytes = 32 KiB
  EXPECT_EQ(refusal(copy(8, 1024, 1, 1024)), "(built)");  // 1024 threads, 4 KiB
}

TEST(LaunchLimitsR18, SharedTileOverTheLimitIsRefused) {
  EXPECT_EQ(refusal(copy(64, 512, 32, 128)),  // 64 KiB
            "nvptx: function big needs 65536 bytes of shared memory per thread block (A_shared 65536), more "
            "than the 49152 of static shared memory: use smaller tiles for the \"shared\" buffers");
}

TEST(LaunchLimitsR18, ThreadAxisOverTheLimitIsRefused) {
  EXPECT_EQ(refusal(copy(8, 2048, 1, 2048)),
            "nvptx: function big binds threadIdx.x with extent 2048, more than the 1024 a CUDA thread block "
            "allows on that axis: split the loop, e.g. split(l, [None, 1024]), and bind the inner part");
}

}  // namespace
}  // namespace tirc

#endif

// The launch contract of multi-kernel NVPTX functions (docs/codegen.md, "Several kernels"): a
// host may launch every kernel with the function's largest sizes. A kernel that binds no loop
// to some blockIdx axis (or has no threadIdx loop) used to run its body once per extra block
// (thread), repeating read-modify-writes: `Y[i, 0] += 1` bound to threadIdx.x only, beside a
// kernel with blockIdx.x(4), added 4 (found by the round-17 scheduled-gradient outsider, in the
// cross-entropy gradient's `X_grad[n, I[n]] -= a`). Kernels now return at once in such blocks
// and threads (FuncEmitter::return_if_stray_launch).
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

const char* kTwoKernels = R"(func f(X: f32[4, 8]) -> (Y: f32[4, 8], Z: f32[4]) {
  for i, j in grid(4, 8) {
    block copy(vi: spatial(4) = i, vj: spatial(8) = j) {
      Y[vi, vj] = X[vi, vj]
    }
  }
  for i in serial(4) {
    block bump(vi: spatial(4) = i) {
      Y[vi, 0] = Y[vi, 0] + 1.0
      Z[vi] = Y[vi, 0]
    }
  }
}
schedule f {
  i, j = get_loops(get_block("copy"))
  bind(i, "blockIdx.x")
  bind(j, "threadIdx.x")
  b = get_loops(get_block("bump"))[0]
  BUMP
}
)";

void emulate_matches_interp(const std::string& bump_binding) {
  std::string text = kTwoKernels;
  text.replace(text.find("BUMP"), 4, bump_binding);
  Module m = parse_module(text, "t.tir");
  Function ref = m.find_func("f");
  Function g = apply_schedule(*ref, m.schedules[0], m.intrins);
  for (uint64_t seed : {1, 2}) EXPECT_EQ(testing::emulated_mismatch(ref, g, seed), "") << bump_binding;
  std::string log;
  int rc = testing::run_ptxas(testing::nvptx(g, EmitKind::Asm), &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log;
  }
}

// The second kernel has threads but no blocks: blocks 1..3 of a 4-block launch leave.
TEST(LaunchGuardR17, KernelWithoutBlockIdx) { emulate_matches_interp("bind(b, \"threadIdx.x\")"); }

// The second kernel has blocks but no threads: threads 1..7 of an 8-thread launch leave.
TEST(LaunchGuardR17, KernelWithoutThreadIdx) { emulate_matches_interp("bind(b, \"blockIdx.x\")"); }

}  // namespace
}  // namespace tirc

#endif

// Review of round 17's codegen (tests/codegen/review_r17/):
//   * stray_threads_symbolic: a kernel binding only threadIdx.x (symbolic extent, so no
//     `.reqntid`) beside one binding threadIdx.y(8) ran its read-modify-write once per y-thread
//     when launched with the function's largest block: the stray-launch guard skipped every
//     threadIdx axis once the kernel bound one;
//   * masked_checked_wrap: a bounds-checked `i64(i32 expr)` index under a split tail's mask was
//     accessed from lane 0's value, which wraps in i32 while lane 0 is masked off (segfault);
//   * max_unpool_default_gpu: the default GPU schedule left a nest bound to blockIdx.x when the
//     threadIdx.x bind was refused, then wrapped it in unit loops bound to blockIdx.x (codegen
//     now refuses that nesting: "bound to blockIdx.x inside a loop bound to blockIdx.x").
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "interp/interp.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

std::string path(const std::string& name) {
  return std::string(TIRC_SOURCE_DIR) + "/tests/codegen/review_r17/" + name;
}

void emulated_matches_interp(const Function& ref, const Function& g) {
  for (uint64_t seed : {1, 2}) EXPECT_EQ(testing::emulated_mismatch(ref, g, seed), "");
}

TEST(CodegenReviewR17, StrayThreadsAlongAnAxisTheKernelDoesNotBind) {
  Module m = parse_file(path("stray_threads_symbolic.tir"));
  Function ref = m.find_func("f");
  emulated_matches_interp(ref, apply_schedule(*ref, m.schedules[0], m.intrins));
}

TEST(CodegenReviewR17, CheckedIndexWithAWidenedI32UnderAMask) {
  Module orig = parse_file(path("masked_checked_wrap.tir"));
  Module m = apply_module_schedules(orig);
  FunctionRunner jit = [](const FunctionNode& f, const ArgMap& inputs) {
    return compile_jit(f)->run(inputs);
  };
  CompareOptions o;
  o.seed = 3;
  CompareResult r = compare_functions(*orig.find_func("f"), *m.find_func("f"), o, interp_runner(), jit);
  EXPECT_TRUE(r.ok) << r.detail;
}

TEST(CodegenReviewR17, DefaultGpuScheduleDoesNotNestOneAxis) {
  Module m = parse_file(path("max_unpool_default_gpu.tir"));
  ASSERT_EQ(m.funcs.size(), 1u);
  Function ref = m.funcs[0];
  Function g = default_gpu_schedule(*ref);
  EXPECT_NO_THROW(testing::nvptx(g, EmitKind::Asm));
  emulated_matches_interp(ref, g);
}

}  // namespace
}  // namespace tirc

#endif

// Helper round 18 (h6): schedules a user writes against the F_grad that `tirc grad` prints, third
// round (operators not in grad_sched16/17, whole layers; primitives the earlier rounds used little:
// tensorize of the GEMM-shaped adjoints (dA = dC . B^T, a conv's dW) with user intrinsics after
// split / reorder, blockize, rfactor of the gradients' big reductions (dW / db summed over the batch
// or the pixels), decompose_reduction, cache_write + reverse_compute_at, F and F_grad scheduled in
// one file, second-order gradients (a file holding F_grad as `tirc grad -o` prints it, `# grad:
// F_grad`: F_grad_grad is derived and scheduled), GPU binds with shared caches).
// tests/zoo/grad_sched18/*.tir hold the forward F, `# grad: F` and `schedule F_grad { ... }`
// (often `schedule F` too); a file without `# grad:` holds F_grad as text (its schedule names
// hoisted blocks, whose names depend on the tirc version); `*_refuse_*` files are sound schedules
// still refused (the exact message; the FINDINGS of helper h6, round 18, name them). For every file:
//   GradSched18.Schedules     F_grad is derived (transforms/autodiff), the schedules applied and
//                             compared with the unscheduled functions in the interpreter (two
//                             seeds, and with parallel / bound loops run backwards); `# refuse:`
//                             files must be refused with exactly that message at the marked line;
//   GradSched18.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched18.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas
//                             (`# shared: yes`: shared tiles and barriers in the PTX; `# atomic:
//                             yes`: atomic adds);
//   GradSched18.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h) equal the interpreter's
//                             run of the unscheduled function;
//                             these three take the `# quick: yes` files; DISABLED_*All take every
//                             file (`test_zoo --gtest_also_run_disabled_tests
//                             --gtest_filter='GradSched18.*'`);
//   GradSched18.Tensorized    every `tensorize` of an F_grad block replaced its tile: the
//                             scheduled function holds the intrinsic's impl (no block of the desc
//                             remains, the `<block>_o` block is there).
// JIT and ptxas parts are skipped under sanitizers (tests/sanitized.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/zoo/grad_sched_checks.h"

using namespace tirc;
namespace fs = std::filesystem;

namespace {

const char* kDir = "tests/zoo/grad_sched18";

}  // namespace

TEST(GradSched18, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient take about 20 s under sanitizers: the refusals and
  // the smallest applied files only.
  tirc::testing::grad_sched_sanitized_schedules(kDir, {"linear.tir"});
#else
  tirc::testing::expect_folder_schedules(kDir, 20);
#endif
}

using tirc::testing::grad_sched_ptx_header_checks;

TEST(GradSched18, VerifyCli) { tirc::testing::grad_sched_verify_cli(kDir, false, 18, 3); }
TEST(GradSched18, DISABLED_VerifyCliAll) { tirc::testing::grad_sched_verify_cli(kDir, true, 18, 3); }
TEST(GradSched18, Ptx) { tirc::testing::grad_sched_ptx(kDir, false, 6, 2, grad_sched_ptx_header_checks); }
TEST(GradSched18, DISABLED_PtxAll) {
  tirc::testing::grad_sched_ptx(kDir, true, 6, 2, grad_sched_ptx_header_checks);
}
TEST(GradSched18, Emulated) { tirc::testing::grad_sched_emulated(kDir, false, 6, 2); }
TEST(GradSched18, DISABLED_EmulatedAll) { tirc::testing::grad_sched_emulated(kDir, true, 6, 2); }

// Every tensorize of a gradient block replaced its tile (grad_sched_checks.h).
TEST(GradSched18, Tensorized) { tirc::testing::grad_sched_tensorized(kDir, "linear.tir", 8, 1); }

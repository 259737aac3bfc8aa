// Helper round 19 (h6): schedules a user writes against the F_grad that `tirc grad` prints, fourth
// round (operators not in grad_sched16/17/18, mostly whole layers from the outsider rounds 17-18:
// Swin window attention, ConvLSTM (CPU and GPU), a Transformer encoder layer, DCNv2 (CPU and GPU,
// atomic scatters), grouped conv
// with a cache_inplace accumulator, pixel shuffle, instance norm on the GPU, LSTM over a sequence,
// scans (EMA, decayed cumsum, reverse cumsum on the GPU), pooling with padding / adaptive bins,
// bilinear resize, global max pool, batched A.B^T, L2 normalisation and its second order, KL of
// log_softmax, ViT patch embedding, Mish + linear on the GPU with shared tiles).
// tests/zoo/grad_sched19/*.tir hold the forward F, `# grad: F` and `schedule F_grad { ... }`
// (pixel_shuffle_conv.tir schedules F too); l2_normalize_second_order.tir holds F_grad as text
// (`# grad: F_grad`: F_grad_grad is derived and scheduled; its schedules name hoisted blocks,
// whose names depend on the tirc version); `*_refuse_*` files are sound schedules still refused
// (the exact message at the marked line; the FINDINGS of helper h6, round 19, name them).
//   GradSched19.Schedules     F_grad is derived, the schedules applied and compared with the
//                             unscheduled functions in the interpreter (two seeds, and with
//                             parallel / bound loops run backwards); `# refuse:` files must be
//                             refused with exactly that message at the marked line;
//   GradSched19.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched19.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas
//                             (`# shared: yes`: shared tiles and barriers in the PTX; `# atomic:
//                             yes`: atomic adds);
//   GradSched19.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h) equal the interpreter's
//                             run of the unscheduled function;
//                             these three take the `# quick: yes` files; DISABLED_*All take every
//                             file (`test_zoo --gtest_also_run_disabled_tests
//                             --gtest_filter='GradSched19.*'`);
//   GradSched19.Tensorized    every `tensorize` of an F_grad block replaced its tile.
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

const char* kDir = "tests/zoo/grad_sched19";

}  // namespace

TEST(GradSched19, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient are too slow under sanitizers: the refusals and the
  // two smallest applied files only.
  tirc::testing::grad_sched_sanitized_schedules(kDir, {"ema.tir", "l2_normalize.tir"});
#else
  tirc::testing::expect_folder_schedules(kDir, 27);
#endif
}

using tirc::testing::grad_sched_ptx_header_checks;

TEST(GradSched19, VerifyCli) { tirc::testing::grad_sched_verify_cli(kDir, false, 23, 6); }
TEST(GradSched19, DISABLED_VerifyCliAll) { tirc::testing::grad_sched_verify_cli(kDir, true, 23, 6); }
TEST(GradSched19, Ptx) { tirc::testing::grad_sched_ptx(kDir, false, 6, 2, grad_sched_ptx_header_checks); }
TEST(GradSched19, DISABLED_PtxAll) {
  tirc::testing::grad_sched_ptx(kDir, true, 6, 2, grad_sched_ptx_header_checks);
}
TEST(GradSched19, Emulated) { tirc::testing::grad_sched_emulated(kDir, false, 6, 2); }
TEST(GradSched19, DISABLED_EmulatedAll) { tirc::testing::grad_sched_emulated(kDir, true, 6, 2); }

// Every tensorize of a gradient block replaced its tile (grad_sched_checks.h).
TEST(GradSched19, Tensorized) { tirc::testing::grad_sched_tensorized(kDir, "bmm_t.tir", 3, 1); }

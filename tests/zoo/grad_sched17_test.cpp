// Helper round 17 (h6): schedules a user writes against the F_grad that `tirc grad` prints, second
// round (operators not in grad_sched16; GPU and fusion heavy: bind after split/fuse, shared
// caches, cross-thread reductions, compute_inline / compute_at / reverse_compute_at across
// gradient blocks, rfactor). tests/zoo/grad_sched17/*.tir hold the forward F, `# grad: F` and
// `schedule F_grad { ... }` (sometimes `schedule F` too); `*_refuse_*` files are sound schedules
// still refused (the exact message; the FINDINGS of helper h6, round 17, name them). For every file:
//   GradSched17.Schedules     F_grad is derived (transforms/autodiff), the schedules applied and
//                             compared with the unscheduled functions in the interpreter (two
//                             seeds, and with parallel / bound loops run backwards); `# refuse:`
//                             files must be refused with exactly that message at the marked line;
//   GradSched17.VerifyCli     `tirc verify --engine jit` on the module `tirc grad` prints;
//   GradSched17.Ptx           `# ptx: yes` files: `tirc build --target nvptx --emit ptx` and ptxas;
//   GradSched17.Emulated      `# ptx: yes` files: the kernels of each GPU-scheduled function run in
//                             the GPU emulator (tests/codegen/gpu_emu.h: one host thread per GPU
//                             thread, serialized between barriers) equal the interpreter's run of
//                             the unscheduled function (shared tiles, barriers, atomic scatters);
//                             these three take the `# quick: yes` files (about 6 s together);
//                             DISABLED_{VerifyCli,Ptx,Emulated}All take every file (about 30 s:
//                             `test_zoo --gtest_also_run_disabled_tests --gtest_filter='GradSched17.*'`);
//   GradSched17.CacheReadIndexInGrad  cache_read's integer index on an F_grad accumulation block
//                             counts the reads of buffers it does not write (the printed `reads`
//                             list also shows the accumulated buffer): index 1 is B, 2 is refused.
// JIT and ptxas parts are skipped under sanitizers (tests/sanitized.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/schedule/tvm_style_files.h"
#include "tests/zoo/grad_sched_checks.h"
#include "transforms/autodiff/gradient.h"

using namespace tirc;
namespace fs = std::filesystem;

namespace {

const char* kDir = "tests/zoo/grad_sched17";

}  // namespace

TEST(GradSched17, Schedules) {
#ifdef TIRC_TEST_SANITIZED
  // The interpreter runs of every gradient take about 20 s under sanitizers: the refusals and
  // the smallest applied files only.
  tirc::testing::grad_sched_sanitized_schedules(kDir, {"embedding_bag_gpu.tir", "concat_slice.tir"});
#else
  tirc::testing::expect_folder_schedules(kDir, 25);
#endif
}

namespace {

// The PTX of round 17's files: the "atomic" scatters (bag rows, bilinear corners) bound to
// threads are atomic adds; the staged operands of the tiled batch matmul gradient are shared
// tiles with barriers.
void ptx_checks(const std::string& text, const std::string& ptx) {
  if (text.find("# grad: embedding_bag") != std::string::npos ||
      text.find("# grad: upsampling_bilinear") != std::string::npos) {
    EXPECT_NE(ptx.find("atom.global.add.f32"), std::string::npos);
  }
  if (text.find("# grad: batch_matmul") != std::string::npos) {
    EXPECT_NE(ptx.find(".shared .align"), std::string::npos);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  }
}

}  // namespace

TEST(GradSched17, VerifyCli) { tirc::testing::grad_sched_verify_cli(kDir, false, 20, 5); }
TEST(GradSched17, DISABLED_VerifyCliAll) { tirc::testing::grad_sched_verify_cli(kDir, true, 20, 5); }
TEST(GradSched17, Ptx) { tirc::testing::grad_sched_ptx(kDir, false, 10, 3, ptx_checks); }
TEST(GradSched17, DISABLED_PtxAll) { tirc::testing::grad_sched_ptx(kDir, true, 10, 3, ptx_checks); }
TEST(GradSched17, Emulated) { tirc::testing::grad_sched_emulated(kDir, false, 10, 3); }
TEST(GradSched17, DISABLED_EmulatedAll) { tirc::testing::grad_sched_emulated(kDir, true, 10, 3); }

// The index of cache_read on an accumulation block of F_grad (`C_dA`: `A_grad[..] = A_grad[..] +
// C_grad[..] * B[..]`, no init): the printed block lists `reads C_grad, A_grad, B`, and the index
// counts the reads of buffers the block does not also write, as TVM lists a reduction's reads
// (docs/schedule.md, "Predicates, caches and outputs"): 1 is B, 2 is out of range. A user counting
// the printed list (B at 2) gets this message, which names the rule.
TEST(GradSched17, CacheReadIndexInGrad) {
  std::string fwd = R"(
func batch_matmul(A: f32[2, 4, 8], B: f32[2, 6, 8]) -> (C: f32[2, 4, 6]) {
  for b, i, j, k in grid(2, 4, 6, 8) {
    block C(vb: spatial(2) = b, vi: spatial(4) = i, vj: spatial(6) = j, vk: reduce(8) = k) {
      init { C[vb, vi, vj] = 0.0 }
      C[vb, vi, vj] += A[vb, vi, vk] * B[vb, vj, vk]
    }
  }
}
)";
  auto with_schedule = [&](const std::string& index) {
    Module m =
        parse_module(fwd + "schedule batch_matmul_grad {\n  a = get_block(\"C_dA\")\n  s = cache_read(a, " +
                         index + ", \"shared\", consumer_blocks=[a])\n}\n",
                     "t.tir");
    m.add_func(gradient(*m.find_func("batch_matmul"), {}));
    return m;
  };
  std::string printed = print_module(with_schedule("1"));
  EXPECT_NE(printed.find("reads C_grad[v6, v7, r0], A_grad[v6, v7, v8], B[v6, r0, v8]"), std::string::npos)
      << printed;
  Module ok = apply_module_schedules(with_schedule("1"));
  EXPECT_NE(print_module(ok).find("B_shared"), std::string::npos) << print_module(ok);
  Module bad = with_schedule("2");
  try {
    apply_module_schedules(bad);
    ADD_FAILURE() << "index 2 accepted";
  } catch (const SourceError& e) {
    EXPECT_EQ(
        e.message(),
        "cache_read: block C_dA has 2 read regions of buffers it does not write; index 2 is out of range");
  }
}

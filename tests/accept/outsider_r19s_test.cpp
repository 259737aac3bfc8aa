// Acceptance round 19s (outsider): the schedules of TVM's tutorials written from LANGUAGE.md's
// "Schedules" list, on forward functions AND on the F_grad that `tirc grad` prints (the user reads
// the printed F_grad and names its blocks: docs/autodiff.md "Names in F_grad"):
//   * CPU: blocked GEMM (split / reorder / vectorize / parallel, cache_write "local" +
//     reverse_compute_at, decompose_reduction), GEMM with a packed B (cache_read +
//     transform_layout), conv2d NCHWc tiling, softmax with the max and sum computed at the row loop;
//   * GPU: GEMM with virtual threads, shared copies (cooperative fetch) and a local accumulator,
//     row reductions through rfactor + bind and as a plain cross-thread reduction;
//   * F_grad of matmul, softmax, conv2d and layer norm, scheduled for the CPU (tiles, rows fused
//     by compute_at, rfactor of the weight gradient) and the GPU (tiles on threads, cross-thread
//     reductions of the row adjoints);
//   * handle semantics: loop handles after split / fuse / reorder / compute_at, block handles
//     after compute_inline of other blocks, get_child_blocks of a blockized block, rfactor;
//   * near-misses refused at the instruction (exit 2, FILE:LINE:COL, nothing printed).
// Each accepted case: `tirc schedule` (marks of the schedule, re-parse fixpoint), `tirc verify`
// (interpreter and JIT), `tirc build --target cpu` (GPU ones: `--target nvptx --emit ptx` +
// ptxas, and the kernel run in the GPU emulator of tests/codegen/gpu_emu.h against the
// interpreter). Gradient cases ("# grad: F" on their first line) run `tirc grad` first.
// Case files: tests/accept/cases/r19s/. Findings for other areas: docs/language.md, "Outsider
// round 19s".
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/accept/accept_util.h"
#include "tests/codegen/ptxas_util.h"

#ifdef TIRC_WITH_LLVM
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_launch.h"
#include "transforms/schedule/schedule.h"
#endif

namespace tirc::accept {
namespace {

const std::string kDir = "@/r19s/";

struct Case {
  const char* file;
  const char* grad;                // "" or `F [--wrt X]`: what `tirc grad --func` differentiates first
  std::vector<const char*> marks;  // parts the scheduled module must contain
  bool gpu;
  // Expected result of `tirc build --target nvptx` when not 0 (a known backend limit: the
  // message part that must appear).
  const char* nvptx_refusal = nullptr;
};

const std::vector<Case>& cases_r19s() {
  static const std::vector<Case> c = {
      // --- forward, CPU
      {"gemm_blocked.tir",
       "",
       {"for mo in parallel(4) {", "for ki in unroll(4) {", "for ni in vectorized(32) {",
        "alloc C_local: f32[128, 96] scope \"local\"", "block C_init(vm: spatial(128) = mo * 32 + mi_init",
        "block C_local(vm: spatial(128) = mo * 32 + ax0_1", "for ax1_1 in vectorized(32) {"},
       false},
      {"gemm_packed.tir",
       "",
       {"alloc B_global: f32[2, 64, 32]", "B_global[v1 // 32, v0, v1 % 32] = B[v0, v1]",
        "for ax0 in parallel(64) {", "A[vm, vk] * B_global[vn // 32, vk, vn % 32]",
        "for ni in vectorized(32) {"},
       false},
      {"conv_nchwc.tir",
       "",
       {"for fused in parallel(16) {", "for kw in unroll(3) {", "for oci in vectorized(8) {",
        "for owi in unroll(4) {", "block conv_init(", "block O_local("},
       false},
      {"softmax_fused.tir",
       "",
       {"for i in parallel(32) {", "for ki in unroll(8) {", "for ji in vectorized(8) {",
        "S[vi] = S[vi] + exp(X[vi, vk] - M[vi])", "Y[vi, vj] = exp(X[vi, vj] - M[vi]) / S[vi]"},
       false},
      // --- forward, GPU
      {"gemm_gpu_vthread.tir",
       "",
       {"for vy in thread_binding(2, \"vthread\") {", "for fa1 in thread_binding(4, \"threadIdx.y\") {",
        "for fb2 in thread_binding(4, \"threadIdx.x\") {", "alloc A_shared: f32[64, 64] scope \"shared\"",
        "C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]", "for ki in unroll(8) {"},
       true},
      {"rowsum_rfactor_gpu.tir",
       "",
       {"for i_wb in thread_binding(128, \"blockIdx.x\") {",
        "for ax0 in thread_binding(32, \"threadIdx.x\") {",
        "for ki_wb in thread_binding(32, \"threadIdx.x\") {", "block B_rf("},
       true},
      {"rowsum_allreduce_gpu.tir",
       "",
       {"for i in thread_binding(64, \"blockIdx.x\") {", "for ki in thread_binding(64, \"threadIdx.x\") {",
        "for ko in unroll(4) {", "where ko * 64 + ki < 200"},
       true},
      // --- handle semantics
      {"h_split_fuse_reorder.tir",
       "",
       {"for t in parallel(12) annotate(\"pragma_auto_unroll_max_step\", 16) {", "for ii in unroll(8) {",
        "for ji in vectorized(16) {", "for ax1 in vectorized(16) {",
        "block B(vi: spatial(32) = t // 3 * 8 + ax0, vj: spatial(48) = t % 3 * 16 + ax1)"},
       false},
      {"h_inline_handles.tir",
       "",
       {"for i in parallel(64) {", "for ax1 in vectorized(32) {", "for j in vectorized(32) {",
        "U[vi, vj] = X[vi, vj] * W[vj] + 1.0", "Y[vi, vj] = max(U[vi, vj], 0.0) * 0.5"},
       false},
      {"h_blockize_children.tir",
       "",
       {"block C_o(vio_o: spatial(8) = io, vjo_o: spatial(8) = jo, vk_o: reduce(32) = k)",
        "for ii in unroll(4) {", "for ji in vectorized(4) {", "for io in parallel(8) {",
        "for k in serial(32) annotate(\"pragma_unroll_explicit\", 1) {"},
       false},
      {"h_rfactor_handles.tir",
       "",
       {"for i_wb in parallel(64) {", "for ax0 in vectorized(8) {", "for ki_wb in unroll(8) {",
        "block S_rf(vr_ki: spatial(8) = ax0, vi: spatial(64) = i_wb, vk_ko: reduce(32) = ax2)"},
       false},
      // --- F_grad, CPU
      {"g_mm_cpu.tir",
       "mm",
       {"for io in parallel(4) {",
        "block A_grad_init(v0: spatial(64) = io * 16 + ax0, v1: spatial(32) = jo * 16 + ax1)",
        "for ci in vectorized(16) {", "for ax2 in parallel(32) {", "block B_grad_init(v2: spatial(32) = ax2"},
       false},
      {"g_softmax_rows.tir",
       "softmax",
       {"for i6 in parallel(32) {", "block maxv(vi: spatial(32) = i6", "block exp(vi: spatial(32) = i6",
        "block S_grad_init(v6: spatial(32) = i6)", "for ax1_3 in vectorized(64) {"},
       false},
      {"g_conv_cpu.tir",
       "conv",
       {"for ax0_ax1_fused in parallel(8) {", "for ax3 in vectorized(10) {", "for fw in parallel(32) {",
        "block W_grad_init(v4: spatial(8) = fw // 4",
        "block X_grad_init(v0: spatial(2) = ax0_ax1_fused // 4"},
       false},
      {"g_conv_rfactor.tir",
       "conv",
       {"block conv_dW_rf(", "for ax4_ax5_fused in parallel(32) {", "for ax4_wb in parallel(8) {",
        "W_grad_rf[vr_n, v12, v13, v14, v15] = 0.0"},
       false},
      {"g_layernorm_rows.tir",
       "ln",
       {"for ax8 in parallel(16) {", "for ax9 in vectorized(64) {",
        "block var_grad_init(v4: spatial(16) = ax8)", "block mean_grad_init(v8: spatial(16) = ax8)"},
       false},
      // --- F_grad, GPU
      {"g_mm_gpu.tir",
       "mm",
       {"for bi in thread_binding(4, \"blockIdx.x\") {", "for f1 in thread_binding(16, \"threadIdx.y\") {",
        "alloc C_grad_shared: f32[64, 48] scope \"shared\"",
        "reads C_grad_shared[v4, r0], A_grad[v4, v5], B[v5, r0]",
        "block B_grad_init(v2: spatial(32) = ax2, v3: spatial(48) = ax3)"},
       // Finding F1 of round 19s, fixed: the two independent nests (16 and 48 threads along x)
       // are one kernel each (mm_grad_kernel0, mm_grad_kernel1), as TVM; it was refused ("where
       // not every thread of the block runs") when they shared one 48-thread kernel.
       true},
      {"g_softmax_gpu.tir",
       "softmax",
       {"for i6 in thread_binding(32, \"blockIdx.x\") {", "for ax1 in thread_binding(64, \"threadIdx.x\") {",
        "block maxv_arg(vi0: spatial(32) = i6"},
       true},
      {"g_bias_gpu_allreduce.tir",
       "bias --wrt b",
       {"for ax0 in thread_binding(16, \"blockIdx.x\") {", "for ii in thread_binding(32, \"threadIdx.x\") {",
        "where io * 32 + ii < 100", "block b_grad_init(v0: spatial(16) = ax0)"},
       true},
      {"g_bias_gpu_rfactor.tir",
       "bias --wrt b",
       {"for ax0_wb in thread_binding(16, \"blockIdx.x\") {",
        "for ax0_1 in thread_binding(32, \"threadIdx.x\") {",
        "for ii_wb in thread_binding(32, \"threadIdx.x\") {", "block Y_db_rf("},
       true},
      {"g_bias_gpu_rfactor_outer.tir",
       "bias --wrt b",
       {"for ax2 in thread_binding(4, \"threadIdx.x\") {",
        "for ii_wb in thread_binding(32, \"threadIdx.x\") {", "where ax2 * 32 + ax0_1 < 100"},
       true},
      {"g_conv_gpu.tir",
       "conv",
       {"for b in thread_binding(8, \"blockIdx.x\") {", "for ax3 in thread_binding(10, \"threadIdx.x\") {",
        "for ax7 in thread_binding(3, \"threadIdx.x\") {", "block X_grad_init(v0: spatial(2) = b // 4"},
       true},
  };
  return c;
}

// The file a case's commands run on: the case itself, or `tirc grad` of it (its schedule item for
// F_grad is kept by grad and applied by the later commands).
std::string prepared(const Case& c) {
  if (std::string(c.grad).empty()) return kDir + c.file;
  const std::string out = scratch_dir("r19s") + c.file;
  CliRun g = run("grad " + kDir + c.file + " --func " + c.grad + " -o " + out);
  EXPECT_EQ(g.code, 0) << g.err;
  return out;
}

#ifdef TIRC_WITH_LLVM
std::string slurp_function_text(const Function& f) { return print_function(*f); }

// Every scheduled function of `path` with a thread-bound loop, run in the GPU emulator against
// the unscheduled function in the interpreter.
void emulate_gpu(std::string path) {
  if (path.rfind("@/", 0) == 0) path = cases() + path.substr(2);
  std::string text = slurp(path);
  Module orig = parse_module(text, path);
  Module m = apply_module_schedules(orig);
  int ran = 0;
  for (auto& f : m.funcs) {
    if (!has(slurp_function_text(f), "thread_binding(")) continue;  // the forward F of a grad case
    EXPECT_EQ(tirc::testing::emulated_mismatch(orig.find_func(f->name), f, 7), "") << f->name;
    ++ran;
  }
  EXPECT_GT(ran, 0) << path;
}
#endif

void check_cases(size_t lo, size_t hi) {
  const auto& all = cases_r19s();
  for (size_t n = lo; n < hi && n < all.size(); ++n) {
    const Case& c = all[n];
    SCOPED_TRACE(c.file);
    const std::string f = prepared(c);
    CliRun s = run("schedule " + f);
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.err, "");
    for (const char* m : c.marks) EXPECT_TRUE(has(s.out, m)) << "missing: " << m << "\n" << s.out;
    CliRun p = run("parse -", s.out);
    EXPECT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(p.out, s.out);
    if (!has_llvm()) {
      CliRun v = run("verify " + f + " --engine interp");
      EXPECT_EQ(v.code, 0) << v.out << v.err;
      EXPECT_TRUE(has(v.out, "1 passed, 0 failed")) << v.out;
      continue;
    }
    CliRun v = run("verify " + f);
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    EXPECT_TRUE(has(v.out, "2 passed, 0 failed")) << v.out;
    if (!c.gpu) {
      CliRun b = run("build " + f + " --target cpu -o %/k.o");
      EXPECT_EQ(b.code, 0) << b.err;
      continue;
    }
    // GPU schedules: verify's JIT compiled them for the host already (thread loops serial).
    CliRun g = run("build " + f + " --target nvptx --emit ptx -o -");
    if (c.nvptx_refusal) {
      EXPECT_EQ(g.code, 2);
      EXPECT_TRUE(has(g.err, c.nvptx_refusal)) << g.err;
      continue;
    }
    ASSERT_EQ(g.code, 0) << g.err;
    EXPECT_TRUE(has(g.out, ".entry")) << g.out.substr(0, 400);
    std::string log;
    int rc = tirc::testing::run_ptxas(g.out, &log);
    if (rc != -2) {
      EXPECT_EQ(rc, 0) << log;
    }
#ifdef TIRC_WITH_LLVM
    emulate_gpu(f);
#endif
  }
}

TEST(AcceptR19s, ForwardCpu) { check_cases(0, 4); }
TEST(AcceptR19s, ForwardGpu) { check_cases(4, 7); }
TEST(AcceptR19s, Handles) { check_cases(7, 11); }
TEST(AcceptR19s, GradCpu) { check_cases(11, 16); }
TEST(AcceptR19s, GradGpu) { check_cases(16, 100); }

// `tirc bench` times the scheduled kernels (FLOPs counted from the IR: the scheduled function
// does the same work), and the tutorial's blocked GEMM is faster than the plain nest.
TEST(AcceptR19s, BenchScheduledGemm) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun b = run("bench " + kDir + "gemm_blocked.tir --func gemm --repeat 3");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(has(b.out, "1.573e+06 FLOPs")) << b.out;  // 128 * 96 * 64 multiply-adds
  CliRun u = run("bench " + kDir + "gemm_blocked.tir --func gemm --repeat 3 --no-schedule");
  ASSERT_EQ(u.code, 0) << u.err;
  EXPECT_TRUE(has(u.out, "1.573e+06 FLOPs")) << u.out;
  const std::string f = prepared(cases_r19s()[11]);  // g_mm_cpu
  b = run("bench " + f + " --func mm_grad --repeat 2");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(has(b.out, "GFLOP/s")) << b.out;
}

// ---------------------------------------------------------------------------------------------
// Near-misses: refused at the instruction with the reason; nothing printed.

const char* kMM =
    "func mm(A: f32[64, 32], B: f32[32, 48]) -> (C: f32[64, 48]) {\n"
    "  for i, j, k in grid(64, 48, 32) {\n"
    "    block C(vi: spatial(64) = i, vj: spatial(48) = j, vk: reduce(32) = k) {\n"
    "      init { C[vi, vj] = 0.0 }\n"
    "      C[vi, vj] += A[vi, vk] * B[vk, vj]\n"
    "    }\n"
    "  }\n"
    "}\n";
const char* kSoftmax =
    "func softmax(X: f32[8, 16]) -> (Y: f32[8, 16]) {\n"
    "  alloc M: f32[8]\n"
    "  alloc E: f32[8, 16]\n"
    "  alloc S: f32[8]\n"
    "  for i, k in grid(8, 16) {\n"
    "    block maxv(vi: spatial(8) = i, vk: reduce(16) = k) {\n"
    "      init { M[vi] = min_value(f32) }\n"
    "      M[vi] = max(M[vi], X[vi, vk])\n"
    "    }\n"
    "  }\n"
    "  for i, j in grid(8, 16) {\n"
    "    block exp(vi: spatial(8) = i, vj: spatial(16) = j) { E[vi, vj] = exp(X[vi, vj] - M[vi]) }\n"
    "  }\n"
    "  for i, k in grid(8, 16) {\n"
    "    block sum(vi: spatial(8) = i, vk: reduce(16) = k) {\n"
    "      init { S[vi] = 0.0 }\n"
    "      S[vi] += E[vi, vk]\n"
    "    }\n"
    "  }\n"
    "  for i, j in grid(8, 16) {\n"
    "    block norm(vi: spatial(8) = i, vj: spatial(16) = j) { Y[vi, vj] = E[vi, vj] / S[vi] }\n"
    "  }\n"
    "}\n";
// Two readers of A: a shared copy made for Y alone must say so.
// (S runs first: after the loop, a reader would be fine, every element being copied once.)
const char* kTwoReaders =
    "func two(A: f32[32, 16]) -> (Y: f32[32, 16], S: f32[32]) {\n"
    "  for i, k in grid(32, 16) {\n"
    "    block S(vi: spatial(32) = i, vk: reduce(16) = k) {\n"
    "      init { S[vi] = 0.0 }\n"
    "      S[vi] += A[vi, vk]\n"
    "    }\n"
    "  }\n"
    "  for i, j in grid(32, 16) {\n"
    "    block Y(vi: spatial(32) = i, vj: spatial(16) = j) { Y[vi, vj] = A[vi, vj] * 2.0 }\n"
    "  }\n"
    "}\n";
const char* kChain =
    "func f(X: f32[16, 16]) -> (Z: f32[16, 16]) {\n"
    "  alloc T: f32[16, 16]\n"
    "  for i, j in grid(16, 16) {\n"
    "    block T(vi: spatial(16) = i, vj: spatial(16) = j) { T[vi, vj] = X[vi, vj] + 1.0 }\n"
    "  }\n"
    "  for i, j in grid(16, 16) {\n"
    "    block Z(vi: spatial(16) = i, vj: spatial(16) = j) { Z[vi, vj] = T[vi, vj] * 3.0 }\n"
    "  }\n"
    "}\n";

int lines_of(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::string func_name(const std::string& base) {
  size_t a = base.find(' ') + 1;
  return base.substr(a, base.find('(') - a);
}

struct Refusal {
  const char* base;
  const char* body;  // schedule lines; the last one is refused
  int col;
  const char* msg;
};

TEST(AcceptR19s, NearMissesAreRefusedWithTheReason) {
  const std::vector<Refusal> rs = {
      // The tutorial's decompose_reduction must be at (or above) the outer reduction loop.
      {kMM,
       "  c = get_block(\"C\")\n  i, j, k = get_loops(c)\n  ko, ki = split(k, [None, 4])\n"
       "  decompose_reduction(c, ki)\n",
       3, "decompose_reduction: loop ko, outside loop ki, feeds a reduce iter var of block C"},
      // The write-back of a local accumulator inside the reduction loop.
      {kMM,
       "  c = get_block(\"C\")\n  i, j, k = get_loops(c)\n  cl = cache_write(c, 0, \"local\")\n"
       "  reverse_compute_at(cl, k)\n",
       3,
       "reverse_compute_at: loop k feeds the reduce iter var of producer C, so C_local is not final after an "
       "iteration of loop k"},
      // Stale handles: a loop consumed by fuse, a block consumed by compute_inline.
      {kMM, "  c = get_block(\"C\")\n  i, j, k = get_loops(c)\n  t = fuse(i, j)\n  parallel(i)\n", 3,
       "parallel: loop 'i' no longer exists (replaced by an earlier primitive)"},
      {kChain, "  t = get_block(\"T\")\n  compute_inline(t)\n  l = get_loops(t)\n", 7,
       "get_loops: block T no longer exists (removed by an earlier primitive)"},
      // softmax: the reductions stay reductions.
      {kSoftmax, "  compute_inline(get_block(\"sum\"))\n", 3, "compute_inline: block sum is a reduction"},
      {kSoftmax, "  i, k = get_loops(get_block(\"sum\"))\n  reverse_compute_at(get_block(\"norm\"), k)\n", 3,
       "reverse_compute_at: loop k feeds the reduce iter var of producer sum, so S is not final after an "
       "iteration of loop k"},
      {kSoftmax, "  i, k = get_loops(get_block(\"maxv\"))\n  compute_at(get_block(\"exp\"), i)\n", 3,
       "compute_at: consumer block sum of block exp is not under loop i"},
      // A shared copy serves every reader unless consumer_blocks says otherwise (round 19s hint).
      {kTwoReaders,
       "  y = get_block(\"Y\")\n  i, j = get_loops(y)\n  a = cache_read(y, 0, \"shared\")\n  compute_at(a, "
       "i)\n",
       3,
       "compute_at: consumer block S of block A_shared is not under loop i (the copy A_shared of A serves "
       "every "
       "reader of it: move that reader under the loop too, or copy for some readers only with "
       "cache_read(..., "
       "consumer_blocks=[...]))"},
      // GPU: the rf block's reduction loop bound to threads outside its lane loop (docs/schedule.md).
      {"func rowsum(A: f32[16, 64]) -> (B: f32[16]) {\n"
       "  for i, k in grid(16, 64) {\n"
       "    block B(vi: spatial(16) = i, vk: reduce(64) = k) {\n"
       "      init { B[vi] = 0.0 }\n"
       "      B[vi] += A[vi, vk]\n"
       "    }\n"
       "  }\n"
       "}\n",
       "  b = get_block(\"B\")\n  i, k = get_loops(b)\n  ko, ki = split(k, [None, 16])\n  rf = rfactor(ki, "
       "0)\n"
       "  bind(i, \"blockIdx.x\")\n  compute_at(rf, i)\n  rl = get_loops(rf)\n  reorder(rl[2], rl[1])\n"
       "  bind(rl[2], \"threadIdx.x\")\n",
       3,
       "bind: loop ax2 is bound to the reduce iter var vk_ko of block B_rf (a cross-thread reduction), but "
       "loop ax0 inside its reduction loops feeds a spatial iter var (reorder the reduction loops innermost)"},
      // TVM's Python habits (round 19s hints).
      {kMM, "  sch.work_on(\"mm\")\n", 7,
       "unknown schedule primitive 'work_on' (a `schedule F { ... }` item already works on function F: "
       "remove "
       "this line)"},
      {kMM, "  c = get_block(\"C\")\n  i, j, k = get_loops(c)\n  sch.vectorise(j)\n", 7,
       "unknown schedule primitive 'vectorise' (did you mean 'vectorize'?)"},
      {kMM, "  c = sch.get_blocks(\"C\")\n", 11,
       "unknown schedule primitive 'get_blocks' (did you mean 'get_block'?)"},
  };
  for (const Refusal& r : rs) {
    std::string base = r.base, body = r.body;
    std::string text = base + "schedule " + func_name(base) + " {\n" + body + "}\n";
    int line = lines_of(base) + 1 + lines_of(body);
    SCOPED_TRACE(body);
    CliRun s = run("schedule -", text);
    EXPECT_EQ(s.code, 2);
    EXPECT_EQ(s.out, "");
    EXPECT_EQ(s.err,
              "<stdin>:" + std::to_string(line) + ":" + std::to_string(r.col) + ": error: " + r.msg + "\n");
  }
}

// Near-misses on F_grad (its text comes from `tirc grad`, so the position is checked by form):
// the zero-fill is a separate block (no init to decompose, two writers for cache_write), a
// reduction loop of an adjoint cannot be parallel, a zero-fill cannot move under the
// accumulation's reduction loop, a reader before the loop keeps a producer out of it.
TEST(AcceptR19s, GradNearMissesAreRefusedWithTheReason) {
  const std::string mm = kMM;
  struct G {
    std::string fwd, func, sched;
    std::string printed;  // the refused instruction as `tirc grad` prints it (nested calls hoisted)
    int col;
    std::string msg;
  };
  const std::vector<G> gs = {
      {mm, "mm", "  c = get_block(\"C_dA\")\n  l = get_loops(c)\n  decompose_reduction(c, l[0])\n",
       "  decompose_reduction(c, l[0])", 3, "decompose_reduction: block C_dA has no init"},
      {mm, "mm", "  c = get_block(\"C_dA\")\n  cw = cache_write(c, 0, \"local\")\n",
       "  cw = cache_write(c, 0, \"local\")", 8,
       "cache_write: buffer A_grad is also written by block A_grad_init"},
      {mm, "mm", "  c = get_block(\"C_dA\")\n  l = get_loops(c)\n  parallel(l[2])\n", "  parallel(l[2])", 3,
       "parallel: loop j is bound to the reduce iter var r0 of block C_dA"},
      {mm, "mm",
       "  c = get_block(\"C_dA\")\n  l = get_loops(c)\n  compute_at(get_block(\"A_grad_init\"), l[2])\n",
       "  compute_at(_0, l[2])", 3,
       "compute_at: the parts of A_grad computed in the iterations of loop j do not cover it exactly once "
       "(A_grad "
       "is an output)"},
      {mm, "mm",
       "  c = get_block(\"C_dA\")\n  i, j, r = get_loops(c)\n  ro, ri = split(r, [None, 8])\n"
       "  s = cache_read(c, 0, \"shared\")\n  compute_at(s, ro)\n",
       "  compute_at(s, ro)", 3,
       "compute_at: consumer block C_dB of block C_grad_shared is not under loop ro (the copy C_grad_shared "
       "of "
       "C_grad serves every reader of it: move that reader under the loop too, or copy for some readers only "
       "with "
       "cache_read(..., consumer_blocks=[...]))"},
      {kSoftmax, "softmax",
       "  l = get_loops(get_block(\"norm_dS\"))\n  compute_at(get_block(\"S_grad_init\"), l[1])\n",
       "  compute_at(_1, l[1])", 3,
       "compute_at: the parts of S_grad computed in the iterations of loop j do not cover it exactly once "
       "(S_grad "
       "is updated by block norm_dS)"},
  };
  const std::string dir = scratch_dir("r19s_gref");
  int n = 0;
  for (const G& g : gs) {
    SCOPED_TRACE(g.sched);
    const std::string src = dir + "f" + std::to_string(n) + ".tir",
                      out = dir + "g" + std::to_string(n) + ".tir";
    ++n;
    write_file(src, g.fwd + "schedule " + g.func + "_grad {\n" + g.sched + "}\n");
    CliRun gr = run("grad " + src + " --func " + g.func + " -o " + out);
    ASSERT_EQ(gr.code, 0) << gr.err;
    const std::string text = slurp(out);
    size_t at = text.find("\n" + g.printed + "\n");
    ASSERT_NE(at, std::string::npos) << text;
    const int line = lines_of(text.substr(0, at + 1)) + 1;
    CliRun s = run("schedule " + out);
    EXPECT_EQ(s.code, 2);
    EXPECT_EQ(s.out, "");
    EXPECT_EQ(s.err,
              out + ":" + std::to_string(line) + ":" + std::to_string(g.col) + ": error: " + g.msg + "\n");
    // verify stops at the same instruction: the function is not run half-scheduled.
    CliRun v = run("verify " + out + (has_llvm() ? "" : " --engine interp"));
    EXPECT_EQ(v.code, 2);
    EXPECT_EQ(v.err, s.err);
  }
}

// A schedule whose GPU kernel is over the launch limit is accepted by `tirc schedule` (the
// interpreter and the CPU run it serially) and refused by the NVPTX build with what to do.
TEST(AcceptR19s, NvptxLaunchLimitIsNamed) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  std::string text = std::string(kMM) +
                     "schedule mm {\n  c = get_block(\"C\")\n  i, j, k = get_loops(c)\n  f = fuse(i, j)\n"
                     "  bind(f, \"threadIdx.x\")\n}\n";
  CliRun s = run("verify -", text);
  EXPECT_EQ(s.code, 0) << s.out << s.err;
  CliRun b = run("build - --target nvptx --emit ptx -o %/k.ptx", text);
  EXPECT_EQ(b.code, 2);
  EXPECT_EQ(
      b.err,
      "tirc: error: nvptx: function mm binds threadIdx.x with extent 3072, more than the 1024 a CUDA thread "
      "block allows on that axis: split the loop, e.g. split(l, [None, 1024]), and bind the inner part\n");
}

}  // namespace
}  // namespace tirc::accept

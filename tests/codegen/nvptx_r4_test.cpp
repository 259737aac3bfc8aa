// NVPTX kernels of functions with symbolic-size intermediates (docs/codegen.md, NVPTX,
// "Workspaces": extra pointer parameters after the outputs, listed by nvptx_workspaces and
// by `// tirc.workspace` lines of the PTX), and GPU schedules a CUDA user would write. Each
// case: ptxas accepts the PTX, and the kernels run in the GPU emulator (tests/codegen/
// gpu_emu.h) compute what the interpreter computes.
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include <filesystem>

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "interp/runner.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "tests/shell.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

void expect_ptxas_accepts(const Function& g) {
  std::string log;
  int rc = testing::run_ptxas(testing::nvptx(g, EmitKind::Asm), &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << g->name << ": " << log;
  }
}

// ptxas on g, then g's kernels in the emulator against the interpreter's run of ref, with
// the scalar params `scalars` (NAME=VALUE) and random buffers.
void check_on_gpu(const FunctionNode& ref, const Function& g, const std::vector<std::string>& scalars,
                  uint64_t seed = 5) {
  SCOPED_TRACE(g->name);
  expect_ptxas_accepts(g);
  CompareOptions o;
  o.seed = seed;
  // A cross-thread reduction adds in another order than the interpreter: f16 sums
  // round at every step (a few ulps of 2^-10 apart).
  for (auto& out : ref.outputs)
    if (out->dtype == DType::F16 || out->dtype == DType::BF16) o.rtol = 1e-2;
  o.scalars = parse_input_specs(ref, scalars);
  ArgMap in = verify_inputs(ref, o);
  ArgMap want = run_interp(ref, in);
  std::string err;
  ArgMap got = testing::emulate(g, in, &err);
  ASSERT_EQ(err, "");
  for (auto& [name, arr] : want) {
    CompareResult r = compare_arrays(name, arr, got.at(name), o);
    EXPECT_TRUE(r.ok) << g->name << " on the emulated GPU: " << r.detail;
  }
}

Function default_bound(const Function& f, int threads = 32) {
  DefaultGpuScheduleOptions o;
  o.max_threads_per_block = threads;
  return default_gpu_schedule(*f, o);
}

std::string compile_error(const Function& g) {
  try {
    testing::nvptx(g, EmitKind::LLVM);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The zoo's symbolic ops with intermediates (rms_norm: MS: f32[n]) and the other symbolic
// ones, forward and gradient (`tirc grad`), bound by the default GPU schedule.
TEST(NvptxWorkspace, SymbolicZooOpsAndGradientsRunOnTheEmulatedGpu) {
  struct Op {
    const char* name;
    std::vector<std::string> scalars;
  };
  for (const Op& op : {Op{"rms_norm", {"n=5"}}, Op{"rms_norm", {"n=70"}}, Op{"vadd", {"n=13"}},
                       Op{"roll", {"n=10"}}, Op{"softmax_temp", {"T=0.7"}}}) {
    SCOPED_TRACE(op.name);
    Module m = parse_file(
        (fs::path(TIRC_SOURCE_DIR) / "examples" / "ops" / (std::string(op.name) + ".tir")).string());
    Function f = m.find_func(op.name);
    ASSERT_TRUE(f);
    Function gr = gradient(*f, {});
    check_on_gpu(*f, default_bound(f), op.scalars);
    check_on_gpu(*gr, default_bound(gr), op.scalars);
  }
  // The workspace list: rms_norm's MS after (n, X, G, Y); its gradient's after its outputs.
  Module m = parse_file((fs::path(TIRC_SOURCE_DIR) / "examples" / "ops" / "rms_norm.tir").string());
  Function f = default_bound(m.find_func("rms_norm"), 1024);
  auto ws = nvptx_workspaces(*f);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].name, "MS");
  EXPECT_EQ(ws[0].dtype, DType::F32);
  EXPECT_EQ(print_expr(ws[0].numel), "n");
  std::string ptx = testing::nvptx(f, EmitKind::Asm);
  EXPECT_NE(ptx.find("// tirc.workspace rms_norm 4 MS f32 n\n"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("rms_norm_kernel1_param_4"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("rms_norm_kernel1_param_5"), std::string::npos) << ptx;
  EXPECT_TRUE(nvptx_workspaces(*default_bound(m.find_func("rms_norm"))).size() == 1);
}

const char* kSymbolic = R"(
func mixed(n: i32, X: f32[n, 4], I: i32[n] in [0, 3]) -> (Y: f64[n]) {
  alloc C: f32[4]
  alloc S: f64[n]
  alloc K: i32[n, 2]
  for j in serial(4) {
    block c(vj: spatial(4) = j) { C[vj] = f32(vj) * 0.5 + 0.25 }
  }
  for i, j in grid(n, 4) {
    block s(vi: spatial(n) = i, vj: reduce(4) = j) {
      init { S[vi] = 0.0 }
      S[vi] += f64(X[vi, vj] * C[vj])
    }
  }
  for i, t in grid(n, 2) {
    block k(vi: spatial(n) = i, vt: spatial(2) = t) { K[vi, vt] = I[vi] * 3 + vt * (vi % 5) }
  }
  for i in serial(n) {
    block y(vi: spatial(n) = i) { Y[vi] = S[vi] + f64(K[vi, 1] - K[vi, 0]) + f64(X[vi, I[vi]]) }
  }
}
func cum(n: i32, m: i32, X: f32[n, m]) -> (Y: f32[n, m]) {
  alloc P: f32[n, m]
  for i, j in grid(n, m) {
    block p(vi: spatial(n) = i, vj: spatial(m) = j) { P[vi, vj] = X[vi, vj] * X[vi, vj] }
  }
  for i, j in grid(n, m) {
    block c(vi: spatial(n) = i, vj: scan(m) = j) {
      Y[vi, vj] = if_then_else(vj == 0, P[vi, vj], Y[vi, vj - 1] + P[vi, vj])
    }
  }
}
func chain(n: i32, X: f32[n]) -> (Y: f32[n], Z: f32[1]) {
  alloc A: f32[n + 1]
  alloc B: f32[2 * n]
  for i in serial(n + 1) {
    block a(vi: spatial(n + 1) = i) { A[vi] = if_then_else(vi < n, exp(X[vi % n]), 1.0) }
  }
  for i in serial(2 * n) {
    block b(vi: spatial(2 * n) = i) { B[vi] = A[vi // 2] + A[vi // 2 + 1] }
  }
  for i in serial(n) {
    block y(vi: spatial(n) = i) { Y[vi] = B[2 * vi] * B[2 * vi + 1] }
  }
  for i in serial(2 * n) {
    block z(vi: reduce(2 * n) = i) {
      init { Z[0] = 0.0 }
      Z[0] += B[vi]
    }
  }
}
)";

// Hand-written symbolic functions: a constant intermediate (module variable) beside two
// workspaces of other dtypes, a 2-D workspace read by a scan, workspaces of composite sizes
// (n + 1, 2 * n) feeding two outputs; their gradients; several sizes and block sizes.
TEST(NvptxWorkspace, HandWrittenSymbolicFunctionsRunOnTheEmulatedGpu) {
  Module m = parse_module(kSymbolic, "sym.tir");
  Function mixed = m.find_func("mixed"), cum = m.find_func("cum"), chain = m.find_func("chain");
  for (const char* n : {"n=1", "n=37"}) {
    check_on_gpu(*mixed, default_bound(mixed), {n});
    check_on_gpu(*mixed, default_bound(mixed, 1024), {n});
    check_on_gpu(*chain, default_bound(chain, 16), {n});
  }
  check_on_gpu(*cum, default_bound(cum), {"n=9", "m=7"});
  Function cg = gradient(*cum, {});
  check_on_gpu(*cg, default_bound(cg), {"n=9", "m=7"});
  Function chg = gradient(*chain, {});
  check_on_gpu(*chg, default_bound(chg, 16), {"n=21"});

  // The ABI: workspaces after the outputs, in declaration order; constant ones are module
  // variables.
  auto ws = nvptx_workspaces(*default_bound(mixed));
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].name, "S");
  EXPECT_EQ(ws[0].dtype, DType::F64);
  EXPECT_EQ(ws[1].name, "K");
  EXPECT_EQ(ws[1].dtype, DType::I32);
  EXPECT_EQ(print_expr(ws[1].numel), "n * 2");
  std::string ptx = testing::nvptx(default_bound(mixed), EmitKind::Asm);
  EXPECT_NE(ptx.find("// tirc.workspace mixed 4 S f64 n\n"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("// tirc.workspace mixed 5 K i32 n * 2\n"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".global .align 16 .b8 mixed_$_C[16]"), std::string::npos) << ptx;
  auto cws = nvptx_workspaces(*default_bound(chain));
  ASSERT_EQ(cws.size(), 2u);
  EXPECT_EQ(print_expr(cws[0].numel), "n + 1");
  EXPECT_EQ(print_expr(cws[1].numel), "2 * n");
  EXPECT_TRUE(nvptx_workspaces(*default_bound(m.find_func("cum"))).size() == 1);
}

// Shared / local memory needs a constant size: symbolic ones are refused with the reason.
TEST(NvptxWorkspace, SymbolicSharedAndLocalBuffersAreRefused) {
  const char* text = R"(
func root_shared(n: i32, X: f32[n]) -> (Y: f32[n]) {
  alloc T: f32[n] scope "shared"
  for i in thread_binding(n, "threadIdx.x") {
    block t(vi: spatial(n) = i) { T[vi] = X[vi] * 2.0 }
  }
  for i in thread_binding(n, "threadIdx.x") {
    block y(vi: spatial(n) = i) { Y[vi] = T[vi] + 1.0 }
  }
}
func block_shared(n: i32, X: f32[4, n]) -> (Y: f32[4, n]) {
  for b in thread_binding(4, "blockIdx.x") {
    block row(vb: spatial(4) = b) {
      alloc T: f32[n] scope "shared"
      for i in thread_binding(n, "threadIdx.x") {
        block t(wb: spatial(4) = vb, vi: spatial(n) = i) { T[vi] = X[wb, vi] * 2.0 }
      }
      for i in thread_binding(n, "threadIdx.x") {
        block y(wb: spatial(4) = vb, vi: spatial(n) = i) { Y[wb, vi] = T[vi] + 1.0 }
      }
    }
  }
}
func per_thread_global(n: i32, m: i32, X: f32[n, m]) -> (Y: f32[n]) {
  for i in thread_binding(n, "threadIdx.x") {
    block row(vi: spatial(n) = i) {
      alloc T: f32[m]
      for j in serial(m) {
        block t(wi: spatial(n) = vi, vj: spatial(m) = j) { T[vj] = X[wi, vj] * 2.0 }
      }
      for j in serial(m) {
        block y(wi: spatial(n) = vi, vj: reduce(m) = j) {
          init { Y[wi] = 0.0 }
          Y[wi] += T[vj]
        }
      }
    }
  }
}
func per_thread(n: i32, m: i32, X: f32[n, m]) -> (Y: f32[n]) {
  for i in thread_binding(n, "threadIdx.x") {
    block row(vi: spatial(n) = i) {
      alloc T: f32[m] scope "local"
      for j in serial(m) {
        block t(wi: spatial(n) = vi, vj: spatial(m) = j) { T[vj] = X[wi, vj] * 2.0 }
      }
      for j in serial(m) {
        block y(wi: spatial(n) = vi, vj: reduce(m) = j) {
          init { Y[wi] = 0.0 }
          Y[wi] += T[vj]
        }
      }
    }
  }
}
)";
  Module m = parse_module(text, "refuse.tir");
  auto shared_msg = [](const char* b, const char* scope) {
    return std::string("nvptx: buffer ") + b + " (scope \"" + scope +
           "\") has a non-constant size: shared and local memory need a constant size (CUDA would need "
           "dynamic shared memory); give it a constant size or scope \"global\" at function level";
  };
  EXPECT_EQ(compile_error(m.find_func("root_shared")), shared_msg("T", "shared"));
  EXPECT_EQ(compile_error(m.find_func("block_shared")), shared_msg("T", "shared"));
  EXPECT_EQ(compile_error(m.find_func("per_thread")), shared_msg("T", "local"));
  EXPECT_EQ(
      compile_error(m.find_func("per_thread_global")),
      "nvptx: buffer T has a non-constant size and is private to a thread or a thread block (lowering "
      "placed it inside the thread-bound loops): only function-level buffers of symbolic size are "
      "supported (kernel workspace parameters); give it a constant size (a constant tile per thread) or "
      "use it from several thread-bound nests");
  // The CLI: exit 2 with the message.
  std::string path =
      (fs::temp_directory_path() / ("tirc_r4_refuse_" + std::to_string(::getpid()) + ".tir")).string();
  std::ofstream(path) << text;
  testing::ShellResult r = testing::sh(std::string("'") + TIRC_BINARY + "' build '" + path +
                                       "' --func block_shared --target nvptx --emit ptx -o /dev/null");
  fs::remove(path);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(shared_msg("T", "shared")), std::string::npos) << r.out;
}

// Every function of `file` (tests/codegen/gpu_user/) scheduled as written, against the
// unscheduled function in the interpreter. `# scalars: n=5 m=3` lines give scalar params.
void check_gpu_user_file(const std::string& file, const std::vector<std::string>& scalars = {}) {
  SCOPED_TRACE(file);
  Module raw = parse_file((fs::path(TIRC_SOURCE_DIR) / "tests" / "codegen" / "gpu_user" / file).string());
  Module sched = apply_module_schedules(raw);
  for (auto& f : raw.funcs) {
    Function g = sched.find_func(f->name);
    ASSERT_TRUE(has_gpu_thread_binding(*g)) << f->name;
    std::vector<std::string> sc;
    for (auto& spec : scalars)
      for (auto& p : f->params)
        if (!p.is_buffer() && spec.rfind(p.name() + "=", 0) == 0) sc.push_back(spec);
    check_on_gpu(*f, g, sc);
  }
}

// TVM's GPU GEMM recipe: blockIdx / vthread / threadIdx tiling, shared-memory cache_read
// copies computed at the k-tile loop and fetched cooperatively (fuse, split, bind again,
// vectorize), a local accumulator (cache_write + reverse_compute_at), unroll,
// decompose_reduction.
TEST(GpuUserSchedules, TiledGemmWithSharedMemoryAndVthread) { check_gpu_user_file("gemm_shared.tir"); }

// A stencil reading a shared tile with a halo (copy split by the thread count, tail
// predicated), a shared-memory transpose, a 2-D kernel with vectorized / unrolled inner loops;
// cross-thread reductions over a symbolic number of rows (warp shuffles, a predicated tail,
// threadIdx.y x threadIdx.x); output staging in shared memory, rfactor partials, vthread;
// f16 / bf16 / i8 / i64 / bool kernels.
TEST(GpuUserSchedules, StencilTransposeElementwiseAndReductions) {
  check_gpu_user_file("stencil_transpose.tir");
  check_gpu_user_file("reduce_sym.tir", {"n=3"});
  check_gpu_user_file("staging.tir");
  check_gpu_user_file("dtypes.tir");
}

// Symbolic sizes under user bindings: two kernels exchanging a workspace, thread loops of
// two lengths around a shared buffer, a symbolic GEMM whose shared k-tile of A under a
// predicated row split compacts to a constant [8, 32] (compact_buffers), a producer computed
// at the consumer's thread loop.
TEST(GpuUserSchedules, SymbolicSizesUnderUserBindings) {
  for (const char* n : {"n=1", "n=77"}) check_gpu_user_file("mixed_sym.tir", {n});
  check_gpu_user_file("norm_sym.tir", {"n=6"});
}

// Bound nests inside a serial loop of one kernel, the second reading elements of T that other
// thread blocks wrote (TVM would launch a kernel per nest from a host loop): compiled before as
// one kernel racing across blocks (the emulator's blocks, run in turn, read T unwritten).
TEST(GpuUserSchedules, NestsExchangingDataAcrossBlocksInOneKernelAreRefused) {
  Module m =
      parse_file((fs::path(TIRC_SOURCE_DIR) / "tests" / "codegen" / "gpu_user" / "grid_sync.tir").string());
  Function g = apply_module_schedules(m).find_func("iter");
  EXPECT_EQ(
      compile_error(g),
      "nvptx: in function iter, buffer Y is written by some thread blocks and used by others in the next "
      "iteration of loop it of the same kernel (code outside the blockIdx-bound loops): thread blocks "
      "cannot wait for each other; make each blockIdx-bound nest a top-level statement (one kernel each)");
}

// A reduction beside a bound nest in one kernel (no data exchanged, so no second kernel) is
// outside the blockIdx loop: every block ran it before, each resetting and re-adding S[0]
// concurrently on a GPU (the emulator, running blocks in turn, could not see it). Now only
// block 0 runs it (`block0.body`, then thread 0 of the block).
TEST(GpuUserSchedules, StoresOutsideTheBlockLoopsRunInBlockZero) {
  const char* text = R"(
func both(X: f32[128]) -> (Y: f32[128], S: f32[1]) {
  for b in thread_binding(4, "blockIdx.x") {
    for t in thread_binding(32, "threadIdx.x") {
      block y(vi: spatial(128) = b * 32 + t) { Y[vi] = X[vi] * 2.0 }
    }
  }
  for k in serial(128) {
    block s(vk: reduce(128) = k) {
      init { S[0] = 0.0 }
      S[0] += X[vk]
    }
  }
}
)";
  Function f = parse_module(text, "both.tir").find_func("both");
  std::string ir = testing::nvptx(f, EmitKind::LLVM);
  size_t b0 = ir.find("\nblock0.body:"), t0 = ir.find("\nthread0.body:");
  ASSERT_NE(b0, std::string::npos) << ir;
  EXPECT_NE(t0, std::string::npos) << ir;
  check_on_gpu(*f, f, {});
}

// What block 0 alone writes cannot be read by the other blocks of the same kernel, even at the
// same index: `S[0] = sum(X)` outside the blockIdx loop, then a bound nest dividing by S[0],
// under one `if` (one kernel). The same-index exemption let it compile, and every block but 0
// read S[0] unwritten.
TEST(GpuUserSchedules, Block0StoresReadByOtherBlocksAreRefused) {
  const char* text = R"(
func k2(n: i32 in [1, 4], X: f32[64]) -> (Y: f32[64]) {
  alloc S: f32[1]
  if n > 0 {
    for r in serial(64) {
      block s(vr: reduce(64) = r) {
        init { S[0] = 0.0 }
        S[0] += X[vr]
      }
    }
    for bx in thread_binding(64, "blockIdx.x") {
      block y(vi: spatial(64) = bx) { Y[vi] = X[vi] / S[0] }
    }
  }
}
)";
  Function f = parse_module(text, "k2.tir").find_func("k2");
  EXPECT_EQ(compile_error(f),
            "nvptx: in function k2, buffer S is written by some thread blocks and used by others in a later "
            "statement of the same kernel (code outside the blockIdx-bound loops): thread blocks cannot wait "
            "for each other; make each blockIdx-bound nest a top-level statement (one kernel each)");
}

// The emulator runs the threads of a block one at a time between barriers (g_serialize), so
// a barrier missing from a kernel shows as a wrong result: the kernel below, with its
// bar.sync removed by hand, reads a shared element another thread has not written yet.
TEST(GpuUserSchedules, EmulatorCatchesAMissingBarrier) {
  const char* text = R"(
func shrev(n: i32 in [1, 64], X: f32[n]) -> (Y: f32[n]) {
  for b in thread_binding(1, "blockIdx.x") {
    block blk(vb: spatial(1) = b) {
      alloc S: f32[64] scope "shared"
      for t in thread_binding(n, "threadIdx.x") {
        block s(vt: spatial(n) = t) { S[vt] = X[vt] * 2.0 }
      }
      for t in thread_binding(n, "threadIdx.x") {
        block y(vt: spatial(n) = t) { Y[vt] = S[n - 1 - vt] }
      }
    }
  }
}
)";
  Function f = parse_module(text, "shrev.tir").find_func("shrev");
  check_on_gpu(*f, f, {"n=64"});
  std::string ir = testing::nvptx(f, EmitKind::LLVM);
  const std::string bar = "call void @llvm.nvvm.barrier0()";
  size_t at = ir.find(bar);
  ASSERT_NE(at, std::string::npos) << ir;
  ir.erase(at, bar.size());
  int32_t n = 64;
  NDArray x(DType::F32, {64}), y(DType::F32, {64});
  for (int i = 0; i < 64; ++i) x.set(i, i + 1);
  int grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  ASSERT_EQ(testing::gpu_emu::run_kernel(ir, "shrev", grid, block, {&n, x.data(), y.data()}), "");
  int wrong = 0;
  for (int i = 0; i < 64; ++i) wrong += y.get(i) != 2.0 * (64 - i);
  EXPECT_GT(wrong, 0) << "the emulator did not expose the missing barrier";
}

}  // namespace
}  // namespace tirc

#endif  // TIRC_WITH_LLVM

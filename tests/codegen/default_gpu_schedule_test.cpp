// `tirc build --target nvptx` of functions nobody scheduled for the GPU: the default GPU
// schedule (transforms/schedule/default_gpu_schedule.h) binds them, the PTX assembles with
// ptxas, and the kernels, run in the GPU emulator (tests/codegen/gpu_emu.h: one host thread
// per GPU thread), compute what the interpreter computes. The schedule's own tests (what it
// binds, its fallback, the interpreter before / after on the zoo) are in
// tests/schedule/default_gpu_schedule_test.cpp.
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "ir/visitor.h"
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

using testing::nvptx;

// One PTX module of every function in fs (-O0, like nvptx()).
std::string nvptx_module(const std::vector<Function>& fs) {
  CodegenOptions o;
  o.triple = "nvptx64-nvidia-cuda";
  o.opt_level = 0;
  return compile_to(fs, EmitKind::Asm, o);
}

// Runs the kernels of g (g itself, or g_kernel0, g_kernel1, ... in order) in the emulator on
// random inputs and compares with the interpreter's run of ref.
void emulate_and_compare(const FunctionNode& ref, const Function& g, uint64_t seed) {
  SCOPED_TRACE(g->name);
  CompareOptions o;
  o.seed = seed;
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

void expect_ptxas_accepts(const Function& g) {
  std::string log;
  int rc = testing::run_ptxas(nvptx(g, EmitKind::Asm), &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << g->name << ": " << log;
  }
}

std::string example(const std::string& name) {
  return (fs::path(TIRC_SOURCE_DIR) / "examples" / (name + ".tir")).string();
}

// The shared examples with nothing but their CPU schedule (or none): bound by default, they
// assemble and run on the emulated GPU, forward and gradient.
TEST(DefaultGpuScheduleNvptx, SharedExamplesRunOnTheEmulatedGpu) {
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    SCOPED_TRACE(ex);
    Module raw = parse_file(example(ex));
    Module sched = apply_module_schedules(raw);
    Function f = raw.find_func(ex);
    std::vector<std::pair<Function, Function>> cases = {
        {f, f}, {f, sched.find_func(ex)}, {gradient(*f, {}), gradient(*f, {})}};
    // The emulator runs a host thread per GPU thread: conv2d's gradient (10k threads per
    // kernel) and softmax's CPU schedule (as its plain form) are left to ptxas here and in
    // ZooDefaultGpuPtx.
    if (std::string(ex) == "conv2d") cases.resize(1);
    if (std::string(ex) == "softmax") cases.erase(cases.begin() + 1);
    for (auto& [ref, fn] : cases) {
      Function g = default_gpu_schedule(*fn);
      ASSERT_TRUE(has_gpu_thread_binding(*g));
      expect_ptxas_accepts(g);
      // The emulator runs one host thread per GPU thread, a block at a time: smaller blocks
      // keep the run short (and make the grids larger).
      DefaultGpuScheduleOptions few;
      few.max_threads_per_block = 96;
      emulate_and_compare(*ref, default_gpu_schedule(*fn, few), 7);
    }
  }
}

// A reduction to one value (one thread), a scan over rows, an atomic scatter (take's
// gradient) and a nest of many blocks with a predicated tail.
TEST(DefaultGpuScheduleNvptx, FallbacksScansScattersAndGridStrideRunOnTheEmulatedGpu) {
  const char* text = R"(
func total(X: f32[7, 9]) -> (S: f32[1]) {
  for i, j in grid(7, 9) {
    block s(vi: reduce(7) = i, vj: reduce(9) = j) {
      init { S[0] = 0.0 }
      S[0] += X[vi, vj]
    }
  }
}
func cs(X: f32[5, 16]) -> (Y: f32[5, 16]) {
  for i, t in grid(5, 16) {
    block c(vi: spatial(5) = i, vt: scan(16) = t) {
      Y[vi, vt] = if_then_else(vt == 0, X[vi, vt], Y[vi, vt - 1] + X[vi, vt])
    }
  }
}
func take(W: f32[10, 4], I: i32[6] in [0, 9]) -> (Y: f32[6, 4]) {
  for i, j in grid(6, 4) {
    block y(vi: spatial(6) = i, vj: spatial(4) = j) { Y[vi, vj] = W[I[vi], vj] }
  }
}
func big(X: f32[300, 100]) -> (Y: f32[300, 100]) {
  for i, j in grid(300, 100) {
    block b(vi: spatial(300) = i, vj: spatial(100) = j) { Y[vi, vj] = X[vi, vj] * 2.0 + 1.0 }
  }
}
)";
  Module m = parse_module(text, "fallbacks.tir");
  std::vector<std::pair<Function, DefaultGpuScheduleOptions>> cases;
  for (auto& f : m.funcs) cases.push_back({f, {}});
  cases.push_back({gradient(*m.find_func("take"), {"W"}), {}});
  DefaultGpuScheduleOptions small;  // big: 469 blocks of 64 threads, the last one predicated
  small.max_threads_per_block = 64;
  cases.push_back({m.find_func("big"), small});
  for (auto& [f, opts] : cases) {
    Function g = default_gpu_schedule(*f, opts);
    expect_ptxas_accepts(g);
    emulate_and_compare(*f, g, 3);
  }
}

std::vector<std::string> zoo_ops() {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "examples" / "ops"))
    if (e.path().extension() == ".tir") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every zoo op and its gradient: bound by default, the PTX assembles (intermediates of
// symbolic size are workspace parameters: none is refused). One test,
// one PTX module and one ptxas run over all ops (a process per op would cost more than the
// checks).
TEST(ZooDefaultGpuPtx, ForwardAndGradientAssemble) {
  std::vector<std::string> ops = zoo_ops();
  ASSERT_GT(ops.size(), 100u);
  std::vector<Function> ok;
  std::vector<std::string> refused;
  for (const std::string& op : ops) {
    SCOPED_TRACE(op);
    Module m = parse_file((fs::path(TIRC_SOURCE_DIR) / "examples" / "ops" / (op + ".tir")).string());
    Function f = m.find_func(op);
    ASSERT_TRUE(f);
    std::vector<Function> fs{f};
    try {
      fs.push_back(gradient(*f, {}));
    } catch (const Error&) {
    }
    for (auto& fn : fs) {
      Function g = default_gpu_schedule(*fn);
      try {
        nvptx(g, EmitKind::LLVM);
        ok.push_back(g);
      } catch (const Error& e) {
        refused.push_back(fn->name + ": " + e.what());
      }
    }
  }
  EXPECT_EQ(refused, std::vector<std::string>{}) << "zoo functions refused by the nvptx backend";
  std::string ptx = nvptx_module(ok);
  EXPECT_GE(std::count(ptx.begin(), ptx.end(), '\n'), 1000);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log, "-O0");  // checks the PTX without optimising it
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log;
  }
}

TEST(DefaultGpuScheduleCli, BuildBindsUnscheduledFunctionsUnlessTold) {
  const std::string bin = std::string("'") + TIRC_BINARY + "'";
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    testing::ShellResult r = testing::sh(bin + " build '" + example(ex) + "' --target nvptx --emit ptx -o -");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(".entry"), std::string::npos) << r.out;
  }
  testing::ShellResult r = testing::sh(bin + " build '" + example("matmul") +
                                       "' --target nvptx --no-default-gpu-schedule -o /dev/null");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("error: nvptx: function matmul has no loop bound to blockIdx/threadIdx"),
            std::string::npos)
      << r.out;
  testing::ShellResult s = testing::sh(bin + " schedule '" + example("softmax") + "' --default-gpu-schedule");
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("thread_binding(32, \"threadIdx.x\")"), std::string::npos) << s.out;
}

}  // namespace
}  // namespace tirc

#endif  // TIRC_WITH_LLVM

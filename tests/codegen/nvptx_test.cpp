// NVPTX emission: kernels for functions with thread-bound loops, validated with ptxas when
// it is installed (/usr/local/cuda/bin/ptxas), and the refusals.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "codegen/codegen.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tests/codegen/ptxas_util.h"

namespace tirc {
namespace {

std::string ptx_of(const std::string& text, const std::string& func) {
  Module m = parse_module(text, "gpu.tir");
  CodegenOptions o;
  o.triple = "nvptx64-nvidia-cuda";
  return compile_to({m.find_func(func)}, EmitKind::Asm, o);
}

}  // namespace

TEST(Nvptx, ElementwiseAndSharedMemoryKernelsPassPtxas) {
  std::string text = R"(
func gelu(X: f32[4096]) -> (Y: f32[4096]) {
  for bx in thread_binding(32, "blockIdx.x") {
    for tx in thread_binding(128, "threadIdx.x") {
      block b(vi: spatial(4096) = bx * 128 + tx) {
        Y[vi] = 0.5 * X[vi] * (1.0 + erf(X[vi] * 0.7071067811865476)) + exp(X[vi]) * sigmoid(X[vi])
      }
    }
  }
}

func rowsum(A: f32[64, 128]) -> (S: f32[64]) {
  for bx in thread_binding(64, "blockIdx.x") {
    block row(vr: spatial(64) = bx) {
      alloc T: f32[128] scope "shared"
      for tx in thread_binding(128, "threadIdx.x") {
        block load(wr: spatial(64) = vr, vt: spatial(128) = tx) { T[vt] = A[wr, vt] * 2.0 }
      }
      call_extern("__syncthreads")
      for tx in thread_binding(1, "threadIdx.x") {
        for k in serial(128) {
          block sum(wr: spatial(64) = vr, vk: reduce(128) = k) {
            init { S[wr] = 0.0 }
            S[wr] += T[vk]
          }
        }
      }
    }
  }
}
)";
  for (const char* f : {"gelu", "rowsum"}) {
    SCOPED_TRACE(f);
    std::string ptx = ptx_of(text, f);
    EXPECT_NE(ptx.find(".visible .entry " + std::string(f)), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("%tid.x"), std::string::npos) << ptx;
    std::string log;
    int rc = testing::run_ptxas(ptx, &log);
    if (rc == -2) GTEST_SKIP() << "ptxas not installed";
    EXPECT_EQ(rc, 0) << log << "\n" << ptx;
  }
  EXPECT_NE(ptx_of(text, "rowsum").find("bar.sync"), std::string::npos);
}

TEST(Nvptx, RefusesFunctionsWithoutThreadBindings) {
  try {
    ptx_of(
        "func f(A: f32[4]) -> (B: f32[4]) {\n for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = "
        "A[vi] } }\n}\n",
        "f");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nvptx: function f has no loop bound to blockIdx/threadIdx (bind loops with bind())");
  }
}

}  // namespace tirc

namespace tirc {
// Without the default GPU schedule (tests/codegen/default_gpu_schedule_test.cpp), a function
// scheduled for the CPU only is refused.
TEST(Nvptx, CliRefusesCpuOnlyFunctionWithExitCode2) {
  std::string cmd = std::string("'") + TIRC_BINARY + "' build '" + TIRC_SOURCE_DIR +
                    "/examples/softmax.tir' --target nvptx --no-default-gpu-schedule 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  EXPECT_EQ(WEXITSTATUS(st), 2);
  EXPECT_EQ(out,
            "tirc: error: nvptx: function softmax has no loop bound to blockIdx/threadIdx (bind loops with "
            "bind())\n");
}
}  // namespace tirc

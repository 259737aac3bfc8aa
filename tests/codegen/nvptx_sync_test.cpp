// NVPTX kernels whose blocks run outside the threadIdx loops of a thread block (a row
// reduction or a rfactor write-back at blockIdx level, next to thread-bound stages):
// intermediates per thread block go to shared memory, code outside the threadIdx loops is
// run by thread 0 alone (every thread repeating `S += E[k]` would add each term once per
// thread), and barriers separate the stages (TVM's ThreadSync). Checked on the LLVM IR (no
// GPU here) and with ptxas.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

std::string emit(const std::string& text, const std::string& func, EmitKind kind) {
  Module m = apply_module_schedules(parse_module(text, "gpu.tir"));
  CodegenOptions o;
  o.triple = "nvptx64-nvidia-cuda";
  o.opt_level = 0;  // keep the labels of the emitted blocks
  return compile_to({m.find_func(func)}, kind, o);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Softmax with one thread block per row: the max and sum are serial reductions at blockIdx
// level, exp and the normaliser are bound to threadIdx.x. M, E, S live in the row loop.
const char* kSoftmaxRows = R"(
func softmax(X: f32[8, 64]) -> (Y: f32[8, 64]) {
  alloc M: f32[8]
  alloc E: f32[8, 64]
  alloc S: f32[8]
  for i, k in grid(8, 64) {
    block row_max(vi: spatial(8) = i, vk: reduce(64) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vk])
    }
  }
  for i, j in grid(8, 64) {
    block exp(vi: spatial(8) = i, vj: spatial(64) = j) { E[vi, vj] = exp(X[vi, vj] - M[vi]) }
  }
  for i, k in grid(8, 64) {
    block row_sum(vi: spatial(8) = i, vk: reduce(64) = k) {
      init { S[vi] = 0.0 }
      S[vi] += E[vi, vk]
    }
  }
  for i, j in grid(8, 64) {
    block norm(vi: spatial(8) = i, vj: spatial(64) = j) { Y[vi, vj] = E[vi, vj] / S[vi] }
  }
}
schedule softmax {
  n = get_block("norm")
  i, j = get_loops(n)
  compute_at(get_block("row_sum"), i)
  compute_at(get_block("exp"), i)
  compute_at(get_block("row_max"), i)
  bind(i, "blockIdx.x")
  jo, ji = split(j, [None, 32])
  bind(ji, "threadIdx.x")
  ei, ej = get_loops(get_block("exp"))
  ejo, eji = split(ej, [None, 32])
  bind(eji, "threadIdx.x")
}
)";

TEST(NvptxSync, BlockLevelStagesRunOnThreadZeroBetweenBarriers) {
  std::string ir;
  try {
    ir = emit(kSoftmaxRows, "softmax", EmitKind::LLVM);
  } catch (const Error& e) {
    FAIL() << e.what();  // was: "nvptx: buffer M is used by several threads ..."
  }
  // M, E, S: per thread block, in shared memory (address space 3).
  EXPECT_NE(ir.find("@softmax.M = internal addrspace(3) global"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@softmax.E = internal addrspace(3) global"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@softmax.S = internal addrspace(3) global"), std::string::npos) << ir;
  // The two serial reductions (row_max with its init, row_sum with its init) run on thread 0.
  EXPECT_GE(count(ir, "\nthread0.body"), 2u) << ir;
  // Barriers: after row_max (exp reads M), after exp (row_sum reads E), after row_sum (norm
  // reads S).
  EXPECT_GE(count(ir, "call void @llvm.nvvm.barrier0()"), 3u) << ir;
  std::string ptx = emit(kSoftmaxRows, "softmax", EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc == -2) GTEST_SKIP() << "ptxas not installed";
  EXPECT_EQ(rc, 0) << log << "\n" << ptx;
}

// TVM's GPU row reduction: rfactor by 32 lanes, the rf block computed at the row loop of the
// write-back and its lane loop bound to threadIdx.x; the write-back sums the 32 partials.
const char* kRfactorRows = R"(
func rowsum(A: f32[16, 256]) -> (B: f32[16]) {
  for i, k in grid(16, 256) {
    block B(vi: spatial(16) = i, vk: reduce(256) = k) {
      init { B[vi] = 0.0 }
      B[vi] = B[vi] + A[vi, vk]
    }
  }
}
schedule rowsum {
  b = get_block("B")
  i, k = get_loops(b)
  ko, ki = split(k, factors=[None, 32])
  rf = rfactor(ki, factor_axis=0)
  wi, wk = get_loops(b)
  bind(wi, "blockIdx.x")
  compute_at(rf, wi)
  x, lane, r = get_loops(rf)
  bind(lane, "threadIdx.x")
}
)";

TEST(NvptxSync, RfactorWriteBackAfterThreadPartials) {
  std::string ir;
  try {
    ir = emit(kRfactorRows, "rowsum", EmitKind::LLVM);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_NE(ir.find("@rowsum.B_rf = internal addrspace(3) global"), std::string::npos) << ir;
  EXPECT_GE(count(ir, "\nthread0.body"), 1u) << ir;  // the write-back into B
  EXPECT_GE(count(ir, "call void @llvm.nvvm.barrier0()"), 1u) << ir;
  std::string ptx = emit(kRfactorRows, "rowsum", EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc == -2) GTEST_SKIP() << "ptxas not installed";
  EXPECT_EQ(rc, 0) << log << "\n" << ptx;
}

// Two nests bound to blockIdx separately, exchanging T (was refused: "used by several thread
// blocks and would need device memory"): one kernel per nest, launched in order, T a module
// variable in global device memory. A function-level buffer read by a stage that runs
// outside every bound loop is refused.
TEST(NvptxSync, StagesThroughDeviceMemoryBecomeKernels) {
  const char* text = R"(
func f(A: f32[4, 8]) -> (B: f32[4, 8]) {
  alloc T: f32[4, 8]
  for bx in thread_binding(4, "blockIdx.x") {
    for tx in thread_binding(8, "threadIdx.x") {
      block t(vi: spatial(4) = bx, vj: spatial(8) = tx) { T[vi, vj] = A[vi, vj] * 2.0 }
    }
  }
  for bx in thread_binding(4, "blockIdx.x") {
    for tx in thread_binding(8, "threadIdx.x") {
      block b(vi: spatial(4) = bx, vj: spatial(8) = tx) { B[vi, vj] = T[3 - vi, 7 - vj] }
    }
  }
}
)";
  std::string ir = emit(text, "f", EmitKind::LLVM);
  EXPECT_NE(ir.find("@f.T = internal addrspace(1) global [32 x float]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("define void @f_kernel0(ptr"), std::string::npos) << ir;
  EXPECT_NE(ir.find("define void @f_kernel1(ptr"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("define void @f("), std::string::npos) << ir;
  std::string ptx = emit(text, "f", EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log << "\n" << ptx;
  }
  std::string unbound = text;
  size_t at = unbound.rfind("  for bx in thread_binding(4, \"blockIdx.x\") {");
  unbound = unbound.substr(0, at) +
            "  for bx, tx in grid(4, 8) {\n"
            "    block b(vi: spatial(4) = bx, vj: spatial(8) = tx) { B[vi, vj] = T[3 - vi, 7 - vj] }\n"
            "  }\n}\n";
  try {
    emit(unbound, "f", EmitKind::LLVM);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nvptx: in function f, the loop bx is outside every thread-bound loop and would run on one GPU "
              "thread: bind its loops (bind())");
  }
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

std::string slurp_case(const std::string& name) {
  std::ifstream in(std::string(TIRC_SOURCE_DIR) + "/tests/schedule/tvm_style/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// GEMV with the rf block at the write-back's threadIdx.y loop: the partials of a row are
// shared by its threadIdx.x lanes, one slice per threadIdx.y (4 x 16 floats); the write-back
// runs on lane 0 of each row (was: a private copy per thread, summed from lanes it never
// wrote).
TEST(NvptxSync, RfactorPartialsSlicedPerOuterThread) {
  std::string ir = emit(slurp_case("r3_gemv_gpu_rfactor.tir"), "gemv", EmitKind::LLVM);
  EXPECT_NE(ir.find("@gemv.y_rf = internal addrspace(3) global [64 x float]"), std::string::npos) << ir;
  EXPECT_GE(count(ir, "\nthread0.body"), 1u) << ir;
  EXPECT_GE(count(ir, "call void @llvm.nvvm.barrier0()"), 1u) << ir;
}

// Shared tiles copied per k-tile inside the thread loops (every thread copies the rows it
// reads): a barrier before the tiles are read and one before the next k-tile overwrites them.
TEST(NvptxSync, SharedTilesInsideThreadLoops) {
  std::string ir = emit(slurp_case("r3_batch_matmul_gpu.tir"), "bmm", EmitKind::LLVM);
  EXPECT_EQ(count(ir, "call void @llvm.nvvm.barrier0()"), 2u) << ir;
  std::string ptx = emit(slurp_case("r3_batch_matmul_gpu.tir"), "bmm", EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc == -2) GTEST_SKIP() << "ptxas not installed";
  EXPECT_EQ(rc, 0) << log;
}

// TVM's cooperative fetch (outsider round 2): the shared copies computed at ko inside the
// thread loops, their loops bound again to threadIdx.y/x. Each thread copies only its share,
// so a barrier must separate the copies from the multiply (and the next k-tile's copies).
TEST(NvptxSync, CooperativeFetchWaitsAtBarrier) {
  std::string ir = emit(slurp_case("outsider2_gpu_mm_cooperative_fetch.tir"), "mm", EmitKind::LLVM);
  EXPECT_EQ(count(ir, "call void @llvm.nvvm.barrier0()"), 2u) << ir;
  std::string ptx = emit(slurp_case("outsider2_gpu_mm_cooperative_fetch.tir"), "mm", EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc == -2) GTEST_SKIP() << "ptxas not installed";
  EXPECT_EQ(rc, 0) << log;
}

// A copy shared by the threads (its loop bound again to threadIdx.x) that is read at the same
// index tuple as written still needs the barrier: a reader may not have written that element.
TEST(NvptxSync, CooperativeCopySameIndexStillWaits) {
  const char* src = R"(
func f(A: f32[64, 16]) -> (C: f32[64, 16]) {
  alloc S: f32[64] scope "shared"
  for i in thread_binding(64, "blockIdx.x") {
    for tx in thread_binding(16, "threadIdx.x") {
      for c in serial(8) {
        block S(vi: spatial(64) = i) {
          S[vi] = A[vi, 0] * 3.0
        }
      }
      block C(vi: spatial(64) = i, vj: spatial(16) = tx) {
        C[vi, vj] = S[vi] + A[vi, vj]
      }
    }
  }
}
schedule f {
  i, tx, c = get_loops(get_block("S"))
  bind(c, "threadIdx.x")
}
)";
  std::string ir = emit(src, "f", EmitKind::LLVM);
  EXPECT_GE(count(ir, "call void @llvm.nvvm.barrier0()"), 1u) << ir;
}

// Where not every thread of the block runs (the threadIdx.x loop is shorter than the launch
// size set by another loop), the barrier a cooperative copy needs cannot be placed: refused
// instead of a race.
TEST(NvptxSync, CooperativeCopyInPartialThreadLoopRefused) {
  const char* src = R"(
func f(A: f32[64, 16], X: f32[64, 32]) -> (C: f32[64, 16], D: f32[64, 32]) {
  alloc S: f32[64, 16] scope "shared"
  for i in thread_binding(64, "blockIdx.x") {
    for t in thread_binding(32, "threadIdx.x") {
      block D(vi: spatial(64) = i, vj: spatial(32) = t) {
        D[vi, vj] = X[vi, vj] * 2.0
      }
    }
    for tx in thread_binding(16, "threadIdx.x") {
      for c in serial(16) {
        block S(vi: spatial(64) = i, vj: spatial(16) = c) {
          S[vi, vj] = A[vi, vj] * 3.0
        }
      }
      for k in serial(16) {
        block C(vi: spatial(64) = i, vj: spatial(16) = tx, vk: reduce(16) = k) {
          init { C[vi, vj] = 0.0 }
          C[vi, vj] = C[vi, vj] + S[vi, vk] * A[vi, vj]
        }
      }
    }
  }
}
schedule f {
  i, tx, c = get_loops(get_block("S"))
  bind(c, "threadIdx.x")
}
)";
  try {
    emit(src, "f", EmitKind::LLVM);
    ADD_FAILURE() << "not refused";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("nvptx: loop c is bound again to threadIdx.x inside a loop bound to it"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tirc

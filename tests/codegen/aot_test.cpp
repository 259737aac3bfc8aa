// The AOT path end to end: `tirc build` an object + header, compile examples/aot/main.c with
// the system C compiler against it and the C runtime, run it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/npy.h"
#include "tests/shell.h"

namespace {

using Result = tirc::testing::ShellResult;
using tirc::testing::sh;

std::string q(const std::string& s) { return "'" + s + "'"; }

// Outsider round 3: a tensorize impl that calls an extern C micro-kernel can only be checked
// by linking it (the interpreter and the JIT cannot run the call). `tirc build` an object
// where a non-square 12x16x8 matmul (4x4x4 tiles, row tiles parallel) is tensorized with
// `call_extern("mma4_f32", C.data, A.data, B.data, strides...)`, link a C implementation of
// the kernel and compare with a plain C matmul:
// this checks the pointers to the tile origins (B.ptr(o0, o1)) and the `<P>_stride<d>`
// arguments (row strides of the big buffers, not of the 4x4 desc params).
const char* kExternMmTir = R"(
func mm(A: f32[12, 16], B: f32[16, 8]) -> (C: f32[12, 8]) {
  for i, j, k in grid(12, 8, 16) {
    block C(vi: spatial(12) = i, vj: spatial(8) = j, vk: reduce(16) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
intrin mma4 {
  desc(a: f32[4, 4], b: f32[4, 4], c: f32[4, 4]) {
    for i, j, k in grid(4, 4, 4) {
      block u(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
        c[vi, vj] = c[vi, vj] + a[vi, vk] * b[vk, vj]
      }
    }
  }
  impl(a: f32[4, 4], b: f32[4, 4], c: f32[4, 4], a_stride0: i32, b_stride0: i32, c_stride0: i32) {
    call_extern("mma4_f32", c.data, a.data, b.data, a_stride0, b_stride0, c_stride0)
  }
}
schedule mm {
  b = get_block("C")
  i, j, k = get_loops(b)
  io, ii = split(i, [None, 4])
  jo, ji = split(j, [None, 4])
  ko, ki = split(k, [None, 4])
  reorder(io, jo, ko, ii, ji, ki)
  tensorize(ii, "mma4")
  parallel(io)
}
)";

const char* kExternMmMain = R"(#include <stdint.h>
#include <stdio.h>
#include "mm.h"
void mma4_f32(float* c, const float* a, const float* b, int32_t as, int32_t bs, int32_t cs) {
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) c[i * cs + j] += a[i * as + k] * b[k * bs + j];
}
int main(void) {
  float A[12 * 16], B[16 * 8], C[12 * 8], R[12 * 8];
  for (int i = 0; i < 12 * 16; ++i) A[i] = (float)((i * 37) % 11) - 5.0f;
  for (int i = 0; i < 16 * 8; ++i) B[i] = (float)((i * 13) % 7) - 3.0f;
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 8; ++j) {
      float s = 0;
      for (int k = 0; k < 16; ++k) s += A[i * 16 + k] * B[k * 8 + j];
      R[i * 8 + j] = s;
    }
  for (int i = 0; i < 12 * 8; ++i) C[i] = 1e30f;
  mm(A, B, C);
  for (int i = 0; i < 12 * 8; ++i)
    if (C[i] != R[i]) {
      printf("C[%d] = %g, expected %g\n", i, C[i], R[i]);
      return 1;
    }
  printf("ok\n");
  return 0;
}
)";

}  // namespace

TEST(AotExample, CompilesLinksAndRuns) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_aot_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string src = TIRC_SOURCE_DIR;
  Result b = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/aot/ops.tir") + " --target cpu -o " +
                q((dir / "ops.o").string()));
  ASSERT_EQ(b.code, 0) << b.out;
  ASSERT_TRUE(fs::exists(dir / "ops.h"));
  Result c = sh("cc -O2 -I" + q(dir.string()) + " " + q(src + "/examples/aot/main.c") + " " +
                q((dir / "ops.o").string()) + " " + q(src + "/runtime/tirc_runtime.c") + " -I" +
                q(src + "/runtime") + " -lpthread -lm -o " + q((dir / "demo").string()));
  ASSERT_EQ(c.code, 0) << c.out;
  for (const char* threads : {"1", "2", "3"}) {
    Result r = sh(std::string("TIRC_NUM_THREADS=") + threads + " " + q((dir / "demo").string()));
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "ok\n");
  }
  fs::remove_all(dir);
}

TEST(AotBuild, EmitsLlvmAndAsm) {
  std::string src = TIRC_SOURCE_DIR;
  Result ll = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/matmul.tir") + " --emit llvm");
  ASSERT_EQ(ll.code, 0) << ll.out;
  EXPECT_NE(ll.out.find("i32 @matmul(ptr noalias nocapture readonly %A, ptr noalias nocapture readonly %B, "
                        "ptr noalias nocapture %C)"),
            std::string::npos)
      << ll.out;
  EXPECT_NE(ll.out.find("tirc_parallel_for"), std::string::npos);
  Result as = sh(q(TIRC_BINARY) + " build " + q(src + "/examples/matmul.tir") + " --emit asm");
  ASSERT_EQ(as.code, 0) << as.out;
  EXPECT_NE(as.out.find("matmul:"), std::string::npos);
}

TEST(CliJit, RunEngineJitPrintsTheSameAsTheInterpreter) {
  std::string src = TIRC_SOURCE_DIR;
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    std::string base = q(TIRC_BINARY) + " run " + q(src + "/examples/" + ex + ".tir") + " --random 3";
    Result a = sh(base);
    Result b = sh(base + " --engine jit");
    ASSERT_EQ(a.code, 0) << a.out;
    ASSERT_EQ(b.code, 0) << b.out;
    EXPECT_EQ(a.out, b.out) << ex;  // the unscheduled examples are bit-identical
  }
}

TEST(CliJit, BenchPrintsMedianAndGflops) {
  std::string src = TIRC_SOURCE_DIR;
  Result r =
      sh(q(TIRC_BINARY) + " bench " + q(src + "/examples/matmul.tir") + " --func matmul --repeat 3 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"function\": \"matmul\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"flops\": 524288,"), std::string::npos) << r.out;  // 2 * 128 * 32 * 64
  EXPECT_NE(r.out.find("\"gflops\": "), std::string::npos) << r.out;
  Result h = sh(q(TIRC_BINARY) + " bench " + q(src + "/examples/matmul.tir") + " --func nope");
  EXPECT_EQ(h.code, 2) << h.out;
}

TEST(TensorizeExternAot, CallExternImplLinksAndComputes) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_tz_extern_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "mm.tir") << kExternMmTir;
  std::ofstream(dir / "main.c") << kExternMmMain;
  std::string src = TIRC_SOURCE_DIR;
  Result b = sh(q(TIRC_BINARY) + " build " + q((dir / "mm.tir").string()) + " --target cpu -o " +
                q((dir / "mm.o").string()));
  ASSERT_EQ(b.code, 0) << b.out;
  ASSERT_TRUE(fs::exists(dir / "mm.h"));
  Result c = sh("cc -O1 -I" + q(dir.string()) + " " + q((dir / "main.c").string()) + " " +
                q((dir / "mm.o").string()) + " " + q(src + "/runtime/tirc_runtime.c") + " -I" +
                q(src + "/runtime") + " -lpthread -lm -o " + q((dir / "demo").string()));
  ASSERT_EQ(c.code, 0) << c.out;
  Result r = sh(q((dir / "demo").string()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "ok\n");
  // verify cannot run the extern call: it says so and fails (exit 1), it does not pass.
  Result v = sh(q(TIRC_BINARY) + " verify " + q((dir / "mm.tir").string()));
  EXPECT_EQ(v.code, 1) << v.out;
  EXPECT_NE(v.out.find("call_extern(\"mma4_f32\") cannot be run by the interpreter"), std::string::npos)
      << v.out;
  fs::remove_all(dir);
}

// `tirc run --engine jit` (and bench) on a call_extern whose symbol is nowhere: one error naming
// the missing symbols and how to provide them, exit 2, and not ORC's own "JIT session error:
// Symbols not found" line followed by "Failed to materialize symbols".
TEST(CliJit, UndefinedCallExternIsOneError) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_jit_extern_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "ext.tir") << R"(
func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[vi]
    }
  }
  call_extern("my_fn", B.data, A.data)
  call_extern("other_fn", B.data)
  call_extern("my_fn", A.data)
}
func g(A: f32[4]) -> (B: f32[4]) {
  call_extern("my_fn", B.data, A.data)
}
)";
  std::string file = q((dir / "ext.tir").string());
  Result r = sh(q(TIRC_BINARY) + " run " + file + " --func f --engine jit --random 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out,
            "tirc: error: jit: call_extern targets my_fn, other_fn are not defined: the JIT can only call "
            "functions linked into tirc; compile with `tirc build` and link an object that defines them\n");
  Result b = sh(q(TIRC_BINARY) + " bench " + file + " --func g");
  EXPECT_EQ(b.code, 2) << b.out;
  EXPECT_EQ(b.out,
            "tirc: error: jit: call_extern target my_fn is not defined: the JIT can only call functions "
            "linked into tirc; compile with `tirc build` and link an object that defines it\n");
  // The object file is the way: it builds (the symbols are left for the linker).
  Result o = sh(q(TIRC_BINARY) + " build " + file + " -o " + q((dir / "ext.o").string()));
  EXPECT_EQ(o.code, 0) << o.out;
  fs::remove_all(dir);
}

// Bounds checks through the C ABI: F returns 1 before the bad access, and the object says
// which site failed with which index (the header declares both entry points). The CLI's JIT
// reports the same access as an error, exit 2.
TEST(AotBoundsCheck, FailedCheckReturnsOneAndNamesTheSite) {
  using namespace tirc;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_aot_oob_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "g.tir") << R"(func g(A: f32[8], I: i32[4]) -> (B: f32[4]) {
  for i in parallel(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[I[vi]]
    }
  }
}
)";
  std::ofstream(dir / "main.c") << R"(#include <stdio.h>
#include "g.h"
int main(void) {
  float a[8] = {0, 1, 2, 3, 4, 5, 6, 7}, b[4];
  int32_t ok[4] = {7, 6, 5, 4}, bad[4] = {1, 2, 3, 12};
  if (g(a, ok, b) != 0 || b[0] != 7.0f || __tirc_bounds_error_g(0, 0) != -1) return 3;
  int rc = g(a, bad, b);
  int64_t index = 0, extent = 0;
  int64_t site = __tirc_bounds_error_g(&index, &extent);
  printf("%d %s %lld %lld\n", rc, __tirc_bounds_sites_g[site], (long long)index, (long long)extent);
  if (g(a, ok, b) != 0) return 4;
  return 0;
}
)";
  std::string src = TIRC_SOURCE_DIR;
  Result b = sh(q(TIRC_BINARY) + " build " + q((dir / "g.tir").string()) + " --target cpu -o " +
                q((dir / "g.o").string()));
  ASSERT_EQ(b.code, 0) << b.out;
  Result c = sh("cc -O1 -I" + q(dir.string()) + " " + q((dir / "main.c").string()) + " " +
                q((dir / "g.o").string()) + " " + q(src + "/runtime/tirc_runtime.c") + " -I" +
                q(src + "/runtime") + " -lpthread -lm -o " + q((dir / "demo").string()));
  ASSERT_EQ(c.code, 0) << c.out;
  Result r = sh(q((dir / "demo").string()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "1 " + (dir / "g.tir").string() + ":4:7: block \"b\": load A, dimension 0 12 8\n");
  NDArray idx(DType::I32, {4});
  for (int64_t i = 0; i < 4; ++i) idx.set(i, i == 3 ? 12 : i + 1);
  write_npy((dir / "i.npy").string(), idx);
  Result j = sh(q(TIRC_BINARY) + " run " + q((dir / "g.tir").string()) +
                " --func g --engine jit --input A=0 --input I=" + q((dir / "i.npy").string()));
  EXPECT_EQ(j.code, 2) << j.out;
  EXPECT_NE(j.out.find("g.tir:4:7: error: block \"b\": out-of-bounds load A[12]: index 12 of dimension 0 is "
                       "outside [0, 8)"),
            std::string::npos)
      << j.out;
  fs::remove_all(dir);
}

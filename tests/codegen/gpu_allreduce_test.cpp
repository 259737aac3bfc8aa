// Cross-thread reductions (TVM's `bind(k_inner, "threadIdx.x")` on a reduction loop,
// lowered like LowerThreadAllreduce). For every schedule in tests/codegen/gpu_allreduce/:
//   * the scheduled function computes what the unscheduled one does, in the interpreter and
//     the CPU JIT (thread-bound loops run serially there);
//   * the rewrite of the NVPTX backend (lower_cross_thread_reductions: per-thread partial,
//     then a write-back) run serially by the interpreter computes the same;
//   * the NVPTX LLVM IR has the allreduce's structure (warp shuffles, the write-back on
//     thread 0) and its PTX passes `ptxas -arch=sm_80` (skipped without ptxas);
//   * the kernel run by the emulator of tests/codegen/gpu_emu.h (every GPU thread a host
//     thread, real barriers and warp shuffles with PTX's lane rules) gives the
//     interpreter's result.
// Plus the variants of the combination (threadIdx.y, several axes, warps shared by groups,
// integer and f64 values, a reduction under another threadIdx loop) and the refusals.
#include <gtest/gtest.h>

#ifdef TIRC_WITH_LLVM

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/cross_thread_reduce.h"
#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_emu.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

using testing::nvptx;

// Runs f's kernel in the emulator on the inputs of `ref` and compares with ref's outputs.
void emulate_and_compare(const FunctionNode& ref, const Function& f, uint64_t seed) {
  CompareOptions o;
  o.seed = seed;
  ArgMap in = verify_inputs(ref, o);
  ArgMap want = run_interp(ref, in);
  testing::gpu_emu::Stats stats;
  std::string err;
  ArgMap got = testing::emulate(f, in, &err, &stats);
  ASSERT_EQ(err, "") << f->name;
  EXPECT_GT(stats.shuffles + stats.barriers, 0) << "the emulator ran no shuffle nor barrier";
  for (auto& [name, arr] : want) {
    CompareResult r = compare_arrays(name, arr, got.at(name), o);
    EXPECT_TRUE(r.ok) << f->name << " on the emulated GPU: " << r.detail;
  }
}

std::vector<std::string> files() {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "tests/codegen/gpu_allreduce"))
    if (e.path().extension() == ".tir") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class GpuAllreduce : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuAllreduce, CpuGpuAndEmulator) {
  std::string text = read_file(std::string(TIRC_SOURCE_DIR) + "/tests/codegen/gpu_allreduce/" + GetParam());
  Module orig = parse_module(text, GetParam());
  Module m = apply_module_schedules(orig);
  FunctionRunner jit = [](const FunctionNode& f, const ArgMap& inputs) {
    return compile_jit(f)->run(inputs);
  };
  for (auto& f : m.funcs) {
    Function ref = orig.find_func(f->name);
    CompareOptions o;
    o.seed = 11;
    CompareResult r = compare_functions(*ref, *f, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << f->name << " [interp]: " << r.detail;
    r = compare_functions(*ref, *f, o, interp_runner(), jit);
    EXPECT_TRUE(r.ok) << f->name << " [jit]: " << r.detail;
    // The backend's rewrite, run serially, computes the same.
    Function rw = lower_cross_thread_reductions(*f);
    r = compare_functions(*ref, *rw, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << f->name << " [rewrite]: " << r.detail;
    // Structure of the kernel.
    std::string ll = nvptx(f, EmitKind::LLVM);
    EXPECT_GT(count(ll, "call { float, i1 } @llvm.nvvm.shfl.sync.down.f32p") +
                  count(ll, "call float @llvm.nvvm.shfl.sync.bfly.f32"),
              0u)
        << ll;
    EXPECT_GT(count(ll, "thread0.body:"), 0u) << "the write-back runs on thread 0";
    std::string ptx = nvptx(f, EmitKind::Asm);
    EXPECT_GT(count(ptx, "shfl.sync."), 0u);
    std::string log;
    int rc = testing::run_ptxas(ptx, &log);
    if (rc != -2) {
      EXPECT_EQ(rc, 0) << log << ptx;
    }
    emulate_and_compare(*ref, f, 5);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GpuAllreduce, ::testing::ValuesIn(files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param.substr(0, i.param.size() - 4);
                         });

// Variants of the combination, each run in the emulator: a row sum of `cols` columns with
// `rows` rows per thread block on threadIdx.y (or the reduction on y and the rows on x).
std::string variant(const std::string& dtype, const std::string& op, int rows, int cols, bool red_on_y,
                    int split = 0) {
  std::string init = op == "+" ? "0" : op == "max" ? "min_value(" + dtype + ")" : "max_value(" + dtype + ")";
  std::string upd = op == "+" ? "S[vi] = S[vi] + A[vi, vk]" : "S[vi] = " + op + "(S[vi], A[vi, vk])";
  std::string t = R"(
func f(A: DT[ROWS2, COLS] in [-50, 50]) -> (S: DT[ROWS2]) {
  for i, k in grid(ROWS2, COLS) {
    block S(vi: spatial(ROWS2) = i, vk: reduce(COLS) = k) {
      init { S[vi] = INIT }
      UPD
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  io, ii = split(i, [None, ROWS])
  bind(io, "blockIdx.x")
  bind(ii, "RAXIS")
  SPLIT
  bind(kk, "KAXIS")
}
)";
  auto rep = [&](const std::string& a, const std::string& b) {
    for (size_t p = t.find(a); p != std::string::npos; p = t.find(a, p + b.size())) t.replace(p, a.size(), b);
  };
  rep("ROWS2", std::to_string(rows * 2));
  rep("ROWS", std::to_string(rows));
  rep("COLS", std::to_string(cols));
  rep("DT", dtype);
  rep("INIT", init);
  rep("UPD", upd);
  rep("RAXIS", red_on_y ? "threadIdx.x" : "threadIdx.y");
  rep("KAXIS", red_on_y ? "threadIdx.y" : "threadIdx.x");
  rep("SPLIT", split ? "ko, kk = split(k, [None, " + std::to_string(split) + "])" : "kk = k");
  return t;
}

void check_variant(const std::string& text, const std::string& what) {
  SCOPED_TRACE(what);
  Module orig = parse_module(text, "variant.tir");
  Module m = apply_module_schedules(orig);
  Function f = m.find_func("f");
  std::string ptx = nvptx(f, EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log;
  }
  emulate_and_compare(*orig.find_func("f"), f, 9);
}

TEST(GpuAllreduceVariants, WarpSegmentsAndPartialWarps) {
  // Dx = 16: two rows per warp, shuffles within 16-lane segments.
  check_variant(variant("f32", "+", 4, 16, false), "f32 sum, 16 lanes x 4 rows");
  // Dx = 8, 3 rows: 24 threads, one partial warp (mask 0xffffff).
  check_variant(variant("f32", "max", 3, 40, false, 8), "f32 max, 8 lanes x 3 rows, split");
  // Dx = 20, one row per block: one partial warp, clamped down-shuffles, broadcast.
  check_variant(variant("i32", "max", 1, 20, false), "i32 max, 20 lanes");
  // Dx = 96 (3 warps), 2 rows: a group of 3 warps per row through shared memory.
  check_variant(variant("f64", "+", 2, 300, false, 96), "f64 sum, 96 lanes x 2 rows");
  // Dx = 100, one row: 4 warps, the last of 4 lanes.
  check_variant(variant("f32", "min", 1, 100, false), "f32 min, 100 lanes");
  // 64-bit integers (two 32-bit shuffles), 8-bit ones (widened), half floats.
  check_variant(variant("i64", "min", 2, 64, false, 32), "i64 min, 32 lanes x 2 rows");
  check_variant(variant("u8", "+", 1, 70, false), "u8 sum (wrapping), 70 lanes");
  check_variant(variant("f16", "max", 4, 40, false, 8), "f16 max, 8 lanes x 4 rows");
}

TEST(GpuAllreduceVariants, TwoAxesInTheEmulator) {
  // The reduction split over threadIdx.y (outer) and threadIdx.x (inner): the shared-memory
  // combination over both axes.
  const char* text = R"(
func f(A: f32[6, 64]) -> (S: f32[6]) {
  for i, k in grid(6, 64) {
    block S(vi: spatial(6) = i, vk: reduce(64) = k) {
      init { S[vi] = 1.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  ky, kx = split(k, [4, 16])
  bind(i, "blockIdx.x")
  bind(ky, "threadIdx.y")
  bind(kx, "threadIdx.x")
}
)";
  check_variant(text, "sum over threadIdx.y and threadIdx.x");
}

TEST(GpuAllreduceVariants, InsideASerialLoop) {
  // Four rows per thread block, one after the other (a serial loop around the allreduce):
  // the shared per-warp results are reused by the next row only after a barrier.
  const char* text = R"(
func f(A: f32[16, 200]) -> (S: f32[16]) {
  for i, k in grid(16, 200) {
    block S(vi: spatial(16) = i, vk: reduce(200) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  io, ii = split(i, [None, 4])
  ko, ki = split(k, [None, 64])
  bind(io, "blockIdx.x")
  bind(ki, "threadIdx.x")
}
)";
  check_variant(text, "rows in a serial loop, 64 lanes");
}

TEST(GpuAllreduceVariants, SharedMemoryFallback) {
  // Reduction over threadIdx.y (rows on x): groups straddle warps.
  check_variant(variant("f32", "+", 8, 12, true), "f32 sum over threadIdx.y");
  // Dx = 24 with 2 rows on y: a warp holds parts of two groups.
  check_variant(variant("i32", "+", 2, 48, false, 24), "i32 sum, 24 lanes x 2 rows");
}

TEST(GpuAllreduceVariants, TwoAxesAndNoInit) {
  // A reduction over two thread axes (k split over y and x), and an accumulation without
  // init (C = C - x into a buffer written before).
  const char* text = R"(
func f(A: f32[6, 64]) -> (S: f32[6], T: f32[6]) {
  for i, k in grid(6, 64) {
    block S(vi: spatial(6) = i, vk: reduce(64) = k) {
      init { S[vi] = 1.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
  for i in serial(6) {
    block T0(vi: spatial(6) = i) { T[vi] = 2.0 }
  }
  for i, k in grid(6, 64) {
    block T(vi: spatial(6) = i, vk: reduce(64) = k) {
      T[vi] = T[vi] - A[vi, vk]
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  ky, kx = split(k, [4, 16])
  bind(i, "blockIdx.x")
  bind(ky, "threadIdx.y")
  bind(kx, "threadIdx.x")
  t0 = get_block("T0")
  (i0,) = get_loops(t0)
  bind(i0, "blockIdx.x")
  t = get_block("T")
  i2, k2 = get_loops(t)
  bind(i2, "blockIdx.x")
  bind(k2, "threadIdx.x")
}
)";
  Module orig = parse_module(text, "two_axes.tir");
  Module m = apply_module_schedules(orig);
  Function f = m.find_func("f");
  CompareResult r = compare_functions(*orig.find_func("f"), *lower_cross_thread_reductions(*f), {},
                                      interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
  std::string ptx = nvptx(f, EmitKind::Asm);
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log;
  }
}

std::string refusal(const std::string& text) {
  Module m = parse_module(text, "r.tir");
  try {
    apply_module_schedules(m);
  } catch (const Error& e) {
    std::string msg = e.what();
    auto p = msg.find("error: ");
    return p == std::string::npos ? msg : msg.substr(p + 7);
  }
  return "accepted";
}

TEST(GpuAllreduceRefusals, Schedule) {
  const std::string head = R"(
func f(A: f32[8, 64], n: i32 in [1, 64]) -> (S: f32[8]) {
  for i, k in grid(8, 64) {
    block S(vi: spatial(8) = i, vk: reduce(64) = k) {
      init { S[vi] = 0.0 }
      S[vi] = UPD
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
)";
  auto with = [&](const std::string& upd, const std::string& rest) {
    std::string t = head;
    t.replace(t.find("UPD"), 3, upd);
    return t + rest + "}\n";
  };
  // Accepted: a commutative update.
  EXPECT_EQ(refusal(with("S[vi] + A[vi, vk]", "  bind(k, \"threadIdx.x\")\n")), "accepted");
  EXPECT_EQ(
      refusal(with("S[vi] * 0.5 + A[vi, vk]", "  bind(k, \"threadIdx.x\")\n")),
      "bind: loop k is bound to the reduce iter var vk of block S (a cross-thread reduction), whose update "
      "is not a commutative reduction: it is not an update C = C + x (or - * min max)");
  EXPECT_EQ(
      refusal(with("A[vi, vk] - S[vi]", "  bind(k, \"threadIdx.x\")\n")),
      "bind: loop k is bound to the reduce iter var vk of block S (a cross-thread reduction), whose update "
      "is not a commutative reduction: it is not an update C = C + x (or - * min max)");
  // Across thread blocks there is no allreduce.
  EXPECT_EQ(refusal(with("S[vi] + A[vi, vk]", "  bind(k, \"blockIdx.x\")\n")),
            "bind: loop k is bound to the reduce iter var vk of block S");
  // A fused spatial-reduce loop.
  EXPECT_EQ(
      refusal(with("S[vi] + A[vi, vk]", "  f = fuse(i, k)\n  bind(f, \"threadIdx.x\")\n")),
      "bind: loop f is bound to the reduce iter var vk of block S (a cross-thread reduction), but it also "
      "feeds a spatial iter var of the block");
  // A spatial loop inside the reduction loops.
  EXPECT_EQ(
      refusal(with("S[vi] + A[vi, vk]", "  reorder(k, i)\n  bind(k, \"threadIdx.x\")\n")),
      "bind: loop k is bound to the reduce iter var vk of block S (a cross-thread reduction), but loop i "
      "inside its reduction loops feeds a spatial iter var (reorder the reduction loops innermost)");
}

TEST(GpuAllreduceRefusals, SymbolicExtent) {
  const char* text = R"(
func f(n: i32 in [1, 64], A: f32[8, n]) -> (S: f32[8]) {
  for i, k in grid(8, n) {
    block S(vi: spatial(8) = i, vk: reduce(n) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  bind(k, "threadIdx.x")
}
)";
  EXPECT_EQ(
      refusal(text),
      "bind: loop k is bound to the reduce iter var vk of block S (a cross-thread reduction), of "
      "non-constant "
      "extent n (the number of threads must be known: split it by a constant factor, e.g. [None, 128], and "
      "bind the inner loop)");
}

TEST(GpuAllreduceRefusals, OtherBlocksInTheReductionLoops) {
  // compute_at of the producer into the reduction loop: the reduction loop holds two blocks.
  const char* text = R"(
func f(A: f32[8, 64]) -> (S: f32[8]) {
  alloc E: f32[8, 64]
  for i, k in grid(8, 64) {
    block E(vi: spatial(8) = i, vk: spatial(64) = k) { E[vi, vk] = A[vi, vk] * 2.0 }
  }
  for i, k in grid(8, 64) {
    block S(vi: spatial(8) = i, vk: reduce(64) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + E[vi, vk]
    }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  ko, ki = split(k, [None, 16])
  compute_at(get_block("E"), ko)
  bind(ki, "threadIdx.x")
}
)";
  EXPECT_EQ(
      refusal(text),
      "bind: loop ki is bound to the reduce iter var vk of block S (a cross-thread reduction), but its "
      "reduction loop ko holds other statements (the partial results would not be the whole reduction)");
}

TEST(GpuAllreduceRefusals, Codegen) {
  // A reduction reached by only some threads: under a threadIdx.y loop shorter than the
  // launch size of its axis (another loop of the same kernel, under the same blockIdx loop,
  // binds 8 threads to y).
  const char* text = R"(
func f(A: f32[4, 64], B: f32[8]) -> (S: f32[4], T: f32[8]) {
  for b0 in serial(1) {
    for i, k in grid(4, 64) {
      block S(vi: spatial(4) = i, vk: reduce(64) = k) {
        init { S[vi] = 0.0 }
        S[vi] = S[vi] + A[vi, vk]
      }
    }
    for j in serial(8) {
      block T(vj: spatial(8) = j) { T[vj] = B[vj] }
    }
  }
}
schedule f {
  b = get_block("S")
  b0, i, k = get_loops(b)
  bind(b0, "blockIdx.x")
  bind(i, "threadIdx.y")
  bind(k, "threadIdx.x")
  (b1, j) = get_loops(get_block("T"))
  bind(j, "threadIdx.y")
}
)";
  // The same two nests at the top level exchange no data: one kernel each (their own block
  // sizes, as TVM; round 19), so the reduction reaches every thread of its kernel.
  const char* top = R"(
func f(A: f32[4, 64], B: f32[8]) -> (S: f32[4], T: f32[8]) {
  for i, k in grid(4, 64) {
    block S(vi: spatial(4) = i, vk: reduce(64) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
  for j in serial(8) {
    block T(vj: spatial(8) = j) { T[vj] = B[vj] }
  }
}
schedule f {
  b = get_block("S")
  i, k = get_loops(b)
  bind(i, "threadIdx.y")
  bind(k, "threadIdx.x")
  (j,) = get_loops(get_block("T"))
  bind(j, "threadIdx.y")
}
)";
  Module mt = apply_module_schedules(parse_module(top, "t.tir"));
  std::string ptx = nvptx(mt.find_func("f"), EmitKind::Asm);
  EXPECT_NE(ptx.find(".entry f_kernel0("), std::string::npos) << ptx.substr(0, 800);
  EXPECT_NE(ptx.find(".entry f_kernel1("), std::string::npos);
  Module m = apply_module_schedules(parse_module(text, "c.tir"));
  try {
    nvptx(m.find_func("f"), EmitKind::Asm);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "nvptx: the cross-thread reduction of block S is reached by only some threads of a thread block "
        "(inside a threadIdx loop shorter than the launch size of its axis, or under a condition on the "
        "thread index): its shuffles and barriers need them all");
  }
}

}  // namespace
}  // namespace tirc

#endif  // TIRC_WITH_LLVM

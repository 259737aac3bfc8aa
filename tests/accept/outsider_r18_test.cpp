// Acceptance round 18 (outsider): schedules written from LANGUAGE.md's "Schedules" list the way
// a TVM user writes them on ordinary forward operators (matmul for the CPU and the GPU, conv2d
// NCHW / NHWC / depthwise, softmax, layer norm, pooling, transpose, elementwise chains, reductions
// over several axes, symbolic sizes), with TVM's keyword arguments and flags, handles reused after
// the transforms, chains of 5-15 primitives, and near-misses that must be refused with a reason
// (exit 2, FILE:LINE:COL, nothing printed: the function is left as it was).
// Every accepted case is checked by `tirc verify` (interpreter and JIT against the unscheduled
// function), `tirc build --target cpu`, and for GPU schedules `--target nvptx` + ptxas.
// Found and fixed (messages only): reorder of loops of two nests named both loops only by their
// names (`loop j is not inside loop i` when both nests have an i and a j), blockize of a list of
// one block said "the blocks must lie in sibling statements of one parent", Python's
// `get_block('C')` and `for b in [...]:` / `if c:` lines were a bare "invalid character" /
// "unexpected ':'", and `annotate(l, KEY, True)` did not say to write 1.
// Case files: tests/accept/cases/r18/.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/accept/accept_util.h"
#include "tests/codegen/ptxas_util.h"

namespace tirc::accept {
namespace {

const std::string kDir = "@/r18/";

struct Case {
  const char* file;
  std::vector<const char*> marks;  // lines (or parts) the scheduled module must contain
  bool gpu;
};

// Every case: the loop headers and blocks that show the schedule was applied as written.
const std::vector<Case>& cases_r18() {
  static const std::vector<Case> c = {
      {"mm_cpu.tir",
       {"for i0 in parallel(8) {", "for k1 in unroll(4) {", "for j1 in vectorized(32) {", "block C_init(",
        "block C_local(", "C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]"},
       false},
      {"mm_gpu.tir",
       {"for bx in thread_binding(2, \"blockIdx.x\") {", "for g1 in thread_binding(8, \"threadIdx.x\") {",
        "for f1 in thread_binding(8, \"threadIdx.y\") {", "for ki in unroll(8) {",
        "alloc A_shared: f32[64, 32] scope \"shared\"",
        "C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]"},
       true},
      {"rfactor_sum.tir",
       {"for i_wb in parallel(64) {", "for ax0 in vectorized(8) {", "block S_rf_init(",
        "for k1_wb in unroll(8) {"},
       false},
      {"rfactor_axis1.tir", {"block Y_rf(", "for n_wb in parallel(16) {", "for fo in serial(48) {"}, false},
      {"blockize_tensorize.tir", {"block C_o(", "for k in unroll(4) {", "for i0 in parallel(8) {"}, false},
      {"conv_nchw.tir",
       {"for nf in parallel(4) {", "for fi in vectorized(8) {", "for s in unroll(3) {", "block conv_init("},
       false},
      {"conv_nhwc.tir",
       {"for ny in parallel(20) {", "for ax1 in serial(3) {", "for ax3 in vectorized(8) {",
        "for f in vectorized(16) {"},
       false},
      {"dwconv.tir",
       {"for fused in parallel(128) {", "for hi in serial(4) annotate(\"pragma_unroll_explicit\", 1) {",
        "block Y_local("},
       false},
      {"softmax_cpu.tir",
       {"for i in parallel(64) {", "annotate(\"pragma_unroll_explicit\", 1) {", "for ji in vectorized(4) {"},
       true},
      {"softmax_gpu.tir",
       {"for i in thread_binding(64, \"blockIdx.x\") {", "for mi in thread_binding(64, \"threadIdx.x\") {",
        "for si in thread_binding(64, \"threadIdx.x\") {"},
       true},
      {"layernorm.tir",
       {"for i in parallel(32) {", "block mean_rf(", "block sq_init(", "for j1 in vectorized(8) {"},
       false},
      {"ln_gpu.tir",
       {"for a1 in thread_binding(128, \"threadIdx.x\") {", "for b0 in unroll(4) {",
        "for ji in thread_binding(128, \"threadIdx.x\") {"},
       true},
      {"pool.tir",
       {"for nc in parallel(64) {", "for w in vectorized(16) {", "block maxp_init(", "block avg_rf(",
        "for anc_wb in parallel(64) {"},
       false},
      {"transpose.tir",
       {"for io_jo_fused in parallel(96) {", "block A_local(", "for ii in vectorized(8) {"},
       false},
      {"ew_chain.tir",
       {"for o in parallel(192) {", "for i in vectorized(16) {", "max(X[vi, vj] + b[vj], 0.0) * 0.5"},
       true},
      {"ew_gpu.tir",
       {"for bx in thread_binding(24, \"blockIdx.x\") {", "for tx in thread_binding(128, \"threadIdx.x\") {",
        "where bx * 128 + tx < 3000"},
       true},
      {"sym_mm.tir",
       {"for io in parallel((n + 7) // 8) {", "for j in vectorized(24) {", "block C_init("},
       false},
      {"sym_softmax.tir",
       {"for i in parallel(n) {", "for so in serial((m + 3) // 4) {", "for ji in vectorized(8) {",
        "block sm_rf("},
       true},
      {"mm_relu_epilogue.tir",
       {"for t in parallel(64) {", "for ax1 in vectorized(8) {", "block bias_relu(", "block mm_init("},
       true},
      {"gpu_rowsum_rfactor.tir",
       {"for i_wb in thread_binding(128, \"blockIdx.x\") {",
        "for ax0 in thread_binding(32, \"threadIdx.x\") {",
        "for ki_wb in thread_binding(32, \"threadIdx.x\") {"},
       true},
      {"conv_gpu.tir",
       {"for nf in thread_binding(16, \"blockIdx.x\") {", "for x in thread_binding(16, \"threadIdx.x\") {",
        "block Y_local("},
       true},
      {"tvm_habits.tir",
       {"for out in parallel(4) {", "for in_1 in vectorized(16) annotate(\"pragma_unroll_explicit\", 1) {",
        "for k in unroll(32) {", "block B_global(", "block C_local("},
       true},
      {"two_consumers.tir",
       {"for i in parallel(32) {", "block T_local(", "reads T_local[vi, vj]",
        "for ax1_1 in vectorized(16) {"},
       true},
  };
  return c;
}

// The cases in a range, so that the work is spread over several tests (each a few seconds).
void check_cases(size_t lo, size_t hi) {
  const auto& all = cases_r18();
  for (size_t n = lo; n < hi && n < all.size(); ++n) {
    const Case& c = all[n];
    SCOPED_TRACE(c.file);
    const std::string f = kDir + c.file;
    CliRun s = run("schedule " + f);
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.err, "");
    for (const char* m : c.marks) EXPECT_TRUE(has(s.out, m)) << "missing: " << m << "\n" << s.out;
    // The scheduled module reads back and prints the same (no schedule items are left).
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
    // verify's JIT has compiled it for the host already: a CPU object file for the CPU
    // schedules, PTX for the GPU ones (the time of the whole file stays near 15 s).
    if (!c.gpu) {
      CliRun b = run("build " + f + " --target cpu -o %/k.o");
      EXPECT_EQ(b.code, 0) << b.err;
    } else {
      CliRun g = run("build " + f + " --target nvptx --emit ptx -o -");
      ASSERT_EQ(g.code, 0) << g.err;
      EXPECT_TRUE(has(g.out, ".entry")) << g.out.substr(0, 400);
      std::string log;
      int rc = tirc::testing::run_ptxas(g.out, &log);
      if (rc != -2) {
        EXPECT_EQ(rc, 0) << log;
      }
    }
  }
}

TEST(AcceptR18, SchedulesPart1) { check_cases(0, 6); }
TEST(AcceptR18, SchedulesPart2) { check_cases(6, 12); }
TEST(AcceptR18, SchedulesPart3) { check_cases(12, 18); }
TEST(AcceptR18, SchedulesPart4) { check_cases(18, 100); }

// Symbolic sizes: the split tails are guarded for every n (1, a multiple of the factor, not),
// and `tirc bench` times the scheduled function.
TEST(AcceptR18, SymbolicTailsAndBench) {
  for (const char* n : {"1", "8", "37"}) {
    CliRun v = run("verify " + kDir + "sym_mm.tir -i n=" + n + (has_llvm() ? "" : " --engine interp"));
    EXPECT_EQ(v.code, 0) << n << v.out << v.err;
  }
  for (const char* nm : {"n=1 -i m=1", "n=5 -i m=13"}) {
    CliRun v = run("verify " + kDir + "sym_softmax.tir -i " + nm + (has_llvm() ? "" : " --engine interp"));
    EXPECT_EQ(v.code, 0) << nm << v.out << v.err;
  }
  if (!has_llvm()) return;
  CliRun b = run("bench " + kDir + "sym_mm.tir --func mm -i n=40 --repeat 2");
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(has(b.out, "GFLOP/s")) << b.out;
  EXPECT_TRUE(has(b.out, "6.144e+04 FLOPs")) << b.out;  // 40 * 24 * 32 multiply-adds, 2 each
  b = run("bench " + kDir + "mm_cpu.tir --func mm --repeat 2");
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(has(b.out, "1.573e+06 FLOPs")) << b.out;
}

// ---------------------------------------------------------------------------------------------
// Near-misses: refused at the instruction with the reason; nothing is printed.

const char* kMM =
    "func mm(A: f32[64, 32], B: f32[32, 48]) -> (C: f32[64, 48]) {\n"
    "  for i, j, k in grid(64, 48, 32) {\n"
    "    block C(vi: spatial(64) = i, vj: spatial(48) = j, vk: reduce(32) = k) {\n"
    "      init { C[vi, vj] = 0.0 }\n"
    "      C[vi, vj] += A[vi, vk] * B[vk, vj]\n"
    "    }\n"
    "  }\n"
    "}\n";
const char* kTwo =
    "func two(X: f32[32, 16]) -> (Y: f32[32, 16], S: f32[32]) {\n"
    "  alloc T: f32[32, 16]\n"
    "  for i, j in grid(32, 16) {\n"
    "    block T(vi: spatial(32) = i, vj: spatial(16) = j) { T[vi, vj] = X[vi, vj] * 2.0 }\n"
    "  }\n"
    "  for i, j in grid(32, 16) {\n"
    "    block Y(vi: spatial(32) = i, vj: spatial(16) = j) { Y[vi, vj] = T[vi, vj] + 1.0 }\n"
    "  }\n"
    "  for i, k in grid(32, 16) {\n"
    "    block S(vi: spatial(32) = i, vk: reduce(16) = k) {\n"
    "      init { S[vi] = 0.0 }\n"
    "      S[vi] += T[vi, vk]\n"
    "    }\n"
    "  }\n"
    "}\n";
const char* kSym =
    "func sym(n: i32, X: f32[n, 16]) -> (Y: f32[n, 16]) {\n"
    "  for i, j in grid(n, 16) {\n"
    "    block Y(vi: spatial(n) = i, vj: spatial(16) = j) { Y[vi, vj] = X[vi, vj] * 2.0 }\n"
    "  }\n"
    "}\n";
const char* kScan =
    "func scan(X: f32[8, 32]) -> (Y: f32[8, 32]) {\n"
    "  for i, t in grid(8, 32) {\n"
    "    block scan(vi: spatial(8) = i, vt: scan(32) = t) {\n"
    "      Y[vi, vt] = X[vi, vt] + if_then_else(vt > 0, Y[vi, vt - 1], 0.0)\n"
    "    }\n"
    "  }\n"
    "}\n";
const char* kTr =
    "func tr(X: f32[16, 16]) -> (Z: f32[16, 16]) {\n"
    "  alloc T: f32[16, 16]\n"
    "  for i, j in grid(16, 16) {\n"
    "    block T(vi: spatial(16) = i, vj: spatial(16) = j) { T[vi, vj] = X[vi, vj] + 1.0 }\n"
    "  }\n"
    "  for i, j in grid(16, 16) {\n"
    "    block Z(vi: spatial(16) = i, vj: spatial(16) = j) { Z[vi, vj] = T[vj, vi] + T[vi, vj] }\n"
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

TEST(AcceptR18, NearMissesAreRefusedWithTheReason) {
  const std::vector<Refusal> rs = {
      // Wrong handle kinds.
      {kMM, "  b = get_block(\"C\")\n  x, y = split(b, [_, 4])\n", 10,
       "split: 'b' is a block handle, expected a loop"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  compute_inline(i)\n", 3,
       "compute_inline: 'i' is a loop handle, expected a block"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  l = get_loops(i)\n", 7,
       "get_loops: 'i' is a loop handle, expected a block"},
      {kMM, "  r = get_block(\"root\")\n  parallel(r)\n", 3,
       "parallel: 'r' is a block handle, expected a loop"},
      // reorder / fuse of loops that are not one nest.
      {kTwo,
       "  i1, j1 = get_loops(get_block(\"T\"))\n  i2, j2 = get_loops(get_block(\"Y\"))\n  reorder(j1, i2)\n",
       3, "reorder: loop j (around block T) is not inside loop i (around block Y); the loops must be nested"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  f = fuse(i, k)\n", 7,
       "fuse: loops i and k are not adjacent (the second must be the whole body of the first)"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  f = fuse(j, i)\n", 7,
       "fuse: loops j and i are not adjacent (the second must be the whole body of the first)"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  f = fuse(i, i)\n", 7,
       "fuse: loop i is given twice"},
      // split factors.
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [4, 8])\n", 10,
       "split: factors multiply to 32, less than the extent 64 of loop i"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [None, None])\n", 10,
       "split: at most one factor may be inferred (_ or None)"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [_, -4])\n", 10,
       "split: factor -4 is not positive"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [_, 4.0])\n", 10,
       "split: a factor must be a positive integer or _"},
      {kMM,
       "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  bind(i, \"blockIdx.x\")\n  a, c = split(i, [_, "
       "8])\n",
       10, "split: loop i is bound to blockIdx.x; split it before binding it"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [_, 8])\n  parallel(i)\n", 3,
       "parallel: loop 'i' no longer exists (replaced by an earlier primitive)"},
      // compute_at / reverse_compute_at outside the consumers / producers.
      {kTwo, "  t = get_block(\"T\")\n  i, k = get_loops(get_block(\"S\"))\n  compute_at(t, i)\n", 3,
       "compute_at: consumer block Y of block T is not under loop i"},
      {kTwo, "  t = get_block(\"T\")\n  i, j = get_loops(t)\n  compute_at(t, i)\n", 3,
       "compute_at: block T is already inside loop i"},
      {kTwo, "  y = get_block(\"Y\")\n  i, k = get_loops(get_block(\"S\"))\n  reverse_compute_at(y, k)\n", 3,
       "reverse_compute_at: block Y reads nothing produced under loop k"},
      {kTr, "  i, j = get_loops(get_block(\"T\"))\n  reverse_compute_at(get_block(\"Z\"), i)\n", 3,
       "reverse_compute_at: block Z loads buffer T at different indices"},
      // Loop kinds on reduction / scan loops, symbolic vectorize, thread axes.
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  vectorize(k)\n", 3,
       "vectorize: loop k is bound to the reduce iter var vk of block C"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  parallel(k)\n", 3,
       "parallel: loop k is bound to the reduce iter var vk of block C"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  bind(k, \"blockIdx.x\")\n", 3,
       "bind: loop k is bound to the reduce iter var vk of block C"},
      {kScan, "  i, t = get_loops(get_block(\"scan\"))\n  parallel(t)\n", 3,
       "parallel: loop t is bound to the scan iter var vt of block scan"},
      {kSym, "  i, j = get_loops(get_block(\"Y\"))\n  vectorize(i)\n", 3,
       "vectorize: loop i has a non-constant extent (as in TVM; split it by a constant inner factor, e.g. "
       "[None, "
       "8], and vectorize the inner loop)"},
      {kMM,
       "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  bind(i, \"threadIdx.x\")\n  bind(j, "
       "\"threadIdx.x\")\n",
       3,
       "bind: thread axis threadIdx.x is already bound by the enclosing loop i and the body of loop j "
       "depends on "
       "it"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  bind(i, \"threadIdx.w\")\n", 3,
       "bind: unknown thread axis \"threadIdx.w\" (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread)"},
      // Inlining what cannot be inlined.
      {kTwo, "  compute_inline(get_block(\"S\"))\n", 3, "compute_inline: block S is a reduction"},
      {kTwo, "  reverse_compute_inline(get_block(\"S\"))\n", 3,
       "reverse_compute_inline: block S is a reduction"},
      {kTwo, "  compute_inline(get_block(\"Y\"))\n", 3,
       "compute_inline: block Y writes buffer Y, a parameter or output of the function"},
      {kTwo, "  reverse_compute_inline(block=get_block(\"Y\"))\n", 3,
       "reverse_compute_inline: buffer T is also read by block S"},
      {kTr, "  reverse_compute_inline(get_block(\"Z\"))\n", 3,
       "reverse_compute_inline: block Z loads buffer T at different indices"},
      // Caches: indices by position and by name, scopes.
      {kMM, "  b = get_block(\"C\")\n  c = cache_read(b, 2, \"shared\")\n", 7,
       "cache_read: block C has 2 read regions of buffers it does not write; index 2 is out of range"},
      {kMM, "  b = get_block(\"C\")\n  c = cache_write(b, 1, \"local\")\n", 7,
       "cache_write: block C has 1 write region; index 1 is out of range"},
      {kMM, "  b = get_block(\"C\")\n  c = cache_read(b, 0, \"texture\")\n", 7,
       "cache_read: unknown storage scope \"texture\" (expected global, shared or local)"},
      {kTwo, "  c = cache_read(get_block(\"Y\"), \"X\", \"local\")\n", 7,
       "cache_read: block Y does not read a buffer named X"},
      // decompose_reduction / rfactor.
      {kTwo, "  b = get_block(\"S\")\n  i, j = get_loops(get_block(\"Y\"))\n  decompose_reduction(b, j)\n", 3,
       "decompose_reduction: loop j is not above block S"},
      {kTwo, "  b = get_block(\"Y\")\n  i, j = get_loops(b)\n  decompose_reduction(b, i)\n", 3,
       "decompose_reduction: block Y has no init"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  rf = rfactor(i, 0)\n", 8,
       "rfactor: loop i feeds a spatial iter var of block C"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  rf = rfactor(k, 3)\n", 8,
       "rfactor: factor_axis 3 is out of range for buffer C"},
      // blockize / tensorize / get_block / annotate.
      {kMM, "  b = get_block(\"C\")\n  blockize(b)\n", 3, "blockize: 'b' is a block handle, expected a loop"},
      {kMM, "  b = get_block(\"C\")\n  x = blockize([b])\n", 7,
       "blockize: a list of one block (C): blockize a loop of its nest instead, e.g. blockize(loops[0]) with "
       "loops "
       "= get_loops(b) (a list wraps the nests of several sibling blocks)"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  tensorize(i, \"mma4\")\n", 3,
       "tensorize: unknown intrinsic \"mma4\" (the module defines no intrin)"},
      {kMM, "  b = get_block(\"D\")\n", 7, "get_block: no block named \"D\" in function mm"},
      {kMM, "  b = get_block(\"C\")\n  i, j = get_loops(b)\n", 10,
       "get_loops: block C has 3 loops, but 2 names are bound"},
      {kMM, "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  annotate(i, \"k\", [1, 2])\n", 3,
       "annotate: the annotation value must be an int, float or string literal"},
      {kMM,
       "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  annotate(i, \"pragma_unroll_explicit\", True)\n",
       3, "annotate: the annotation value must be an int, float or string literal (write 1 for True)"},
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

// A refused schedule leaves the function as it was for every command that applies schedules:
// verify, build and bench stop with the same positioned error (exit 2), nothing on stdout;
// parse and run (which do not apply schedules) still work on the file.
TEST(AcceptR18, RefusedScheduleStopsEveryCommand) {
  const std::string text =
      std::string(kMM) +
      "schedule mm {\n  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n"
      "  io, ii = split(i, [_, 8])\n  parallel(io)\n  vectorize(ii)\n  f = fuse(io, k)\n}\n";
  const std::string err =
      "<stdin>:15:7: error: fuse: loops io and k are not adjacent (the second must be the whole body of the "
      "first)\n";
  std::vector<std::string> cmds = {"schedule -", "verify -"};
  if (has_llvm()) {
    cmds.push_back("build - --target cpu -o %/k.o");
    cmds.push_back("build - --target nvptx --emit ptx");
    cmds.push_back("bench - --func mm --repeat 1");
  }
  for (const std::string& c : cmds) {
    CliRun r = run(c, text);
    EXPECT_EQ(r.code, 2) << c;
    EXPECT_EQ(r.out, "") << c;
    EXPECT_EQ(r.err, err) << c;
  }
  CliRun p = run("parse -", text);
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(has(p.out, "f = fuse(io, k)")) << p.out;
  CliRun r = run("run - --func mm --random 1", text);
  EXPECT_EQ(r.code, 0) << r.err;
}

// Decisions taken from TVM where LANGUAGE.md is silent, each checked against the unscheduled
// function: factors multiplying past the extent guard the tail (TVM's split), a thread-bound loop
// may be bound again (TVM's test_unroll_after_bind), TVM's `None` and a trailing comma in the
// factors, a tuple of factors.
TEST(AcceptR18, TvmDecisionsComputeTheSame) {
  const std::vector<std::string> bodies = {
      "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, [5, 16])\n",
      "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  bind(i, \"blockIdx.x\")\n  bind(i, "
      "\"blockIdx.y\")\n"
      "  bind(j, \"threadIdx.x\")\n  unroll(j)\n",
      "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  a, c = split(i, factors=(None, 8),)\n"
      "  d, e = split(j, [6, None], preserve_unit_iters=False)\n  parallel(a)\n",
  };
  const std::vector<std::string> marks = {
      "where a * 16 + c < 64", "for i in thread_binding(64, \"blockIdx.y\") {", "for a in parallel(8) {"};
  for (size_t n = 0; n < bodies.size(); ++n) {
    std::string text = std::string(kMM) + "schedule mm {\n" + bodies[n] + "}\n";
    SCOPED_TRACE(bodies[n]);
    CliRun s = run("schedule -", text);
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_TRUE(has(s.out, marks[n])) << s.out;
    CliRun v = run(std::string("verify -") + (has_llvm() ? "" : " --engine interp"), text);
    EXPECT_EQ(v.code, 0) << v.out << v.err;
  }
}

// Python's habits in a schedule or a body are named (were "invalid character '''" and a bare
// "unexpected ':'").
TEST(AcceptR18, PythonHabitsAreNamed) {
  std::string text = std::string(kMM) + "schedule mm {\n  b = get_block('C')\n}\n";
  CliRun r = run("schedule -", text);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:10:17: error: invalid character ''' (strings are written in double quotes: \"C\")\n");
  text = std::string(kTwo) +
         "schedule two {\n  for blk in [get_block(\"T\"), get_block(\"Y\")]:\n    x = 1\n}\n";
  r = run("schedule -", text);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "<stdin>:17:46: error: unexpected ':' (a schedule is a list of instructions, not Python: there is no "
      "'for'; write each instruction out, e.g. once per block)\n");
  text = std::string(kMM) + "schedule mm {\n  b = get_block(\"C\")\n  if True:\n    parallel(b)\n}\n";
  r = run("schedule -", text);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "<stdin>:11:10: error: unexpected ':' (a schedule is a list of instructions, not Python: there is no "
      "'if'; write each instruction out, e.g. once per block)\n");
  r = run("parse -", "func f(A: f32[8]) -> (B: f32[8]) {\n  for i in serial(8):\n    B[i] = A[i]\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:2:21: error: unexpected ':'; expected '{' or a name (a body is written in braces, not "
            "after ':': "
            "for i in serial(8) { ... }, if c { ... })\n");
  // A ':' inside a line is not such a block (a slice in a schedule stays valid).
  r = run("schedule -",
          std::string(kMM) + "schedule mm {\n  l = get_loops(get_block(\"C\"))\n  reorder(*l[1:])\n}\n");
  EXPECT_EQ(r.code, 0) << r.err;
}

}  // namespace
}  // namespace tirc::accept

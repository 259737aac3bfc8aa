// Vector accesses and parallel bodies (codegen round 17, bench/README.md "Codegen r17"):
//  * strided loads under a mask (`where` of a split tail) or with bounds checks: spans of
//    one register's lanes and a shuffle, not gathers (40x slower than the serial loop);
//    plain strided loads are left to LLVM's vectorizer. Neither reads an element past the
//    highest lane's (a guard page after the buffer);
//  * a lane-invariant load under a mask: one masked element, not a gather of one address;
//  * a top-level bounds check around an affine index: checked on the lanes, then a
//    contiguous access (was a gather / scatter);
//  * the outlined body of a parallel loop gets its buffers as noalias arguments (the inner
//    loop vectorized without run-time overlap checks), except under atomic blocks.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "codegen/codegen.h"
#include "ir/error.h"
#include "tests/codegen/compare.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

std::string llvm_ir(const Function& f, int opt_level, bool checks = true) {
  CodegenOptions o;
  o.opt_level = opt_level;
  o.bounds_checks = checks;
  return compile_to({f}, EmitKind::LLVM, o);
}

// n elements of `bytes` each, ending at a page followed by an inaccessible page: reading
// one element past the end faults.
class GuardedBuffer {
 public:
  GuardedBuffer(int64_t n, int bytes) {
    long page = sysconf(_SC_PAGESIZE);
    size_t len = static_cast<size_t>(n * bytes);
    size_t data_pages = (len + page - 1) / page;
    size_ = (data_pages + 1) * page;
    base_ =
        static_cast<char*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + data_pages * page, page, PROT_NONE), 0);
    data_ = base_ + data_pages * page - len;
  }
  ~GuardedBuffer() { munmap(base_, size_); }
  void* data() { return data_; }

 private:
  char* base_;
  char* data_;
  size_t size_;
};

// Runs f on `in` with each input buffer copied into a GuardedBuffer and compares with the
// interpreter bit for bit.
void expect_guarded_run_matches(const FunctionNode& f, const ArgMap& in, bool checks = true) {
  ArgMap ref = run_interp(f, in);
  CodegenOptions o;
  o.bounds_checks = checks;
  auto prog = compile_jit(f, o);
  ArgMap outs;
  std::vector<double> slots;
  std::vector<void*> args = prog->pack_args(in, &outs, &slots);
  std::vector<std::unique_ptr<GuardedBuffer>> guards;
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (!f.params[i].is_buffer()) continue;
    const NDArray& a = in.at(f.params[i].name());
    guards.push_back(std::make_unique<GuardedBuffer>(a.numel(), dtype_bytes(a.dtype())));
    std::memcpy(guards.back()->data(), a.data(), a.numel() * dtype_bytes(a.dtype()));
    args[i] = guards.back()->data();
  }
  prog->call_packed(args.data());
  for (auto& [name, arr] : ref) EXPECT_TRUE(arrays_close(outs.at(name), arr, 0, 0)) << f.name << " " << name;
}

// `B[i] = A[S * i + O] ...` over N outputs, vectorized by `lanes` (a split tail's `where` when
// lanes does not divide N); A has exactly the elements the accesses reach.
std::string strided(const std::string& dt, int n, int stride, int lanes, const std::string& value) {
  int a_len = (n - 1) * std::abs(stride) + 3;
  std::string s = "func f(A: " + dt + "[" + std::to_string(a_len) + "]) -> (B: " + dt + "[" +
                  std::to_string(n) + "]) {\n";
  s += "  for i in serial(" + std::to_string(n) + ") {\n    block b(vi: spatial(" + std::to_string(n) +
       ") = i) {\n";
  s += "      B[vi] = " + value + "\n    }\n  }\n}\n";
  s += "schedule f {\n  b = get_block(\"b\")\n  i, = get_loops(b)\n  io, ii = split(i, [_, " +
       std::to_string(lanes) + "])\n  vectorize(ii)\n}\n";
  return s;
}

Function scheduled(const std::string& text) {
  Module m = parse_module(text, "test.tir");
  return apply_module_schedules(m).find_func("f");
}

}  // namespace

// Strides 2, 3, -2, 8 (spans) and 9 (a gather) under the mask of a split tail (and with the
// bounds checks of that mask's unproven indices), every lane count kind, four dtypes; the
// highest element of A is the last one read.
TEST(VectorAccess, MaskedStridedLoadsAreSpansAndReadNothingPastTheLanes) {
  struct Case {
    const char* dt;
    int n, lanes;
    std::string value;
    int stride;
  };
  const Case cases[] = {
      {"f32", 100, 48, "A[2 * vi] + A[2 * vi + 2]", 2},
      {"f32", 100, 64, "A[3 * vi + 2] * 2.0 + A[3 * vi]", 3},
      {"i8", 70, 16, "A[2 * vi + 1] + A[2 * vi + 2]", 2},
      {"f64", 50, 8, "A[(49 - vi) * 2 + 2] - A[(49 - vi) * 2]", -2},
      {"f16", 40, 16, "A[8 * vi + 2] + A[8 * vi]", 8},
      {"f32", 30, 16, "A[9 * vi + 2] + A[9 * vi]", 9},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    Function f = scheduled(strided(c.dt, c.n, c.stride, c.lanes, c.value));
    ASSERT_TRUE(f);
    ArgMap in = random_inputs(*f, 3);
    expect_guarded_run_matches(*f, in);
    expect_guarded_run_matches(*f, in, false);
    std::string ir = llvm_ir(f, 0);
    EXPECT_EQ(ir.find("masked.gather") == std::string::npos, std::abs(c.stride) <= 8) << ir;
  }
}

// Without a mask or checks, strided loads are LLVM's (its vectorizer loads interleave groups
// once); the loop carries no forced width and reads nothing past A's last element either.
TEST(VectorAccess, PlainStridedLoadsAreLeftToTheLoopVectorizer) {
  Function f = scheduled(strided("f32", 128, 2, 64, "A[2 * vi] + A[2 * vi + 2]"));
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 0);
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("<64 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("llvm.loop.vectorize.enable"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("llvm.loop.vectorize.width"), std::string::npos) << ir;
  expect_guarded_run_matches(*f, random_inputs(*f, 4));
}

// `W[vo]` (vo = io) under the where of a split tail is one element loaded when a lane is on: in the
// last (empty) vector of io = 2, W[2] is past W's end (unchecked code: the guard page).
TEST(VectorAccess, InvariantLoadUnderAMaskIsOneMaskedElement) {
  Function f = parse_func(R"(
func f(A: f32[100], W: f32[2]) -> (B: f32[100]) {
  for io in serial(3) {
    for ii in vectorized(64) {
      block b(vi: spatial(100) = io * 64 + ii, vo: spatial(3) = io) {
        where io * 64 + ii < 100
        B[vi] = A[vi] * W[vo]
      }
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 0, false);
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  EXPECT_NE(ir.find("masked.load.v1f32"), std::string::npos) << ir;
  ArgMap in = random_inputs(*f, 5);
  expect_guarded_run_matches(*f, in, false);
  expect_jit_matches_interp(*f, 5, 0, 0);
}

// A checked unit-stride index under a mask: the check on the lanes, then masked contiguous
// accesses (no gather / scatter), and the first failing lane reported as by the interpreter.
TEST(VectorAccess, CheckedAffineIndexUnderAMaskIsContiguous) {
  Function f = parse_func(R"(
func f(n: i32, A: f32[64]) -> (B: f32[64]) {
  for i in serial(64) {
    block z(vi: spatial(64) = i) { B[vi] = -1.0 }
  }
  for ii in vectorized(64) {
    block b(vi: spatial(64) = ii) {
      where ii < n
      B[vi] = A[vi + 64 - n]
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 0);
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  EXPECT_NE(ir.find("oob"), std::string::npos) << ir;  // the index is checked
  for (int n : {0, 5, 64}) expect_jit_matches_interp(*f, 1, 0, 0, {{"n", scalar(DType::I32, n)}});
  // n = 70: lanes 0..5 index -6..-1 (the where keeps lanes < 70: all 64).
  ArgMap in = random_inputs(*f, 1, {{"n", scalar(DType::I32, 70)}});
  std::string want, got;
  try {
    run_interp(*f, in);
  } catch (const Error& e) {
    want = e.what();
  }
  try {
    compile_jit(*f)->run(in);
  } catch (const Error& e) {
    got = e.what();
  }
  EXPECT_NE(want.find("A[-6]"), std::string::npos) << want;
  EXPECT_NE(got.find("index -6"), std::string::npos) << got;
}

// The loop inside a parallel body is vectorized without run-time overlap checks (LLVM knew
// nothing of the closure's pointers), and atomic bodies get no noalias.
TEST(VectorAccess, ParallelBodyBuffersAreNoalias) {
  Function f = scheduled(R"(
func f(A: i32[16, 256]) -> (S: i32[16]) {
  for i, j in grid(16, 256) {
    block b(vi: spatial(16) = i, vj: reduce(256) = j) {
      init {
        S[vi] = 0
      }
      S[vi] = S[vi] + A[vi, vj]
    }
  }
}
schedule f {
  b = get_block("b")
  i, j = get_loops(b)
  parallel(i)
}
)");
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 3);
  EXPECT_EQ(ir.find("found.conflict"), std::string::npos) << ir;
  EXPECT_NE(ir.find("add <"), std::string::npos) << ir;
  expect_jit_matches_interp(*f, 2, 0, 0);

  Function g = parse_func(R"(
func g(I: i32[8] in [0, 3], X: f32[8]) -> (Y: f32[4]) {
  for i in serial(4) {
    block z(vi: spatial(4) = i) { Y[vi] = 0.0 }
  }
  for i in parallel(8) {
    block s(vi: reduce(8) = i) {
      annotate("atomic", 1)
      Y[I[vi]] = Y[I[vi]] + X[vi]
    }
  }
}
)",
                          "g");
  ASSERT_TRUE(g);
  // The noalias arguments of `<F>.parallel.N.body` become alias scopes named after them
  // when LLVM inlines it (also at -O0: it is always_inline).
  EXPECT_NE(llvm_ir(f, 0).find("f.parallel.0.body: argument"), std::string::npos);
  std::string gi = llvm_ir(g, 0);
  EXPECT_NE(gi.find("g.parallel.0"), std::string::npos) << gi;
  EXPECT_EQ(gi.find("g.parallel.0.body: argument"), std::string::npos) << gi;
  expect_jit_matches_interp(*g, 2, 1e-6, 1e-6);
}

// ---- Round 18 (bench/README.md "Codegen r18") ----

// Review of round 17: the base of a masked contiguous or strided vector access is lane 0's
// (or a chunk's lowest lane's) element, outside the buffer when that lane is off (`A[vi - 1]`
// and `A[2 * vi - 1]` under `where i >= 1` at io = 0: A[-1]). An `inbounds` GEP of it is
// poison and the masked load through it undefined for the lanes that are on: the base of a
// masked access must be a plain GEP.
TEST(VectorAccess, MaskedAccessBaseIsNotAnInboundsGep) {
  Function f = scheduled(R"(
func f(A: f32[129]) -> (B: f32[64]) {
  for i in serial(64) {
    block z(vi: spatial(64) = i) { B[vi] = 0.0 }
  }
  for i in serial(64) {
    block c(vi: spatial(64) = i) {
      where i >= 1
      B[vi] = A[vi - 1] + A[2 * vi - 1]
    }
  }
}
schedule f {
  c = get_block("c")
  i, = get_loops(c)
  io, ii = split(i, [_, 16])
  vectorize(ii)
}
)");
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 0);
  // Every pointer operand of a masked load / store is defined by a GEP without inbounds.
  int masked = 0;
  std::istringstream lines(ir);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("call") == std::string::npos || (line.find("@llvm.masked.load") == std::string::npos &&
                                                   line.find("@llvm.masked.store") == std::string::npos))
      continue;
    size_t p = line.find("ptr %");
    ASSERT_NE(p, std::string::npos) << line;
    std::string name = line.substr(p + 4, line.find_first_of(",)", p) - p - 4);
    size_t def = ir.find("  " + name + " = ");
    ASSERT_NE(def, std::string::npos) << name;
    std::string dline = ir.substr(def, ir.find('\n', def) - def);
    EXPECT_NE(dline.find("getelementptr"), std::string::npos) << dline;
    EXPECT_EQ(dline.find("inbounds"), std::string::npos) << dline;
    ++masked;
  }
  EXPECT_GE(masked, 3) << ir;  // two loads, one store
  ArgMap in = random_inputs(*f, 6);
  expect_guarded_run_matches(*f, in);
  expect_guarded_run_matches(*f, in, false);
}

// A strided index under a split tail's `where` is proven inside its buffer from the `where`
// times the stride (`2 * (io * 48 + ii) + 1 < 32000` from `io * 48 + ii < 16000`): no check.
// An index one past the end keeps its check and fails like the interpreter.
TEST(VectorAccess, StridedIndexUnderASplitTailIsProvenFromTheWhere) {
  Function f = scheduled(strided("f32", 16000, 2, 48, "A[2 * vi] + A[2 * vi + 1]"));
  ASSERT_TRUE(f);
  std::string ir = llvm_ir(f, 0);
  EXPECT_EQ(ir.find("oob"), std::string::npos) << "checked";
  Function g = scheduled(strided("f32", 100, 3, 48, "A[3 * vi] + A[3 * vi + 3]"));  // A: f32[300]
  ASSERT_TRUE(g);
  EXPECT_NE(llvm_ir(g, 0).find("oob"), std::string::npos) << "A[3 * vi + 3] reaches A[300]";
  ArgMap in = random_inputs(*g, 1);
  std::string want, got;
  try {
    run_interp(*g, in);
  } catch (const Error& e) {
    want = e.what();
  }
  try {
    compile_jit(*g)->run(in);
  } catch (const Error& e) {
    got = e.what();
  }
  EXPECT_NE(want.find("A[300]"), std::string::npos) << want;
  EXPECT_NE(got.find("index 300 of dimension 0 is outside [0, 300)"), std::string::npos) << got;
}

// Plain strided loads under a lane guard: the guard tested on every lane (two scalar
// comparisons at lanes 0 and 47 per conjunct), the body then LLVM's vectorized loop, else the
// masked vector code. Bit-identical to the interpreter, nothing read past A's end.
TEST(VectorAccess, GuardedStridedLoopRunsUnmaskedWhenEveryLaneHolds) {
  for (int n : {16000, 100, 47, 96}) {
    SCOPED_TRACE(n);
    Function f = scheduled(strided("f32", n, 3, 48, "A[3 * vi] * 0.5 + A[3 * vi + 1] + A[3 * vi + 2]"));
    ASSERT_TRUE(f);
    std::string ir = llvm_ir(f, 0);
    // 96: no tail, no `where`: the plain loop.
    EXPECT_EQ(ir.find("vec.full") != std::string::npos, n % 48 != 0) << ir;
    EXPECT_EQ(ir.find("oob"), std::string::npos) << ir;
    ArgMap in = random_inputs(*f, 7);
    expect_guarded_run_matches(*f, in);
  }
}

// The two-lane test must not trust lanes whose guard wraps: `ii + off >= t` with off = 2^31 -
// 8 wraps at lane 8 (to -2^31), so with t = -2^31 + 3 lanes 0 and 15 hold it and lanes 8..10
// do not. Those lanes must keep B's zeros (the interpreter wraps the same way).
TEST(VectorAccess, GuardedStridedLoopTestsForWrappingLanes) {
  Function f = parse_func(R"(
func f(off: i32, t: i32, A: f32[128]) -> (B: f32[64]) {
  for i in serial(64) {
    block z(vi: spatial(64) = i) { B[vi] = 0.0 }
  }
  for io in serial(4) {
    for ii in vectorized(16) {
      block b(vi: spatial(64) = io * 16 + ii) {
        where ii + off >= t
        B[vi] = A[2 * vi] + A[2 * vi + 1]
      }
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  EXPECT_NE(llvm_ir(f, 0).find("vec.full"), std::string::npos);
  for (auto [off, t] : {std::pair<int64_t, int64_t>{2147483640, -2147483645}, {0, 0}, {0, 5}, {-20, -30}}) {
    SCOPED_TRACE(off);
    expect_jit_matches_interp(*f, 8, 0, 0, {{"off", scalar(DType::I32, off)}, {"t", scalar(DType::I32, t)}});
  }
}

}  // namespace tirc

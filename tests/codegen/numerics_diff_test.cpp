// Differential numerics adversary: random small functions (fixed seeds; the generator is
// below) over every dtype, expression form and intrinsic of LANGUAGE.md, with edge-value
// inputs (NaN, +-inf, -0.0, huge values, integer extremes, zero divisors), symbolic extents
// (also empty) and reductions, run by the interpreter and by the JIT, unscheduled and
// scheduled (parallel / vectorize / unroll). docs/codegen.md promises the same results:
// outputs must be bit-identical (NaNs match NaNs whatever their payload), and where the
// interpreter reports an error (integer division by zero) the JIT must report the same one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "tests/sanitized.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"

#ifdef TIRC_WITH_LLVM
namespace tirc {
using namespace tirc::cgtest;

namespace {

const char* kTypes[] = {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "f16", "bf16", "f32", "f64"};
bool is_f(const std::string& t) { return t[0] == 'f' || (t[0] == 'b' && t[1] == 'f'); }
bool is_b(const std::string& t) { return t == "bool"; }
bool is_u(const std::string& t) { return t[0] == 'u'; }

// Generates one expression of a dtype from the loads of the input buffers X_<dtype>[vi].
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
  bool coin(int pct) { return pick(100) < pct; }

  std::string load(const std::string& t, const std::string& idx) { return "X_" + t + "[" + idx + "]"; }

  // A literal that adopts the dtype of the other operand.
  std::string lit(const std::string& t) {
    if (is_f(t)) {
      const char* v[] = {"0.0", "1.0", "0.5", "2.5", "3.0", "1e-3", "100.0", "inf", "nan", "1e30"};
      return v[pick(10)];
    }
    const char* v[] = {"0", "1", "2", "3", "7", "100"};
    return v[pick(6)];
  }

  std::string lit_nz() {
    const char* v[] = {"1", "2", "3", "7", "100"};
    return v[pick(5)];
  }
  // An integer divisor: mostly guarded against 0 (a zero divisor stops the whole function in
  // both engines), sometimes not (then both must report the same error).
  int lets = 0;
  std::string divisor(const std::string& t, int depth, const std::string& idx) {
    std::string e = expr(t, depth, idx);
    if (coin(10)) return e;
    std::string v = "d" + std::to_string(lets++);
    return "(let " + v + " = " + e + " in if_then_else(" + v + " == 0, " + lit_nz() + ", " + v + "))";
  }
  std::string expr(const std::string& t, int depth, const std::string& idx) {
    if (depth <= 0 || coin(20)) {
      if (coin(75)) return load(t, idx);
      // A cast from another dtype (every direction).
      std::string u = kTypes[pick(12)];
      return t + "(" + load(u, idx) + ")";
    }
    int d = depth - 1;
    auto E = [&](const std::string& tt) { return expr(tt, d, idx); };
    if (is_b(t)) {
      std::string u = kTypes[pick(12)];
      switch (pick(6)) {
        case 0: {
          const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
          if (is_b(u)) return "(" + E(t) + " == " + E(t) + ")";
          return "(" + E(u) + " " + cmp[pick(6)] + " " + E(u) + ")";
        }
        case 1: return "(" + E(t) + (coin(50) ? " && " : " || ") + E(t) + ")";
        case 2: return "(!" + E(t) + ")";
        case 3: return "select(" + E(t) + ", " + E(t) + ", " + E(t) + ")";
        case 4: return "bool(" + E(u) + ")";
        default: return E(t);
      }
    }
    bool fl = is_f(t);
    int k = pick(fl ? 12 : 11);
    switch (k) {
      case 0: {
        const char* ops[] = {" + ", " - ", " * "};
        return "(" + E(t) + ops[pick(3)] + (coin(25) ? lit(t) : E(t)) + ")";
      }
      case 1:
        if (fl) return "(" + E(t) + " / " + (coin(25) ? lit(t) : E(t)) + ")";
        return "(" + E(t) + (coin(50) ? " // " : " % ") + (coin(30) ? lit_nz() : divisor(t, d, idx)) + ")";
      case 2:
        if (fl) return "(" + E(t) + " / " + E(t) + ")";  // `//` and `%` are integer-only
        return std::string(coin(50) ? "truncdiv(" : "truncmod(") + E(t) + ", " + divisor(t, d, idx) + ")";
      case 3: return std::string(coin(50) ? "min(" : "max(") + E(t) + ", " + E(t) + ")";
      case 4: {
        // floor/ceil/round/trunc: floats only (the parser refuses integer operands).
        const char* f[] = {"abs", "sign", "floor", "ceil", "round", "trunc"};
        return std::string(f[pick(fl ? 6 : 2)]) + "(" + E(t) + ")";
      }
      case 5: return "select(" + E("bool") + ", " + E(t) + ", " + E(t) + ")";
      case 6: return "if_then_else(" + E("bool") + ", " + E(t) + ", " + E(t) + ")";
      case 7: return is_u(t) ? E(t) : "(-" + E(t) + ")";
      case 8: {
        std::string v = "y" + std::to_string(lets++);
        return "(let " + v + " = " + E(t) + " in (" + v + (coin(50) ? " + " : " * ") + E(t) + "))";
      }
      case 9: return t + "(" + E(kTypes[pick(12)]) + ")";
      case 10:
        // pow: floats only (the parser refuses integer operands).
        if (!fl) return "abs(" + E(t) + ")";
        return "pow(" + E(t) + ", " + (coin(40) ? lit(t) : E(t)) + ")";
      default: {
        const char* f[] = {"exp",   "log", "log2", "log10", "log1p", "expm1",   "sqrt",
                           "rsqrt", "sin", "cos",  "tan",   "tanh",  "sigmoid", "erf"};
        return std::string(f[pick(14)]) + "(" + E(t) + ")";
      }
    }
  }
};

// Edge values of a dtype, drawn at random (mostly ordinary ones).
double edge_value(const std::string& t, std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  if (is_b(t)) return pick(2);
  if (is_f(t)) {
    const double v[] = {0.0,       -0.0, 1.0,     -1.0, 0.5,    -2.5,  3.5,   1e-3, -7.25,
                        100.0,     -1e4, 65504.0, 1e30, -1e300, 1e-40, 2.0,   -3.0, INFINITY,
                        -INFINITY, NAN,  -0.75,   40.0, -40.0,  1e10,  0.125, 1.5,  -1e-7};
    return v[pick(27)];
  }
  if (is_u(t)) {
    double mx = t == "u8" ? 255 : t == "u16" ? 65535 : 4294967295.0;
    const double v[] = {0, 1, 2, 3, 7, 100, mx, mx - 1, 128, 9};
    return v[pick(10)];
  }
  int bits = t == "i8" ? 8 : t == "i16" ? 16 : t == "i32" ? 32 : 64;
  double mn = -std::ldexp(1.0, bits - 1),
         mx = bits == 64 ? std::ldexp(1.0, 62) : std::ldexp(1.0, bits - 1) - 1;
  const double v[] = {0, 1, -1, 2, -2, 3, -7, 7, 100, -100, mn, mx, mn + 1, 9};
  return v[pick(14)];
}

// Bit-identical, except that any NaN matches any NaN.
::testing::AssertionResult bit_identical(const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << describe(a) << " vs " << describe(b);
  size_t w = dtype_bytes(a.dtype());
  auto* pa = static_cast<const uint8_t*>(a.data());
  auto* pb = static_cast<const uint8_t*>(b.data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * w, pb + i * w, w) == 0) continue;
    if (is_float(a.dtype()) && std::isnan(a.get(i)) && std::isnan(b.get(i))) continue;
    return ::testing::AssertionFailure() << "element " << i << ": " << a.get(i) << " vs " << b.get(i);
  }
  return ::testing::AssertionSuccess();
}

// One function of kBlocks elementwise outputs O<j> (each its own dtype and schedule variant:
// none, split + parallel + vectorize, split + unroll, parallel) over a symbolic extent n
// (possibly 0), and two reductions R<j> (sum / product / max / min, the reduce loop unrolled
// or not). Many expressions per function keep the JIT compiles few.
constexpr int kBlocks = 6;
std::string make_program(uint64_t seed) {
  Gen g(seed);
  std::vector<std::string> ts;
  for (int j = 0; j < kBlocks; ++j) ts.push_back(kTypes[g.pick(12)]);
  std::vector<std::string> rts;
  for (int j = 0; j < 2; ++j) rts.push_back(kTypes[1 + g.pick(11)]);  // not bool
  std::ostringstream s, sch;
  s << "func f(n: i32";
  for (const char* u : kTypes) s << ", X_" << u << ": " << u << "[n]";
  s << ") -> (";
  for (int j = 0; j < kBlocks; ++j) s << (j ? ", " : "") << "O" << j << ": " << ts[j] << "[n]";
  for (int j = 0; j < 2; ++j) s << ", R" << j << ": " << rts[j] << "[1]";
  s << ") {\n";
  sch << "schedule f {\n";
  for (int j = 0; j < kBlocks; ++j) {
    s << "  for i in serial(n) {\n    block b" << j << "(vi: spatial(n) = i) {\n      O" << j
      << "[vi] = " << g.expr(ts[j], 3, "vi") << "\n    }\n  }\n";
    std::string b = "b" + std::to_string(j), l = "l" + std::to_string(j);
    switch (g.pick(4)) {
      case 1:
        sch << "  (" << l << ",) = get_loops(get_block(\"" << b << "\"))\n  " << l << "o, " << l
            << "i = split(" << l << ", [_, 4])\n  parallel(" << l << "o)\n  vectorize(" << l << "i)\n";
        break;
      case 2:
        sch << "  (" << l << ",) = get_loops(get_block(\"" << b << "\"))\n  " << l << "o, " << l
            << "i = split(" << l << ", [_, 3])\n  unroll(" << l << "i)\n";
        break;
      case 3:
        sch << "  (" << l << ",) = get_loops(get_block(\"" << b << "\"))\n  parallel(" << l << ")\n";
        break;
      default: break;
    }
  }
  for (int j = 0; j < 2; ++j) {
    const std::string& t = rts[j];
    int red = g.pick(4);
    std::string R = "R" + std::to_string(j) + "[0]";
    std::string init = red == 0   ? "0"
                       : red == 1 ? "1"
                       : red == 2 ? "min_value(" + t + ")"
                                  : "max_value(" + t + ")";
    std::string e = g.expr(t, 2, "vk");
    std::string upd = red == 0   ? R + " + " + e
                      : red == 1 ? R + " * " + e
                      : red == 2 ? "max(" + R + ", " + e + ")"
                                 : "min(" + R + ", " + e + ")";
    s << "  for k in serial(n) {\n    block r" << j << "(vk: reduce(n) = k) {\n      init { " << R << " = "
      << t << "(" << init << ") }\n      " << R << " = " << upd << "\n    }\n  }\n";
    if (g.coin(50))
      sch << "  (k" << j << ",) = get_loops(get_block(\"r" << j << "\"))\n  k" << j << "o, k" << j
          << "i = split(k" << j << ", [_, 2])\n  unroll(k" << j << "i)\n";
  }
  s << "}\n" << sch.str() << "}\n";
  return s.str();
}

// Inputs: n in [0, 5], edge values.
ArgMap make_inputs(uint64_t seed) {
  std::mt19937_64 rng(seed * 7919);
  int64_t n = static_cast<int64_t>(rng() % 6);
  ArgMap in;
  in["n"] = scalar(DType::I32, static_cast<double>(n));
  for (const char* u : kTypes) {
    NDArray a(*parse_dtype(u), {n});
    for (int64_t i = 0; i < n; ++i) a.set(i, edge_value(u, rng));
    in[std::string("X_") + u] = a;
  }
  return in;
}

std::string run_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(NumericsDiff, RandomProgramsAgreeBitForBitWithTheInterpreter) {
#ifdef TIRC_TEST_SANITIZED
  int kPrograms = 4;
#else
  int kPrograms = 24;  // 144 elementwise expressions and 48 reductions
#endif
  // TIRC_NUMERICS_PROGRAMS=N runs N functions (a longer hunt by hand; seeds 1000...).
  if (const char* e = std::getenv("TIRC_NUMERICS_PROGRAMS")) kPrograms = std::atoi(e);
  uint64_t first = 1000;
  if (const char* e = std::getenv("TIRC_NUMERICS_FIRST")) first = std::strtoull(e, nullptr, 10);
  int errors = 0, compared = 0;
  for (int p = 0; p < kPrograms; ++p) {
    uint64_t seed = first + static_cast<uint64_t>(p);
    std::string text = make_program(seed);
    SCOPED_TRACE(text);
    Module m;
    std::string perr = run_error([&] { m = parse_module(text, "gen.tir"); });
    if (!perr.empty()) {
      // The generator aims at valid programs; a few refusals are tolerated (counted below).
      ADD_FAILURE_AT(__FILE__, __LINE__) << perr;
      continue;
    }
    Function f = m.find_func("f");
    ASSERT_TRUE(f);
    Module sm = apply_module_schedules(m);
    Function fs = sm.find_func("f");
    ASSERT_TRUE(fs);
    ArgMap in = make_inputs(seed);
    ArgMap ref;
    std::string ierr = run_error([&] { ref = run_interp(*f, in); });
    for (const Function& g : {f, fs}) {
      ArgMap got;
      std::unique_ptr<JitProgram> jp;
      std::string cerr = run_error([&] { jp = compile_jit(*g); });
      ASSERT_EQ(cerr, "");
      std::string jerr = run_error([&] { got = jp->run(in); });
      if (!ierr.empty()) {
        ++errors;
        // Unscheduled code reports the interpreter's error; a scheduled one may meet another
        // failing division first (parallel, vectorized lanes), but must report one.
        if (g == f)
          EXPECT_EQ(jerr, ierr);
        else
          EXPECT_NE(jerr.find("integer division by zero"), std::string::npos) << jerr << " / " << ierr;
        continue;
      }
      ASSERT_EQ(jerr, "") << "interp ran without error";
      ++compared;
      for (auto& [name, arr] : ref)
        EXPECT_TRUE(bit_identical(got.at(name), arr)) << name << (g == f ? "" : " (scheduled)");
    }
  }
  EXPECT_GT(compared, kPrograms);  // most functions run (few divide by zero)
  RecordProperty("errors", errors);
  std::printf("%d runs compared, %d runs stopped by an error\n", compared, errors);
}

// The same programs for the GPU: the default GPU schedule, compiled to PTX, accepted by
// ptxas (skipped when ptxas is not installed).
TEST(NumericsDiff, NvptxCompilesAndPtxasAccepts) {
#ifdef TIRC_TEST_SANITIZED
  int kPrograms = 1;
#else
  int kPrograms = 4;
#endif
  if (const char* e = std::getenv("TIRC_NUMERICS_GPU_PROGRAMS")) kPrograms = std::atoi(e);
  for (int p = 0; p < kPrograms; ++p) {
    std::string text = make_program(1000 + static_cast<uint64_t>(p));
    SCOPED_TRACE(text);
    if (std::getenv("TIRC_NUMERICS_TRACE")) std::fprintf(stderr, "program %d\n%s", p, text.c_str());
    Module m = parse_module(text, "gen.tir");
    Function g = default_gpu_schedule(*m.find_func("f"));
    std::string log;
    int rc = testing::run_ptxas(testing::nvptx(g, EmitKind::Asm), &log);
    if (rc == -2) GTEST_SKIP() << "ptxas not installed";
    EXPECT_EQ(rc, 0) << log;
    // The emulator (tests/codegen/gpu_emu.h) runs the kernels like the interpreter
    // (TIRC_NUMERICS_NO_EMU=1: ptxas only. Seed 1004's kernels aborted the emulator's host JIT
    // with "Cannot pop empty stack!" until it emulated libdevice's inline PTX assembly.)
    if (std::getenv("TIRC_NUMERICS_NO_EMU")) continue;
    uint64_t seed = 1000 + static_cast<uint64_t>(p);
    ArgMap in = make_inputs(seed);
    ArgMap ref;
    if (!run_error([&] { ref = run_interp(*m.find_func("f"), in); }).empty()) continue;
    std::string err;
    if (std::getenv("TIRC_NUMERICS_TRACE")) std::fprintf(stderr, "ptxas ok, emulating\n");
    ArgMap got = testing::emulate(g, in, &err);
    ASSERT_EQ(err, "");
    for (auto& [name, arr] : ref)
      EXPECT_TRUE(bit_identical(got.at(name), arr)) << name << " (nvptx emulator)";
  }
}

}  // namespace tirc
#endif  // TIRC_WITH_LLVM

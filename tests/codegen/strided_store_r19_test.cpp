// Strided stores (codegen round 19, bench/README.md "Codegen r19"): a serial innermost loop
// storing at a constant stride 2..8 (`B[2 * i + 1] = B[2 * i + 1] + A[i]`, the phases of a
// strided pool's data gradient) is emitted as vector code whose stores are masked spans (the
// lanes shuffled into place, the mask on their elements only), and so are the strided stores
// of `vectorized` loops; LLVM made them scatters. Checked bit for bit against the
// interpreter, with the elements between the lanes holding other values (a span store that
// wrote them would change them), whole chunks and a masked rest, and loops whose lanes are
// not independent left scalar.
#include <gtest/gtest.h>

#include <cstdlib>

#include "codegen/codegen.h"
#include "tests/codegen/compare.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

std::string llvm_ir(const Function& f) {
  CodegenOptions o;
  o.opt_level = 0;
  return compile_to({f}, EmitKind::LLVM, o);
}

// B (m elements) copied from C, then `B[STORE] = B[STORE] + A[i]` for i < n.
std::string update(const std::string& dt, int n, int m, const std::string& store,
                   const std::string& loop = "") {
  std::string N = std::to_string(n), M = std::to_string(m);
  return "func f(A: " + dt + "[" + N + "], C: " + dt + "[" + M + "]) -> (B: " + dt + "[" + M +
         "]) {\n"
         "  for i in serial(" +
         M + ") {\n    block c(vi: spatial(" + M +
         ") = i) {\n      B[vi] = C[vi]\n    }\n  }\n"
         "  for i in " +
         (loop.empty() ? "serial(" + N + ")" : loop) + " {\n    block s(vi: spatial(" + N +
         ") = i) {\n      B[" + store + "] = B[" + store + "] + A[vi]\n    }\n  }\n}\n";
}

}  // namespace

// Strides 2, 3, -2 and 8, offsets, extents below, at and above one register of lanes (16 f32,
// 8 f64, 64 i8 with AVX-512), several dtypes: bit-identical to the interpreter, no scatter.
TEST(StridedStore, SerialStridedUpdatesAreMaskedSpans) {
  struct Case {
    const char* dt;
    int n, m;
    const char* store;
  };
  const Case cases[] = {
      {"f32", 28, 57, "2 * vi"},      {"f32", 37, 75, "2 * vi + 1"},
      {"f32", 5, 16, "3 * vi + 2"},   {"f64", 29, 60, "2 * (28 - vi) + 1"},
      {"f32", 16, 130, "8 * vi + 7"}, {"i8", 70, 141, "2 * vi"},
      {"i16", 33, 100, "3 * vi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.dt) + " " + c.store);
    Function f = parse_func(update(c.dt, c.n, c.m, c.store), "f");
    ASSERT_TRUE(f);
    for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
    std::string ir = llvm_ir(f);
    EXPECT_NE(ir.find("llvm.masked.store"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
  }
}

// TIRC_CODEGEN_NO_STORE_SPANS=1: the scalar loop as before round 19 (no vector store).
TEST(StridedStore, SwitchOffKeepsTheScalarLoop) {
  Function f = parse_func(update("f32", 28, 57, "2 * vi"), "f");
  ASSERT_TRUE(f);
  setenv("TIRC_CODEGEN_NO_STORE_SPANS", "1", 1);
  std::string ir = llvm_ir(f);
  unsetenv("TIRC_CODEGEN_NO_STORE_SPANS");
  EXPECT_EQ(ir.find("llvm.masked.store"), std::string::npos) << ir;
  expect_jit_matches_interp(*f, 1, 0, 0);
}

// A symbolic extent: whole chunks for n / 16, the rest under a mask (n from 0 to 40).
TEST(StridedStore, SymbolicExtent) {
  std::string text = R"(
func f(n: i32 in [0, 40], A: f32[40], C: f32[81]) -> (B: f32[81]) {
  for i in serial(81) {
    block c(vi: spatial(81) = i) {
      B[vi] = C[vi]
    }
  }
  for i in serial(n) {
    block s(vi: spatial(40) = i) {
      B[2 * vi + 1] = B[2 * vi + 1] * 0.5 + A[vi]
    }
  }
}
)";
  Function f = parse_func(text, "f");
  ASSERT_TRUE(f);
  for (int n : {0, 1, 15, 16, 17, 33, 40}) {
    SCOPED_TRACE(n);
    expect_jit_matches_interp(*f, static_cast<uint64_t>(n), 0, 0, {{"n", scalar(DType::I32, n)}});
  }
}

// Lanes that are not independent stay scalar: a value carried through B from the previous
// iteration (`B[2 * vi + 2]` reads what iteration vi - 1... wrote at 2 * vi + 2 - 2), and a
// loop-invariant store.
TEST(StridedStore, DependentLanesStayScalar) {
  std::string carried = R"(
func f(A: f32[30], C: f32[62]) -> (B: f32[62]) {
  for i in serial(62) {
    block c(vi: spatial(62) = i) {
      B[vi] = C[vi]
    }
  }
  for i in serial(30) {
    block s(vo: opaque(30) = i) {
      B[2 * vo + 2] = B[2 * vo] + A[vo]
    }
  }
}
)";
  Function f = parse_func(carried, "f");
  ASSERT_TRUE(f);
  expect_jit_matches_interp(*f, 1, 0, 0);
  std::string ir = llvm_ir(f);
  EXPECT_EQ(ir.find("llvm.masked.store"), std::string::npos) << ir;
}

// The strided stores of a `vectorized` loop are spans too (were scatters): `B[2i] = A[i];
// B[2i + 1] = -A[i]` split by 16 (the stores of one buffer at two indices: the second store
// is another buffer here, as vectorize's check requires one index per buffer).
TEST(StridedStore, VectorizedLoopStridedStoresAreSpans) {
  std::string text = R"(
func f(A: f32[100], C: f32[201]) -> (B: f32[201]) {
  for i in serial(201) {
    block c(vi: spatial(201) = i) {
      B[vi] = C[vi]
    }
  }
  for i in serial(100) {
    block s(vi: spatial(100) = i) {
      B[2 * vi + 1] = A[vi] * 3.0
    }
  }
}
schedule f {
  b = get_block("s")
  i, = get_loops(b)
  io, ii = split(i, [_, 16])
  vectorize(ii)
}
)";
  Module m = apply_module_schedules(parse_module(text, "test.tir"));
  Function f = m.find_func("f");
  ASSERT_TRUE(f);
  for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
  std::string ir = llvm_ir(f);
  EXPECT_NE(ir.find("llvm.masked.store"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
}

}  // namespace tirc

namespace tirc {
using namespace tirc::cgtest;

// Review r2 of round 19, F1: the vector paths substitute let values at their uses, so
// `let t = B[..]` read B after the store between the let and its use (the JIT computed
// A[vi] + A[vi]). A body whose lets load a buffer it stores now stays scalar: the serial
// strided loop (spans) and a `vectorized` loop (the same bug, older) alike.
TEST(StridedStore, LetReadingAStoredBufferKeepsItsValue) {
  for (const char* idx : {"2 * vi + 1", "vi"}) {
    for (bool vec : {false, true}) {
      std::string I = idx;
      std::string text = R"(
func f(A: f32[48], C: f32[99]) -> (B: f32[99]) {
  for i in serial(99) {
    block c(vi: spatial(99) = i) {
      B[vi] = C[vi]
    }
  }
  for i in serial(48) {
    block s(vi: spatial(48) = i) {
      let t = B[)" + I + R"(]
      B[)" + I + R"(] = A[vi]
      B[)" + I + "] = B[" +
                         I + R"(] + t
    }
  }
}
)";
      if (vec)
        text +=
            "schedule f {\n  i, = get_loops(get_block(\"s\"))\n  io, ii = split(i, [_, 16])\n  "
            "vectorize(ii)\n}\n";
      SCOPED_TRACE(text);
      Module m = apply_module_schedules(parse_module(text, "test.tir"));
      Function f = m.find_func("f");
      ASSERT_TRUE(f);
      for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
    }
  }
}

}  // namespace tirc

namespace tirc {
using namespace tirc::cgtest;

// Review r2 of round 19, F2: the vector paths inline lets, so a chain `let tK = t(K-1) *
// t(K-1) + 0.25` of N links became 2^N uses, walked and emitted one by one (N = 20: 79 s to
// compile; 1.1 s at N = 14). Such a body now stays a scalar loop (no masked span store, no
// 16-lane vector): compiled at once, results bit-identical.
TEST(StridedStore, LetChainStaysScalar) {
  for (bool vec : {false, true}) {
    std::string body = "      let t0 = A[vi] * 0.5\n";
    for (int k = 1; k <= 14; ++k)
      body += "      let t" + std::to_string(k) + " = t" + std::to_string(k - 1) + " * t" +
              std::to_string(k - 1) + " + 0.25\n";
    std::string text = R"(
func f(A: f32[48], C: f32[99]) -> (B: f32[99]) {
  for i in serial(99) {
    block c(vi: spatial(99) = i) {
      B[vi] = C[vi]
    }
  }
  for i in serial(48) {
    block s(vi: spatial(48) = i) {
)" + body + "      B[" +
                       (vec ? "vi" : "2 * vi + 1") + "] = t14\n    }\n  }\n}\n";
    if (vec)
      text +=
          "schedule f {\n  i, = get_loops(get_block(\"s\"))\n  io, ii = split(i, [_, 16])\n  "
          "vectorize(ii)\n}\n";
    SCOPED_TRACE(text);
    Module m = apply_module_schedules(parse_module(text, "test.tir"));
    Function f = m.find_func("f");
    ASSERT_TRUE(f);
    std::string ir = llvm_ir(f);
    EXPECT_EQ(ir.find("llvm.masked.store"), std::string::npos);
    EXPECT_EQ(ir.find("<16 x float>"), std::string::npos);
    expect_jit_matches_interp(*f, 1, 0, 0);
  }
}

}  // namespace tirc

namespace tirc {
using namespace tirc::cgtest;

// Review r11 of round 19, F1 (older than round 19): a vectorized loop whose store index is not
// linear in the loop var sent two lanes to one element (`X[j // 2] = X[j // 2] + A[j]`): all
// lanes loaded before the scatter, and only the last lane's update survived (X[m] = A[2m + 1]).
// Such a loop now stays scalar.
TEST(StridedStore, NonLinearStoreIndexOfAVectorizedLoopStaysScalar) {
  for (const char* idx : {"j // 2", "j % 5", "min(j, 20)"}) {
    std::string I = idx;
    std::string text = R"(
func f(A: f32[48]) -> (X: f32[24]) {
  for j in serial(24) { X[j] = 0.0 }
  for j in vectorized(48) {
    X[)" + I + "] = X[" +
                       I + R"(] + A[j]
  }
}
)";
    SCOPED_TRACE(text);
    Function f = parse_func(text, "f");
    for (uint64_t seed : {1, 2}) expect_jit_matches_interp(*f, seed, 0, 0);
  }
}

}  // namespace tirc

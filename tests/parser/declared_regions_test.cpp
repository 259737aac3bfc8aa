// Declared `reads` / `writes` regions are checked against the accesses of the block body
// (parser/region_check.h, docs/language.md "Declared regions"): provable violations are
// errors at the access, with the access and the declared region in the message; regions
// that over-approximate, and accesses that cannot be bounded exactly, are accepted.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"

namespace tirc {
namespace {

struct RegionCase {
  const char* name;
  const char* src;
  int line, col;
  const char* msg;
};

const RegionCase kErrors[] = {
    {"ReduceVarPastDeclaredSlice",
     "func f(A: f32[16, 16]) -> (B: f32[16]) {\n"
     "  for i, k in grid(16, 16) {\n"
     "    block b(vi: spatial(16) = i, vk: reduce(16) = k) {\n"
     "      reads A[vi, 0:8]\n"
     "      writes B[vi]\n"
     "      init { B[vi] = 0.0 }\n"
     "      B[vi] += A[vi, vk]\n"
     "    }\n"
     "  }\n"
     "}\n",
     7, 16,
     "block 'b': load A[vi, vk] is outside its declared region A[vi, 0:8] (dimension 1 exceeds the region's "
     "end by "
     "up to 8)"},
    {"BufferNotListedInReads",
     "func f(A: f32[16, 16], C: f32[16]) -> (B: f32[16]) {\n"
     "  for i in serial(16) {\n"
     "    block b(vi: spatial(16) = i) {\n"
     "      reads A[vi, 0:16]\n"
     "      B[vi] = A[vi, 0] + C[vi]\n"
     "    }\n"
     "  }\n"
     "}\n",
     5, 26, "block 'b': load C[vi] accesses C, which its declared reads do not list (reads A[vi, 0:16])"},
    {"InnerLoopStorePastWrites",
     "func f(A: f32[16]) -> (B: f32[16]) {\n"
     "  for i in serial(4) {\n"
     "    block b(vi: spatial(4) = i) {\n"
     "      reads A[vi * 4:vi * 4 + 4]\n"
     "      writes B[vi * 4:vi * 4 + 3]\n"
     "      for k in serial(4) { B[vi * 4 + k] = A[vi * 4 + k] }\n"
     "    }\n"
     "  }\n"
     "}\n",
     6, 28,
     "block 'b': store B[vi * 4 + k] is outside its declared region B[vi * 4:vi * 4 + 3] (dimension 0 "
     "exceeds the "
     "region's end by up to 1)"},
    {"BelowTheRegionStart",
     "func f(A: f32[16]) -> (B: f32[16]) {\n"
     "  for i in serial(15) {\n"
     "    block b(vi: spatial(15) = i) {\n"
     "      reads A[vi + 1]\n"
     "      B[vi] = A[vi]\n"
     "    }\n"
     "  }\n"
     "}\n",
     5, 15,
     "block 'b': load A[vi] is outside its declared region A[vi + 1] (dimension 0 starts up to 1 before the "
     "region)"},
    {"StoreNotListedInWrites",
     "func f(A: f32[4]) -> (B: f32[4], C: f32[4]) {\n"
     "  for i in serial(4) {\n"
     "    block b(vi: spatial(4) = i) {\n"
     "      writes B[vi]\n"
     "      B[vi] = A[vi]\n"
     "      C[vi] = A[vi]\n"
     "    }\n"
     "  }\n"
     "}\n",
     6, 7, "block 'b': store C[vi] accesses C, which its declared writes do not list (writes B[vi])"},
    {"FloorDivIndex",
     "func f(A: f32[4]) -> (B: f32[16]) {\n"
     "  for i in serial(16) {\n"
     "    block b(vi: spatial(16) = i) {\n"
     "      reads A[0:3]\n"
     "      B[vi] = A[vi // 4]\n"
     "    }\n"
     "  }\n"
     "}\n",
     5, 15,
     "block 'b': load A[vi // 4] is outside its declared region A[0:3] (dimension 0 exceeds the region's end "
     "by up "
     "to 1)"},
    {"NestedBlockAccess",
     "func f(A: f32[16]) -> (B: f32[16]) {\n"
     "  for i in serial(4) {\n"
     "    block o(vo: spatial(4) = i) {\n"
     "      reads A[vo * 4:vo * 4 + 2]\n"
     "      writes B[vo * 4:vo * 4 + 4]\n"
     "      for j in serial(4) {\n"
     "        block n(vi: spatial(16) = vo * 4 + j) { B[vi] = A[vi] }\n"
     "      }\n"
     "    }\n"
     "  }\n"
     "}\n",
     7, 57,
     "block 'o': load A[vi] is outside its declared region A[vo * 4:vo * 4 + 2] (dimension 0 exceeds the "
     "region's "
     "end by up to 2)"},
    {"SeveralRegionsOfOneBuffer",
     "func f(A: f32[16]) -> (B: f32[8]) {\n"
     "  for i in serial(8) {\n"
     "    block b(vi: spatial(8) = i) {\n"
     "      reads A[0:4], A[8:12]\n"
     "      B[vi] = A[vi + 8]\n"
     "    }\n"
     "  }\n"
     "}\n",
     5, 15, "block 'b': load A[vi + 8] is outside its declared regions A[0:4], A[8:12]"},
    {"PointerNotListed",
     "func f(A: f32[16], C: f32[4]) -> (B: f32[16]) {\n"
     "  block b() {\n"
     "    reads C\n"
     "    writes B\n"
     "    call_extern(\"g\", A.data, B.ptr(0))\n"
     "  }\n"
     "}\n",
     5, 22,
     "block 'b': A.data accesses A, which its declared reads and writes do not list (reads C[0:4]; writes "
     "B[0:16])"},
    {"InitStoreChecked",
     "func f(A: f32[8, 8]) -> (B: f32[8]) {\n"
     "  for i, k in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vk: reduce(8) = k) {\n"
     "      writes B[0:4]\n"
     "      init { B[vi] = 0.0 }\n"
     "      B[vi] += A[vi, vk]\n"
     "    }\n"
     "  }\n"
     "}\n",
     5, 14,
     "block 'b': store B[vi] is outside its declared region B[0:4] (dimension 0 exceeds the region's end by "
     "up to "
     "4)"},
};

class DeclaredRegionErrors : public ::testing::TestWithParam<RegionCase> {};

TEST_P(DeclaredRegionErrors, ExactPositionAndMessage) {
  const RegionCase& c = GetParam();
  try {
    parse_module(c.src, "t.tir");
    FAIL() << c.name << ": expected an error";
  } catch (const SourceError& e) {
    EXPECT_EQ(e.message(), c.msg) << c.name;
    EXPECT_EQ(e.line(), c.line) << c.name << ": " << e.what();
    EXPECT_EQ(e.col(), c.col) << c.name << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(All, DeclaredRegionErrors, ::testing::ValuesIn(kErrors),
                         [](const ::testing::TestParamInfo<RegionCase>& i) {
                           return std::string(i.param.name);
                         });

// Each is accepted, and its canonical text reads back (the printed regions are the declared
// ones, so the check must accept them again).
const char* const kAccepted[] = {
    // Over-approximation: the whole buffer, a wider slice.
    "func f(A: f32[16, 16]) -> (B: f32[16]) {\n"
    "  for i, k in grid(16, 16) {\n"
    "    block b(vi: spatial(16) = i, vk: reduce(16) = k) {\n"
    "      reads A\n"
    "      writes B[0:16]\n"
    "      init { B[vi] = 0.0 }\n"
    "      B[vi] += A[vi, vk]\n"
    "    }\n"
    "  }\n"
    "}\n",
    // TVM's reduction habit: the updated buffer is in `writes` only.
    "func f(A: f32[8, 8]) -> (B: f32[8]) {\n"
    "  for i, k in grid(8, 8) {\n"
    "    block b(vi: spatial(8) = i, vk: reduce(8) = k) {\n"
    "      reads A[vi, vk]\n"
    "      writes B[vi]\n"
    "      init { B[vi] = 0.0 }\n"
    "      B[vi] = B[vi] + A[vi, vk]\n"
    "    }\n"
    "  }\n"
    "}\n",
    // Symbolic extents that cannot be bounded.
    "func f(n: i32, A: f32[n]) -> (B: f32[n]) {\n"
    "  for i in serial(n) { block b(vi: spatial(n) = i) { reads A[0:1]; B[vi] = A[vi] } }\n"
    "}\n",
    // Data-dependent index.
    "func f(A: f32[16], I: i32[4]) -> (B: f32[4]) {\n"
    "  for i in serial(4) { block b(vi: spatial(4) = i) { reads A[0:2], I[vi]; B[vi] = A[I[vi]] } }\n"
    "}\n",
    // Accesses guarded by conditions on the index.
    "func f(A: f32[8]) -> (B: f32[16]) {\n"
    "  for i in serial(16) {\n"
    "    block b(vi: spatial(16) = i) {\n"
    "      reads A[0:8]\n"
    "      if vi < 8 { B[vi] = A[vi] } else { B[vi] = 0.0 }\n"
    "    }\n"
    "  }\n"
    "}\n",
    "func f(A: f32[16]) -> (B: f32[17]) {\n"
    "  for i in serial(17) {\n"
    "    block b(vi: spatial(17) = i) {\n"
    "      reads A[0:16]\n"
    "      B[vi] = if_then_else(vi >= 1, A[vi - 1], 0.0)\n"
    "    }\n"
    "  }\n"
    "}\n",
    // Exact tiles, inner loops, nested blocks, block-local allocs.
    "func f(A: f32[16]) -> (B: f32[16]) {\n"
    "  for i in serial(4) {\n"
    "    block o(vo: spatial(4) = i) {\n"
    "      reads A[vo * 4:vo * 4 + 4]\n"
    "      writes B[vo * 4:vo * 4 + 4]\n"
    "      alloc T: f32[4]\n"
    "      for j in serial(4) {\n"
    "        block n(vi: spatial(16) = vo * 4 + j) { T[vi % 4] = A[vi]; B[vi] = T[vi % 4] }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n",
    // Loop with a symbolic bound; let names.
    "func f(n: i32 in [1, 8], A: f32[8]) -> (B: f32[8]) {\n"
    "  for i in serial(8) {\n"
    "    block b(vi: spatial(8) = i) {\n"
    "      reads A[0:2]\n"
    "      writes B[vi]\n"
    "      B[vi] = 0.0\n"
    "      for k in serial(n) { let t = k + 2; B[vi] += A[t - 2] }\n"
    "    }\n"
    "  }\n"
    "}\n",
    // A pointer to a listed buffer may use any offset.
    "func f(A: f32[16]) -> (B: f32[16]) {\n"
    "  block b() { reads A[0:1]; writes B[0:1]; call_extern(\"g\", A.data, B.ptr(3)) }\n"
    "}\n",
};

TEST(DeclaredRegions, OverApproximationsAndUnprovableAccessesAreAccepted) {
  for (const char* src : kAccepted) {
    Module m;
    ASSERT_NO_THROW(m = parse_module(src, "t.tir")) << src;
    std::string text = print_module(m);
    EXPECT_NO_THROW(parse_module(text, "p.tir")) << text;
  }
}

// Grad and schedule outputs print inferred regions; they must pass the check when read back
// (examples_test.cpp round-trips every example; here a reduction with a let-relaxed index).
TEST(DeclaredRegions, InferredRegionsPassTheCheck) {
  const char* src =
      "func f(A: f32[4, 20]) -> (B: f32[4]) {\n"
      "  for i, k in grid(4, 4) {\n"
      "    block b(vi: spatial(4) = i, vk: reduce(4) = k) {\n"
      "      init { B[vi] = 0.0 }\n"
      "      for r in serial(5) { B[vi] += A[vi, vk * 5 + r] }\n"
      "    }\n"
      "  }\n"
      "}\n";
  Module m = parse_module(src, "t.tir");
  std::string text = print_module(m);
  EXPECT_NE(text.find("A[vi, vk * 5:vk * 5 + 5]"), std::string::npos) << text;
  EXPECT_NO_THROW(parse_module(text, "p.tir")) << text;
}

}  // namespace
}  // namespace tirc

// Helper round 19 (h7): spatial conflicts that round 18's enumeration could not see, and its
// false refusals (LANGUAGE.md: "for spatial vars the order does not matter (a block whose
// spatial iterations conflict is invalid)"; gradient() reads spatial instances as independent).
// - Data-dependent indices (a load in an index or guard of an access to a buffer the block
//   stores): skipped by the enumeration, so a cross-row scan `H[(vr + 1 + Z[0]) % 4, vi - 1]`
//   with its row loop outside got a wrong gradient (`check-grad --full`: "X: max abs err
//   6.848e-01 ... FAILED"). Now conflict_proof.h must prove such pairs independent for every
//   value of the data, else the block is refused naming the buffer, the index and the data.
// - Scalars in indices: round 18 refused any access of another element than the stores'
//   (`A[vi, s] = A[vi, 0] * X[vi]`, valid for every s); now proven symbolically, and refused
//   with the conflicting value of s when sampling finds one (`A[vi + s] = A[vi] * ..`, s = 2).
// - Nests not enumerated whole (> 2^14 points, symbolic sizes): a conflict outside the
//   enumerated sub-box (`A[vi, 255 - vj]`) was accepted; now refused unless proven.
// Accepted forms pass check_grad --full in f64.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/refusal_of.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::i32_scalars;
using testing::parse_one;
using testing::refusal_of;

const char* kRule =
    "; LANGUAGE.md requires the spatial iterations of a block to be independent (a block whose spatial "
    "iterations conflict is invalid): ";

std::string data_msg(const std::string& head, const std::string& what, const std::string& data,
                     const std::string& advice) {
  return head + what +
         "), so no check of the block can show that no two of its spatial iterations touch one " +
         "element that one of them writes, for every value of " + data + kRule + advice;
}

void expect_accepted(const std::string& src, const ArgMap& given = {}) {
  EXPECT_EQ(refusal_of(src), "accepted");
  expect_full_checks(*parse_one(src, "f"), given);
}

ArgMap i32_buffer(const char* name, const std::vector<int>& v) {
  NDArray a(DType::I32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) a.set(i, v[i]);
  ArgMap m;
  m[name] = a;
  return m;
}

// ---- 1. data-dependent indices ----

const char* kCrossRowScan = R"(func f(X: f64[4, 8], H0: f64[4, 8], Z: i32[1] in [0, 3]) -> (H: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }
  }
  LOOPS {
    block s(vr: spatial(4) = r, vi: scan(8) = i + 1) {
      H[vr, vi] = H[(vr + 1 + Z[0]) % 4, vi - 1] * 0.5 + X[vr, vi]
    }
  }
})";

std::string cross_row_scan(const std::string& loops) {
  std::string s = kCrossRowScan;
  return s.replace(s.find("LOOPS"), 5, loops);
}

// The round-18 hole: rows outside the step loop, the row read chosen by data.
TEST(SpatialConflictR19, DataDependentCrossRowScanWithRowsOutsideIsRefused) {
  EXPECT_EQ(
      refusal_of(cross_row_scan("for r, i in grid(4, 7)")),
      data_msg("block s: its spatial iterations may conflict on H: the index H[(vr + 1 + Z[0]) % 4, vi - 1] "
               "depends on the values of Z (",
               "it reads H[(vr + 1 + Z[0]) % 4, vi - 1] and writes H[vr, vi]", "Z",
               "run the scan loop outside the loops of the spatial vars (every spatial point of a step "
               "before the next step), or read the old values from a copy of H"));
}

// With the step loop outside, every row of step i - 1 is complete before step i, whatever Z.
TEST(SpatialConflictR19, DataDependentCrossRowScanWithStepsOutsideIsAccepted) {
  expect_accepted(cross_row_scan("for i, r in grid(7, 4)"));
}

// A gather from the buffer being written: instance vi reads what instance I[vi] writes.
TEST(SpatialConflictR19, GatherOfTheWrittenBufferIsRefused) {
  const char* src = R"(func f(X: f64[6], A0: f64[6], I: i32[6] in [0, 5]) -> (A: f64[6]) {
  for i in serial(6) {
    block c(vi: spatial(6) = i) { A[vi] = A0[vi] }
  }
  for i in serial(6) {
    block B(vi: spatial(6) = i) { A[vi] = A[I[vi]] * X[vi] }
  }
})";
  EXPECT_EQ(refusal_of(src),
            data_msg("block B: its spatial iterations may conflict on A: the index A[I[vi]] depends "
                     "on the values of I (",
                     "it reads A[I[vi]] and writes A[vi]", "I",
                     "read the old values from a copy of A, or make the var a scan var for a "
                     "recurrence"));
}

TEST(SpatialConflictR19, DataDependentRowOfTheWrittenBufferIsRefused) {
  const char* src = R"(func f(X: f64[4, 8], I: i32[4] in [0, 3]) -> (A: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { A[vr, vi] = X[vr, vi] }
  }
  for r, i in grid(4, 8) {
    block B(vr: spatial(4) = r, vi: spatial(8) = i) { A[vr, vi] = A[I[vr], vi] * X[vr, vi] }
  }
})";
  EXPECT_EQ(refusal_of(src),
            data_msg("block B: its spatial iterations may conflict on A: the index A[I[vr], vi] "
                     "depends on the values of I (",
                     "it reads A[I[vr], vi] and writes A[vr, vi]", "I",
                     "read the old values from a copy of A, or make the var a scan var for a "
                     "recurrence"));
}

// Provably conflict-free for every value of the data: a column selected in a buffer the block
// does not write; a data-dependent column at the store's own row (vr determines the element).
TEST(SpatialConflictR19, DataDependentIndicesThatCannotConflictAreAccepted) {
  expect_accepted(R"(func f(X: f64[4, 8], W: f64[4, 3], Z: i32[1] in [0, 2]) -> (A: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { A[vr, vi] = X[vr, vi] }
  }
  for r, i in grid(4, 8) {
    block B(vr: spatial(4) = r, vi: spatial(8) = i) { A[vr, vi] = A[vr, vi] * W[vr, Z[0]] }
  }
})");
  expect_accepted(R"(func f(X: f64[4, 8], I: i32[4] in [0, 7]) -> (A: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { A[vr, vi] = X[vr, vi] }
  }
  for r in serial(4) {
    block B(vr: spatial(4) = r) { A[vr, I[vr]] = A[vr, I[vr]] * A[vr, I[vr]] }
  }
})");
}

// A scatter (set or sum) over a spatial var: two points meet only where the data repeats an
// index, which makes the function itself invalid (the interpreter refuses it: "both write");
// for a permutation-like I the gradient is right. sort_rank / max_unpool of the zoo are such.
const char* kScatter = R"(func f(X: f64[4], A0: f64[6], I: i32[4] in [0, 5]) -> (A: f64[6]) {
  for i in serial(6) {
    block c(vi: spatial(6) = i) { A[vi] = A0[vi] }
  }
  for i in serial(4) {
    block B(vi: spatial(4) = i) { STORE }
  }
})";

std::string scatter(const std::string& store) {
  std::string s = kScatter;
  return s.replace(s.find("STORE"), 5, store);
}

TEST(SpatialConflictR19, ScatterOverSpatialVarsWithDistinctIndicesIsAccepted) {
  const ArgMap perm = i32_buffer("I", {4, 0, 5, 2});
  expect_accepted(scatter("A[I[vi]] = X[vi] * 2.0"), perm);
  expect_accepted(scatter("A[I[vi]] += X[vi] * X[vi]"), perm);
}

// More spatial points than elements: two of them write one element whatever the data.
TEST(SpatialConflictR19, ScatterWithMorePointsThanElementsIsRefused) {
  const char* src = R"(func f(X: f64[6], A0: f64[4], I: i32[6] in [0, 3]) -> (A: f64[4]) {
  for i in serial(4) {
    block c(vi: spatial(4) = i) { A[vi] = A0[vi] }
  }
  for i in serial(6) {
    block B(vi: spatial(6) = i) { A[I[vi]] += X[vi] * X[vi] }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      data_msg("block B: its spatial iterations may conflict on A: the index A[I[vi]] depends on the "
               "values of I (",
               "two of its spatial iterations may both write A[I[vi]]", "I",
               "a scatter sum `A[I[vi]] += ..` must accumulate over reduce iter vars (a reduce var, or an "
               "opaque var that normalisation reads as one), not spatial ones"));
}

// The valid scatter sum over a reduce var (repeated indices allowed) is no spatial conflict.
TEST(SpatialConflictR19, ScatterSumOverAReduceVarStaysAccepted) {
  expect_accepted(R"(func f(X: f64[6], A0: f64[4], I: i32[6] in [0, 3]) -> (A: f64[4]) {
  for i in serial(4) {
    block c(vi: spatial(4) = i) { A[vi] = A0[vi] }
  }
  for i in serial(6) {
    block B(vk: reduce(6) = i) { A[I[vk]] += X[vk] * X[vk] }
  }
})");
}

// ---- 2. scalar parameters in indices ----

std::string shifted(const std::string& body, int n, const std::string& shape) {
  return "func f(X: f64[" + std::to_string(n) + "], A0: f64[" + shape + "], s: i32) -> (A: f64[" + shape +
         "]) {\n  COPY\n  for i in serial(" + std::to_string(n) + ") {\n    block B(vi: spatial(" +
         std::to_string(n) + ") = i) { " + body + " }\n  }\n}\n";
}

// Valid for s = 0 only: refused, naming the value the samples found conflicting.
TEST(SpatialConflictR19, ShiftByAScalarIsRefusedWithTheConflictingValue) {
  std::string src = shifted("A[vi + s] = A[vi] * X[vi]", 5, "10");
  src.replace(src.find("COPY"), 4,
              "for i in serial(10) {\n    block c(vi: spatial(10) = i) { A[vi] = A0[vi] }\n  }");
  EXPECT_EQ(
      refusal_of(src),
      std::string(
          "block B: its spatial iterations (vi = 0) and (vi = 2) conflict on A[2]: (vi = 0) writes it "
          "and (vi = 2) reads it, so the result depends on the order of the spatial iterations") +
          kRule +
          "read the old values from a copy of A, or make the var a scan var for a recurrence (with s = 2)");
}

// Valid for every s: refused by round 18 ("whether its spatial iterations conflict on A
// depends on s"), now proven (own row; disjoint columns; parities apart).
TEST(SpatialConflictR19, ScalarIndicesValidForEveryValueAreAccepted) {
  const std::string copy2 =
      "for i, j in grid(R, C) {\n    block c(vi: spatial(R) = i, vj: spatial(C) = j) { A[vi, vj] = "
      "A0[vi, vj] }\n  }";
  auto grid_copy = [&](int r, int c) {
    std::string t = copy2;
    for (size_t p; (p = t.find('R')) != std::string::npos;) t.replace(p, 1, std::to_string(r));
    for (size_t p; (p = t.find('C')) != std::string::npos;) t.replace(p, 1, std::to_string(c));
    return t;
  };
  std::string own_row = shifted("A[vi, s] = A[vi, 0] * X[vi]", 4, "4, 3");
  own_row.replace(own_row.find("COPY"), 4, grid_copy(4, 3));
  std::string columns = shifted("A[vi + s, 0] = A[vi + s, 1] * X[vi]", 4, "8, 2");
  columns.replace(columns.find("COPY"), 4, grid_copy(8, 2));
  std::string parity = shifted("A[2 * vi + s] = A[2 * vi + s + 1] * X[vi]", 5, "12");
  parity.replace(parity.find("COPY"), 4,
                 "for i in serial(12) {\n    block c(vi: spatial(12) = i) { A[vi] = A0[vi] }\n  }");
  for (int s : {0, 1, 2}) {
    SCOPED_TRACE(s);
    expect_accepted(own_row, i32_scalars({{"s", s}}));
    expect_accepted(columns, i32_scalars({{"s", s}}));
    if (s < 2) expect_accepted(parity, i32_scalars({{"s", s}}));
  }
}

// ---- 3. nests not enumerated whole ----

// 16400 points: the enumerated sub-box holds the first 8200 (vi < 8200 reads 16399 - vi >= 8200),
// no conflict there; vi = 8199 and vi = 8200 do conflict.
TEST(SpatialConflictR19, ConflictOutsideTheEnumeratedSubBoxIsRefused) {
  const char* src = R"(func f(X: f64[16400]) -> (A: f64[16400]) {
  for i in serial(16400) {
    block c(vi: spatial(16400) = i) { A[vi] = X[vi] }
  }
  for i in serial(16400) {
    block t(vi: spatial(16400) = i) { A[vi] = A[16399 - vi] + X[vi] }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      std::string(
          "block t: its spatial iterations may conflict on A (it reads A[16399 - vi] and writes A[vi]): "
          "its loop nest was not enumerated whole (more than 16384 points, no conflict among the first "
          "ones; or bounds and bindings that do not fold to constants) and no symbolic test proves its "
          "spatial iterations independent") +
          kRule + "read the old values from a copy of A, or make the var a scan var for a recurrence");
}

// Disjoint halves of a large nest, and a shift by a symbolic size: proven (bounds of the
// difference), where sampling could only refuse them.
TEST(SpatialConflictR19, DisjointPartsAreProvenAtAnySize) {
  EXPECT_EQ(refusal_of(R"(func f(X: f64[16400]) -> (A: f64[32800]) {
  for i in serial(32800) {
    block c(vi: spatial(32800) = i) { A[vi] = 1.0 }
  }
  for i in serial(16400) {
    block t(vi: spatial(16400) = i) { A[vi + 16400] = A[vi] * X[vi] }
  }
})"),
            "accepted");
  const char* sym = R"(func f(n: i32, X: f64[n], A0: f64[n * 2]) -> (A: f64[n * 2]) {
  for i in serial(n * 2) {
    block c(vi: spatial(n * 2) = i) { A[vi] = A0[vi] }
  }
  for i in serial(n) {
    block B(vi: spatial(n) = i) { A[vi + n] = A[vi] * X[vi] }
  }
})";
  expect_accepted(sym, i32_scalars({{"n", 3}}));
}

// ---- h12 (review r7) ----

// F4: an index or guard the enumeration cannot fold (sqrt of an iter var) was skipped there and
// checked by nobody (the proof only took pairs with a load): the cross-row scan with rows
// outside got round 18's wrong gradient. Now such pairs go to the proof and are refused.
TEST(SpatialConflictR19, UnfoldedIndexOrGuardOfACrossRowScanIsRefused) {
  const std::string sq = "for r, i in grid(4, 7)";
  std::string src = cross_row_scan(sq);
  src.replace(src.find(", Z: i32[1] in [0, 3]"), 21, "");
  std::string idx = src;
  idx.replace(idx.find("(vr + 1 + Z[0]) % 4"), 19, "i32(sqrt(f64((vr + 1) * (vr + 1)))) % 4");
  const std::string tail =
      " does not fold to a constant at its iterations (an operation such as sqrt or log2 of an iter var), so "
      "the "
      "check of every iteration could not place it, and no symbolic test proves its spatial iterations "
      "independent" +
      std::string(kRule) +
      "compute indices and guards with integer operations (+, -, *, //, %, min, max), or run the scan loop "
      "outside the loops of the spatial vars (every spatial point of a step before the next step), or read "
      "the "
      "old values from a copy of H";
  EXPECT_EQ(
      refusal_of(idx),
      "block s: its spatial iterations may conflict on H (it reads H[i32(sqrt(f64((vr + 1) * (vr + 1)))) % "
      "4, vi - 1] and writes H[vr, vi]): the index or a guard of H[i32(sqrt(f64((vr + 1) * (vr + 1)))) % 4, "
      "vi - 1]" +
          tail);
  std::string guard = src;
  guard.replace(guard.find("H[(vr + 1 + Z[0]) % 4, vi - 1]"), 30,
                "if_then_else(sqrt(f64(vr + 1)) < 10.0, H[(vr + 1) % 4, vi - 1], 0.0)");
  EXPECT_EQ(
      refusal_of(guard),
      "block s: its spatial iterations may conflict on H (it reads H[(vr + 1) % 4, vi - 1] and writes H[vr, "
      "vi]): the index or a guard of H[(vr + 1) % 4, vi - 1] (under sqrt(f64(vr + 1)) < 10.0)" +
          tail);
  // Steps outside: valid, still accepted.
  std::string out = cross_row_scan("for i, r in grid(7, 4)");
  out.replace(out.find(", Z: i32[1] in [0, 3]"), 21, "");
  out.replace(out.find("(vr + 1 + Z[0]) % 4"), 19, "i32(sqrt(f64((vr + 1) * (vr + 1)))) % 4");
  expect_accepted(out);
}

// F1/F2: injective non-affine stores of a nest of symbolic size (not enumerated whole) were
// refused: the unflatten `vi // 4, vi % 4` (together they pin vi) and a rotation `(vi + s) % n`
// over vi: spatial(n).
TEST(SpatialConflictR19, UnflattenAndRotationOfSymbolicSizeAreAccepted) {
  const char* unflatten = R"(func f(n: i32 in [3, 3], X: f64[n * 4], A0: f64[n, 4]) -> (A: f64[n, 4]) {
  for i, j in grid(n, 4) {
    block c(vi: spatial(n) = i, vj: spatial(4) = j) { A[vi, vj] = A0[vi, vj] }
  }
  for i in serial(n * 4) {
    block B(vi: spatial(n * 4) = i) { A[vi // 4, vi % 4] = A[vi // 4, vi % 4] * X[vi] }
  }
})";
  expect_accepted(unflatten, i32_scalars({{"n", 3}}));
  const char* roll = R"(func f(n: i32 in [5, 5], s: i32 in [-3, 7], X: f64[n]) -> (Y: f64[n]) {
  for i in serial(n) {
    block B(vi: spatial(n) = i) { Y[(vi + s) % n] = X[vi] * X[vi] }
  }
})";
  expect_accepted(roll, i32_scalars({{"n", 5}, {"s", 3}}));
  expect_accepted(roll, i32_scalars({{"n", 5}, {"s", -2}}));
  // Not injective: still refused (found at n = 2 by the enumeration).
  std::string half = roll;
  half.replace(half.find("spatial(n)"), 10, "spatial(n * 2)");
  half.replace(half.find("serial(n)"), 9, "serial(n * 2)");
  EXPECT_NE(refusal_of(half), "accepted");
  // A product of a var and a scalar (`vj * w + vi`) is not proven (w = 0 conflicts): refused,
  // advising one-to-one stores (not a copy of old values, which cannot help).
  const char* flat = R"(func f(w: i32 in [3, 3], X: f64[4, w], A0: f64[4 * w]) -> (A: f64[4 * w]) {
  for i in serial(4 * w) {
    block c(vi: spatial(4 * w) = i) { A[vi] = A0[vi] }
  }
  for j, i in grid(4, w) {
    block B(vj: spatial(4) = j, vi: spatial(w) = i) { A[vj * w + vi] = A[vj * w + vi] * X[vj, vi] }
  }
})";
  EXPECT_EQ(
      refusal_of(flat),
      "block B: whether its spatial iterations conflict on A depends on w (two of its spatial iterations may "
      "both write A[vj * w + vi]; no conflict found at w = 2; w = 3), which cannot be checked for every "
      "call" +
          std::string(kRule) +
          "make its stores to A one-to-one in the spatial iter vars (each spatial iteration writing elements "
          "of its own), or make the var a reduce var for an accumulation, or keep w out of the indices and "
          "guards of its accesses to A");
}

// F3: a guard reading a buffer is named as the guard, not as "the index".
TEST(SpatialConflictR19, DataDependentGuardIsNamedAsTheGuard) {
  const char* src = R"(func f(X: f64[4], A0: f64[6], M: i32[4] in [0, 1]) -> (A: f64[6]) {
  for i in serial(6) {
    block c(vi: spatial(6) = i) { A[vi] = A0[vi] }
  }
  for i in serial(4) {
    block B(vi: spatial(4) = i) { if M[vi] > 0 { A[vi + 2] = A[vi + 1] * X[vi] } }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      data_msg("block B: its spatial iterations may conflict on A: the guard M[vi] > 0 of A[vi + 1] depends "
               "on the values of M (",
               "it reads A[vi + 1] and writes A[vi + 2]", "M",
               "read the old values from a copy of A, or make the var a scan var for a recurrence"));
}

}  // namespace
}  // namespace tirc

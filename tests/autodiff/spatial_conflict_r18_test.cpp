// Helper round 18 (h7): blocks whose spatial iterations conflict (LANGUAGE.md: "for spatial
// vars the order does not matter (a block whose spatial iterations conflict is invalid)").
// `tirc grad` accepted such blocks: gradient() reads a spatial block as if every instance read
// the values from before the block, and a scan block step by step, so the gradient was wrong
// (`check-grad` FAILED: the scan below with its spatial loop outside the scan loop) or right
// only because the interpreter's order happened to agree (`A[vi] = A[vi + 1] * X[vi]`). Now
// normalisation rewrite 0c's enumeration (redundant.cpp, spatial_conflicts.h) refuses them,
// naming the block, the element and two conflicting instances; valid in-place forms stay
// accepted (check_grad --full in f64, F_grad printed and re-parsed).
#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/refusal_of.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::parse_one;
using testing::refusal_of;

const char* kTail =
    ", so the result depends on the order of the spatial iterations; LANGUAGE.md requires the spatial "
    "iterations of a block to be independent (a block whose spatial iterations conflict is invalid): read "
    "the old values from a copy of A, or make the var a scan var for a recurrence";

// A 1-D in-place block over `A`, its body `BODY` (a copy of A0 first, so A is initialised).
std::string in_place(const std::string& body, int n = 10) {
  const std::string N = std::to_string(n);
  return "func f(X: f64[" + N + "], A0: f64[" + N + "]) -> (A: f64[" + N + "]) {\n  for i in serial(" + N +
         ") {\n    block c(vi: spatial(" + N + ") = i) { A[vi] = A0[vi] }\n  }\n  for i in serial(" + N +
         ") {\n    block B(vi: spatial(" + N + ") = i) { " + body + " }\n  }\n}\n";
}

void expect_accepted(const std::string& src) {
  Function f = parse_one(src, "f");
  expect_full_checks(*f);
  EXPECT_TRUE(grad_of_printed(*f));
}

// The reviewer's non-scan form: instance vi writes what instance 9 - vi reads. Accepted before
// (check-grad then stopped in the interpreter's own conflict check).
TEST(SpatialConflictR18, InPlaceReversalIsRefused) {
  EXPECT_EQ(refusal_of(in_place("A[vi] = A[9 - vi] + X[vi]")),
            std::string("block B: its spatial iterations (vi = 4) and (vi = 5) conflict on A[4]: (vi = 4) "
                        "writes it and (vi = 5) reads it") +
                kTail);
}

// A prefix recurrence written with a spatial var (it should be a scan var).
TEST(SpatialConflictR18, ReadOfThePreviousElementIsRefused) {
  std::string src = in_place("A[vi] = A[vi - 1] * X[vi]");
  src.replace(src.rfind("serial(10)"), 10, "serial(1, 10)");
  EXPECT_EQ(refusal_of(src),
            std::string("block B: its spatial iterations (vi = 1) and (vi = 2) conflict on A[1]: (vi = 1) "
                        "writes it and (vi = 2) reads it") +
                kTail);
}

// Reads the next element, which its instance overwrites later in loop order: the gradient
// happened to be right for increasing order (the interpreter does not see it: the read comes
// first), the block is invalid all the same.
TEST(SpatialConflictR18, ReadOfTheNextElementIsRefused) {
  EXPECT_EQ(refusal_of(in_place("A[vi] = A[(vi + 1) % 10] * X[vi]")),
            std::string("block B: its spatial iterations (vi = 0) and (vi = 1) conflict on A[1]: (vi = 0) "
                        "reads it and (vi = 1) writes it") +
                kTail);
}

TEST(SpatialConflictR18, BroadcastOfOneElementIsRefused) {
  EXPECT_EQ(refusal_of(in_place("A[vi] = A[0] * X[vi]")),
            std::string("block B: its spatial iterations (vi = 0) and (vi = 1) conflict on A[0]: (vi = 0) "
                        "writes it and (vi = 1) reads it") +
                kTail);
}

// Two stores: the second reads what the first stores at another spatial point.
TEST(SpatialConflictR18, SecondStoreReadsAnotherPointsFirstStore) {
  const char* src = R"(func f(X: f64[4]) -> (B: f64[4], C: f64[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = X[vi] * 2.0
      C[vi] = B[(vi + 1) % 4] * X[vi]
    }
  }
})";
  EXPECT_EQ(refusal_of(src),
            "block b: its spatial iterations (vi = 0) and (vi = 1) conflict on B[1]: (vi = 0) reads it and "
            "(vi = 1) writes it, so the result depends on the order of the spatial iterations; LANGUAGE.md "
            "requires the spatial iterations of a block to be independent (a block whose spatial iterations "
            "conflict is invalid): read the old values from a copy of B, or make the var a scan var for a "
            "recurrence");
}

// 2-D in-place transpose-add.
TEST(SpatialConflictR18, InPlaceTransposeIsRefused) {
  const char* src = R"(func f(X: f64[3, 3]) -> (A: f64[3, 3]) {
  for i, j in grid(3, 3) {
    block c(vi: spatial(3) = i, vj: spatial(3) = j) { A[vi, vj] = X[vi, vj] }
  }
  for i, j in grid(3, 3) {
    block t(vi: spatial(3) = i, vj: spatial(3) = j) { A[vi, vj] = A[vj, vi] * 0.5 + X[vi, vj] }
  }
})";
  EXPECT_EQ(refusal_of(src),
            std::string("block t: its spatial iterations (vi = 0, vj = 1) and (vi = 1, vj = 0) conflict on "
                        "A[0, 1]: (vi = 0, vj = 1) writes it and (vi = 1, vj = 0) reads it") +
                kTail);
}

// The reviewer's scan: instance vr writes the row instance 1 - vr reads at the next step, and
// the spatial loop runs outside the scan loop. Refused with the conflict (the scan machinery
// said only "a scan step must write elements of its own").
TEST(SpatialConflictR18, ScanSwappingRowsIsRefused) {
  const char* src = R"(func f(X: f64[2, 8], H0: f64[2, 8]) -> (H: f64[2, 8]) {
  for r, i in grid(2, 8) {
    block c(vr: spatial(2) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }
  }
  for r, i in grid(2, 7) {
    block s(vr: spatial(2) = r, vi: scan(8) = i + 1) {
      H[1 - vr, vi] = H[vr, vi - 1] * 0.5 + X[vr, vi]
    }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      "block s: its spatial iterations (vr = 0, vi = 2) and (vr = 1, vi = 1) conflict on H[0, 1]: (vr = "
      "0, vi = 2) reads it and (vr = 1, vi = 1) writes it, so the result depends on the order of the "
      "spatial iterations (the loop nest runs the later step's iteration first: run the scan loop "
      "outside the loops of the spatial vars); LANGUAGE.md requires the spatial iterations of a block "
      "to be independent (a block whose spatial iterations conflict is invalid): read the old values "
      "from a copy of H, or make the var a scan var for a recurrence");
}

// A scan reading another row's previous step with the row loop outside the step loop: a wrong
// gradient before (`check-grad --full`: "X: max abs err 6.848e-01 ... FAILED"). The same block
// with the step loop outside is valid (every row of step i - 1 runs before step i) and passes.
const char* kCrossRowScan = R"(func f(X: f64[4, 8], H0: f64[4, 8]) -> (H: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }
  }
  LOOPS {
    block s(vr: spatial(4) = r, vi: scan(8) = i + 1) {
      H[vr, vi] = H[(vr + 1) % 4, vi - 1] * 0.5 + X[vr, vi]
    }
  }
})";

std::string cross_row_scan(const std::string& loops) {
  std::string s = kCrossRowScan;
  return s.replace(s.find("LOOPS"), 5, loops);
}

TEST(SpatialConflictR18, ScanReadingAnotherRowWithRowsOutsideIsRefused) {
  EXPECT_EQ(
      refusal_of(cross_row_scan("for r, i in grid(4, 7)")),
      "block s: its spatial iterations (vr = 0, vi = 2) and (vr = 1, vi = 1) conflict on H[1, 1]: (vr = "
      "0, vi = 2) reads it and (vr = 1, vi = 1) writes it, so the result depends on the order of the "
      "spatial iterations (the loop nest runs the later step's iteration first: run the scan loop "
      "outside the loops of the spatial vars); LANGUAGE.md requires the spatial iterations of a block "
      "to be independent (a block whose spatial iterations conflict is invalid): read the old values "
      "from a copy of H, or make the var a scan var for a recurrence");
}

TEST(SpatialConflictR18, ScanReadingAnotherRowWithStepsOutsideIsAccepted) {
  expect_accepted(cross_row_scan("for i, r in grid(7, 4)"));
}

// Symbolic extent: found by enumerating at n = 2.
TEST(SpatialConflictR18, SymbolicReversalIsRefusedAtASmallSize) {
  const char* src = R"(func f(n: i32, X: f64[n]) -> (A: f64[n]) {
  for i in serial(n) {
    block c(vi: spatial(n) = i) { A[vi] = X[vi] }
  }
  for i in serial(n) {
    block B(vi: spatial(n) = i) { A[vi] = A[n - 1 - vi] + X[vi] }
  }
})";
  EXPECT_EQ(refusal_of(src),
            std::string("block B: its spatial iterations (vi = 0) and (vi = 1) conflict on A[0]: (vi = 0) "
                        "writes it and (vi = 1) reads it") +
                kTail + " (with n = 2)");
}

// A nest too large to enumerate (2^16 points): its first iterations are enumerated.
TEST(SpatialConflictR18, LargeNestIsCheckedOnItsFirstIterations) {
  const char* src = R"(func f(X: f64[256, 256]) -> (A: f64[256, 256]) {
  for i, j in grid(256, 256) {
    block c(vi: spatial(256) = i, vj: spatial(256) = j) { A[vi, vj] = X[vi, vj] }
  }
  for i, j in grid(256, 256) {
    block t(vi: spatial(256) = i, vj: spatial(256) = j) { A[vi, vj] = A[vj, vi] + X[vi, vj] }
  }
})";
  EXPECT_EQ(refusal_of(src),
            std::string("block t: its spatial iterations (vi = 0, vj = 1) and (vi = 1, vj = 0) conflict on "
                        "A[0, 1]: (vi = 0, vj = 1) writes it and (vi = 1, vj = 0) reads it") +
                kTail);
}

// Valid in-place forms stay accepted: the same element, a part no iteration writes, a load in
// an arm that never runs.
TEST(SpatialConflictR18, ValidInPlaceBlocksStayAccepted) {
  expect_accepted(in_place("A[vi] = A[vi] * X[vi] + A[vi]"));
  expect_accepted(in_place("A[vi] = if_then_else(vi < 0, A[9 - vi], A[vi]) * X[vi]"));
  expect_accepted(R"(func f(X: f64[5], A0: f64[10]) -> (A: f64[10]) {
  for i in serial(10) {
    block c(vi: spatial(10) = i) { A[vi] = A0[vi] }
  }
  for i in serial(5) {
    block B(vi: spatial(5) = i) { A[vi + 5] = A[vi] * X[vi] }
  }
})");
}

}  // namespace
}  // namespace tirc

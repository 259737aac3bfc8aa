// Reviewer round 18 on the spatial-conflict check of normalisation rewrite 0c (redundant.cpp,
// spatial_conflicts.h): a recurrence over an explicit opaque var was refused as a conflict;
// an index using a scalar parameter, a write/write conflict at a symbolic size and a scan block
// re-run by a loop it ignores were accepted with wrong gradients (`check-grad --full` FAILED);
// two messages gave the wrong advice. Refusals are checked by their exact message, accepted
// forms by check_grad --full in f64 (tests/autodiff/full_checks.h).
#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/refusal_of.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::grad_of_printed;
using testing::i32_scalars;
using testing::parse_one;
using testing::refusal_of;

const char* kRule =
    "; LANGUAGE.md requires the spatial iterations of a block to be independent (a block whose spatial "
    "iterations conflict is invalid): ";

void expect_accepted(const std::string& src, const ArgMap& given = {}) {
  Function f = parse_one(src, "f");
  expect_full_checks(*f, given);
  EXPECT_TRUE(grad_of_printed(*f));
}

// A cross-row recurrence whose step var is `KIND`, under the loops `LOOPS`.
std::string cross_row(const std::string& kind, const std::string& loops,
                      const std::string& row = "(vr + 1) % 4", const std::string& params = "") {
  return "func f(" + params +
         "X: f64[4, 8], H0: f64[4, 8]) -> (H: f64[4, 8]) {\n"
         "  for r, i in grid(4, 8) {\n"
         "    block c(vr: spatial(4) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }\n"
         "  }\n  " +
         loops + " {\n    block s(vr: spatial(4) = r, vi: " + kind + "(8) = i + 1) {\n      H[vr, vi] = H[" +
         row + ", vi - 1] * 0.5 + X[vr, vi]\n    }\n  }\n}\n";
}

// 1. An explicit opaque var bound to the outer step loop orders the iterations as a scan var
// does (rewrite 8 reads it as one): refused before with the conflict message.
TEST(ReviewR18, OpaqueRecurrenceAcrossRowsIsAccepted) {
  expect_accepted(cross_row("opaque", "for i, r in grid(7, 4)"));
}

// Two opaque vars: steps compare in the order of their loops (i outside j), not of the iter
// vars (vj first), or the read of (vj + 1) % 4 at step vi - 1 looked like a later step's.
TEST(ReviewR18, TwoOpaqueVarsCompareInLoopOrder) {
  expect_accepted(R"(func f(X: f64[4, 8, 4], H0: f64[4, 8, 4]) -> (H: f64[4, 8, 4]) {
  for r, i, j in grid(4, 8, 4) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i, vj: spatial(4) = j) { H[vr, vi, vj] = H0[vr, vi, vj] }
  }
  for i, j, r in grid(7, 4, 4) {
    block s(vr: spatial(4) = r, vj: opaque(4) = j, vi: opaque(8) = i + 1) {
      H[vr, vi, vj] = H[(vr + 1) % 4, vi - 1, (vj + 1) % 4] * 0.5 + X[vr, vi, vj]
    }
  }
})");
}

// The same opaque recurrence with the row loop outside stays refused (rows read the next row's
// earlier step before it ran).
TEST(ReviewR18, OpaqueRecurrenceWithRowsOutsideIsRefused) {
  EXPECT_EQ(refusal_of(cross_row("opaque", "for r, i in grid(4, 7)")),
            std::string(
                "block s: its spatial iterations (vr = 0, vi = 2) and (vr = 1, vi = 1) conflict on H[1, 1]: "
                "(vr = 0, vi = 2) reads it and (vr = 1, vi = 1) writes it, so the result depends on the "
                "order of the spatial iterations (the loop nest runs the later step's iteration first: "
                "run the loops of the opaque vars outside the loops of the spatial vars)") +
                kRule + "read the old values from a copy of H, or make the var a scan var for a recurrence");
}

// 2. The row read through a scalar parameter: the access did not fold and was skipped, the
// nest reported as checked (check-grad --full --input s=1: "X: max abs err 6.848e-01 ...
// FAILED"). Found now with s at a sample value.
TEST(ReviewR18, ScalarRowOffsetIsCheckedAtSampleValues) {
  EXPECT_EQ(
      refusal_of(cross_row("scan", "for r, i in grid(4, 7)", "(vr + s) % 4", "s: i32, ")),
      std::string(
          "block s: its spatial iterations (vr = 0, vi = 2) and (vr = 2, vi = 1) conflict on H[2, 1]: "
          "(vr = 0, vi = 2) reads it and (vr = 2, vi = 1) writes it, so the result depends on the "
          "order of the spatial iterations (the loop nest runs the later step's iteration first: "
          "run the scan loop outside the loops of the spatial vars)") +
          kRule +
          "read the old values from a copy of H, or make the var a scan var for a recurrence (with s = 2)");
}

// With the step loop outside, a read of an earlier step is complete whatever row s selects:
// accepted (check-grad --full at s = 1 and 3).
TEST(ReviewR18, ScalarRowOffsetWithStepsOutsideIsAccepted) {
  const std::string src = cross_row("scan", "for i, r in grid(7, 4)", "(vr + s) % 4", "s: i32, ");
  expect_accepted(src, i32_scalars({{"s", 1}}));
  expect_accepted(src, i32_scalars({{"s", 3}}));
}

// No sample value shows the conflict: refused all the same, the access at another element
// than the store's depending on s.
TEST(ReviewR18, ScalarDependentCrossPointReadIsRefused) {
  const std::string src =
      cross_row("scan", "for r, i in grid(4, 7)", "if_then_else(s == 10, (vr + 1) % 4, vr)", "s: i32, ");
  EXPECT_EQ(
      refusal_of(src),
      std::string(
          "block s: whether its spatial iterations conflict on H depends on s (it reads H[if_then_else(s "
          "== 10, (vr + 1) % 4, vr), vi - 1] and writes H[vr, vi]; no conflict found at s = 2; s = 3; "
          "s = 1; s = 0), which cannot be checked for every call") +
          kRule +
          "run the scan loop outside the loops of the spatial vars (every spatial point of a step before the "
          "next step), or read the old values from a copy of H, or keep s out of the indices and guards of its "
          "accesses to H");
}

// A `where` on a scalar (the nest's points do not fold): an in-place reversal under `where i <
// s` conflicts only from s = 6 on; refused as its instances depend on s.
TEST(ReviewR18, ScalarWhereOverCrossPointAccessesIsRefused) {
  const char* src = R"(func f(s: i32, X: f64[10], A0: f64[10]) -> (A: f64[10]) {
  for i in serial(10) {
    block c(vi: spatial(10) = i) { A[vi] = A0[vi] }
  }
  for i in serial(10) {
    block B(vi: spatial(10) = i) {
      where i < s
      A[vi] = A[9 - vi] + X[vi]
    }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      std::string(
          "block B: its spatial iterations may conflict on A (it reads A[9 - vi] and writes A[vi]): its loop "
          "nest was not enumerated whole (its bounds depend on s; no conflict found at s = 2; s = 3; s = 1; "
          "s = 0) and no symbolic test proves its spatial iterations independent") +
          kRule + "read the old values from a copy of A, or make the var a scan var for a recurrence");
  // Accesses of the store's own element stay accepted under it.
  std::string ok = src;
  ok.replace(ok.find("A[9 - vi]"), 9, "A[vi] * 2.0");
  expect_accepted(ok, i32_scalars({{"s", 6}}));
}

// Scalars in guards of accesses at the stores' own elements stay accepted.
TEST(ReviewR18, ScalarGuardsOfOwnElementsStayAccepted) {
  expect_accepted(R"(func f(s: i32, X: f64[4, 8], H0: f64[4, 8]) -> (H: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }
  }
  for r, i in grid(4, 7) {
    block s(vr: spatial(4) = r, vi: scan(8) = i + 1) {
      H[vr, vi] = if_then_else(vi >= s, H[vr, vi - 1], 0.0) * 0.5 + X[vr, vi]
    }
  }
})",
                  i32_scalars({{"s", 3}}));
  expect_accepted(R"(func f(s: i32, X: f64[8], A0: f64[8]) -> (A: f64[8]) {
  for i in serial(8) {
    block c(vi: spatial(8) = i) { A[vi] = A0[vi] }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if vi < s {
        A[vi] = A[vi] * X[vi]
      }
    }
  }
})",
                  i32_scalars({{"s", 3}}));
}

// 3. Every iteration writes T[0]: refused at a constant size, accepted at a symbolic one (the
// passes at small sizes skipped the store/store check; F_grad gave X_grad [2, 2, 2] for n = 3,
// the truth [0, 0, 2]).
TEST(ReviewR18, SharedScratchStoreAtSymbolicSizeIsRefused) {
  EXPECT_EQ(
      refusal_of(R"(func f(n: i32, X: f64[n]) -> (T: f64[1], Y: f64[n]) {
  for i in serial(n) {
    block b(vi: spatial(n) = i) {
      T[0] = X[vi] * X[vi]
      Y[vi] = X[vi] * 3.0
    }
  }
})"),
      "block b: its iterations (vi = 0) and (vi = 1) both write T[0] (a block whose spatial iterations "
      "conflict is invalid: give each iteration elements of its own, e.g. index the scratch buffer by every "
      "spatial iter var) (with n = 2)");
}

// 4. A scan block re-run by a loop it ignores: gradient() summed the repeats (check-grad FAILED);
// the spatial form was already refused.
TEST(ReviewR18, ScanBlockRepeatedByAnIgnoredLoopIsRefused) {
  EXPECT_EQ(
      refusal_of(R"(func f(X: f64[4, 8], H0: f64[4, 8]) -> (H: f64[4, 8]) {
  for r, i in grid(4, 8) {
    block c(vr: spatial(4) = r, vi: spatial(8) = i) { H[vr, vi] = H0[vr, vi] }
  }
  for u in serial(2) {
    for i, r in grid(7, 4) {
      block s(vr: spatial(4) = r, vi: scan(8) = i + 1) {
        H[vr, vi] = H[vr, vi - 1] * 0.5 + X[vr, vi]
      }
    }
  }
})"),
      "block s runs again at every iteration of loop u, which none of its bindings uses, and it is a scan "
      "block (the repeats of a scan are not read as plain recomputations): move the block out of loop u, or "
      "give each iteration of u elements of its own (a dimension indexed by an iter var bound to u)");
}

// 5. Two scan vars: steps compare over both, so the real reason comes out (it said "at one
// step of the scan" for two different steps).
TEST(ReviewR18, TwoScanVarsGetTheirOwnRefusal) {
  EXPECT_EQ(refusal_of(R"(func f(X: f64[2, 4, 4]) -> (D: f64[2, 5, 5]) {
  for b, i, j in grid(2, 5, 5) {
    block c(vb: spatial(2) = b, vi: spatial(5) = i, vj: spatial(5) = j) { D[vb, vi, vj] = 0.1 }
  }
  for i, j, b in grid(4, 4, 2) {
    block s(vi: scan(5) = i + 1, vj: scan(5) = j + 1, vb: spatial(2) = b) {
      D[vb, vi, vj] = D[(vb + 1) % 2, vi - 1, vj] * 0.5 + D[vb, vi, vj - 1] * 0.25 + X[vb, vi - 1, vj - 1]
    }
  }
})"),
            "block s: several scan iter vars in one block are not supported");
}

// A function-level scratch T[0] shared by every point of a scan: the advice is a scratch of
// each iteration's own, not another loop order (which does not help).
TEST(ReviewR18, SharedScratchOfAScanGetsScratchAdvice) {
  const std::string src = R"(func f(X: f64[4, 8], H0: f64[4]) -> (H: f64[4, 8]) {
  alloc T: f64[1]
  for r in serial(4) {
    block c(vr: spatial(4) = r) { H[vr, 0] = H0[vr] }
  }
  for r, i in grid(4, 7) {
    block s(vr: spatial(4) = r, vi: scan(8) = i + 1) {
      T[0] = H[vr, vi - 1] * 0.5
      H[vr, vi] = T[0] * T[0] + X[vr, vi]
    }
  }
})";
  EXPECT_EQ(
      refusal_of(src),
      std::string("block s: its spatial iterations (vr = 0, vi = 7) and (vr = 1, vi = 1) conflict on T[0]: "
                  "(vr = 0, vi = 7) reads it and (vr = 1, vi = 1) writes it, so the result depends on the "
                  "order of the spatial iterations") +
          kRule +
          "give each iteration its own scratch (a `let`, or index T by every spatial iter var and the "
          "scan var)");
  // The advised form passes.
  std::string fixed = src;
  fixed.replace(fixed.find("T: f64[1]"), 9, "T: f64[4, 8]");
  for (size_t p; (p = fixed.find("T[0]")) != std::string::npos;) fixed.replace(p, 4, "T[vr, vi]");
  expect_accepted(fixed);
}

}  // namespace
}  // namespace tirc

// LANGUAGE.md: "for spatial vars the order does not matter (a block whose spatial iterations
// conflict is invalid)". The interpreter reports two spatial iterations of one block that
// write the same element, or one that reads what another wrote (writer tags, interp/nodes.h);
// reductions, scans, opaque iter vars, recomputation of the same point and writes by
// different blocks stay valid.
#include <gtest/gtest.h>

#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

std::string run_error(const std::string& text, const std::string& fn = "f") {
  Module m = parse_module(text, "c.tir");
  Function f = m.find_func(fn);
  if (!f) return "(no function " + fn + ")";
  try {
    run_interp(*f, random_inputs(*f, 1));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(InterpConflict, TwoIterationsWriteOneElement) {
  EXPECT_EQ(
      run_error(R"(func f(A: f32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      B[vi // 2] = A[vi]
    }
  }
})"),
      "c.tir:4:7: error: block \"b\": spatial iterations conflict: (vi = 0) and (vi = 1) both write B[0] "
      "(use a reduce iter var for a reduction)");
  // Every iteration writes one element; two spatial vars in the message.
  EXPECT_EQ(
      run_error(R"(func f(A: f32[2, 3]) -> (B: f32[1]) {
  for i, j in grid(2, 3) {
    block b(vi: spatial(2) = i, vj: spatial(3) = j) {
      B[0] = A[vi, vj]
    }
  }
})"),
      "c.tir:4:7: error: block \"b\": spatial iterations conflict: (vi = 0, vj = 0) and (vi = 0, vj = 1) "
      "both write B[0] (use a reduce iter var for a reduction)");
  // A sum mislabelled spatial: reads what the previous iteration wrote (fused accumulate).
  EXPECT_EQ(
      run_error(R"(func f(A: f32[4]) -> (B: f32[1]) {
  block zero() { B[0] = 0.0 }
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[0] += A[vi]
    }
  }
})"),
      "c.tir:5:7: error: block \"b\": spatial iterations conflict: (vi = 1) reads B[0], written by (vi = 0) "
      "(iterations of spatial iter vars must be independent; use a scan iter var)");
}

TEST(InterpConflict, ReadOfAnotherIteration) {
  // A prefix sum written with a spatial var (must be a scan var).
  const char* text = R"(func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: KIND(4) = i) {
      B[vi] = if_then_else(vi == 0, A[0], B[vi - 1] + A[vi])
    }
  }
})";
  std::string spatial = text, scan = text;
  spatial.replace(spatial.find("KIND"), 4, "spatial");
  scan.replace(scan.find("KIND"), 4, "scan");
  EXPECT_EQ(
      run_error(spatial),
      "c.tir:4:7: error: block \"b\": spatial iterations conflict: (vi = 1) reads B[0], written by (vi = 0) "
      "(iterations of spatial iter vars must be independent; use a scan iter var)");
  EXPECT_EQ(run_error(scan), "(no error)");
}

TEST(InterpConflict, ScratchAllocSharedByIterations) {
  // A function-level alloc used as scratch by every spatial iteration (each writes it before
  // reading it) runs: TVM users write it so. Reading another iteration's scratch value is a
  // conflict, and so is a write conflict on an output.
  EXPECT_EQ(run_error(R"(func f(A: f32[4, 3]) -> (B: f32[4]) {
  alloc T: f32[1]
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      T[0] = 0.0
      for k in serial(3) { T[0] = T[0] + A[vi, k] }
      B[vi] = T[0]
    }
  }
})"),
            "(no error)");
  EXPECT_EQ(run_error(R"(func f(A: f32[4]) -> (B: f32[4]) {
  alloc T: f32[1]
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = T[0] + A[vi]
      T[0] = A[vi] * 2.0
    }
  }
})"),
            "c.tir:5:7: error: block \"b\": read of uninitialised element T[0] of alloc buffer T");
  EXPECT_EQ(
      run_error(R"(func f(A: f32[4]) -> (B: f32[4]) {
  alloc T: f32[1]
  for i in serial(4) {
    block z(vi: spatial(1) = 0) { T[0] = 0.0 }
  }
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = T[0] + A[vi]
      T[0] = A[vi] * 2.0
    }
  }
})"),
      "c.tir:8:7: error: block \"b\": spatial iterations conflict: (vi = 1) reads T[0], written by (vi = 0) "
      "(iterations of spatial iter vars must be independent; use a scan iter var)");
  EXPECT_EQ(run_error(R"(func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      alloc T: f32[1]
      T[0] = A[vi] * 2.0
      B[vi] = T[0]
    }
  }
})"),
            "(no error)");
}

TEST(InterpConflict, ValidPatternsStayValid) {
  // Reduction with init and a scan with a spatial batch var reading another point of the
  // previous step; in-place update by a second block; an opaque var; the same point computed
  // twice (recomputation, as compute_at makes); a where-guarded tiling; nested blocks.
  EXPECT_EQ(
      run_error(R"(func f(A: f32[4, 3], X: f32[2, 6]) -> (B: f32[4], Y: f32[2, 6], C: f32[4], D: f32[4]) {
  for i, k in grid(4, 3) {
    block b(vi: spatial(4) = i, vk: reduce(3) = k) {
      init { B[vi] = 0.0 }
      B[vi] += A[vi, vk]
    }
  }
  for b in serial(2) {
    block y0(vb: spatial(2) = b) { Y[vb, 0] = X[vb, 0] }
  }
  for t, b in grid(5, 2) {
    block y(vt: scan(6) = t + 1, vb: spatial(2) = b) {
      Y[vb, vt] = Y[1 - vb, vt - 1] * 0.5 + X[vb, vt]
    }
  }
  for i in serial(4) {
    block c1(vi: spatial(4) = i) { C[vi] = B[vi] }
  }
  for i in serial(4) {
    block c2(vi: spatial(4) = i) { C[vi] = C[vi] * 2.0 }
  }
  for r, i in grid(2, 4) {
    block d(vi: spatial(4) = i) { D[vi] = C[vi] + 1.0 }
  }
  for i in serial(4) {
    block o(vi: opaque(4) = i) { D[0] = D[0] + D[vi] }
  }
  for io, ii in grid(2, 3) {
    block w(vi: spatial(4) = io * 3 + ii) {
      where io * 3 + ii < 4
      C[vi] = C[vi] + 1.0
    }
  }
  for i in serial(4) {
    block outer(vi: spatial(4) = i) {
      for j in serial(1) {
        block inner(vj: spatial(4) = vi + j) { B[vj] = B[vj] - 1.0 }
      }
    }
  }
})"),
      "(no error)");
}

TEST(InterpConflict, ScatterWithDuplicateIndices) {
  Module m = parse_module(R"(func f(I: i32[3], A: f32[3]) -> (B: f32[4]) {
  for i in serial(3) {
    block s(vi: spatial(3) = i) { B[I[vi]] = A[vi] }
  }
})",
                          "c.tir");
  Function f = m.find_func("f");
  ArgMap in = random_inputs(*f, 1);
  in["I"] = NDArray(DType::I32, {3});
  for (int k = 0; k < 3; ++k) in["I"].set(k, k == 2 ? 0 : k + 1);
  EXPECT_NO_THROW(run_interp(*f, in));
  in["I"].set(2, 2);
  try {
    run_interp(*f, in);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "c.tir:3:35: error: block \"s\": spatial iterations conflict: (vi = 1) and (vi = 2) both write B[2] "
        "(use a reduce iter var for a reduction)");
  }
}

}  // namespace
}  // namespace tirc

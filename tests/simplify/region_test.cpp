// Access-region inference on hand-built blocks.
#include "transforms/simplify/region.h"

#include <gtest/gtest.h>

#include "tests/simplify/test_util.h"

namespace tirc {
namespace {

using testing::str;

std::string regions_str(const std::vector<BufferRegion>& rs) {
  std::string s;
  for (auto& r : rs) {
    if (!s.empty()) s += ", ";
    s += r.buffer->name + "[";
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      if (d) s += ", ";
      s += str(r.ranges[d].begin);
      if (!r.ranges[d].is_point()) s += ":" + str(r.ranges[d].end);
    }
    s += "]";
  }
  return s;
}

struct Inferred {
  std::string reads, writes;
};
Inferred infer(const BlockNode& b) {
  std::vector<BufferRegion> r, w;
  infer_access_regions(b, &r, &w);
  return {regions_str(r), regions_str(w)};
}

Buffer buf(const std::string& name, std::vector<Expr> shape, DType t = DType::F32) {
  return Buffer(name, t, std::move(shape));
}

TEST(Region, Matmul) {
  Buffer A = buf("A", {make_int(16), make_int(8)}), B = buf("B", {make_int(8), make_int(16)}),
         C = buf("C", {make_int(16), make_int(16)});
  Var vi("vi"), vj("vj"), vk("vk");
  BlockNode b;
  b.name = "C";
  b.iter_vars = {{vi, IterKind::Spatial, make_int(16)},
                 {vj, IterKind::Spatial, make_int(16)},
                 {vk, IterKind::Reduce, make_int(8)}};
  b.init = make_store(C, {vi, vj}, make_float(0.0));
  b.body = make_store(C, {vi, vj}, make_load(C, {vi, vj}) + make_load(A, {vi, vk}) * make_load(B, {vk, vj}));
  auto r = infer(b);
  EXPECT_EQ(r.reads, "C[vi, vj], A[vi, vk], B[vk, vj]");
  EXPECT_EQ(r.writes, "C[vi, vj]");
}

TEST(Region, InnerLoopsLetsAndHull) {
  Buffer A = buf("A", {make_int(64)}), B = buf("B", {make_int(64)}), C = buf("C", {make_int(16)});
  Var vi("vi"), k("k"), t("t");
  BlockNode b;
  b.name = "blk";
  b.iter_vars = {{vi, IterKind::Spatial, make_int(16)}};
  // let t = vi*2 { for k in 0..4: C[vi] = A[vi*4 + k] + B[t] + B[t + 1] }
  Stmt st = make_store(C, {vi}, make_load(A, {vi * 4 + k}) + make_load(B, {t}) + make_load(B, {t + 1}));
  b.body = make_let_stmt(t, vi * 2, make_for(k, make_int(0), make_int(4), ForKind::Serial, st));
  auto r = infer(b);
  EXPECT_EQ(r.reads, "A[(vi * 4):((vi * 4) + 4)], B[(vi * 2):((vi * 2) + 2)]");
  EXPECT_EQ(r.writes, "C[vi]");
}

TEST(Region, AllocsExcludedAndReadWrite) {
  Buffer A = buf("A", {make_int(16)}), T = buf("T", {make_int(4)});
  Var vi("vi"), k("k");
  BlockNode b;
  b.name = "blk";
  b.iter_vars = {{vi, IterKind::Spatial, make_int(16)}};
  b.allocs = {T};
  b.body = make_seq(
      {make_for(k, make_int(0), make_int(4), ForKind::Serial, make_store(T, {k}, make_load(A, {vi}))),
       make_store(A, {vi}, make_load(A, {vi}) + make_load(T, {make_int(0)}))});
  auto r = infer(b);
  EXPECT_EQ(r.reads, "A[vi]");
  EXPECT_EQ(r.writes, "A[vi]");
}

TEST(Region, GuardedLoadsAndClamping) {
  Buffer A = buf("A", {make_int(16)}), P = buf("P", {make_int(18)});
  Var vi("vi"), k("k");
  BlockNode b;
  b.name = "pad";
  b.iter_vars = {{vi, IterKind::Spatial, make_int(18)}};
  Expr cond = make_binary(BinOp::And, make_binary(BinOp::GE, vi, make_int(1)),
                          make_binary(BinOp::LT, vi, make_int(17)));
  b.body = make_store(P, {vi}, make_if_then_else(cond, make_load(A, {vi - 1}), make_float(0.0)));
  auto r = infer(b);
  EXPECT_EQ(r.reads, "A[(vi - 1)]");
  EXPECT_EQ(r.writes, "P[vi]");
  // Relaxed over a loop: the constant slice [-1, 17) is clamped to A's shape.
  BlockNode root;
  root.name = "root";
  Expr c2 = make_binary(BinOp::And, make_binary(BinOp::GE, k, make_int(1)),
                        make_binary(BinOp::LT, k, make_int(17)));
  root.body = make_for(k, make_int(0), make_int(18), ForKind::Serial,
                       make_store(P, {k}, make_if_then_else(c2, make_load(A, {k - 1}), make_float(0.0))));
  auto r2 = infer(root);
  EXPECT_EQ(r2.reads, "A[0:16]");
  EXPECT_EQ(r2.writes, "P[0:18]");
}

TEST(Region, NestedBlockAndExtern) {
  Buffer A = buf("A", {make_int(8), make_int(16)}), B = buf("B", {make_int(8), make_int(16)}),
         X = buf("X", {make_int(4)});
  Var vi("vi"), j("j"), vj("vj"), n("n");
  // Inner block reads A[vi, vj], writes B[vi, vj]; bound vj = j over j in [0, 16).
  BlockNode inner;
  inner.name = "inner";
  inner.iter_vars = {{vj, IterKind::Spatial, make_int(16)}};
  inner.body = make_store(B, {vi, vj}, make_load(A, {vi, vj}));
  Block ib = make_block(inner);
  BlockNode outer;
  outer.name = "outer";
  outer.iter_vars = {{vi, IterKind::Spatial, make_int(8)}};
  outer.body =
      make_seq({make_for(j, make_int(0), make_int(16), ForKind::Serial, make_block_realize({j}, Expr(), ib)),
                make_evaluate("f", {make_buffer_ptr(X, {})})});
  auto r = infer(outer);
  EXPECT_EQ(r.reads, "A[vi, 0:16], X[0:4]");
  EXPECT_EQ(r.writes, "B[vi, 0:16], X[0:4]");
  // Symbolic loop extent: A[vi, 0:n].
  BlockNode sym;
  sym.name = "sym";
  sym.iter_vars = {{vi, IterKind::Spatial, make_int(8)}};
  sym.body = make_for(j, make_int(0), n, ForKind::Serial, make_store(B, {vi, j}, make_load(A, {vi, j})));
  auto r3 = infer(sym);
  EXPECT_EQ(r3.reads, "A[vi, 0:n]");
  // Symbolic stride: F[j*n + vi] over j in [0, 4), with n >= 0 known from F: f32[n].
  Buffer F = buf("F", {n});
  BlockNode flat;
  flat.name = "flat";
  flat.iter_vars = {{vi, IterKind::Spatial, make_int(8)}};
  flat.body = make_for(j, make_int(0), make_int(4), ForKind::Serial,
                       make_store(B, {vi, j}, make_load(F, {j * n + vi})));
  EXPECT_EQ(infer(flat).reads, "F[vi:(((n * 3) + vi) + 1)]");
  // Data-dependent index over a relaxed var: the whole dimension.
  Buffer I = buf("I", {make_int(16)}, DType::I32);
  BlockNode dd;
  dd.name = "gather";
  dd.iter_vars = {{vi, IterKind::Spatial, make_int(8)}};
  dd.body = make_for(j, make_int(0), make_int(16), ForKind::Serial,
                     make_store(B, {vi, j}, make_load(A, {vi, make_load(I, {j})})));
  auto r4 = infer(dd);
  EXPECT_EQ(r4.reads, "A[vi, 0:16], I[0:16]");
}

TEST(Region, ConditionsNarrowRelaxedVars) {
  Var vi("vi"), k("k"), n("n"), i0("i0"), i1("i1"), vx("vx");
  Buffer A = buf("A", {make_int(8), n}), P = buf("P", {make_int(8), n + 2});
  // for k in 0..n+2: P[vi, k] = if_then_else(k >= 1 && k < n + 1, A[vi, k - 1], 0)
  BlockNode b;
  b.name = "pad";
  b.iter_vars = {{vi, IterKind::Spatial, make_int(8)}};
  Expr cond =
      make_binary(BinOp::And, make_binary(BinOp::GE, k, make_int(1)), make_binary(BinOp::LT, k, n + 1));
  b.body =
      make_for(k, make_int(0), n + 2, ForKind::Serial,
               make_store(P, {vi, k}, make_if_then_else(cond, make_load(A, {vi, k - 1}), make_float(0.0))));
  auto r = infer(b);
  EXPECT_EQ(r.reads, "A[vi, 0:n]");
  EXPECT_EQ(r.writes, "P[vi, 0:(n + 2)]");
  // select evaluates both arms: no narrowing.
  BlockNode s = b;
  s.body = make_for(k, make_int(0), make_int(10), ForKind::Serial,
                    make_store(P, {vi, k},
                               make_select(make_binary(BinOp::LT, k, make_int(4)), make_load(A, {vi, k}),
                                           make_float(0.0))));
  EXPECT_EQ(infer(s).reads, "A[vi, 0:10]");
  BlockNode s2 = s;
  s2.body =
      make_for(k, make_int(0), make_int(10), ForKind::Serial,
               make_if(make_binary(BinOp::LT, k, make_int(4)), make_store(P, {vi, k}, make_load(A, {vi, k})),
                       make_store(P, {vi, k}, make_load(A, {vi, k - 4}))));
  auto r2 = infer(s2);
  EXPECT_EQ(r2.reads, "A[vi, 0:6]");
  EXPECT_EQ(r2.writes, "P[vi, 0:10]");
  // Nested block under a padding predicate: where i0*4 + i1 < 10, vx = i0*4 + i1.
  Buffer X = buf("X", {make_int(10)}), Y = buf("Y", {make_int(10)});
  BlockNode inner;
  inner.name = "inner";
  inner.iter_vars = {{vx, IterKind::Spatial, make_int(10)}};
  inner.body = make_store(Y, {vx}, make_load(X, {vx}));
  BlockNode outer;
  outer.name = "outer";
  outer.body =
      make_for(i0, make_int(0), make_int(3), ForKind::Serial,
               make_for(i1, make_int(0), make_int(4), ForKind::Serial,
                        make_block_realize({i0 * 4 + i1}, make_binary(BinOp::LT, i0 * 4 + i1, make_int(10)),
                                           make_block(inner))));
  auto r3 = infer(outer);
  EXPECT_EQ(r3.reads, "X[0:10]");
  EXPECT_EQ(r3.writes, "Y[0:10]");
}

}  // namespace
}  // namespace tirc

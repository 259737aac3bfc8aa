// The shared examples run by the interpreter against hand-written C++ references, plus
// block semantics (init placement, predicates, scan order, block-local allocs, f64 mode).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/interp/build_ir.h"

namespace tirc {
using namespace tirc::testing;

TEST(InterpExamples, MatmulMatchesReference) {
  auto f = matmul(16, 8, 12);
  ArgMap in = random_inputs(*f, 1);
  ArgMap out = run_interp(*f, in);
  const NDArray &A = in["A"], &B = in["B"], &C = out["C"];
  ASSERT_EQ(C.shape(), (std::vector<int64_t>{16, 8}));
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = 0;
      for (int k = 0; k < 12; ++k) acc = acc + A.ptr<float>()[i * 12 + k] * B.ptr<float>()[k * 8 + j];
      EXPECT_EQ(C.ptr<float>()[i * 8 + j], acc) << i << "," << j;  // same float ops, same order
    }
}

TEST(InterpExamples, SoftmaxMatchesReference) {
  auto f = softmax();
  ArgMap in = random_inputs(*f, 7);
  ArgMap out = run_interp(*f, in);
  const float* x = in["X"].ptr<float>();
  const float* y = out["Y"].ptr<float>();
  for (int i = 0; i < 32; ++i) {
    float m = -3.4028234663852886e38f;
    for (int k = 0; k < 100; ++k) m = std::max(m, x[i * 100 + k]);
    float s = 0;
    float e[100];
    for (int k = 0; k < 100; ++k) s += (e[k] = std::exp(x[i * 100 + k] - m));
    double total = 0;
    for (int k = 0; k < 100; ++k) {
      EXPECT_EQ(y[i * 100 + k], e[k] / s);
      total += y[i * 100 + k];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(InterpExamples, Conv2dMatchesReference) {
  auto f = conv2d();
  ArgMap in = random_inputs(*f, 3);
  ArgMap out = run_interp(*f, in);
  const float* X = in["X"].ptr<float>();
  const float* W = in["W"].ptr<float>();
  const float* Y = out["Y"].ptr<float>();
  for (int n = 0; n < 2; ++n)
    for (int fo = 0; fo < 16; ++fo)
      for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x) {
          float acc = 0;
          for (int c = 0; c < 8; ++c)
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                int yy = y + r - 1, xx = x + s - 1;
                float p =
                    (yy >= 0 && yy < 16 && xx >= 0 && xx < 16) ? X[((n * 8 + c) * 16 + yy) * 16 + xx] : 0.f;
                acc = acc + p * W[((fo * 8 + c) * 3 + r) * 3 + s];
              }
          ASSERT_EQ(Y[((n * 16 + fo) * 16 + y) * 16 + x], acc);
        }
}

TEST(InterpExamples, PromoteF64) {
  auto f = matmul(4, 3, 5);
  ArgMap in = random_inputs(*f, 2);
  InterpOptions o;
  o.promote_f64 = true;
  ArgMap out = run_interp(*f, in, o);
  ASSERT_EQ(out["C"].dtype(), DType::F64);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      double acc = 0;
      for (int k = 0; k < 5; ++k)
        acc += double(in["A"].ptr<float>()[i * 5 + k]) * double(in["B"].ptr<float>()[k * 3 + j]);
      EXPECT_EQ(out["C"].ptr<double>()[i * 3 + j], acc);
    }
  // f64 inputs are accepted too.
  ArgMap in64 = {{"A", in["A"].astype(DType::F64)}, {"B", in["B"].astype(DType::F64)}};
  ArgMap out2 = run_interp(*f, in64, o);
  EXPECT_EQ(out2["C"].get(5), out["C"].get(5));
}

TEST(InterpExamples, RandomInputsRespectRangesAndSeed) {
  Buffer X("X", DType::F32, {i32(1000)}), I("I", DType::I32, {i32(1000)}), O("O", DType::F32, {i32(1)});
  Param px = bparam(X), pi = bparam(I);
  px.range = ValueRange{0.1, 4.0};
  auto f = func("g", {px, pi}, {O}, {}, {});
  ArgMap a = random_inputs(*f, 5), b = random_inputs(*f, 5), c = random_inputs(*f, 6);
  bool lo9 = false, hi9 = false;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(a["X"].get(i), 0.1);
    EXPECT_LE(a["X"].get(i), 4.0);
    EXPECT_EQ(a["X"].get(i), b["X"].get(i));
    EXPECT_GE(a["I"].get(i), 0);
    EXPECT_LE(a["I"].get(i), 9);
    lo9 |= a["I"].get(i) == 0;
    hi9 |= a["I"].get(i) == 9;
  }
  EXPECT_TRUE(lo9 && hi9);
  EXPECT_NE(a["X"].get(0), c["X"].get(0));
  // Giving one input does not change the others.
  ArgMap d = random_inputs(*f, 5, {{"I", a["I"]}});
  EXPECT_EQ(d["X"].get(17), a["X"].get(17));
}

TEST(InterpSemantics, SymbolicShapesFromScalarParams) {
  Var n("n");
  Buffer A("A", DType::F32, {n}), B("B", DType::F32, {n * 2});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, n * 2}}, block("copy", {{vi, IterKind::Spatial, n * 2, i}},
                                       st(B, {vi}, ld(A, {floordiv(vi, i32(2))}) * f32(2))));
  auto f = func("dup", {sparam(n), bparam(A)}, {B}, {}, {body});
  NDArray nv(DType::I32, {});
  nv.set(0, 3);
  ArgMap in = random_inputs(*f, 1, {{"n", nv}});
  ASSERT_EQ(in["A"].shape(), std::vector<int64_t>{3});
  ArgMap out = run_interp(*f, in);
  ASSERT_EQ(out["B"].shape(), std::vector<int64_t>{6});
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out["B"].get(k), float(in["A"].get(k / 2) * 2));
  // A second size through the same program.
  auto prog = compile_interp(*f);
  NDArray nv5(DType::I32, {});  // (NDArray copies share storage: use a fresh one)
  nv5.set(0, 5);
  ArgMap in5 = random_inputs(*f, 1, {{"n", nv5}});
  EXPECT_EQ(prog->run(in5)["B"].shape(), std::vector<int64_t>{10});
  EXPECT_EQ(prog->run(in)["B"].shape(), std::vector<int64_t>{6});
}

TEST(InterpSemantics, InitRunsWhenAllReduceVarsAreZeroAndWhereFilters) {
  // Sum over a split reduction k = k0*4 + k1 with k < 10 (predicate), i.e. a non-dividing split.
  Buffer A("A", DType::F32, {i32(10)}), S("S", DType::F32, {i32(1)});
  Var k0("k0"), k1("k1"), vk("vk"), vz("vz");
  Expr k = k0 * 4 + k1;
  Stmt body = grid({{k0, i32(3)}, {k1, i32(4)}},
                   block("sum", {{vz, IterKind::Spatial, i32(1), i32(0)}, {vk, IterKind::Reduce, i32(10), k}},
                         st(S, {vz}, ld(S, {vz}) + ld(A, {vk})), st(S, {vz}, f32(0)), {},
                         make_binary(BinOp::LT, k, i32(10))));
  auto f = func("s", {bparam(A)}, {S}, {}, {body});
  ArgMap in = random_inputs(*f, 9);
  RunStats st;
  ArgMap out = compile_interp(*f)->run_with_stats(in, &st);
  float acc = 0;
  for (int q = 0; q < 10; ++q) acc += in["A"].ptr<float>()[q];
  EXPECT_EQ(out["S"].ptr<float>()[0], acc);
  EXPECT_EQ(st.block_executions["sum"], 10u);
  EXPECT_EQ(st.block_executions["root"], 1u);
}

TEST(InterpSemantics, ScanReadsEarlierIterations) {
  // Prefix sum: B[0] = A[0]; B[i] = B[i-1] + A[i] for i > 0.
  Buffer A("A", DType::I32, {i32(6)}), B("B", DType::I32, {i32(6)});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, i32(6)}}, block("scan", {{vi, IterKind::Scan, i32(6), i}},
                                        st(B, {vi},
                                           make_if_then_else(make_binary(BinOp::EQ, vi, i32(0)), ld(A, {vi}),
                                                             ld(B, {vi - 1}) + ld(A, {vi})))));
  auto f = func("cumsum", {bparam(A)}, {B}, {}, {body});
  ArgMap in = random_inputs(*f, 4);
  ArgMap out = run_interp(*f, in);
  int32_t acc = 0;
  for (int q = 0; q < 6; ++q) EXPECT_EQ(out["B"].ptr<int32_t>()[q], acc += in["A"].ptr<int32_t>()[q]);
}

TEST(InterpSemantics, BlockLocalAllocIsFreshPerExecution) {
  // Each instance writes T[0] only when vi is even and then reads it: odd instances must fail
  // (the value written by the previous instance is not visible).
  Buffer A("A", DType::F32, {i32(4)}), B("B", DType::F32, {i32(4)}), T("T", DType::F32, {i32(1)});
  Var i("i"), vi("vi");
  Stmt inner =
      make_seq({make_if(make_binary(BinOp::EQ, floormod(vi, i32(2)), i32(0)), st(T, {i32(0)}, ld(A, {vi}))),
                st(B, {vi}, ld(T, {i32(0)}))});
  Stmt body = grid({{i, i32(4)}}, block("b", {{vi, IterKind::Spatial, i32(4), i}}, inner, Stmt(), {T}));
  auto f = func("fresh", {bparam(A)}, {B}, {}, {body});
  try {
    run_interp(*f, random_inputs(*f, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block \"b\": read of uninitialised element T[0] of alloc buffer T");
  }
}

}  // namespace tirc

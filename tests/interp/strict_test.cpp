// Every strictness error of the interpreter, with its exact message.
#include <gtest/gtest.h>

#include <set>

#include "tests/interp/build_ir.h"

namespace tirc {
using namespace tirc::testing;

namespace {
std::string error_of(const Function& f, const ArgMap& in, const InterpOptions& o = {}) {
  try {
    run_interp(*f, in, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// for i in serial(n_loop): block b(vi: spatial(ext) = i) { B[vi] = A[vi + off] }
Function shifted_copy(int64_t n_loop, int64_t ext, int64_t off, int64_t nA = 8, int64_t nB = 8) {
  Buffer A("A", DType::F32, {i32(nA)}), B("B", DType::F32, {i32(nB)});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, i32(n_loop)}}, block("copy", {{vi, IterKind::Spatial, i32(ext), i}},
                                             st(B, {vi}, ld(A, {vi + i32(off)}))));
  return func("f", {bparam(A)}, {B}, {}, {body});
}
}  // namespace

TEST(InterpStrict, OutOfBoundsLoad) {
  auto f = shifted_copy(8, 8, 1);
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)), "block \"copy\": out-of-bounds load A[8]: A has shape [8]");
}

TEST(InterpStrict, OutOfBoundsStore) {
  auto f = shifted_copy(8, 8, 0, 8, 4);
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)), "block \"copy\": out-of-bounds store B[4]: B has shape [4]");
}

TEST(InterpStrict, OutOfBoundsWithDynamicIndex) {
  // Index read from an integer buffer: not provable, checked at run time; negative too.
  Buffer I("I", DType::I32, {i32(2)}), A("A", DType::F32, {i32(3), i32(4)}), B("B", DType::F32, {i32(2)});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, i32(2)}}, block("gather", {{vi, IterKind::Spatial, i32(2), i}},
                                        st(B, {vi}, ld(A, {i32(1), ld(I, {vi})}))));
  auto f = func("g", {bparam(I), bparam(A)}, {B}, {}, {body});
  ArgMap in = random_inputs(*f, 1);
  in["I"] = NDArray(DType::I32, {2});
  in["I"].set(0, 3);
  in["I"].set(1, -1);
  EXPECT_EQ(error_of(f, in), "block \"gather\": out-of-bounds load A[1, -1]: A has shape [3, 4]");
}

TEST(InterpStrict, UninitialisedOutputRead) {
  // Reduction without init reads C before writing it.
  Buffer A("A", DType::F32, {i32(2), i32(3)}), C("C", DType::F32, {i32(2)});
  Var i("i"), k("k"), vi("vi"), vk("vk");
  Stmt body = grid({{i, i32(2)}, {k, i32(3)}},
                   block("sum", {{vi, IterKind::Spatial, i32(2), i}, {vk, IterKind::Reduce, i32(3), k}},
                         st(C, {vi}, ld(C, {vi}) + ld(A, {vi, vk}))));
  auto f = func("f", {bparam(A)}, {C}, {}, {body});
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)),
            "block \"sum\": read of uninitialised element C[0] of output buffer C");
}

TEST(InterpStrict, UninitialisedAllocRead) {
  Buffer A("A", DType::F32, {i32(4)}), B("B", DType::F32, {i32(4)}), T("T", DType::F32, {i32(2), i32(4)});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, i32(4)}}, block("use", {{vi, IterKind::Spatial, i32(4), i}},
                                        st(B, {vi}, ld(T, {i32(1), vi}) + ld(A, {vi}))));
  auto f = func("f", {bparam(A)}, {B}, {T}, {body});
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)),
            "block \"use\": read of uninitialised element T[1, 0] of alloc buffer T");
  // Same through the fused product of two loads (both operand orders).
  for (bool t_first : {true, false}) {
    Expr prod = t_first ? ld(T, {i32(1), vi}) * ld(A, {vi}) : ld(A, {vi}) * ld(T, {i32(1), vi});
    Stmt b2 = grid({{i, i32(4)}}, block("mul", {{vi, IterKind::Spatial, i32(4), i}}, st(B, {vi}, prod)));
    auto g = func("g", {bparam(A)}, {B}, {T}, {b2});
    EXPECT_EQ(error_of(g, random_inputs(*g, 1)),
              "block \"mul\": read of uninitialised element T[1, 0] of alloc buffer T");
  }
}

TEST(InterpStrict, BindingOutsideDomain) {
  auto f = shifted_copy(9, 8, 0, 16, 16);
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)),
            "block \"copy\": binding of iter var vi = 8 is outside its domain [0, 8)");
}

TEST(InterpStrict, IntegerDivisionByZero) {
  Buffer A("A", DType::I32, {i32(3)}), B("B", DType::I32, {i32(3)});
  Var i("i"), vi("vi");
  for (auto [op, name] : {std::pair{BinOp::FloorDiv, "floordiv"}, std::pair{BinOp::FloorMod, "floormod"}}) {
    Stmt body = grid({{i, i32(3)}}, block("div", {{vi, IterKind::Spatial, i32(3), i}},
                                          st(B, {vi}, make_binary(op, i32(7), ld(A, {vi}) - ld(A, {vi})))));
    auto f = func("f", {bparam(A)}, {B}, {}, {body});
    EXPECT_EQ(error_of(f, random_inputs(*f, 1)),
              std::string("block \"div\": integer division by zero: ") + name + "(7, 0)");
  }
  Stmt body = grid({{i, i32(3)}},
                   block("div", {{vi, IterKind::Spatial, i32(3), i}},
                         st(B, {vi}, make_call(Intrinsic::TruncMod, {i32(-5), ld(A, {vi}) * i32(0)}))));
  auto f = func("f", {bparam(A)}, {B}, {}, {body});
  EXPECT_EQ(error_of(f, random_inputs(*f, 1)), "block \"div\": integer division by zero: truncmod(-5, 0)");
}

TEST(InterpStrict, IfThenElseGuardsButSelectDoesNot) {
  Buffer A("A", DType::F32, {i32(4)}), B("B", DType::F32, {i32(5)});
  Var i("i"), vi("vi");
  auto mk = [&](bool ite) {
    Expr c = make_binary(BinOp::LT, vi, i32(4));
    Expr v = ite ? make_if_then_else(c, ld(A, {vi}), f32(0)) : make_select(c, ld(A, {vi}), f32(0));
    Stmt body = grid({{i, i32(5)}}, block("pad", {{vi, IterKind::Spatial, i32(5), i}}, st(B, {vi}, v)));
    return func("f", {bparam(A)}, {B}, {}, {body});
  };
  auto in = random_inputs(*mk(true), 1);
  ArgMap out = run_interp(*mk(true), in);
  EXPECT_EQ(out["B"].get(4), 0.0);
  EXPECT_EQ(error_of(mk(false), in), "block \"pad\": out-of-bounds load A[4]: A has shape [4]");
}

TEST(InterpStrict, InputChecks) {
  auto f = matmul(4, 3, 2);
  ArgMap in = random_inputs(*f, 1);
  ArgMap missing = in;
  missing.erase("B");
  EXPECT_EQ(error_of(f, missing), "missing input for parameter B");
  ArgMap bad_shape = in;
  bad_shape["A"] = NDArray(DType::F32, {2, 4});
  EXPECT_EQ(error_of(f, bad_shape), "parameter A: expected shape [4, 2], got [2, 4]");
  ArgMap bad_dtype = in;
  bad_dtype["B"] = NDArray(DType::F64, {2, 3});
  EXPECT_EQ(error_of(f, bad_dtype), "parameter B: expected dtype f32, got f64");
  ArgMap unknown = in;
  unknown["Z"] = NDArray(DType::F32, {1});
  EXPECT_EQ(error_of(f, unknown), "function matmul has no parameter named Z");
  // Scalars.
  Var n("n");
  Buffer A("A", DType::F32, {n}), B("B", DType::F32, {n});
  Var i("i"), vi("vi");
  auto g = func("g", {sparam(n), bparam(A)}, {B}, {},
                {grid({{i, n}}, block("c", {{vi, IterKind::Spatial, n, i}}, st(B, {vi}, ld(A, {vi}))))});
  EXPECT_EQ(error_of(g, {{"A", NDArray(DType::F32, {3})}}), "missing input for parameter n");
  EXPECT_EQ(error_of(g, {{"A", NDArray(DType::F32, {3})}, {"n", NDArray(DType::F32, {})}}),
            "parameter n: expected dtype i32, got f32");
  // An integer scalar without a range is drawn from [1, 9] (0 would make A empty), and A is
  // sized by it.
  std::set<int64_t> seen;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    ArgMap gin = random_inputs(*g, seed);
    int64_t v = static_cast<int64_t>(gin.at("n").get(0));
    EXPECT_GE(v, 1);
    EXPECT_LE(v, 9);
    EXPECT_EQ(gin.at("A").shape(), std::vector<int64_t>{v});
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 9u);
  // A float scalar (or one with a declared range) is drawn like a buffer element.
  Var alpha("alpha", DType::F32);
  Buffer C("C", DType::F32, {4}), D("D", DType::F32, {4});
  Var j("j"), vj("vj");
  auto h =
      func("h", {sparam(alpha), bparam(C)}, {D}, {},
           {grid({{j, 4}}, block("d", {{vj, IterKind::Spatial, 4, j}}, st(D, {vj}, ld(C, {vj}) * alpha)))});
  ArgMap hin = random_inputs(*h, 1);
  ASSERT_EQ(hin.count("alpha"), 1u);
  EXPECT_EQ(hin.at("alpha").dtype(), DType::F32);
  EXPECT_EQ(hin.at("alpha").shape().size(), 0u);
  EXPECT_GE(hin.at("alpha").get(0), -1.0);
  EXPECT_LE(hin.at("alpha").get(0), 1.0);
  EXPECT_EQ(random_inputs(*h, 1).at("alpha").get(0), hin.at("alpha").get(0));
}

TEST(InterpStrict, InputsAreNeverModified) {
  auto f = matmul(4, 3, 2);
  ArgMap in = random_inputs(*f, 1);
  NDArray a0 = in["A"].copy();
  run_interp(*f, in);
  for (int q = 0; q < 8; ++q) EXPECT_EQ(in["A"].get(q), a0.get(q));
}

// IR built in memory may use a variable outside every binder of it (the parser refuses that
// in text). The interpreter kept the register of a variable after its scope ended, so such a
// use read the last value the variable had (a silently wrong second-order gradient was found
// that way, docs/autodiff.md, "Outsider round 7"); it is an error now.
TEST(InterpStrict, VariableUsedOutsideItsScope) {
  Buffer A("A", DType::F32, {i32(4)}), B("B", DType::F32, {i32(4)}), C("C", DType::F32, {i32(4)});
  Var i("i"), vi("vi"), j("j"), vj("vj");
  Stmt first =
      grid({{i, i32(4)}}, block("b", {{vi, IterKind::Spatial, i32(4), i}}, st(B, {vi}, ld(A, {vi}))));
  // Block c reads A at vi, the iter var of block b.
  Stmt second =
      grid({{j, i32(4)}}, block("c", {{vj, IterKind::Spatial, i32(4), j}}, st(C, {vj}, ld(A, {vi}))));
  auto f = func("f", {bparam(A)}, {B, C}, {}, {first, second});
  EXPECT_NE(error_of(f, random_inputs(*f, 1)).find("unbound variable vi"), std::string::npos)
      << error_of(f, random_inputs(*f, 1));
  // A let's variable after the let, and a loop var after its loop.
  Var t("t");
  Stmt let_then_use =
      make_seq({make_let_stmt(t, i32(2), st(B, {i32(0)}, ld(A, {t}))), st(C, {i32(0)}, ld(A, {t}))});
  auto g = func("g", {bparam(A)}, {B, C}, {}, {let_then_use});
  EXPECT_NE(error_of(g, random_inputs(*g, 1)).find("unbound variable t"), std::string::npos)
      << error_of(g, random_inputs(*g, 1));
}

}  // namespace tirc

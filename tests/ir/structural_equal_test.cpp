// Structural equality / diff / hash up to renaming (ir/structural_equal.h).
#include "ir/structural_equal.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/printer.h"

namespace tirc {
namespace {

Stmt root(std::vector<Buffer> allocs, Stmt body) {
  BlockNode b;
  b.name = "root";
  b.allocs = std::move(allocs);
  b.body = std::move(body);
  return make_block_realize({}, Expr(), make_block(std::move(b)));
}

Param bparam(Buffer b) {
  Param p;
  p.buffer = std::move(b);
  return p;
}

// matmul with fresh variables and buffers whose names carry `suffix`; `variant` perturbs
// one detail so that the tests can check the reported path.
FunctionNode matmul(const std::string& suffix, int variant = 0) {
  Buffer A("A" + suffix, DType::F32, {128, 64}), B("B" + suffix, DType::F32, {64, 32}),
      C("C" + suffix, DType::F32, {128, 32});
  Var i("i" + suffix), j("j" + suffix), k("k" + suffix), vi("vi" + suffix), vj("vj" + suffix),
      vk("vk" + suffix);
  BlockNode blk;
  blk.name = "C";
  blk.iter_vars = {{vi, IterKind::Spatial, 128}, {vj, IterKind::Spatial, 32}, {vk, IterKind::Reduce, 64}};
  blk.reads = {{A, {{vi, {}}, {variant == 1 ? vj : vk, {}}}}, {B, {{vk, {}}, {vj, {}}}}};
  blk.writes = {{C, {{vi, {}}, {vj, {}}}}};
  blk.init = make_store(C, {vi, vj}, make_float(variant == 2 ? -0.0 : 0.0));
  blk.body =
      make_store(C, {vi, vj}, make_load(C, {vi, vj}) + make_load(A, {vi, vk}) * make_load(B, {vk, vj}));
  Stmt br = make_block_realize({i, j, variant == 3 ? i : k}, Expr(), make_block(std::move(blk)));
  Stmt loops = make_for(i, 0, 128, ForKind::Serial,
                        make_for(j, 0, 32, ForKind::Serial, make_for(k, 0, 64, ForKind::Serial, br)));
  FunctionNode f;
  f.name = "matmul";
  f.params = {bparam(A), bparam(B)};
  f.outputs = {C};
  f.body = root({}, loops);
  return f;
}

TEST(StructuralEqual, EqualUnderRenaming) {
  FunctionNode a = matmul(""), b = matmul("_x");
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_diff(a, b), std::nullopt);
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, DiffPaths) {
  FunctionNode a = matmul("");
  EXPECT_EQ(structural_diff(a, matmul("", 1)).value_or(""),
            "func matmul/body/for i/for j/for k/block C/reads[0]/A[1]: vk vs vj");
  EXPECT_EQ(structural_diff(a, matmul("", 2)).value_or(""),
            "func matmul/body/for i/for j/for k/block C/init/store C/value: 0.0 vs -0.0");
  EXPECT_EQ(structural_diff(a, matmul("", 3)).value_or(""),
            "func matmul/body/for i/for j/for k/block C/bindings[2]: k vs i");
  EXPECT_FALSE(structural_equal(a, matmul("", 1)));
}

TEST(StructuralEqual, FreeVariableConsistency) {
  Var i("i"), j("j"), p("p"), q("q");
  EXPECT_TRUE(structural_equal(i + j, p + q));
  EXPECT_FALSE(structural_equal(i + j, p + p));
  EXPECT_FALSE(structural_equal(i + i, p + q));
  EXPECT_TRUE(structural_equal(i + i, q + q));
  EXPECT_EQ(structural_hash(i + i), structural_hash(q + q));
  EXPECT_NE(structural_hash(i + j), structural_hash(i + i));
}

TEST(StructuralEqual, BoundVariablesSwapped) {
  Var x("x"), y("y"), a("a"), b("b");
  Buffer A("A", DType::F32, {4, 4});
  auto nest = [&](Var o, Var in, Expr i0, Expr i1) {
    return make_for(o, 0, 4, ForKind::Serial,
                    make_for(in, 0, 4, ForKind::Serial, make_store(A, {i0, i1}, make_float(1))));
  };
  EXPECT_TRUE(structural_equal(nest(x, y, x, y), nest(a, b, a, b)));
  EXPECT_FALSE(structural_equal(nest(x, y, x, y), nest(a, b, b, a)));
  // Let binders.
  EXPECT_TRUE(structural_equal(make_let(x, 1, x * 2), make_let(a, 1, a * 2)));
  EXPECT_FALSE(structural_equal(make_let(x, 1, x * 2), make_let(a, 1, b * 2)));
  // A binder shadows the free mapping of the same variable inside its scope only.
  EXPECT_FALSE(structural_equal(x + make_let(x, 1, x), a + make_let(b, 1, a)));
  EXPECT_TRUE(structural_equal(x + make_let(x, 1, x) + x, a + make_let(b, 1, b) + a));
}

TEST(StructuralEqual, EveryExprKind) {
  Var x("x", DType::F32), y("y", DType::F32), c("c", DType::Bool), n("n");
  Buffer A("A", DType::F32, {8}), B("B", DType::F32, {8});
  std::vector<std::pair<Expr, Expr>> different = {
      {make_int(1), make_int(2)},
      {make_int(1), make_int(1, DType::I64)},
      {make_float(1.0), make_float(1.0, DType::F64)},
      {make_float(0.0), make_float(-0.0)},
      {make_load(A, {n}), make_load(B, {n})},
      {x + y, x - y},
      {min(x, y), max(x, y)},
      {make_unary(UnOp::Neg, x), x},
      {make_cast(DType::F64, x), make_cast(DType::F16, x)},
      {make_call(Intrinsic::Exp, {x}), make_call(Intrinsic::Log, {x})},
      {make_select(c, x, y), make_if_then_else(c, x, y)},
      {make_select(c, x, y), make_select(c, y, x)},
      {make_let(Var("t", DType::F32), x, x), make_let(Var("t", DType::F32), y, x)},
      {make_buffer_ptr(A, {}), make_buffer_ptr(A, {n})},
  };
  // An anchor statement first maps x, y, c, n, A, B to themselves (free variables are
  // mapped on first sight).
  Stmt anchor = make_evaluate("anchor", {x, y, c, n, make_buffer_ptr(A, {}), make_buffer_ptr(B, {})});
  for (auto& [a, b] : different) {
    Stmt sa = make_seq({anchor, make_evaluate("f", {a})}), sb = make_seq({anchor, make_evaluate("f", {b})});
    EXPECT_FALSE(structural_equal(sa, sb)) << print_expr(a) << " vs " << print_expr(b);
    EXPECT_TRUE(structural_equal(sa, sa)) << print_expr(a);
  }
  EXPECT_TRUE(structural_equal(make_float(std::nan("")), make_float(-std::nan(""))));
  EXPECT_EQ(structural_hash(make_float(std::nan(""))), structural_hash(make_float(-std::nan(""))));
}

TEST(StructuralEqual, SeqNestingIgnored) {
  Buffer A("A", DType::F32, {8});
  Stmt s1 = make_store(A, {0}, make_float(1)), s2 = make_store(A, {1}, make_float(2)),
       s3 = make_store(A, {2}, make_float(3));
  auto seq = [](std::vector<Stmt> v) {
    auto n = std::make_shared<SeqNode>();
    n->stmts = std::move(v);
    return Stmt(n);
  };
  EXPECT_TRUE(structural_equal(seq({s1, seq({s2, s3})}), seq({s1, s2, s3})));
  EXPECT_FALSE(structural_equal(seq({s1, s2}), seq({s1, s2, s3})));
}

// A function with every statement kind; `variant` v != 0 changes exactly one detail.
FunctionNode all_stmts(int v) {
  Var n("n"), i("i"), j("j"), vi("vi"), vk("vk"), t("t", DType::F32);
  Buffer A("A", DType::F32, {n}), B("B", DType::F32, {n}),
      T("T", DType::F32, {make_int(v == 1 ? 8 : 4)}, v == 2 ? "shared" : "local");
  BlockNode blk;
  blk.name = v == 3 ? "D" : "C";
  blk.iter_vars = {{vi, IterKind::Spatial, n}, {vk, v == 4 ? IterKind::Scan : IterKind::Reduce, 4}};
  blk.allocs = {T};
  blk.reads = {{A, {{vi, {}}}}};
  blk.writes = {{B, {{vi, v == 5 ? vi + 1 : Expr()}}}};
  if (v == 6) blk.annotations["k"] = "1";
  if (v != 7) blk.init = make_store(B, {vi}, make_float(0.0));
  Stmt store = make_store(B, {vi}, make_load(B, {vi}) + t);
  Stmt body =
      make_seq({make_store(T, {0}, make_load(A, {vi})),
                make_if(make_binary(BinOp::LT, vk, 2),
                        make_evaluate(v == 8 ? "g" : "f", {make_buffer_ptr(T, {})}), v == 9 ? Stmt() : store),
                make_let_stmt(t, v == 10 ? make_float(2.0) : make_float(1.0), store)});
  blk.body = body;
  Expr pred = v == 11 ? make_binary(BinOp::LT, i, n) : Expr();
  Stmt br = make_block_realize({i, v == 12 ? i : j}, pred, make_block(std::move(blk)));
  Stmt loops = make_for(i, 0, n, v == 13 ? ForKind::Parallel : ForKind::Serial,
                        make_for(j, 0, 4, ForKind::ThreadBinding, br, v == 14 ? "threadIdx.y" : "threadIdx.x",
                                 v == 15 ? Annotations{{"a", "1"}} : Annotations{}));
  FunctionNode f;
  f.name = "g";
  Param pn;
  pn.var = n;
  if (v == 16) pn.range = ValueRange{1, 4};
  f.params = {pn, bparam(A)};
  f.outputs = {B};
  f.body = root({}, loops);
  return f;
}

TEST(StructuralEqual, EveryStmtKind) {
  FunctionNode base = all_stmts(0);
  EXPECT_EQ(structural_diff(base, all_stmts(0)), std::nullopt);
  EXPECT_EQ(structural_hash(base), structural_hash(all_stmts(0)));
  for (int v = 1; v <= 16; ++v) {
    auto d = structural_diff(base, all_stmts(v));
    EXPECT_TRUE(d.has_value()) << "variant " << v;
    EXPECT_FALSE(structural_equal(all_stmts(v), base)) << "variant " << v;
  }
  EXPECT_EQ(structural_diff(base, all_stmts(2)).value_or(""),
            "func g/body/for i/for j/block C/T: scope local vs shared");
  EXPECT_EQ(structural_diff(base, all_stmts(9)).value_or(""),
            "func g/body/for i/for j/block C/if: else present vs absent");
  EXPECT_EQ(structural_diff(base, all_stmts(10)).value_or(""),
            "func g/body/for i/for j/block C/let t/value: 1.0 vs 2.0");
}

TEST(StructuralEqual, Modules) {
  Module a, b;
  a.add_func(std::make_shared<FunctionNode>(matmul("")));
  b.add_func(std::make_shared<FunctionNode>(matmul("2")));
  EXPECT_TRUE(structural_equal(a, b));
  ScheduleItem s;
  s.func = "matmul";
  ScheduleInstr in;
  in.primitive = "parallel";
  ScheduleArg arg;
  arg.kind = ScheduleArg::Ident;
  arg.text = "i";
  in.args = {arg};
  s.instrs = {in};
  a.schedules.push_back(s);
  a.order.emplace_back(1, 0);
  EXPECT_EQ(structural_diff(a, b).value_or(""), ": 1 vs 0 schedules");
  s.instrs[0].args[0].text = "j";
  b.schedules.push_back(s);
  b.order.emplace_back(1, 0);
  EXPECT_EQ(structural_diff(a, b).value_or(""), "schedule matmul/[0] parallel/args[0]: argument differs");
}

}  // namespace
}  // namespace tirc

// Exact-text tests of the canonical printer (ir/printer.h) on IR built by hand.
#include "ir/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tirc {
namespace {

Stmt root(std::vector<Buffer> allocs, Stmt body, std::string name = "root") {
  BlockNode b;
  b.name = std::move(name);
  b.allocs = std::move(allocs);
  b.body = std::move(body);
  return make_block_realize({}, Expr(), make_block(std::move(b)));
}

Function make_func(std::string name, std::vector<Param> params, std::vector<Buffer> outs, Stmt body) {
  auto f = std::make_shared<FunctionNode>();
  f->name = std::move(name);
  f->params = std::move(params);
  f->outputs = std::move(outs);
  f->body = std::move(body);
  return f;
}

ScheduleArg sarg(ScheduleArg::Kind k, std::string text = "") {
  ScheduleArg a;
  a.kind = k;
  a.text = std::move(text);
  return a;
}

Param buf_param(Buffer b) {
  Param p;
  p.buffer = std::move(b);
  return p;
}

TEST(Printer, Matmul) {
  Buffer A("A", DType::F32, {128, 64}), B("B", DType::F32, {64, 32}), C("C", DType::F32, {128, 32});
  Var i("i"), j("j"), k("k"), vi("vi"), vj("vj"), vk("vk");
  BlockNode blk;
  blk.name = "C";
  blk.iter_vars = {{vi, IterKind::Spatial, 128}, {vj, IterKind::Spatial, 32}, {vk, IterKind::Reduce, 64}};
  blk.reads = {{A, {{vi, {}}, {vk, {}}}}, {B, {{vk, {}}, {vj, {}}}}};
  blk.writes = {{C, {{vi, {}}, {vj, {}}}}};
  blk.init = make_store(C, {vi, vj}, make_float(0.0));
  blk.body =
      make_store(C, {vi, vj}, make_load(C, {vi, vj}) + make_load(A, {vi, vk}) * make_load(B, {vk, vj}));
  Stmt br = make_block_realize({i, j, k}, Expr(), make_block(std::move(blk)));
  Stmt loops = make_for(i, 0, 128, ForKind::Serial,
                        make_for(j, 0, 32, ForKind::Serial, make_for(k, 0, 64, ForKind::Serial, br)));
  Module m;
  m.add_func(make_func("matmul", {buf_param(A), buf_param(B)}, {C}, root({}, loops)));
  EXPECT_EQ(print_module(m),
            "func matmul(A: f32[128, 64], B: f32[64, 32]) -> (C: f32[128, 32]) {\n"
            "  for i in serial(128) {\n"
            "    for j in serial(32) {\n"
            "      for k in serial(64) {\n"
            "        block C(vi: spatial(128) = i, vj: spatial(32) = j, vk: reduce(64) = k) {\n"
            "          reads A[vi, vk], B[vk, vj]\n"
            "          writes C[vi, vj]\n"
            "          init {\n"
            "            C[vi, vj] = 0.0\n"
            "          }\n"
            "          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(Printer, Precedence) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(print_expr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(print_expr((a - b) - c), "a - b - c");
  EXPECT_EQ(print_expr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(print_expr(a + b * c), "a + b * c");
  EXPECT_EQ(print_expr(floordiv(a, b * c)), "a // (b * c)");
  EXPECT_EQ(print_expr(floormod(a * b, c)), "a * b % c");
  EXPECT_EQ(print_expr(-(a + b)), "-(a + b)");
  EXPECT_EQ(print_expr(-a * b), "-a * b");
  EXPECT_EQ(print_expr(-(-a)), "-(-a)");
  EXPECT_EQ(print_expr(min(a, b + 1)), "min(a, b + 1)");
  Expr lt = make_binary(BinOp::LT, a, b), lt2 = make_binary(BinOp::LT, b, c);
  EXPECT_EQ(print_expr(make_binary(BinOp::Or, make_binary(BinOp::And, lt, lt2), lt)),
            "a < b && b < c || a < b");
  EXPECT_EQ(print_expr(make_binary(BinOp::And, lt, make_binary(BinOp::Or, lt2, lt))),
            "a < b && (b < c || a < b)");
  EXPECT_EQ(print_expr(make_binary(BinOp::EQ, lt, lt2)), "(a < b) == (b < c)");
  EXPECT_EQ(print_expr(make_unary(UnOp::Not, lt)), "!(a < b)");
  EXPECT_EQ(print_expr(a - make_int(-3)), "a - -3");
  EXPECT_EQ(print_expr(make_int(-3) * a), "-3 * a");
  EXPECT_EQ(print_expr(-make_int(3)), "-i32(3)");
  EXPECT_EQ(print_expr(-(-make_int(3))), "-(-i32(3))");
}

TEST(Printer, FloatLiterals) {
  EXPECT_EQ(print_float_literal(1.0, DType::F32), "1.0");
  EXPECT_EQ(print_float_literal(static_cast<float>(0.1), DType::F32), "0.1");
  EXPECT_EQ(print_float_literal(0.1, DType::F64), "0.1");
  EXPECT_EQ(print_float_literal(1e-7f, DType::F32), "1e-07");
  EXPECT_EQ(print_float_literal(2.5e38f, DType::F32), "2.5e+38");
  EXPECT_EQ(print_float_literal(-0.0, DType::F32), "-0.0");
  EXPECT_EQ(print_float_literal(std::numeric_limits<double>::infinity(), DType::F32), "inf");
  EXPECT_EQ(print_float_literal(-std::numeric_limits<double>::infinity(), DType::F64), "-inf");
  EXPECT_EQ(print_float_literal(std::nan(""), DType::F64), "nan");
  EXPECT_EQ(print_float_literal(std::numeric_limits<float>::denorm_min(), DType::F32), "1e-45");
  EXPECT_EQ(print_float_literal(std::numeric_limits<double>::denorm_min(), DType::F64), "5e-324");
  EXPECT_EQ(print_float_literal(std::numeric_limits<float>::max(), DType::F32), "3.4028235e+38");
  // 16-bit formats: the shortest text that rounds back in that format.
  EXPECT_EQ(print_float_literal(0.0999755859375, DType::F16), "0.1");
  EXPECT_EQ(print_float_literal(65504.0, DType::F16), "6.55e+04");
  EXPECT_EQ(print_float_literal(5.960464477539063e-08, DType::F16), "6e-08");
  EXPECT_EQ(print_float_literal(-2.0, DType::BF16), "-2.0");
  EXPECT_EQ(print_float_literal(3.3895313892515355e+38, DType::BF16), "3.39e+38");
}

TEST(Printer, LiteralTyping) {
  Var x("x", DType::F64), n("n", DType::I64), k("k");
  // A literal next to a typed operand adopts its dtype: printed bare.
  EXPECT_EQ(print_expr(x + make_float(1.5, DType::F64)), "x + 1.5");
  EXPECT_EQ(print_expr(n * make_int(4, DType::I64)), "n * 4");
  // Alone, or among literals only, a non-default dtype needs a cast.
  EXPECT_EQ(print_expr(make_int(5, DType::I64)), "i64(5)");
  EXPECT_EQ(print_expr(make_float(0.5, DType::F64)), "f64(0.5)");
  EXPECT_EQ(print_expr(make_int(5)), "5");
  EXPECT_EQ(print_expr(make_binary(BinOp::LT, make_int(1, DType::I64), make_int(2, DType::I64))),
            "i64(1) < i64(2)");
  EXPECT_EQ(print_expr(make_bool(true)), "true");
  EXPECT_EQ(print_expr(make_bool(false)), "false");
  EXPECT_EQ(print_expr(make_int(-7, DType::I64)), "i64(-7)");
  // A real cast of a literal keeps the inner literal typed, so that it is not folded.
  EXPECT_EQ(print_expr(make_cast(DType::F32, make_int(3))), "f32(i32(3))");
  EXPECT_EQ(print_expr(make_cast(DType::F32, k)), "f32(k)");
  EXPECT_EQ(print_expr(make_cast(DType::F32, make_int(1) + make_int(2))), "f32(i32(1) + i32(2))");
  // Literal-only calls are typed by their context as a whole.
  EXPECT_EQ(print_expr(x * make_call(Intrinsic::Exp, {make_float(1.0, DType::F64)})), "x * exp(1.0)");
  EXPECT_EQ(print_expr(x * max(make_float(1.0, DType::F64), make_float(2.0, DType::F64))),
            "x * max(1.0, 2.0)");
  // Store context types the whole literal-only value.
  Buffer D("D", DType::F64, {4});
  EXPECT_EQ(print_stmt(make_store(D, {0}, make_float(1.0, DType::F64) + make_float(2.0, DType::F64))),
            "D[0] = 1.0 + 2.0\n");
  EXPECT_EQ(print_stmt(make_store(D, {make_int(0, DType::I64)}, make_float(1.0, DType::F64))),
            "D[i64(0)] = 1.0\n");
  // Unary operands and call arguments have no context.
  EXPECT_EQ(print_expr(make_call(Intrinsic::Exp, {make_float(1.0, DType::F64)})), "exp(f64(1.0))");
  EXPECT_EQ(print_expr(make_select(make_bool(true), x, make_float(0.0, DType::F64))), "select(true, x, 0.0)");
  EXPECT_EQ(print_expr(min(make_float(1.0, DType::F64), make_float(2.0, DType::F64))),
            "min(f64(1.0), f64(2.0))");
}

TEST(Printer, NamesAreMadeUnique) {
  Var i1("i"), i2("i"), f("for");
  Buffer A("A", DType::F32, {4, 4});
  Stmt inner = make_store(A, {i1, i2}, make_float(1.0));
  Stmt s = make_for(i1, 0, 4, ForKind::Serial, make_for(i2, 0, 4, ForKind::Serial, inner));
  EXPECT_EQ(print_stmt(s),
            "for i in serial(4) {\n"
            "  for i_1 in serial(4) {\n"
            "    A[i, i_1] = 1.0\n"
            "  }\n"
            "}\n");
  // Sibling scopes reuse the name; reserved words are renamed.
  Stmt sib = make_seq({make_for(i1, 0, 4, ForKind::Serial, make_store(A, {i1, 0}, make_float(1.0))),
                       make_for(i2, 0, 4, ForKind::Serial, make_store(A, {i2, 0}, make_float(2.0))),
                       make_for(f, 0, 4, ForKind::Serial, make_store(A, {f, 0}, make_float(2.0)))});
  EXPECT_EQ(print_stmt(sib),
            "for i in serial(4) {\n  A[i, 0] = 1.0\n}\n"
            "for i in serial(4) {\n  A[i, 0] = 2.0\n}\n"
            "for for_1 in serial(4) {\n  A[for_1, 0] = 2.0\n}\n");
  // A let scopes over the rest of its statement list.
  Var x("x"), x2("x");
  Stmt lets = make_let_stmt(x, 1, make_let_stmt(x2, x + 1, make_store(A, {x, x2}, make_float(0.5))));
  EXPECT_EQ(print_stmt(lets), "let x = 1\nlet x_1 = x + 1\nA[x, x_1] = 0.5\n");
  EXPECT_EQ(print_expr(make_let(x, 2, x * make_let(x2, 3, x2 + x))),
            "(let x = 2 in x * (let x_1 = 3 in x_1 + x))");
}

TEST(Printer, LoopsAllocsAndSchedules) {
  Var i("i"), n("n");
  Buffer A("A", DType::F32, {n}), T("T", DType::F16, {8}, "shared");
  Annotations ann{{"pragma", "1"}};
  Stmt body = make_seq({
      make_for(i, 2, n - 2, ForKind::Serial, make_store(A, {i}, make_float(0.0))),
      make_for(i, 0, 8, ForKind::ThreadBinding, make_store(T, {i}, make_float(1.0, DType::F16)),
               "threadIdx.x"),
      make_for(i, 0, 4, ForKind::Unrolled,
               make_evaluate("f", {make_buffer_ptr(A, {}), make_buffer_ptr(T, {i})}), "", ann),
  });
  Param pn;
  pn.var = n;
  pn.range = ValueRange{1, 8};
  Param pa = buf_param(Buffer("X", DType::F32, {n}));
  pa.range = ValueRange{0.5, 4};
  Module m;
  m.add_func(make_func("g", {pn, pa}, {A}, root({T}, body)));
  ScheduleItem s;
  s.func = "g";
  ScheduleInstr in;
  in.results = {"a", "b"};
  in.primitive = "split";
  ScheduleArg id = sarg(ScheduleArg::Ident, "i"), w = sarg(ScheduleArg::Wildcard),
              four = sarg(ScheduleArg::Int);
  four.int_value = 4;
  ScheduleArg lst = sarg(ScheduleArg::List);
  lst.list = {w, four};
  ScheduleArg kw = sarg(ScheduleArg::Keyword, "factor");
  ScheduleArg fl = sarg(ScheduleArg::Float);
  fl.float_value = 0.5;
  kw.list = {fl};
  ScheduleArg str = sarg(ScheduleArg::String, "C");
  in.args = {id, lst, kw, str};
  s.instrs = {in};
  m.schedules.push_back(s);
  m.order.emplace_back(1, 0);
  EXPECT_EQ(print_module(m),
            "func g(n: i32 in [1, 8], X: f32[n] in [0.5, 4.0]) -> (A: f32[n]) {\n"
            "  alloc T: f16[8] scope \"shared\"\n"
            "  for i in serial(2, n) {\n"
            "    A[i] = 0.0\n"
            "  }\n"
            "  for i in thread_binding(8, \"threadIdx.x\") {\n"
            "    T[i] = 1.0\n"
            "  }\n"
            "  for i in unroll(4) annotate(\"pragma\", 1) {\n"
            "    call_extern(\"f\", A.data, T.ptr(i))\n"
            "  }\n"
            "}\n"
            "\n"
            "schedule g {\n"
            "  a, b = split(i, [_, 4], factor=0.5, \"C\")\n"
            "}\n");
}

}  // namespace
}  // namespace tirc

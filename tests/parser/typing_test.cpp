// Typing rules of LANGUAGE.md "Types" / "Expressions" and the syntax decisions of HELPERS.md.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

// Parses `func f(...) { for i in serial(4) { STORE } }` and returns the stored value.
const char* kHeader =
    "func f(A: f32[4], D: f64[4], H: f16[4], I: i32[4], L: i64[4], U: u8[4], n: i32, m: i64) -> "
    "(B: f32[4], E: f64[4], G: f16[4], J: i32[4], K: i64[4], V: u8[4], Q: bool[4]) {\n";

Module parse_body(const std::string& body) {
  return parse_module(std::string(kHeader) + body + "\n}\n", "t.tir");
}

Stmt first_store_stmt(const Stmt& s) {
  if (s.as<StoreNode>()) return s;
  if (auto* f = s.as<ForNode>()) return first_store_stmt(f->body);
  if (auto* q = s.as<SeqNode>()) return q->stmts.empty() ? Stmt() : first_store_stmt(q->stmts[0]);
  if (auto* l = s.as<LetStmtNode>()) return first_store_stmt(l->body);
  if (auto* br = s.as<BlockRealizeNode>()) return first_store_stmt(br->block->body);
  return Stmt();
}

Expr stored(const std::string& store) {
  Module m = parse_body("  for i in serial(4) {\n    " + store + "\n  }");
  Stmt s = first_store_stmt(m.funcs[0]->body);
  EXPECT_TRUE(s.defined());
  return s.as<StoreNode>()->value;
}

TEST(ParserTyping, IntLiteralAdoptsFloatOperand) {
  Expr e = stored("B[i] = A[i] + 1");
  auto* b = e.as<BinaryNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->b.kind(), ExprKind::FloatImm);
  EXPECT_EQ(b->b.dtype(), DType::F32);
  // Literal on the left adopts too.
  e = stored("E[i] = 2 * D[i]");
  EXPECT_EQ(e.as<BinaryNode>()->a.dtype(), DType::F64);
  EXPECT_EQ(e.as<BinaryNode>()->a.kind(), ExprKind::FloatImm);
}

TEST(ParserTyping, IntLiteralAdoptsIntOperand) {
  Expr e = stored("K[i] = L[i] + 1");
  EXPECT_EQ(e.dtype(), DType::I64);
  EXPECT_EQ(e.as<BinaryNode>()->b.dtype(), DType::I64);
  e = stored("V[i] = U[i] * 3");
  EXPECT_EQ(e.as<BinaryNode>()->b.dtype(), DType::U8);
}

TEST(ParserTyping, LiteralOnlyTypedByStoreTarget) {
  Expr e = stored("E[i] = 1 / 2");
  auto* b = e.as<BinaryNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, BinOp::Div);
  EXPECT_EQ(b->a.dtype(), DType::F64);
  EXPECT_EQ(b->b.dtype(), DType::F64);
  e = stored("J[i] = 7 // 2 + 1");
  EXPECT_EQ(e.dtype(), DType::I32);
  e = stored("K[i] = 7 % 2");
  EXPECT_EQ(e.dtype(), DType::I64);
}

TEST(ParserTyping, LiteralOnlyTypedByOtherOperand) {
  Expr e = stored("E[i] = D[i] * (1 + 2)");
  auto* b = e.as<BinaryNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->b.dtype(), DType::F64);
  EXPECT_EQ(b->b.as<BinaryNode>()->a.kind(), ExprKind::FloatImm);
}

TEST(ParserTyping, LiteralAloneDefaults) {
  Module m = parse_body("  let x = 1\n  let y = 2.5\n  let z = 1 + 2.0\n  J[0] = x");
  auto* root = m.funcs[0]->body.as<BlockRealizeNode>();
  auto* l1 = root->block->body.as<LetStmtNode>();
  ASSERT_NE(l1, nullptr);
  EXPECT_EQ(l1->var.dtype(), DType::I32);
  auto* l2 = l1->body.as<LetStmtNode>();
  ASSERT_NE(l2, nullptr);
  EXPECT_EQ(l2->var.dtype(), DType::F32);
  auto* l3 = l2->body.as<LetStmtNode>();
  ASSERT_NE(l3, nullptr);
  EXPECT_EQ(l3->var.dtype(), DType::F32);
  EXPECT_EQ(l3->value.as<BinaryNode>()->a.kind(), ExprKind::FloatImm);
}

TEST(ParserTyping, NegativeLiteralsFold) {
  Expr e = stored("B[i] = -1.5");
  double v;
  ASSERT_TRUE(is_const_float(e, &v));
  EXPECT_EQ(v, -1.5);
  e = stored("J[i] = -2147483648");
  int64_t k;
  ASSERT_TRUE(is_const_int(e, &k));
  EXPECT_EQ(k, -2147483648LL);
  e = stored("B[i] = -inf");
  ASSERT_TRUE(is_const_float(e, &v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  e = stored("B[i] = nan");
  ASSERT_TRUE(is_const_float(e, &v));
  EXPECT_TRUE(std::isnan(v));
  // Negation of a non-literal stays a Unary node.
  e = stored("B[i] = -A[i]");
  ASSERT_NE(e.as<UnaryNode>(), nullptr);
}

TEST(ParserTyping, FloatLiteralsRoundToTheirDtype) {
  double v;
  ASSERT_TRUE(is_const_float(stored("B[i] = 0.1"), &v));
  EXPECT_EQ(v, static_cast<double>(0.1f));
  ASSERT_TRUE(is_const_float(stored("E[i] = 0.1"), &v));
  EXPECT_EQ(v, 0.1);
  ASSERT_TRUE(is_const_float(stored("G[i] = 0.1"), &v));
  EXPECT_EQ(v, static_cast<double>(static_cast<_Float16>(0.1)));
  ASSERT_TRUE(is_const_float(stored("B[i] = 1e-3"), &v));
  EXPECT_EQ(v, static_cast<double>(1e-3f));
  ASSERT_TRUE(is_const_float(stored("B[i] = 2.5e+4"), &v));
  EXPECT_EQ(v, 25000.0);
}

TEST(ParserTyping, CastsAndTypedLiterals) {
  Expr e = stored("B[i] = f32(I[i])");
  auto* c = e.as<CastNode>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype, DType::F32);
  EXPECT_EQ(c->value.dtype(), DType::I32);
  // A cast of a literal-only expression is a typed literal.
  e = stored("K[i] = i64(5)");
  EXPECT_EQ(e.kind(), ExprKind::IntImm);
  EXPECT_EQ(e.dtype(), DType::I64);
  e = stored("E[i] = f64(1.5)");
  EXPECT_EQ(e.kind(), ExprKind::FloatImm);
  EXPECT_EQ(e.dtype(), DType::F64);
  e = stored("J[i] = i32(2.5)");
  ASSERT_NE(e.as<CastNode>(), nullptr);
  EXPECT_EQ(e.as<CastNode>()->value.dtype(), DType::F32);
  e = stored("Q[i] = bool(I[i])");
  EXPECT_EQ(e.dtype(), DType::Bool);
}

TEST(ParserTyping, MinMaxSelectIntrinsics) {
  Expr e = stored("B[i] = min(A[i], 0)");
  auto* b = e.as<BinaryNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, BinOp::Min);
  EXPECT_EQ(b->b.dtype(), DType::F32);
  e = stored("B[i] = select(A[i] > 0, A[i], 0)");
  ASSERT_NE(e.as<SelectNode>(), nullptr);
  EXPECT_EQ(e.as<SelectNode>()->f.dtype(), DType::F32);
  e = stored("B[i] = if_then_else(i < 3, A[i + 1], 0.0)");
  EXPECT_EQ(e.kind(), ExprKind::IfThenElse);
  e = stored("B[i] = pow(A[i], 2)");
  auto* call = e.as<CallNode>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->op, Intrinsic::Pow);
  EXPECT_EQ(call->args[1].dtype(), DType::F32);
  e = stored("J[i] = truncmod(I[i], 3)");
  EXPECT_EQ(e.as<CallNode>()->op, Intrinsic::TruncMod);
  e = stored("J[i] = abs(I[i])");
  EXPECT_EQ(e.as<CallNode>()->op, Intrinsic::Abs);
  for (const char* f :
       {"exp", "log",  "log2",    "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",   "cos",
        "tan", "tanh", "sigmoid", "erf",   "abs",   "floor", "ceil", "round", "trunc", "sign"}) {
    e = stored(std::string("B[i] = ") + f + "(A[i])");
    ASSERT_NE(e.as<CallNode>(), nullptr) << f;
    EXPECT_STREQ(intrinsic_name(e.as<CallNode>()->op), f);
  }
}

TEST(ParserTyping, MinMaxValueFold) {
  double v;
  ASSERT_TRUE(is_const_float(stored("B[i] = max_value(f32)"), &v));
  EXPECT_EQ(v, static_cast<double>(FLT_MAX));
  ASSERT_TRUE(is_const_float(stored("E[i] = min_value(f64)"), &v));
  EXPECT_EQ(v, -DBL_MAX);
  int64_t k;
  ASSERT_TRUE(is_const_int(stored("J[i] = min_value(i32)"), &k));
  EXPECT_EQ(k, INT32_MIN);
  Expr e = stored("K[i] = max_value(i64)");
  ASSERT_TRUE(is_const_int(e, &k));
  EXPECT_EQ(k, INT64_MAX);
  EXPECT_EQ(e.dtype(), DType::I64);
}

TEST(ParserTyping, Precedence) {
  // a || b && c < d + e * -f  ==  a || (b && (c < (d + (e * (-f)))))
  Expr e = stored("Q[i] = i == 0 || i > 1 && A[i] < A[i] + A[i] * -A[i]");
  auto* o = e.as<BinaryNode>();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->op, BinOp::Or);
  auto* a = o->b.as<BinaryNode>();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->op, BinOp::And);
  auto* lt = a->b.as<BinaryNode>();
  EXPECT_EQ(lt->op, BinOp::LT);
  auto* add = lt->b.as<BinaryNode>();
  EXPECT_EQ(add->op, BinOp::Add);
  auto* mul = add->b.as<BinaryNode>();
  EXPECT_EQ(mul->op, BinOp::Mul);
  EXPECT_EQ(mul->b.kind(), ExprKind::Unary);
  // Left associativity.
  e = stored("J[i] = 10 - I[i] - 3");
  auto* s = e.as<BinaryNode>();
  EXPECT_EQ(s->op, BinOp::Sub);
  EXPECT_NE(s->a.as<BinaryNode>(), nullptr);
  e = stored("J[i] = I[i] // 2 % 3");
  EXPECT_EQ(e.as<BinaryNode>()->op, BinOp::FloorMod);
  // ! binds tighter than &&.
  e = stored("Q[i] = !(i < 2) && i > 0");
  EXPECT_EQ(e.as<BinaryNode>()->op, BinOp::And);
  EXPECT_EQ(e.as<BinaryNode>()->a.kind(), ExprKind::Unary);
}

TEST(ParserTyping, CompoundAssignSugar) {
  struct C {
    const char* src;
    BinOp op;
  } cases[] = {{"B[i] += A[i]", BinOp::Add},
               {"B[i] -= A[i]", BinOp::Sub},
               {"B[i] *= 2", BinOp::Mul},
               {"B[i] max= A[i]", BinOp::Max},
               {"B[i] min= 0", BinOp::Min}};
  for (auto& c : cases) {
    Expr e = stored(c.src);
    auto* b = e.as<BinaryNode>();
    ASSERT_NE(b, nullptr) << c.src;
    EXPECT_EQ(b->op, c.op) << c.src;
    auto* ld = b->a.as<LoadNode>();
    ASSERT_NE(ld, nullptr) << c.src;
    EXPECT_EQ(ld->buffer->name, "B");
    EXPECT_EQ(b->b.dtype(), DType::F32);
  }
}

TEST(ParserTyping, ScalarParamsAndI64Indices) {
  Expr e = stored("J[i] = I[i] * n");
  EXPECT_EQ(e.as<BinaryNode>()->b.kind(), ExprKind::Var);
  e = stored("K[i] = L[m - 1]");
  auto* ld = e.as<LoadNode>();
  ASSERT_NE(ld, nullptr);
  EXPECT_EQ(ld->indices[0].dtype(), DType::I64);
  EXPECT_EQ(ld->indices[0].as<BinaryNode>()->b.dtype(), DType::I64);
}

TEST(ParserTyping, ExpressionLet) {
  Expr e = stored("B[i] = (let t = A[i] * 2 in t + t)");
  auto* l = e.as<LetNode>();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->var.name(), "t");
  EXPECT_EQ(l->var.dtype(), DType::F32);
  auto* b = l->body.as<BinaryNode>();
  EXPECT_TRUE(b->a.same_as(l->var));
}

TEST(ParserSyntax, LoopsAndAnnotations) {
  Module m = parse_body(
      "  for i in serial(1, 3) annotate(\"pragma\", 1) annotate(\"s\", \"x\") {\n"
      "    for t in thread_binding(4, \"threadIdx.x\") { J[t] = 0 }\n"
      "    for p in parallel(4) { for v in vectorized(4) { for u in unroll(2) { J[u] = 0 } } }\n"
      "    for t in thread_binding(1, 3, \"blockIdx.y\") { J[t] = 0 }\n"
      "  };");
  auto* root = m.funcs[0]->body.as<BlockRealizeNode>();
  auto* f = root->block->body.as<ForNode>();
  ASSERT_NE(f, nullptr);
  int64_t v;
  ASSERT_TRUE(is_const_int(f->min, &v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(is_const_int(f->extent, &v));
  EXPECT_EQ(v, 2);
  EXPECT_EQ(f->annotations.at("pragma"), "1");
  EXPECT_EQ(f->annotations.at("s"), "\"x\"");
  auto* seq = f->body.as<SeqNode>();
  ASSERT_EQ(seq->stmts.size(), 3u);
  auto* t = seq->stmts[0].as<ForNode>();
  EXPECT_EQ(t->for_kind, ForKind::ThreadBinding);
  EXPECT_EQ(t->thread_tag, "threadIdx.x");
  auto* p = seq->stmts[1].as<ForNode>();
  EXPECT_EQ(p->for_kind, ForKind::Parallel);
  EXPECT_EQ(p->body.as<ForNode>()->for_kind, ForKind::Vectorized);
  EXPECT_EQ(p->body.as<ForNode>()->body.as<ForNode>()->for_kind, ForKind::Unrolled);
  auto* t2 = seq->stmts[2].as<ForNode>();
  ASSERT_TRUE(is_const_int(t2->min, &v));
  EXPECT_EQ(v, 1);
  EXPECT_EQ(t2->thread_tag, "blockIdx.y");
}

TEST(ParserSyntax, SymbolicSerialRangeRoundTripsExtent) {
  Module m = parse_body("  for i in serial(n, n + 4) { J[0] = i }");
  auto* f = m.funcs[0]->body.as<BlockRealizeNode>()->block->body.as<ForNode>();
  ASSERT_NE(f, nullptr);
  int64_t v;
  ASSERT_TRUE(is_const_int(f->extent, &v));  // make_extent(n, n + 4) == 4
  EXPECT_EQ(v, 4);
}

TEST(ParserSyntax, BlockClausesAllocsAndRoot) {
  Module m = parse_body(
      "  alloc T: f32[4] scope \"shared\"\n"
      "  for i, k in grid(4, 4) {\n"
      "    block b(vi: spatial(4) = i, vk: reduce(4) = k) {\n"
      "      where i < 3\n"
      "      annotate(\"meta\", 2.5)\n"
      "      alloc W: f32[2] scope \"local\"\n"
      "      init { T[vi] = 0.0 }\n"
      "      W[0] = A[vk]\n"
      "      T[vi] += W[0]\n"
      "    }\n"
      "  }\n"
      "  for i in serial(4) { B[i] = T[i] }");
  const FunctionNode& f = *m.funcs[0];
  const BlockNode& root = root_block(f);
  ASSERT_EQ(root.allocs.size(), 1u);
  EXPECT_EQ(root.allocs[0]->scope, "shared");
  auto* l = root.body.as<SeqNode>()->stmts[0].as<ForNode>()->body.as<ForNode>();
  auto* br = l->body.as<BlockRealizeNode>();
  ASSERT_NE(br, nullptr);
  EXPECT_EQ(br->predicate.kind(), ExprKind::Binary);
  const BlockNode& b = *br->block.get();
  EXPECT_EQ(b.annotations.at("meta"), "2.5");
  ASSERT_EQ(b.allocs.size(), 1u);
  EXPECT_EQ(b.allocs[0]->scope, "local");
  ASSERT_TRUE(b.init.defined());
  // W is allocated by the block: not part of its regions.
  ASSERT_EQ(b.reads.size(), 2u);
  EXPECT_EQ(b.reads[0].buffer->name, "A");
  EXPECT_EQ(b.reads[1].buffer->name, "T");
  ASSERT_EQ(b.writes.size(), 1u);
  EXPECT_EQ(b.writes[0].buffer->name, "T");
}

TEST(ParserSyntax, ExplicitRootBlock) {
  Module m = parse_module(
      "func f(A: f32[4]) -> (B: f32[4]) {\n"
      "  block root() {\n"
      "    alloc T: f32[4]\n"
      "    for i in serial(4) { block c(vi: spatial(4) = i) { T[vi] = A[vi] } }\n"
      "    for i in serial(4) { block d(vi: spatial(4) = i) { B[vi] = T[vi] } }\n"
      "  }\n"
      "}\n",
      "t.tir");
  const BlockNode& root = root_block(*m.funcs[0]);
  EXPECT_EQ(root.name, "root");
  EXPECT_EQ(root.allocs.size(), 1u);
  EXPECT_TRUE(root.reads.empty());
  EXPECT_EQ(root.body.as<SeqNode>()->stmts.size(), 2u);
  // A differently named single block is the root too, and keeps its name.
  m = parse_module("func f(A: f32[4]) -> (B: f32[4]) { block top() { B[0] = A[0] } }", "t.tir");
  EXPECT_EQ(root_block(*m.funcs[0]).name, "top");
}

TEST(ParserSyntax, LetStatementsScopeTheRest) {
  Module m = parse_body("  J[0] = 1; let x = n + 1; J[1] = x; let y = x * 2\n  J[2] = y");
  auto* seq = root_block(*m.funcs[0]).body.as<SeqNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 2u);
  auto* lx = seq->stmts[1].as<LetStmtNode>();
  ASSERT_NE(lx, nullptr);
  auto* inner = lx->body.as<SeqNode>();
  ASSERT_NE(inner, nullptr);
  ASSERT_EQ(inner->stmts.size(), 2u);
  EXPECT_NE(inner->stmts[1].as<LetStmtNode>(), nullptr);
}

TEST(ParserSyntax, InvariantLetVisibleInBlocks) {
  // A let of scalar params only may be used inside a block; one of a loop var may not.
  EXPECT_NO_THROW(
      parse_body("  let h = n // 2\n  for i in serial(4) { block b(vi: spatial(4) = i) { J[vi] = h } }"));
  EXPECT_THROW(
      parse_body("  for i in serial(4) { let h = i + 1\n block b(vi: spatial(4) = i) { J[vi] = h } }"),
      SourceError);
}

TEST(ParserSyntax, CallExtern) {
  Module m = parse_body("  call_extern(\"gemm\", A.data, B.ptr(1), 4, 2.0)");
  auto* ev = root_block(*m.funcs[0]).body.as<EvaluateNode>();
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->extern_name, "gemm");
  ASSERT_EQ(ev->args.size(), 4u);
  auto* p0 = ev->args[0].as<BufferPtrNode>();
  ASSERT_NE(p0, nullptr);
  EXPECT_TRUE(p0->indices.empty());
  auto* p1 = ev->args[1].as<BufferPtrNode>();
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->indices.size(), 1u);
  EXPECT_EQ(ev->args[2].dtype(), DType::I32);
  EXPECT_EQ(ev->args[3].dtype(), DType::F32);
}

TEST(ParserSyntax, ParamsRangesAndSymbolicShapes) {
  Module m = parse_module(
      "func f(n: i32 in [1, 8], X: f32[n, 4] in [0.1, 4.0], I: i32[6] in [0, 9]) -> (Y: f32[n]) {}\n",
      "t.tir");
  const FunctionNode& f = *m.funcs[0];
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_FALSE(f.params[0].is_buffer());
  ASSERT_TRUE(f.params[0].range.has_value());
  EXPECT_EQ(f.params[0].range->hi, 8);
  EXPECT_TRUE(f.params[1].buffer->shape[0].same_as(f.params[0].var));
  EXPECT_FLOAT_EQ(f.params[1].range->lo, 0.1);
  EXPECT_FALSE(f.params[2].range->lo != 0);
  EXPECT_TRUE(f.outputs[0]->shape[0].same_as(f.params[0].var));
}

TEST(ParserSyntax, IntrinAndScheduleItems) {
  Module m = parse_module(
      "intrin dot4 {\n"
      "  desc(A: f32[4], B: f32[4], C: f32[1]) {\n"
      "    for k in serial(4) { block d(vk: reduce(4) = k) { C[0] += A[vk] * B[vk] } }\n"
      "  }\n"
      "  impl(A: f32[4], B: f32[4], C: f32[1]) { call_extern(\"dot4\", A.data, B.data, C.data) }\n"
      "}\n"
      "schedule f { init = decompose_reduction(b, k); bind(i, \"threadIdx.x\"); annotate(b, key=\"x\", "
      "v=-2.5) }\n"
      "func f(A: f32[4]) -> (B: f32[4]) { }\n",
      "t.tir");
  ASSERT_EQ(m.intrins.size(), 1u);
  EXPECT_EQ(m.intrins[0].desc->name, "dot4.desc");
  EXPECT_EQ(m.intrins[0].impl->name, "dot4.impl");
  EXPECT_TRUE(m.intrins[0].desc->outputs.empty());
  EXPECT_EQ(m.intrins[0].desc->params.size(), 3u);
  ASSERT_EQ(m.order.size(), 3u);
  EXPECT_EQ(m.order[0].first, 2);
  EXPECT_EQ(m.order[1].first, 1);
  EXPECT_EQ(m.order[2].first, 0);
  const auto& instrs = m.schedules[0].instrs;
  ASSERT_EQ(instrs.size(), 3u);
  EXPECT_EQ(instrs[0].results, std::vector<std::string>{"init"});
  EXPECT_EQ(instrs[2].args[1].kind, ScheduleArg::Keyword);
  EXPECT_EQ(instrs[2].args[1].text, "key");
  EXPECT_EQ(instrs[2].args[1].list[0].kind, ScheduleArg::String);
  EXPECT_EQ(instrs[2].args[2].list[0].kind, ScheduleArg::Float);
  EXPECT_EQ(instrs[2].args[2].list[0].float_value, -2.5);
  EXPECT_EQ(instrs[2].loc.line, 7);
}

TEST(ParserSyntax, CommentsAndSemicolons) {
  EXPECT_NO_THROW(
      parse_module("# leading comment\nfunc f(A: f32[4]) -> (B: f32[4]) { # trailing\n"
                   "  for i in serial(4) { B[i] = A[i]; }; ;\n}\n",
                   "t.tir"));
}

TEST(ParserSyntax, NonReservedNames) {
  // Loop kinds, iter-var kinds and intrinsic names are not reserved.
  EXPECT_NO_THROW(
      parse_module("func f(A: f32[4]) -> (B: f32[4]) {\n"
                   "  for serial in serial(4) { block exp(spatial: spatial(4) = serial) { B[spatial] = "
                   "exp(A[spatial]) } }\n"
                   "}\n",
                   "t.tir"));
}

TEST(ParserSyntax, EmptyModule) {
  Module m = parse_module("  # nothing\n", "t.tir");
  EXPECT_TRUE(m.funcs.empty());
  EXPECT_TRUE(m.order.empty());
}

}  // namespace
}  // namespace tirc

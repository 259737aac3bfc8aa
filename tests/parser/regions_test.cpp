// Inference of reads/writes for blocks that do not declare them (the parser calls the shared
// transforms/simplify/region.h with the function's input buffers as read-only).
#include <gtest/gtest.h>

#include <functional>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/simplify/region.h"

namespace tirc {
namespace {

std::string ex(const Expr& e) {
  if (auto* v = e.as<VarNode>()) return v->name;
  if (auto* i = e.as<IntImmNode>()) return std::to_string(i->value);
  if (auto* b = e.as<BinaryNode>()) return ex(b->a) + " " + binop_symbol(b->op) + " " + ex(b->b);
  if (auto* l = e.as<LoadNode>()) return l->buffer->name + "[..]";
  return "?";
}

std::string regions(const std::vector<BufferRegion>& rs) {
  std::string s;
  for (auto& r : rs) {
    if (!s.empty()) s += ", ";
    s += r.buffer->name + "[";
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (i) s += ", ";
      s += ex(r.ranges[i].begin);
      if (!r.ranges[i].is_point()) s += ":" + ex(r.ranges[i].end);
    }
    s += "]";
  }
  return s;
}

const BlockNode* find(const Stmt& s, const std::string& name) {
  const BlockNode* out = nullptr;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (!x.defined() || out) return;
    if (auto* br = x.as<BlockRealizeNode>()) {
      if (br->block->name == name) out = br->block.get();
      walk(br->block->init);
      walk(br->block->body);
    } else if (auto* f = x.as<ForNode>()) {
      walk(f->body);
    } else if (auto* q = x.as<SeqNode>()) {
      for (auto& y : q->stmts) walk(y);
    } else if (auto* l = x.as<LetStmtNode>()) {
      walk(l->body);
    } else if (auto* i = x.as<IfThenElseStmtNode>()) {
      walk(i->then_case);
      walk(i->else_case);
    }
  };
  walk(s);
  return out;
}

const BlockNode& block_of(const std::string& src, const std::string& name) {
  static Module m;
  m = parse_module(src, "t.tir");
  const BlockNode* b = find(m.funcs[0]->body, name);
  EXPECT_NE(b, nullptr);
  return *b;
}

TEST(ParserRegions, PointRegionsInTermsOfIterVars) {
  const BlockNode& b = block_of(
      "func f(A: f32[8, 8]) -> (B: f32[8, 8]) {\n"
      "  for i, j in grid(8, 8) { block b(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vj, vi] * "
      "2.0 } }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "A[vj, vi]");
  EXPECT_EQ(regions(b.writes), "B[vi, vj]");
}

TEST(ParserRegions, InnerLoopsAreRelaxed) {
  const BlockNode& b = block_of(
      "func f(A: f32[8, 16]) -> (B: f32[8]) {\n"
      "  for i in serial(8) {\n"
      "    block b(vi: spatial(8) = i) {\n"
      "      B[vi] = 0.0\n"
      "      for k in serial(4) { B[vi] = B[vi] + A[vi, k * 2 + 1] + A[vi, k * 2] }\n"
      "    }\n"
      "  }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "B[vi], A[vi, 0:8]");
  EXPECT_EQ(regions(b.writes), "B[vi]");
}

TEST(ParserRegions, HullOfConstantOffsets) {
  const BlockNode& b = block_of(
      "func f(A: f32[10]) -> (B: f32[8]) {\n"
      "  for i in serial(8) { block b(vi: spatial(8) = i) { B[vi] = A[vi] + A[vi + 2] + A[vi + 1] } }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "A[vi:vi + 3]");
}

TEST(ParserRegions, SymbolicInnerLoopBounds) {
  const BlockNode& b = block_of(
      "func f(n: i32, A: f32[n]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      B[vi] = 0.0\n"
      "      for k in serial(vi, n) { B[vi] += A[k] }\n"
      "    }\n"
      "  }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "B[vi], A[vi:n]");
}

TEST(ParserRegions, NonAffineFallsBackToWholeDimension) {
  const BlockNode& b = block_of(
      "func f(A: f32[64], I: i32[4]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      B[vi] = 0.0\n"
      "      for k in serial(4) { B[vi] += A[k * k] + A[I[k]] }\n"
      "    }\n"
      "  }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "B[vi], A[0:64], I[0:4]");
}

TEST(ParserRegions, NestedBlocksSubstituteBindingsAndExcludeAllocs) {
  const BlockNode& b = block_of(
      "func f(A: f32[16, 16]) -> (B: f32[16]) {\n"
      "  for i in serial(16) {\n"
      "    block outer(vi: spatial(16) = i) {\n"
      "      alloc L: f32[4]\n"
      "      for j in serial(4) {\n"
      "        block inner(vo: spatial(16) = vi, vj: spatial(4) = j) { L[vj] = A[vo, vj * 4 + 1] }\n"
      "      }\n"
      "      B[vi] = L[0] + L[3]\n"
      "    }\n"
      "  }\n"
      "}\n",
      "outer");
  EXPECT_EQ(regions(b.reads), "A[vi, 1:14]");
  EXPECT_EQ(regions(b.writes), "B[vi]");
}

TEST(ParserRegions, LetBoundIndicesAreRelaxed) {
  const BlockNode& b = block_of(
      "func f(A: f32[8]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      let t = vi * 2\n"
      "      B[vi] = A[t] + A[t + 1]\n"
      "    }\n"
      "  }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "A[vi * 2:vi * 2 + 2]");
}

TEST(ParserRegions, ExplicitRegionsAreKept) {
  const BlockNode& b = block_of(
      "func f(A: f32[8]) -> (B: f32[8]) {\n"
      "  for i in serial(8) { block b(vi: spatial(8) = i) { reads A[0:8]\n B[vi] = A[vi] } }\n"
      "}\n",
      "b");
  EXPECT_EQ(regions(b.reads), "A[0:8]");
  EXPECT_EQ(regions(b.writes), "B[vi]");  // writes still inferred
}

TEST(ParserRegions, CallExternPointersToInputsAreReadsOnly) {
  // Inputs cannot be written (`cannot write to input buffer A`), so a pointer to one is a
  // read of the whole buffer; a pointer to a writable buffer is a read and a write.
  const BlockNode& b = block_of(
      "func f(A: f32[8]) -> (B: f32[8]) {\n"
      "  block k() { call_extern(\"copy\", A.data, B.data) }\n"
      "}\n",
      "k");
  EXPECT_EQ(regions(b.reads), "A[0:8], B[0:8]");
  EXPECT_EQ(regions(b.writes), "B[0:8]");
}

TEST(ParserRegions, CallExternPointerRules) {
  const char* src =
      "func f(A: f32[4, 8], n: i32) -> (B: f32[4]) {\n"
      "  alloc T: f32[8]\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      call_extern(\"touch\", A.ptr(vi, 0), T.data, B.ptr(vi), n)\n"
      "      B[vi] = A[vi, 0] + T[0]\n"
      "    }\n"
      "  }\n"
      "}\n";
  const BlockNode& b = block_of(src, "b");
  EXPECT_EQ(regions(b.reads), "A[0:4, 0:8], T[0:8], B[0:4]");
  EXPECT_EQ(regions(b.writes), "T[0:8], B[0:4]");
  // The printed text reads back (it used to say `writes A[...]`).
  Module m = parse_module(src, "t.tir");
  std::string t1 = print_module(m);
  EXPECT_EQ(t1.find("writes A"), std::string::npos) << t1;
  EXPECT_EQ(print_module(parse_module(t1, "t2.tir")), t1);
}

TEST(ParserRegions, CallExternInNestedBlockAndIntrin) {
  // A nested block without regions (the outer block infers through it) and intrin
  // parameters (all writable).
  const BlockNode& outer = block_of(
      "func f(A: f32[8]) -> (B: f32[8]) {\n"
      "  block o() {\n"
      "    block k() { call_extern(\"copy\", A.data, B.data) }\n"
      "  }\n"
      "}\n",
      "o");
  EXPECT_EQ(regions(outer.reads), "A[0:8], B[0:8]");
  EXPECT_EQ(regions(outer.writes), "B[0:8]");
  Module m = parse_module(
      "intrin cp {\n"
      "  desc(A: f32[4], B: f32[4]) { block d() { for i in serial(4) { B[i] = A[i] } } }\n"
      "  impl(A: f32[4], B: f32[4]) { block d() { call_extern(\"cp\", A.data, B.data) } }\n"
      "}\n",
      "t.tir");
  const BlockNode& impl = *m.intrins[0].impl->body.as<BlockRealizeNode>()->block.get();
  EXPECT_EQ(regions(impl.reads), "A[0:4], B[0:4]");
  EXPECT_EQ(regions(impl.writes), "A[0:4], B[0:4]");
}

TEST(ParserRegions, DirectApiReadOnlySet) {
  Buffer a("A", DType::F32, {make_int(8)});
  BlockNode n;
  n.name = "x";
  n.body = make_evaluate("f", {make_buffer_ptr(a, {})});
  std::vector<BufferRegion> r, w;
  infer_access_regions(n, &r, &w);
  EXPECT_EQ(regions(r), "A[0:8]");
  EXPECT_EQ(regions(w), "A[0:8]");
  infer_access_regions(n, &r, &w, {a.get()});
  EXPECT_EQ(regions(r), "A[0:8]");
  EXPECT_EQ(regions(w), "");
}

TEST(ParserRegions, InferredConstantBoundsStayInsideTheBuffer) {
  // A loop running past the buffer (an error only when executed) must not give a region the
  // parser refuses when it reads the printed text back.
  const char* src =
      "func f(A: f32[8]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      B[vi] = 0.0\n"
      "      for k in serial(10) { B[vi] += A[k] + A[k - k + 9] }\n"
      "    }\n"
      "  }\n"
      "}\n";
  const BlockNode& b = block_of(src, "b");
  EXPECT_EQ(regions(b.reads), "B[vi], A[0:8]");
  std::string t1 = print_module(parse_module(src, "t.tir"));
  EXPECT_EQ(print_module(parse_module(t1, "t2.tir")), t1);
}

TEST(ParserRegions, DirectApi) {
  Buffer a("A", DType::F32, {make_int(8)});
  Var v("v");
  BlockNode n;
  n.name = "x";
  n.iter_vars.push_back(IterVar{v, IterKind::Spatial, make_int(8)});
  n.body = make_store(a, {v}, make_float(1.0));
  std::vector<BufferRegion> r, w;
  infer_access_regions(n, &r, &w);
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(w[0].ranges[0].begin.same_as(v));
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// Let chains whose values use the previous name several times must not make the symbolic
// bounds grow exponentially (the parser is fuzzed: this used to hang).
TEST(ParserRegions, LetChainsStayFast) {
  std::string stmt_lets, expr_lets = "t39";
  for (int j = 39; j >= 1; --j) {
    std::string p = "t" + std::to_string(j - 1), t = "t" + std::to_string(j);
    stmt_lets = "        let " + t + " = " + p + " // 2 + " + p + " // 3 + " + p + " // 5\n" + stmt_lets;
    expr_lets = "(let " + t + " = " + p + " // 2 + " + p + " // 3 + " + p + " // 5 in " + expr_lets + ")";
  }
  std::string head =
      "func f(A: f32[64]) -> (B: f32[8]) {\n  for i in serial(8) {\n    block b(vi: spatial(8) = i) {\n"
      "      for k in serial(4) {\n";
  std::string tail = "      }\n    }\n  }\n}\n";
  const BlockNode& b1 =
      block_of(head + "        let t0 = k + vi\n" + stmt_lets + "        B[vi] = A[t39]\n" + tail, "b");
  EXPECT_EQ(regions(b1.reads), "A[0:64]");
  const BlockNode& b2 =
      block_of(head + "        B[vi] = A[(let t0 = k + vi in " + expr_lets + ")]\n" + tail, "b");
  EXPECT_EQ(regions(b2.reads), "A[0:64]");
}

}  // namespace
}  // namespace tirc

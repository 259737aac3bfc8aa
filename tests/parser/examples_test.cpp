// The shared examples parse into the IR shape LANGUAGE.md describes.
#include <gtest/gtest.h>

#include <cfloat>
#include <filesystem>
#include <functional>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

Module parse_example(const std::string& name) {
  return parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + name);
}

const BlockRealizeNode* find_block(const Stmt& s, const std::string& name) {
  if (!s.defined()) return nullptr;
  if (auto* br = s.as<BlockRealizeNode>()) {
    if (br->block->name == name) return br;
    if (auto* r = find_block(br->block->init, name)) return r;
    return find_block(br->block->body, name);
  }
  if (auto* f = s.as<ForNode>()) return find_block(f->body, name);
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts)
      if (auto* r = find_block(x, name)) return r;
  }
  if (auto* i = s.as<IfThenElseStmtNode>()) {
    if (auto* r = find_block(i->then_case, name)) return r;
    return find_block(i->else_case, name);
  }
  if (auto* l = s.as<LetStmtNode>()) return find_block(l->body, name);
  return nullptr;
}

std::string region_str(const BufferRegion& r) {
  // Small local formatter so that these tests do not depend on the printer.
  std::function<std::string(const Expr&)> ex = [&](const Expr& e) -> std::string {
    if (auto* v = e.as<VarNode>()) return v->name;
    if (auto* i = e.as<IntImmNode>()) return std::to_string(i->value);
    if (auto* b = e.as<BinaryNode>()) return "(" + ex(b->a) + binop_symbol(b->op) + ex(b->b) + ")";
    return "?";
  };
  std::string s = r.buffer->name + "[";
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    if (i) s += ",";
    s += ex(r.ranges[i].begin);
    if (!r.ranges[i].is_point()) s += ":" + ex(r.ranges[i].end);
  }
  return s + "]";
}

TEST(ParserExamples, Matmul) {
  Module m = parse_example("matmul.tir");
  ASSERT_EQ(m.funcs.size(), 1u);
  ASSERT_EQ(m.schedules.size(), 1u);
  ASSERT_EQ(m.order.size(), 2u);
  EXPECT_EQ(m.order[0], std::make_pair(0, size_t{0}));
  EXPECT_EQ(m.order[1], std::make_pair(1, size_t{0}));
  const FunctionNode& f = *m.funcs[0];
  EXPECT_EQ(f.name, "matmul");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_TRUE(f.params[0].is_buffer());
  EXPECT_EQ(f.params[0].buffer->name, "A");
  EXPECT_EQ(f.params[0].buffer->dtype, DType::F32);
  ASSERT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.outputs[0]->name, "C");
  EXPECT_EQ(f.loc.line, 2);
  // Implicit root wrapping a grid of three serial loops.
  const BlockNode& root = root_block(f);
  EXPECT_EQ(root.name, "root");
  EXPECT_TRUE(root.iter_vars.empty());
  EXPECT_TRUE(root.reads.empty());
  auto* li = root.body.as<ForNode>();
  ASSERT_NE(li, nullptr);
  EXPECT_EQ(li->loop_var.name(), "i");
  EXPECT_EQ(li->for_kind, ForKind::Serial);
  int64_t v;
  ASSERT_TRUE(is_const_int(li->extent, &v));
  EXPECT_EQ(v, 128);
  ASSERT_TRUE(is_const_int(li->min, &v));
  EXPECT_EQ(v, 0);
  auto* lj = li->body.as<ForNode>();
  ASSERT_NE(lj, nullptr);
  auto* lk = lj->body.as<ForNode>();
  ASSERT_NE(lk, nullptr);
  auto* br = lk->body.as<BlockRealizeNode>();
  ASSERT_NE(br, nullptr);
  const BlockNode& c = *br->block.get();
  EXPECT_EQ(c.name, "C");
  ASSERT_EQ(c.iter_vars.size(), 3u);
  EXPECT_EQ(c.iter_vars[2].kind, IterKind::Reduce);
  EXPECT_EQ(c.iter_vars[0].kind, IterKind::Spatial);
  // Bindings are the loop vars themselves.
  EXPECT_TRUE(br->bindings[0].same_as(li->loop_var));
  EXPECT_TRUE(br->bindings[2].same_as(lk->loop_var));
  EXPECT_TRUE(is_one(br->predicate) && br->predicate.dtype() == DType::Bool);
  ASSERT_EQ(c.reads.size(), 2u);
  EXPECT_EQ(region_str(c.reads[0]), "A[vi,vk]");
  EXPECT_EQ(region_str(c.reads[1]), "B[vk,vj]");
  ASSERT_EQ(c.writes.size(), 1u);
  EXPECT_EQ(region_str(c.writes[0]), "C[vi,vj]");
  // Regions use the block's own iter vars.
  EXPECT_TRUE(c.reads[0].ranges[0].begin.same_as(c.iter_vars[0].var));
  auto* init = c.init.as<StoreNode>();
  ASSERT_NE(init, nullptr);
  EXPECT_TRUE(is_const_float(init->value) && init->value.dtype() == DType::F32);
  auto* st = c.body.as<StoreNode>();
  ASSERT_NE(st, nullptr);
  auto* add = st->value.as<BinaryNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op, BinOp::Add);
  EXPECT_EQ(add->b.as<BinaryNode>()->op, BinOp::Mul);
  // Schedule kept as written.
  const ScheduleItem& s = m.schedules[0];
  EXPECT_EQ(s.func, "matmul");
  ASSERT_EQ(s.instrs.size(), 7u);
  EXPECT_EQ(s.instrs[0].primitive, "get_block");
  ASSERT_EQ(s.instrs[0].results, std::vector<std::string>{"b"});
  EXPECT_EQ(s.instrs[0].args[0].kind, ScheduleArg::String);
  EXPECT_EQ(s.instrs[0].args[0].text, "C");
  EXPECT_EQ(s.instrs[1].results, (std::vector<std::string>{"i", "j", "k"}));
  const ScheduleInstr& split = s.instrs[2];
  EXPECT_EQ(split.primitive, "split");
  ASSERT_EQ(split.args.size(), 2u);
  EXPECT_EQ(split.args[0].kind, ScheduleArg::Ident);
  ASSERT_EQ(split.args[1].kind, ScheduleArg::List);
  EXPECT_EQ(split.args[1].list[0].kind, ScheduleArg::Wildcard);
  EXPECT_EQ(split.args[1].list[1].kind, ScheduleArg::Int);
  EXPECT_EQ(split.args[1].list[1].int_value, 8);
  EXPECT_EQ(split.loc.line, 16);
  EXPECT_EQ(split.loc.col, 12);
  EXPECT_EQ(s.instrs[4].results.size(), 0u);
}

TEST(ParserExamples, Conv2d) {
  Module m = parse_example("conv2d.tir");
  const FunctionNode& f = *m.funcs[0];
  const BlockNode& root = root_block(f);
  ASSERT_EQ(root.allocs.size(), 1u);
  EXPECT_EQ(root.allocs[0]->name, "P");
  EXPECT_EQ(root.allocs[0]->scope, "global");
  auto* seq = root.body.as<SeqNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->stmts.size(), 2u);
  auto* pad = find_block(f.body, "pad");
  ASSERT_NE(pad, nullptr);
  auto* st = pad->block->body.as<StoreNode>();
  ASSERT_NE(st, nullptr);
  auto* ite = st->value.as<SelectNode>();
  EXPECT_EQ(ite, nullptr);  // if_then_else is not Select
  ASSERT_EQ(st->value.kind(), ExprKind::IfThenElse);
  EXPECT_EQ(as_select_like(st->value)->f.dtype(), DType::F32);
  ASSERT_EQ(pad->block->reads.size(), 1u);
  EXPECT_EQ(region_str(pad->block->reads[0]), "X[vn,vc,(vh-1),(vw-1)]");
  auto* conv = find_block(f.body, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->block->iter_vars.size(), 7u);
  // `+=` is sugar for Y = Y + ...; Y is read too (TVM's detector lists it).
  ASSERT_EQ(conv->block->reads.size(), 3u);
  EXPECT_EQ(region_str(conv->block->reads[0]), "Y[vn,vf,vy,vx]");
  EXPECT_EQ(region_str(conv->block->reads[1]), "P[vn,vc,(vy+vr),(vx+vs)]");
  EXPECT_EQ(region_str(conv->block->reads[2]), "W[vf,vc,vr,vs]");
  auto* body = conv->block->body.as<StoreNode>();
  ASSERT_NE(body, nullptr);
  auto* add = body->value.as<BinaryNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op, BinOp::Add);
  auto* ld = add->a.as<LoadNode>();
  ASSERT_NE(ld, nullptr);
  EXPECT_EQ(ld->buffer->name, "Y");
}

TEST(ParserExamples, Softmax) {
  Module m = parse_example("softmax.tir");
  const FunctionNode& f = *m.funcs[0];
  EXPECT_EQ(root_block(f).allocs.size(), 3u);
  auto* mx = find_block(f.body, "row_max");
  ASSERT_NE(mx, nullptr);
  auto* init = mx->block->init.as<StoreNode>();
  ASSERT_NE(init, nullptr);
  double v;
  ASSERT_TRUE(is_const_float(init->value, &v));  // min_value(f32) folded
  EXPECT_EQ(v, -static_cast<double>(FLT_MAX));
  auto* body = mx->block->body.as<StoreNode>();
  auto* b = body->value.as<BinaryNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, BinOp::Max);
  // A block may be called like an intrinsic.
  auto* e = find_block(f.body, "exp");
  ASSERT_NE(e, nullptr);
  auto* call = e->block->body.as<StoreNode>()->value.as<CallNode>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->op, Intrinsic::Exp);
  auto* norm = find_block(f.body, "norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->block->body.as<StoreNode>()->value.as<BinaryNode>()->op, BinOp::Div);
}

TEST(ParserExamples, AllOpsExamplesParse) {
  // Every example shipped with the project parses.
  std::filesystem::path dir = std::filesystem::path(TIRC_SOURCE_DIR) / "examples" / "ops";
  if (!std::filesystem::exists(dir)) GTEST_SKIP();
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".tir") continue;
    try {
      parse_file(e.path().string());
    } catch (const SourceError& err) {
      ADD_FAILURE() << err.what();
    }
  }
}

}  // namespace
}  // namespace tirc

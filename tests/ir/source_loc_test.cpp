// Source positions of blocks and stores (diagnostics only): set by the parser, kept by
// IRMutator, ignored by structural equality and printing.
#include <gtest/gtest.h>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

const char* kText = R"(func f(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[vi] * 2.0
    }
  }
}
)";

const BlockNode& user_block(const FunctionNode& f) {
  const Stmt& loop = root_block(f).body;
  return *loop.as<ForNode>()->body.as<BlockRealizeNode>()->block.get();
}

TEST(SourceLoc, ParserSetsBlockAndStorePositions) {
  Module m = parse_module(kText, "s.tir");
  const BlockNode& b = user_block(*m.funcs[0]);
  EXPECT_EQ(b.loc.file, "s.tir");
  EXPECT_EQ(b.loc.line, 3);
  EXPECT_EQ(b.loc.col, 5);
  auto* st = b.body.as<StoreNode>();
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->loc.line, 4);
  EXPECT_EQ(st->loc.col, 7);
  EXPECT_FALSE(root_block(*m.funcs[0]).loc.known());  // implicit root: no position
}

TEST(SourceLoc, MutatorKeepsPositions) {
  Module m = parse_module(kText, "s.tir");
  const FunctionNode& f = *m.funcs[0];
  // Replaces the literal 2.0 by 3.0, so that the store and the blocks are rebuilt.
  struct M : IRMutator {
    Expr mutate_float(const Expr& e) override {
      if (auto* n = e.as<FloatImmNode>(); n && n->value == 2.0) return make_float(3.0, e.dtype());
      return e;
    }
  } mut;
  Stmt body = mut.mutate(f.body);
  ASSERT_FALSE(body.same_as(f.body));
  const BlockNode& b =
      *body.as<BlockRealizeNode>()->block->body.as<ForNode>()->body.as<BlockRealizeNode>()->block.get();
  EXPECT_EQ(b.loc.line, 3);
  auto* st = b.body.as<StoreNode>();
  ASSERT_NE(st, nullptr);
  EXPECT_NE(print_expr(st->value).find("3"), std::string::npos);
  EXPECT_EQ(st->loc.line, 4);
  EXPECT_EQ(st->loc.col, 7);
}

TEST(SourceLoc, IgnoredByEqualityAndPrinting) {
  // The same function at other positions (leading blank lines, other file name).
  Module a = parse_module(kText, "a.tir");
  Module b = parse_module(std::string("\n\n   \n") + kText, "b.tir");
  EXPECT_NE(user_block(*a.funcs[0]).loc.line, user_block(*b.funcs[0]).loc.line);
  EXPECT_TRUE(structural_equal(*a.funcs[0], *b.funcs[0]));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(print_module(a), print_module(b));
}

}  // namespace
}  // namespace tirc

// Fusion of F_grad's pointwise adjoint blocks (transforms/autodiff/fuse_pointwise.h): legal
// only when every shared written buffer is accessed at the point's own element, results
// bit-identical to the unfused F_grad on every zoo op, and the FLOPs it exists to save.
#include "transforms/autodiff/fuse_pointwise.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/module.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/verify.h"

using namespace tirc;
using tirc::testing::parse_one;

namespace {

int count_blocks(const FunctionNode& f) {
  struct Count : IRVisitor {
    int n = -1;  // the root block
    void visit_block(const BlockNode* b) override {
      ++n;
      IRVisitor::visit_block(b);
    }
  } c;
  c.visit(f.body);
  return c.n;
}

// f with its root statements fused as one group (as if one forward block emitted them all).
Function fused(const FunctionNode& f, std::vector<int> groups = {}) {
  const BlockNode& root = root_block(f);
  std::vector<Stmt> stmts;
  if (auto* q = root.body.as<SeqNode>())
    stmts = q->stmts;
  else
    stmts = {root.body};
  if (groups.empty()) groups.assign(stmts.size(), 0);
  BlockNode rb = root;
  rb.body = make_seq(ad::fuse_pointwise_blocks(stmts, groups));
  auto fn = std::make_shared<FunctionNode>(f);
  fn->body = make_block_realize({}, make_bool(true), make_block(std::move(rb)));
  return fn;
}

void expect_same_results(const FunctionNode& a, const FunctionNode& b) {
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    o.rtol = 0;
    o.atol = 0;
    CompareResult r = compare_functions(a, b, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail << "\n" << print_function(b);
  }
}

TEST(FusePointwise, OwnElementAccessesFuse) {
  Function f = parse_one(R"(func two(X: f32[8]) -> (T: f32[8], Y: f32[8]) {
  for i in serial(8) {
    block a(vi: spatial(8) = i) { T[vi] = X[vi] * 2.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) { Y[vi] = T[vi] + X[7 - vi] }
  }
})",
                         "two");
  Function g = fused(*f);
  EXPECT_EQ(count_blocks(*g), 1) << print_function(*g);
  expect_same_results(*f, *g);
}

// The second block reads T at a mirrored index: point 0 would read T[7] before point 7
// wrote it. Fusing would be wrong; it is refused.
TEST(FusePointwise, CrossPointReadDoesNotFuse) {
  Function f = parse_one(R"(func mirror(X: f32[8]) -> (T: f32[8], Y: f32[8]) {
  for i in serial(8) {
    block a(vi: spatial(8) = i) { T[vi] = X[vi] * 2.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) { Y[vi] = T[7 - vi] }
  }
})",
                         "mirror");
  Function g = fused(*f);
  EXPECT_EQ(count_blocks(*g), 2) << print_function(*g);
  expect_same_results(*f, *g);
}

// A buffer written at two different index tuples (a transposed store) does not fuse either.
TEST(FusePointwise, TransposedWriteDoesNotFuse) {
  Function f = parse_one(R"(func tr(X: f32[4, 4]) -> (T: f32[4, 4]) {
  for i, j in grid(4, 4) {
    block a(vi: spatial(4) = i, vj: spatial(4) = j) { T[vi, vj] = X[vi, vj] }
  }
  for i, j in grid(4, 4) {
    block b(vi: spatial(4) = i, vj: spatial(4) = j) { T[vj, vi] = T[vj, vi] + 1.0 }
  }
})",
                         "tr");
  Function g = fused(*f);
  EXPECT_EQ(count_blocks(*g), 2) << print_function(*g);
  expect_same_results(*f, *g);
}

TEST(FusePointwise, DifferentGroupsOrShapesStayApart) {
  Function f = parse_one(R"(func grp(X: f32[8], Z: f32[4]) -> (A: f32[8], B: f32[8], C: f32[4]) {
  for i in serial(8) {
    block a(vi: spatial(8) = i) { A[vi] = X[vi] * 2.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) { B[vi] = X[vi] + 1.0 }
  }
  for i in serial(4) {
    block c(vi: spatial(4) = i) { C[vi] = Z[vi] + 1.0 }
  }
})",
                         "grp");
  EXPECT_EQ(count_blocks(*fused(*f, {0, 1, 1})), 3);
  EXPECT_EQ(count_blocks(*fused(*f, {0, 0, 0})), 2);
}

// Zero-initialisations alone keep one block per buffer (compute_at needs one written buffer).
TEST(FusePointwise, InitsAloneStayApart) {
  Function f = parse_one(R"(func inits(X: f32[8]) -> (A: f32[8], B: f32[8]) {
  for i in serial(8) {
    block A_init(vi: spatial(8) = i) { A[vi] = 0.0 }
  }
  for i in serial(8) {
    block B_init(vi: spatial(8) = i) { B[vi] = 0.0 }
  }
})",
                         "inits");
  EXPECT_EQ(count_blocks(*fused(*f, {-1, -1})), 2);
}

TEST(FusePointwise, ConstantStoresForwardedAndDeadStoresDropped) {
  Function f = parse_one(R"(func fw(X: f32[8], G: f32[8]) -> (A: f32[8]) {
  for i in serial(8) {
    block A_init(vi: spatial(8) = i) { A[vi] = 0.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if X[vi] > 0.0 {
        A[vi] = G[vi] * X[vi]
      } else {
        A[vi] = A[vi] + G[vi]
      }
    }
  }
})",
                         "fw");
  Function g = fused(*f, {-1, 0});
  std::string text = print_function(*g);
  EXPECT_EQ(count_blocks(*g), 1) << text;
  EXPECT_EQ(text.find("A[vi] = 0.0"), std::string::npos) << "the zero store should be gone:\n" << text;
  EXPECT_EQ(text.find("A[vi] + G"), std::string::npos) << "0 + G[vi] should be G[vi]:\n" << text;
  expect_same_results(*f, *g);
}

// A condition that reads a buffer the body writes is evaluated where it was: not merged.
TEST(FusePointwise, ConditionOnWrittenBufferNotMerged) {
  Function f = parse_one(R"(func cw(X: f32[8]) -> (A: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      A[vi] = X[vi]
      if A[vi] > 0.0 {
        A[vi] = A[vi] - 1.0
      }
      if A[vi] > 0.0 {
        A[vi] = A[vi] * 3.0
      }
    }
  }
})",
                         "cw");
  const BlockNode* b = nullptr;
  struct Find : IRVisitor {
    const BlockNode** out;
    void visit_block(const BlockNode* n) override {
      if (n->name == "b") *out = n;
      IRVisitor::visit_block(n);
    }
  } fd;
  fd.out = &b;
  fd.visit(f->body);
  ASSERT_TRUE(b);
  Stmt m = ad::merge_lets_and_guards(b->body);
  auto* q = m.as<SeqNode>();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->stmts.size(), 3u);
}

// An if/else storing two outputs: one block evaluating the condition once (was 5x).
TEST(FusePointwise, IfThenElseArmsShareTheCondition) {
  Function f = parse_one(R"(func ie(X: f32[8], Z: f32[8]) -> (A: f32[8], B: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      if X[vi] > Z[vi] {
        A[vi] = X[vi] * Z[vi]
        B[vi] = X[vi] - Z[vi]
      } else {
        B[vi] = X[vi] * Z[vi] * 2.0
        A[vi] = exp(Z[vi])
      }
    }
  }
})",
                         "ie");
  Function g = gradient(*f, {});
  EXPECT_LE(static_counts(*g, {}).total.flops, 2.0 * static_counts(*f, {}).total.flops) << print_function(*g);
  EXPECT_EQ(count_blocks(*g), 1) << print_function(*g);  // no forward value needed: one block
  CheckGradOptions o;
  o.full = true;
  EXPECT_EQ(check_grad(*f, o).failed, 0);
  // The fused block (one if/else, several stores of each adjoint) differentiates again.
  CheckGradResult second = check_grad(*g, o);
  EXPECT_EQ(second.failed, 0);
  EXPECT_GT(second.passed, 0);
}

// A GLU reads X at two column offsets: both adjoints are stored by one block (the offsets are
// apart), 3x instead of 3.5x, and that block differentiates again (normalisation splits it).
// A read at a mirrored index of the same buffer is a gather (over X_grad: the two gathers then
// fuse, each point writing its own element), never a second store into the scatter block.
TEST(SplitInjective, DisjointReadsOfOneBufferShareABlock) {
  Function f = parse_one(R"(func glu(X: f32[4, 6]) -> (Y: f32[4, 3]) {
  for i, j in grid(4, 3) {
    block glu(vi: spatial(4) = i, vj: spatial(3) = j) {
      Y[vi, vj] = X[vi, vj] * sigmoid(X[vi, vj + 3])
    }
  }
})",
                         "glu");
  Function g = gradient(*f, {});
  EXPECT_LE(static_counts(*g, {}).total.flops, 3.0 * static_counts(*f, {}).total.flops) << print_function(*g);
  EXPECT_EQ(count_blocks(*g), 2) << print_function(*g);  // X_grad's zeros, one adjoint block
  CheckGradOptions o;
  o.full = true;
  EXPECT_EQ(check_grad(*f, o).failed, 0);
  CheckGradResult second = check_grad(*g, o);
  EXPECT_EQ(second.failed, 0) << print_function(*second.grad);
  EXPECT_GT(second.passed, 0);

  Function m = parse_one(R"(func mirror(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) { Y[vi] = sin(X[vi]) * X[7 - vi] }
  }
})",
                         "mirror");
  Function gm = gradient(*m, {});
  EXPECT_EQ(print_function(*gm).find("X_grad[-v"), std::string::npos) << print_function(*gm);
  EXPECT_EQ(check_grad(*m, o).failed, 0);
  EXPECT_EQ(check_grad(*gm, o).failed, 0);
}

// Every zoo op: the fused F_grad gives bit-identical results with no more FLOPs.
TEST(FusePointwise, ZooBitIdentical) {
  int changed = 0;
  for (auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(TIRC_SOURCE_DIR) / "examples" / "ops")) {
    if (e.path().extension() != ".tir") continue;
    std::string op = e.path().stem().string();
    Module m = parse_file(e.path().string());
    Function f = m.find_func(op);
    if (!f) continue;
    GradientOptions off;
    off.fuse = false;
    Function g, g0;
    try {
      g = gradient(*f, {});
      g0 = gradient(*f, {}, off);
    } catch (const Error& err) {
      ADD_FAILURE() << op << ": " << err.what();
      continue;
    }
    if (print_function(*g) == print_function(*g0)) continue;
    ++changed;
    bool symbolic = false;
    for (auto& p : f->params) symbolic = symbolic || !p.is_buffer();
    if (!symbolic) {
      EXPECT_LE(static_counts(*g, {}).total.flops, static_counts(*g0, {}).total.flops) << op;
    }
    for (uint64_t seed : {1, 2}) {
      CompareOptions o;
      o.seed = seed;
      o.rtol = 0;
      o.atol = 0;
      CompareResult r = compare_functions(*g0, *g, o, interp_runner(), interp_runner());
      EXPECT_TRUE(r.ok) << op << ": " << r.detail;
    }
  }
  // 5 since outsider round 8: the reads of a sum reduction (losses) share one adjoint block
  // before fusion, so fusion no longer changes those gradients.
  EXPECT_GE(changed, 5) << "the test needs ops whose F_grad fusion changes";
}

}  // namespace

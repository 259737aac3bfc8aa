// fuse_sibling_loops: adjacent loops over one range whose written buffers are partitioned by
// the loop variable become one loop; the result is bit-identical (interpreter on random
// inputs), and loops that would exchange values across iterations stay apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/lower/lower_checks.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

// Number of loops directly in the root's body (after convert_blocks).
size_t top_loops(const FunctionNode& f) {
  auto* br = f.body.as<BlockRealizeNode>();
  Stmt body = br ? br->block->body : f.body;
  if (body.kind() == StmtKind::For) return 1;
  size_t n = 0;
  if (auto* s = body.as<SeqNode>())
    for (auto& x : s->stmts) n += x.kind() == StmtKind::For;
  return n;
}

std::pair<Function, Function> before_after(const Function& f) {
  Function b = convert_blocks(*lower_init(*f));
  return {b, fuse_sibling_loops(*b)};
}

Function parse_one(const std::string& text, const std::string& name) {
  return parse_module(text, "fuse.tir").find_func(name);
}

TEST(FuseSiblingLoops, StridedPoolGradientRunsPerSlice) {
  // The zero fill of X_grad and the four stride-2 phase blocks accumulating into it all
  // index X_grad[n, c, ...] by their own n and c: one (n, c) loop pair holds all five.
  Function f = parse_one(R"(
func pool(X: f32[2, 3, 9, 9]) -> (Y: f32[2, 3, 4, 4]) {
  for n, c, y, x, r, s in grid(2, 3, 4, 4, 3, 3) {
    block p(vn: spatial(2) = n, vc: spatial(3) = c, vy: spatial(4) = y, vx: spatial(4) = x,
            vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vc, vy, vx] = 0.0 }
      Y[vn, vc, vy, vx] += X[vn, vc, vy * 2 + vr, vx * 2 + vs] * (1.0 / 9.0)
    }
  }
}
)",
                         "pool");
  Function g = gradient(*f, {});
  auto [b, t] = before_after(g);
  EXPECT_EQ(top_loops(*b), 5u) << print_function(*b);
  EXPECT_EQ(top_loops(*t), 1u) << print_function(*t);
  auto* outer = t->body.as<BlockRealizeNode>()->block->body.as<ForNode>();
  ASSERT_NE(outer, nullptr);
  auto* second = outer->body.as<ForNode>();
  ASSERT_NE(second, nullptr) << "c loops fused in turn";
  EXPECT_EQ(second->body.as<SeqNode>()->stmts.size(), 5u) << print_function(*t);
  for (uint64_t seed : {1, 2, 3}) expect_identical(*g, *t, seed);
}

TEST(FuseSiblingLoops, IntermediatesShrinkToASlice) {
  // max_pool's gradient recomputes Y and its argument into function-level buffers; fused
  // over (n, c), plan_alloc places them in the loop and compaction shrinks them to a slice.
  Function f = parse_one(R"(
func mp(X: f32[2, 3, 8, 8]) -> (Y: f32[2, 3, 4, 4]) {
  for n, c, y, x, r, s in grid(2, 3, 4, 4, 2, 2) {
    block p(vn: spatial(2) = n, vc: spatial(3) = c, vy: spatial(4) = y, vx: spatial(4) = x,
            vr: reduce(2) = r, vs: reduce(2) = s) {
      init { Y[vn, vc, vy, vx] = min_value(f32) }
      Y[vn, vc, vy, vx] max= X[vn, vc, vy * 2 + vr, vx * 2 + vs]
    }
  }
}
)",
                         "mp");
  Function g = gradient(*f, {});
  Function lowered = lower_function(*g, false);
  auto* root = lowered->body.as<BlockRealizeNode>();
  ASSERT_NE(root, nullptr);
  size_t root_elems = 0;
  for (auto& a : root->block->allocs) {
    int64_t n = 1, e = 0;
    for (auto& d : a->shape) n *= is_const_int(d, &e) ? e : 1;
    root_elems += n;
  }
  struct Allocs : IRVisitor {
    size_t count = 0, elems = 0;
    void visit_block(const BlockNode* n) override {
      for (auto& a : n->allocs) {
        int64_t k = 1, e = 0;
        for (auto& d : a->shape) k *= is_const_int(d, &e) ? e : 1;
        ++count;
        elems += k;
      }
      IRVisitor::visit_block(n);
    }
  } inner;
  inner.visit(root->block->body);
  EXPECT_EQ(root_elems, 0u) << print_function(*lowered);
  EXPECT_GE(inner.count, 1u) << print_function(*lowered);
  EXPECT_LE(inner.elems, 2u * 16u) << print_function(*lowered);
  for (uint64_t seed : {1, 2}) expect_identical(*g, *lowered, seed);
}

TEST(FuseSiblingLoops, LoopsThatExchangeValuesStayApart) {
  // A[i] is read at 7 - i (another iteration), S[0] is shared by every iteration, the
  // extents differ, and a parallel loop is not serial: none of these pairs fuse.
  Function f = parse_one(R"(
func f(X: f32[8]) -> (Y: f32[8], Z: f32[8], W: f32[9], V: f32[8]) {
  alloc A: f32[8]
  alloc S: f32[1]
  for i in serial(8) {
    block a(vi: spatial(8) = i) { A[vi] = X[vi] * 2.0 }
  }
  for i in serial(8) {
    block b(vi: spatial(8) = i) { Y[vi] = A[7 - vi] + 1.0 }
  }
  for i in serial(8) {
    block s(vi: reduce(8) = i) {
      init { S[0] = 0.0 }
      S[0] += X[vi]
    }
  }
  for i in serial(8) {
    block z(vi: spatial(8) = i) { Z[vi] = S[0] * X[vi] }
  }
  for i in serial(9) {
    block w(vi: spatial(9) = i) { W[vi] = 1.0 }
  }
  for i in parallel(8) {
    block v(vi: spatial(8) = i) { V[vi] = Z[vi] }
  }
}
)",
                         "f");
  auto [b, t] = before_after(f);
  EXPECT_EQ(top_loops(*b), 6u);
  EXPECT_EQ(top_loops(*t), 6u) << print_function(*t);
  for (uint64_t seed : {1, 2}) expect_identical(*f, *t, seed);
}

TEST(FuseSiblingLoops, ElementwiseChainFusesAndReadsOfUnwrittenBuffersAreFree) {
  // Y reads X (not written) anywhere; A and Y are written and accessed at [i, ...].
  Function f = parse_one(R"(
func f(X: f32[4, 6]) -> (Y: f32[4, 6]) {
  alloc A: f32[4, 6]
  for i, j in grid(4, 6) {
    block a(vi: spatial(4) = i, vj: spatial(6) = j) { A[vi, vj] = X[3 - vi, vj] * 2.0 }
  }
  for i, j in grid(4, 6) {
    block y(vi: spatial(4) = i, vj: spatial(6) = j) { Y[vi, vj] = A[vi, 5 - vj] + X[0, vj] }
  }
}
)",
                         "f");
  auto [b, t] = before_after(f);
  EXPECT_EQ(top_loops(*t), 1u) << print_function(*t);
  // The j loops do not fuse: Y reads A at 5 - j.
  auto* outer = t->body.as<BlockRealizeNode>()->block->body.as<ForNode>();
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->body.kind(), StmtKind::Seq) << print_function(*t);
  for (uint64_t seed : {1, 2}) expect_identical(*f, *t, seed);
}

TEST(FuseSiblingLoops, ZooFunctionsAndGradientsAreBitIdentical) {
  // Every zoo op and its gradient, lowered up to convert_blocks, with and without fusion.
  namespace fs = std::filesystem;
  size_t fused = 0, total = 0;
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(std::string(TIRC_SOURCE_DIR) + "/examples/ops"))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (auto& p : files) {
    Module m = parse_file(p.string());
    for (auto& f : m.funcs) {
      std::vector<Function> fs{f};
      try {
        fs.push_back(gradient(*f, {}));
      } catch (const Error&) {
        // refused (nothing to differentiate): the forward alone
      }
      for (const Function& h : fs) {
        auto [b, t] = before_after(h);
        ++total;
        fused += top_loops(*t) < top_loops(*b);
        SCOPED_TRACE(p.filename().string() + " " + h->name);
        expect_identical(*b, *t, 7);
      }
    }
  }
  EXPECT_GT(total, 100u);
  EXPECT_GT(fused, 20u) << "of " << total;
}

}  // namespace
}  // namespace tirc

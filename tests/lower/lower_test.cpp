// Lowering passes against the interpreter: every stage of the pipeline is still a function
// the interpreter runs, and computes the same outputs as the original.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "transforms/lower/lower.h"

namespace tirc {
namespace {

NDArray reshaped(const NDArray& a, std::vector<int64_t> shape) {
  NDArray r(a.dtype(), std::move(shape));
  std::memcpy(r.data(), a.data(), a.nbytes());
  return r;
}

// Outputs of g (maybe flattened) on the inputs of f, reshaped back to f's output shapes.
ArgMap run_on(const FunctionNode& g, const ArgMap& in, const ArgMap& ref) {
  ArgMap gin;
  for (auto& p : g.params) {
    const NDArray& a = in.at(p.name());
    gin[p.name()] = p.is_buffer() && p.buffer->ndim() != a.shape().size() ? reshaped(a, {a.numel()}) : a;
  }
  ArgMap out = run_interp(g, gin);
  for (auto& [k, v] : out) v = reshaped(v, ref.at(k).shape());
  return out;
}

void expect_same(const ArgMap& a, const ArgMap& b, const std::string& stage) {
  ASSERT_EQ(a.size(), b.size()) << stage;
  for (auto& [k, v] : a) {
    const NDArray& w = b.at(k);
    ASSERT_EQ(v.shape(), w.shape()) << stage;
    EXPECT_EQ(std::memcmp(v.data(), w.data(), v.nbytes()), 0) << stage << ": output " << k << " differs";
  }
}

struct Counts {
  int blocks_with_iters = 0, inits = 0, multi_dim = 0, scope_blocks = 0;
};
Counts count(const FunctionNode& f) {
  struct V : IRVisitor {
    Counts c;
    void visit_block(const BlockNode* n) override {
      if (!n->iter_vars.empty()) ++c.blocks_with_iters;
      if (n->init.defined()) ++c.inits;
      if (n->iter_vars.empty() && n->name != "root") ++c.scope_blocks;
      IRVisitor::visit_block(n);
    }
    void visit_load(const LoadNode* n) override {
      if (n->indices.size() != 1) ++c.multi_dim;
      IRVisitor::visit_load(n);
    }
    void visit_store(const StoreNode* n) override {
      if (n->indices.size() != 1) ++c.multi_dim;
      IRVisitor::visit_store(n);
    }
  } v;
  v.visit(f.body);
  return v.c;
}

// Runs every stage of the pipeline and compares each with the original, bit for bit (the
// passes do not reorder float arithmetic).
void check_pipeline(const FunctionNode& f, const ArgMap& given = {}, uint64_t seed = 1) {
  ArgMap in = random_inputs(f, seed, given);
  ArgMap ref = run_interp(f, in);
  Function a = lower_init(f);
  EXPECT_EQ(count(*a).inits, 0);
  expect_same(run_on(*a, in, ref), ref, "lower_init");
  Function b = convert_blocks(*a);
  EXPECT_EQ(count(*b).blocks_with_iters, 0) << print_function(*b);
  expect_same(run_on(*b, in, ref), ref, "convert_blocks");
  Function c = plan_alloc(*b);
  expect_same(run_on(*c, in, ref), ref, "plan_alloc");
  Function d = flatten_buffers(*c);
  EXPECT_EQ(count(*d).multi_dim, 0) << print_function(*d);
  expect_same(run_on(*d, in, ref), ref, "flatten_buffers");
  Function e = simplify_indices(*d);
  expect_same(run_on(*e, in, ref), ref, "simplify_indices");
  Function all = lower_function(f);
  expect_same(run_on(*all, in, ref), ref, "lower_function");
}

Function parse_one(const std::string& text, const std::string& name) {
  Module m = parse_module(text, "test.tir");
  return m.find_func(name);
}

}  // namespace

TEST(Lower, Examples) {
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    SCOPED_TRACE(ex);
    Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + ex + ".tir");
    check_pipeline(*m.find_func(ex));
  }
}

TEST(Lower, InitGuardUsesEveryReduceVar) {
  Function f = parse_one(R"(
func f(A: f32[4, 6, 5]) -> (B: f32[4]) {
  for i, k0, k1 in grid(4, 6, 5) {
    block b(vi: spatial(4) = i, vk: reduce(6) = k0, vl: reduce(5) = k1) {
      init { B[vi] = 1.0 }
      B[vi] = B[vi] * 0.5 + A[vi, vk, vl]
    }
  }
}
)", "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = print_function(*lower_init(*f));
  EXPECT_NE(text.find("if vk == 0 && vl == 0 {"), std::string::npos) << text;
}

TEST(Lower, PredicatesSymbolicShapesAndBlockAllocs) {
  Function f = parse_one(R"(
func f(n: i32, A: f32[n, 3]) -> (B: f32[n]) {
  for i0, i1 in grid((n + 3) // 4, 4) {
    block b(vi: spatial(n) = i0 * 4 + i1) {
      where i0 * 4 + i1 < n
      alloc T: f32[3]
      for k in serial(3) {
        block t(wi: spatial(n) = vi, vk: spatial(3) = k) { T[vk] = A[wi, vk] * 2.0 }
      }
      B[vi] = T[0] + T[1] + T[2]
    }
  }
}
)", "f");
  ASSERT_TRUE(f);
  NDArray n(DType::I32, {});
  n.set(0, 10);
  check_pipeline(*f, {{"n", n}});
  Counts c = count(*lower_function(*f));
  EXPECT_EQ(c.blocks_with_iters, 0);
  EXPECT_EQ(c.scope_blocks, 1);  // the block that owns T
}

TEST(Lower, PlanAllocMovesBufferIntoParallelLoop) {
  Function f = parse_one(R"(
func f(A: f32[8, 16]) -> (B: f32[8, 16]) {
  alloc T: f32[16]
  for i in parallel(8) {
    for j in serial(16) {
      block t(vi: spatial(8) = i, vj: spatial(16) = j) { T[vj] = A[vi, vj] + 1.0 }
    }
    for j in serial(16) {
      block b(vi: spatial(8) = i, vj: spatial(16) = j) { B[vi, vj] = T[15 - vj] * 2.0 }
    }
  }
}
)", "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  Function g = plan_alloc(*convert_blocks(*lower_init(*f)));
  EXPECT_TRUE(root_block(*g).allocs.empty()) << print_function(*g);
  std::string text = print_function(*g);
  EXPECT_NE(text.find("for i in parallel(8) {\n    block alloc_i_0() {\n      alloc T: f32[16]"), std::string::npos)
      << text;
}

TEST(Lower, FlattenUsesRowMajorStrides) {
  Function f = parse_one(R"(
func f(A: f32[3, 4, 5]) -> (B: f32[3, 4, 5]) {
  for i, j, k in grid(3, 4, 5) {
    block b(vi: spatial(3) = i, vj: spatial(4) = j, vk: spatial(5) = k) { B[vi, vj, vk] = A[vi, vj, vk] }
  }
}
)", "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = print_function(*flatten_buffers(*convert_blocks(*f)));
  EXPECT_NE(text.find("B[(i * 4 + j) * 5 + k] = A[(i * 4 + j) * 5 + k]"), std::string::npos) << text;
  EXPECT_NE(text.find("A: f32[60]"), std::string::npos) << text;
  text = print_function(*lower_function(*f));  // the arithmetic simplifier distributes
  EXPECT_NE(text.find("B[i * 20 + j * 5 + k] = A[i * 20 + j * 5 + k]"), std::string::npos) << text;
}

TEST(Lower, SimplifyFoldsIndexConstants) {
  Var i("i");
  Expr e = (i + 3) + 4;
  EXPECT_EQ(print_expr(simplify_index_expr(e)), "i + 7");
  EXPECT_EQ(print_expr(simplify_index_expr(i * 1 + 0 * i)), "i");
  EXPECT_EQ(print_expr(simplify_index_expr(floordiv(make_int(-7), make_int(2)))), "-4");
  EXPECT_EQ(print_expr(simplify_index_expr(floormod(make_int(-7), make_int(2)))), "1");
}

}  // namespace tirc

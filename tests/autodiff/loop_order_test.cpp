// Loop order of F_grad's blocks (transforms/autodiff/loop_order.h): the innermost loop of an
// emitted block walks memory contiguously, the forward blocks keep the author's order, and
// the gradient is bit-identical to the one emitted without reordering.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/verify.h"

using namespace tirc;
using tirc::testing::parse_one;

namespace {

// Loop vars from the root down to block `name`, outermost first.
std::vector<const VarNode*> loops_of(const FunctionNode& f, const std::string& name,
                                     const BlockRealizeNode** realize = nullptr) {
  struct Walk : IRVisitor {
    std::string name;
    std::vector<const VarNode*> stack, found;
    const BlockRealizeNode* br = nullptr;
    void visit_for(const ForNode* n) override {
      stack.push_back(n->loop_var.get());
      IRVisitor::visit_for(n);
      stack.pop_back();
    }
    void visit_block_realize(const BlockRealizeNode* n) override {
      if (n->block->name == name) {
        found = stack;
        br = n;
      }
      IRVisitor::visit_block_realize(n);
    }
  } w;
  w.name = name;
  w.visit(f.body);
  if (realize) *realize = w.br;
  return w.found;
}

// The iter var of block `name` bound to its innermost loop.
std::string innermost_iter_var(const FunctionNode& f, const std::string& name) {
  const BlockRealizeNode* br = nullptr;
  auto loops = loops_of(f, name, &br);
  if (!br || loops.empty()) return "";
  for (size_t i = 0; i < br->bindings.size(); ++i)
    if (br->bindings[i].get() == loops.back()) return br->block->iter_vars[i].var->name;
  return "";
}

const char* kDense = R"(
func dense(X: f32[16, 32], W: f32[24, 32]) -> (Y: f32[16, 24]) {
  for i, j, k in grid(16, 24, 32) {
    block Y(vi: spatial(16) = i, vj: spatial(24) = j, vk: reduce(32) = k) {
      init { Y[vi, vj] = 0.0 }
      Y[vi, vj] += X[vi, vk] * W[vj, vk]
    }
  }
}
)";

const char* kBiasGrad = R"(
func colsum(X: f32[8, 40], B: f32[40]) -> (Y: f32[8, 40]) {
  for i, j in grid(8, 40) {
    block Y(vi: spatial(8) = i, vj: spatial(40) = j) { Y[vi, vj] = X[vi, vj] * B[vj] }
  }
}
)";

// The block of F_grad that writes `buffer` last (an adjoint block's name varies).
std::string writer_of(const FunctionNode& g, const std::string& buffer) {
  struct Walk : IRVisitor {
    std::string buffer, cur, found;
    void visit_block(const BlockNode* n) override {
      std::string saved = cur;
      cur = n->name;
      IRVisitor::visit_block(n);
      cur = saved;
    }
    void visit_store(const StoreNode* n) override {
      if (n->buffer->name == buffer && cur.find("_init") == std::string::npos) found = cur;
      IRVisitor::visit_store(n);
    }
  } w;
  w.buffer = buffer;
  w.visit(g.body);
  return w.found;
}

}  // namespace

// Name of the variable in the last index of the first store to `buffer` in block `block`.
std::string last_index_var(const FunctionNode& g, const std::string& block, const std::string& buffer) {
  struct Walk : IRVisitor {
    std::string block, buffer, cur, found;
    void visit_block(const BlockNode* n) override {
      std::string saved = cur;
      cur = n->name;
      IRVisitor::visit_block(n);
      cur = saved;
    }
    void visit_store(const StoreNode* n) override {
      if (cur == block && n->buffer->name == buffer && found.empty())
        if (auto* v = n->indices.back().as<VarNode>()) found = v->name;
      IRVisitor::visit_store(n);
    }
  } w;
  w.block = block;
  w.buffer = buffer;
  w.visit(g.body);
  return w.found;
}

TEST(LoopOrder, DenseGradientsRunAlongRows) {
  Function f = parse_one(kDense, "dense");
  Function g = gradient(*f, {});
  // W_grad[j, k] = sum_i Y_grad[i, j] * X[i, k] and X_grad[i, k] = sum_j Y_grad[i, j] * W[j, k]
  // are emitted over (j, k) and (i, k) with the reduction innermost; k, stride 1 in the
  // result and in the operand, must end up innermost.
  for (const char* buf : {"W_grad", "X_grad"}) {
    std::string blk = writer_of(*g, buf);
    ASSERT_FALSE(blk.empty()) << print_function(*g);
    ASSERT_EQ(loops_of(*g, blk).size(), 3u) << print_function(*g);
    std::string k = last_index_var(*g, blk, buf);
    EXPECT_FALSE(k.empty());
    EXPECT_EQ(innermost_iter_var(*g, blk), k) << buf << "\n" << print_function(*g);
  }
}

// The data gradient of a padded convolution is a gather with a `where` over the kernel
// window, emitted with the reduce loops (f, r, s) innermost: a serial chain of adds over 3
// taps. The output column (stride 1 in P_grad and Y_grad, 0 in W) vectorizes, so it goes
// innermost, predicate and all; the weight gradient (no predicate) keeps its sweep along
// the row too. Results stay bit-identical (LoopOrderZoo below covers conv2d).
TEST(LoopOrder, ConvDataGradientRunsAlongTheOutputRow) {
  Function f = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/conv2d.tir").funcs.at(0);
  Function g = gradient(*f, {});
  std::string blk = writer_of(*g, "P_grad");
  ASSERT_FALSE(blk.empty()) << print_function(*g);
  const BlockRealizeNode* br = nullptr;
  loops_of(*g, blk, &br);
  ASSERT_TRUE(br);
  int64_t pv = 0;
  ASSERT_FALSE(is_const_int(br->predicate, &pv) && pv == 1) << "the window guard is a where";
  std::string w = last_index_var(*g, blk, "P_grad");
  EXPECT_FALSE(w.empty());
  EXPECT_EQ(innermost_iter_var(*g, blk), w) << print_function(*g);
  // A short loop does not qualify: the 3-tap loop stays innermost in a 1-D conv with 6
  // inputs (too few to vectorize).
  Function small = parse_one(R"(
func c1(X: f32[6], W: f32[3]) -> (Y: f32[4]) {
  for i, r in grid(4, 3) {
    block c(vi: spatial(4) = i, vr: reduce(3) = r) {
      init { Y[vi] = 0.0 }
      Y[vi] += X[vi + vr] * W[vr]
    }
  }
})",
                             "c1");
  Function gs = gradient(*small, {});
  std::string bx = writer_of(*gs, "X_grad");
  ASSERT_FALSE(bx.empty()) << print_function(*gs);
  EXPECT_NE(innermost_iter_var(*gs, bx), last_index_var(*gs, bx, "X_grad")) << print_function(*gs);
}

// A stride-2 convolution's data gradient is split into phase blocks writing
// X_grad[.., 2 * y + a, 2 * x + b]; no loop walks X_grad with unit stride, and each phase
// was emitted with its 1- or 2-tap reduce loops innermost, so the channel loop outside them
// read W and Y_grad with strides of hundreds of elements for every element (278 ms of a
// 330 ms gradient at grad_scale's size). The output column (stride 2 in X_grad, 1 in
// Y_grad) goes innermost; a long reduce loop innermost (the 1-D conv above) is not moved.
TEST(LoopOrder, StridedConvPhasesRunAlongTheOutputRow) {
  Function f = parse_one(R"(
func cs(X: f32[2, 4, 21, 21], W: f32[3, 4, 3, 3]) -> (Y: f32[2, 3, 10, 10]) {
  for n, k, y, x, c, r, s in grid(2, 3, 10, 10, 4, 3, 3) {
    block conv(vn: spatial(2) = n, vk: spatial(3) = k, vy: spatial(10) = y, vx: spatial(10) = x,
               vc: reduce(4) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vk, vy, vx] = 0.0 }
      Y[vn, vk, vy, vx] += X[vn, vc, vy * 2 + vr, vx * 2 + vs] * W[vk, vc, vr, vs]
    }
  }
})",
                         "cs");
  Function g = gradient(*f, {"X"});
  size_t phases = 0;
  struct Names : IRVisitor {
    std::vector<std::string> names;
    void visit_block(const BlockNode* n) override {
      names.push_back(n->name);
      IRVisitor::visit_block(n);
    }
  } names;
  names.visit(g->body);
  for (auto& blk : names.names) {
    if (blk.rfind("conv_dX", 0) != 0) continue;
    ++phases;
    const BlockRealizeNode* br = nullptr;
    loops_of(*g, blk, &br);
    ASSERT_TRUE(br);
    // The spatial iter var of X_grad's last index (x of 2 * x + b) is innermost.
    std::string inner = innermost_iter_var(*g, blk);
    bool spatial_inner = false;
    for (auto& iv : br->block->iter_vars)
      if (iv.var->name == inner) spatial_inner = iv.kind == IterKind::Spatial;
    EXPECT_TRUE(spatial_inner) << blk << " innermost " << inner << "\n" << print_function(*g);
  }
  EXPECT_EQ(phases, 4u) << print_function(*g);
  ArgMap in = random_inputs(*f, 3);
  Function plain = gradient(*f, {"X"}, [] {
    GradientOptions o;
    o.order_loops = false;
    return o;
  }());
  in["Y_grad"] = random_inputs(*g, 4).at("Y_grad");
  auto a = run_interp(*g, in), b = run_interp(*plain, in);
  const NDArray &xa = a.at("X_grad"), &xb = b.at("X_grad");
  ASSERT_EQ(xa.nbytes(), xb.nbytes());
  EXPECT_EQ(std::memcmp(xa.data(), xb.data(), xa.nbytes()), 0);
}

// The forward blocks F_grad recomputes keep the author's loop order, even a bad one.
TEST(LoopOrder, ForwardBlocksKeepTheirOrder) {
  const char* src = R"(
func colmean(X: f32[8, 40]) -> (Y: f32[8, 40]) {
  alloc M: f32[40]
  for j, i in grid(40, 8) {
    block m(vj: spatial(40) = j, vi: reduce(8) = i) {
      init { M[vj] = 0.0 }
      M[vj] += X[vi, vj]
    }
  }
  for i, j in grid(8, 40) {
    block Y(vi: spatial(8) = i, vj: spatial(40) = j) { Y[vi, vj] = X[vi, vj] * M[vj] }
  }
}
)";
  Function f = parse_one(src, "colmean");
  Function g = gradient(*f, {});
  EXPECT_EQ(innermost_iter_var(*g, "m"), "vi") << print_function(*g);
}

TEST(LoopOrder, ColumnSumBecomesRowSweep) {
  Function f = parse_one(kBiasGrad, "colsum");
  Function g = gradient(*f, {"B"});
  std::string db = writer_of(*g, "B_grad");
  const BlockRealizeNode* br = nullptr;
  auto loops = loops_of(*g, db, &br);
  ASSERT_EQ(loops.size(), 2u) << print_function(*g);
  for (size_t i = 0; i < br->bindings.size(); ++i)
    if (br->bindings[i].get() == loops.back()) {
      EXPECT_EQ(br->block->iter_vars[i].kind, IterKind::Spatial) << print_function(*g);
    }
  GradientOptions off;
  off.order_loops = false;
  Function g0 = gradient(*f, {"B"}, off);
  auto loops0 = loops_of(*g0, writer_of(*g0, "B_grad"));
  ASSERT_EQ(loops0.size(), 2u);
  EXPECT_NE(loops0.back(), loops.back()) << "the test needs a nest that is reordered";
}

// Reordering changes no bit of any gradient: reduce loops keep their relative order.
class LoopOrderZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(LoopOrderZoo, BitIdentical) {
  std::string op = GetParam();
  Module m =
      parse_file((std::filesystem::path(TIRC_SOURCE_DIR) / "examples" / "ops" / (op + ".tir")).string());
  Function f = m.find_func(op);
  ASSERT_TRUE(f);
  GradientOptions off;
  off.order_loops = false;
  Function g = gradient(*f, {}), g0 = gradient(*f, {}, off);
  EXPECT_NE(print_function(*g), print_function(*g0)) << "nothing reordered in " << op;
  for (uint64_t seed : {1, 2}) {
    CompareOptions o;
    o.seed = seed;
    o.rtol = 0;
    o.atol = 0;
    CompareResult r = compare_functions(*g0, *g, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << op << ": " << r.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, LoopOrderZoo,
                         ::testing::Values("dense", "layer_norm", "batch_matmul", "matmul", "mlp",
                                           "attention", "group_norm", "lstm", "conv2d_nhwc", "outer", "add",
                                           "conv1d_strided"));

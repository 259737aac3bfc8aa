// Gradient cost fixes found by writing new operators as an outsider would (session r3):
// each test fails without its fix (structure or FLOP bound) and checks the values against
// finite differences in f64 (element by element), and second order where it applies.
#include <gtest/gtest.h>

#include <string>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::parse_one;

// F_grad printed and parsed back (what `tirc grad` hands to a later stage).
Function grad_text_roundtrip(const Function& f) {
  Module m;
  m.add_func(f);
  m.add_func(gradient(*f, {}));
  return parse_module(print_module(m), "grad.tir").find_func(f->name + "_grad");
}

std::vector<const BlockNode*> blocks_of(const FunctionNode& f) {
  std::vector<const BlockNode*> out;
  struct V : IRVisitor {
    std::vector<const BlockNode*>* out;
    void visit_block(const BlockNode* b) override {
      out->push_back(b);
      IRVisitor::visit_block(b);
    }
  } v;
  v.out = &out;
  v.visit(f.body);
  return out;
}

const BlockNode* block_named(const FunctionNode& f, const std::string& name) {
  for (auto* b : blocks_of(f))
    if (b->name == name) return b;
  return nullptr;
}

double flops(const FunctionNode& f, const ArgMap& scalars = {}) {
  return static_counts(f, scalars).total.flops;
}

void expect_full_check(const FunctionNode& f, const ArgMap& given = {}) {
  CheckGradOptions o;
  o.full = true;
  o.given = given;
  CheckGradResult r = check_grad(f, o);
  for (auto& ic : r.inputs)
    EXPECT_TRUE(ic.passed) << f.name << ": " << ic.name << " rel err " << ic.max_rel_err;
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.passed, 0);
}

void expect_second_order(const Function& f) {
  Function g = grad_text_roundtrip(f);
  ASSERT_TRUE(g);
  CheckGradResult r = check_grad(*g);
  for (auto& ic : r.inputs)
    EXPECT_TRUE(ic.passed) << g->name << ": " << ic.name << " rel err " << ic.max_rel_err;
  EXPECT_EQ(r.failed, 0);
}

// Huber-style elementwise loss of two inputs: both adjoints need the same derivative of
// abs(P - T); they are one block over the forward nest with two stores (it was two blocks,
// each recomputing everything: 4x forward).
TEST(AutodiffCostR3, PointwiseLeavesShareOneBlock) {
  Function f =
      parse_one(R"TIR(func huber(P: f32[10] in [-3.0, 3.0], T: f32[10] in [-3.0, 3.0]) -> (E: f32[10]) {
  for i in serial(10) {
    block elem(vi: spatial(10) = i) {
      let d = abs(P[vi] - T[vi])
      E[vi] = if_then_else(d < 1.0, 0.5 * d * d, d - 0.5)
    }
  }
})TIR",
                "huber");
  Function g = gradient(*f, {});
  int writers = 0;
  for (auto* b : blocks_of(*g)) {
    bool p = false, t = false;
    for (auto& w : b->writes) {
      p = p || w.buffer->name == "P_grad";
      t = t || w.buffer->name == "T_grad";
    }
    if (p || t) {
      ++writers;
      EXPECT_TRUE(p && t) << b->name << " writes only one of P_grad, T_grad:\n" << print_function(*g);
    }
  }
  EXPECT_EQ(writers, 1) << print_function(*g);
  EXPECT_LE(flops(*g), 2.5 * flops(*f)) << print_function(*g);  // two blocks: 4x
  expect_full_check(*f);
  expect_second_order(f);
}

// softsign: the adjoint needs the stored value x / (1 + |x|); recomputing that one division
// inline is cheaper than making F_grad recompute (and store) the whole forward block.
TEST(AutodiffCostR3, StoredValueRecomputedInlineWhenCheaper) {
  Function f = parse_one(R"TIR(func softsign(X: f32[3, 8] in [-3.0, 3.0]) -> (Y: f32[3, 8]) {
  for i, j in grid(3, 8) {
    block s(vi: spatial(3) = i, vj: spatial(8) = j) {
      Y[vi, vj] = X[vi, vj] / (1.0 + abs(X[vi, vj]))
    }
  }
})TIR",
                         "softsign");
  Function g = gradient(*f, {});
  EXPECT_EQ(block_named(*g, "s"), nullptr) << "the forward block is recomputed:\n" << print_function(*g);
  EXPECT_LE(flops(*g), 3 * flops(*f)) << print_function(*g);
  expect_full_check(*f);
  expect_second_order(f);
}

// When a later adjoint reads Y anyway (Z = Y * Y), Y's block is recomputed and the softsign
// adjoint reads Y back instead of recomputing the division.
TEST(AutodiffCostR3, StoredValueLoadedWhenRecomputedAnyway) {
  Function f = parse_one(R"TIR(func chain(X: f32[12] in [-3.0, 3.0]) -> (Z: f32[12]) {
  alloc Y: f32[12]
  for i in serial(12) {
    block s(vi: spatial(12) = i) {
      Y[vi] = X[vi] / (1.0 + abs(X[vi]))
    }
  }
  for i in serial(12) {
    block z(vi: spatial(12) = i) {
      Z[vi] = Y[vi] * Y[vi]
    }
  }
})TIR",
                         "chain");
  Function g = gradient(*f, {});
  EXPECT_NE(block_named(*g, "s"), nullptr) << print_function(*g);
  const BlockNode* d = block_named(*g, "s_dX");
  ASSERT_NE(d, nullptr) << print_function(*g);
  bool reads_y = false;
  for (auto& r : d->reads) reads_y = reads_y || r.buffer->name == "Y";
  EXPECT_TRUE(reads_y) << print_function(*g);
  expect_full_check(*f);
  expect_second_order(f);
}

// silu: two paths reach X; sweeping with seed 1 and multiplying by the cotangent once is
// one FLOP cheaper per element (3x instead of 3.5x).
TEST(AutodiffCostR3, SeedOneSweepWhenCheaper) {
  Function f = parse_one(R"TIR(func silu(X: f32[4, 8] in [-4.0, 4.0]) -> (Y: f32[4, 8]) {
  for i, j in grid(4, 8) {
    block y(vi: spatial(4) = i, vj: spatial(8) = j) {
      Y[vi, vj] = X[vi, vj] * sigmoid(X[vi, vj])
    }
  }
})TIR",
                         "silu");
  Function g = gradient(*f, {});
  EXPECT_LE(flops(*g), 3 * flops(*f)) << print_function(*g);
  expect_full_check(*f);
  expect_second_order(f);
}

// A sum with a negated update (Y -= E): the seed-1 sweep keeps the sign.
TEST(AutodiffCostR3, SeedOneSweepKeepsTheSignOfSubtraction) {
  Function f = parse_one(R"TIR(func negsum(X: f32[4, 6] in [-2.0, 2.0]) -> (Y: f32[4]) {
  for i, k in grid(4, 6) {
    block y(vi: spatial(4) = i, vk: reduce(6) = k) {
      init { Y[vi] = 1.0 }
      Y[vi] -= X[vi, vk] * sigmoid(X[vi, vk])
    }
  }
})TIR",
                         "negsum");
  expect_full_check(*f);
  expect_second_order(f);
}

// Symbolic sizes: `for i in serial(n)` gives i >= 0 and i < n, which hold on the adjoint's
// loops too; they must not become a `where` (which also kept per-row values from being
// hoisted: 3.4x instead of 2.1x).
TEST(AutodiffCostR3, SymbolicLoopBoundsAddNoPredicate) {
  Function f = parse_one(R"TIR(func rms(n: i32, X: f32[n, 8], G: f32[8]) -> (Y: f32[n, 8]) {
  alloc MS: f32[n]
  for i, k in grid(n, 8) {
    block ms(vi: spatial(n) = i, vk: reduce(8) = k) {
      init { MS[vi] = 0.0 }
      MS[vi] += X[vi, vk] * X[vi, vk] * 0.125
    }
  }
  for i, j in grid(n, 8) {
    block norm(vi: spatial(n) = i, vj: spatial(8) = j) {
      Y[vi, vj] = X[vi, vj] * rsqrt(MS[vi] + 1e-6) * G[vj]
    }
  }
})TIR",
                         "rms");
  Function g = gradient(*f, {});
  struct V : IRVisitor {
    std::string* bad;
    void visit_block_realize(const BlockRealizeNode* n) override {
      if (!is_one(n->predicate)) *bad += n->block->name + " ";
      IRVisitor::visit_block_realize(n);
    }
  } v;
  std::string bad;
  v.bad = &bad;
  v.visit(g->body);
  EXPECT_EQ(bad, "") << print_function(*g);
  bool hoisted = false;
  for (auto* b : blocks_of(*g)) hoisted = hoisted || b->name.rfind("hoist", 0) == 0;
  EXPECT_TRUE(hoisted) << print_function(*g);
  ArgMap n;
  NDArray five(DType::I32, {});
  five.set(0, 5);
  n["n"] = five;
  EXPECT_LE(flops(*g, n), 3 * flops(*f, n)) << print_function(*g);
  expect_full_check(*f, n);
}

// Adaptive average pooling: the window start `i * 5 // 3` leaves quotient and remainder vars
// free in the inverted map; the gather's loops ran over 51030 points (its `where` keeps 144)
// for 162 forward points. The scatter over the forward nest is emitted instead when the
// gather's box is much larger.
TEST(AutodiffCostR3, ScatterWhenTheGatherVisitsMorePoints) {
  Function f = parse_one(R"TIR(func apool(X: f32[2, 5, 7]) -> (S: f32[2, 3, 3]) {
  for c, i, j, r, s in grid(2, 3, 3, 3, 3) {
    block acc(vc: spatial(2) = c, vi: spatial(3) = i, vj: spatial(3) = j, vr: reduce(3) = r,
              vs: reduce(3) = s) {
      init { S[vc, vi, vj] = 0.0 }
      S[vc, vi, vj] += if_then_else(vi * 5 // 3 + vr < ((vi + 1) * 5 + 2) // 3 &&
                                    vj * 7 // 3 + vs < ((vj + 1) * 7 + 2) // 3,
                                    X[vc, vi * 5 // 3 + vr, vj * 7 // 3 + vs], 0.0)
    }
  }
})TIR",
                         "apool");
  Function g = gradient(*f, {});
  const BlockNode* d = block_named(*g, "acc_dX");
  ASSERT_NE(d, nullptr) << print_function(*g);
  EXPECT_EQ(d->annotations.count("atomic"), 1u) << print_function(*g);
  EXPECT_EQ(d->iter_vars.size(), 5u) << print_function(*g);
  EXPECT_LE(flops(*g), flops(*f)) << print_function(*g);
  expect_full_check(*f);
}

// The gather stays when it visits no more points than the forward (a valid 3-d convolution:
// the static count of its `where` is exact).
TEST(AutodiffCostR3, GatherKeptWhenNotCostlier) {
  Function f = parse_one(R"TIR(func conv(X: f32[1, 2, 3, 4], W: f32[2, 2, 2, 2]) -> (Y: f32[1, 2, 2, 3]) {
  for n, k, h, w, c, r, s in grid(1, 2, 2, 3, 2, 2, 2) {
    block conv(vn: spatial(1) = n, vk: spatial(2) = k, vh: spatial(2) = h, vw: spatial(3) = w,
               vc: reduce(2) = c, vr: reduce(2) = r, vs: reduce(2) = s) {
      init { Y[vn, vk, vh, vw] = 0.0 }
      Y[vn, vk, vh, vw] += X[vn, vc, vh + vr, vw + vs] * W[vk, vc, vr, vs]
    }
  }
})TIR",
                         "conv");
  Function g = gradient(*f, {});
  const BlockNode* d = block_named(*g, "conv_dX");
  ASSERT_NE(d, nullptr) << print_function(*g);
  EXPECT_EQ(d->annotations.count("atomic"), 0u) << print_function(*g);
  EXPECT_LE(flops(*g), 2 * flops(*f)) << print_function(*g);
  expect_full_check(*f);
}

// Softmax written without an `exp` buffer: F_grad recomputes exp(X - M) in the forward sum and
// in five adjoint blocks. The value is computed once into a buffer (hoist.cpp, find_shared):
// 4.0x -> 2.73x. Nested shared values (X - M inside exp) get no buffer of their own. Values
// as without hoisting (f64), finite differences element by element, second order.
TEST(AutodiffCostR3, SharedFullValuesComputedOnce) {
  Function f = parse_one(R"TIR(func softmax2(X: f32[4, 10]) -> (Y: f32[4, 10]) {
  alloc M: f32[4]
  alloc S: f32[4]
  for i, k in grid(4, 10) {
    block row_max(vi: spatial(4) = i, vk: reduce(10) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vk])
    }
  }
  for i, k in grid(4, 10) {
    block row_sum(vi: spatial(4) = i, vk: reduce(10) = k) {
      init { S[vi] = 0.0 }
      S[vi] += exp(X[vi, vk] - M[vi])
    }
  }
  for i, j in grid(4, 10) {
    block norm(vi: spatial(4) = i, vj: spatial(10) = j) {
      Y[vi, vj] = exp(X[vi, vj] - M[vi]) / S[vi]
    }
  }
})TIR",
                         "softmax2");
  Function g = gradient(*f, {});
  GradientOptions no;
  no.hoist = false;
  Function g0 = gradient(*f, {}, no);
  EXPECT_LE(flops(*g), 3 * flops(*f)) << print_function(*g);
  EXPECT_GT(flops(*g0), 3 * flops(*f));
  // exp is evaluated by one block only (the buffer of exp(X - M)), X - M by no other.
  int exps = 0;
  for (auto* b : blocks_of(*g)) {
    if (b->iter_vars.empty()) continue;  // the root holds every block
    bool has = false;
    for_each_expr(b->body, [&](const Expr& e) {
      if (auto* c = e.as<CallNode>()) has = has || c->op == Intrinsic::Exp;
    });
    exps += has;
  }
  EXPECT_EQ(exps, 1) << print_function(*g);
  ArgMap in = random_inputs(*g, 5);
  InterpOptions o;
  o.promote_f64 = true;
  ArgMap a = run_interp(*g, in, o), b = run_interp(*g0, in, o);
  for (auto& [name, arr] : a)
    for (int64_t i = 0; i < arr.numel(); ++i)
      EXPECT_NEAR(arr.get(i), b.at(name).get(i), 1e-12 * (1 + std::abs(arr.get(i))))
          << name << "[" << i << "]";
  expect_full_check(*f);
  expect_second_order(f);
}

}  // namespace
}  // namespace tirc

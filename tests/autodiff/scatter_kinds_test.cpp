// Iter var kinds of the scatter blocks of F_grad (transforms/autodiff/scatter_kinds.h): an
// iter var that indexes, as exactly itself, one dimension of every access of each buffer the
// block writes is spatial; "atomic" stays only while a reduce var is left, and then every
// store is `B[I] = B[I] + v`.
#include "transforms/autodiff/scatter_kinds.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/rewrite_check.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

using testing::parse_one;

const BlockNode* find_block(const FunctionNode& f, const std::string& name) {
  struct Find : IRVisitor {
    std::string name;
    const BlockNode* found = nullptr;
    void visit_block(const BlockNode* b) override {
      if (b->name == name) found = b;
      IRVisitor::visit_block(b);
    }
  } v;
  v.name = name;
  v.visit(f.body);
  return v.found;
}

// "vi1:spatial vk:reduce" for the block's iter vars, in order.
std::string kinds(const BlockNode& b) {
  std::string s;
  for (auto& iv : b.iter_vars) s += (s.empty() ? "" : " ") + iv.var.name() + ":" + iter_kind_name(iv.kind);
  return s;
}

using testing::expect_full_checks;

const char* kSoftmax = R"(func softmax(X: f32[4, 10] in [-3.0, 3.0]) -> (Y: f32[4, 10]) {
  alloc M: f32[4]
  alloc E: f32[4, 10]
  alloc S: f32[4]
  for i, k in grid(4, 10) {
    block row_max(vi: spatial(4) = i, vk: reduce(10) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vk])
    }
  }
  for i, j in grid(4, 10) {
    block exp(vi: spatial(4) = i, vj: spatial(10) = j) {
      E[vi, vj] = exp(X[vi, vj] - M[vi])
    }
  }
  for i, k in grid(4, 10) {
    block row_sum(vi: spatial(4) = i, vk: reduce(10) = k) {
      init { S[vi] = 0.0 }
      S[vi] += E[vi, vk]
    }
  }
  for i, j in grid(4, 10) {
    block norm(vi: spatial(4) = i, vj: spatial(10) = j) {
      Y[vi, vj] = E[vi, vj] / S[vi]
    }
  }
})";

// max's arg-extremum scatter X_grad[vi1, M_arg[vi1]] += M_grad[vi1]: the row var indexes
// the first dimension of every access of X_grad, so it is spatial and no reduce var is left
// (no "atomic"). It used to be reduce and atomic, and reverse_compute_at refused it.
TEST(ScatterKinds, ArgMaxRowIsSpatial) {
  Function f = parse_one(kSoftmax, "softmax");
  Function g = gradient(*f, {});
  const BlockNode* b = find_block(*g, "row_max_dX");
  ASSERT_TRUE(b) << print_function(*g);
  EXPECT_EQ(kinds(*b), b->iter_vars[0].var.name() + ":spatial") << print_function(*g);
  EXPECT_FALSE(b->annotations.count("atomic")) << print_function(*g);
  expect_full_checks(*f);
  expect_full_checks(*g);  // second order through the (now spatial) scatter
}

// An embedding lookup's scatter W_grad[I[vi0], vj0] += Y_grad[vi0, vj0]: the column var is
// spatial, the lookup var stays reduce (two lookups may hit one row) and the block atomic.
TEST(ScatterKinds, TakeColumnSpatialLookupReduce) {
  Function f = parse_one(R"(func take(W: f32[10, 4], I: i32[6] in [0, 9]) -> (Y: f32[6, 4]) {
  for i, j in grid(6, 4) {
    block Y(vi: spatial(6) = i, vj: spatial(4) = j) {
      Y[vi, vj] = W[I[vi], vj]
    }
  }
})",
                         "take");
  Function g = gradient(*f, {});
  const BlockNode* b = find_block(*g, "Y_dW");
  ASSERT_TRUE(b) << print_function(*g);
  ASSERT_EQ(b->iter_vars.size(), 2u);
  EXPECT_EQ(b->iter_vars[0].kind, IterKind::Reduce) << print_function(*g);
  EXPECT_EQ(b->iter_vars[1].kind, IterKind::Spatial) << print_function(*g);
  EXPECT_TRUE(b->annotations.count("atomic"));
  EXPECT_TRUE(sched::atomic_scatter_add(*b));
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// A negative term into a scatter with a reduce var left (`1 - W[I[vi], vj]`): stored as
// `W_grad[..] = W_grad[..] + -a`, the form the schedule and the backend make atomic (it was
// `W_grad[..] - a`, which parallel refused: not an atomic scatter-add).
TEST(ScatterKinds, NegativeTermIsAnAtomicAdd) {
  const std::string src = R"(func neg_take(W: f32[10, 4], I: i32[6] in [0, 9]) -> (Y: f32[6, 4]) {
  for i, j in grid(6, 4) {
    block Y(vi: spatial(6) = i, vj: spatial(4) = j) {
      Y[vi, vj] = 1.0 - W[I[vi], vj]
    }
  }
}

schedule neg_take_grad {
  i, j = sch.get_loops(sch.get_block("Y_dW"))
  sch.parallel(i)
}
)";
  Module m = parse_module(src, "neg_take.tir");
  Function f = m.find_func("neg_take");
  Function g = gradient(*f, {});
  const BlockNode* b = find_block(*g, "Y_dW");
  ASSERT_TRUE(b) << print_function(*g);
  EXPECT_TRUE(b->annotations.count("atomic"));
  EXPECT_TRUE(sched::atomic_scatter_add(*b)) << print_function(*g);
  expect_full_checks(*f);
  m.add_func(g);
  Module out = apply_module_schedules(m);
  Function s = out.find_func("neg_take_grad");
  CompareResult r = compare_functions(*g, *s, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
}

// Overlapping max pool: pool_dX's n and c are spatial (same dimension of every access of
// X_grad), its window vars stay reduce (windows overlap) and the block atomic; the scatter can
// then be moved into the argmax pass's fused (n, c) loop, which is made parallel.
TEST(ScatterKinds, MaxPoolBatchChannelSpatial) {
  const std::string src = R"(func pool(X: f32[2, 3, 7, 7]) -> (Y: f32[2, 3, 3, 3]) {
  for n, c, y, x, r, s in grid(2, 3, 3, 3, 3, 3) {
    block pool(vn: spatial(2) = n, vc: spatial(3) = c, vy: spatial(3) = y, vx: spatial(3) = x,
               vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vc, vy, vx] = min_value(f32) }
      Y[vn, vc, vy, vx] = max(Y[vn, vc, vy, vx], X[vn, vc, vy * 2 + vr, vx * 2 + vs])
    }
  }
}

schedule pool_grad {
  n, c, y, x, r, s = sch.get_loops(sch.get_block("pool_arg"))
  nc = sch.fuse(n, c)
  sch.reverse_compute_at(sch.get_block("pool_dX"), nc)
  sch.compute_at(sch.get_block("X_grad_init"), nc)
  sch.parallel(nc)
}
)";
  Module m = parse_module(src, "pool.tir");
  Function f = m.find_func("pool");
  Function g = gradient(*f, {});
  const BlockNode* b = find_block(*g, "pool_dX");
  ASSERT_TRUE(b) << print_function(*g);
  ASSERT_EQ(b->iter_vars.size(), 4u);
  EXPECT_EQ(b->iter_vars[0].kind, IterKind::Spatial);
  EXPECT_EQ(b->iter_vars[1].kind, IterKind::Spatial);
  EXPECT_EQ(b->iter_vars[2].kind, IterKind::Reduce);
  EXPECT_EQ(b->iter_vars[3].kind, IterKind::Reduce);
  EXPECT_TRUE(b->annotations.count("atomic"));
  expect_full_checks(*f);
  m.add_func(g);
  Module out = apply_module_schedules(m);
  Function s = out.find_func("pool_grad");
  for (uint64_t seed : {1u, 2u}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*g, *s, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail;
  }
}

// Cross-entropy's target scatter X_grad[vn0, I[vn0]] -= L_grad / 4 over the batch: the batch
// var is spatial, so the block is not atomic (its rows are disjoint) and joins the spatial
// adjoint block of the same forward block (loss_dM; loss_dM_dS since round 8 shares one
// block between the reads of a sum reduction).
TEST(ScatterKinds, CrossEntropyTargetScatterSpatial) {
  Function f = parse_one(R"(func ce(X: f32[4, 10] in [-3.0, 3.0], I: i32[4] in [0, 9]) -> (L: f32[1]) {
  alloc M: f32[4]
  alloc S: f32[4]
  for n, c in grid(4, 10) {
    block row_max(vn: spatial(4) = n, vc: reduce(10) = c) {
      init { M[vn] = min_value(f32) }
      M[vn] = max(M[vn], X[vn, vc])
    }
  }
  for n, c in grid(4, 10) {
    block row_sum(vn: spatial(4) = n, vc: reduce(10) = c) {
      init { S[vn] = 0.0 }
      S[vn] += exp(X[vn, vc] - M[vn])
    }
  }
  for n in serial(4) {
    block loss(vn: reduce(4) = n) {
      init { L[0] = 0.0 }
      L[0] += (M[vn] + log(S[vn]) - X[vn, I[vn]]) / 4.0
    }
  }
})",
                         "ce");
  Function g = gradient(*f, {});
  // The loss's adjoint block that stores X_grad (named after the reads it joins: loss_dM_dS
  // since the reads of a sum reduction share one block, outsider round 8).
  const BlockNode* b = nullptr;
  for (const char* n : {"loss_dX", "loss_dM", "loss_dM_dS"})
    if (const BlockNode* c = find_block(*g, n); c && !b) b = c;
  ASSERT_TRUE(b) << print_function(*g);
  bool stores_x = false;
  struct StoresX : IRVisitor {
    bool* hit;
    void visit_store(const StoreNode* n) override {
      if (n->buffer->name == "X_grad") *hit = true;
      IRVisitor::visit_store(n);
    }
  } sx;
  sx.hit = &stores_x;
  sx.visit(b->body);
  EXPECT_TRUE(stores_x) << b->name << "\n" << print_function(*g);
  ASSERT_EQ(b->iter_vars.size(), 1u);
  EXPECT_EQ(b->iter_vars[0].kind, IterKind::Spatial) << print_function(*g);
  EXPECT_FALSE(b->annotations.count("atomic")) << print_function(*g);
  expect_full_checks(*f);
  expect_full_checks(*g);
}

// The rule itself, on hand-written blocks (finish_scatter_block runs on a copy).
BlockNode finished(const std::string& body_src) {
  Module m = parse_module(body_src, "blk.tir");
  const BlockNode* b = find_block(*m.funcs[0], "s");
  EXPECT_TRUE(b);
  BlockNode copy = *b;
  ad::finish_scatter_block(copy);
  return copy;
}

TEST(ScatterKinds, RuleOnHandWrittenBlocks) {
  // vi indexes dimension 0 of A and dimension 1 of B in every access: spatial; vj never
  // indexes one dimension of A as itself: reduce, atomic kept.
  BlockNode b = finished(R"(func f(I: i32[3, 4], C: f32[3, 4]) -> (A: f32[3, 5], B: f32[4, 3]) {
  for i, j in grid(3, 4) {
    block s(vi: reduce(3) = i, vj: reduce(4) = j) {
      annotate("atomic", 1)
      A[vi, I[vi, vj]] = A[vi, I[vi, vj]] + C[vi, vj]
      B[vj, vi] = B[vj, vi] - C[vi, vj]
    }
  }
})");
  EXPECT_EQ(kinds(b), "vi:spatial vj:reduce");
  EXPECT_TRUE(b.annotations.count("atomic"));
  // The subtraction became an addition of the negation (atomic form).
  EXPECT_TRUE(sched::atomic_scatter_add(b));

  // A load of the written buffer at another row: vi does not partition A, stays reduce.
  b = finished(R"(func f(I: i32[3], C: f32[3]) -> (A: f32[4, 5]) {
  for i in serial(3) {
    block s(vi: reduce(3) = i) {
      annotate("atomic", 1)
      A[vi, I[vi]] = A[vi, I[vi]] + C[vi] * A[vi + 1, 0]
    }
  }
})");
  EXPECT_EQ(kinds(b), "vi:reduce");
  EXPECT_TRUE(b.annotations.count("atomic"));

  // `vi + 0`-like offsets are not the var itself: `A[vi + 1, ..]` stays reduce.
  b = finished(R"(func f(I: i32[3], C: f32[3]) -> (A: f32[4, 5]) {
  for i in serial(3) {
    block s(vi: reduce(3) = i) {
      annotate("atomic", 1)
      A[vi + 1, I[vi]] = A[vi + 1, I[vi]] + C[vi]
    }
  }
})");
  EXPECT_EQ(kinds(b), "vi:reduce");

  // Every reduce var partitions: all spatial, "atomic" dropped, the subtraction kept.
  b = finished(R"(func f(I: i32[3], C: f32[3]) -> (A: f32[3, 5]) {
  for i in serial(3) {
    block s(vi: reduce(3) = i) {
      annotate("atomic", 1)
      A[vi, I[vi]] = A[vi, I[vi]] - C[vi]
    }
  }
})");
  EXPECT_EQ(kinds(b), "vi:spatial");
  EXPECT_FALSE(b.annotations.count("atomic"));
  auto* st = b.body.as<StoreNode>();
  ASSERT_TRUE(st);
  auto* sub = st->value.as<BinaryNode>();
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->op, BinOp::Sub);

  // Not annotated "atomic": left alone.
  b = finished(R"(func f(I: i32[3], C: f32[3]) -> (A: f32[3, 5]) {
  for i in serial(3) {
    block s(vi: reduce(3) = i) {
      A[vi, I[vi]] = A[vi, I[vi]] + C[vi]
    }
  }
})");
  EXPECT_EQ(kinds(b), "vi:reduce");
}

// A parallel lookup loop of an atomic scatter with a vectorized (spatial) column loop would
// make plain vector updates from two threads at once: refused, whichever comes second.
TEST(ScatterKinds, ParallelReduceWithVectorizedSpatialRefused) {
  const std::string fwd = R"(func take(W: f32[10, 16], I: i32[6] in [0, 9]) -> (Y: f32[6, 16]) {
  for i, j in grid(6, 16) {
    block Y(vi: spatial(6) = i, vj: spatial(16) = j) {
      Y[vi, vj] = W[I[vi], vj]
    }
  }
}
)";
  auto refusal = [&](const std::string& sched) -> std::string {
    Module m = parse_module(fwd + sched, "take.tir");
    m.add_func(gradient(*m.find_func("take"), {}));
    try {
      apply_module_schedules(m);
    } catch (const SourceError& e) {
      return e.message();
    }
    return "";
  };
  EXPECT_EQ(refusal(R"(schedule take_grad {
  i, j = sch.get_loops(sch.get_block("Y_dW"))
  sch.parallel(i)
  sch.vectorize(j)
})"),
            // Accepted since schedule round 5: the backend keeps the vectorized loop scalar under the
            // parallel loop, each update an atomicrmw (tests/schedule/prims_r5_test.cpp runs it).
            "");
  EXPECT_EQ(refusal(R"(schedule take_grad {
  i, j = sch.get_loops(sch.get_block("Y_dW"))
  sch.vectorize(j)
  sch.parallel(i)
})"),
            "");
  // Each alone applies.
  EXPECT_EQ(refusal(R"(schedule take_grad {
  i, j = sch.get_loops(sch.get_block("Y_dW"))
  sch.vectorize(j)
})"),
            "");
  EXPECT_EQ(refusal(R"(schedule take_grad {
  i, j = sch.get_loops(sch.get_block("Y_dW"))
  sch.parallel(i)
})"),
            "");
}

// ---- Several stores to one buffer at disjoint elements in one block (normalisation) ----
//
// `Y[vi, vj] = a; Y[vi, vj + 3] = b` over vj in [0, 3): the columns never meet, so rewrite 2
// splits the block into one block per store (iterations_disjoint with offsets_apart); it was
// refused ("several stores to Y in one block body are not supported") because the mixed-radix
// test needed the coefficient of vj (1) above the offset span (3).
TEST(SeveralStoresOneBuffer, GluLikeForwardSplit) {
  std::string text = testing::check_rewrite(R"(func glu(X: f32[4, 6]) -> (Y: f32[4, 6]) {
  for i, j in grid(4, 3) {
    block B(vi: spatial(4) = i, vj: spatial(3) = j) {
      Y[vi, vj] = X[vi, vj] * sigmoid(X[vi, vj + 3])
      Y[vi, vj + 3] = X[vi, vj + 3] * 2.0
    }
  }
})",
                                            "glu");
  EXPECT_TRUE(testing::contains(text, "block B_1(")) << text;
  Function g = gradient(*parse_one(text, "glu"), {});
  expect_full_checks(*g);  // and differentiated again
}

// The form F_grad would take with one adjoint block per GLU read (shared lets, X_grad stored
// at two column ranges): accepted, and its gradient checks to second order.
TEST(SeveralStoresOneBuffer, GradLikeAccumulationsSplit) {
  std::string text = testing::check_rewrite(R"(func gl(X: f32[4, 6], G: f32[4, 3]) -> (DX: f32[4, 6]) {
  for i, j in grid(4, 6) {
    block z(vi: spatial(4) = i, vj: spatial(6) = j) {
      DX[vi, vj] = X[vi, vj] * 0.5
    }
  }
  for i, j in grid(4, 3) {
    block B(vi: spatial(4) = i, vj: spatial(3) = j) {
      let s = sigmoid(X[vi, vj + 3])
      let a = G[vi, vj]
      DX[vi, vj] = DX[vi, vj] + a * s
      DX[vi, vj + 3] = DX[vi, vj + 3] + a * X[vi, vj] * (s * (1.0 - s))
    }
  }
})",
                                            "gl");
  Function g = gradient(*parse_one(text, "gl"), {});
  expect_full_checks(*g);
}

// Columns that do meet stay refused: `Y[vi, vj + 3]` with vj in [0, 4) writes column 3, which
// `Y[vi, vj]` writes at vj = 3 (a different instance): an invalid block, named by rewrite
// 0c's enumeration; `Y[vi, vj + 1]` likewise.
std::string grad_error(const std::string& src, const std::string& name) {
  try {
    gradient(*parse_one(src, name), {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SeveralStoresOneBuffer, OverlappingColumnsRefused) {
  const std::string why =
      " (a block whose spatial iterations conflict is invalid: give each iteration elements of its own, e.g. "
      "index the scratch buffer by every spatial iter var)";
  EXPECT_EQ(grad_error(R"(func ov(X: f32[4, 7]) -> (Y: f32[4, 7]) {
  for i, j in grid(4, 4) {
    block B(vi: spatial(4) = i, vj: spatial(4) = j) {
      Y[vi, vj] = X[vi, vj] * 2.0
      Y[vi, vj + 3] = X[vi, vj + 3] * 3.0
    }
  }
})",
                       "ov"),
            "block B: its iterations (vi = 0, vj = 0) and (vi = 0, vj = 3) both write Y[0, 3]" + why);
  EXPECT_EQ(grad_error(R"(func ov1(X: f32[4, 4]) -> (Y: f32[4, 4]) {
  for i, j in grid(4, 3) {
    block B(vi: spatial(4) = i, vj: spatial(3) = j) {
      Y[vi, vj] = X[vi, vj] * 2.0
      Y[vi, vj + 1] = X[vi, vj + 1] * 3.0
    }
  }
})",
                       "ov1"),
            "block B: its iterations (vi = 0, vj = 0) and (vi = 0, vj = 1) both write Y[0, 1]" + why);
}

// A spatial in-place accumulation `Y[I] = Y[I] - E` (a piece of a split block writes so, as
// F_grad's own accumulating blocks do) passes Y's cotangent through whole, as a sum does: no
// `<block>_mask` zeroing the elements it wrote and no block adding G back for its `Y[I]` read
// (both were emitted before: 2 blocks and one FLOP per element more).
TEST(SeveralStoresOneBuffer, InPlaceAccumulationPassesThrough) {
  Function f = parse_one(R"(func acc(X: f32[8], W: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block first(vi: spatial(8) = i) { Y[vi] = X[vi] * X[vi] }
  }
  for i in serial(6) {
    block upd(vi: spatial(6) = i) {
      if X[vi] > 0.0 {
        Y[vi + 1] = Y[vi + 1] - W[vi] * X[vi + 2]
      }
    }
  }
})",
                         "acc");
  Function g = gradient(*f, {});
  EXPECT_FALSE(find_block(*g, "upd_mask")) << print_function(*g);
  EXPECT_TRUE(find_block(*g, "upd_pass")) << print_function(*g);
  EXPECT_FALSE(find_block(*g, "upd_dY_v2")) << print_function(*g);
  EXPECT_FALSE(find_block(*g, "upd_dY")) << print_function(*g);
  expect_full_checks(*f);
  expect_full_checks(*g);
}

}  // namespace
}  // namespace tirc

// Fixes found by the seventh outsider round (tests/zoo/outsider7): each test failed before.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::parse_one;

using testing::expect_full_checks;

// Every block iter var has the dtype of its binding (LANGUAGE.md: operands of one operation
// share a dtype; the printer hides a mismatch, since `v: spatial(2) = i` re-parses as i32).
struct IterDtypes : IRVisitor {
  std::string bad;
  void visit_block_realize(const BlockRealizeNode* n) override {
    const auto& ivs = n->block->iter_vars;
    for (size_t k = 0; k < ivs.size() && k < n->bindings.size(); ++k)
      if (ivs[k].var.dtype() != n->bindings[k].dtype()) bad += n->block->name + "." + ivs[k].var->name + " ";
    IRVisitor::visit_block_realize(n);
  }
};
std::string iter_dtype_mismatches(const FunctionNode& f) {
  IterDtypes v;
  v.visit(f.body);
  return v.bad;
}

// A reduction over an i64 loop nest split by hand (outsider5 `i64_split`): the gather into X
// bound new i32 iter vars to the i64 forward loops, and the second order (built from that
// F_grad in memory) mixed i32 and i64 in one index (`i64((v2 - 2 * r0 - r1) // 2)` with r0 an
// i32 iter var of an i64 loop): the interpreter refused the ill-typed IR.
TEST(Outsider7Fix, I64LoopsGiveI64IterVars) {
  Function f = parse_one(R"(
func i64_split(X: f32[10], W: f32[3]) -> (Y: f32[4]) {
  for i in serial(i64(4)) {
    for x0 in serial(i64(2)) {
      for y0 in serial(i64(2)) {
        block c(vi: spatial(i64(4)) = i, vk: reduce(i64(3)) = x0 * 2 + y0) {
          where x0 * 2 + y0 < 3
          init { Y[vi] = 0.0 }
          Y[vi] = Y[vi] + X[vi * 2 + vk] * W[vk]
        }
      }
    }
  }
}
)",
                         "i64_split");
  Function g = gradient(*f, {});
  EXPECT_EQ(iter_dtype_mismatches(*g), "") << print_function(*g);
  expect_full_checks(*g);
  Function gg = gradient(*g, {});
  EXPECT_EQ(iter_dtype_mismatches(*gg), "") << print_function(*gg);
  ASSERT_NO_THROW(run_interp(*gg, random_inputs(*gg, 11)));
}

// A scatter whose written element is computed through a let (`let t = f32(vl) + Off[vl]`,
// `Y[i32(floor(t))] += ...`, as a deformable conv's backward writes): the linearisation
// rebinds the let to a temp, but the cotangent was loaded at the original store index, so
// F_grad read the unbound let var (the interpreter refused it; the second order of a
// deformable conv1d hit it).
TEST(Outsider7Fix, StoreIndexThroughLet) {
  Function f = parse_one(R"(
func f(X: f32[8], Off: f32[8] in [-1.5, 1.5], G: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block z(v: spatial(8) = i) { Y[v] = 0.0 }
  }
  for l in serial(8) {
    block d(vl: reduce(8) = l) {
      let t = f32(vl) + Off[vl]
      let a = G[vl] * X[vl]
      if i32(floor(t)) >= 0 && i32(floor(t)) < 8 {
        Y[i32(floor(t))] = Y[i32(floor(t))] + a * t
      }
    }
  }
}
)",
                         "f");
  expect_full_checks(*f);
}

// A bilinear gather's adjoint accumulates at `X_grad[c, min(i32(floor(f32(h) * 0.5)) + 1, 3),
// ...]`; hoisting moved `floor(f32(h) * 0.5)` into a buffer in the value (the `X_grad[..]`
// read) but not in the store's indices, so the block was no longer `A[I] = A[I] + t`: the
// second order refused it ("unsupported reduction update of X_grad_1") and the atomic add
// was not recognisable as one.
TEST(Outsider7Fix, HoistKeepsAccumulationForm) {
  Function f = parse_one(R"(
func bilinear_ac(X: f32[2, 4, 4]) -> (Y: f32[2, 7, 7]) {
  for c, h, w in grid(2, 7, 7) {
    block b(vc: spatial(2) = c, vh: spatial(7) = h, vw: spatial(7) = w) {
      let sh = f32(vh) * 0.5
      let sw = f32(vw) * 0.5
      let h0 = i32(floor(sh))
      let w0 = i32(floor(sw))
      let h1 = min(h0 + 1, 3)
      let w1 = min(w0 + 1, 3)
      let lh = sh - f32(h0)
      let lw = sw - f32(w0)
      Y[vc, vh, vw] = (1.0 - lh) * ((1.0 - lw) * X[vc, h0, w0] + lw * X[vc, h0, w1])
                      + lh * ((1.0 - lw) * X[vc, h1, w0] + lw * X[vc, h1, w1])
    }
  }
}
)",
                         "bilinear_ac");
  Function g = gradient(*f, {});
  // Every store of an atomic block is `B[I] = B[I] + v` with the same I.
  struct Check : IRVisitor {
    std::string bad;
    void visit_store(const StoreNode* s) override {
      auto* b = s->value.as<BinaryNode>();
      auto* l = b ? b->a.as<LoadNode>() : nullptr;
      if (l && l->buffer.same_as(s->buffer)) {
        bool same = l->indices.size() == s->indices.size();
        for (size_t k = 0; same && k < s->indices.size(); ++k)
          same = expr_identical(l->indices[k], s->indices[k]);
        if (!same) bad += s->buffer->name + " ";
      }
      IRVisitor::visit_store(s);
    }
  } c;
  c.visit(g->body);
  EXPECT_EQ(c.bad, "") << print_function(*g);
  CheckGradOptions o;
  o.full = true;
  CheckGradResult r = check_grad(*g, o);  // second order
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.passed, 0);
}

// A symbolic i64 length: the gather's loop over X_grad's dimension `n + 2` (i64) got an i32
// loop var and i32 iter vars, and its `where` compared the i32 var with `i32(k)`: the printed
// F_grad did not parse again ("type mismatch: i64 >= i32").
TEST(Outsider7Fix, SymbolicI64Gather) {
  Module m = parse_module(R"(
func sym_i64_conv(n: i64, X: f32[n + 2], W: f32[3]) -> (Y: f32[n]) {
  for l in serial(n) {
    for k in serial(i64(3)) {
      block c(vl: spatial(n) = l, vk: reduce(i64(3)) = k) {
        init { Y[vl] = 0.0 }
        Y[vl] += X[vl + vk] * W[i32(vk)]
      }
    }
  }
}
)",
                          "sym_i64_conv.tir");
  Function f = m.find_func("sym_i64_conv");
  Module gm;
  gm.add_func(gradient(*f, {}));
  EXPECT_EQ(iter_dtype_mismatches(*gm.funcs[0]), "") << print_function(*gm.funcs[0]);
  Module back = parse_module(print_module(gm), "g.tir");
  Function g = back.find_func("sym_i64_conv_grad");
  ASSERT_TRUE(g);
  NDArray n(DType::I64, {});
  n.set(0, 5);
  CheckGradOptions o;
  o.full = true;
  o.given["n"] = n;
  CheckGradResult r = check_grad(*f, o);
  EXPECT_EQ(r.failed, 0);
  r = check_grad(*g, o);  // second order, from the re-parsed F_grad
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.passed, 0);
}

// Max and product reductions over i64 loops: the arg-extremum / first-zero index blocks
// selected between the i64 reduce index and the i32 "no index" constant (the interpreter
// refused F_grad: "select arms have different dtypes i64 and i32"); the max's scatter
// decoded the i32 index into i64 vars without a cast.
TEST(Outsider7Fix, I64MaxAndProductReductions) {
  Function f = parse_one(R"(
func f(X: f32[4, 3] in [0.5, 1.5]) -> (P: f32[4], M: f32[4]) {
  for i, k in grid(i64(4), i64(3)) {
    block p(vi: spatial(i64(4)) = i, vk: reduce(i64(3)) = k) {
      init { P[vi] = 1.0 }
      P[vi] *= X[vi, vk] + 0.5
    }
  }
  for i, k in grid(i64(4), i64(3)) {
    block m(vi: spatial(i64(4)) = i, vk: reduce(i64(3)) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, 2 - vk] * X[vi, vk])
    }
  }
}
)",
                         "f");
  expect_full_checks(*f);
  Function g = gradient(*f, {});
  EXPECT_EQ(iter_dtype_mismatches(*g), "") << print_function(*g);
}

// Hoisting out of a block with a `where` over i64 iter vars: the hoisted block's loop var
// was i32 while the `where` rewritten onto it kept its i64 constants (`i13 % i64(2) ==
// i64(0)`: ill-typed).
TEST(Outsider7Fix, I64HoistUnderWhere) {
  Function f = parse_one(R"(
func f(X: f32[3, 3], W: f32[3]) -> (T2: f32[3]) {
  alloc T1: f32[3, 3]
  for i, j in grid(i64(3), i64(3)) {
    block a(vi: spatial(i64(3)) = i, vj: spatial(i64(3)) = j) { T1[vi, vj] = X[vi, vj] * X[vi, vj] }
  }
  for i, j in grid(i64(3), i64(3)) {
    block b1(vi: spatial(i64(3)) = i, vj: spatial(i64(3)) = j) {
      where j % 2 == 0
      T1[vi, vj] -= W[2] * log(W[(vj + 1) % 3] * W[(vj + 1) % 3] + 1.0)
    }
  }
  for i, k in grid(i64(3), i64(3)) {
    block b2(vi: spatial(i64(3)) = i, vk: reduce(i64(3)) = k) {
      init { T2[vi] = 0.0 }
      T2[vi] += T1[vk, vi] * T1[vk, vi]
    }
  }
}
)",
                         "f");
  expect_full_checks(*f);
}

// Two `if`s with complementary conditions storing one element (`if vi != 1 { Y = a }`,
// `if vi == 1 { Y = b }`), as one writes an if/else: normalisation split them into two
// blocks, and the copy initialising the second block's version read the elements only the
// second one writes (uninitialised: the interpreter refused F_grad). Now read as if/else,
// merged into one store.
TEST(Outsider7Fix, ComplementaryIfsAreIfElse) {
  Function f = parse_one(R"(
func f(X: f32[4, 4]) -> (T6: f32[4], T5: f32[4, 4]) {
  for i, j in grid(4, 4) {
    block b3(vi: spatial(4) = i, vj: spatial(4) = j) {
      if vi != 1 {
        T5[vi, vj] = tanh(X[vi, vj])
      }
      if vi == 1 {
        T5[vi, vj] = X[vi, vj] * 3.0
      }
    }
  }
  for k in serial(4) {
    block b4(vk: spatial(4) = k) { T6[vk] = T5[vk, vk] * T5[vk, vk] }
  }
}
)",
                         "f");
  expect_full_checks(*f);
}

// The adjoint of a read at a data-dependent index computed through a let that the term does
// not use (`X[v, i32(floor(t * 0.5 + 2.5))]` in F_grad, t = log(...)): the scatter's target
// index used t, which the block did not bind; the interpreter read t's binding left by an
// earlier block, so the second order was silently wrong (max rel err ~1).
TEST(Outsider7Fix, ScatterTargetLetsBound) {
  Function f = parse_one(R"(
func f(X: f32[4, 5]) -> (T4: f32[4, 5]) {
  for i, j in grid(4, 5) {
    block b2(vi: spatial(4) = i, vj: spatial(5) = j) {
      let u = log(pow(X[vi, vj] * X[vi, vj] + 1.0, 1.5) * pow(X[vi, vj] * X[vi, vj] + 1.0, 1.5) + 1.0)
      let p = i32(floor(u * 0.5 + 2.5))
      T4[vi, vj] = u * X[vi, min(max(p, 0), 4)] + u
    }
  }
}
)",
                         "f");
  Function g = gradient(*f, {});
  expect_full_checks(*g);  // second order
}

// A cyclic read `W[(vj + 1) % 3]` in a scan step with an if_then_else on the step: in the
// second order, the gather's `where` (the step guard, solved for the forward loop vars)
// kept the pinned quotient q of the `% 3` unbound.
TEST(Outsider7Fix, PinnedQuotientInWhere) {
  Function f = parse_one(R"(
func f(W: f32[3]) -> (T3: f32[4, 3]) {
  for i, j in grid(4, 3) {
    block b2(vi: spatial(4) = i, vj: scan(3) = j) {
      let x = W[(vj + 1) % 3] * W[(vj + 1) % 3]
      T3[vi, vj] = if_then_else(vj == 0, x, T3[vi, vj - 1] * x + x)
    }
  }
}
)",
                         "f");
  Function g = gradient(*f, {});
  expect_full_checks(*g);  // second order
}

// An output also read by a later block: its adjoint version starts as a copy of the cotangent
// (`T1_grad_1[v] = T1_grad[v]`), fused with the accumulation of the later block's term
// (`T1_grad_1[v] = T1_grad_1[v] + t`) into one block storing twice to T1_grad_1: the second
// order refused it ("several stores to T1_grad_1 in one block body"). The copy is forwarded
// now: one store `T1_grad_1[v] = T1_grad[v] + t`.
TEST(Outsider7Fix, FusedCopyForwarded) {
  Function f = parse_one(R"(
func f(X: f32[4, 3]) -> (T1: f32[4, 3], T3: f32[4, 3]) {
  for i, j in grid(4, 3) {
    block a(vi: spatial(4) = i, vj: spatial(3) = j) { T1[vi, vj] = X[vi, vj] * X[vi, vj] }
  }
  for i, j in grid(4, 3) {
    block b(vi: spatial(4) = i, vj: spatial(3) = j) {
      T3[vi, vj] = pow(T1[vi, vj] * T1[vi, vj] + 1.0, 1.5) * X[vi, (vj + 1) % 3]
    }
  }
}
)",
                         "f");
  Function g = gradient(*f, {});
  expect_full_checks(*g);  // second order
}

// A buffer written by two blocks whose `where`s partition it (TVM style, the first block's
// stored value read by its own adjoint, the whole buffer by a later block): the second
// block's version started as a copy of the whole first version, reading the elements the
// first block never wrote (uninitialised: the interpreter refused F_grad). The copy now
// takes only the elements the second block leaves alone (`if !(v >= 2)`).
TEST(Outsider7Fix, PartitionedWritesCopyWhatStays) {
  Function f = parse_one(R"(
func f(X: f32[3, 4], W: f32[4]) -> (T3: f32[3, 4]) {
  alloc T1: f32[3, 4]
  for i, j in grid(3, 4) {
    block lo(vi: spatial(3) = i, vj: spatial(4) = j) {
      where j < 2
      T1[vi, vj] = tanh(W[vj] * X[vi, vj])
    }
  }
  for i, j in grid(3, 4) {
    block hi(vi: spatial(3) = i, vj: spatial(4) = j) {
      where j >= 2
      T1[vi, vj] = W[vj] * X[vi, vj]
    }
  }
  for i, j in grid(3, 4) {
    block y(vi: spatial(3) = i, vj: spatial(4) = j) { T3[vi, vj] = max(T1[vi, 3 - vj], 0.1) }
  }
}
)",
                         "f");
  expect_full_checks(*f);
  // The same over i64 loops (the copy's condition is on i32 element indices: cast).
  f = parse_one(R"(
func g(X: f32[3, 4], W: f32[4]) -> (T3: f32[3, 4]) {
  alloc T1: f32[3, 4]
  for i, j in grid(i64(3), i64(4)) {
    block lo(vi: spatial(i64(3)) = i, vj: spatial(i64(4)) = j) {
      where j < 2
      T1[vi, vj] = tanh(W[vj] * X[vi, vj])
    }
  }
  for i, j in grid(i64(3), i64(4)) {
    block hi(vi: spatial(i64(3)) = i, vj: spatial(i64(4)) = j) {
      where j >= 2
      T1[vi, vj] = W[vj] * X[vi, vj]
    }
  }
  for i, j in grid(3, 4) {
    block y(vi: spatial(3) = i, vj: spatial(4) = j) { T3[vi, vj] = max(T1[vi, 3 - vj], 0.1) }
  }
}
)",
                "g");
  expect_full_checks(*f);
}

// F_grad of a half-type function has its derivative constants rounded to the type (bf16
// 2/sqrt(pi) = 1.125, 0.3% off; f16 and bf16 1/ln(10)): check-grad, which runs F_grad in f64,
// failed these correct gradients. It now allows 4 x the type's unit roundoff (relative) when
// F_grad holds half-type constants; zero tolerances still ask for exact agreement.
TEST(Outsider7Fix, HalfTypeDerivativeConstants) {
  Module m = parse_module(R"(
func e16(X: f16[8] in [-2.0, 2.0]) -> (Y: f16[8]) {
  for i in serial(8) {
    block g(vi: spatial(8) = i) { Y[vi] = erf(X[vi]) }
  }
}
func l16(X: bf16[8] in [0.5, 2.0]) -> (Y: bf16[8]) {
  for i in serial(8) {
    block g(vi: spatial(8) = i) { Y[vi] = log10(X[vi]) * 2.0 }
  }
}
func gelu(X: bf16[8] in [-3.0, 3.0]) -> (Y: bf16[8]) {
  for i in serial(8) {
    block g(vi: spatial(8) = i) { Y[vi] = X[vi] * 0.5 * (1.0 + erf(X[vi] * 0.70710678)) }
  }
}
)",
                          "half.tir");
  for (const char* name : {"e16", "l16", "gelu"}) {
    Function f = m.find_func(name);
    expect_full_checks(*f);
    CheckGradOptions o;
    o.full = true;
    o.rtol = 0;
    o.atol = 0;
    EXPECT_GT(check_grad(*f, o).failed, 0) << name;
  }
}

// Reads of X at the iteration point and at a permuted index (`X[vi, (vj + 2) % 5]` in a
// select arm, `X[vi, k]` with k = (vj + 1) % 5) join one adjoint block that stores to
// X_grad[vi, vj] twice (`X_grad[v] = a * t; X_grad[v] = X_grad[v] + b`): the second order
// refused it ("several stores to X_grad_1 in one block body"). The first value is forwarded
// into the second store now: `X_grad[v] = a * t + b`.
TEST(Outsider7Fix, FusedStoresToOneElementMerged) {
  Function f = parse_one(R"(
func f(X: f32[3, 5], T1: f32[3, 5], T3: f32[3, 5]) -> (T4: f32[3, 5]) {
  for i, j in grid(3, 5) {
    block b3(vi: spatial(3) = i, vj: spatial(5) = j) {
      let k = (vj + 1) % 5
      T4[vi, k] = min(select(T1[vi, vj] > 0.1, X[vi, (vj + 2) % 5], T1[vi, vj] * 0.5),
                      abs(T3[vi, (vj + 2) % 5] + 0.37) * 0.5) * X[vi, k]
    }
  }
}
)",
                         "f");
  expect_full_checks(*f);
  Function g = gradient(*f, {});
  expect_full_checks(*g);  // second order
}

}  // namespace
}  // namespace tirc

// Gradients of scans (recurrences): every case is checked against central finite
// differences in f64, element by element, after a print/parse round trip of F_grad, and
// again at second order; the structure test asserts that the adjoint of a scan is a scan
// running backwards; every refusal has its exact message.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

struct Case {
  const char* func;
  const char* src;
  bool second_order = true;
};

const Case kScans[] = {
    // Prefix sum along the inner axis (spatial outer loop, scan inner loop).
    {"cumsum", R"TIR(func cumsum(X: f32[3, 6]) -> (Y: f32[3, 6]) {
  for i, j in grid(3, 6) {
    block scan(vi: spatial(3) = i, vj: scan(6) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] + X[vi, vj])
    }
  }
})TIR"},
    // Exponential moving average with a learnt decay per channel (scan outer, spatial inner).
    {"ema", R"TIR(func ema(X: f32[7, 4], A: f32[4] in [0.1, 0.9]) -> (Y: f32[7, 4]) {
  for t, b in grid(7, 4) {
    block s(vt: scan(7) = t, vb: spatial(4) = b) {
      Y[vt, vb] = if_then_else(vt == 0, X[0, vb], Y[vt - 1, vb] * A[vb] + X[vt, vb] * (1.0 - A[vb]))
    }
  }
})TIR"},
    // A tanh RNN cell with a diagonal recurrent weight.
    {"rnn", R"TIR(func rnn(X: f32[6, 5], W: f32[5], U: f32[5]) -> (H: f32[6, 5]) {
  for t in serial(6) {
    for j in serial(5) {
      block h(vt: scan(6) = t, vj: spatial(5) = j) {
        let pre = X[vt, vj] * U[vj]
        H[vt, vj] = tanh(if_then_else(vt == 0, pre, H[vt - 1, vj] * W[vj] + pre))
      }
    }
  }
})TIR"},
    // Two steps of history.
    {"lookback2", R"TIR(func lookback2(X: f32[9]) -> (Y: f32[9]) {
  for t in serial(9) {
    block s(vt: scan(9) = t) {
      Y[vt] = if_then_else(vt < 2, X[vt], Y[vt - 1] * 0.5 + Y[vt - 2] * X[vt])
    }
  }
})TIR",
     false},  // the backward scan adds into two earlier steps: two stores, refused again
    // Each step reads the neighbours of the previous step (the adjoint scatters across
    // spatial points: its spatial vars become atomic reduce vars).
    {"stencil", R"TIR(func stencil(X: f32[5, 6]) -> (Y: f32[5, 6]) {
  for t, j in grid(5, 6) {
    block s(vt: scan(5) = t, vj: spatial(6) = j) {
      Y[vt, vj] = X[vt, vj] + if_then_else(vt > 0 && vj > 0, Y[vt - 1, vj - 1], 0.0) * 0.5
                 + if_then_else(vt > 0 && vj < 5, Y[vt - 1, vj + 1] * Y[vt - 1, vj + 1], 0.0) * 0.25
    }
  }
})TIR",
     false},  // two stores in the backward scan, and reduce vars next to its scan var
    // In place: the scan overwrites what an earlier block wrote and reads the old value.
    {"inplace", R"TIR(func inplace(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block cp(vi: spatial(8) = i) { Y[vi] = X[vi] }
  }
  for t in serial(1, 8) {
    block st(vt: scan(8) = t) { Y[vt] = Y[vt - 1] * 0.5 + Y[vt] * Y[vt] }
  }
})TIR"},
    // Reads an element that a later step overwrites (the value from before the scan).
    {"future", R"TIR(func future(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block cp(vi: spatial(8) = i) { Y[vi] = X[vi] * X[vi] }
  }
  for t in serial(1, 7) {
    block st(vt: scan(8) = t) { Y[vt] = Y[vt - 1] + Y[vt + 1] * 0.5 }
  }
})TIR"},
    // A producer before and a reduction after the scan.
    {"chain", R"TIR(func chain(X: f32[4, 5]) -> (S: f32[4]) {
  alloc P: f32[4, 5]
  alloc C: f32[4, 5]
  for i, j in grid(4, 5) {
    block p(vi: spatial(4) = i, vj: spatial(5) = j) { P[vi, vj] = sin(X[vi, vj]) }
  }
  for i, j in grid(4, 5) {
    block c(vi: spatial(4) = i, vj: scan(5) = j) {
      C[vi, vj] = if_then_else(vj == 0, P[vi, 0], C[vi, vj - 1] * P[vi, vj])
    }
  }
  for i, j in grid(4, 5) {
    block r(vi: spatial(4) = i, vj: reduce(5) = j) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + C[vi, vj] * C[vi, vj]
    }
  }
})TIR"},
    // Suffix sum written as a scan that runs from the end (store index 7 - vt).
    {"suffix", R"TIR(func suffix(X: f32[8]) -> (Y: f32[8]) {
  for t in serial(8) {
    block s(vt: scan(8) = t) {
      Y[7 - vt] = if_then_else(vt == 0, X[7], Y[8 - vt] + X[7 - vt])
    }
  }
})TIR"},
    // Running maximum (the gradient goes to the first argument on ties).
    {"runmax", R"TIR(func runmax(X: f32[10]) -> (Y: f32[10]) {
  for t in serial(10) {
    block s(vt: scan(10) = t) {
      Y[vt] = if_then_else(vt == 0, X[0], max(Y[vt - 1], X[vt]))
    }
  }
})TIR"},
    // Running product.
    {"runprod", R"TIR(func runprod(X: f32[7] in [0.5, 1.5]) -> (Y: f32[7]) {
  for t in serial(7) {
    block s(vt: scan(7) = t) {
      Y[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] * X[vt])
    }
  }
})TIR"},
    // A guard statement instead of if_then_else, the first element from another block.
    {"guarded", R"TIR(func guarded(X: f32[6], B: f32[1]) -> (Y: f32[6]) {
  block first() { Y[0] = B[0] * 2.0 }
  for t in serial(6) {
    block s(vt: scan(6) = t) {
      if vt > 0 {
        Y[vt] = Y[vt - 1] * X[vt] + exp(X[vt - 1])
      }
    }
  }
})TIR"},
    // Symbolic length.
    {"symbolic", R"TIR(func symbolic(n: i32 in [3, 6], X: f32[n]) -> (Y: f32[n]) {
  for t in serial(n) {
    block s(vt: scan(n) = t) {
      Y[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] * 0.9 + X[vt])
    }
  }
})TIR"},
    // The scan's result feeds a second scan.
    {"twoscans", R"TIR(func twoscans(X: f32[6]) -> (Z: f32[6]) {
  alloc Y: f32[6]
  for t in serial(6) {
    block a(vt: scan(6) = t) { Y[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] + X[vt]) }
  }
  for t in serial(6) {
    block b(vt: scan(6) = t) { Z[vt] = if_then_else(vt == 0, Y[0], Z[vt - 1] * Y[vt]) }
  }
})TIR"},
    // An Elman RNN: matrix-vector reduction and tanh, two blocks in one scan loop.
    {"rnn_mv", R"TIR(func rnn_mv(X: f32[5, 3], W: f32[4, 4], U: f32[4, 3]) -> (H: f32[5, 4]) {
  alloc A: f32[5, 4]
  for t in serial(5) {
    for i, k in grid(4, 4) {
      block pre(vt: scan(5) = t, vi: spatial(4) = i, vk: reduce(4) = k) {
        init { A[vt, vi] = 0.0 }
        A[vt, vi] = A[vt, vi] + if_then_else(vt > 0, W[vi, vk] * H[vt - 1, vk], 0.0)
                    + if_then_else(vk < 3, U[vi, vk] * X[vt, vk], 0.0)
      }
    }
    for i in serial(4) {
      block h(vt: scan(5) = t, vi: spatial(4) = i) { H[vt, vi] = tanh(A[vt, vi]) }
    }
  }
})TIR",
     false},
    // Three blocks, two reductions, an init reading a buffer from outside the loop (Bias).
    {"rnn_tanh",
     R"TIR(func rnn_tanh(X: f32[6, 3], W: f32[4, 4] in [-0.5, 0.5], U: f32[4, 3], Bias: f32[4]) -> (H: f32[6, 4]) {
  alloc XU: f32[6, 4]
  alloc A: f32[6, 4]
  for t in serial(6) {
    for i, k in grid(4, 3) {
      block xu(vt: scan(6) = t, vi: spatial(4) = i, vk: reduce(3) = k) {
        init { XU[vt, vi] = Bias[vi] * 2.0 }
        XU[vt, vi] = XU[vt, vi] + U[vi, vk] * X[vt, vk]
      }
    }
    for i, k in grid(4, 4) {
      block hw(vt: scan(6) = t, vi: spatial(4) = i, vk: reduce(4) = k) {
        init { A[vt, vi] = XU[vt, vi] }
        A[vt, vi] = A[vt, vi] + if_then_else(vt > 0, W[vi, vk] * H[vt - 1, vk], 0.0)
      }
    }
    for i in serial(4) {
      block h(vt: scan(6) = t, vi: spatial(4) = i) { H[vt, vi] = tanh(A[vt, vi]) }
    }
  }
})TIR",
     false},
    // A state overwritten at every step (normalisation keeps its history).
    {"state", R"TIR(func state(X: f32[6, 3], W: f32[3], H0: f32[3]) -> (H: f32[3]) {
  for j in serial(3) {
    block i0(vj: spatial(3) = j) { H[vj] = H0[vj] }
  }
  for t, j in grid(6, 3) {
    block h(vt: scan(6) = t, vj: spatial(3) = j) { H[vj] = tanh(H[vj] * W[vj] + X[vt, vj]) }
  }
})TIR"},
    // The same with if/else in the step, a loop starting at 1 and another block in the loop
    // (which reads the state: no history then, the gradient is refused; see StateReadByAnotherBlock).
    {"state2", R"TIR(func state2(X: f32[5, 4]) -> (S: f32[4], Y: f32[5, 4]) {
  for j in serial(4) {
    block z(vj: spatial(4) = j) { S[vj] = X[0, vj] }
  }
  for t in serial(1, 5) {
    for j in serial(4) {
      block acc(vt: scan(5) = t, vj: spatial(4) = j) {
        if vt % 2 == 0 {
          S[vj] = S[vj] * 0.5 + X[vt, vj] * S[vj]
        } else {
          S[vj] = sin(S[vj]) + X[vt, vj]
        }
      }
    }
    for j in serial(4) {
      block y(vt: scan(5) = t, vj: spatial(4) = j) { Y[vt, vj] = X[vt, vj] * X[vt, vj] }
    }
  }
})TIR",
     false},
    // Two blocks; the first reads the second's previous step, the second the first's current one.
    {"twoblock", R"TIR(func twoblock(X: f32[5]) -> (Y: f32[5]) {
  alloc A: f32[5]
  for t in serial(5) {
    block a(vt: scan(5) = t) { A[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] * 0.5) }
    block y(vt: scan(5) = t) { Y[vt] = sin(A[vt] * A[vt]) + X[vt] }
  }
})TIR",
     false},
    // A scan with a reduction in one block (init from the previous step) and a spatial
    // step var in a second block.
    {"scanred", R"TIR(func scanred(X: f32[4, 3], V: f32[3]) -> (Y: f32[4], Z: f32[4]) {
  for t in serial(4) {
    for k in serial(3) {
      block s(vt: scan(4) = t, vk: reduce(3) = k) {
        init { Y[vt] = if_then_else(vt == 0, 1.0, Y[vt - 1] * 0.5) }
        Y[vt] = Y[vt] + X[vt, vk] * V[vk]
      }
    }
    block z(vt: spatial(4) = t) { Z[vt] = sin(Y[vt]) }
  }
})TIR",
     false},
};

Function parse_func(const std::string& src, const std::string& name) {
  return parse_module(src, "scan.tir").find_func(name);
}

Function grad_roundtrip(const Function& f) {
  Module m;
  m.add_func(f);
  m.add_func(gradient(*f, {}));
  Module back = parse_module(print_module(m), "grad.tir");
  return back.find_func(f->name + "_grad");
}

CheckGradOptions opts_for(const FunctionNode& f) {
  CheckGradOptions o;
  o.full = true;
  o.seed = 11;
  for (auto& p : f.params)
    if (!p.is_buffer()) {
      o.given[p.name()] = NDArray(DType::I32, {});
      o.given[p.name()].set(0, 5);
    }
  return o;
}

class Scans : public ::testing::TestWithParam<Case> {};

TEST_P(Scans, CheckGradFull) {
  Function f = parse_func(GetParam().src, GetParam().func);
  Function g = grad_roundtrip(f);
  ASSERT_TRUE(g);
  CheckGradResult r = check_grad(*f, opts_for(*f));
  for (auto& ic : r.inputs) EXPECT_TRUE(ic.passed) << ic.name << " rel err " << ic.max_rel_err;
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.passed, 0);
}

TEST_P(Scans, SecondOrder) {
  if (!GetParam().second_order) GTEST_SKIP();
  Function f = parse_func(GetParam().src, GetParam().func);
  Function g = grad_roundtrip(f);
  ASSERT_TRUE(g);
  CheckGradResult r = check_grad(*g, opts_for(*g));
  for (auto& ic : r.inputs) EXPECT_TRUE(ic.passed) << ic.name << " rel err " << ic.max_rel_err;
  EXPECT_EQ(r.failed, 0);
}

INSTANTIATE_TEST_SUITE_P(Autodiff, Scans, ::testing::ValuesIn(kScans),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.func); });

// The adjoint of the recurrence is one block whose scan var runs the steps backwards; the
// contributions to X are parallel (spatial) blocks.
TEST(ScanStructure, AdjointIsABackwardScanAndXIsAGather) {
  Function f = parse_func(kScans[0].src, "cumsum");
  Function g = gradient(*f, {});
  std::string text = print_function(*g);
  EXPECT_NE(text.find("block scan_rev(vi0: spatial(3) = i, vj0: scan(6) = j)"), std::string::npos) << text;
  EXPECT_NE(text.find("Y_grad_1[vi0, -vj0 + 4] = Y_grad_1[vi0, -vj0 + 4] + a0"), std::string::npos) << text;
  int scans = 0, spatial_only = 0;
  struct V : IRVisitor {
    int *scans, *spatial_only;
    void visit_block(const BlockNode* b) override {
      bool scan = false, other = false;
      for (auto& iv : b->iter_vars) {
        scan = scan || iv.kind == IterKind::Scan;
        other = other || iv.kind != IterKind::Spatial;
      }
      if (scan) ++*scans;
      if (!b->iter_vars.empty() && !other && b->name.rfind("scan_dX", 0) == 0) ++*spatial_only;
      IRVisitor::visit_block(b);
    }
  } v;
  v.scans = &scans;
  v.spatial_only = &spatial_only;
  v.visit(g->body);
  EXPECT_EQ(scans, 1);  // only the backward scan; the forward is not recomputed (Y unused)
  EXPECT_EQ(spatial_only, 2);
}

// A stencil scan feeds other spatial points: its adjoint scatters, so its spatial vars are
// reduce vars and the block is marked atomic.
TEST(ScanStructure, CrossPointAdjointIsAtomic) {
  Function f = parse_func(kScans[4].src, "stencil");
  std::string text = print_function(*gradient(*f, {}));
  EXPECT_NE(text.find("block s_rev(vt0: scan(5) = t, vj0: reduce(6) = j)"), std::string::npos) << text;
  EXPECT_NE(text.find("annotate(\"atomic\", 1)"), std::string::npos) << text;
}

std::string refusal(const std::string& src, const std::string& func) {
  Function f = parse_func(src, func);
  try {
    gradient(*f, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A state overwritten at every step is kept as a history (normalisation rewrite 6) only
// when each step reads the element it writes; reading a neighbour's state is refused.
TEST(ScanRefusals, StateReadAtAnotherElement) {
  EXPECT_EQ(
      refusal(R"(func st(X: f32[6, 3]) -> (H: f32[3]) {
  for j in serial(3) {
    block i0(vj: spatial(3) = j) { H[vj] = 0.0 }
  }
  for t, j in grid(6, 3) {
    block h(vt: scan(6) = t, vj: spatial(3) = j) { H[vj] = tanh(H[(vj + 1) % 3] + X[vt, vj]) }
  }
})",
              "st"),
      // Refused since helper round 18 by rewrite 0c's conflict check (H at one step).
      "block h: its spatial iterations (vt = 0, vj = 0) and (vt = 0, vj = 1) conflict on H[1]: (vt = 0, vj "
      "= 0) reads it and (vt = 0, vj = 1) writes it, so the result depends on the order of the spatial "
      "iterations (at one step of the scan); LANGUAGE.md requires the spatial iterations of a block to be "
      "independent (a block whose spatial iterations conflict is invalid): read the old values from a copy "
      "of H, or make the var a scan var for a recurrence");
}

// A state read by a later block of its step (normalisation rewrite 6 with a reader): the
// reader reads the history at its step. This was refused ("a scan step must write elements
// of its own"); F_grad re-parses (the backward of the history's first step had a dead
// `S_hist[-1, ...]` load that the parser refuses: folded now) and passes check_grad.
TEST(ScanStates, StateReadByAnotherBlock) {
  Function f = parse_func(R"(func st(X: f32[5, 4]) -> (S: f32[4], Y: f32[5, 4]) {
  for j in serial(4) {
    block z(vj: spatial(4) = j) { S[vj] = X[0, vj] }
  }
  for t in serial(1, 5) {
    for j in serial(4) {
      block acc(vt: scan(5) = t, vj: spatial(4) = j) { S[vj] = sin(S[vj]) + X[vt, vj] }
    }
    for j in serial(4) {
      block y(vt: scan(5) = t, vj: spatial(4) = j) { Y[vt, vj] = X[vt, vj] * S[vj] }
    }
  }
})",
                          "st");
  Function g = grad_roundtrip(f);
  ASSERT_TRUE(g);
  CheckGradResult r = check_grad(*f, opts_for(*f));
  EXPECT_EQ(r.failed, 0) << print_function(*r.grad);
  EXPECT_GT(r.passed, 0);
}

// The plain state (no reader): its F_grad re-parses (it did not: `S_hist[-1, v]` in a
// `reads` region, from the dead arm of `if_then_else(0 == 0, S[v], S_hist[-1, v])`).
TEST(ScanStates, StateGradientReparses) {
  Function f = parse_func(R"(func st(X: f32[5, 4]) -> (S: f32[4]) {
  for j in serial(4) {
    block z(vj: spatial(4) = j) { S[vj] = X[0, vj] }
  }
  for t in serial(5) {
    for j in serial(4) {
      block acc(vt: scan(5) = t, vj: spatial(4) = j) { S[vj] = sin(S[vj]) + X[vt, vj] }
    }
  }
})",
                          "st");
  Function g = grad_roundtrip(f);
  ASSERT_TRUE(g);
  EXPECT_EQ(print_function(*g).find("[-1"), std::string::npos) << print_function(*g);
}

TEST(ScanRefusals, TwoScanVars) {
  EXPECT_EQ(refusal(R"(func dp(X: f32[4, 4]) -> (D: f32[4, 4]) {
  for i, j in grid(4, 4) {
    block d(vi: scan(4) = i, vj: scan(4) = j) {
      D[vi, vj] = X[vi, vj] + if_then_else(vi > 0 && vj > 0, D[vi - 1, vj - 1], 0.0)
    }
  }
})",
                    "dp"),
            "block d: several scan iter vars in one block are not supported");
}

// ScanRefusals.AccumulationOntoAnotherBlocksResultInARecurrence: accepted since helper round h5
// (normalisation rewrite 12), tests/autodiff/coupled_recurrence_test.cpp.

TEST(ScanRefusals, ReadOfALaterBlockAtTheSameStep) {
  EXPECT_EQ(refusal(R"(func early(X: f32[5]) -> (Y: f32[5]) {
  alloc A: f32[5]
  for t in serial(5) {
    block a(vt: scan(5) = t) { A[vt] = X[vt] + if_then_else(vt > 0, Y[vt], 0.0) }
    block y(vt: scan(5) = t) { Y[vt] = A[vt] * 2.0 }
  }
})",
                    "early"),
            "block a: reads Y at a step the loop has not computed yet");
}

TEST(ScanRefusals, BlockWithoutAStepVarInARecurrence) {
  // (w is recomputed the same way at every step; normalisation moves such a block in front
  // of the loop unless, as here, an earlier statement of the step reads what it writes:
  // tests/autodiff/outsider5_fix_test.cpp.)
  EXPECT_EQ(refusal(R"(func nostep(X: f32[5], Z: f32[3]) -> (Y: f32[5], W: f32[3]) {
  for t in serial(5) {
    block y(vt: scan(5) = t) { Y[vt] = if_then_else(vt == 0, X[0], Y[vt - 1] * X[vt] * W[1]) }
    for j in serial(3) {
      block w(vj: spatial(3) = j) { W[vj] = Z[vj] * 2.0 }
    }
  }
})",
                    "nostep"),
            "block w: inside the scan loop t, a block needs an iter var bound to t");
}

TEST(ScanRefusals, MaxReductionInARecurrence) {
  EXPECT_EQ(
      refusal(R"(func mx(X: f32[5, 3]) -> (Y: f32[5]) {
  for t, k in grid(5, 3) {
    block m(vt: scan(5) = t, vk: reduce(3) = k) {
      init { Y[vt] = if_then_else(vt == 0, 0.0, Y[vt - 1]) }
      Y[vt] = max(Y[vt], X[vt, vk])
    }
  }
})",
              "mx"),
      "block m: in a recurrence through several blocks (or with a reduction), a block must store a value "
      "or sum with an init (max, min, product and accumulation onto earlier content are not supported)");
}

TEST(ScanRefusals, NestedScanLoops) {
  EXPECT_EQ(refusal(R"(func nest(X: f32[4, 5]) -> (Y: f32[4, 5]) {
  alloc Z: f32[4]
  for t in serial(4) {
    block z(vt: scan(4) = t) { Z[vt] = if_then_else(vt == 0, X[0, 0], Z[vt - 1] + X[vt, 0]) }
    for s in serial(5) {
      block y(vt: spatial(4) = t, vs: scan(5) = s) {
        Y[vt, vs] = if_then_else(vs == 0, Z[vt], Y[vt, vs - 1] * X[vt, vs])
      }
    }
  }
})",
                    "nest"),
            "block y: a scan loop inside the scan loop t is not supported");
}

TEST(ScanRefusals, BindingIsNotALoopVar) {
  EXPECT_EQ(refusal(R"(func b2(X: f32[8]) -> (Y: f32[8]) {
  for t in serial(4) {
    block s(vt: scan(8) = t * 2) { Y[vt] = if_then_else(vt == 0, X[0], X[vt] * 2.0) }
  }
})",
                    "b2"),
            "block s: the scan var vt must be bound to a loop var (plus a constant)");
}

TEST(ScanRefusals, ReadAtAComputedStep) {
  EXPECT_EQ(
      refusal(R"(func half(X: f32[8]) -> (Y: f32[8]) {
  for t in serial(8) {
    block s(vt: scan(8) = t) { Y[vt] = if_then_else(vt == 0, X[0], Y[vt // 2] + X[vt]) }
  }
})",
              "half"),
      "block s: a scan step reads Y at an index that is not the scan var vt plus a constant in dimension 0");
}

TEST(ScanRefusals, ReadOfAnElementNotYetWritten) {
  EXPECT_EQ(refusal(R"(func ahead(X: f32[8]) -> (Y: f32[8]) {
  for t in serial(7) {
    block s(vt: scan(8) = t) { Y[vt] = X[vt] + Y[vt + 1] }
  }
})",
                    "ahead"),
            "block s reads Y before any block writes it");
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

TEST(ScanRefusals, ScanLoopAlsoBindsASpatialVar) {
  EXPECT_EQ(refusal(R"(func d(X: f32[6, 6]) -> (Y: f32[6, 6]) {
  for t in serial(6) {
    block s(vt: scan(6) = t, vi: spatial(6) = t) {
      Y[vt, vi] = if_then_else(vt == 0, X[0, vi], Y[vt - 1, vi] + X[vt, vi])
    }
  }
})",
                    "d"),
            "block s: the loop t of the scan var vt also binds iter var vi");
}

TEST(ScanRefusals, InnerLoopDependsOnTheScanLoop) {
  EXPECT_EQ(refusal(R"(func tri(X: f32[6, 6]) -> (Y: f32[6, 6]) {
  for t in serial(6) {
    for i in serial(t + 1) {
      block s(vt: scan(6) = t, vi: spatial(6) = i) {
        Y[vt, vi] = if_then_else(vt == 0, X[0, vi], Y[vt - 1, vi] + X[vt, vi])
      }
    }
  }
})",
                    "tri"),
            "block s: a loop or condition inside the scan loop t depends on it");
}

// ScanRefusals.RecurrenceBufferWrittenBeforeTheLoop: accepted since helper round h5 (normalisation rewrite
// 12), tests/autodiff/coupled_recurrence_test.cpp.

// A sum over the steps that reads the loop's results at steps already computed moves after
// the loop since helper round 17 (normalisation rewrite 13, tests/autodiff/normalize_r17_test.cpp);
// one reading a state before its update (overwritten at every step) stays refused.
TEST(ScanRefusals, ReduceVarBoundToTheScanLoop) {
  EXPECT_EQ(refusal(R"(func rv(X: f32[5]) -> (S: f32[1]) {
  alloc H: f32[1]
  block h0() { H[0] = 0.5 }
  for t in serial(5) {
    block s(z: spatial(1) = 0, vr: reduce(5) = t) {
      init { S[z] = 0.0 }
      S[z] = S[z] + H[0]
    }
    block h(vt: scan(5) = t) { H[0] = H[0] * 0.5 + X[vt] }
  }
})",
                    "rv"),
            "block s: sums over the steps of the scan loop t (reduce iter var vr bound to t) inside the "
            "recurrence, which gradient() does not support; such a sum moves after the loop by itself only "
            "when nothing else in the loop touches what it writes and it reads the loop's results at steps "
            "already computed (a state after its update, `H[t]`, `H[t - 1]`): otherwise store each step's "
            "term to an element of its own in the loop (`T[t] = ...`) and sum T in a loop of its own after "
            "the recurrence");
}

TEST(ScanRefusals, RecurrenceReadAtAComputedStep) {
  EXPECT_EQ(refusal(R"(func half(X: f32[8]) -> (Y: f32[8]) {
  alloc A: f32[8]
  for t in serial(8) {
    block a(vt: scan(8) = t) { A[vt] = if_then_else(vt == 0, X[0], Y[vt // 2] * 0.5) }
    block y(vt: scan(8) = t) { Y[vt] = A[vt] + X[vt] }
  }
})",
                    "half"),
            "block a: reads Y at an index that is not vt plus a constant in dimension 0 (nor an earlier "
            "step by an if_then_else guard around the read)");
}

}  // namespace
}  // namespace tirc

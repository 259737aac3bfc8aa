// Helper round 16: constructs the extended gradient fuzzer generates (grad_fuzz_gen.h,
// `extended`) that gradient() refused, and the two refusals lifted by this round. Each
// accepted form: check_grad --full in f64 on two seeds, F_grad printed / re-parsed (structurally
// equal, same text) and run; each form still refused: its exact message.
#include <gtest/gtest.h>

#include <string>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::expect_full_checks;
using testing::parse_one;

// check_grad --full, then F_grad printed, parsed back (same IR, same text) and run.
void expect_accepted(const std::string& src) {
  Function f = parse_one(src, "f");
  expect_full_checks(*f);
  Module gm;
  gm.add_func(gradient(*f, {}));
  std::string text = print_module(gm);
  Module back = parse_module(text, "f_grad.tir");
  auto d = structural_diff(gm, back);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << text;
  EXPECT_EQ(print_module(back), text);
  Function g = back.find_func("f_grad");
  ASSERT_TRUE(g);
  EXPECT_NO_THROW(run_interp(*g, random_inputs(*g, 1)));
}

void expect_refused(const std::string& src, const std::string& msg) {
  Function f = parse_one(src, "f");
  try {
    gradient(*f, {});
    ADD_FAILURE() << "accepted:\n" << src;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
  }
}

// ---- (a) two states sharing a let in one recurrence step ----
// Refused before ("a store reads S, which another store of the same block writes"):
// rewrite 6 kept the history of a one-store step only. Now each state gets its history; the
// let reads the states before the step's stores, a later let or store after them.

// Two states of an LSTM-like cell as an explicit scan block, the final states the outputs.
TEST(FuzzFixR16, TwoStatesSharedLetBlock) {
  expect_accepted(R"(func f(X: f32[6, 4], W: f32[4], S0: f32[4]) -> (S: f32[4], Q: f32[4]) {
  for j in serial(4) {
    block i(vj: spatial(4) = j) {
      S[vj] = S0[vj]
      Q[vj] = 1.0
    }
  }
  for t in serial(6) {
    for j in serial(4) {
      block step(vt: scan(6) = t, vj: spatial(4) = j) {
        let z = W[vj] * S[vj] + X[vt, vj]
        S[vj] = tanh(z)
        Q[vj] = sigmoid(z) * Q[vj]
      }
    }
  }
})");
}

// docs/autodiff.md's example (Welford-like, plain loops): v's update reads m after m's store
// in the same step (the new m) and the shared let d (the old m).
TEST(FuzzFixR16, TwoScalarStatesSharedLetPlainLoops) {
  expect_accepted(R"(func f(X: f32[6], m0: f32[1]) -> (M: f32[1], V: f32[1]) {
  alloc m: f32[1]
  alloc v: f32[1]
  m[0] = m0[0]
  v[0] = 0.0
  for t in serial(6) {
    let d = X[t] - m[0]
    m[0] = m[0] + d * 0.2
    v[0] = v[0] * 0.8 + d * (X[t] - m[0])
  }
  M[0] = m[0]
  V[0] = v[0]
})");
}

// A let bound between the two stores sees the first state's new value, and a block later in
// the step reads both states (each through its history: the readers of a block are kept per
// state now; one map entry per reader kept only the last state registered).
TEST(FuzzFixR16, TwoStatesLetBetweenStoresAndReader) {
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (H: f32[5, 3], S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block step(vt: scan(5) = t, vj: spatial(3) = j) {
        let z = S[vj] * Q[vj] + X[vt, vj]
        S[vj] = tanh(z)
        let u = S[vj] * 2.0 + z
        Q[vj] = sigmoid(u) * Q[vj] + 0.1 * S[vj]
      }
    }
    for j in serial(3) {
      block out(vt: scan(5) = t, vj: spatial(3) = j) {
        H[vt, vj] = S[vj] * Q[vj] + S[(vj + 1) % 3]
      }
    }
  }
})");
}

// Two single-state blocks in one step and a reader of both states: both loads become
// history loads. Before, the second state's reader entry replaced the first's, so the reader
// kept loading S itself (the final state, stored after the loop): a silently wrong gradient
// (check_grad --full: "X: max abs err 6.919e-01 ... FAILED", W too).
TEST(FuzzFixR16, ReaderOfTwoExpandedStates) {
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (H: f32[5, 3], S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block s(vt: scan(5) = t, vj: spatial(3) = j) {
        S[vj] = tanh(S[vj] * 0.7 + X[vt, vj])
      }
    }
    for j in serial(3) {
      block q(vt: scan(5) = t, vj: spatial(3) = j) {
        Q[vj] = sigmoid(Q[vj] + X[vt, vj])
      }
    }
    for j in serial(3) {
      block out(vt: scan(5) = t, vj: spatial(3) = j) {
        H[vt, vj] = S[vj] * Q[vj]
      }
    }
  }
})");
}

// Guards: one `if` around both stores, and a guard reading the first state's new value;
// a skipped step keeps each state (its history holds the kept value).
TEST(FuzzFixR16, TwoStatesUnderGuards) {
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block step(vt: scan(5) = t, vj: spatial(3) = j) {
        let z = S[vj] + X[vt, vj]
        if vt >= 1 {
          S[vj] = tanh(z)
          Q[vj] = sigmoid(z) * Q[vj]
        }
      }
    }
  }
})");
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block step(vt: scan(5) = t, vj: spatial(3) = j) {
        let z = S[vj] + X[vt, vj]
        if vt % 2 == 0 {
          S[vj] = tanh(z)
        }
        if S[vj] > 0.0 {
          Q[vj] = sigmoid(z) * Q[vj] + S[vj]
        }
      }
    }
  }
})");
}

// Still refused: a state read at another element than the one its step writes (the history
// of one element is not enough).
TEST(FuzzFixR16, TwoStatesOtherElementRefused) {
  expect_refused(R"(func f(X: f32[5, 3], W: f32[3]) -> (S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block step(vt: scan(5) = t, vj: spatial(3) = j) {
        let z = S[vj] + X[vt, vj]
        S[vj] = tanh(z)
        Q[vj] = sigmoid(z) * Q[(vj + 1) % 3]
      }
    }
  }
})",
                 // Refused since helper round 18 by rewrite 0c's conflict check (Q at one step).
                 "block step: its spatial iterations (vt = 0, vj = 0) and (vt = 0, vj = 1) conflict on Q[1]: "
                 "(vt = 0, vj = 0) reads it and (vt = 0, vj = 1) writes it, so the result depends on the order "
                 "of the spatial iterations (at one step of the scan)");
}

// Scan states under a `where` on a spatial loop (the fuzzer's `vj = j // 2` with
// `where j % 2 == 1`, and a point the predicate skips at every step): rewrite 6 needed a true
// predicate ("a store reads S, which another store of the same block writes" / "a scan step
// must write elements of its own"). The copy of the last step runs under the same predicate.
TEST(FuzzFixR16, TwoStatesUnderWhere) {
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (S: f32[3], Q: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
      block step(vt: scan(5) = t, vj: spatial(3) = j) {
        where j < 2
        let z = S[vj] * Q[vj] + X[vt, vj]
        S[vj] = tanh(z)
        Q[vj] = sigmoid(z) * Q[vj]
      }
    }
  }
})");
}

TEST(FuzzFixR16, StateHalvedBindingUnderWhere) {
  expect_accepted(R"(func f(X: f32[5, 3], W: f32[3]) -> (S: f32[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
    }
  }
  for t in serial(5) {
    for j in serial(6) {
      block step(vt: scan(5) = t, vj: spatial(3) = j // 2) {
        where j % 2 == 1
        S[vj] = tanh(S[vj] * 0.5 + X[vt, vj])
      }
    }
  }
})");
}

// ---- (b) opaque scatter-adds whose bindings are not plain loop vars ----
// Refused before ("opaque iter vars are not supported ..."): instances_distinct needed affine
// bindings. Now bindings that are not affine are checked point by point over the loop box.

TEST(FuzzFixR16, OpaqueScatterModBinding) {
  expect_accepted(R"(func f(X: f32[3], I: i32[3] in [0, 3]) -> (Y: f32[4]) {
  for i in serial(4) { block z(vi: spatial(4) = i) { Y[vi] = 0.0 } }
  for r in serial(3) {
    block s(r0: opaque(3) = r % 3) { Y[I[r0]] += X[r0] }
  }
})");
}

TEST(FuzzFixR16, OpaqueScatterFusedBindings) {
  expect_accepted(R"(func f(X: f32[6], I: i32[3] in [0, 3]) -> (Y: f32[4]) {
  for i in serial(4) { block z(vi: spatial(4) = i) { Y[vi] = 0.0 } }
  for r in serial(6) {
    block s(r0: opaque(3) = r // 2, r1: opaque(2) = r % 2) { Y[I[r0]] += X[r0 * 2 + r1] }
  }
})");
}

// `vi = i // 2` under `where i % 2 == p`: one instance per pair of iterations, for a scatter
// and for a spatial opaque block.
TEST(FuzzFixR16, OpaqueHalvedBindingWithWhere) {
  expect_accepted(R"(func f(X: f32[8], I: i32[4] in [0, 3]) -> (Y: f32[4], Z: f32[4]) {
  for i in serial(4) { block z(vi: spatial(4) = i) { Y[vi] = 0.0 } }
  for i in serial(8) {
    block s(vi: opaque(4) = i // 2) {
      where i % 2 == 0
      Y[I[vi]] += X[vi * 2 + 1] * X[vi * 2]
    }
  }
  for i in serial(8) {
    block p(vi: opaque(4) = i // 2) {
      where i % 2 == 1
      Z[vi] = X[vi * 2 + 1] * 3.0 + Y[vi]
    }
  }
})");
}

// Opaque vars over a symbolic loop and a fused constant loop (`v1 = f // 2`, `v2 = f % 2`):
// the symbolic loop is its own coordinate, the rest is enumerated (refused before: "opaque
// iter vars are not supported").
TEST(FuzzFixR16, OpaqueSymbolicAndFusedBindings) {
  Function f = parse_one(R"(func f(n: i32 in [1, 3], X: f32[n, 6]) -> (Y: f32[n, 3, 2]) {
  for i in parallel(n) {
    for f0 in serial(6) {
      block b(v0: opaque(n) = i, v1: opaque(3) = f0 // 2, v2: opaque(2) = f0 % 2) {
        Y[v0, v1, v2] = X[v0, v1 * 2 + v2] * X[v0, 5 - v1 * 2 - v2]
      }
    }
  }
})",
                         "f");
  for (int64_t n : {1, 3}) expect_full_checks(*f, testing::i32_scalars({{"n", n}}));
  Function g = testing::grad_of_printed(*f);
  EXPECT_NO_THROW(run_interp(*g, random_inputs(*g, 1, testing::i32_scalars({{"n", 2}}))));
}

// Still refused: the binding repeats instances (`r % 3` over 6 iterations adds X twice).
TEST(FuzzFixR16, OpaqueScatterRepeatedInstancesRefused) {
  expect_refused(R"(func f(X: f32[3], I: i32[3] in [0, 3]) -> (Y: f32[4]) {
  for i in serial(4) { block z(vi: spatial(4) = i) { Y[vi] = 0.0 } }
  for r in serial(6) {
    block s(r0: opaque(3) = r % 3) { Y[I[r0]] += X[r0] }
  }
})",
                 "block s: the loop iterations (r = 0) and (r = 3) run the same instance (its bindings are "
                 "not one-to-one): each instance must run once");
}

// ---- opaque blocks (no iter vars) holding their loops ----
// A reduction with C's `if k == 0` init inside a block without iter vars that is not the
// root was refused ("block b: loops inside a block body are not supported"; the same loops
// under the root were accepted). Its statements are now wrapped as under the root.

TEST(FuzzFixR16, OpaqueBlockCStyleInit) {
  expect_accepted(R"(func f(X: f32[3, 4]) -> (T: f32[3], U: f32[3]) {
  block b() {
    reads X[0:3, 0:4]
    writes T[0:3]
    for v0 in serial(3) {
      for r0 in serial(4) {
        if r0 == 0 {
          T[v0] = 0.0
        }
        T[v0] += X[v0, r0] * X[v0, r0]
      }
    }
  }
  for i in serial(3) {
    block u(vi: spatial(3) = i) { U[vi] = T[vi] * 2.0 }
  }
})");
}

// Two reductions (max and sum) initialised by one guard, in an opaque block.
TEST(FuzzFixR16, OpaqueBlockTwoReductionsOneGuard) {
  expect_accepted(R"(func f(X: f32[3, 4]) -> (T: f32[3], M: f32[3], U: f32[3]) {
  block b() {
    for v0 in serial(3) {
      for r0 in serial(4) {
        if r0 == 0 {
          T[v0] = 0.0; M[v0] = min_value(f32)
        }
        T[v0] += X[v0, r0] * 0.5
        M[v0] = max(M[v0], X[v0, r0] * X[v0, r0])
      }
    }
  }
  for i in serial(3) {
    block u(vi: spatial(3) = i) { U[vi] = T[vi] * M[vi] }
  }
})");
}

// Still refused, naming the user's block: the last writer wins over r0 (not a reduction).
TEST(FuzzFixR16, OpaqueBlockLastWriterRefused) {
  expect_refused(R"(func f(X: f32[3, 4]) -> (T: f32[3], U: f32[3]) {
  block b() {
    for v0 in serial(3) {
      for r0 in serial(4) {
        T[v0] = X[v0, r0] * 2.0
      }
    }
  }
  for i in serial(3) {
    block u(vi: spatial(3) = i) { U[vi] = T[vi] * 2.0 }
  }
})",
                 "block b: a scan step must write elements of its own");
}

}  // namespace
}  // namespace tirc

// The VJP of a block whose cotangent has another dtype than a leaf (an f64 output computed
// from f32 reads, `f64(Y_grad[i])` in a first gradient): the leaf's term must stay typed.
// Sweeping with seed 1 gives J = f32(J64) for an f32 leaf, and G * J mixed f64 and f32, so
// the second gradient of a mixed-precision function printed `S_grad_grad * f32(...)`, which
// does not re-parse and which the JIT refuses.
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

const char* kMixed = R"(func mixed(X: f32[3, 5], W: f32[5, 2]) -> (Y: f32[3, 2]) {
  alloc S: f64[3, 2]
  for i, j, k in grid(3, 2, 5) {
    block s(vi: spatial(3) = i, vj: spatial(2) = j, vk: reduce(5) = k) {
      init { S[vi, vj] = f64(0.0) }
      S[vi, vj] += f64(X[vi, vk]) * f64(W[vk, vj])
    }
  }
  for i, j in grid(3, 2) {
    block y(vi: spatial(3) = i, vj: spatial(2) = j) { Y[vi, vj] = f32(tanh(S[vi, vj]) * S[vi, vj]) }
  }
}
)";

// Every binary arithmetic node has operands of its own dtype.
bool well_typed(const FunctionNode& f) {
  bool ok = true;
  for_each_expr(f.body, [&](const Expr& e) {
    auto* b = e.as<BinaryNode>();
    if (b && b->a.dtype() != b->b.dtype()) ok = false;
  });
  return ok;
}

TEST(MixedDtypeSeed, SecondOrderOfMixedPrecisionStaysTyped) {
  Function f = testing::parse_one(kMixed, "mixed");
  ASSERT_TRUE(f);
  Function g = gradient(*f, {});
  ASSERT_TRUE(well_typed(*g));
  Function gg = gradient(*g, {});
  EXPECT_TRUE(well_typed(*gg)) << print_function(*gg);
  Module m;
  m.funcs.push_back(gg);
  EXPECT_NO_THROW(parse_module(print_module(m), "gg.tir"));
  testing::expect_full_checks(*g);
}

}  // namespace
}  // namespace tirc

// Integer `pow` with a negative exponent (transforms/lower/bounds_checks.cpp, "pow" sites):
// compiled code stops with the interpreter's error (NumPy's "Integers to negative integer
// powers are not allowed") instead of giving 0; an exponent proven >= 0 carries no check.
// The parser types `pow` on floats only, so the functions are made integer here by
// rewriting `max` into `pow` (IR built in C++ is how integer pow arises).
#include <gtest/gtest.h>

#include <string>

#include "ir/mutator.h"
#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

// f with every integer `max(a, b)` replaced by `pow(a, b)`.
Function max_to_pow(const Function& f) {
  struct M : IRMutator {
    Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
      Expr r = IRMutator::mutate_binary(n, e);
      auto* b = r.as<BinaryNode>();
      if (b && b->op == BinOp::Max && is_int(b->a.dtype())) return make_call(Intrinsic::Pow, {b->a, b->b});
      return r;
    }
  } m;
  auto g = std::make_shared<FunctionNode>(*f);
  g->body = m.mutate(f->body);
  return g;
}

size_t pow_sites(const FunctionNode& f) {
  std::vector<BoundsCheckSite> sites;
  insert_bounds_checks(f, &sites);
  size_t n = 0;
  for (auto& s : sites) n += s.access.rfind("pow", 0) == 0;
  return n;
}

Function pow_func(const std::string& t, const std::string& loop = "serial") {
  return max_to_pow(parse_func("func f(A: " + t + "[4], E: " + t + "[4]) -> (B: " + t +
                                   "[4]) {\n"
                                   "  for i in " +
                                   loop +
                                   "(4) {\n"
                                   "    block b(vi: spatial(4) = i) {\n"
                                   "      B[vi] = max(A[vi], E[vi])\n"
                                   "    }\n"
                                   "  }\n"
                                   "}\n",
                               "f"));
}

}  // namespace

// Both orders of the operands' unsigned reading (the exponent below, between or above a
// negative base: the two checks), every signed dtype.
TEST(IntPow, NegativeExponentReportsLikeTheInterpreter) {
  struct Case {
    double a, e;
  } cases[] = {{2, -1}, {-1, -5}, {-5, -1}, {0, -3}, {-128, -127}, {-127, -128}};
  for (const char* t : {"i8", "i16", "i32", "i64"}) {
    Function f = pow_func(t);
    DType dt = f->params[0].buffer->dtype;
    auto prog = compile_jit(*f);
    for (auto c : cases) {
      ArgMap in{{"A", values(dt, {4}, {3, 2, c.a, 1})}, {"E", values(dt, {4}, {2, 5, c.e, 0})}};
      std::string want = interp_error(*f, in);
      EXPECT_NE(want.find("integers to negative integer powers are not allowed"), std::string::npos) << want;
      std::string got;
      try {
        prog->run(in);
      } catch (const Error& e) {
        got = e.what();
      }
      EXPECT_EQ(got, want) << t << " pow(" << c.a << ", " << c.e << ")";
    }
    // Non-negative exponents (wrapping results) agree bit for bit.
    ArgMap in{{"A", values(dt, {4}, {3, -2, 7, -1})}, {"E", values(dt, {4}, {2, 5, 30, 0})}};
    EXPECT_TRUE(arrays_close(prog->run(in).at("B"), run_interp(*f, in).at("B"), 0, 0)) << t;
  }
}

// In a vectorized loop the lanes' checks are or-reduced: still the interpreter's error.
TEST(IntPow, VectorizedLoopReports) {
  Function f = pow_func("i32", "vectorized");
  ArgMap in{{"A", values(DType::I32, {4}, {3, 2, 2, 1})}, {"E", values(DType::I32, {4}, {2, 5, -1, 0})}};
  EXPECT_EQ(jit_error(*f, in), interp_error(*f, in));
}

// Exponents proven >= 0 (a constant, a loop var, an unsigned dtype) carry no check.
TEST(IntPow, ProvenExponentHasNoCheck) {
  EXPECT_EQ(pow_sites(*pow_func("i32")), 2u);
  EXPECT_EQ(pow_sites(*pow_func("u32")), 0u);
  Function g = max_to_pow(parse_func(R"(
func g(A: i32[4]) -> (B: i32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = max(A[vi], vi) + max(A[vi], 3)
    }
  }
}
)",
                                     "g"));
  EXPECT_EQ(pow_sites(*g), 0u);
  expect_jit_matches_interp(*g, 1, 0, 0);
}

}  // namespace tirc

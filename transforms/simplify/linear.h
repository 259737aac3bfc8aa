// Affine decomposition of integer expressions (model: TVM arith::DetectLinearEquation and
// the SumExpr of the canonical simplifier).
//
// Integer + - * (and unary -) are ring operations modulo 2^bits, so the decomposition
// below is exact for fixed-width wraparound arithmetic: coefficients and the constant are
// kept wrapped to the dtype (sign-extended, so u32 "x - 1" has constant -1). Whether the
// mathematical (unwrapped) value of the form equals the run-time value is a separate
// question answered with bounds (see simplify.h): order-based rules check it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/expr.h"

namespace tirc {

// coeff * term, term being a non-constant expression that is not itself a sum, a
// difference, a negation or a product with a constant (a Var, a Load, a floordiv, a
// product of two non-constant factors, ...).
struct LinearTerm {
  Expr term;
  int64_t coeff;
};

// sum(coeff_k * term_k) + constant. Terms are distinct (expr_identical) and have non-zero
// coefficients; they are kept in order of first appearance in the input.
struct SumForm {
  DType dtype = DType::I32;
  std::vector<LinearTerm> terms;
  int64_t constant = 0;

  bool is_const() const { return terms.empty(); }
  // Adds c * term (merging with an identical term); c and the constant stay wrapped.
  void add_term(const Expr& term, int64_t c);
  void add(const SumForm& o, int64_t scale = 1);
  void scale(int64_t c);
};

// Decomposes an integer expression (no simplification of the opaque terms themselves).
SumForm to_sum_form(const Expr& e);
// Builds an expression from a form: positive terms first (in order), then subtracted ones,
// then the constant; coefficient 1 prints as the bare term. Constants in the form's dtype.
Expr from_sum_form(const SumForm& f);

// Affine form over an explicit set of variables: sum(coeffs[k] * vars[k]) + opaque + constant.
struct LinearForm {
  DType dtype = DType::I32;
  std::vector<int64_t> coeffs;     // one per requested var, 0 when absent
  std::vector<LinearTerm> opaque;  // terms that mention none of the vars
  int64_t constant = 0;
};

// nullopt when e is not affine in `vars` (a var inside a non-affine term such as i*j or
// i // 4), or when allow_opaque is false and e has terms other than the vars.
std::optional<LinearForm> linear_form(const Expr& e, const std::vector<Var>& vars, bool allow_opaque = true);
// Inverse of linear_form.
Expr from_linear_form(const LinearForm& f, const std::vector<Var>& vars);

// True when e mentions v / any var of the set.
bool expr_uses_var(const Expr& e, const VarNode* v);

}  // namespace tirc

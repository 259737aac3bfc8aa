// Affine integer forms used by the gradient's index solver (scatter -> gather).
//
// An Affine is sum(coeff_v * v) + constant over integer Vars with int64 coefficients.
// Scalar parameters are ordinary variables here (the solver treats them as known symbols).
// `A // c` and `A % c` (c a positive constant, A affine) are linearised through an
// auxiliary pair (q, m) with A = c*q + m, 0 <= m < c (TVM's iter-map / Halide's
// div-mod elimination); the caller provides the pair through AuxProvider.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/expr.h"

namespace tirc::ad {

struct Affine {
  std::vector<std::pair<Var, int64_t>> terms;  // distinct vars, non-zero coefficients
  int64_t constant = 0;

  int64_t coeff(const VarNode* v) const;
  bool uses(const VarNode* v) const { return coeff(v) != 0; }
  bool is_const() const { return terms.empty(); }
  void add(const Var& v, int64_t c);
  void add(const Affine& o, int64_t scale = 1);
  // Replaces v by `by` (v's coefficient times by).
  void substitute(const VarNode* v, const Affine& by);
  Affine scaled(int64_t s) const {
    Affine r;
    r.add(*this, s);
    return r;
  }
};

// Returns the (q, m) variables standing for floordiv(A, c) / floormod(A, c).
using AuxProvider = std::function<std::pair<Var, Var>(const Affine& a, int64_t c)>;

// Affine form of an integer expression; nullopt when it is not affine. `aux` may be null
// (then // and % only decompose when exact, e.g. (4*i + 8) // 4).
std::optional<Affine> to_affine(const Expr& e, const AuxProvider& aux = nullptr);
// Canonical expression: positive terms, then subtracted terms, then the constant.
Expr affine_to_expr(const Affine& a, DType t = DType::I32);

int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

}  // namespace tirc::ad

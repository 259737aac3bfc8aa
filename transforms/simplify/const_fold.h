// Constant folding of single IR nodes with the exact run-time semantics of each dtype.
//
// Integers wrap modulo 2^bits (i8..i64, u8..u32); `//` and `%` are floor division/modulo
// (Python semantics; INT_MIN // -1 wraps to INT_MIN); division or modulo by zero is never
// folded (the interpreter reports it). Floats are folded in double and then rounded once
// to the node's dtype (round-to-nearest-even, with f16/bf16 subnormals and overflow to
// inf); for + - * / this equals the correctly rounded result of the dtype's own
// arithmetic. Transcendental calls and `round` are never folded (libm/half-way
// conventions differ between backends); neither are float min/max on NaN or on zeros of
// different sign, nor float->int casts of NaN/out-of-range values.
#pragma once

#include <cstdint>

#include "ir/expr.h"

namespace tirc {

// Canonical IntImm value of the low `dtype_bits(t)` bits of `v` in integer/bool dtype t:
// sign-extended for signed types, zero-extended for unsigned ones, 0/1 for bool.
int64_t wrap_int(uint64_t v, DType t);
// Signed view of a wrapped value: sign-extends the low bits of v even for unsigned t
// (u32 4294967295 -> -1). Congruent to v modulo 2^bits.
int64_t as_signed(int64_t v, DType t);
// `v` rounded to the float dtype t (identity for f64).
double round_float(double v, DType t);
// Smallest/largest value of an integer or bool dtype.
int64_t dtype_min_int(DType t);
int64_t dtype_max_int(DType t);
// An immediate of dtype t holding v (wrapped/rounded as above).
Expr make_imm_int(DType t, int64_t v);
Expr make_imm_float(DType t, double v);

// Folds the top node of `e` when every operand is an immediate and the result is
// well-defined; returns an undefined Expr otherwise. Handles Binary, Unary, Cast, Call,
// Select/IfThenElse with a constant condition.
Expr fold_constant(const Expr& e);

}  // namespace tirc

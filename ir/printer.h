// Canonical text of the IR (LANGUAGE.md syntax). Printing is a fixpoint:
// parse(print(m)) is structurally equal to m, and print(parse(print(m))) == print(m).
// Floats print so that they round-trip exactly (inf, -inf, nan included).
#pragma once

#include <string>

#include "ir/module.h"

namespace tirc {

std::string print_module(const Module& m);
std::string print_function(const FunctionNode& f);
std::string print_stmt(const Stmt& s, int indent = 0);
std::string print_expr(const Expr& e);

// Text of a float literal that reads back to exactly v once rounded to dtype t: the shortest
// round-tripping digits of float (for f16/bf16/f32) or double (f64), always with a `.` or an
// exponent; "inf", "-inf", "nan" for the special values.
std::string print_float_literal(double v, DType t);

}  // namespace tirc

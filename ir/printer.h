// Canonical text of the IR (LANGUAGE.md syntax). Printing is a fixpoint:
// parse(print(m)) is structurally equal to m, and print(parse(print(m))) == print(m).
// Floats print so that they round-trip exactly (inf, -inf, nan included).
#pragma once

#include <string>

#include "ir/module.h"

namespace tirc {

// The parser reads brackets `( [ {` nested at most this deep (a `for` header of N variables
// counting N levels), so that deep input cannot overflow the stack (docs/language.md, Limits).
constexpr int kMaxTextNesting = 100;

// The deepest bracket nesting of `text` (brackets inside strings and comments do not count).
int text_nesting_depth(const std::string& text);
// text_nesting_depth of f's canonical text (without the check of print_function).
int function_text_depth(const FunctionNode& f);

// print_module and print_function throw tirc::Error ("cannot print function F: its text would
// nest N levels deep ...") when a function's text would nest deeper than kMaxTextNesting:
// such text would not read back (a schedule can nest loops deeper than a script may).
std::string print_module(const Module& m);
std::string print_function(const FunctionNode& f);
std::string print_stmt(const Stmt& s, int indent = 0);
std::string print_expr(const Expr& e);

// Text of a float literal that reads back to exactly v once rounded to dtype t: the shortest
// round-tripping digits of float (for f16/bf16/f32) or double (f64), always with a `.` or an
// exponent; "inf", "-inf", "nan" for the special values.
std::string print_float_literal(double v, DType t);

}  // namespace tirc

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

}  // namespace tirc

// Structural equality and hashing up to renaming of bound variables and buffers
// (alpha-equivalence): loop vars, iter vars, let vars, params and allocs are matched by
// position of their binder, not by name. Model: TVM's StructuralEqual (map-free-vars mode).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "ir/module.h"

namespace tirc {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const FunctionNode& a, const FunctionNode& b);
bool structural_equal(const Module& a, const Module& b);

// The first difference, as "path: detail" (e.g. "func matmul/body/block C/reads[0]: ..."),
// or nullopt when equal.
std::optional<std::string> structural_diff(const FunctionNode& a, const FunctionNode& b);
std::optional<std::string> structural_diff(const Module& a, const Module& b);

// Consistent with structural_equal: equal things hash equal.
size_t structural_hash(const Expr& e);
size_t structural_hash(const FunctionNode& f);

}  // namespace tirc

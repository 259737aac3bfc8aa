// Random well-typed .tir modules for round-trip property tests (print -> parse -> equal).
//
// The generator builds IR directly (not text) so that it can produce every node kind and
// literal the printer must handle: all dtypes, every expression kind (loads, arithmetic,
// min/max, comparisons, logic, unary, casts, intrinsic calls, select, if_then_else,
// let-expressions), loops of every kind (with nonzero mins, thread tags, annotations),
// blocks with spatial/reduce/scan/opaque iter vars, init, where, explicit regions,
// allocs (with scopes), let statements, if/else, call_extern, nested blocks, explicit root
// blocks, scalar parameters with ranges, schedule items with every argument kind and
// tensor intrinsics. Float literals include inf, -inf, nan, denormals, -0.0 and the
// extremes of each float dtype. Names collide on purpose (nested `i`, reserved words,
// buffers named like variables) to exercise the printer's renaming.
//
// The programs satisfy the parser's static checks (types, read-only inputs, unique block
// names, binding bounds, init only with reduce vars, in-bounds constant indices); they are
// not meant to be run. Deterministic: the same seed gives the same module.
#pragma once

#include <cstdint>

#include "ir/module.h"

namespace tirc::testing {

struct RandomProgramOptions {
  // INT64_MIN / INT32_MIN style literals (the most negative value of a signed dtype).
  bool extreme_ints = true;
  // Names that need renaming when printed: reserved words, duplicates in nested scopes.
  bool colliding_names = true;
  int max_funcs = 3;
};

Module random_module(uint64_t seed, const RandomProgramOptions& opt = {});

}  // namespace tirc::testing

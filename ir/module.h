// Functions, schedules, tensor intrinsics and the module that holds them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/source_loc.h"
#include "ir/stmt.h"

namespace tirc {

// Uniform range used to generate random inputs: `X: f32[64] in [0.1, 4.0]`.
struct ValueRange {
  double lo, hi;
  // The exact ends when written as integer literals (a double does not hold every i64:
  // `in [9007199254740993, 9007199254740995]`); integer random inputs and the printer use them.
  std::optional<int64_t> ilo = std::nullopt, ihi = std::nullopt;
};

// A function parameter: a scalar (var) or a buffer (buffer), never both.
struct Param {
  Var var;        // defined for scalar params
  Buffer buffer;  // defined for buffer params
  std::optional<ValueRange> range;
  bool is_buffer() const { return buffer.defined(); }
  const std::string& name() const { return is_buffer() ? buffer->name : var.name(); }
};

struct FunctionNode {
  std::string name;
  std::vector<Param> params;    // inputs, in order (scalars and read-only buffers)
  std::vector<Buffer> outputs;  // written by the function, in order
  // `-> (B: f32[4] in [0, 1])`: LANGUAGE.md allows a value range on any buffer. Outputs are
  // never generated, so it is kept only to print the function back as written (docs/language.md).
  // Empty, or parallel to outputs.
  std::vector<std::optional<ValueRange>> output_ranges;
  // The root BlockRealize: a block named "root" with no iter vars, whose allocs are the
  // function-level `alloc`s. A body written without an explicit root block gets one.
  Stmt body;
  SourceLoc loc;
};
using Function = std::shared_ptr<const FunctionNode>;

// The root block of a function body (body must be the root BlockRealize).
const BlockNode& root_block(const FunctionNode& f);

// One argument of a schedule instruction, kept as written.
struct ScheduleArg {
  // Subscript: `x[k]` (text "", list = {x, k}) or a slice `x[lo:hi:step]` (text ":", list =
  // {x, lo, hi, step}, an absent bound is a Wildcard) of a list variable x (an Ident).
  // Star: `*x` (list[0] = x), the items of a list as separate arguments.
  // Lambda: `lambda i, j: (j // 4, i, j % 4)` (an index map: transform_layout), with
  // lambda_params (i32 vars) and lambda_body (one integer expression per result).
  // A List whose text is "(" was written as a tuple, `("read", 0)`, and prints so.
  enum Kind { Ident, String, Int, Float, Wildcard, List, Keyword, Subscript, Star, Lambda } kind;
  std::string text;                // Ident/String (unquoted)/Keyword name
  int64_t int_value = 0;           // Int
  double float_value = 0;          // Float
  std::vector<ScheduleArg> list;   // List items; Keyword: list[0] is the value
  std::vector<Var> lambda_params;  // Lambda
  std::vector<Expr> lambda_body;   // Lambda
  SourceLoc loc;
};

// `a, b = prim(args...)` or `prim(args...)`; `a, b = x` / `a = x[k]` (no call: primitive is
// empty and args[0] is the value, an Ident or a Subscript of a list variable).
struct ScheduleInstr {
  std::vector<std::string> results;
  // One result written as a Python one-element unpack, `k, = ...` or `(k,) = ...` (the value
  // must then hold exactly one handle); `k = ...` binds the value as it is (a handle or a list).
  bool unpack = false;
  std::string primitive;
  std::vector<ScheduleArg> args;
  SourceLoc loc;
};

struct ScheduleItem {
  std::string func;
  std::vector<ScheduleInstr> instrs;
  SourceLoc loc;
};

// `intrin NAME { desc(PARAMS) {...} impl(PARAMS) {...} }`: desc and impl are kept as functions
// named NAME.desc / NAME.impl with no outputs listed (every buffer param may be written).
struct IntrinItem {
  std::string name;
  Function desc, impl;
  SourceLoc loc;
};

struct Module {
  std::vector<Function> funcs;
  std::vector<ScheduleItem> schedules;
  std::vector<IntrinItem> intrins;
  // Order of items as written, for printing: (0=func,1=schedule,2=intrin, index).
  std::vector<std::pair<int, size_t>> order;

  Function find_func(const std::string& name) const;
  // Adds or replaces (by name) a function; keeps the item order.
  void add_func(Function f);
};

}  // namespace tirc

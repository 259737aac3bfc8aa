// Arithmetic simplification (model: TVM src/arith Analyzer = canonical simplifier +
// rewrite simplifier + const int bound; Halide Simplify).
//
// Every rewrite preserves the run-time value of the expression for every assignment of its
// variables that lies inside the known ranges (the only semantic change allowed is that a
// sub-expression that would have failed, e.g. an out-of-bounds load multiplied by 0, may
// disappear). Concretely:
//  - constants fold with exact dtype semantics (const_fold.h: wraparound, floor div/mod,
//    float results rounded to the node's dtype; division by zero is never folded);
//  - integer + - * are put in canonical affine form (linear.h), which is exact modulo 2^bits:
//    `(i*4 + j) - i*4` -> `j`, `x*1` -> `x`, `x*0` -> `0`, `x//c*c + x%c` -> `x`;
//  - order-based rules (floordiv/floormod of sums, min/max, comparisons) fire only when
//    bounds prove the mathematical value of the operands fits their dtype, so wraparound
//    can never be mistaken for order: `(i*8 + j) // 8` -> `i`, `(i*8 + j) % 8` -> `j`
//    when 0 <= j < 8 and i's range keeps i*8+j inside i32;
//  - floats are handled conservatively: folding of constants, and only the exact
//    identities x*1, 1*x, x/1, x-(+0.0), x+(-0.0), --x, min/max(x, x). Never x*0 -> 0 or
//    x+0.0 -> x (nan, inf, -0.0);
//  - select/if_then_else/if with a constant condition pick their arm; the arms are
//    simplified assuming the condition (var-vs-bound comparisons tighten var ranges);
//  - booleans: constant and/or/not, double negation, !(a < b) -> a >= b on integers;
//  - let with a constant or variable value is substituted; an unused let is dropped.
// Loops and block iter vars bind their ranges while their bodies are simplified.
#pragma once

#include "ir/module.h"
#include "ir/stmt.h"
#include "transforms/simplify/bounds.h"

namespace tirc {

// A known linear fact over mathematical integers: sum(coeff * term) + constant <= 0. Recorded
// from assumed comparisons (branch conditions, Analyzer::assume) whose sides provably do not
// wrap; used by comparisons whose difference has the same non-constant part.
struct LinearFact {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;
};

// Holds known variable ranges and answers questions about integer expressions under them.
class Analyzer {
 public:
  Analyzer() = default;
  explicit Analyzer(VarRanges ranges) : ranges_(std::move(ranges)) {}

  // Sets the range of v (replacing a previous one).
  void bind(const Var& v, const Interval& range) { ranges_[v.get()] = range; }
  // v in [min, min + extent): min/extent may be expressions; their constant bounds under the
  // current ranges are used (an unknown end stays unbounded).
  void bind(const Var& v, const Expr& min, const Expr& extent);
  // v == value: binds the constant bound of value.
  void bind_value(const Var& v, const Expr& value);
  // Tightens ranges from a condition known to hold: conjunctions of comparisons between a
  // variable and an expression with constant bounds (`i < 10 && j >= k`); other integer
  // comparisons are kept as LinearFacts (`i*8 + j < 100` then proves `i*8 + j < 128`).
  void assume(const Expr& cond);
  const std::vector<LinearFact>& facts() const { return facts_; }
  // Index-arithmetic mode (TVM's assumption): integer + - * are taken not to overflow, so
  // order-based rules fire without proving it (`(n*8 + j) // 8` -> `n` for unbounded n).
  // Used by symbolic_bound and region inference; off by default (exact semantics).
  void set_assume_no_overflow(bool on) { assume_no_overflow_ = on; }
  bool assume_no_overflow() const { return assume_no_overflow_; }
  const VarRanges& ranges() const { return ranges_; }
  VarRanges& mutable_ranges() { return ranges_; }

  Expr simplify(const Expr& e);
  // Simplifies every expression of s; also folds `if` with a constant condition and
  // trivial `let`s. Loop vars / iter vars get their ranges inside their scope.
  Stmt simplify(const Stmt& s);
  // True when cond (bool) holds for all values in the known ranges (false = unknown).
  bool can_prove(const Expr& cond);
  // Constant bound of the run-time value of an integer expression (after simplification).
  Interval const_bound(const Expr& e);
  // Convenience: can_prove(a == b) for integers, or identical after simplification.
  bool can_prove_equal(const Expr& a, const Expr& b);

 private:
  VarRanges ranges_;
  std::vector<LinearFact> facts_;
  bool assume_no_overflow_ = false;
};

// Simplifies with no (or the given) variable ranges.
Expr simplify(const Expr& e, const VarRanges& ranges = {});
Stmt simplify(const Stmt& s, const VarRanges& ranges = {});
// Simplifies a function body. Declared value ranges of scalar params (`n: i32 in [1, 8]`)
// are NOT assumed: LANGUAGE.md makes them the range of random inputs, not a precondition,
// so a caller may pass any value. Buffer shapes and params are kept as they are.
Function simplify_function(const FunctionNode& f);
// Constant value of e after simplification, if it is one.
std::optional<int64_t> as_const_int(const Expr& e, const VarRanges& ranges = {});

}  // namespace tirc

// Interval bounds of integer expressions (model: TVM arith::ConstIntBound and
// arith::IntSet relaxation; Halide Bounds.cpp).
//
// const_int_bound: sound constant bounds of the *run-time* value of an integer/bool
// expression, given ranges of some variables. Fixed-width arithmetic wraps, so whenever the
// mathematical value of a sub-expression may leave its dtype the bound falls back to the
// whole dtype range. Sums are bounded through their affine form (linear.h), so
// `i*4 + j - i*4` is bounded like `j`.
//
// symbolic_bound: min/max *expressions* of e when some variables are relaxed over ranges
// given as expressions, the others kept symbolic (region inference with symbolic shapes).
// It assumes index arithmetic does not overflow (like TVM/Halide).
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "ir/expr.h"
#include "transforms/simplify/linear.h"

namespace tirc {

// Closed interval [lo, hi] of int64; lo == kNegInf / hi == kPosInf mean unbounded.
struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t lo = kNegInf, hi = kPosInf;

  static Interval everything() { return {}; }
  static Interval point(int64_t v) { return {v, v}; }
  // [min, min + extent - 1]
  static Interval from_min_extent(int64_t min, int64_t extent) { return {min, min + extent - 1}; }
  bool has_lower() const { return lo != kNegInf; }
  bool has_upper() const { return hi != kPosInf; }
  bool is_point() const { return lo == hi && has_lower() && has_upper(); }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }
};

// Representable values of an integer/bool dtype (i64: everything).
Interval dtype_interval(DType t);
// True when every value of b is a finite value representable in t.
bool interval_fits(const Interval& b, DType t);
Interval interval_union(const Interval& a, const Interval& b);
Interval interval_intersect(const Interval& a, const Interval& b);
// Saturating interval arithmetic on mathematical integers (infinities absorb).
Interval interval_add(const Interval& a, const Interval& b);
Interval interval_sub(const Interval& a, const Interval& b);
Interval interval_mul(const Interval& a, const Interval& b);
Interval interval_scale(const Interval& a, int64_t c);

// Known ranges of variables, by node.
using VarRanges = std::unordered_map<const VarNode*, Interval>;

// Bound of the run-time value of an integer or bool expression (everything for floats and
// handles). Variables without a range get their dtype's range.
Interval const_int_bound(const Expr& e, const VarRanges& ranges = {});
// Bound of the *mathematical* value of a sum form, its terms bounded by const_int_bound and
// coefficients read as signed (as_signed). When the result fits the form's dtype the
// run-time value of the form equals its mathematical value.
Interval sum_form_bound(const SumForm& f, const VarRanges& ranges = {});
// Mathematical bound of a - b for two sum forms (exact coefficient differences).
Interval sum_form_diff_bound(const SumForm& a, const SumForm& b, const VarRanges& ranges = {});

// Symbolic interval: min/max expressions; an undefined end means unbounded.
struct SymInterval {
  Expr min, max;
  bool bounded() const { return min.defined() && max.defined(); }
};
using SymRanges = std::unordered_map<const VarNode*, SymInterval>;

// Bounds of integer e with the variables of `relax` ranging over their intervals (whose
// ends may mention other, kept variables, but not relaxed ones); every other variable stays
// symbolic. `known` gives constant ranges of kept variables, used to simplify the result.
// Results are simplified. Example: e = vi*16 + k, relax {k: [0, 15]} -> [vi*16, vi*16 + 15].
SymInterval symbolic_bound(const Expr& e, const SymRanges& relax, const VarRanges& known = {});

}  // namespace tirc

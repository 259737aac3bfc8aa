// Small integer arithmetic used by the schedule primitives: constant folding with
// linear canonicalisation, constant bounds, symbolic relaxation of linear index
// expressions, and detection of bijective ("affine") block bindings.
//
// Why here and not transforms/simplify: the schedule needs a few precise, conservative
// facts (every answer is either proven or "unknown"); keeping them local keeps the
// legality checks auditable. Method: linear forms over atoms (a var or any non-linear
// sub-expression compared with expr_identical), interval arithmetic for bounds, and the
// mixed-radix check of TVM's iter-map detection (DetectIterMap) for bindings.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/stmt.h"

namespace tirc::sched {

// Constant folding, trivial identities and collection of like terms in integer sums.
Expr fold(const Expr& e);

// sum(coef_k * atom_k) + c over integers. Atoms are vars or non-linear sub-expressions.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t c = 0;
  DType dtype = DType::I32;
  int64_t coef_of(const VarNode* v) const;
};
// nullopt for non-integer expressions.
std::optional<Linear> to_linear(const Expr& e);
Expr from_linear(const Linear& l);

// Inclusive constant interval.
struct IntRange {
  int64_t lo, hi;
};
using RangeMap = std::unordered_map<const VarNode*, IntRange>;
// Constant bounds of an integer expression given constant ranges of vars; nullopt if
// unknown (symbolic parts, unsupported ops).
std::optional<IntRange> const_bound(const Expr& e, const RangeMap& ranges);
// a <= b, a < b, a == b proven (for all values of the vars in ranges); false = unknown.
bool prove_le(const Expr& a, const Expr& b, const RangeMap& ranges = {});
bool prove_lt(const Expr& a, const Expr& b, const RangeMap& ranges = {});
bool prove_eq(const Expr& a, const Expr& b);

// Symbolic relaxation: vars of `ranges` (inclusive [lo, hi] as exprs) are relaxed; other
// vars are kept. Returns [lo, hi] inclusive, or nullopt when e is not linear in the relaxed
// vars.
struct SymRange {
  Expr lo, hi;  // inclusive
};
using SymRangeMap = std::unordered_map<const VarNode*, SymRange>;
std::optional<SymRange> relax(const Expr& e, const SymRangeMap& ranges);

// True when `e` mentions any var for which pred(var) is true.
bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred);
bool uses_var(const Expr& e, const VarNode* v);

// A loop as seen by binding analysis: var in [0, extent).
struct LoopDom {
  Var var;
  Expr extent;
};
// True when the bindings (one per iter var, with extents) map the loop domain onto the
// iteration domain one-to-one (each iteration point exactly once), allowing the last
// split of an iter var to overshoot when `predicate` contains `binding < extent`.
// Loops must have min 0. Method: every binding is a sum of scaled splits
// ((l // lower) % ext) * scale; splits of each loop partition it (mixed radix) and the
// splits of each binding compose the iter var's extent (mixed radix).
bool bijective_bindings(const std::vector<Expr>& bindings, const std::vector<Expr>& extents,
                        const std::vector<LoopDom>& loops, const Expr& predicate);

// The inverse of bindings that bijective_bindings accepts: for every loop var, an expression
// of the iter vars `ivars` (one per binding) that gives the loop's value at the loop point
// producing those iter values (valid at every point of the domain the block runs; a loop
// of extent 1 gives 0). nullopt when the bindings are not recognised as bijective. When the
// bindings split a fused sum of loops, `sums` (if given) receives (sum, its value in ivars).
std::optional<std::unordered_map<const VarNode*, Expr>> invert_bindings(
    const std::vector<Expr>& bindings, const std::vector<Var>& ivars, const std::vector<Expr>& extents,
    const std::vector<LoopDom>& loops, const Expr& predicate,
    std::vector<std::pair<Expr, Expr>>* sums = nullptr);

// A load h (one index per dimension of a buffer of shape `box`, each using at most one of the
// domain's vars) that is one-to-one but not onto the box, as a consumer reading only part of
// what its producer computes (TVM's overcomputed producers: `B[v // 4, w // 4, v % 4, w % 4]`
// with v, w < 15 over a 4 x 4 x 4 x 4 B): the domain widened so that h may be onto the box,
// each var's extent the product of box[d] over the dimensions d that use it (v: 4 * 4 = 16).
// nullopt when a dimension uses several vars, an extent is not constant, or a widened extent
// is smaller than the var's own. The caller still proves h one-to-one onto the box over the
// widened domain (bijective_bindings) and guards the points outside the real one.
std::optional<std::vector<LoopDom>> widened_domain(const std::vector<Expr>& h, const std::vector<Expr>& box,
                                                   const std::vector<LoopDom>& dom);

// Conjuncts of a boolean expression (a && b && c -> [a, b, c]); `true` gives [].
std::vector<Expr> conjuncts(const Expr& e);
Expr make_and(const std::vector<Expr>& cs);  // true when empty

}  // namespace tirc::sched

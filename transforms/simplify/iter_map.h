// Iterator-map detection (model: TVM arith::DetectIterMap / IterMapRewriter and
// InverseAffineIterMap).
//
// Given binding expressions over loop variables with ranges, decide whether they form an
// affine map made of fused (`i*32 + j`) and split (`k // 4`, `k % 4`) iterators, and return
// the structured form: each binding becomes base + split*scale, where a split is
// `(mark // lower_factor) % extent` and a mark is either an input loop variable (value
// var - min, extent = loop extent) or a fused sum of splits of other marks.
//
// Checks (level):
//  - Surjective: the splits taken from each mark do not overlap (no bit of a mark is used
//    twice, so every combination of binding values is reachable);
//  - Bijective: additionally every mark is fully covered and every input iterator of
//    extent > 1 is used, so the map is one-to-one and `inverse_iter_map` can invert it.
// Predicate: conjunctions of `expr < c` / `expr <= c` where expr is affine and fusable
// (padding from splits with a non-dividing factor: `where i*32 + j < 100`); the fused mark
// then has extent c (bijective within the predicate). Other predicates are refused.
// Constant divisors/extents are required for splitting and fusing (a binding that is just a
// loop var may have a symbolic extent). Negative scales are refused (as in TVM).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "transforms/simplify/bounds.h"

namespace tirc {

struct IterMarkNode;
using IterMark = std::shared_ptr<const IterMarkNode>;

// (source // lower_factor) % extent * scale
struct IterSplit {
  IterMark source;
  Expr lower_factor, extent, scale;
};

// sum(args) + base; base does not depend on the input iterators.
struct IterSum {
  std::vector<IterSplit> args;
  Expr base;
};

struct IterMarkNode {
  Var var;                     // defined: an input iterator; the mark's value is var - min
  Expr min;                    // for input iterators
  std::optional<IterSum> sum;  // otherwise: a fused iterator (base 0)
  Expr extent;                 // the mark ranges over [0, extent)
};

// An input iterator: var in [min, min + extent).
struct IterDom {
  Var var;
  Expr min, extent;
};

enum class IterMapLevel { Surjective, Bijective };

struct IterMapResult {
  std::vector<IterSum> indices;  // one per binding: at most one split + base
  std::string error;             // why detection failed (empty on success)
  bool ok() const { return error.empty(); }
};

// Detects the iterator map of `bindings` over `iters`. `predicate` may be undefined/true.
// `known` gives ranges of other (symbolic) variables for simplification.
IterMapResult detect_iter_map(const std::vector<Expr>& bindings, const std::vector<IterDom>& iters,
                              const Expr& predicate = Expr(), IterMapLevel level = IterMapLevel::Bijective,
                              const VarRanges& known = {});

// Expression equal to a split / sum / mark (for checking and printing), in terms of the
// input iterators.
Expr iter_split_to_expr(const IterSplit& s);
Expr iter_sum_to_expr(const IterSum& s);
Expr iter_mark_to_expr(const IterMark& m);

// Inverse of a bijective map: for each input iterator (in `iters` order), an expression of
// `outputs` (one per binding, e.g. the block iter vars) that gives back the iterator value:
// for bindings (i*32 + j) this is {y // 32, y % 32}. Iterators of extent 1 map to their
// min. `output_ranges` (ranges of variables in outputs) help simplify the result. nullopt when the map is not
// bijective (detect with IterMapLevel::Bijective first).
std::optional<std::vector<Expr>> inverse_iter_map(const IterMapResult& map, const std::vector<IterDom>& iters,
                                                  const std::vector<Expr>& outputs,
                                                  const VarRanges& output_ranges = {});

}  // namespace tirc

// Scatter -> gather: inverts the index map of one read so that its adjoint block iterates
// over the adjoint buffer's own indices.
//
// A read X[psi(v)] inside a forward loop nest v (ranges, `where`, guards) contributes
// dX[x] += sum over { v in domain : psi(v) = x } of term(v). solve_gather writes that set
// as a loop nest: spatial loops over x (only over the points that can receive a
// contribution), reduce loops over the forward vars that the equations psi(v) = x leave
// free, with bounds taken from the loop ranges and the affine guards. Method:
//  - indices and conditions are put in affine form; `A // c`, `A % c` get an auxiliary
//    pair (q, m) with A = c*q + m, 0 <= m < c (fused/split iterators of reshapes,
//    upsampling, transposed convolutions);
//  - integer Gaussian elimination on unit coefficients (a var with coefficient +-1 is
//    solved and substituted); an equation `a*u = x - c` whose only unknown has |a| > 1
//    makes x iterate over the residue class (x = a*l + r) instead of testing
//    divisibility; equations between x's alone make an x dependent (diagonals X[i, i]);
//  - `c*u + v = K` with v in [0, c) gives u = K // c, v = K % c (fused iterators); an
//    unknown with a non-unit coefficient that appears in one equation only is solved as
//    K // a with the condition K % a == 0 (strided convolutions: the short var stays);
//  - pivots go to the unknowns with the largest range, so that the free vars (the reduce
//    vars of the adjoint block) are the short ones;
//  - loops run over constant boxes (so `tirc stats` can count them statically); the
//    inequalities that do not hold on the whole box become the block's `where`
//    predicate; one that never holds makes the contribution empty.
// Returns nullopt when the map is not affine (data-dependent, i*j, ...) or the system has
// no unit pivot: the caller then emits a scatter block.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/stmt.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/expr_ad.h"

namespace tirc::ad {

struct LoopRange {
  Var var;
  Expr min, extent;
};

// Splits the adjoint iteration of dimension `dim` by residue class: x = stride*l + residue,
// and the forward loop var w (index = stride*u + w + k, w running over more than `stride`
// values) restricted to w = stride*t + w_residue. Strided/dilated convolutions and
// overlapping windows become exact unit-coefficient problems, one per residue.
struct ResidueSplit {
  size_t dim;
  int64_t stride, residue;
  Var w;
  int64_t w_residue;
};

struct GatherInput {
  std::vector<ResidueSplit> splits;
  std::vector<LoopRange> loops;  // forward loops, outer to inner
  std::vector<Expr> conds;       // bool conditions over the loop vars (and scalar params)
  std::vector<Expr> index;       // read indices over the loop vars
  std::vector<Expr> shape;       // shape of the adjoint buffer
};

struct GatherLoop {
  Var loop_var;
  Expr lo, hi;  // loop_var in [lo, hi)
  Var iter_var;
  IterKind kind;
  Expr iter_extent;
  Expr binding;
};

struct GatherResult {
  bool empty = false;                              // no point contributes
  std::vector<GatherLoop> loops;                   // outer to inner
  std::unordered_map<const VarNode*, Expr> subst;  // forward loop var -> expr over new iter vars
  std::vector<Expr> target_index;                  // over new iter vars
  Expr predicate;                                  // `where` over the new loop vars
  std::vector<Expr> residual;                      // data-dependent conditions over new iter vars
};

std::optional<GatherResult> solve_gather(const GatherInput& in, NameGen& names);

}  // namespace tirc::ad

// Normalisation of block bodies before differentiation (docs/autodiff.md, "Normalisation").
//
// gradient() differentiates blocks whose body is lets / `if` guards (without else) around
// stores to distinct buffers. TVM users also write if/else, loops inside a block body
// (TVM's opaque-block style: `S[vi] = 0; for k { S[vi] += ... }`), several statements
// touching one buffer and block-local buffers. normalize_for_autodiff(F) returns an
// equivalent function in which such blocks are rewritten into accepted ones:
//   1. if/else: stores of the same element in both branches become one store of
//      `if_then_else(c, then, else)` (accumulations `Y op= e` keep their form:
//      `Y = Y op if_then_else(c, e1, e2)`); other stores become `if c {..}` / `if !c {..}`;
//   2. a block with only spatial iter vars and no init whose body is a sequence is split
//      into one block per group of independent statements (the first keeps the name, the
//      others are `<name>_1`, `<name>_2`, ...), each over the same iter vars and bindings
//      (a loop whose whole body is the block is copied per piece: all of piece 1 runs
//      before piece 2, as gradient() reads blocks); block-local allocations are expanded
//      by the iter var extents into function allocs;
//   3. a loop inside a block body becomes a new iter var of that block, bound to a new
//      loop directly around the block realize: `spatial` when the stores' indices use it
//      injectively, `reduce` when every store is an accumulation whose indices ignore it;
//      a store `Y[I] = e0` right before an accumulation loop into Y[I] becomes the init;
//   4. `if rv == 0 && ... { Y[I] = e0 }` (every reduce var at 0) followed by an
//      accumulation into Y[I] in a reduction block without init becomes its init;
//   5. a spatial block whose body holds nested blocks is dissolved into its nested blocks
//      (outer iter vars replaced by their bindings) and blocks for its own statements; its
//      allocs get its iter vars as leading dimensions and become function allocs;
//   6. a scan block overwriting a state at every step keeps the state's history in a new
//      buffer `<Y>_hist` (leading dim: the scan var), and a block after the scan loop
//      copies the last step into Y; blocks later in the scan loop's body that read the
//      state at their step read the history instead, and so do blocks after the state's block
//      in the same statement reading the element it has just written; stores of the step
//      indexed by the scan var stay stores of the step;
//   8. opaque iter vars become spatial / reduce / scan vars; a reduce reading whose partial
//      values another store or block of the loop reads is read as a recurrence when it can;
//   9. a scan block whose stores read each other (an LSTM cell's C and H) is split into
//      one block per group of independent stores inside the same scan loop (the loops
//      between the scan loop and the block are copied per piece, the scan loop is not).
//   0f. a block-local temp of a block with reduce vars, stored once at the top level of the
//      body before any access and then only loaded at the stored indices, is inlined (each
//      load becomes the stored value) and its alloc dropped; temps stored several times or
//      under guards are executed symbolically (loads become the value their element holds);
//   0g. an `if` around a loop outside blocks moves inside the loop (rewrite 0 then wraps it);
//   0h. a function-level scratch set at the start of every iteration of a plain loop nest
//      gets one copy per iteration;
//   0i (normalize_lets.h). a let between loops whose value reads a buffer is copied into its
//      scope when the scope writes nothing the value reads;
//   13 (normalize_scan_sums.h). a sum over the steps of a scan loop moves after the loop when
//      it reads only values the loop has finished;
//   14 (normalize_scan_guards.h). in the then-arm of `if_then_else(v == e, ..)` (v a scan
//      var), a load at e of a buffer stored at v reads at v;
//   10b, 11, 12 (normalize_region.h): loops carrying a recurrence through blocks that are
//      each spatial become scan loops; region blocks storing at `v + k` are re-based; buffers
//      of a region written before the loop or by several of its blocks get versions;
// Every rewrite is applied only under the soundness conditions written in normalize.cpp;
// a block that cannot be rewritten soundly is left exactly as it was (gradient() then
// refuses it with its usual message). Blocks autodiff already accepts are never touched.
// Parameters and outputs are the same objects as F's.
// Throws tirc::Error naming the block for constructs no rewrite can make sound and
// gradient() would differentiate wrongly: blocks recomputed by a loop they ignore (0c), and
// a block reading a reduction's buffer inside a loop that feeds its reduce var (it sees
// partial sums; checked on the result).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/module.h"

namespace tirc {

Function normalize_for_autodiff(const FunctionNode& f);
inline Function normalize_for_autodiff(const Function& f) { return normalize_for_autodiff(*f); }

namespace ad {
// One iter var v of constant extent E in an index dimension, accesses `c*v + o` with each
// offset o in its range offs[i] = [lo, hi]: true when two different values of v never give
// one index, i.e. no difference of offsets is a nonzero multiple c*k with |k| < E (a GLU's
// `Y[v, j]` and `Y[v, j + 3]` over j in [0, 3)). Used by rewrite 2's disjointness test, and
// by gradient() before it stores two adjoints of one buffer in one block (which a second
// gradient must split again).
bool offsets_apart(int64_t c, const Expr& extent, const std::vector<std::pair<int64_t, int64_t>>& offs);
}  // namespace ad

}  // namespace tirc

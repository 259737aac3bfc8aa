// Lowering of a TensorIR-style function to the loop form that code generators consume
// (model: TVM's lowering pipeline: LowerInitBlock, PlanAndUpdateBufferAllocationLocation,
// ConvertBlocksToOpaque + LowerOpaqueBlock, FlattenBuffer, Simplify).
//
// Every pass takes and returns an ordinary function of the language, so the interpreter can
// run the result of each stage (differential tests in tests/lower/).
//
// The fully lowered form (lower_function) is:
//   * the root block (no iter vars) whose allocs are the buffers that stay at function level;
//   * no other block has iter vars, init, or a predicate. The only blocks left are
//     "scope blocks" `block NAME() { ... }` that either hold allocs (a buffer whose lifetime
//     is that block: one fresh buffer per execution of the block) or carry annotations
//     (e.g. "atomic", kept so codegen can make scatter-adds atomic in parallel loops);
//   * loops, ifs, lets, stores, call_extern as written by the schedule;
//   * after flatten_buffers, every buffer (params, outputs, allocs) is 1-D, C order:
//     A[i, j] of A: T[n, m] becomes A[i * m + j] of A: T[n * m] (shapes may be symbolic).
// Errors: none for valid input (the input is assumed to have passed the parser's checks).
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace tirc {

// Init lowering: a block with `init { S }` and reduce vars r1..rn gets the body
// `if (r1 == 0 && ... && rn == 0) { S }; BODY` and no init. A block without reduce vars
// runs its init unconditionally before the body.
Function lower_init(const FunctionNode& f);

// Loop order for strided accumulations (run after lower_init, before convert_blocks): in a
// perfect nest of serial loops with constant bounds `for s { for r1 .. rm { for i { B } } }`
// around one block B whose s and i feed only spatial iter vars and r1..rm only reduce ones
// (at most 16 iterations in all), and whose body (stores, lets, ifs) stores each buffer at
// one index free of reduce vars, loads it only there, and strides its last index by >= 2
// along i's iter var, the reduce loops move above s: `for r1 .. rm { for s { for i { B } } }`.
// Each spatial point's reduce steps keep their order and points own their elements, so the
// result is bit-identical. The strided phases of a pool's data gradient (avg_pool2d_grad)
// otherwise update a row twice in a row with vector code, the second load waiting for the
// masked store before it (bench/README.md "Codegen r19": 2.5x).
// TIRC_LOWER_NO_HOIST_REDUCTIONS=1 turns it off.
Function hoist_short_reductions(const FunctionNode& f);
// Init test unswitching (run after hoist_short_reductions, before convert_blocks; CPU only):
// lower_init leaves `if (r1 == 0 && ..) { INIT }` first in the block's body, so a block under
// loops that feed no reduce var tests it in every iteration of those loops, and LLVM
// if-converts the init into a masked store on every iteration followed by a load of the same
// element (2-5x the time of the decompose_reduction form, bench/README.md "Codegen r19").
// A loop (not thread-bound) whose body is such a block without allocs, loops or nested blocks, whose
// test, with the iter vars replaced by their bindings, is integer arithmetic free of the loop
// var (nothing that traps or reads memory), becomes
// `if (TEST) { for { INIT; BODY } } else { for { BODY } }`; the `if` moves on out of the
// enclosing loops whose body it is and whose var it does not use. Every iteration runs the
// same statements in the same order: bit-identical, `where` predicates stay in the block.
// TIRC_LOWER_NO_INIT_UNSWITCH=1 turns it off.
Function unswitch_init_tests(const FunctionNode& f);
// Block-to-loop conversion (run after lower_init): every non-root BlockRealize is replaced
// by its body with the iter vars substituted by their bindings, wrapped in
// `if (PREDICATE)` unless the predicate is constant true. A block with allocs or
// annotations leaves a scope block (no iter vars) around its body.
Function convert_blocks(const FunctionNode& f);

// Sibling loop fusion (run after convert_blocks): adjacent serial loops over the same range
// (`for i { A(i) }; for i { B(i) }`) become one loop `for i { A(i); B(i) }` when every
// buffer either writes is accessed by both only at elements whose index in one common
// dimension is the loop variable (iteration i of either touches slice i only), then their
// bodies are fused in turn. Loops with annotations or a non-serial kind, bodies with
// call_extern, buffer pointers or thread-bound loops are left alone. Bit-identical; the
// point is locality (a gradient's zero fill and the blocks accumulating into it run per
// slice) and smaller intermediates (plan_alloc can then place them inside the fused loop).
// Model: Halide's compute_with, LLVM's LoopFuse. TIRC_LOWER_NO_FUSE=1 turns it off.
Function fuse_sibling_loops(const FunctionNode& f);

// Allocation placement (run after convert_blocks; TVM: PlanAndUpdateBufferAllocationLocation):
// a root-level alloc moves into a scope block directly inside the deepest loop L that
// encloses all its accesses and such that every loop from the root down to L is either
// parallel/thread-bound (independent iterations: a private buffer per iteration) or
// partitions the buffer: some dimension's region under the loop is [c*l + f, c*l + f + w]
// with f free of l and 0 <= w < |c| (different iterations touch disjoint elements, so no
// value flows between iterations and a fresh buffer per iteration changes nothing). Never
// into a vectorized loop (it would stay scalar), never a "shared" buffer into a
// threadIdx/vthread loop, and through serial loops only when no access is a pointer
// (call_extern). Example: a cache_write accumulator C_local[1024, 1024] written and read at
// [io*8 + ii, jo*32 + ji] under `for jo in parallel { for io { ... } }` moves under io.
Function plan_alloc(const FunctionNode& f);

// Buffer compaction (run after plan_alloc; TVM: CompactBufferAllocation): every alloc of a
// block (root or scope block) whose accesses inside that block are bounded, per dimension,
// by [lo, lo + e) with e a constant smaller than the dimension, or any constant for a
// symbolic dimension (a tile of an n-row buffer under a predicated split) (lo an expression of
// variables bound outside the block; inner loops and lets relaxed over their ranges) gets
// that dimension shrunk to e and its indices shifted by -lo. Buffers passed as pointers to
// call_extern are left alone. With plan_alloc: C_local above becomes f32[8, 32] accessed at
// [ii, ji].
Function compact_buffers(const FunctionNode& f, bool gpu = false);

// With `gpu` (lowering for nvptx), a "shared" buffer is also compacted along a serial loop
// inside the threadIdx loops whose iterations touch disjoint parts (TVM's k-tile loop), when
// every thread of the block runs that loop (enclosing threadIdx loops span the launch size,
// no `if` above it, an extent free of thread indices) and no loop between the alloc and it
// revisits the parts; every iteration then reuses one tile. Such a loop is marked with the
// annotation below (value: the buffers' names); the NVPTX backend ends each of its
// iterations with a barrier (and refuses one it cannot place).
inline constexpr const char* kSharedReuseAnnotation = "tirc.shared_reuse";

// Flattening (run after convert_blocks): every buffer becomes 1-D with row-major strides.
// Params and outputs are replaced by 1-D buffers of the same name and dtype, so the
// caller passes the same memory (a C-ordered array of numel elements).
Function flatten_buffers(const FunctionNode& f);

// Index simplification: constant folding and the identities x+0, x*1, x*0, x-0, x//1, x%1,
// and reassociation of constant terms ((x + c1) + c2). Pure integer arithmetic only;
// float expressions are left as written (folding them could change rounding).
Function simplify_indices(const FunctionNode& f);
Expr simplify_index_expr(const Expr& e);

// Trimming of no-op iterations (model: Halide TrimNoOps; run after convert_blocks): a serial or
// parallel loop whose whole body is `if P { S }` gets the range of its var where P can hold,
// when P bounds the var linearly (`where h >= r && r + 27 >= h` -> loop r in
// [max(0, h - 27), min(3, h + 1))); conjuncts of P free of the var move out of the loop, so
// enclosing loops are trimmed in turn. Loops of fewer than 8 iterations keep their constant
// bounds (unrolled guards are cheaper than a run-time trip count). Only pure integer
// conjuncts move or become bounds; outputs are bit-identical. Functions with thread-bound loops are returned
// unchanged (their loop bounds decide barriers and launch sizes).
Function trim_no_ops(const FunctionNode& f);

// A bounds check inserted by insert_bounds_checks: which access of which block.
struct BoundsCheckSite {
  SourceLoc loc;       // the store's, else the block's (unknown for ones built by transforms)
  std::string block;   // the block's name
  std::string access;  // "load", "store", "binding" (buffer: the iter var; an iter var
                       // binding outside [0, extent), as the interpreter checks), or
                       // "divide" (buffer: floordiv/floormod/truncdiv/truncmod; an integer
                       // divisor not proven non-zero; the failing index is the dividend),
                       // "pow" / "pow_swapped" (an integer pow's exponent not proven >= 0;
                       // index and extent: the exponent and the base, or the reverse)
  std::string buffer;
  int dim = 0, ndim = 0;  // the checked dimension of an ndim-d access
};

// Bounds checks (run first, on the scheduled block form; for compiled code, whose accesses
// are otherwise unchecked): every index of a load or store that cannot be proven inside
// [0, extent) of its dimension becomes `__bounds_check(index, extent, site)` (an internal
// intrinsic, ir/expr.h) with `site` numbering the entries this call appends to *sites.
// The proof uses loop ranges (also symbolic), iter var bindings, block predicates, `if`
// conditions, `if_then_else` guards and integer lets (transforms/simplify Analyzer), so
// affine accesses of ordinary loop nests, padded convolutions and split tails carry no check;
// gathers through data (`A[I[i]]`) and indices the analysis cannot bound do. Facts about
// loaded values last until their buffer is written; small loop vars (<= 8 values) are
// split case by case. Pointers passed to call_extern (`A.ptr(i)`) are not checked.
Function insert_bounds_checks(const FunctionNode& f, std::vector<BoundsCheckSite>* sites);

// "block \"b\": out-of-bounds load A[_, 9]: index 9 of dimension 1 is outside [0, 8)" (the
// caller prefixes the site's location).
std::string bounds_check_message(const BoundsCheckSite& site, int64_t index, int64_t extent);

// Runs serially every `parallel` loop whose variable feeds (directly, through lets, the bounds
// of inner loops or the spatial iter vars of enclosing blocks) a reduce, scan or opaque iter
// var of a block that is not annotated "atomic", and every `vectorized` loop that feeds one of
// any block (vector lanes have no atomic update): such iterations update shared elements or
// must run in order, so running them at once would race (the interpreter runs them in order).
// Block-level input; the schedule's `parallel` refuses such loops, a script may write them
// (TVMScript does too).
Function serialize_ordered_parallel(const FunctionNode& f);

// Drops the "atomic" annotation of blocks whose updates cannot race (autodiff's scatter-add
// `W_grad[I[vi], vj] += ...` under `parallel` over column tiles): no parallel, thread-bound or
// vectorized loop reaches their reduce, scan or opaque vars (as above); every such loop around
// them reaches a spatial var, so concurrent instances differ in spatial vars, which partition
// the written elements; and no other block under such a loop around them writes a buffer they
// write. Plain (and vector) stores are then safe; the atomics made an embedding's gradient 17x
// slower (tests/codegen/unraced_atomic_test.cpp). That spatial vars partition the writes is
// the block's contract (LANGUAGE.md); the schedule's parallel / bind check it.
Function drop_unraced_atomic(const FunctionNode& f);

// The whole pipeline: serialize_ordered_parallel, drop_unraced_atomic, insert_bounds_checks
// (when `check_sites` is given; the sites are appended to it), lower_init,
// hoist_short_reductions, unswitch_init_tests (unless `gpu`), convert_blocks,
// fuse_sibling_loops, plan_alloc, compact_buffers, flatten_buffers (when `flatten`),
// simplify_indices, trim_no_ops, then simplify_function (transforms/simplify/simplify.h).
Function lower_function(const FunctionNode& f, bool flatten = true,
                        std::vector<BoundsCheckSite>* check_sites = nullptr, bool gpu = false);

// Helper: a copy of f with a new body.
Function with_body(const FunctionNode& f, Stmt body);

}  // namespace tirc

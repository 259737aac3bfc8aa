// Symbolic proof that a block's spatial iterations do not conflict (normalisation rewrite 0c,
// redundant.cpp), for what the enumeration of spatial_conflicts.h cannot settle: accesses whose
// index or guard does not fold to a constant at an instance (SpatialConflicts::skipped): reading
// a buffer (data-dependent: `A[I[vi]]`, `H[(vr + 1 + Z[0]) % 4, vi - 1]`), whose values no
// enumeration of the loop nest knows, or using operations the folder leaves alone
// (`H[i32(sqrt(f64(vr + 1))) % 4, ..]`, a guard `sqrt(f64(vr)) < 10.0`: the round-18 wrong
// gradient came back through them, review r7), and nests that were not enumerated whole
// (too large, symbolic sizes, scalar parameters in indices), where sampling finds only some
// conflicts. LANGUAGE.md: a block whose spatial iterations conflict is invalid, and gradient()
// reads spatial instances as independent, so a conflict that slips through is a silently wrong
// gradient: a pair of accesses that these tests cannot prove independent is refused.
//
// A pair (w, x) of accesses of one buffer, w a store, conflicts when instances p and p' at
// different spatial points have w(p) and x(p') at one element (x a load, or a store, of p').
// Proven independent when one of:
//  - a dimension d where w's and x's indices never meet: their difference, an affine form
//    over the iter vars of p and p' (scalars must cancel), misses 0 by the GCD test or by its
//    bounds over the iteration box (Banerjee; guards `v < c`-like narrow the box);
//  - the dimensions where w and x have the same load-free index, using no iter var but the
//    spatial and `shared` ones (and scalars), determine every spatial var of extent > 1 (a
//    mixed-radix sum, `A // c` with `A % c` pinning A, `(v + e) % m` with extent(v) <= m or
//    m the extent of v as written: a rotation): equal elements mean equal spatial points.
// `shared`: ordering iter vars (scan / opaque) whose loops run outside those of every other
// iter var, bound increasing: instances at different steps then run in step order (every
// point of a step before the next step), which the scan machinery reads as carried reads, so
// only instances at the same step can conflict and the var has one value in p and p'.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "transforms/autodiff/spatial_conflicts.h"

namespace tirc::ad {

// An index or guard of a reads a buffer (its element is data-dependent).
bool data_dependent(const BlockAccess& a);

// The names of the buffers loaded in a's indices and guards, sorted, comma-separated.
std::string loaded_in_index(const BlockAccess& a);

// The first pair (i, j) of acc (acc[i] a store; j == i for a store against itself at another
// instance) that the tests above cannot prove independent; nullopt when every pair is proven.
// skipped (when given, one flag per access): only the pairs where one access is flagged, the
// enumeration having checked the others over the whole nest. Pairs of two stores count when
// one of them carries an adjoint.
std::optional<std::pair<size_t, size_t>> unproven_pair(const BlockNode& blk,
                                                       const std::vector<BlockAccess>& acc,
                                                       const std::unordered_set<const VarNode*>& shared,
                                                       const std::vector<bool>* skipped);

}  // namespace tirc::ad

// Spatial-conflict detection for one block (used by normalisation rewrite 0c, redundant.cpp).
//
// LANGUAGE.md: "for spatial vars the order does not matter (a block whose spatial iterations
// conflict is invalid)". gradient() reads a spatial block as if every instance read the
// values from before the block (an in-place `A[vi] = A[9 - vi] + X[vi]` reads the previous
// version of A), and a scan block as running step by step, every spatial point of a step
// before the next step. When instances at different spatial points read and write one
// element, the loop nest's result depends on the order of those instances and the gradient
// was silently wrong (`check-grad` FAILED, or passed only because the interpreter's order
// happened to agree). SpatialConflicts is fed the instances of a block in loop-nest order
// and reports the first pair of instances, at different spatial points, that touch one
// element of a buffer the block stores to (its allocs excepted), one of them writing it,
// unless the instance the nest runs first is at a strictly earlier step (a read of an earlier
// step's result by another point: what the scan machinery reads). Steps are the values of the
// ordering iter vars, scan and opaque (LANGUAGE.md: opaque vars promise nothing, so the
// interpreter runs them in loop order and normalisation rewrite 8 reads them as recurrences
// when it can prove it), compared lexicographically in the order the caller gives (the
// nesting of their loops).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/module.h"

namespace tirc::ad {

// One access of a block body (or init) to a buffer the block stores to (allocs excluded).
// index / conds are over the block's iter vars (lets substituted); conds are the guards
// under which it runs (statement `if`s, `if_then_else` arms).
struct BlockAccess {
  const BufferNode* buffer;
  std::vector<Expr> index;
  std::vector<Expr> conds;
  bool write;
  bool in_init;
  bool carries;  // a store of a float value computed from a float buffer (an adjoint flows)
};

// The accesses above, stores and loads in program order. Loops and nested blocks inside the
// body are not entered (their accesses are not checked).
std::vector<BlockAccess> written_buffer_accesses(const BlockNode& blk);

// Symbolic sufficient condition (for nests that cannot be enumerated): every load of a buffer
// the block stores to is at the index tuple of every store of that buffer (the same element
// at the same instance), or, in a scan block, at that tuple in every dimension but the ones
// indexed by the scan var in the stores (another step of the same spatial point). Then no
// instance reads what an instance at another spatial point writes.
bool reads_only_own_elements(const BlockNode& blk, const std::vector<BlockAccess>& acc);

// The scalars (vars that are not iter vars: scalar parameters) the indices and guards of acc
// use outside loads, sorted by name. Such an access does not fold to a constant element
// unless they are given values: the enumeration is then incomplete.
std::vector<const VarNode*> access_scalars(const BlockNode& blk, const std::vector<BlockAccess>& acc);

// Fed the instances of one block in loop-nest order; see the file comment.
class SpatialConflicts {
 public:
  // ordering: the positions of the scan and opaque iter vars, outermost first (empty: in iter
  // var order).
  SpatialConflicts(const BlockNode& blk, std::vector<BlockAccess> acc, std::vector<size_t> ordering = {});
  // inst: the iter var values of the instance (in iter var order); iv_at: each iter var
  // bound to its value as a constant. Returns "" or the conflict, e.g. "its spatial
  // iterations (vi = 4) and (vi = 5) conflict on A[4]: (vi = 4) writes it and (vi = 5) reads
  // it ...". Accesses whose guards or indices do not fold to constants are skipped: loads in
  // them (data-dependent: conflict_proof.h checks those pairs), or scalars not in iv_at
  // (access_scalars: the caller enumerates again with them fixed).
  std::string visit(const std::vector<int64_t>& inst, const std::unordered_map<const VarNode*, Expr>& iv_at);
  // skipped()[k]: access k of acc was skipped at some visited instance (an index or guard that
  // did not fold): the enumeration checked none of its pairs there (conflict_proof.h must).
  const std::vector<bool>& skipped() const { return skipped_; }

 private:
  struct Seen {
    std::vector<int64_t> max_step;  // latest step (lexicographic) of the accesses of this kind
    std::vector<int64_t> inst;      // the instance that reached it
  };
  // Per (buffer, element), per spatial point: the reads and the writes seen so far.
  struct Entry {
    std::map<std::vector<int64_t>, Seen> reads, writes;
  };
  const BlockNode& blk_;
  std::vector<BlockAccess> acc_;
  std::vector<bool> skipped_;
  bool scan_ = false;
  std::vector<size_t> spatial_, ordering_, reduce_;
  std::map<std::pair<const BufferNode*, std::vector<int64_t>>, Entry> seen_;

  std::string show(const std::vector<int64_t>& inst) const;
  // A store of b whose index uses no spatial var (a scratch every spatial point writes).
  bool shared_scratch(const BufferNode* b) const;
};

}  // namespace tirc::ad

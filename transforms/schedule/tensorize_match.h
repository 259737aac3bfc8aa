// Matching a scheduled subtree against the `desc` of a tensor intrinsic, for tensorize
// (model: TVM src/tir/schedule/ir_comparator.cc, TensorizeComparator; own code).
//
// The target subtree (a loop nest, a block realize, or the body of a block) is compared with
// the desc body node by node: loops pairwise (equal extents, kinds may differ), blocks
// (same number of iter vars with the same kinds, bindings equal to "offset + the desc's
// binding", same init presence, predicate, stores and values), lets and ifs. Target
// variables bound inside the subtree are rewritten into the desc's coordinates while
// descending (a tile loop var becomes the desc loop var plus its min shift, a tile block
// iter var becomes offset + the desc iter var), so that every remaining difference is an
// offset made of outer variables. Buffer accesses may differ from the desc's by a per-buffer,
// per-dimension offset that does not depend on the tile; the target buffer may have extra
// leading dimensions (indexed by offsets only). Desc buffer params map to target buffers,
// desc scalar params to target expressions of outer variables.
//
// Every failure is a sched::Refusal with a precise reason.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// What a desc buffer parameter matched.
struct TensorizeBufferMatch {
  Buffer target;
  std::vector<Expr> offsets;  // one per target dimension (the leading extra ones are full indices)
  bool written = false;
};

struct TensorizeMatch {
  std::unordered_map<const BufferNode*, TensorizeBufferMatch> buffers;  // by desc param buffer
  std::unordered_map<const VarNode*, Expr> scalars;                     // by desc scalar param
  // Offsets of the matched block iter vars (in outer variables), with their kinds: they
  // decide the kinds of the iter vars of the block that replaces a tile.
  std::vector<std::pair<IterKind, Expr>> iter_offsets;
};

// Matches `target` (a statement of the scheduled function) against `desc_body` (the body of
// the root block of `desc`). `intrin` names the intrinsic in messages. Throws Refusal.
TensorizeMatch match_tensorize_desc(const Stmt& target, const FunctionNode& desc, const Stmt& desc_body,
                                    const std::string& intrin);

}  // namespace tirc::sched

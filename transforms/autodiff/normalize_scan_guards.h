// Normalisation rewrite 14: a scan step's load pinned by an equality guard reads the step.
//
// An in-place scan written as `H[vr, vi] = if_then_else(vi == 0, H[vr, 0], H[vr, vi] + 0.5 *
// H[vr, vi - 1])` reads `H[vr, 0]` in the then-arm: under the guard that is `H[vr, vi]` (the
// previous version of the element the step writes), but the scan machinery reads indices as
// the scan var plus a constant and refused it ("a scan step reads H at an index that is not
// the scan var vi plus a constant"). In the then-arm of `if_then_else(v == e, ..)` (v a scan
// iter var, e free of v), a load of a buffer the block stores, in a dimension where every store
// of it is indexed by exactly v, at index e, becomes a load at v: equal wherever the arm is
// evaluated.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with such loads rewritten; f unchanged (same contents) when there is none.
Function pin_guarded_scan_loads(const FunctionNode& f);

}  // namespace tirc::ad

// Normalisation rewrite 0d: a scan loop that a schedule split is fused back.
//
// `split(t, [_, 3])` of a scan block's loop gives `for x { for y { block s(vt: scan(6) =
// x * 3 + y) ... } }` (with `where x * 3 + y < E` when the factor does not divide E).
// gradient() needs the scan var bound to one loop var (plus a constant), so such a nest was
// refused ("the scan var vt must be bound to a loop var"). Two directly nested loops x, y
// (both from 0, y of constant extent a) whose body uses them only as `x * a + y` run that
// value through 0, 1, 2, ... in order: they become one loop `x_y_fused` over [0, ext(x) * a)
// (ext(x) may be symbolic; a loop split twice is fused twice) with `x * a + y` replaced by it,
// exactly TVM's fuse (the same iterations in the same order).
// Only nests holding a scan block are fused.
#pragma once

#include "ir/module.h"

namespace tirc::ad {

// f with every such nest fused; f unchanged when there is none.
Function fuse_split_scan_loops(const FunctionNode& f);

}  // namespace tirc::ad

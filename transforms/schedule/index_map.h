// Index maps of transform_layout / transform_block_layout (`lambda i, j: (j // 4, i, j % 4)`):
// integer evaluation and the point-by-point image of a constant domain (exact for any map of
// + - * // % min max; TVM proves such facts with its affine iter-map analysis, which covers
// fewer maps but also symbolic extents).
#pragma once

#include <cstdint>
#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// Refuses (with the reason) a map result that uses anything but + - * // % min max of the
// parameters and constants, or a divisor that is not a positive constant.
void check_index_map(const Expr& e);
// Value of a checked map result with vars[i] = vals[i].
int64_t eval_index(const Expr& e, const std::vector<const VarNode*>& vars, const std::vector<int64_t>& vals);

// The image of the box [0, domain) under the map: per result its [lo, hi]; whether the map is
// one-to-one there (else `clash` is a point landing where an earlier point did). `too_big` when
// the box has more than 2^22 points or the image's bounding box more than 2^24 (not checked).
struct MapImage {
  std::vector<int64_t> lo, hi;
  bool injective = true, too_big = false;
  std::vector<int64_t> clash;
  int64_t points = 0;      // points of the box
  int64_t box_points = 0;  // points of the image's bounding box [0, hi]
};
MapImage map_image(const std::vector<Var>& params, const std::vector<Expr>& results,
                   const std::vector<int64_t>& domain);

// The buffer argument of transform_layout / set_axis_separator: ("read", k) (the k-th read
// region of a buffer the block does not also write, as cache_read counts them), ("write", k)
// or a buffer name the block reads or writes.
Buffer block_buffer_arg(const BlockNode& b, const ScheduleArg& a);

}  // namespace tirc::sched

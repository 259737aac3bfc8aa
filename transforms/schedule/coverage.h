// Which elements of a buffer its writers store, found point by point (small constant nests).
// cache_read and reindex copy a buffer (whole, or over a block's iteration box) and must not
// read elements nobody wrote: writers under complementary conditions (`where i < 4` and
// `where i >= 4`) together write everything, a writer of a diagonal `X[v, v]` does not.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "transforms/schedule/state.h"

namespace tirc::sched {

// The integer value of e with the variables of `env` set (bools as 0 / 1); nullopt when e
// uses another variable, a load, a float, or divides by zero.
std::optional<int64_t> eval_int(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& env);

// One flag per element of A (row-major) telling whether some block of the function stores it
// for certain: stores of blocks whose loops, `where`, bindings, `if` conditions, body loops and
// store indices evaluate to constants; init stores count at the points where every non-spatial
// iter var is 0. nullopt when A's shape is not constant, a writer cannot be evaluated that way
// (a nested block or call_extern of its body may store A; an `if`, `let` or enclosing block
// lies between the function's root and it), or the walk would exceed `budget` points.
std::optional<std::vector<bool>> written_elements(const ScheduleState& st, const Buffer& A,
                                                  int64_t budget = int64_t{1} << 18);

// The row-major position of the element `idx` of A (constant shape), or -1 when outside.
int64_t element_offset(const Buffer& A, const std::vector<int64_t>& idx);

// Whether writer w (a BlockRealize statement) stores every element of A wherever it runs
// whole: nothing but loops between the root and it, and a store to A outside any `if` or loop
// of its body whose indices are distinct iter vars spanning A's shape (`B[vi, vj]`, `B[vj, vi]`).
// A `where` is the caller's business (non_guard_conjunct).
bool stores_whole_buffer(const ScheduleState& st, const Stmt& w, const Buffer& A);

}  // namespace tirc::sched

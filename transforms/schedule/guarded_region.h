// The part of a buffer a block really touches under a loop, from the accesses in its body and the
// conditions guarding them (used by compute_at instead of the declared regions).
#pragma once

#include "transforms/schedule/arith.h"
#include "transforms/schedule/state.h"

namespace tirc::sched {

// What block realize `b` (a descendant of `loop`) reads (write = false) or writes (write = true)
// of `declared.buffer` in one iteration of `loop`, per dimension (inclusive, in the loop vars of
// `loop` and above, as region_under_loop gives for `declared`). Each load or store of the buffer
// in b's init and body gives its indices with b's iter vars replaced by their bindings, relaxed
// over the loops between `loop` and b, those loops' ranges narrowed by the conditions the access
// runs under (enclosing `if`s, the taken arm of an if_then_else, b's `where`; only conditions
// linear in one loop var narrow it), and every index clipped by a condition on the same linear
// form (`where c - r + 1 >= 0` clips the load `S[c - r + 1]` at 0); accesses a condition proves
// never run are dropped. The hull over the accesses (the ends compared under `known`, the constant
// ranges of the loops at and above `loop`). Why: autodiff's reverse scan stores `X[vj - 1]` under
// `if vj >= 1` and its windowed scatters read `S[c - r + 1]` under a `where` keeping the index in
// the buffer, while the declared regions reach past the guard (column -1), which no tiling covers.
// A dimension the accesses do not bound, a block with nested blocks, inner loops, extern calls,
// pointers to the buffer, indices using let names, or (for reads) a `where` loading the buffer
// fall back to region_under_loop of `declared` (sound: the declared region holds every access).
std::vector<std::optional<SymRange>> accessed_region_under_loop(const Stmt& loop, const Stmt& b,
                                                                const BufferRegion& declared, bool write,
                                                                const RangeMap& known);

}  // namespace tirc::sched

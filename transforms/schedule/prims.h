// Declarations of the primitive entry points (one file per primitive in this folder).
// Each takes the state and the instruction, refuses with sched::Refusal, and commits its
// result to the state only when every check passed.
#pragma once

#include "transforms/schedule/state.h"

namespace tirc::sched {

using PrimFn = void (*)(ScheduleState&, const ScheduleInstr&);

void prim_get_block(ScheduleState&, const ScheduleInstr&);
void prim_get_loops(ScheduleState&, const ScheduleInstr&);
void prim_get_child_blocks(ScheduleState&, const ScheduleInstr&);
void prim_split(ScheduleState&, const ScheduleInstr&);
void prim_fuse(ScheduleState&, const ScheduleInstr&);
void prim_reorder(ScheduleState&, const ScheduleInstr&);
void prim_parallel(ScheduleState&, const ScheduleInstr&);
void prim_vectorize(ScheduleState&, const ScheduleInstr&);
void prim_unroll(ScheduleState&, const ScheduleInstr&);
void prim_bind(ScheduleState&, const ScheduleInstr&);
void prim_annotate(ScheduleState&, const ScheduleInstr&);
void prim_unannotate(ScheduleState&, const ScheduleInstr&);
void prim_set_scope(ScheduleState&, const ScheduleInstr&);
void prim_storage_align(ScheduleState&, const ScheduleInstr&);
void prim_enter_postproc(ScheduleState&, const ScheduleInstr&);
void prim_compute_at(ScheduleState&, const ScheduleInstr&);
void prim_reverse_compute_at(ScheduleState&, const ScheduleInstr&);
void prim_compute_inline(ScheduleState&, const ScheduleInstr&);
void prim_reverse_compute_inline(ScheduleState&, const ScheduleInstr&);
void prim_cache_read(ScheduleState&, const ScheduleInstr&);
void prim_cache_write(ScheduleState&, const ScheduleInstr&);
// Round 19: TVM's cache_inplace (cache_inplace.cpp): copy-in, the block on the cache, copy-out.
void prim_cache_inplace(ScheduleState&, const ScheduleInstr&);
void prim_decompose_reduction(ScheduleState&, const ScheduleInstr&);
void prim_rfactor(ScheduleState&, const ScheduleInstr&);
void prim_blockize(ScheduleState&, const ScheduleInstr&);
void prim_tensorize(ScheduleState&, const ScheduleInstr&);
// Round 5 (docs/schedule.md, "Primitives added in round 5").
void prim_transform_layout(ScheduleState&, const ScheduleInstr&);
void prim_transform_block_layout(ScheduleState&, const ScheduleInstr&);
void prim_add_unit_loop(ScheduleState&, const ScheduleInstr&);
void prim_decompose_padding(ScheduleState&, const ScheduleInstr&);
void prim_set_axis_separator(ScheduleState&, const ScheduleInstr&);
void prim_loop_partition(ScheduleState&, const ScheduleInstr&);
// How many loops `loop_partition(loop, factors)` makes (one more than the factors when they add
// up to less than the extent); refuses as the primitive does.
size_t loop_partition_count(const ScheduleState&, const ScheduleInstr&);
void prim_reindex(ScheduleState&, const ScheduleInstr&);
void prim_merge(ScheduleState&, const ScheduleInstr&);

// Round 6: pad_einsum (pad_einsum.cpp) and MetaSchedule's sampling instructions (sample.cpp).
void prim_pad_einsum(ScheduleState&, const ScheduleInstr&);
void prim_sample_perfect_tile(ScheduleState&, const ScheduleInstr&);
void prim_sample_categorical(ScheduleState&, const ScheduleInstr&);
void prim_sample_compute_location(ScheduleState&, const ScheduleInstr&);
// The instruction with names of sampled integers replaced by their values.
ScheduleInstr substitute_sampled(const ScheduleState& st, const ScheduleInstr& ins);
// compute_at / reverse_compute_at of a sampled "root" / "inline" location: applies it and
// returns true; refuses a location mark passed anywhere else.
bool apply_location_mark(ScheduleState& st, const ScheduleInstr& ins);

void prim_get_producers(ScheduleState&, const ScheduleInstr&);
void prim_get_consumers(ScheduleState&, const ScheduleInstr&);
// The blocks get_producers (producers true) / get_consumers returns for `ins`.
std::vector<Stmt> producers_or_consumers(ScheduleState& st, const ScheduleInstr& ins, bool producers);

// The blocks get_child_blocks returns for `ins` (its argument 0, a block or loop handle).
std::vector<Stmt> child_blocks(ScheduleState& st, const ScheduleInstr& ins);

}  // namespace tirc::sched

namespace tirc::sched {
// Runs one instruction on the state (dispatch by primitive name). Throws Refusal (without
// the primitive prefix) when refused; the state is then unchanged.
void apply_instruction(ScheduleState& st, const ScheduleInstr& ins);
}  // namespace tirc::sched

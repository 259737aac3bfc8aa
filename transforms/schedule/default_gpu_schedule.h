// The default GPU schedule: what `tirc build --target nvptx` applies to a function that binds
// no loop to blockIdx/threadIdx, so that an unscheduled (or CPU-scheduled) function still
// compiles to a correct kernel. Method: TVM's tir.transform.DefaultGPUSchedule (its
// ThreadBind helper, also meta_schedule's AutoBind): per top-level loop nest, fuse the outer
// data-parallel loops, split the fused loop into blockIdx.x x threadIdx.x and bind them. It is
// made of the schedule primitives themselves (fuse, split, reorder, bind, add_unit_loop), so
// every step is checked by the primitive's own legality checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"

namespace tirc {

struct DefaultGpuScheduleOptions {
  int64_t max_threads_per_block = 1024;  // TVM's cuda target max_num_threads
};

// True when some loop of f is bound to a blockIdx/threadIdx axis (vthread not counted).
bool has_gpu_thread_binding(const FunctionNode& f);

// f with every top-level statement of its root block bound to GPU threads; f itself when it
// already has a GPU thread binding (the user's own GPU schedule is kept as written).
// Per top-level statement (under its lets): the longest chain of perfectly nested
// serial/parallel loops from the top whose variables feed only spatial iter vars of every
// block below (each block uses each of them; reduce iter vars of an atomic scatter-add too,
// whose updates commute) is fused into one loop of P iterations, split into
// [ceil(P / T), min(P, T)] and bound to (blockIdx.x, threadIdx.x), T = max_threads_per_block
// (a symbolic P: [_, T], the tail predicated). A statement with no such loop (a reduction to
// a scalar, a scan over the outermost loop, a nest whose iterations share a scratch buffer,
// which bind refuses) runs in one thread: unit loops bound to blockIdx.x and threadIdx.x are
// added above it. Unlike TVM, the blocks are not capped at 256 with a serial rest per thread:
// bind's independence check cannot separate the interleaved footprints of such threads for
// intermediates, so those nests would fall back to one thread.
// `notes` (optional) receives one line per statement saying what was done.
// Errors: none of its own; a refusal of a primitive makes the statement fall back to the
// one-thread form, which is always legal.
Function default_gpu_schedule(const FunctionNode& f, const DefaultGpuScheduleOptions& opts = {},
                              std::vector<std::string>* notes = nullptr);

}  // namespace tirc

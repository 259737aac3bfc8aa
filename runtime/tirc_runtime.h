/* Runtime entry points called by code that tirc compiles (JIT and AOT objects).
 *
 * Plain C (C99 + pthreads) so that an AOT user can compile runtime/tirc_runtime.c next to
 * the object `tirc build` emits: cc main.c op.o tirc_runtime.c -lpthread -lm.
 * Inside tirc the same code is built into the library (runtime/tirc_runtime_lib.cpp).
 *
 * Thread pool: created on the first parallel call with TIRC_NUM_THREADS threads (default:
 * the number of online cores), the calling thread included. A parallel loop of n iterations
 * is cut into at most that many contiguous chunks, one per thread. A parallel call made
 * from inside a parallel body (nested parallel loops) or while another thread is using the
 * pool runs serially on the calling thread, which is always correct. */
#ifndef TIRC_RUNTIME_H_
#define TIRC_RUNTIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Body of an outlined parallel loop: runs iterations [begin, end) (0-based). */
typedef void (*tirc_parallel_body)(int64_t begin, int64_t end, void* closure);

/* Runs body over [0, n) on the pool and returns when every chunk has finished. */
void tirc_parallel_for(int64_t n, tirc_parallel_body body, void* closure);

/* Number of threads the pool uses (reads TIRC_NUM_THREADS on first use). */
int tirc_num_threads(void);

/* Overrides the thread count (0 = back to TIRC_NUM_THREADS / all cores). Takes effect at the
 * next parallel call; used by benchmarks. Not thread-safe with concurrent parallel calls. */
void tirc_set_num_threads(int n);

/* A process-wide lock around updates of "atomic" blocks that LLVM cannot do with one
 * atomic instruction (f16/bf16 or non-additive updates) inside parallel loops. */
void tirc_atomic_lock(void);
void tirc_atomic_unlock(void);

/* 64-byte aligned heap memory for buffers too large for the stack; never returns NULL for
 * nbytes <= 0 (returns a valid 64-byte block). Aborts with a message when out of memory.
 * Blocks of 64 KiB and more are cached by tirc_free and handed out again by tirc_alloc
 * (same power-of-two size class; at most 32 blocks, 1 GiB), so repeated calls of a function
 * reuse their intermediates' pages. tirc_free(NULL) does nothing. */
void* tirc_alloc(int64_t nbytes);
void tirc_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* TIRC_RUNTIME_H_ */

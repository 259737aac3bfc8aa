/* Thread pool and allocation entry points for compiled code (see tirc_runtime.h).
 * Written in the common subset of C and C++: tirc_runtime_lib.cpp includes this file. */
#include "tirc_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TIRC_MAX_THREADS 256

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_busy = PTHREAD_MUTEX_INITIALIZER; /* one parallel region at a time */
static int g_started = 0;                                  /* worker threads created */
static int g_nthreads = 0;                                 /* threads used per region, caller included */
static int g_override = 0;
static int64_t g_gen = 0;   /* job generation */
static int g_remaining = 0; /* workers still running the current job */
static int64_t g_n = 0;
static int g_chunks = 0;
static tirc_parallel_body g_body = 0;
static void* g_closure = 0;
static __thread int t_in_parallel = 0;

static int env_threads(void) {
  const char* s = getenv("TIRC_NUM_THREADS");
  if (s && *s) {
    int v = atoi(s);
    if (v >= 1) return v > TIRC_MAX_THREADS ? TIRC_MAX_THREADS : v;
  }
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  if (c < 1) c = 1;
  return c > TIRC_MAX_THREADS ? TIRC_MAX_THREADS : (int)c;
}

int tirc_num_threads(void) {
  if (g_override > 0) return g_override;
  return env_threads();
}

void tirc_set_num_threads(int n) { g_override = n > TIRC_MAX_THREADS ? TIRC_MAX_THREADS : n; }

static void run_chunk(int id, int chunks, int64_t n, tirc_parallel_body body, void* closure) {
  int64_t q = n / chunks, r = n % chunks;
  int64_t begin = id * q + (id < r ? id : r);
  int64_t end = begin + q + (id < r ? 1 : 0);
  if (begin < end) body(begin, end, closure);
}

struct tirc_worker_arg {
  int id;
  int64_t gen; /* the job generation when the worker was created: it only runs later jobs */
};

static void* worker_main(void* arg) {
  struct tirc_worker_arg* wa = (struct tirc_worker_arg*)arg;
  int id = wa->id;
  int64_t seen = wa->gen;
  free(wa);
  t_in_parallel = 1;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_gen == seen) pthread_cond_wait(&g_start, &g_mu);
    seen = g_gen;
    int chunks = g_chunks;
    int64_t n = g_n;
    tirc_parallel_body body = g_body;
    void* closure = g_closure;
    pthread_mutex_unlock(&g_mu);
    if (id < chunks) run_chunk(id, chunks, n, body, closure);
    pthread_mutex_lock(&g_mu);
    if (--g_remaining == 0) pthread_cond_signal(&g_done);
    pthread_mutex_unlock(&g_mu);
  }
  return 0;
}

void tirc_parallel_for(int64_t n, tirc_parallel_body body, void* closure) {
  if (n <= 0) return;
  int want = tirc_num_threads();
  if (want <= 1 || n == 1 || t_in_parallel || pthread_mutex_trylock(&g_busy) != 0) {
    body(0, n, closure);
    return;
  }
  /* Workers are created lazily and never exit; more are added if the count grows. */
  while (g_started < want - 1) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)16 << 20);
    struct tirc_worker_arg* wa = (struct tirc_worker_arg*)malloc(sizeof(struct tirc_worker_arg));
    if (!wa) break;
    wa->id = g_started + 1;
    pthread_mutex_lock(&g_mu);
    wa->gen = g_gen;
    pthread_mutex_unlock(&g_mu);
    if (pthread_create(&th, &attr, worker_main, wa) != 0) {
      free(wa);
      pthread_attr_destroy(&attr);
      break;
    }
    pthread_attr_destroy(&attr);
    pthread_detach(th);
    ++g_started;
  }
  g_nthreads = want - 1 < g_started ? want : g_started + 1;
  int chunks = g_nthreads;
  if (n < chunks) chunks = (int)n;
  pthread_mutex_lock(&g_mu);
  g_n = n;
  g_chunks = chunks;
  g_body = body;
  g_closure = closure;
  g_remaining = g_started;
  ++g_gen;
  pthread_cond_broadcast(&g_start);
  pthread_mutex_unlock(&g_mu);
  t_in_parallel = 1;
  run_chunk(0, chunks, n, body, closure);
  t_in_parallel = 0;
  pthread_mutex_lock(&g_mu);
  while (g_remaining > 0) pthread_cond_wait(&g_done, &g_mu);
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_busy);
}

/* Large blocks are kept for reuse (TVM's WorkspacePool does the same): a function that
 * allocates a few MiB of intermediates per call would otherwise get fresh pages from the
 * kernel on every call (glibc serves such sizes with mmap), and first-touch page faults then
 * cost more than the arithmetic (measured in this VM: a layer-norm gradient 84 ms -> 5 ms). Each block
 * carries its size in a 64-byte header. A freed block of at least TIRC_POOL_MIN bytes goes
 * into a small cache (at most TIRC_POOL_SLOTS blocks, TIRC_POOL_MAX_BYTES in all); an
 * allocation takes a cached block of the same size class (a power of two). */
#define TIRC_POOL_MIN ((size_t)1 << 16)
#define TIRC_POOL_SLOTS 32
#define TIRC_POOL_MAX_BYTES ((size_t)1 << 30)
#define TIRC_HEADER 64

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static void* g_pool[TIRC_POOL_SLOTS]; /* user pointers of cached blocks */
static int g_pool_n = 0;
static size_t g_pool_bytes = 0;

static size_t block_size(void* user) { return *(size_t*)((char*)user - TIRC_HEADER); }

void* tirc_alloc(int64_t nbytes) {
  size_t n = nbytes <= 0 ? 64 : (size_t)((nbytes + 63) / 64 * 64);
  if (n >= TIRC_POOL_MIN) {
    size_t c = TIRC_POOL_MIN;
    while (c < n) c <<= 1;
    n = c;
    pthread_mutex_lock(&g_pool_mu);
    for (int i = g_pool_n - 1; i >= 0; --i) {
      void* q = g_pool[i];
      if (block_size(q) != n) continue;
      g_pool[i] = g_pool[--g_pool_n];
      g_pool_bytes -= n;
      pthread_mutex_unlock(&g_pool_mu);
      return q;
    }
    pthread_mutex_unlock(&g_pool_mu);
  }
  void* p = 0;
  if (posix_memalign(&p, 64, n + TIRC_HEADER) != 0) p = 0;
  if (!p) {
    fprintf(stderr, "tirc runtime: out of memory allocating %lld bytes\n", (long long)nbytes);
    abort();
  }
  *(size_t*)p = n;
  return (char*)p + TIRC_HEADER;
}

void tirc_free(void* p) {
  if (!p) return;
  size_t n = block_size(p);
  if (n >= TIRC_POOL_MIN) {
    pthread_mutex_lock(&g_pool_mu);
    if (g_pool_n < TIRC_POOL_SLOTS && g_pool_bytes + n <= TIRC_POOL_MAX_BYTES) {
      g_pool[g_pool_n++] = p;
      g_pool_bytes += n;
      pthread_mutex_unlock(&g_pool_mu);
      return;
    }
    pthread_mutex_unlock(&g_pool_mu);
  }
  free((char*)p - TIRC_HEADER);
}

static pthread_mutex_t g_atomic_mu = PTHREAD_MUTEX_INITIALIZER;
void tirc_atomic_lock(void) { pthread_mutex_lock(&g_atomic_mu); }
void tirc_atomic_unlock(void) { pthread_mutex_unlock(&g_atomic_mu); }

// Codegen round 17 benchmarks (bench/README.md, "Codegen r17"): each function F of
// bench/codegen_r17.tir named `<base>_<variant>` (scheduled: vectorize, parallel, ...) is timed
// against `<base>` (the same function unscheduled: LLVM's own loop optimisations) in this
// process, on the same inputs, outputs compared bit for bit. Rounds alternate the two
// functions; a sample is the mean of enough calls to last ~0.2 ms, the median of `repeats`
// samples is a round's time, and the best round of each is kept.
// Build and run from the source root:
//   ninja -C build bench_codegen_r17 && TIRC_NUM_THREADS=1 build/bench_codegen_r17 [repeats] [filter]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "codegen/jit.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "runtime/tirc_runtime.h"
#include "transforms/schedule/schedule.h"

using namespace tirc;
using bench::jit;
using bench::Jitted;
using bench::median_time;
using bench::now;

namespace {

bool same_bits(const NDArray& a, const NDArray& b) {
  return a.numel() == b.numel() && std::memcmp(a.data(), b.data(), a.numel() * dtype_bytes(a.dtype())) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 15;
  std::string filter = argc > 2 ? argv[2] : "";
  try {
    std::printf("threads: %d (TIRC_NUM_THREADS)\n", tirc_num_threads());
    Module raw = parse_file("bench/codegen_r17.tir");
    Module m = apply_module_schedules(raw);
    std::printf("%-16s %-12s %10s %10s %8s\n", "function", "base", "base us", "sched us", "ratio");
    for (auto& f : m.funcs) {
      auto us = f->name.rfind('_');
      if (us == std::string::npos) continue;
      std::string base = f->name.substr(0, us);
      Function b = m.find_func(base);
      if (!b || (!filter.empty() && f->name.find(filter) == std::string::npos)) continue;
      ArgMap in = random_inputs(*b, 1);
      Jitted jb = jit(*b, in), js = jit(*f, in);
      jb.run();
      js.run();
      for (auto& [name, arr] : jb.outputs)
        if (!same_bits(arr, js.outputs.at(name)))
          throw Error(f->name + ": output " + name + " differs from " + base);
      double t0 = now();
      jb.run();
      int calls = std::max(1, static_cast<int>(2e-4 / std::max(now() - t0, 1e-9)));
      double tb = 1e30, ts = 1e30;
      for (int r = 0; r < 3; ++r) {
        tb = std::min(tb, median_time(repeats, calls, [&] { jb.run(); }));
        ts = std::min(ts, median_time(repeats, calls, [&] { js.run(); }));
      }
      std::printf("%-16s %-12s %10.2f %10.2f %7.2fx\n", f->name.c_str(), base.c_str(), tb * 1e6, ts * 1e6,
                  ts / tb);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

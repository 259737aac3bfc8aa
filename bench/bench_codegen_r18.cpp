// Codegen round 18 benchmarks (bench/README.md, "Codegen r18"): each function F of
// bench/codegen_r18.tir named `<base>_<variant>` is compiled twice, as before round 18 (the
// switches TIRC_CODEGEN_NO_GUARD_SPLIT, TIRC_LOWER_NO_SCALED_FACTS and
// TIRC_LOWER_NO_PARTITION_PROOF set while it compiles) and as now, and both are timed against
// `<base>` in this process, on the same inputs; outputs are compared bit for bit with the
// base's (a scatter's float adds may be reordered by threads: compared with a tolerance).
// Rounds alternate the three; a sample is the mean of enough calls to last ~0.2 ms, the median
// of `repeats` samples a round's time, the best of 3 rounds is kept.
// Build and run from the source root:
//   ninja -C build bench_codegen_r18 && TIRC_NUM_THREADS=1 build/bench_codegen_r18 [repeats] [filter]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
using bench::Jitted;
using bench::median_time;
using bench::now;

namespace {

const char* const kSwitches[] = {"TIRC_CODEGEN_NO_GUARD_SPLIT", "TIRC_LOWER_NO_SCALED_FACTS",
                                 "TIRC_LOWER_NO_PARTITION_PROOF"};

Jitted jit(const FunctionNode& f, const ArgMap& inputs, bool before) {
  for (const char* s : kSwitches) before ? setenv(s, "1", 1) : unsetenv(s);
  Jitted j = bench::jit(f, inputs);  // compiled (and lowered) now, with the switches set
  for (const char* s : kSwitches) unsetenv(s);
  return j;
}

bool close(const NDArray& a, const NDArray& b) {
  if (a.numel() != b.numel()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::abs(a.get(i) - b.get(i)) > 1e-4 * (1 + std::abs(a.get(i)))) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 15;
  std::string filter = argc > 2 ? argv[2] : "";
  try {
    std::printf("threads: %d (TIRC_NUM_THREADS)\n", tirc_num_threads());
    Module m = apply_module_schedules(parse_file("bench/codegen_r18.tir"));
    std::printf("%-14s %10s %10s %10s %9s %9s\n", "function", "base us", "before us", "after us", "before",
                "after");
    for (auto& f : m.funcs) {
      auto us = f->name.rfind('_');
      if (us == std::string::npos) continue;
      std::string base = f->name.substr(0, us);
      Function b = m.find_func(base);
      if (!b || (!filter.empty() && f->name.find(filter) == std::string::npos)) continue;
      ArgMap in = random_inputs(*b, 1);
      Jitted jb = jit(*b, in, false), j0 = jit(*f, in, true), j1 = jit(*f, in, false);
      jb.run();
      j0.run();
      j1.run();
      for (auto& [name, arr] : jb.outputs)
        if (!close(arr, j0.outputs.at(name)) || !close(arr, j1.outputs.at(name)))
          throw Error(f->name + ": output " + name + " differs from " + base);
      double t0 = now();
      jb.run();
      int calls = std::max(1, static_cast<int>(2e-4 / std::max(now() - t0, 1e-9)));
      double tb = 1e30, tbefore = 1e30, tafter = 1e30;
      for (int r = 0; r < 3; ++r) {
        tb = std::min(tb, median_time(repeats, calls, [&] { jb.run(); }));
        tbefore = std::min(tbefore, median_time(repeats, calls, [&] { j0.run(); }));
        tafter = std::min(tafter, median_time(repeats, calls, [&] { j1.run(); }));
      }
      std::printf("%-14s %10.2f %10.2f %10.2f %8.2fx %8.2fx\n", f->name.c_str(), tb * 1e6, tbefore * 1e6,
                  tafter * 1e6, tbefore / tb, tafter / tb);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

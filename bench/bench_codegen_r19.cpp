// Codegen round 19 benchmarks (bench/README.md, "Codegen r19"): the gradients of
// bench/grad_scale/{avg_pool2d,max_pool2d}.tir (autodiff, unscheduled) compiled twice in this
// process, as before round 19 (TIRC_CODEGEN_NO_STORE_SPANS and TIRC_LOWER_NO_HOIST_REDUCTIONS
// set while they compile) and as now, and timed against the forward F on the same inputs (as
// bench/grad_scale.py does with `tirc bench`); the two F_grad outputs are compared bit for
// bit. Rounds alternate the three; a sample is the mean of enough calls to last ~2 ms, the
// median of `repeats` samples a round's time, the best of 3 rounds is kept.
// Build and run from the source root:
//   ninja -C build bench_codegen_r19 && TIRC_NUM_THREADS=1 build/bench_codegen_r19 [repeats] [ops]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench_util.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "runtime/tirc_runtime.h"
#include "transforms/autodiff/gradient.h"

using namespace tirc;
using bench::Jitted;
using bench::median_time;
using bench::now;

namespace {

const char* const kSwitches[] = {"TIRC_CODEGEN_NO_STORE_SPANS", "TIRC_LOWER_NO_HOIST_REDUCTIONS"};

Jitted jit(const FunctionNode& f, const ArgMap& inputs, bool before) {
  for (const char* s : kSwitches) before ? setenv(s, "1", 1) : unsetenv(s);
  Jitted j = bench::jit(f, inputs);
  for (const char* s : kSwitches) unsetenv(s);
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 15;
  std::string ops = argc > 2 ? argv[2] : "avg_pool2d,max_pool2d";
  try {
    std::printf("threads: %d (TIRC_NUM_THREADS)\n", tirc_num_threads());
    std::printf("%-12s %9s %12s %12s %14s %13s\n", "op", "F us", "before us", "after us", "before / F",
                "after / F");
    size_t at = 0;
    while (at <= ops.size()) {
      size_t comma = ops.find(',', at);
      std::string op = ops.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      at = comma == std::string::npos ? ops.size() + 1 : comma + 1;
      Module m = parse_file("bench/grad_scale/" + op + ".tir");
      Function f = m.find_func(op);
      if (!f) throw Error("no function " + op);
      Function g = gradient(*f, {});
      ArgMap fin = random_inputs(*f, 1), gin = random_inputs(*g, 1);
      Jitted jf = bench::jit(*f, fin), j0 = jit(*g, gin, true), j1 = jit(*g, gin, false);
      j0.run();
      j1.run();
      for (auto& [name, arr] : j0.outputs) {
        const NDArray& b = j1.outputs.at(name);
        if (std::memcmp(arr.data(), b.data(), arr.nbytes()) != 0)
          throw Error(op + ": F_grad output " + name + " differs");
      }
      double t0 = now();
      jf.run();
      int calls = std::max(1, static_cast<int>(2e-3 / std::max(now() - t0, 1e-9)));
      double tf = 1e30, tbefore = 1e30, tafter = 1e30;
      for (int r = 0; r < 3; ++r) {
        tf = std::min(tf, median_time(repeats, calls, [&] { jf.run(); }));
        tbefore = std::min(tbefore, median_time(repeats, calls, [&] { j0.run(); }));
        tafter = std::min(tafter, median_time(repeats, calls, [&] { j1.run(); }));
      }
      std::printf("%-12s %9.1f %12.1f %12.1f %13.2fx %12.2fx\n", op.c_str(), tf * 1e6, tbefore * 1e6,
                  tafter * 1e6, tbefore / tf, tafter / tf);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

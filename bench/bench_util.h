// Shared helpers of the in-process codegen benchmarks (bench_codegen_r17/r18/r19.cpp): a
// JIT-compiled function with its packed arguments, and the median of timed samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "codegen/jit.h"

namespace tirc::bench {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A compiled function bound to its inputs (outputs allocated once): run() calls it.
struct Jitted {
  std::unique_ptr<JitProgram> prog;
  ArgMap outputs;
  std::vector<double> slots;
  std::vector<void*> args;
  void run() { prog->call_packed(args.data()); }
};

inline Jitted jit(const FunctionNode& f, const ArgMap& inputs) {
  Jitted j;
  j.prog = compile_jit(f);
  j.args = j.prog->pack_args(inputs, &j.outputs, &j.slots);
  return j;
}

// Median over `repeats` samples of the mean time of `calls` runs of fn.
inline double median_time(int repeats, int calls, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    double t0 = now();
    for (int c = 0; c < calls; ++c) fn();
    t.push_back((now() - t0) / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace tirc::bench

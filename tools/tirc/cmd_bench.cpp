// tirc bench FILE --func F [--repeat N] [--warmup W] [--input NAME=...] (CLI.md): apply the
// file's schedules, JIT-compile F once, run it W times to warm up, time N runs and print the
// median (and min/max) time and GFLOP/s, FLOPs counted from the IR of F as written, before its
// schedule (interp/stats.h). `--engine interp` times the reference interpreter instead (the
// zoo's F_grad / F time ratios in bench/README.md); compile_ms is then its closure build.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "interp/interp.h"
#include "interp/runner.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/schedule.h"
#ifdef TIRC_WITH_LLVM
#include "codegen/jit.h"
#include "runtime/tirc_runtime.h"
#endif

namespace tirc::cli {

namespace {
struct BenchOptions {
  std::string file, func;
  std::vector<std::string> inputs;
  int repeat = 10, warmup = 2, threads = 0;
  uint64_t seed = 0;
  bool no_schedule = false, fast_math = false, no_bounds_check = false, json = false;
  std::string engine = "jit";
};

// The value of a 0-d array as text: integers exactly, floats with 9 significant digits.
std::string scalar_text(const NDArray& a) {
  if (is_float(a.dtype())) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", a.get(0));
    return buf;
  }
  if (a.dtype() == DType::I64) return std::to_string(a.ptr<int64_t>()[0]);
  if (a.dtype() == DType::Bool) return a.get(0) != 0 ? "true" : "false";
  return std::to_string(static_cast<int64_t>(a.get(0)));
}
}  // namespace

void register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "JIT-compile a function and time it: median time and GFLOP/s");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--func,-f", o->func, "function to time (optional when the file has one function)");
  cmd->add_option("--repeat,-n", o->repeat, "timed runs (default 10)")
      ->transform(at_least(1, "at least 1", true));
  cmd->add_option("--warmup", o->warmup, "untimed runs first (default 2)")
      ->transform(at_least(0, ">= 0", true));
  cmd->add_option("--input,-i", o->inputs, "NAME=FILE.npy or NAME=VALUE (scalars, fills); others are random");
  cmd->add_option("--seed", o->seed, "seed of the random inputs (default 0)")->transform(seed_value());
  // A negative count used to be silently the default; 0 asks for the default explicitly.
  cmd->add_option("--threads", o->threads,
                  "threads of parallel loops (default, or 0: TIRC_NUM_THREADS or all cores)")
      ->transform(at_least(0, ">= 0", true));
  cmd->add_flag("--no-schedule", o->no_schedule,
                "ignore the file's schedule items (time the naive function)");
  cmd->add_flag("--no-bounds-check", o->no_bounds_check,
                "compile without the checks of indices that cannot be proven inside their buffer");
  cmd->add_flag("--fast-math", o->fast_math, "allow reassociation and contraction of float arithmetic");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_option("--engine", o->engine, "jit (default) or interp (the reference interpreter)")
      ->check(CLI::IsMember({"jit", "interp"}));
  cmd->callback([o] {
    run_guarded([o]() -> int {
#ifndef TIRC_WITH_LLVM
      if (o->engine == "jit") throw Error("tirc was built without LLVM (configure with -DTIRC_WITH_LLVM=ON)");
#endif
      Module m = parse_file(o->file);
      // FLOPs are the algorithm's work, counted on the function as written: a schedule does
      // not change what is computed, but a non-dividing split adds predicated-off iterations
      // that static counting (which ignores `where`) would count as work.
      const Module unscheduled = m;
      if (!o->no_schedule && !m.schedules.empty()) m = apply_module_schedules(m, o->func);
      Function f;
      if (o->func.empty()) {
        if (m.funcs.empty()) throw Error(source_name(o->file) + " defines no function");
        if (m.funcs.size() != 1) throw Error(several_functions_message(m, o->file));
        f = m.funcs[0];
      } else {
        f = m.find_func(o->func);
        if (!f) throw Error(no_function_message(m, o->func, o->file));
      }
      ArgMap given = parse_input_specs(*f, o->inputs, false);
      ArgMap inputs = complete_inputs(*f, given, o->seed);
      // A scalar parameter not given (usually a size) was drawn at random: say which value was
      // timed, or `bench` of a symbolic function reports a time for a size the user never sees.
      for (auto& p : f->params)
        if (!p.is_buffer() && !given.count(p.name()))
          std::cerr << "note: scalar parameter " << p.name() << " was not given; timed with " << p.name()
                    << "=" << scalar_text(inputs.at(p.name())) << " (random; give --input " << p.name()
                    << "=VALUE)\n";
      std::vector<double> times;
      double compile_s = 0;
      int threads = 1;
      if (o->engine == "interp") {
        auto t0 = std::chrono::steady_clock::now();
        auto prog = compile_interp(*f);
        compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (int i = 0; i < o->warmup; ++i) prog->run(inputs);
        for (int i = 0; i < o->repeat; ++i) {
          auto t1 = std::chrono::steady_clock::now();
          prog->run(inputs);
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
        }
      } else {
#ifdef TIRC_WITH_LLVM
        if (o->threads > 0) tirc_set_num_threads(o->threads);
        CodegenOptions copts;
        copts.fast_math = o->fast_math;
        copts.bounds_checks = !o->no_bounds_check;
        auto prog = compile_jit(*f, copts);
        ArgMap outputs;
        std::vector<double> slots;
        auto args = prog->pack_args(inputs, &outputs, &slots);
        for (int i = 0; i < o->warmup; ++i) prog->call_packed(args.data());
        for (int i = 0; i < o->repeat; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          prog->call_packed(args.data());
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        compile_s = prog->compile_seconds();
        threads = tirc_num_threads();
#endif
      }
      std::sort(times.begin(), times.end());
      double median = times.size() % 2 ? times[times.size() / 2]
                                       : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
      ArgMap scalars;
      for (auto& p : f->params)
        if (!p.is_buffer()) scalars[p.name()] = inputs.at(p.name());
      // Static counting can fail (e.g. a loop extent it cannot evaluate); the timing is still
      // valid, so print it with the FLOPs unknown (-1 in JSON) rather than fail the command.
      double flops = -1;
      try {
        Function orig = unscheduled.find_func(f->name);
        flops = static_counts(orig ? *orig : *f, scalars).total.flops;
      } catch (const Error&) {
      }
      double gflops = median > 0 && flops >= 0 ? flops / median * 1e-9 : 0;
      char buf[512];
      if (o->json) {
        // "function" as in `stats --json` and `check-grad --json` (this said "func" until round 8).
        // One line, keys in this order; the name is escaped by the JSON library and the line is
        // not cut (a fixed buffer cut long names, leaving invalid JSON).
        char times_txt[256], flops_txt[400], rest[256];
        std::snprintf(times_txt, sizeof times_txt,
                      "\"repeat\": %d, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, ", o->repeat,
                      median * 1e3, times.front() * 1e3, times.back() * 1e3);
        if (std::isfinite(flops))
          std::snprintf(flops_txt, sizeof flops_txt, "%.0f", flops);
        else
          std::snprintf(flops_txt, sizeof flops_txt, "null");
        std::snprintf(rest, sizeof rest, "\"gflops\": %.6g, \"compile_ms\": %.3f, \"threads\": %d}",
                      std::isfinite(gflops) ? gflops : 0.0, compile_s * 1e3, threads);
        std::cout << "{\"function\": " << nlohmann::json(f->name).dump() << ", \"engine\": \"" << o->engine
                  << "\", " << times_txt << "\"flops\": " << flops_txt << ", " << rest << "\n";
        return kExitOk;
      } else if (flops >= 0) {
        std::snprintf(buf, sizeof buf,
                      "median %.4f ms over %d runs (min %.4f, max %.4f), %.4g FLOPs, %.2f GFLOP/s, "
                      "compile %.1f ms, %d threads",
                      median * 1e3, o->repeat, times.front() * 1e3, times.back() * 1e3, flops, gflops,
                      compile_s * 1e3, threads);
      } else {
        std::snprintf(buf, sizeof buf,
                      "median %.4f ms over %d runs (min %.4f, max %.4f), FLOPs unknown (static count "
                      "failed), GFLOP/s n/a, compile %.1f ms, %d threads",
                      median * 1e3, o->repeat, times.front() * 1e3, times.back() * 1e3, compile_s * 1e3,
                      threads);
      }
      std::cout << f->name << ": " << buf << "\n";  // the name apart: any length
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

// tirc stats FILE --func F [--json] [--input n=VALUE ...] [--dynamic [--random SEED]]
// Counts from the IR (interp/stats.h says exactly what is counted).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "interp/runner.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"

namespace tirc::cli {

namespace {
struct StatsOptions {
  std::string file, func;
  std::vector<std::string> inputs;
  bool json = false, dynamic = false;
  uint64_t seed = 0;
};

// Counts are integers in practice; print them without a fraction when they are.
nlohmann::json num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}
std::string txt(double v) {
  char b[64];
  if (v == std::floor(v) && std::fabs(v) < 9e15)
    snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
  else
    snprintf(b, sizeof b, "%.6g", v);
  return b;
}
nlohmann::json counts_json(const OpCounts& c) {
  return {{"iterations", num(c.iterations)},
          {"flops", num(c.flops)},
          {"loads", num(c.loads)},
          {"stores", num(c.stores)},
          {"bytes", num(c.bytes)}};
}
}  // namespace

void register_stats(CLI::App& app) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = app.add_subcommand("stats",
                                 "print counts from the IR: iterations, FLOPs (as TVM's estimate_tir_flops), "
                                 "loads, stores and bytes of every "
                                 "block and in total");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--func,-f", o->func, "function (optional when the file has one function)");
  cmd->add_flag("--json", o->json,
                "print one JSON object: totals at the top level, per block under \"blocks\"");
  cmd->add_option("--input,-i", o->inputs, "NAME=VALUE for scalar parameters (or NAME=FILE.npy); repeatable");
  cmd->add_flag(
      "--dynamic", o->dynamic,
      "count by running the interpreter on the inputs: executions of every block, init, `if` branch, "
      "`if_then_else` arm and loop iteration, so the counts are exact for those inputs (without it, an "
      "`if` counts its larger branch and a data-dependent `where` every point); inputs not given are "
      "random");
  cmd->add_option("--random", o->seed, "seed of the random inputs of --dynamic (default 0)")
      ->transform(seed_value());
  cmd->callback([o] {
    run_guarded([o] {
      Module m = parse_file(o->file);
      Function f = select_function(m, o->file, o->func);
      ArgMap given = parse_input_specs(*f, o->inputs, false);
      FunctionCounts fc =
          o->dynamic ? dynamic_counts(*f, complete_inputs(*f, given, o->seed)) : static_counts(*f, given);
      if (o->json) {
        nlohmann::json j = counts_json(fc.total);
        j["function"] = f->name;
        j["mode"] = o->dynamic ? "dynamic" : "static";
        nlohmann::json blocks = nlohmann::json::object();
        for (auto& b : fc.blocks) {
          nlohmann::json e = counts_json(b.counts);
          e["name"] = b.name;
          blocks[b.name] = e;
        }
        j["blocks"] = blocks;
        std::cout << j.dump(2) << "\n";
        return kExitOk;
      }
      std::printf("%-20s %14s %14s %14s %14s %14s\n", "block", "iterations", "flops", "loads", "stores",
                  "bytes");
      auto row = [](const std::string& name, const OpCounts& c) {
        std::printf("%-20s %14s %14s %14s %14s %14s\n", name.c_str(), txt(c.iterations).c_str(),
                    txt(c.flops).c_str(), txt(c.loads).c_str(), txt(c.stores).c_str(), txt(c.bytes).c_str());
      };
      for (auto& b : fc.blocks) row(b.name, b.counts);
      row("total", fc.total);
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

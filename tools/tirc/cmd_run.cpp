// tirc run FILE --func F [--input NAME=FILE.npy|NAME=VALUE ...] [--random SEED]
//          [--output NAME=FILE.npy ...] [--engine interp|jit]   (CLI.md)
// The run logic lives in interp/runner.h so that other subcommands can reuse it; the JIT
// plugs in with register_engine("jit", ...).
#include <filesystem>
#include <iostream>
#include <optional>

#include "interp/runner.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "runtime/npy.h"
#include "tools/tirc/common.h"

namespace tirc::cli {

namespace {
struct RunOptions {
  std::string file, func, engine = "interp", dump;
  std::vector<std::string> inputs, outputs;
  std::optional<uint64_t> seed;
  int first = 8;
};

Function pick_function(const Module& m, const std::string& name, const std::string& file) {
  if (name.empty()) {
    if (m.funcs.size() == 1) return m.funcs[0];
    if (m.funcs.empty()) throw Error(source_name(file) + " defines no function");
    throw Error(several_functions_message(m, file));
  }
  Function f = m.find_func(name);
  if (!f) throw Error(no_function_message(m, name, file));
  return f;
}
}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "run a function on .npy / literal / random inputs and print or save its outputs");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--func,-f", o->func, "function to run (optional when the file has one function)");
  cmd->add_option("--input,-i", o->inputs,
                  "NAME=FILE.npy or NAME=VALUE (scalar parameter, or a buffer filled with VALUE); FILE - "
                  "reads the .npy from standard input; repeatable");
  cmd->add_option("--random", o->seed, "fill every input not given with random values from its range (seed)")
      ->transform(seed_value());
  cmd->add_option("--output,-o", o->outputs,
                  "NAME=FILE.npy: write an output as .npy (FILE - : to standard output, instead of the "
                  "summaries); repeatable");
  cmd->add_option("--engine", o->engine, "interp (reference interpreter, default) or jit")
      ->check(CLI::IsMember({"interp", "jit"}));
  cmd->add_option("--dump", o->dump,
                  "write every input as DIR/in_NAME.npy (scalars 0-d) and every output as DIR/out_NAME.npy");
  cmd->add_option("--show", o->first, "how many leading values to print per output (default 8)")
      ->transform(at_least(0, "at least 0", true));
  cmd->callback([o] {
    run_guarded([o] {
      Module m = parse_file(o->file);
      Function f = pick_function(m, o->func, o->file);
      Engine engine = find_engine(o->engine);
      ArgMap given = parse_input_specs(*f, o->inputs);
      auto outs = parse_output_specs(*f, o->outputs);
      ArgMap inputs = complete_inputs(*f, given, o->seed);
      ArgMap results = engine(*f, inputs);
      for (auto& b : f->outputs)
        if (!results.count(b->name)) throw Error("engine " + o->engine + " returned no output " + b->name);
      // `--output B=-` writes B's .npy bytes to standard output (as `-` reads a script from
      // standard input), which then holds nothing else: no summaries.
      int to_stdout = 0;
      for (auto& [name, path] : outs) to_stdout += path == "-";
      if (to_stdout > 1) throw Error("--output: only one output can be written to standard output (-)");
      // Files first: a path that cannot be written is an error with nothing printed.
      for (auto& [name, path] : outs)
        if (path != "-") write_file_bytes(path, serialize_npy(results.at(name)));
      if (!o->dump.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(o->dump, ec);
        for (auto& [name, a] : inputs) write_file_bytes(o->dump + "/in_" + name + ".npy", serialize_npy(a));
        for (auto& [name, a] : results) write_file_bytes(o->dump + "/out_" + name + ".npy", serialize_npy(a));
      }
      if (to_stdout) {
        for (auto& [name, path] : outs)
          if (path == "-") std::cout << serialize_npy(results.at(name));
        return kExitOk;
      }
      for (auto& b : f->outputs)
        std::cout << summarize_output(b->name, results.at(b->name), o->first) << "\n";
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

// tirc schedule FILE [--func F] [-o OUT] (CLI.md): apply the file's `schedule` items, in order, to
// their functions and print the scheduled module. Applied schedule items are consumed (not
// printed again), so the output is the scheduled IR and re-parses to the same IR; items of
// other functions are kept when --func selects one. A refused instruction prints
// "FILE:LINE:COL: error: <primitive>: <reason>" and exits 2.
#include <iostream>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/schedule.h"

namespace tirc::cli {

void register_schedule(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("schedule", "apply the file's schedule items and print the scheduled module");
  static std::string file, func, out_file;
  cmd->add_option("FILE", file, "the .tir file, or - for standard input")->required();
  cmd->add_option("--func,-f", func, "apply only the schedules of this function");
  cmd->add_option("-o,--output", out_file,
                  "write the scheduled module to this file instead of standard output (- : standard output)");
  cmd->callback([] {
    run_guarded([] {
      Module m = parse_file(file);
      if (!func.empty() && !m.find_func(func))
        throw Error("no function named " + func + " in " + source_name(file));
      Module out = apply_module_schedules(m, func);
      write_text_output(out_file, print_module(out));
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

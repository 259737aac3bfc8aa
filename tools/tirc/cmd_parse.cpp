// tirc parse FILE|- [-o OUT] (CLI.md): parse and type-check, print the module in canonical form.
#include <iostream>

#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"

namespace tirc::cli {

void register_parse(CLI::App& app) {
  auto* cmd = app.add_subcommand("parse", "parse and type-check a .tir file; print it in canonical form");
  static std::string file, out_file;
  cmd->add_option("FILE", file, "the .tir file, or - for standard input")->required();
  cmd->add_option("-o,--output", out_file,
                  "write the canonical text to this file instead of standard output (- : standard output)");
  cmd->callback([] {
    run_guarded([] {
      Module m = parse_file(file);
      write_text_output(out_file, print_module_checked(m));
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

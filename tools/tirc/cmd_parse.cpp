// tirc parse FILE|- (CLI.md): parse and type-check, print the module in canonical form.
#include <iostream>

#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"

namespace tirc::cli {

void register_parse(CLI::App& app) {
  auto* cmd = app.add_subcommand("parse", "parse and type-check a .tir file; print it in canonical form");
  static std::string file;
  cmd->add_option("FILE", file, "the .tir file, or - for standard input")->required();
  cmd->callback([] {
    run_guarded([] {
      Module m = parse_file(file);
      std::cout << print_module(m);
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

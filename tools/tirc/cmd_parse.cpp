// tirc parse (CLI.md). Not implemented yet.
#include <iostream>

#include "tools/tirc/common.h"

namespace tirc::cli {

void register_parse(CLI::App& app) {
  auto* cmd = app.add_subcommand("parse", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([] {
    run_guarded([] {
      std::cerr << "tirc: error: 'parse' is not implemented yet\n";
      return kExitBadInput;
    });
  });
}

}  // namespace tirc::cli

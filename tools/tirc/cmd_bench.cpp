// tirc bench (CLI.md). Not implemented yet.
#include <iostream>

#include "tools/tirc/common.h"

namespace tirc::cli {

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([] {
    run_guarded([] {
      std::cerr << "tirc: error: 'bench' is not implemented yet\n";
      return kExitBadInput;
    });
  });
}

}  // namespace tirc::cli

// tirc grad (CLI.md). Not implemented yet.
#include <iostream>

#include "tools/tirc/common.h"

namespace tirc::cli {

void register_grad(CLI::App& app) {
  auto* cmd = app.add_subcommand("grad", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([] {
    run_guarded([] {
      std::cerr << "tirc: error: 'grad' is not implemented yet\n";
      return kExitBadInput;
    });
  });
}

}  // namespace tirc::cli

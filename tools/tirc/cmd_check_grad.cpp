// tirc check-grad (CLI.md). Not implemented yet.
#include <iostream>

#include "tools/tirc/common.h"

namespace tirc::cli {

void register_check_grad(CLI::App& app) {
  auto* cmd = app.add_subcommand("check-grad", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([] {
    run_guarded([] {
      std::cerr << "tirc: error: 'check-grad' is not implemented yet\n";
      return kExitBadInput;
    });
  });
}

}  // namespace tirc::cli

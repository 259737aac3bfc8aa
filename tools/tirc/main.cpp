// tirc: the command-line driver. Thin: each subcommand lives in its own cmd_*.cpp.
#include <cstdio>
#include <iostream>

#include "ir/error.h"
#include "tools/tirc/common.h"

namespace tirc::cli {
namespace {
int g_exit = kExitOk;
}

void run_guarded(const std::function<int()>& body) {
  try {
    g_exit = body();
  } catch (const SourceError& e) {
    std::cerr << e.what() << "\n";
    g_exit = kExitBadInput;
  } catch (const Error& e) {
    std::cerr << "tirc: error: " << e.what() << "\n";
    g_exit = kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "tirc: error: out of memory\n";
    g_exit = kExitBadInput;
  }
}
int exit_code() { return g_exit; }

Function select_function(const Module& m, const std::string& file, const std::string& func) {
  if (func.empty()) {
    if (m.funcs.empty()) throw Error(file + " defines no function");
    if (m.funcs.size() != 1) throw Error(file + " defines several functions: choose one with --func");
    return m.funcs[0];
  }
  Function f = m.find_func(func);
  if (!f) throw Error("no function named " + func + " in " + file);
  return f;
}

}  // namespace tirc::cli

int main(int argc, char** argv) {
  using namespace tirc::cli;
  CLI::App app{"tirc: a compiler for a block-structured loop IR with automatic differentiation"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tirc 0.1", "print the version and exit");
  register_parse(app);
  register_run(app);
  register_stats(app);
  register_grad(app);
  register_check_grad(app);
  register_schedule(app);
  register_verify(app);
  register_build(app);
  register_bench(app);
  // A first word that is neither an option nor a subcommand: say so (CLI11 would report
  // "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
      known = known || sub->check_name(argv[1]);
    if (!known) {
      std::cerr << "tirc: error: unknown subcommand '" << argv[1]
                << "' (expected parse, run, stats, grad, check-grad, schedule, verify, build or bench; see "
                   "tirc --help)\n";
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  return exit_code();
}

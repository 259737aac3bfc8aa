// tirc: the command-line driver. Thin: each subcommand lives in its own cmd_*.cpp.
#include <cstdio>
#include <iostream>

#include "ir/error.h"
#include "ir/visitor.h"
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

void with_block_positions(const FunctionNode& f, const std::function<void()>& body) {
  try {
    body();
  } catch (const SourceError&) {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("block ", 0) != 0) throw;
    size_t colon = msg.find(": ", 6);
    if (colon == std::string::npos) throw;
    std::string name = msg.substr(6, colon - 6);
    struct Finder : IRVisitor {
      std::string name;
      SourceLoc loc;
      void visit_block(const BlockNode* n) override {
        if (n->name == name && !loc.known()) loc = n->loc;
        IRVisitor::visit_block(n);
      }
    } find;
    find.name = name;
    find.visit(f.body);
    if (!find.loc.known()) throw;
    throw SourceError(find.loc.file, find.loc.line, find.loc.col, msg);
  }
}

Function select_function(const Module& m, const std::string& file, const std::string& func) {
  if (func.empty()) {
    if (m.funcs.empty()) throw Error(source_name(file) + " defines no function");
    if (m.funcs.size() != 1)
      throw Error(source_name(file) + " defines several functions: choose one with --func");
    return m.funcs[0];
  }
  Function f = m.find_func(func);
  if (!f) throw Error("no function named " + func + " in " + source_name(file));
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
  // An option before the subcommand other than --help / --version: CLI11 would only say
  // "A subcommand is required".
  if (argc > 1 && argv[1][0] == '-') {
    std::string a = argv[1];
    if (a != "-h" && a != "--help" && a != "--version") {
      std::cerr << "tirc: error: unknown option '" << a
                << "' before the subcommand (usage: tirc SUBCOMMAND FILE [OPTIONS]; see tirc --help)\n";
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
  // Output that could not be written (`tirc parse f.tir > /dev/full`, a closed pipe's
  // buffer) must not pass for success.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "tirc: error: cannot write standard output\n";
    return kExitBadInput;
  }
  return exit_code();
}

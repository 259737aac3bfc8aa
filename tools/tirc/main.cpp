// tirc: the command-line driver. Thin: each subcommand lives in its own cmd_*.cpp.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

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
    if (m.funcs.size() != 1) throw Error(several_functions_message(m, file));
    return m.funcs[0];
  }
  Function f = m.find_func(func);
  if (!f) throw Error(no_function_message(m, func, file));
  return f;
}

// `--input`, `--output` (run) and `--wrt` take several values per occurrence (`-i n=2 x=1`,
// as outsider round 15 allows), so CLI11 gives them every following word up to the next
// option: `tirc run --input A=a.npy f.tir --func F` took f.tir for an input and failed with
// "file is required" (also `grad --wrt X f.tir --func F`, `-i s=2 -`). A word in such a run
// that cannot be a value of the option (an input / output spec has '=', a --wrt list only
// names and commas) is the FILE: it is moved right after the subcommand, where CLI11 reads the
// positional (outsider round 17). Once FILE has been given, nothing is moved.
std::vector<std::string> file_first(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (argc < 3) return args;
  CLI::App* sub = nullptr;
  try {
    sub = app.get_subcommand(args[1]);
  } catch (const CLI::Error&) {
    return args;
  }
  enum Run { kNone, kSpec, kNames } run = kNone;
  auto is_names = [](const std::string& w) {
    return w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_, \t") ==
           std::string::npos;
  };
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--") return args;
    if (w.size() > 1 && w[0] == '-') {
      // An option: --name, --name=value, -x, -xVALUE.
      bool is_long = w[1] == '-';
      size_t eq = w.find('=');
      std::string name = is_long ? w.substr(0, eq) : w.substr(0, 2);
      bool attached = is_long ? eq != std::string::npos : w.size() > 2;
      const CLI::Option* opt = sub->get_option_no_throw(name);
      run = kNone;
      if (!opt || opt->get_items_expected_max() == 0) continue;  // unknown (CLI11 reports it) or a flag
      if (opt->get_items_expected_max() > 1)
        run = opt->check_name("--wrt") ? kNames : kSpec;
      else if (!attached)
        ++i;  // its one value
      continue;
    }
    if (run == kNone) return args;  // the positional FILE, in place
    // A run of words after a multi-value option. CLI11 keeps the run's last word as FILE when
    // nothing follows, so only a run followed by more options is rewritten; FILE is a word of
    // the run that names an existing file, else its last word that cannot be a value (a spec
    // without '=' that names a .npy file is a mistaken spec, `-o out.npy`, left for the option's
    // own message).
    size_t end = i;
    while (end < args.size() && args[end] != "--" && !(args[end].size() > 1 && args[end][0] == '-')) ++end;
    if (end == args.size()) return args;
    auto is_value = [&](const std::string& v) {
      bool npy = v.size() > 4 && v.compare(v.size() - 4, 4, ".npy") == 0;
      return run == kSpec ? v.find('=') != std::string::npos || npy : is_names(v);
    };
    auto is_file = [](const std::string& v) {
      std::error_code ec;
      return std::filesystem::is_regular_file(v, ec);
    };
    // A script named later, outside another multi-value run (`run -o B --func F f.tir`): leave
    // the words to CLI11 as before.
    bool in_run = false;
    for (size_t k = end; k < args.size(); ++k) {
      const std::string& v = args[k];
      if (v == "--") break;
      if (v.size() > 1 && v[0] == '-') {
        bool is_long = v[1] == '-';
        bool attached = is_long ? v.find('=') != std::string::npos : v.size() > 2;
        const CLI::Option* opt = sub->get_option_no_throw(is_long ? v.substr(0, v.find('=')) : v.substr(0, 2));
        in_run = opt && opt->get_items_expected_max() > 1;
        if (opt && opt->get_items_expected_max() == 1 && !attached) ++k;  // its one value
        continue;
      }
      if (!in_run && !v.ends_with(".npy") && is_file(v)) return args;
    }
    size_t pick = end;
    for (size_t k = i; k < end; ++k)  // an existing file that cannot be a value
      if (!is_value(args[k]) && is_file(args[k])) pick = k;
    for (size_t k = i; pick == end && k < end; ++k)  // else the last word that cannot be a value
      if (!is_value(args[k])) pick = k;
    for (size_t k = i; pick == end && k < end; ++k)  // else an existing file named like a value
      if (!args[k].ends_with(".npy") && is_file(args[k])) pick = k;
    if (pick == end) {  // every word is a value: go on after the run
      i = end - 1;
      continue;
    }
    std::string file = args[pick];
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(pick));
    args.insert(args.begin() + 2, file);
    return args;
  }
  return args;
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
  std::vector<std::string> args = file_first(app, argc, argv);
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
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

// tirc verify FILE [--func F] [--seed S] [--rtol R] [--atol A] [--input n=V ...]
// (CLI.md): for each function that has schedule items, run it unscheduled and scheduled on
// the same random inputs and compare (tolerance for reassociated float reductions, see
// transforms/schedule/verify.h). A function named by --func that has no schedule item is
// compared with itself, which still checks every engine against the interpreter (CLI.md:
// "run each function unscheduled and scheduled (interpreter and JIT)"). One line per function
// and engine; exit 1 on any mismatch, 2 on bad input (including a refused schedule
// instruction).
//
// Engines: the reference always runs in the interpreter; the scheduled function runs in
// every engine of `engines()` (the interpreter now; the JIT plugs in as another runner).
#include <cstdio>
#include <iostream>
#include <map>

#include "interp/interp.h"
#include "interp/runner.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc::cli {

namespace {

struct Engine {
  std::string name;
  FunctionRunner run;
};

std::vector<Engine> engines(const std::string& which) {
  std::vector<Engine> out;
  if (which == "interp" || which == "all") out.push_back({"interp", interp_runner()});
  if (which == "jit" || which == "all") {
    // The JIT is registered by the LLVM backend; a build without it verifies with the
    // interpreter only, unless the JIT was asked for by name.
    try {
      out.push_back({"jit", FunctionRunner(find_engine("jit"))});
    } catch (const Error&) {
      if (which == "jit") throw;
    }
  }
  if (out.empty()) throw Error("unknown engine '" + which + "' (available: interp, jit, all)");
  return out;
}

// The --input specs that name a parameter of f, parsed by the shared parse_input_specs
// (same syntax, dtype checks and messages as `tirc run`). Only scalar parameters can be
// given: the inputs of both runs are drawn at random. Called once per verified function: a
// `NAME=-` spec reuses the standard input read by the first call (runner.cpp reads it once).
ArgMap scalar_inputs_for(const FunctionNode& f, const std::vector<std::string>& specs) {
  std::vector<std::string> mine;
  for (auto& s : specs) {
    std::string name = s.substr(0, s.find('='));
    for (auto& p : f.params)
      if (p.name() == name) {
        if (p.is_buffer())
          throw Error("--input " + s +
                      ": verify draws buffer inputs at random; only scalar parameters can be given");
        mine.push_back(s);
      }
  }
  return parse_input_specs(f, mine);
}

// Every spec must be NAME=VALUE and name a parameter of at least one verified function.
void check_input_names(const std::vector<Function>& funcs, const std::vector<std::string>& specs) {
  for (auto& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--input " + s + ": expected NAME=VALUE");
    std::string name = s.substr(0, eq);
    bool found = false;
    for (auto& f : funcs)
      for (auto& p : f->params) found = found || p.name() == name;
    if (!found) throw Error("--input " + s + ": no verified function has a parameter named " + name);
  }
}

}  // namespace

void register_verify(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("verify", "run each scheduled function unscheduled and scheduled and compare");
  static std::string file, func, engine = "all";
  static uint64_t seed = 0;
  static double rtol = 1e-4, atol = 1e-5;
  static std::vector<std::string> inputs;
  cmd->add_option("FILE", file, "the .tir file, or - for standard input")->required();
  cmd->add_option("--func,-f", func, "verify only this function");
  cmd->add_option("--seed", seed, "random seed for the inputs (default 0)")->transform(seed_value());
  cmd->add_option("--rtol", rtol, "relative tolerance (default 1e-4)")->transform(at_least(0, ">= 0"));
  cmd->add_option("--atol", atol, "absolute tolerance (default 1e-5)")->transform(at_least(0, ">= 0"));
  cmd->add_option("--input,-i", inputs,
                  "value of a scalar parameter, NAME=VALUE (repeatable; as in tirc run). Scalars not given "
                  "are drawn from their declared range (an integer without one: from [1, 9])");
  cmd->add_option(
      "--engine", engine,
      "engine running the scheduled function: interp, jit, or all (default: every available engine)");
  cmd->callback([] {
    run_guarded([] {
      Module m = parse_file(file);
      if (!func.empty() && !m.find_func(func))
        throw Error(no_function_message(m, func, file));
      CompareOptions opts;
      opts.seed = seed;
      opts.rtol = finite_tolerance(rtol);
      opts.atol = finite_tolerance(atol);
      std::vector<Function> funcs;
      for (auto& item : m.schedules)
        if (func.empty() || item.func == func)
          if (Function f = m.find_func(item.func)) funcs.push_back(f);
      // --func F without a schedule item: verify F as written in every engine.
      bool unscheduled = !func.empty() && funcs.empty();
      if (unscheduled) funcs.push_back(m.find_func(func));
      check_input_names(funcs, inputs);
      auto engs = engines(engine);
      int failed = 0, passed = 0;
      auto check = [&](const Function& f, const Function& g) {
        opts.scalars = scalar_inputs_for(*f, inputs);
        for (auto& e : engs) {
          CompareResult r = compare_functions(*f, *g, opts, interp_runner(), e.run);
          char err[64];
          std::snprintf(err, sizeof err, "%.3g", r.max_abs_err);
          if (r.ok) {
            ++passed;
            std::cout << f->name << " [" << e.name << "]: ok (max abs error " << err << ")\n";
          } else {
            ++failed;
            std::cout << f->name << " [" << e.name << "]: MISMATCH: " << r.detail << "\n";
          }
        }
      };
      if (unscheduled) check(funcs[0], funcs[0]);
      // Several schedule items of one function compose in file order (each applies to the
      // result of the previous ones), as `tirc schedule` applies them; the composition is
      // compared once with the function as written.
      std::vector<std::string> order;
      std::map<std::string, Function> scheduled;
      for (auto& item : m.schedules) {
        if (!func.empty() && item.func != func) continue;
        Function f = m.find_func(item.func);
        if (!f)
          throw SourceError(item.loc.file, item.loc.line, item.loc.col,
                            "schedule for unknown function '" + item.func + "'");
        auto it = scheduled.find(item.func);
        if (it == scheduled.end()) {
          order.push_back(item.func);
          it = scheduled.emplace(item.func, f).first;
        }
        it->second = apply_schedule(*it->second, item, m.intrins);
      }
      for (auto& name : order) check(m.find_func(name), scheduled.at(name));
      if (passed + failed == 0)
        std::cout << "no scheduled functions\n";
      else
        std::cout << passed << " passed, " << failed << " failed\n";
      return failed ? kExitCheckFailed : kExitOk;
    });
  });
}

}  // namespace tirc::cli

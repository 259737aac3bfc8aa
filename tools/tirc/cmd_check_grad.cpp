// tirc check-grad FILE --func F [--wrt A,B] [--input NAME=FILE.npy|VALUE ...] [--seed S]
//   [--rtol R] [--atol A] [--full] [--json] (CLI.md). Exit 1 when an input fails.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "interp/runner.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/autodiff/check_grad.h"

namespace tirc::cli {

namespace {
struct CheckGradCli {
  std::string file, func;
  std::vector<std::string> wrt, inputs;
  uint64_t seed = 0;
  double rtol = 1e-4, atol = 1e-5;
  int directions = 3;
  bool full = false, json = false;
};
}  // namespace

void register_check_grad(CLI::App& app) {
  auto o = std::make_shared<CheckGradCli>();
  auto* cmd = app.add_subcommand("check-grad",
                                 "compare F_grad with central finite differences of <cotangent, F(x)> "
                                 "computed by the interpreter in f64, on "
                                 "random inputs and a random cotangent");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--func,-f", o->func, "the function to check (optional when the file has one function)");
  cmd->add_option("--wrt", o->wrt, "input buffers to check (default: every float input)")->delimiter(',');
  cmd->add_option("--input,-i", o->inputs,
                  "NAME=FILE.npy or NAME=VALUE (scalars, or a constant buffer); repeatable");
  cmd->add_option("--seed", o->seed, "seed of the random inputs, cotangents and directions (default 0)")
      ->transform(seed_value());
  cmd->add_option("--rtol", o->rtol, "relative tolerance (default 1e-4)")->transform(at_least(0, ">= 0"));
  cmd->add_option("--atol", o->atol, "absolute tolerance (default 1e-5)")->transform(at_least(0, ">= 0"));
  cmd->add_option("--directions", o->directions, "random directions per input (default 3)")
      ->transform(at_least(1, "at least 1", true));
  cmd->add_flag("--full", o->full, "check element by element instead of along random directions");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o] {
    run_guarded([o] {
      Module m = parse_file(o->file);
      Function f = select_function(m, o->file, o->func);
      CheckGradOptions opts;
      opts.wrt = wrt_names(o->wrt);
      opts.given = parse_input_specs(*f, o->inputs, false);
      opts.seed = o->seed;
      opts.rtol = finite_tolerance(o->rtol);
      opts.atol = finite_tolerance(o->atol);
      opts.full = o->full;
      opts.directions = o->directions;
      CheckGradResult r;
      with_block_positions(*f, [&] { r = check_grad(*f, opts); });
      if (o->json) {
        nlohmann::json j;
        j["function"] = r.func;
        j["mode"] = o->full ? "full" : "directions";
        j["rtol"] = opts.rtol;
        j["atol"] = opts.atol;
        nlohmann::json arr = nlohmann::json::array();
        for (auto& ic : r.inputs)
          arr.push_back({{"name", ic.name},
                         {"checks", ic.checks},
                         {"max_abs_err", ic.max_abs_err},
                         {"max_rel_err", ic.max_rel_err},
                         {"passed", ic.passed},
                         {"skipped", ic.skipped},
                         {"notes", ic.notes}});
        j["inputs"] = arr;
        j["passed"] = r.passed;
        j["failed"] = r.failed;
        j["notes"] = r.notes;  // non-finite values: docs/autodiff.md
        std::cout << j.dump(2) << "\n";
      } else {
        for (auto& n : r.notes) std::cerr << "note: " << n << "\n";
        for (auto& ic : r.inputs) {
          char buf[512];
          snprintf(buf, sizeof buf, "%s: max abs err %.3e, max rel err %.3e over %d %s: %s", ic.name.c_str(),
                   ic.max_abs_err, ic.max_rel_err, ic.checks, o->full ? "elements" : "directions",
                   ic.passed ? "passed" : "FAILED");
          std::string notes;
          for (auto& n : ic.notes) notes += (notes.empty() ? " (" : "; ") + n;
          std::cout << buf << notes << (notes.empty() ? "" : ")") << "\n";
        }
        std::cout << r.passed << " passed, " << r.failed << " failed\n";
      }
      return r.failed ? kExitCheckFailed : kExitOk;
    });
  });
}

}  // namespace tirc::cli

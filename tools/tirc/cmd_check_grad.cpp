// tirc check-grad FILE --func F [--wrt A,B] [--input NAME=FILE.npy|VALUE ...] [--seed S]
//   [--rtol R] [--atol A] [--full] [--json] (CLI.md). Exit 1 when an input fails.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "interp/runner.h"
#include "ir/error.h"
#include "ir/printer.h"
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

// The F_grad that `m` defines for `f` (null when it defines none), checked against the
// contract (LANGUAGE.md, Gradients): F's parameters, then one cotangent `<O>_grad` per output
// of the output's dtype and shape, and results `<X>_grad` for float input buffers X. An empty
// `wrt` becomes those X in result order; a `--wrt` list must name some of them. Until outsider
// round 16 check-grad ignored a defined F_grad and checked a fresh gradient(F), so
// `tirc grad -o g.tir`, an edit or a schedule of g.tir, then `tirc check-grad g.tir` passed
// whatever g.tir's F_grad computed.
Function defined_grad(const Module& m, const FunctionNode& f, const std::string& file,
                      std::vector<std::string>* wrt) {
  Function g = m.find_func(f.name + "_grad");
  if (!g) return nullptr;
  auto bad = [&](const std::string& why) {
    std::string msg = "the file defines " + g->name + ", but " + why + ", so it is not the gradient of " + f.name +
                      " (LANGUAGE.md, Gradients: F's parameters, one cotangent <output>_grad per output, "
                      "results <buffer>_grad); rename or remove it to check a generated gradient";
    if (g->loc.known()) throw SourceError(g->loc.file, g->loc.line, g->loc.col, msg);
    throw Error(file + ": " + msg);
  };
  auto shape_text = [](const Buffer& b) {
    std::string s = std::string(dtype_name(b->dtype)) + "[";
    for (size_t i = 0; i < b->shape.size(); ++i) s += (i ? ", " : "") + print_expr(b->shape[i]);
    return s + "]";
  };
  if (g->params.size() != f.params.size() + f.outputs.size())
    bad("it has " + std::to_string(g->params.size()) + " parameters, not " +
        std::to_string(f.params.size() + f.outputs.size()));
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Param &p = f.params[i], &q = g->params[i];
    bool same = p.name() == q.name() && p.is_buffer() == q.is_buffer() &&
                (p.is_buffer() ? shape_text(p.buffer) == shape_text(q.buffer) : p.var.dtype() == q.var.dtype());
    if (!same) bad("its parameter " + q.name() + " is not parameter " + p.name() + " of " + f.name);
  }
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    const Param& q = g->params[f.params.size() + i];
    const Buffer& o = f.outputs[i];
    if (q.name() != o->name + "_grad" || !q.is_buffer() || shape_text(q.buffer) != shape_text(o))
      bad("its parameter " + q.name() + " is not the cotangent " + o->name + "_grad: " + shape_text(o));
  }
  std::vector<std::string> got;
  for (const Buffer& r : g->outputs) {
    const Param* x = nullptr;
    for (const Param& p : f.params)
      if (p.is_buffer() && p.name() + "_grad" == r->name) x = &p;
    if (!x || !is_float(x->buffer->dtype) || shape_text(x->buffer) != shape_text(r))
      bad("its result " + r->name + " is not the gradient of a float input buffer of " + f.name);
    got.push_back(x->name());
  }
  if (got.empty()) bad("it has no results");
  // A --wrt list checks some of the results (`tirc grad` wrote them all, `--wrt X` checks X).
  // Names that could never have a result get gradient()'s refusals, not advice about F_grad.
  for (size_t i = 0; i < wrt->size(); ++i) {
    const std::string& w = (*wrt)[i];
    const Param* x = nullptr;
    for (const Param& p : f.params)
      if (p.name() == w) x = &p;
    bool is_out = std::any_of(f.outputs.begin(), f.outputs.end(), [&](const Buffer& o) { return o->name == w; });
    if (!x || !x->is_buffer() || !is_float(x->buffer->dtype))
      throw Error("gradient of " + f.name + ": --wrt " + w + " is not a float input buffer of " + f.name +
                  (is_out ? " (it is an output)" : ""));
    if (std::find(wrt->begin(), wrt->begin() + static_cast<std::ptrdiff_t>(i), w) != wrt->begin() + i)
      throw Error("gradient of " + f.name + ": --wrt " + w + " is listed twice");
  }
  for (const std::string& w : *wrt)
    if (std::find(got.begin(), got.end(), w) == got.end()) {
      std::string list;
      for (auto& n : got) list += (list.empty() ? "" : ",") + n;
      throw Error("--wrt " + w + ": " + g->name + " in " + file + " has no result " + w + "_grad (it computes " +
                  "the gradients of " + list + "; remove " + g->name + " from the file to check a generated "
                  "gradient)");
    }
  if (wrt->empty()) *wrt = got;
  return g;
}

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
      opts.grad = defined_grad(m, *f, o->file == "-" ? "<stdin>" : o->file, &opts.wrt);
      if (opts.grad && !o->json)
        std::cerr << "note: checking " << opts.grad->name << " as defined in "
                  << (o->file == "-" ? "<stdin>" : o->file) << "\n";
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

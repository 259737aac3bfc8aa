// tirc grad FILE --func F [--wrt A,B] [-o OUT] (CLI.md): add F_grad and print the module.
#include <fstream>
#include <iostream>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/autodiff/gradient.h"

namespace tirc::cli {

namespace {
struct GradOptions {
  std::string file, func, out, loop_order = "stride";
  std::vector<std::string> wrt;
};
}  // namespace

void register_grad(CLI::App& app) {
  auto o = std::make_shared<GradOptions>();
  auto* cmd = app.add_subcommand(
      "grad",
      "add F_grad (the vector-Jacobian product of F, LANGUAGE.md \"Gradients\") to the module and print it");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--func,-f", o->func,
                  "the function to differentiate (optional when the file has one function)");
  cmd->add_option("--wrt", o->wrt,
                  "input buffers to differentiate with respect to (default: every float input)")
      ->delimiter(',');
  cmd->add_option("-o,--output", o->out,
                  "write the module to this file instead of standard output (- : standard output)");
  cmd->add_option("--loop-order", o->loop_order,
                  "loops of the emitted blocks: stride (default: the loop with the smallest access "
                  "stride innermost) or natural (the written buffer's dims, then reduce loops, as TVM "
                  "emits a compute); docs/autodiff.md")
      ->check(CLI::IsMember({"stride", "natural"}));
  cmd->callback([o] {
    run_guarded([o] {
      Module m = parse_file(o->file);
      Function f = select_function(m, o->file, o->func);
      GradientOptions opts;
      opts.order_loops = o->loop_order == "stride";
      std::vector<std::string> wrt = wrt_names(o->wrt);
      // Re-running grad on its own output replaces F_grad; said, since a hand-written
      // function of that name would be lost.
      if (m.find_func(f->name + "_grad"))
        std::cerr << "tirc: warning: " << source_name(o->file) << " already defines " << f->name
                  << "_grad; it is replaced by the gradient of " << f->name << "\n";
      with_block_positions(*f, [&] { m.add_func(gradient(*f, wrt, opts)); });
      write_text_output(o->out, print_module_checked(m));
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

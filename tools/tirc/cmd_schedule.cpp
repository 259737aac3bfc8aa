// tirc schedule FILE [--func F] [-o OUT] (CLI.md): apply the file's `schedule` items, in order, to
// their functions and print the scheduled module. Applied schedule items are consumed (not
// printed again), so the output is the scheduled IR and re-parses to the same IR; items of
// other functions are kept when --func selects one. A refused instruction prints
// "FILE:LINE:COL: error: <primitive>: <reason>" and exits 2. --default-gpu-schedule shows what
// `tirc build --target nvptx` compiles (docs/codegen.md, "Default GPU schedule").
#include <iostream>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"

namespace tirc::cli {

namespace {

// A schedule may nest loops deeper than the text format holds (docs/language.md, Limits): the
// printed module would not read back. Refuses an instruction after which the function's text
// does not read back while it did before (the first one when the depth only grows), as a refused
// instruction is reported ("split: ..." at its position).
[[noreturn]] void refuse_too_deep(const Module& m, const std::string& name) {
  Function cur = m.find_func(name);
  for (const ScheduleItem& s : m.schedules) {
    if (s.func != name) continue;
    auto why_after = [&](size_t k) {  // the reason after the first k instructions
      ScheduleItem prefix = s;
      prefix.instrs.resize(k);
      return unreadable_text_reason(*apply_schedule(*cur, prefix, m.intrins));
    };
    std::string why = why_after(s.instrs.size());
    if (!why.empty()) {
      // Bisection: the text reads back after lo instructions and not after hi (lo = 0: the
      // function as the item found it, which reads back since every item before did).
      size_t lo = 0, hi = s.instrs.size();
      while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        std::string w = why_after(mid);
        if (w.empty()) {
          lo = mid;
        } else {
          hi = mid;
          why = w;
        }
      }
      const ScheduleInstr& in = s.instrs[hi - 1];
      SourceLoc loc = in.loc.known() ? in.loc : s.loc;
      throw SourceError(loc.file, loc.line, loc.col,
                        (in.primitive.empty() ? std::string() : in.primitive + ": ") +
                            "the scheduled function's " +
                            why.substr(4));  // "its text ..." -> "the scheduled function's text ..."
    }
    cur = apply_schedule(*cur, s, m.intrins);
  }
  throw Error("cannot print function " + name + ": " + unreadable_text_reason(*cur));
}

}  // namespace

void register_schedule(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("schedule", "apply the file's schedule items and print the scheduled module");
  static std::string file, func, out_file;
  static bool gpu = false;
  static DefaultGpuScheduleOptions gpu_opts;
  cmd->add_option("FILE", file, "the .tir file, or - for standard input")->required();
  cmd->add_option("--func,-f", func, "apply only the schedules of this function");
  cmd->add_option("-o,--output", out_file,
                  "write the scheduled module to this file instead of standard output (- : standard output)");
  cmd->add_flag("--default-gpu-schedule", gpu,
                "then bind the functions with no blockIdx/threadIdx loop as `tirc build --target nvptx` "
                "does (TVM's DefaultGPUSchedule)");
  cmd->add_option("--max-threads-per-block", gpu_opts.max_threads_per_block,
                  "default GPU schedule: threads per block (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->callback([] {
    run_guarded([] {
      Module m = parse_file(file);
      if (!func.empty() && !m.find_func(func))
        throw Error(no_function_message(m, func, file));
      Module out = apply_module_schedules(m, func);
      if (gpu)
        for (auto f : out.funcs)
          if (func.empty() || f->name == func) out.add_func(default_gpu_schedule(*f, gpu_opts));
      for (auto& f : out.funcs)
        if (!unreadable_text_reason(*f).empty()) refuse_too_deep(m, f->name);
      write_text_output(out_file, print_module_checked(out));
      return kExitOk;
    });
  });
}

}  // namespace tirc::cli

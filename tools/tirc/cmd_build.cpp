// tirc build FILE --target cpu|nvptx [--emit llvm|asm|obj|header|ptx] [-o OUT] (CLI.md):
// apply the file's schedules, lower and compile every function (or --func F) with LLVM.
// --emit obj writes OUT (default FILE-stem.o) and the C header next to it (OUT with .h);
// llvm/asm/header print to standard output unless -o is given; `-o -` is standard output for
// every kind (an object alone, without its header). C ABI: docs/codegen.md.
// --target nvptx (--emit ptx, the default, or llvm): one CUDA kernel per function (or one per
// stage, docs/codegen.md "NVPTX"); a function with no loop bound to blockIdx/threadIdx first
// gets the default GPU schedule (TVM's DefaultGPUSchedule).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"
#ifdef TIRC_WITH_LLVM
#include <llvm-c/Target.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include "codegen/codegen.h"
#endif

namespace tirc::cli {

namespace {
struct BuildOptions {
  std::string file, target = "cpu", emit, out, func, mcpu;
  bool no_schedule = false, fast_math = false, no_bounds_check = false, no_default_gpu_schedule = false;
  DefaultGpuScheduleOptions gpu;
  int opt = 3;
};

[[maybe_unused]] void write_file(const std::string& path, const std::string& data) {
  if (path == "-") {  // `-o -`: standard output, as `-` reads the script from stdin
    std::cout.write(data.data(), static_cast<std::streamsize>(data.size()));
    return;
  }
  write_file_bytes(path, data);
}

#ifdef TIRC_WITH_LLVM
// `--mcpu NAME` must name a CPU of the target: LLVM only warns about an unknown one ("'x' is
// not a recognized processor ... (ignoring processor)") and then aborts the process with
// "LLVM ERROR: 64-bit code requested on a subtarget that doesn't support it!".
void check_mcpu(const std::string& cpu, bool gpu) {
  if (cpu.empty() || (cpu == "generic" && !gpu)) return;
  std::string triple = gpu ? "nvptx64-nvidia-cuda" : host_triple();
  if (gpu) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
  } else {
    llvm::InitializeNativeTarget();
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) return;  // the backend reports it
  // Created for a CPU every target knows, so that LLVM prints nothing; the table is the same.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, gpu ? "sm_80" : "generic", ""));
  if (sti && !sti->isCPUStringValid(cpu))
    throw Error("--mcpu: '" + cpu + "' is not a CPU of target " + triple + " (" +
                (gpu ? "e.g. sm_80, sm_90" : "e.g. generic, native = " + host_cpu_name()) + ")");
}
#endif

[[maybe_unused]] std::string header_guard(const std::string& path) {
  std::string g = "TIRC_" + std::filesystem::path(path).filename().string();
  for (auto& c : g)
    c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  return g + "_";
}
}  // namespace

void register_build(CLI::App& app) {
  auto o = std::make_shared<BuildOptions>();
  auto* cmd = app.add_subcommand(
      "build", "lower and compile functions with LLVM (object file + C header, LLVM IR, asm)");
  cmd->add_option("file", o->file, "the .tir file ('-' for standard input)")->required();
  cmd->add_option("--target", o->target, "cpu (default) or nvptx")->check(CLI::IsMember({"cpu", "nvptx"}));
  cmd->add_option(
         "--emit", o->emit,
         "llvm, asm, obj (default for cpu), header, or ptx (default for nvptx; asm is the same there)")
      ->check(CLI::IsMember({"llvm", "asm", "obj", "header", "ptx"}));
  cmd->add_option("-o,--output", o->out,
                  "output file, - for standard output (obj default: FILE-stem.o with FILE-stem.h beside it; "
                  "others: standard output)");
  cmd->add_option("--func,-f", o->func, "compile only this function (default: every function)");
  cmd->add_flag("--no-schedule", o->no_schedule, "ignore the file's schedule items");
  cmd->add_option(
      "--mcpu", o->mcpu,
      "target CPU (default or 'native': the host CPU; 'generic' for portable code; nvptx: sm_80)");
  cmd->add_flag("--no-default-gpu-schedule", o->no_default_gpu_schedule,
                "nvptx: refuse a function with no loop bound to blockIdx/threadIdx instead of binding its "
                "outer data-parallel loops (TVM's DefaultGPUSchedule)");
  cmd->add_option("--max-threads-per-block", o->gpu.max_threads_per_block,
                  "nvptx default GPU schedule: threads per block (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_flag("--no-bounds-check", o->no_bounds_check,
                "compile without the checks of indices that cannot be proven inside their buffer");
  cmd->add_flag("--fast-math", o->fast_math, "allow reassociation and contraction of float arithmetic");
  cmd->add_option("-O", o->opt, "LLVM optimisation level 0-3 (default 3)")->check(CLI::Range(0, 3));
  cmd->callback([o] {
    run_guarded([o]() -> int {
#ifndef TIRC_WITH_LLVM
      throw Error("tirc was built without LLVM (configure with -DTIRC_WITH_LLVM=ON)");
#else
      bool gpu = o->target == "nvptx";
      // PTX is the NVPTX target's assembly (what llc -march=nvptx64 writes for -filetype=asm),
      // so --emit asm is --emit ptx there.
      if (gpu && (o->emit == "obj" || o->emit == "header"))
        throw Error("--target nvptx emits ptx (or asm, the same) or llvm (got --emit " + o->emit + ")");
      if (!gpu && o->emit == "ptx") throw Error("--emit ptx needs --target nvptx");
      if (o->mcpu == "native" && !gpu) o->mcpu.clear();  // clang's -march=native: the host CPU
      check_mcpu(o->mcpu, gpu);
      Module m = parse_file(o->file);
      if (!o->no_schedule && !m.schedules.empty()) m = apply_module_schedules(m, o->func);
      std::vector<Function> funcs;
      if (!o->func.empty()) {
        Function f = m.find_func(o->func);
        if (!f) throw Error(no_function_message(m, o->func, o->file));
        funcs.push_back(f);
      } else {
        funcs = m.funcs;
      }
      if (funcs.empty()) throw Error(source_name(o->file) + " defines no function");
      // A function the user did not schedule for the GPU gets TVM's default GPU schedule
      // (docs/codegen.md, "Default GPU schedule").
      if (gpu && !o->no_default_gpu_schedule)
        for (auto& f : funcs) f = default_gpu_schedule(*f, o->gpu);
      CodegenOptions copts;
      copts.cpu = o->mcpu;
      copts.fast_math = o->fast_math;
      copts.bounds_checks = !o->no_bounds_check;
      copts.opt_level = o->opt;
      if (gpu) copts.triple = "nvptx64-nvidia-cuda";
      std::string emit = o->emit.empty() ? (gpu ? "ptx" : "obj") : o->emit;
      if (emit == "header") {
        bool to_stdout = o->out.empty() || o->out == "-";
        std::string h = emit_c_header(funcs, header_guard(to_stdout ? o->file + ".h" : o->out));
        write_file(to_stdout ? "-" : o->out, h);
        return kExitOk;
      }
      EmitKind kind = emit == "llvm"                     ? EmitKind::LLVM
                      : (emit == "asm" || emit == "ptx") ? EmitKind::Asm
                                                         : EmitKind::Obj;
      std::string data = compile_to(funcs, kind, copts);
      if (kind == EmitKind::Obj) {
        std::string out = o->out;
        if (out.empty()) {
          if (o->file == "-") throw Error("--emit obj from standard input needs -o OUT");
          out = std::filesystem::path(o->file).stem().string() + ".o";
        }
        write_file(out, data);
        if (out == "-") return kExitOk;  // the object alone on stdout; --emit header gives the header
        std::string hpath = std::filesystem::path(out).replace_extension(".h").string();
        write_file(hpath, emit_c_header(funcs, header_guard(hpath)));
        return kExitOk;
      }
      write_file(o->out.empty() ? "-" : o->out, data);
      return kExitOk;
#endif
    });
  });
}

}  // namespace tirc::cli

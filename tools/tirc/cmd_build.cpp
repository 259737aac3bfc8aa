// tirc build FILE --target cpu|nvptx [--emit llvm|asm|obj|header|ptx] [-o OUT] (CLI.md):
// apply the file's schedules, lower and compile every function (or --func F) with LLVM.
// --emit obj writes OUT (default FILE-stem.o) and the C header next to it (OUT with .h);
// llvm/asm/header print to standard output unless -o is given. C ABI: docs/codegen.md.
// --target nvptx (--emit ptx, the default, or llvm): one CUDA kernel per function, for
// functions whose loops are bound to blockIdx/threadIdx (docs/codegen.md, "NVPTX").
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ir/error.h"
#include "parser/parser.h"
#include "tools/tirc/common.h"
#include "transforms/schedule/schedule.h"
#ifdef TIRC_WITH_LLVM
#include "codegen/codegen.h"
#endif

namespace tirc::cli {

namespace {
struct BuildOptions {
  std::string file, target = "cpu", emit, out, func, mcpu;
  bool no_schedule = false, fast_math = false;
  int opt = 3;
};

[[maybe_unused]] void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write " + path);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw Error("cannot write " + path);
}

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
  cmd->add_option("--emit", o->emit, "llvm, asm, obj (default for cpu), header, or ptx")
      ->check(CLI::IsMember({"llvm", "asm", "obj", "header", "ptx"}));
  cmd->add_option("-o,--output", o->out, "output file (obj default: FILE-stem.o, others: standard output)");
  cmd->add_option("--func,-f", o->func, "compile only this function (default: every function)");
  cmd->add_flag("--no-schedule", o->no_schedule, "ignore the file's schedule items");
  cmd->add_option("--mcpu", o->mcpu,
                  "target CPU (default: the host CPU; 'generic' for portable code; nvptx: sm_80)");
  cmd->add_flag("--fast-math", o->fast_math, "allow reassociation and contraction of float arithmetic");
  cmd->add_option("-O", o->opt, "LLVM optimisation level 0-3 (default 3)")->check(CLI::Range(0, 3));
  cmd->callback([o] {
    run_guarded([o]() -> int {
#ifndef TIRC_WITH_LLVM
      throw Error("tirc was built without LLVM (configure with -DTIRC_WITH_LLVM=ON)");
#else
      bool gpu = o->target == "nvptx";
      if (gpu && (o->emit == "obj" || o->emit == "asm" || o->emit == "header"))
        throw Error("--target nvptx emits ptx or llvm (got --emit " + o->emit + ")");
      if (!gpu && o->emit == "ptx") throw Error("--emit ptx needs --target nvptx");
      Module m = parse_file(o->file);
      if (!o->no_schedule && !m.schedules.empty()) m = apply_module_schedules(m, o->func);
      std::vector<Function> funcs;
      if (!o->func.empty()) {
        Function f = m.find_func(o->func);
        if (!f) throw Error("no function named " + o->func + " in " + source_name(o->file));
        funcs.push_back(f);
      } else {
        funcs = m.funcs;
      }
      if (funcs.empty()) throw Error(source_name(o->file) + " defines no function");
      CodegenOptions copts;
      copts.cpu = o->mcpu;
      copts.fast_math = o->fast_math;
      copts.opt_level = o->opt;
      if (gpu) copts.triple = "nvptx64-nvidia-cuda";
      std::string emit = o->emit.empty() ? (gpu ? "ptx" : "obj") : o->emit;
      if (emit == "header") {
        std::string h = emit_c_header(funcs, header_guard(o->out.empty() ? o->file + ".h" : o->out));
        if (o->out.empty())
          std::cout << h;
        else
          write_file(o->out, h);
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
        std::string hpath = std::filesystem::path(out).replace_extension(".h").string();
        write_file(hpath, emit_c_header(funcs, header_guard(hpath)));
        return kExitOk;
      }
      if (o->out.empty())
        std::cout << data;
      else
        write_file(o->out, data);
      return kExitOk;
#endif
    });
  });
}

}  // namespace tirc::cli

// Shared pieces of the tirc subcommands: error handling and exit codes (CLI.md):
// 0 success, 1 a check failed, 2 bad input or usage.
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/module.h"

namespace tirc::cli {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;

// Runs a subcommand body; prints tirc::Error / SourceError messages to stderr and maps them
// to exit code 2. The result is stored for main() to return.
void run_guarded(const std::function<int()>& body);
int exit_code();

// The function `func` of module m (read from `file`), or its only function when func is
// empty. Error when there is no such function or the choice is ambiguous.
Function select_function(const Module& m, const std::string& file, const std::string& func);

// Why the canonical text of f would not read back (it would exceed the parser's nesting limits,
// docs/language.md, Limits: a schedule or a transform may nest deeper than a script can), or ""
// when it reads back.
std::string unreadable_text_reason(const FunctionNode& f);
// print_module(m), or tirc::Error "cannot print function F: REASON" when a function's text would
// not read back.
std::string print_module_checked(const Module& m);

// The name of an input file in messages: "-" (standard input) is "<stdin>", as in the
// parser's FILE:LINE:COL positions.
inline std::string source_name(const std::string& file) { return file == "-" ? "<stdin>" : file; }

// "f, g" (the module's function names in order), listed by the messages below.
inline std::string function_names(const Module& m) {
  std::string s;
  for (const auto& f : m.funcs) s += (s.empty() ? "" : ", ") + f->name;
  return s;
}

// The error for a file with several functions and no --func: names them, so the user can
// choose one without opening the file (outsider round 17; it said only "choose one").
inline std::string several_functions_message(const Module& m, const std::string& file) {
  return source_name(file) + " defines several functions (" + function_names(m) + "): choose one with --func";
}

// The error for `--func NAME` that names no function of the module. An intrin's name gets
// its own reason (its desc and impl are not functions of the module: tensorize uses them);
// the functions the file defines are listed (outsider round 17).
inline std::string no_function_message(const Module& m, const std::string& name, const std::string& file) {
  std::string msg = "no function named " + name + " in " + source_name(file);
  bool intrin = false;
  for (const auto& in : m.intrins) intrin = intrin || in.name == name;
  if (m.funcs.empty())
    return msg +
           (intrin ? " (" + name + " is an intrin, used by tensorize; the file defines no function)" : "");
  if (intrin)
    return msg + " (" + name + " is an intrin, used by tensorize; the functions are " + function_names(m) +
           ")";
  return msg + " (it defines " + function_names(m) + ")";
}

// Runs `body`, which differentiates f (`tirc grad`, `tirc check-grad`). An autodiff error that
// names a block of f ("block b: if/else in a block body is not supported") is rethrown as a
// SourceError at that block's `block` keyword (CLI.md: errors in a script carry FILE:LINE:COL);
// every other error passes unchanged.
void with_block_positions(const FunctionNode& f, const std::function<void()>& body);

// Option validators with plain messages ("must be at least 1", "must be >= 0"): CLI11's
// PositiveNumber prints its range up to DBL_MAX. Register them with ->transform(), not
// ->check(): they remove blanks around the value (`--rtol '1e-3 '`, as Python's float() and
// `--input 'n=3 '` accept them), which CLI11 would otherwise not convert.
inline void trim_blanks(std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// A number >= lo. With `integer`, a decimal integer that fits an int (`--repeat 2.5` said
// CLI11's "Could not convert: --repeat = 2.5").
inline CLI::Validator at_least(double lo, const std::string& what, bool integer = false) {
  return CLI::Validator(
      [lo, what, integer](std::string& s) -> std::string {
        trim_blanks(s);
        // strtod, not stod: `1e999` is inf and `1e-400` is 0 as Python's float() reads them
        // (stod throws out_of_range for both, which said "'1e-400' is not a number").
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        // Python's float() refuses C's hex floats and `nan(...)`, which strtod reads.
        if (s.empty() || end != s.c_str() + s.size() || s.find_first_of("xX(") != std::string::npos)
          return "'" + s + "' is not a number";
        if (integer) {
          size_t d = s[0] == '-' || s[0] == '+' ? 1 : 0;
          if (s.size() == d || s.find_first_not_of("0123456789", d) != std::string::npos)
            return "must be an integer, got " + s;
          if (v > 2147483647.0) return "must be at most 2147483647, got " + s;
        }
        return v >= lo && v == v ? std::string() : "must be " + what + ", got " + s;
      },
      "", "");
}

// A tolerance as the comparisons use it (`err <= atol + rtol * |x|`): inf (`--rtol inf`, `1e999`)
// becomes the largest double, since inf * 0 is NaN and failed the check of every zero value
// ("MISMATCH: B[0]: expected 0, got 0"). Any finite error still passes.
inline double finite_tolerance(double t) { return std::isinf(t) ? std::numeric_limits<double>::max() : t; }

// A random seed: decimal digits, at most 2^64 - 1. CLI11 alone read `--seed -1` as 2^64 - 1
// and saturated `--seed 99999999999999999999`, so two different seeds gave the same inputs.
inline CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        trim_blanks(s);
        bool digits = !s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string::npos;
        if (digits && s.size() == 20 && s > "18446744073709551615") digits = false;
        return digits ? std::string() : "must be an integer in [0, 18446744073709551615], got " + s;
      },
      "", "");
}

// The names of a `--wrt A,B` list, blanks around each name removed ("--wrt 'X, W'" as a
// user types it). Error for an empty name ("--wrt A,,B", "--wrt ''").
inline std::vector<std::string> wrt_names(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& it : items) {
    size_t b = it.find_first_not_of(" \t"), e = it.find_last_not_of(" \t");
    if (b == std::string::npos) throw Error("--wrt: empty buffer name (expected --wrt A,B,...)");
    out.push_back(it.substr(b, e - b + 1));
  }
  return out;
}

// Writes `data` to the file `path` (binary, replacing it). Error "cannot write PATH (REASON)",
// REASON the system's (`No such file or directory` for a missing directory, `Is a directory`,
// `Permission denied`, `No space left on device`): until outsider round 17 the message gave no
// reason, so a typo in a directory name looked like a permission problem.
inline void write_file_bytes(const std::string& path, const std::string& data) {
  auto fail = [&path] {
    int e = errno;
    throw Error("cannot write " + path + (e ? " (" + std::string(std::strerror(e)) + ")" : ""));
  };
  errno = 0;
  std::ofstream os(path, std::ios::binary);
  if (!os) fail();
  os.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!os) fail();
  os.close();  // flushes: a full disk shows here
  if (!os) fail();
}

// Writes a printed module to `out` (`-o FILE`), or to standard output when `out` is empty or
// "-" (as `-` names standard input). Error "cannot write FILE (REASON)" when it cannot be written.
inline void write_text_output(const std::string& out, const std::string& text) {
  if (out.empty() || out == "-") {
    std::cout << text;
    return;
  }
  write_file_bytes(out, text);
}

// Each subcommand file registers its subcommand on the app.
void register_parse(CLI::App& app);
void register_run(CLI::App& app);
void register_stats(CLI::App& app);
void register_grad(CLI::App& app);
void register_check_grad(CLI::App& app);
void register_schedule(CLI::App& app);
void register_verify(CLI::App& app);
void register_build(CLI::App& app);
void register_bench(CLI::App& app);

}  // namespace tirc::cli

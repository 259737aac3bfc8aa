// Shared pieces of the tirc subcommands: error handling and exit codes (CLI.md):
// 0 success, 1 a check failed, 2 bad input or usage.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
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

// The name of an input file in messages: "-" (standard input) is "<stdin>", as in the
// parser's FILE:LINE:COL positions.
inline std::string source_name(const std::string& file) { return file == "-" ? "<stdin>" : file; }

// Runs `body`, which differentiates f (`tirc grad`, `tirc check-grad`). An autodiff error that
// names a block of f ("block b: if/else in a block body is not supported") is rethrown as a
// SourceError at that block's `block` keyword (CLI.md: errors in a script carry FILE:LINE:COL);
// every other error passes unchanged.
void with_block_positions(const FunctionNode& f, const std::function<void()>& body);

// Option validators with plain messages ("must be at least 1", "must be >= 0"): CLI11's
// PositiveNumber prints its range up to DBL_MAX.
inline CLI::Validator at_least(double lo, const std::string& what) {
  return CLI::Validator(
      [lo, what](std::string& s) -> std::string {
        double v = 0;
        try {
          size_t n = 0;
          v = std::stod(s, &n);
          if (n != s.size()) return "'" + s + "' is not a number";
        } catch (...) {
          return "'" + s + "' is not a number";
        }
        return v >= lo && v == v ? std::string() : "must be " + what + ", got " + s;
      },
      "", "");
}

// A random seed: decimal digits, at most 2^64 - 1. CLI11 alone read `--seed -1` as 2^64 - 1
// and saturated `--seed 99999999999999999999`, so two different seeds gave the same inputs.
inline CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
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

// Helpers for the acceptance suite: run the `tirc` binary as a user would (TIRC_BINARY),
// capture exit code / stdout / stderr, and compare .npy results with NumPy references
// stored in tests/accept/cases/data (written by cases/gen_refs.py).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/ndarray.h"

// Tests that run the JIT or `tirc build` skip in a build without the LLVM backend (the
// ASan CI build); the release build runs them.
#ifdef TIRC_WITH_LLVM
#define TIRC_ACCEPT_REQUIRE_LLVM() (void)0
#else
#define TIRC_ACCEPT_REQUIRE_LLVM() GTEST_SKIP() << "needs the LLVM backend (built with TIRC_WITH_LLVM=OFF)"
#endif

namespace tirc::accept {

// Whether `tirc bench` and `tirc build` work in this build (they need the LLVM backend).
inline bool has_llvm() {
#ifdef TIRC_WITH_LLVM
  return true;
#else
  return false;
#endif
}

struct CliRun {
  int code = -1;  // exit code; -1 when killed by a signal (a crash)
  std::string out, err;
};

// Runs `tirc ARGS` in a fresh temp dir (the cwd), with `stdin_text` on standard input.
// Paths in ARGS may use "@/" for tests/accept/cases/ and "%/" for the run's temp dir; the
// temp dir is kept until the next call of run() in the same test, so outputs can be read.
CliRun run(const std::string& args, const std::string& stdin_text = "");
// The temp dir of the last run(), with a trailing '/'.
std::string tmp();
// A directory named after `tag` and the process, for files a test writes to pass to several
// run()s (each run() has a fresh cwd); created on first use, removed when the program exits.
// With a trailing '/'.
std::string scratch_dir(const std::string& tag);
// tests/accept/cases/ with a trailing '/'.
std::string cases();
// True when `part` occurs in `text`.
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
// The engines `tirc run --engine` has in this build: interp, and jit with the LLVM backend.
inline std::vector<std::string> engines() {
#ifdef TIRC_WITH_LLVM
  return {"interp", "jit"};
#else
  return {"interp"};
#endif
}
std::string slurp(const std::string& path);
void write_file(const std::string& path, const std::string& text);

// Empty when `got` has the dtype and shape of `want` and every element is within
// atol + rtol*|want| (NaN matches NaN, inf matches the same inf); else a description of
// the first difference.
std::string compare(const NDArray& got, const NDArray& want, double rtol, double atol);

// `tirc run @/FILE --func FUNC --engine ENGINE` with inputs NAME -> "=VALUE" or a data stem
// (cases/data/PREFIX<stem>.npy), every output written as .npy and compared with
// cases/data/PREFIX<stem>.npy within tol (relative and absolute); no stderr.
// A `check-grad` run that exits 0 and reports exactly n inputs passed, none failed.
void expect_passed(const CliRun& r, int n);

using NpyNames = std::vector<std::pair<std::string, std::string>>;
void check_run_against_npy(const std::string& file, const std::string& func, const std::string& engine,
                           const NpyNames& inputs, const NpyNames& outputs, double tol,
                           const std::string& prefix = "");

}  // namespace tirc::accept

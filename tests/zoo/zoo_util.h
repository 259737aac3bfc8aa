// Helpers of the operator-zoo tests (tests/zoo): discovery of examples/ops/*.tir, per-op
// directives, the known-failure list, subprocess runs, .npy writing and scratch folders.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/ndarray.h"

namespace tirc::zoo {

// Root of the source tree (TIRC_SOURCE_DIR) and the zoo folder in it.
std::filesystem::path source_dir();
std::filesystem::path ops_dir();

// Stems of examples/ops/*.tir, sorted. The function tested in FILE.tir is named FILE.
std::vector<std::string> discover_ops();

// Scalar inputs declared in the op's file by comment lines `# zoo-input: NAME=VALUE`
// (needed for functions with symbolic sizes). Returned in file order.
std::vector<std::pair<std::string, std::string>> zoo_inputs(const std::string& op);
// The same as `--input NAME=VALUE` arguments for the tirc CLI.
std::string zoo_input_flags(const std::string& op);

// The reason an (op, test) pair is a known failure, from tests/zoo/known_failures.txt
// (lines `OP TEST REASON...`, `#` comments), or "" when it is expected to pass.
std::string known_failure(const std::string& op, const std::string& test);

struct CommandResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  std::string output;  // standard output and standard error, interleaved
};
// Runs a shell command line and captures its output.
CommandResult run_command(const std::string& cmdline);
// Quotes one argument for /bin/sh.
std::string shell_quote(const std::string& s);

// Writes a C-ordered little-endian .npy (version 1.0) file; throws tirc::Error on failure.
// Independent of runtime/npy.h on purpose: the zoo checks tirc against NumPy/PyTorch.
void write_npy(const std::filesystem::path& path, const NDArray& a);

// A fresh scratch folder under the system temp dir, removed on destruction unless the
// environment variable TIRC_ZOO_KEEP is set (to inspect a failure).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tirc::zoo

// Validation of generated PTX with NVIDIA's assembler (no GPU needed), for the NVPTX tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tirc::testing {

inline const char* kPtxas = "/usr/local/cuda/bin/ptxas";

// Runs `ptxas -arch=sm_80` on the text; returns its exit code (0 = valid PTX) with its output
// appended to *log, or -2 when ptxas is not installed (callers skip).
// `flags` are extra ptxas options (e.g. "-O0": the same checks of the PTX, no optimisation,
// for large modules).
inline int run_ptxas(const std::string& ptx, std::string* log, const std::string& flags = "") {
  if (!std::filesystem::exists(kPtxas)) return -2;
  static int serial = 0;
  std::string in = (std::filesystem::temp_directory_path() /
                    ("tirc_ptxas_" + std::to_string(::getpid()) + "_" + std::to_string(serial++) + ".ptx"))
                       .string();
  std::ofstream(in) << ptx;
  std::string cmd = std::string(kPtxas) + " -arch=sm_80 " + flags + " -o /dev/null " + in + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) log->append(buf, n);
  int st = pclose(p);
  std::filesystem::remove(in);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace tirc::testing

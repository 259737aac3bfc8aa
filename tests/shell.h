// A shell command run by the tests (codegen AOT and default-GPU CLI, TVM-style schedule files):
// exit code and standard output + error together.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tirc::testing {

struct ShellResult {
  int code;  // the exit code, -1 when the command could not run or was killed
  std::string out;
};

inline ShellResult sh(const std::string& cmd) {
  ShellResult r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace tirc::testing

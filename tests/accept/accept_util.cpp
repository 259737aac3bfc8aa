#include "tests/accept/accept_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "runtime/npy.h"

namespace tirc::accept {
namespace fs = std::filesystem;

namespace {
std::string g_tmp;
int g_counter = 0;

std::string expand(std::string s) {
  for (auto [pat, rep] : {std::pair<std::string, std::string>{"@/", cases()}, {"%/", g_tmp}}) {
    size_t p = 0;
    while ((p = s.find(pat, p)) != std::string::npos) {
      s.replace(p, pat.size(), rep);
      p += rep.size();
    }
  }
  return s;
}
}  // namespace

std::string cases() { return std::string(TIRC_SOURCE_DIR) + "/tests/accept/cases/"; }
std::string tmp() { return g_tmp; }

std::string scratch_dir(const std::string& tag) {
  struct Dir {
    std::string path;
    explicit Dir(const std::string& t)
        : path((std::filesystem::temp_directory_path() / ("tirc_" + t + "_" + std::to_string(::getpid())))
                   .string() +
               "/") {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static std::map<std::string, std::unique_ptr<Dir>> dirs;
  auto& d = dirs[tag];
  if (!d) d = std::make_unique<Dir>(tag);
  return d->path;
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

CliRun run(const std::string& args, const std::string& stdin_text) {
  if (!g_tmp.empty()) fs::remove_all(g_tmp);
  g_tmp = (fs::temp_directory_path() /
           ("tirc_accept_" + std::to_string(::getpid()) + "_" + std::to_string(g_counter++)))
              .string() +
          "/";
  fs::create_directories(g_tmp);
  std::string in = g_tmp + ".stdin", out = g_tmp + ".stdout", err = g_tmp + ".stderr";
  write_file(in, stdin_text);
  // `timeout` turns a hang into a failure instead of a stuck suite.
  std::string cmd = "cd " + g_tmp + " && timeout 60 " + std::string(TIRC_BINARY) + " " + expand(args) + " <" +
                    in + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string compare(const NDArray& got, const NDArray& want, double rtol, double atol) {
  if (got.dtype() != want.dtype()) return "dtype " + describe(got) + " vs expected " + describe(want);
  if (got.shape() != want.shape()) return "shape " + describe(got) + " vs expected " + describe(want);
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      std::ostringstream os;
      os << "element " << i << ": got " << g << ", expected " << w;
      return os.str();
    }
  }
  return "";
}

void check_run_against_npy(const std::string& file, const std::string& func, const std::string& engine,
                           const NpyNames& inputs, const NpyNames& outputs, double tol,
                           const std::string& prefix) {
  SCOPED_TRACE(file + " " + func + " --engine " + engine);
  std::string args = "run @/" + file + " --func " + func + " --engine " + engine;
  for (auto& [name, v] : inputs)
    args += " --input " + name + "=" + (v[0] == '=' ? v.substr(1) : "@/data/" + prefix + v + ".npy");
  for (auto& [name, v] : outputs) args += " --output " + name + "=%/" + name + ".npy";
  CliRun r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (auto& [name, v] : outputs) {
    NDArray got = read_npy(tmp() + name + ".npy");
    NDArray want = read_npy(cases() + "data/" + prefix + v + ".npy");
    EXPECT_EQ(compare(got, want, tol, tol), "") << "output " << name;
  }
}

void expect_passed(const CliRun& r, int n) {
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::string last = std::to_string(n) + " passed, 0 failed\n";
  ASSERT_GE(r.out.size(), last.size()) << r.out << r.err;
  EXPECT_EQ(r.out.substr(r.out.size() - last.size()), last) << r.out;
  size_t lines = 0, p = 0;
  while ((p = r.out.find(": passed\n", p)) != std::string::npos) ++lines, ++p;
  EXPECT_EQ(lines, static_cast<size_t>(n)) << r.out;
}

}  // namespace tirc::accept

#include "tests/zoo/zoo_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace fs = std::filesystem;

namespace tirc::zoo {

fs::path source_dir() { return fs::path(TIRC_SOURCE_DIR); }
fs::path ops_dir() { return source_dir() / "examples" / "ops"; }

std::vector<std::string> discover_ops() {
  std::vector<std::string> ops;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ops_dir(), ec)) {
    if (e.is_regular_file() && e.path().extension() == ".tir") ops.push_back(e.path().stem().string());
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::pair<std::string, std::string>> zoo_inputs(const std::string& op) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(ops_dir() / (op + ".tir"));
  std::string line;
  const std::string tag = "# zoo-input:";
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.rfind(tag, 0) != 0) continue;
    std::string kv = trim(line.substr(tag.size()));
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    out.emplace_back(trim(kv.substr(0, eq)), trim(kv.substr(eq + 1)));
  }
  return out;
}

std::string zoo_input_flags(const std::string& op) {
  std::string flags;
  for (const auto& [k, v] : zoo_inputs(op)) flags += " --input " + shell_quote(k + "=" + v);
  return flags;
}

std::string known_failure(const std::string& op, const std::string& test) {
  std::ifstream in(source_dir() / "tests" / "zoo" / "known_failures.txt");
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string o, t;
    ss >> o >> t;
    if (o == op && t == test) {
      std::string reason;
      std::getline(ss, reason);
      reason = trim(reason);
      return reason.empty() ? "known failure" : reason;
    }
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

CommandResult run_command(const std::string& cmdline) {
  CommandResult r;
  std::string full = cmdline + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) {
    r.output = "popen failed for: " + cmdline;
    return r;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

static std::string npy_descr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::I8: return "|i1";
    case DType::I16: return "<i2";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::U8: return "|u1";
    case DType::U16: return "<u2";
    case DType::U32: return "<u4";
    case DType::F16: return "<f2";
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
    default: throw Error("write_npy: no .npy type for dtype " + std::string(dtype_name(t)));
  }
}

void write_npy(const fs::path& path, const NDArray& a0) {
  // bf16 has no NumPy type: widen it to f32.
  NDArray a = a0.dtype() == DType::BF16 ? a0.astype(DType::F32) : a0;
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i) shape += std::to_string(a.shape()[i]) + ", ";
  if (a.shape().size() > 1) shape.resize(shape.size() - 2);
  shape += ")";
  std::string header =
      "{'descr': '" + npy_descr(a.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // magic(6) + version(2) + header length(2) + header + '\n' is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("write_npy: cannot write " + path.string());
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char lenb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lenb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
  if (!out) throw Error("write_npy: cannot write " + path.string());
}

ScratchDir::ScratchDir(const std::string& tag) {
  static int counter = 0;
  path_ = fs::temp_directory_path() /
          ("tirc_zoo_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + tag);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  if (std::getenv("TIRC_ZOO_KEEP")) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace tirc::zoo

// Round trip of every example script (examples/**/*.tir, found at run time, so that files
// added later are covered): parse, print, parse again. The two modules must be
// structurally equal and the second print byte-identical to the first (CLI.md, `tirc parse`).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  std::filesystem::path root = std::filesystem::path(TIRC_SOURCE_DIR) / "examples";
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".tir")
      out.push_back(std::filesystem::relative(it->path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

class Examples : public ::testing::TestWithParam<std::string> {};

TEST_P(Examples, PrintParseFixpoint) {
  std::string path = std::string(TIRC_SOURCE_DIR) + "/examples/" + GetParam();
  Module m1;
  try {
    m1 = parse_file(path);
  } catch (const Error& e) {
    GTEST_SKIP() << "does not parse (not a round-trip problem): " << e.what();
  }
  std::string t1 = print_module(m1);
  Module m2;
  try {
    m2 = parse_module(t1, GetParam() + ".printed");
  } catch (const Error& e) {
    FAIL() << "printed text does not parse: " << e.what() << "\n--- printed ---\n" << t1;
  }
  auto diff = structural_diff(m1, m2);
  EXPECT_EQ(diff, std::nullopt) << "--- printed ---\n" << t1;
  std::string t2 = print_module(m2);
  EXPECT_EQ(t1, t2) << "printing is not a fixpoint";
}

// Runs a shell command; returns its standard output and sets *rc to the exit code.
std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *rc = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

// The CLI contract (CLI.md): `tirc parse` prints the canonical form, and parsing that text
// again prints the same text.
TEST_P(Examples, CliParseFixpoint) {
  std::string path = std::string(TIRC_SOURCE_DIR) + "/examples/" + GetParam();
  int rc;
  std::string t1 = run(std::string(TIRC_BINARY) + " parse '" + path + "' 2>/dev/null", &rc);
  ASSERT_EQ(rc, 0) << "tirc parse failed on " << path;
  // CTest runs tests in parallel processes: the scratch file name must be unique.
  std::string name = GetParam();
  for (char& ch : name)
    if (ch == '/') ch = '_';
  std::string tmp = ::testing::TempDir() + "/printed_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(tmp) << t1;
  std::string t2 = run(std::string(TIRC_BINARY) + " parse - < '" + tmp + "'", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(t1, t2);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s;
  for (char c : info.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(All, Examples, ::testing::ValuesIn(example_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Examples);

}  // namespace
}  // namespace tirc

// `tirc parse FILE|-` (CLI.md): prints the canonical module, exit 0; errors exit 2 with
// "FILE:LINE:COL: error: MSG" on stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/printer.h"
#include "parser/parser.h"

namespace tirc {
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliRun run(const std::string& args, const std::string& stdin_text = "") {
  auto dir = std::filesystem::temp_directory_path() / ("tirc_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string in = (dir / "in").string(), out = (dir / "out").string(), err = (dir / "err").string();
  std::ofstream(in) << stdin_text;
  std::string cmd = std::string(TIRC_BINARY) + " " + args + " <" + in + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
  std::filesystem::remove_all(dir);
  return r;
}

TEST(ParserCli, ParsePrintsCanonicalModule) {
  for (const char* name : {"matmul.tir", "conv2d.tir", "softmax.tir"}) {
    std::string path = std::string(TIRC_SOURCE_DIR) + "/examples/" + name;
    CliRun r = run("parse " + path);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, print_module(parse_file(path))) << name;
    // Printing is a fixpoint.
    CliRun again = run("parse -", r.out);
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_EQ(again.out, r.out) << name;
  }
}

TEST(ParserCli, ErrorsExitTwoWithPosition) {
  auto dir = std::filesystem::temp_directory_path();
  std::string path = (dir / ("tirc_bad_" + std::to_string(::getpid()) + ".tir")).string();
  std::ofstream(path) << "func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) { B[i] = A[i] + I }\n}\n";
  CliRun r = run("parse " + path);
  std::filesystem::remove(path);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, path + ":2:38: error: undeclared name 'I'\n");
  EXPECT_EQ(r.out, "");
  CliRun s = run("parse -", "func f( {");
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.err.rfind("<stdin>:1:9: error: ", 0), 0u) << s.err;
  CliRun missing = run("parse /nonexistent.tir");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "/nonexistent.tir:1:1: error: cannot open file (No such file or directory)\n");
}

// Declared regions that the body leaves: exit 2 with the position of the access, from every
// subcommand that reads the script.
TEST(ParserCli, DeclaredRegionViolationExitsTwo) {
  const char* src =
      "func f(A: f32[16, 16]) -> (B: f32[16]) {\n"
      "  for i, k in grid(16, 16) {\n"
      "    block b(vi: spatial(16) = i, vk: reduce(16) = k) {\n"
      "      reads A[vi, 0:8]\n"
      "      writes B[vi]\n"
      "      init { B[vi] = 0.0 }\n"
      "      B[vi] += A[vi, vk]\n"
      "    }\n"
      "  }\n"
      "}\n";
  for (const char* sub : {"parse -", "run - --random 1", "grad -", "stats -"}) {
    CliRun r = run(sub, src);
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_EQ(r.err,
              "<stdin>:7:16: error: block 'b': load A[vi, vk] is outside its declared region A[vi, 0:8] "
              "(dimension 1 "
              "exceeds the region's end by up to 8)\n")
        << sub;
  }
}

// An empty module parses (and prints nothing); commands that need a function say so.
TEST(ParserCli, EmptyModule) {
  for (const char* src : {"", "# only a comment\n"}) {
    CliRun p = run("parse -", src);
    EXPECT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(p.out, "");
    for (const char* sub : {"run - --random 1", "grad -", "stats -", "check-grad -"}) {
      CliRun r = run(sub, src);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.err, "tirc: error: <stdin> defines no function\n") << sub;
    }
  }
}

TEST(ParserCli, DivisionByZeroAtRunTime) {
  CliRun r = run("run - --random 1", "func f(A: f32[4]) -> (B: f32[4]) {\n  B[1 // 0] = 1.0\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:2:3: error: block \"root\": integer division by zero: floordiv(1, 0)\n");
}

}  // namespace
}  // namespace tirc

// Run-time errors of the interpreter carry the source position of the store (or block, or
// function) being run: "FILE:LINE:COL: error: block "B": ...", in process and through
// `tirc run` (exit code 2). IR built in code (no positions) keeps the plain message.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

// The error of running `fn` of `text` (parsed as file "d.tir") on random inputs.
std::string run_error(const std::string& text, const std::string& fn, ArgMap given = {}) {
  Module m = parse_module(text, "d.tir");
  Function f = m.find_func(fn);
  if (!f) return "(no function " + fn + ")";
  try {
    run_interp(*f, random_inputs(*f, 1, given));
  } catch (const SourceError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("(no position) ") + e.what();
  }
  return "(no error)";
}

NDArray scalar_i32(int64_t v) {
  NDArray a(DType::I32, {});
  a.set(0, static_cast<double>(v));
  return a;
}

const char* kScript = R"(func rbw(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[vi]
      B[vi] += B[(vi + 1) % 4]
    }
  }
}
func oob(A: f32[4], I: i32[4] in [4, 9]) -> (B: f32[4]) {
  for i in serial(4) {
    block g(vi: spatial(4) = i) { B[vi] = A[I[vi]] }
  }
}
func bind(n: i32, A: f32[8]) -> (B: f32[8]) {
  for i in serial(8) {
    block c(vi: spatial(n) = i) { B[vi] = A[vi] }
  }
}
func div(n: i32, A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block q(vi: spatial(4) = i) {
      let k = vi // n
      B[vi] = A[k]
    }
  }
}
func rootstore(n: i32, A: f32[4]) -> (B: f32[4]) {
  B[0] = A[0]
  B[1] = A[n]
}
func rootloop(n: i32, A: f32[4]) -> (B: f32[4]) {
  for i in serial(4 // n) {
    B[i] = A[i]
  }
}
)";

TEST(InterpDiagnostics, ReadBeforeWritePointsAtTheStore) {
  EXPECT_EQ(run_error(kScript, "rbw"),
            "d.tir:5:7: error: block \"b\": read of uninitialised element B[1] of output buffer B");
}

TEST(InterpDiagnostics, OutOfBoundsLoadPointsAtTheStore) {
  std::string e = run_error(kScript, "oob");
  EXPECT_EQ(e.rfind("d.tir:11:35: error: block \"g\": out-of-bounds load A[", 0), 0u) << e;
}

TEST(InterpDiagnostics, BindingOutsideItsDomainPointsAtTheBlock) {
  EXPECT_EQ(run_error(kScript, "bind", {{"n", scalar_i32(5)}}),
            "d.tir:16:5: error: block \"c\": binding of iter var vi = 5 is outside its domain [0, 5)");
}

TEST(InterpDiagnostics, DivisionByZeroInALetPointsAtTheBlock) {
  EXPECT_EQ(run_error(kScript, "div", {{"n", scalar_i32(0)}}),
            "d.tir:21:5: error: block \"q\": integer division by zero: floordiv(0, 0)");
}

TEST(InterpDiagnostics, StatementsOutsideBlocks) {
  // A store in the implicit root block: its own position; a loop extent: the function.
  EXPECT_EQ(run_error(kScript, "rootstore", {{"n", scalar_i32(4)}}),
            "d.tir:29:3: error: block \"root\": out-of-bounds load A[4]: A has shape [4]");
  EXPECT_EQ(run_error(kScript, "rootloop", {{"n", scalar_i32(0)}}),
            "d.tir:31:6: error: block \"root\": integer division by zero: floordiv(4, 0)");
}

TEST(InterpDiagnostics, ErrorKeepsItsPartsForCallers) {
  Module m = parse_module(kScript, "d.tir");
  Function f = m.find_func("rbw");
  try {
    run_interp(*f, random_inputs(*f, 1));
    FAIL() << "no error";
  } catch (const SourceError& e) {
    EXPECT_EQ(e.file(), "d.tir");
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.col(), 7);
    EXPECT_EQ(e.message(), "block \"b\": read of uninitialised element B[1] of output buffer B");
  }
}

// ---- end to end through the tirc binary ----

struct Cmd {
  int code;
  std::string out, err;
};

Cmd tirc(const std::string& args, const std::string& stdin_text = "") {
  static int n = 0;
  std::string base = "/tmp/tirc_diag_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  std::string cmd = std::string(TIRC_BINARY) + " " + args;
  if (!stdin_text.empty()) {
    std::ofstream(base + ".in") << stdin_text;
    cmd += " < " + base + ".in";
  }
  cmd += " > " + base + ".out 2> " + base + ".err";
  int rc = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Cmd r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(base + ".out"), slurp(base + ".err")};
  for (const char* ext : {".in", ".out", ".err"}) std::filesystem::remove(base + ext);
  return r;
}

TEST(InterpDiagnosticsCli, RunTimeErrorsHavePositions) {
  std::string p = std::string(TIRC_SOURCE_DIR) + "/tests/accept/cases/errors/";
  Cmd r = tirc("run " + p + "read_before_write.tir --func f --random 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, p + "read_before_write.tir:4:7: error: block \"b\": read of uninitialised element B[0] of "
                       "output buffer B\n");
  r = tirc("run " + p + "alloc_read_before_write.tir --func f --random 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, p + "alloc_read_before_write.tir:4:35: error: block \"b\": read of uninitialised element "
                       "T[0] of alloc buffer T\n");
  r = tirc("run " + p + "oob_dynamic.tir --func f --random 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            p + "oob_dynamic.tir:3:35: error: block \"b\": out-of-bounds load A[9]: A has shape [4]\n");
  // stats --dynamic runs the interpreter too.
  r = tirc("stats --dynamic " + p + "oob_dynamic.tir --func f");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind(p + "oob_dynamic.tir:3:35: error: block \"b\": out-of-bounds load A[", 0), 0u)
      << r.err;
}

TEST(InterpDiagnosticsCli, StdinAndScalarInputs) {
  Cmd r = tirc("run - --func div --input n=0 --random 1", kScript);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:21:5: error: block \"q\": integer division by zero: floordiv(0, 0)\n");
  r = tirc("run - --func bind --input n=3 --random 1", kScript);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:16:5: error: block \"c\": binding of iter var vi = 3 is outside its domain [0, 3)\n");
  r = tirc("run - --func bind --input n=8 --random 1", kScript);
  EXPECT_EQ(r.code, 0) << r.err;
}

}  // namespace
}  // namespace tirc

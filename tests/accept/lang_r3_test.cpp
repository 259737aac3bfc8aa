// Acceptance round 3 (the third outsider round): LANGUAGE.md sentences taken literally, through
// the tirc binary. lang_r3.tir against NumPy references (cases/gen_refs3.py, data/r3_*.npy);
// spatial conflicts; exact static stats under `where`; `;` after items; `--version`;
// printing of serial(lo, hi); the message for a let that reads a buffer used in a block.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct Case {
  const char* func;
  NpyNames inputs, outputs;
};

std::vector<Case> cases_r3() {
  return {
      {"multi_init",
       {{"A", "mi_A"}},
       {{"S", "mi_S"}, {"M", "mi_M"}, {"N", "mi_N"}, {"P", "mi_P"}, {"D", "mi_D"}}},
      {"local", {{"n", "=3"}, {"A", "lo_A"}}, {{"B", "lo_B"}, {"C", "lo_C"}}},
      {"logic",
       {{"A", "lg_A"}, {"U", "lg_U"}},
       {{"G", "lg_G"}, {"Z", "lg_Z"}, {"L", "lg_L"}, {"F", "lg_F"}, {"V", "lg_V"}}},
      {"shifted", {{"n", "=3"}, {"m", "=5"}, {"A", "sh_A"}}, {{"B", "sh_B"}}},
  };
}

TEST(AcceptR3, RunAgainstNumPy) {
  for (auto& c : cases_r3())
    check_run_against_npy("lang_r3.tir", c.func, "interp", c.inputs, c.outputs, 0, "r3_");
}

TEST(AcceptR3, RunAgainstNumPyJit) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  for (auto& c : cases_r3())
    check_run_against_npy("lang_r3.tir", c.func, "jit", c.inputs, c.outputs, 0, "r3_");
}

TEST(AcceptR3, PrintIsAFixpoint) {
  CliRun a = run("parse @/lang_r3.tir");
  ASSERT_EQ(a.code, 0) << a.err;
  CliRun b = run("parse -", a.out);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  // serial(lo, hi) prints as written (round 1 printed serial(1, 1 + (n + 1 - 1))).
  EXPECT_NE(a.out.find("for i in serial(1, n + 1) {"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("for j in serial(2, m) {"), std::string::npos) << a.out;
}

// LANGUAGE.md: "a block whose spatial iterations conflict is invalid": `tirc run` reports it
// (exit 2, position of the store), for writes and for reads of another iteration's write.
TEST(AcceptR3, SpatialConflicts) {
  CliRun r = run("run - --random 1",
                 "func f(A: f32[8]) -> (B: f32[8]) {\n"
                 "  for i in serial(8) { block b(vi: spatial(8) = i) { B[vi // 2] = A[vi] } }\n"
                 "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:2:54: error: block \"b\": spatial iterations conflict: (vi = 0) and (vi = 1) both write "
            "B[0] (use a reduce iter var for a reduction)\n");
  r = run("run - --random 1",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) {\n"
          "    block b(vi: spatial(4) = i) { B[vi] = if_then_else(vi > 0, B[vi - 1], 0.0) + A[vi] }\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "<stdin>:3:35: error: block \"b\": spatial iterations conflict: (vi = 1) reads B[0], written by "
            "(vi = 0) (iterations of spatial iter vars must be independent; use a scan iter var)\n");
  // The same recurrence with a scan iter var is valid.
  r = run("run - --input A=1",
          "func f(A: f32[4]) -> (B: f32[4]) {\n"
          "  for i in serial(4) {\n"
          "    block b(vi: scan(4) = i) { B[vi] = if_then_else(vi > 0, B[vi - 1], 0.0) + A[vi] }\n"
          "  }\n"
          "}\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[4] sum=10 first=[1, 2, 3, 4]\n");
}

// The block of LANGUAGE.md with its `where i < 100` under a 128-row loop: static counts are
// exact (100 * 32 * 64 iterations, 2 FLOPs each), as --dynamic counts them.
TEST(AcceptR3, StatsUnderWhereAreExact) {
  const std::string fn =
      "func mm(A: f32[128, 64], B: f32[64, 32]) -> (C: f32[128, 32]) {\n"
      "  for i, j, k in grid(128, 32, 64) {\n"
      "    block C(vi: spatial(128) = i, vj: spatial(32) = j, vk: reduce(64) = k) {\n"
      "      where i < 100\n"
      "      reads A[vi, vk], B[vk, vj]\n"
      "      writes C[vi, vj]\n"
      "      init { C[vi, vj] = 0.0 }\n"
      "      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
      "    }\n"
      "  }\n"
      "}\n";
  for (const char* mode : {"", " --dynamic"}) {
    CliRun r = run(std::string("stats - --json") + mode, fn);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* k : {"\"iterations\": 204800", "\"flops\": 409600", "\"stores\": 208000"})
      EXPECT_NE(r.out.find(k), std::string::npos) << mode << " " << k << "\n" << r.out;
  }
  // An enclosing `if` on a loop var counts the same way; one that reads a buffer is an upper
  // bound (every loop iteration).
  CliRun r = run("stats - --json",
                 "func f(A: f32[10], I: i32[1]) -> (B: f32[10], C: f32[10]) {\n"
                 "  for i in serial(10) {\n"
                 "    if i % 3 == 0 { block b(vi: spatial(10) = i) { B[vi] = A[vi] } }\n"
                 "    if i < I[0] { block c(vi: spatial(10) = i) { C[vi] = A[vi] } }\n"
                 "  }\n"
                 "}\n");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["blocks"]["b"]["iterations"], 4) << r.out;
  EXPECT_EQ(j["blocks"]["c"]["iterations"], 10) << r.out;
}

TEST(AcceptR3, SemicolonAfterItems) {
  CliRun r = run("run - --input A=2",
                 "func f(A: f32[2]) -> (B: f32[2]) {\n"
                 "  for i in serial(2) { block b(vi: spatial(2) = i) { B[vi] = A[vi] + 1.0; }; };\n"
                 "};\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[2] sum=6 first=[3, 3]\n");
}

// --show N: leading values printed per output; 0 printed `first=[, ...]`, -1 was accepted.
TEST(AcceptR3, ShowValues) {
  const std::string fn =
      "func f(A: f32[3]) -> (B: f32[3]) { block r() { B[0] = 1.0 B[1] = 2.0 B[2] = 3.0 } }\n";
  CliRun r = run("run - --input A=0 --show 0", fn);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "B: f32[3] sum=6 first=[...]\n");
  r = run("run - --input A=0 --show 2", fn);
  EXPECT_EQ(r.out, "B: f32[3] sum=6 first=[1, 2, ...]\n");
  r = run("run - --input A=0 --show -1", fn);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("must be at least 0"), std::string::npos) << r.err;
}

TEST(AcceptR3, Version) {
  CliRun r = run("--version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tirc ", 0), 0u) << r.out;
}

// A let outside a block whose value reads a buffer cannot be used in the block: the message
// says so (it used to say the let "depends on loop variables").
TEST(AcceptR3, LetReadingABufferOutsideTheBlock) {
  CliRun r = run("parse -",
                 "func f(A: f32[4]) -> (B: f32[4]) {\n"
                 "  let c = A[0]\n"
                 "  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] * c } }\n"
                 "}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "<stdin>:3:70: error: 'c' reads a buffer outside block 'b' and cannot be used inside it; read the "
      "buffer inside the block\n");
}

}  // namespace
}  // namespace tirc::accept

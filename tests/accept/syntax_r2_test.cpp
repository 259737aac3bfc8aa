// Acceptance round 2: printing is a fixpoint (CLI.md `tirc parse`) for the round-2 case files
// and every module derived from them (grad of each function, the scheduled module), and
// lexical corners a stranger writes.
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const char* kCases[] = {"lang_r2.tir", "sched_r2.tir", "grads_r2.tir", "grads_nested_r2.tir"};

void expect_fixpoint(const std::string& text, const std::string& what) {
  SCOPED_TRACE(what);
  CliRun r1 = run("parse -", text);
  ASSERT_EQ(r1.code, 0) << r1.err;
  CliRun r2 = run("parse -", r1.out);
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_EQ(r2.out, r1.out);
  Module m0 = parse_module(text, "original");
  Module m1 = parse_module(r1.out, "printed");
  EXPECT_TRUE(structural_equal(m0, m1)) << structural_diff(m0, m1).value_or("");
}

TEST(AcceptSyntaxR2, PrintIsAFixpoint) {
  for (const char* name : kCases) expect_fixpoint(slurp(cases() + name), name);
}

TEST(AcceptSyntaxR2, DerivedModulesAreFixpoints) {
  for (const char* f :
       {"unary_all", "mlp", "lse", "sum2", "conv2d", "tri", "chain", "multi", "scan2", "predred"}) {
    CliRun g = run(std::string("grad @/grads_r2.tir --func ") + f);
    ASSERT_EQ(g.code, 0) << f << g.err;
    expect_fixpoint(g.out, std::string("grad ") + f);
  }
  CliRun s = run("schedule @/sched_r2.tir");
  ASSERT_EQ(s.code, 0) << s.err;
  expect_fixpoint(s.out, "schedule sched_r2.tir");
}

// Lexical corners: `;` after every statement and clause, comments everywhere, CRLF line
// ends, tabs, exponent forms, names that are loop kinds / intrinsics / iter-var kinds.
TEST(AcceptSyntaxR2, LexicalCorners) {
  std::string a =
      "func f(A: f32[4]) -> (B: f32[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n"
      "      B[vi] = A[vi] * 1.5e+0 + 2.5E-1 + 1e1\n"
      "    }\n"
      "  }\n"
      "}\n";
  std::string b =
      "# leading comment\r\n"
      "func f(A: f32[4]) -> (B: f32[4]) {   # after header\r\n"
      "\tfor i in serial(4) {\r\n"
      "\t\tblock b(vi: spatial(4) = i) {  # block\r\n"
      "\t\t\tB[vi] = A[vi] * 1.5 + 0.25 + 10.0;  # store\r\n"
      "\t\t};\r\n"
      "\t};\r\n"
      "}\r\n";
  CliRun ra = run("parse -", a), rb = run("parse -", b);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(ra.out, rb.out);
  CliRun x = run("run - --input A=2", b);
  ASSERT_EQ(x.code, 0) << x.err;
  EXPECT_EQ(x.out, "B: f32[4] sum=53 first=[13.25, 13.25, 13.25, 13.25]\n");
  // Loop-kind, iter-var-kind and intrinsic names as ordinary names.
  std::string names =
      "func f(serial: i32, exp: f32[serial]) -> (reduce: f32[serial]) {\n"
      "  for grid in serial(serial) {\n"
      "    block sqrt(spatial: spatial(serial) = grid) { reduce[spatial] = exp(exp[spatial]) }\n"
      "  }\n"
      "}\n";
  CliRun n = run("run - --input serial=2 --input exp=0", names);
  ASSERT_EQ(n.code, 0) << n.err;
  EXPECT_EQ(n.out, "reduce: f32[2] sum=2 first=[1, 1]\n");
  expect_fixpoint(names, "names");
}

}  // namespace
}  // namespace tirc::accept

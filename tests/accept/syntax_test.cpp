// `tirc parse`: every case file parses, and printing is a fixpoint (text identical after a
// second round, module structurally equal to the original).
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const char* kCases[] = {"syntax_kitchen.tir",
                        "intrinsics.tir",
                        "dtypes.tir",
                        "symbolic.tir",
                        "structure.tir",
                        "module_order.tir",
                        "grads.tir",
                        "grads2.tir",
                        "schedules.tir",
                        "gpu.tir",
                        "corners.tir",
                        "schedules_tvm.tir",
                        "schedules_discard.tir",
                        "schedules_cache_read.tir",
                        "semantics.tir"};

TEST(AcceptSyntax, PrintIsAFixpoint) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    CliRun r1 = run("parse @/" + std::string(name));
    ASSERT_EQ(r1.code, 0) << r1.err;
    EXPECT_EQ(r1.err, "");
    CliRun r2 = run("parse -", r1.out);
    ASSERT_EQ(r2.code, 0) << r2.err;
    EXPECT_EQ(r2.out, r1.out);
    Module m0 = parse_file(cases() + name);
    Module m1 = parse_module(r1.out, "printed");
    EXPECT_TRUE(structural_equal(m0, m1)) << structural_diff(m0, m1).value_or("");
    // Items keep their order (schedules may precede their function).
    EXPECT_EQ(print_module(m1), r1.out);
  }
}

// The grad output, the scheduled module, the grad of the grad: all re-parse to a fixpoint.
TEST(AcceptSyntax, DerivedModulesReparse) {
  const char* cmds[] = {"grad @/grads.tir --func softmax", "grad @/grads2.tir --func layernorm",
                        "schedule @/schedules.tir", "schedule @/module_order.tir", "schedule @/gpu.tir"};
  for (const char* c : cmds) {
    SCOPED_TRACE(c);
    CliRun r1 = run(c);
    ASSERT_EQ(r1.code, 0) << r1.err;
    CliRun r2 = run("parse -", r1.out);
    ASSERT_EQ(r2.code, 0) << r2.err;
    EXPECT_EQ(r2.out, r1.out);
  }
}

// Statements may end with `;`, comments run to the end of line (also on the last line
// without a newline), schedules come before or after their function.
TEST(AcceptSyntax, SeparatorsAndComments) {
  std::string a =
      "func f(A: f32[4]) -> (B: f32[4]) { for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] } "
      "} }";
  std::string b =
      "# header\nfunc f(A: f32[4]) -> (B: f32[4]) {  # c1\n  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) {\n      B[vi] = A[vi];  # c2\n    };\n  };\n}  # end";
  CliRun ra = run("parse -", a), rb = run("parse -", b);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(ra.out, rb.out);
}

}  // namespace
}  // namespace tirc::accept

// Schedules written the TVM way: `tirc verify` finds the scheduled functions equivalent, and
// `tirc schedule` output re-parses.
#include <gtest/gtest.h>

#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

TEST(AcceptSchedule, TvmHabits) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("verify @/schedules_tvm.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 passed, 0 failed"), std::string::npos) << r.out;
  // The nested calls were applied: B is inlined into C.
  CliRun s = run("schedule @/schedules_tvm.tir --func g");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("C[vi, vj] = A[vi, vj] * A[vi, vj] + 1.0"), std::string::npos) << s.out;
  // Printed schedules keep the hoisted instruction.
  CliRun p = run("parse @/schedules_tvm.tir");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("  _0 = get_block(\"B\")\n  compute_inline(_0)\n  _1 = get_block(\"C\")\n  ci, cj = "
                       "get_loops(_1)\n  parallel(ci)\n"),
            std::string::npos)
      << p.out;
}

TEST(AcceptSchedule, ErrorsInNestedCallsPointAtThem) {
  CliRun r = run("schedule -",
                 "func f(A: f32[4]) -> (B: f32[4]) {\n"
                 "  for i in serial(4) { block b(vi: spatial(4) = i) { B[vi] = A[vi] } }\n}\n"
                 "schedule f {\n  parallel(get_loops(get_block(\"nope\")))\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:5:22: error: get_block: no block named \"nope\" in function f\n");
}

// TVM's Python spelling `sch.prim(...)`, also nested; any other receiver is an error.
TEST(AcceptSchedule, SchReceiver) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  std::string text =
      "func f(A: f32[8, 8]) -> (B: f32[8, 8]) {\n"
      "  for i, j in grid(8, 8) { block b(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] } "
      "}\n"
      "}\n"
      "schedule f {\n"
      "  b = sch.get_block(\"b\")\n"
      "  i, j = sch.get_loops(b)\n"
      "  sch.parallel(i)\n"
      "  sch.vectorize(sch.get_loops(b)[-1])\n"
      "}\n";
  CliRun r = run("verify -", text);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  CliRun s = run("schedule -", text);
  EXPECT_NE(s.out.find("for i in parallel(8)"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("for j in vectorized(8)"), std::string::npos) << s.out;
  size_t p = text.find("sch.parallel");
  CliRun bad = run("schedule -", text.replace(p, 3, "tvm"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err,
            "<stdin>:7:3: error: unknown receiver 'tvm': schedule instructions are written prim(...) or "
            "sch.prim(...)\n");
}

// acceptance round 1, finding S1: results may be left unbound (discarded), as in TVM scripts.
TEST(AcceptSchedule, DiscardedResults) {
  CliRun r = run("verify @/schedules_discard.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// acceptance round 1, finding S2 (transforms/schedule): cache_read after compute_at of the producer.
TEST(AcceptSchedule, CacheReadAfterComputeAt) {
  CliRun r = run("verify @/schedules_cache_read.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// acceptance round 1, finding S4: verify draws float scalars not given, as run and check-grad do.
TEST(AcceptSchedule, VerifyDrawsFloatScalars) {
  CliRun r = run("verify @/verify_float_scalar.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("f [interp]: ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tirc::accept

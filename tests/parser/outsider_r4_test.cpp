// Outsider round 4 findings in the parser: Python float literals with a leading dot (`.5`),
// and Python's one-element unpack `k, = ...` / `(k,) = ...` in schedules, which was read (and
// printed) as the plain binding `k = ...`.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

const char* kFn =
    "func f(A: f32[4]) -> (B: f32[4]) {\n"
    "  for i in serial(4) {\n"
    "    block b(vi: spatial(4) = i) { B[vi] = A[vi] * 2.0 }\n"
    "  }\n"
    "}\n";

TEST(ParserR4, LeadingDotFloatLiterals) {
  Module m = parse_module(
      "func f(A: f32[4], D: f64[4]) -> (B: f32[4], E: f64[4]) {\n"
      "  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) { B[vi] = A[vi] * .5 + .25e1 + .1E-1  E[vi] = D[vi] + .1 }\n"
      "  }\n"
      "}\n",
      "t.tir");
  std::string p = print_module(m);
  EXPECT_NE(p.find("B[vi] = A[vi] * 0.5 + 2.5 + 0.01"), std::string::npos) << p;
  EXPECT_NE(p.find("E[vi] = D[vi] + 0.1"), std::string::npos) << p;  // f64 0.1, not f32
  EXPECT_TRUE(structural_equal(m, parse_module(p, "p.tir")));
  // `.` alone, or before a letter, is still an error.
  try {
    parse_module("func f(A: f32[4]) -> (B: f32[4]) { B[0] = A[0] * . }\n", "t.tir");
    FAIL() << "expected an error";
  } catch (const SourceError& e) {
    EXPECT_EQ(std::string(e.what()), "t.tir:1:50: error: unexpected '.'");
  }
}

const ScheduleInstr& instr(const Module& m, size_t i) { return m.schedules.at(0).instrs.at(i); }

TEST(ParserR4, OneElementUnpackIsKept) {
  Module m = parse_module(std::string(kFn) +
                              "schedule f {\n"
                              "  b = get_block(\"b\")\n"
                              "  loops = get_loops(b)\n"
                              "  (k,) = loops[-1:]\n"
                              "  j, = sch.get_loops(b)\n"
                              "  l = loops\n"
                              "  (h) = loops[0]\n"
                              "  i, = get_loops(b)[0:]\n"
                              "}\n",
                          "t.tir");
  ASSERT_EQ(m.schedules.size(), 1u);
  EXPECT_TRUE(instr(m, 2).unpack);   // (k,) =
  EXPECT_TRUE(instr(m, 3).unpack);   // j, = sch.prim
  EXPECT_FALSE(instr(m, 4).unpack);  // l =
  EXPECT_FALSE(instr(m, 5).unpack);  // (h) = is no tuple in Python
  // `i, = get_loops(b)[0:]`: the call is hoisted to `_0 = ...` (not an unpack), the slice
  // keeps the comma.
  EXPECT_FALSE(instr(m, 6).unpack);
  EXPECT_EQ(instr(m, 6).results, std::vector<std::string>{"_0"});
  EXPECT_TRUE(instr(m, 7).unpack);
  std::string p = print_module(m);
  EXPECT_NE(p.find("  k, = loops[-1:]\n  j, = get_loops(b)\n  l = loops\n  h = loops[0]\n"
                   "  _0 = get_loops(b)\n  i, = _0[0:]\n"),
            std::string::npos)
      << p;
  Module again = parse_module(p, "p.tir");
  EXPECT_TRUE(structural_equal(m, again));
  EXPECT_EQ(print_module(again), p);
  // Structural equality tells `k, =` from `k =`.
  Module plain = parse_module(
      std::string(kFn) + "schedule f {\n  b = get_block(\"b\")\n  k = get_loops(b)\n}\n", "t.tir");
  Module tuple = parse_module(
      std::string(kFn) + "schedule f {\n  b = get_block(\"b\")\n  k, = get_loops(b)\n}\n", "t.tir");
  EXPECT_FALSE(structural_equal(plain, tuple));
}

// `u8(-1)`: a literal that does not fit the cast's integer dtype is a Cast of its i32 value
// (it wraps at run time); one that fits is a typed literal; one that fits neither is an error
// in terms of the cast's dtype.
TEST(ParserR4, CastOfLiteralThatDoesNotFit) {
  auto value = [](const std::string& e) {
    Module m =
        parse_module("func f(A: u8[1]) -> (B: u8[1]) {\n  block r() { B[0] = " + e + " }\n}\n", "t.tir");
    auto* root = m.funcs[0]->body.as<BlockRealizeNode>();
    auto* st = root->block->body.as<StoreNode>();
    EXPECT_NE(st, nullptr);
    return st->value;
  };
  Expr a = value("u8(-1)");
  auto* c = a.as<CastNode>();
  ASSERT_NE(c, nullptr) << print_expr(a);
  EXPECT_EQ(c->dtype, DType::U8);
  int64_t v = 0;
  EXPECT_TRUE(is_const_int(c->value, &v));
  EXPECT_EQ(v, -1);
  EXPECT_EQ(c->value.dtype(), DType::I32);
  Expr b = value("u8(255)");
  EXPECT_TRUE(is_const_int(b, &v));
  EXPECT_EQ(b.dtype(), DType::U8);
  try {
    value("u8(3000000000)");
    FAIL() << "expected an error";
  } catch (const SourceError& e) {
    EXPECT_EQ(std::string(e.what()), "t.tir:2:25: error: integer literal 3000000000 does not fit in u8");
  }
}

}  // namespace
}  // namespace tirc

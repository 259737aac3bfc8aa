// Typed literals the printer reads back: `true` / `false`, `bool(1)` / `bool(0)` and the extreme integer
// -9223372036854775808 (INT64_MIN, how min_value(i64) prints) must read back as immediates.
#include <gtest/gtest.h>

#include <cstdint>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"

namespace tirc {
namespace {

const char* kHeader =
    "func f(A: f32[4], I: i32[4], L: i64[4], D: f64[4]) -> (B: f32[4], J: i32[4], K: i64[4], Q: bool[4], "
    "E: f64[4]) {\n";

Module parse_body(const std::string& body) {
  return parse_module(std::string(kHeader) + body + "\n}\n", "t.tir");
}

Expr stored(const std::string& store) {
  Module m = parse_body("  for i in serial(4) {\n    " + store + "\n  }");
  auto* root = m.funcs[0]->body.as<BlockRealizeNode>();
  auto* loop = root->block->body.as<ForNode>();
  EXPECT_NE(loop, nullptr);
  auto* st = loop->body.as<StoreNode>();
  EXPECT_NE(st, nullptr);
  return st->value;
}

std::string error_of(const std::string& body) {
  try {
    parse_body(body);
  } catch (const SourceError& e) {
    return e.what();
  }
  return "no error";
}

void expect_bool_imm(const Expr& e, int64_t v) {
  ASSERT_EQ(e.kind(), ExprKind::IntImm);
  EXPECT_EQ(e.dtype(), DType::Bool);
  EXPECT_EQ(e.as<IntImmNode>()->value, v);
}

TEST(ParserLiterals, BoolCastOfLiteralIsBoolImmediate) {
  expect_bool_imm(stored("Q[i] = bool(1)"), 1);
  expect_bool_imm(stored("Q[i] = bool(0)"), 0);
  expect_bool_imm(stored("Q[i] = bool((1))"), 1);
  expect_bool_imm(stored("Q[i] = bool(-0)"), 0);
  // In a condition and in a select, as the printer writes simplified predicates.
  Expr e = stored("B[i] = select(bool(1), A[i], 0.0)");
  auto* s = e.as<SelectNode>();
  ASSERT_NE(s, nullptr);
  expect_bool_imm(s->cond, 1);
  e = stored("Q[i] = bool(0) || I[i] > 0");
  expect_bool_imm(e.as<BinaryNode>()->a, 0);
}

TEST(ParserLiterals, BoolCastOfOtherLiteralsStaysACast) {
  // Only 0 and 1 are bool values: other literal-only arguments keep their i32/f32 cast.
  Expr e = stored("Q[i] = bool(2)");
  auto* c = e.as<CastNode>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype, DType::Bool);
  EXPECT_EQ(c->value.dtype(), DType::I32);
  e = stored("Q[i] = bool(1.0)");
  ASSERT_NE(e.as<CastNode>(), nullptr);
  EXPECT_EQ(e.as<CastNode>()->value.dtype(), DType::F32);
  e = stored("Q[i] = bool(1 + 0)");
  ASSERT_NE(e.as<CastNode>(), nullptr);
  // A cast of a typed literal is a Cast node (printer requirement 2).
  e = stored("Q[i] = bool(i32(1))");
  ASSERT_NE(e.as<CastNode>(), nullptr);
}

TEST(ParserLiterals, BoolLiteralsRoundTrip) {
  // The printer writes bool constants as `true` / `false`.
  Module m = parse_body("  for i in serial(4) {\n    Q[i] = bool(1) && (bool(0) || I[i] > 0)\n  }");
  std::string t1 = print_module(m);
  EXPECT_NE(t1.find("true && (false || I[i] > 0)"), std::string::npos) << t1;
  EXPECT_EQ(print_module(parse_module(t1, "t2.tir")), t1);
}

TEST(ParserLiterals, TrueFalseAreBoolLiterals) {
  expect_bool_imm(stored("Q[i] = true"), 1);
  expect_bool_imm(stored("Q[i] = false"), 0);
  expect_bool_imm(stored("Q[i] = True"), 1);
  expect_bool_imm(stored("Q[i] = False"), 0);
  Expr e = stored("B[i] = select(false || I[i] > 0, A[i], 0.0)");
  expect_bool_imm(e.as<SelectNode>()->cond.as<BinaryNode>()->a, 0);
  // Not reserved: a name in scope wins over the literal.
  Module m = parse_module(
      "func f(true: i32, A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) { B[vi] = select(false, A[vi], A[vi] * f32(true)) }\n  }\n}\n",
      "t.tir");
  std::string t = print_module(m);
  // The parameter keeps its name (it is interface: `--input true=1`); the constant `false`
  // prints as `false` and a constant `true` in its scope would print as `bool(1)`.
  EXPECT_NE(t.find("func f(true: i32,"), std::string::npos) << t;
  EXPECT_NE(t.find("select(false, A[vi], A[vi] * f32(true))"), std::string::npos) << t;
  EXPECT_EQ(print_module(parse_module(t, "t2.tir")), t);
  m = parse_module(
      "func f(false: bool) -> (B: bool[4]) {\n  for i in serial(4) {\n"
      "    block b(vi: spatial(4) = i) { B[vi] = false || False }\n  }\n}\n",
      "t.tir");
  t = print_module(m);
  EXPECT_NE(t.find("B[vi] = false || bool(0)\n"), std::string::npos) << t;
  EXPECT_EQ(print_module(parse_module(t, "t2.tir")), t);
}

TEST(ParserLiterals, FalsePredicatePrintsAsFalse) {
  Module m = parse_body(
      "  for i in serial(4) {\n    block b(vi: spatial(4) = i) {\n      where false\n      Q[vi] = true\n    "
      "}\n  }");
  std::string t = print_module(m);
  EXPECT_NE(t.find("where false\n"), std::string::npos) << t;
  EXPECT_NE(t.find("Q[vi] = true\n"), std::string::npos) << t;
  EXPECT_EQ(print_module(parse_module(t, "t2.tir")), t);
}

TEST(ParserLiterals, Int64MinReadsBack) {
  Expr e = stored("K[i] = i64(-9223372036854775808)");
  ASSERT_EQ(e.kind(), ExprKind::IntImm);
  EXPECT_EQ(e.dtype(), DType::I64);
  EXPECT_EQ(e.as<IntImmNode>()->value, INT64_MIN);
  // Bare, typed by the store target / the other operand; through parentheses.
  e = stored("K[i] = -9223372036854775808");
  EXPECT_EQ(e.as<IntImmNode>()->value, INT64_MIN);
  e = stored("K[i] = L[i] + -(9223372036854775808)");
  EXPECT_EQ(e.as<BinaryNode>()->b.as<IntImmNode>()->value, INT64_MIN);
  EXPECT_EQ(e.as<BinaryNode>()->b.dtype(), DType::I64);
  e = stored("K[i] = i64(9223372036854775807)");
  EXPECT_EQ(e.as<IntImmNode>()->value, INT64_MAX);
  // In a float context it is a float literal.
  e = stored("E[i] = -9223372036854775808");
  ASSERT_EQ(e.kind(), ExprKind::FloatImm);
  EXPECT_EQ(e.as<FloatImmNode>()->value, -9223372036854775808.0);
}

TEST(ParserLiterals, Int64MinPrintsAndReadsBack) {
  Module m = parse_body(
      "  for i in serial(4) {\n    K[i] = max(L[i], min_value(i64)) + i64(-9223372036854775808)\n  }");
  std::string t1 = print_module(m);
  EXPECT_NE(t1.find("9223372036854775808"), std::string::npos) << t1;
  EXPECT_EQ(print_module(parse_module(t1, "t2.tir")), t1);
}

TEST(ParserLiterals, Int64LimitsErrors) {
  EXPECT_EQ(error_of("  for i in serial(4) {\n    K[i] = 9223372036854775808\n  }"),
            "t.tir:3:12: error: integer literal 9223372036854775808 is too large");
  EXPECT_EQ(error_of("  for i in serial(4) {\n    K[i] = -9223372036854775809\n  }"),
            "t.tir:3:13: error: integer literal -9223372036854775809 is too large");
  EXPECT_EQ(error_of("  for i in serial(4) {\n    J[i] = -9223372036854775808\n  }"),
            "t.tir:3:13: error: integer literal -9223372036854775808 does not fit in i32");
  EXPECT_EQ(error_of("  for i in serial(4) {\n    K[i] = -99999999999999999999\n  }"),
            "t.tir:3:13: error: integer literal -99999999999999999999 is too large");
}

TEST(ParserLiterals, Int64MinInParamRangesAndSchedules) {
  Module m = parse_module(
      "func f(n: i64 in [-9223372036854775808, 9223372036854775807]) -> (B: f32[4]) {\n"
      "  for i in serial(4) { B[i] = 0.0 }\n"
      "}\n"
      "schedule f {\n"
      "  x = prim(-9223372036854775808, 9223372036854775807)\n"
      "}\n",
      "t.tir");
  ASSERT_TRUE(m.funcs[0]->params[0].range.has_value());
  EXPECT_EQ(m.funcs[0]->params[0].range->lo, -9223372036854775808.0);
  ASSERT_EQ(m.schedules[0].instrs[0].args.size(), 2u);
  EXPECT_EQ(m.schedules[0].instrs[0].args[0].int_value, INT64_MIN);
  EXPECT_EQ(m.schedules[0].instrs[0].args[1].int_value, INT64_MAX);
}

// A bf16 literal is rounded once, from its decimal value: 1 + 2^-8 + 2^-30 lies above the
// midpoint of 1 and 1 + 2^-7, so it is 1 + 2^-7. Rounding through f32 first (the parser's old
// path) lands exactly on the midpoint and ties to even, 1.0.
TEST(ParserLiterals, Bf16LiteralRoundedOnce) {
  Module m = parse_module(
      "func f(A: bf16[2]) -> (B: bf16[2]) {\n  for i in serial(2) {\n    B[i] = A[i] * "
      "1.000000000931322574615478515625 + 1.003906250931322574615478515625\n  }\n}\n",
      "t.tir");
  auto* root = m.funcs[0]->body.as<BlockRealizeNode>();
  auto* st = root->block->body.as<ForNode>()->body.as<StoreNode>();
  ASSERT_NE(st, nullptr);
  auto* add = st->value.as<BinaryNode>();
  ASSERT_NE(add, nullptr);
  double c;
  ASSERT_TRUE(is_const_float(add->b, &c));
  EXPECT_EQ(c, 1.0078125);
}

}  // namespace
}  // namespace tirc

// Integer division and modulo by zero in compiled code (transforms/lower/bounds_checks.cpp,
// "divide" sites): the call stops with the interpreter's error instead of giving 0; a divisor
// proven non-zero (a constant, a loop range, a guard) carries no check.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/codegen/bounds_check_util.h"
#include "tests/codegen/compare.h"
#include "tests/shell.h"

#ifdef TIRC_WITH_LLVM
namespace tirc {
using namespace tirc::cgtest;

namespace {

size_t divide_sites(const FunctionNode& f) {
  std::vector<BoundsCheckSite> sites;
  insert_bounds_checks(f, &sites);
  size_t n = 0;
  for (auto& s : sites) {
    n += s.access == "divide";
  }
  return n;
}

// Every integer dtype and every division operator, divisor read from a buffer.
std::string div_func(const std::string& t, const std::string& op) {
  std::string e = op == "//" || op == "%" ? "A[vi] " + op + " D[vi]" : op + "(A[vi], D[vi])";
  return "func f(A: " + t + "[4], D: " + t + "[4]) -> (B: " + t +
         "[4]) {\n"
         "  for i in serial(4) {\n"
         "    block b(vi: spatial(4) = i) {\n"
         "      B[vi] = " +
         e +
         "\n"
         "    }\n"
         "  }\n"
         "}\n";
}

}  // namespace

TEST(DivByZero, EveryOperatorAndDtypeReportsLikeTheInterpreter) {
  const char* names[] = {"floordiv", "floormod", "truncdiv", "truncmod"};
  const char* ops[] = {"//", "%", "truncdiv", "truncmod"};
  // Each operator with a few dtypes (every integer dtype in all; a JIT compile each).
  const char* types[] = {"i8", "i64", "u32", "i16", "u8", "u16", "i32", "i64"};
  for (int c = 0; c < 8; ++c) {
    int k = c % 4;
    {
      const char* t = types[c];
      Function f = parse_func(div_func(t, ops[k]), "f");
      ASSERT_TRUE(f);
      DType dt = f->params[0].buffer->dtype;
      ArgMap in{{"A", values(dt, {4}, {7, 5, 3, 2})}, {"D", values(dt, {4}, {2, 3, 0, 1})}};
      std::string want =
          std::string("test.tir:4:7: error: block \"b\": integer division by zero: ") + names[k] + "(3, 0)";
      EXPECT_EQ(interp_error(*f, in), want) << t << " " << ops[k];
      auto prog = compile_jit(*f);
      std::string got_err;
      try {
        prog->run(in);
      } catch (const Error& e) {
        got_err = e.what();
      }
      EXPECT_EQ(got_err, want) << t << " " << ops[k];
      // Non-zero divisors (negative ones for signed types) agree with the interpreter.
      bool sgn = t[0] == 'i';
      in["A"] = values(dt, {4}, {sgn ? -7.0 : 7.0, 5, sgn ? -128.0 : 200.0, 0});
      in["D"] = values(dt, {4}, {2, sgn ? -3.0 : 3.0, sgn ? -1.0 : 1.0, 5});
      ArgMap ref = run_interp(*f, in);
      ArgMap got = prog->run(in);
      EXPECT_TRUE(arrays_close(got.at("B"), ref.at("B"), 0, 0)) << t << " " << ops[k];
    }
  }
}

TEST(DivByZero, ProvenDivisorsCarryNoCheck) {
  auto sites_of = [](const std::string& e) {
    Function g = parse_func(
        "func f(n: i32, A: i32[8], D: i32[8]) -> (B: i32[8]) {\n"
        "  for i in serial(8) {\n    block b(vi: spatial(8) = i) {\n      B[vi] = " +
            e + "\n    }\n  }\n}\n",
        "f");
    return g ? divide_sites(*g) : size_t(99);
  };
  EXPECT_EQ(sites_of("A[vi] // 3 + truncmod(A[vi], 0 - 2)"), 0u);
  EXPECT_EQ(sites_of("A[vi] % (vi + 1) + truncdiv(A[vi], 8 - vi)"), 0u);
  EXPECT_EQ(sites_of("A[vi] // n"), 1u);
  EXPECT_EQ(sites_of("A[vi] // 0"), 1u);
  EXPECT_EQ(sites_of("A[vi] // (vi - 3)"), 1u);
  EXPECT_EQ(sites_of("if_then_else(D[vi] > 0, A[vi] % D[vi], 0)"), 0u);
  Function f = parse_func(R"(func f(n: i32, A: i32[8], D: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      B[vi] = A[vi] // 3 + A[vi] % (vi + 1) + truncdiv(A[vi], 0 - 2) + A[vi] // n
        + if_then_else(D[vi] != 0, A[vi] % D[vi], 0)
    }
  }
  for i in serial(1, n) {
    block c(vi: spatial(8) = i % 8, vj: spatial(n) = i) {
      B[vi] = B[vi] + A[vi] // vj
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  // `A[vi] // n` (n may be 0) and the guard `D[vi] != 0` (the analysis proves a divisor
  // non-zero from a sign, not from `!=`) keep a check.
  EXPECT_EQ(divide_sites(*f), 2u);
  ArgMap in{{"n", scalar(DType::I32, 0)},
            {"A", values(DType::I32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
            {"D", values(DType::I32, {8}, {0, 1, 0, 2, 0, 3, 0, 4})}};
  EXPECT_EQ(jit_error(*f, in), interp_error(*f, in));
  EXPECT_NE(jit_error(*f, in).find("integer division by zero: floordiv(1, 0)"), std::string::npos);
  in["n"] = scalar(DType::I32, 3);
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(DivByZero, ChecksInLetsNestedDivisionsAndDeadResults) {
  // A division in a let, nested in another
  // division, and one whose value is multiplied by 0 (the interpreter still evaluates it).
  Function f = parse_func(R"(func f(n: i32, A: i32[8], D: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      let q = A[vi] // D[vi]
      B[vi] = (q // D[(vi + 1) % 8]) * 0 + (A[vi] % D[vi]) * 0
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  ArgMap in{{"n", scalar(DType::I32, 2)},
            {"A", values(DType::I32, {8}, {1, 2, 3, 4, 5, 6, 7, 8})},
            {"D", values(DType::I32, {8}, {1, 1, 1, 1, 1, 1, 1, 1})}};
  expect_jit_matches_interp(*f, 1, 0, 0, in);
  for (int z = 0; z < 8; ++z) {
    std::vector<double> d(8, 2.0);
    d[static_cast<size_t>(z)] = 0;
    in["D"] = values(DType::I32, {8}, d);
    std::string want = interp_error(*f, in);
    EXPECT_NE(want.find("integer division by zero"), std::string::npos) << z;
    EXPECT_EQ(jit_error(*f, in), want) << z;
  }
}

TEST(DivByZero, WhereBindingAndLoopBoundAreReportedAtTheBlock) {
  Function f = parse_func(R"(func f(n: i32, m: i32, A: i32[8]) -> (B: i32[8]) {
  for i in serial(8) {
    block b(vi: spatial(8) = i) {
      where i // n < 8
      B[vi] = A[vi]
    }
  }
  for i in serial(8) {
    block c(vi: spatial(8) = i % m) {
      B[vi] = B[vi] + 1
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  ArgMap in{
      {"n", scalar(DType::I32, 0)}, {"m", scalar(DType::I32, 8)}, {"A", values(DType::I32, {8}, {1, 2})}};
  EXPECT_EQ(interp_error(*f, in),
            "test.tir:3:5: error: block \"b\": integer division by zero: floordiv(0, 0)");
  EXPECT_EQ(jit_error(*f, in), interp_error(*f, in));
  in["n"] = scalar(DType::I32, 1);
  in["m"] = scalar(DType::I32, 0);
  EXPECT_EQ(interp_error(*f, in),
            "test.tir:9:5: error: block \"c\": integer division by zero: floormod(0, 0)");
  EXPECT_EQ(jit_error(*f, in), interp_error(*f, in));
  in["m"] = scalar(DType::I32, 8);
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(DivByZero, VectorizedAndParallelLoopsReport) {
  Function f = parse_func(R"(func f(A: i32[64], D: i32[64]) -> (B: i32[64]) {
  for i in parallel(8) {
    for j in vectorized(8) {
      block b(vi: spatial(64) = i * 8 + j) {
        B[vi] = A[vi] // D[vi] + A[vi] % D[vi]
      }
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  std::vector<double> a(64), d(64, 3.0);
  for (int i = 0; i < 64; ++i) a[static_cast<size_t>(i)] = i - 20;
  ArgMap in{{"A", values(DType::I32, {64}, a)}, {"D", values(DType::I32, {64}, d)}};
  expect_jit_matches_interp(*f, 1, 0, 0, in);
  d[45] = 0;
  in["D"] = values(DType::I32, {64}, d);
  EXPECT_EQ(jit_error(*f, in), "test.tir:5:9: error: block \"b\": integer division by zero: floordiv(25, 0)");
  // A call after a failure runs normally.
  d[45] = -4;
  in["D"] = values(DType::I32, {64}, d);
  expect_jit_matches_interp(*f, 1, 0, 0, in);
}

TEST(DivByZero, TircRunEngineJitExitsTwoWithTheInterpretersMessage) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tirc_div0_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "d.tir") << R"(func f(A: i32[4], D: i32[4] in [0, 0]) -> (B: i32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = truncmod(A[vi], D[vi])
    }
  }
}
)";
  std::string file = "'" + (dir / "d.tir").string() + "'";
  for (const char* engine : {"interp", "jit"}) {
    auto r = tirc::testing::sh(std::string("'") + TIRC_BINARY + "' run " + file + " --func f --engine " +
                               engine + " --random 1");
    EXPECT_EQ(r.code, 2) << engine << ": " << r.out;
    EXPECT_NE(r.out.find("d.tir:4:7: error: block \"b\": integer division by zero: truncmod("),
              std::string::npos)
        << engine << ": " << r.out;
  }
  fs::remove_all(dir);
}

}  // namespace tirc
#endif  // TIRC_WITH_LLVM

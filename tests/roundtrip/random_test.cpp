// Property test: random well-typed modules (random_program.h) survive print -> parse with
// structural equality, and printing the parsed module gives the same text (fixpoint).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "tests/roundtrip/random_program.h"
#include "tests/sanitized.h"

namespace tirc {
namespace {

// Sanitizer builds (the ASan + UBSan CI job) run each module about 15 times slower: they
// take a quarter of the seeds (the release build keeps them all).
#ifdef TIRC_TEST_SANITIZED
constexpr int kSeedDivisor = 4;
#else
constexpr int kSeedDivisor = 1;
#endif

// Runs seeds [first, first + count); reports the first few failures in full.
void run_seeds(uint64_t first, int count, const testing::RandomProgramOptions& opt) {
  int failures = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Module m = testing::random_module(seed, opt);
    std::string t1 = print_module(m);
    std::string why;
    try {
      Module m2 = parse_module(t1, "random_" + std::to_string(seed) + ".tir");
      if (auto d = structural_diff(m, m2)) why = "not structurally equal after print -> parse: " + *d;
      for (size_t i = 0; why.empty() && i < m.funcs.size(); ++i)
        if (structural_hash(*m.funcs[i]) != structural_hash(*m2.funcs[i]))
          why = "structural_hash differs for equal function " + m.funcs[i]->name;
        else if (std::string t2 = print_module(m2); t2 != t1)
          why = "printing is not a fixpoint; second print:\n" + t2;
    } catch (const Error& e) {
      why = std::string("printed text does not parse: ") + e.what();
    }
    if (!why.empty() && ++failures <= 3)
      ADD_FAILURE() << "seed " << seed << ": " << why << "\n--- printed ---\n" << t1;
  }
  EXPECT_EQ(failures, 0) << failures << " of " << count << " random modules failed the round trip";
}

TEST(RandomRoundTrip, Modules) {
  testing::RandomProgramOptions opt;
  opt.extreme_ints = false;  // INT64_MIN has its own test below
  run_seeds(1, 1200 / kSeedDivisor, opt);
}

TEST(RandomRoundTrip, ExtremeIntegers) {
  testing::RandomProgramOptions opt;
  opt.extreme_ints = true;
  run_seeds(100000, 200 / kSeedDivisor, opt);
}

// The generator must actually produce what the round trip is meant to cover.
TEST(RandomProgram, CoversEveryNodeKind) {
  struct Seen : IRVisitor {
    std::set<int> expr, stmt, binop, unop, intrin, loop, iter, lit_dtype;
    std::set<std::string> special;
    void visit(const Expr& e) override {
      if (!e.defined()) return;
      expr.insert(static_cast<int>(e.kind()));
      if (auto* b = e.as<BinaryNode>()) binop.insert(static_cast<int>(b->op));
      if (auto* u = e.as<UnaryNode>()) unop.insert(static_cast<int>(u->op));
      if (auto* c = e.as<CallNode>()) intrin.insert(static_cast<int>(c->op));
      if (e.kind() == ExprKind::IntImm || e.kind() == ExprKind::FloatImm)
        lit_dtype.insert(static_cast<int>(e.dtype()));
      if (auto* f = e.as<FloatImmNode>()) {
        double v = f->value;
        if (std::isnan(v)) special.insert("nan");
        if (std::isinf(v)) special.insert(v > 0 ? "inf" : "-inf");
        if (v == 0 && std::signbit(v)) special.insert("-0");
        if (e.dtype() == DType::F32 && v != 0 && std::fabs(v) < 1.1754943508222875e-38)
          special.insert("f32 denormal");
        if (e.dtype() == DType::F64 && v != 0 && std::fabs(v) < 2.2250738585072014e-308)
          special.insert("f64 denormal");
      }
      IRVisitor::visit(e);
    }
    void visit(const Stmt& s) override {
      if (!s.defined()) return;
      stmt.insert(static_cast<int>(s.kind()));
      if (auto* f = s.as<ForNode>()) loop.insert(static_cast<int>(f->for_kind));
      if (auto* r = s.as<BlockRealizeNode>())
        for (auto& iv : r->block->iter_vars) iter.insert(static_cast<int>(iv.kind));
      IRVisitor::visit(s);
    }
  } seen;
  int schedules = 0, intrins = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Module m = testing::random_module(seed);
    for (auto& f : m.funcs) seen.visit(f->body);
    for (auto& it : m.intrins) seen.visit(it.desc->body);
    schedules += static_cast<int>(m.schedules.size());
    intrins += static_cast<int>(m.intrins.size());
  }
  EXPECT_EQ(seen.expr.size(), 12u);  // every ExprKind
  EXPECT_EQ(seen.stmt.size(), 7u);   // every StmtKind
  EXPECT_EQ(seen.binop.size(), 16u);
  EXPECT_EQ(seen.unop.size(), 2u);
  EXPECT_EQ(seen.intrin.size(), 23u);
  EXPECT_EQ(seen.loop.size(), 5u);
  EXPECT_EQ(seen.iter.size(), 4u);
  EXPECT_EQ(seen.lit_dtype.size(), 12u);
  EXPECT_EQ(seen.special,
            (std::set<std::string>{"nan", "inf", "-inf", "-0", "f32 denormal", "f64 denormal"}));
  EXPECT_GT(schedules, 100);
  EXPECT_GT(intrins, 30);
}

TEST(RandomRoundTrip, Deterministic) {
  EXPECT_EQ(print_module(testing::random_module(42)), print_module(testing::random_module(42)));
  EXPECT_NE(print_module(testing::random_module(42)), print_module(testing::random_module(43)));
}

}  // namespace
}  // namespace tirc

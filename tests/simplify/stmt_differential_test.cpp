// Differential test of statement simplification: random loop nests with ifs, lets and
// stores are run by a tiny reference executor before and after simplify(Stmt); the
// written buffer contents must match. Loop ranges and if-conditions feed the analyzer, so
// this checks that scoped ranges/assumptions are used soundly.
#include <gtest/gtest.h>

#include <map>

#include "ir/visitor.h"
#include "tests/simplify/random_expr.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using testing::Env;
using testing::str;
using testing::Val;

struct Exec {
  std::map<int64_t, int64_t> out;
  bool err = false;
  int steps = 0;
  void run(const Stmt& s, Env& env) {
    if (err || !s.defined() || ++steps > 20000) return;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        Val mn = testing::eval(n->min, env), ext = testing::eval(n->extent, env);
        if (mn.err || ext.err) {
          err = true;
          return;
        }
        for (int64_t i = mn.i; i < mn.i + ext.i && !err; ++i) {
          Val v;
          v.i = i;
          env[n->loop_var.get()] = v;
          run(n->body, env);
        }
        return;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        Val idx = testing::eval(n->indices[0], env), v = testing::eval(n->value, env);
        if (idx.err || v.err) {
          err = true;
          return;
        }
        out[idx.i] = v.i;
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        Val c = testing::eval(n->cond, env);
        if (c.err) {
          err = true;
          return;
        }
        run(c.i ? n->then_case : n->else_case, env);
        return;
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        Val v = testing::eval(n->value, env);
        if (v.err) {
          err = true;
          return;
        }
        env[n->var.get()] = v;
        run(n->body, env);
        return;
      }
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) run(x, env);
        return;
      default: err = true; return;
    }
  }
};

struct StmtGen {
  testing::RandomExprGen& g;
  Buffer out{"O", DType::I32, {make_int(64)}};
  int counter = 0;

  Stmt gen(int depth) {
    int k = static_cast<int>(g.rnd(0, depth <= 0 ? 0 : 5));
    switch (k) {
      case 0:
        return make_store(out, {floormod(g.gen_int(DType::I32, 3), make_int(64))}, g.gen_int(DType::I32, 3));
      case 1:
      case 2: {
        Var v("i" + std::to_string(counter++));
        Expr mn = g.coin(70) ? make_int(g.rnd(-3, 3)) : g.gen_int(DType::I32, 1);
        Expr ext = make_int(g.rnd(0, 5));
        Stmt body;
        g.vars.push_back(v);  // usable below, not sampled into g.ranges
        body = gen(depth - 1);
        g.vars.pop_back();
        return make_for(v, mn, ext, ForKind::Serial, body);
      }
      case 3: return make_if(g.gen_bool(2), gen(depth - 1), g.coin(50) ? gen(depth - 1) : Stmt());
      case 4: {
        Var v("t" + std::to_string(counter++));
        Expr val = g.gen_int(DType::I32, 2);
        g.vars.push_back(v);
        Stmt body = gen(depth - 1);
        g.vars.pop_back();
        return make_let_stmt(v, val, body);
      }
      default: return make_seq({gen(depth - 1), gen(depth - 1)});
    }
  }
};

TEST(SimplifyStmtDifferential, RandomLoopNests) {
  testing::RandomExprGen g(77);
  g.allow_float = false;
  int changed = 0, compared = 0;
  for (int n = 0; n < 1500; ++n) {
    g.make_vars();
    StmtGen sg{g};
    Stmt s = sg.gen(4);
    Stmt t = simplify(s, g.ranges);
    if (!t.same_as(s)) ++changed;
    for (int k = 0; k < 6; ++k) {
      Env env = g.sample_env();
      Env env2 = env;
      Exec a, b;
      a.run(s, env);
      if (a.err || a.steps > 20000) continue;
      b.run(t, env2);
      ++compared;
      ASSERT_FALSE(b.err) << "simplified statement failed where the original did not";
      ASSERT_EQ(a.out, b.out) << "store contents differ (case " << n << ")";
    }
  }
  EXPECT_GT(changed, 500);
  EXPECT_GT(compared, 3000);
}

// Index-arithmetic mode with small values (no overflow possible) is also value-preserving.
TEST(SimplifyDifferential, AssumeNoOverflowSmallValues) {
  testing::RandomExprGen g(91);
  g.small_only = true;
  int changed = 0;
  for (int n = 0; n < 3000; ++n) {
    g.make_vars();
    Expr e = g.gen_int(DType::I32, 4);
    bool narrow = false;  // i8/u8/i16/u32 arithmetic wraps at small values: not index arithmetic
    for_each_expr(e, [&](const Expr& x) {
      DType t = x.dtype();
      narrow |= t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U32;
    });
    if (narrow) continue;
    Analyzer an(g.ranges);
    an.set_assume_no_overflow(true);
    Expr s = an.simplify(e);
    if (!expr_identical(s, e)) ++changed;
    for (int k = 0; k < 16; ++k) {
      Env env = g.sample_env();
      Env env2 = env;
      Val a = testing::eval(e, env);
      if (a.err) continue;
      Val b = testing::eval(s, env2);
      ASSERT_TRUE(a == b) << str(e) << " -> " << str(s);
    }
  }
  EXPECT_GT(changed, 500);
}

}  // namespace
}  // namespace tirc

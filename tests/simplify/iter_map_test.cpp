// Iterator-map detection: fuse, split, refusals, predicates, inverse.
#include "transforms/simplify/iter_map.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

#include "tests/simplify/test_util.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

using testing::str;

IterDom dom(const Var& v, int64_t extent, int64_t min = 0) { return {v, make_int(min), make_int(extent)}; }

// Checks that the structured form evaluates like the bindings on every loop point, and (when
// bijective) that the inverse gives the loop point back.
void check_semantics(const std::vector<Expr>& bindings, const std::vector<IterDom>& iters,
                     const IterMapResult& r, bool check_inverse) {
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<Var> outs;
  VarRanges out_ranges;
  std::vector<Expr> out_exprs;
  for (size_t k = 0; k < bindings.size(); ++k) {
    outs.emplace_back("y" + std::to_string(k));
    out_exprs.push_back(outs.back());
  }
  std::optional<std::vector<Expr>> inv;
  if (check_inverse) {
    inv = inverse_iter_map(r, iters, out_exprs);
    ASSERT_TRUE(inv.has_value());
  }
  std::vector<int64_t> ext, mins;
  int64_t total = 1;
  for (auto& d : iters) {
    int64_t e, m;
    ASSERT_TRUE(is_const_int(d.extent, &e) && is_const_int(d.min, &m));
    ext.push_back(e);
    mins.push_back(m);
    total *= e;
  }
  for (int64_t p = 0; p < total; ++p) {
    testing::Env env;
    int64_t rest = p;
    std::vector<int64_t> pt(iters.size());
    for (size_t k = iters.size(); k-- > 0;) {
      pt[k] = mins[k] + rest % ext[k];
      rest /= ext[k];
      testing::Val v;
      v.i = pt[k];
      env[iters[k].var.get()] = v;
    }
    testing::Env out_env;
    for (size_t k = 0; k < bindings.size(); ++k) {
      testing::Env e1 = env, e2 = env;
      auto want = testing::eval(bindings[k], e1);
      auto got = testing::eval(iter_sum_to_expr(r.indices[k]), e2);
      ASSERT_EQ(want.i, got.i) << "binding " << str(bindings[k]) << " vs "
                               << str(iter_sum_to_expr(r.indices[k]));
      out_env[outs[k].get()] = want;
    }
    if (check_inverse) {
      for (size_t k = 0; k < iters.size(); ++k) {
        testing::Env e = out_env;
        ASSERT_EQ(testing::eval((*inv)[k], e).i, pt[k])
            << "inverse of " << iters[k].var.name() << " = " << str((*inv)[k]);
      }
    }
  }
}

TEST(IterMap, IdentityAndShift) {
  Var i("i"), j("j");
  std::vector<IterDom> iters = {dom(i, 16), dom(j, 8, 2)};
  std::vector<Expr> b = {i, j - 2};
  auto r = detect_iter_map(b, iters);
  ASSERT_TRUE(r.ok()) << r.error;
  check_semantics(b, iters, r, true);
  auto inv = inverse_iter_map(r, iters, {Var("y0"), Var("y1")});
  ASSERT_TRUE(inv);
  EXPECT_EQ(str((*inv)[0]), "y0");
  EXPECT_EQ(str((*inv)[1]), "(y1 + 2)");
}

TEST(IterMap, Fuse) {
  Var i("i"), j("j");
  std::vector<IterDom> iters = {dom(i, 4), dom(j, 32)};
  std::vector<Expr> b = {i * 32 + j};
  auto r = detect_iter_map(b, iters);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.indices[0].args.size(), 1u);
  EXPECT_EQ(str(r.indices[0].args[0].extent), "128");
  check_semantics(b, iters, r, true);
  Var y("y");
  auto inv = inverse_iter_map(r, iters, {y}, {{y.get(), {0, 127}}});
  ASSERT_TRUE(inv);
  EXPECT_EQ(str((*inv)[0]), "(y // 32)");
  EXPECT_EQ(str((*inv)[1]), "(y % 32)");
}

TEST(IterMap, Split) {
  Var k("k");
  std::vector<IterDom> iters = {dom(k, 16)};
  std::vector<Expr> b = {floordiv(k, 4), floormod(k, 4)};
  auto r = detect_iter_map(b, iters);
  ASSERT_TRUE(r.ok()) << r.error;
  check_semantics(b, iters, r, true);
  auto inv = inverse_iter_map(r, iters, {Var("y0"), Var("y1")});
  ASSERT_TRUE(inv);
  EXPECT_EQ(str((*inv)[0]), "((y0 * 4) + y1)");
}

TEST(IterMap, FuseThenSplitAndReorder) {
  Var i("i"), j("j"), k("k");
  std::vector<IterDom> iters = {dom(i, 4), dom(j, 32), dom(k, 6)};
  Expr f = i * 32 + j;
  std::vector<Expr> b = {floordiv(f, 16), k, floormod(f, 16)};
  auto r = detect_iter_map(b, iters);
  ASSERT_TRUE(r.ok()) << r.error;
  check_semantics(b, iters, r, true);
  // Three-level split of one loop, outputs in swapped order.
  Var m("m");
  std::vector<IterDom> it2 = {dom(m, 64)};
  std::vector<Expr> b2 = {floormod(m, 4), floordiv(m, 16), floormod(floordiv(m, 4), 4)};
  auto r2 = detect_iter_map(b2, it2);
  ASSERT_TRUE(r2.ok()) << r2.error;
  check_semantics(b2, it2, r2, true);
  // Fusing three loops, one of extent 1.
  Var a("a"), u("u"), c("c");
  std::vector<IterDom> it3 = {dom(a, 3), dom(u, 1), dom(c, 5)};
  std::vector<Expr> b3 = {a * 5 + u * 5 + c};
  auto r3 = detect_iter_map(b3, it3);
  ASSERT_TRUE(r3.ok()) << r3.error;
  check_semantics(b3, it3, r3, true);
}

TEST(IterMap, Refusals) {
  Var i("i"), j("j"), k("k");
  std::vector<IterDom> iters = {dom(i, 4), dom(j, 4)};
  EXPECT_FALSE(detect_iter_map({i, i}, iters).ok());
  EXPECT_FALSE(detect_iter_map({i + j}, iters).ok());
  EXPECT_FALSE(detect_iter_map({i * 2 + j}, iters).ok());
  EXPECT_FALSE(detect_iter_map({i * j}, iters).ok());
  EXPECT_FALSE(detect_iter_map({min(i, j), j}, iters).ok());
  EXPECT_FALSE(detect_iter_map({i, j * -1 + 3}, iters).ok());
  std::vector<IterDom> it16 = {dom(k, 16)};
  EXPECT_FALSE(detect_iter_map({floormod(k, 4), floormod(k, 4)}, it16).ok());
  EXPECT_FALSE(detect_iter_map({floordiv(k, 3)}, it16).ok());
  // Not bijective but surjective: k // 4 alone drops the low bits; i alone leaves j unused.
  auto r = detect_iter_map({floordiv(k, 4)}, it16);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "iterator k is not fully covered");
  EXPECT_TRUE(detect_iter_map({floordiv(k, 4)}, it16, Expr(), IterMapLevel::Surjective).ok());
  auto r2 = detect_iter_map({i}, iters);
  EXPECT_EQ(r2.error, "loop iterator j is not used by the bindings");
  EXPECT_TRUE(detect_iter_map({i}, iters, Expr(), IterMapLevel::Surjective).ok());
  EXPECT_FALSE(detect_iter_map({i * 4 + j, i}, iters, Expr(), IterMapLevel::Surjective).ok());
}

TEST(IterMap, PredicateAndSymbolic) {
  Var i("i"), j("j"), n("n");
  std::vector<IterDom> iters = {dom(i, 4), dom(j, 32)};
  Expr f = i * 32 + j;
  auto r = detect_iter_map({f}, iters, make_binary(BinOp::LT, f, make_int(100)));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(str(r.indices[0].args[0].extent), "100");
  EXPECT_FALSE(detect_iter_map({f}, iters, make_binary(BinOp::LT, i * j, make_int(100))).ok());
  // Symbolic extent: a plain loop var.
  std::vector<IterDom> sym = {{i, make_int(0), n}};
  auto r2 = detect_iter_map({i}, sym);
  ASSERT_TRUE(r2.ok()) << r2.error;
  auto inv = inverse_iter_map(r2, sym, {Var("y")});
  ASSERT_TRUE(inv);
  EXPECT_EQ(str((*inv)[0]), "y");
}

// Random split/fuse structures: the form matches the bindings, the inverse inverts.
TEST(IterMap, RandomSplitFuseRoundTrip) {
  std::mt19937_64 rng(7);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int ok = 0;
  for (int n = 0; n < 200; ++n) {
    // Loops with extents from {1,2,3,4,6,8}; fuse all of them into one value, then split it
    // by a random mixed radix whose product is the total.
    int nl = rnd(1, 3);
    std::vector<IterDom> iters;
    Expr fused;
    int64_t total = 1;
    const int exts[] = {1, 2, 3, 4, 6, 8};
    for (int l = 0; l < nl; ++l) {
      Var v("l" + std::to_string(l));
      int e = exts[rnd(0, 5)];
      iters.push_back(dom(v, e));
      fused = fused.defined() ? fused * e + v : Expr(v);
      total *= e;
    }
    std::vector<int64_t> radix;
    int64_t rest = total;
    while (rest > 1) {
      std::vector<int64_t> divs;
      for (int64_t d = 2; d <= rest; ++d)
        if (rest % d == 0) divs.push_back(d);
      int64_t d = divs[static_cast<size_t>(rnd(0, static_cast<int>(divs.size()) - 1))];
      radix.push_back(d);
      rest /= d;
    }
    std::vector<Expr> b;
    int64_t lf = 1;
    for (auto d : radix) {
      Expr piece = lf == 1 ? fused : floordiv(fused, make_int(lf));
      if (lf * d != total) piece = floormod(piece, make_int(d));
      b.push_back(piece);
      lf *= d;
    }
    if (b.empty()) b.push_back(fused);
    std::shuffle(b.begin(), b.end(), rng);
    auto r = detect_iter_map(b, iters);
    if (!r.ok()) {
      ADD_FAILURE() << "refused: " << r.error << " for " << str(b[0]);
      continue;
    }
    ++ok;
    check_semantics(b, iters, r, true);
  }
  EXPECT_EQ(ok, 200);
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

// Random bindings (affine, split, fused, and garbage): whenever detection accepts, the claim
// is checked by brute force. Bijective: distinct loop points give distinct binding tuples
// and the tuples are exactly the product of the per-binding split ranges. Surjective: the
// set of tuples is the product of the per-binding value sets.
TEST(IterMap, RandomClaimsAreTrue) {
  std::mt19937_64 rng(99);
  auto rnd = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int accepted[2] = {0, 0}, refused = 0;
  for (int n = 0; n < 3000; ++n) {
    int nl = static_cast<int>(rnd(1, 3));
    std::vector<IterDom> iters;
    std::vector<Var> vars;
    for (int l = 0; l < nl; ++l) {
      vars.emplace_back("l" + std::to_string(l));
      iters.push_back(dom(vars.back(), rnd(1, 8)));
    }
    std::function<Expr(int)> gen = [&](int d) -> Expr {
      if (d <= 0 || rnd(0, 2) == 0) return vars[static_cast<size_t>(rnd(0, nl - 1))];
      switch (rnd(0, 5)) {
        case 0: return gen(d - 1) * static_cast<int>(rnd(1, 8)) + gen(d - 1);
        case 1: return floordiv(gen(d - 1), make_int(rnd(1, 8)));
        case 2: return floormod(gen(d - 1), make_int(rnd(1, 8)));
        case 3: return gen(d - 1) + static_cast<int>(rnd(0, 3));
        case 4: return gen(d - 1) * static_cast<int>(rnd(1, 4));
        default: return gen(d - 1);
      }
    };
    std::vector<Expr> b;
    int nb = static_cast<int>(rnd(1, 3));
    for (int k = 0; k < nb; ++k) b.push_back(gen(2));
    IterMapLevel level = rnd(0, 1) ? IterMapLevel::Bijective : IterMapLevel::Surjective;
    auto r = detect_iter_map(b, iters, Expr(), level);
    if (!r.ok()) {
      ++refused;
      continue;
    }
    ++accepted[level == IterMapLevel::Bijective];
    // Enumerate.
    int64_t total = 1;
    std::vector<int64_t> ext;
    for (auto& d : iters) {
      int64_t e;
      is_const_int(d.extent, &e);
      ext.push_back(e);
      total *= e;
    }
    std::set<std::vector<int64_t>> tuples;
    std::vector<std::set<int64_t>> per(b.size());
    for (int64_t p = 0; p < total; ++p) {
      testing::Env env;
      int64_t rest = p;
      for (size_t k = iters.size(); k-- > 0;) {
        env[vars[k].get()].i = rest % ext[k];
        rest /= ext[k];
      }
      std::vector<int64_t> tup;
      for (size_t k = 0; k < b.size(); ++k) {
        testing::Env e1 = env, e2 = env;
        int64_t v = testing::eval(b[k], e1).i;
        ASSERT_EQ(v, testing::eval(iter_sum_to_expr(r.indices[k]), e2).i) << str(b[k]);
        tup.push_back(v);
        per[k].insert(v);
      }
      tuples.insert(tup);
    }
    size_t product = 1;
    for (auto& s : per) product *= s.size();
    std::string desc;
    for (auto& x : b) desc += str(x) + "; ";
    ASSERT_EQ(tuples.size(), product) << "not surjective onto the product: " << desc;
    if (level == IterMapLevel::Bijective) {
      ASSERT_EQ(static_cast<int64_t>(tuples.size()), total) << "not injective: " << desc;
      check_semantics(b, iters, r, true);
    }
  }
  EXPECT_GT(accepted[0], 100);
  EXPECT_GT(accepted[1], 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace tirc

// Random expression generator for differential tests of the simplifier.
#pragma once

#include <random>
#include <vector>

#include "ir/expr.h"
#include "tests/simplify/test_util.h"
#include "transforms/simplify/bounds.h"
#include "transforms/simplify/const_fold.h"

namespace tirc::testing {

struct RandomExprGen {
  std::mt19937_64 rng;
  std::vector<Var> vars;  // all dtypes
  VarRanges ranges;
  Buffer ibuf{"I", DType::I32, {make_int(64)}}, fbuf{"F", DType::F32, {make_int(64)}};
  bool small_only = false;  // no extreme constants (for bound tests that assume no overflow)
  bool allow_float = true;

  explicit RandomExprGen(uint64_t seed) : rng(seed) {}

  int64_t rnd(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin(int pct) { return rnd(0, 99) < pct; }

  // Fresh variables of a few dtypes, each with a random range (or none).
  void make_vars() {
    vars.clear();
    ranges.clear();
    const DType types[] = {DType::I32, DType::I32, DType::I32, DType::I32, DType::I64,
                           DType::I8,  DType::U8,  DType::U32, DType::I16};
    const char* names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "k"};
    for (int i = 0; i < 9; ++i) {
      Var v(names[i], types[i]);
      vars.push_back(v);
      int mode = static_cast<int>(rnd(0, 9));
      if (small_only || mode < 7) {
        int64_t lo = rnd(-20, 20), w = rnd(0, 40);
        if (is_unsigned_int(types[i]) && lo < 0) lo = 0;
        if (types[i] == DType::I8 || types[i] == DType::U8) w = std::min<int64_t>(w, 20);
        ranges[v.get()] = {lo, lo + w};
      } else if (mode == 7) {
        ranges[v.get()] = {0, std::min<int64_t>(rnd(1, 100000), dtype_max_int(types[i]))};
      }
      // else: no range: the whole dtype
    }
    Var x("x", DType::F32), y("y", DType::F32), z("z", DType::F64), w("w", DType::F16);
    vars.push_back(x);
    vars.push_back(y);
    vars.push_back(z);
    vars.push_back(w);
  }

  Var pick_var(DType t) {
    std::vector<Var> c;
    for (auto& v : vars)
      if (v.dtype() == t) c.push_back(v);
    if (c.empty()) return Var();
    return c[static_cast<size_t>(rnd(0, static_cast<int64_t>(c.size()) - 1))];
  }

  Expr int_const(DType t) {
    int m = static_cast<int>(rnd(0, 9));
    int64_t v;
    if (!small_only && m == 0)
      v = coin(50) ? dtype_min_int(t) : dtype_max_int(t);
    else if (m <= 2)
      v = int64_t(1) << rnd(0, 5);
    else
      v = rnd(-10, 10);
    return make_imm_int(t, v);
  }

  Expr gen_int(DType t, int depth) {
    if (depth <= 0 || coin(20)) {
      Var v = pick_var(t);
      if (v.defined() && coin(65)) return v;
      return int_const(t);
    }
    int k = static_cast<int>(rnd(0, 21));
    auto sub = [&] { return gen_int(t, depth - 1); };
    switch (k) {
      case 0:
      case 1:
      case 2: return sub() + sub();
      case 3:
      case 4: return sub() - sub();
      case 5:
      case 6: return sub() * int_const(t);
      case 7: return sub() * sub();
      case 8:
      case 9: return floordiv(sub(), coin(80) ? make_imm_int(t, rnd(1, 9)) : sub());
      case 10:
      case 11: return floormod(sub(), coin(80) ? make_imm_int(t, rnd(1, 9)) : sub());
      case 12: return min(sub(), sub());
      case 13: return max(sub(), sub());
      case 14: return make_select(gen_bool(depth - 1), sub(), sub());
      case 15: return make_if_then_else(gen_bool(depth - 1), sub(), sub());
      case 16: return -sub();
      case 17: {
        DType from = coin(50) ? DType::I32 : (coin(50) ? DType::I8 : DType::U8);
        return make_cast(t, gen_int(from, depth - 1));
      }
      case 18: {
        Var lv("l", t);
        Expr val = sub();
        Expr body = gen_int(t, depth - 1);
        // Use the let var in the body.
        return make_let(lv, val, body + lv * int_const(t));
      }
      case 19:
        return make_call(coin(50) ? Intrinsic::TruncDiv : Intrinsic::TruncMod,
                         {sub(), coin(80) ? make_imm_int(t, rnd(1, 9)) : sub()});
      case 20: return make_call(coin(50) ? Intrinsic::Abs : Intrinsic::Sign, {sub()});
      default:
        if (t == DType::I32) return make_load(ibuf, {floormod(gen_int(DType::I32, depth - 1), make_int(64))});
        return sub() + sub();
    }
  }

  Expr gen_bool(int depth) {
    if (depth <= 0) return make_bool(coin(50));
    int k = static_cast<int>(rnd(0, 9));
    const BinOp cmps[] = {BinOp::EQ, BinOp::NE, BinOp::LT, BinOp::LE, BinOp::GT, BinOp::GE};
    BinOp cmp = cmps[rnd(0, 5)];
    switch (k) {
      case 0:
      case 1:
      case 2:
      case 3: {
        DType t = coin(70) ? DType::I32 : (coin(50) ? DType::U8 : DType::I64);
        return make_binary(cmp, gen_int(t, depth - 1), gen_int(t, depth - 1));
      }
      case 4: {
        if (!allow_float)
          return make_binary(cmp, gen_int(DType::I32, depth - 1), gen_int(DType::I32, depth - 1));
        return make_binary(cmp, gen_float(DType::F32, depth - 1), gen_float(DType::F32, depth - 1));
      }
      case 5: return make_binary(BinOp::And, gen_bool(depth - 1), gen_bool(depth - 1));
      case 6: return make_binary(BinOp::Or, gen_bool(depth - 1), gen_bool(depth - 1));
      case 7: return make_unary(UnOp::Not, gen_bool(depth - 1));
      case 8: return make_binary(coin(50) ? BinOp::EQ : BinOp::NE, gen_bool(depth - 1), gen_bool(depth - 1));
      default: return make_bool(coin(50));
    }
  }

  Expr float_const(DType t) {
    const double cs[] = {0.0,  -0.0,  1.0,      -1.0,      0.5, 2.0,     3.0, 0.1,
                         1e30, -7.25, INFINITY, -INFINITY, NAN, 65504.0, 1e-8};
    return make_imm_float(t, cs[rnd(0, 14)]);
  }

  Expr gen_float(DType t, int depth) {
    if (depth <= 0 || coin(20)) {
      Var v = pick_var(t);
      if (v.defined() && coin(60)) return v;
      return float_const(t);
    }
    auto sub = [&] { return gen_float(t, depth - 1); };
    switch (rnd(0, 13)) {
      case 0:
      case 1: return sub() + sub();
      case 2: return sub() - sub();
      case 3:
      case 4: return sub() * sub();
      case 5: return sub() / sub();
      case 6: return min(sub(), sub());
      case 7: return max(sub(), sub());
      case 8: return -sub();
      case 9: return make_select(gen_bool(depth - 1), sub(), sub());
      case 10: return make_cast(t, gen_int(DType::I32, depth - 1));
      case 11: {
        DType o = coin(50) ? DType::F32 : (coin(50) ? DType::F64 : DType::F16);
        return make_cast(t, gen_float(o, depth - 1));
      }
      case 12: {
        const Intrinsic fs[] = {Intrinsic::Abs,   Intrinsic::Floor, Intrinsic::Ceil,
                                Intrinsic::Trunc, Intrinsic::Sign,  Intrinsic::Exp};
        return make_call(fs[rnd(0, 5)], {sub()});
      }
      default:
        if (t == DType::F32) return make_load(fbuf, {floormod(gen_int(DType::I32, depth - 1), make_int(64))});
        return sub() + float_const(t);
    }
  }

  // A random value of v inside its range (or anywhere in the dtype, extremes favoured).
  Val sample(const Var& v) {
    Val r;
    DType t = v.dtype();
    if (is_float(t)) {
      r.is_f = true;
      const double cs[] = {0.0, -0.0, 1.0, -3.5, 1e30, NAN, INFINITY, 0.25, 100.0, -1e-3};
      r.f =
          coin(50) ? ref_round(cs[rnd(0, 9)], t) : ref_round(static_cast<double>(rnd(-1000, 1000)) / 8.0, t);
      return r;
    }
    auto it = ranges.find(v.get());
    if (it != ranges.end()) {
      r.i = rnd(it->second.lo, it->second.hi);
      return r;
    }
    int m = static_cast<int>(rnd(0, 5));
    if (m == 0)
      r.i = dtype_min_int(t);
    else if (m == 1)
      r.i = dtype_max_int(t);
    else if (m == 2)
      r.i = rnd(-5, 5);
    else
      r.i = rnd(dtype_min_int(t), dtype_max_int(t));
    r.i = ref_wrap(r.i, t);
    return r;
  }

  Env sample_env() {
    Env env;
    for (auto& v : vars) env[v.get()] = sample(v);
    return env;
  }
};

}  // namespace tirc::testing

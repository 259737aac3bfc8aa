// Test helpers for the simplifier: a debug printer, an independent reference evaluator
// (native C++ arithmetic per dtype, written without the simplifier's folding code) and a
// random expression generator.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"

namespace tirc::testing {

inline std::string str(const Expr& e);

inline std::string str(const Expr& e) {
  if (!e.defined()) return "<undef>";
  switch (e.kind()) {
    case ExprKind::IntImm: {
      auto v = e.as<IntImmNode>()->value;
      if (e.dtype() == DType::Bool) return v ? "true" : "false";
      std::string s = std::to_string(v);
      return e.dtype() == DType::I32 ? s : s + std::string(":") + std::string(dtype_name(e.dtype()));
    }
    case ExprKind::FloatImm: {
      char buf[64];
      snprintf(buf, sizeof buf, "%.17g", e.as<FloatImmNode>()->value);
      return std::string(buf) + ":" + std::string(dtype_name(e.dtype()));
    }
    case ExprKind::Var: return e.as<VarNode>()->name;
    case ExprKind::Load: {
      auto* n = e.as<LoadNode>();
      std::string s = n->buffer->name + "[";
      for (size_t i = 0; i < n->indices.size(); ++i) s += (i ? ", " : "") + str(n->indices[i]);
      return s + "]";
    }
    case ExprKind::Binary: {
      auto* n = e.as<BinaryNode>();
      if (n->op == BinOp::Min || n->op == BinOp::Max)
        return std::string(binop_symbol(n->op)) + "(" + str(n->a) + ", " + str(n->b) + ")";
      return "(" + str(n->a) + " " + binop_symbol(n->op) + " " + str(n->b) + ")";
    }
    case ExprKind::Unary: {
      auto* n = e.as<UnaryNode>();
      return std::string(unop_symbol(n->op)) + str(n->a);
    }
    case ExprKind::Cast: return std::string(dtype_name(e.dtype())) + "(" + str(e.as<CastNode>()->value) + ")";
    case ExprKind::Call: {
      auto* n = e.as<CallNode>();
      std::string s = std::string(intrinsic_name(n->op)) + "(";
      for (size_t i = 0; i < n->args.size(); ++i) s += (i ? ", " : "") + str(n->args[i]);
      return s + ")";
    }
    case ExprKind::Select:
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      return std::string(e.kind() == ExprKind::Select ? "select(" : "if_then_else(") + str(n->cond) + ", " +
             str(n->t) + ", " + str(n->f) + ")";
    }
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      return "(let " + n->var.name() + " = " + str(n->value) + " in " + str(n->body) + ")";
    }
    case ExprKind::BufferPtr: return e.as<BufferPtrNode>()->buffer->name + ".ptr";
  }
  return "?";
}

// ---------------------------------------------------------------- reference evaluator

struct Val {
  bool err = false;  // evaluation failed (division by zero)
  bool is_f = false;
  int64_t i = 0;
  double f = 0;
  bool operator==(const Val& o) const {
    if (err || o.err) return err == o.err;
    if (is_f != o.is_f) return false;
    if (!is_f) return i == o.i;
    if (std::isnan(f) && std::isnan(o.f)) return true;
    return std::memcmp(&f, &o.f, sizeof f) == 0;
  }
};

// Wrap by native conversions (modular since C++20).
inline int64_t ref_wrap(__int128 v, DType t) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::I16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    case DType::I64: return static_cast<int64_t>(static_cast<uint64_t>(v));
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    default: return static_cast<int64_t>(v);
  }
}

inline float to_bf16(float x) {
  if (std::isnan(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7FFF + lsb;
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// Rounds a value computed in float (or double for f64) to dtype t with native conversions.
inline double ref_round(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(v)));
    case DType::BF16: return to_bf16(static_cast<float>(v));
    default: return v;
  }
}

using Env = std::unordered_map<const VarNode*, Val>;

// Deterministic contents for loads: a function of buffer name and indices.
inline Val load_value(const LoadNode* n, const std::vector<int64_t>& idx) {
  uint64_t h = std::hash<std::string>()(n->buffer->name);
  for (auto i : idx) h = h * 1000003u + static_cast<uint64_t>(i);
  Val v;
  if (is_float(n->dtype)) {
    v.is_f = true;
    v.f = ref_round(static_cast<double>(static_cast<int64_t>(h % 2001) - 1000) / 64.0, n->dtype);
  } else {
    v.i = ref_wrap(static_cast<__int128>(h % 41) - 20, n->dtype);
  }
  return v;
}

inline Val eval(const Expr& e, Env& env) {
  Val r;
  DType t = e.dtype();
  auto ev = [&](const Expr& x) { return eval(x, env); };
  switch (e.kind()) {
    case ExprKind::IntImm: r.i = e.as<IntImmNode>()->value; return r;
    case ExprKind::FloatImm:
      r.is_f = true;
      r.f = e.as<FloatImmNode>()->value;
      return r;
    case ExprKind::Var: return env.at(static_cast<const VarNode*>(e.get()));
    case ExprKind::Load: {
      auto* n = e.as<LoadNode>();
      std::vector<int64_t> idx;
      for (auto& i : n->indices) {
        Val v = ev(i);
        if (v.err) return v;
        idx.push_back(v.i);
      }
      return load_value(n, idx);
    }
    case ExprKind::Binary: {
      auto* n = e.as<BinaryNode>();
      Val a = ev(n->a), b = ev(n->b);
      if (a.err || b.err) {
        r.err = true;
        return r;
      }
      DType ot = n->a.dtype();
      if (is_float(ot)) {
        double x = a.f, y = b.f;
        switch (n->op) {
          case BinOp::Add:
            r.f = ot == DType::F64 ? x + y : ref_round(static_cast<float>(x) + static_cast<float>(y), ot);
            break;
          case BinOp::Sub:
            r.f = ot == DType::F64 ? x - y : ref_round(static_cast<float>(x) - static_cast<float>(y), ot);
            break;
          case BinOp::Mul:
            r.f = ot == DType::F64 ? x * y : ref_round(static_cast<float>(x) * static_cast<float>(y), ot);
            break;
          case BinOp::Div:
            r.f = ot == DType::F64 ? x / y : ref_round(static_cast<float>(x) / static_cast<float>(y), ot);
            break;
          case BinOp::Min:
            r.f =
                std::isnan(x) || std::isnan(y) ? NAN : (x < y ? x : (y < x ? y : (std::signbit(x) ? x : y)));
            break;
          case BinOp::Max:
            r.f =
                std::isnan(x) || std::isnan(y) ? NAN : (x > y ? x : (y > x ? y : (std::signbit(x) ? y : x)));
            break;
          case BinOp::EQ: r.i = x == y; break;
          case BinOp::NE: r.i = x != y; break;
          case BinOp::LT: r.i = x < y; break;
          case BinOp::LE: r.i = x <= y; break;
          case BinOp::GT: r.i = x > y; break;
          case BinOp::GE: r.i = x >= y; break;
          default: r.err = true; break;
        }
        r.is_f = is_float(t);
        return r;
      }
      __int128 x = a.i, y = b.i;
      switch (n->op) {
        case BinOp::Add: r.i = ref_wrap(x + y, t); break;
        case BinOp::Sub: r.i = ref_wrap(x - y, t); break;
        case BinOp::Mul: r.i = ref_wrap(x * y, t); break;
        case BinOp::FloorDiv:
        case BinOp::FloorMod: {
          if (y == 0) {
            r.err = true;
            return r;
          }
          __int128 q = x / y, m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) {
            q -= 1;
            m += y;
          }
          r.i = ref_wrap(n->op == BinOp::FloorDiv ? q : m, t);
          break;
        }
        case BinOp::Min: r.i = x < y ? a.i : b.i; break;
        case BinOp::Max: r.i = x > y ? a.i : b.i; break;
        case BinOp::EQ: r.i = x == y; break;
        case BinOp::NE: r.i = x != y; break;
        case BinOp::LT: r.i = x < y; break;
        case BinOp::LE: r.i = x <= y; break;
        case BinOp::GT: r.i = x > y; break;
        case BinOp::GE: r.i = x >= y; break;
        case BinOp::And: r.i = x && y; break;
        case BinOp::Or: r.i = x || y; break;
        default: r.err = true; break;
      }
      return r;
    }
    case ExprKind::Unary: {
      auto* n = e.as<UnaryNode>();
      Val a = ev(n->a);
      if (a.err) return a;
      if (n->op == UnOp::Not) {
        r.i = !a.i;
        return r;
      }
      if (a.is_f) {
        r.is_f = true;
        r.f = -a.f;
        return r;
      }
      r.i = ref_wrap(-static_cast<__int128>(a.i), t);
      return r;
    }
    case ExprKind::Cast: {
      Val a = ev(e.as<CastNode>()->value);
      if (a.err) return a;
      if (is_float(t)) {
        r.is_f = true;
        if (a.is_f)
          r.f = t == DType::F64 ? a.f : (t == DType::F32 ? static_cast<float>(a.f) : ref_round(a.f, t));
        else
          r.f = t == DType::F64
                    ? static_cast<double>(a.i)
                    : (t == DType::F32 ? static_cast<float>(a.i) : ref_round(static_cast<float>(a.i), t));
        return r;
      }
      if (a.is_f) {
        if (t == DType::Bool) {
          r.i = a.f != 0;
          return r;
        }
        if (std::isnan(a.f) || std::fabs(a.f) > 9e18) {
          r.err = true;
          return r;
        }
        double tr = std::trunc(a.f);
        if (ref_wrap(static_cast<__int128>(tr), t) != static_cast<int64_t>(tr)) {
          r.err = true;
          return r;
        }  // out of range: UB
        r.i = static_cast<int64_t>(tr);
        return r;
      }
      r.i = ref_wrap(a.i, t);
      return r;
    }
    case ExprKind::Call: {
      auto* n = e.as<CallNode>();
      std::vector<Val> args;
      for (auto& x : n->args) {
        args.push_back(ev(x));
        if (args.back().err) return args.back();
      }
      if (is_float(t)) {
        r.is_f = true;
        double x = args[0].f;
        switch (n->op) {
          case Intrinsic::Abs: r.f = std::fabs(x); break;
          case Intrinsic::Floor: r.f = std::floor(x); break;
          case Intrinsic::Ceil: r.f = std::ceil(x); break;
          case Intrinsic::Trunc: r.f = std::trunc(x); break;
          case Intrinsic::Sign: r.f = x > 0 ? 1.0 : (x < 0 ? -1.0 : x); break;
          case Intrinsic::Exp: r.f = ref_round(std::exp(x), t); break;
          default: r.err = true; break;
        }
        return r;
      }
      __int128 x = args[0].i;
      switch (n->op) {
        case Intrinsic::Abs: r.i = ref_wrap(x < 0 ? -x : x, t); break;
        case Intrinsic::Sign: r.i = x > 0 ? 1 : (x < 0 ? -1 : 0); break;
        case Intrinsic::TruncDiv:
        case Intrinsic::TruncMod: {
          __int128 y = args[1].i;
          if (y == 0) {
            r.err = true;
            return r;
          }
          r.i = ref_wrap(n->op == Intrinsic::TruncDiv ? x / y : x % y, t);
          break;
        }
        default: r.err = true; break;
      }
      return r;
    }
    case ExprKind::Select: {
      auto* n = as_select_like(e);
      Val c = ev(n->cond), a = ev(n->t), b = ev(n->f);
      if (c.err || a.err || b.err) {
        r.err = true;
        return r;
      }
      return c.i ? a : b;
    }
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      Val c = ev(n->cond);
      if (c.err) return c;
      return c.i ? ev(n->t) : ev(n->f);
    }
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      Val v = ev(n->value);
      if (v.err) return v;
      env[n->var.get()] = v;
      return ev(n->body);
    }
    default: r.err = true; return r;
  }
}

}  // namespace tirc::testing

#include "transforms/simplify/const_fold.h"

#include <cfenv>
#include <cmath>
#include <limits>

namespace tirc {

int64_t wrap_int(uint64_t v, DType t) {
  if (t == DType::Bool) return v != 0;
  int bits = dtype_bits(t);
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t(1) << bits) - 1;
  v &= mask;
  if (is_signed_int(t) && (v >> (bits - 1)) & 1) v |= ~mask;
  return static_cast<int64_t>(v);
}

int64_t as_signed(int64_t v, DType t) {
  if (t == DType::Bool) return v;
  int bits = dtype_bits(t);
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if ((u >> (bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t dtype_min_int(DType t) {
  if (t == DType::Bool || is_unsigned_int(t)) return 0;
  int bits = dtype_bits(t);
  return bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
}
int64_t dtype_max_int(DType t) {
  if (t == DType::Bool) return 1;
  int bits = dtype_bits(t);
  if (is_unsigned_int(t)) return (int64_t(1) << bits) - 1;
  return bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
}

namespace {
// Rounds to a binary format with p significand bits (implicit bit included), minimum normal
// exponent emin and maximum exponent emax; ties to even; overflow to inf.
double round_format(double x, int p, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  int e;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1, so the leading bit has exponent e-1
  int lead = e - 1;
  if (lead < emin) lead = emin;
  double quantum = std::ldexp(1.0, lead - p + 1);
  double r = std::nearbyint(x / quantum) * quantum;  // exact scaling by a power of two
  double maxf = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  if (std::fabs(r) > maxf) return std::copysign(INFINITY, x);
  return r;
}
}  // namespace

double round_float(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return round_format(v, 11, -14, 15);
    case DType::BF16: return round_format(v, 8, -126, 127);
    default: return v;
  }
}

Expr make_imm_int(DType t, int64_t v) { return make_int(wrap_int(static_cast<uint64_t>(v), t), t); }
Expr make_imm_float(DType t, double v) { return make_float(round_float(v, t), t); }

namespace {

using i128 = __int128;

bool int_val(const Expr& e, int64_t* v) { return is_const_int(e, v); }
bool flt_val(const Expr& e, double* v) { return is_const_float(e, v); }

// floor division / modulo of canonical values in dtype t (b != 0).
int64_t floordiv_int(int64_t a, int64_t b, DType t) {
  i128 q = static_cast<i128>(a) / b;
  if ((static_cast<i128>(a) % b != 0) && ((a < 0) != (b < 0))) --q;
  return wrap_int(static_cast<uint64_t>(static_cast<unsigned __int128>(q)), t);
}
int64_t floormod_int(int64_t a, int64_t b, DType t) {
  i128 r = static_cast<i128>(a) % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return wrap_int(static_cast<uint64_t>(static_cast<unsigned __int128>(r)), t);
}

Expr fold_binary(const BinaryNode* n) {
  DType t = n->a.dtype();
  int64_t x, y;
  double u, v;
  if (int_val(n->a, &x) && int_val(n->b, &y)) {
    auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (n->op) {
      case BinOp::Add: return make_imm_int(t, static_cast<int64_t>(ux + uy));
      case BinOp::Sub: return make_imm_int(t, static_cast<int64_t>(ux - uy));
      case BinOp::Mul: return make_imm_int(t, static_cast<int64_t>(ux * uy));
      case BinOp::Div: return Expr();  // `/` on integers is a type error, not ours to fold
      case BinOp::FloorDiv: return y == 0 ? Expr() : make_imm_int(t, floordiv_int(x, y, t));
      case BinOp::FloorMod: return y == 0 ? Expr() : make_imm_int(t, floormod_int(x, y, t));
      case BinOp::Min: return make_imm_int(t, std::min(x, y));
      case BinOp::Max: return make_imm_int(t, std::max(x, y));
      case BinOp::EQ: return make_bool(x == y);
      case BinOp::NE: return make_bool(x != y);
      case BinOp::LT: return make_bool(x < y);
      case BinOp::LE: return make_bool(x <= y);
      case BinOp::GT: return make_bool(x > y);
      case BinOp::GE: return make_bool(x >= y);
      case BinOp::And: return make_bool(x && y);
      case BinOp::Or: return make_bool(x || y);
    }
    return Expr();
  }
  if (flt_val(n->a, &u) && flt_val(n->b, &v)) {
    switch (n->op) {
      case BinOp::Add: return make_imm_float(t, u + v);
      case BinOp::Sub: return make_imm_float(t, u - v);
      case BinOp::Mul: return make_imm_float(t, u * v);
      case BinOp::Div: return make_imm_float(t, u / v);
      case BinOp::Min:
      case BinOp::Max: {
        if (std::isnan(u) || std::isnan(v)) return Expr();
        if (u == v && std::signbit(u) != std::signbit(v)) return Expr();
        return make_float(n->op == BinOp::Min ? std::min(u, v) : std::max(u, v), t);
      }
      case BinOp::EQ: return make_bool(u == v);
      case BinOp::NE: return make_bool(u != v);
      case BinOp::LT: return make_bool(u < v);
      case BinOp::LE: return make_bool(u <= v);
      case BinOp::GT: return make_bool(u > v);
      case BinOp::GE: return make_bool(u >= v);
      default: return Expr();  // floor div/mod on floats: not a language operation
    }
  }
  return Expr();
}

Expr fold_cast(DType to, const Expr& value) {
  int64_t x;
  double d;
  if (int_val(value, &x)) {
    if (is_int(to) || is_bool(to)) return make_imm_int(to, x);
    if (is_float(to)) {
      if (to == DType::F32) return make_float(static_cast<double>(static_cast<float>(x)), to);
      if (to == DType::F64) return make_float(static_cast<double>(x), to);
      // f16/bf16: int64 -> double is exact below 2^53, so a single rounding follows.
      if (x > (int64_t(1) << 53) || x < -(int64_t(1) << 53)) return Expr();
      return make_imm_float(to, static_cast<double>(x));
    }
    return Expr();
  }
  if (flt_val(value, &d)) {
    if (is_float(to)) return make_imm_float(to, d);
    if (std::isnan(d)) return Expr();
    if (is_bool(to)) return make_bool(d != 0.0);
    if (is_int(to)) {
      double tr = std::trunc(d);
      if (!(tr >= static_cast<double>(dtype_min_int(to)) && tr <= static_cast<double>(dtype_max_int(to))))
        return Expr();
      if (to == DType::I64 && tr >= 9.2233720368547758e18) return Expr();
      return make_int(static_cast<int64_t>(tr), to);
    }
  }
  return Expr();
}

Expr fold_call(const CallNode* n) {
  DType t = n->dtype;
  for (auto& a : n->args)
    if (!a.as<IntImmNode>() && !a.as<FloatImmNode>()) return Expr();
  int64_t x, y;
  double u;
  if (is_int(t) && int_val(n->args[0], &x)) {
    auto ux = static_cast<uint64_t>(x);
    switch (n->op) {
      case Intrinsic::Abs: return make_imm_int(t, x < 0 ? static_cast<int64_t>(0 - ux) : x);
      case Intrinsic::Sign: return make_imm_int(t, x > 0 ? 1 : (x < 0 ? -1 : 0));
      case Intrinsic::TruncDiv:
      case Intrinsic::TruncMod: {
        if (!int_val(n->args[1], &y) || y == 0) return Expr();
        i128 q = static_cast<i128>(x) / y, r = static_cast<i128>(x) % y;
        i128 res = n->op == Intrinsic::TruncDiv ? q : r;
        return make_imm_int(t,
                            static_cast<int64_t>(static_cast<uint64_t>(static_cast<unsigned __int128>(res))));
      }
      default: return Expr();
    }
  }
  if (is_float(t) && flt_val(n->args[0], &u)) {
    switch (n->op) {
      case Intrinsic::Abs: return make_float(std::fabs(u), t);
      case Intrinsic::Floor: return make_float(std::floor(u), t);
      case Intrinsic::Ceil: return make_float(std::ceil(u), t);
      case Intrinsic::Trunc: return make_float(std::trunc(u), t);
      case Intrinsic::Sign:
        if (std::isnan(u) || u == 0.0) return Expr();
        return make_float(u > 0 ? 1.0 : -1.0, t);
      default: return Expr();
    }
  }
  return Expr();
}

}  // namespace

Expr fold_constant(const Expr& e) {
  if (!e.defined()) return Expr();
  switch (e.kind()) {
    case ExprKind::Binary: return fold_binary(e.as<BinaryNode>());
    case ExprKind::Unary: {
      auto* n = e.as<UnaryNode>();
      int64_t x;
      double d;
      if (n->op == UnOp::Not) return int_val(n->a, &x) ? make_bool(!x) : Expr();
      if (int_val(n->a, &x))
        return make_imm_int(e.dtype(), static_cast<int64_t>(0 - static_cast<uint64_t>(x)));
      if (flt_val(n->a, &d)) return make_float(-d, e.dtype());
      return Expr();
    }
    case ExprKind::Cast: {
      auto* n = e.as<CastNode>();
      if (n->value.dtype() == n->dtype && (n->value.as<IntImmNode>() || n->value.as<FloatImmNode>()))
        return n->value;
      return fold_cast(n->dtype, n->value);
    }
    case ExprKind::Call: return fold_call(e.as<CallNode>());
    case ExprKind::Select:
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      int64_t c;
      if (int_val(n->cond, &c)) return c ? n->t : n->f;
      return Expr();
    }
    default: return Expr();
  }
}

}  // namespace tirc

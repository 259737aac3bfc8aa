// Scalar semantics of the interpreter: one place that says what every operator and
// intrinsic computes for every dtype (C/NumPy semantics). Used by the compiled closures
// (interp/nodes.h) and by tests.
//
// Representation while computing ("compute type" C of a dtype):
//   bool, i8..i64, u8..u32 -> int64_t, always holding the value already wrapped to the dtype
//                             (two's complement wraparound, as C/NumPy);
//   f16, bf16, f32         -> float; f16/bf16 results are rounded to the dtype (nearest even)
//                             after every operation, so they hold exactly representable values;
//   f64                    -> double.
// f32 arithmetic is done in float, not double, so results match compiled code bit for bit
// for + - * / and sqrt.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ir/dtype.h"
#include "runtime/ndarray.h"

namespace tirc::interp {

// Double -> half / bf16 with a single correct rounding (going through float would round
// twice). Round-to-odd into float first, then round to nearest even: exact (Boldo-Melquiond).
inline float double_to_float_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 1u) == 0) f = std::nextafter(f, d > f ? INFINITY : -INFINITY);
  }
  return f;
}
inline float round_f16(float x) { return half_to_float(float_to_half(x)); }
inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }
inline float double_to_f16(double d) { return round_f16(double_to_float_odd(d)); }
inline float double_to_bf16(double d) { return round_bf16(double_to_float_odd(d)); }

// Wraps an integer held in int64 to dtype t (two's complement); bool becomes 0/1.
inline int64_t wrap_int(DType t, int64_t v) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::I16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

inline int64_t int_min_of(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::I8: return INT8_MIN;
    case DType::I16: return INT16_MIN;
    case DType::I32: return INT32_MIN;
    case DType::I64: return INT64_MIN;
    default: return 0;
  }
}
inline int64_t int_max_of(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::I8: return INT8_MAX;
    case DType::I16: return INT16_MAX;
    case DType::I32: return INT32_MAX;
    case DType::U8: return UINT8_MAX;
    case DType::U16: return UINT16_MAX;
    case DType::U32: return UINT32_MAX;
    default: return INT64_MAX;
  }
}

// Float -> integer cast: truncation toward zero; NaN gives 0; values outside the target
// range saturate to its min/max (as LLVM's fptosi.sat and Rust `as`; C leaves it undefined).
// Float -> bool is `x != 0` (NaN is true, as C).
inline int64_t float_to_int(DType t, double x) {
  if (t == DType::Bool) return x != 0;
  if (std::isnan(x)) return 0;
  double tr = std::trunc(x);
  int64_t lo = int_min_of(t), hi = int_max_of(t);
  if (tr <= static_cast<double>(lo)) return lo;
  // 2^63 is exactly representable; int64 max is not: compare with >=.
  if (t == DType::I64) {
    if (tr >= 9223372036854775808.0) return hi;
    return static_cast<int64_t>(tr);
  }
  if (tr >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(tr);
}

// Wrapping integer arithmetic on int64 (never signed-overflow UB); caller wraps to dtype.
inline int64_t add_wrap(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t sub_wrap(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t mul_wrap(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t neg_wrap(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

// Integer divisions; b != 0 is checked by the caller. INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == -1) return neg_wrap(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floormod_int(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t truncdiv_int(int64_t a, int64_t b) { return b == -1 ? neg_wrap(a) : a / b; }
inline int64_t truncmod_int(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

// NumPy's floor_divide / remainder on floats (npy_divmod).
template <typename F>
inline F floordiv_float(F a, F b) {
  F mod = std::fmod(a, b);
  if (b == 0) return a / b;
  F div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) div -= 1;
  }
  F fd;
  if (div != 0) {
    fd = std::floor(div);
    if (div - fd > F(0.5)) fd += 1;
  } else {
    fd = std::copysign(F(0), a / b);
  }
  return fd;
}
template <typename F>
inline F floormod_float(F a, F b) {
  if (b == 0) return std::fmod(a, b);
  F mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(F(0), b);
  }
  return mod;
}

// min/max follow NumPy's np.minimum/np.maximum (and torch.minimum/maximum): a NaN in either
// operand gives NaN; otherwise min(a, b) = a <= b ? a : b, so min(0.0, -0.0) is 0.0 and
// min(-0.0, 0.0) is -0.0 (the first operand wins ties).
template <typename F>
inline F min_float(F a, F b) {
  return (a <= b || std::isnan(a)) ? a : b;
}
template <typename F>
inline F max_float(F a, F b) {
  return (a >= b || std::isnan(a)) ? a : b;
}

// NumPy's sign: 1, -1, 0 for +-0, NaN for NaN.
template <typename F>
inline F sign_float(F x) {
  return x > 0 ? F(1) : (x < 0 ? F(-1) : (x == 0 ? F(0) : x));
}

// Integer power with wraparound by repeated squaring; the caller rejects negative exponents
// (NumPy: "Integers to negative integer powers are not allowed").
inline int64_t pow_int(int64_t a, int64_t e) {
  int64_t r = 1;
  while (e > 0) {
    if (e & 1) r = mul_wrap(r, a);
    a = mul_wrap(a, a);
    e >>= 1;
  }
  return r;
}

// Rounds half to even (np.round / torch.round): rint in the default rounding mode.
template <typename F>
inline F round_even(F x) {
  return std::nearbyint(x);
}

}  // namespace tirc::interp

#include "runtime/ndarray.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ir/error.h"

namespace tirc {

NDArray::NDArray(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  // Sizes come from user input (shapes of symbolic params, .npy headers): a negative,
  // overflowing or larger-than-memory size is an Error, never a crash or an OOM kill.
  uint64_t bytes = dtype_bytes(dtype_);
  for (auto d : shape_) {
    if (d < 0) throw Error("cannot allocate " + describe(*this) + ": negative extent");
    if (d != 0 && bytes > (uint64_t{1} << 62) / static_cast<uint64_t>(d))
      throw Error("cannot allocate " + describe(*this) + ": too large");
    bytes *= static_cast<uint64_t>(d);
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && bytes > static_cast<uint64_t>(pages) * static_cast<uint64_t>(page))
    throw Error("cannot allocate " + describe(*this) + ": " + std::to_string(bytes) +
                " bytes exceed the memory");
  size_t n = std::max<size_t>(bytes, 1);
  size_t padded = (n + 63) / 64 * 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, padded));
  if (!p) throw Error("cannot allocate " + describe(*this) + ": out of memory");
  std::memset(p, 0, padded);
  data_ = std::shared_ptr<uint8_t>(p, [](uint8_t* q) { std::free(q); });
}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

namespace {
template <typename I>
I wrap_int(double v) {
  if (std::isnan(v)) return 0;
  // Truncate toward zero, then wrap modulo 2^bits like a C conversion through int64.
  double t = std::trunc(v);
  if (t >= 9.2233720368547758e18 || t < -9.2233720368547758e18) return 0;
  return static_cast<I>(static_cast<int64_t>(t));
}
}  // namespace

double NDArray::get(int64_t i) const {
  const uint8_t* p = data_.get();
  switch (dtype_) {
    case DType::Bool: return p[i] ? 1.0 : 0.0;
    case DType::I8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::I16: return reinterpret_cast<const int16_t*>(p)[i];
    case DType::I32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::I64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::U8: return p[i];
    case DType::U16: return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::U32: return reinterpret_cast<const uint32_t*>(p)[i];
    case DType::F16: return half_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::BF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::F32: return reinterpret_cast<const float*>(p)[i];
    case DType::F64: return reinterpret_cast<const double*>(p)[i];
    case DType::Handle: return 0;
  }
  return 0;
}

void NDArray::set(int64_t i, double v) {
  uint8_t* p = data_.get();
  switch (dtype_) {
    case DType::Bool: p[i] = v != 0; break;
    case DType::I8: reinterpret_cast<int8_t*>(p)[i] = wrap_int<int8_t>(v); break;
    case DType::I16: reinterpret_cast<int16_t*>(p)[i] = wrap_int<int16_t>(v); break;
    case DType::I32: reinterpret_cast<int32_t*>(p)[i] = wrap_int<int32_t>(v); break;
    case DType::I64: reinterpret_cast<int64_t*>(p)[i] = wrap_int<int64_t>(v); break;
    case DType::U8: reinterpret_cast<uint8_t*>(p)[i] = wrap_int<uint8_t>(v); break;
    case DType::U16: reinterpret_cast<uint16_t*>(p)[i] = wrap_int<uint16_t>(v); break;
    case DType::U32: reinterpret_cast<uint32_t*>(p)[i] = wrap_int<uint32_t>(v); break;
    case DType::F16: reinterpret_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); break;
    case DType::BF16: reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::F32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::F64: reinterpret_cast<double*>(p)[i] = v; break;
    case DType::Handle: break;
  }
}

NDArray NDArray::copy() const {
  NDArray out(dtype_, shape_);
  if (data_) std::memcpy(out.data(), data(), nbytes());
  return out;
}

NDArray NDArray::astype(DType t) const {
  NDArray out(t, shape_);
  for (int64_t i = 0, n = numel(); i < n; ++i) out.set(i, get(i));
  return out;
}

std::string describe(const NDArray& a) {
  std::string s(dtype_name(a.dtype()));
  s += "[";
  for (size_t i = 0; i < a.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape()[i]);
  return s + "]";
}

// Conversions follow the IEEE 754 binary16 layout; rounding to nearest even on the
// dropped mantissa bits, overflow to inf, subnormals kept.
uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into exponent: correct
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_to_float(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace tirc

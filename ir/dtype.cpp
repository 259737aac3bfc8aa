#include "ir/dtype.h"

#include <array>

namespace tirc {

namespace {
constexpr std::array<std::string_view, 13> kNames = {"bool", "i8",  "i16",  "i32", "i64", "u8",    "u16",
                                                     "u32",  "f16", "bf16", "f32", "f64", "handle"};
}

std::string_view dtype_name(DType t) { return kNames[static_cast<size_t>(t)]; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (size_t i = 0; i + 1 < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<DType>(i);
  return std::nullopt;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::I8:
    case DType::U8: return 8;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16: return 16;
    case DType::I32:
    case DType::U32:
    case DType::F32: return 32;
    case DType::I64:
    case DType::F64:
    case DType::Handle: return 64;
  }
  return 0;
}

}  // namespace tirc

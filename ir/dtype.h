// Scalar data types of the .tir language (LANGUAGE.md, "Types").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tirc {

// Handle is internal: the type of `A.data` / `A.ptr(...)` arguments to call_extern.
enum class DType : uint8_t { Bool, I8, I16, I32, I64, U8, U16, U32, F16, BF16, F32, F64, Handle };

// Language spelling ("f32", "bool", ...). Handle prints as "handle".
std::string_view dtype_name(DType t);
// Inverse of dtype_name for the language's dtypes; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s);

inline bool is_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
inline bool is_signed_int(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
inline bool is_unsigned_int(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32; }
// Integer in the arithmetic sense (signed or unsigned, not bool).
inline bool is_int(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
inline bool is_bool(DType t) { return t == DType::Bool; }
// Storage size in bits (bool counts as 8: it is stored as one byte).
int dtype_bits(DType t);
inline int dtype_bytes(DType t) { return dtype_bits(t) / 8; }

}  // namespace tirc

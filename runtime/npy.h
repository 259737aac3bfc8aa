// NumPy .npy files <-> NDArray (format: numpy.lib.format, versions 1.0, 2.0 and 3.0).
//
// Dtypes: bool '|b1', i8..i64 '|i1' '<i2' '<i4' '<i8', u8..u32 '|u1' '<u2' '<u4',
// f16 '<f2', f32 '<f4', f64 '<f8'. bf16 is not a NumPy dtype: it is written as its raw bits
// with descr '<u2' (read it in NumPy with `np.load(p).view(ml_dtypes.bfloat16)` or
// `(np.load(p).astype(np.uint32) << 16).view(np.float32)`); read_npy(path, DType::BF16)
// accepts '<u2' (and '|V2', what ml_dtypes writes) as bf16 bits.
// C and Fortran order (`np.save(a.T)` writes the latter) and either byte order are read; the
// result is always a C-ordered array in host (little-endian) order. Structured or object
// dtypes and truncated files are errors. Writing uses version 1.0 (2.0 when the header needs
// it), C order, little-endian.
#pragma once

#include <optional>
#include <string>

#include "runtime/ndarray.h"

namespace tirc {

// Parses .npy bytes. `expect`: when given, the file's dtype must be it (bf16: see above),
// else Error "WHAT: expected dtype X, file has Y". `what` names the source in messages
// (a path or "parameter A (a.npy)").
NDArray parse_npy(const std::string& bytes, const std::string& what,
                  std::optional<DType> expect = std::nullopt);
// Reads a .npy file; Error naming the path if unreadable or malformed.
NDArray read_npy(const std::string& path, std::optional<DType> expect = std::nullopt);

std::string serialize_npy(const NDArray& a);
// Writes `a` to path; Error naming the path on failure.
void write_npy(const std::string& path, const NDArray& a);

// The .npy descr of a dtype ('<f4', ...); bf16 gives '<u2'.
std::string npy_descr(DType t);

}  // namespace tirc

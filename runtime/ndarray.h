// A dense, C-ordered, 64-byte-aligned tensor: the value passed between the interpreter,
// compiled code, .npy files and the CLI. A scalar parameter is a 0-d NDArray (shape {}).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tirc {

class NDArray {
 public:
  NDArray() = default;
  // Zero-filled array of the given dtype and shape.
  NDArray(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_bytes(dtype_); }
  bool defined() const { return data_ != nullptr; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T>
  T* ptr() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <typename T>
  const T* ptr() const {
    return reinterpret_cast<const T*>(data_.get());
  }

  // Element i (flat, C order) converted to/from double. f16/bf16 round to nearest even;
  // integers wrap as C casts do (values outside the int range are first truncated).
  double get(int64_t i) const;
  void set(int64_t i, double v);
  // Deep copy (the default copy constructor shares the storage).
  NDArray copy() const;
  // Converts every element to dtype t (through double).
  NDArray astype(DType t) const;

 private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<uint8_t> data_;
};

// "f32[2, 3]" for messages.
std::string describe(const NDArray& a);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);

}  // namespace tirc

// Executable form of a function for the interpreter: a tree of small closures (virtual
// `ev`/`run` methods) built once by interp/compile.cpp, with variables resolved to slots of
// a flat register array, buffers to slots of a buffer table, and shapes/strides folded to
// constants. Each expression node is typed by its compute type (int64_t, float, double;
// see interp/scalar.h), so no value is boxed and no name is looked up at run time.
// Internal to the interpreter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/scalar.h"
#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/source_loc.h"

namespace tirc::interp {

// One register: the current value of a loop var, iter var, let name.
union Val {
  int64_t i;
  float f;
  double d;
};
template <class C>
inline C& reg(Val& v);
template <>
inline int64_t& reg<int64_t>(Val& v) {
  return v.i;
}
template <>
inline float& reg<float>(Val& v) {
  return v.f;
}
template <>
inline double& reg<double>(Val& v) {
  return v.d;
}

// Writer tags. Every element of an output or alloc remembers which block instance wrote it
// last: 0 = never written (reading it is an error), else (block id + 1) in the high bits and
// the instance's spatial point (its spatial iter var values, mixed-radix) in the low
// kTagPointBits bits. A store or load by an instance of the same block at another spatial
// point is a conflict between spatial iterations (LANGUAGE.md: such a block is invalid).
// Blocks whose instances may legally depend on each other (scan or opaque iter vars) and
// blocks without spatial vars use point 0 for every instance, so they never conflict.
constexpr int kTagPointBits = 44;
constexpr uint64_t kTagPointMask = (uint64_t(1) << kTagPointBits) - 1;
inline bool same_block_other_point(uint64_t a, uint64_t b) {
  return a != b && ((a ^ b) >> kTagPointBits) == 0;
}

// Run-time state of one buffer slot.
struct BufState {
  uint8_t* data = nullptr;
  uint64_t* tag = nullptr;  // writer tag per element (see above); null when not tracked
};

struct Ctx {
  Val* regs = nullptr;
  BufState* bufs = nullptr;
  uint64_t* block_counts = nullptr;  // body executions per block id
  uint64_t* init_counts = nullptr;   // `init` executions per block id
  // Per site id (CompiledFunc::sites_ir): an `if` statement or `if_then_else` counts
  // [2 id] then-branch and [2 id + 1] else-branch executions; a loop counts [2 id] entries
  // and [2 id + 1] iterations (`tirc stats --dynamic` weighs branches and loops by them).
  uint64_t* site_counts = nullptr;
  uint64_t tag = uint64_t(1) << kTagPointBits;  // writer tag of the block instance being run
  const void* block = nullptr;                  // the BlockS being run (for messages)
};

// Static description of a buffer slot (for messages and allocation).
struct BufInfo {
  std::string name;
  const char* role = "input";  // "input", "output", "alloc"
  DType dtype = DType::F32;    // storage dtype (after f64 promotion)
  std::vector<int64_t> shape, strides;
  int64_t numel = 1;
  bool track_init = false;
  int param_index = -1;  // for inputs/outputs: index in params/outputs
  bool block_local = false;
  bool written = false;  // some store targets it (inputs that are written get copied)
};

// ---- dtype traits: storage type St, compute type C, load/store/rounding ----
template <DType D>
struct Tr;
#define TIRC_INT_TRAIT(DT, ST)                           \
  template <>                                            \
  struct Tr<DType::DT> {                                 \
    using St = ST;                                       \
    using C = int64_t;                                   \
    static C ld(St s) { return static_cast<C>(s); }      \
    static St st(C c) { return static_cast<St>(c); }     \
    static C fix(C c) { return wrap_int(DType::DT, c); } \
  };
TIRC_INT_TRAIT(I8, int8_t)
TIRC_INT_TRAIT(I16, int16_t)
TIRC_INT_TRAIT(I32, int32_t)
TIRC_INT_TRAIT(I64, int64_t)
TIRC_INT_TRAIT(U8, uint8_t)
TIRC_INT_TRAIT(U16, uint16_t)
TIRC_INT_TRAIT(U32, uint32_t)
#undef TIRC_INT_TRAIT
template <>
struct Tr<DType::Bool> {
  using St = uint8_t;
  using C = int64_t;
  static C ld(St s) { return s != 0; }
  static St st(C c) { return c != 0; }
  static C fix(C c) { return c != 0; }
};
template <>
struct Tr<DType::F16> {
  using St = uint16_t;
  using C = float;
  static C ld(St s) { return half_to_float(s); }
  static St st(C c) { return float_to_half(c); }
  static C fix(C c) { return round_f16(c); }
};
template <>
struct Tr<DType::BF16> {
  using St = uint16_t;
  using C = float;
  static C ld(St s) { return bf16_to_float(s); }
  static St st(C c) { return float_to_bf16(c); }
  static C fix(C c) { return round_bf16(c); }
};
template <>
struct Tr<DType::F32> {
  using St = float;
  using C = float;
  static C ld(St s) { return s; }
  static St st(C c) { return c; }
  static C fix(C c) { return c; }
};
template <>
struct Tr<DType::F64> {
  using St = double;
  using C = double;
  static C ld(St s) { return s; }
  static St st(C c) { return c; }
  static C fix(C c) { return c; }
};

// Where a run-time error is reported: the block being run and the position of the store
// (or, when unknown, of the block; of the function for statements outside every block).
// Errors at a known position are SourceErrors ("FILE:LINE:COL: error: block "B": ...").
struct Site {
  std::string block;
  SourceLoc loc;
};

// Throws SourceError at site->loc when known, else Error; the message is prefixed with
// `block "NAME": `.
[[noreturn, gnu::cold, gnu::noinline]] void site_error(const Site* site, const std::string& msg);

// ---- closures ----
template <class C>
struct E {
  virtual ~E() = default;
  virtual C ev(Ctx& c) const = 0;
};
template <class C>
using EP = std::unique_ptr<E<C>>;

struct S {
  virtual ~S() = default;
  virtual void run(Ctx& c) const = 0;
};
using SP = std::unique_ptr<S>;

// Entry point produced by the compiler.
struct CompiledFunc {
  SP root;
  // Heap-allocated so that closures may keep pointers to them.
  std::vector<std::unique_ptr<BufInfo>> bufs;
  std::vector<std::unique_ptr<std::string>> block_names;  // by block id
  std::vector<std::unique_ptr<Site>> sites;               // error sites (closures point here)
  std::vector<const void*> counted;  // IR node (IfThenElse stmt / expr, For) of each counted site id
  int nregs = 0;
};

}  // namespace tirc::interp

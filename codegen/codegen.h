// LLVM CPU backend: lowers functions (transforms/lower) and compiles them to LLVM IR,
// assembly or an object file, with a documented C ABI. Public header: no LLVM types.
//
// C ABI of a compiled function `func F(P1, ..., Pn) -> (O1, ..., Om)` (see docs/codegen.md):
//   int32_t F(P1', ..., Pn', O1', ..., Om');
// in parameter order, then outputs in order, where
//   * a buffer parameter of dtype T is `const CT* restrict` (outputs: `CT* restrict`):
//     a dense C-ordered array of the buffer's numel elements, buffers must not overlap;
//   * a scalar parameter is passed by value as CT, except f16/bf16 scalars which are passed
//     as `float` (rounded to the dtype on entry);
//   CT: bool -> uint8_t (0/1), i8..i64 -> int8_t..int64_t, u8..u32 -> uint8_t..uint32_t,
//       f16/bf16 -> uint16_t (IEEE binary16 / bfloat16 bits), f32 -> float, f64 -> double.
//   * the return value is 0, or 1 when a bounds check failed (CodegenOptions::bounds_checks):
//     the call stopped at an access outside its buffer, before making it. Then
//     `int64_t __tirc_bounds_error_F(int64_t* index, int64_t* extent)` returns the failed
//     site (and its index and extent; it clears the state; -1: none), and
//     `const char* const __tirc_bounds_sites_F[site]` says which access it is
//     ("FILE:LINE:COL: block \"b\": load A, dimension 0"). The state is one per function,
//     so concurrent calls of one function from several threads share it.
// The object also defines `void __tirc_packed_F(void** args)` (args[i]: pointer to the
// buffer data, or to the scalar value in the types above), used by the JIT.
// Parallel loops call tirc_parallel_for from runtime/tirc_runtime.h, large buffers use
// tirc_alloc/tirc_free: link runtime/tirc_runtime.c (and -lpthread -lm) with the object.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace tirc {

struct CodegenOptions {
  int opt_level = 3;       // 0..3: the LLVM pass pipeline O0..O3
  bool fast_math = false;  // allow reassociation/contraction of float arithmetic
  std::string triple;      // empty: the host's
  std::string cpu;         // empty: the host CPU (with its features); "generic" for portable code
  bool verify = true;      // run the LLVM verifier on the generated module
  // CPU: check every load/store index that lowering cannot prove inside its buffer
  // (transforms/lower insert_bounds_checks); a failed check stops the call (ABI above).
  // NVPTX code is never checked.
  bool bounds_checks = true;
};

enum class EmitKind { LLVM, Asm, Obj };

// Compiles the functions (already scheduled; they are lowered here) into one LLVM module
// and returns its textual IR, assembly or object file bytes.
// Throws Error for constructs the backend cannot compile (message names the construct).
std::string compile_to(const std::vector<Function>& funcs, EmitKind kind, const CodegenOptions& opts = {});

// A C header declaring the functions with the ABI above, guarded by `guard`.
std::string emit_c_header(const std::vector<Function>& funcs, const std::string& guard);

// The C declaration of one function: "int32_t F(const float* restrict A, ...)".
std::string c_declaration(const FunctionNode& f);

// NVPTX workspaces (docs/codegen.md, "NVPTX", "Workspaces"): the function-level buffers of f
// (already scheduled) whose size is symbolic and that stay at function level after lowering,
// in declaration order. The kernels of f take them as extra pointer parameters after f's
// outputs, in this order; the host allocates `numel` elements of `dtype` for each (numel: an
// expression of f's scalar parameters) in device memory. The PTX lists them too, one
// file-scope comment line each: `// tirc.workspace F INDEX NAME DTYPE NUMEL` (INDEX: the
// kernel parameter's position from 0). Empty for the CPU, where such buffers are heap
// allocations of the call.
struct GpuWorkspace {
  std::string name;
  DType dtype;
  Expr numel;
};
std::vector<GpuWorkspace> nvptx_workspaces(const FunctionNode& f);

// The host's CPU name and target triple (e.g. "znver4", "x86_64-pc-linux-gnu").
std::string host_cpu_name();
std::string host_triple();

}  // namespace tirc

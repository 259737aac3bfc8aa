// Helpers of the NVPTX tests that run kernels in the emulator (gpu_allreduce_test.cpp,
// default_gpu_schedule_test.cpp): the kernel text, the launch sizes a host would use, and a
// run of a function's kernels on given inputs.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "ir/visitor.h"
#include "tests/codegen/gpu_emu.h"
#include "transforms/schedule/verify.h"

namespace tirc::testing {

// f compiled for nvptx64 at -O0 (the labels of the emitted blocks are kept).
inline std::string nvptx(const Function& f, EmitKind kind) {
  CodegenOptions o;
  o.triple = "nvptx64-nvidia-cuda";
  o.opt_level = 0;
  return compile_to({f}, kind, o);
}

// The value of an integer expression of f's scalar parameters given by name in `scalars`
// (-1 when it uses anything else, e.g. a loop variable).
inline int64_t eval_scalar_expr(const Expr& e, const ArgMap& scalars) {
  int64_t c = 0;
  if (is_const_int(e, &c)) return c;
  try {
    return eval_shape(Buffer("extent", DType::I64, {e}), scalars)[0];
  } catch (const Error&) {
    return -1;
  }
}

// The largest extent bound to each blockIdx / threadIdx axis of f (1 for unbound axes;
// symbolic extents evaluated with `scalars`): a launch of every kernel of f with these
// sizes runs each bound loop in full, as the kernels guard their own extents.
inline void launch_sizes(const FunctionNode& f, int grid[3], int block[3], const ArgMap& scalars = {}) {
  for (int a = 0; a < 3; ++a) grid[a] = block[a] = 1;
  struct V : IRVisitor {
    int* g;
    int* b;
    const ArgMap* scalars;
    void visit_for(const ForNode* n) override {
      int64_t e = n->for_kind == ForKind::ThreadBinding ? eval_scalar_expr(n->extent, *scalars) : -1;
      if (e >= 0 && n->thread_tag.size() > 2) {
        int a = n->thread_tag.back() - 'x';
        if (n->thread_tag.rfind("blockIdx", 0) == 0) g[a] = std::max<int>(g[a], static_cast<int>(e));
        if (n->thread_tag.rfind("threadIdx", 0) == 0) b[a] = std::max<int>(b[a], static_cast<int>(e));
      }
      IRVisitor::visit_for(n);
    }
  } v;
  v.g = grid;
  v.b = block;
  v.scalars = &scalars;
  v.visit(f.body);
}

// Runs f's kernels (F itself, or F_kernel0, F_kernel1, ... in order: docs/codegen.md,
// "Several kernels") in the emulator on `in` (every param by name: buffers, and scalars as
// 0-d arrays of their dtype) and returns the outputs, as a host would: symbolic shapes,
// launch sizes and workspaces (nvptx_workspaces: allocated here, filled with 0xff bytes (NaN) so
// a read before a write shows) evaluated with the scalar arguments. *err is "" or why the run
// failed. f16/bf16 scalars are not supported (the kernel takes them as float).
inline ArgMap emulate(const Function& f, const ArgMap& in, std::string* err,
                      gpu_emu::Stats* stats = nullptr) {
  std::vector<void*> args;
  ArgMap got;
  for (auto& p : f->params) {
    if (!p.is_buffer() && (p.var.dtype() == DType::F16 || p.var.dtype() == DType::BF16)) {
      *err = "emulated kernels take no f16/bf16 scalars";
      return got;
    }
    args.push_back(const_cast<NDArray&>(in.at(p.name())).data());
  }
  for (auto& out : f->outputs) {
    got[out->name] = NDArray(out->dtype, eval_shape(out, in));
    args.push_back(got[out->name].data());
  }
  std::vector<NDArray> work;
  for (auto& w : nvptx_workspaces(*f)) {
    int64_t n = eval_scalar_expr(w.numel, in);
    work.emplace_back(w.dtype, std::vector<int64_t>{std::max<int64_t>(n, 1)});
    std::memset(work.back().data(), 0xff,
                static_cast<size_t>(std::max<int64_t>(n, 1) * std::max(1, dtype_bytes(w.dtype))));
  }
  for (auto& w : work) args.push_back(w.data());
  int grid[3], block[3];
  launch_sizes(*f, grid, block, in);
  std::string ir = nvptx(f, EmitKind::LLVM);
  std::vector<std::string> kernels;
  auto kernel = [&](int k) { return f->name + "_kernel" + std::to_string(k); };
  if (ir.find("@" + kernel(0) + "(") == std::string::npos)
    kernels.push_back(f->name);
  else
    for (int k = 0; ir.find("@" + kernel(k) + "(") != std::string::npos; ++k) kernels.push_back(kernel(k));
  // Each kernel's own block size, as the codegen records it (`.reqntid`, nvvm.annotations
  // "reqntidx/y/z"); the function-wide one where it is not recorded (symbolic extents).
  std::vector<std::array<int, 3>> blocks;
  for (auto& k : kernels) {
    std::array<int, 3> b = {block[0], block[1], block[2]};
    for (int a = 0; a < 3; ++a) {
      std::string key =
          "!{ptr @" + k + ", !\"reqntid" + std::string(1, static_cast<char>('x' + a)) + "\", i32 ";
      size_t p = ir.find(key);
      if (p != std::string::npos) b[a] = std::atoi(ir.c_str() + p + key.size());
    }
    blocks.push_back(b);
  }
  *err = gpu_emu::run_kernels(ir, kernels, grid, block, args, stats, &blocks);
  return got;
}

// Runs g's kernels in the emulator on the random inputs of `seed` for ref (the unscheduled
// function) and compares with ref in the interpreter: "" when every output matches, else what
// differs (or why the run failed).
inline std::string emulated_mismatch(const Function& ref, const Function& g, uint64_t seed) {
  CompareOptions o;
  o.seed = seed;
  ArgMap in = verify_inputs(*ref, o);
  ArgMap want = run_interp(*ref, in);
  std::string err;
  ArgMap got = emulate(g, in, &err);
  if (!err.empty()) return err;
  for (auto& [name, arr] : want) {
    CompareResult r = compare_arrays(name, arr, got.at(name), o);
    if (!r.ok) return name + " on the emulated GPU: " + r.detail;
  }
  return "";
}

}  // namespace tirc::testing

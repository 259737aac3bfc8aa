// Helpers of the NVPTX tests that run kernels in the emulator (gpu_allreduce_test.cpp,
// default_gpu_schedule_test.cpp): the kernel text, the launch sizes a host would use, and a
// run of a function's kernels on given inputs.
#pragma once

#include <algorithm>
#include <string>

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "ir/visitor.h"
#include "tests/codegen/gpu_emu.h"

namespace tirc::testing {

// f compiled for nvptx64 at -O0 (the labels of the emitted blocks are kept).
inline std::string nvptx(const Function& f, EmitKind kind) {
  CodegenOptions o;
  o.triple = "nvptx64-nvidia-cuda";
  o.opt_level = 0;
  return compile_to({f}, kind, o);
}

// The largest constant extent bound to each blockIdx / threadIdx axis of f (1 for unbound
// axes): a launch of every kernel of f with these sizes runs each bound loop in full, as the
// kernels guard their own extents.
inline void launch_sizes(const FunctionNode& f, int grid[3], int block[3]) {
  for (int a = 0; a < 3; ++a) grid[a] = block[a] = 1;
  struct V : IRVisitor {
    int* g;
    int* b;
    void visit_for(const ForNode* n) override {
      int64_t e = 0;
      if (n->for_kind == ForKind::ThreadBinding && is_const_int(n->extent, &e) && n->thread_tag.size() > 2) {
        int a = n->thread_tag.back() - 'x';
        if (n->thread_tag.rfind("blockIdx", 0) == 0) g[a] = std::max<int>(g[a], static_cast<int>(e));
        if (n->thread_tag.rfind("threadIdx", 0) == 0) b[a] = std::max<int>(b[a], static_cast<int>(e));
      }
      IRVisitor::visit_for(n);
    }
  } v;
  v.g = grid;
  v.b = block;
  v.visit(f.body);
}

// Runs f's kernels (F itself, or F_kernel0, F_kernel1, ... in order: docs/codegen.md,
// "Several kernels") in the emulator on `in` (every buffer param by name) and returns the
// outputs. *err is "" or why the run failed (buffers only, constant output shapes).
inline ArgMap emulate(const Function& f, const ArgMap& in, std::string* err,
                      gpu_emu::Stats* stats = nullptr) {
  std::vector<void*> args;
  ArgMap got;
  for (auto& p : f->params) {
    if (!p.is_buffer()) {
      *err = "emulated kernels take buffers only";
      return got;
    }
    args.push_back(const_cast<NDArray&>(in.at(p.name())).data());
  }
  for (auto& out : f->outputs) {
    std::vector<int64_t> shape;
    for (auto& d : out->shape) {
      int64_t e = 0;
      if (!is_const_int(d, &e)) {
        *err = "output " + out->name + " has a symbolic shape";
        return got;
      }
      shape.push_back(e);
    }
    got[out->name] = NDArray(out->dtype, shape);
    args.push_back(got[out->name].data());
  }
  int grid[3], block[3];
  launch_sizes(*f, grid, block);
  std::string ir = nvptx(f, EmitKind::LLVM);
  std::vector<std::string> kernels;
  auto kernel = [&](int k) { return f->name + "_kernel" + std::to_string(k); };
  if (ir.find("@" + kernel(0) + "(") == std::string::npos)
    kernels.push_back(f->name);
  else
    for (int k = 0; ir.find("@" + kernel(k) + "(") != std::string::npos; ++k) kernels.push_back(kernel(k));
  *err = gpu_emu::run_kernels(ir, kernels, grid, block, args, stats);
  return got;
}

}  // namespace tirc::testing

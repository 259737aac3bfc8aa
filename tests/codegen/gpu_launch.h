// Helpers of the NVPTX tests that run kernels in the emulator (gpu_allreduce_test.cpp,
// default_gpu_schedule_test.cpp): the kernel text and the launch sizes a host would use.
#pragma once

#include <algorithm>
#include <string>

#include "codegen/codegen.h"
#include "ir/visitor.h"

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

}  // namespace tirc::testing

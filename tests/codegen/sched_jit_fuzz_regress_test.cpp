// Regression tests for what the scheduled-program fuzz (sched_jit_fuzz_test.cpp) found: each is
// a minimised (function, schedule) pair, checked through the JIT and, where it was a GPU
// finding, through ptxas and the NVPTX emulator (tests/codegen/gpu_emu.h).
#include <gtest/gtest.h>

#include <string>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "parser/parser.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

// f of `text` and its scheduled version (the file's schedule items applied).
std::pair<Function, Function> load(const std::string& text, const std::string& name) {
  Module m = parse_module(text, "regress.tir");
  Function f = m.find_func(name);
  Function g = f;
  for (auto& item : m.schedules)
    if (item.func == name) g = apply_schedule(*g, item, m.intrins);
  return {f, g};
}

// The emulated GPU run of g (default GPU schedule when unbound) against the interpreter of f.
void expect_gpu_matches(const Function& f, const Function& g, uint64_t seed) {
  Function gg = has_gpu_thread_binding(*g) ? g : default_gpu_schedule(*g);
  std::string log;
  int rc = testing::run_ptxas(testing::nvptx(gg, EmitKind::Asm), &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << log;
  }
  CompareOptions o;
  o.seed = seed;
  ArgMap in = verify_inputs(*f, o);
  ArgMap want = run_interp(*f, in);
  std::string err;
  ArgMap got = testing::emulate(gg, in, &err);
  ASSERT_EQ(err, "");
  for (auto& [name, arr] : want) {
    CompareResult r = compare_arrays(name, arr, got.at(name), o);
    EXPECT_TRUE(r.ok) << r.detail;
  }
}

// libdevice's log1pf rounds toward zero (`llvm.nvvm.add.rz.f`), which the emulator did not map
// ("emulator: unsupported intrinsic llvm.nvvm.add.rz.f"; examples/ops/log_sigmoid.tir and
// mish.tir under any schedule). Now emulated with the host's directed rounding.
TEST(SchedJitFuzzRegress, EmulatorRunsLibdeviceDirectedRounding) {
  auto [f, g] = load(R"(
func log_sigmoid(X: f32[12] in [-6.0, 6.0]) -> (Y: f32[12]) {
  for i in serial(12) {
    block logsig(vi: spatial(12) = i) {
      Y[vi] = min(X[vi], 0.0) - log1p(exp(-abs(X[vi])))
    }
  }
}
)",
                     "log_sigmoid");
  expect_gpu_matches(f, g, 3);
  auto [f2, g2] = load(R"(
func f64_log1p(X: f64[12] in [-0.9, 6.0]) -> (Y: f64[12]) {
  for i in serial(12) {
    block b(vi: spatial(12) = i) {
      Y[vi] = log1p(X[vi]) + expm1(X[vi]) + tanh(X[vi]) + erf(X[vi])
    }
  }
}
)",
                       "f64_log1p");
  expect_gpu_matches(f2, g2, 4);
}

TEST(SchedJitFuzzRegress, GruCacheReadSplitEmulates) {
  auto [f, g] =
      load(R"(# GRU over 5 steps (hidden 4, input 3), h_{-1} = 0, gates in PyTorch's order (reset, update,
# new), as torch.nn.GRUCell:
#   r = sigmoid(Wi_r x + Bi_r + Wh_r h + Bh_r),  z = sigmoid(Wi_z x + Bi_z + Wh_z h + Bh_z)
#   n = tanh(Wi_n x + Bi_n + r * (Wh_n h + Bh_n)),  h' = (1 - z) * n + z * h
func gru(X: f32[5, 3], Wi: f32[12, 3], Wh: f32[12, 4], Bi: f32[12], Bh: f32[12]) -> (H: f32[5, 4]) {
  alloc GI: f32[5, 12]
  alloc GH: f32[5, 12]
  for t in serial(5) {
    for g, k in grid(12, 3) {
      block gi(vt: scan(5) = t, vg: spatial(12) = g, vk: reduce(3) = k) {
        init {
          GI[vt, vg] = Bi[vg]
        }
        GI[vt, vg] = GI[vt, vg] + Wi[vg, vk] * X[vt, vk]
      }
    }
    for g, k in grid(12, 4) {
      block gh(vt: scan(5) = t, vg: spatial(12) = g, vk: reduce(4) = k) {
        init {
          GH[vt, vg] = Bh[vg]
        }
        GH[vt, vg] = GH[vt, vg] + if_then_else(vt > 0, Wh[vg, vk] * H[vt - 1, vk], 0.0)
      }
    }
    for j in serial(4) {
      block h(vt: scan(5) = t, vj: spatial(4) = j) {
        let r = sigmoid(GI[vt, vj] + GH[vt, vj])
        let z = sigmoid(GI[vt, vj + 4] + GH[vt, vj + 4])
        let n = tanh(GI[vt, vj + 8] + r * GH[vt, vj + 8])
        H[vt, vj] = (1.0 - z) * n + z * if_then_else(vt > 0, H[vt - 1, vj], 0.0)
      }
    }
  }
}
schedule gru {
  b = get_block("gi")
  c0 = cache_read(b, 0, "global")
  (ax0,) = get_loops(c0)
  s0, s1 = split(ax0, [3, 8])
}
)",
           "gru");
  expect_gpu_matches(f, g, 5);
}

// Each kernel of a multi-kernel function is launched with the sizes of its own bound loops
// (docs/codegen.md, "Several kernels"): here the default GPU schedule gives the padding kernel
// 98 threads and the conv kernel 3, whose per-thread shared copy of W is followed by a barrier
// inside its threadIdx loop. The emulator launched every kernel with the function's largest
// sizes (98), so 95 threads skipped the loop and the barrier waited forever ("bar.sync: not
// every thread of the block arrived"). The kernels now carry their block size (`.reqntid`,
// which also makes a driver refuse a wrong launch) and the emulator uses it.
TEST(SchedJitFuzzRegress, EachKernelRunsWithItsOwnBlockSize) {
  auto [f, g] = load(R"(# NCHW conv2d, 3x3, stride 1, padding 1, with an explicit padded copy.
func conv2d(X: f32[1, 2, 5, 5], W: f32[3, 2, 3, 3]) -> (Y: f32[1, 3, 5, 5]) {
  alloc P: f32[1, 2, 7, 7]
  for n, c, h, w in grid(1, 2, 7, 7) {
    block pad(vn: spatial(1) = n, vc: spatial(2) = c, vh: spatial(7) = h, vw: spatial(7) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 6 && vw >= 1 && vw < 6,
                                       X[vn, vc, vh - 1, vw - 1], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(1, 3, 5, 5, 2, 3, 3) {
    block conv(vn: spatial(1) = n, vf: spatial(3) = f, vy: spatial(5) = y, vx: spatial(5) = x,
               vc: reduce(2) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] += P[vn, vc, vy + vr, vx + vs] * W[vf, vc, vr, vs]
    }
  }
}

schedule conv2d {
  b = get_block("conv")
  c0 = cache_read(b, 1, "shared")
  ax0, ax1, ax2, ax3 = get_loops(c0)
  reverse_compute_at(b, ax0)
}
)",
                     "conv2d");
  Function gg = default_gpu_schedule(*g);
  std::string ptx = testing::nvptx(gg, EmitKind::Asm);
  EXPECT_NE(ptx.find(".reqntid 98, 1, 1"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".reqntid 3, 1, 1"), std::string::npos) << ptx;
  expect_gpu_matches(f, g, 6);
}

// A loop bound to blockIdx.x inside a loop bound to blockIdx.x: each thread block runs one
// index of the axis, so the inner loop ran only the outer loop's index. The default GPU
// schedule made one (schedule JIT fuzz seed 1000, conv2d_dilated's gradient: the fused
// X_reindex nest bound to blockIdx.x [2 blocks], then wrapped whole in its one-thread
// fallback's unit loops bound to blockIdx.x / threadIdx.x; the emulated W_grad read the
// unwritten half of X_reindex: 0 instead of 0.373). NVPTX code generation refuses such a
// nest; the default GPU schedule's side is transforms/schedule's.
TEST(SchedJitFuzzRegress, LoopBoundToABlockAxisInsideTheSameAxisIsRefused) {
  Module m = parse_module(R"(
func f(X: f32[8]) -> (Y: f32[8]) {
  for u in thread_binding(1, "blockIdx.x") {
    for t in thread_binding(1, "threadIdx.x") {
      for b in thread_binding(2, "blockIdx.x") {
        for x in serial(4) {
          block c(v: spatial(8) = b * 4 + x) {
            Y[v] = X[v] * 2.0
          }
        }
      }
    }
  }
}
)",
                          "regress.tir");
  try {
    testing::nvptx(m.find_func("f"), EmitKind::Asm);
    ADD_FAILURE() << "not refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nvptx: loop b is bound to blockIdx.x inside a loop bound to blockIdx.x: a thread block runs "
              "one index "
              "of the axis, so only the enclosing loop's index of it would run");
  }
  // The fuzz's function: refused by codegen, or (once the default GPU schedule binds it
  // otherwise) right on the emulated GPU.
  Module fm = parse_file(std::string(TIRC_SOURCE_DIR) +
                         "/tests/codegen/sched_jit_fuzz_regress/nested_block_binding.tir");
  Function g = fm.find_func("conv2d_dilated_grad");
  ASSERT_TRUE(g);
  Function gg = default_gpu_schedule(*g);
  std::string ptx;
  try {
    ptx = testing::nvptx(gg, EmitKind::Asm);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nvptx: loop"), std::string::npos) << e.what();
    return;
  }
  expect_gpu_matches(g, g, 3);
}

}  // namespace
}  // namespace tirc

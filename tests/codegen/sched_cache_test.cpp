// Schedules built from primitives only (cache_read + compute_at packing, cache_write +
// reverse_compute_at accumulators, decompose_reduction, parallel/unroll/vectorize), as in
// bench/matmul.tir and bench/conv2d.tir at small sizes: lowering moves the caches into their
// loops and compacts them (plan_alloc, compact_buffers); the JIT must compute exactly what
// the interpreter computes on the unscheduled function (same float operations, same order).
#include "ir/printer.h"
#include "tests/codegen/compare.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

void expect_sched_matches_naive(const std::string& text, const std::string& name) {
  Module raw = parse_module(text, "t.tir");
  Module sched = apply_module_schedules(raw);
  Function f = raw.find_func(name), g = sched.find_func(name);
  ASSERT_TRUE(f && g);
  ArgMap in = random_inputs(*f, 7);
  ArgMap ref = run_interp(*f, in);
  ArgMap got = compile_jit(*g)->run(in);
  for (auto& [k, v] : ref) EXPECT_TRUE(cgtest::arrays_close(got.at(k), v, 0, 0)) << k;
  // And the scheduled function in the interpreter (the schedule itself is exact).
  ArgMap si = run_interp(*g, in);
  for (auto& [k, v] : ref) EXPECT_TRUE(cgtest::arrays_close(si.at(k), v, 0, 0)) << k;
}

}  // namespace

TEST(SchedCache, PackedMatmulBitIdentical) {
  expect_sched_matches_naive(R"(
func mm(A: f32[48, 40], B: f32[40, 96]) -> (C: f32[48, 96]) {
  for i, j, k in grid(48, 96, 40) {
    block C(vi: spatial(48) = i, vj: spatial(96) = j, vk: reduce(40) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
schedule mm {
  b = get_block("C")
  i, j, k = get_loops(b)
  jo, ji = split(j, [_, 32])
  io, ii = split(i, [_, 8])
  reorder(jo, io, k, ii, ji)
  cw = cache_write(b, 0, "local")
  reverse_compute_at(cw, io)
  cr = cache_read(b, "B", "global")
  compute_at(cr, jo)
  init = decompose_reduction(b, k)
  parallel(jo)
  unroll(ii)
  vectorize(ji)
  _, _, zi, zj = get_loops(init)
  unroll(zi)
  vectorize(zj)
  _, _, si, sj = get_loops(cw)
  unroll(si)
  vectorize(sj)
  _, pk, pj = get_loops(cr)
  vectorize(pj)
}
)",
                             "mm");
}

TEST(SchedCache, ConvRegisterTileBitIdentical) {
  expect_sched_matches_naive(R"(
func conv(X: f32[2, 8, 14, 16], W: f32[8, 8, 3, 3]) -> (Y: f32[2, 8, 14, 16]) {
  alloc P: f32[2, 8, 16, 18]
  for n, c, h, w in grid(2, 8, 16, 18) {
    block pad(vn: spatial(2) = n, vc: spatial(8) = c, vh: spatial(16) = h, vw: spatial(18) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 15 && vw >= 1 && vw < 17, X[vn, vc, vh - 1, vw - 1], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(2, 8, 14, 16, 8, 3, 3) {
    block conv(vn: spatial(2) = n, vf: spatial(8) = f, vy: spatial(14) = y, vx: spatial(16) = x,
               vc: reduce(8) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] = Y[vn, vf, vy, vx] + P[vn, vc, vy + vr, vx + vs] * W[vf, vc, vr, vs]
    }
  }
}
schedule conv {
  pad = get_block("pad")
  pn, pc, ph, pw = get_loops(pad)
  pnc = fuse(pn, pc)
  parallel(pnc)
  cv = get_block("conv")
  n, f, y, x, c, r, s = get_loops(cv)
  fo, fi = split(f, [_, 4])
  xo, xi = split(x, [2, 8])
  reorder(n, y, fo, c, r, s, fi, xo, xi)
  ny = fuse(n, y)
  parallel(ny)
  cw = cache_write(cv, 0, "local")
  reverse_compute_at(cw, fo)
  init = decompose_reduction(cv, c)
  unroll(fi)
  unroll(xo)
  vectorize(xi)
}
)",
                             "conv");
}

// The derived conv2d gradient scheduled by block names as in bench/conv2d_grad_schedule.tir
// (rfactor of W_grad over 2 columns with a cache_write register tile, dP tiled with
// predicated vector lanes), at a small size: JIT of the scheduled gradient vs the
// interpreter on the unscheduled one (rfactor reassociates: tolerance).
TEST(SchedCache, DerivedConvGradientSchedule) {
  Module fwd = parse_module(R"(
func conv2d(X: f32[2, 8, 14, 14], W: f32[8, 8, 3, 3]) -> (Y: f32[2, 8, 14, 14]) {
  alloc P: f32[2, 8, 16, 16]
  for n, c, h, w in grid(2, 8, 16, 16) {
    block pad(vn: spatial(2) = n, vc: spatial(8) = c, vh: spatial(16) = h, vw: spatial(16) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 15 && vw >= 1 && vw < 15, X[vn, vc, vh - 1, vw - 1], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(2, 8, 14, 14, 8, 3, 3) {
    block conv(vn: spatial(2) = n, vf: spatial(8) = f, vy: spatial(14) = y, vx: spatial(14) = x,
               vc: reduce(8) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] = Y[vn, vf, vy, vx] + P[vn, vc, vy + vr, vx + vs] * W[vf, vc, vr, vs]
    }
  }
}
)",
                            "c.tir");
  Function g = gradient(*fwd.find_func("conv2d"), {});
  std::string text = print_function(*g) + R"(
schedule conv2d_grad {
  pad = get_block("pad")
  pn, pc, ph, pw = get_loops(pad)
  pnc = fuse(pn, pc)
  parallel(pnc)
  pz = get_block("P_grad_init")
  z0, z1, z2, z3 = get_loops(pz)
  z01 = fuse(z0, z1)
  parallel(z01)
  vectorize(z3)
  dp = get_block("conv_dP")
  n, c, h, f, r, s, w = get_loops(dp)
  co, ci = split(c, [_, 4])
  wo, wi = split(w, [_, 8])
  reorder(n, h, co, f, r, s, ci, wo, wi)
  nh = fuse(n, h)
  parallel(nh)
  unroll(ci)
  unroll(wo)
  vectorize(wi)
  dw = get_block("conv_dW")
  wf, wc, wr, ws, wn, wy, wx = get_loops(dw)
  xo, xi = split(wx, [7, 2])
  rf = rfactor(xi, 4)
  f1, c1, r1, s1, n1, y1, xo1, xi1 = get_loops(rf)
  co1, ci1 = split(c1, [_, 2])
  reorder(f1, co1, n1, y1, xo1, ci1, r1, s1, xi1)
  parallel(f1)
  cwr = cache_write(rf, 0, "local")
  reverse_compute_at(cwr, co1)
  rfi = decompose_reduction(rf, n1)
  unroll(ci1)
  unroll(r1)
  unroll(s1)
  vectorize(xi1)
}
)";
  Module raw = parse_module(text, "g.tir");
  Module sched = apply_module_schedules(raw);
  Function f0 = raw.find_func("conv2d_grad"), f1 = sched.find_func("conv2d_grad");
  ASSERT_TRUE(f0 && f1);
  ArgMap in = random_inputs(*f0, 3);
  ArgMap ref = run_interp(*f0, in);
  ArgMap got = compile_jit(*f1)->run(in);
  for (auto& [k, v] : ref) EXPECT_TRUE(cgtest::arrays_close(got.at(k), v, 1e-5, 1e-5)) << k;
}

}  // namespace tirc

// tensorize: tiles matched against an intrinsic's desc and replaced by its impl. Each
// accepted case is checked with the interpreter (scheduled vs unscheduled) and by a
// print -> parse round trip; each refusal path has its exact message and leaves the function
// unchanged.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

const char* kMM = R"(func mm(A: f32[16, 12], B: f32[12, 8]) -> (C: f32[16, 8]) {
  for i, j, k in grid(16, 8, 12) {
    block C(vi: spatial(16) = i, vj: spatial(8) = j, vk: reduce(12) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += A[vi, vk] * B[vk, vj]
    }
  }
}
)";

// Update-only 4x4x4 matmul; impl as ordinary code (its own block, different loop order).
const char* kMma4 = R"(
intrin mma4 {
  desc(A: f32[4, 4], B: f32[4, 4], C: f32[4, 4]) {
    for i, j, k in grid(4, 4, 4) {
      block update(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
      }
    }
  }
  impl(A: f32[4, 4], B: f32[4, 4], C: f32[4, 4]) {
    for k, i, j in grid(4, 4, 4) {
      block upd(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
      }
    }
  }
}
)";

// 4x4 tile with the whole reduction (12) and an init; impl as loose statements.
const char* kMmInit = R"(
intrin mm4x12 {
  desc(A: f32[4, 12], B: f32[12, 4], C: f32[4, 4]) {
    for i, j, k in grid(4, 4, 12) {
      block c(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(12) = k) {
        init { C[vi, vj] = 0.0 }
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
      }
    }
  }
  impl(A: f32[4, 12], B: f32[12, 4], C: f32[4, 4]) {
    for i, j in grid(4, 4) {
      C[i, j] = 0.0
      for k in serial(12) {
        C[i, j] = C[i, j] + A[i, k] * B[k, j]
      }
    }
  }
}
)";

const std::string kTile =
    "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n  j0, j1 = split(j, [_, "
    "4])\n"
    "  k0, k1 = split(k, [_, 4])\n  reorder(i0, j0, k0, i1, j1, k1)\n";

Module parse_with(const std::string& func, const std::string& intrins, const std::string& lines) {
  std::string name = func.substr(5, func.find('(') - 5);
  return parse_module(func + intrins + "\nschedule " + name + " {\n" + lines + "}\n", "t.tir");
}

// Applies the schedule, checks it against the interpreter and the print/parse round trip;
// returns the printed scheduled function.
std::string apply_ok(const std::string& func, const std::string& intrins, const std::string& lines) {
  Module m = parse_with(func, intrins, lines);
  Function f = m.funcs.at(0);
  Function g;
  try {
    g = apply_schedule(*f, m.schedules.at(0), m.intrins);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return "";
  }
  CompareResult r = compare_functions(*f, *g, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail << "\n" << print_function(*g);
  Module out = apply_module_schedules(m);
  std::string text = print_module(out);
  Module again = parse_module(text, "again.tir");
  auto d = structural_diff(out, again);
  EXPECT_FALSE(d.has_value()) << *d << "\n" << text;
  EXPECT_EQ(print_module(again), text);
  return print_function(*g);
}

std::string refusal(const std::string& func, const std::string& intrins, const std::string& lines) {
  Module m = parse_with(func, intrins, lines);
  try {
    apply_schedule(*m.funcs.at(0), m.schedules.at(0), m.intrins);
  } catch (const SourceError& e) {
    return e.message();
  }
  ADD_FAILURE() << "not refused:\n" << lines;
  return "";
}

TEST(Tensorize, UpdateAfterDecomposeReduction) {
  std::string out =
      apply_ok(kMM, kMma4, kTile + "  init = decompose_reduction(b, k0)\n  t = tensorize(i1, \"mma4\")\n");
  EXPECT_NE(out.find("block C_o("), std::string::npos) << out;
  EXPECT_NE(out.find("block upd("), std::string::npos) << out;
  EXPECT_EQ(out.find("block C("), std::string::npos) << out;  // the tile is gone
  // The new block is over the outer loops: spatial i0, j0 and reduce k0.
  EXPECT_NE(out.find("vi0_o: spatial(4) = i0, vj0_o: spatial(2) = j0, vk0_o: reduce(3) = k0"),
            std::string::npos)
      << out;
}

TEST(Tensorize, KeywordArgumentsAndSymbolicStride) {
  // TVM's keyword names; a symbolic number of rows; a stride parameter.
  const char* f = R"(func s(n: i32 in [1, 3], X: f32[n, 8]) -> (Y: f32[n, 8]) {
  for r, c in grid(n, 8) {
    block Y(vr: spatial(n) = r, vc: spatial(8) = c) { Y[vr, vc] = X[vr, vc] + X[vr, vc] }
  }
}
)";
  const char* in = R"(
intrin dbl4 {
  desc(X: f32[4], Y: f32[4]) {
    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[v] + X[v] } }
  }
  impl(X: f32[4], Y: f32[4]) {
    for i in serial(4) { Y[i] = X[i] * 2.0 }
  }
}
intrin dbl4x {
  desc(X: f32[2, 4], Y: f32[2, 4]) {
    for i, j in grid(2, 4) { block d(v: spatial(2) = i, w: spatial(4) = j) { Y[v, w] = X[v, w] + X[v, w] } }
  }
  impl(X: f32[2, 4], Y: f32[2, 4], X_stride0: i32) {
    call_extern("dbl", Y.data, X.data, X_stride0)
  }
}
)";
  std::string out = apply_ok(f, in,
                             "  y = get_block(\"Y\")\n  r, c = get_loops(y)\n  c0, c1 = split(c, [_, 4])\n"
                             "  t = tensorize(block_or_loop=c1, tensor_intrin=\"dbl4\")\n");
  EXPECT_NE(out.find("block Y_o("), std::string::npos) << out;
  // The stride of X in its first dimension is its row length (12 elements), not the desc's 4.
  const char* g = R"(func t(X: f32[4, 12]) -> (Y: f32[4, 12]) {
  for r, c in grid(4, 12) {
    block Y(vr: spatial(4) = r, vc: spatial(12) = c) { Y[vr, vc] = X[vr, vc] + X[vr, vc] }
  }
}
)";
  Module m =
      parse_with(g, in,
                 "  y = get_block(\"Y\")\n  r, c = get_loops(y)\n  r0, r1 = split(r, [_, 2])\n"
                 "  c0, c1 = split(c, [_, 4])\n  reorder(r0, c0, r1, c1)\n  tensorize(r1, \"dbl4x\")\n");
  std::string text = print_module(apply_module_schedules(m));
  EXPECT_NE(text.find("call_extern(\"dbl\", Y.ptr(vr0_o * 2, vc0_o * 4), X.ptr(vr0_o * 2, vc0_o * 4), 12)"),
            std::string::npos)
      << text;
}

TEST(Tensorize, ReductionWithInitLikeTvm) {
  // As TVM: tensorize of a loop blockizes the tile first; the init of the reduction moves to
  // the new outer block (running at its first reduce iteration) and the update matches the
  // update-only desc.
  std::string out = apply_ok(kMM, kMma4, kTile + "  t = tensorize(i1, \"mma4\")\n  parallel(i0)\n");
  EXPECT_NE(out.find("block C_o("), std::string::npos) << out;
  EXPECT_NE(out.find("init {"), std::string::npos) << out;
  EXPECT_NE(out.find("block C_init("), std::string::npos) << out;
  EXPECT_NE(out.find("block upd("), std::string::npos) << out;
}

TEST(Tensorize, DescWithInit) {
  std::string lines =
      "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n"
      "  j0, j1 = split(j, [_, 4])\n  reorder(i0, j0, i1, j1, k)\n  tensorize(i1, \"mm4x12\")\n";
  std::string out = apply_ok(kMM, kMmInit, lines);
  EXPECT_EQ(out.find("init {"), std::string::npos) << out;  // the impl does the init itself
}

TEST(Tensorize, BlockizedBlock) {
  // tensorize of the block made by blockize: its body is the tile; the block stays.
  std::string out =
      apply_ok(kMM, kMma4,
               kTile + "  init = decompose_reduction(b, k0)\n  o = blockize(i1)\n  tensorize(o, \"mma4\")\n");
  EXPECT_NE(out.find("block C_o("), std::string::npos) << out;
  EXPECT_NE(out.find("block upd("), std::string::npos) << out;
}

TEST(Tensorize, BlockizedBlockKeepsItsInit) {
  // blockize moves the reduction's init to the outer block; tensorize replaces the body only.
  std::string out = apply_ok(kMM, kMma4, kTile + "  ob = blockize(i1)\n  tensorize(ob, \"mma4\")\n");
  EXPECT_NE(out.find("init {"), std::string::npos) << out;
  EXPECT_NE(out.find("block upd("), std::string::npos) << out;
}

TEST(Tensorize, TvmPatternBlockizeDecomposeTensorize) {
  // TVM's usual flow: blockize the tile, decompose_reduction on the outer block, then
  // tensorize the update block and the init block (both by block handle).
  const char* zero = R"(
intrin zero4 {
  desc(C: f32[4, 4]) {
    for i, j in grid(4, 4) {
      block z(vi: spatial(4) = i, vj: spatial(4) = j) { C[vi, vj] = 0.0 }
    }
  }
  impl(C: f32[4, 4]) {
    for i, j in grid(4, 4) { C[i, j] = 0.0 }
  }
}
)";
  std::string out =
      apply_ok(kMM, std::string(kMma4) + zero,
               kTile +
                   "  ob = blockize(i1)\n  init = decompose_reduction(ob, k0)\n  tensorize(ob, \"mma4\")\n"
                   "  tensorize(init, \"zero4\")\n  parallel(i0)\n");
  EXPECT_NE(out.find("block C_o("), std::string::npos) << out;
  EXPECT_NE(out.find("block C_o_init("), std::string::npos) << out;
  EXPECT_NE(out.find("block upd("), std::string::npos) << out;
  EXPECT_EQ(out.find("block C("), std::string::npos) << out;
  EXPECT_EQ(out.find("block C_init("), std::string::npos) << out;
}

TEST(Tensorize, ElementwiseWithLeadingDimAndScalar) {
  // A 3-d buffer against a 1-d desc: the leading dims are offsets; a desc scalar parameter
  // matches a constant; impl with a stride parameter (unused in the arithmetic).
  const char* f = R"(func ew(X: f32[2, 3, 8]) -> (Y: f32[2, 3, 8]) {
  for a, b, c in grid(2, 3, 8) {
    block Y(va: spatial(2) = a, vb: spatial(3) = b, vc: spatial(8) = c) {
      Y[va, vb, vc] = X[va, vb, vc] * 3.0 + 1.0
    }
  }
}
)";
  const char* in = R"(
intrin axpb4 {
  desc(X: f32[4], Y: f32[4], s: f32) {
    for i in serial(4) {
      block e(vi: spatial(4) = i) { Y[vi] = X[vi] * s + 1.0 }
    }
  }
  impl(X: f32[4], Y: f32[4], s: f32, Y_stride0: i32) {
    for i in serial(4) {
      Y[i] = X[i * Y_stride0] * s + 1.0
    }
  }
}
)";
  std::string out = apply_ok(f, in,
                             "  y = get_block(\"Y\")\n  a, b, c = get_loops(y)\n  c0, c1 = split(c, [_, 4])\n"
                             "  tensorize(c1, \"axpb4\")\n");
  EXPECT_NE(out.find("* 3.0 + 1.0"), std::string::npos) << out;
}

TEST(Tensorize, LeafBlockAgainstBlockDesc) {
  const char* f = R"(func sc(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = X[vi] + X[vi] }
  }
}
)";
  const char* in = R"(
intrin dbl {
  desc(X: f32[1], Y: f32[1]) {
    block d(v: spatial(1) = 0) { Y[v] = X[v] + X[v] }
  }
  impl(X: f32[1], Y: f32[1]) { Y[0] = X[0] * 2.0 }
}
)";
  std::string out = apply_ok(f, in, "  y = get_block(\"Y\")\n  tensorize(y, \"dbl\")\n");
  EXPECT_NE(out.find("* 2.0"), std::string::npos) << out;
}

TEST(Tensorize, TwiceWithTheSameIntrin) {
  // Two functions' worth of tiles in one function: both blocks tensorized, names stay unique.
  const char* f = R"(func two(X: f32[8]) -> (Y: f32[8], Z: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = X[vi] + X[vi] }
  }
  for i in serial(8) {
    block Z(vi: spatial(8) = i) { Z[vi] = Y[vi] + Y[vi] }
  }
}
)";
  const char* in = R"(
intrin dbl4 {
  desc(X: f32[4], Y: f32[4]) {
    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[v] + X[v] } }
  }
  impl(X: f32[4], Y: f32[4]) {
    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[v] * 2.0 } }
  }
}
)";
  std::string out =
      apply_ok(f, in,
               "  y = get_block(\"Y\")\n  z = get_block(\"Z\")\n  i = get_loops(y)\n  i2 = get_loops(z)\n"
               "  a, b = split(i, [_, 4])\n  c, d = split(i2, [_, 4])\n  tensorize(b, \"dbl4\")\n"
               "  tensorize(d, \"dbl4\")\n");
  EXPECT_NE(out.find("block d("), std::string::npos) << out;
  EXPECT_NE(out.find("block d_1("), std::string::npos) << out;
}

TEST(Tensorize, ExternImplRewritesPointers) {
  // call_extern in the impl: pointers to the region start, strides passed as parameters.
  const char* in = R"(
intrin mma4x {
  desc(A: f32[4, 4], B: f32[4, 4], C: f32[4, 4]) {
    for i, j, k in grid(4, 4, 4) {
      block update(vi: spatial(4) = i, vj: spatial(4) = j, vk: reduce(4) = k) {
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
      }
    }
  }
  impl(A: f32[4, 4], B: f32[4, 4], C: f32[4, 4], A_stride0: i32, C_stride0: i32) {
    call_extern("mma4", C.data, A.ptr(0, 0), B.data, A_stride0, C_stride0)
  }
}
)";
  Module m = parse_with(kMM, in, kTile + "  init = decompose_reduction(b, k0)\n  tensorize(i1, \"mma4x\")\n");
  Module out = apply_module_schedules(m);
  std::string text = print_module(out);
  EXPECT_NE(text.find("call_extern(\"mma4\", C.ptr(vi0_o * 4, vj0_o * 4), A.ptr(vi0_o * 4, vk0_o * 4), "
                      "B.ptr(vk0_o * 4, vj0_o * 4), 12, 8)"),
            std::string::npos)
      << text;
  // A is an input: the pointer argument only reads it.
  EXPECT_NE(text.find("writes C["), std::string::npos) << text;
  EXPECT_EQ(text.find("writes A["), std::string::npos) << text;
  Module again = parse_module(text, "again.tir");
  auto d = structural_diff(out, again);
  EXPECT_FALSE(d.has_value()) << *d;
}

TEST(Tensorize, Refusals) {
  std::string dec = kTile + "  init = decompose_reduction(b, k0)\n";
  EXPECT_EQ(refusal(kMM, kMma4, kTile + "  tensorize(i1, \"nope\")\n"),
            "tensorize: unknown intrinsic \"nope\" (known: mma4)");
  EXPECT_EQ(refusal(kMM, kMma4, kTile + "  tensorize(i1, mma4)\n"),
            "tensorize: the intrinsic name must be a string literal");
  // Extents differ.
  EXPECT_EQ(
      refusal(kMM, kMma4,
              "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 8])\n"
              "  j0, j1 = split(j, [_, 4])\n  k0, k1 = split(k, [_, 4])\n  reorder(i0, j0, k0, i1, j1, k1)\n"
              "  init = decompose_reduction(b, k0)\n  tensorize(i1, \"mma4\")\n"),
      "tensorize: loop i1 has extent 8, but the matching loop i of the desc of mma4 has extent 4");
  // Init in the block, none in the desc, and the whole reduction in the tile (blockize keeps
  // the init inside).
  std::string upd12 = kMmInit;
  upd12.replace(upd12.find("init { C[vi, vj] = 0.0 }"), 24, "");
  EXPECT_EQ(
      refusal(kMM, upd12,
              "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n"
              "  j0, j1 = split(j, [_, 4])\n  reorder(i0, j0, i1, j1, k)\n  tensorize(i1, \"mm4x12\")\n"),
      "tensorize: block C has an init, but the desc's block c of mm4x12 has none: apply decompose_reduction "
      "first and tensorize the update");
  // The same through the block made by blockize (the init stayed in the inner block).
  EXPECT_EQ(
      refusal(kMM, upd12,
              "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n"
              "  j0, j1 = split(j, [_, 4])\n  reorder(i0, j0, i1, j1, k)\n  ob = blockize(i1)\n"
              "  tensorize(ob, \"mm4x12\")\n"),
      "tensorize: block C has an init, but the desc's block c of mm4x12 has none: apply decompose_reduction "
      "first and tensorize the update");
  // Init in the desc, reduction split outside the tile.
  EXPECT_EQ(
      refusal(kMM, kMmInit,
              "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n"
              "  j0, j1 = split(j, [_, 4])\n  k0, k1 = split(k, [_, 12])\n  reorder(i0, j0, k0, i1, j1, k1)\n"
              "  tensorize(i1, \"mm4x12\")\n"),
      "tensorize: block C has an init and its reduce iter var vk is split outside the tile (offset k0 * 12): "
      "the "
      "desc's init would run once per tile; apply decompose_reduction first and use an intrinsic without "
      "init");
  // Init in the desc, none in the block.
  EXPECT_EQ(
      refusal(
          kMM, kMmInit,
          "  b = get_block(\"C\")\n  i, j, k = get_loops(b)\n  i0, i1 = split(i, [_, 4])\n"
          "  j0, j1 = split(j, [_, 4])\n  reorder(i0, j0, i1, j1, k)\n  init = decompose_reduction(b, i1)\n"
          "  tensorize(i1, \"mm4x12\")\n"),
      "tensorize: the desc's block c of mm4x12 has an init, but block C has none");
  // Loop order differs: the binding is no longer offset + desc binding.
  EXPECT_EQ(
      refusal(kMM, kMma4,
              kTile + "  reorder(j1, i1)\n  init = decompose_reduction(b, k0)\n  tensorize(j1, \"mma4\")\n"),
      "tensorize: the binding i0 * 4 + i1 of iter var vi of block C is not an offset plus the desc's binding "
      "i "
      "(the offset must not depend on the loops of the tile)");
  // Structure: a block where the desc has a loop.
  EXPECT_EQ(refusal(kMM, kMma4, dec + "  tensorize(b, \"mma4\")\n"),
            "tensorize: block C is not a tile (its body is not a loop nest) and the desc of mma4 is not a "
            "single block; "
            "give the outermost loop of the tile, or the block made by blockize of it");
  // Body differs (operand order).
  std::string swapped = kMma4;
  swapped.replace(swapped.find("A[vi, vk] * B[vk, vj]"), 21, "B[vk, vj] * A[vi, vk]");
  EXPECT_EQ(refusal(kMM, swapped, dec + "  tensorize(i1, \"mma4\")\n"),
            "tensorize: the value stored to C, C[vi, vj] + A[vi, vk] * B[vk, vj], differs from the desc's "
            "C[vi, vj] + "
            "B[vk, vj] * A[vi, vk] (intrinsic mma4): index vi + i0 * 4 of buffer A is not an offset plus the "
            "desc's "
            "index vk of B (the offset must not depend on the loops of the tile)");
  // dtype differs.
  std::string f64 = kMma4;
  for (size_t p; (p = f64.find("f32")) != std::string::npos;) f64.replace(p, 3, "f64");
  EXPECT_EQ(refusal(kMM, f64, dec + "  tensorize(i1, \"mma4\")\n"),
            "tensorize: buffer C is f32, but the matching parameter C of the desc of mma4 is f64");
  // Index not offset + desc index (transposed B in the desc).
  std::string tr = kMma4;
  tr.replace(tr.find("A[vi, vk] * B[vk, vj]"), 21, "A[vi, vk] * B[vj, vk]");
  EXPECT_EQ(refusal(kMM, tr, dec + "  tensorize(i1, \"mma4\")\n"),
            "tensorize: the value stored to C, C[vi, vj] + A[vi, vk] * B[vk, vj], differs from the desc's "
            "C[vi, vj] + "
            "A[vi, vk] * B[vj, vk] (intrinsic mma4): index vk + k0 * 4 of buffer B is not an offset plus the "
            "desc's "
            "index vj of B (the offset must not depend on the loops of the tile)");
  // Iter var kinds differ.
  std::string kinds = kMma4;
  kinds.replace(kinds.find("vk: reduce(4)"), 13, "vk: spatial(4)");
  EXPECT_EQ(refusal(kMM, kinds, dec + "  tensorize(i1, \"mma4\")\n"),
            "tensorize: iter var vk of block C is reduce, but iter var vk of the desc's block update of mma4 "
            "is spatial");
  // impl parameters do not match the desc's.
  std::string badimpl = kMma4;
  badimpl.replace(badimpl.find("impl(A: f32[4, 4]"), 17, "impl(A: f32[4, 8]");
  EXPECT_EQ(
      refusal(kMM, badimpl, dec + "  tensorize(i1, \"mma4\")\n"),
      "tensorize: parameter 1 of the impl of mma4 (A: f32[4, 8]) does not match the desc's (A: f32[4, 4])");
  std::string extra = kMma4;
  extra.replace(extra.find("C: f32[4, 4]) {\n    for k"), 13, "C: f32[4, 4], n: i32)");
  EXPECT_EQ(refusal(kMM, extra, dec + "  tensorize(i1, \"mma4\")\n"),
            "tensorize: parameter n of the impl of mma4 has no counterpart in the desc; extra impl "
            "parameters must be "
            "integer strides named <buffer>_stride<d>");
  // One desc buffer matching two buffers.
  const char* two = R"(func two(X: f32[8], Z: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = X[vi] + Z[vi] }
  }
}
)";
  const char* dbl = R"(
intrin dbl4 {
  desc(X: f32[4], Y: f32[4]) {
    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[v] + X[v] } }
  }
  impl(X: f32[4], Y: f32[4]) {
    for i in serial(4) { Y[i] = X[i] * 2.0 }
  }
}
)";
  std::string sp = "  y = get_block(\"Y\")\n  i = get_loops(y)\n  a, c = split(i, [_, 4])\n";
  EXPECT_EQ(refusal(two, dbl, sp + "  tensorize(c, \"dbl4\")\n"),
            "tensorize: the value stored to Y, X[vi] + Z[vi], differs from the desc's X[v] + X[v] (intrinsic "
            "dbl4): the "
            "desc's parameter X of dbl4 matches both buffer X and buffer Z");
  // Inconsistent offsets of one buffer.
  const char* shift = R"(func sh(X: f32[9]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = X[vi] + X[vi + 1] }
  }
}
)";
  EXPECT_EQ(
      refusal(shift, dbl, sp + "  tensorize(c, \"dbl4\")\n"),
      "tensorize: the value stored to Y, X[vi] + X[vi + 1], differs from the desc's X[v] + X[v] (intrinsic "
      "dbl4): "
      "buffer X is accessed at offset a * 4 and at offset a * 4 + 1 in dimension 0 relative to the desc's "
      "parameter X");
  // Predicate from a non-dividing split.
  const char* odd = R"(func od(X: f32[6]) -> (Y: f32[6]) {
  for i in serial(6) {
    block Y(vi: spatial(6) = i) { Y[vi] = X[vi] + X[vi] }
  }
}
)";
  EXPECT_EQ(refusal(odd, dbl, sp + "  tensorize(c, \"dbl4\")\n"),
            "tensorize: block Y has the predicate `where a * 4 + c < 6`, but the desc's block d has none");
}

TEST(Tensorize, MoreRefusals) {
  const char* f = R"(func f(X: f32[8], W: f32[2, 8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = X[vi] + X[vi] }
  }
}
)";
  auto intrin = [](const std::string& desc_params, const std::string& desc_body,
                   const std::string& impl_params,
                   const std::string& impl_body = "for i in serial(4) { Y[i] = X[i] * 2.0 }") {
    return "\nintrin t4 {\n  desc(" + desc_params + ") {\n" + desc_body + "\n  }\n  impl(" + impl_params +
           ") {\n    " + impl_body + "\n  }\n}\n";
  };
  const std::string dp = "X: f32[4], Y: f32[4]";
  const std::string loop = "    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[v] + X[v] } }";
  std::string sp =
      "  y = get_block(\"Y\")\n  i = get_loops(y)\n  a, c = split(i, [_, 4])\n  tensorize(c, \"t4\")\n";
  EXPECT_EQ(refusal(f, intrin(dp, "    alloc T: f32[4]\n" + loop, dp), sp),
            "tensorize: the desc of t4 allocates buffer T (not supported)");
  EXPECT_EQ(refusal(f, intrin(dp + ", Z: f32[4]", loop, dp), sp),
            "tensorize: the impl of t4 has 2 parameters, the desc 3");
  EXPECT_EQ(refusal(f, intrin(dp, loop, dp + ", Y_stride1: i32"), sp),
            "tensorize: parameter Y_stride1 of the impl of t4: buffer Y has 1 dimensions");
  EXPECT_EQ(refusal(f, intrin(dp + ", Z: f32[4]", loop, dp + ", Z: f32[4]"), sp),
            "tensorize: parameter Z of the desc of t4 is not used by the desc");
  EXPECT_EQ(refusal(f, intrin(dp, loop + "\n    call_extern(\"g\", X.data)", dp), sp),
            "tensorize: the desc of t4 calls an extern function; a desc must be ordinary blocks");
  EXPECT_EQ(
      refusal(
          f,
          intrin(dp, loop + "\n" + "    for i in serial(4) { block d2(v: spatial(4) = i) { Y[v] = X[v] } }",
                 dp),
          sp),
      "tensorize: loop c is where the desc of t4 has 2 statements in sequence");
  EXPECT_EQ(refusal(f,
                    intrin(dp,
                           "    for i in serial(4) { block d(v: spatial(4) = i, w: spatial(4) = i) { Y[v] = "
                           "X[w] + X[v] } }",
                           dp),
                    sp),
            "tensorize: block Y has 1 iter vars that vary in the tile, but the desc's block d of t4 has 2 "
            "iter vars");
  EXPECT_EQ(
      refusal(f,
              intrin("X: f32[2, 4], Y: f32[4]",
                     "    for i in serial(4) { block d(v: spatial(4) = i) { Y[v] = X[0, v] + X[0, v] } }",
                     "X: f32[2, 4], Y: f32[4]", "Y[0] = X[0, 0]"),
              sp),
      "tensorize: the value stored to Y, X[vi] + X[vi], differs from the desc's X[0, v] + X[0, v] (intrinsic "
      "t4): "
      "buffer X has 1 dimension, fewer than the 2 dimensions of the desc's parameter X");
  // Aliasing: one written desc parameter and one read parameter on the same buffer.
  const char* inplace = R"(func ip(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y0(vi: spatial(8) = i) { Y[vi] = X[vi] }
  }
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = Y[vi] + Y[vi] }
  }
}
)";
  EXPECT_EQ(refusal(inplace, intrin(dp, loop, dp), sp),
            "tensorize: the desc's parameters X and Y both match buffer Y, which the tile writes");
  // A leading target index that varies in the tile.
  const char* lead = R"(func ld(W: f32[8, 8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { Y[vi] = W[vi, vi] + W[vi, vi] }
  }
}
)";
  EXPECT_EQ(refusal(lead, intrin(dp, loop, dp), sp),
            "tensorize: the value stored to Y, W[vi, vi] + W[vi, vi], differs from the desc's X[v] + X[v] "
            "(intrinsic "
            "t4): index v + a * 4 of buffer W (dimension 0, which the desc's parameter X does not have) "
            "depends on the "
            "loops of the tile");
  // A tile loop whose start depends on another tile loop.
  const char* shifted = R"(func sh2(X: f32[4, 8]) -> (Y: f32[4, 8]) {
  for i in serial(4) {
    for j in serial(i, i + 4) {
      block Y(vi: spatial(4) = i, vj: spatial(8) = j) { Y[vi, vj] = X[vi, vj] + X[vi, vj] }
    }
  }
}
)";
  const char* grid44 = R"(
intrin t44 {
  desc(X: f32[4, 4], Y: f32[4, 4]) {
    for i, j in grid(4, 4) { block d(v: spatial(4) = i, w: spatial(4) = j) { Y[v, w] = X[v, w] + X[v, w] } }
  }
  impl(X: f32[4, 4], Y: f32[4, 4]) {
    for i, j in grid(4, 4) { Y[i, j] = X[i, j] * 2.0 }
  }
}
)";
  EXPECT_EQ(
      refusal(shifted, grid44, "  y = get_block(\"Y\")\n  i, j = get_loops(y)\n  tensorize(i, \"t44\")\n"),
      "tensorize: the start of loop j depends on the loops of the tile");
  // An outer loop used by the offsets whose extent depends on another outer loop.
  const char* tri = R"(func tr(X: f32[2, 2, 4]) -> (Y: f32[2, 2, 4]) {
  for a in serial(2) {
    for b in serial(a + 1) {
      for c in serial(4) {
        block Y(va: spatial(2) = a, vb: spatial(2) = b, vc: spatial(4) = c) { Y[va, vb, vc] = X[va, vb, vc] + X[va, vb, vc] }
      }
    }
  }
}
)";
  EXPECT_EQ(refusal(tri, intrin(dp, loop, dp),
                    "  y = get_block(\"Y\")\n  a, b, c = get_loops(y)\n  tensorize(c, \"t4\")\n"),
            "tensorize: the extent of b depends on a, which the tile's offsets also use");
  // Allocations inside the tile or in the desc's block.
  const char* talloc = R"(func ta(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) {
      alloc T: f32[1]
      Y[vi] = X[vi] + X[vi]
    }
  }
}
)";
  EXPECT_EQ(refusal(talloc, intrin(dp, loop, dp), sp),
            "tensorize: block Y allocates buffer T; the tile may not allocate");
  EXPECT_EQ(refusal(f,
                    intrin(dp,
                           "    for i in serial(4) { block d(v: spatial(4) = i) {\n alloc T: f32[1]\n Y[v] = "
                           "X[v] + X[v] } }",
                           dp),
                    sp),
            "tensorize: the desc's block d of t4 allocates buffer T (not supported)");
  // Sequences of different lengths.
  const char* two_st = R"(func ts(X: f32[8]) -> (Y: f32[8], Z: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) {
      Y[vi] = X[vi] + X[vi]
      Z[vi] = X[vi]
    }
  }
}
)";
  EXPECT_EQ(refusal(two_st,
                    intrin(dp,
                           "    for i in serial(4) { block d(v: spatial(4) = i) {\n Y[v] = X[v] + X[v]\n "
                           "Y[v] = X[v] + X[v]\n Y[v] = X[v] } }",
                           dp),
                    sp),
            "tensorize: the subtree has 2 statements in sequence where the desc of t4 has 3");
  // A tile with a call_extern.
  const char* ext = R"(func ex(X: f32[8]) -> (Y: f32[8]) {
  for i in serial(8) {
    block Y(vi: spatial(8) = i) { call_extern("g", Y.ptr(vi), X.ptr(vi)) }
  }
}
)";
  EXPECT_EQ(refusal(ext, intrin(dp, loop, dp), sp),
            "tensorize: call_extern(\"g\") is where the desc of t4 has a store to Y");
}

TEST(Tensorize, RefusalLeavesFunctionUnchanged) {
  // Refusals at several stages (before and after matching started): the state is untouched.
  for (const char* last :
       {"  tensorize(i0, \"mma4\")\n", "  tensorize(k1, \"mma4\")\n", "  tensorize(j0, \"mma4\")\n"}) {
    Module m = parse_with(kMM, kMma4, kTile + last);
    sched::ScheduleState st(*m.funcs[0]);
    st.intrins = std::make_shared<const std::vector<IntrinItem>>(m.intrins);
    auto& instrs = m.schedules[0].instrs;
    for (size_t i = 0; i + 1 < instrs.size(); ++i) sched::apply_instruction(st, instrs[i]);
    Function before = st.to_function();
    EXPECT_THROW(sched::apply_instruction(st, instrs.back()), sched::Refusal) << last;
    EXPECT_TRUE(structural_equal(*before, *st.to_function())) << last;
  }
}

}  // namespace
}  // namespace tirc

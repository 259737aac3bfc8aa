// What handles and indices mean after a primitive, as in TVM (outsider round 2):
// - after `rf = rfactor(ki, ...)` the original loop handles of the block's spatial loops and of
//   `ki` name the write-back's loops (TVM keeps the original loops for the write-back and gives
//   the rf block copies);
// - after compute_inline, the consumer's reads list the producer's inputs where the inlined
//   buffer was read (TVM re-derives them in access order), so `cache_read(b, 0, ...)` of a
//   conv2d after inlining its padding caches the input, not the weights.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

Function apply_src(const std::string& src, const std::string& func) {
  Module m = parse_module(src, "t.tir");
  Function f = m.find_func(func);
  Function g = apply_schedule(*f, m.schedules.at(0), m.intrins);
  CompareResult r = compare_functions(*f, *g, CompareOptions{}, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << r.detail;
  return g;
}

const char* kRowSum = R"(func rs(A: f32[8, 64]) -> (S: f32[8]) {
  for i, k in grid(8, 64) {
    block S(vi: spatial(8) = i, vk: reduce(64) = k) {
      init { S[vi] = 0.0 }
      S[vi] = S[vi] + A[vi, vk]
    }
  }
}
)";

TEST(TvmCompat, RfactorHandlesNameTheWriteBack) {
  // compute_at(rf, i): i is the write-back's row loop, so the rf block moves under it.
  Function g = apply_src(std::string(kRowSum) + R"(
schedule rs {
  b = get_block("S")
  i, k = get_loops(b)
  ko, ki = split(k, factors=[None, 16])
  rf = rfactor(ki, factor_axis=1)
  compute_at(rf, i)
  bind(i, "blockIdx.x")
}
)",
                         "rs");
  std::string text = print_function(*g);
  // One nest: the rf block inside the bound write-back row loop, whose reduction loop is ki.
  EXPECT_NE(text.find("for i_wb in thread_binding(8, \"blockIdx.x\")"), std::string::npos) << text;
  EXPECT_EQ(text.find("for i in"), std::string::npos) << text;
}

TEST(TvmCompat, RfactorRfLoopHandleIsTheWriteBackReduction) {
  Module m = parse_module(std::string(kRowSum) + R"(
schedule rs {
  b = get_block("S")
  i, k = get_loops(b)
  ko, ki = split(k, factors=[None, 16])
  rf = rfactor(ki, factor_axis=1)
  parallel(ki)
}
)",
                          "t.tir");
  try {
    apply_schedule(*m.find_func("rs"), m.schedules.at(0));
    ADD_FAILURE() << "not refused";
  } catch (const SourceError& e) {
    EXPECT_EQ(e.message(), "parallel: loop ki_wb is bound to the reduce iter var vr_ki of block S");
  }
}

TEST(TvmCompat, InlinedReadsTakeThePlaceOfTheBuffer) {
  Function g = apply_src(R"(func conv(X: f32[1, 2, 6, 6], W: f32[2, 2, 3, 3]) -> (Y: f32[1, 2, 6, 6]) {
  alloc P: f32[1, 2, 8, 8]
  for n, c, h, w in grid(1, 2, 8, 8) {
    block pad(vn: spatial(1) = n, vc: spatial(2) = c, vh: spatial(8) = h, vw: spatial(8) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 7 && vw >= 1 && vw < 7, X[vn, vc, vh - 1, vw - 1], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(1, 2, 6, 6, 2, 3, 3) {
    block conv(vn: spatial(1) = n, vf: spatial(2) = f, vy: spatial(6) = y, vx: spatial(6) = x,
               vc: reduce(2) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] += P[vn, vc, vy + vr, vx + vs] * W[vf, vc, vr, vs]
    }
  }
}

schedule conv {
  compute_inline(get_block("pad"))
  b = get_block("conv")
  xs = cache_read(b, 0, "global")
}
)",
                         "conv");
  std::string text = print_function(*g);
  EXPECT_NE(text.find("alloc X_global"), std::string::npos) << text;
  EXPECT_EQ(text.find("W_global"), std::string::npos) << text;
}

// TVM's compute_at(block, loop, preserve_unit_loops=False, index=-1) given positionally.
const char* kTwoStage = R"(func two(A: f32[8, 8]) -> (C: f32[8, 8]) {
  alloc B: f32[8, 8]
  for i, j in grid(8, 8) {
    block B(vi: spatial(8) = i, vj: spatial(8) = j) { B[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(8, 8) {
    block C(vi: spatial(8) = i, vj: spatial(8) = j) { C[vi, vj] = B[vi, vj] + 1.0 }
  }
}
)";

TEST(TvmCompat, ComputeAtTakesPreserveUnitLoopsAndIndexPositionally) {
  for (const char* call :
       {"compute_at(get_block(\"B\"), i, True)", "compute_at(get_block(\"B\"), i, False, -1)"}) {
    Function g = apply_src(
        std::string(kTwoStage) + "schedule two {\n  i, j = get_loops(get_block(\"C\"))\n  " + call + "\n}\n",
        "two");
    std::string text = print_function(*g);
    // B's nest moved under C's row loop: one top-level loop is left.
    EXPECT_EQ(text.find("for i, j in grid"), std::string::npos) << call << "\n" << text;
  }
  Function g = apply_src(std::string(kTwoStage) +
                             "schedule two {\n  i, j = get_loops(get_block(\"B\"))\n"
                             "  reverse_compute_at(get_block(\"C\"), i, True)\n}\n",
                         "two");
  EXPECT_EQ(print_function(*g).find("for i, j in grid"), std::string::npos) << print_function(*g);

  // A position given positionally is TVM's index: 0 (before C's loop) is valid, 1 (after it) not.
  g = apply_src(std::string(kTwoStage) +
                    "schedule two {\n  i, j = get_loops(get_block(\"C\"))\n"
                    "  compute_at(get_block(\"B\"), i, True, 0)\n}\n",
                "two");
  EXPECT_EQ(print_function(*g).find("for i, j in grid"), std::string::npos) << print_function(*g);
  Module m = parse_module(std::string(kTwoStage) +
                              "schedule two {\n  i, j = get_loops(get_block(\"C\"))\n"
                              "  compute_at(get_block(\"B\"), i, True, 1)\n}\n",
                          "t.tir");
  try {
    apply_schedule(*m.find_func("two"), m.schedules.at(0), m.intrins);
    FAIL() << "index=1 given positionally was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index=1 is not a position between the producers and the consumers"),
              std::string::npos)
        << e.what();
  }
}

// `blocks = [b1, b2]` binds a list written out; blockize / reorder / cache_read's
// consumer_blocks take it as a list, and the item prints as written.
TEST(TvmCompat, ListsWrittenOutBindNames) {
  std::string src = std::string(kTwoStage) + R"(schedule two {
  b1 = get_block("B")
  b2 = get_block("C")
  blocks = [b1, b2]
  blockize(blocks)
}
)";
  Function g = apply_src(src, "two");
  EXPECT_NE(print_function(*g).find("block outer_B_C_()"), std::string::npos) << print_function(*g);
  EXPECT_NE(print_module(parse_module(src, "t.tir")).find("  blocks = [b1, b2]\n"), std::string::npos);

  Function r = apply_src(std::string(kTwoStage) + R"(schedule two {
  loops = get_loops(get_block("C"))
  order = [loops[1], *loops[:1]]
  reorder(order)
  readers = [get_block("C")]
  cache_read(get_block("C"), 0, "shared", consumer_blocks=readers)
}
)",
                         "two");
  EXPECT_NE(print_function(*r).find("B_shared"), std::string::npos) << print_function(*r);

  Module m = parse_module(std::string(kTwoStage) + R"(schedule two {
  loops = get_loops(get_block("C"))
  nested = [loops, loops[0]]
}
)",
                          "t.tir");
  try {
    apply_schedule(*m.find_func("two"), m.schedules.at(0), m.intrins);
    FAIL() << "a nested list was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lists may not be nested; write *loops"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tirc

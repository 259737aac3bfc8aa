// Round 19 fuzzer findings (docs/schedule.md, "Round 19", Fuzzer). The generator drew the new
// cache_inplace on blocks whose copy-in would read elements not written yet; refused now.
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

using testing::schedule_refusal;

// Seed 346 (embedding_bag, max_pool2d_overlap, softmax_temp's T_max, cosine_similarity's dots):
// a reduction with init writes each element before reading it, so the copy-in read an
// uninitialised output ("block "Y_local": read of uninitialised element Y[0, 0] of output buffer
// Y" in the interpreter).
TEST(SchedFuzzR19, CacheInplaceOfAReductionWithInit) {
  EXPECT_EQ(
      schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block s(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += A[vi, vk]
    }
  }
}
schedule f {
  cache_inplace(get_block("s"), 0, "local")
}
)"),
      "cache_inplace: block s has an init: it writes Y before reading it, so the copy-in would read elements "
      "not written yet (use cache_write)");
}

// Seed 346 on the first fix: the reduction nested in a blockized block (embedding_bag's bag_o).
TEST(SchedFuzzR19, CacheInplaceOfABlockizedReduction) {
  EXPECT_EQ(schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4]) {
  for i, k in grid(4, 8) {
    block s(vi: spatial(4) = i, vk: reduce(8) = k) {
      init { Y[vi] = 0.0 }
      Y[vi] += A[vi, vk]
    }
  }
}
schedule f {
  i, k = get_loops(get_block("s"))
  so = blockize(i)
  cache_inplace(so, 0, "local")
}
)"),
            "cache_inplace: block s_o holds block s, which has an init: it writes Y before reading it, so "
            "the copy-in "
            "would read elements not written yet");
}

// The same for a `where` skipping instances (the copy-in reads their elements too; here the odd
// rows that nothing wrote).
TEST(SchedFuzzR19, CacheInplaceUnderACondition) {
  EXPECT_EQ(schedule_refusal(R"(func f(A: f32[4, 8]) -> (Y: f32[4, 8]) {
  for i, j in grid(4, 8) {
    block z(vi: spatial(4) = i, vj: spatial(8) = j) {
      where i % 2 == 0
      Y[vi, vj] = 0.0
    }
  }
  for i, j in grid(4, 8) {
    block u(vi: spatial(4) = i, vj: spatial(8) = j) {
      where i % 2 == 0
      Y[vi, vj] = Y[vi, vj] + A[vi, vj]
    }
  }
}
schedule f {
  cache_inplace(get_block("u"), 0, "local")
}
)"),
            "cache_inplace: block u runs under the condition i % 2 == 0, and the copy-in of Y would read the "
            "elements of the instances it skips");
}

// Review r1 of round 19, finding F1: the copies took the hull of the declared regions relaxed over
// the nest, and the copy-in read elements no instance reads (interpreter: "block "C_local": read
// of uninitialised element C[1] of output buffer C"; the JIT stored the garbage back unchanged).
// The copies now hold the box of the one index tuple the block accesses, read before written.
const char* kCondUpdate = R"(func g(A: f32[8, 4]) -> (C: f32[8]) {
  for i in serial(8) {
    block C_init(vi: spatial(8) = i) {
      if vi % 2 == 0 { C[vi] = 1.0 }
    }
  }
  for i, k in grid(8, 4) {
    block acc(vi: spatial(8) = i, vk: reduce(4) = k) {
      BODY
    }
  }
  for i in serial(8) {
    block C_odd(vi: spatial(8) = i) {
      if vi % 2 == 1 { C[vi] = 5.0 }
    }
  }
}
schedule g {
  b = get_block("acc")
  cin, cout = cache_inplace(b, 0, "local")
}
)";

std::string with_body(const std::string& body) {
  std::string t = kCondUpdate;
  t.replace(t.find("BODY"), 4, body);
  return t;
}

TEST(SchedFuzzR19, CacheInplaceSparseAccessesRefused) {
  // (a) The update under an `if` in the body: the odd elements are written only later.
  EXPECT_EQ(schedule_refusal(with_body("if vi % 2 == 0 { C[vi] = C[vi] + A[vi, vk] }")),
            "cache_inplace: block acc does not read each element of C it accesses before writing it at one "
            "index (it accesses C under an if), so the copy-in could read elements the block does not read");
  // The same in an arm of if_then_else.
  EXPECT_EQ(schedule_refusal(with_body("C[vi] = if_then_else(vi % 2 == 0, C[vi] + A[vi, vk], 0.0)")),
            "cache_inplace: block acc does not read each element of C it accesses before writing it at one "
            "index (it loads C in an arm of if_then_else), so the copy-in could read elements the block does "
            "not read");
  // (c) A store before the load (nothing wrote C before the block).
  EXPECT_EQ(
      schedule_refusal(R"(func g(A: f32[8]) -> (C: f32[8]) {
  for i in serial(8) {
    block s(vi: spatial(8) = i) {
      C[vi] = A[vi]
      C[vi] = C[vi] * 2.0
    }
  }
}
schedule g {
  cin, cout = cache_inplace(get_block("s"), "C", "local")
}
)"),
      "cache_inplace: block s does not read each element of C it accesses before writing it at one index "
      "(it stores C before loading it), so the copy-in could read elements the block does not read");
}

// (b) A split tail (10 rows by 4, `where io * 4 + ii < 10`) on a buffer larger than the block's
// domain (rows 10, 11 written by a later block): the copies are guarded to the iter var's domain
// now (before: rows [0, 11] copied, C[10] read uninitialised). A strided binding (`vi = 2 * i`:
// the hull over the nest holds the odd rows, which no instance reads) is refused.
const char* kTail = R"(func g(A: f32[10, 4]) -> (C: f32[12]) {
  for i in serial(10) {
    block C_init(vi: spatial(10) = i) { C[vi] = 1.0 }
  }
  for i, k in grid(10, 4) {
    block acc(vi: spatial(10) = i, vk: reduce(4) = k) {
      C[vi] = C[vi] + A[vi, vk]
    }
  }
  for i in serial(2) {
    block C_tail(vi: spatial(2) = i) { C[vi + 10] = 7.0 }
  }
}
schedule g {
  b = get_block("acc")
  i, k = get_loops(b)
  io, ii = split(i, [None, 4])
  SCHED
}
)";

TEST(SchedFuzzR19, CacheInplaceSplitTailGuarded) {
  auto sched = [](const std::string& s) {
    std::string t = kTail;
    t.replace(t.find("SCHED"), 5, s);
    return t;
  };
  std::string out = testing::apply_and_compare(sched("cin, cout = cache_inplace(b, 0, \"local\")"));
  EXPECT_NE(out.find("where ax0 <= 9"), std::string::npos) << out;
  // The copies moved into the row tile io keep the guard.
  testing::apply_and_compare(
      sched("reorder(io, k, ii)\n  cin, cout = cache_inplace(b, 0, \"local\")\n  compute_at(cin, io)\n"
            "  reverse_compute_at(cout, io)"));
}

// The rows of the nest strided (`vi = io * 2 + ii` with ii outside the block's own nest, held by
// another block): the hull over the nest holds the rows of the other ii, which no instance of
// this run reads.
TEST(SchedFuzzR19, CacheInplaceStridedRowsRefused) {
  EXPECT_EQ(
      schedule_refusal(R"(func g(A: f32[10, 4]) -> (C: f32[10], D: f32[2]) {
  for i in serial(10) {
    block C_init(vi: spatial(10) = i) { C[vi] = 1.0 }
  }
  for ii in serial(2) {
    for io, k in grid(5, 4) {
      block acc(vi: spatial(10) = io * 2 + ii, vk: reduce(4) = k) {
        C[vi] = C[vi] + A[vi, vk]
      }
    }
    block d(vd: spatial(2) = ii) { D[vd] = 0.0 }
  }
}
schedule g {
  cin, cout = cache_inplace(get_block("acc"), 0, "local")
}
)"),
      "cache_inplace: the iter vars of block acc do not run every value between their bounds in its loop "
      "nest, so the copies of C would hold elements the block does not read");
}

// Review r1 of round 19, finding F2: a blockized block holding a row sum whose init writes another
// buffer (D) was refused for "an init: it writes C"; now the reason names what is refused: the
// accesses of C in the nested block (not analysed: the copies need one index tuple of the block's
// own iter vars).
TEST(SchedFuzzR19, CacheInplaceBlockizedNamesTheReason) {
  EXPECT_EQ(
      schedule_refusal(R"(func g(A: f32[8, 4]) -> (C: f32[8]) {
  alloc D: f32[8]
  for i in serial(8) {
    block C_init(vi: spatial(8) = i) { C[vi] = 1.0 }
  }
  for i in serial(8) {
    for k in serial(4) {
      block dsum(vi: spatial(8) = i, vk: reduce(4) = k) {
        init { D[vi] = 0.0 }
        D[vi] += A[vi, vk]
      }
    }
    block upd(vi: spatial(8) = i) { C[vi] = C[vi] + D[vi] }
  }
}
schedule g {
  i = get_loops(get_block("upd"))[0]
  ob = blockize(i)
  cin, cout = cache_inplace(ob, "C", "local")
}
)"),
      "cache_inplace: block blockized does not read each element of C it accesses before writing it at "
      "one index (it accesses C in a nested block), so the copy-in could read elements the block does not "
      "read");
}

// Review r1 of round 19, finding F3: a parallel loop inside the block's own nest was refused
// ("loop io above block acc is not serial"), though the copies go around the nest; the other
// order (cache_inplace, then parallel) was accepted. Only a loop above the nest is refused now.
TEST(SchedFuzzR19, CacheInplaceParallelInsideTheNest) {
  const char* text = R"(func g(A: f32[16, 16], B: f32[16, 16]) -> (C: f32[16, 16]) {
  for i, j in grid(16, 16) {
    block C_init(vi: spatial(16) = i, vj: spatial(16) = j) {
      C[vi, vj] = A[vi, vj]
    }
  }
  for i, k, j in grid(16, 16, 16) {
    block acc(vi: spatial(16) = i, vj: spatial(16) = j, vk: reduce(16) = k) {
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
schedule g {
  b = get_block("acc")
  i, k, j = get_loops(b)
  io, ii = split(i, [None, 4])
  SCHED
}
)";
  auto sched = [&](const std::string& x) {
    std::string t = text;
    t.replace(t.find("SCHED"), 5, x);
    return t;
  };
  testing::apply_and_compare(sched("parallel(io)\n  cin, cout = cache_inplace(b, 0, \"local\")"));
  testing::apply_and_compare(sched("vectorize(j)\n  cin, cout = cache_inplace(b, 0, \"local\")"));
  // A parallel loop above the nest (the copies moved into io first) stays refused.
  EXPECT_EQ(
      schedule_refusal(
          sched("cin, cout = cache_inplace(b, 0, \"local\")\n  compute_at(cin, io)\n"
                "  reverse_compute_at(cout, io)\n  parallel(io)\n  c2 = cache_inplace(b, 0, \"global\")")),
      "cache_inplace: loop io above block acc is not serial (the copies of C_local made in its iterations "
      "could overlap)");
}

}  // namespace
}  // namespace tirc

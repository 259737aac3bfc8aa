// parallel / bind over the reduce loop of autodiff's scatter-adds into an *intermediate's*
// adjoint (a function-level alloc, `T_grad[I[vn], vd] += Y_grad[vn, vd]`). The scratch-buffer
// check refused it ("iterations share the scratch buffer T_grad") while the same scatter into
// a parameter's adjoint was accepted: atomic updates commute, so sharing the buffer is fine
// as long as every access of it in the loop is such an update (zoo round 16, emb_tanh).
#include <gtest/gtest.h>

#include "schedule_checks.h"

namespace tirc {
namespace {

// F_grad of `T = tanh(W); Y[n, d] = T[I[n], d]` as `tirc grad` prints it, plus `extra`
// inside the scatter's loop nest.
std::string emb_grad(const std::string& extra, const std::string& schedule) {
  return R"(func g(W: f32[5, 3], I: i32[4] in [0, 4], Y_grad: f32[4, 3]) -> (W_grad: f32[5, 3], Z: f32[4, 3]) {
  alloc T_grad: f32[5, 3]
  for i2, i3 in grid(5, 3) {
    block T_grad_init(v2: spatial(5) = i2, v3: spatial(3) = i3) { T_grad[v2, v3] = 0.0 }
  }
  for n in serial(4) {
    for d in serial(3) {
      block y_dT(vn0: reduce(4) = n, vd0: spatial(3) = d) {
        reads I[vn0], T_grad[0:5, vd0], Y_grad[vn0, vd0]
        writes T_grad[0:5, vd0]
        annotate("atomic", 1)
        T_grad[I[vn0], vd0] = T_grad[I[vn0], vd0] + Y_grad[vn0, vd0]
      }
)" + extra + R"(    }
  }
  for ax2, ax3 in grid(5, 3) {
    block t_dW(v4: spatial(5) = ax2, v5: spatial(3) = ax3) {
      W_grad[v4, v5] = T_grad[v4, v5] * (1.0 - tanh(W[v4, v5]) * tanh(W[v4, v5]))
    }
  }
  for n, d in grid(4, 3) {
    block z(vn: spatial(4) = n, vd: spatial(3) = d) { Z[vn, vd] = Y_grad[vn, vd] * 2.0 }
  }
}
schedule g {
)" + schedule + "}\n";
}

const char* kParallelN = R"(  n, d = sch.get_loops(sch.get_block("y_dT"))
  sch.parallel(n)
)";

TEST(AtomicScratch, ParallelScatterAddIntoAnIntermediatesAdjoint) {
  std::string out = testing::apply_and_compare(emb_grad("", kParallelN));
  EXPECT_NE(out.find("for n in parallel(4)"), std::string::npos) << out;
}

TEST(AtomicScratch, BindScatterAddIntoAnIntermediatesAdjoint) {
  std::string out = testing::apply_and_compare(emb_grad("", R"(  n, d = sch.get_loops(sch.get_block("y_dT"))
  sch.bind(n, "blockIdx.x")
  sch.bind(d, "threadIdx.x")
)"));
  EXPECT_NE(out.find("thread_binding(4, \"blockIdx.x\")"), std::string::npos) << out;
}

TEST(AtomicScratch, TwoScatterAddsIntoOneScratchInOneParallelLoop) {
  testing::apply_and_compare(emb_grad(R"(      block y_dT2(vn1: reduce(4) = n, vd1: spatial(3) = d) {
        reads I[vn1], T_grad[0:5, vd1], Y_grad[vn1, vd1]
        writes T_grad[0:5, vd1]
        annotate("atomic", 1)
        T_grad[(I[vn1] + 1) % 5, vd1] = T_grad[(I[vn1] + 1) % 5, vd1] + Y_grad[vn1, vd1] * 0.5
      }
)",
                                      kParallelN));
}

// A plain read of the accumulated scratch in the same loop sees other iterations' partial
// sums: still refused.
TEST(AtomicScratch, APlainReaderOfTheScratchInTheLoopIsStillRefused) {
  EXPECT_EQ(testing::schedule_refusal(emb_grad(R"(      block peek(vn1: spatial(4) = n, vd1: spatial(3) = d) {
        Z[vn1, vd1] = T_grad[0, vd1]
      }
)",
                                               kParallelN)),
            "parallel: loop n: iterations share the scratch buffer T_grad (written by block y_dT): index it by "
            "the loop or allocate it in the block");
}

// A "local" scratch is one copy per thread on a GPU: the threads' adds would not meet.
TEST(AtomicScratch, BindIntoALocalScratchIsRefused) {
  std::string text = emb_grad("", R"(  n, d = sch.get_loops(sch.get_block("y_dT"))
  sch.bind(n, "threadIdx.x")
)");
  size_t at = text.find("alloc T_grad: f32[5, 3]");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + std::string("alloc T_grad: f32[5, 3]").size(), " scope \"local\"");
  EXPECT_EQ(testing::schedule_refusal(text),
            "bind: loop n: iterations share the scratch buffer T_grad (written by block y_dT): index it by the "
            "loop or allocate it in the block");
}

// vectorize has no atomic scatter: refused as before.
TEST(AtomicScratch, VectorizeOfTheScatterLoopIsStillRefused) {
  EXPECT_NE(testing::schedule_refusal(emb_grad("", R"(  n, d = sch.get_loops(sch.get_block("y_dT"))
  sch.vectorize(n)
)")),
            "(not refused)");
}

}  // namespace
}  // namespace tirc

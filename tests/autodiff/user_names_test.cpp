// Refusals that name blocks or buffers the user never wrote say what they were generated for
// (user_names.h, docs/autodiff.md "Refused").
#include "transforms/autodiff/user_names.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/autodiff/refusal_of.h"

namespace tirc {
namespace {

using testing::parse_one;
using testing::refusal_of;

// Gauss-Seidel as plain loops: normalisation wraps the stores into blocks and splits the
// scalar accumulator S into pieces (S_p_1); the refusal names that piece, so it also names
// buffer S and the user's store to it.
TEST(UserNames, GeneratedBlockNamesTheUsersBufferAndStore) {
  std::string got = refusal_of(R"(func gs(A: f32[4, 4], Bv: f32[4]) -> (X: f32[4]) {
  alloc S: f32[1]
  for i in serial(4) {
    X[i] = 0.0
  }
  for k in serial(3) {
    for i in serial(4) {
      S[0] = Bv[i]
      for j in serial(4) {
        if j != i {
          S[0] = S[0] - (A[i, j] * 0.2) * X[j]
        }
      }
      X[i] = S[0] / (A[i, i] + 4.0)
    }
  }
})",
                               "gs");
  EXPECT_NE(got.find("block S_p_1: in a recurrence through several blocks"), std::string::npos) << got;
  EXPECT_NE(got.find("(S_p_1: a block generated for buffer S, from the store at gs.tir:11:11)"),
            std::string::npos)
      << got;
}

// The note names the buffer the generated block stores (review of round 17: a split piece
// was noted with the buffer of its let group's first store). The round-17 example (`H[t] =
// c[0] * g; c[0] = c[0] * g + X[t]`) is accepted since helper round 18 (rewrite 6 keeps H[t]
// beside the state); a second store to H after the update keeps it refused.
TEST(UserNames, GeneratedBlockNamesTheBufferItStores) {
  std::string got = refusal_of(R"(func f(X: f64[5]) -> (H: f64[5]) {
  alloc c: f64[1]
  c[0] = 0.1
  for t in serial(5) {
    let g = sigmoid(X[t])
    H[t] = c[0] * g
    c[0] = c[0] * g + X[t]
    H[t] = H[t] + c[0]
  }
})",
                               "f");
  EXPECT_NE(got.find("index the store to c"), std::string::npos) << got;
  EXPECT_NE(got.find("(c_1: a block generated for buffer c, from the store at f.tir:7:5)"), std::string::npos)
      << got;
}

// Names of the user's function are left alone; suffixes the reverse pass appends are read.
TEST(UserNames, SuffixesOfTheReversePass) {
  Function f = parse_one(R"(func f(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block sb(vi: spatial(4) = i) { Y[vi] = X[vi] * 2.0 }
  }
})",
                         "f");
  EXPECT_EQ(ad::explain_generated_names("block sb: Y", *f, nullptr), "block sb: Y");
  EXPECT_EQ(ad::explain_generated_names("block sb_rev: the store to sb_tape", *f, nullptr),
            "block sb_rev: the store to sb_tape (sb_rev: the backward step of block sb; sb_tape: values "
            "stored by the backward step of block sb)");
  EXPECT_EQ(ad::explain_generated_names("a store reads Y_hist", *f, nullptr),
            "a store reads Y_hist (Y_hist: the history of state buffer Y)");
}

}  // namespace
}  // namespace tirc

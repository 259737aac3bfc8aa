// Found by reviewing round 16's recurrence rewrites: a `where` that loads a state. The scan
// state rewrite keeps the state in a history buffer and writes the buffer itself after the
// loop, so a predicate loading it (`where S[j] > 0.0`) saw the state before the loop in F_grad:
// check-grad failed (error 0.3 to 1.9) with no refusal. The state's own block (new this round)
// and a reader block in the same step (older: read_history rewrites body and init, not the
// predicate) are refused now.
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "tests/autodiff/parse_one.h"
#include "tests/autodiff/refusal_of.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

using testing::parse_one;

using testing::refusal_of;

const char* kStateUnderALoadingWhere = R"(func f(X: f64[5, 3], W: f64[3]) -> (S: f64[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
    }
  }
  for t in serial(5) {
    for j in serial(3) {
        block step(vt: scan(5) = t, vj: spatial(3) = j) {
          where S[j] > 0.0
          S[vj] = tanh(S[vj] + X[vt, vj])
        }
    }
  }
}
)";
const char* kTwoStatesUnderALoadingWhere = R"(func f(X: f64[5, 3], W: f64[3]) -> (S: f64[3], Q: f64[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      S[vj] = W[vj]
      Q[vj] = 0.5
    }
  }
  for t in serial(5) {
    for j in serial(3) {
        block step(vt: scan(5) = t, vj: spatial(3) = j) {
          where S[j] > 0.0
          let z = S[vj] * Q[vj] + X[vt, vj]
          S[vj] = tanh(z)
          Q[vj] = sigmoid(z) * Q[vj]
        }
    }
  }
}
)";
const char* kReaderUnderAWhereOnTheState = R"(func f(X: f64[5, 3], W: f64[3]) -> (H: f64[5, 3], Q: f64[3]) {
  for j in serial(3) {
    block i(vj: spatial(3) = j) {
      Q[vj] = W[vj]
    }
  }
  for t in serial(5) {
    for j in serial(3) {
        block q(vt: scan(5) = t, vj: spatial(3) = j) {
          Q[vj] = tanh(Q[vj] * 1.5 + X[vt, vj])
        }
    }
    for j in serial(3) {
        block out(vt: scan(5) = t, vj: spatial(3) = j) {
          where Q[j] > 0.0
          H[vt, vj] = X[vt, vj] * 2.0
        }
    }
  }
}
)";

TEST(ReviewFixR16, StateUnderAWhereThatLoadsItIsRefused) {
  EXPECT_NE(refusal_of(kStateUnderALoadingWhere).find("block step: a scan step must write elements of its own"),
            std::string::npos);
}

TEST(ReviewFixR16, TwoStatesUnderAWhereThatLoadsOneAreRefused) {
  EXPECT_NE(refusal_of(kTwoStatesUnderALoadingWhere).find("block step:"), std::string::npos);
}

TEST(ReviewFixR16, ReaderWhoseWhereLoadsAStateIsRefused) {
  EXPECT_NE(refusal_of(kReaderUnderAWhereOnTheState).find("block q: a scan step must write elements of its own"),
            std::string::npos);
}

}  // namespace
}  // namespace tirc

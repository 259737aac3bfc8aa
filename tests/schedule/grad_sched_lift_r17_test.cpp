// Round 17 (helper h1): sound schedules of derived gradients that compute_at /
// reverse_compute_at used to refuse (docs/schedule.md, "Round 17"). Each lifted form derives
// F_grad with autodiff, applies the schedule and compares the scheduled F_grad with the
// unscheduled one in the interpreter (random inputs, parallel loops also run backwards, printed
// text re-parsed: tvm_style_files.h expect_scheduled_matches). Forms still refused assert the
// message.
#include <gtest/gtest.h>

#include <regex>

#include "grad_schedule_checks.h"

namespace tirc {
namespace {

using testing::grad_schedule_matches;
using testing::grad_schedule_refusal;

std::string with(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

const char* kSoftmax = R"(func softmax(X: f32[4, 12] in [-3.0, 3.0]) -> (Y: f32[4, 12]) {
  alloc M: f32[4]
  alloc E: f32[4, 12]
  alloc S: f32[4]
  for i, k in grid(4, 12) {
    block row_max(vi: spatial(4) = i, vk: reduce(12) = k) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vk])
    }
  }
  for i, j in grid(4, 12) {
    block exp(vi: spatial(4) = i, vj: spatial(12) = j) { E[vi, vj] = exp(X[vi, vj] - M[vi]) }
  }
  for i, k in grid(4, 12) {
    block row_sum(vi: spatial(4) = i, vk: reduce(12) = k) {
      init { S[vi] = 0.0 }
      S[vi] += E[vi, vk]
    }
  }
  for i, j in grid(4, 12) {
    block norm(vi: spatial(4) = i, vj: spatial(12) = j) { Y[vi, vj] = E[vi, vj] / S[vi] }
  }
}
schedule softmax_grad {
  d = get_block("row_max_dX")
  i = get_loops(d)[0]
  compute_at(get_block("row_max_arg"), i)
  SCHED
}
)";

// (a) compute_at of an accumulation without init (autodiff's `M_grad[v] -= hoist0[v, r]`,
// zero-filled by the separate block M_grad_init) under the row loop of its consumer: each row
// of M_grad is accumulated whole, once, in its iteration, after the zero-fill. Then the
// zero-fill itself moves into the same loop (c: it now has another writer, the accumulation,
// under the loop).
TEST(GradSchedLiftR17, ComputeAtAccumulationWithoutInit) {
  grad_schedule_matches(with(kSoftmax, "SCHED", "compute_at(get_block(\"exp_dM\"), i)"), "softmax");
  grad_schedule_matches(with(kSoftmax, "SCHED",
                             "compute_at(get_block(\"exp_dM\"), i)\n"
                             "  compute_at(get_block(\"M_grad_init\"), i)"),
                        "softmax");
  // The zero-fill first: its accumulation exp_dM (another writer) runs between it and the
  // loop, and would accumulate into the uninitialised M_grad.
  std::string msg =
      grad_schedule_refusal(with(kSoftmax, "SCHED", "compute_at(get_block(\"M_grad_init\"), i)"), "softmax");
  EXPECT_EQ(msg, "compute_at: buffer M_grad is also written by block exp_dM");
  // A spatial in-place update (row_sum_dE: E_grad[v] += S_grad[row]) after its overwriting
  // producer norm_dE, moved under the consumer hoist0's row loop with its producer.
  grad_schedule_matches(with(kSoftmax, "SCHED",
                             "h = get_block(\"hoist0\")\n"
                             "  r = get_loops(h)[0]\n"
                             "  compute_at(get_block(\"row_sum_dE\"), r)\n"
                             "  compute_at(get_block(\"norm_dE\"), r)"),
                        "softmax");
}

// Hand-written accumulations: what must still be refused.
const char* kAcc = R"(func f(A: f32[8, 6], B: f32[8]) -> (D: f32[8]) {
  alloc X: f32[8]
  for i in serial(8) {
    block X_init(vi: spatial(8) = i) { X[vi] = B[vi] }
  }
  for i, k in grid(8, 6) {
    block acc(vi: spatial(8) = i, vk: reduce(6) = k) { X[vi] = X[vi] + A[vi, vk] }
  }
  MID
  for i in serial(LOOP) {
    block D(vi: spatial(8) = i) { D[vi] = READ }
  }
}
schedule f {
  d = get_block("D")
  i = get_loops(d)[0]
  SCHED
}
)";

std::string acc(const std::string& mid, const std::string& loop, const std::string& read,
                const std::string& sched) {
  return with(with(with(with(kAcc, "MID", mid), "LOOP", loop), "READ", read), "SCHED", sched);
}

TEST(GradSchedLiftR17, AccumulationRefusals) {
  const std::string at = "compute_at(get_block(\"acc\"), i)";
  // Accepted: one row per iteration; a split loop (two rows per iteration).
  testing::apply_and_compare(acc("", "8", "X[vi] * 2.0", at));
  testing::apply_and_compare(
      acc("", "8", "X[vi] * 2.0", "io, ii = split(i, [4, 2])\n  compute_at(get_block(\"acc\"), io)"));
  // Rows read by two iterations: the accumulation would run twice for them.
  EXPECT_EQ(testing::schedule_refusal(acc("", "7", "X[vi] + X[vi + 1]", at)),
            "compute_at: the parts of X computed in the iterations of loop i do not cover it exactly once "
            "(block acc updates X in place)");
  // Every row in every iteration.
  EXPECT_EQ(testing::schedule_refusal(acc("", "8", "X[7 - vi] + X[vi]", at)),
            "compute_at: the parts of X computed in the iterations of loop i do not cover it exactly once "
            "(block acc updates X in place)");
  // A reader between the accumulation and the loop would see X half accumulated.
  const std::string reader = "for i in serial(8) {\n    block E(vi: spatial(8) = i) { Q[vi] = X[vi] }\n  }";
  EXPECT_EQ(testing::schedule_refusal(
                with(acc(reader, "8", "X[vi] * 2.0", at), "-> (D: f32[8])", "-> (D: f32[8], Q: f32[8])")),
            "compute_at: consumer block E of block acc is not under loop i");
  // Another writer between them.
  const std::string writer =
      "for i in serial(8) {\n    block E(vi: spatial(8) = i) { X[vi] = X[vi] * 0.5 }\n  }";
  EXPECT_EQ(testing::schedule_refusal(acc(writer, "8", "X[vi] * 2.0", at)),
            "compute_at: buffer X is also written by block E");
  // An update reading another element of X is not in place.
  std::string shifted = acc("", "8", "X[vi] * 2.0", at);
  shifted = with(shifted, "X[vi] = X[vi] + A[vi, vk]", "X[vi] = X[7 - vi] + A[vi, vk]");
  EXPECT_EQ(testing::schedule_refusal(shifted),
            "compute_at: block acc reads buffer X, which it writes, and is not a reduction with init");
  // Reader after the loop: needs every row computed; a loop over half the rows does not.
  const std::string after =
      "for i in serial(8) {\n    block F(vi: spatial(8) = i) { D[vi] = D[vi] + X[vi] }\n  }";
  std::string later = with(acc("", "8", "X[vi] * 2.0", at), "schedule f", after + "\n}\nschedule f");
  later = with(later, "  }\n}\n" + after, "  }\n" + after);
  testing::apply_and_compare(later);
}

// (c) compute_at of a zero-fill when another block also writes the buffer, after the loop
// (cross entropy's X_grad: the rows are accumulated under the loop, and row_max_dX adds the
// max's gradient after it).
TEST(GradSchedLiftR17, ComputeAtZeroFillWithWriterAfterTheLoop) {
  const char* text = R"(func cross_entropy(X: f32[6, 10] in [-3.0, 3.0], I: i32[6] in [0, 9]) -> (L: f32[1]) {
  alloc M: f32[6]
  alloc S: f32[6]
  for n, c in grid(6, 10) {
    block row_max(vn: spatial(6) = n, vc: reduce(10) = c) {
      init { M[vn] = min_value(f32) }
      M[vn] = max(M[vn], X[vn, vc])
    }
  }
  for n, c in grid(6, 10) {
    block row_sum(vn: spatial(6) = n, vc: reduce(10) = c) {
      init { S[vn] = 0.0 }
      S[vn] += exp(X[vn, vc] - M[vn])
    }
  }
  for n in serial(6) {
    block loss(vn: reduce(6) = n) {
      init { L[0] = 0.0 }
      L[0] += (M[vn] + log(S[vn]) - X[vn, I[vn]]) / 6.0
    }
  }
}
schedule cross_entropy_grad {
  l = get_block("loss_dM_dS")
  n = get_loops(l)[0]
  reverse_compute_at(get_block("hoist3"), n)
  reverse_compute_at(get_block("row_sum_dX"), n)
  reverse_compute_at(get_block("row_sum_dM"), n)
  compute_at(get_block("row_sum"), n)
  compute_at(get_block("hoist0"), n)
  compute_at(get_block("hoist1"), n)
  compute_at(get_block("X_grad_init"), n)
}
)";
  grad_schedule_matches(text, "cross_entropy");
}

// compute_at of a zero-fill when another writer shares the loop's top-level statement, or
// runs between it and the loop: refused.
TEST(GradSchedLiftR17, ZeroFillWithWriterInBetweenRefused) {
  const char* text = R"(func f(A: f32[8]) -> (D: f32[8]) {
  alloc X: f32[8]
  for i in serial(8) {
    block Z(vi: spatial(8) = i) { X[vi] = 0.0 }
  }
  for i in serial(8) {
    block W(vi: spatial(8) = i) { X[vi] = X[vi] + A[vi] }
  }
  for i in serial(8) {
    block U(vi: spatial(8) = i) { X[vi] = X[vi] * A[vi] }
    block D(vi: spatial(8) = i) { D[vi] = X[vi] }
  }
}
schedule f {
  d = get_block("D")
  i = get_loops(d)[0]
  SCHED
}
)";
  EXPECT_EQ(testing::schedule_refusal(with(text, "SCHED", "compute_at(get_block(\"Z\"), i)")),
            "compute_at: buffer X is also written by block W");
  // W first (an in-place update with the updater U under the loop), then Z after it.
  testing::apply_and_compare(
      with(text, "SCHED", "compute_at(get_block(\"W\"), i)\n  compute_at(get_block(\"Z\"), i)"));
}

// A strided gradient (conv2d_transpose's dilation): conv_dP accumulates P_grad densely, but
// dilate_pad_dX reads only its odd rows and columns. compute_at under dilate_pad_dX's column
// loop computes just those points, each once: the parts are disjoint (`2 * y + 1`), and the
// others are never read (P_grad is an intermediate), so they need not be computed.
TEST(GradSchedLiftR17, ComputeAtStridedAccumulation) {
  const char* text =
      R"(func conv2d_transpose(X: f32[1, 2, 3, 3], W: f32[2, 2, 3, 3]) -> (Y: f32[1, 2, 5, 5]) {
  alloc P: f32[1, 2, 7, 7]
  for n, c, h, w in grid(1, 2, 7, 7) {
    block dilate_pad(vn: spatial(1) = n, vc: spatial(2) = c, vh: spatial(7) = h, vw: spatial(7) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 6 && vw >= 1 && vw < 6 &&
                                       (vh - 1) % 2 == 0 && (vw - 1) % 2 == 0,
                                       X[vn, vc, (vh - 1) // 2, (vw - 1) // 2], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(1, 2, 5, 5, 2, 3, 3) {
    block conv(vn: spatial(1) = n, vf: spatial(2) = f, vy: spatial(5) = y, vx: spatial(5) = x,
               vc: reduce(2) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] += P[vn, vc, vy + vr, vx + vs] * W[vc, vf, 2 - vr, 2 - vs]
    }
  }
}
schedule conv2d_transpose_grad {
  dx = get_block("dilate_pad_dX")
  n, c, y, x = get_loops(dx)
  SCHED
}
)";
  std::string out =
      grad_schedule_matches(with(text, "SCHED", "compute_at(get_block(\"conv_dP\"), x)"), "conv2d_transpose");
  // Only the odd rows and columns: bound to `2 * loop + 1`.
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(spatial\(7\) = \w+ \* 2 \+ 1, \w+: spatial\(7\) = \w+ \* 2 \+ 1)")))
      << out;
  // At the row loop: rows 2y + 1, all columns (a whole dimension) per iteration.
  grad_schedule_matches(with(text, "SCHED", "compute_at(get_block(\"conv_dP\"), y)"), "conv2d_transpose");
}

}  // namespace
}  // namespace tirc

namespace tirc {
namespace {

const char* kCumsum = R"(func cumsum(X: f32[4, 16]) -> (Y: f32[4, 16]) {
  for i, j in grid(4, 16) {
    block scan(vi: spatial(4) = i, vj: scan(16) = j) {
      Y[vi, vj] = if_then_else(vj == 0, X[vi, vj], Y[vi, vj - 1] + X[vi, vj])
    }
  }
}
schedule cumsum_grad {
  SCHED
}
)";

// (b) reverse_compute_at on cumsum's gradient: the reverse scan loads Y_grad_1[i, 15 - j] and
// Y_grad_1[i, 14 - j] (two loads differing in the column, a dimension every iteration of the
// copy's row loop writes whole); then the two copies to X_grad: column 0 (scan_dX) and columns
// 1..15 (scan_dX_1, whose column loop is `serial(1, 16)` for an iter var of extent 16: it keeps
// that part, and its stores are apart from scan_dX's).
TEST(GradSchedLiftR17, ReverseComputeAtTwoLoadsAndPartialColumns) {
  grad_schedule_matches(with(kCumsum, "SCHED",
                             "c = get_block(\"Y_grad_1_init\")\n"
                             "  r, j = get_loops(c)\n"
                             "  reverse_compute_at(get_block(\"scan_rev\"), r)\n"
                             "  reverse_compute_at(get_block(\"scan_dX\"), r)\n"
                             "  reverse_compute_at(get_block(\"scan_dX_1\"), r)"),
                        "cumsum");
  std::string out = grad_schedule_matches(with(kCumsum, "SCHED",
                                               "s = get_block(\"scan_rev\")\n"
                                               "  r, j = get_loops(s)\n"
                                               "  reverse_compute_at(get_block(\"scan_dX_1\"), r)"),
                                          "cumsum");
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(spatial\(16\) = \w+ \+ 1\))"))) << out;
}

// (b) A strided load in dimensions the loop does not tile: conv2d_transpose's dilate_pad_dX
// reads P_grad[n, c, 2 * y + 1, 2 * x + 1], and each iteration of conv_dP's fused (n, c) loop
// writes all of P_grad[n, c, :, :].
TEST(GradSchedLiftR17, ReverseComputeAtStridedLoad) {
  const char* text =
      R"(func conv2d_transpose(X: f32[1, 2, 3, 3], W: f32[2, 2, 3, 3]) -> (Y: f32[1, 2, 5, 5]) {
  alloc P: f32[1, 2, 7, 7]
  for n, c, h, w in grid(1, 2, 7, 7) {
    block dilate_pad(vn: spatial(1) = n, vc: spatial(2) = c, vh: spatial(7) = h, vw: spatial(7) = w) {
      P[vn, vc, vh, vw] = if_then_else(vh >= 1 && vh < 6 && vw >= 1 && vw < 6 &&
                                       (vh - 1) % 2 == 0 && (vw - 1) % 2 == 0,
                                       X[vn, vc, (vh - 1) // 2, (vw - 1) // 2], 0.0)
    }
  }
  for n, f, y, x, c, r, s in grid(1, 2, 5, 5, 2, 3, 3) {
    block conv(vn: spatial(1) = n, vf: spatial(2) = f, vy: spatial(5) = y, vx: spatial(5) = x,
               vc: reduce(2) = c, vr: reduce(3) = r, vs: reduce(3) = s) {
      init { Y[vn, vf, vy, vx] = 0.0 }
      Y[vn, vf, vy, vx] += P[vn, vc, vy + vr, vx + vs] * W[vc, vf, 2 - vr, 2 - vs]
    }
  }
}
schedule conv2d_transpose_grad {
  dp = get_block("conv_dP")
  n, c, y, f, r, s, x = get_loops(dp)
  nc = fuse(n, c)
  reverse_compute_at(get_block("dilate_pad_dX"), nc)
}
)";
  grad_schedule_matches(text, "conv2d_transpose");
}

const char* kRows = R"(func f(A: f32[8, 6]) -> (D: f32[8, 6]) {
  alloc X: f32[8, 6]
  for j in serial(6) {
    block R0(vj: spatial(6) = j) { X[0, vj] = A[0, vj] }
  }
  for i, j in grid(PROWS) {
    block P(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = A[vi, vj] * 2.0 }
  }
  for i, j in grid(CROWS) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { D[vi, vj] = BODY }
  }
  for j in serial(6) {
    block D0(vj: spatial(6) = j) { D[0, vj] = X[0, vj] }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  SCHED
}
)";

std::string rows(const std::string& prows, const std::string& crows, const std::string& body,
                 const std::string& sched) {
  std::string t = with(with(with(with(kRows, "PROWS", prows), "CROWS", crows), "BODY", body), "SCHED", sched);
  return t;
}

TEST(GradSchedLiftR17, ReverseComputeAtFreeDimensionsAndPartialLoops) {
  // Producer and consumer over rows 1..7 (`serial(1, 8)`, iter vars of extent 8): the target
  // loop starts at 1 and so does the consumer's part.
  const std::string at_i = "reverse_compute_at(get_block(\"C\"), i)";
  std::string t = rows("8, 6", "8, 6", "X[vi, 5 - vj] + X[vi, vj]", at_i);
  t = with(t, "for i, j in grid(8, 6) {\n    block P",
           "for i in serial(1, 8) {\n    for j in serial(6) {\n    block P");
  t = with(t, "A[vi, vj] * 2.0 }\n  }", "A[vi, vj] * 2.0 }\n  }\n  }");
  t = with(t, "for i, j in grid(8, 6) {\n    block C",
           "for i in serial(1, 8) {\n    for j in serial(6) {\n    block C");
  t = with(t, "X[vi, vj] }\n  }\n  for j", "X[vi, vj] }\n  }\n  }\n  for j");
  testing::apply_and_compare(t);
  // The consumer over rows 1..7 but the producer over 0..7 with row 0 from R0 too: rows would
  // have to start at 1 in the producer's tiles as well.
  std::string u = rows("8, 6", "8, 6", "X[vi, vj] * 3.0", at_i);
  u = with(u, "block R0(vj: spatial(6) = j) { X[0, vj] = A[0, vj] }",
           "block R0(vj: spatial(6) = j) { D[0, vj] = A[0, vj] }");
  u = with(u, "A[vi, vj] * 2.0 }", "A[vi, vj] * 2.0 + 1.0 }");
  u = with(u, "for i, j in grid(8, 6) {\n    block C",
           "for i in serial(1, 8) {\n    for j in serial(6) {\n    block C");
  u = with(u, "X[vi, vj] * 3.0 }\n  }\n  for j", "X[vi, vj] * 3.0 }\n  }\n  }\n  for j");
  u = with(u, "block D0(vj: spatial(6) = j) { D[0, vj] = X[0, vj] }",
           "block D0(vj: spatial(6) = j) { D[0, vj] = D[0, vj] + X[0, vj] }");
  EXPECT_EQ(
      testing::schedule_refusal(u),
      "reverse_compute_at: the tiles of iter var vi do not start at multiples of their size from 1, where "
      "block C starts it");
  // Two loads differing in a dimension the loop tiles (rows i and i + 1... of the row loop).
  EXPECT_EQ(testing::schedule_refusal(rows("8, 6", "7, 6", "X[vi, vj] + X[vi + 1, vj]", at_i)),
            "reverse_compute_at: block C loads buffer X at different indices");
  // At the column loop j both dimensions are tiled: a reversed column is not an iter var.
  EXPECT_EQ(testing::schedule_refusal(
                rows("8, 6", "8, 6", "X[vi, 5 - vj]", "reverse_compute_at(get_block(\"C\"), j)")),
            "reverse_compute_at: the indices of the load of X in block C are not distinct iter vars");
  // At the row loop the column is free: a reversed or repeated column is fine.
  testing::apply_and_compare(rows("8, 6", "8, 6", "X[vi, 5 - vj] + X[vi, 0]", at_i));
}

// A consumer with a free dimension that stores into the produced buffer outside its tile
// (row vi + 1, which the next iteration's producer overwrites): refused.
TEST(GradSchedLiftR17, ReverseComputeAtStoreOutsideTheTileRefused) {
  const char* text = R"(func f(A: f32[8, 6]) -> (D: f32[8, 6]) {
  alloc X: f32[9, 6]
  for i, j in grid(9, 6) {
    block P(vi: spatial(9) = i, vj: spatial(6) = j) { X[vi, vj] = A[vi % 8, vj] * 2.0 }
  }
  for i, j in grid(8, 6) {
    block C(vi: scan(8) = i, vj: spatial(6) = j) {
      X[vi + 1, vj] = X[vi, 5 - vj] + X[vi, vj]
      D[vi, vj] = X[vi, vj]
    }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), i)
}
)";
  EXPECT_EQ(
      testing::schedule_refusal(text),
      "reverse_compute_at: block C stores X at other indices than it loads it in dimension 0, which loop i "
      "tiles");
  // A free dimension of X while another produced buffer Y is read too: refused in round 17 (Y's
  // tiles would not keep a later iteration from rewriting X); accepted since round 18 when the
  // tiles come from iter vars X's loads map, here the row (lstm_lift_r18_test.cpp has the form
  // still refused).
  const char* two = R"(func f(A: f32[8, 6]) -> (D: f32[8, 6]) {
  alloc X: f32[8, 6]
  alloc Y: f32[8, 6]
  for i, j in grid(8, 6) {
    block P(vi: spatial(8) = i, vj: spatial(6) = j) { X[vi, vj] = A[vi, vj] * 2.0 }
    block Q(vi: spatial(8) = i, vj: spatial(6) = j) { Y[vi, vj] = A[vi, vj] + 2.0 }
  }
  for i, j in grid(8, 6) {
    block C(vi: spatial(8) = i, vj: spatial(6) = j) { D[vi, vj] = X[vi, 5 - vj] + Y[vi, vj] }
  }
}
schedule f {
  p = get_block("P")
  i, j = get_loops(p)
  reverse_compute_at(get_block("C"), i)
}
)";
  testing::apply_and_compare(two);
}

}  // namespace
}  // namespace tirc

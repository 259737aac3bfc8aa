// Text-first round trips: hand-written scripts using the sugar and the inference the printer
// never emits (grid, +=, max=, else if, implicit regions, min_value, comments, `;`, ...).
// parse -> print -> parse must be structurally equal, and printing a fixpoint.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"

namespace tirc {
namespace {

struct Case {
  const char* name;
  const char* text;
};

const Case kCases[] = {
    {"sugar", R"(
# comment
func f(A: f32[8, 8], n: i32 in [1, 8]) -> (B: f32[8], C: f32[8]) {
  for i, k in grid(8, 8) {
    block red(vi: spatial(8) = i, vk: reduce(8) = k) {
      init { B[vi] = min_value(f32); }
      B[vi] max= A[vi, vk];
    }
  }
  for i in serial(8) {
    block b2(vi: spatial(8) = i) {
      if vi < 2 { C[vi] = 1.0 } else if vi < 4 { C[vi] = 2.0 } else { C[vi] = -3.0 }
      C[vi] += B[vi] * 2
      C[vi] -= 1; C[vi] *= 0.5
    }
  }
}
)"},
    {"extern_pointer_to_input", R"(
func g(A: f32[4]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      call_extern("touch", A.data, A.ptr(vi), B.ptr(vi))
      B[vi] = A[vi]
    }
  }
}
)"},
    {"explicit_root_named", R"(
func h(A: f32[4]) -> (B: f32[4]) {
  block main() {
    for i in serial(4) {
      block b(vi: spatial(4) = i) { B[vi] = A[vi] + 1.0 }
    }
  }
}
)"},
    {"nested_blocks_and_lets", R"(
func k(A: f64[4, 4], s: f64) -> (B: f64[4]) {
  let two = s * 2.0
  for i in parallel(4) {
    block outer(vi: spatial(4) = i) {
      for j in serial(4) {
        block inner(vi2: spatial(4) = vi, vj: reduce(4) = j) {
          init { B[vi2] = 0.0 }
          let t = A[vi2, vj]
          B[vi2] = B[vi2] + (let u = t * t in u + two) + f64(1)
        }
      }
    }
  }
}
)"},
    {"typed_literals", R"(
func t(A: i64[4], X: f16[4]) -> (B: i64[4], Y: f16[4], Z: u8[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      B[vi] = A[vi] * 3 + i64(2) * 5 + 9223372036854775807
      Y[vi] = X[vi] * 0.1 + f16(65504.0) - inf
      Z[vi] = u8(i32(255) - 1) + 255
    }
  }
}
)"},
    {"whole_buffer_regions", R"(
func r(A: f32[4, 2]) -> (B: f32[4]) {
  for i in serial(4) {
    block b(vi: spatial(4) = i) {
      reads A
      writes B[vi]
      B[vi] = A[vi, 0] + A[vi, 1]
    }
  }
}
)"},
    {"scan_and_where", R"(
func c(A: f32[10]) -> (B: f32[10]) {
  for i in serial(10) {
    block first(vi: spatial(1) = 0) { B[vi] = A[vi] }
  }
  for i in serial(1, 10) {
    block scan(vi: scan(10) = i) {
      where i >= 1
      B[vi] = B[vi - 1] + A[vi]
    }
  }
}
)"},
    {"intrin_and_schedule", R"(
intrin dot4 {
  desc(A: f32[4], B: f32[4], C: f32[1]) {
    for k in serial(4) {
      block d(vk: reduce(4) = k) {
        init { C[0] = 0.0 }
        C[0] += A[vk] * B[vk]
      }
    }
  }
  impl(A: f32[4], B: f32[4], C: f32[1]) {
    call_extern("dot4", A.data, B.data, C.data)
  }
}
func m(A: f32[8, 4], B: f32[4]) -> (C: f32[8]) {
  for i, k in grid(8, 4) {
    block C(vi: spatial(8) = i, vk: reduce(4) = k) {
      init { C[vi] = 0.0 }
      C[vi] += A[vi, vk] * B[vk]
    }
  }
}
schedule m {
  b = get_block("C")
  i, k = get_loops(b)
  tensorize(k, "dot4")
  annotate(b, "x", -1.5e-07)
  init = decompose_reduction(b, i)
}
)"},
    {"root_level_statements", R"(
func o(A: f32[4], n: i32) -> (B: f32[4]) {
  for i in serial(4) {
    B[i] = A[i]
    call_extern("f", B.ptr(i), i)
  }
  for i in serial(n, n + 4) {
    block b(vi: spatial(4) = i - n) { B[vi] = 1.0 }
  }
  if n > 1 { B[0] = 2.0 }
}
)"},
    {"shadowing_names", R"(
func s(A: f32[4, 4]) -> (B: f32[4, 4]) {
  for i in serial(4) {
    for j in serial(4) {
      block b(i_1: spatial(4) = i, j_1: spatial(4) = j) {
        B[i_1, j_1] = A[j_1, i_1]
      }
    }
  }
}
)"},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Text : public ::testing::TestWithParam<Case> {};

TEST_P(Text, RoundTrip) {
  const Case& c = GetParam();
  Module m1 = parse_module(c.text, std::string(c.name) + ".tir");
  std::string t1 = print_module(m1);
  Module m2;
  try {
    m2 = parse_module(t1, std::string(c.name) + ".printed.tir");
  } catch (const Error& e) {
    FAIL() << "printed text does not parse: " << e.what() << "\n--- printed ---\n" << t1;
  }
  EXPECT_EQ(structural_diff(m1, m2), std::nullopt) << "--- printed ---\n" << t1;
  EXPECT_EQ(print_module(m2), t1);
}

INSTANTIATE_TEST_SUITE_P(Cases, Text, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace tirc

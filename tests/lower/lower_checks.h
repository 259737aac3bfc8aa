// Shared check of the lowering tests: two functions give bit-identical outputs on the same
// random inputs in the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "interp/interp.h"

namespace tirc {

// Integer scalars without a declared range that `given` leaves out (symbolic sizes) get 5.
inline void expect_identical(const FunctionNode& a, const FunctionNode& b, uint64_t seed, ArgMap given = {}) {
  for (auto& p : a.params)
    if (!p.is_buffer() && !p.range && is_int(p.var.dtype()) && !given.count(p.var.name())) {
      NDArray v(p.var.dtype(), {});
      v.set(0, 5);
      given[p.var.name()] = v;
    }
  ArgMap in = random_inputs(a, seed, given);
  ArgMap ra = run_interp(a, in), rb = run_interp(b, in);
  for (auto& [k, v] : ra) {
    const NDArray& w = rb.at(k);
    ASSERT_EQ(v.shape(), w.shape());
    EXPECT_EQ(std::memcmp(v.data(), w.data(), v.nbytes()), 0) << "output " << k << " differs";
  }
}

}  // namespace tirc

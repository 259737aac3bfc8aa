// Generator of random differentiable `.tir` functions for the gradient fuzzer
// (tests/autodiff/grad_fuzz_test.cpp).
//
// generate_grad_fuzz(seed) returns the text of a module holding one function `f`: 1 to 5
// blocks in sequence over float inputs of 1 to 3 dims (extents 2..7, sometimes a symbolic `n`),
// intermediates in `alloc` buffers, one or two outputs. Loads use every kind of index map
// (identity, transposes, guarded shifts, broadcasts, strided / dilated windows, `//` and `%`,
// flattening, diagonals, clamps, products of iter vars, data-dependent gathers through i32
// index inputs), reductions (sum with or without init, max, min, product, triangular `where`),
// scans, in-place updates, lets, selects, min / max / abs and the intrinsics of LANGUAGE.md.
// Value intervals are tracked so that log / sqrt / pow / division stay defined and values stay
// bounded (the declared input ranges are what check_grad draws from). Deterministic in seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tirc::testing {

struct FuzzProgram {
  std::string text;                   // a module holding `func f`
  std::vector<int64_t> ns;            // values of the symbolic size `n` to check (empty: none)
  std::vector<std::string> features;  // tags of the constructs used, for statistics
};

// extended: also the constructs added in helper round 16 (opaque blocks with hand-written
// reads / writes, bindings `(l + k) % E`, `l % E`, `l // 2` under `where l % 2 == p`, scatter-adds
// and reductions through them, C-style plain-loop reductions, max / min with a triangular
// `where`, avg / max pools with overlap and padding (2-D windows as `r // K`, `r % K`, half
// inputs accumulated in f32), concatenations of three pieces by `if_then_else` chains, two
// stores sharing nested lets, scan blocks with two states sharing a let). Their decisions
// come from a second random stream, so a program for which none of them is chosen is the same
// as with extended = false (the programs of round 15 and before).
FuzzProgram generate_grad_fuzz(uint64_t seed, bool extended = true);

}  // namespace tirc::testing

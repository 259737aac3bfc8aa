// Test helpers for normalize_for_autodiff rewrites (normalize and init suites).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/autodiff/normalize.h"
#include "transforms/schedule/verify.h"

namespace tirc::testing {

// Normalises f, checks print/parse round trip, equal outputs and gradients; returns the
// printed normalised function.
inline std::string check_rewrite(const std::string& src, const std::string& name) {
  Function f = parse_one(src, name);
  Function n = normalize_for_autodiff(f);
  std::string text = print_function(*n);
  if (std::getenv("TIRC_NORMALIZE_TEST_PRINT")) std::printf("%s\n", text.c_str());
  EXPECT_NE(text, print_function(*f)) << "not rewritten";
  Module back = parse_module(text, "normalized.tir");
  Function nb = back.find_func(name);
  EXPECT_TRUE(nb && structural_equal(*nb, *n)) << text;
  for (uint64_t seed : {1, 2, 3}) {
    CompareOptions o;
    o.seed = seed;
    CompareResult r = compare_functions(*f, *n, o, interp_runner(), interp_runner());
    EXPECT_TRUE(r.ok) << r.detail << "\n" << text;
  }
  CheckGradOptions g;
  g.full = true;
  CheckGradResult a = check_grad(*n, g);
  EXPECT_EQ(a.failed, 0) << text;
  EXPECT_GT(a.passed, 0);
  CheckGradResult b = check_grad(*f, g);  // gradient() normalises itself
  EXPECT_EQ(b.failed, 0);
  EXPECT_EQ(b.passed, a.passed);
  // F_grad prints and re-parses.
  Module gm;
  gm.add_func(b.grad);
  Module gback = parse_module(print_module(gm), "grad.tir");
  EXPECT_TRUE(gback.find_func(name + "_grad"));
  return text;
}

inline std::string refusal(const std::string& src, const std::string& name) {
  Function f = parse_one(src, name);
  Function n = normalize_for_autodiff(f);
  EXPECT_TRUE(structural_equal(*n, *f)) << "rewritten:\n" << print_function(*n);
  try {
    gradient(*f, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace tirc::testing

// Differential fuzzer for block-level autodiff (helper round h1): random differentiable
// functions (grad_fuzz_gen.h) checked by finite differences in f64.
//
// Per program: the forward must run (else the generator is wrong: a failure); gradient()
// either refuses with a tirc::Error naming a block (counted by category) or returns F_grad,
// which must print, re-parse to a structurally equal function, print to the same text again,
// and run (re-parsed and original give bit-identical results); check_grad --full must pass
// (a failure is re-checked on another seed before it counts: random inputs may land next to
// a kink of max / abs / select); for every third program the second order (the gradient of
// the printed and re-parsed F_grad) must be refused naming a block, or round-trip and run as
// F_grad does and pass check_grad too.
//
// The default test runs a few seconds from a fixed seed. A long run (several seeds):
//   TIRC_GF_SEED=100 TIRC_GF_ITERS=2000 TIRC_GF_VERBOSE=1 build/test_autodiff
//     --gtest_also_run_disabled_tests --gtest_filter='GradFuzz.DISABLED_Long'
// TIRC_GF_VERBOSE=1 prints each refusal; TIRC_GF_VERBOSE=2 also every program.
// TIRC_GF_ONLY=K runs program K of the seed only (reproducing one failure);
// TIRC_GF_SECOND_ALL=1 checks the second order of every program (default: every third);
// TIRC_GF_CLASSIC=1 generates without the round 16 constructs (the programs of earlier rounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/autodiff/full_checks.h"
#include "tests/autodiff/grad_fuzz_gen.h"
#include "tests/sanitized.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

struct Stats {
  int programs = 0, invalid = 0, refused = 0, checked = 0, second = 0, second_refused = 0, flaky = 0;
  std::map<std::string, int> categories, second_categories, features;
  std::vector<std::string> failures;
};

int verbose() {
  const char* v = std::getenv("TIRC_GF_VERBOSE");
  return v ? std::atoi(v) : 0;
}

// A refusal message without the generated names, so that refusals group by construct.
std::string category(const std::string& msg) {
  std::string m = msg;
  size_t at = m.find("error: ");
  if (at != std::string::npos) m = m.substr(at + 7);
  static const std::regex names(
      R"(\b(b\d+\w*|[TXYI]\d+(_\w+)?|[lf]?[vr]\d+|lvt|vt|t\d+|-?\d+(\.\d+)?(e[-+]?\d+)?)\b)");
  m = std::regex_replace(m, names, "#");
  if (m.size() > 110) m = m.substr(0, 110);
  return m;
}

std::string notes_of(const CheckGradResult& r) {
  std::string s;
  for (auto& in : r.inputs)
    for (auto& n : in.notes) s += "  " + in.name + ": " + n + "\n";
  return s;
}

// check_grad --full on seed, re-checked on two more seeds when it fails. Returns "" (passed),
// "flaky" (passed on a re-check) or the failure.
std::string checked_grad(const FunctionNode& f, const ArgMap& given) {
  CheckGradOptions o;
  o.full = true;
  o.given = given;
  std::string first;
  for (uint64_t seed : {1u, 2u, 3u}) {
    o.seed = seed;
    CheckGradResult r = check_grad(f, o);
    if (r.failed == 0) {
      if (seed != 1 && verbose())
        std::fprintf(stderr, "FLAKY (passed on seed %d): %s\n", static_cast<int>(seed), first.c_str());
      return seed == 1 ? "" : "flaky";
    }
    if (first.empty()) first = "check_grad FAILED (seed " + std::to_string(seed) + ")\n" + notes_of(r);
    if (seed == 2) return first + "\nF_grad:\n" + print_function(*r.grad);
  }
  return first;
}

// Runs f in f64 on random inputs; the outputs.
ArgMap run64(const FunctionNode& f, const ArgMap& given) {
  InterpOptions io;
  io.promote_f64 = true;
  return run_interp(f, random_inputs(f, 7, given), io);
}

bool bit_equal(const ArgMap& a, const ArgMap& b) {
  if (a.size() != b.size()) return false;
  for (auto& [k, x] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.numel() != x.numel()) return false;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double u = x.get(i), v = it->second.get(i);
      if (!(u == v || (std::isnan(u) && std::isnan(v)))) return false;
    }
  }
  return true;
}

// g printed, parsed back (*back), compared (same IR, same text, bit-identical results in f64);
// "" when fine.
std::string round_trip(const Function& g, const ArgMap& given, Function* back_fn) {
  Module gm;
  gm.add_func(g);
  std::string text = print_module(gm);
  Module back;
  try {
    back = parse_module(text, "fuzz_grad.tir");
  } catch (const Error& e) {
    return std::string("F_grad does not re-parse: ") + e.what() + "\n" + text;
  }
  Function g2 = back.find_func(g->name);
  if (!g2) return "no " + g->name + " after re-parse\n" + text;
  if (auto d = structural_diff(*g, *g2)) return "F_grad re-parsed differs: " + *d + "\n" + text;
  if (print_module(back) != text) return "F_grad printing is not a fixpoint\n" + text;
  try {
    if (!bit_equal(run64(*g, given), run64(*g2, given)))
      return "re-parsed F_grad computes other values\n" + text;
  } catch (const Error& e) {
    return std::string("F_grad does not run: ") + e.what() + "\n" + text;
  }
  *back_fn = g2;
  return "";
}

// One program at one value of n; "" when fine.
std::string run_program(const testing::FuzzProgram& p, const ArgMap& given, bool second, Stats& st) {
  Function f;
  try {
    f = parse_module(p.text, "fuzz.tir").find_func("f");
    run_interp(*f, random_inputs(*f, 1, given));
  } catch (const Error& e) {
    ++st.invalid;
    return std::string("generator made an invalid program: ") + e.what();
  }
  Function g;
  try {
    g = gradient(*f, {});
  } catch (const Error& e) {
    std::string m = e.what();
    ++st.refused;
    ++st.categories[category(m)];
    if (verbose()) std::fprintf(stderr, "REFUSED %s\n%s\n", m.c_str(), p.text.c_str());
    if (m.find("block") == std::string::npos && m.find("gradient of") == std::string::npos)
      return "refusal naming no block: " + m;
    return "";
  }
  Function g2;
  std::string err = round_trip(g, given, &g2);
  if (!err.empty()) return err;
  std::string r;
  try {
    r = checked_grad(*f, given);
  } catch (const Error& e) {
    return std::string("check_grad error: ") + e.what() + "\n" + print_function(*g);
  }
  if (r == "flaky") ++st.flaky, r.clear();
  if (!r.empty()) return r;
  ++st.checked;
  if (!second) return "";
  ++st.second;
  // A refusal is gradient() of F_grad throwing; once it returns, the second gradient must
  // print, parse back, run and pass check_grad like the first (an interpreter error there,
  // e.g. an out-of-bounds load, is a failure, not a refusal).
  Function gg;
  try {
    gg = gradient(*g2, {});
  } catch (const Error& e) {
    std::string m = e.what();
    if (m.find("block") == std::string::npos && m.find("gradient of") == std::string::npos)
      return "second order refusal naming no block: " + m;
    ++st.second_refused;
    ++st.second_categories[category(m)];
    if (verbose()) std::fprintf(stderr, "REFUSED (second order) %s\n%s\n", m.c_str(), p.text.c_str());
    return "";
  }
  Function unused;
  err = round_trip(gg, given, &unused);
  if (!err.empty()) return "second order: " + err;
  try {
    r = checked_grad(*g2, given);
  } catch (const Error& e) {
    return std::string("second order check_grad error: ") + e.what() + "\n" + print_function(*g);
  }
  if (r == "flaky") ++st.flaky, r.clear();
  if (!r.empty()) return "second order: " + r;
  return "";
}

void run_fuzz(uint64_t seed0, int iters) {
  Stats st;
  int only = -1;
  if (const char* e = std::getenv("TIRC_GF_ONLY")) only = std::atoi(e), iters = std::max(iters, only + 1);
  for (int i = 0; i < iters; ++i) {
    if (only >= 0 && i != only) continue;
    testing::FuzzProgram p = testing::generate_grad_fuzz(seed0 * 1000003u + static_cast<uint64_t>(i),
                                                             !std::getenv("TIRC_GF_CLASSIC"));
    ++st.programs;
    for (auto& t : p.features) ++st.features[t];
    if (verbose() >= 2) std::fprintf(stderr, "--- program %d\n%s", i, p.text.c_str());
    std::vector<int64_t> ns = p.ns.empty() ? std::vector<int64_t>{-1} : p.ns;
    for (int64_t n : ns) {
      ArgMap given = n < 0 ? ArgMap{} : testing::i32_scalars({{"n", n}});
      std::string err;
      try {
        err = run_program(p, given, i % 3 == 0 || std::getenv("TIRC_GF_SECOND_ALL"), st);
      } catch (const std::exception& e) {
        err = std::string("exception (not a tirc::Error): ") + e.what();
      }
      if (!err.empty()) {
        std::string where = "program " + std::to_string(i) + " of seed " + std::to_string(seed0) +
                            (n >= 0 ? " (n = " + std::to_string(n) + ")" : "");
        st.failures.push_back(where);
        ADD_FAILURE() << where << ":\n" << p.text << "\n" << err;
        break;
      }
    }
  }
  std::printf(
      "grad fuzz (seed %llu): %d programs, %d invalid, %d refused, %d checked (%d flaky re-checked), "
      "second order %d (%d refused), %zu failures\n",
      static_cast<unsigned long long>(seed0), st.programs, st.invalid, st.refused, st.checked, st.flaky,
      st.second, st.second_refused, st.failures.size());
  for (auto& [c, n] : st.categories) std::printf("  refused %4d  %s\n", n, c.c_str());
  for (auto& [c, n] : st.second_categories) std::printf("  refused (2nd) %4d  %s\n", n, c.c_str());
  if (verbose()) {
    std::printf("  features:");
    for (auto& [t, n] : st.features) std::printf(" %s=%d", t.c_str(), n);
    std::printf("\n");
  }
}

TEST(GradFuzz, FixedSeed) {
#ifdef TIRC_TEST_SANITIZED
  run_fuzz(1, 5);
#else
  run_fuzz(1, 40);
#endif
}

TEST(GradFuzz, DISABLED_Long) {
  uint64_t seed = 100;
  int iters = 500;
  if (const char* e = std::getenv("TIRC_GF_SEED")) seed = std::strtoull(e, nullptr, 10);
  if (const char* e = std::getenv("TIRC_GF_ITERS")) iters = std::atoi(e);
  run_fuzz(seed, iters);
}

}  // namespace
}  // namespace tirc

// Reduction-semantics adversary (helper round h8): a fixed-seed generator of small functions of
// one to three blocks that stress what a reduction means (docs/autodiff.md, Derivative
// conventions, Reductions): sum / max / min / product updates in every spelling, refused
// updates, inits that are absent (onto an earlier block's value), constant, reading inputs,
// reading at spatial or reduce vars (their value 0) or reading the earlier value; one to three
// reduce vars with constant or symbolic extents (0, 1, 3 at run time), bindings `k`, `k - c`
// over serial(c, c + e), `k + c` (the first point never runs), `k // 2` (each instance twice)
// and fused `f // 4, f % 4`; `where` on spatial / reduce / mixed loop vars; a second reduction
// onto the same buffer, an in-place update after it, a reduction inside an `if`; `select` /
// `if_then_else` in E, max / min ties on one element read twice, exact zeros for products.
// Each case either is refused with a tirc::Error naming a block, or passes check_grad --full
// (f64 finite differences) on two seeds, and then the second order (the gradient of F_grad,
// printed and re-parsed), except at exact product zeros (documented as inexact).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "runtime/ndarray.h"
#include "tests/autodiff/full_checks.h"
#include "tests/sanitized.h"
#include "transforms/autodiff/check_grad.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {
namespace {

struct GenCase {
  std::string text;
  bool symbolic = false;
  bool second = true;    // false at exact product zeros (second order documented inexact)
  bool earlier = true;   // an earlier block writes Y
  bool wrapped = false;  // the reduction sits in `if n > 1`
};

// One reduce var of the generated block: its loop(s), binding and A's dimension for it.
struct RVar {
  std::string name, extent, binding, adim;
};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  GenCase make() {
    GenCase c;
    std::vector<RVar> rv;
    std::vector<std::string> loops;  // `k in serial(...)` headers, outermost first
    int nred = 1 + pick(3);
    int used = 0;
    for (int j = 0; used < nred; ++j) {
      std::string k = "k" + std::to_string(j);
      bool sym = pick(3) == 0;
      std::string e = sym ? "n" : std::to_string(2 + pick(2));
      if (sym) c.symbolic = true;
      int bk = pick(8);
      if (bk == 5 && used + 2 <= 3) {  // fused f // 4, f % 4
        std::string a = "va" + std::to_string(j), b = "vb" + std::to_string(j);
        loops.push_back(k + " in serial(" + (sym ? "n * 4" : std::to_string(std::stoi(e) * 4)) + ")");
        rv.push_back({a, e, k + " // 4", e});
        rv.push_back({b, "4", k + " % 4", "4"});
        used += 2;
        continue;
      }
      std::string v = "v" + k;
      if (bk == 1) {  // k - c over serial(c, c + e)
        loops.push_back(k + " in serial(2, " + e + " + 2)");
        rv.push_back({v, e, k + " - 2", e});
      } else if (bk == 2) {  // k + c: the first point never runs
        loops.push_back(k + " in serial(" + e + ")");
        rv.push_back({v, e + " + 1", k + " + 1", e + " + 1"});
      } else if (bk == 3) {  // serial(c0, c1) bound to k: no first point either
        loops.push_back(k + " in serial(1, " + e + " + 1)");
        rv.push_back({v, e + " + 1", k, e + " + 1"});
      } else if (bk == 4) {  // k // 2: each instance twice
        loops.push_back(k + " in serial(" + (sym ? "n * 2" : std::to_string(std::stoi(e) * 2)) + ")");
        rv.push_back({v, e, k + " // 2", e});
      } else {
        loops.push_back(k + " in serial(" + e + ")");
        rv.push_back({v, e, k, e});
      }
      used += 1;
    }
    // where: spatial, reduce (true / not true at the first point), mixed.
    std::string where;
    int wk = pick(7);
    std::string k0 = loops[0].substr(0, loops[0].find(' '));
    if (wk == 1) where = "i < 2";
    if (wk == 2) where = k0 + " < 2";
    if (wk == 3) where = k0 + " >= 1";
    if (wk == 4) where = "i + " + k0 + " < 3";

    // A: f32[3, dims of the reduce vars]; index of E.
    std::string adims = "3", aidx = "vi", aidx0;
    bool tie = pick(6) == 0;
    for (size_t q = 0; q < rv.size(); ++q) {
      adims += ", " + rv[q].adim;
      std::string ix = rv[q].name;
      if (tie && q == 0) ix = "min(" + ix + ", 1)";  // a max/min tie on one element read twice
      aidx += ", " + ix;
      aidx0 += ", 0";
    }
    std::string a = "A[" + aidx + "]";

    // Reduction kind and update spelling.
    int kind = pick(10);  // 0-3 sum spellings, 4 max, 5 min, 6-7 prod, 8-9 refused
    bool zeros = (kind == 6 || kind == 7) && pick(3) == 0;
    std::string e;
    switch (pick(6)) {
      case 0: e = a; break;
      case 1: e = a + " * B[vi]"; break;
      case 2: e = "select(" + a + " > 0.0, " + a + ", B[vi] * 0.5)"; break;
      case 3: e = "if_then_else(" + rv[0].name + " < 1, " + a + ", 0.5 * " + a + ")"; break;
      case 4: e = "sin(" + a + ")"; break;
      default: e = a + " + B[vi]"; break;
    }
    if (zeros) e = "select(" + a + " > 0.4, 0.0, " + e + ")", c.second = false;
    std::string y = "Y[vi]", upd;
    switch (kind) {
      case 0: upd = y + " += " + e; break;
      case 1: upd = y + " = " + y + " + " + e; break;
      case 2: upd = y + " = " + e + " + " + y; break;
      case 3: upd = y + " = " + y + " - " + e; break;
      case 4: upd = y + " = max(" + y + ", " + e + ")"; break;
      case 5: upd = pick(2) ? y + " min= " + e : y + " = min(" + e + ", " + y + ")"; break;
      case 6: upd = y + " *= " + e; break;
      case 7: upd = y + " = " + e + " * " + y; break;
      case 8: upd = y + " = " + e + " - " + y; break;
      default:
        upd = pick(2) ? y + " = " + y + " + Y[(vi + 1) % 3] * " + e : y + " = " + y + " / (2.0 + " + e + ")";
        break;
    }

    // Earlier block and init.
    bool earlier = pick(3) != 0;
    c.earlier = earlier;
    std::string init;
    int ik = pick(6);
    if (!earlier && ik == 0) ik = 1;
    switch (ik) {
      case 0: break;
      case 1: init = (kind == 6 || kind == 7) ? "1.0" : "0.0"; break;
      case 2: init = "B[vi] * 1.5"; break;
      case 3: init = "cos(B[vi]) + " + std::string(pick(2) ? "B[2 - vi]" : "B[vi]"); break;
      case 4: break;  // reads A at the reduce vars (below)
      default: init = earlier ? "Y[vi] * 0.5 + B[vi]" : "B[vi]"; break;
    }
    if (ik == 4) {
      // Reads A at the reduce vars (their value 0 where the init runs).
      std::string idx = "vi";
      for (auto& r : rv) idx += ", " + r.name;
      init = "A[" + idx + "] * 2.0";
    }

    std::ostringstream s;
    s << "func f(" << (c.symbolic ? "n: i32, " : "") << "A: f32[" << adims
      << "], B: f32[3]) -> (Y: f32[3]) {\n";
    if (earlier)
      s << "  for i in serial(3) { block Y0(vi: spatial(3) = i) { Y[vi] = "
        << (pick(2) ? "sin(B[vi])" : "B[vi] * 2.0") << " } }\n";
    int wrap = pick(5);  // 1: reduction inside `if n > 1` / `if` on a constant-true test
    std::string open, close;
    c.wrapped = wrap == 1 && c.symbolic;
    if (wrap == 1) open = c.symbolic ? "  if n > 1 {\n" : "  if 2 > 1 {\n", close = "  }\n";
    bool spatial_inner = pick(4) == 0;
    std::string ivars = "vi: spatial(3) = i";
    for (auto& r : rv) ivars += ", " + r.name + ": reduce(" + r.extent + ") = " + r.binding;
    s << open;
    std::string hdr;
    if (!spatial_inner) hdr += "  for i in serial(3) {\n";
    for (auto& l : loops) hdr += "  for " + l + " {\n";
    if (spatial_inner) hdr += "  for i in serial(3) {\n";
    s << hdr << "    block R(" << ivars << ") {\n";
    if (!where.empty()) s << "      where " << where << "\n";
    if (!init.empty()) s << "      init { Y[vi] = " << init << " }\n";
    s << "      " << upd << "\n    }\n";
    for (size_t q = 0; q < loops.size() + 1; ++q) s << "  }\n";
    s << close;
    int after = pick(4);
    if (after == 1)
      s << "  for i in serial(3) { block P(vi: spatial(3) = i) { Y[vi] = Y[vi] * B[vi] + 1.0 } }\n";
    if (after == 2)
      s << "  for i, k in grid(3, 2) { block S2(vi: spatial(3) = i, vk: reduce(2) = k) { Y[vi] = max(Y[vi], "
           "A[vi"
        << aidx0 << "] * B[vk]) } }\n";
    if (after == 3)
      s << "  for i, k in grid(3, 2) { block S2(vi: spatial(3) = i, vk: reduce(2) = k) { Y[vi] = Y[vi] * "
           "B[vk] } }\n";
    s << "}\n";
    c.text = s.str();
    return c;
  }

 private:
  std::mt19937 rng_;
};

ArgMap given_n(int64_t n) { return testing::i32_scalars({{"n", n}}); }

// Returns "" when fine, else a description of the failure.
std::string run_case(const GenCase& c, int64_t n, int* refused, int* checked) {
  Module mod;
  try {
    mod = parse_module(c.text, "gen.tir");
  } catch (const Error& e) {
    return std::string("parse: ") + e.what();
  }
  Function f = mod.find_func("f");
  ArgMap given = c.symbolic ? given_n(n) : ArgMap{};
  try {
    run_interp(*f, random_inputs(*f, 1, given));
  } catch (const Error&) {
    return "";  // forward invalid (e.g. reads Y before it is written): not a gradient case
  }
  Function g;
  try {
    g = gradient(*f, {});
  } catch (const Error& e) {
    ++*refused;
    std::string m = e.what();
    if (std::getenv("TIRC_RS_VERBOSE")) std::fprintf(stderr, "REFUSED %s\n", m.c_str());
    if (m.find("block") == std::string::npos && m.find("gradient") == std::string::npos)
      return "refusal without a block: " + m;
    return "";
  }
  CheckGradOptions o;
  o.full = true;
  o.given = given;
  for (uint64_t seed : {1u, 2u}) {
    o.seed = seed;
    CheckGradResult r;
    try {
      r = check_grad(*f, o);
    } catch (const Error& e) {
      return std::string("check_grad error: ") + e.what() + "\n" + print_function(*g);
    }
    if (r.failed != 0) {
      std::string notes;
      for (auto& in : r.inputs)
        for (auto& nt : in.notes) notes += in.name + ": " + nt + "\n";
      return "first order FAILED (seed " + std::to_string(seed) + ")\n" + notes + print_function(*r.grad);
    }
  }
  ++*checked;
  if (!c.second) return "";
  Function g2;
  try {
    g2 = testing::grad_of_printed(*f);
  } catch (const Error& e) {
    return std::string("re-parse of F_grad: ") + e.what();
  }
  for (uint64_t seed : {1u, 2u}) {
    o.seed = seed;
    try {
      CheckGradResult r = check_grad(*g2, o);
      if (r.failed != 0) {
        std::string notes;
        for (auto& in : r.inputs)
          for (auto& nt : in.notes) notes += in.name + ": " + nt + "\n";
        return "second order FAILED\n" + notes + print_function(*g2);
      }
    } catch (const Error& e) {
      std::string m = e.what();
      if (m.find("block") == std::string::npos) return "second order error: " + m;
      // A refusal of the second order is acceptable (it names the block).
    }
  }
  return "";
}

TEST(ReductionSemantics, GeneratedCases) {
#ifdef TIRC_TEST_SANITIZED
  const int kCases = 40;
#else
  int kCases = 300;
  if (const char* env = std::getenv("TIRC_RS_CASES")) kCases = std::atoi(env);
#endif
  uint32_t seed0 = 8;
  if (const char* env = std::getenv("TIRC_RS_SEED")) seed0 = static_cast<uint32_t>(std::atoi(env));
  Gen gen(seed0);
  int refused = 0, checked = 0, failures = 0;
  for (int i = 0; i < kCases; ++i) {
    GenCase c = gen.make();
    std::vector<int64_t> ns = c.symbolic ? std::vector<int64_t>{0, 1, 3} : std::vector<int64_t>{0};
    for (int64_t n : ns) {
      // Without an earlier block, a reduction that runs no instance leaves the output Y
      // unwritten: not a valid function there.
      if (!c.earlier && (n == 0 || (c.wrapped && n <= 1))) continue;
      std::string err = run_case(c, n, &refused, &checked);
      if (!err.empty()) {
        ++failures;
        ADD_FAILURE() << "case " << i << " (n = " << n << "):\n" << c.text << "\n" << err;
        break;
      }
    }
  }
  std::printf("reduction semantics: %d cases, %d refused, %d checked, %d failures\n", kCases, refused,
              checked, failures);
}

}  // namespace
}  // namespace tirc

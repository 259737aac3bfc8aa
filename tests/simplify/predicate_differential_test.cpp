// Differential test of statement simplification on block predicates: random loop nests
// (plain loops with non-zero mins, split loops, `if`s around blocks, several blocks per nest)
// whose blocks carry `where` predicates that are conjunctions of bounds on loop vars. Each
// block adds its own weight to the elements it runs on, so the output counts which
// instances ran. The interpreter runs the function before and after simplify_function;
// the outputs must be identical.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

struct PredGen {
  std::mt19937_64 rng;
  explicit PredGen(uint64_t seed) : rng(seed) {}
  int64_t rnd(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin(int pct) { return rnd(0, 99) < pct; }

  struct Loop {
    std::string var;
    int64_t lo, hi;  // [lo, hi)
  };

  // A bound on one loop var or a small linear combination, against a constant near its range.
  std::string atom(const std::vector<Loop>& loops) {
    static const char* ops[] = {"<", "<=", ">", ">=", "==", "!="};
    const Loop& l = loops[rnd(0, loops.size() - 1)];
    std::string lhs = l.var;
    int64_t lo = l.lo, hi = l.hi - 1;
    int kind = static_cast<int>(rnd(0, 9));
    if (kind == 0) {  // scaled var
      int64_t k = rnd(2, 3);
      lhs = l.var + " * " + std::to_string(k);
      lo *= k;
      hi *= k;
    } else if (kind == 1 && loops.size() > 1) {  // sum or difference of two vars
      const Loop& m = loops[rnd(0, loops.size() - 1)];
      if (&m != &l) {
        bool plus = coin(50);
        lhs = l.var + (plus ? " + " : " - ") + m.var;
        lo = plus ? lo + m.lo : lo - (m.hi - 1);
        hi = plus ? hi + m.hi - 1 : hi - m.lo;
      }
    } else if (kind == 2) {  // var plus an offset
      int64_t c = rnd(-3, 3);
      lhs = l.var + " + " + std::to_string(c);
      lo += c;
      hi += c;
    } else if (kind == 3) {  // floor division / modulo by a constant
      int64_t k = rnd(2, 4);
      bool div = coin(50);
      lhs = l.var + (div ? " // " : " % ") + std::to_string(k);
      lo = div ? lo / k : 0;
      hi = div ? hi / k : k - 1;
    } else if (kind == 4 && loops.size() > 1) {  // min / max of two vars
      const Loop& m = loops[rnd(0, loops.size() - 1)];
      lhs = std::string(coin(50) ? "min(" : "max(") + l.var + ", " + m.var + ")";
      lo = std::min(lo, m.lo);
      hi = std::max(hi, m.hi - 1);
    }
    int64_t c = rnd(lo - 2, hi + 2);
    const char* op = ops[rnd(0, 5)];
    std::string s =
        coin(50) ? lhs + " " + op + " " + std::to_string(c) : std::to_string(c) + " " + op + " " + lhs;
    if (coin(8)) s = "!(" + s + ")";
    return s;
  }

  std::string conj(const std::vector<Loop>& loops, int n, std::vector<std::string> extra = {}) {
    for (int i = 0; i < n; ++i)
      extra.push_back(coin(10) ? "(" + atom(loops) + " || " + atom(loops) + ")" : atom(loops));
    std::shuffle(extra.begin(), extra.end(), rng);
    std::string s;
    for (auto& x : extra) s += (s.empty() ? "" : " && ") + x;
    return s;
  }

  // Returns the program text.
  std::string program() {
    int ndim = static_cast<int>(rnd(1, 3));
    std::vector<int64_t> ext(ndim);
    for (auto& e : ext) e = rnd(1, 11);
    std::vector<Loop> loops;
    std::vector<std::string> bindings, required;
    for (int d = 0; d < ndim; ++d) {
      std::string v = "ax" + std::to_string(d);
      if (ext[d] > 2 && coin(35)) {  // split loop with a guarding predicate
        int64_t f = rnd(2, 4), outer = (ext[d] + f - 1) / f;
        loops.push_back({v + "_0", 0, outer});
        loops.push_back({v + "_1", 0, f});
        bindings.push_back(v + "_0 * " + std::to_string(f) + " + " + v + "_1");
        required.push_back(bindings.back() + " < " + std::to_string(ext[d]));
      } else {
        int64_t lo = coin(40) ? rnd(0, ext[d] - 1) : 0;
        int64_t hi = coin(30) ? rnd(lo + 1, ext[d]) : ext[d];
        loops.push_back({v, lo, hi});
        bindings.push_back(v);
      }
    }
    std::vector<Loop> order = loops;  // loop order does not change the instance set
    if (coin(30)) std::shuffle(order.begin(), order.end(), rng);

    std::ostringstream o;
    std::string shape, idx;
    for (int d = 0; d < ndim; ++d) {
      shape += (d ? ", " : "") + std::to_string(ext[d]);
      idx += std::string(d ? ", " : "") + "v" + std::to_string(d);
    }
    o << "func f() -> (Y: f32[" << shape << "]) {\n";
    // Initialise every element.
    o << "  for ";
    for (int d = 0; d < ndim; ++d) o << (d ? ", " : "") << "i" << d;
    o << " in grid(" << shape << ") {\n    block Z(";
    for (int d = 0; d < ndim; ++d) o << (d ? ", " : "") << "v" << d << ": spatial(" << ext[d] << ") = i" << d;
    o << ") {\n      Y[" << idx << "] = 0.0\n    }\n  }\n";
    for (auto& l : order) {
      if (l.lo == 0)
        o << "  for " << l.var << " in serial(" << l.hi << ") {\n";
      else
        o << "  for " << l.var << " in serial(" << l.lo << ", " << l.hi << ") {\n";
    }
    int nblocks = static_cast<int>(rnd(1, 3)), nb = 0;
    auto block = [&]() {
      static const char* weight[] = {"1.0", "16.0", "256.0", "4096.0", "65536.0", "1048576.0"};
      int b = nb++;
      o << "    block B" << b << "(";
      for (int d = 0; d < ndim; ++d)
        o << (d ? ", " : "") << "v" << d << ": spatial(" << ext[d] << ") = " << bindings[d];
      o << ") {\n";
      std::string pred = conj(loops, static_cast<int>(rnd(0, 4)), required);
      if (!pred.empty()) o << "      where " << pred << "\n";
      o << "      Y[" << idx << "] = Y[" << idx << "] + " << weight[b] << "\n";
      o << "    }\n";
    };
    for (int b = 0; b < nblocks; ++b) {
      int kind = static_cast<int>(rnd(0, 9));
      if (kind < 5) {
        block();
      } else if (kind < 8) {  // if / if-else around blocks
        o << "  if " << conj(loops, static_cast<int>(rnd(1, 2))) << " {\n";
        block();
        if (coin(50)) {
          o << "  } else {\n";
          block();
        }
        o << "  }\n";
      } else {  // a let used by a condition
        const Loop& l = loops[rnd(0, loops.size() - 1)];
        int64_t c = rnd(-2, 2);
        std::string t = "t" + std::to_string(b);
        o << "  let " << t << " = " << l.var << " + " << c << "\n";
        std::vector<Loop> with_t = loops;
        with_t.push_back({t, l.lo + c, l.hi + c});
        o << "  if " << conj(with_t, 1) << " {\n";
        block();
        o << "  }\n";
      }
    }
    for (size_t i = 0; i < order.size(); ++i) o << "  }\n";
    o << "}\n";
    return o.str();
  }
};

TEST(SimplifyPredicateDifferential, RandomWherePredicates) {
  PredGen g(2026);
  int changed = 0, compared = 0;
  for (int n = 0; n < 1500; ++n) {
    std::string text = g.program();
    Module m = parse_module(text, "pred.tir");
    Function f = m.find_func("f");
    ASSERT_TRUE(f);
    Function s = simplify_function(*f);
    if (!s->body.same_as(f->body)) ++changed;
    ArgMap a = run_interp(*f, {});
    ArgMap b;
    try {
      b = run_interp(*s, {});
    } catch (const Error& e) {
      FAIL() << "simplified function fails: " << e.what() << "\n" << text << "\n" << print_function(*s);
    }
    {  // the lowering pipeline (blocks -> ifs, then simplify_function) must agree too
      Function lw = lower_function(*f, false);
      b = run_interp(*lw, {});
      for (int64_t i = 0; i < a.at("Y").numel(); ++i)
        ASSERT_EQ(a.at("Y").get(i), b.at("Y").get(i))
            << "lowered element " << i << " differs (case " << n << ")\n"
            << text << "\nlowered:\n"
            << print_function(*lw);
      b = run_interp(*s, {});
    }
    const NDArray& ya = a.at("Y");
    const NDArray& yb = b.at("Y");
    for (int64_t i = 0; i < ya.numel(); ++i)
      ASSERT_EQ(ya.get(i), yb.get(i)) << "element " << i << " differs (case " << n << ")\n"
                                      << text << "\nsimplified:\n"
                                      << print_function(*s);
    ++compared;
  }
  EXPECT_GT(changed, 300);
  EXPECT_EQ(compared, 1500);
}

}  // namespace
}  // namespace tirc

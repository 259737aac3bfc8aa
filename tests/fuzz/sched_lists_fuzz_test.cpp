// Schedule-text fuzzer for TVM's list forms (docs/schedule.md "List variables"): random
// schedules over the small functions of tests/schedule/fuzz/, each written twice as a user
// would type it:
//   plain: `i0, i1, i2 = get_loops(b)` then `split(i1, ...)`, `fuse(i0, i1)`, `reorder(i2, i0)`
//   lists: `loops = sch.get_loops(b)` then `split(loops[-2], ...)`, `fuse(*loops[:2])`,
//          `reorder(*loops[::-1])`, `unroll(get_loops(b)[-1])`, `i0, = loops[:1]`, `l = loops[2]`
// Both texts go through the parser and `apply_module_schedules` (what `tirc schedule` runs):
// both must be refused, or both give structurally equal functions; the list-form module must
// print as a fixpoint (parse(print(m)) prints the same text); every few accepted schedules the
// result is compared with the unscheduled function in the interpreter. The generator tracks
// how many loops enclose the block after each step by walking the scheduled IR.
// Iterations: TIRC_SCHED_LISTS_FUZZ_ITERS (default 150), seed TIRC_SCHED_LISTS_FUZZ_SEED (1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

struct Base {
  std::string text, func;
  std::vector<std::string> blocks;  // user blocks (not the root)
};

// Loops between block `name` and the nearest enclosing block (what get_loops returns).
class LoopCounter : public IRVisitor {
 public:
  explicit LoopCounter(std::string name) : name_(std::move(name)) {}
  int found = -1;
  void visit_for(const ForNode* n) override {
    ++depth_;
    IRVisitor::visit_for(n);
    --depth_;
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    if (n->block->name == name_) found = depth_;
    int saved = depth_;
    depth_ = 0;
    IRVisitor::visit_block_realize(n);
    depth_ = saved;
  }

 private:
  std::string name_;
  int depth_ = 0;
};

class BlockNames : public IRVisitor {
 public:
  std::vector<std::string> names;
  void visit_block_realize(const BlockRealizeNode* n) override {
    names.push_back(n->block->name);
    IRVisitor::visit_block_realize(n);
  }
};

std::vector<Base> load_bases() {
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "tests/schedule/fuzz"))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Base> out;
  for (auto& p : files) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    Module m;
    try {
      m = parse_module(ss.str(), p.string());
    } catch (const Error&) {
      continue;  // another suite reports a broken base
    }
    if (m.funcs.size() != 1 || !m.schedules.empty()) continue;
    const FunctionNode& f = *m.funcs[0];
    // Integer scalars without a range cannot be drawn by the differential check.
    bool drawable = true;
    for (auto& prm : f.params)
      if (!prm.is_buffer() && !prm.range && !is_float(prm.var.dtype())) drawable = false;
    if (!drawable) continue;
    BlockNames bn;
    bn.visit(f.body);
    Base b{ss.str(), f.name, {}};
    for (auto& n : bn.names)
      if (n != "root") b.blocks.push_back(n);
    if (!b.blocks.empty()) out.push_back(b);
  }
  return out;
}

int loops_of(const Module& m, const std::string& block) {
  LoopCounter c(block);
  c.visit(m.funcs[0]->body);
  return c.found;
}

// One generated step, in both spellings.
struct Step {
  std::string plain, lists;
};

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin() { return pick(2) == 0; }

  // `loops[k]` with k written positive or negative.
  std::string at(int k, int n, const std::string& list = "loops") {
    return list + "[" + std::to_string(coin() ? k : k - n) + "]";
  }
  // A slice text selecting [a, b) of n items, with optional / negative bounds.
  std::string slice(int a, int b, int n) {
    std::string lo = a == 0 && coin() ? "" : std::to_string(coin() ? a : a - n);
    std::string hi =
        b == n && coin() ? "" : (b == n ? std::to_string(n) : std::to_string(coin() ? b : b - n));
    return "[" + lo + ":" + hi + (pick(4) == 0 ? ":1" : "") + "]";
  }

  // Plain names of the loops of this step: l<step>_<k>.
  static std::string nm(int step, int k) { return "l" + std::to_string(step) + "_" + std::to_string(k); }

  Step step(int s, int n) {
    std::string sch = coin() ? "sch." : "";
    std::string plain_get;
    for (int k = 0; k < n; ++k) plain_get += (k ? ", " : "") + nm(s, k);
    plain_get += " = get_loops(b)\n";
    if (n == 1) plain_get = nm(s, 0) + ", = get_loops(b)\n";
    std::string list_get = "  loops = " + sch + "get_loops(b)\n";
    Step st;
    int kind = pick(7);
    if (kind == 0) {  // split
      int k = pick(n), f = 2 + pick(3);
      std::string fac =
          coin() ? "[_, " + std::to_string(f) + "]" : "factors=[None, " + std::to_string(f) + "]";
      st.plain = "  " + plain_get + "  " + sch + "split(" + nm(s, k) + ", " + fac + ")\n";
      st.lists = list_get + "  parts = " + sch + "split(" + at(k, n) + ", " + fac + ")\n";
    } else if (kind == 1 && n >= 2) {  // fuse of consecutive loops
      int a = pick(n - 1), b = a + 2 + pick(n - a - 1);
      std::string names;
      for (int k = a; k < b; ++k) names += (k > a ? ", " : "") + nm(s, k);
      st.plain = "  " + plain_get + "  " + sch + "fuse(" + names + ")\n";
      if (coin())
        st.lists = list_get + "  " + sch + "fuse(*loops" + slice(a, b, n) + ")\n";
      else
        st.lists = "  " + sch + "fuse(*" + sch + "get_loops(b)" + slice(a, b, n) + ")\n";
    } else if (kind == 2 && n >= 2) {  // reorder of a permutation of a subset
      std::vector<int> idx(n);
      std::iota(idx.begin(), idx.end(), 0);
      std::shuffle(idx.begin(), idx.end(), rng_);
      int m = 2 + pick(n - 1);
      idx.resize(m);
      std::string names, refs;
      for (int i = 0; i < m; ++i) {
        names += (i ? ", " : "") + nm(s, idx[i]);
        refs += (i ? ", " : "") + at(idx[i], n);
      }
      st.plain = "  " + plain_get + "  " + sch + "reorder(" + names + ")\n";
      int form = pick(3);
      if (form == 0) {
        st.lists = list_get + "  " + sch + "reorder(" + refs + ")\n";
      } else if (form == 1) {
        st.lists = list_get + "  " + sch + "reorder([" + refs + "])\n";
      } else {  // the whole nest reversed
        names.clear();
        for (int k = n - 1; k >= 0; --k) names += (k < n - 1 ? ", " : "") + nm(s, k);
        st.plain = "  " + plain_get + "  " + sch + "reorder(" + names + ")\n";
        st.lists = list_get + "  " + sch + "reorder(*loops[::-1])\n";
      }
    } else if (kind == 3 && n >= 2) {  // unpack a slice, then use the names
      int a = pick(n - 1), b = a + 1 + pick(n - a);
      std::string lhs, names;
      for (int k = a; k < b; ++k) lhs += (k > a ? ", " : "") + nm(s, k);
      if (b - a == 1) lhs += ",";
      std::string prim = coin() ? "unroll" : "annotate";
      std::string extra = prim == "annotate" ? ", \"pragma_k\", " + std::to_string(pick(9)) : "";
      st.plain = "  " + plain_get + "  " + sch + prim + "(" + nm(s, b - 1) + extra + ")\n";
      st.lists = list_get + "  " + lhs + " = loops" + slice(a, b, n) + "\n  " + sch + prim + "(" +
                 nm(s, b - 1) + extra + ")\n";
    } else {  // a loop-kind primitive on one loop, by index, by call or by a bound name
      static const char* prims[] = {"parallel", "vectorize", "unroll", "unroll"};
      std::string prim = prims[pick(4)];
      int k = prim == "parallel" ? pick(std::min(n, 2)) : n - 1 - pick(std::min(n, 2));
      st.plain = "  " + plain_get + "  " + sch + prim + "(" + nm(s, k) + ")\n";
      int form = pick(3);
      if (form == 0)
        st.lists = list_get + "  " + sch + prim + "(" + at(k, n) + ")\n";
      else if (form == 1)
        st.lists = "  " + sch + prim + "(" + sch + "get_loops(b)[" + std::to_string(k - n) + "])\n";
      else
        st.lists = list_get + "  one = " + at(k, n) + "\n  " + sch + prim + "(one)\n";
    }
    return st;
  }

 private:
  std::mt19937_64 rng_;
};

std::string schedule_text(const Base& b, const std::string& block, const std::string& body) {
  return b.text + "\nschedule " + b.func + " {\n  b = get_block(\"" + block + "\")\n" + body + "}\n";
}

// Applies the schedule of `text`; the scheduled module, or nullopt with `err` set.
std::optional<Module> apply_text(const std::string& text, std::string* err) {
  Module m = parse_module(text, "fuzz.tir");  // a parse error is a generator bug: let it throw
  try {
    return apply_module_schedules(m);
  } catch (const SourceError& e) {
    *err = e.what();
    return std::nullopt;
  }
}

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

TEST(SchedListsFuzz, ListFormsMatchPlainNames) {
  std::vector<Base> bases = load_bases();
  ASSERT_GE(bases.size(), 3u);
  int iters = env_int("TIRC_SCHED_LISTS_FUZZ_ITERS", 150);
  Gen g(static_cast<uint64_t>(env_int("TIRC_SCHED_LISTS_FUZZ_SEED", 1)));
  int accepted = 0, refused = 0;
  std::string all_lists;  // every accepted list-form step, to check the forms were exercised
  for (int it = 0; it < iters; ++it) {
    const Base& base = bases[g.pick(static_cast<int>(bases.size()))];
    std::string block = base.blocks[g.pick(static_cast<int>(base.blocks.size()))];
    std::string plain, lists;
    Module cur = parse_module(base.text, "base.tir");
    int steps = 1 + g.pick(4);
    for (int s = 0; s < steps; ++s) {
      int n = loops_of(cur, block);
      ASSERT_GE(n, 0) << block;
      if (n == 0) break;
      Step st = g.step(s, n);
      std::string ep, el;
      std::optional<Module> mp = apply_text(schedule_text(base, block, plain + st.plain), &ep);
      std::optional<Module> ml = apply_text(schedule_text(base, block, lists + st.lists), &el);
      SCOPED_TRACE("plain:\n" + plain + st.plain + "lists:\n" + lists + st.lists);
      ASSERT_EQ(mp.has_value(), ml.has_value()) << "plain error: " << ep << "\nlists error: " << el;
      if (!mp) {
        // A refusal must be the primitive's, never a list error of the generator's making.
        EXPECT_EQ(el.find("handle"), std::string::npos) << el;
        EXPECT_EQ(el.find("out of range"), std::string::npos) << el;
        ++refused;
        continue;  // drop the refused step
      }
      auto diff = structural_diff(*mp->funcs[0], *ml->funcs[0]);
      ASSERT_FALSE(diff.has_value()) << *diff;
      plain += st.plain;
      lists += st.lists;
      cur = *mp;
      ++accepted;
    }
    if (lists.empty()) continue;
    all_lists += lists;
    // The list-form schedule prints as written and is a printing fixpoint.
    std::string text = schedule_text(base, block, lists);
    std::string p1 = print_module(parse_module(text, "fuzz.tir"));
    std::string p2 = print_module(parse_module(p1, "printed.tir"));
    ASSERT_EQ(p1, p2) << text;
    std::string e1, e2;
    auto r1 = apply_text(text, &e1), r2 = apply_text(p1, &e2);
    ASSERT_TRUE(r1 && r2) << e1 << e2;
    ASSERT_FALSE(structural_diff(*r1->funcs[0], *r2->funcs[0]).has_value()) << p1;
    // The scheduled function computes what the original computes.
    if (it % 5 == 0) {
      Module orig = parse_module(base.text, "base.tir");
      CompareOptions opts;
      opts.seed = static_cast<uint64_t>(it);
      CompareResult cr =
          compare_functions(*orig.funcs[0], *r1->funcs[0], opts, interp_runner(), interp_runner());
      EXPECT_TRUE(cr.ok) << cr.detail << "\n" << text;
    }
  }
  EXPECT_GT(accepted, iters / 2);
  if (iters >= 100) {
    for (const char* form : {"loops = sch.get_loops(b)", "loops = get_loops(b)", "*loops[", "*loops[::-1]",
                             "*sch.get_loops(b)[", "get_loops(b)[-", "reorder([loops[", "= loops[",
                             ", = loops[", "one = loops[", "factors=[None, ", "parts = "}) {
      EXPECT_NE(all_lists.find(form), std::string::npos) << "form never generated: " << form;
    }
  }
  std::cout << "[sched lists fuzz] " << iters << " schedules, " << accepted << " steps accepted, " << refused
            << " refused\n";
}

}  // namespace
}  // namespace tirc

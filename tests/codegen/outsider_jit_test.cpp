// Every function of the autodiff outsider corpora (tests/zoo/outsider{,3,5,6}/*.tir: scans,
// data-dependent indices, atomic scatter blocks, if/else, where-predicates, thread-bound and
// parallel loops, f16/bf16/f64, symbolic sizes, in-place updates), its F_grad
// (transforms/autodiff/gradient.h) and the gradient of that F_grad run through the JIT and
// match the interpreter on the same random inputs (two seeds each; the second with larger
// integer scalars when F has some). F_grad's shapes (fused adjoint blocks with if/else and
// several stores per buffer, contributions stored at permuted indices, atomic scatter-adds)
// are produced only by the autodiff, so this is where the backend meets them.
//   OutsiderJit.Forward/F      F
//   OutsiderJit.Grad/F         F_grad (skipped when the autodiff refuses F)
//   OutsiderJit.SecondOrder/F  gradient(F_grad) (skipped when the autodiff refuses either)
//   OutsiderJit.GradParallelAtomic/F  F_grad with each atomic scatter block under a parallel
//                              loop (skipped when F_grad has none)
//   OutsiderJitMeta.MostGradientsAccepted  the skips above stay rare: counts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "tests/codegen/compare.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
using namespace tirc::cgtest;
namespace fs = std::filesystem;

namespace {

const char* const kCorpora[] = {"outsider", "outsider3", "outsider5", "outsider6", "outsider7", "outsider8"};

fs::path corpus_file(const std::string& dir) {
  return fs::path(TIRC_SOURCE_DIR) / "tests" / "zoo" / dir / (dir + ".tir");
}

// The scalar parameter values of each registry: the same as its driver
// (tests/zoo/outsider*_test.cpp, `reg()`), so the sizes are those the autodiff tests use.
double scalar_value(const std::string& dir, const FunctionNode& f, const std::string& n) {
  if (dir == "outsider") return n == "n" ? (f.name == "sym_colsum" ? 5.0 : 3.0) : 0.7;
  if (dir == "outsider3") return n == "m" ? 3.0 : n == "n" ? 5.0 : n == "delta" ? 1.0 : 1.7;
  if (dir == "outsider5") return n == "n" ? 5.0 : n == "m" ? 3.0 : n == "alpha" ? 0.7 : 0.3;
  if (dir == "outsider7") {
    static const std::map<std::string, double> v7 = {{"n", 4}, {"m", 3}, {"len", 4}, {"tau", 0.7}};
    auto it = v7.find(n);
    if (it == v7.end()) throw Error(dir + ": no value for scalar " + n + " of " + f.name);
    return it->second;
  }
  if (dir == "outsider8") {
    static const std::map<std::string, double> v8 = {{"n", 7}, {"s", 2}, {"h", 0.3}, {"eps", 0.5}};
    auto it = v8.find(n);
    if (it == v8.end()) throw Error(dir + ": no value for scalar " + n + " of " + f.name);
    return it->second;
  }
  static const std::map<std::string, double> v6 = {{"n", 5},      {"off", 2},     {"alpha", 0.7},
                                                   {"beta", 1.6}, {"eps", 0.01},  {"scale", 0.5},
                                                   {"thr", 5},    {"margin", 0.3}};
  auto it = v6.find(n);
  if (it == v6.end()) throw Error(dir + ": no value for scalar " + n + " of " + f.name);
  return it->second;
}

ArgMap scalars(const std::string& dir, const FunctionNode& f) {
  ArgMap given;
  for (const auto& p : f.params)
    if (!p.is_buffer()) given[p.name()] = scalar(p.var.dtype(), scalar_value(dir, f, p.name()));
  return given;
}

// "DIR/FUNC" for every function of every corpus, in file order. Read from the `func NAME(`
// lines, not parsed: this runs at the start of every test process of test_codegen (one per
// test under ctest), and parsing the four corpora took most of its 0.4 s start-up.
// OutsiderJitMeta.MostGradientsAccepted parses them and checks that the lists agree.
std::vector<std::string> all_cases() {
  std::vector<std::string> out;
  for (const char* dir : kCorpora) {
    std::ifstream in(corpus_file(dir));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("func ", 0) == 0)
        out.push_back(std::string(dir) + "/" + line.substr(5, line.find('(') - 5));
  }
  return out;
}

// Larger values for the integer scalars (sizes, offsets, thresholds): the drivers' 3 and 5
// give loops too short for the lowering's trimming of guarded loops (8 iterations or more,
// transforms/lower trim_no_ops) and for the interesting bounds of symbolic loops.
ArgMap big_scalars(const std::string& dir, const FunctionNode& f) {
  ArgMap given = scalars(dir, f);
  for (const auto& p : f.params)
    if (!p.is_buffer() && !is_float(p.var.dtype()))
      given[p.name()] = scalar(p.var.dtype(), 3 * scalar_value(dir, f, p.name()) + 1);
  return given;
}

bool has_int_scalar(const FunctionNode& f) {
  for (const auto& p : f.params)
    if (!p.is_buffer() && !is_float(p.var.dtype())) return true;
  return false;
}

struct Case {
  std::string dir;
  Function f;
  ArgMap given;
  ArgMap big;  // empty when f has no integer scalar
};

Case load(const std::string& id) {
  auto slash = id.find('/');
  Case c;
  c.dir = id.substr(0, slash);
  Module m = parse_file(corpus_file(c.dir).string());
  c.f = m.find_func(id.substr(slash + 1));
  if (!c.f) throw Error("no function " + id);
  c.given = scalars(c.dir, *c.f);
  if (has_int_scalar(*c.f)) c.big = big_scalars(c.dir, *c.f);
  return c;
}

// The JIT computes every operation in the interpreter's precision (f16/bf16 rounded after each
// operation, no FMA contraction, the same libm), so serial code is bit-identical (it is, on
// every function here, at the time of writing); the tolerances only leave room for libm / LLVM
// versions that differ by an ulp. Atomic scatter-add blocks inside `parallel` loops are another
// matter: they become `atomicrmw fadd` from several threads, so the float additions onto one
// element happen in any order (`reassociates`): a few ulps of each partial sum, and more after
// cancellation, hence the absolute term. f16/bf16 have ulps of 1e-3 / 8e-3 relative.
void expect_matches(const FunctionNode& f, const ArgMap& given, const ArgMap& big = {},
                    bool reassociates = false) {
  double rtol = reassociates ? 1e-4 : 1e-6, atol = reassociates ? 1e-5 : 1e-7;
  for (const auto& p : f.params)
    if (p.is_buffer() && (p.buffer->dtype == DType::F16 || p.buffer->dtype == DType::BF16))
      rtol = reassociates ? 3e-2 : 1e-2, atol = reassociates ? 3e-2 : 1e-3;
  auto prog = compile_jit(f);
  for (uint64_t seed : {11, 12}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // The second seed runs the larger sizes when there are some.
    ArgMap in = random_inputs(f, seed, seed == 12 && !big.empty() ? big : given);
    ArgMap ref = run_interp(f, in);
    ArgMap got = prog->run(in);
    ASSERT_EQ(ref.size(), got.size());
    for (auto& [name, arr] : ref) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_TRUE(arrays_close(got.at(name), arr, rtol, atol)) << f.name << " output " << name;
    }
  }
}

// The atomic blocks of a function (autodiff's scatter-adds, annotate("atomic")) with the number
// of loops around each.
struct AtomicBlocks : IRVisitor {
  int depth = 0;
  std::vector<std::pair<std::string, int>> found;
  void visit_for(const ForNode* n) override {
    ++depth;
    IRVisitor::visit_for(n);
    --depth;
  }
  void visit_block(const BlockNode* n) override {
    if (n->annotations.count("atomic")) found.push_back({n->name, depth});
    IRVisitor::visit_block(n);
  }
};

// f with the outermost loop around block `blk` made parallel by the `parallel` schedule
// primitive (as a user scheduling F_grad would), or null when the primitive refuses (a loop
// bound to a scan var).
Function parallelize_around(const FunctionNode& f, const std::string& blk, int loops) {
  Module m;
  m.add_func(std::make_shared<FunctionNode>(f));
  std::string text = print_module(m) + "\nschedule " + f.name + " {\n  b = get_block(\"" + blk + "\")\n  ";
  for (int i = 0; i < loops; ++i) text += (i ? ", l" : "l") + std::to_string(i);
  text += " = get_loops(b)\n  parallel(l0)\n}\n";
  try {
    return apply_module_schedules(parse_module(text, f.name + ".tir")).find_func(f.name);
  } catch (const SourceError&) {
    return nullptr;
  }
}

// The first-order gradient, or null when the autodiff refuses f (*why gets the message).
Function try_gradient(const FunctionNode& f, std::string* why) {
  try {
    return gradient(f, {});
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& i) {
  std::string s = i.param;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace

class OutsiderJit : public ::testing::TestWithParam<std::string> {};

TEST_P(OutsiderJit, Forward) {
  Case c = load(GetParam());
  expect_matches(*c.f, c.given, c.big);
}

TEST_P(OutsiderJit, Grad) {
  Case c = load(GetParam());
  std::string why;
  Function g = try_gradient(*c.f, &why);
  if (!g) GTEST_SKIP() << "autodiff refuses " << GetParam() << ": " << why;
  expect_matches(*g, c.given, c.big);
}

TEST_P(OutsiderJit, SecondOrder) {
  Case c = load(GetParam());
  std::string why;
  Function g = try_gradient(*c.f, &why);
  if (!g) GTEST_SKIP() << "autodiff refuses " << GetParam() << ": " << why;
  Function gg = try_gradient(*g, &why);
  if (!gg) GTEST_SKIP() << "autodiff refuses " << g->name << ": " << why;
  expect_matches(*gg, c.given, c.big);
}

// F_grad's atomic scatter-add blocks, one at a time, under a `parallel` outer loop: the only
// place where the backend emits `atomicrmw` (the corpora have no parallel scatter of their
// own, and serial atomic blocks are ordinary stores).
TEST_P(OutsiderJit, GradParallelAtomic) {
  // More threads than cores: more interleavings (the pool reads it once, at first use).
  setenv("TIRC_NUM_THREADS", "4", 0);
  Case c = load(GetParam());
  std::string why;
  Function g = try_gradient(*c.f, &why);
  if (!g) GTEST_SKIP() << "autodiff refuses " << GetParam() << ": " << why;
  AtomicBlocks atomics;
  atomics.visit(g->body);
  int parallel = 0;
  for (auto& [blk, loops] : atomics.found) {
    if (loops == 0) continue;
    Function p = parallelize_around(*g, blk, loops);
    if (!p) continue;
    SCOPED_TRACE("parallel around " + blk);
    ++parallel;
    expect_matches(*p, c.given, c.big, true);
  }
  if (!parallel) GTEST_SKIP() << "no atomic block under a loop that can be parallel";
}

INSTANTIATE_TEST_SUITE_P(Funcs, OutsiderJit, ::testing::ValuesIn(all_cases()), test_name);

// The Grad / SecondOrder / GradParallelAtomic tests skip what the autodiff refuses or lacks;
// this keeps them from passing by skipping: every corpus function is differentiable (the
// drivers check that), most F_grad are too, and many F_grad have atomic scatter blocks.
TEST(OutsiderJitMeta, MostGradientsAccepted) {
  std::vector<std::string> cases = all_cases(), parsed;
  for (const char* dir : kCorpora)
    for (const auto& f : parse_file(corpus_file(dir).string()).funcs)
      parsed.push_back(std::string(dir) + "/" + f->name);
  EXPECT_EQ(cases, parsed);
  int first = 0, second = 0, atomic = 0;
  std::string refused;
  for (const auto& id : cases) {
    Case c = load(id);
    std::string why;
    Function g = try_gradient(*c.f, &why);
    if (!g) {
      refused += "\n  " + id + ": " + why;
      continue;
    }
    ++first;
    if (try_gradient(*g, &why)) ++second;
    AtomicBlocks atomics;
    atomics.visit(g->body);
    atomic += std::any_of(atomics.found.begin(), atomics.found.end(), [](auto& b) { return b.second > 0; });
  }
  int n = static_cast<int>(cases.size());
  EXPECT_GT(n, 200);
  EXPECT_EQ(first, n) << "refused:" << refused;
  EXPECT_GE(second * 10, n * 8) << second << " of " << n << " F_grad differentiate";
  EXPECT_GE(atomic, 20) << "F_grad with an atomic scatter block under a loop";
  std::cout << first << " of " << n << " functions differentiate, " << second << " of their F_grad; "
            << atomic << " F_grad have atomic scatter blocks\n";
}

}  // namespace tirc

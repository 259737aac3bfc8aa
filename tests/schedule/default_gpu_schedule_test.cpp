// The default GPU schedule (transforms/schedule/default_gpu_schedule.h), which `tirc build
// --target nvptx` applies to functions with no thread-bound loop: what it binds (exact
// printed loops), its one-thread fallback, and a differential check in the interpreter
// (before / after on random inputs) over every zoo op and its gradient. The PTX and the
// emulated GPU runs are in tests/codegen/default_gpu_schedule_test.cpp.
#include "transforms/schedule/default_gpu_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "interp/runner.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

namespace fs = std::filesystem;

Function parse_one(const std::string& text) {
  Module m = parse_module(text, "t.tir");
  return m.funcs.at(0);
}

// Every top-level statement (under its lets) is a loop bound to blockIdx.x.
void expect_every_statement_bound(const FunctionNode& f) {
  auto* root = f.body.as<BlockRealizeNode>();
  ASSERT_TRUE(root);
  std::vector<Stmt> items;
  if (auto* q = root->block->body.as<SeqNode>())
    items = q->stmts;
  else
    items.push_back(root->block->body);
  for (auto s : items) {
    while (auto* l = s.as<LetStmtNode>()) s = l->body;
    auto* loop = s.as<ForNode>();
    ASSERT_TRUE(loop && loop->for_kind == ForKind::ThreadBinding && loop->thread_tag == "blockIdx.x")
        << f.name << ": a top-level statement is not bound:\n"
        << print_function(f);
  }
}

void expect_same_results(const FunctionNode& before, const FunctionNode& after, const ArgMap& scalars = {},
                         uint64_t seed = 3) {
  CompareOptions o;
  o.seed = seed;
  o.scalars = scalars;
  CompareResult r = compare_functions(before, after, o, interp_runner(), interp_runner());
  EXPECT_TRUE(r.ok) << before.name << ": " << r.detail << "\n" << print_function(after);
}

std::string scheduled(const std::string& text, std::vector<std::string>* notes = nullptr) {
  Function f = parse_one(text);
  Function g = default_gpu_schedule(*f, {}, notes);
  expect_same_results(*f, *g, {}, 5);
  expect_every_statement_bound(*g);
  return print_function(*g);
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(DefaultGpuSchedule, MatmulFusesItsSpatialLoopsIntoBlocksOf1024Threads) {
  std::string s = scheduled(R"(
func mm(A: f32[128, 64], B: f32[64, 32]) -> (C: f32[128, 32]) {
  for i, j, k in grid(128, 32, 64) {
    block C(vi: spatial(128) = i, vj: spatial(32) = j, vk: reduce(64) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] += A[vi, vk] * B[vk, vj]
    }
  }
})");
  EXPECT_TRUE(has(s, "for bx in thread_binding(4, \"blockIdx.x\") {")) << s;
  EXPECT_TRUE(has(s, "for tx in thread_binding(1024, \"threadIdx.x\") {")) << s;
  EXPECT_TRUE(has(s, "for k in serial(64) {")) << s;  // the reduction stays in the thread
}

TEST(DefaultGpuSchedule, SmallExtentIsOneBlockOfThatManyThreads) {
  std::string s = scheduled(R"(
func f(X: f32[6, 5]) -> (Y: f32[6, 5]) {
  for i, j in grid(6, 5) {
    block b(vi: spatial(6) = i, vj: spatial(5) = j) { Y[vi, vj] = X[vi, vj] * 2.0 }
  }
})");
  EXPECT_TRUE(has(s, "thread_binding(1, \"blockIdx.x\")")) << s;
  EXPECT_TRUE(has(s, "thread_binding(30, \"threadIdx.x\")")) << s;
}

TEST(DefaultGpuSchedule, LargeNestsGetAsManyBlocksAsTheyNeed) {
  // 600 * 1000 points: 586 blocks of 1024 threads, the last one predicated.
  std::string s = scheduled(R"(
func f(X: f32[600, 1000]) -> (Y: f32[600, 1000]) {
  for i, j in grid(600, 1000) {
    block b(vi: spatial(600) = i, vj: spatial(1000) = j) { Y[vi, vj] = X[vi, vj] + 1.0 }
  }
})");
  EXPECT_TRUE(has(s,
                  "for bx in thread_binding(586, \"blockIdx.x\") {\n    for tx in thread_binding(1024, "
                  "\"threadIdx.x\") {"))
      << s;
  EXPECT_TRUE(has(s, "where bx * 1024 + tx < 600000")) << s;
}

TEST(DefaultGpuSchedule, SymbolicExtentIsSplitWithAPredicate) {
  Function f = parse_one(R"(
func f(n: i32 in [1, 40], X: f32[n, 3]) -> (Y: f32[n, 3]) {
  for i, j in grid(n, 3) {
    block b(vi: spatial(n) = i, vj: spatial(3) = j) { Y[vi, vj] = X[vi, vj] * X[vi, vj] }
  }
})");
  Function g = default_gpu_schedule(*f);
  expect_every_statement_bound(*g);
  std::string s = print_function(*g);
  EXPECT_TRUE(has(s, "thread_binding((n * 3 + 1023) // 1024, \"blockIdx.x\")")) << s;
  EXPECT_TRUE(has(s, "thread_binding(1024, \"threadIdx.x\")")) << s;
  for (int n : {1, 7, 40}) {
    ArgMap sc;
    NDArray a(DType::I32, {});
    a.set(0, n);
    sc["n"] = a;
    expect_same_results(*f, *g, sc);
  }
}

TEST(DefaultGpuSchedule, FullReductionRunsInOneThread) {
  std::vector<std::string> notes;
  std::string s = scheduled(R"(
func total(X: f32[7, 9]) -> (S: f32[1]) {
  for i, j in grid(7, 9) {
    block s(vi: reduce(7) = i, vj: reduce(9) = j) {
      init { S[0] = 0.0 }
      S[0] += X[vi, vj]
    }
  }
})",
                            &notes);
  EXPECT_TRUE(has(s,
                  "for u in thread_binding(1, \"blockIdx.x\") {\n    for t in thread_binding(1, "
                  "\"threadIdx.x\") {\n      for i in serial(7) {"))
      << s;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "statement 0: runs in one thread (no data-parallel outer loop)");
}

TEST(DefaultGpuSchedule, ScanBindsItsRowsAndKeepsTheScanSerial) {
  std::string s = scheduled(R"(
func cs(X: f32[4, 16]) -> (Y: f32[4, 16]) {
  for i, t in grid(4, 16) {
    block c(vi: spatial(4) = i, vt: scan(16) = t) {
      Y[vi, vt] = if_then_else(vt == 0, X[vi, vt], Y[vi, vt - 1] + X[vi, vt])
    }
  }
})");
  EXPECT_TRUE(has(s, "thread_binding(4, \"threadIdx.x\")")) << s;
  EXPECT_TRUE(has(s, "for t in serial(16) {")) << s;
}

TEST(DefaultGpuSchedule, SeveralStagesAreBoundOneByOne) {
  std::vector<std::string> notes;
  scheduled(R"(
func sm(X: f32[3, 10]) -> (Y: f32[3, 10]) {
  alloc M: f32[3]
  alloc E: f32[3, 10]
  for i, j in grid(3, 10) {
    block m(vi: spatial(3) = i, vj: reduce(10) = j) {
      init { M[vi] = min_value(f32) }
      M[vi] = max(M[vi], X[vi, vj])
    }
  }
  for i, j in grid(3, 10) {
    block e(vi: spatial(3) = i, vj: spatial(10) = j) { E[vi, vj] = exp(X[vi, vj] - M[vi]) }
  }
  for i, j in grid(3, 10) {
    block y(vi: spatial(3) = i, vj: spatial(10) = j) { Y[vi, vj] = E[vi, vj] * 0.5 }
  }
})",
            &notes);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], "statement 0: loops i fused and bound to blockIdx.x x threadIdx.x (1 x 3)");
  EXPECT_EQ(notes[1], "statement 1: loops i, j fused and bound to blockIdx.x x threadIdx.x (1 x 30)");
}

TEST(DefaultGpuSchedule, AnIterationSharedScratchFallsBackToOneThread) {
  // T[0] is written and read at every i: binding i would make the threads race on it; bind
  // refuses, so the nest runs in one thread (in order).
  std::vector<std::string> notes;
  std::string s = scheduled(R"(
func f(X: f32[8]) -> (Y: f32[8]) {
  alloc T: f32[1]
  for i in serial(8) {
    block a(vi: spatial(8) = i) { T[0] = X[vi] * 3.0 }
    block b(vi: spatial(8) = i) { Y[vi] = T[0] + 1.0 }
  }
})",
                            &notes);
  EXPECT_FALSE(has(s, "thread_binding(8")) << s;
  EXPECT_EQ(notes.at(0), "statement 0: runs in one thread (no data-parallel outer loop)");
}

TEST(DefaultGpuSchedule, TopLevelLetsStayAboveTheBoundNest) {
  std::string s = scheduled(R"(
func f(s: f32 in [-1, 1], X: f32[8]) -> (Y: f32[8]) {
  let two = 2
  for i in serial(8) {
    block b(vi: spatial(8) = i) { Y[vi] = X[(vi + two) % 8] * s }
  }
})");
  EXPECT_TRUE(has(s, "let two = 2\n  for bx in thread_binding(1, \"blockIdx.x\") {")) << s;
}

TEST(DefaultGpuSchedule, TopLevelIfRunsInOneThread) {
  std::vector<std::string> notes;
  std::string s = scheduled(R"(
func f(c: i32 in [0, 1], X: f32[8]) -> (Y: f32[8]) {
  if c > 0 {
    for i in serial(8) {
      block a(vi: spatial(8) = i) { Y[vi] = X[vi] * 2.0 }
    }
  } else {
    for i in serial(8) {
      block b(vi: spatial(8) = i) { Y[vi] = X[vi] - 1.0 }
    }
  }
})",
                            &notes);
  EXPECT_TRUE(has(s,
                  "for u in thread_binding(1, \"blockIdx.x\") {\n    for t in thread_binding(1, "
                  "\"threadIdx.x\") {\n      if c > 0 {"))
      << s;
  EXPECT_EQ(notes.at(0), "statement 0: runs in one thread (no data-parallel outer loop)");
}

TEST(DefaultGpuSchedule, AFunctionWithItsOwnBindingIsKeptAsWritten) {
  Function f = parse_one(R"(
func f(X: f32[64]) -> (Y: f32[64]) {
  for i in thread_binding(64, "threadIdx.x") {
    block b(vi: spatial(64) = i) { Y[vi] = X[vi] }
  }
  for i in serial(64) {
    block c(vi: spatial(64) = i) { Y[vi] = Y[vi] * 2.0 }
  }
})");
  EXPECT_TRUE(has_gpu_thread_binding(*f));
  Function g = default_gpu_schedule(*f);
  EXPECT_TRUE(structural_equal(*f, *g)) << print_function(*g);
}

// ---- every zoo op and its gradient ----

std::vector<std::string> zoo_ops() {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(fs::path(TIRC_SOURCE_DIR) / "examples" / "ops"))
    if (e.path().extension() == ".tir") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

// `# zoo-input: NAME=VALUE` lines give scalar parameters.
ArgMap zoo_scalars(const fs::path& file, const FunctionNode& f) {
  std::ifstream in(file);
  std::string line;
  std::vector<std::string> specs;
  const std::string tag = "zoo-input:";
  while (std::getline(in, line)) {
    size_t p = line.find(tag);
    if (line.rfind("#", 0) != 0 || p == std::string::npos) continue;
    std::istringstream rest(line.substr(p + tag.size()));
    std::string spec;
    if (rest >> spec) specs.push_back(spec);
  }
  return parse_input_specs(f, specs);
}

// One test over all ops (a process per op would cost more than the checks).
TEST(ZooDefaultGpu, ForwardAndGradientKeepTheirResults) {
  std::vector<std::string> ops = zoo_ops();
  ASSERT_GT(ops.size(), 100u);
  for (const std::string& op : ops) {
    SCOPED_TRACE(op);
    fs::path file = fs::path(TIRC_SOURCE_DIR) / "examples" / "ops" / (op + ".tir");
    Module m = parse_file(file.string());
    Function f = m.find_func(op);
    ASSERT_TRUE(f);
    ArgMap sc = zoo_scalars(file, *f);
    std::vector<Function> fs{f};
    try {
      fs.push_back(gradient(*f, {}));
    } catch (const Error&) {
      // refused gradients are tested in the zoo suite
    }
    // TVM's block size, and a small one (several blocks, predicated tails).
    DefaultGpuScheduleOptions few;
    few.max_threads_per_block = 7;
    for (auto& fn : fs)
      for (auto& opts : {DefaultGpuScheduleOptions{}, few}) {
        Function g = default_gpu_schedule(*fn, opts);
        expect_every_statement_bound(*g);
        expect_same_results(*fn, *g, sc);
      }
  }
}

}  // namespace
}  // namespace tirc

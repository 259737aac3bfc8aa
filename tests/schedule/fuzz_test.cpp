// Schedule fuzzer: random sequences of primitives with random arguments over small
// functions (tests/schedule/fuzz/*.tir and the operator zoo examples/ops/*.tir). A refused
// step is fine; a wrong result (interpreter differential check against the unscheduled
// function), an output that does not re-parse to the same IR, or any other exception is a
// failure. With LLVM, every TIRC_SCHED_FUZZ_JIT_EVERY-th (default 8) changed function also
// runs through the JIT against the interpreter. Iterations: TIRC_SCHED_FUZZ_ITERS (default 4000;
// 800 in sanitizer builds), seed: TIRC_SCHED_FUZZ_SEED (default 1), only the bases whose file
// name contains TIRC_SCHED_FUZZ_BASE (default all). Long run: `test_schedule
// --gtest_also_run_disabled_tests
// --gtest_filter=ScheduleFuzz.DISABLED_Long` (100000 schedules by default).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/structural_equal.h"
#include "parser/parser.h"
#include "tests/sanitized.h"
#include "tests/schedule/fuzz/sched_fuzz_gen.h"
#include "tests/schedule/tvm_style_files.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/verify.h"
#ifdef TIRC_WITH_LLVM
#include "codegen/jit.h"
#endif

namespace tirc {
namespace {

namespace fs = std::filesystem;
using namespace sched;

using schedfuzz::Base;
using schedfuzz::Gen;
using schedfuzz::load_bases;

// Parallel, vectorized and thread-bound loops run backwards (testing::ReverseParallelLoops): a
// legal schedule does not depend on the order of their iterations, but the interpreter runs
// them in order, so this makes the differential check see order dependences.
using testing::ReverseParallelLoops;

long env_long(const char* name, long dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : dflt;
}

void run_fuzz(long iters, uint64_t seed) {
  auto bases = load_bases();
  ASSERT_GE(bases.size(), 5u);
  // TIRC_SCHED_FUZZ_BASE=name keeps the bases whose file name contains it (a long run aimed at
  // one base, e.g. overcompute_small.tir).
  if (const char* only = std::getenv("TIRC_SCHED_FUZZ_BASE"); only && *only) {
    std::vector<Base> kept;
    for (auto& b : bases)
      if (b.file.find(only) != std::string::npos) kept.push_back(b);
    ASSERT_FALSE(kept.empty()) << "no fuzz base matches " << only;
    bases = kept;
  }
  std::mt19937_64 rng(seed);
  std::map<std::string, std::pair<int, int>> stats;  // primitive -> (applied, refused)
  int failures = 0, schedules_with_change = 0, jit_checked = 0;
  [[maybe_unused]] const long jit_every = std::max(1L, env_long("TIRC_SCHED_FUZZ_JIT_EVERY", 8));
  auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iters; ++it) {
    const Base& base = bases[rng() % bases.size()];
    ScheduleState st(*base.f);
    std::string script = "# base " + base.file + "\nschedule " + base.f->name + " {\n";
    int steps = 1 + static_cast<int>(rng() % 8), applied = 0;
    std::string failure;
    for (int s = 0; s < steps && failure.empty(); ++s) {
      Gen gen(rng, st);
      if (gen.empty()) break;
      std::string text;
      ScheduleInstr ins = gen.next(&text);
      Stmt before = st.body();
      try {
        apply_instruction(st, ins);
        ++applied;
        ++stats[ins.primitive].first;
        script += text + "\n";
      } catch (const Refusal& r) {
        ++stats[ins.primitive].second;
        script += text + "   # refused: " + r.what() + "\n";
        if (!st.body().same_as(before)) failure = "a refusal changed the function";
      } catch (const std::exception& e) {
        failure = std::string("exception: ") + e.what();
        script += text + "\n";
      }
    }
    script += "}\n";
    if (failure.empty() && applied > 0) {
      ++schedules_with_change;
      Function g = st.to_function();
      try {
        CompareOptions o;
        o.seed = static_cast<uint64_t>(it);
        o.scalars = base.scalars;
        CompareResult r = compare_functions(*base.f, *g, o, interp_runner(), interp_runner());
        if (!r.ok) failure = "mismatch: " + r.detail;
        if (r.ok) {
          ReverseParallelLoops rp;
          FunctionNode rev = *g;
          rev.body = rp.mutate(g->body);
          CompareResult r2 = compare_functions(*base.f, rev, o, interp_runner(), interp_runner());
          if (!r2.ok) failure = "mismatch with parallel loops run backwards: " + r2.detail;
        }
#ifdef TIRC_WITH_LLVM
        // The JIT on a sample of the scheduled functions (a compile costs ~20-50 ms): lowering
        // and codegen of what the primitives produce must agree with the interpreter.
        if (r.ok && failure.empty() && schedules_with_change % jit_every == 0) {
          FunctionRunner jit = [](const FunctionNode& fn, const ArgMap& in) {
            return compile_jit(fn)->run(in);
          };
          CompareResult r3 = compare_functions(*g, *g, o, interp_runner(), jit);
          ++jit_checked;
          if (!r3.ok) failure = "JIT differs from the interpreter: " + r3.detail;
        }
#endif
      } catch (const std::exception& e) {
        failure = std::string("reference failed: ") + e.what();
      }
      if (failure.empty()) {
        try {
          std::string text = print_function(*g);
          Module m2 = parse_module(text, "roundtrip.tir");
          if (m2.funcs.size() != 1 || !structural_equal(*g, *m2.funcs[0])) {
            auto d = m2.funcs.empty() ? std::optional<std::string>("no function")
                                      : structural_diff(*g, *m2.funcs[0]);
            failure = "printed result does not re-parse to the same IR: " + d.value_or("?") + "\n" + text;
          }
        } catch (const std::exception& e) {
          failure = std::string("printed result does not parse: ") + e.what() + "\n" + print_function(*g);
        }
      }
    }
    if (!failure.empty()) {
      ++failures;
      std::cout << "[fuzz] FAILURE " << base.file << ": " << failure.substr(0, failure.find('\n')) << "\n";
      if (failures <= 5) ADD_FAILURE() << failure << "\n" << script;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[fuzz] " << iters << " schedules (" << schedules_with_change << " changed the function) over "
            << bases.size() << " functions in " << secs << " s (" << jit_checked
            << " also through the JIT); failures: " << failures << "\n";
  for (auto& [p, c] : stats)
    std::cout << "[fuzz]   " << p << ": " << c.first << " applied, " << c.second << " refused\n";
  EXPECT_EQ(failures, 0);
}

// Sanitizer builds (the ASan + UBSan CI job, a Debug build) run each schedule about 15 times
// slower: they take a fifth of the iterations there (TIRC_SCHED_FUZZ_ITERS still overrides);
// the release build keeps all 4000.
#ifdef TIRC_TEST_SANITIZED
constexpr long kCiFuzzIters = 800;
#else
constexpr long kCiFuzzIters = 4000;
#endif

// The CI run: fast (a few seconds here; well under a minute on a slow machine).
TEST(ScheduleFuzz, RandomSchedules) {
  run_fuzz(env_long("TIRC_SCHED_FUZZ_ITERS", kCiFuzzIters),
           static_cast<uint64_t>(env_long("TIRC_SCHED_FUZZ_SEED", 1)));
}

// The long run (not in CI): test_schedule --gtest_also_run_disabled_tests
//   --gtest_filter=ScheduleFuzz.DISABLED_Long   (TIRC_SCHED_FUZZ_ITERS / _SEED apply too).
TEST(ScheduleFuzz, DISABLED_Long) {
  run_fuzz(env_long("TIRC_SCHED_FUZZ_ITERS", 100000),
           static_cast<uint64_t>(env_long("TIRC_SCHED_FUZZ_SEED", 1000)));
}

}  // namespace
}  // namespace tirc

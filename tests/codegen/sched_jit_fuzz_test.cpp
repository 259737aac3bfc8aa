// Differential fuzz of *scheduled* programs through the backends: the schedule fuzzer's
// generator (tests/schedule/fuzz/sched_fuzz_gen.h: random split / fuse / reorder / parallel /
// vectorize / unroll / bind / compute_at / reverse_compute_at / compute_inline / cache_read /
// cache_write / decompose_reduction / rfactor / blockize / pad_einsum / reindex / annotate over
// the small functions of tests/schedule/fuzz and examples/ops and their gradients) makes random
// (function, schedule) pairs; each scheduled function is
//   1. compiled by the JIT (CPU) and compared with the interpreter running the UNSCHEDULED
//      function on the same random inputs (integers bit-exact, floats with verify's tolerance,
//      since rfactor / reorder may reassociate float reductions), and also bit-exact with the
//      interpreter running the scheduled function itself (docs/codegen.md promises bit-identical
//      results for one function without --fast-math; skipped where atomic updates run in
//      parallel, whose order is free);
//   2. every TIRC_SCHED_JIT_FUZZ_GPU_EVERY-th one (default 4): bound for the GPU (its own
//      bindings, or the default GPU schedule when it has none, as `tirc build --target nvptx`
//      does), compiled to PTX, which ptxas must accept, and run in the NVPTX emulator
//      (tests/codegen/gpu_emu.h) against the interpreter of the unscheduled function. A refusal of
//      the NVPTX backend ("nvptx: ...") is counted, not a failure.
// When the JIT differs, the interpreter of the scheduled function is compared with the
// unscheduled one too: if it already differs, the failure is a schedule primitive's (reported
// as such), otherwise the lowering's or codegen's.
//
// CI: TIRC_SCHED_JIT_FUZZ_ITERS schedules (default 40) from seed TIRC_SCHED_JIT_FUZZ_SEED
// (default 1); skipped in sanitized builds (a JIT compile per schedule). Long hunt:
//   TIRC_SCHED_JIT_FUZZ_SEED=S TIRC_SCHED_JIT_FUZZ_ITERS=N BUILD/test_codegen
//     --gtest_also_run_disabled_tests --gtest_filter=SchedJitFuzz.DISABLED_Long
// (defaults 1000 schedules from seed 1000; TIRC_SCHED_JIT_FUZZ_VERBOSE=1 prints each schedule
// before compiling it, so a crash names its script; TIRC_SCHED_JIT_FUZZ_ONLY=I checks only
// iteration I of the run (the failure message names it), TIRC_SCHED_JIT_FUZZ_FROM=I those from I
// on; TIRC_SCHED_JIT_FUZZ_GPU_EVERY=0 turns the GPU part off).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "tests/sanitized.h"
#include "tests/schedule/fuzz/sched_fuzz_gen.h"
#include "transforms/schedule/default_gpu_schedule.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/verify.h"

namespace tirc {
namespace {

using schedfuzz::Base;
using schedfuzz::Gen;
using sched::Refusal;
using sched::ScheduleState;

#ifdef TIRC_TEST_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

long env_long(const char* name, long dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : dflt;
}

// True when f has a block annotated "atomic" (autodiff's scatter-adds): under a parallel loop
// their float updates run in any order, so only the tolerance applies.
bool has_atomic_block(const FunctionNode& f) {
  struct V : IRVisitor {
    bool found = false;
    void visit_block_realize(const BlockRealizeNode* n) override {
      if (n->block->annotations.count("atomic")) found = true;
      IRVisitor::visit_block_realize(n);
    }
  } v;
  v.visit(f.body);
  return v.found;
}

// Bit-identical outputs (any NaN matches any NaN); "" or the first difference.
std::string bit_diff(const ArgMap& want, const ArgMap& got) {
  for (auto& [name, a] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "missing output " + name;
    const NDArray& b = it->second;
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return name + ": " + describe(b) + " vs " + describe(a);
    for (int64_t i = 0; i < a.numel(); ++i) {
      double x = a.get(i), y = b.get(i);
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s[flat %lld]: interpreter %.17g, jit %.17g", name.c_str(),
                    static_cast<long long>(i), x, y);
      return buf;
    }
  }
  return "";
}

struct Tally {
  long schedules = 0, changed = 0, jit_compared = 0, ref_failed = 0;
  long gpu_tried = 0, gpu_refused = 0, ptxas_ok = 0, emulated = 0, emu_skipped = 0;
  int failures = 0;
  std::map<std::string, long> gpu_refusals;  // first words of the nvptx refusal -> count
};

// The GPU part for one scheduled function g of base: bind, PTX, ptxas, emulator.
// Returns "" or the failure.
std::string check_gpu(const Base& base, const Function& g, const CompareOptions& o, Tally& t) {
  ++t.gpu_tried;
  Function gg = has_gpu_thread_binding(*g) ? g : default_gpu_schedule(*g);
  std::string ptx;
  try {
    ptx = testing::nvptx(gg, EmitKind::Asm);
  } catch (const Error& e) {
    std::string m = e.what();
    if (m.find("nvptx") == std::string::npos) return "nvptx compile failed without an nvptx refusal: " + m;
    ++t.gpu_refused;
    size_t p = m.find("nvptx");
    t.gpu_refusals[m.substr(p, 90)]++;
    return "";
  }
  std::string log;
  int rc = testing::run_ptxas(ptx, &log);
  if (rc == -2) return "";  // ptxas not installed
  if (rc != 0) return "ptxas rejects the PTX: " + log + "\n" + print_function(*gg);
  ++t.ptxas_ok;
  // Emulate only small launches (one host thread per GPU thread) without f16 / bf16 scalars.
  int grid[3], block[3];
  ArgMap in = verify_inputs(*base.f, o);
  testing::launch_sizes(*gg, grid, block, in);
  long threads = 1;
  for (int a = 0; a < 3; ++a) threads *= std::max(1, grid[a]) * static_cast<long>(std::max(1, block[a]));
  if (threads > 20000) {
    ++t.emu_skipped;
    return "";
  }
  ArgMap want = run_interp(*base.f, in);
  std::string err;
  ArgMap got = testing::emulate(gg, in, &err);
  if (err.find("f16/bf16 scalars") != std::string::npos) {
    ++t.emu_skipped;
    return "";
  }
  if (!err.empty()) return "emulator: " + err + "\n" + print_function(*gg);
  ++t.emulated;
  for (auto& [name, arr] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "emulator lacks output " + name;
    CompareResult r = compare_arrays(name, arr, it->second, o);
    if (!r.ok) return "emulated GPU differs from the unscheduled interpreter: " + r.detail + "\n" + print_function(*gg);
  }
  return "";
}

void run_fuzz(long iters, uint64_t seed) {
  static const std::vector<Base> bases = schedfuzz::load_bases();
  ASSERT_GE(bases.size(), 5u);
  const long gpu_every = env_long("TIRC_SCHED_JIT_FUZZ_GPU_EVERY", 4);
  const bool verbose = std::getenv("TIRC_SCHED_JIT_FUZZ_VERBOSE") != nullptr;
  // Reproduction: check only iteration ONLY, or the iterations from FROM on (the schedules
  // before are still generated: the random sequence is the same).
  const long only = env_long("TIRC_SCHED_JIT_FUZZ_ONLY", -1), from = env_long("TIRC_SCHED_JIT_FUZZ_FROM", 0);
  std::mt19937_64 rng(seed);
  Tally t;
  auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iters; ++it) {
    const Base& base = bases[rng() % bases.size()];
    ScheduleState st(*base.f);
    std::string script = "# base " + base.file + " (iteration " + std::to_string(it) + ", seed " +
                         std::to_string(seed) + ")\nschedule " + base.f->name + " {\n";
    int steps = 1 + static_cast<int>(rng() % 8), applied = 0;
    for (int s = 0; s < steps; ++s) {
      Gen gen(rng, st);
      if (gen.empty()) break;
      std::string text;
      ScheduleInstr ins = gen.next(&text);
      try {
        sched::apply_instruction(st, ins);
        ++applied;
        script += text + "\n";
      } catch (const std::exception& e) {  // refusals (and the schedule fuzzer's failures) skip the step
        script += text + "   # refused\n";
      }
    }
    script += "}\n";
    ++t.schedules;
    if (applied == 0) continue;
    ++t.changed;
    if (it < from || (only >= 0 && it != only)) continue;
    Function g = st.to_function();
    if (verbose) std::fprintf(stderr, "%s", script.c_str());
    std::string failure;
    CompareOptions o;
    o.seed = static_cast<uint64_t>(it);
    o.scalars = base.scalars;
    ArgMap in = verify_inputs(*base.f, o), want;
    try {
      want = run_interp(*base.f, in);
    } catch (const Error& e) {
      ++t.ref_failed;  // the unscheduled function fails on these inputs: nothing to compare
      if (verbose) std::fprintf(stderr, "reference failed: %s\n", e.what());
      continue;
    }
    // The interpreter's run of the scheduled function, for the bit-exact check and to tell whose
    // bug a difference is ("" when it ran).
    ArgMap want_g;
    std::string gerr;
    try {
      want_g = run_interp(*g, in);
    } catch (const std::exception& e) {
      gerr = e.what();
    }
    auto vs_unscheduled = [&](const ArgMap& got) {
      for (auto& out : base.f->outputs) {
        auto it = got.find(out->name);
        if (it == got.end()) return "missing output " + out->name;
        CompareResult r = compare_arrays(out->name, want.at(out->name), it->second, o);
        if (!r.ok) return r.detail;
      }
      return std::string();
    };
    try {
      ArgMap got = compile_jit(*g)->run(in);
      std::string d = vs_unscheduled(got);
      if (!d.empty()) {
        std::string di = gerr.empty() ? vs_unscheduled(want_g) : gerr;
        failure = di.empty() ? "JIT of the scheduled function differs from the unscheduled interpreter: " + d
                             : "SCHEDULE bug (the interpreter of the scheduled function differs too: " + di +
                                   "); JIT: " + d;
      } else {
        ++t.jit_compared;
        if (!gerr.empty()) {
          failure = "SCHEDULE bug: the interpreter of the scheduled function fails: " + gerr;
        } else if (!has_atomic_block(*g)) {  // the same function in both engines: bit-identical
          d = bit_diff(want_g, got);
          if (!d.empty()) failure = "JIT not bit-identical to the interpreter on the scheduled function: " + d;
        }
      }
    } catch (const std::exception& e) {
      failure = std::string("JIT: ") + e.what() + (gerr.empty() ? "" : " (interpreter of the scheduled function: " + gerr + ")");
    }
    if (failure.empty() && gpu_every > 0 && t.changed % gpu_every == 0) {
      try {
        failure = check_gpu(base, g, o, t);
      } catch (const std::exception& e) {
        failure = std::string("GPU path: exception: ") + e.what();
      }
    }
    if (!failure.empty()) {
      ++t.failures;
      std::printf("[sched-jit-fuzz] FAILURE %s: %s\n", base.file.c_str(), failure.substr(0, failure.find('\n')).c_str());
      std::fflush(stdout);
      if (t.failures <= 5) ADD_FAILURE() << failure << "\n" << script << "\n" << print_function(*g);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "[sched-jit-fuzz] seed %llu: %ld schedules (%ld changed the function) over %zu functions in %.1f s: %ld "
      "compared through the JIT, %ld with failing references; GPU: %ld tried, %ld refused by nvptx, %ld accepted "
      "by ptxas, %ld emulated (%ld too large or f16 scalars); failures: %d\n",
      static_cast<unsigned long long>(seed), t.schedules, t.changed, bases.size(), secs, t.jit_compared,
      t.ref_failed, t.gpu_tried, t.gpu_refused, t.ptxas_ok, t.emulated, t.emu_skipped, t.failures);
  for (auto& [k, n] : t.gpu_refusals) std::printf("[sched-jit-fuzz]   %ld x %s\n", n, k.c_str());
  EXPECT_EQ(t.failures, 0);
  EXPECT_GT(t.jit_compared, 0);
}

TEST(SchedJitFuzz, ScheduledProgramsAgreeWithTheUnscheduledInterpreter) {
  if (kSanitized) {
    GTEST_SKIP() << "a JIT compile per schedule: too slow under the sanitizers";
  }
  run_fuzz(env_long("TIRC_SCHED_JIT_FUZZ_ITERS", 40), static_cast<uint64_t>(env_long("TIRC_SCHED_JIT_FUZZ_SEED", 1)));
}

TEST(SchedJitFuzz, DISABLED_Long) {
  run_fuzz(env_long("TIRC_SCHED_JIT_FUZZ_ITERS", 1000),
           static_cast<uint64_t>(env_long("TIRC_SCHED_JIT_FUZZ_SEED", 1000)));
}

}  // namespace
}  // namespace tirc

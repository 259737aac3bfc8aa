// Schedule fuzzer: random sequences of primitives with random arguments over small
// functions (tests/schedule/fuzz/*.tir and the operator zoo examples/ops/*.tir). A refused
// step is fine; a wrong result (interpreter differential check against the unscheduled
// function), an output that does not re-parse to the same IR, or any other exception is a
// failure. With LLVM, every TIRC_SCHED_FUZZ_JIT_EVERY-th (default 8) changed function also
// runs through the JIT against the interpreter. Iterations: TIRC_SCHED_FUZZ_ITERS (default 4000;
// 800 in sanitizer builds), seed: TIRC_SCHED_FUZZ_SEED (default 1). Long run: `test_schedule
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

struct Base {
  std::string file;
  Function f;
  ArgMap scalars;
};

std::vector<Base> load_bases() {
  std::vector<fs::path> files;
  for (auto dir :
       {fs::path(TIRC_SOURCE_DIR) / "tests/schedule/fuzz", fs::path(TIRC_SOURCE_DIR) / "examples/ops"}) {
    if (!fs::exists(dir)) continue;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Base> out;
  for (auto& p : files) {
    Module m;
    try {
      m = parse_file(p.string());
    } catch (const Error&) {
      continue;  // another component's problem; the zoo tests report it
    }
    ArgMap scalars;
    std::ifstream in(p);
    std::string line;
    std::regex re("#\\s*zoo-input:\\s*([A-Za-z_][A-Za-z0-9_]*)=([-0-9.eE]+)");
    while (std::getline(in, line)) {
      std::smatch mt;
      if (std::regex_search(line, mt, re)) {
        NDArray a(DType::F64, {});
        a.set(0, std::stod(mt[2]));
        scalars[mt[1]] = a;
      }
    }
    // The gradient functions too: schedules name F_grad blocks as well as F's.
    std::vector<Function> funcs = m.funcs;
    for (auto& f : m.funcs) {
      try {
        // As a user gets it from `tirc grad`: printed and parsed again.
        Module gm = parse_module(print_function(*gradient(*f, {})), "grad.tir");
        funcs.push_back(gm.funcs.at(0));
      } catch (const std::exception&) {  // not differentiable: another component's concern
      }
    }
    for (auto& f : funcs) {
      Base b{p.filename().string(), f, {}};
      for (auto& prm : f->params)
        if (!prm.is_buffer() && scalars.count(prm.name()))
          b.scalars[prm.name()] = scalars[prm.name()].astype(prm.var.dtype());
      // Keep only small functions (deterministic: static count of block iterations), and
      // only those the interpreter runs (others are another component's problem).
      int64_t work = 0;
      std::function<void(const Stmt&, int64_t)> count = [&](const Stmt& x, int64_t mult) {
        if (!x.defined()) return;
        if (auto* fl = x.as<ForNode>()) {
          int64_t e;
          mult *= is_const_int(fl->extent, &e) ? e : 10;
        }
        if (x.kind() == StmtKind::BlockRealize) work += mult;
        for (auto& c : children(x)) count(c, mult);
      };
      count(f->body, 1);
      if (work > 20000) continue;
      try {
        CompareOptions o;
        o.scalars = b.scalars;
        run_interp(*f, verify_inputs(*f, o));
      } catch (const Error&) {
        continue;
      }
      out.push_back(b);
    }
  }
  return out;
}

class Gen {
 public:
  Gen(std::mt19937_64& rng, ScheduleState& st) : rng_(rng), st_(st) {
    for (auto& b : collect_blocks(st.body()))
      if (!b.same_as(st.body())) blocks_.push_back(block_of(b)->name);
    for (auto& l : collect_loops_all(st.body())) loops_.push_back(l);
  }

  bool empty() const { return blocks_.empty(); }

  // A random instruction; handles are registered in the state, text is for reproduction.
  ScheduleInstr next(std::string* text) {
    static const char* prims[] = {"split",
                                  "split",
                                  "fuse",
                                  "reorder",
                                  "reorder",
                                  "parallel",
                                  "vectorize",
                                  "unroll",
                                  "bind",
                                  "compute_at",
                                  "compute_at",
                                  "reverse_compute_at",
                                  "compute_inline",
                                  "reverse_compute_inline",
                                  "cache_read",
                                  "cache_write",
                                  "decompose_reduction",
                                  "rfactor",
                                  "blockize",
                                  "annotate",
                                  "pad_einsum",
                                  "reindex"};
    ScheduleInstr ins;
    ins.primitive = prims[pick(sizeof(prims) / sizeof(prims[0]))];
    ins.loc = SourceLoc{"fuzz", 1, 1};
    std::ostringstream os;
    auto P = ins.primitive;
    if (P == "split") {
      Var l = rand_loop();
      ScheduleArg list{ScheduleArg::List, "", 0, 0, {}, {}, {}, {}};
      static const int64_t fs_[] = {1, 2, 3, 4, 5, 8};
      int n = 2 + (pick(4) == 0);
      int wild = static_cast<int>(pick(n + 1));  // n means none
      for (int k = 0; k < n; ++k) {
        if (k == wild)
          list.list.push_back(ScheduleArg{ScheduleArg::Wildcard, "_", 0, 0, {}, {}, {}, {}});
        else
          list.list.push_back(int_arg(fs_[pick(6)]));
      }
      ins.args = {loop_arg(l), list};
      for (int k = 0; k < n; ++k) ins.results.push_back(fresh("s"));
    } else if (P == "fuse") {
      Var l = rand_loop();
      Stmt s = st_.find_loop(l.get());
      std::vector<Var> vs{l};
      if (s.defined() && pick(5) != 0) {
        Stmt b = s.as<ForNode>()->body;
        while (b.kind() == StmtKind::For && vs.size() < 3 && pick(3) != 0) {
          vs.push_back(b.as<ForNode>()->loop_var);
          b = b.as<ForNode>()->body;
        }
      } else {
        vs.push_back(rand_loop());
      }
      for (auto& v : vs) ins.args.push_back(loop_arg(v));
      ins.results.push_back(fresh("f"));
    } else if (P == "reorder") {
      std::string b = rand_block();
      auto ls = st_.loops_above(st_.find_block(b).get());
      if (ls.size() < 2) ls = collect_loops_all(st_.body());
      std::vector<Var> vs;
      for (auto& l : ls) vs.push_back(l.as<ForNode>()->loop_var);
      std::shuffle(vs.begin(), vs.end(), rng_);
      size_t n = std::min<size_t>(vs.size(), 2 + pick(3));
      for (size_t k = 0; k < n; ++k) ins.args.push_back(loop_arg(vs[k]));
    } else if (P == "parallel" || P == "vectorize" || P == "unroll" || P == "blockize") {
      ins.args.push_back(loop_arg(rand_loop()));
      if (P == "blockize") ins.results.push_back(fresh("bz"));
    } else if (P == "bind") {
      static const char* tags[] = {"blockIdx.x", "threadIdx.x", "threadIdx.y", "vthread"};
      ins.args = {loop_arg(rand_loop()), str_arg(tags[pick(4)])};
    } else if (P == "compute_at" || P == "reverse_compute_at") {
      // Mostly: a loop above a consumer (compute_at) or a producer (reverse_compute_at).
      std::string b = rand_block();
      Var l = rand_loop();
      Stmt bs = st_.find_block(b);
      std::vector<Stmt> related;
      for (auto& o : collect_blocks(st_.body())) {
        if (o.same_as(bs) || o.same_as(st_.body())) continue;
        const BlockNode* ob = block_of(o);
        const BlockNode* me = block_of(bs);
        const BlockNode* prod = P == "compute_at" ? me : ob;
        const BlockNode* cons = P == "compute_at" ? ob : me;
        for (auto& w : written_buffers(*prod))
          if (block_reads(*cons, w)) related.push_back(o);
      }
      if (!related.empty() && pick(4) != 0) {
        auto ls = st_.loops_above(related[pick(related.size())].get());
        if (!ls.empty()) l = ls[pick(ls.size())].as<ForNode>()->loop_var;
      }
      ins.args = {block_arg(b), loop_arg(l)};
    } else if (P == "compute_inline" || P == "reverse_compute_inline") {
      ins.args = {block_arg(rand_block())};
    } else if (P == "cache_read" || P == "cache_write") {
      std::string b = rand_block();
      static const char* scopes[] = {"global", "shared", "local"};
      ins.args = {block_arg(b), int_arg(static_cast<int64_t>(pick(3))), str_arg(scopes[pick(3)])};
      ins.results.push_back(fresh("c"));
    } else if (P == "decompose_reduction") {
      std::string b = rand_block();
      auto ls = st_.loops_above(st_.find_block(b).get());
      Var l = ls.empty() || pick(6) == 0 ? rand_loop() : ls[pick(ls.size())].as<ForNode>()->loop_var;
      ins.args = {block_arg(b), loop_arg(l)};
      ins.results.push_back(fresh("init"));
    } else if (P == "rfactor") {
      ins.args = {loop_arg(rand_loop()), int_arg(static_cast<int64_t>(pick(3)))};
      ins.results.push_back(fresh("rf"));
    } else if (P == "pad_einsum") {
      std::string b = rand_block();
      size_t n = block_of(st_.find_block(b))->iter_vars.size();
      ScheduleArg list{ScheduleArg::List, "", 0, 0, {}, {}, {}, {}};
      for (size_t k = 0; k < n; ++k) list.list.push_back(int_arg(1 + static_cast<int64_t>(pick(4))));
      ins.args = {block_arg(b), list};
    } else if (P == "reindex") {
      ScheduleArg tup{ScheduleArg::List, "(", 0, 0, {}, {}, {}, {}};
      tup.list = {str_arg(pick(2) ? "read" : "write"), int_arg(static_cast<int64_t>(pick(2)))};
      ins.args = {block_arg(rand_block()), tup};
      ins.results.push_back(fresh("ri"));
    } else {  // annotate
      if (pick(2))
        ins.args = {loop_arg(rand_loop()), str_arg("pragma_x"), int_arg(1)};
      else
        ins.args = {block_arg(rand_block()), str_arg("meta"), str_arg("v")};
    }
    // Text.
    os << "  ";
    for (size_t i = 0; i < ins.results.size(); ++i) os << (i ? ", " : "") << ins.results[i];
    if (!ins.results.empty()) os << " = ";
    os << P << "(";
    for (size_t i = 0; i < ins.args.size(); ++i) os << (i ? ", " : "") << arg_text(ins.args[i]);
    os << ")";
    *text = os.str();
    return ins;
  }

 private:
  static std::vector<Stmt> collect_loops_all(const Stmt& s) {
    std::vector<Stmt> out;
    std::function<void(const Stmt&)> rec = [&](const Stmt& x) {
      if (!x.defined()) return;
      if (x.kind() == StmtKind::For) out.push_back(x);
      for (auto& c : children(x)) rec(c);
    };
    rec(s);
    return out;
  }
  size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  std::string fresh(const std::string& p) { return p + std::to_string(counter_++); }
  Var rand_loop() {
    if (loops_.empty()) return Var("nothing");
    return loops_[pick(loops_.size())].as<ForNode>()->loop_var;
  }
  std::string rand_block() { return blocks_[pick(blocks_.size())]; }
  ScheduleArg int_arg(int64_t v) {
    return ScheduleArg{ScheduleArg::Int, std::to_string(v), v, 0, {}, {}, {}, {}};
  }
  ScheduleArg str_arg(const std::string& s) {
    return ScheduleArg{ScheduleArg::String, s, 0, 0, {}, {}, {}, {}};
  }
  ScheduleArg loop_arg(const Var& v) {
    std::string n = "L_" + v.name();
    st_.handles[n] = Handle{Handle::LoopH, "", v, n};
    return ScheduleArg{ScheduleArg::Ident, n, 0, 0, {}, {}, {}, {}};
  }
  ScheduleArg block_arg(const std::string& b) {
    std::string n = "B_" + b;
    st_.handles[n] = Handle{Handle::BlockH, b, Var(), n};
    return ScheduleArg{ScheduleArg::Ident, n, 0, 0, {}, {}, {}, {}};
  }
  static std::string arg_text(const ScheduleArg& a) {
    switch (a.kind) {
      case ScheduleArg::Int: return std::to_string(a.int_value);
      case ScheduleArg::String: return "\"" + a.text + "\"";
      case ScheduleArg::Wildcard: return "_";
      case ScheduleArg::List: {
        std::string s = "[";
        for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + arg_text(a.list[i]);
        return s + "]";
      }
      default: return a.text;
    }
  }

  std::mt19937_64& rng_;
  ScheduleState& st_;
  std::vector<std::string> blocks_;
  std::vector<Stmt> loops_;
  int counter_ = 0;
};

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

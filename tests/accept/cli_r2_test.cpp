// Acceptance round 2: the command-line contract beyond round 1: script errors through every
// subcommand (cases/errors_r2/), build outputs and naming, stats numbers (static and
// --dynamic), and usage corners.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct ErrCase {
  const char* file;  // under cases/errors_r2/
  const char* msg;   // expected stderr after "FILE:"
};

const ErrCase kErrors[] = {
    {"logic_on_float.tir", "4:21: error: operator && expects bool operands, got f32 and f32"},
    {"select_int_cond.tir", "4:22: error: select condition must be bool, got i32"},
    {"unknown_call.tir", "4:15: error: unknown function 'frob'"},
    {"too_many_indices.tir", "4:15: error: buffer A has 1 dimension but 2 indices were given"},
    {"scalar_indexed.tir", "4:15: error: 'n' is not a buffer"},
    {"buffer_as_value.tir", "4:15: error: buffer 'A' used as a value; index it as A[...]"},
    {"int_plus_float.tir", "4:21: error: type mismatch: i32 + f32"},
    {"neg_bool.tir", "4:15: error: operator - is not defined on bool"},
    {"const_oob.tir", "4:17: error: index 8 is out of bounds for dimension 0 of A (extent 8)"},
    {"cast_arity.tir", "4:15: error: cast to f32 expects 1 argument, got 2"},
    {"exp_of_int.tir", "4:15: error: exp expects a float argument, got i32"},
    {"truncdiv_float.tir", "4:15: error: truncdiv expects integer arguments, got f32"},
    {"min_value_arity.tir", "4:15: error: min_value expects 1 argument, got 0"},
    {"dangling_plus.tir", "5:5: error: unexpected '}'"},
    {"undeclared_store.tir", "4:7: error: undeclared buffer 'C'"},
    {"literal_too_big.tir", "4:15: error: integer literal 3000000000 does not fit in i32"},
    {"store_bool.tir", "4:15: error: type mismatch: cannot store bool into f32 buffer B"},
    {"ite_arms.tir", "4:15: error: type mismatch: if_then_else arms are f32 and i32"},
    {"dup_param.tir", "1:19: error: duplicate parameter 'A'"},
    {"shape_later_scalar.tir",
     "1:15: error: undeclared name 'n' (scalar parameter n is declared after this buffer; a shape may use "
     "only earlier parameters)"},
    {"loop_kind.tir",
     "2:12: error: unknown loop kind 'sequential' (expected serial, parallel, vectorized, unroll, "
     "thread_binding or "
     "grid)"},
    {"grid_arity.tir", "2:15: error: grid has 1 extent for 2 loop variables"},
    {"thread_tag.tir",
     "2:30: error: unknown thread tag \"threadIdx.q\" (expected blockIdx.x/y/z, threadIdx.x/y/z, vthread or "
     "vthread.x/y/z)"},
    {"extent_loopvar.tir", "4:47: error: iter var extent must use only constants and scalar parameters"},
    {"scalar_output.tir", "1:23: error: output 's' must be a buffer"},
    {"unterminated_string.tir", "2:25: error: unterminated string"},
    {"dup_iter_var.tir", "2:56: error: duplicate iter var 'vi'"},
    {"reads_rank.tir", "4:13: error: buffer A has 2 dimensions but the region has 1"},
    {"where_not_bool.tir", "4:13: error: where condition must be bool, got i32"},
    {"unknown_intrin_name.tir", "2:62: error: unknown function 'expp'"},
    {"bad_scope.tir",
     "2:25: error: unknown storage scope \"texture\" (expected global, shared, shared.dyn, local or warp)"},
};

// Every subcommand that reads a script reports its errors the same way: exit 2, nothing on
// stdout, exactly `FILE:LINE:COL: error: MSG` on stderr.
TEST(AcceptCliR2, ScriptErrorsThroughEverySubcommand) {
  for (auto& c : kErrors) {
    SCOPED_TRACE(c.file);
    std::string path = cases() + "errors_r2/" + c.file;
    for (const char* sub :
         {"parse", "run --func f --random 1", "stats --func f", "grad --func f", "check-grad --func f",
          "schedule", "verify --seed 1", "build --emit llvm -o %/x.ll", "bench --func f --repeat 1"}) {
      std::string s(sub);
      std::string name = s.substr(0, s.find(' '));
      std::string rest = s.find(' ') == std::string::npos ? "" : s.substr(s.find(' '));
#ifndef TIRC_WITH_LLVM
      if (name == "build" || name == "bench") continue;
#endif
      CliRun r = run(name + " " + path + rest);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.out, "") << sub;
      EXPECT_EQ(r.err, path + ":" + c.msg + "\n") << sub;
    }
    CliRun s = run("check-grad - --func f", slurp(path));
    EXPECT_EQ(s.code, 2);
    EXPECT_EQ(s.err, std::string("<stdin>:") + c.msg + "\n");
  }
}

// `build`: the object file is named after the script (FILE-stem.o in the working directory)
// with a C header beside it; -o names both; --func compiles one function; wrong
// target/emit pairs are usage errors.
TEST(AcceptCliR2, BuildOutputs) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("build @/lang_r2.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(tmp() + "lang_r2.o").substr(0, 4),
            "\x7f"
            "ELF");
  std::string h = slurp(tmp() + "lang_r2.h");
  EXPECT_NE(h.find("int32_t tile_sum(int32_t n, int32_t m, const float*"), std::string::npos) << h;
  EXPECT_NE(h.find("int32_t casts("), std::string::npos) << h;
  r = run("build @/lang_r2.tir --target cpu --emit obj -o %/k.o");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(tmp() + "k.o").substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(slurp(tmp() + "k.h").find("int32_t prec("), std::string::npos);
  // Text outputs go to stdout without -o.
  r = run("build @/lang_r2.tir --emit llvm --func par");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("define"), std::string::npos);
  EXPECT_NE(r.out.find("par"), std::string::npos);
  EXPECT_EQ(r.out.find("casts"), std::string::npos) << "--func compiles only that function";
  r = run("build @/lang_r2.tir --emit asm -o %/a.s");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(tmp() + "a.s").find("tile_sum"), std::string::npos);
  // The scheduled functions are compiled (tensorize's impl ends in the code): it builds.
  r = run("build @/sched_r2.tir --emit llvm -o %/s.ll");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(tmp() + "s.ll").find("gemv"), std::string::npos);
  r = run("build @/lang_r2.tir --target cpu --emit ptx");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --emit ptx needs --target nvptx\n");
  r = run("build @/lang_r2.tir --func nope --emit llvm");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
  r = run("build @/lang_r2.tir --emit llvm -o /nonexistent_dir_r2/x.ll");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: cannot write /nonexistent_dir_r2/x.ll (No such file or directory)\n");
}

// `stats`: exact per-block numbers of a function with symbolic sizes, an init, a `where` and
// a cast; totals are the sums over blocks; --dynamic counts what runs.
TEST(AcceptCliR2, StatsNumbers) {
  const std::string fn =
      "func g(n: i32, A: f32[n, 5]) -> (S: f32[n], T: f32[n * 5]) {\n"
      "  for i, j in grid(n, 5) {\n"
      "    block cp(vi: spatial(n) = i, vj: spatial(5) = j) { T[vi * 5 + vj] = A[vi, vj] * 2.0 }\n"
      "  }\n"
      "  for io in serial((n * 5 + 3) // 4) {\n"
      "    for ii in serial(4) {\n"
      "      block sq(v: spatial(n * 5) = io * 4 + ii) {\n"
      "        where io * 4 + ii < n * 5\n"
      "        T[v] = T[v] * T[v]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "  for i, k in grid(n, 5) {\n"
      "    block s(vi: spatial(n) = i, vk: reduce(5) = k) {\n"
      "      init { S[vi] = 0.0 }\n"
      "      S[vi] += T[vi * 5 + vk] * f32(vk + 1)\n"
      "    }\n"
      "  }\n"
      "}\n";
  CliRun r = run("stats - --input n=3 --json --dynamic", fn);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string j = r.out;
  for (char& ch : j)
    if (ch == '\n') ch = ' ';
  // cp: 15 iterations, 1 flop, 1 load, 1 store each; sq: 15 (the where cuts 16 to 15), 1 flop,
  // 2 loads; s: 15 iterations, 2 flops, 2 loads (S and T), 1 store + 3 init stores.
  for (const char* k : {"\"flops\": 60", "\"iterations\": 45", "\"loads\": 75", "\"stores\": 48"})
    EXPECT_NE(j.find(k), std::string::npos) << k << "\n" << r.out;
  auto block = [&](const std::string& name) {
    size_t p = j.find("\"" + name + "\": {");
    return p == std::string::npos ? std::string() : j.substr(p, j.find('}', p) - p);
  };
  EXPECT_NE(block("sq").find("\"iterations\": 15"), std::string::npos) << block("sq");
  EXPECT_NE(block("s").find("\"stores\": 18"), std::string::npos) << block("s");
  EXPECT_NE(block("s").find("\"flops\": 30"), std::string::npos) << block("s");
  EXPECT_NE(block("cp").find("\"loads\": 15"), std::string::npos) << block("cp");
  // Static counts need only n and agree except where a predicate cuts iterations.
  CliRun st = run("stats - --input n=3 --json", fn);
  ASSERT_EQ(st.code, 0) << st.err;
  j = st.out;
  for (char& ch : j)
    if (ch == '\n') ch = ' ';
  EXPECT_NE(block("cp").find("\"stores\": 15"), std::string::npos) << st.out;
  EXPECT_NE(block("s").find("\"flops\": 30"), std::string::npos) << st.out;
  // The human-readable table has one row per block and a total row.
  CliRun t = run("stats - --input n=3", fn);
  ASSERT_EQ(t.code, 0) << t.err;
  for (const char* row : {"\ncp ", "\nsq ", "\ns ", "\ntotal "})
    EXPECT_NE(t.out.find(row), std::string::npos) << row << "\n" << t.out;
}

// acceptance round 2, finding B1 (fixed): static stats of a loop whose extent is a function-level
// `let` of scalar parameters (`let w = m + 1`, `for j in serial(w)`).
TEST(AcceptCliR2, StatsLetExtent) {
  CliRun r = run("stats @/lang_r2.tir --func tile_sum --input n=3 --input m=4 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"flops\": 45"), std::string::npos) << r.out;
}

// Usage corners: the same option twice, missing file argument, -h after other options.
TEST(AcceptCliR2, UsageCorners) {
  CliRun r = run("run");
  EXPECT_EQ(r.code, 2);
  r = run("stats @/lang_r2.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: " + cases() + "lang_r2.tir defines several functions (names, prec, ctl, cumprod, widx, par, tile_sum, casts, ints, scal, fp): choose one with --func\n");
  r = run("run @/lang_r2.tir --func prec --random 1 --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--engine"), std::string::npos);
  // A .npy input for a scalar parameter must be 0-d or refused clearly.
  r = run("run @/lang_r2.tir --func par --input n=@/data/r2_par_A.npy --random 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("n"), std::string::npos) << r.err;
  // --output names must be outputs, not inputs.
  r = run("run @/lang_r2.tir --func par --input n=2 --random 1 --output A=%/a.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: --output A=" + tmp() +
                       "a.npy: A is an input of function par, not an output (its outputs are listed after ->)\n");
}

}  // namespace
}  // namespace tirc::accept

namespace tirc::accept {
namespace {

// `bench`: FLOPs are the work of the function as written (2 * 30 * 25 * 20 for the 30x25x20
// matmul), not the padded iteration space of its schedule (non-dividing splits 7/8/6 give
// 35 * 32 * 24 * 2 iterations with predicates); a function whose loops static counting cannot
// evaluate is still timed.
TEST(AcceptCliR2, BenchFlopsIgnoreSchedule) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("bench @/sched_r2.tir --func mm --repeat 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"flops\": 30000,"), std::string::npos) << r.out;
  CliRun s = run("stats @/sched_r2.tir --func mm --json");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("\"flops\": 30000,"), std::string::npos) << s.out;
  r = run("bench @/sched_r2.tir --func mm --repeat 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(", 3e+04 FLOPs, "), std::string::npos) << r.out;
  r = run("bench @/lang_r2.tir --func tile_sum --input n=3 --input m=4 --repeat 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tile_sum: median ", 0), 0u) << r.out;
}

// `bench --engine interp` times the reference interpreter (no LLVM needed): same FLOPs, one
// thread; an unknown engine is a usage error.
TEST(AcceptCliR2, BenchInterpreterEngine) {
  CliRun r = run("bench @/sched_r2.tir --func mm --repeat 2 --engine interp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"flops\": 30000,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"threads\": 1}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"repeat\": 2,"), std::string::npos) << r.out;
  r = run("bench @/sched_r2.tir --func mm --engine gpu");
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace tirc::accept

namespace tirc::accept {
namespace {

// `verify --func F` for a function without a schedule item still runs F in every engine
// against the interpreter (CLI.md: "run each function unscheduled and scheduled (interpreter
// and JIT)"); without --func only scheduled functions are verified.
TEST(AcceptCliR2, VerifyUnscheduledFunction) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  const char* specs[] = {"lang_r2.tir --func names",
                         "lang_r2.tir --func prec",
                         "lang_r2.tir --func ctl --input n=5",
                         "lang_r2.tir --func cumprod",
                         "lang_r2.tir --func widx",
                         "lang_r2.tir --func par --input n=5",
                         "lang_r2.tir --func tile_sum --input n=5 --input m=3",
                         "lang_r2.tir --func casts",
                         "lang_r2.tir --func scal --input k=7 --input u=3",
                         "lang_r2.tir --func fp",
                         "grads_r2.tir --func unary_all",
                         "grads_r2.tir --func conv2d",
                         "grads_r2.tir --func scan2"};
  for (const char* s : specs) {
    SCOPED_TRACE(s);
    CliRun r = run(std::string("verify @/") + s + " --seed 2");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    std::string f = std::string(s).substr(std::string(s).find("--func ") + 7);
    f = f.substr(0, f.find(' '));
    EXPECT_NE(r.out.find(f + " [interp]: ok"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(f + " [jit]: ok"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2 passed, 0 failed\n"), std::string::npos) << r.out;
  }
  CliRun r = run("verify @/grads_r2.tir");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "no scheduled functions\n");
}

}  // namespace
}  // namespace tirc::accept

namespace tirc::accept {
namespace {

// nvptx: a schedule binding only blockIdx (one thread per block) with a "local" cache under
// the bound loop builds (the cache is private to the block's single thread); a "local"
// buffer shared by the threads of a block is still refused with the reason.
TEST(AcceptCliR2, NvptxBlockOnlyLocalCache) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  CliRun r = run("build @/sched_r2.tir --target nvptx --func addmul --emit ptx -o %/a.ptx");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string ptx = slurp(tmp() + "a.ptx");
  EXPECT_NE(ptx.find(".entry addmul("), std::string::npos) << ptx.substr(0, 400);
  EXPECT_NE(ptx.find("%ctaid.x"), std::string::npos);
  const std::string shared_by_threads =
      "func f(A: f32[8, 8]) -> (B: f32[8, 8]) {\n"
      "  for bx in thread_binding(8, \"blockIdx.x\") {\n"
      "    block t(vi: spatial(8) = bx) {\n"
      "      alloc T: f32[8] scope \"local\"\n"
      "      for tx in thread_binding(8, \"threadIdx.x\") {\n"
      "        block a(wi: spatial(8) = vi, vj: spatial(8) = tx) { T[vj] = A[wi, vj] * 2.0 }\n"
      "      }\n"
      "      for tx in thread_binding(8, \"threadIdx.x\") {\n"
      "        block b(wi: spatial(8) = vi, vj: spatial(8) = tx) { B[wi, vj] = T[7 - vj] }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  r = run("build - --target nvptx --emit ptx -o %/b.ptx", shared_by_threads);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("nvptx: buffer T is used by several threads"), std::string::npos) << r.err;
}

// grad on a file that already defines F_grad (its own earlier output) replaces it, with a
// warning: a hand-written function of that name would otherwise vanish unnoticed.
TEST(AcceptCliR2, GradReplacesExistingGradWithWarning) {
  const std::string src = R"(func sq(X: f32[4]) -> (Y: f32[4]) {
  for i in serial(4) {
    block Y(vi: spatial(4) = i) { Y[vi] = X[vi] * X[vi] }
  }
}
)";
  CliRun first = run("grad -", src);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(first.err, "");
  CliRun again = run("grad - --func sq", first.out);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(again.err, "tirc: warning: <stdin> already defines sq_grad; it is replaced by the gradient of sq\n");
}

}  // namespace
}  // namespace tirc::accept

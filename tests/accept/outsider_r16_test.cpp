// Acceptance round 16 (outsider): LANGUAGE.md / CLI.md read by someone who never saw the code,
// leaning on whole workflows (grad -o then check-grad, schedule then run / build / bench), NumPy
// files of every dtype and layout, the contract's examples run through every command, TVMScript
// habits and their near-misses, and numeric corners of the interpreter.
// Found and fixed: `tirc check-grad FILE --func F` ignored an F_grad that FILE defines (written by
// `tirc grad -o`, then edited or scheduled) and checked a fresh gradient, so a wrong F_grad passed;
// TVMScript's `T.Cast("float32", x)` suggested a nonexistent `Cast(...)` (also `T.Select`,
// `T.floordiv`, `fabs`, `power`, `exp2`, `T.likely`), and statement-level habits (`T.reads(...)`,
// `reads(...)`, `T.serial`, `block "C"`, `vi = T.axis.spatial(...)`, `x.astype(...)`,
// `T.alloc_buffer`) were a bare "unexpected '.'"; an iter var with a literal extent bound to an i64
// loop var was "iter var vi is i32 but its binding is i64", and a `n: u32` extent gave, after the
// loop error's hint was followed, a second error without a hint; `f64(truncdiv(-7, 2))` was
// "truncdiv expects integer arguments, got f64".
// Case files: tests/accept/cases/r16/ (inputs and references by cases/r16/gen_r16.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/npy.h"
#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

const std::string kDir = "@/r16/";

std::string case_file(const std::string& name) { return cases() + "r16/" + name; }

// Element-wise comparison of rows [0, rows) of two 2-D f32 arrays (a `where` leaves the other
// rows unwritten).
std::string compare_rows(const NDArray& got, const NDArray& want, int64_t rows, double tol) {
  if (got.dtype() != DType::F32 || got.shape().size() != 2) return "not a 2-D f32 array";
  int64_t cols = got.shape()[1];
  for (int64_t i = 0; i < rows * cols; ++i)
    if (std::abs(got.get(i) - want.get(i)) > tol)
      return "element " + std::to_string(i) + ": " + std::to_string(got.get(i)) + " vs " +
             std::to_string(want.get(i));
  return "";
}

// The bug: check-grad ignored the F_grad a file defines. `tirc grad -o g.tir` then an edit of
// g.tir's gradient (a 1% error in B_grad): check-grad now checks g.tir's matmul_grad and fails it
// (exit 1), says which F_grad it checks, checks a --wrt subset of its results, and refuses a --wrt
// it has no result for or an F_grad whose signature is not the contract's.
TEST(AcceptR16, CheckGradChecksTheGradientTheFileDefines) {
  const std::string dir = scratch_dir("r16_cg");
  CliRun r = run("grad " + kDir + "spec_matmul.tir --func matmul -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string g = slurp(dir + "g.tir");
  const std::string line = "B_grad[v6, v7] = B_grad[v6, v7] + a0 * A[r1, v6]\n";
  size_t at = g.find(line);
  ASSERT_NE(at, std::string::npos) << g;
  std::string bad = g;
  bad.insert(at + line.size() - 1, " * 1.01");
  write_file(dir + "bad.tir", bad);

  r = run("check-grad " + dir + "g.tir --func matmul");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "2 passed, 0 failed\n")) << r.out;
  EXPECT_EQ(r.err, "note: checking matmul_grad as defined in " + dir + "g.tir\n");
  r = run("check-grad " + dir + "bad.tir --func matmul");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "A: ") && has(r.out, "passed\n")) << r.out;
  EXPECT_TRUE(has(r.out, "over 3 directions: FAILED\n1 passed, 1 failed\n")) << r.out;
  // The same file through standard input, and --json (no note there: one JSON object).
  r = run("check-grad - --func matmul --json", bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "\"failed\": 1")) << r.out;
  EXPECT_EQ(r.err, "");
  // --wrt checks some of the file's results (A's is right, B's is not), and must name one of them.
  r = run("check-grad " + dir + "bad.tir --func matmul --wrt A");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "1 passed, 0 failed\n")) << r.out;
  r = run("check-grad " + dir + "bad.tir --func matmul --wrt B");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "0 passed, 1 failed\n")) << r.out;
  r = run("grad " + kDir + "spec_matmul.tir --func matmul --wrt A -o " + dir + "ga.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("check-grad " + dir + "ga.tir --func matmul --wrt B");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "tirc: error: --wrt B: matmul_grad in " + dir +
                "ga.tir has no result B_grad (it computes the gradients of A; remove matmul_grad from "
                "the file to check a generated gradient)\n");
  // Names that no F_grad could have a result for get gradient()'s refusals (review of round 16:
  // an output was blamed on F_grad, and `--wrt A,A` checked A twice).
  r = run("check-grad " + dir + "g.tir --func matmul --wrt C");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: gradient of matmul: --wrt C is not a float input buffer of matmul (it is an output)\n");
  r = run("check-grad " + dir + "g.tir --func matmul --wrt A,A");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: gradient of matmul: --wrt A is listed twice\n");
  // A function named matmul_grad that is not the contract's gradient is refused, not ignored.
  std::string sig = g;
  for (size_t p; (p = sig.find("C_grad")) != std::string::npos;) sig.replace(p, 6, "C_g");
  write_file(dir + "sig.tir", sig);
  r = run("check-grad " + dir + "sig.tir --func matmul");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.rfind(dir + "sig.tir:", 0) == 0) << r.err;  // FILE:LINE:COL of matmul_grad
  EXPECT_EQ(r.err.substr(r.err.find(": error: ")),
            ": error: "
                "the file defines matmul_grad, but its parameter C_g is not the cotangent C_grad: "
                "f32[128, 32], so it is not the gradient of matmul (LANGUAGE.md, Gradients: F's "
                "parameters, one cotangent <output>_grad per output, results <buffer>_grad); rename or "
                "remove it to check a generated gradient\n");
  // `grad --wrt B,A` (results in that order) then check-grad without --wrt checks B then A.
  r = run("grad " + kDir + "spec_matmul.tir --func matmul --wrt B,A -o " + dir + "ba.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("check-grad " + dir + "ba.tir --func matmul");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 3), "B: ") << r.out;
  EXPECT_TRUE(has(r.out, "\nA: ")) << r.out;
  // Second order: the file has no matmul_grad_grad, so it is generated as before.
  r = run("check-grad " + dir + "g.tir --func matmul_grad");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "3 passed, 0 failed\n")) << r.out;
  EXPECT_EQ(r.err, "");
}

// LANGUAGE.md's block example (where, comments after clauses, init) and its schedule example,
// verbatim, through every command: parse is a fixpoint, run matches NumPy on the rows the `where`
// keeps, the scheduled module runs to the same bytes in both engines, verify passes, grad -o then
// check-grad passes, stats counts the `where` exactly, build and bench work.
TEST(AcceptR16, SpecExamplesThroughEveryCommand) {
  const std::string dir = scratch_dir("r16_spec");
  const std::string in = " --input A=" + kDir + "mm_A.npy --input B=" + kDir + "mm_B.npy";
  CliRun r = run("parse " + kDir + "spec_matmul.tir -o " + dir + "p.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("parse " + dir + "p.tir");
  EXPECT_EQ(r.out, slurp(dir + "p.tir"));
  r = run("schedule " + kDir + "spec_matmul.tir -o " + dir + "s.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(slurp(dir + "s.tir"), "for i0 in parallel(4) {")) << slurp(dir + "s.tir");
  EXPECT_TRUE(has(slurp(dir + "s.tir"), "block C_init(")) << slurp(dir + "s.tir");
  std::string first;
  for (const std::string& file : {kDir + "spec_matmul.tir", dir + "s.tir"})
    for (const std::string& e : engines()) {
      r = run("run " + file + " --func matmul" + in + " --output C=%/c.npy --engine " + e);
      ASSERT_EQ(r.code, 0) << file << " " << e << ": " << r.err;
      NDArray c = read_npy(tmp() + "c.npy");
      EXPECT_EQ(compare_rows(c, read_npy(case_file("ref_mm_C100.npy")), 100, 1e-5), "") << file << " " << e;
      std::string bytes = slurp(tmp() + "c.npy");
      if (first.empty()) first = bytes;
      EXPECT_EQ(bytes, first) << file << " " << e;
    }
  r = run("verify " + kDir + "spec_matmul.tir");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("grad " + kDir + "spec_matmul.tir --func matmul -o " + dir + "g.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("check-grad " + dir + "g.tir --func matmul");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "2 passed, 0 failed\n")) << r.out;
  // The scheduled gradient module checks too (schedule g.tir applies matmul's item).
  r = run("schedule " + dir + "g.tir -o " + dir + "gs.tir");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("check-grad " + dir + "gs.tir --func matmul");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("stats " + kDir + "spec_matmul.tir --func matmul --json");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* k :
       {"\"iterations\": 204800", "\"flops\": 409600", "\"loads\": 614400", "\"stores\": 208000"})
    EXPECT_TRUE(has(r.out, k)) << k << "\n" << r.out;
  if (!has_llvm()) return;
  r = run("build " + dir + "s.tir --target cpu -o %/mm.o");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(slurp(tmp() + "mm.o").empty());
  r = run("bench " + dir + "s.tir --func matmul --repeat 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "4.096e+05 FLOPs")) << r.out;
}

// CLI.md: ".npy (version 1.0/2.0, C order, little-endian)": files NumPy writes in every dtype, in
// Fortran order, big-endian, with 2.0 / 3.0 headers, bool, bf16 as raw `<u2` bits and a zero-size
// (0, 3) array; outputs read back by NumPy with the exact dtype, shape and bytes of the reference.
TEST(AcceptR16, NpyFilesOfEveryDtypeAndLayout) {
  std::string in;
  for (const char* x : {"B", "C", "D", "E", "F", "G", "H", "I", "K", "Z"})
    in += std::string(" --input ") + x + "=" + kDir + "dt_" + x + ".npy";
  std::string out;
  for (const char* x : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "K", "Z"})
    out += std::string(" --output O") + x + "=%/O" + x + ".npy";
  for (const std::string& e : engines())
    for (const char* a : {"dt_A", "dt_A_v2", "dt_A_v3"}) {
      CliRun r = run("run " + kDir + "npy_dtypes.tir" + in + " --input A=" + kDir + a + ".npy" + out +
                     " --engine " + e);
      ASSERT_EQ(r.code, 0) << e << " " << a << ": " << r.err;
      for (const char* x : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "K", "Z"}) {
        // Byte for byte as NumPy writes it: header (dtype, shape, C order, padding) and data.
        std::string got = slurp(tmp() + "O" + x + ".npy"),
                    want = slurp(case_file(std::string("ref_dt_O") + x + ".npy"));
        NDArray g = read_npy(tmp() + "O" + x + ".npy"),
                w = read_npy(case_file(std::string("ref_dt_O") + x + ".npy"));
        EXPECT_EQ(g.shape(), w.shape()) << x << " " << e << " " << a;
        EXPECT_EQ(compare(g, w, 0, 0), "") << x << " " << e << " " << a;
        EXPECT_TRUE(got == want) << x << " " << e << " " << a << ": the file differs from NumPy's";
      }
      EXPECT_TRUE(has(r.out, "OZ: f32[0, 3] sum=0 first=[]\n")) << r.out;
    }
}

// 0-d arrays: `np.save(p, np.float32(2.5))` for an `f32[]` buffer and for scalar parameters; the
// 0-d output reads back with shape (); a (1,) array is not a 0-d buffer.
TEST(AcceptR16, ZeroDimensionalNpy) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "zero_d.tir --input A=" + kDir + "z_A.npy --input s=" + kDir +
                   "z_s.npy --input n=" + kDir + "z_n.npy --output B=%/b.npy --engine " + e);
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out, "B: f32[] sum=7.5 first=[7.5]\nC: f32[1] sum=7 first=[7]\n") << e;
    NDArray b = read_npy(tmp() + "b.npy");
    EXPECT_TRUE(b.shape().empty());
    EXPECT_EQ(b.get(0), 7.5);
  }
  CliRun r = run("run " + kDir + "zero_d.tir --input A=" + kDir + "z_A1.npy --input s=2 --input n=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter A: expected shape [], got [1]\n");
}

// TVMScript's expression spellings name the .tir one: T.Cast (with its dtype string), Select,
// floordiv / floormod, and C / NumPy names; a name the language lacks is said to be missing
// rather than suggested without its prefix (`T.likely` suggested `likely(...)`).
TEST(AcceptR16, TvmScriptExpressionHints) {
  auto src = [](const std::string& e) {
    return "func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block b(vi: spatial(4) = i) {\n"
           "      B[vi] = " +
           e + "\n    }\n  }\n}\n";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"T.Cast(\"float32\", vi)",
       "4:15: error: unknown function 'T.Cast' (there are no modules: write f32(x), without 'T.')"},
      {"T.Cast(\"float16\", A[vi])",
       "4:15: error: unknown function 'T.Cast' (there are no modules: write f16(x), without 'T.')"},
      {"Cast(\"int8\", A[vi])", "4:15: error: unknown function 'Cast' (write i8(x))"},
      {"cast(f32, vi)",
       "4:15: error: unknown function 'cast' (write a cast named by the dtype, e.g. f32(x))"},
      {"T.Select(A[vi] > 0.0, A[vi], 0.0)",
       "4:15: error: unknown function 'T.Select' (there are no modules: write select(c, a, b), without "
       "'T.')"},
      {"Select(A[vi] > 0.0, A[vi], 0.0)", "4:15: error: unknown function 'Select' (write select(c, a, b))"},
      {"f32(T.floordiv(vi, 2))",
       "4:19: error: unknown function 'T.floordiv' (there are no modules: write a // b, without 'T.')"},
      {"f32(floormod(vi, 2))", "4:19: error: unknown function 'floormod' (write a % b)"},
      {"fabs(A[vi])", "4:15: error: unknown function 'fabs' (write abs(x))"},
      {"power(A[vi], 2.0)", "4:15: error: unknown function 'power' (write pow(a, b))"},
      {"exp2(A[vi])", "4:15: error: unknown function 'exp2' (write pow(2.0, x))"},
      {"T.likely(A[vi])",
       "4:15: error: unknown function 'T.likely' (there are no modules, and the language has no function "
       "'likely')"},
      {"A[vi].astype(\"float32\")",
       "4:20: error: unexpected '.' (casts are named by the dtype: write f16(x), f32(x), ..., not "
       "x.astype(...))"},
      {"T.f32(A[vi])",
       "4:17: error: unexpected 'f32'; expected a name (there are no modules: write f32(x), without a "
       "prefix)"},
      // Unchanged: names the language has keep "write NAME(...)".
      {"T.sqrt(A[vi])",
       "4:15: error: unknown function 'T.sqrt' (there are no modules: write sqrt(...), without 'T.')"},
  };
  for (auto& [e, err] : cases) {
    CliRun r = run("parse -", src(e));
    EXPECT_EQ(r.code, 2) << e;
    EXPECT_EQ(r.err, "<stdin>:" + err + "\n") << e;
  }
}

// TVMScript's statement habits were a bare "unexpected '.'" (or '(' / '=' / a string): the message
// now names the .tir form, at the same position.
TEST(AcceptR16, TvmScriptStatementHints) {
  auto blk = [](const std::string& s) {
    return "func f(A: f32[4, 4]) -> (B: f32[4, 4]) {\n  for i, j in grid(4, 4) {\n"
           "    block b(vi: spatial(4) = i, vj: spatial(4) = j) {\n      " +
           s + "\n      B[vi, vj] = A[vi, vj]\n    }\n  }\n}\n";
  };
  const std::string axis =
      " (an iter var is declared in the block header, as block C(vi: spatial(128) = i, vk: reduce(64) = k), "
      "not with T.axis)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {blk("reads(A[vi, vj])"),
       "4:12: error: unexpected '('; expected a name (regions follow the keyword without parentheses: reads "
       "A[vi], "
       "B[vk, vj])"},
      {blk("T.reads(A[vi, vj])"),
       "4:8: error: unexpected '.' (there are no modules: write reads A[vi], B[vk, vj], without 'T.' and "
       "parentheses)"},
      {blk("T.where(i < 3)"),
       "4:8: error: unexpected '.' (there are no modules: write where COND, without 'T.' and parentheses)"},
      {blk("T.init()"),
       "4:8: error: unexpected '.' (there are no modules: write init { ... }, without 'T.')"},
      {blk("vk = T.axis.reduce(4, j)"), "4:10: error: unexpected '='" + axis},
      {blk("vx, vy = T.axis.remap(\"SS\", [i, j])"), "4:9: error: unexpected ','" + axis},
      {blk("T.evaluate(0)"),
       "4:8: error: unexpected '.' (there are no modules, and statements are written without a prefix: "
       "LANGUAGE.md, Statements)"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  for i in T.serial(4) {\n    B[i] = A[i]\n  }\n}\n",
       "2:13: error: unexpected '.'; expected '(' (there are no modules: write serial(...) without 'T.')"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  for i, j in T.grid(4, 1) {\n    B[i] = A[i]\n  }\n}\n",
       "2:16: error: unexpected '.'; expected '(' (there are no modules: write grid(...) without 'T.')"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block \"b\"(vi: spatial(4) = i) { "
       "B[vi] = "
       "A[vi] }\n  }\n}\n",
       "3:11: error: unexpected '\"b\"'; expected a name (a block name is written without quotes: block "
       "C(...))"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  for i in serial(4) {\n    block b(vi = spatial(4, i)) { B[vi] "
       "= A[vi] "
       "}\n  }\n}\n",
       "3:16: error: unexpected '='; expected ':' (an iter var is written NAME: KIND(EXTENT) = BINDING, as "
       "vi: "
       "spatial(128) = i)"},
      {"func f(A: f32[4]) -> (B: f32[4]) {\n  C = T.alloc_buffer((4,), \"float32\")\n}\n",
       "2:5: error: unexpected '=' (a buffer is allocated with alloc C: f32[16, 16], not with "
       "T.alloc_buffer)"},
  };
  for (auto& [text, err] : cases) {
    CliRun r = run("parse -", text);
    EXPECT_EQ(r.code, 2) << text;
    EXPECT_EQ(r.err, "<stdin>:" + err + "\n") << text;
  }
}

// Signatures in NumPy / TVMScript habits: dtype names (`float32`, `int`), `T.Buffer`, a typo, and
// two outputs without the parentheses; each was a bare "unknown dtype 'float32'" or "unexpected ','".
TEST(AcceptR16, SignatureHints) {
  const std::string list = "the dtypes are bool i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"func f(A: float32[4]) -> (B: f32[4]) {", "1:11: error: unknown dtype 'float32' (write f32; " + list},
      {"func f(A: f32[4], n: int) -> (B: f32[4]) {", "1:22: error: unknown dtype 'int' (write i32; " + list},
      {"func f(A: f33[4]) -> (B: f32[4]) {", "1:11: error: unknown dtype 'f33' (" + list},
      {"func f(A: T.Buffer((4,), \"float32\")) -> (B: f32[4]) {",
       "1:11: error: unknown dtype 'T' (a buffer parameter is written A: f32[128, 64], a scalar n: i32)"},
      {"func f(A: f32[4]) -> B: f32[4], C: f32[4] {",
       "1:31: error: unexpected ','; expected '{' (several outputs are written in parentheses: -> (B: "
       "f32[4], C: "
       "f32[4]))"},
  };
  for (auto& [head, err] : cases) {
    CliRun r = run("parse -", head + "\n  for i in serial(4) {\n    B[i] = A[i]\n  }\n}\n");
    EXPECT_EQ(r.code, 2) << head;
    EXPECT_EQ(r.err, "<stdin>:" + err + "\n") << head;
  }
  // A comma inside the body of a one-output function is the body's error: no hint about the
  // header, which is right (review of round 16).
  for (const std::string body : {"  let x = 1.0, 2.0\n  B[0] = x\n", "  B[0] = A[0], B[1] = A[1]\n"}) {
    CliRun r = run("parse -", "func f(A: f32[4]) -> B: f32[4] {\n" + body + "}\n");
    EXPECT_EQ(r.code, 2) << body;
    EXPECT_TRUE(r.err.find("unexpected ','") != std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("several outputs"), std::string::npos) << r.err;
  }
}

// LANGUAGE.md: "a literal adopts the dtype of the other operand". A literal iter-var extent bound to
// an i64 loop var is an i64 iter var (it was "iter var vi is i32 but its binding is i64"); it runs
// in both engines and prints back. A mismatch that remains names the cast that fixes it: a `n: u32`
// extent, after `serial(i32(n))` as the loop error suggests, said only "vi is u32 but its binding
// is i32".
TEST(AcceptR16, IterVarDtypeFollowsItsBinding) {
  const std::string i64 =
      "func f(A: f32[8]) -> (B: f32[8]) {\n  for i in serial(i64(8)) {\n    block b(vi: spatial(8) = i) {\n"
      "      B[vi] = A[vi] * 2.0\n    }\n  }\n}\n";
  CliRun r = run("parse -", i64);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "block b(vi: spatial(i64(8)) = i) {")) << r.out;
  std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  for (const std::string& e : engines()) {
    r = run("run - --input A=1.5 --engine " + e, i64);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out, "B: f32[8] sum=24 first=[3, 3, 3, 3, 3, 3, 3, 3]\n") << e;
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"func f(n: u32, A: f32[n]) -> (B: f32[n]) {\n  for i in serial(n) {\n    block b(vi: spatial(n) = i) "
       "{ "
       "B[vi] = A[vi] }\n  }\n}\n",
       "2:19: error: loop extent must be i32 or i64, got u32 (cast it: i32(...))"},
      {"func f(n: u32, A: f32[n]) -> (B: f32[n]) {\n  for i in serial(i32(n)) {\n    block b(vi: spatial(n) "
       "= i) "
       "{ B[vi] = A[vi] }\n  }\n}\n",
       "3:30: error: type mismatch: iter var vi is u32 but its binding is i32 (an iter var has the dtype of "
       "its "
       "extent: write spatial(i32(n)))"},
      {"func f(n: i32, A: f32[n]) -> (B: f32[n]) {\n  for i in serial(i64(n)) {\n    block b(vi: spatial(n) "
       "= i) "
       "{ B[vi] = A[vi] }\n  }\n}\n",
       "3:30: error: type mismatch: iter var vi is i32 but its binding is i64 (an iter var has the dtype of "
       "its "
       "extent: cast the binding to i32, or write spatial(i64(n)))"},
  };
  for (auto& [text, err] : cases) {
    r = run("parse -", text);
    EXPECT_EQ(r.code, 2) << text;
    EXPECT_EQ(r.err, "<stdin>:" + err + "\n") << text;
  }
  // The fix the hint names works.
  r = run("run - --input A=1 --input n=3",
          "func f(n: u32, A: f32[n]) -> (B: f32[n]) {\n  for i in serial(i32(n)) {\n    block b(vi: "
          "spatial(i32(n)) = i) { B[vi] = A[vi] }\n  }\n}\n");
  EXPECT_EQ(r.code, 0) << r.err;
}

// "An expression made only of literals is typed as a whole by its context", and `//` / `%` of
// integer literals in a float context are computed in i32 (docs/language.md): truncdiv / truncmod,
// the other integer-only operations, were "truncdiv expects integer arguments, got f64".
TEST(AcceptR16, TruncDivOfLiteralsInAFloatContext) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "trunc_literals.tir --input A=0.5 --engine " + e);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out, "O: f64[4] sum=-5.5 first=[-3, -1, -3, 1.5]\nP: f32[2] sum=0.5 first=[2.5, -2]\n") << e;
  }
  CliRun r = run("parse " + kDir + "trunc_literals.tir");
  EXPECT_TRUE(has(r.out, "O[0] = f64(truncdiv(i32(-7), i32(2)))\n")) << r.out;
  std::string printed = r.out;
  r = run("parse -", printed);
  EXPECT_EQ(r.out, printed);
  // A float argument stays an error (truncdiv takes integers in the parser).
  r = run("parse -", "func f(A: f32[1]) -> (B: f32[1]) {\n  B[0] = truncdiv(A[0], 2.0)\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "<stdin>:2:10: error: truncdiv expects integer arguments, got f32\n");
}

// Casts of out-of-range floats (docs/interp.md: saturate, NaN -> 0), f16 / bf16 rounding (65520 is
// inf in f16, 1 + 2^-8 ties to 1 in bf16), anything -> bool is `x != 0` (NaN is true): both engines.
TEST(AcceptR16, FloatCastsOfEdgeValues) {
  const std::string want =
      "I: i32[8] sum=2147549466 first=[2147483647, -2147483648, 0, 2147483647, -1, 300, 65520, 1]\n"
      "U: u8[8] sum=1021 first=[255, 0, 0, 255, 0, 255, 255, 1]\n"
      "S: i8[8] sum=380 first=[127, -128, 0, 127, -1, 127, 127, 1]\n"
      "H: f16[8] sum=nan first=[inf, -inf, nan, inf, -1.5, 300.75, inf, 1.00391]\n"
      "G: bf16[8] sum=nan first=[3.00312e+09, -3.00312e+09, nan, inf, -1.5, 300, 65536, 1]\n"
      "B: bool[8] sum=8 first=[1, 1, 1, 1, 1, 1, 1, 1]\n"
      "L: i64[8] sum=-9223372036854709989 first=[3000000000, -3000000000, 0, 9223372036854775807, -1, 300, "
      "65520, 1]\n"
      "W: u32[8] sum=7295033116 first=[3000000000, 0, 0, 4294967295, 0, 300, 65520, 1]\n";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "casts.tir --input X=" + kDir + "cast_X.npy --show 8 --engine " + e);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out, want) << e;
  }
}

// Reductions in f16 / bf16 round after every step, as NumPy's sequential loop: 3000 ones sum to
// 2048 in f16 (2048 + 1 rounds to 2048), 300 ones to 256 in bf16; in f32 to 3000.
TEST(AcceptR16, HalfPrecisionAccumulation) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "half_sums.tir --input A=1 --input G=1 --engine " + e);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out,
              "B: f16[1] sum=2048 first=[2048]\nC: bf16[1] sum=256 first=[256]\nD: f32[1] sum=3000 "
              "first=[3000]\n")
        << e;
  }
}

// NaN and infinities through max / min reductions written with `max(...)` and `min=`: NaN wins
// wherever it is (torch.maximum; np.max agrees), +-inf survive.
TEST(AcceptR16, NanThroughMaxAndMinReductions) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "minmax.tir --func mx --input A=" + kDir + "mm_nan.npy --engine " + e);
    EXPECT_EQ(r.out, "B: f32[4] sum=nan first=[nan, nan, nan, inf]\n") << e << r.err;
    r = run("run " + kDir + "minmax.tir --func mn --input A=" + kDir + "mm_nan.npy --engine " + e);
    EXPECT_EQ(r.out, "B: f32[4] sum=nan first=[nan, nan, nan, -inf]\n") << e << r.err;
  }
}

// A 1-D convolution written as TVM users write it: padding through if_then_else, an outer block
// with a block-local `scope "local"` accumulator and nested reduction / ReLU blocks, parallel and
// vectorized loops: both engines against NumPy, verify, stats' exact counts.
TEST(AcceptR16, NestedBlocksWithLocalAccumulator) {
  for (const std::string& e : engines())
    check_run_against_npy("r16/conv_relu.tir", "conv_relu", e, {{"X", "cr_X"}, {"W", "cr_W"}},
                          {{"Y", "ref_cr_Y"}}, 1e-6, "../r16/");
  CliRun r = run("verify " + kDir + "conv_relu.tir --func conv_relu");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("stats " + kDir + "conv_relu.tir --func conv_relu");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "conv                             96            192            288            128"))
      << r.out;
  EXPECT_TRUE(has(r.out, "total                           172            224            356            196"))
      << r.out;
}

// A GPU-style script (blockIdx / threadIdx loops, a `where` guard for the tail) is an ordinary
// function: it runs in the interpreter and the CPU JIT, verifies, differentiates and compiles for
// nvptx.
TEST(AcceptR16, ThreadBindingScriptEverywhere) {
  std::string first;
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "thread_add.tir --func add --input n=100 --random 3 --engine " + e);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_TRUE(has(r.out, "C: f32[100] sum=")) << r.out;
    if (first.empty()) first = r.out;
    EXPECT_EQ(r.out, first);
  }
  CliRun r = run("verify " + kDir + "thread_add.tir --func add");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("check-grad " + kDir + "thread_add.tir --func add");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  if (!has_llvm()) return;
  r = run("build " + kDir + "thread_add.tir --target nvptx --emit ptx -o -");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "%tid.x")) << r.out.substr(0, 2000);
}

// A scan (prefix sum, reading what earlier iterations wrote) then an in-place update of the output
// by another block (`*=`): NumPy's cumsum * 0.5, both engines; the gradient checks element by element.
TEST(AcceptR16, ScanThenInPlaceUpdate) {
  for (const std::string& e : engines())
    check_run_against_npy("r16/cumsum.tir", "cumsum", e, {{"A", "cs_A"}}, {{"B", "ref_cs_B"}}, 0, "../r16/");
  CliRun r = run("check-grad " + kDir + "cumsum.tir --func cumsum --full");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "over 32 elements: passed\n1 passed, 0 failed\n")) << r.out;
}

// Every statement form of LANGUAGE.md in one function (function-level allocs with and without a
// scope, serial(lo, hi), parallel, unroll, vectorized, thread_binding, grid, let, if / else and
// every compound store): Q against NumPy in both engines, verify.
TEST(AcceptR16, EveryStatementForm) {
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "statements.tir --random 4 --output Q=%/q.npy --engine " + e);
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(compare(read_npy(tmp() + "q.npy"), read_npy(case_file("ref_st_Q.npy")), 0, 0), "") << e;
  }
  CliRun r = run("verify " + kDir + "statements.tir --func stmts");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// `--input NAME=VALUE` for buffers and scalars of the small dtypes: u8 255, bool / True, f16 0.1
// (rounded), i64 max, an f16 -inf, u32 max; out-of-range values are usage errors.
TEST(AcceptR16, ValuesOnTheCommandLine) {
  const std::string ok =
      " --input B=true --input H=0.1 --input e=9223372036854775807 --input t=True --input h=-inf --input "
      "k=4294967295 --show 8";
  for (const std::string& e : engines()) {
    CliRun r = run("run " + kDir + "fill.tir --input U=255" + ok + " --engine " + e);
    EXPECT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(
        r.out,
        "O: f64[8] sum=-inf first=[255, 1, 0.0999756, 9.22337e+18, 1, -inf, 4.29497e+09, 4.29503e+09]\n")
        << e;
  }
  CliRun r = run("run " + kDir + "fill.tir --input U=256" + ok);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter U: 256 is out of range for u8\n");
  r = run("run " + kDir +
          "fill.tir --input U=1 --input B=2 --input H=0.1 --input e=1 --input t=1 --input h=1 "
          "--input k=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tirc: error: parameter B: '2' is not a bool (true/false)\n");
}

}  // namespace
}  // namespace tirc::accept

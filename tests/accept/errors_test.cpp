// Script errors: exit code 2 and `FILE:LINE:COL: error: MSG` on stderr, nothing on stdout;
// run-time errors: exit 2 and a message naming the block and the element.
#include <gtest/gtest.h>

#include "tests/accept/accept_util.h"

namespace tirc::accept {
namespace {

struct ErrCase {
  const char* file;  // under cases/errors/
  const char* msg;   // expected stderr after "FILE:" (LINE:COL: error: ...)
};

TEST(AcceptErrors, ParseErrorsHavePositions) {
  TIRC_ACCEPT_REQUIRE_LLVM();
  const ErrCase cases_[] = {
      {"type_mismatch.tir", "4:21: error: type mismatch: f32 + i32"},
      {"int_div.tir",
       "4:21: error: '/' is float division and is not defined on i32; use // for integer division"},
      {"unknown_name.tir", "4:23: error: undeclared name 'scale'"},
      {"unknown_buffer.tir", "4:15: error: undeclared buffer 'Q'"},
      {"oob_binding.tir",
       "3:30: error: binding of iter var vi takes values in [1, 8], outside its domain [0, 8)"},
      {"dup_block.tir", "6:11: error: duplicate block name 'b'"},
      {"arity.tir", "3:43: error: pow expects 2 arguments, got 1"},
      {"index_arity.tir", "3:43: error: buffer A has 2 dimensions but 1 index was given"},
      {"write_input.tir", "4:7: error: cannot write to input buffer A"},
      {"loopvar_in_block.tir",
       "3:45: error: loop variable 'i' cannot be used inside block 'b'; bind it to an iter var"},
      {"syntax.tir", "3:51: error: unexpected '}'"},
      {"store_mismatch.tir", "3:43: error: type mismatch: cannot store f32 into i32 buffer B"},
      {"float_mod.tir", "3:49: error: '%' is integer-only and is not defined on f32"},
      {"bad_kind.tir",
       "3:17: error: unknown iter var kind 'sideways' (expected spatial, reduce, scan or opaque)"},
      {"bad_dtype.tir", "1:11: error: unknown dtype 'f33' (the dtypes are bool i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64)"},
      {"init_no_reduce.tir", "4:7: error: init in block 'b' which has no reduce iter var"},
  };
  for (auto& c : cases_) {
    SCOPED_TRACE(c.file);
    std::string path = cases() + "errors/" + c.file;
    for (const char* sub : {"parse", "run", "stats", "grad", "build"}) {
      std::string extra = std::string(sub) == "run"     ? " --func f --random 1"
                          : std::string(sub) == "parse" ? ""
                          : std::string(sub) == "build" ? " --target cpu -o %/f.o"
                                                        : " --func f";
      CliRun r = run(std::string(sub) + " " + path + extra);
      EXPECT_EQ(r.code, 2) << sub;
      EXPECT_EQ(r.out, "") << sub;
      EXPECT_EQ(r.err, path + ":" + c.msg + "\n") << sub;
    }
    // Through stdin the file name is <stdin>.
    CliRun s = run("parse -", slurp(path));
    EXPECT_EQ(s.code, 2);
    EXPECT_EQ(s.err, std::string("<stdin>:") + c.msg + "\n");
  }
}

TEST(AcceptErrors, RunTimeErrors) {
  struct {
    const char* file;
    const char* msg;
  } cases_[] = {
      {"read_before_write.tir",
       "4:7: error: block \"b\": read of uninitialised element B[0] of output buffer B\n"},
      {"alloc_read_before_write.tir",
       "4:35: error: block \"b\": read of uninitialised element T[0] of alloc buffer T\n"},
      {"oob_dynamic.tir", "3:35: error: block \"b\": out-of-bounds load A[9]: A has shape [4]\n"},
  };
  // Run-time errors point at the statement (or block) of the script: FILE:LINE:COL.
  for (auto& c : cases_) {
    SCOPED_TRACE(c.file);
    CliRun r = run("run @/errors/" + std::string(c.file) + " --func f --random 3");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, cases() + "errors/" + c.file + ":" + c.msg);
  }
}

TEST(AcceptErrors, ScheduleErrors) {
  std::string p = cases() + "errors/";
  CliRun r = run("schedule " + p + "bad_schedule.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, p + "bad_schedule.tir:10:7: error: get_block: no block named \"nope\" in function f\n");
  r = run("schedule " + p + "refused_schedule.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, p + "refused_schedule.tir:15:3: error: compute_inline: block t is a reduction\n");
  r = run("verify " + p + "refused_schedule.tir");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, p + "refused_schedule.tir:15:3: error: compute_inline: block t is a reduction\n");
}

}  // namespace
}  // namespace tirc::accept

// Loops whose variable, min and extent have another integer dtype than i32 (IR built in C++;
// the parser refuses non-i32/i64 loop extents). The JIT compared the loop var with the end
// in the loop var's own type with a signed compare, so a u8 loop of extent 200 (end = 200 =
// -56 as a signed i8) ran no iteration, and a u32 loop crossing 2^31 none either.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/mutator.h"
#include "tests/codegen/compare.h"
#include "tests/codegen/gpu_launch.h"
#include "tests/codegen/ptxas_util.h"
#include "transforms/lower/lower.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

// Rebuilds loop `name` as a loop of dtype t over [lo, lo + ext) (immediates of t), the body
// seeing `w - lo` where it saw the old var (so block bindings stay inside their domains).
class RetypeLoop : public IRMutator {
 public:
  RetypeLoop(std::string name, DType t, int64_t lo, int64_t ext, ForKind kind)
      : name_(std::move(name)), t_(t), lo_(lo), ext_(ext), kind_(kind) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (n->loop_var.name() != name_) return IRMutator::mutate_for(n, s);
    Var w(n->loop_var.name(), t_);
    Expr off = make_cast(n->loop_var.dtype(), w - make_int(lo_, t_));
    Stmt body = mutate(substitute(n->body, {{n->loop_var.get(), off}}));
    return make_for(w, make_int(lo_, t_), make_int(ext_, t_), kind_, body, n->thread_tag, n->annotations);
  }

 private:
  std::string name_;
  DType t_;
  int64_t lo_, ext_;
  ForKind kind_;
};

// Y[k] = X[k] * 2 for k < count, over a loop `i` retyped to (t, lo, ext); count = max(ext, 0).
void check_loop(DType t, int64_t lo, int64_t ext, ForKind kind, const std::string& tag = "") {
  int64_t count = std::max<int64_t>(ext, 0);
  int64_t size = std::max<int64_t>(count, 1);
  std::string n = std::to_string(size);
  // On the GPU both loops are bound to `tag` (the first keeps i32).
  std::string loop = tag.empty() ? "serial(" + n + ")" : "thread_binding(" + n + ", \"" + tag + "\")";
  Function f = parse_func(R"(
func f(X: f32[)" + n + R"(]) -> (Y: f32[)" +
                              n + R"(]) {
  for k in )" + loop + R"( {
    block z(vk: spatial()" + n +
                              R"() = k) {
      Y[vk] = -1.0
    }
  }
  for i in )" + loop + R"( {
    block b(vi: spatial()" + n +
                              R"() = i) {
      Y[vi] = X[vi] * 2.0
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  Function g = with_body(*f, RetypeLoop("i", t, lo, ext, kind).mutate(f->body));
  ArgMap in = random_inputs(*g, 3);
  ArgMap ref = run_interp(*g, in);
  // The interpreter is the reference; check it ran the loop `count` times, then the JIT.
  for (int64_t k = 0; k < size; ++k)
    ASSERT_EQ(ref.at("Y").get(k), k < count ? float(in.at("X").get(k) * 2) : -1.0) << k;
  std::string what = std::string(dtype_name(t)) + " loop [" + std::to_string(lo) + ", " + std::to_string(lo) +
                     " + " + std::to_string(ext) + ") kind " + std::to_string(int(kind)) + " " + tag;
  if (tag.empty()) {
    ArgMap got = compile_jit(*g)->run(in);
    EXPECT_TRUE(arrays_close(got.at("Y"), ref.at("Y"), 0, 0)) << what;
    return;
  }
  std::string log;
  int rc = testing::run_ptxas(testing::nvptx(g, EmitKind::Asm), &log);
  if (rc != -2) {
    EXPECT_EQ(rc, 0) << what << ": " << log;
  }
  std::string err;
  ArgMap got = testing::emulate(g, in, &err);
  ASSERT_EQ(err, "") << what;
  EXPECT_TRUE(arrays_close(got.at("Y"), ref.at("Y"), 0, 0)) << what;
}

}  // namespace

// Every integer dtype of a loop var with extents and mins past the signed range of the
// narrower types, every CPU loop kind. Before: u8 extent 200, u8 extent 130 and u16 extent
// 40000 ran no iteration (serial, unroll, parallel), and the u32 loop from 2^31 - 5 none.
TEST(LoopDtype, EveryIntegerDtypeRunsExtentIterations) {
  struct Case {
    DType t;
    int64_t lo, ext;
  };
  const Case cases[] = {
      {DType::U8, 0, 200},      {DType::U8, 50, 130},         {DType::U8, 100, 64},
      {DType::I8, -100, 120},   {DType::I8, 3, -5},           {DType::U16, 0, 40000},
      {DType::I16, -300, 1000}, {DType::U32, 2147483643, 10}, {DType::I64, 3000000000, 16},
  };
  for (const Case& c : cases)
    for (ForKind kind : {ForKind::Serial, ForKind::Parallel, ForKind::Unrolled, ForKind::Vectorized})
      check_loop(c.t, c.lo, c.ext, kind);
}

// The same on the GPU (PTX through ptxas, run in the emulator): the thread index was compared
// with a u8 extent of 200 as a signed i8 (-56), so no thread ran the body.
TEST(LoopDtype, ThreadBoundLoopsOfNarrowDtypes) {
  check_loop(DType::U8, 0, 200, ForKind::ThreadBinding, "threadIdx.x");
  check_loop(DType::U8, 50, 130, ForKind::ThreadBinding, "blockIdx.x");
  check_loop(DType::I8, -20, 100, ForKind::ThreadBinding, "threadIdx.x");
  check_loop(DType::U32, 2147483643, 10, ForKind::ThreadBinding, "threadIdx.x");
}

}  // namespace tirc

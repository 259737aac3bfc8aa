// Lowering passes against the interpreter: every stage of the pipeline is still a function
// the interpreter runs, and computes the same outputs as the original.
#include "transforms/lower/lower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "parser/parser.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

NDArray reshaped(const NDArray& a, std::vector<int64_t> shape) {
  NDArray r(a.dtype(), std::move(shape));
  std::memcpy(r.data(), a.data(), a.nbytes());
  return r;
}

// Outputs of g (maybe flattened) on the inputs of f, reshaped back to f's output shapes.
ArgMap run_on(const FunctionNode& g, const ArgMap& in, const ArgMap& ref) {
  ArgMap gin;
  for (auto& p : g.params) {
    const NDArray& a = in.at(p.name());
    gin[p.name()] = p.is_buffer() && p.buffer->ndim() != a.shape().size() ? reshaped(a, {a.numel()}) : a;
  }
  ArgMap out = run_interp(g, gin);
  for (auto& [k, v] : out) v = reshaped(v, ref.at(k).shape());
  return out;
}

void expect_same(const ArgMap& a, const ArgMap& b, const std::string& stage) {
  ASSERT_EQ(a.size(), b.size()) << stage;
  for (auto& [k, v] : a) {
    const NDArray& w = b.at(k);
    ASSERT_EQ(v.shape(), w.shape()) << stage;
    EXPECT_EQ(std::memcmp(v.data(), w.data(), v.nbytes()), 0) << stage << ": output " << k << " differs";
  }
}

struct Counts {
  int blocks_with_iters = 0, inits = 0, multi_dim = 0, scope_blocks = 0;
};
Counts count(const FunctionNode& f) {
  struct V : IRVisitor {
    Counts c;
    void visit_block(const BlockNode* n) override {
      if (!n->iter_vars.empty()) ++c.blocks_with_iters;
      if (n->init.defined()) ++c.inits;
      if (n->iter_vars.empty() && n->name != "root") ++c.scope_blocks;
      IRVisitor::visit_block(n);
    }
    void visit_load(const LoadNode* n) override {
      if (n->indices.size() != 1) ++c.multi_dim;
      IRVisitor::visit_load(n);
    }
    void visit_store(const StoreNode* n) override {
      if (n->indices.size() != 1) ++c.multi_dim;
      IRVisitor::visit_store(n);
    }
  } v;
  v.visit(f.body);
  return v.c;
}

// Runs every stage of the pipeline and compares each with the original, bit for bit (the
// passes do not reorder float arithmetic).
void check_pipeline(const FunctionNode& f, const ArgMap& given = {}, uint64_t seed = 1) {
  ArgMap in = random_inputs(f, seed, given);
  ArgMap ref = run_interp(f, in);
  Function a = lower_init(f);
  EXPECT_EQ(count(*a).inits, 0);
  expect_same(run_on(*a, in, ref), ref, "lower_init");
  Function b = convert_blocks(*a);
  EXPECT_EQ(count(*b).blocks_with_iters, 0) << print_function(*b);
  expect_same(run_on(*b, in, ref), ref, "convert_blocks");
  Function c0 = plan_alloc(*b);
  expect_same(run_on(*c0, in, ref), ref, "plan_alloc");
  Function c = compact_buffers(*c0);
  expect_same(run_on(*c, in, ref), ref, "compact_buffers");
  Function d = flatten_buffers(*c);
  EXPECT_EQ(count(*d).multi_dim, 0) << print_function(*d);
  expect_same(run_on(*d, in, ref), ref, "flatten_buffers");
  Function e = simplify_indices(*d);
  expect_same(run_on(*e, in, ref), ref, "simplify_indices");
  Function t = trim_no_ops(*e);
  expect_same(run_on(*t, in, ref), ref, "trim_no_ops");
  Function all = lower_function(f);
  expect_same(run_on(*all, in, ref), ref, "lower_function");
}

Function parse_one(const std::string& text, const std::string& name) {
  Module m = parse_module(text, "test.tir");
  return m.find_func(name);
}

}  // namespace

TEST(Lower, Examples) {
  for (const char* ex : {"matmul", "conv2d", "softmax"}) {
    SCOPED_TRACE(ex);
    Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + ex + ".tir");
    check_pipeline(*m.find_func(ex));
  }
}

TEST(Lower, InitGuardUsesEveryReduceVar) {
  Function f = parse_one(R"(
func f(A: f32[4, 6, 5]) -> (B: f32[4]) {
  for i, k0, k1 in grid(4, 6, 5) {
    block b(vi: spatial(4) = i, vk: reduce(6) = k0, vl: reduce(5) = k1) {
      init { B[vi] = 1.0 }
      B[vi] = B[vi] * 0.5 + A[vi, vk, vl]
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = print_function(*lower_init(*f));
  EXPECT_NE(text.find("if vk == 0 && vl == 0 {"), std::string::npos) << text;
}

TEST(Lower, PredicatesSymbolicShapesAndBlockAllocs) {
  Function f = parse_one(R"(
func f(n: i32, A: f32[n, 3]) -> (B: f32[n]) {
  for i0, i1 in grid((n + 3) // 4, 4) {
    block b(vi: spatial(n) = i0 * 4 + i1) {
      where i0 * 4 + i1 < n
      alloc T: f32[3]
      for k in serial(3) {
        block t(wi: spatial(n) = vi, vk: spatial(3) = k) { T[vk] = A[wi, vk] * 2.0 }
      }
      B[vi] = T[0] + T[1] + T[2]
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  NDArray n(DType::I32, {});
  n.set(0, 10);
  check_pipeline(*f, {{"n", n}});
  Counts c = count(*lower_function(*f));
  EXPECT_EQ(c.blocks_with_iters, 0);
  EXPECT_EQ(c.scope_blocks, 1);  // the block that owns T
}

TEST(Lower, PlanAllocMovesBufferIntoParallelLoop) {
  Function f = parse_one(R"(
func f(A: f32[8, 16]) -> (B: f32[8, 16]) {
  alloc T: f32[16]
  for i in parallel(8) {
    for j in serial(16) {
      block t(vi: opaque(8) = i, vj: spatial(16) = j) { T[vj] = A[vi, vj] + 1.0 }
    }
    for j in serial(16) {
      block b(vi: spatial(8) = i, vj: spatial(16) = j) { B[vi, vj] = T[15 - vj] * 2.0 }
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  Function g = plan_alloc(*convert_blocks(*lower_init(*f)));
  EXPECT_TRUE(root_block(*g).allocs.empty()) << print_function(*g);
  std::string text = print_function(*g);
  EXPECT_NE(text.find("for i in parallel(8) {\n    block alloc_i_0() {\n      alloc T: f32[16]"),
            std::string::npos)
      << text;
}

TEST(Lower, FlattenUsesRowMajorStrides) {
  Function f = parse_one(R"(
func f(A: f32[3, 4, 5]) -> (B: f32[3, 4, 5]) {
  for i, j, k in grid(3, 4, 5) {
    block b(vi: spatial(3) = i, vj: spatial(4) = j, vk: spatial(5) = k) { B[vi, vj, vk] = A[vi, vj, vk] }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = print_function(*flatten_buffers(*convert_blocks(*f)));
  EXPECT_NE(text.find("B[(i * 4 + j) * 5 + k] = A[(i * 4 + j) * 5 + k]"), std::string::npos) << text;
  EXPECT_NE(text.find("A: f32[60]"), std::string::npos) << text;
  text = print_function(*lower_function(*f));  // the arithmetic simplifier distributes
  EXPECT_NE(text.find("B[i * 20 + j * 5 + k] = A[i * 20 + j * 5 + k]"), std::string::npos) << text;
}

TEST(Lower, SimplifyFoldsIndexConstants) {
  Var i("i");
  Expr e = (i + 3) + 4;
  EXPECT_EQ(print_expr(simplify_index_expr(e)), "i + 7");
  EXPECT_EQ(print_expr(simplify_index_expr(i * 1 + 0 * i)), "i");
  EXPECT_EQ(print_expr(simplify_index_expr(floordiv(make_int(-7), make_int(2)))), "-4");
  EXPECT_EQ(print_expr(simplify_index_expr(floormod(make_int(-7), make_int(2)))), "1");
}

// ---- allocation placement + compaction (plan_alloc, compact_buffers) ----

namespace {

std::string placed(const FunctionNode& f) {
  return print_function(*compact_buffers(*plan_alloc(*convert_blocks(*lower_init(f)))));
}

}  // namespace

// A matmul scheduled as in bench/matmul.tir (cache_write accumulator under the row tile,
// B panel packed by cache_read + compute_at under the parallel column loop): both caches
// become tile-sized buffers private to their loop, and every stage still computes the same.
TEST(Lower, CompactsScheduledCaches) {
  Module m = apply_module_schedules(parse_module(R"(
func mm(A: f32[32, 24], B: f32[24, 64]) -> (C: f32[32, 64]) {
  for i, j, k in grid(32, 64, 24) {
    block C(vi: spatial(32) = i, vj: spatial(64) = j, vk: reduce(24) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
schedule mm {
  b = get_block("C")
  i, j, k = get_loops(b)
  jo, ji = split(j, [_, 16])
  io, ii = split(i, [_, 4])
  reorder(jo, io, k, ii, ji)
  cw = cache_write(b, 0, "local")
  reverse_compute_at(cw, io)
  cr = cache_read(b, "B", "global")
  compute_at(cr, jo)
  init = decompose_reduction(b, k)
  parallel(jo)
  vectorize(ji)
  unroll(ii)
}
)",
                                                 "t.tir"));
  Function f = m.find_func("mm");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = placed(*f);
  EXPECT_TRUE(root_block(*plan_alloc(*convert_blocks(*lower_init(*f)))).allocs.empty()) << text;
  EXPECT_NE(text.find("alloc B_global: f32[24, 16]"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc C_local: f32[4, 16] scope \"local\""), std::string::npos) << text;
  // C_local lives in the row-tile loop io (inside the parallel jo), B_global in jo.
  EXPECT_LT(text.find("for io in serial(8)"), text.find("alloc C_local")) << text;
  EXPECT_LT(text.find("alloc B_global"), text.find("for io in serial(8)")) << text;
  std::string low = print_function(*lower_function(*f));
  EXPECT_NE(
      low.find(
          "C_local[ii * 16 + ji] = C_local[ii * 16 + ji] + A[io * 96 + ii * 24 + k] * B_global[k * 16 + ji]"),
      std::string::npos)
      << low;
}

// A value carried between iterations of a serial loop: the buffer is not partitioned by
// s (both iterations touch T[0:4]), so it stays at the root; an enclosing parallel loop
// below the serial one does not change that (the old placement moved T into p and the
// second iteration of s read uninitialised memory). Compaction still shrinks it to 4.
TEST(Lower, PlanAllocKeepsValuesCarriedAcrossSerialIterations) {
  Function f = parse_one(R"(
func f(A: f32[4]) -> (B: f32[4]) {
  alloc T: f32[16]
  for s in serial(2) {
    for p in parallel(4) {
      block b(vs: opaque(2) = s, vp: spatial(4) = p) {
        if vs == 0 { T[vp] = A[vp] * 2.0 } else { B[vp] = T[vp] + 1.0 }
      }
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  Function g = compact_buffers(*plan_alloc(*convert_blocks(*lower_init(*f))));
  ASSERT_EQ(root_block(*g).allocs.size(), 1u) << print_function(*g);
  EXPECT_EQ(print_expr(root_block(*g).allocs[0]->shape[0]), "4");
}

// Overlapping windows (halo): iteration i reads T[2i], written by iteration i - 1, so the
// loop does not partition T (width 3 > stride 2): T stays at the root.
TEST(Lower, PlanAllocKeepsOverlappingWindows) {
  Function f = parse_one(R"(
func f(A: f32[9]) -> (B: f32[4]) {
  alloc T: f32[9]
  for i in serial(4) {
    for k in serial(3) {
      block t(vi: spatial(4) = i, vk: spatial(3) = k) {
        if vk > 0 || vi == 0 { T[vi * 2 + vk] = A[vi * 2 + vk] }
      }
    }
    block b(vi: spatial(4) = i) { B[vi] = T[vi * 2] }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  Function g = compact_buffers(*plan_alloc(*convert_blocks(*lower_init(*f))));
  ASSERT_EQ(root_block(*g).allocs.size(), 1u) << print_function(*g);
  EXPECT_EQ(print_expr(root_block(*g).allocs[0]->shape[0]), "9");
}

// Partitioned by a serial loop: each iteration of i owns T[4i:4i+4], so T moves into i and
// shrinks to 4 elements (symbolic offset 4i), with a non-zero loop min and a let between.
TEST(Lower, PlanAllocMovesIntoPartitioningSerialLoop) {
  Function f = parse_one(R"(
func f(A: f32[16]) -> (B: f32[12]) {
  alloc T: f32[16]
  for i in serial(1, 4) {
    for k in serial(4) {
      block t(vi: spatial(4) = i, vk: spatial(4) = k) { T[vi * 4 + vk] = A[vi * 4 + vk] * 3.0 }
    }
    for k in serial(4) {
      block b(vi: spatial(4) = i, vk: spatial(4) = k) {
        let r = 3 - vk
        B[vi * 4 + vk - 4] = T[vi * 4 + r]
      }
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = placed(*f);
  EXPECT_NE(text.find("for i in serial(1, 4) {\n    block alloc_i_0() {\n      alloc T: f32[4]"),
            std::string::npos)
      << text;
}

// Never into a vectorized loop (the loop would stay scalar), and a "shared" buffer never
// into a threadIdx loop (one buffer per thread block); a "local" one may.
TEST(Lower, PlanAllocRespectsVectorizedAndSharedScopes) {
  Function f = parse_one(R"(
func f(A: f32[4, 8]) -> (B: f32[4, 8], D: f32[4, 8]) {
  alloc S: f32[4, 8] scope "shared"
  alloc L: f32[4, 8] scope "local"
  alloc V: f32[4, 8]
  for bx in thread_binding(4, "blockIdx.x") {
    for tx in thread_binding(8, "threadIdx.x") {
      block s(vb: spatial(4) = bx, vt: spatial(8) = tx) {
        S[vb, vt] = A[vb, vt]
        L[vb, vt] = A[vb, vt] * 2.0
        B[vb, vt] = S[vb, vt] + L[vb, vt]
      }
    }
  }
  for i in serial(4) {
    for j in vectorized(8) {
      block v(vi: spatial(4) = i, vj: spatial(8) = j) {
        V[vi, vj] = A[vi, vj] + 1.0
        D[vi, vj] = V[vi, vj] * V[vi, vj]
      }
    }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  std::string text = placed(*f);
  EXPECT_NE(text.find("for bx in thread_binding(4, \"blockIdx.x\") {\n    block alloc_bx_1() {\n      alloc "
                      "S: f32[1, 8] scope \"shared\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for tx in thread_binding(8, \"threadIdx.x\") {\n        block alloc_tx_"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("alloc L: f32[1, 1] scope \"local\""), std::string::npos) << text;
  EXPECT_NE(text.find("for i in serial(4) {\n    block alloc_i_"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc V: f32[1, 8]"), std::string::npos) << text;
}

// A data-dependent index cannot be bounded: the dimension keeps its size.
TEST(Lower, CompactKeepsDataDependentDimensions) {
  Function f = parse_one(R"(
func f(A: f32[8], I: i32[4] in [0, 7]) -> (B: f32[4]) {
  alloc T: f32[8, 8]
  for i, j in grid(8, 2) {
    block t(vi: spatial(8) = i, vj: spatial(2) = j) { T[vi, vj] = A[vi] + 1.0 }
  }
  for i in serial(4) {
    block b(vi: spatial(4) = i) { B[vi] = T[I[vi], 1] }
  }
}
)",
                         "f");
  ASSERT_TRUE(f);
  check_pipeline(*f);
  Function g = compact_buffers(*plan_alloc(*convert_blocks(*lower_init(*f))));
  ASSERT_EQ(root_block(*g).allocs.size(), 1u);
  EXPECT_EQ(print_expr(root_block(*g).allocs[0]->shape[0]), "8");
  EXPECT_EQ(print_expr(root_block(*g).allocs[0]->shape[1]), "2");
}

}  // namespace tirc

namespace tirc {

// Every scheduled function of the schedule test corpora (cases, TVM-style schedules, the
// shared examples): each lowering stage, including plan_alloc and compact_buffers on the
// caches and compute_at'ed producers these schedules create, computes bit-identical
// outputs in the interpreter. Functions whose schedule is refused (files written to test
// refusals) or whose inputs cannot be drawn are skipped.
// One test per file of the schedule corpora (so that ctest runs them in parallel).
std::vector<std::string> scheduled_corpora() {
  std::vector<std::string> files;
  for (const char* dir : {"/tests/schedule/cases", "/tests/schedule/tvm_style", "/examples/schedules"}) {
    std::string d = std::string(TIRC_SOURCE_DIR) + dir;
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(d, ec))
      if (e.path().extension() == ".tir") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class LowerCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(LowerCorpus, ScheduledStaysIdentical) {
  const std::string& file = GetParam();
  Module m;
  try {
    m = apply_module_schedules(parse_file(file));
  } catch (const std::exception&) {
    GTEST_SKIP() << "a refusal case, or a file for another stage";
  }
  int checked = 0;
  for (auto& f : m.funcs) {
    SCOPED_TRACE(file + ": " + f->name);
    try {
      (void)random_inputs(*f, 1);
    } catch (const std::exception&) {
      continue;
    }
    check_pipeline(*f);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no function runs on random inputs";
}

INSTANTIATE_TEST_SUITE_P(Corpora, LowerCorpus, ::testing::ValuesIn(scheduled_corpora()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::filesystem::path p(i.param);
                           std::string s = p.parent_path().filename().string() + "_" + p.stem().string();
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(Lower, ScheduledCorporaAreThere) { EXPECT_GT(scheduled_corpora().size(), 20u); }

}  // namespace tirc

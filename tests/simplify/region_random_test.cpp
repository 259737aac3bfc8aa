// Region soundness on random blocks: every access executed by the block (for every value of
// its iter vars) lies inside the inferred region of its buffer.
#include <gtest/gtest.h>

#include <random>

#include "tests/simplify/test_util.h"
#include "transforms/simplify/region.h"

namespace tirc {
namespace {

using testing::Env;
using testing::str;
using testing::Val;

struct Rec {
  const BufferNode* buf;
  std::vector<int64_t> idx;
  bool write;
};

void loads(const Expr& e, Env& env, std::vector<Rec>* out) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::Load: {
      auto* n = e.as<LoadNode>();
      std::vector<int64_t> idx;
      for (auto& i : n->indices) {
        loads(i, env, out);
        idx.push_back(testing::eval(i, env).i);
      }
      out->push_back({n->buffer.get(), idx, false});
      return;
    }
    case ExprKind::Binary:
      loads(e.as<BinaryNode>()->a, env, out);
      loads(e.as<BinaryNode>()->b, env, out);
      return;
    case ExprKind::IfThenElse: {
      auto* n = as_select_like(e);
      loads(n->cond, env, out);
      loads(testing::eval(n->cond, env).i ? n->t : n->f, env, out);
      return;
    }
    case ExprKind::Select: {
      auto* n = as_select_like(e);
      loads(n->cond, env, out);
      loads(n->t, env, out);
      loads(n->f, env, out);
      return;
    }
    default: return;
  }
}

void run(const Stmt& s, Env& env, std::vector<Rec>* out) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      int64_t mn = testing::eval(n->min, env).i, ext = testing::eval(n->extent, env).i;
      for (int64_t i = mn; i < mn + ext; ++i) {
        env[n->loop_var.get()].i = i;
        run(n->body, env, out);
      }
      return;
    }
    case StmtKind::Store: {
      auto* n = s.as<StoreNode>();
      std::vector<int64_t> idx;
      for (auto& i : n->indices) {
        loads(i, env, out);
        idx.push_back(testing::eval(i, env).i);
      }
      loads(n->value, env, out);
      out->push_back({n->buffer.get(), idx, true});
      return;
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      loads(n->cond, env, out);
      run(testing::eval(n->cond, env).i ? n->then_case : n->else_case, env, out);
      return;
    }
    case StmtKind::LetStmt: {
      auto* n = s.as<LetStmtNode>();
      loads(n->value, env, out);
      env[n->var.get()] = testing::eval(n->value, env);
      run(n->body, env, out);
      return;
    }
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) run(x, env, out);
      return;
    default: return;
  }
}

TEST(Region, RandomBlocksAreCovered) {
  std::mt19937_64 rng(123);
  auto rnd = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t N = 100000;
  std::vector<Buffer> bufs = {Buffer("A", DType::F32, {make_int(N), make_int(N)}),
                              Buffer("B", DType::F32, {make_int(N)}), Buffer("C", DType::F32, {make_int(N)})};
  int checked = 0;
  for (int n = 0; n < 400; ++n) {
    Var vi("vi"), vj("vj");
    std::vector<Var> scope = {vi, vj};
    int64_t ei = rnd(1, 4), ej = rnd(1, 4);
    int counter = 0;
    std::function<Expr(int)> idx = [&](int d) -> Expr {
      if (d <= 0 || rnd(0, 2) == 0) {
        Var v = scope[static_cast<size_t>(rnd(0, static_cast<int64_t>(scope.size()) - 1))];
        return rnd(0, 3) ? Expr(v) * static_cast<int>(rnd(1, 3)) + static_cast<int>(rnd(0, 5)) : Expr(v);
      }
      switch (rnd(0, 5)) {
        case 0:
        case 1: return idx(d - 1) + idx(d - 1);
        case 2: return floordiv(idx(d - 1), make_int(rnd(1, 4)));
        case 3: return floormod(idx(d - 1), make_int(rnd(1, 4)));
        case 4: return min(idx(d - 1), idx(d - 1));
        default: return idx(d - 1) - idx(d - 1) + 20;
      }
    };
    std::function<Expr(int)> value = [&](int d) -> Expr {
      if (d <= 0 || rnd(0, 3) == 0) {
        const Buffer& b = bufs[static_cast<size_t>(rnd(0, 2))];
        std::vector<Expr> ix;
        for (size_t k = 0; k < b->ndim(); ++k) ix.push_back(idx(2));
        return make_load(b, ix);
      }
      switch (rnd(0, 2)) {
        case 0: return value(d - 1) + value(d - 1);
        case 1:
          return make_if_then_else(make_binary(BinOp::LT, idx(1), make_int(rnd(0, 10))), value(d - 1),
                                   value(d - 1));
        default:
          return make_select(make_binary(BinOp::GE, idx(1), make_int(rnd(0, 10))), value(d - 1),
                             value(d - 1));
      }
    };
    std::function<Stmt(int)> stmt = [&](int d) -> Stmt {
      int k = static_cast<int>(rnd(0, d <= 0 ? 0 : 4));
      switch (k) {
        case 0: {
          const Buffer& b = bufs[static_cast<size_t>(rnd(0, 2))];
          std::vector<Expr> ix;
          for (size_t q = 0; q < b->ndim(); ++q) ix.push_back(idx(2));
          return make_store(b, ix, value(2));
        }
        case 1:
        case 2: {
          Var l("l" + std::to_string(counter++));
          Expr mn = rnd(0, 2)
                        ? make_int(rnd(0, 3))
                        : Expr(scope[static_cast<size_t>(rnd(0, static_cast<int64_t>(scope.size()) - 1))]);
          Expr ext = make_int(rnd(1, 4));
          scope.push_back(l);
          Stmt body = stmt(d - 1);
          scope.pop_back();
          return make_for(l, mn, ext, ForKind::Serial, body);
        }
        case 3:
          return make_if(make_binary(rnd(0, 1) ? BinOp::LT : BinOp::GE, idx(1), make_int(rnd(0, 12))),
                         stmt(d - 1), rnd(0, 1) ? stmt(d - 1) : Stmt());
        default: {
          Var t("t" + std::to_string(counter++));
          Expr v = idx(2);
          scope.push_back(t);
          Stmt body = stmt(d - 1);
          scope.pop_back();
          return make_let_stmt(t, v, body);
        }
      }
    };
    BlockNode blk;
    blk.name = "b";
    blk.iter_vars = {{vi, IterKind::Spatial, make_int(ei)}, {vj, IterKind::Spatial, make_int(ej)}};
    blk.body = make_seq({stmt(3), stmt(2)});
    std::vector<BufferRegion> reads, writes;
    infer_access_regions(blk, &reads, &writes);
    for (int64_t a = 0; a < ei; ++a)
      for (int64_t c = 0; c < ej; ++c) {
        Env env;
        env[vi.get()].i = a;
        env[vj.get()].i = c;
        std::vector<Rec> recs;
        run(blk.body, env, &recs);
        for (auto& r : recs) {
          const auto& regions = r.write ? writes : reads;
          const BufferRegion* reg = nullptr;
          for (auto& x : regions)
            if (x.buffer.get() == r.buf) reg = &x;
          bool in_shape = true;
          for (auto i : r.idx) in_shape &= i >= 0 && i < N;
          if (!in_shape) continue;  // an invalid access: regions need not cover it
          ASSERT_TRUE(reg) << "missing region for " << r.buf->name;
          for (size_t d = 0; d < r.idx.size(); ++d) {
            Env e1 = env, e2 = env;
            int64_t lo = testing::eval(reg->ranges[d].begin, e1).i;
            int64_t hi = reg->ranges[d].is_point() ? lo + 1 : testing::eval(reg->ranges[d].end, e2).i;
            ASSERT_TRUE(lo <= r.idx[d] && r.idx[d] < hi)
                << r.buf->name << " dim " << d << " index " << r.idx[d] << " outside [" << lo << ", " << hi
                << ") = " << str(reg->ranges[d].begin) << " : " << str(reg->ranges[d].end) << " (case " << n
                << ")";
            ++checked;
          }
        }
      }
  }
  EXPECT_GT(checked, 5000);
}

}  // namespace
}  // namespace tirc

// Hand-built IR for interpreter tests (independent of the parser): small builders and the
// three shared examples (matmul, softmax, conv2d) as the parser would produce them.
#pragma once

#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/module.h"
#include "ir/stmt.h"

namespace tirc::testing {

struct IterSpec {
  Var var;
  IterKind kind;
  Expr extent;
  Expr binding;
};

inline Stmt grid(const std::vector<std::pair<Var, Expr>>& loops, Stmt body) {
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    body = make_for(it->first, make_int(0), it->second, ForKind::Serial, body);
  return body;
}

inline Stmt block(const std::string& name, const std::vector<IterSpec>& iters, Stmt body, Stmt init = Stmt(),
                  std::vector<Buffer> allocs = {}, Expr pred = Expr()) {
  BlockNode b;
  b.name = name;
  std::vector<Expr> bindings;
  for (auto& it : iters) {
    b.iter_vars.push_back(IterVar{it.var, it.kind, it.extent});
    bindings.push_back(it.binding);
  }
  b.init = init;
  b.body = body;
  b.allocs = std::move(allocs);
  return make_block_realize(bindings, pred.defined() ? pred : make_bool(true), make_block(std::move(b)));
}

inline Function func(const std::string& name, std::vector<Param> params, std::vector<Buffer> outputs,
                     std::vector<Buffer> allocs, std::vector<Stmt> body) {
  BlockNode root;
  root.name = "root";
  root.allocs = std::move(allocs);
  root.body = make_seq(std::move(body));
  auto f = std::make_shared<FunctionNode>();
  f->name = name;
  f->params = std::move(params);
  f->outputs = std::move(outputs);
  f->body = make_block_realize({}, make_bool(true), make_block(std::move(root)));
  return f;
}

inline Param bparam(Buffer b) {
  Param p;
  p.buffer = std::move(b);
  return p;
}
inline Param sparam(Var v) {
  Param p;
  p.var = std::move(v);
  return p;
}
inline Expr ld(const Buffer& b, std::vector<Expr> idx) { return make_load(b, std::move(idx)); }
inline Stmt st(const Buffer& b, std::vector<Expr> idx, Expr v) {
  return make_store(b, std::move(idx), std::move(v));
}
inline Expr f32(double v) { return make_float(v, DType::F32); }
inline Expr i32(int64_t v) { return make_int(v, DType::I32); }

// func matmul(A: f32[M, K], B: f32[K, N]) -> (C: f32[M, N]) with block "C".
inline Function matmul(int64_t M, int64_t N, int64_t K, DType t = DType::F32) {
  Buffer A("A", t, {i32(M), i32(K)}), B("B", t, {i32(K), i32(N)}), C("C", t, {i32(M), i32(N)});
  Var i("i"), j("j"), k("k"), vi("vi"), vj("vj"), vk("vk");
  Stmt body = grid({{i, i32(M)}, {j, i32(N)}, {k, i32(K)}},
                   block("C",
                         {{vi, IterKind::Spatial, i32(M), i},
                          {vj, IterKind::Spatial, i32(N), j},
                          {vk, IterKind::Reduce, i32(K), k}},
                         st(C, {vi, vj}, ld(C, {vi, vj}) + ld(A, {vi, vk}) * ld(B, {vk, vj})),
                         st(C, {vi, vj}, make_const(t, 0.0))));
  return func("matmul", {bparam(A), bparam(B)}, {C}, {}, {body});
}

// The shared softmax example (X: f32[R, L]).
inline Function softmax(int64_t R = 32, int64_t L = 100) {
  Buffer X("X", DType::F32, {i32(R), i32(L)}), Y("Y", DType::F32, {i32(R), i32(L)});
  Buffer M("M", DType::F32, {i32(R)}), E("E", DType::F32, {i32(R), i32(L)}), S("S", DType::F32, {i32(R)});
  Var i1("i"), k1("k"), vi1("vi"), vk1("vk");
  Stmt s1 = grid(
      {{i1, i32(R)}, {k1, i32(L)}},
      block("row_max", {{vi1, IterKind::Spatial, i32(R), i1}, {vk1, IterKind::Reduce, i32(L), k1}},
            st(M, {vi1}, max(ld(M, {vi1}), ld(X, {vi1, vk1}))), st(M, {vi1}, f32(-3.4028234663852886e38))));
  Var i2("i"), j2("j"), vi2("vi"), vj2("vj");
  Stmt s2 = grid({{i2, i32(R)}, {j2, i32(L)}},
                 block("exp", {{vi2, IterKind::Spatial, i32(R), i2}, {vj2, IterKind::Spatial, i32(L), j2}},
                       st(E, {vi2, vj2}, make_call(Intrinsic::Exp, {ld(X, {vi2, vj2}) - ld(M, {vi2})}))));
  Var i3("i"), k3("k"), vi3("vi"), vk3("vk");
  Stmt s3 = grid({{i3, i32(R)}, {k3, i32(L)}},
                 block("row_sum", {{vi3, IterKind::Spatial, i32(R), i3}, {vk3, IterKind::Reduce, i32(L), k3}},
                       st(S, {vi3}, ld(S, {vi3}) + ld(E, {vi3, vk3})), st(S, {vi3}, f32(0))));
  Var i4("i"), j4("j"), vi4("vi"), vj4("vj");
  Stmt s4 = grid({{i4, i32(R)}, {j4, i32(L)}},
                 block("norm", {{vi4, IterKind::Spatial, i32(R), i4}, {vj4, IterKind::Spatial, i32(L), j4}},
                       st(Y, {vi4, vj4}, ld(E, {vi4, vj4}) / ld(S, {vi4}))));
  return func("softmax", {bparam(X)}, {Y}, {M, E, S}, {s1, s2, s3, s4});
}

// The shared conv2d example: NCHW, 3x3, stride 1, padding 1 via an explicit padded copy.
inline Function conv2d(int64_t N = 2, int64_t Cin = 8, int64_t H = 16, int64_t Wd = 16, int64_t F = 16) {
  Buffer X("X", DType::F32, {i32(N), i32(Cin), i32(H), i32(Wd)});
  Buffer W("W", DType::F32, {i32(F), i32(Cin), i32(3), i32(3)});
  Buffer Y("Y", DType::F32, {i32(N), i32(F), i32(H), i32(Wd)});
  Buffer P("P", DType::F32, {i32(N), i32(Cin), i32(H + 2), i32(Wd + 2)});
  Var n("n"), c("c"), h("h"), w("w"), vn("vn"), vc("vc"), vh("vh"), vw("vw");
  Expr cond = make_binary(BinOp::And,
                          make_binary(BinOp::And,
                                      make_binary(BinOp::And, make_binary(BinOp::GE, vh, i32(1)),
                                                  make_binary(BinOp::LT, vh, i32(H + 1))),
                                      make_binary(BinOp::GE, vw, i32(1))),
                          make_binary(BinOp::LT, vw, i32(Wd + 1)));
  Stmt pad =
      grid({{n, i32(N)}, {c, i32(Cin)}, {h, i32(H + 2)}, {w, i32(Wd + 2)}},
           block("pad",
                 {{vn, IterKind::Spatial, i32(N), n},
                  {vc, IterKind::Spatial, i32(Cin), c},
                  {vh, IterKind::Spatial, i32(H + 2), h},
                  {vw, IterKind::Spatial, i32(Wd + 2), w}},
                 st(P, {vn, vc, vh, vw}, make_if_then_else(cond, ld(X, {vn, vc, vh - 1, vw - 1}), f32(0)))));
  Var n2("n"), f("f"), y("y"), x("x"), c2("c"), r("r"), s("s");
  Var vn2("vn"), vf("vf"), vy("vy"), vx("vx"), vc2("vc"), vr("vr"), vs("vs");
  Stmt conv = grid(
      {{n2, i32(N)}, {f, i32(F)}, {y, i32(H)}, {x, i32(Wd)}, {c2, i32(Cin)}, {r, i32(3)}, {s, i32(3)}},
      block("conv",
            {{vn2, IterKind::Spatial, i32(N), n2},
             {vf, IterKind::Spatial, i32(F), f},
             {vy, IterKind::Spatial, i32(H), y},
             {vx, IterKind::Spatial, i32(Wd), x},
             {vc2, IterKind::Reduce, i32(Cin), c2},
             {vr, IterKind::Reduce, i32(3), r},
             {vs, IterKind::Reduce, i32(3), s}},
            st(Y, {vn2, vf, vy, vx},
               ld(Y, {vn2, vf, vy, vx}) + ld(P, {vn2, vc2, vy + vr, vx + vs}) * ld(W, {vf, vc2, vr, vs})),
            st(Y, {vn2, vf, vy, vx}, f32(0))));
  return func("conv2d", {bparam(X), bparam(W)}, {Y}, {P}, {pad, conv});
}

}  // namespace tirc::testing

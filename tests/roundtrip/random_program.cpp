// Random well-typed modules (random_program.h).
#include "tests/roundtrip/random_program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <unordered_set>

#include "ir/visitor.h"

namespace tirc::testing {
namespace {

constexpr DType kValueTypes[] = {DType::Bool, DType::I8,  DType::I16, DType::I32,  DType::I64, DType::U8,
                                 DType::U16,  DType::U32, DType::F16, DType::BF16, DType::F32, DType::F64};
constexpr DType kNumericTypes[] = {DType::I8,  DType::I16, DType::I32,  DType::I64, DType::U8, DType::U16,
                                   DType::U32, DType::F16, DType::BF16, DType::F32, DType::F64};

double f16_value(uint16_t bits) {
  int sign = bits >> 15, exp = (bits >> 10) & 31, mant = bits & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

double bf16_value(uint16_t bits) {
  uint32_t b = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// A name used while scoping: iter vars, lets and scalar params visible inside a block.
struct Scope {
  std::vector<Var> vars;
  std::vector<Buffer> readable;
  // Known extent of index-like vars (iter vars): a constant or the symbolic-size param.
  std::vector<std::pair<Var, Expr>> extents;
};

class Gen {
 public:
  Gen(uint64_t seed, const RandomProgramOptions& opt) : rng_(seed), opt_(opt) {}

  Module module() {
    Module m;
    int nf = 1 + rand(opt_.max_funcs);
    std::vector<std::pair<int, size_t>> order;
    for (int i = 0; i < nf; ++i) {
      m.funcs.push_back(function("f" + std::to_string(i)));
      order.emplace_back(0, m.funcs.size() - 1);
    }
    for (int i = 0, n = rand(3); i < n; ++i) {
      const Function& f = m.funcs[rand(static_cast<int>(m.funcs.size()))];
      m.schedules.push_back(schedule(*f));
      order.emplace_back(1, m.schedules.size() - 1);
    }
    if (coin(25)) {
      m.intrins.push_back(intrin("mma" + std::to_string(rand(100))));
      order.emplace_back(2, 0);
    }
    // Items in a random order; each kind's vector is kept in order of appearance (which is
    // how the parser fills them).
    std::shuffle(order.begin(), order.end(), rng_);
    Module r;
    for (auto [kind, idx] : order) {
      if (kind == 0) r.funcs.push_back(m.funcs[idx]), r.order.emplace_back(0, r.funcs.size() - 1);
      if (kind == 1) r.schedules.push_back(m.schedules[idx]), r.order.emplace_back(1, r.schedules.size() - 1);
      if (kind == 2) r.intrins.push_back(m.intrins[idx]), r.order.emplace_back(2, r.intrins.size() - 1);
    }
    return r;
  }

 private:
  std::mt19937_64 rng_;
  RandomProgramOptions opt_;
  // Per function.
  Var size_param_;  // symbolic size `n` (i32) or undefined
  std::vector<Var> scalar_params_;
  std::vector<Buffer> inputs_, writable_;
  std::set<std::string> block_names_;
  std::vector<Var> root_lets_;  // loop-invariant lets visible everywhere below them

  // ---- randomness ----
  int rand(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int range(int lo, int hi) { return lo + rand(hi - lo + 1); }
  bool coin(int pct) { return rand(100) < pct; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[rand(static_cast<int>(v.size()))];
  }
  template <typename T, size_t N>
  const T& pick(const T (&v)[N]) {
    return v[rand(static_cast<int>(N))];
  }

  std::string name(std::vector<std::string> plain, std::vector<std::string> colliding) {
    if (opt_.colliding_names && coin(20)) return pick(colliding);
    return pick(plain);
  }
  std::string loop_name() {
    return name({"i", "j", "k", "ax0", "x"}, {"i", "for", "in", "f32", "inf", "i_1", "exp"});
  }
  std::string iter_name() { return name({"vi", "vj", "vk", "v0", "v1"}, {"i", "vi", "where", "nan", "A"}); }
  std::string let_name() { return name({"t", "x", "s0", "tmp"}, {"t", "let", "i", "true", "vi"}); }
  std::string buf_name() {
    return name({"A", "B", "C", "X", "Y", "T", "buf"}, {"i", "vi", "exp", "block", "max", "A"});
  }
  std::string block_name() {
    static const std::vector<std::string> pool = {"b", "C", "exp", "max", "compute", "update"};
    std::string base = pick(pool), n = base;
    for (int k = 0; block_names_.count(n); ++k) n = base + std::to_string(k);
    block_names_.insert(n);
    return n;
  }

  // ---- literals ----
  Expr int_literal(DType t) {
    int64_t lo, hi;
    switch (t) {
      case DType::I8: lo = INT8_MIN, hi = INT8_MAX; break;
      case DType::I16: lo = INT16_MIN, hi = INT16_MAX; break;
      case DType::I32: lo = INT32_MIN, hi = INT32_MAX; break;
      case DType::I64: lo = INT64_MIN, hi = INT64_MAX; break;
      case DType::U8: lo = 0, hi = UINT8_MAX; break;
      case DType::U16: lo = 0, hi = UINT16_MAX; break;
      default: lo = 0, hi = UINT32_MAX; break;
    }
    int64_t v;
    switch (rand(6)) {
      case 0: v = hi; break;
      case 1: v = (lo == INT64_MIN && !opt_.extreme_ints) ? lo + 1 : lo; break;
      case 2:
        v = static_cast<int64_t>(rng_() % static_cast<uint64_t>(std::min<int64_t>(hi, INT32_MAX)));
        break;
      default: v = range(0, 10); break;
    }
    if (lo < 0 && coin(30) && v > 0) v = -v;
    return make_int(v, t);
  }

  double float_value(DType t) {
    const double inf = std::numeric_limits<double>::infinity();
    double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(),
                        1.0, -1.5, 0.5, 3.0,  100.0};
    if (coin(30)) return pick(special);
    if (coin(30)) return range(-20, 20) * 0.25;
    switch (t) {
      case DType::F16: {
        static const double ex[] = {65504.0, -65504.0, 6.103515625e-05, 5.960464477539063e-08,
                                    0.0999755859375};
        return coin(30) ? pick(ex) : f16_value(static_cast<uint16_t>(rng_()));
      }
      case DType::BF16: {
        static const double ex[] = {3.3895313892515355e+38, 1.1754943508222875e-38, 9.183549615799121e-41};
        return coin(30) ? pick(ex) : bf16_value(static_cast<uint16_t>(rng_()));
      }
      case DType::F32: {
        const double ex[] = {std::numeric_limits<float>::max(),
                             -static_cast<double>(std::numeric_limits<float>::max()),
                             std::numeric_limits<float>::min(),
                             std::numeric_limits<float>::denorm_min(),
                             0.1f,
                             1e-7f,
                             16777217.0f};
        if (coin(30)) return pick(ex);
        uint32_t b = static_cast<uint32_t>(rng_());
        float f;
        std::memcpy(&f, &b, 4);
        return f;
      }
      default: {
        const double ex[] = {std::numeric_limits<double>::max(),
                             -std::numeric_limits<double>::max(),
                             std::numeric_limits<double>::min(),
                             std::numeric_limits<double>::denorm_min(),
                             0.1,
                             1e-300,
                             9007199254740993.0};
        if (coin(30)) return pick(ex);
        uint64_t b = rng_();
        double d;
        std::memcpy(&d, &b, 8);
        return d;
      }
    }
  }

  Expr literal(DType t) {
    if (t == DType::Bool) return make_bool(coin(50));
    if (is_float(t)) {
      double v = float_value(t);
      if (t == DType::F32) v = static_cast<float>(v);  // exact in the dtype
      if (t == DType::F16 && !std::isnan(v) && !std::isinf(v) && std::fabs(v) > 65504) v = 2.0;
      if (t == DType::BF16 || t == DType::F16) {
        float f = static_cast<float>(v);
        if (static_cast<double>(f) != v && !std::isnan(v)) v = 1.0;
      }
      return make_float(v, t);
    }
    return int_literal(t);
  }

  // ---- expressions ----
  std::vector<Var> vars_of(const Scope& s, DType t) {
    std::vector<Var> out;
    for (auto& v : s.vars)
      if (v.dtype() == t) out.push_back(v);
    return out;
  }

  // An index into dimension d of b that stays in bounds.
  Expr index(const Buffer& b, size_t d, Scope& s) {
    const Expr& dim = b->shape[d];
    int64_t n = 0;
    bool is_const = is_const_int(dim, &n);
    std::vector<Var> fits;
    for (auto& [v, ext] : s.extents) {
      int64_t e;
      if ((is_const && is_const_int(ext, &e) && e <= n) || (!is_const && ext.same_as(dim))) fits.push_back(v);
    }
    int r = rand(10);
    if (!fits.empty() && r < 6) return pick(fits);
    if (r < 8) return make_int(is_const ? rand(static_cast<int>(n)) : 0);
    // (int expression) % extent: in bounds for any value of the expression.
    return floormod(expr(DType::I32, 1, s), is_const ? make_int(n) : dim);
  }
  std::vector<Expr> indices(const Buffer& b, Scope& s) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < b->ndim(); ++d) idx.push_back(index(b, d, s));
    return idx;
  }

  Expr leaf(DType t, Scope& s) {
    std::vector<Var> vs = vars_of(s, t);
    std::vector<Buffer> bs;
    for (auto& b : s.readable)
      if (b->dtype == t) bs.push_back(b);
    int r = rand(10);
    if (r < 3 && !vs.empty()) return pick(vs);
    if (r < 6 && !bs.empty()) {
      Buffer b = pick(bs);
      return make_load(b, indices(b, s));
    }
    return literal(t);
  }

  Expr expr(DType t, int depth, Scope& s) {
    if (depth <= 0 || coin(25)) return leaf(t, s);
    int r = rand(100);
    if (r < 8) {  // cast from another dtype
      DType from = pick(kValueTypes);
      return make_cast(t, expr(from, depth - 1, s));
    }
    if (r < 16) {  // select / if_then_else
      Expr c = expr(DType::Bool, depth - 1, s);
      Expr a = expr(t, depth - 1, s), b = expr(t, depth - 1, s);
      return coin(50) ? make_select(c, a, b) : make_if_then_else(c, a, b);
    }
    if (r < 22) {  // let-expression
      DType vt = pick(kValueTypes);
      Expr v = expr(vt, depth - 1, s);
      Var x(let_name(), vt);
      s.vars.push_back(x);
      Expr body = expr(t, depth - 1, s);
      s.vars.pop_back();
      return make_let(x, v, body);
    }
    if (t == DType::Bool) {
      switch (rand(4)) {
        case 0: {
          DType ot = pick(kNumericTypes);
          BinOp op = static_cast<BinOp>(static_cast<int>(BinOp::EQ) + rand(6));
          return make_binary(op, expr(ot, depth - 1, s), expr(ot, depth - 1, s));
        }
        case 1:
          return make_binary(coin(50) ? BinOp::And : BinOp::Or, expr(t, depth - 1, s), expr(t, depth - 1, s));
        case 2: return make_unary(UnOp::Not, expr(t, depth - 1, s));
        default:
          return make_binary(coin(50) ? BinOp::EQ : BinOp::NE, expr(t, depth - 1, s), expr(t, depth - 1, s));
      }
    }
    if (r < 32 && (is_float(t) || is_signed_int(t))) return make_unary(UnOp::Neg, expr(t, depth - 1, s));
    if (r < 45) {  // intrinsic call
      if (is_float(t)) {
        Intrinsic f = static_cast<Intrinsic>(rand(static_cast<int>(Intrinsic::Pow) + 1));
        std::vector<Expr> args;
        for (int i = 0; i < intrinsic_arity(f); ++i) args.push_back(expr(t, depth - 1, s));
        return make_call(f, args);
      }
      static const Intrinsic int_fns[] = {Intrinsic::Abs, Intrinsic::Sign, Intrinsic::TruncDiv,
                                          Intrinsic::TruncMod};
      Intrinsic f = pick(int_fns);
      std::vector<Expr> args;
      for (int i = 0; i < intrinsic_arity(f); ++i) args.push_back(expr(t, depth - 1, s));
      return make_call(f, args);
    }
    std::vector<BinOp> ops = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Min, BinOp::Max};
    if (is_float(t))
      ops.push_back(BinOp::Div);
    else {
      ops.push_back(BinOp::FloorDiv);
      ops.push_back(BinOp::FloorMod);
    }
    return make_binary(pick(ops), expr(t, depth - 1, s), expr(t, depth - 1, s));
  }

  // ---- regions ----
  // Regions touched by a block body: a point region when every access of a buffer uses the
  // same indices written in the block's own iter vars / scalar params, the whole buffer
  // otherwise. Buffers allocated inside are left out.
  void block_regions(const BlockNode& b, std::vector<BufferRegion>* reads,
                     std::vector<BufferRegion>* writes) {
    std::unordered_set<const VarNode*> ok_vars;
    for (auto& iv : b.iter_vars) ok_vars.insert(iv.var.get());
    for (auto& v : scalar_params_) ok_vars.insert(v.get());
    std::unordered_set<const BufferNode*> local;
    for (auto& a : b.allocs) local.insert(a.get());
    struct Acc {
      Buffer buf;
      std::vector<std::vector<Expr>> idx;
      bool full = false;
    };
    std::vector<Acc> rd, wr;
    // A call_extern pointer argument (A.data / A.ptr(i)) touches the whole buffer.
    auto add = [](std::vector<Acc>& v, const Buffer& buf, const std::vector<Expr>& idx, bool full) {
      for (auto& a : v)
        if (a.buf.same_as(buf)) {
          a.idx.push_back(idx);
          a.full = a.full || full;
          return;
        }
      v.push_back({buf, {idx}, full});
    };
    struct Walk : IRVisitor {
      std::function<void(const Buffer&, const std::vector<Expr>&, bool, bool)> f;
      std::unordered_set<const BufferNode*>* local;
      std::function<bool(const Buffer&)> is_input;
      void visit_load(const LoadNode* n) override {
        f(n->buffer, n->indices, false, false);
        IRVisitor::visit_load(n);
      }
      void visit_buffer_ptr(const BufferPtrNode* n) override {
        f(n->buffer, n->indices, false, true);
        if (!is_input(n->buffer)) f(n->buffer, n->indices, true, true);
        IRVisitor::visit_buffer_ptr(n);
      }
      void visit_store(const StoreNode* n) override {
        f(n->buffer, n->indices, true, false);
        IRVisitor::visit_store(n);
      }
      void visit_block(const BlockNode* n) override {
        for (auto& a : n->allocs) local->insert(a.get());
        IRVisitor::visit_block(n);
      }
    } w;
    w.local = &local;
    w.is_input = [&](const Buffer& buf) {
      return std::any_of(inputs_.begin(), inputs_.end(), [&](const Buffer& x) { return x.same_as(buf); });
    };
    w.f = [&](const Buffer& buf, const std::vector<Expr>& idx, bool is_write, bool full) {
      add(is_write ? wr : rd, buf, idx, full);
    };
    if (b.init.defined()) w.visit(b.init);
    w.visit(b.body);
    auto to_regions = [&](const std::vector<Acc>& accs, std::vector<BufferRegion>* out) {
      for (auto& a : accs) {
        if (local.count(a.buf.get())) continue;
        bool point = !a.full;
        for (auto& idx : a.idx) {
          if (!point) break;
          for (size_t d = 0; d < idx.size() && point; ++d) {
            if (!expr_identical(idx[d], a.idx[0][d])) point = false;
            for_each_expr(idx[d], [&](const Expr& e) {
              if (e.kind() == ExprKind::Var && !ok_vars.count(static_cast<const VarNode*>(e.get())))
                point = false;
              if (e.kind() == ExprKind::Let) point = false;
            });
          }
        }
        BufferRegion r;
        r.buffer = a.buf;
        for (size_t d = 0; d < a.buf->ndim(); ++d) {
          if (point)
            r.ranges.push_back(Range{a.idx[0][d], Expr()});
          else
            r.ranges.push_back(Range{make_int(0, a.buf->shape[d].dtype()), a.buf->shape[d]});
        }
        out->push_back(r);
      }
    };
    to_regions(rd, reads);
    to_regions(wr, writes);
  }

  // ---- statements ----
  struct LoopSpec {
    Var var;
    Expr min, extent;
  };

  Stmt wrap_loops(std::vector<LoopSpec> loops, Stmt body) {
    std::shuffle(loops.begin(), loops.end(), rng_);
    for (size_t i = loops.size(); i-- > 0;) {
      auto& l = loops[i];
      ForKind k = static_cast<ForKind>(rand(5));
      std::string tag;
      if (k == ForKind::ThreadBinding) {
        static const std::vector<std::string> tags = {"threadIdx.x", "threadIdx.y", "blockIdx.x",
                                                      "blockIdx.z", "vthread"};
        tag = pick(tags);
      }
      Annotations ann;
      if (coin(10)) ann["pragma_unroll"] = std::to_string(rand(8));
      if (coin(5)) ann["note"] = "\"hello\"";
      if (coin(5)) ann["ratio"] = "0.5";
      body = make_for(l.var, l.min, l.extent, k, body, tag, ann);
    }
    return body;
  }

  // A block writing every element of `out` (spatial iter vars over its shape), maybe with
  // reduce vars + init, wrapped in loops that bind the iter vars. `outer` is the scope of
  // an enclosing block (nested blocks bind to its iter vars instead of new loops).
  Stmt nest(const Buffer& out, Scope* outer, int depth) {
    BlockNode blk;
    blk.name = block_name();
    std::vector<Expr> bindings;
    std::vector<LoopSpec> loops;
    Scope s;
    s.vars = scalar_params_;
    s.vars.insert(s.vars.end(), root_lets_.begin(), root_lets_.end());
    s.readable = inputs_;
    s.readable.insert(s.readable.end(), writable_.begin(), writable_.end());
    DType idt = coin(15) ? DType::I64 : DType::I32;
    // Binds an iter var of extent `ext`; returns the binding.
    auto bind = [&](const Expr& ext, IterKind kind) -> Expr {
      int64_t n;
      bool c = is_const_int(ext, &n);
      if (outer && kind == IterKind::Spatial) {
        // Nested block: bind to an enclosing iter var with the same extent, if any.
        for (auto& [v, e] : outer->extents)
          if (v.dtype() == ext.dtype() &&
              ((c && is_const_int(e) && e.as<IntImmNode>()->value == n) || e.same_as(ext)))
            return v;
      }
      int r = rand(10);
      if (c && r == 0 && kind == IterKind::Spatial) return make_int(rand(static_cast<int>(n)), ext.dtype());
      if (c && r == 1 && size_param_.defined() && ext.dtype() == DType::I32) {
        // Symbolic offset: i in [n, n + c), binding i - n.
        Var l(loop_name(), DType::I32);
        loops.push_back({l, size_param_, make_int(n)});
        return l - size_param_;
      }
      if (c && r < 3) {  // offset loop: i in [lo, lo + n), binding i - lo
        int lo = range(1, 3);
        Var l(loop_name(), ext.dtype());
        loops.push_back({l, make_int(lo, ext.dtype()), make_int(n, ext.dtype())});
        return l - make_int(lo, ext.dtype());
      }
      if (c && r < 5 && n % 2 == 0 && n > 2) {  // split: i0 * f + i1
        int64_t f = n % 4 == 0 && coin(50) ? 4 : 2;
        Var l0(loop_name(), ext.dtype()), l1(loop_name(), ext.dtype());
        loops.push_back({l0, make_int(0, ext.dtype()), make_int(n / f, ext.dtype())});
        loops.push_back({l1, make_int(0, ext.dtype()), make_int(f, ext.dtype())});
        return l0 * make_int(f, ext.dtype()) + l1;
      }
      Var l(loop_name(), ext.dtype());
      loops.push_back({l, make_int(0, ext.dtype()), ext});
      return l;
    };
    std::vector<Expr> out_idx;
    for (size_t d = 0; d < out->ndim(); ++d) {
      Expr ext = out->shape[d];
      int64_t n;
      if (idt == DType::I64 && is_const_int(ext, &n)) ext = make_int(n, DType::I64);
      Var v(iter_name(), ext.dtype());
      blk.iter_vars.push_back({v, IterKind::Spatial, ext});
      bindings.push_back(bind(ext, IterKind::Spatial));
      out_idx.push_back(v);
      s.extents.emplace_back(v, ext);
      s.vars.push_back(v);
    }
    int nred = coin(40) ? range(1, 2) : 0;
    std::vector<Expr> red_vars;
    for (int i = 0; i < nred; ++i) {
      Expr ext = make_int(range(1, 5), idt);
      Var v(iter_name(), idt);
      blk.iter_vars.push_back({v, IterKind::Reduce, ext});
      bindings.push_back(bind(ext, IterKind::Reduce));
      s.extents.emplace_back(v, ext);
      s.vars.push_back(v);
    }
    if (coin(10)) {  // a scan or opaque var
      Expr ext = make_int(range(1, 4), idt);
      Var v(iter_name(), idt);
      blk.iter_vars.push_back({v, coin(50) ? IterKind::Scan : IterKind::Opaque, ext});
      bindings.push_back(bind(ext, IterKind::Scan));
      s.extents.emplace_back(v, ext);
      s.vars.push_back(v);
    }
    if (outer) {
      // The enclosing block's iter vars stay usable in bindings only: nothing to add.
    }
    if (coin(15)) blk.annotations["meta"] = std::to_string(rand(5));

    // Block-local alloc.
    if (coin(15)) {
      static const std::vector<std::string> scopes = {"global", "shared", "local"};
      Buffer t(buf_name(), pick(kValueTypes), {make_int(range(1, 4))}, pick(scopes));
      blk.allocs.push_back(t);
    }
    int edepth = range(1, 3);
    std::vector<Stmt> body;
    for (auto& t : blk.allocs) {
      body.push_back(make_store(t, {make_int(0)}, expr(t->dtype, edepth, s)));
      s.readable.push_back(t);
    }
    if (nred > 0) {
      if (coin(85)) {
        Scope si = s;  // init sees the spatial vars (the reduce vars are at 0 there)
        blk.init = make_store(out, out_idx, expr(out->dtype, edepth, si));
      }
      Expr cur = make_load(out, out_idx), v = expr(out->dtype, edepth, s);
      Expr upd;
      if (out->dtype == DType::Bool)
        upd = make_binary(coin(50) ? BinOp::Or : BinOp::And, cur, v);
      else {
        static const BinOp ops[] = {BinOp::Add, BinOp::Mul, BinOp::Max, BinOp::Min};
        upd = make_binary(pick(ops), cur, v);
      }
      body.push_back(make_store(out, out_idx, upd));
    } else if (depth > 0 && coin(20) && out->ndim() > 0) {
      // Inner loop nest with its own block reducing into the same element.
      body.push_back(nest(out, &s, depth - 1));
    } else {
      int k = rand(10);
      if (k < 2) {
        Expr c = expr(DType::Bool, 1, s);
        Stmt a = make_store(out, out_idx, expr(out->dtype, edepth, s));
        Stmt b = coin(50) ? make_store(out, out_idx, expr(out->dtype, edepth, s)) : Stmt();
        body.push_back(make_if(c, a, b));
      } else if (k < 3) {
        std::vector<Expr> args = {make_buffer_ptr(out, {}), expr(pick(kNumericTypes), 1, s)};
        if (!s.readable.empty()) {
          Buffer b = pick(s.readable);
          args.push_back(make_buffer_ptr(b, indices(b, s)));
        }
        body.push_back(make_evaluate(coin(50) ? "ext_fn" : "tirc.helper", args));
        body.push_back(make_store(out, out_idx, expr(out->dtype, edepth, s)));
      } else {
        body.push_back(make_store(out, out_idx, expr(out->dtype, edepth, s)));
      }
    }
    // A let statement scoping over the rest of the body.
    Stmt b = make_seq(body);
    if (coin(20)) {
      DType vt = pick(kValueTypes);
      Var x(let_name(), vt);
      Expr v = expr(vt, 2, s);
      s.vars.push_back(x);
      Stmt extra = make_store(out, out_idx, expr(out->dtype, 1, s));
      b = make_let_stmt(x, v, make_seq({b, extra}));
    }
    blk.body = b;
    block_regions(blk, &blk.reads, &blk.writes);
    Expr pred;
    if (coin(10) && !loops.empty()) {
      const LoopSpec& l = pick(loops);
      pred = make_binary(BinOp::LT, l.var, make_end(l.min, l.extent));
    }
    Stmt realize = make_block_realize(bindings, pred, make_block(std::move(blk)));
    return wrap_loops(loops, realize);
  }

  Buffer buffer(const std::string& nm, bool allow_sym) {
    std::vector<Expr> shape;
    int rank = range(coin(5) ? 0 : 1, 3);
    for (int d = 0; d < rank; ++d) {
      if (allow_sym && size_param_.defined() && coin(25))
        shape.push_back(size_param_);
      else
        shape.push_back(make_int(range(1, 6)));
    }
    return Buffer(nm, pick(kValueTypes), shape);
  }

  // Statements directly in the root block (no block of their own): loops whose vars index
  // the target, a call_extern, an if.
  Stmt opaque_nest(const Buffer& out) {
    Scope s;
    s.vars = scalar_params_;
    s.readable = inputs_;
    s.readable.insert(s.readable.end(), writable_.begin(), writable_.end());
    std::vector<LoopSpec> loops;
    std::vector<Expr> idx;
    for (size_t d = 0; d < out->ndim(); ++d) {
      Var l(loop_name(), out->shape[d].dtype());
      loops.push_back({l, make_int(0, out->shape[d].dtype()), out->shape[d]});
      idx.push_back(l);
      s.vars.push_back(l);
      s.extents.emplace_back(l, out->shape[d]);
    }
    std::vector<Stmt> body = {make_store(out, idx, expr(out->dtype, 2, s))};
    if (coin(40)) body.push_back(make_evaluate("trace", {make_buffer_ptr(out, idx), expr(DType::I32, 1, s)}));
    if (coin(40))
      body.push_back(make_if(expr(DType::Bool, 1, s), make_store(out, idx, expr(out->dtype, 1, s))));
    return wrap_loops(loops, make_seq(body));
  }

  // Function body: root block with allocs and one nest per writable buffer.
  Stmt root_body(std::vector<Buffer> allocs, std::vector<Buffer> targets) {
    std::vector<Stmt> stmts;
    root_lets_.clear();
    // Single iter-var-free block as the whole body (the printer makes the root explicit).
    if (coin(5) && !targets.empty() && targets[0]->ndim() > 0) {
      BlockNode blk;
      blk.name = block_name();
      Scope s;
      s.vars = scalar_params_;
      s.readable = inputs_;
      std::vector<Expr> idx(targets[0]->ndim(), make_int(0));
      for (size_t d = 0; d < idx.size(); ++d) idx[d] = make_int(0, targets[0]->shape[d].dtype());
      blk.body = make_store(targets[0], idx, expr(targets[0]->dtype, 2, s));
      block_regions(blk, &blk.reads, &blk.writes);
      stmts.push_back(make_block_realize({}, Expr(), make_block(std::move(blk))));
    } else {
      for (auto& t : targets) {
        Stmt n = nest(t, nullptr, 1);
        if (coin(10) && size_param_.defined())
          n = make_if(make_binary(BinOp::GT, size_param_, make_int(range(0, 3))), n,
                      coin(50) ? nest(t, nullptr, 0) : Stmt());
        stmts.push_back(n);
      }
    }
    if (coin(15) && !targets.empty()) stmts.push_back(opaque_nest(pick(targets)));
    Stmt body = make_seq(stmts);
    if (coin(15) && !scalar_params_.empty()) {
      // Loop-invariant let at the top, used by the blocks below.
      Var p = pick(scalar_params_);
      Var x(let_name(), p.dtype());
      Expr v = is_float(p.dtype()) || is_int(p.dtype()) ? p + literal(p.dtype()) : Expr(p);
      if (is_unsigned_int(p.dtype()) || p.dtype() == DType::Bool) v = p;
      root_lets_.push_back(x);
      std::vector<Stmt> again;
      for (auto& t : targets) again.push_back(nest(t, nullptr, 0));
      root_lets_.clear();
      body = make_seq({body, make_let_stmt(x, v, make_seq(again))});
    }
    BlockNode root;
    root.name = "root";
    root.allocs = std::move(allocs);
    root.body = body;
    if (coin(5)) root.annotations["root_note"] = "7";
    return make_block_realize({}, Expr(), make_block(std::move(root)));
  }

  Function function(const std::string& fname) {
    scalar_params_.clear();
    inputs_.clear();
    writable_.clear();
    block_names_.clear();
    size_param_ = Var();
    auto f = std::make_shared<FunctionNode>();
    f->name = fname;
    if (coin(40)) {
      size_param_ = Var(coin(80) ? "n" : "m");
      Param p;
      p.var = size_param_;
      if (coin(70)) p.range = ValueRange{1, static_cast<double>(range(2, 8))};
      f->params.push_back(p);
      scalar_params_.push_back(size_param_);
    }
    if (coin(30)) {
      Param p;
      p.var = Var(coin(80) ? "alpha" : "n", pick(kNumericTypes));
      if (coin(50)) p.range = is_float(p.var.dtype()) ? ValueRange{-0.5, 2.25} : ValueRange{0, 9};
      f->params.push_back(p);
      scalar_params_.push_back(p.var);
    }
    for (int i = 0, n = range(1, 3); i < n; ++i) {
      Param p;
      p.buffer = buffer(buf_name(), true);
      if (coin(30)) p.range = is_float(p.buffer->dtype) ? ValueRange{0.1, 4.0} : ValueRange{0, 9};
      if (coin(10) && is_float(p.buffer->dtype)) p.range = ValueRange{-1e-3, 1.5e10};
      inputs_.push_back(p.buffer);
      f->params.push_back(p);
    }
    if (coin(20) && !f->params.empty())
      std::swap(f->params.front(), f->params.back());  // order of kinds varies
    std::vector<Buffer> allocs;
    for (int i = 0, n = range(0, 2); i < n; ++i) {
      static const std::vector<std::string> scopes = {"global", "global", "shared", "local"};
      Buffer b = buffer(buf_name(), true);
      allocs.push_back(Buffer(b->name, b->dtype, b->shape, pick(scopes)));
    }
    for (int i = 0, n = coin(3) ? 0 : range(1, 2); i < n; ++i) f->outputs.push_back(buffer(buf_name(), true));
    writable_ = allocs;
    writable_.insert(writable_.end(), f->outputs.begin(), f->outputs.end());
    // Shapes may only use scalar params declared before: keep `n` first when it is used.
    if (size_param_.defined()) {
      auto it = std::find_if(f->params.begin(), f->params.end(),
                             [&](const Param& p) { return p.var.same_as(size_param_); });
      Param p = *it;
      f->params.erase(it);
      f->params.insert(f->params.begin(), p);
    }
    std::vector<Buffer> targets = allocs;
    targets.insert(targets.end(), f->outputs.begin(), f->outputs.end());
    f->body = root_body(allocs, targets);
    return f;
  }

  // ---- schedules and intrinsics ----
  ScheduleArg arg(ScheduleArg::Kind k, std::string text = "") {
    ScheduleArg a;
    a.kind = k;
    a.text = std::move(text);
    return a;
  }
  ScheduleArg int_arg(int64_t v) {
    ScheduleArg a = arg(ScheduleArg::Int);
    a.int_value = v;
    return a;
  }
  ScheduleArg float_arg() {
    ScheduleArg a = arg(ScheduleArg::Float);
    a.float_value = float_value(DType::F64);
    return a;
  }

  ScheduleItem schedule(const FunctionNode& f) {
    ScheduleItem s;
    s.func = f.name;
    std::vector<std::string> handles;
    auto fresh = [&]() {
      static const std::vector<std::string> pool = {"b", "l0", "l1", "i0", "i1", "init", "block", "c"};
      std::string n = pick(pool) + (coin(50) ? std::to_string(rand(4)) : "");
      handles.push_back(n);
      return n;
    };
    auto handle = [&]() {
      return handles.empty() ? arg(ScheduleArg::Ident, "b") : arg(ScheduleArg::Ident, pick(handles));
    };
    ScheduleInstr gb;
    gb.primitive = "get_block";
    gb.args = {arg(ScheduleArg::String, "C \"quoted\" \\ name")};
    gb.results = {fresh()};
    s.instrs.push_back(gb);
    for (int i = 0, n = range(1, 6); i < n; ++i) {
      ScheduleInstr in;
      switch (rand(8)) {
        case 0:
          in.primitive = "get_loops";
          in.args = {handle()};
          in.results = {fresh(), fresh()};
          break;
        case 1: {
          in.primitive = "split";
          ScheduleArg l = arg(ScheduleArg::List);
          l.list = {arg(ScheduleArg::Wildcard), int_arg(range(1, 16))};
          if (coin(50)) std::swap(l.list[0], l.list[1]);
          in.args = {handle(), l};
          in.results = {fresh(), fresh()};
          break;
        }
        case 2:
          in.primitive = coin(50) ? "reorder" : "fuse";
          in.args = {handle(), handle()};
          if (in.primitive == "fuse") in.results = {fresh()};
          break;
        case 3:
          in.primitive = pick(std::vector<std::string>{"parallel", "vectorize", "unroll"});
          in.args = {handle()};
          break;
        case 4: {
          in.primitive = "annotate";
          ScheduleArg v = coin(50) ? float_arg() : int_arg(static_cast<int64_t>(rng_() % 2000) - 1000);
          in.args = {handle(), arg(ScheduleArg::String, "key"), v};
          break;
        }
        case 5: {
          in.primitive = "compute_at";
          ScheduleArg kw = arg(ScheduleArg::Keyword, "preserve_unit_loops");
          kw.list = {int_arg(1)};
          in.args = {handle(), handle(), kw};
          break;
        }
        case 6:
          in.primitive = "cache_read";
          in.args = {handle(), int_arg(0), arg(ScheduleArg::String, "shared")};
          in.results = {fresh()};
          break;
        default: {
          in.primitive = "decompose_reduction";
          in.args = {handle(), handle()};
          in.results = {"init"};
          break;
        }
      }
      s.instrs.push_back(in);
    }
    return s;
  }

  IntrinItem intrin(const std::string& nm) {
    IntrinItem it;
    it.name = nm;
    for (int k = 0; k < 2; ++k) {
      scalar_params_.clear();
      inputs_.clear();
      writable_.clear();
      block_names_.clear();
      size_param_ = Var();
      auto f = std::make_shared<FunctionNode>();
      f->name = nm + (k ? ".impl" : ".desc");
      Buffer a("A", DType::F32, {make_int(4)}), b("B", DType::F32, {make_int(4)}),
          c("C", DType::F32, {make_int(1)});
      for (auto& x : {a, b, c}) {
        Param p;
        p.buffer = x;
        f->params.push_back(p);
      }
      inputs_ = {a, b};
      writable_ = {c};
      if (k == 0) {
        f->body = root_body({}, {c});
      } else {
        BlockNode root;
        root.name = "root";
        root.body = make_evaluate(
            "mma_impl", {make_buffer_ptr(a, {}), make_buffer_ptr(b, {make_int(0)}), make_buffer_ptr(c, {})});
        f->body = make_block_realize({}, Expr(), make_block(std::move(root)));
      }
      (k ? it.impl : it.desc) = f;
    }
    return it;
  }
};

}  // namespace

Module random_module(uint64_t seed, const RandomProgramOptions& opt) { return Gen(seed, opt).module(); }

}  // namespace tirc::testing

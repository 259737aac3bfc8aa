// IR -> closure tree (see interp/compile.h). The closures are the typed node templates
// below; the Compiler walks the IR once, resolving names to slots and deciding, per index,
// whether a run-time bounds check is needed (interval analysis over loop and iter var ranges).
#include "interp/compile.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <type_traits>
#include <unordered_set>

#include "ir/stmt.h"
#include "ir/visitor.h"

namespace tirc::interp {
namespace {

// ---------------------------------------------------------------- error messages (cold)

std::string idx_text(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}
std::string quoted_block(const Site* b) { return "block \"" + b->block + "\": "; }

}  // namespace

void site_error(const Site* site, const std::string& msg) {
  if (!site) throw Error(msg);
  if (site->loc.known())
    throw SourceError(site->loc.file, site->loc.line, site->loc.col, quoted_block(site) + msg);
  throw Error(quoted_block(site) + msg);
}

namespace {

[[noreturn, gnu::cold, gnu::noinline]] void oob_error(const Site* blk, const char* what, const BufInfo* b,
                                                      const std::vector<int64_t>& idx) {
  site_error(blk, std::string("out-of-bounds ") + what + " " + b->name + "[" + idx_text(idx) +
                      "]: " + b->name + " has shape [" + idx_text(b->shape) + "]");
}
// "B[1, 2]" for a flat offset into b.
std::string element_text(const BufInfo* b, int64_t off) {
  std::vector<int64_t> idx(b->shape.size());
  for (size_t d = 0; d < idx.size(); ++d) idx[d] = b->shape[d] ? (off / b->strides[d]) % b->shape[d] : 0;
  return b->name + "[" + idx_text(idx) + "]";
}
[[noreturn, gnu::cold, gnu::noinline]] void uninit_error(const Site* blk, const BufInfo* b, int64_t off) {
  site_error(
      blk, "read of uninitialised element " + element_text(b, off) + " of " + b->role + " buffer " + b->name);
}
// Two spatial iterations of one block touch the same element (see the writer tags in
// nodes.h): `prev` is the tag of the element, x.tag the current instance. Defined after BlockS.
[[noreturn, gnu::cold, gnu::noinline]] void conflict_error(const Ctx& x, const Site* blk, const BufInfo* b,
                                                           int64_t off, uint64_t prev, bool read);

// Checks of a load of a tracked element whose tag t differs from the current instance's.
inline void check_read(const Ctx& x, const Site* blk, const BufInfo* b, int64_t off, uint64_t t) {
  if (!t) uninit_error(blk, b, off);
  if (same_block_other_point(t, x.tag)) conflict_error(x, blk, b, off, t, true);
}
// Marks a tracked element as written by the current instance. Overwriting another
// iteration's element of an alloc is allowed: it is how TVM users write a scratch buffer shared
// by the iterations (each writes before it reads; reading another iteration's value is still
// caught by check_read). On an output the last writer would decide the result: a conflict.
inline void mark_write(const Ctx& x, uint64_t* tags, const Site* blk, const BufInfo* b, int64_t off) {
  uint64_t t = tags[off];
  if (same_block_other_point(t, x.tag) && std::strcmp(b->role, "alloc") != 0)
    conflict_error(x, blk, b, off, t, false);
  tags[off] = x.tag;
}
[[noreturn, gnu::cold, gnu::noinline]] void div0_error(const Site* blk, const char* op, int64_t a) {
  site_error(blk, "integer division by zero: " + std::string(op) + "(" + std::to_string(a) + ", 0)");
}

// ---------------------------------------------------------------- index forms

// An integer index: affine in registers (fast path: up to 8 terms, unrolled) or a general
// closure.
struct Index {
  static constexpr int kMaxTerms = 8;
  int64_t c = 0;
  int n = 0;
  int r[kMaxTerms] = {};
  int64_t k[kMaxTerms] = {};
  EP<int64_t> gen;
  inline int64_t ev(Ctx& x) const {
    if (gen) return gen->ev(x);
    const Val* g = x.regs;
    int64_t v = c;
    switch (n) {
      case 8: v += k[7] * g[r[7]].i; [[fallthrough]];
      case 7: v += k[6] * g[r[6]].i; [[fallthrough]];
      case 6: v += k[5] * g[r[5]].i; [[fallthrough]];
      case 5: v += k[4] * g[r[4]].i; [[fallthrough]];
      case 4: v += k[3] * g[r[3]].i; [[fallthrough]];
      case 3: v += k[2] * g[r[2]].i; [[fallthrough]];
      case 2: v += k[1] * g[r[1]].i; [[fallthrough]];
      case 1: v += k[0] * g[r[0]].i; [[fallthrough]];
      default: break;
    }
    return v;
  }
};

// ---------------------------------------------------------------- expression closures

template <class C>
struct ConstE final : E<C> {
  C v;
  explicit ConstE(C x) : v(x) {}
  C ev(Ctx&) const override { return v; }
};
template <class C>
struct VarE final : E<C> {
  int r;
  explicit VarE(int x) : r(x) {}
  C ev(Ctx& x) const override { return reg<C>(x.regs[r]); }
};
struct IndexE final : E<int64_t> {
  Index ix;
  int64_t ev(Ctx& x) const override { return ix.ev(x); }
};

template <DType D, bool kInit>
struct LoadFlat final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  int slot;
  Index off;
  const BufInfo* info;
  const Site* blk;
  C ev(Ctx& x) const override {
    int64_t o = off.ev(x);
    const BufState& b = x.bufs[slot];
    if constexpr (kInit)
      if (uint64_t t = b.tag[o]; t != x.tag) check_read(x, blk, info, o, t);
    return Tr<D>::ld(reinterpret_cast<const St*>(b.data)[o]);
  }
};

// Per-dimension indices with optional bounds checks. Shared by loads and stores.
struct Access {
  int slot = 0;
  std::vector<Index> idx;
  std::vector<char> check;
  const BufInfo* info = nullptr;
  const Site* blk = nullptr;
  inline int64_t offset(Ctx& x, const char* what) const {
    int64_t o = 0;
    const size_t n = idx.size();
    for (size_t d = 0; d < n; ++d) {
      int64_t v = idx[d].ev(x);
      if (check[d] && static_cast<uint64_t>(v) >= static_cast<uint64_t>(info->shape[d])) fail(x, what);
      o += v * info->strides[d];
    }
    return o;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail(Ctx& x, const char* what) const {
    std::vector<int64_t> v;
    for (auto& i : idx) v.push_back(i.ev(x));
    oob_error(blk, what, info, v);
  }
};

template <DType D>
struct LoadGen final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  Access a;
  C ev(Ctx& x) const override {
    int64_t o = a.offset(x, "load");
    const BufState& b = x.bufs[a.slot];
    if (b.tag)
      if (uint64_t t = b.tag[o]; t != x.tag) check_read(x, a.blk, a.info, o, t);
    return Tr<D>::ld(reinterpret_cast<const St*>(b.data)[o]);
  }
};

// The arithmetic of value-typed binary operators (blk: for the division-by-zero message).
template <DType D, BinOp OP>
inline typename Tr<D>::C arith(typename Tr<D>::C u, typename Tr<D>::C v, const Site* blk) {
  using C = typename Tr<D>::C;
  if constexpr (std::is_same_v<C, int64_t>) {
    if constexpr (OP == BinOp::Add)
      return Tr<D>::fix(add_wrap(u, v));
    else if constexpr (OP == BinOp::Sub)
      return Tr<D>::fix(sub_wrap(u, v));
    else if constexpr (OP == BinOp::Mul)
      return Tr<D>::fix(mul_wrap(u, v));
    else if constexpr (OP == BinOp::Div) {
      if (v == 0) div0_error(blk, "truncdiv", u);
      return Tr<D>::fix(truncdiv_int(u, v));
    } else if constexpr (OP == BinOp::FloorDiv) {
      if (v == 0) div0_error(blk, "floordiv", u);
      return Tr<D>::fix(floordiv_int(u, v));
    } else if constexpr (OP == BinOp::FloorMod) {
      if (v == 0) div0_error(blk, "floormod", u);
      return Tr<D>::fix(floormod_int(u, v));
    } else if constexpr (OP == BinOp::Min)
      return u < v ? u : v;
    else
      return u > v ? u : v;
  } else {
    (void)blk;
    if constexpr (OP == BinOp::Add)
      return Tr<D>::fix(u + v);
    else if constexpr (OP == BinOp::Sub)
      return Tr<D>::fix(u - v);
    else if constexpr (OP == BinOp::Mul)
      return Tr<D>::fix(u * v);
    else if constexpr (OP == BinOp::Div)
      return Tr<D>::fix(u / v);
    else if constexpr (OP == BinOp::FloorDiv)
      return Tr<D>::fix(floordiv_float(u, v));
    else if constexpr (OP == BinOp::FloorMod)
      return Tr<D>::fix(floormod_float(u, v));
    else if constexpr (OP == BinOp::Min)
      return min_float(u, v);
    else
      return max_float(u, v);
  }
}

template <DType D, BinOp OP>
struct Bin final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  EP<C> a, b;
  const Site* blk;
  C ev(Ctx& x) const override {
    C u = a->ev(x), v = b->ev(x);
    return arith<D, OP>(u, v, blk);
  }
};

// `A[..] * B[..]` with both accesses proven in bounds (flat affine offsets): the product of
// every matmul/conv reduction, without a closure per load. Loads are evaluated in operand
// order, with the same uninitialised-read checks as LoadFlat.
template <DType D, bool kIa, bool kIb>
struct MulLoads final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  int sa, sb;
  Index oa, ob;
  const BufInfo *ia, *ib;
  const Site* blk;
  C ev(Ctx& x) const override {
    int64_t pa = oa.ev(x);
    const BufState& a = x.bufs[sa];
    if constexpr (kIa)
      if (uint64_t t = a.tag[pa]; t != x.tag) check_read(x, blk, ia, pa, t);
    C u = Tr<D>::ld(reinterpret_cast<const St*>(a.data)[pa]);
    int64_t pb = ob.ev(x);
    const BufState& b = x.bufs[sb];
    if constexpr (kIb)
      if (uint64_t t = b.tag[pb]; t != x.tag) check_read(x, blk, ib, pb, t);
    return Tr<D>::fix(u * Tr<D>::ld(reinterpret_cast<const St*>(b.data)[pb]));
  }
};

template <class C, BinOp OP>
struct Cmp final : E<int64_t> {
  EP<C> a, b;
  int64_t ev(Ctx& x) const override {
    C u = a->ev(x), v = b->ev(x);
    if constexpr (OP == BinOp::EQ)
      return u == v;
    else if constexpr (OP == BinOp::NE)
      return u != v;
    else if constexpr (OP == BinOp::LT)
      return u < v;
    else if constexpr (OP == BinOp::LE)
      return u <= v;
    else if constexpr (OP == BinOp::GT)
      return u > v;
    else
      return u >= v;
  }
};

template <BinOp OP>
struct Logic final : E<int64_t> {
  EP<int64_t> a, b;
  int64_t ev(Ctx& x) const override {
    // Both sides are evaluated (LANGUAGE.md): no short circuit.
    int64_t u = a->ev(x), v = b->ev(x);
    if constexpr (OP == BinOp::And)
      return (u != 0) & (v != 0);
    else
      return (u != 0) | (v != 0);
  }
};

template <DType D>
struct Neg final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  EP<C> a;
  C ev(Ctx& x) const override {
    if constexpr (std::is_same_v<C, int64_t>)
      return Tr<D>::fix(neg_wrap(a->ev(x)));
    else
      return -a->ev(x);
  }
};
struct Not final : E<int64_t> {
  EP<int64_t> a;
  int64_t ev(Ctx& x) const override { return a->ev(x) == 0; }
};

template <DType D, Intrinsic F>
struct Call1 final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  EP<C> a;
  C ev(Ctx& x) const override {
    C u = a->ev(x);
    if constexpr (std::is_same_v<C, int64_t>) {
      if constexpr (F == Intrinsic::Abs)
        return Tr<D>::fix(u < 0 ? neg_wrap(u) : u);
      else if constexpr (F == Intrinsic::Sign)
        return u > 0 ? 1 : (u < 0 ? Tr<D>::fix(-1) : 0);
      else
        return u;  // floor/ceil/round/trunc of an integer
    } else {
      C r;
      if constexpr (F == Intrinsic::Exp)
        r = std::exp(u);
      else if constexpr (F == Intrinsic::Log)
        r = std::log(u);
      else if constexpr (F == Intrinsic::Log2)
        r = std::log2(u);
      else if constexpr (F == Intrinsic::Log10)
        r = std::log10(u);
      else if constexpr (F == Intrinsic::Log1p)
        r = std::log1p(u);
      else if constexpr (F == Intrinsic::Expm1)
        r = std::expm1(u);
      else if constexpr (F == Intrinsic::Sqrt)
        r = std::sqrt(u);
      else if constexpr (F == Intrinsic::Rsqrt)
        r = C(1) / std::sqrt(u);
      else if constexpr (F == Intrinsic::Sin)
        r = std::sin(u);
      else if constexpr (F == Intrinsic::Cos)
        r = std::cos(u);
      else if constexpr (F == Intrinsic::Tan)
        r = std::tan(u);
      else if constexpr (F == Intrinsic::Tanh)
        r = std::tanh(u);
      else if constexpr (F == Intrinsic::Sigmoid)
        r = C(1) / (C(1) + std::exp(-u));
      else if constexpr (F == Intrinsic::Erf)
        r = std::erf(u);
      else if constexpr (F == Intrinsic::Abs)
        r = std::fabs(u);
      else if constexpr (F == Intrinsic::Floor)
        r = std::floor(u);
      else if constexpr (F == Intrinsic::Ceil)
        r = std::ceil(u);
      else if constexpr (F == Intrinsic::Round)
        r = round_even(u);
      else if constexpr (F == Intrinsic::Trunc)
        r = std::trunc(u);
      else
        r = sign_float(u);
      return Tr<D>::fix(r);
    }
  }
};

template <DType D, Intrinsic F>
struct Call2 final : E<typename Tr<D>::C> {
  using C = typename Tr<D>::C;
  EP<C> a, b;
  const Site* blk;
  C ev(Ctx& x) const override {
    C u = a->ev(x), v = b->ev(x);
    if constexpr (std::is_same_v<C, int64_t>) {
      if constexpr (F == Intrinsic::Pow) {
        if (v < 0)
          site_error(blk, "pow(" + std::to_string(u) + ", " + std::to_string(v) +
                              "): integers to negative integer powers are not allowed");
        return Tr<D>::fix(pow_int(u, v));
      } else if constexpr (F == Intrinsic::TruncDiv) {
        if (v == 0) div0_error(blk, "truncdiv", u);
        return Tr<D>::fix(truncdiv_int(u, v));
      } else {
        if (v == 0) div0_error(blk, "truncmod", u);
        return Tr<D>::fix(truncmod_int(u, v));
      }
    } else {
      if constexpr (F == Intrinsic::Pow) return Tr<D>::fix(std::pow(u, v));
      // Two operations, each rounded to the dtype (as NumPy's np.trunc(a / b)).
      else if constexpr (F == Intrinsic::TruncDiv)
        return Tr<D>::fix(std::trunc(Tr<D>::fix(u / v)));
      else
        return Tr<D>::fix(std::fmod(u, v));
    }
  }
};

// Value conversion of casts (see scalar.h for the float -> int rule).
template <DType To, class C1>
inline typename Tr<To>::C convert(C1 x) {
  using C2 = typename Tr<To>::C;
  if constexpr (std::is_same_v<C1, int64_t>) {
    if constexpr (std::is_same_v<C2, int64_t>)
      return wrap_int(To, x);
    else if constexpr (To == DType::F32)
      return static_cast<float>(x);
    else if constexpr (To == DType::F64)
      return static_cast<double>(x);
    else if constexpr (To == DType::F16)
      return double_to_f16(static_cast<double>(x));
    else
      return double_to_bf16(static_cast<double>(x));
  } else if constexpr (std::is_same_v<C1, float>) {
    if constexpr (std::is_same_v<C2, int64_t>)
      return float_to_int(To, x);
    else if constexpr (To == DType::F32)
      return x;
    else if constexpr (To == DType::F64)
      return static_cast<double>(x);
    else if constexpr (To == DType::F16)
      return round_f16(x);
    else
      return round_bf16(x);
  } else {
    if constexpr (std::is_same_v<C2, int64_t>)
      return float_to_int(To, x);
    else if constexpr (To == DType::F32)
      return static_cast<float>(x);
    else if constexpr (To == DType::F64)
      return x;
    else if constexpr (To == DType::F16)
      return double_to_f16(x);
    else
      return double_to_bf16(x);
  }
}

template <class C1, DType To>
struct CastE final : E<typename Tr<To>::C> {
  EP<C1> a;
  typename Tr<To>::C ev(Ctx& x) const override { return convert<To>(a->ev(x)); }
};

template <class C>
struct SelectE final : E<C> {
  EP<int64_t> c;
  EP<C> a, b;
  C ev(Ctx& x) const override {
    int64_t k = c->ev(x);
    C u = a->ev(x), v = b->ev(x);
    return k ? u : v;
  }
};
template <class C>
struct IteE final : E<C> {
  EP<int64_t> c;
  EP<C> a, b;
  int id = 0;  // counted site (nodes.h Ctx::site_counts)
  C ev(Ctx& x) const override {
    if (c->ev(x)) {
      ++x.site_counts[2 * id];
      return a->ev(x);
    }
    ++x.site_counts[2 * id + 1];
    return b->ev(x);
  }
};

struct Setter {
  virtual ~Setter() = default;
  virtual void set(Ctx& x) const = 0;
};
template <class C>
struct SetReg final : Setter {
  int r;
  EP<C> v;
  void set(Ctx& x) const override { reg<C>(x.regs[r]) = v->ev(x); }
};

template <class C>
struct LetE final : E<C> {
  std::unique_ptr<Setter> s;
  EP<C> body;
  C ev(Ctx& x) const override {
    s->set(x);
    return body->ev(x);
  }
};

// ---------------------------------------------------------------- statement closures

template <DType D, bool kInit>
struct StoreFlat final : S {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  int slot;
  Index off;
  EP<C> v;
  const BufInfo* info;
  const Site* blk;
  void run(Ctx& x) const override {
    C val = v->ev(x);
    int64_t o = off.ev(x);
    BufState& b = x.bufs[slot];
    if constexpr (kInit) mark_write(x, b.tag, blk, info, o);
    reinterpret_cast<St*>(b.data)[o] = Tr<D>::st(val);
  }
};

// `A[i] = A[i] OP rhs` with A[i] proven in bounds: one offset computation, no load closure
// (the reduction update of every reduce block). Same order of evaluation and checks as the
// unfused Store(Load OP rhs).
template <DType D, bool kInit, BinOp OP>
struct StoreAcc final : S {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  int slot;
  Index off;
  EP<C> rhs;
  const BufInfo* info;
  const Site* blk;
  void run(Ctx& x) const override {
    int64_t o = off.ev(x);
    BufState& b = x.bufs[slot];
    if constexpr (kInit)
      if (uint64_t t = b.tag[o]; t != x.tag) check_read(x, blk, info, o, t);
    St* p = reinterpret_cast<St*>(b.data) + o;
    C cur = Tr<D>::ld(*p);
    C v = rhs->ev(x);
    *p = Tr<D>::st(arith<D, OP>(cur, v, blk));
    if constexpr (kInit) b.tag[o] = x.tag;
  }
};

template <DType D>
struct StoreGen final : S {
  using C = typename Tr<D>::C;
  using St = typename Tr<D>::St;
  Access a;
  EP<C> v;
  void run(Ctx& x) const override {
    C val = v->ev(x);
    int64_t o = a.offset(x, "store");
    BufState& b = x.bufs[a.slot];
    if (b.tag) mark_write(x, b.tag, a.blk, a.info, o);
    reinterpret_cast<St*>(b.data)[o] = Tr<D>::st(val);
  }
};

struct SeqS final : S {
  std::vector<SP> v;
  void run(Ctx& x) const override {
    for (auto& s : v) s->run(x);
  }
};
struct ForConstS final : S {
  int r;
  int64_t lo, hi;
  SP body;
  int id = 0;  // counted site: entries and iterations
  void run(Ctx& x) const override {
    ++x.site_counts[2 * id];
    x.site_counts[2 * id + 1] += static_cast<uint64_t>(std::max<int64_t>(hi - lo, 0));
    Val& rv = x.regs[r];
    const S* b = body.get();
    for (int64_t i = lo; i < hi; ++i) {
      rv.i = i;
      b->run(x);
    }
  }
};
struct ForS final : S {
  int r;
  EP<int64_t> min, ext;
  SP body;
  int id = 0;  // counted site: entries and iterations
  void run(Ctx& x) const override {
    int64_t lo = min->ev(x), n = ext->ev(x);
    ++x.site_counts[2 * id];
    x.site_counts[2 * id + 1] += static_cast<uint64_t>(std::max<int64_t>(n, 0));
    for (int64_t i = lo; i < lo + n; ++i) {
      x.regs[r].i = i;
      body->run(x);
    }
  }
};
struct IfS final : S {
  EP<int64_t> c;
  SP a, b;
  int id = 0;  // counted site: then / else executions
  void run(Ctx& x) const override {
    if (c->ev(x)) {
      ++x.site_counts[2 * id];
      a->run(x);
    } else {
      ++x.site_counts[2 * id + 1];
      if (b) b->run(x);
    }
  }
};
struct LetS final : S {
  std::unique_ptr<Setter> s;
  SP body;
  void run(Ctx& x) const override {
    s->set(x);
    body->run(x);
  }
};
struct EvalS final : S {
  std::string name;
  const Site* blk;
  void run(Ctx&) const override {
    site_error(blk, "call_extern(\"" + name + "\") cannot be run by the interpreter");
  }
};
struct NopS final : S {
  void run(Ctx&) const override {}
};

struct BlockS final : S {
  struct Bind {
    int r;
    Index v;
    int64_t ext_const = 0;
    EP<int64_t> ext;  // when the extent is not a constant
    bool check = true;
    std::string name;
  };
  const Site* blk;
  int id;
  EP<int64_t> pred;
  std::vector<Bind> binds;
  std::vector<int> reduce_regs;
  std::vector<std::pair<int, int64_t>> allocs;  // slot, numel: writer tags reset per execution
  SP init, body;
  // Writer tag of this block's instances (nodes.h): base_tag | spatial point, the point
  // mixed-radix over `spatial` (empty: every instance has point 0 and nothing conflicts).
  struct Spatial {
    int r;
    int64_t ext;
    std::string name;
  };
  uint64_t base_tag = 0;
  std::vector<Spatial> spatial;
  bool decodable = true;  // the point determines the iter var values (no wrap, constant extents)

  void run(Ctx& x) const override { exec(x); }
  // "vi = 0, vj = 1" for a point of this block.
  std::string point_text(uint64_t p) const {
    if (!decodable) return "another iteration";
    std::vector<int64_t> v(spatial.size());
    for (size_t k = spatial.size(); k-- > 0;) {
      v[k] = static_cast<int64_t>(p % static_cast<uint64_t>(spatial[k].ext));
      p /= static_cast<uint64_t>(spatial[k].ext);
    }
    std::string s;
    for (size_t k = 0; k < spatial.size(); ++k)
      s += (k ? ", " : "") + spatial[k].name + " = " + std::to_string(v[k]);
    return s;
  }
  inline void exec(Ctx& x) const {
    if (pred && !pred->ev(x)) return;
    for (const Bind& b : binds) {
      int64_t v = b.v.ev(x);
      if (b.check) {
        int64_t e = b.ext ? b.ext->ev(x) : b.ext_const;
        if (v < 0 || v >= e) bind_error(b, v, e);
      }
      x.regs[b.r].i = v;
    }
    ++x.block_counts[id];
    for (auto& [slot, n] : allocs)
      std::memset(x.bufs[slot].tag, 0, static_cast<size_t>(n) * sizeof(uint64_t));
    const uint64_t outer_tag = x.tag;
    const void* outer_block = x.block;
    uint64_t p = 0;
    for (const Spatial& s : spatial)
      p = p * static_cast<uint64_t>(s.ext) + static_cast<uint64_t>(x.regs[s.r].i);
    x.tag = base_tag | (p & kTagPointMask);
    x.block = this;
    if (init) {
      bool first = true;
      for (int r : reduce_regs) first &= x.regs[r].i == 0;
      if (first) {
        ++x.init_counts[id];
        init->run(x);
      }
    }
    body->run(x);
    x.tag = outer_tag;
    x.block = outer_block;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bind_error(const Bind& b, int64_t v, int64_t e) const {
    site_error(blk, "binding of iter var " + b.name + " = " + std::to_string(v) +
                        " is outside its domain [0, " + std::to_string(e) + ")");
  }
};

void conflict_error(const Ctx& x, const Site* blk, const BufInfo* b, int64_t off, uint64_t prev, bool read) {
  auto* bs = static_cast<const BlockS*>(x.block);
  std::string cur = "(" + bs->point_text(x.tag & kTagPointMask) + ")";
  std::string earlier = "(" + bs->point_text(prev & kTagPointMask) + ")";
  if (read)
    site_error(blk, "spatial iterations conflict: " + cur + " reads " + element_text(b, off) +
                        ", written by " + earlier +
                        " (iterations of spatial iter vars must be independent; use a scan iter var)");
  site_error(blk, "spatial iterations conflict: " + earlier + " and " + cur + " both write " +
                      element_text(b, off) + " (use a reduce iter var for a reduction)");
}

// A constant loop whose body is a block: the block runs without a virtual call.
struct ForBlockS final : S {
  int r;
  int64_t lo, hi;
  SP owner;
  const BlockS* b;
  int id = 0;  // counted site: entries and iterations
  void run(Ctx& x) const override {
    ++x.site_counts[2 * id];
    x.site_counts[2 * id + 1] += static_cast<uint64_t>(std::max<int64_t>(hi - lo, 0));
    Val& rv = x.regs[r];
    for (int64_t i = lo; i < hi; ++i) {
      rv.i = i;
      b->exec(x);
    }
  }
};

// ---------------------------------------------------------------- dtype dispatch

template <class F>
decltype(auto) with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(std::integral_constant<DType, DType::Bool>{});
    case DType::I8: return f(std::integral_constant<DType, DType::I8>{});
    case DType::I16: return f(std::integral_constant<DType, DType::I16>{});
    case DType::I32: return f(std::integral_constant<DType, DType::I32>{});
    case DType::I64: return f(std::integral_constant<DType, DType::I64>{});
    case DType::U8: return f(std::integral_constant<DType, DType::U8>{});
    case DType::U16: return f(std::integral_constant<DType, DType::U16>{});
    case DType::U32: return f(std::integral_constant<DType, DType::U32>{});
    case DType::F16: return f(std::integral_constant<DType, DType::F16>{});
    case DType::BF16: return f(std::integral_constant<DType, DType::BF16>{});
    case DType::F32: return f(std::integral_constant<DType, DType::F32>{});
    case DType::F64: return f(std::integral_constant<DType, DType::F64>{});
    default: break;
  }
  throw Error("the interpreter has no values of dtype " + std::string(dtype_name(t)));
}

// Typed closure of any compute type.
struct AnyE {
  DType dt = DType::I32;
  EP<int64_t> i;
  EP<float> f;
  EP<double> d;
};
template <class C>
AnyE wrap(DType dt, EP<C> p) {
  AnyE r;
  r.dt = dt;
  if constexpr (std::is_same_v<C, int64_t>)
    r.i = std::move(p);
  else if constexpr (std::is_same_v<C, float>)
    r.f = std::move(p);
  else
    r.d = std::move(p);
  return r;
}
template <class C, class Node>
AnyE wrapn(DType dt, Node* n) {
  return wrap<C>(dt, EP<C>(n));
}
// Calls f with a value of the compute type of dtype t (int64_t, float or double).
template <class F>
decltype(auto) by_cat(DType t, F&& f) {
  if (t == DType::F64) return f(double{});
  if (is_float(t)) return f(float{});
  return f(int64_t{});
}

// ---------------------------------------------------------------- intervals

constexpr int64_t kBig = int64_t(1) << 62;
struct Iv {
  int64_t lo = -kBig, hi = kBig;
  bool bounded() const { return lo > -kBig && hi < kBig; }
};
int64_t sat(__int128 v) { return v < -kBig ? -kBig : (v > kBig ? kBig : static_cast<int64_t>(v)); }

struct Aff {
  int64_t c = 0;
  std::vector<std::pair<int, int64_t>> t;  // (register, coefficient)
  void add(const Aff& o, int64_t s) {
    c += s * o.c;
    for (auto& [r, k] : o.t) {
      auto it = std::find_if(t.begin(), t.end(), [&](auto& p) { return p.first == r; });
      if (it == t.end())
        t.push_back({r, s * k});
      else
        it->second += s * k;
    }
    t.erase(std::remove_if(t.begin(), t.end(), [](auto& p) { return p.second == 0; }), t.end());
  }
};

// ---------------------------------------------------------------- the compiler

class Compiler {
 public:
  Compiler(const FunctionNode& f, bool f64, const ScalarEnv& env) : f_(f), f64_(f64), env_(env) {}

  CompiledFunc run() {
    register_buffers();
    if (auto* r = f_.body.as<BlockRealizeNode>()) root_block_ = r->block;
    out_.root = stmt(f_.body);
    out_.nregs = nregs_;
    return std::move(out_);
  }

 private:
  const FunctionNode& f_;
  bool f64_;
  const ScalarEnv& env_;
  std::unordered_map<const VarNode*, int> live_;
  CompiledFunc out_;
  int nregs_ = 0;
  std::unordered_map<const VarNode*, int> regs_;
  std::unordered_map<const VarNode*, Iv> ivs_;
  std::unordered_map<const BufferNode*, int> slots_;
  const Site* blk_ = nullptr;
  Block root_block_;

  // A new counted site for IR node `node` (its id in Ctx::site_counts).
  int counted(const void* node) {
    out_.counted.push_back(node);
    return static_cast<int>(out_.counted.size()) - 1;
  }

  const Site* new_site(const std::string& block, const SourceLoc& loc) {
    out_.sites.push_back(std::make_unique<Site>(Site{block, loc}));
    return out_.sites.back().get();
  }

  DType eff(DType t) const { return f64_ && is_float(t) ? DType::F64 : t; }

  // ---- buffers ----
  int add_buffer(const Buffer& b, const char* role, bool track) {
    if (slots_.count(b.get())) throw Error("buffer " + b->name + " is declared twice in function " + f_.name);
    auto info = std::make_unique<BufInfo>();
    info->name = b->name;
    info->role = role;
    info->dtype = eff(b->dtype);
    for (auto& e : b->shape) {
      int64_t v;
      try {
        v = eval_int_expr(e, env_);
      } catch (const Error& err) {
        throw Error("shape of buffer " + b->name + ": " + err.what());
      }
      if (v < 0) throw Error("buffer " + b->name + " has a negative extent " + std::to_string(v));
      info->shape.push_back(v);
    }
    info->strides.assign(info->shape.size(), 1);
    for (int d = static_cast<int>(info->shape.size()) - 2; d >= 0; --d)
      info->strides[d] = info->strides[d + 1] * info->shape[d + 1];
    info->numel = 1;
    for (auto s : info->shape) info->numel *= s;
    info->track_init = track;
    int slot = static_cast<int>(out_.bufs.size());
    slots_[b.get()] = slot;
    out_.bufs.push_back(std::move(info));
    return slot;
  }

  void register_buffers() {
    for (size_t i = 0; i < f_.params.size(); ++i)
      if (f_.params[i].is_buffer()) {
        int s = add_buffer(f_.params[i].buffer, "input", false);
        out_.bufs[s]->param_index = static_cast<int>(i);
      }
    for (size_t i = 0; i < f_.outputs.size(); ++i) {
      int s = add_buffer(f_.outputs[i], "output", true);
      out_.bufs[s]->param_index = static_cast<int>(i);
    }
    // Every alloc of every block gets a slot up front, so closures can point at BufInfo.
    struct Collect : IRVisitor {
      Compiler* c;
      bool root = true;
      void visit_block(const BlockNode* n) override {
        for (auto& b : n->allocs) {
          auto it = c->slots_.find(b.get());
          // The same alloc buffer in several blocks (copied subtrees) shares one slot: each
          // execution starts it fresh anyway.
          if (it != c->slots_.end() && std::string(c->out_.bufs[it->second]->role) == "alloc") {
            c->out_.bufs[it->second]->block_local |= !root;
            continue;
          }
          int s;
          try {
            s = c->add_buffer(b, "alloc", true);
          } catch (const SourceError&) {
            throw;
          } catch (const Error& e) {
            // A bad size from scalar parameters (negative extent): point at the block, or at
            // the function for its own allocs.
            const SourceLoc& at = n->loc.known() || !root ? n->loc : c->f_.loc;
            if (!at.known()) throw;
            throw SourceError(at.file, at.line, at.col, "block \"" + n->name + "\": alloc " + e.what());
          }
          c->out_.bufs[s]->block_local = !root;
        }
        root = false;
        IRVisitor::visit_block(n);
      }
      void visit_store(const StoreNode* n) override {
        auto it = c->slots_.find(n->buffer.get());
        if (it != c->slots_.end()) c->out_.bufs[it->second]->written = true;
        IRVisitor::visit_store(n);
      }
    } col;
    col.c = this;
    col.visit(f_.body);
  }

  int slot_of(const Buffer& b) {
    auto it = slots_.find(b.get());
    if (it == slots_.end())
      throw Error("buffer " + b->name + " is not a parameter, output or alloc of function " + f_.name);
    return it->second;
  }

  // A variable is live from its binder to the end of the binder's scope; registers outlive
  // scopes (a Var bound again reuses its register), so a use outside every binder of its Var
  // (ill-scoped IR built in memory) would read a stale value: it is an error instead.
  bool live(const VarNode* v) const {
    auto it = live_.find(v);
    return it != live_.end() && it->second > 0;
  }
  void leave(const VarNode* v) { --live_[v]; }

  int bind_reg(const Var& v) {
    ++live_[v.get()];
    auto it = regs_.find(v.get());
    if (it != regs_.end()) return it->second;
    regs_[v.get()] = nregs_;
    return nregs_++;
  }

  // ---- intervals and affine forms ----
  static bool fits(const Iv& iv, DType t) {
    if (!is_int(t) && !is_bool(t)) return false;
    return iv.lo >= int_min_of(t) && iv.hi <= int_max_of(t);
  }

  Iv iv(const Expr& e) {
    Iv r = iv_raw(e);
    if (!fits(r, e.dtype())) return Iv{};
    return r;
  }
  Iv iv_raw(const Expr& e) {
    if (auto* n = e.as<IntImmNode>()) return {n->value, n->value};
    if (auto* n = e.as<VarNode>()) {
      auto s = env_.find(n);
      if (s != env_.end() && !is_float(n->dtype)) return {s->second.i, s->second.i};
      auto it = ivs_.find(n);
      if (it != ivs_.end()) return it->second;
      return {};
    }
    if (auto* n = e.as<BinaryNode>()) {
      if (!is_int(n->dtype)) return {};
      Iv a = iv(n->a), b = iv(n->b);
      switch (n->op) {
        case BinOp::Add: return {sat(__int128(a.lo) + b.lo), sat(__int128(a.hi) + b.hi)};
        case BinOp::Sub: return {sat(__int128(a.lo) - b.hi), sat(__int128(a.hi) - b.lo)};
        case BinOp::Mul: {
          __int128 c[4] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                           __int128(a.hi) * b.hi};
          return {sat(*std::min_element(c, c + 4)), sat(*std::max_element(c, c + 4))};
        }
        case BinOp::FloorDiv:
          if (b.lo == b.hi && b.lo > 0 && a.bounded())
            return {floordiv_int(a.lo, b.lo), floordiv_int(a.hi, b.lo)};
          return {};
        case BinOp::FloorMod:
          if (b.lo == b.hi && b.lo > 0) {
            if (a.lo >= 0 && a.hi < b.lo) return a;
            return {0, b.lo - 1};
          }
          return {};
        case BinOp::Min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
        case BinOp::Max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
        default: return {};
      }
    }
    if (auto* n = as_select_like(e)) {
      Iv a = iv(n->t), b = iv(n->f);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    if (auto* n = e.as<CastNode>()) {
      if (is_int(n->value.dtype())) return iv(n->value);
      return {};
    }
    if (auto* n = e.as<UnaryNode>()) {
      if (n->op == UnOp::Neg && is_int(n->dtype)) {
        Iv a = iv(n->a);
        return {sat(-__int128(a.hi)), sat(-__int128(a.lo))};
      }
    }
    return {};
  }

  bool affine(const Expr& e, Aff* out) {
    if (auto* n = e.as<IntImmNode>()) {
      out->c = n->value;
      return true;
    }
    if (auto* n = e.as<VarNode>()) {
      auto s = env_.find(n);
      if (s != env_.end()) {
        if (is_float(n->dtype)) return false;
        out->c = s->second.i;
        return true;
      }
      auto it = regs_.find(n);
      if (it == regs_.end() || !live(n)) return false;
      out->t.push_back({it->second, 1});
      return true;
    }
    if (auto* n = e.as<BinaryNode>()) {
      if (!is_int(n->dtype)) return false;
      Aff a, b;
      if (n->op == BinOp::Add || n->op == BinOp::Sub) {
        if (!affine(n->a, &a) || !affine(n->b, &b)) return false;
        *out = a;
        out->add(b, n->op == BinOp::Add ? 1 : -1);
        return true;
      }
      if (n->op == BinOp::Mul) {
        if (!affine(n->a, &a) || !affine(n->b, &b)) return false;
        if (!a.t.empty() && !b.t.empty()) return false;
        if (a.t.empty()) std::swap(a, b);
        Aff r;
        r.add(a, b.c);
        *out = r;
        return true;
      }
    }
    if (auto* n = e.as<CastNode>()) {
      if (is_int(n->dtype) && is_int(n->value.dtype()) && fits(iv(n->value), n->dtype))
        return affine(n->value, out);
    }
    return false;
  }

  // An integer index closure; affine when possible. The expression's value must not wrap
  // for the affine form to be exact: guaranteed when its interval fits its dtype.
  Index index(const Expr& e) {
    Index ix;
    Aff a;
    if (affine(e, &a) && a.t.size() <= Index::kMaxTerms && fits(iv(e), e.dtype())) {
      ix.c = a.c;
      ix.n = static_cast<int>(a.t.size());
      for (int t = 0; t < ix.n; ++t) {
        ix.r[t] = a.t[t].first;
        ix.k[t] = a.t[t].second;
      }
      return ix;
    }
    ix.gen = cx<int64_t>(e);
    return ix;
  }

  // ---- expressions ----
  template <class C>
  EP<C> cx(const Expr& e) {
    AnyE a = any(e);
    if constexpr (std::is_same_v<C, int64_t>) {
      if (a.i) return std::move(a.i);
    } else if constexpr (std::is_same_v<C, float>) {
      if (a.f) return std::move(a.f);
    } else {
      if (a.d) return std::move(a.d);
    }
    site_error(blk_, "expression of dtype " + std::string(dtype_name(e.dtype())) +
                         " used where another type is expected");
  }

  AnyE constant(DType t, int64_t iv, double dv, bool is_f) {
    t = eff(t);
    return by_cat(t, [&](auto c) -> AnyE {
      using C = decltype(c);
      C v;
      if constexpr (std::is_same_v<C, int64_t>)
        v = is_f ? float_to_int(t, dv) : wrap_int(t, iv);
      else {
        double d = is_f ? dv : static_cast<double>(iv);
        if (t == DType::F16)
          v = double_to_f16(d);
        else if (t == DType::BF16)
          v = double_to_bf16(d);
        else
          v = static_cast<C>(d);
      }
      return wrapn<C>(t, new ConstE<C>(v));
    });
  }

  AnyE any(const Expr& e) {
    if (!e.defined()) site_error(blk_, "undefined expression");
    switch (e.kind()) {
      case ExprKind::IntImm: return constant(e.dtype(), e.as<IntImmNode>()->value, 0, false);
      case ExprKind::FloatImm: return constant(e.dtype(), 0, e.as<FloatImmNode>()->value, true);
      case ExprKind::Var: {
        auto* n = e.as<VarNode>();
        auto s = env_.find(n);
        if (s != env_.end()) return constant(n->dtype, s->second.i, s->second.d, is_float(n->dtype));
        auto it = regs_.find(n);
        if (it == regs_.end() || !live(n)) site_error(blk_, "unbound variable " + n->name);
        DType t = eff(n->dtype);
        return by_cat(t, [&](auto c) -> AnyE {
          using C = decltype(c);
          return wrapn<C>(t, new VarE<C>(it->second));
        });
      }
      case ExprKind::Load: return load(e.as<LoadNode>());
      case ExprKind::Binary: return binary(e.as<BinaryNode>());
      case ExprKind::Unary: {
        auto* n = e.as<UnaryNode>();
        if (n->op == UnOp::Not) {
          auto* p = new Not;
          p->a = cx<int64_t>(n->a);
          return wrapn<int64_t>(DType::Bool, p);
        }
        DType t = eff(n->a.dtype());
        return with_dtype(t, [&](auto dt) -> AnyE {
          constexpr DType D = decltype(dt)::value;
          using C = typename Tr<D>::C;
          auto* p = new Neg<D>;
          p->a = cx<C>(n->a);
          return wrapn<C>(D, p);
        });
      }
      case ExprKind::Cast: {
        auto* n = e.as<CastNode>();
        DType to = eff(n->dtype);
        AnyE src = any(n->value);
        return with_dtype(to, [&](auto dt) -> AnyE {
          constexpr DType D = decltype(dt)::value;
          using C2 = typename Tr<D>::C;
          if (src.i) {
            auto* p = new CastE<int64_t, D>;
            p->a = std::move(src.i);
            return wrapn<C2>(D, p);
          }
          if (src.f) {
            auto* p = new CastE<float, D>;
            p->a = std::move(src.f);
            return wrapn<C2>(D, p);
          }
          auto* p = new CastE<double, D>;
          p->a = std::move(src.d);
          return wrapn<C2>(D, p);
        });
      }
      case ExprKind::Call: return call(e.as<CallNode>());
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        bool ite = e.kind() == ExprKind::IfThenElse;
        DType t = eff(n->t.dtype());
        if (eff(n->f.dtype()) != t)
          site_error(blk_, "select arms have different dtypes " + std::string(dtype_name(n->t.dtype())) +
                               " and " + std::string(dtype_name(n->f.dtype())));
        return by_cat(t, [&](auto c) -> AnyE {
          using C = decltype(c);
          if (ite) {
            auto* p = new IteE<C>;
            p->id = counted(e.get());
            p->c = cx<int64_t>(n->cond);
            p->a = cx<C>(n->t);
            p->b = cx<C>(n->f);
            return wrapn<C>(t, p);
          }
          auto* p = new SelectE<C>;
          p->c = cx<int64_t>(n->cond);
          p->a = cx<C>(n->t);
          p->b = cx<C>(n->f);
          return wrapn<C>(t, p);
        });
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        auto setter = set_reg(n->var, n->value);
        Iv saved = ivs_.count(n->var.get()) ? ivs_[n->var.get()] : Iv{};
        ivs_[n->var.get()] = iv(n->value);
        DType t = eff(n->body.dtype());
        AnyE r = by_cat(t, [&](auto c) -> AnyE {
          using C = decltype(c);
          auto* p = new LetE<C>;
          p->s = std::move(setter);
          p->body = cx<C>(n->body);
          return wrapn<C>(t, p);
        });
        ivs_[n->var.get()] = saved;
        leave(n->var.get());
        return r;
      }
      case ExprKind::BufferPtr:
        site_error(blk_, "buffer pointer " + e.as<BufferPtrNode>()->buffer->name +
                             ".ptr is only valid as a call_extern argument");
    }
    throw Error("unknown expression kind");
  }

  std::unique_ptr<Setter> set_reg(const Var& v, const Expr& value) {
    DType t = eff(value.dtype());
    if (eff(v.dtype()) != t)
      site_error(blk_, "let " + v.name() + ": value of dtype " + std::string(dtype_name(value.dtype())));
    int r = bind_reg(v);
    return by_cat(t, [&](auto c) -> std::unique_ptr<Setter> {
      using C = decltype(c);
      auto p = std::make_unique<SetReg<C>>();
      p->r = r;
      p->v = cx<C>(value);
      return p;
    });
  }

  // Access with bounds checks only on dimensions not proven in range; `flat` is set when
  // every dimension is proven and the flat offset is affine.
  Access access(const Buffer& buf, const std::vector<Expr>& indices, Index* flat, bool* is_flat) {
    Access a;
    a.slot = slot_of(buf);
    a.info = out_.bufs[a.slot].get();
    a.blk = blk_;
    if (indices.size() != a.info->shape.size())
      site_error(blk_, "buffer " + buf->name + " has " + std::to_string(a.info->shape.size()) +
                           " dimensions but is indexed with " + std::to_string(indices.size()));
    bool all_proven = true, all_affine = true;
    Aff total;
    for (size_t d = 0; d < indices.size(); ++d) {
      Iv r = iv(indices[d]);
      bool proven = r.lo >= 0 && r.hi < a.info->shape[d];
      all_proven &= proven;
      Aff x;
      if (affine(indices[d], &x) && fits(r, indices[d].dtype()))
        total.add(x, a.info->strides[d]);
      else
        all_affine = false;
      a.check.push_back(!proven);
    }
    *is_flat = all_proven && all_affine && total.t.size() <= Index::kMaxTerms;
    if (*is_flat) {
      flat->c = total.c;
      flat->n = static_cast<int>(total.t.size());
      for (int t = 0; t < flat->n; ++t) {
        flat->r[t] = total.t[t].first;
        flat->k[t] = total.t[t].second;
      }
    } else {
      for (auto& e : indices) a.idx.push_back(index(e));
    }
    return a;
  }

  AnyE load(const LoadNode* n) {
    Index flat;
    bool is_flat;
    Access a = access(n->buffer, n->indices, &flat, &is_flat);
    DType t = a.info->dtype;
    return with_dtype(t, [&](auto dt) -> AnyE {
      constexpr DType D = decltype(dt)::value;
      using C = typename Tr<D>::C;
      if (is_flat) {
        auto mk = [&](auto p) -> AnyE {
          p->slot = a.slot;
          p->off = std::move(flat);
          p->info = a.info;
          p->blk = blk_;
          return wrapn<C>(D, p);
        };
        if (a.info->track_init) return mk(new LoadFlat<D, true>);
        return mk(new LoadFlat<D, false>);
      }
      auto* p = new LoadGen<D>;
      p->a = std::move(a);
      return wrapn<C>(D, p);
    });
  }

  // Load * Load with both offsets flat: one MulLoads closure; empty AnyE otherwise.
  template <DType D>
  AnyE mul_loads(const BinaryNode* n) {
    using C = typename Tr<D>::C;
    auto* la = n->a.as<LoadNode>();
    auto* lb = n->b.as<LoadNode>();
    if (!la || !lb) return {};
    Index fa, fb;
    bool flat_a, flat_b;
    Access aa = access(la->buffer, la->indices, &fa, &flat_a);
    Access ab = access(lb->buffer, lb->indices, &fb, &flat_b);
    if (!flat_a || !flat_b || aa.info->dtype != D || ab.info->dtype != D) return {};
    auto mk = [&](auto* p) -> AnyE {
      p->sa = aa.slot;
      p->sb = ab.slot;
      p->oa = std::move(fa);
      p->ob = std::move(fb);
      p->ia = aa.info;
      p->ib = ab.info;
      p->blk = blk_;
      return wrapn<C>(D, p);
    };
    bool ia = aa.info->track_init, ib = ab.info->track_init;
    if (ia && ib) return mk(new MulLoads<D, true, true>);
    if (ia) return mk(new MulLoads<D, true, false>);
    if (ib) return mk(new MulLoads<D, false, true>);
    return mk(new MulLoads<D, false, false>);
  }

  AnyE binary(const BinaryNode* n) {
    DType t = eff(n->a.dtype());
    if (eff(n->b.dtype()) != t)
      site_error(blk_, std::string("operands of ") + binop_symbol(n->op) + " have different dtypes " +
                           std::string(dtype_name(n->a.dtype())) + " and " +
                           std::string(dtype_name(n->b.dtype())));
    if (binop_is_logic(n->op)) {
      if (n->op == BinOp::And) {
        auto* p = new Logic<BinOp::And>;
        p->a = cx<int64_t>(n->a);
        p->b = cx<int64_t>(n->b);
        return wrapn<int64_t>(DType::Bool, p);
      }
      auto* p = new Logic<BinOp::Or>;
      p->a = cx<int64_t>(n->a);
      p->b = cx<int64_t>(n->b);
      return wrapn<int64_t>(DType::Bool, p);
    }
    if (binop_is_compare(n->op)) {
      return by_cat(t, [&](auto c) -> AnyE {
        using C = decltype(c);
        auto mk = [&](auto* p) -> AnyE {
          p->a = cx<C>(n->a);
          p->b = cx<C>(n->b);
          return wrapn<int64_t>(DType::Bool, p);
        };
        switch (n->op) {
          case BinOp::EQ: return mk(new Cmp<C, BinOp::EQ>);
          case BinOp::NE: return mk(new Cmp<C, BinOp::NE>);
          case BinOp::LT: return mk(new Cmp<C, BinOp::LT>);
          case BinOp::LE: return mk(new Cmp<C, BinOp::LE>);
          case BinOp::GT: return mk(new Cmp<C, BinOp::GT>);
          default: return mk(new Cmp<C, BinOp::GE>);
        }
      });
    }
    if (n->op == BinOp::Mul && (t == DType::F32 || t == DType::F64)) {
      AnyE fused = t == DType::F32 ? mul_loads<DType::F32>(n) : mul_loads<DType::F64>(n);
      if (fused.f || fused.d) return fused;
    }
    return with_dtype(t, [&](auto dt) -> AnyE {
      constexpr DType D = decltype(dt)::value;
      using C = typename Tr<D>::C;
      auto mk = [&](auto* p) -> AnyE {
        p->a = cx<C>(n->a);
        p->b = cx<C>(n->b);
        p->blk = blk_;
        return wrapn<C>(D, p);
      };
      switch (n->op) {
        case BinOp::Add: return mk(new Bin<D, BinOp::Add>);
        case BinOp::Sub: return mk(new Bin<D, BinOp::Sub>);
        case BinOp::Mul: return mk(new Bin<D, BinOp::Mul>);
        case BinOp::Div: return mk(new Bin<D, BinOp::Div>);
        case BinOp::FloorDiv: return mk(new Bin<D, BinOp::FloorDiv>);
        case BinOp::FloorMod: return mk(new Bin<D, BinOp::FloorMod>);
        case BinOp::Min: return mk(new Bin<D, BinOp::Min>);
        default: return mk(new Bin<D, BinOp::Max>);
      }
    });
  }

  AnyE call(const CallNode* n) {
    // A compiled-code bounds check is the index itself here: every access is checked anyway
    // (with the full index in the message).
    if (n->op == Intrinsic::BoundsCheck && !n->args.empty()) return any(n->args[0]);
    const char* name = intrinsic_name(n->op);
    if (static_cast<int>(n->args.size()) != intrinsic_arity(n->op))
      site_error(blk_, std::string(name) + " takes " + std::to_string(intrinsic_arity(n->op)) + " arguments");
    DType t = eff(n->args[0].dtype());
    for (auto& a : n->args)
      if (eff(a.dtype()) != t) site_error(blk_, std::string(name) + ": arguments have different dtypes");
    bool int_ok = n->op == Intrinsic::Abs || n->op == Intrinsic::Sign || n->op == Intrinsic::Floor ||
                  n->op == Intrinsic::Ceil || n->op == Intrinsic::Round || n->op == Intrinsic::Trunc ||
                  n->op == Intrinsic::Pow || n->op == Intrinsic::TruncDiv || n->op == Intrinsic::TruncMod;
    if (!is_float(t) && !int_ok)
      site_error(blk_, std::string(name) + " needs a float argument, got " +
                           std::string(dtype_name(n->args[0].dtype())));
    return with_dtype(t, [&](auto dt) -> AnyE {
      constexpr DType D = decltype(dt)::value;
      using C = typename Tr<D>::C;
      auto mk1 = [&](auto* p) -> AnyE {
        p->a = cx<C>(n->args[0]);
        return wrapn<C>(D, p);
      };
      auto mk2 = [&](auto* p) -> AnyE {
        p->a = cx<C>(n->args[0]);
        p->b = cx<C>(n->args[1]);
        p->blk = blk_;
        return wrapn<C>(D, p);
      };
      switch (n->op) {
        case Intrinsic::Exp: return mk1(new Call1<D, Intrinsic::Exp>);
        case Intrinsic::Log: return mk1(new Call1<D, Intrinsic::Log>);
        case Intrinsic::Log2: return mk1(new Call1<D, Intrinsic::Log2>);
        case Intrinsic::Log10: return mk1(new Call1<D, Intrinsic::Log10>);
        case Intrinsic::Log1p: return mk1(new Call1<D, Intrinsic::Log1p>);
        case Intrinsic::Expm1: return mk1(new Call1<D, Intrinsic::Expm1>);
        case Intrinsic::Sqrt: return mk1(new Call1<D, Intrinsic::Sqrt>);
        case Intrinsic::Rsqrt: return mk1(new Call1<D, Intrinsic::Rsqrt>);
        case Intrinsic::Sin: return mk1(new Call1<D, Intrinsic::Sin>);
        case Intrinsic::Cos: return mk1(new Call1<D, Intrinsic::Cos>);
        case Intrinsic::Tan: return mk1(new Call1<D, Intrinsic::Tan>);
        case Intrinsic::Tanh: return mk1(new Call1<D, Intrinsic::Tanh>);
        case Intrinsic::Sigmoid: return mk1(new Call1<D, Intrinsic::Sigmoid>);
        case Intrinsic::Erf: return mk1(new Call1<D, Intrinsic::Erf>);
        case Intrinsic::Abs: return mk1(new Call1<D, Intrinsic::Abs>);
        case Intrinsic::Floor: return mk1(new Call1<D, Intrinsic::Floor>);
        case Intrinsic::Ceil: return mk1(new Call1<D, Intrinsic::Ceil>);
        case Intrinsic::Round: return mk1(new Call1<D, Intrinsic::Round>);
        case Intrinsic::Trunc: return mk1(new Call1<D, Intrinsic::Trunc>);
        case Intrinsic::Sign: return mk1(new Call1<D, Intrinsic::Sign>);
        case Intrinsic::Pow: return mk2(new Call2<D, Intrinsic::Pow>);
        case Intrinsic::TruncDiv: return mk2(new Call2<D, Intrinsic::TruncDiv>);
        case Intrinsic::TruncMod: return mk2(new Call2<D, Intrinsic::TruncMod>);
        case Intrinsic::BoundsCheck: break;
      }
      throw Error("unknown intrinsic");
    });
  }

  // ---- statements ----
  SP stmt(const Stmt& s) {
    if (!s.defined()) return std::make_unique<NopS>();
    switch (s.kind()) {
      case StmtKind::Seq: {
        auto p = std::make_unique<SeqS>();
        for (auto& x : s.as<SeqNode>()->stmts) p->v.push_back(stmt(x));
        return p;
      }
      case StmtKind::For: return loop(s.as<ForNode>());
      case StmtKind::BlockRealize: return block(s.as<BlockRealizeNode>());
      case StmtKind::Store: return store(s.as<StoreNode>());
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        auto p = std::make_unique<IfS>();
        p->id = counted(n);
        p->c = cx<int64_t>(n->cond);
        p->a = stmt(n->then_case);
        if (n->else_case.defined()) p->b = stmt(n->else_case);
        return p;
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        auto p = std::make_unique<LetS>();
        p->s = set_reg(n->var, n->value);
        Iv saved = ivs_.count(n->var.get()) ? ivs_[n->var.get()] : Iv{};
        ivs_[n->var.get()] = iv(n->value);
        p->body = stmt(n->body);
        ivs_[n->var.get()] = saved;
        leave(n->var.get());
        return p;
      }
      case StmtKind::Evaluate: {
        auto p = std::make_unique<EvalS>();
        p->name = s.as<EvaluateNode>()->extern_name;
        p->blk = blk_;
        return p;
      }
    }
    throw Error("unknown statement kind");
  }

  SP loop(const ForNode* n) {
    Iv lo = iv(n->min), ext = iv(n->extent);
    int r = bind_reg(n->loop_var);
    const VarNode* v = n->loop_var.get();
    Iv saved = ivs_.count(v) ? ivs_[v] : Iv{};
    SP p;
    if (lo.lo == lo.hi && ext.lo == ext.hi && lo.bounded() && ext.bounded()) {
      auto q = std::make_unique<ForConstS>();
      q->id = counted(n);
      q->r = r;
      q->lo = lo.lo;
      q->hi = lo.lo + ext.lo;
      ivs_[v] = {lo.lo, lo.lo + ext.lo - 1};
      q->body = stmt(n->body);
      if (auto* blk = dynamic_cast<const BlockS*>(q->body.get())) {
        auto fb = std::make_unique<ForBlockS>();
        fb->id = q->id;
        fb->r = r;
        fb->lo = q->lo;
        fb->hi = q->hi;
        fb->b = blk;
        fb->owner = std::move(q->body);
        p = std::move(fb);
      } else {
        p = std::move(q);
      }
    } else {
      auto q = std::make_unique<ForS>();
      q->id = counted(n);
      q->r = r;
      q->min = cx<int64_t>(n->min);
      q->ext = cx<int64_t>(n->extent);
      ivs_[v] = lo.bounded() && ext.bounded() ? Iv{lo.lo, lo.hi + ext.hi - 1} : Iv{};
      q->body = stmt(n->body);
      p = std::move(q);
    }
    ivs_[v] = saved;
    leave(v);
    return p;
  }

  // Variables (re)bound inside a block: loop vars, lets, nested iter vars.
  static std::unordered_set<const VarNode*> vars_bound_in(const BlockNode& b) {
    struct V : IRVisitor {
      std::unordered_set<const VarNode*> out;
      void visit_for(const ForNode* n) override {
        out.insert(n->loop_var.get());
        IRVisitor::visit_for(n);
      }
      void visit_let_stmt(const LetStmtNode* n) override {
        out.insert(n->var.get());
        IRVisitor::visit_let_stmt(n);
      }
      void visit_let(const LetNode* n) override {
        out.insert(n->var.get());
        IRVisitor::visit_let(n);
      }
      void visit_block(const BlockNode* n) override {
        for (auto& iv : n->iter_vars) out.insert(iv.var.get());
        IRVisitor::visit_block(n);
      }
    } vis;
    vis.visit(b.init);
    vis.visit(b.body);
    return vis.out;
  }

  SP block(const BlockRealizeNode* n) {
    const BlockNode& b = *n->block.get();
    if (n->bindings.size() != b.iter_vars.size())
      throw Error("block \"" + b.name + "\": " + std::to_string(b.iter_vars.size()) + " iter vars but " +
                  std::to_string(n->bindings.size()) + " bindings");
    auto p = std::make_unique<BlockS>();
    out_.block_names.push_back(std::make_unique<std::string>(b.name));
    // The implicit root block has no position of its own: statements outside every block
    // are reported at the function.
    p->blk = new_site(b.name, b.loc.known() || !n->block.same_as(root_block_) ? b.loc : f_.loc);
    p->id = static_cast<int>(out_.block_names.size()) - 1;
    // Predicate and bindings are expressions of the enclosing loops: compiled in the outer
    // block's context but reported under this block.
    const Site* outer = blk_;
    blk_ = p->blk;
    int64_t pv;
    if (n->predicate.defined() && !(is_const_int(n->predicate, &pv) && pv != 0))
      p->pred = cx<int64_t>(n->predicate);
    std::vector<std::pair<const VarNode*, Iv>> saved;
    std::vector<Iv> new_ivs;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      const IterVar& itv = b.iter_vars[i];
      BlockS::Bind bd;
      bd.name = itv.var.name();
      bd.v = index(n->bindings[i]);
      Iv e = iv(itv.extent);
      Iv range;
      if (e.lo == e.hi && e.bounded()) {
        bd.ext_const = e.lo;
        range = {0, e.lo - 1};
      } else {
        bd.ext = cx<int64_t>(itv.extent);
        range = e.bounded() ? Iv{0, e.hi - 1} : Iv{0, kBig};
      }
      Iv bv = iv(n->bindings[i]);
      bd.check = !(bd.ext == nullptr && bv.lo >= 0 && bv.hi < bd.ext_const);
      new_ivs.push_back(range);
      p->binds.push_back(std::move(bd));
    }
    // Registers of the iter vars are assigned after every binding is compiled (bindings never
    // see this block's iter vars). An iter var bound to a plain variable proven in range
    // shares that variable's register (no copy per iteration), unless the block rebinds it.
    std::unordered_set<const VarNode*> rebound = vars_bound_in(b);
    std::vector<BlockS::Bind> kept;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      const VarNode* v = b.iter_vars[i].var.get();
      saved.push_back({v, ivs_.count(v) ? ivs_[v] : Iv{}});
      auto* src = n->bindings[i].as<VarNode>();
      int r;
      if (src && !p->binds[i].check && regs_.count(src) && !rebound.count(src) && !env_.count(src)) {
        r = regs_[src];
        regs_[v] = r;
      } else {
        r = nregs_++;
        regs_[v] = r;
        p->binds[i].r = r;
        kept.push_back(std::move(p->binds[i]));
      }
      ivs_[v] = new_ivs[i];
      ++live_[v];
      if (b.iter_vars[i].kind == IterKind::Reduce) p->reduce_regs.push_back(r);
    }
    // Spatial points for the conflict check (see BlockS::spatial).
    bool ordered = false;
    for (auto& itv : b.iter_vars) ordered |= itv.kind == IterKind::Scan || itv.kind == IterKind::Opaque;
    constexpr uint64_t kMaxId = (uint64_t(1) << (64 - kTagPointBits)) - 1;
    uint64_t id1 = std::min<uint64_t>(static_cast<uint64_t>(p->id) + 1, kMaxId);
    p->base_tag = id1 << kTagPointBits;
    if (!ordered && id1 < kMaxId) {
      double radix = 1;
      for (size_t i = 0; i < b.iter_vars.size(); ++i) {
        if (b.iter_vars[i].kind != IterKind::Spatial) continue;
        Iv e = iv(b.iter_vars[i].extent);
        int64_t ext = e.lo == e.hi && e.bounded() && e.lo > 0 ? e.lo : 0;
        if (!ext) {
          ext = int64_t(1) << 20;  // not a compile-time constant: still a (wrapping) mix
          p->decodable = false;
        }
        radix *= static_cast<double>(ext);
        p->spatial.push_back({regs_[b.iter_vars[i].var.get()], ext, b.iter_vars[i].var.name()});
      }
      if (radix > static_cast<double>(kTagPointMask)) p->decodable = false;
    }
    p->binds = std::move(kept);
    for (auto& a : b.allocs) {
      const BufInfo& info = *out_.bufs[slot_of(a)];
      if (info.block_local) p->allocs.push_back({slot_of(a), info.numel});
    }
    if (b.init.defined()) p->init = stmt(b.init);
    p->body = stmt(b.body);
    for (auto& [v, iv0] : saved) {
      ivs_[v] = iv0;
      leave(v);
    }
    blk_ = outer;
    return p;
  }

  // `A[idx] = A[idx] OP rhs` (same buffer, identical indices) as one StoreAcc closure.
  template <DType D>
  SP accumulate(const StoreNode* n, const Access& a, Index& flat) {
    using C = typename Tr<D>::C;
    auto* bin = n->value.as<BinaryNode>();
    if (!bin) return nullptr;
    BinOp op = bin->op;
    if (op != BinOp::Add && op != BinOp::Sub && op != BinOp::Mul && op != BinOp::Min && op != BinOp::Max)
      return nullptr;
    auto* ld = bin->a.as<LoadNode>();
    if (!ld || !ld->buffer.same_as(n->buffer) || ld->indices.size() != n->indices.size()) return nullptr;
    for (size_t d = 0; d < ld->indices.size(); ++d)
      if (!expr_identical(ld->indices[d], n->indices[d])) return nullptr;
    auto mk = [&](auto* p) -> SP {
      p->slot = a.slot;
      p->off = std::move(flat);
      p->rhs = cx<C>(bin->b);
      p->info = a.info;
      p->blk = blk_;
      return SP(p);
    };
    auto pick = [&](auto init_tag) -> SP {
      constexpr bool kI = decltype(init_tag)::value;
      switch (op) {
        case BinOp::Add: return mk(new StoreAcc<D, kI, BinOp::Add>);
        case BinOp::Sub: return mk(new StoreAcc<D, kI, BinOp::Sub>);
        case BinOp::Mul: return mk(new StoreAcc<D, kI, BinOp::Mul>);
        case BinOp::Min: return mk(new StoreAcc<D, kI, BinOp::Min>);
        default: return mk(new StoreAcc<D, kI, BinOp::Max>);
      }
    };
    if (a.info->track_init) return pick(std::true_type{});
    return pick(std::false_type{});
  }

  SP store(const StoreNode* n) {
    // A store written in the script is its own error site (its loads, indices, divisions).
    const Site* outer = blk_;
    if (n->loc.known()) blk_ = new_site(blk_ ? blk_->block : std::string("root"), n->loc);
    SP p = store_at_site(n);
    blk_ = outer;
    return p;
  }

  SP store_at_site(const StoreNode* n) {
    Index flat;
    bool is_flat;
    Access a = access(n->buffer, n->indices, &flat, &is_flat);
    DType t = a.info->dtype;
    if (eff(n->value.dtype()) != t)
      site_error(blk_, "store of a " + std::string(dtype_name(n->value.dtype())) + " value into " +
                           n->buffer->name + " of dtype " + std::string(dtype_name(n->buffer->dtype)));
    return with_dtype(t, [&](auto dt) -> SP {
      constexpr DType D = decltype(dt)::value;
      using C = typename Tr<D>::C;
      if (is_flat) {
        if constexpr (D == DType::F32 || D == DType::F64 || D == DType::I32 || D == DType::I64) {
          if (SP acc = accumulate<D>(n, a, flat)) return acc;
        }
        auto mk = [&](auto p) -> SP {
          p->slot = a.slot;
          p->off = std::move(flat);
          p->v = cx<C>(n->value);
          p->info = a.info;
          p->blk = blk_;
          return SP(p);
        };
        if (a.info->track_init) return mk(new StoreFlat<D, true>);
        return mk(new StoreFlat<D, false>);
      }
      auto* p = new StoreGen<D>;
      p->a = std::move(a);
      p->v = cx<C>(n->value);
      return SP(p);
    });
  }
};

}  // namespace

CompiledFunc compile_function(const FunctionNode& f, bool promote_f64, const ScalarEnv& scalars) {
  Compiler c(f, promote_f64, scalars);
  return c.run();
}

int64_t eval_int_expr(const Expr& e, const ScalarEnv& env) {
  if (auto* n = e.as<IntImmNode>()) return n->value;
  if (auto* n = e.as<VarNode>()) {
    auto it = env.find(n);
    if (it == env.end()) throw Error("'" + n->name + "' is not a scalar parameter");
    return is_float(n->dtype) ? float_to_int(DType::I64, it->second.d) : it->second.i;
  }
  if (auto* n = e.as<CastNode>()) {
    if (is_int(n->dtype) || is_bool(n->dtype)) return wrap_int(n->dtype, eval_int_expr(n->value, env));
  }
  if (auto* n = e.as<UnaryNode>()) {
    if (n->op == UnOp::Neg) return neg_wrap(eval_int_expr(n->a, env));
    return eval_int_expr(n->a, env) == 0;
  }
  if (auto* n = e.as<BinaryNode>()) {
    int64_t a = eval_int_expr(n->a, env), b = eval_int_expr(n->b, env);
    int64_t r;
    switch (n->op) {
      case BinOp::Add: r = add_wrap(a, b); break;
      case BinOp::Sub: r = sub_wrap(a, b); break;
      case BinOp::Mul: r = mul_wrap(a, b); break;
      case BinOp::Div:
      case BinOp::FloorDiv:
      case BinOp::FloorMod:
        if (b == 0) throw Error("integer division by zero in a shape expression");
        r = n->op == BinOp::FloorMod   ? floormod_int(a, b)
            : n->op == BinOp::FloorDiv ? floordiv_int(a, b)
                                       : truncdiv_int(a, b);
        break;
      case BinOp::Min: r = std::min(a, b); break;
      case BinOp::Max: r = std::max(a, b); break;
      case BinOp::EQ: return a == b;
      case BinOp::NE: return a != b;
      case BinOp::LT: return a < b;
      case BinOp::LE: return a <= b;
      case BinOp::GT: return a > b;
      case BinOp::GE: return a >= b;
      case BinOp::And: return a && b;
      case BinOp::Or: return a || b;
      default: r = 0;
    }
    return wrap_int(n->dtype, r);
  }
  if (auto* n = as_select_like(e))
    return eval_int_expr(n->cond, env) ? eval_int_expr(n->t, env) : eval_int_expr(n->f, env);
  throw Error("expression is not an integer of literals and scalar parameters");
}

}  // namespace tirc::interp

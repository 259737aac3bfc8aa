// Differential fuzz of compiled code against the interpreter on random *structured* programs
// (the elementwise fuzz is tests/codegen/fuzz_jit_vs_interp.py, the numerics one
// numerics_diff_test.cpp): several blocks per function over a symbolic size n (and sometimes
// m), reductions with init (sum / product / max / min, identity or data init, `where` on the
// reduce loops, several reduce vars, reduce loops outside spatial ones), scans and opaque
// recurrences (also through a one-element state buffer), nested blocks owning allocs of every
// scope, loops inside block bodies, statement and expression lets, if / else statements,
// `if_then_else` guards, gathers through an index buffer (guarded, clamped, sometimes not),
// masked in-place updates, top-level `if` on a scalar, loops of every kind (serial with a
// non-zero min, parallel, vectorized, unroll, thread_binding run on the CPU, fused loops with
// `//` / `%` bindings), every integer dtype with wraparound, f16 / bf16, casts.
//
// Each program runs in the interpreter and in the JIT on the same random inputs. Outputs must
// be bit-identical (any NaN matches any NaN; docs/codegen.md promises bit-identical results
// without --fast-math). Where the interpreter reports an out-of-bounds access, a binding
// outside its domain or an integer division by zero, the JIT must report the same error
// (the same message in code without parallel / vectorized loops; docs/codegen.md, "Order").
// Programs the interpreter finds invalid (uninitialised reads, conflicting spatial
// iterations: compiled code does not check these) are skipped and counted.
//
// Long hunt:
//   TIRC_STRUCT_FUZZ_SEED=S TIRC_STRUCT_FUZZ_ITERS=N BUILD/test_codegen
//     --gtest_also_run_disabled_tests --gtest_filter=StructFuzz.DISABLED_Long
// (TIRC_STRUCT_FUZZ_DUMP=DIR writes every failing program to DIR/seed_S.tir.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "tests/codegen/compare.h"
#include "tests/sanitized.h"

#ifdef TIRC_WITH_LLVM
namespace tirc {
using namespace tirc::cgtest;

namespace {

const char* kInts[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32"};
const char* kFloats[] = {"f16", "bf16", "f32", "f64"};
bool is_f(const std::string& t) { return t[0] == 'f' || t == "bf16"; }
bool is_u(const std::string& t) { return t[0] == 'u'; }
bool is_b(const std::string& t) { return t == "bool"; }

// A buffer of the program: its shape is one of [P, Q], [P], [Q], [1] where P and Q are the
// program's two sizes (symbolic or constant).
enum Shape { kPQ, kP, kQ, kOne };

struct Buf {
  std::string name, dt;
  Shape shape;
  bool input = false;
};

// What an expression may use at one point of the program: the index expression of each of
// the two dimensions (empty: not available), an extra index (reduce var over a constant
// range) and scalars (params, lets, iter vars cast).
struct Ctx {
  std::string ip, iq;                                        // index along P, along Q
  std::vector<std::pair<std::string, std::string>> scalars;  // name, dtype
  std::vector<std::string> extra;                            // other integer index vars (i32)
  std::vector<std::string> bufs;                             // buffer names readable here
};

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed * 0x9E3779B97F4A7C15ull + 17) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
  bool coin(int pct) { return pick(100) < pct; }
  template <class T, size_t N>
  const T& choose(const T (&a)[N]) {
    return a[pick(static_cast<int>(N))];
  }

  // Sizes: P is "n" (n: i32 in [lo, hi]) or a constant, Q a constant or "m".
  std::string P, Q;
  int Pmax = 0;
  std::string ity = "i32";     // the index dtype of the stage being generated (i64: P, Q cast)
  bool p_may_be_zero = false;  // n may be 0: a reduction over P would leave D unwritten
  std::vector<Buf> bufs;
  std::vector<std::string> params, outputs, allocs;
  std::string index_buf;  // an i32[P] buffer of gather indices ("" when none)
  int blocks = 0, lets = 0, loops = 0;
  bool has_par = false;  // a parallel or vectorized loop (error order may differ)
  int unguarded = 0;     // unguarded gathers / divisions so far (at most one per program)
  std::ostringstream body;

  const Buf* find(const std::string& name) const {
    for (auto& b : bufs)
      if (b.name == name) return &b;
    return nullptr;
  }

  std::string dtype_any() {
    int k = pick(12);
    if (k < 7) return kInts[k];
    if (k < 11) return kFloats[k - 7];
    return "bool";
  }
  std::string dtype_num() {
    std::string t = dtype_any();
    return is_b(t) ? "f32" : t;
  }

  std::string lit(const std::string& t) {
    if (is_b(t)) return coin(50) ? "true" : "false";
    if (is_f(t)) {
      const char* v[] = {"0.0", "1.0", "0.5", "2.5", "-1.5", "3.0", "0.125", "100.0", "1e-3"};
      // Typed unless f32: a select of two bare literals would be f32 whatever its context.
      return t == "f32" ? v[pick(9)] : t + "(" + v[pick(9)] + ")";
    }
    const char* v[] = {"0", "1", "2", "3", "7", "100", "127"};
    std::string s = v[pick(7)];
    if (t == "i8" && s == "127" && coin(50)) return "i8(-128)";
    return t == "i32" ? s : t + "(" + s + ")";
  }
  std::string lit_nz() {
    const char* v[] = {"1", "2", "3", "5", "7"};
    return v[pick(5)];
  }

  // The index of buffer dimension `dim` (0: P, 1: Q) at context c.
  std::string index(const Ctx& c, int dim, const std::string& buf_shape_size) {
    const std::string& iv = dim == 0 ? c.ip : c.iq;
    const std::string& N = buf_shape_size;
    if (iv.empty()) {
      if (!c.extra.empty() && coin(30))
        return "(" + c.extra[pick(static_cast<int>(c.extra.size()))] + ") % " + N;
      return coin(50) ? "0" : N + " - 1";
    }
    switch (pick(8)) {
      case 0: return N + " - 1 - " + iv;
      case 1: return "(" + iv + " + " + lit_nz() + ") % " + N;
      case 2:
        if (!c.extra.empty())
          return "(" + iv + " + " + c.extra[pick(static_cast<int>(c.extra.size()))] + ") % " + N;
        return iv;
      case 3: return "min(" + iv + " + 1, " + N + " - 1)";
      case 4: return coin(50) ? "(" + iv + ") // 2" : "(" + iv + " * 3 + 1) % " + N;
      default: return iv;
    }
  }

  // A load of buffer b at context c, as an expression of b's dtype.
  std::string load(const Ctx& c, const Buf& b) {
    std::string ip = index(c, 0, P), iq = index(c, 1, Q);
    bool gather = ity == "i32" && !index_buf.empty() && !c.ip.empty() && (b.shape == kPQ || b.shape == kP) &&
                  coin(25) && std::find(c.bufs.begin(), c.bufs.end(), index_buf) != c.bufs.end();
    std::string g = index_buf + "[" + c.ip + "]";
    auto at = [&](const std::string& pi) {
      switch (b.shape) {
        case kPQ: return b.name + "[" + pi + ", " + iq + "]";
        case kP: return b.name + "[" + pi + "]";
        case kQ: return b.name + "[" + iq + "]";
        default: return b.name + "[0]";
      }
    };
    if (!gather) return at(ip);
    int k = pick(10);
    if (k < 5)
      return "if_then_else(" + g + " >= 0 && " + g + " < " + P + ", " + at(g) + ", " + lit(b.dt) + ")";
    if (k < 9 || unguarded > 0) return at("min(max(" + g + ", 0), " + P + " - 1)");
    ++unguarded;
    return at(g);
  }

  std::string cast_to(const std::string& t, const std::string& e, const std::string& from) {
    if (t == from) return e;
    if (is_b(t)) return "(" + e + " != " + (is_b(from) ? "false" : from + "(0)") + ")";
    return t + "(" + e + ")";
  }

  std::string leaf(const std::string& t, const Ctx& c) {
    int k = pick(10);
    if (k < 6 && !c.bufs.empty()) {
      const Buf* b = find(c.bufs[pick(static_cast<int>(c.bufs.size()))]);
      return cast_to(t, load(c, *b), b->dt);
    }
    if (k < 8 && !c.scalars.empty()) {
      auto& s = c.scalars[pick(static_cast<int>(c.scalars.size()))];
      return cast_to(t, s.first, s.second);
    }
    if (k < 9) {
      std::vector<std::string> ivs;
      if (!c.ip.empty()) ivs.push_back(c.ip);
      if (!c.iq.empty()) ivs.push_back(c.iq);
      for (auto& e : c.extra) ivs.push_back(e);
      if (!ivs.empty()) {
        std::string v = ivs[pick(static_cast<int>(ivs.size()))];
        if (is_b(t)) return "((" + v + ") % 2 == 0)";
        return t == ity ? "(" + v + ")" : t + "(" + v + ")";
      }
    }
    return is_b(t) || is_f(t) || coin(50) ? lit(t) : t + "(" + lit(t) + ")";
  }

  std::string divisor(const std::string& t, const Ctx& c, int d) {
    std::string e = expr(t, c, d);
    if (coin(8) && unguarded == 0) {
      ++unguarded;
      return e;
    }
    if (coin(30)) return lit_nz();
    std::string v = "d" + std::to_string(lets++);
    return "(let " + v + " = " + t + "(" + e + ") in if_then_else(" + v + " == " + t + "(0), " + t + "(" +
           lit_nz() + "), " + v + "))";
  }

  std::string expr(const std::string& t, const Ctx& c, int depth) {
    if (depth <= 0 || coin(20)) return leaf(t, c);
    int d = depth - 1;
    auto E = [&](const std::string& tt) { return expr(tt, c, d); };
    if (is_b(t)) {
      switch (pick(5)) {
        case 0:
        case 1: {
          std::string u = dtype_num();
          const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
          return "(" + E(u) + " " + cmp[pick(6)] + " " + E(u) + ")";
        }
        case 2: return "(" + E(t) + (coin(50) ? " && " : " || ") + E(t) + ")";
        case 3: return "(!" + E(t) + ")";
        default: return "select(" + E(t) + ", " + E(t) + ", " + E(t) + ")";
      }
    }
    bool fl = is_f(t);
    switch (pick(12)) {
      case 0:
      case 1: {
        const char* ops[] = {" + ", " - ", " * "};
        return "(" + E(t) + ops[pick(3)] + (coin(25) ? lit(t) : E(t)) + ")";
      }
      case 2:
        if (fl) return "(" + E(t) + " / " + (coin(40) ? lit(t) : E(t)) + ")";
        switch (pick(4)) {
          case 0: return "(" + E(t) + " // " + divisor(t, c, d) + ")";
          case 1: return "(" + E(t) + " % " + divisor(t, c, d) + ")";
          case 2: return "truncdiv(" + E(t) + ", " + divisor(t, c, d) + ")";
          default: return "truncmod(" + E(t) + ", " + divisor(t, c, d) + ")";
        }
      case 3: return std::string(coin(50) ? "min(" : "max(") + E(t) + ", " + E(t) + ")";
      case 4: return "select(" + E("bool") + ", " + E(t) + ", " + E(t) + ")";
      case 5: return "if_then_else(" + E("bool") + ", " + E(t) + ", " + E(t) + ")";
      case 6: return is_u(t) ? "abs(" + E(t) + ")" : "(-" + E(t) + ")";
      case 7: {
        std::string v = "y" + std::to_string(lets++);
        return "(let " + v + " = " + t + "(" + E(t) + ") in (" + v + (coin(50) ? " + " : " * ") + E(t) + "))";
      }
      case 8:
      case 9: return cast_to(t, E(dtype_any()), "?");
      default:
        if (!fl) return std::string(coin(50) ? "abs(" : "sign(") + E(t) + ")";
        if (coin(15)) return "pow(" + E(t) + ", " + (coin(50) ? lit(t) : E(t)) + ")";
        {
          const char* f[] = {"exp",   "log",  "sqrt",  "sin",   "cos",   "tanh", "sigmoid", "abs",
                             "floor", "ceil", "round", "trunc", "log1p", "erf",  "rsqrt",   "expm1"};
          return std::string(f[pick(16)]) + "(" + E(t) + ")";
        }
    }
  }

  // ---------------------------------------------------------------------------------------
  // Loops. `nonpar`: the loop must run in order (reduce / scan loops): no parallel.
  struct Loop {
    std::string var, header, binding;  // binding: the value in [0, extent) to bind
  };
  Loop loop(const std::string& extent, bool nonpar, bool allow_tb = true) {
    Loop l;
    l.var = "l" + std::to_string(loops++);
    bool cst = !extent.empty() && std::isdigit(static_cast<unsigned char>(extent[0]));
    std::string kind;
    int k = pick(10);
    if (k < 4)
      kind = "serial";
    else if (k < 6)
      kind = nonpar ? "serial" : "parallel";
    else if (k < 7)
      kind = "unroll";
    else if (k < 9)
      kind = cst || coin(30) ? "vectorized" : "serial";
    else
      kind = allow_tb ? "thread_binding" : "serial";
    if (kind == "parallel" || kind == "vectorized") has_par = true;
    std::string tag;
    if (kind == "thread_binding") {
      const char* tags[] = {"threadIdx.x", "threadIdx.y", "blockIdx.x", "blockIdx.y", "vthread"};
      tag = std::string(", \"") + tags[loops % 5] + "\"";
    }
    int lo = coin(25) ? 1 + pick(3) : 0;
    if (lo == 0) {
      l.header = kind + "(" + extent + tag + ")";
      // Reduce and scan loops run forward (init and the first step come first).
      l.binding = !nonpar && coin(15) ? extent + " - 1 - " + l.var : l.var;
    } else {
      l.header = kind + "(" + std::to_string(lo) + ", " + extent + " + " + std::to_string(lo) + tag + ")";
      l.binding = l.var + " - " + std::to_string(lo);
    }
    return l;
  }

  std::string ind(int d) { return std::string(static_cast<size_t>(2 * d), ' '); }

  std::string store_target(const Buf& b, const std::string& ip, const std::string& iq) {
    switch (b.shape) {
      case kPQ: return b.name + "[" + ip + ", " + iq + "]";
      case kP: return b.name + "[" + ip + "]";
      case kQ: return b.name + "[" + iq + "]";
      default: return b.name + "[0]";
    }
  }

  Ctx base_ctx(const std::vector<std::string>& readable) {
    Ctx c;
    c.bufs = readable;
    for (auto& p : scalar_params) c.scalars.push_back(p);
    return c;
  }
  std::vector<std::pair<std::string, std::string>> scalar_params;

  // Block-body statements storing `value` (generated per arm) at `target`: a direct store,
  // a statement let first, or an if / else.
  void emit_store(std::ostringstream& s, int d, const std::string& target, const std::string& t, Ctx c) {
    if (coin(30)) {
      std::string v = "x" + std::to_string(lets++);
      std::string u = dtype_num();
      s << ind(d) << "let " << v << " = " << u << "(" << expr(u, c, 2) << ")\n";
      c.scalars.push_back({v, u});
    }
    if (coin(25)) {
      s << ind(d) << "if " << expr("bool", c, 2) << " {\n";
      s << ind(d + 1) << target << " = " << expr(t, c, 3) << "\n";
      s << ind(d) << "} else {\n";
      s << ind(d + 1) << target << " = " << expr(t, c, 3) << "\n";
      s << ind(d) << "}\n";
      return;
    }
    s << ind(d) << target << " = " << expr(t, c, 3) << "\n";
  }

  // Size expression of a shape's dimensions.
  std::vector<std::string> dims(Shape sh) {
    switch (sh) {
      case kPQ: return {P, Q};
      case kP: return {P};
      case kQ: return {Q};
      default: return {"1"};
    }
  }

  // A new buffer D (output or function-level alloc) of a random shape and dtype.
  Buf& new_buf(bool force_output = false) {
    Buf b;
    b.name = "D" + std::to_string(bufs.size());
    b.dt = dtype_any();
    int k = pick(10);
    b.shape = k < 5 ? kPQ : k < 7 ? kP : k < 9 ? kQ : kOne;
    std::string decl = b.name + ": " + b.dt + "[";
    auto ds = dims(b.shape);
    for (size_t i = 0; i < ds.size(); ++i) decl += (i ? ", " : "") + ds[i];
    decl += "]";
    if (force_output || coin(60))
      outputs.push_back(decl);
    else {
      const char* sc[] = {"", "", " scope \"local\"", " scope \"shared\"", " scope \"global\""};
      allocs.push_back("alloc " + decl + sc[pick(5)]);
    }
    bufs.push_back(b);
    return bufs.back();
  }

  std::vector<std::string> readable() {
    std::vector<std::string> r;
    for (auto& b : bufs) r.push_back(b.name);
    return r;
  }

  // Elementwise map writing every element of D.
  // The spatial iter vars of a block over D's shape bound to the loops ls: vi (P) and / or vj (Q).
  void spatial_iter_vars(std::ostringstream& s, const Buf& D, const std::vector<Loop>& ls, std::string* ip,
                         std::string* iq) {
    if (D.shape == kPQ) {
      s << "vi: spatial(" << P << ") = " << ls[0].binding << ", vj: spatial(" << Q << ") = " << ls[1].binding;
      *ip = "vi";
      *iq = "vj";
    } else if (D.shape == kP) {
      s << "vi: spatial(" << P << ") = " << ls[0].binding;
      *ip = "vi";
    } else {
      s << "vj: spatial(" << Q << ") = " << ls[0].binding;
      *iq = "vj";
    }
  }

  void stage_map(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    auto ds = dims(D.shape);
    std::string bn = "b" + std::to_string(blocks++);
    Ctx c = base_ctx(rd);
    if (D.shape == kOne) {
      s << ind(d0) << "block " << bn << "() {\n";
      emit_store(s, d0 + 1, D.name + "[0]", D.dt, c);
      s << ind(d0) << "}\n";
      return;
    }
    if (ds.size() == 2 && coin(20)) {
      // One fused loop; the bindings divide by Q.
      Loop f = loop(P + " * " + Q, false);
      s << ind(d0) << "for " << f.var << " in " << f.header << " {\n";
      s << ind(d0 + 1) << "block " << bn << "(vi: spatial(" << P << ") = (" << f.binding << ") // " << Q
        << ", vj: spatial(" << Q << ") = (" << f.binding << ") % " << Q << ") {\n";
      c.ip = "vi";
      c.iq = "vj";
      emit_store(s, d0 + 2, store_target(D, "vi", "vj"), D.dt, c);
      s << ind(d0 + 1) << "}\n" << ind(d0) << "}\n";
      return;
    }
    if (ds.size() == 2 && coin(20)) {
      // The inner loop inside the block body (its var used directly).
      Loop a = loop(P, false);
      Loop b = loop(Q, false);
      s << ind(d0) << "for " << a.var << " in " << a.header << " {\n";
      s << ind(d0 + 1) << "block " << bn << "(vi: spatial(" << P << ") = " << a.binding << ") {\n";
      s << ind(d0 + 2) << "for " << b.var << " in " << b.header << " {\n";
      c.ip = "vi";
      c.iq = "(" + b.binding + ")";
      emit_store(s, d0 + 3, store_target(D, "vi", c.iq), D.dt, c);
      s << ind(d0 + 2) << "}\n" << ind(d0 + 1) << "}\n" << ind(d0) << "}\n";
      return;
    }
    std::vector<Loop> ls;
    for (auto& e : ds) ls.push_back(loop(e, false));
    std::vector<int> order;
    for (size_t i = 0; i < ls.size(); ++i) order.push_back(static_cast<int>(i));
    if (order.size() == 2 && coin(30)) std::swap(order[0], order[1]);
    int d = d0;
    for (int i : order)
      s << ind(d++) << "for " << ls[static_cast<size_t>(i)].var << " in " << ls[static_cast<size_t>(i)].header
        << " {\n";
    s << ind(d) << "block " << bn << "(";
    std::string ip, iq;
    spatial_iter_vars(s, D, ls, &ip, &iq);
    s << ") {\n";
    c.ip = ip;
    c.iq = iq;
    emit_store(s, d + 1, store_target(D, ip, iq), D.dt, c);
    s << ind(d) << "}\n";
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A reduction into D over the dimensions D lacks (and sometimes one extra constant one).
  void stage_reduce(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    if (p_may_be_zero && (D.shape == kQ || D.shape == kOne)) return stage_map(s, d0, D, rd);
    std::string bn = "b" + std::to_string(blocks++);
    struct Var {
      std::string name, kind, extent;
      Loop l;
    };
    std::vector<Var> vs;
    bool sp = D.shape == kPQ || D.shape == kP, sq = D.shape == kPQ || D.shape == kQ;
    Ctx c = base_ctx(rd);
    vs.push_back({"vi", sp ? "spatial" : "reduce", P, {}});
    vs.push_back({"vj", sq ? "spatial" : "reduce", Q, {}});
    c.ip = "vi";
    c.iq = "vj";
    if (coin(35) || (sp && sq)) {
      std::string e = std::to_string(1 + pick(4));
      if (ity != "i32") e = ity + "(" + e + ")";
      vs.push_back({"vk", "reduce", e, {}});
      c.extra.push_back("vk");
    }
    for (auto& v : vs) v.l = loop(v.extent, v.kind == "reduce");
    std::vector<size_t> order;
    for (size_t i = 0; i < vs.size(); ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), rng);
    // A parallel loop must not hold a reduce loop over the same output element: keep
    // parallel loops only on spatial vars that come before every reduce var... any spatial
    // loop is fine (its iterations write distinct elements), so nothing to fix here.
    int d = d0;
    for (size_t i : order) s << ind(d++) << "for " << vs[i].l.var << " in " << vs[i].l.header << " {\n";
    s << ind(d) << "block " << bn << "(";
    for (size_t i = 0; i < vs.size(); ++i)
      s << (i ? ", " : "") << vs[i].name << ": " << vs[i].kind << "(" << vs[i].extent
        << ") = " << vs[i].l.binding;
    s << ") {\n";
    // `where` on a reduce var, true where every reduce var is 0 (so init runs).
    if (coin(30)) {
      const Var* r = nullptr;
      for (auto& v : vs)
        if (v.kind == "reduce") r = &v;
      std::string rb = "(" + r->l.binding + ")";
      std::string other = "(" + vs[0].l.binding + ")";
      switch (pick(3)) {
        case 0: s << ind(d + 1) << "where " << rb << " <= " << other << "\n"; break;
        case 1: s << ind(d + 1) << "where " << rb << " % 2 == 0\n"; break;
        default: s << ind(d + 1) << "where " << rb << " * 3 < " << other << " + 4\n"; break;
      }
    }
    std::string tgt = store_target(D, "vi", "vj");
    std::string t = D.dt;
    int op = pick(4);
    if (is_b(t)) op = 4;
    std::string init;
    if (coin(25)) {
      Ctx ci = c;
      if (!sp) ci.ip.clear();
      if (!sq) ci.iq.clear();
      ci.extra.clear();
      init = expr(t, ci, 2);
    } else {
      init = op == 0   ? t + "(0)"
             : op == 1 ? t + "(1)"
             : op == 2 ? "min_value(" + t + ")"
             : op == 3 ? "max_value(" + t + ")"
                       : "false";
    }
    s << ind(d + 1) << "init { " << tgt << " = " << init << " }\n";
    std::string e = expr(t, c, 3);
    if (coin(25)) {
      std::string v = "x" + std::to_string(lets++);
      s << ind(d + 1) << "let " << v << " = " << t << "(" << e << ")\n";
      e = v;
    }
    switch (op) {
      case 0: s << ind(d + 1) << (coin(50) ? tgt + " += " + e : tgt + " = " + tgt + " + " + e) << "\n"; break;
      case 1: s << ind(d + 1) << (coin(50) ? tgt + " *= " + e : tgt + " = " + e + " * " + tgt) << "\n"; break;
      case 2:
        s << ind(d + 1) << (coin(50) ? tgt + " max= " + e : tgt + " = max(" + tgt + ", " + e + ")") << "\n";
        break;
      case 3:
        s << ind(d + 1) << (coin(50) ? tgt + " min= " + e : tgt + " = min(" + e + ", " + tgt + ")") << "\n";
        break;
      default: s << ind(d + 1) << tgt << " = " << tgt << " || " << e << "\n"; break;
    }
    s << ind(d) << "}\n";
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A scan (or opaque recurrence) along Q (D: [P, Q] or [Q]).
  void stage_scan(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    std::string bn = "b" + std::to_string(blocks++);
    Ctx c = base_ctx(rd);
    bool two = D.shape == kPQ;
    Loop li = loop(P, false);
    Loop lj = loop(Q, true);
    std::string kind = coin(70) ? "scan" : "opaque";
    int d = d0;
    if (two) s << ind(d++) << "for " << li.var << " in " << li.header << " {\n";
    s << ind(d++) << "for " << lj.var << " in " << lj.header << " {\n";
    s << ind(d) << "block " << bn << "(";
    if (two) s << "vi: spatial(" << P << ") = " << li.binding << ", ";
    s << "vj: " << kind << "(" << Q << ") = " << lj.binding << ") {\n";
    if (two) c.ip = "vi";
    c.iq = "vj";
    std::string t = D.dt;
    std::string cur = store_target(D, "vi", "vj"), prev = store_target(D, "vi", "vj - 1"),
                prev2 = store_target(D, "vi", "vj - 2");
    std::string e = expr(t, c, 2);
    std::string step;
    if (is_b(t))
      step = "(" + prev + " != " + e + ")";
    else
      switch (pick(4)) {
        case 0: step = prev + " + " + e; break;
        case 1: step = prev + " * " + (is_f(t) ? "0.5" : "3") + " + " + e; break;
        case 2: step = "max(" + prev + ", " + e + ")"; break;
        default: step = "if_then_else(vj >= 2, " + prev2 + ", " + prev + ") - " + e; break;
      }
    if (coin(50)) {
      s << ind(d + 1) << cur << " = if_then_else(vj == 0, " << expr(t, c, 2) << ", " << step << ")\n";
    } else {
      s << ind(d + 1) << "if vj == 0 {\n" << ind(d + 2) << cur << " = " << expr(t, c, 2) << "\n";
      s << ind(d + 1) << "} else {\n" << ind(d + 2) << cur << " = " << step << "\n" << ind(d + 1) << "}\n";
    }
    s << ind(d) << "}\n";
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A recurrence through a one-element state buffer (block-local to an outer block over P,
  // or function-level when D is [Q]) written by a scan block, copied to D.
  void stage_state(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    std::string bn = "b" + std::to_string(blocks++);
    std::string t = D.dt;
    std::string S = "S" + std::to_string(blocks);
    Ctx c = base_ctx(rd);
    int d = d0;
    bool two = D.shape == kPQ;
    std::string ui = "";
    if (two) {
      Loop li = loop(P, false);
      s << ind(d++) << "for " << li.var << " in " << li.header << " {\n";
      s << ind(d++) << "block " << bn << "o(vi: spatial(" << P << ") = " << li.binding << ") {\n";
      s << ind(d) << "alloc " << S << ": " << t << "[1]\n";
    } else {
      allocs.push_back("alloc " + S + ": " + t + "[1]");
    }
    Loop lj = loop(Q, true);
    s << ind(d++) << "for " << lj.var << " in " << lj.header << " {\n";
    s << ind(d) << "block " << bn << "(";
    if (two) s << "ui: spatial(" << P << ") = vi, ";
    s << "vj: scan(" << Q << ") = " << lj.binding << ") {\n";
    if (two) c.ip = "ui";
    c.iq = "vj";
    std::string e = expr(t, c, 2);
    std::string st = S + "[0]";
    s << ind(d + 1) << "if vj == 0 {\n" << ind(d + 2) << st << " = " << expr(t, c, 2) << "\n";
    s << ind(d + 1) << "} else {\n"
      << ind(d + 2) << st << " = " << (is_b(t) ? "(" + st + " != " + e + ")" : "max(" + st + ", " + e + ")")
      << "\n"
      << ind(d + 1) << "}\n";
    s << ind(d + 1) << store_target(D, "ui", "vj") << " = " << st << "\n";
    s << ind(d) << "}\n";
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A block over P owning a buffer T[Q] (random scope), filled by a nested block, then
  // consumed by a nested map or reduction into D ([P, Q] or [P]).
  void stage_nested(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    std::string bn = "b" + std::to_string(blocks++);
    std::string T = "T" + std::to_string(blocks);
    std::string tt = dtype_num();
    Loop li = loop(P, false);
    int d = d0;
    s << ind(d++) << "for " << li.var << " in " << li.header << " {\n";
    s << ind(d++) << "block " << bn << "(vi: spatial(" << P << ") = " << li.binding << ") {\n";
    const char* sc[] = {"", " scope \"local\"", " scope \"shared\"", " scope \"global\""};
    s << ind(d) << "alloc " << T << ": " << tt << "[" << Q << "]" << sc[pick(4)] << "\n";
    // Fill T.
    Ctx c = base_ctx(rd);
    c.ip = "ui";
    c.iq = "vj";
    Loop lj = loop(Q, false);
    s << ind(d) << "for " << lj.var << " in " << lj.header << " {\n";
    s << ind(d + 1) << "block " << bn << "t(vj: spatial(" << Q << ") = " << lj.binding << ", ui: spatial("
      << P << ") = vi) {\n";
    emit_store(s, d + 2, T + "[vj]", tt, c);
    s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    // Consume it.
    Buf tb{T, tt, kQ, false};
    bufs.push_back(tb);
    std::vector<std::string> rd2 = rd;
    rd2.push_back(T);
    Ctx c2 = base_ctx(rd2);
    c2.ip = "ui";
    c2.iq = "vj";
    if (D.shape == kPQ) {
      Loop lk = loop(Q, false);
      s << ind(d) << "for " << lk.var << " in " << lk.header << " {\n";
      s << ind(d + 1) << "block " << bn << "w(vj: spatial(" << Q << ") = " << lk.binding << ", ui: spatial("
        << P << ") = vi) {\n";
      emit_store(s, d + 2, D.name + "[ui, vj]", D.dt, c2);
      s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    } else {
      Loop lk = loop(Q, true);
      s << ind(d) << "for " << lk.var << " in " << lk.header << " {\n";
      s << ind(d + 1) << "block " << bn << "r(vj: reduce(" << Q << ") = " << lk.binding << ", ui: spatial("
        << P << ") = vi) {\n";
      std::string t = D.dt;
      s << ind(d + 2) << "init { " << D.name << "[ui] = " << (is_b(t) ? "false" : t + "(0)") << " }\n";
      if (is_b(t))
        s << ind(d + 2) << D.name << "[ui] = " << D.name << "[ui] || " << expr(t, c2, 2) << "\n";
      else
        s << ind(d + 2) << D.name << "[ui] = " << D.name << "[ui] + " << expr(t, c2, 2) << "\n";
      s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    }
    bufs.pop_back();
    while (d > d0) s << ind(--d) << "}\n";
  }

  // An in-place update of an already written D, under a `where` or an `if`.
  void stage_update(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    if (D.shape == kOne) return stage_map(s, d0, D, rd);
    auto ds = dims(D.shape);
    std::string bn = "b" + std::to_string(blocks++);
    std::vector<Loop> ls;
    for (auto& e : ds) ls.push_back(loop(e, false));
    // Sometimes the outer loop runs over a range of scalar expressions wider or narrower
    // than the dimension, guarded (a `where` or an `if` around the nest) by the dimension's
    // bounds and random linear conjuncts: trim_no_ops narrows such loops.
    std::string guard;
    bool guard_if = false;
    std::string N0 = D.shape == kQ ? Q : P;
    if (ity == "i32" && coin(40)) {
      Loop& l = ls[0];
      std::vector<std::string> ints = {"n"};
      for (auto& sp : scalar_params)
        if (!is_f(sp.second) && !is_b(sp.second))
          ints.push_back(sp.second == "i32" ? sp.first : "i32(" + sp.first + ")");
      auto sym = [&] { return ints[static_cast<size_t>(pick(static_cast<int>(ints.size())))]; };
      const char* kinds[] = {"serial", "serial", "parallel", "unroll"};
      std::string kind = kinds[pick(4)];
      if (kind == "parallel") has_par = true;
      std::string lo, hi;
      switch (pick(4)) {
        case 0: lo = "-" + std::to_string(pick(4)); break;
        case 1: lo = "0"; break;
        case 2: lo = sym() + " - " + std::to_string(pick(4)); break;
        default: lo = "min(" + sym() + ", 2)"; break;
      }
      switch (pick(4)) {
        case 0: hi = sym() + " + " + std::to_string(pick(10)); break;
        case 1: hi = "3 * " + sym(); break;
        case 2: hi = std::to_string(8 + pick(9)); break;
        default: hi = "max(" + sym() + ", 9)"; break;
      }
      l.header = kind + "(" + lo + ", " + hi + ")";
      int off = pick(5) - 2;
      l.binding = off == 0  ? l.var
                  : off > 0 ? l.var + " + " + std::to_string(off)
                            : l.var + " - " + std::to_string(-off);
      guard = "(" + l.binding + ") >= 0 && (" + l.binding + ") < " + N0;
      int nlin = pick(3);
      for (int i = 0; i < nlin; ++i) {
        const char* cmp[] = {"<", "<=", ">", ">=", "!="};
        int a = pick(7) - 3;
        std::string lhs = a == 0 ? sym() : std::to_string(a) + " * " + l.var;
        std::string rhs =
            coin(50) ? sym() + " + " + std::to_string(pick(7) - 3) : std::to_string(pick(13) - 3);
        guard += " && " + lhs + " " + cmp[pick(5)] + " " + rhs;
      }
      guard_if = coin(50);
    }
    int d = d0;
    for (size_t i = 0; i < ls.size(); ++i) {
      s << ind(d++) << "for " << ls[i].var << " in " << ls[i].header << " {\n";
      if (i == 0 && guard_if) s << ind(d++) << "if " << guard << " {\n";
    }
    s << ind(d) << "block " << bn << "(";
    std::string ip, iq;
    spatial_iter_vars(s, D, ls, &ip, &iq);
    s << ") {\n";
    if (!guard.empty() && !guard_if) s << ind(d + 1) << "where " << guard << "\n";
    std::string b0 = "(" + ls[0].binding + ")";
    switch (guard.empty() ? pick(5) : 4) {
      case 0: s << ind(d + 1) << "where " << b0 << " % " << 2 + pick(2) << " != 1\n"; break;
      case 1:
        s << ind(d + 1) << "where " << b0 << " >= " << pick(3) << " && " << b0 << " < " << N0 << " - "
          << pick(3) << "\n";
        break;
      case 2: s << ind(d + 1) << "where " << b0 << " * 2 >= " << N0 << " - 3\n"; break;
      default: break;
    }
    // D is read only at the point updated (another point would be a spatial conflict).
    std::vector<std::string> others;
    for (auto& r : rd)
      if (r != D.name) others.push_back(r);
    Ctx c = base_ctx(others);
    c.ip = ip;
    c.iq = iq;
    std::string tgt = store_target(D, ip, iq);
    std::string t = D.dt;
    std::string v = is_b(t) ? "(" + tgt + " != " + expr(t, c, 2) + ")"
                            : "(" + tgt + (coin(50) ? " * " : " - ") + expr(t, c, 2) + ")";
    if (coin(40))
      s << ind(d + 1) << "if " << expr("bool", c, 2) << " {\n"
        << ind(d + 2) << tgt << " = " << v << "\n"
        << ind(d + 1) << "}\n";
    else
      s << ind(d + 1) << tgt << " = " << v << "\n";
    s << ind(d) << "}\n";
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A function-level scratch buffer W ([P, Q], or [Q] overwritten by every iteration)
  // written and read inside one loop over P (plan_alloc moves it into the loop, also a
  // parallel one; compact_buffers shrinks it), consumed by a map or a reduction into D.
  void stage_scratch(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    std::string bn = "b" + std::to_string(blocks++);
    std::string W = "W" + std::to_string(blocks);
    std::string wt = dtype_num();
    bool full = coin(50);
    allocs.push_back("alloc " + W + ": " + wt + (full ? "[" + P + ", " + Q + "]" : "[" + Q + "]"));
    Loop li = loop(P, false);
    int d = d0;
    s << ind(d++) << "for " << li.var << " in " << li.header << " {\n";
    Ctx c = base_ctx(rd);
    c.ip = "vi";
    c.iq = "vj";
    std::string wat = full ? W + "[vi, vj]" : W + "[vj]";
    Loop lj = loop(Q, false);
    s << ind(d) << "for " << lj.var << " in " << lj.header << " {\n";
    s << ind(d + 1) << "block " << bn << "w(vi: spatial(" << P << ") = " << li.binding << ", vj: spatial("
      << Q << ") = " << lj.binding << ") {\n";
    emit_store(s, d + 2, wat, wt, c);
    s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    bufs.push_back({W, wt, full ? kPQ : kQ, false});
    std::vector<std::string> rd2 = rd;
    rd2.push_back(W);
    Ctx c2 = base_ctx(rd2);
    c2.ip = "vi";
    c2.iq = "vj";
    // W is read only where this iteration wrote it: at [vi, *] (full) or anywhere (the
    // per-iteration scratch is rewritten whole before it is read).
    std::string t = D.dt;
    std::string wl =
        cast_to(t, full ? W + "[vi, " + index(c2, 1, Q) + "]" : W + "[" + index(c2, 1, Q) + "]", wt);
    bufs.pop_back();
    Ctx c3 = base_ctx(rd);
    c3.ip = "vi";
    c3.iq = "vj";
    if (D.shape == kPQ) {
      Loop lk = loop(Q, false);
      s << ind(d) << "for " << lk.var << " in " << lk.header << " {\n";
      s << ind(d + 1) << "block " << bn << "(vi: spatial(" << P << ") = " << li.binding << ", vj: spatial("
        << Q << ") = " << lk.binding << ") {\n";
      std::string e = expr(t, c3, 2);
      s << ind(d + 2) << D.name
        << "[vi, vj] = " << (is_b(t) ? "(" + wl + " != " + e + ")" : "max(" + wl + ", " + e + ")") << "\n";
      s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    } else {
      Loop lk = loop(Q, true);
      s << ind(d) << "for " << lk.var << " in " << lk.header << " {\n";
      s << ind(d + 1) << "block " << bn << "(vi: spatial(" << P << ") = " << li.binding << ", vj: reduce("
        << Q << ") = " << lk.binding << ") {\n";
      s << ind(d + 2) << "init { " << D.name << "[vi] = " << (is_b(t) ? "false" : t + "(0)") << " }\n";
      s << ind(d + 2) << D.name << "[vi] = " << D.name << "[vi] " << (is_b(t) ? "||" : "+") << " " << wl
        << "\n";
      s << ind(d + 1) << "}\n" << ind(d) << "}\n";
    }
    while (d > d0) s << ind(--d) << "}\n";
  }

  // A scatter into an integer buffer D written before, D[g(I[vi])] OP= e, by a block
  // annotated "atomic" with a reduce var over P (parallel loops use atomic updates or a lock;
  // the OP is commutative and associative on integers, so any order gives the same bits).
  void stage_scatter(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd) {
    std::string bn = "b" + std::to_string(blocks++);
    Loop li = loop(P, false);
    s << ind(d0) << "for " << li.var << " in " << li.header << " {\n";
    s << ind(d0 + 1) << "block " << bn << "(vi: reduce(" << P << ") = " << li.binding << ") {\n";
    s << ind(d0 + 2) << "annotate(\"atomic\", 1)\n";
    std::vector<std::string> others;
    for (auto& r : rd)
      if (r != D.name) others.push_back(r);
    Ctx c = base_ctx(others);
    c.ip = "vi";
    std::string g = index_buf.empty() ? "(vi * 7 + 3)" : index_buf + "[vi]";
    std::string N = D.shape == kP ? P : D.shape == kQ ? Q : "1";
    std::string at = D.name + "[min(max(" + g + ", 0), " + N + " - 1)]";
    if (D.shape == kOne)
      at = D.name + "[0]";
    else if (coin(50))
      at = D.name + "[(" + g + ") % " + N + "]";
    std::string t = D.dt, e = expr(t, c, 2);
    switch (is_b(t) ? 4 : pick(4)) {
      case 0: s << ind(d0 + 2) << at << " = " << at << " + " << e << "\n"; break;
      case 1: s << ind(d0 + 2) << at << " = " << at << " * " << e << "\n"; break;
      case 2: s << ind(d0 + 2) << at << " = max(" << at << ", " << e << ")\n"; break;
      case 3: s << ind(d0 + 2) << at << " = min(" << at << ", " << e << ")\n"; break;
      default: s << ind(d0 + 2) << at << " = " << at << " || " << e << "\n"; break;
    }
    s << ind(d0 + 1) << "}\n" << ind(d0) << "}\n";
  }

  void stage(std::ostringstream& s, int d0, const Buf& D, const std::vector<std::string>& rd, int kind) {
    switch (kind) {
      case 0: return stage_map(s, d0, D, rd);
      case 1: return stage_reduce(s, d0, D, rd);
      case 2:
        if (D.shape == kPQ || D.shape == kQ) return stage_scan(s, d0, D, rd);
        return stage_reduce(s, d0, D, rd);
      case 3:
        if (D.shape == kPQ || D.shape == kQ) return stage_state(s, d0, D, rd);
        return stage_map(s, d0, D, rd);
      case 5:
        if (D.shape == kPQ || D.shape == kP) return stage_scratch(s, d0, D, rd);
        return stage_map(s, d0, D, rd);
      default:
        if (D.shape == kPQ || D.shape == kP) return stage_nested(s, d0, D, rd);
        return stage_map(s, d0, D, rd);
    }
  }

  std::string program() {
    bool pn = coin(80);
    int lo = coin(10) ? 0 : 1;
    Pmax = 1 + pick(10);
    P = pn ? "n" : std::to_string(1 + pick(5));
    p_may_be_zero = pn && lo == 0;
    bool qm = coin(20);
    const char* wide[] = {"16", "17", "33", "64"};
    Q = qm ? "m" : coin(15) ? wide[pick(4)] : std::to_string(1 + pick(12));
    params.push_back("n: i32 in [" + std::to_string(lo) + ", " + std::to_string(std::max(lo, Pmax)) + "]");
    scalar_params.push_back({"n", "i32"});
    if (qm) {
      params.push_back("m: i32 in [1, 10]");
      scalar_params.push_back({"m", "i32"});
    }
    int ns = pick(3);
    for (int i = 0; i < ns; ++i) {
      std::string t = dtype_num(), nm = "s" + std::to_string(i);
      params.push_back(nm + ": " + t + (is_f(t) ? " in [-2, 2]" : " in [-5, 9]"));
      scalar_params.push_back({nm, t});
    }
    int ni = 1 + pick(3);
    for (int i = 0; i < ni; ++i) {
      Buf b;
      b.name = std::string(1, static_cast<char>('A' + i));
      b.dt = dtype_any();
      int k = pick(10);
      b.shape = k < 6 ? kPQ : k < 8 ? kP : kQ;
      b.input = true;
      std::string decl = b.name + ": " + b.dt + "[";
      auto ds = dims(b.shape);
      for (size_t j = 0; j < ds.size(); ++j) decl += (j ? ", " : "") + ds[j];
      decl += "]";
      if (!is_b(b.dt)) {
        if (is_f(b.dt))
          decl += coin(50) ? " in [-3, 3]" : " in [-100, 100]";
        else if (is_u(b.dt))
          decl += coin(50) ? " in [0, 20]" : " in [0, 65535]";
        else
          decl += coin(50) ? " in [-20, 20]" : " in [-40000, 40000]";
      }
      params.push_back(decl);
      bufs.push_back(b);
    }
    if (coin(50)) {
      index_buf = "I";
      params.push_back("I: i32[" + P + "] in [-1, " + std::to_string(Pmax) + "]");
      bufs.push_back({"I", "i32", kP, true});
    }
    int nstages = 2 + pick(4);
    std::ostringstream s;
    for (int k = 0; k < nstages; ++k) {
      if (k > 0 && coin(20)) {
        // Update an earlier written buffer in place.
        std::vector<size_t> cand;
        for (size_t i = 0; i < bufs.size(); ++i)
          if (!bufs[i].input && bufs[i].name[0] == 'D') cand.push_back(i);
        if (!cand.empty()) {
          Buf D = bufs[cand[static_cast<size_t>(pick(static_cast<int>(cand.size())))]];
          stage_update(s, 1, D, readable());
          continue;
        }
      }
      if (k > 0 && coin(15)) {
        // Scatter into an earlier written integer (or bool) vector.
        std::vector<size_t> cand;
        for (size_t i = 0; i < bufs.size(); ++i)
          if (!bufs[i].input && bufs[i].name[0] == 'D' && !is_f(bufs[i].dt) && bufs[i].shape != kPQ)
            cand.push_back(i);
        if (!cand.empty()) {
          Buf D = bufs[cand[static_cast<size_t>(pick(static_cast<int>(cand.size())))]];
          stage_scatter(s, 1, D, readable());
          continue;
        }
      }
      std::vector<std::string> rd = readable();
      const Buf& D = new_buf(k == nstages - 1 && outputs.empty());
      Buf Dc = D;
      int kind = pick(6);
      // Some stages index in i64: sizes cast, iter vars and loop vars i64.
      std::string P0 = P, Q0 = Q;
      if (coin(15)) {
        ity = "i64";
        P = "i64(" + P + ")";
        Q = "i64(" + Q + ")";
      }
      if (coin(12)) {
        // A top-level let of scalars (visible in blocks) and an if / else on a scalar,
        // both arms writing all of D.
        std::string v = "t" + std::to_string(lets++);
        s << ind(1) << "let " << v << " = n * " << lit_nz() << " - " << lit_nz() << "\n";
        scalar_params.push_back({v, "i32"});
        s << ind(1) << "if " << v << " > " << lit_nz() << " {\n";
        stage(s, 2, Dc, rd, kind);
        s << ind(1) << "} else {\n";
        stage(s, 2, Dc, rd, pick(6));
        s << ind(1) << "}\n";
        scalar_params.pop_back();
      } else {
        stage(s, 1, Dc, rd, kind);
      }
      P = P0;
      Q = Q0;
      ity = "i32";
    }
    std::ostringstream f;
    f << "func f(";
    for (size_t i = 0; i < params.size(); ++i) f << (i ? ", " : "") << params[i];
    f << ") -> (";
    for (size_t i = 0; i < outputs.size(); ++i) f << (i ? ", " : "") << outputs[i];
    f << ") {\n";
    for (auto& a : allocs) f << "  " << a << "\n";
    f << s.str() << "}\n";
    return f.str();
  }
};

std::string run_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Bit-identical, except that any NaN matches any NaN.
::testing::AssertionResult same_bits(const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << describe(a) << " vs " << describe(b);
  size_t w = dtype_bytes(a.dtype());
  auto* pa = static_cast<const uint8_t*>(a.data());
  auto* pb = static_cast<const uint8_t*>(b.data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * w, pb + i * w, w) == 0) continue;
    if (is_float(a.dtype()) && std::isnan(a.get(i)) && std::isnan(b.get(i))) continue;
    return ::testing::AssertionFailure()
           << "element " << i << ": jit " << a.get(i) << ", interp " << b.get(i);
  }
  return ::testing::AssertionSuccess();
}

bool checked_error(const std::string& e) {
  return e.find("out-of-bounds") != std::string::npos || e.find("binding of iter var") != std::string::npos ||
         e.find("integer division by zero") != std::string::npos;
}

// The part of an error both engines word alike: the interpreter prints every index and the
// buffer's shape (`load A[-1, 0]: A has shape [3, 8]`), compiled code the failing dimension
// (`load A[-1, _]: index -1 of dimension 0 is outside [0, 3)`): compare up to the buffer name.
std::string error_key(const std::string& e) {
  size_t p = e.find("out-of-bounds ");
  if (p == std::string::npos) return e;
  size_t b = e.find('[', p);
  return b == std::string::npos ? e : e.substr(0, b);
}

struct Tally {
  int compared = 0, errors = 0, invalid = 0, failed = 0;
};

// Generates, runs and compares one program. Returns false on a mismatch (reported).
bool run_one(uint64_t seed, Tally& t, bool verbose) {
  Gen g(seed);
  std::string text = g.program();
  SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + text);
  if (verbose) std::fprintf(stderr, "seed %llu\n%s", static_cast<unsigned long long>(seed), text.c_str());
  auto fail = [&](const std::string& why) {
    ++t.failed;
    ADD_FAILURE() << why;
    if (const char* dir = std::getenv("TIRC_STRUCT_FUZZ_DUMP")) {
      std::ofstream o(std::string(dir) + "/seed_" + std::to_string(seed) + ".tir");
      o << "# " << why << "\n" << text;
    }
    return false;
  };
  Module m;
  std::string perr = run_error([&] { m = parse_module(text, "gen.tir"); });
  if (!perr.empty()) return fail("generator: parse error: " + perr);
  Function f = m.find_func("f");
  ArgMap in = random_inputs(*f, seed);
  ArgMap ref;
  std::string ierr = run_error([&] { ref = run_interp(*f, in); });
  if (!ierr.empty() && !checked_error(ierr)) {
    ++t.invalid;  // invalid program (uninitialised read, spatial conflict): not compared
    if (std::getenv("TIRC_STRUCT_FUZZ_SHOW_INVALID")) std::fprintf(stderr, "invalid: %s\n", ierr.c_str());
    return true;
  }
  std::unique_ptr<JitProgram> jp;
  std::string cerr = run_error([&] { jp = compile_jit(*f); });
  if (!cerr.empty()) return fail("jit refused: " + cerr);
  ArgMap got;
  std::string jerr = run_error([&] { got = jp->run(in); });
  if (!ierr.empty()) {
    ++t.errors;
    if (g.has_par) {
      if (!checked_error(jerr)) return fail("interp: " + ierr + "\njit: " + jerr);
    } else if (error_key(jerr) != error_key(ierr)) {
      return fail("interp: " + ierr + "\njit: " + jerr);
    }
    return true;
  }
  if (!jerr.empty()) return fail("jit error where the interpreter ran: " + jerr);
  ++t.compared;
  for (auto& [name, arr] : ref) {
    if (!got.count(name)) return fail("jit lacks output " + name);
    auto r = same_bits(got.at(name), arr);
    if (!r) return fail("output " + name + ": " + r.message());
  }
  return true;
}

void run_many(uint64_t first, int iters) {
  Tally t;
  bool verbose = std::getenv("TIRC_STRUCT_FUZZ_VERBOSE") != nullptr;
  for (int i = 0; i < iters; ++i) run_one(first + static_cast<uint64_t>(i), t, verbose);
  std::printf(
      "struct fuzz: seeds %llu..%llu: %d compared, %d stopped by the same error, %d invalid (skipped), %d "
      "failed\n",
      static_cast<unsigned long long>(first), static_cast<unsigned long long>(first + iters - 1), t.compared,
      t.errors, t.invalid, t.failed);
  EXPECT_GT(t.compared, iters / 3);  // the generator mostly makes valid, error-free programs
}

}  // namespace

TEST(StructFuzz, RandomStructuredProgramsAgreeWithTheInterpreter) {
#ifdef TIRC_TEST_SANITIZED
  run_many(1, 3);
#else
  run_many(1, 20);
#endif
}

// The long hunt (see the header): TIRC_STRUCT_FUZZ_SEED (default 1000), TIRC_STRUCT_FUZZ_ITERS
// (default 500).
TEST(StructFuzz, DISABLED_Long) {
  uint64_t first = 1000;
  int iters = 500;
  if (const char* e = std::getenv("TIRC_STRUCT_FUZZ_SEED")) first = std::strtoull(e, nullptr, 10);
  if (const char* e = std::getenv("TIRC_STRUCT_FUZZ_ITERS")) iters = std::atoi(e);
  run_many(first, iters);
}

}  // namespace tirc
#endif  // TIRC_WITH_LLVM

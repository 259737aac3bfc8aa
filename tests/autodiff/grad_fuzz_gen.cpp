// Random differentiable .tir functions (see grad_fuzz_gen.h). The generator keeps an interval
// for every float value it builds (from the declared input ranges), so that it can wrap an
// argument that could leave a function's domain (`log(e * e + 0.5)`) and scale values that
// could grow large; integer index expressions carry their exact range, so that every load is
// in bounds (by construction, a guard, a clamp or a floor modulo).
#include "tests/autodiff/grad_fuzz_gen.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

namespace tirc::testing {
namespace {

struct Dim {
  int v = 1;  // the value (for a symbolic dim: the largest n checked, used for intervals)
  bool sym = false;
  std::string str() const { return sym ? "n" : std::to_string(v); }
};

struct Buf {
  std::string name, dt;
  std::vector<Dim> shape;
  double lo = -1, hi = 1;  // value interval
  bool input = false, output = false;
};

struct IVar {
  std::string name, kind;  // spatial / reduce / scan
  Dim ext;
};

struct IE {  // integer index expression with its exact range
  std::string s;
  long lo, hi;
};

struct FE {  // float expression with an interval and its dtype
  std::string s;
  double lo, hi;
  std::string dt;
};

constexpr int kSymMax = 3;  // the largest n checked

class Gen {
 public:
  Gen(uint64_t seed, bool extended)
      : rng_(seed), ext_(seed * 0x9E3779B97F4A7C15ull + 0x51ED27ull), extended_(extended) {}

  FuzzProgram make();

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  void tag(const std::string& t) { tags_.insert(t); }
  // Decisions about the constructs added in round 16 come from a stream of their own, so a
  // program that uses none of them is the one the seed gave before (rng_ is untouched).
  bool ext(double p) {
    return extended_ && std::uniform_real_distribution<double>(0, 1)(ext_) < p;
  }
  int ext_pick(int n) { return static_cast<int>(ext_() % static_cast<uint64_t>(n)); }

  Dim new_dim() {
    if (symbolic_ && chance(0.25)) return Dim{kSymMax, true};
    return Dim{pool_[pick(static_cast<int>(pool_.size()))], false};
  }
  static long numel(const std::vector<Dim>& s) {
    long n = 1;
    for (auto& d : s) n *= d.v;
    return n;
  }

  // ---- float expressions ----
  static FE mk(std::string s, double lo, double hi, const std::string& dt) {
    if (lo > hi) std::swap(lo, hi);
    return FE{std::move(s), lo, hi, dt};
  }
  static double mag(const FE& e) { return std::max(std::fabs(e.lo), std::fabs(e.hi)); }
  FE bounded(FE e, double m = 20) {
    if (mag(e) <= m) return e;
    double s = std::pow(10.0, -std::ceil(std::log10(mag(e) / 8)));
    std::ostringstream t;
    t << s;
    std::string lit = t.str();
    if (lit.find('.') == std::string::npos && lit.find('e') == std::string::npos) lit += ".0";
    return mk("(" + e.s + " * " + lit + ")", e.lo * s, e.hi * s, e.dt);
  }
  FE positive(FE e) {  // a value >= 0.2
    if (e.lo >= 0.2) return e;
    switch (pick(3)) {
      case 0: {
        double m = std::max(e.lo * e.lo, e.hi * e.hi);
        double l = (e.lo <= 0 && e.hi >= 0) ? 0 : std::min(e.lo * e.lo, e.hi * e.hi);
        return mk("(" + e.s + " * " + e.s + " + 0.5)", l + 0.5, m + 0.5, e.dt);
      }
      case 1: {
        FE a = bounded(e, 3);
        return mk("exp(" + a.s + ")", std::exp(a.lo), std::exp(a.hi), e.dt);
      }
      default: return mk("(abs(" + e.s + ") + 0.25)", 0.25, mag(e) + 0.25, e.dt);
    }
  }
  std::string lit() {
    static const char* lits[] = {"0.5", "1.5", "0.25", "2.0", "0.75", "1.25", "3.0", "-0.5", "-1.5", "0.3"};
    return lits[pick(10)];
  }
  FE cast_to(FE e, const std::string& dt) {
    if (e.dt == dt) return e;
    tag("cast");
    return mk(dt + "(" + e.s + ")", e.lo, e.hi, dt);
  }

  struct Ctx {
    std::vector<IVar> vars;
    std::string dt;
    std::vector<FE> lets;  // name in s
    std::string fav;       // buffer read last (read again often)
    int nlet = 0;
    std::vector<std::string> self;  // loads of the buffer being updated in place (with intervals)
    double self_lo = 0, self_hi = 0;
  };

  IE var_ie(const IVar& v) { return IE{v.name, 0, v.ext.v - 1}; }
  std::vector<IVar> const_vars(const Ctx& c) {
    std::vector<IVar> r;
    for (auto& v : c.vars)
      if (!v.ext.sym) r.push_back(v);
    return r;
  }

  // An index into a dimension of extent S; conditions that must hold go to `guards`.
  std::string index_for(Ctx& c, const Dim& S, std::vector<std::string>& guards) {
    if (S.sym) {
      std::vector<IVar> sv;
      for (auto& v : c.vars)
        if (v.ext.sym) sv.push_back(v);
      if (sv.empty()) return "0";
      const IVar& v = sv[pick(static_cast<int>(sv.size()))];
      switch (pick(5)) {
        case 0:
          tag("sym_shift");
          guards.push_back(v.name + " >= 1");
          return v.name + " - 1";
        case 1: tag("sym_reverse"); return "n - 1 - " + v.name;
        case 2:
          if (pick(2)) {
            tag("sym_mod");
            return "(" + v.name + " + 1) % n";
          }
          tag("sym_clamp");
          return "min(" + v.name + " + 1, n - 1)";
        default: return v.name;
      }
    }
    std::vector<IVar> cv = const_vars(c);
    IE e{"0", 0, 0};
    int k = cv.empty() ? 0 : pick(20);
    auto rv = [&]() { return cv[pick(static_cast<int>(cv.size()))]; };
    long s = S.v;
    switch (k) {
      case 0:
        e = IE{std::to_string(pick(S.v)), 0, 0};
        e.lo = e.hi = std::stol(e.s);
        tag("idx_const");
        break;
      case 1:
      case 2:
      case 3:
      case 4:
        e = var_ie(rv());
        tag("idx_identity");
        break;
      case 5: {
        IVar v = rv();
        e = IE{std::to_string(s - 1) + " - " + v.name, s - v.ext.v, s - 1};
        tag("idx_reverse");
        break;
      }
      case 6: {
        IVar v = rv();
        long d = pick(2) ? 1 + pick(2) : -1 - pick(2);
        e = IE{v.name + (d > 0 ? " + " : " - ") + std::to_string(std::labs(d)), d, v.ext.v - 1 + d};
        tag("idx_shift");
        break;
      }
      case 7: {
        IVar v = rv(), w = rv();
        long st = 2 + pick(2);
        e = IE{std::to_string(st) + " * " + v.name + " + " + w.name, 0, st * (v.ext.v - 1) + w.ext.v - 1};
        tag("idx_strided");
        break;
      }
      case 8: {
        IVar v = rv(), w = rv();
        long dl = 2;
        e = IE{v.name + " + " + std::to_string(dl) + " * " + w.name, 0, v.ext.v - 1 + dl * (w.ext.v - 1)};
        tag("idx_dilated");
        break;
      }
      case 9: {
        IVar v = rv();
        long q = 2 + pick(2);
        e = IE{v.name + " // " + std::to_string(q), 0, (v.ext.v - 1) / q};
        tag("idx_floordiv");
        break;
      }
      case 10: {
        IVar v = rv();
        long off = pick(3) - 1;
        std::string in = off == 0 ? v.name : "(" + v.name + (off > 0 ? " + 1" : " - 1") + ")";
        e = IE{in + " % " + std::to_string(s), 0,
               std::min<long>(s - 1, v.ext.v - 1 + std::max<long>(off, 0))};
        if (off != 0) e.lo = 0, e.hi = s - 1;
        tag("idx_mod");
        break;
      }
      case 11: {
        IVar v = rv(), w = rv();
        if (v.name == w.name) {
          e = var_ie(v);
          break;
        }
        e = IE{v.name + " * " + std::to_string(w.ext.v) + " + " + w.name, 0,
               (v.ext.v - 1) * w.ext.v + w.ext.v - 1};
        tag("idx_flatten");
        break;
      }
      case 12: {
        IVar v = rv();
        if (pick(2))
          e = IE{"min(" + v.name + " + 1, " + std::to_string(s - 1) + ")", std::min<long>(1, s - 1),
                 std::min<long>(v.ext.v, s - 1)};
        else
          e = IE{"max(" + v.name + " - 1, 0)", 0, std::max(0, v.ext.v - 2)};
        tag("idx_clamp");
        break;
      }
      case 13: {  // data-dependent gather
        IVar v = rv();
        std::string iname = "I" + std::to_string(nidx_++);
        if (pick(3) == 0) {
          // Through an i32 buffer computed by a block of f (emitted before the current one).
          std::string jn = "J" + std::to_string(nidx_ - 1);
          const Buf& x0 = bufs_[0];
          std::string val = "(v0 * 3 + " + iname + "[v0]) % " + std::to_string(s);
          if (!x0.shape[0].sym && pick(2)) {
            std::string xi = "v0 % " + std::to_string(x0.shape[0].v);
            for (size_t d = 1; d < x0.shape.size(); ++d) xi += ", 0";
            val = "i32(floor(abs(" + x0.name + "[" + xi + "]) * 3.0)) % " + std::to_string(s);
          }
          pre_blocks_ += "  for lv0 in serial(" + std::to_string(v.ext.v) + ") {\n    block " + jn +
                         "(v0: spatial(" + std::to_string(v.ext.v) + ") = lv0) { " + jn + "[v0] = " + val +
                         " }\n  }\n";
          Buf jb;
          jb.name = jn, jb.dt = "i32", jb.shape = {Dim{v.ext.v, false}};
          bufs_.push_back(jb);
          idx_inputs_.push_back(iname + ": i32[" + std::to_string(v.ext.v) + "] in [0, 9]");
          tag("idx_int_buffer");
          e = IE{jn + "[" + v.name + "]", 0, s - 1};
          break;
        }
        idx_inputs_.push_back(iname + ": i32[" + std::to_string(v.ext.v) + "] in [0, " +
                              std::to_string(s - 1) + "]");
        e = IE{iname + "[" + v.name + "]", 0, s - 1};
        tag("idx_gather");
        break;
      }
      case 14: {
        IVar v = rv(), w = rv();
        e = IE{v.name + " * " + w.name, 0, (long)(v.ext.v - 1) * (w.ext.v - 1)};
        tag("idx_product");
        break;
      }
      case 16: {
        IVar v = rv(), w = rv();
        long q = 2 + pick(2);
        e = IE{"(" + v.name + " + " + w.name + ") // " + std::to_string(q), 0, (v.ext.v + w.ext.v - 2) / q};
        tag("idx_sum_div");
        break;
      }
      case 17: {
        IVar v = rv(), w = rv();
        e = IE{v.name + " - " + w.name, 1 - w.ext.v, v.ext.v - 1};
        tag("idx_diff");
        break;
      }
      case 18: {
        IVar v = rv(), w = rv();
        long a = 2 + pick(2), b = 1 + pick(2), k0 = pick(2);
        e = IE{std::to_string(a) + " * " + v.name + " + " + std::to_string(b) + " * " + w.name + " + " +
                   std::to_string(k0),
               k0, a * (v.ext.v - 1) + b * (w.ext.v - 1) + k0};
        tag("idx_two_coeffs");
        break;
      }
      case 19: {
        IVar u = rv(), v = rv(), w = rv();
        e = IE{u.name + " + " + v.name + " - " + w.name, 1 - w.ext.v, u.ext.v + v.ext.v - 2};
        tag("idx_three_vars");
        break;
      }
      default: {
        IVar v = rv(), w = rv();
        e = IE{v.name + " + " + w.name, 0, v.ext.v - 1 + w.ext.v - 1};
        tag("idx_sum");
        break;
      }
    }
    if (e.lo >= 0 && e.hi < s) return e.s;
    int fix = pick(4);
    if (fix == 0 && e.lo >= 0) {
      tag("fix_mod");
      return "(" + e.s + ") % " + std::to_string(s);
    }
    if (fix == 1) {
      tag("fix_clamp");
      return "min(max(" + e.s + ", 0), " + std::to_string(s - 1) + ")";
    }
    tag("fix_guard");
    if (e.lo < 0) guards.push_back(e.s + " >= 0");
    if (e.hi >= s) guards.push_back(e.s + " < " + std::to_string(s));
    return e.s;
  }

  FE load(Ctx& c) {
    std::vector<const Buf*> cand;
    for (auto& b : bufs_)
      if (b.dt != "i32" && (b.input || written_.count(b.name)) && b.name != cur_target_) cand.push_back(&b);
    if (cand.empty()) return mk_lit(c);
    const Buf* bp = cand[pick(static_cast<int>(cand.size()))];
    if (!c.fav.empty() && chance(0.4))
      for (auto* x : cand)
        if (x->name == c.fav) bp = x, tag("reread");
    const Buf copy = *bp;  // index_for may add a buffer to bufs_
    const Buf* b = &copy;
    c.fav = b->name;
    std::vector<std::string> guards;
    std::string idx;
    for (size_t d = 0; d < b->shape.size(); ++d) idx += (d ? ", " : "") + index_for(c, b->shape[d], guards);
    FE e = mk(b->name + "[" + idx + "]", b->lo, b->hi, b->dt);
    if (!guards.empty()) {
      std::string g;
      for (size_t i = 0; i < guards.size(); ++i) g += (i ? " && " : "") + guards[i];
      e = mk("if_then_else(" + g + ", " + e.s + ", 0.0)", std::min(e.lo, 0.0), std::max(e.hi, 0.0), e.dt);
    }
    return cast_to(e, c.dt);
  }

  std::string int_cond(Ctx& c) {
    if (c.vars.empty()) return "1 > 0";
    const IVar& v = c.vars[pick(static_cast<int>(c.vars.size()))];
    switch (pick(4)) {
      case 0: return v.name + " >= 1";
      case 1: return v.name + " % 2 == 0";
      case 2: return v.name + " < " + std::to_string(std::max(1, v.ext.v - 1));
      default: {
        const IVar& w = c.vars[pick(static_cast<int>(c.vars.size()))];
        return v.name + " + " + w.name + " < 3";
      }
    }
  }

  FE leaf(Ctx& c) {
    int k = pick(12);
    if (k < 7) return load(c);
    if (k == 7) return mk_lit(c);
    if (k == 8 && !c.vars.empty()) {  // integer subexpression
      tag("int_subexpr");
      const IVar& v = c.vars[pick(static_cast<int>(c.vars.size()))];
      const IVar& w = c.vars[pick(static_cast<int>(c.vars.size()))];
      std::string s = pick(2) ? v.name + " * 2 - " + w.name : "(" + v.name + " + " + w.name + ") % 3";
      return mk(c.dt + "(" + s + ")", -kSymMax, 2.0 * 7, c.dt);
    }
    if (k == 9 && !c.lets.empty()) {
      tag("let_use");
      return c.lets[pick(static_cast<int>(c.lets.size()))];
    }
    if (k == 10 && scalar_) {
      tag("scalar_param");
      return cast_to(mk("s", 0.5, 1.5, "f32"), c.dt);
    }
    if (k == 11 && !c.self.empty()) {
      tag("self_read");
      return mk(c.self[pick(static_cast<int>(c.self.size()))], c.self_lo, c.self_hi, c.dt);
    }
    return load(c);
  }
  // A literal leaf. In f64 code it is cast: a literal alone is f32 (LANGUAGE.md), and a let
  // bound to literals only (`let t = 0.25`) would be f32 next to f64 values.
  FE mk_lit(Ctx& c) {
    std::string l = lit();
    double v = std::stod(l);
    return mk(c.dt == "f32" ? l : c.dt + "(" + l + ")", v, v, c.dt);
  }

  FE unary(Ctx& c, FE a) {
    auto wrap = [&](const std::string& f, double lo, double hi) {
      tag("fn_" + f);
      return mk(f + "(" + a.s + ")", lo, hi, c.dt);
    };
    switch (pick(15)) {
      case 0: a = bounded(a, 3); return wrap("exp", std::exp(a.lo), std::exp(a.hi));
      case 1: a = bounded(positive(a), 20); return wrap("log", std::log(a.lo), std::log(a.hi));
      case 2: return wrap("tanh", std::tanh(a.lo), std::tanh(a.hi));
      case 3: return wrap("sigmoid", 1 / (1 + std::exp(-a.lo)), 1 / (1 + std::exp(-a.hi)));
      case 4: a = bounded(positive(a), 20); return wrap("sqrt", std::sqrt(a.lo), std::sqrt(a.hi));
      case 5: return wrap("erf", std::erf(a.lo), std::erf(a.hi));
      case 6: return wrap("abs", 0, mag(a));
      case 7: return wrap("sin", -1, 1);
      case 8: return wrap("cos", -1, 1);
      case 9: {
        a = bounded(positive(a), 5);
        FE b = bounded(expr(c, 1), 2);
        tag("fn_pow");
        double v[4] = {std::pow(a.lo, b.lo), std::pow(a.lo, b.hi), std::pow(a.hi, b.lo),
                       std::pow(a.hi, b.hi)};
        return mk("pow(" + a.s + ", " + b.s + ")", *std::min_element(v, v + 4), *std::max_element(v, v + 4),
                  c.dt);
      }
      case 10: a = bounded(positive(a), 20); return wrap("rsqrt", 1 / std::sqrt(a.hi), 1 / std::sqrt(a.lo));
      case 11: a = bounded(a, 3); return wrap("expm1", std::expm1(a.lo), std::expm1(a.hi));
      case 12: {
        FE p = positive(a);
        tag("fn_log1p");
        return mk("log1p(" + p.s + ")", std::log1p(p.lo), std::log1p(p.hi), c.dt);
      }
      case 13: return mk("(-" + a.s + ")", -a.hi, -a.lo, c.dt);
      default: {  // an expression-level let using its name twice
        std::string t = "t" + std::to_string(c.nlet++);
        FE tv = mk(t, a.lo, a.hi, c.dt);
        c.lets.push_back(tv);
        FE body = binary(c, tv, pick(2) ? tv : leaf(c));
        c.lets.pop_back();
        tag("let_expr");
        return mk("(let " + t + " = " + a.s + " in " + body.s + ")", body.lo, body.hi, c.dt);
      }
    }
  }

  FE binary(Ctx& c, FE a, FE b) {
    switch (pick(10)) {
      case 0:
      case 1: return bounded(mk("(" + a.s + " + " + b.s + ")", a.lo + b.lo, a.hi + b.hi, c.dt));
      case 2: return bounded(mk("(" + a.s + " - " + b.s + ")", a.lo - b.hi, a.hi - b.lo, c.dt));
      case 3:
      case 4: {
        double v[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
        return bounded(mk("(" + a.s + " * " + b.s + ")", *std::min_element(v, v + 4),
                          *std::max_element(v, v + 4), c.dt));
      }
      case 5: {
        b = positive(b);
        double v[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
        tag("div");
        return bounded(mk("(" + a.s + " / " + b.s + ")", *std::min_element(v, v + 4),
                          *std::max_element(v, v + 4), c.dt));
      }
      case 6:
        tag("min");
        return mk("min(" + a.s + ", " + b.s + ")", std::min(a.lo, b.lo), std::min(a.hi, b.hi), c.dt);
      case 7:
        tag("max");
        return mk("max(" + a.s + ", " + b.s + ")", std::max(a.lo, b.lo), std::max(a.hi, b.hi), c.dt);
      case 8: {
        std::string cond;
        if (pick(2))
          cond = int_cond(c), tag("select_int");
        else
          cond = a.s + " > " + lit(), tag("select_float");
        return mk("select(" + cond + ", " + a.s + ", " + b.s + ")", std::min(a.lo, b.lo),
                  std::max(a.hi, b.hi), c.dt);
      }
      default: {
        tag("if_then_else");
        return mk("if_then_else(" + int_cond(c) + ", " + a.s + ", " + b.s + ")", std::min(a.lo, b.lo),
                  std::max(a.hi, b.hi), c.dt);
      }
    }
  }

  FE expr(Ctx& c, int depth) {
    if (depth <= 0 || chance(0.2)) return leaf(c);
    if (pick(3) == 0) return unary(c, expr(c, depth - 1));
    FE a = expr(c, depth - 1);
    FE b = expr(c, depth - 1);
    return binary(c, a, b);
  }

  // ---- blocks ----
  std::string loops_and_block(const std::string& bname, const std::vector<IVar>& vars,
                              const std::string& body, const std::string& where, bool plain);
  void block(int bi, bool last, std::ostringstream& out);
  void scan_region(int bi, bool last, std::ostringstream& out);
  // Round 16 constructs (see generate_grad_fuzz in the header).
  bool pool_block(int bi, bool last, std::ostringstream& out);
  bool concat_block(int bi, bool last, std::ostringstream& out);
  bool scan_two_states(int bi, bool last, std::ostringstream& out);
  std::string region_clauses(const std::string& body, const std::vector<std::string>& writes) const;
  std::string shape_str(const std::string& name) const;

  std::mt19937_64 rng_, ext_;
  bool extended_ = true;
  std::vector<int> pool_;
  bool symbolic_ = false, scalar_ = false, scan_outer_ = false;
  std::vector<Buf> bufs_;
  std::set<std::string> written_;
  std::string cur_target_;
  std::vector<std::string> idx_inputs_;
  std::string pre_blocks_;
  std::pair<double, double> two_red_{0, 0};  // i32 index blocks the current block's loads need
  int nidx_ = 0, nalloc_ = 0;
  std::set<std::string> tags_;
  std::vector<std::string> outputs_;
  std::vector<std::string> cur_writes_;  // buffers the block being emitted stores to
};

std::string Gen::shape_str(const std::string& name) const {
  for (auto& b : bufs_)
    if (b.name == name) {
      std::string r;
      for (size_t d = 0; d < b.shape.size(); ++d) r += (d ? ", 0:" : "0:") + b.shape[d].str();
      return r;
    }
  for (auto& x : idx_inputs_)  // "I3: i32[5] in [0, 4]"
    if (x.compare(0, name.size() + 1, name + ":") == 0) {
      size_t a = x.find('['), z = x.find(']');
      return "0:" + x.substr(a + 1, z - a - 1);
    }
  return "";
}

// Hand-written `reads` / `writes` of a block body (TVM's T.reads / T.writes, whole buffers):
// a buffer is read when it is loaded, or stored with a compound operator (`+=`, `max=`).
std::string Gen::region_clauses(const std::string& body, const std::vector<std::string>& writes) const {
  std::vector<std::string> names;
  for (auto& b : bufs_) names.push_back(b.name);
  for (auto& x : idx_inputs_) names.push_back(x.substr(0, x.find(':')));
  std::vector<std::string> reads;
  for (auto& n : names) {
    bool read = false;
    for (size_t at = body.find(n + "["); at != std::string::npos && !read; at = body.find(n + "[", at + 1)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(body[at - 1])) || body[at - 1] == '_')) continue;
      size_t q = at;
      while (q > 0 && body[q - 1] == ' ') --q;
      bool store = q == 0 || body[q - 1] == '\n' || body[q - 1] == '{' || body[q - 1] == ';';
      if (!store) {
        read = true;
        break;
      }
      int depth = 0;
      size_t e = at + n.size();
      for (; e < body.size(); ++e) {
        if (body[e] == '[') ++depth;
        if (body[e] == ']' && --depth == 0) break;
      }
      size_t op = body.find_first_not_of(' ', e + 1);
      if (op != std::string::npos && body[op] != '=') read = true;  // += -= *= max= min=
    }
    if (read) reads.push_back(n);
  }
  std::string r;
  auto list = [&](const std::vector<std::string>& v) {
    std::string l;
    for (size_t i = 0; i < v.size(); ++i) l += (i ? ", " : "") + v[i] + "[" + shape_str(v[i]) + "]";
    return l;
  };
  if (!reads.empty()) r += "reads " + list(reads) + "\n";
  if (!writes.empty()) r += "writes " + list(writes) + "\n";
  return r;
}

std::string Gen::loops_and_block(const std::string& bname, const std::vector<IVar>& vars,
                                 const std::string& body, const std::string& where, bool plain) {
  if (plain) {
    // Statements straight under loops named like the iter vars (no block: normalisation
    // wraps them), or, sometimes, inside a block without iter vars that holds the loops and
    // says what it reads and writes (TVM's opaque block).
    tag("plain_loops");
    std::ostringstream s;
    int depth = 0;
    if (ext(0.4)) {
      tag("opaque_block");
      s << "  block " << bname << "() {\n";
      std::istringstream rs(region_clauses(body, cur_writes_));
      for (std::string line; std::getline(rs, line);) s << "    " << line << "\n";
      ++depth;
      for (auto& v : vars)
        s << std::string(2 + 2 * depth++, ' ') << "for " << v.name << " in serial(" << v.ext.str() << ") {\n";
      std::istringstream bs(body);
      for (std::string line; std::getline(bs, line);) s << std::string(2 + 2 * depth, ' ') << line << "\n";
      for (int d = depth; d > 0; --d) s << std::string(2 * d, ' ') << "}\n";
      return s.str();
    }
    for (auto& v : vars)
      s << std::string(2 + 2 * depth++, ' ') << "for " << v.name << " in serial(" << v.ext.str() << ") {\n";
    std::istringstream bs(body);
    for (std::string line; std::getline(bs, line);) s << std::string(2 + 2 * depth, ' ') << line << "\n";
    for (int d = depth; d > 0; --d) s << std::string(2 * d, ' ') << "}\n";
    return s.str();
  }
  // Loop nest: one loop per iter var (order shuffled: reduce loops may be outside), or a
  // fused loop for two constant spatial vars.
  std::vector<size_t> order(vars.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  bool has_scan = false;
  for (auto& v : vars) has_scan |= v.kind == "scan";
  if (!has_scan && chance(0.3)) std::shuffle(order.begin(), order.end(), rng_), tag("loop_order");
  if (scan_outer_) {
    // A step reading other spatial points of the step before: the scan loop goes outside.
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return vars[i].kind == "scan"; });
    scan_outer_ = false;
  }
  std::vector<std::string> bind(vars.size());
  std::vector<std::string> heads;
  std::vector<std::string> extra_where;
  size_t fuse_at = vars.size();
  if (vars.size() >= 2 && where.empty() && chance(0.15)) {
    for (size_t q = 0; q + 1 < order.size(); ++q) {
      const IVar &a = vars[order[q]], &b = vars[order[q + 1]];
      if (a.kind == "spatial" && b.kind == "spatial" && !a.ext.sym && !b.ext.sym) {
        fuse_at = q;
        break;
      }
    }
  }
  std::ostringstream s;
  int depth = 0;
  for (size_t q = 0; q < order.size(); ++q) {
    const IVar& v = vars[order[q]];
    std::string lv = "l" + v.name;
    if (q == fuse_at) {
      const IVar& w = vars[order[q + 1]];
      std::string f = "f" + v.name;
      s << std::string(2 + 2 * depth, ' ') << "for " << f << " in serial(" << v.ext.v * w.ext.v << ") {\n";
      bind[order[q]] = f + " // " + std::to_string(w.ext.v);
      bind[order[q + 1]] = f + " % " + std::to_string(w.ext.v);
      ++depth, ++q;
      tag("fused_loop");
      continue;
    }
    std::string kind = "serial";
    // Bindings that are not a plain loop var (round 16): a rotation `(l + k) % E`, `l % E`,
    // or `l // 2` over a loop twice as long with `where l % 2 == p` keeping one of each pair.
    if (v.kind != "scan" && !v.ext.sym && v.ext.v >= 2 && where.find("l" + v.name) == std::string::npos &&
        ext(0.12)) {
      int mode = ext_pick(3);
      // A reduce var with an init must be 0 at its loop's first iteration (the init runs
      // at the point where every reduce var is 0, in loop order).
      bool first0 = v.kind == "reduce" && body.find("init {") != std::string::npos;
      if (first0 && mode == 0) mode = 1;
      std::string ext_s = std::to_string(v.ext.v);
      if (mode == 2) {
        s << std::string(2 + 2 * depth, ' ') << "for " << lv << " in serial(" << 2 * v.ext.v << ") {\n";
        bind[order[q]] = lv + " // 2";
        extra_where.push_back(lv + " % 2 == " + std::to_string(first0 ? 0 : ext_pick(2)));
        tag("bind_halve");
      } else {
        s << std::string(2 + 2 * depth, ' ') << "for " << lv << " in serial(" << ext_s << ") {\n";
        std::string k = std::to_string(1 + ext_pick(v.ext.v - 1));
        bind[order[q]] = mode == 0 ? "(" + lv + " + " + k + ") % " + ext_s : lv + " % " + ext_s;
        tag(mode == 0 ? "bind_rotate" : "bind_mod");
      }
      ++depth;
      continue;
    }
    if (v.kind == "spatial" && chance(0.12)) {
      static const char* ks[3] = {"parallel", "unroll", "vectorized"};
      kind = ks[pick(3)];
      tag("loop_kind");
    }
    if (v.kind == "scan" && !v.ext.sym && chance(0.3)) {
      // The scan var bound to its loop minus a constant.
      s << std::string(2 + 2 * depth, ' ') << "for " << lv << " in serial(1, " << v.ext.v + 1 << ") {\n";
      bind[order[q]] = lv + " - 1";
      ++depth;
      tag("scan_offset");
      continue;
    }
    s << std::string(2 + 2 * depth, ' ') << "for " << lv << " in " << kind << "(" << v.ext.str() << ") {\n";
    bind[order[q]] = lv;
    ++depth;
  }
  std::string ind(2 + 2 * depth, ' ');
  // Opaque iter vars (normalisation rewrite 8 finds their kinds) and hand-written regions.
  bool opaque = !has_scan && body.find("init {") == std::string::npos && ext(0.15);
  if (opaque) tag("opaque_vars");
  s << ind << "block " << bname << "(";
  for (size_t i = 0; i < vars.size(); ++i)
    s << (i ? ", " : "") << vars[i].name << ": " << (opaque ? std::string("opaque") : vars[i].kind) << "("
      << vars[i].ext.str() << ") = " << bind[i];
  s << ") {\n";
  std::string w = where;
  for (auto& x : extra_where) w += (w.empty() ? "" : " && ") + x;
  if (!w.empty()) s << ind << "  where " << w << "\n";
  if (opaque || ext(0.15)) {
    tag("region_clauses");
    std::istringstream rs(region_clauses(body, cur_writes_));
    for (std::string line; std::getline(rs, line);) s << ind << "  " << line << "\n";
  }
  std::istringstream bs(body);
  for (std::string line; std::getline(bs, line);) s << ind << "  " << line << "\n";
  s << ind << "}\n";
  for (int d = depth; d > 0; --d) s << std::string(2 * d, ' ') << "}\n";
  return s.str();
}

void Gen::block(int bi, bool last, std::ostringstream& out) {
  Ctx c;
  std::string bname = "b" + std::to_string(bi);
  // Kinds: 0 spatial, 1 reduction, 2 in-place update, 3 scan, 4 two stores, 5 partial
  // in-place update (a slice, under an `if` or `where`), 6 scatter-add through an index input.
  std::vector<const Buf*> updatable, sliceable;
  for (auto& b : bufs_)
    if (!b.input && written_.count(b.name) && !b.shape.empty() && numel(b.shape) <= 64) {
      updatable.push_back(&b);
      if (!b.shape[0].sym && b.shape[0].v >= 3) sliceable.push_back(&b);
    }
  static const int kinds[20] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 6, 6, 7};
  int kind = kinds[pick(20)];
  if (kind == 7) return scan_region(bi, last, out);
  if (ext(0.07) && pool_block(bi, last, out)) return;
  if (ext(0.06) && concat_block(bi, last, out)) return;
  if (ext(0.06) && scan_two_states(bi, last, out)) return;
  if ((kind == 2 && updatable.empty()) || ((kind == 5 || kind == 6) && sliceable.empty())) kind = 0;

  c.dt = chance(0.2) ? "f64" : "f32";
  std::string store, target, target2;
  std::vector<std::string> sidx;  // store index components
  std::vector<IVar> vars;
  std::string where, pre_if;
  auto join = [](const std::vector<std::string>& v) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + v[i];
    return r;
  };
  if (kind == 2 || kind == 5 || kind == 6) {
    const Buf& t = kind == 2 ? *updatable[pick(static_cast<int>(updatable.size()))]
                             : *sliceable[pick(static_cast<int>(sliceable.size()))];
    target = t.name;
    c.dt = t.dt;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d == 0 && kind == 6) continue;  // the scattered dimension
      Dim e = t.shape[d];
      std::string vn = "v" + std::to_string(d);
      if (d == 0 && kind == 5) {
        int off = 1 + pick(2);
        vars.push_back(IVar{vn, "spatial", Dim{e.v - off, false}});
        sidx.push_back(vn + " + " + std::to_string(off));
        continue;
      }
      vars.push_back(IVar{vn, "spatial", e});
      sidx.push_back(vn);
    }
    if (kind == 6) {
      std::string iname = "I" + std::to_string(nidx_++);
      Dim re{2 + pick(5), false};
      idx_inputs_.push_back(iname + ": i32[" + std::to_string(re.v) + "] in [0, " +
                            std::to_string(t.shape[0].v - 1) + "]");
      vars.push_back(IVar{"r0", pick(3) == 0 ? "opaque" : "reduce", re});
      sidx.insert(sidx.begin(), iname + "[r0]");
      tag("scatter_add");
    }
    store = t.name + "[" + join(sidx) + "]";
    if (kind != 6) {
      c.self.push_back(store);
      c.self_lo = t.lo, c.self_hi = t.hi;
    }
    if (kind == 5) {
      tag("partial_update");
      if (pick(2))
        pre_if = "?", tag("if_stmt");  // its condition once c.vars is set
      else if (!vars.empty())
        where = "l" + vars[0].name + " % 2 == 1", tag("where_spatial");
    }
    tag("inplace");
    if (last && !t.output)
      for (auto& b : bufs_)
        if (b.name == t.name) b.output = true, outputs_.push_back(b.name);
  } else {
    int nsp = kind == 1 ? pick(3) : 1 + pick(3);
    if (kind == 3) nsp = pick(2);
    // Spatial extents: often those of an existing buffer, so that identity maps line up.
    std::vector<Dim> dims;
    const Buf* like = nullptr;
    if (chance(0.6) && !bufs_.empty()) like = &bufs_[pick(static_cast<int>(bufs_.size()))];
    for (int d = 0; d < nsp; ++d)
      dims.push_back(like && d < static_cast<int>(like->shape.size()) ? like->shape[d] : new_dim());
    while (numel(dims) > 100) dims.pop_back(), --nsp;
    for (int d = 0; d < nsp; ++d) vars.push_back(IVar{"v" + std::to_string(d), "spatial", dims[d]});
    std::vector<Dim> shape;
    std::vector<size_t> perm(vars.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
    if (chance(0.25)) std::shuffle(perm.begin(), perm.end(), rng_), tag("store_perm");
    bool flat = nsp == 2 && !dims[0].sym && !dims[1].sym && chance(0.15);
    if (flat) {
      shape.push_back(Dim{dims[0].v * dims[1].v, false});
      sidx.push_back(vars[0].name + " * " + std::to_string(dims[1].v) + " + " + vars[1].name);
      tag("store_flat");
    } else {
      for (size_t q = 0; q < perm.size(); ++q) {
        shape.push_back(dims[perm[q]]);
        sidx.push_back(vars[perm[q]].name);
      }
    }
    if (kind == 3) {
      Dim L{3 + pick(3), false};
      if (symbolic_ && chance(0.4)) L = Dim{kSymMax, true}, tag("scan_symbolic");
      vars.push_back(IVar{"vt", "scan", L});
      shape.push_back(L);
      sidx.push_back("vt");
    }
    if (shape.empty()) shape.push_back(Dim{1, false}), sidx.push_back("0");
    target = (last ? "Y" : "T") + std::to_string(nalloc_++);
    store = target + "[" + join(sidx) + "]";
    bufs_.push_back(Buf{target, c.dt, shape, 0, 0, false, last});
    if (last) outputs_.push_back(target);
    if (kind == 4) {
      target2 = (last ? "Y" : "T") + std::to_string(nalloc_++);
      bufs_.push_back(Buf{target2, c.dt, shape, 0, 0, false, last});
      if (last) outputs_.push_back(target2);
      tag("two_stores");
    }
  }
  cur_target_ = target;

  std::string body;
  int nred = 0;
  if (kind == 1 || (kind == 2 && chance(0.3))) {
    nred = 1 + pick(2);
    long sp = 1;
    for (auto& v : vars) sp *= v.ext.v;
    for (int r = 0; r < nred; ++r) {
      Dim d = new_dim();
      if (sp * d.v > 400) d = Dim{2, false};
      sp *= d.v;
      vars.push_back(IVar{"r" + std::to_string(r), "reduce", d});
    }
    c.self.clear();  // a reduction reading its own buffer in E is refused by design
  }
  c.vars = vars;
  if (pre_if == "?") pre_if = int_cond(c);
  // Statement-level lets.
  int nlets = pick(3) == 0 ? 1 + pick(2) : 0;
  for (int l = 0; l < nlets; ++l) {
    FE v = expr(c, 2);
    std::string t = "t" + std::to_string(c.nlet++);
    body += "let " + t + " = " + v.s + "\n";
    c.lets.push_back(mk(t, v.lo, v.hi, c.dt));
    tag("let_stmt");
  }
  // Two stores sharing nested lets (`let ta = ..; let tb = f(ta)`, both stores use both).
  std::vector<FE> shared;
  if (kind == 4 && ext(0.5)) {
    FE a1 = bounded(expr(c, 2), 5);
    std::string n1 = "t" + std::to_string(c.nlet++);
    body += "let " + n1 + " = " + a1.s + "\n";
    FE t1 = mk(n1, a1.lo, a1.hi, c.dt);
    c.lets.push_back(t1);
    FE a2 = bounded(binary(c, t1, unary(c, t1)), 5);
    std::string n2 = "t" + std::to_string(c.nlet++);
    body += "let " + n2 + " = " + a2.s + "\n";
    FE t2 = mk(n2, a2.lo, a2.hi, c.dt);
    c.lets.push_back(t2);
    shared = {t1, t2};
    tag("nested_lets_shared");
  }
  FE e = bounded(expr(c, 2 + pick(3)), 10);
  if (!shared.empty())
    e = mk("(" + e.s + " + " + shared[1].s + " * " + shared[0].s + ")", e.lo - 25, e.hi + 25, c.dt);
  double lo = e.lo, hi = e.hi;
  if (nred > 0) {
    long cnt = 1;
    for (auto& v : vars)
      if (v.kind == "reduce") cnt *= v.ext.v;
    int rk = pick(7);
    if (kind == 2) rk = 7;  // accumulation onto the earlier value
    std::string init;
    if (rk <= 2) {  // sum
      tag("red_sum");
      init = pick(2) ? "0.0" : bounded(load(c), 5).s;
      body += pick(2) ? store + " += " + e.s + "\n" : store + " = " + store + " + " + e.s + "\n";
      lo = std::min(0.0, lo) * cnt - 5, hi = std::max(0.0, hi) * cnt + 5;
      if (chance(0.2)) {
        // Triangular reduction: a `where` true at the first reduce point.
        where = "l" + vars.back().name + " <= l" + vars[0].name + " + 1";
        tag("where");
      }
    } else if (rk == 3 || rk == 4) {
      bool mx = rk == 3;
      tag(mx ? "red_max" : "red_min");
      init = pick(2) ? (mx ? "min_value(" + c.dt + ")" : "max_value(" + c.dt + ")") : bounded(load(c), 5).s;
      std::string f = mx ? "max" : "min";
      body += pick(2) ? store + " " + f + "= " + e.s + "\n"
                      : store + " = " + f + "(" + store + ", " + e.s + ")\n";
      lo = std::min(lo, -5.0), hi = std::max(hi, 5.0);
      if (ext(0.3)) {
        // A max / min over a triangular window (true at the first reduce point).
        where = "l" + vars.back().name + " <= l" + vars[0].name + (ext(0.5) ? "" : " + 1");
        tag("where_maxmin");
      }
    } else if (rk == 5 || rk == 6) {
      tag("red_prod");
      FE p = mk("(0.6 + 0.8 * sigmoid(" + e.s + "))", 0.6, 1.4, c.dt);
      init = pick(2) ? "1.0" : "(1.0 + 0.1 * " + bounded(load(c), 1).s + ")";
      body += pick(2) ? store + " *= " + p.s + "\n" : store + " = " + store + " * " + p.s + "\n";
      lo = 0.5 * std::pow(0.6, cnt), hi = 1.1 * std::pow(1.4, cnt);
    } else {
      tag("red_accumulate");
      body += store + " += " + e.s + "\n";
      lo = c.self_lo + std::min(0.0, lo) * cnt, hi = c.self_hi + std::max(0.0, hi) * cnt;
    }
    if (!init.empty() && kind == 1 && rk <= 4 && chance(0.25)) {
      // A second reduction of the same block onto another buffer (min and max in one block).
      target2 = (last ? "Y" : "T") + std::to_string(nalloc_++);
      std::vector<Dim> shape2;
      for (auto& b : bufs_)
        if (b.name == target) shape2 = b.shape;
      bufs_.push_back(Buf{target2, c.dt, shape2, 0, 0, false, last});
      if (last) outputs_.push_back(target2);
      std::string st2 = target2 + "[" + join(sidx) + "]";
      FE e2 = bounded(expr(c, 2), 10);
      bool mx = pick(2);
      init += "; " + st2 + " = " + (mx ? "min_value(" + c.dt + ")" : "0.0");
      body += mx ? st2 + " = max(" + st2 + ", " + e2.s + ")\n" : st2 + " += " + e2.s + "\n";
      tag("two_reductions");
      double lo2r = std::min(e2.lo, 0.0) * cnt - 5, hi2r = std::max(e2.hi, 0.0) * cnt + 5;
      two_red_ = {lo2r, hi2r};
    }
    if (!init.empty()) body = "init { " + store + " = " + init + " }\n" + body;
  } else if (kind == 3) {
    tag("scan");
    auto at = [&](const std::string& t, int sp_shift) {
      std::vector<std::string> v = sidx;
      v.back() = t;
      if (sp_shift && vars.size() >= 2 && !vars[0].ext.sym)
        for (auto& x : v)
          if (x == vars[0].name) x = "(" + x + " + 1) % " + std::to_string(vars[0].ext.v);
      return target + "[" + join(v) + "]";
    };
    FE a = mk("(0.6 * tanh(" + bounded(expr(c, 1), 3).s + "))", -0.6, 0.6, c.dt);
    std::string carried = at("vt - 1", 0) + " * " + a.s;
    int extra = pick(4);
    if (extra == 1)
      carried += " + if_then_else(vt >= 2, " + at("vt - 2", 0) + " * 0.3, 0.0)", tag("scan_two_back");
    if (extra == 2 && vars.size() >= 2 && !vars[0].ext.sym)
      carried += " + " + at("vt - 1", 1) + " * 0.3", tag("scan_cross"), scan_outer_ = true;
    double m = mag(e) * 10 + 1;
    body += store + " = if_then_else(vt == 0, " + e.s + ", " + carried + " + " + e.s + ")\n";
    lo = -m, hi = m;
  } else if (kind == 6) {
    body += store + " += " + e.s + "\n";
    lo = c.self_lo + std::min(0.0, lo) * 6, hi = c.self_hi + std::max(0.0, hi) * 6;
  } else if (kind == 0 && chance(0.2)) {
    FE e2 = bounded(expr(c, 2), 10);
    body += "if " + int_cond(c) + " {\n  " + store + " = " + e.s + "\n} else {\n  " + store + " = " + e2.s +
            "\n}\n";
    lo = std::min(lo, e2.lo), hi = std::max(hi, e2.hi);
    tag("if_else_stmt");
  } else {
    body += store + " = " + e.s + "\n";
    if (kind == 5) lo = std::min(lo, c.self_lo), hi = std::max(hi, c.self_hi);
  }
  double lo2 = two_red_.first, hi2 = two_red_.second;
  two_red_ = {0, 0};
  if (kind == 4) {
    FE e2 = bounded(expr(c, 2), 10);
    if (!shared.empty()) e2 = mk("(" + e2.s + " - " + shared[1].s + ")", e2.lo - 5, e2.hi + 5, c.dt);
    body += target2 + "[" + join(sidx) + "] = " + e2.s + "\n";
    lo2 = e2.lo, hi2 = e2.hi;
  }
  if (!pre_if.empty()) {
    // The update runs under an `if`: the lets stay outside, the store goes inside.
    std::string lets, rest;
    std::istringstream bs(body);
    for (std::string line; std::getline(bs, line);) (line.rfind("let ", 0) == 0 ? lets : rest) += line + "\n";
    body = lets + "if " + pre_if + " {\n  " + rest + "}\n";
  }
  bool plain = (kind == 0 || kind == 4) && chance(0.15);
  if (!plain && kind == 1 && where.empty() && pre_if.empty() && ext(0.1)) {
    // A reduction as plain loops with a C-style init: `if r0 == 0 { Y[v] = init }` first.
    size_t b0 = body.find("init { ");
    if (b0 == 0) {
      size_t b1 = body.find(" }\n");
      std::string cond;
      for (auto& v : vars)
        if (v.kind == "reduce") cond += (cond.empty() ? "" : " && ") + v.name + " == 0";
      body = "if " + cond + " {\n  " + body.substr(7, b1 - 7) + "\n}\n" + body.substr(b1 + 3);
      plain = true;
      tag("plain_reduction");
    }
  }
  cur_writes_ = {target};
  if (!target2.empty()) cur_writes_.push_back(target2);
  out << pre_blocks_ << loops_and_block(bname, vars, body, where, plain);
  pre_blocks_.clear();
  for (auto& b : bufs_) {
    if (b.name == target) b.lo = lo, b.hi = hi;
    if (b.name == target2) b.lo = lo2, b.hi = hi2;
  }
  written_.insert(target);
  if (!target2.empty()) written_.insert(target2);
  cur_target_.clear();
}

// An RNN-like recurrence through two blocks of one scan loop: a pre-activation A (a value, or
// a sum with an init over the previous state) and the state H = f(A).
void Gen::scan_region(int bi, bool last, std::ostringstream& out) {
  Ctx c;
  c.dt = chance(0.2) ? "f64" : "f32";
  Dim L{3 + pick(3), false}, a = new_dim();
  if (a.sym) a = Dim{3, false};
  std::string an = "T" + std::to_string(nalloc_++), hn = (last ? "Y" : "T") + std::to_string(nalloc_++);
  bool red = pick(2);
  std::vector<IVar> va = {IVar{"vt", "scan", L}, IVar{"v0", "spatial", a}};
  if (red) va.push_back(IVar{"r0", "reduce", a});
  c.vars = va;
  FE e = bounded(expr(c, 2), 3);
  std::string body;
  if (red) {
    FE w = bounded(expr(c, 1), 1);
    body = "init { " + an + "[vt, v0] = " + e.s + " }\n" + an + "[vt, v0] += if_then_else(vt >= 1, " + hn +
           "[vt - 1, r0] * " + w.s + " * 0.3, 0.0)\n";
    tag("scan_region_reduce");
  } else {
    body = an + "[vt, v0] = " + e.s + " + if_then_else(vt >= 1, " + hn + "[vt - 1, v0] * 0.5, 0.0)\n";
  }
  std::string f = pick(2) ? "tanh" : "sigmoid";
  out << "  for lt in serial(" << L.v << ") {\n" << pre_blocks_;
  pre_blocks_.clear();
  out << "    for lv0 in serial(" << a.v << ") {\n";
  if (red) out << "      for lr0 in serial(" << a.v << ") {\n";
  std::string ind = red ? "        " : "      ";
  out << ind << "block b" << bi << "a(vt: scan(" << L.v << ") = lt, v0: spatial(" << a.v << ") = lv0"
      << (red ? ", r0: reduce(" + std::to_string(a.v) + ") = lr0" : "") << ") {\n";
  std::istringstream bs(body);
  for (std::string line; std::getline(bs, line);) out << ind << "  " << line << "\n";
  out << ind << "}\n";
  if (red) out << "      }\n";
  out << "    }\n    for lv0 in serial(" << a.v << ") {\n      block b" << bi << "h(vt: scan(" << L.v
      << ") = lt, v0: spatial(" << a.v << ") = lv0) { " << hn << "[vt, v0] = " << f << "(" << an
      << "[vt, v0]) }\n    }\n  }\n";
  bufs_.push_back(Buf{an, c.dt, {L, a}, -20, 20, false, false});
  bufs_.push_back(Buf{hn, c.dt, {L, a}, -1, 1, false, last});
  if (last) outputs_.push_back(hn);
  written_.insert(an);
  written_.insert(hn);
  tag("scan_region");
}

// Avg / max pooling along dim 0 of a float buffer with overlap (stride < window) and zero /
// -inf padding (if_then_else guards), f16 / bf16 sources accumulated in f32; a 2-D window is
// one reduce var r split as `r // K`, `r % K`.
bool Gen::pool_block(int bi, bool last, std::ostringstream& out) {
  std::vector<const Buf*> cand;
  for (auto& b : bufs_)
    if (b.dt != "i32" && (b.input || written_.count(b.name)) && !b.shape[0].sym && b.shape[0].v >= 3)
      cand.push_back(&b);
  if (cand.empty()) return false;
  const Buf src = *cand[pick(static_cast<int>(cand.size()))];
  bool two = src.shape.size() >= 2 && !src.shape[1].sym && src.shape[1].v >= 3 && pick(2);
  int K = 2 + pick(2), st = 1 + pick(2), pad = pick(2);
  auto out_len = [&](int L) { return (L + 2 * pad - K) / st + 1; };
  int O0 = out_len(src.shape[0].v), O1 = two ? out_len(src.shape[1].v) : 0;
  if (O0 < 1 || (two && O1 < 1)) return false;
  bool mx = pick(2);
  Ctx c;
  c.dt = src.dt == "f64" ? "f64" : "f32";
  std::vector<IVar> vars{IVar{"v0", "spatial", Dim{O0, false}}};
  std::vector<std::string> sidx{"v0"}, xi, conds;
  std::string i0 = "v0 * " + std::to_string(st) + " + " + (two ? "r0 // " + std::to_string(K) : "r0") +
                   (pad ? " - 1" : "");
  xi.push_back(i0);
  if (pad) conds.push_back(i0 + " >= 0");
  conds.push_back(i0 + " < " + std::to_string(src.shape[0].v));
  std::vector<Dim> shape{Dim{O0, false}};
  size_t d = 1;
  if (two) {
    vars.push_back(IVar{"v1", "spatial", Dim{O1, false}});
    sidx.push_back("v1");
    shape.push_back(Dim{O1, false});
    std::string i1 = "v1 * " + std::to_string(st) + " + r0 % " + std::to_string(K) + (pad ? " - 1" : "");
    xi.push_back(i1);
    if (pad) conds.push_back(i1 + " >= 0");
    conds.push_back(i1 + " < " + std::to_string(src.shape[1].v));
    d = 2;
  }
  for (; d < src.shape.size(); ++d) {
    std::string vn = "v" + std::to_string(vars.size());
    vars.push_back(IVar{vn, "spatial", src.shape[d]});
    sidx.push_back(vn);
    xi.push_back(vn);
    shape.push_back(src.shape[d]);
  }
  vars.push_back(IVar{"r0", "reduce", Dim{two ? K * K : K, false}});
  std::string x = src.name + "[" + xi[0];
  for (size_t q = 1; q < xi.size(); ++q) x += ", " + xi[q];
  x += "]";
  if (src.dt != c.dt) x = c.dt + "(" + x + ")", tag("half_accumulate");
  std::string cond;
  for (auto& q : conds) cond += (cond.empty() ? "" : " && ") + q;
  std::string target = (last ? "Y" : "T") + std::to_string(nalloc_++);
  std::string store = target + "[" + sidx[0];
  for (size_t q = 1; q < sidx.size(); ++q) store += ", " + sidx[q];
  store += "]";
  std::string body;
  double lo, hi;
  if (mx) {
    body = "init { " + store + " = min_value(" + c.dt + ") }\n" + store + " = max(" + store +
           ", if_then_else(" + cond + ", " + x + ", min_value(" + c.dt + ")))\n";
    lo = src.lo, hi = src.hi;
    tag("max_pool");
  } else {
    double inv = 1.0 / (two ? K * K : K);
    std::ostringstream t;
    t << inv;
    body = "init { " + store + " = 0.0 }\n" + store + " += if_then_else(" + cond + ", " + x + ", 0.0) * " +
           t.str() + "\n";
    lo = std::min(src.lo, 0.0), hi = std::max(src.hi, 0.0);
    tag("avg_pool");
  }
  bufs_.push_back(Buf{target, c.dt, shape, lo, hi, false, last});
  if (last) outputs_.push_back(target);
  cur_writes_ = {target};
  out << pre_blocks_ << loops_and_block("b" + std::to_string(bi), vars, body, "", false);
  pre_blocks_.clear();
  written_.insert(target);
  return true;
}

// Concatenation of three pieces along dim 0 with an `if_then_else` chain.
bool Gen::concat_block(int bi, bool last, std::ostringstream& out) {
  std::vector<const Buf*> cand;
  for (auto& b : bufs_)
    if (b.dt != "i32" && (b.input || written_.count(b.name)) && !b.shape[0].sym) cand.push_back(&b);
  if (cand.empty()) return false;
  Ctx c;
  c.dt = chance(0.2) ? "f64" : "f32";
  std::vector<Buf> src;
  int total = 0;
  for (int q = 0; q < 3; ++q)
    src.push_back(*cand[pick(static_cast<int>(cand.size()))]), total += src.back().shape[0].v;
  if (total > 24) return false;
  std::vector<IVar> vars{IVar{"v0", "spatial", Dim{total, false}}};
  c.vars = vars;
  std::string e;
  double lo = 0, hi = 0;
  for (int q = 2; q >= 0; --q) {
    int o = 0;
    for (int k = 0; k < q; ++k) o += src[k].shape[0].v;
    std::string idx = o ? "v0 - " + std::to_string(o) : "v0";
    for (size_t d = 1; d < src[q].shape.size(); ++d)
      idx += ", " + (src[q].shape[d].sym ? std::string("0") : std::to_string(pick(src[q].shape[d].v)));
    std::string ld = src[q].name + "[" + idx + "]";
    if (src[q].dt != c.dt) ld = c.dt + "(" + ld + ")";
    std::string end = std::to_string(o + src[q].shape[0].v);
    e = q == 2 ? ld : "if_then_else(v0 < " + end + ", " + ld + ", " + e + ")";
    lo = std::min(lo, src[q].lo), hi = std::max(hi, src[q].hi);
  }
  FE f = unary(c, mk(e, lo, hi, c.dt));
  f = bounded(f, 10);
  std::string target = (last ? "Y" : "T") + std::to_string(nalloc_++);
  bufs_.push_back(Buf{target, c.dt, {Dim{total, false}}, f.lo, f.hi, false, last});
  if (last) outputs_.push_back(target);
  cur_writes_ = {target};
  std::string body = target + "[v0] = " + f.s + "\n";
  out << pre_blocks_ << loops_and_block("b" + std::to_string(bi), vars, body, "", false);
  pre_blocks_.clear();
  written_.insert(target);
  tag("concat3");
  return true;
}

// One scan block with two states sharing a let of the step (an LSTM-like cell): as histories
// `T[vt, v0]`, `U[vt, v0]`, or as states overwritten at every step (`S[v0]`, `Q[v0]`,
// initialised by a block before the loop).
bool Gen::scan_two_states(int bi, bool last, std::ostringstream& out) {
  Ctx c;
  c.dt = chance(0.2) ? "f64" : "f32";
  Dim L{3 + pick(3), false}, a{2 + pick(4), false};
  std::vector<IVar> vars{IVar{"vt", "scan", L}, IVar{"v0", "spatial", a}};
  c.vars = vars;
  FE e = bounded(expr(c, 2), 3);
  FE w = bounded(expr(c, 1), 1);
  c.vars = {vars[1]};  // the first state is stored before the loop, too
  FE e2 = bounded(expr(c, 1), 2);
  std::string hn = (last ? "Y" : "T") + std::to_string(nalloc_++);
  std::string un = (last ? "Y" : "T") + std::to_string(nalloc_++);
  std::string body;
  std::string bname = "b" + std::to_string(bi);
  bool state = pick(2);
  std::vector<Dim> shape = state ? std::vector<Dim>{a} : std::vector<Dim>{L, a};
  if (state) {
    // The states start from values a block before the loop stores.
    std::vector<IVar> iv{IVar{"v0", "spatial", a}};
    std::string init = hn + "[v0] = " + e2.s + "\n" + un + "[v0] = 1.0\n";
    cur_writes_ = {hn, un};
    bufs_.push_back(Buf{hn, c.dt, shape, -1, 1, false, last});
    bufs_.push_back(Buf{un, c.dt, shape, 0, 1, false, last});
    out << pre_blocks_ << loops_and_block(bname + "i", iv, init, "", false);
    pre_blocks_.clear();
    body = "let z = " + hn + "[v0] * " + w.s + " + " + e.s + "\n" + hn + "[v0] = tanh(z)\n" + un +
           "[v0] = sigmoid(z) * " + un + "[v0]\n";
    tag("scan_two_states_shared_let");
    if (ext(0.5)) {
      // A reader of both states later in the step (it sees them after the step), the
      // states updated by one block or by two.
      bool two_blocks = ext(0.5);
      std::string rn = (last ? "Y" : "T") + std::to_string(nalloc_++);
      bufs_.push_back(Buf{rn, c.dt, {L, a}, -2, 2, false, last});
      if (last) outputs_.push_back(rn);
      std::string A = std::to_string(a.v), Ls = std::to_string(L.v);
      auto blk = [&](const std::string& name, const std::string& b) {
        std::string r = "    for lv0 in serial(" + A + ") {\n      block " + name + "(vt: scan(" + Ls +
                        ") = lt, v0: spatial(" + A + ") = lv0) {\n";
        std::istringstream bs(b);
        for (std::string line; std::getline(bs, line);) r += "        " + line + "\n";
        return r + "      }\n    }\n";
      };
      out << pre_blocks_ << "  for lt in serial(" << Ls << ") {\n";
      pre_blocks_.clear();
      if (two_blocks) {
        out << blk(bname, hn + "[v0] = tanh(" + hn + "[v0] * " + w.s + " + " + e.s + ")\n");
        out << blk(bname + "q", un + "[v0] = sigmoid(" + un + "[v0] + " + e.s + ") * " + un + "[v0]\n");
        tag("scan_states_two_blocks_reader");
      } else {
        out << blk(bname, body);
        tag("scan_two_states_reader");
      }
      std::string k = std::to_string(ext_pick(a.v));
      std::string rd = rn + "[vt, v0] = " + hn + "[v0] * " + un + "[(v0 + " + k + ") % " + A + "] + " + hn +
                       "[(v0 + 1) % " + A + "]\n";
      out << blk(bname + "r", rd);
      out << "  }\n";
      if (last) outputs_.push_back(hn), outputs_.push_back(un);
      written_.insert(hn);
      written_.insert(un);
      written_.insert(rn);
      return true;
    }
  } else {
    bufs_.push_back(Buf{hn, c.dt, shape, -1, 1, false, last});
    bufs_.push_back(Buf{un, c.dt, shape, 0, 1, false, last});
    body = "let z = if_then_else(vt >= 1, " + hn + "[vt - 1, v0], " + e2.s + ") * " + w.s + " + " + e.s +
           "\n" +
           hn + "[vt, v0] = tanh(z)\n" + un + "[vt, v0] = sigmoid(z) * if_then_else(vt >= 1, " + un +
           "[vt - 1, v0], 1.0)\n";
    tag("scan_two_histories_shared_let");
  }
  if (last) outputs_.push_back(hn), outputs_.push_back(un);
  cur_writes_ = {hn, un};
  out << pre_blocks_ << loops_and_block(bname, vars, body, "", false);
  pre_blocks_.clear();
  written_.insert(hn);
  written_.insert(un);
  return true;
}

FuzzProgram Gen::make() {
  FuzzProgram p;
  symbolic_ = chance(0.15);
  scalar_ = chance(0.15);
  int np = 2 + pick(3);
  for (int i = 0; i < np; ++i) pool_.push_back(2 + pick(6));
  int nin = 1 + pick(3);
  for (int i = 0; i < nin; ++i) {
    Buf b;
    b.name = "X" + std::to_string(i);
    b.dt = chance(0.2) ? "f64" : chance(0.08) ? (pick(2) ? "f16" : "bf16") : "f32";
    if (b.dt[0] != 'f' || b.dt == "f16") tag("half_input");
    int nd = 1 + pick(3);
    for (int d = 0; d < nd; ++d) b.shape.push_back(new_dim());
    while (numel(b.shape) > 80) b.shape.pop_back();
    int r = pick(4);
    if (r == 0)
      b.lo = 0.2, b.hi = 2.0;
    else if (r == 1)
      b.lo = -2.0, b.hi = 2.0;
    b.input = true;
    bufs_.push_back(b);
  }
  int nblocks = 1 + pick(5);
  std::ostringstream body;
  for (int bi = 0; bi < nblocks; ++bi) block(bi, bi == nblocks - 1, body);
  if (chance(0.08)) {
    // An integer output (its cotangent is ignored) computed from a float buffer.
    const Buf& x = bufs_[0];
    std::string idx;
    for (size_t d = 0; d < x.shape.size(); ++d) idx += std::string(d ? ", " : "") + (d == 0 ? "v0" : "0");
    body << "  for lv0 in serial(" << x.shape[0].str() << ") {\n    block bz(v0: spatial(" << x.shape[0].str()
         << ") = lv0) { Z[v0] = i32(floor(abs(" << x.name << "[" << idx << "]) * 3.0)) }\n  }\n";
    Buf z;
    z.name = "Z", z.dt = "i32", z.shape = {x.shape[0]}, z.output = true;
    bufs_.push_back(z);
    outputs_.push_back("Z");
    tag("int_output");
  }
  // A second output: an earlier intermediate, sometimes.
  std::vector<std::string> allocs;
  for (auto& b : bufs_)
    if (!b.input && !b.output) {
      if (b.dt != "i32" && outputs_.size() < 2 && chance(0.25))
        b.output = true, outputs_.push_back(b.name), tag("two_outputs");
      else
        allocs.push_back(b.name);
    }
  // The last block may have updated an alloc in place: it must be an output then.
  std::ostringstream s;
  s << "func f(";
  bool first = true;
  auto sep = [&]() {
    s << (first ? "" : ", ");
    first = false;
  };
  if (symbolic_) sep(), s << "n: i32 in [1, " << kSymMax << "]";
  for (auto& b : bufs_)
    if (b.input) {
      sep();
      s << b.name << ": " << b.dt << "[";
      for (size_t d = 0; d < b.shape.size(); ++d) s << (d ? ", " : "") << b.shape[d].str();
      s << "] in ["
        << (b.lo == 0.2    ? "0.2"
            : b.lo == -2.0 ? "-2.0"
                           : "-1.0")
        << ", " << (b.hi == 2.0 ? "2.0" : "1.0") << "]";
    }
  for (auto& x : idx_inputs_) sep(), s << x, tag("index_input");
  if (scalar_) sep(), s << "s: f32 in [0.5, 1.5]";
  s << ") -> (";
  bool any_out = false;
  for (auto& b : bufs_)
    if (b.output) {
      s << (any_out ? ", " : "") << b.name << ": " << b.dt << "[";
      for (size_t d = 0; d < b.shape.size(); ++d) s << (d ? ", " : "") << b.shape[d].str();
      s << "]";
      any_out = true;
    }
  s << ") {\n";
  for (auto& b : bufs_)
    if (!b.input && !b.output) {
      s << "  alloc " << b.name << ": " << b.dt << "[";
      for (size_t d = 0; d < b.shape.size(); ++d) s << (d ? ", " : "") << b.shape[d].str();
      s << "]\n";
    }
  s << body.str() << "}\n";
  p.text = s.str();
  if (symbolic_) {
    p.ns = {kSymMax, 1};
    tag("symbolic");
  }
  p.features.assign(tags_.begin(), tags_.end());
  return p;
}

}  // namespace

FuzzProgram generate_grad_fuzz(uint64_t seed, bool extended) { return Gen(seed, extended).make(); }

}  // namespace tirc::testing

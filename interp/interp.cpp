// Public interpreter API (interp/interp.h): argument checking, buffer set-up, the cache of
// programs compiled per scalar-parameter values, random inputs and shape evaluation.
#include "interp/interp.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>

#include "interp/compile.h"
#include "ir/error.h"
#include "transforms/simplify/const_fold.h"

namespace tirc {
namespace {

using interp::BufInfo;
using interp::BufState;
using interp::CompiledFunc;
using interp::Ctx;
using interp::ScalarEnv;
using interp::ScalarVal;
using interp::Val;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Reads a scalar parameter's value from its 0-d array.
ScalarVal scalar_value(const Param& p, const NDArray& a, bool promote_f64) {
  DType want = p.var.dtype();
  if (!a.defined()) throw Error("input for parameter " + p.name() + " is empty");
  if (!a.shape().empty() && a.numel() != 1)
    throw Error("parameter " + p.name() + " is a scalar; got an array of shape " + shape_text(a.shape()));
  bool ok = a.dtype() == want || (promote_f64 && is_float(want) && a.dtype() == DType::F64);
  if (!ok)
    throw Error("parameter " + p.name() + ": expected dtype " + std::string(dtype_name(want)) + ", got " +
                std::string(dtype_name(a.dtype())));
  ScalarVal v;
  if (is_float(want)) {
    v.d = a.get(0);
  } else {
    switch (a.dtype()) {
      case DType::I64: v.i = a.ptr<int64_t>()[0]; break;
      default: v.i = static_cast<int64_t>(a.get(0));
    }
  }
  return v;
}

class Program final : public InterpProgram {
 public:
  // Copies the function node (cheap: its members are shared IR handles) so the program
  // stays valid when the caller's Function goes away.
  Program(const FunctionNode& f, InterpOptions o) : f_(f), opts_(o) {}

  ArgMap run(const ArgMap& inputs) override { return run_with_stats(inputs, nullptr); }

  ArgMap run_with_stats(const ArgMap& inputs, RunStats* stats) override {
    // Unknown names are most likely typos: refuse them. Output names are ignored (outputs are
    // not initialised by the caller).
    for (auto& [name, arr] : inputs) {
      (void)arr;
      bool known = false;
      for (auto& p : f_.params) known |= p.name() == name;
      for (auto& o : f_.outputs) known |= o->name == name;
      if (!known) throw Error("function " + f_.name + " has no parameter named " + name);
    }
    ScalarEnv env;
    std::vector<int64_t> key;
    for (auto& p : f_.params) {
      if (p.is_buffer()) continue;
      auto it = inputs.find(p.name());
      if (it == inputs.end()) throw Error("missing input for parameter " + p.name());
      ScalarVal v = scalar_value(p, it->second, opts_.promote_f64);
      env[p.var.get()] = v;
      int64_t bits;
      std::memcpy(&bits, &v.d, 8);
      key.push_back(v.i);
      key.push_back(bits);
    }
    std::shared_ptr<const CompiledFunc> cf;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) cf = it->second;
    }
    if (!cf) {
      cf = std::make_shared<CompiledFunc>(interp::compile_function(f_, opts_.promote_f64, env));
      std::lock_guard<std::mutex> lock(mu_);
      if (cache_.size() > 64) cache_.clear();
      cache_[key] = cf;
    }
    return execute(*cf, inputs, stats);
  }

 private:
  const FunctionNode f_;
  InterpOptions opts_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<const CompiledFunc>> cache_;

  // Each buffer is checked against the memory when allocated (NDArray); their sum must fit
  // too, or several large allocs would get the process killed instead of an Error.
  void check_memory(const CompiledFunc& cf) const {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return;
    const double limit = static_cast<double>(pages) * static_cast<double>(page);
    double total = 0;
    for (auto& b : cf.bufs) {
      if (std::string(b->role) == "input" && !b->written) continue;
      total +=
          static_cast<double>(b->numel) * (dtype_bytes(b->dtype) + (b->track_init ? sizeof(uint64_t) : 0));
    }
    if (total > limit) {
      std::ostringstream os;
      os << "cannot run " << f_.name << ": its outputs and allocs need " << static_cast<uint64_t>(total)
         << " bytes, more than the memory (" << static_cast<uint64_t>(limit) << " bytes)";
      throw Error(os.str());
    }
  }

  ArgMap execute(const CompiledFunc& cf, const ArgMap& inputs, RunStats* stats) {
    std::vector<BufState> bufs(cf.bufs.size());
    std::vector<NDArray> keep;                // storage owned for this run
    std::vector<std::vector<uint64_t>> tags;  // writer tags of outputs and allocs (interp/nodes.h)
    ArgMap outputs;
    keep.reserve(cf.bufs.size());
    tags.reserve(cf.bufs.size());
    check_memory(cf);
    for (size_t s = 0; s < cf.bufs.size(); ++s) {
      const BufInfo& b = *cf.bufs[s];
      if (std::string(b.role) == "input") {
        const Param& p = f_.params[b.param_index];
        auto it = inputs.find(p.name());
        if (it == inputs.end()) throw Error("missing input for parameter " + p.name());
        const NDArray& a = it->second;
        DType declared = p.buffer->dtype;
        if (!a.defined()) throw Error("input for parameter " + p.name() + " is empty");
        bool ok =
            a.dtype() == declared || (opts_.promote_f64 && is_float(declared) && a.dtype() == DType::F64);
        if (!ok)
          throw Error("parameter " + p.name() + ": expected dtype " + std::string(dtype_name(declared)) +
                      ", got " + std::string(dtype_name(a.dtype())));
        if (a.shape() != b.shape)
          throw Error("parameter " + p.name() + ": expected shape " + shape_text(b.shape) + ", got " +
                      shape_text(a.shape()));
        if (a.dtype() != b.dtype || b.written) {
          // A written parameter (only in intrin desc/impl functions, which list no outputs)
          // works on a copy and is returned with the outputs.
          keep.push_back(a.dtype() != b.dtype ? a.astype(b.dtype) : a.copy());
          bufs[s].data = static_cast<uint8_t*>(keep.back().data());
          if (b.written) outputs[b.name] = keep.back();
        } else {
          // Read-only: never written by the closures (no store targets it).
          bufs[s].data = static_cast<uint8_t*>(const_cast<void*>(a.data()));
        }
      } else {
        NDArray arr(b.dtype, b.shape);
        bufs[s].data = static_cast<uint8_t*>(arr.data());
        if (b.track_init) {
          tags.emplace_back(static_cast<size_t>(std::max<int64_t>(b.numel, 1)), 0);
          bufs[s].tag = tags.back().data();
        }
        if (std::string(b.role) == "output") outputs[b.name] = arr;
        keep.push_back(std::move(arr));
      }
    }
    std::vector<Val> regs(static_cast<size_t>(std::max(cf.nregs, 1)));
    std::vector<uint64_t> counts(cf.block_names.size() + 1, 0), init_counts(cf.block_names.size() + 1, 0);
    std::vector<uint64_t> site_counts(2 * cf.counted.size() + 2, 0);
    Ctx ctx;
    ctx.site_counts = site_counts.data();
    ctx.regs = regs.data();
    ctx.bufs = bufs.data();
    ctx.block_counts = counts.data();
    ctx.init_counts = init_counts.data();
    cf.root->run(ctx);
    if (stats) {
      stats->block_executions.clear();
      stats->init_executions.clear();
      stats->sites.clear();
      for (size_t i = 0; i < cf.block_names.size(); ++i) {
        stats->block_executions[*cf.block_names[i]] += counts[i];
        stats->init_executions[*cf.block_names[i]] += init_counts[i];
      }
      for (size_t i = 0; i < cf.counted.size(); ++i) {
        auto& c = stats->sites[cf.counted[i]];
        c.first += site_counts[2 * i];
        c.second += site_counts[2 * i + 1];
      }
    }
    return outputs;
  }
};

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::unique_ptr<InterpProgram> compile_interp(const FunctionNode& f, const InterpOptions& opts) {
  if (!f.body.as<BlockRealizeNode>()) throw Error("function " + f.name + " has no root block");
  return std::make_unique<Program>(f, opts);
}

ArgMap run_interp(const FunctionNode& f, const ArgMap& inputs, const InterpOptions& opts) {
  return compile_interp(f, opts)->run(inputs);
}

std::vector<int64_t> eval_shape(const Buffer& b, const ArgMap& scalars) {
  // Shapes reference scalar params by Var identity; callers know them by name.
  ScalarEnv env;
  std::vector<int64_t> out;
  for (auto& e : b->shape) {
    // Collect the variables of e and bind them by name.
    std::vector<const VarNode*> vars;
    std::function<void(const Expr&)> walk = [&](const Expr& x) {
      if (!x.defined()) return;
      if (auto* v = x.as<VarNode>())
        vars.push_back(v);
      else if (auto* n = x.as<BinaryNode>())
        walk(n->a), walk(n->b);
      else if (auto* n = x.as<UnaryNode>())
        walk(n->a);
      else if (auto* n = x.as<CastNode>())
        walk(n->value);
      else if (auto* n = x.as<CallNode>()) {
        for (auto& a : n->args) walk(a);
      } else if (auto* n = as_select_like(x))
        walk(n->cond), walk(n->t), walk(n->f);
    };
    walk(e);
    for (auto* v : vars) {
      auto it = scalars.find(v->name);
      if (it == scalars.end())
        throw Error("shape of buffer " + b->name + " uses scalar parameter " + v->name +
                    ", which is not given");
      ScalarVal sv;
      if (is_float(v->dtype))
        sv.d = it->second.get(0);
      else
        sv.i = it->second.dtype() == DType::I64 ? it->second.ptr<int64_t>()[0]
                                                : static_cast<int64_t>(it->second.get(0));
      env[v] = sv;
    }
    int64_t d = interp::eval_int_expr(e, env);
    if (d < 0) throw Error("buffer " + b->name + " has a negative extent " + std::to_string(d));
    out.push_back(d);
  }
  return out;
}

namespace {
// The dtype value next to `r` (a value of float dtype t) towards +inf (up) or -inf. f16 and
// bf16 are sign-magnitude like IEEE floats, so a step is one unit of their bit pattern.
double float_step(double r, DType t, bool up) {
  if (t == DType::F64) return std::nextafter(r, up ? HUGE_VAL : -HUGE_VAL);
  if (t == DType::F32) return std::nextafterf(static_cast<float>(r), up ? HUGE_VALF : -HUGE_VALF);
  bool half = t == DType::F16;
  if (r == 0) {
    uint16_t tiny = up ? 0x0001 : 0x8001;
    return half ? half_to_float(tiny) : bf16_to_float(tiny);
  }
  uint16_t bits = half ? float_to_half(static_cast<float>(r)) : float_to_bf16(static_cast<float>(r));
  bits = static_cast<uint16_t>((r > 0) == up ? bits + 1 : bits - 1);
  return half ? half_to_float(bits) : bf16_to_float(bits);
}

// Fills `a` with values of p's declared range (defaults: [-1, 1] for floats, [0, 9] for
// integers, {0, 1} for bool), from a stream that depends only on the seed and p's name, so
// that giving one input does not change the others.
void fill_random(NDArray& a, const Param& p, uint64_t seed) {
  uint64_t s = seed;
  for (char c : p.name()) s = mix(s ^ static_cast<uint8_t>(c));
  std::mt19937_64 rng(mix(s));
  auto range_text = [&] {
    std::ostringstream os;
    os << "[";
    if (p.range->ilo && !is_float(a.dtype()))
      os << *p.range->ilo;
    else
      os << p.range->lo;
    os << ", ";
    if (p.range->ihi && !is_float(a.dtype()))
      os << *p.range->ihi;
    else
      os << p.range->hi;
    os << "]";
    return os.str();
  };
  if (is_float(a.dtype())) {
    double lo = p.range ? p.range->lo : -1.0, hi = p.range ? p.range->hi : 1.0;
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw Error("parameter " + p.name() + ": value range " + range_text() +
                  " is not finite (random values need finite ends)");
    // Intersect with the dtype's finite values, as integer ranges are intersected with the
    // dtype (f16 in [0, 1e5] draws from [0, 65504]; f32 in [-1e40, 1e40] drew only +-inf).
    DType t = a.dtype();
    double fmax = t == DType::F16    ? 65504.0
                  : t == DType::BF16 ? 0x1.fep127
                  : t == DType::F32  ? static_cast<double>(std::numeric_limits<float>::max())
                                     : std::numeric_limits<double>::max();
    lo = std::max(lo, -fmax), hi = std::min(hi, fmax);
    auto none = [&] {
      return Error("parameter " + p.name() + ": value range " + range_text() + " holds no finite " +
                   std::string(dtype_name(t)) + " value");
    };
    if (!(lo <= hi)) throw none();
    bool wide = !std::isfinite(hi - lo);  // e.g. [-1e308, 1e308]: interpolate without overflow
    // A range that holds no value of the dtype but lies between two neighbours (`eps: f32 in
    // [1e-5, 1e-5]`: 1e-5 is not an f32; `f16 in [0.1, 0.10003]`) means the dtype's value(s)
    // nearest to it, as a literal 1e-5 in an f32 context is f32(1e-5): such values are
    // rounded to nearest and kept. (Until outsider round 15 this was "holds no finite f32
    // value".) Otherwise values rounding outside the range are drawn again (below).
    double first = round_float(lo, t), last = round_float(hi, t);
    if (first < lo) first = float_step(first, t, true);
    if (last > hi) last = float_step(last, t, false);
    bool between = first > last;
    for (int64_t i = 0; i < a.numel(); ++i) {
      // A value rounded to the dtype may leave the range when an end is not representable
      // (f16 in [0.1, 4]: 0.1 rounds to 0.099976): draw again, so that every value stays
      // inside the declared range (a log of `in [1e-8, 1]` in f16 must not see 0).
      double v = 0;
      int tries = 0;
      for (;; ++tries) {
        if (tries == 64) throw none();
        double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        v = round_float(wide ? lo * (1 - u) + hi * u : lo + (hi - lo) * u, t);
        if (between || (lo <= v && v <= hi)) break;
      }
      a.set(i, v);
    }
    return;
  }
  double dlo = p.range ? p.range->lo : 0.0, dhi = p.range ? p.range->hi : 9.0;
  if (a.dtype() == DType::Bool && !p.range) dlo = 0, dhi = 1;
  // Intersect with the dtype's values before converting (a double outside int64 does not
  // convert; u8 in [-5, 300] draws from [0, 255]).
  // In __int128 with the exact integer ends the parser kept: a double does not hold every
  // i64 (`in [2^53 + 1, 2^53 + 3]` drew 2^53 + 4), and 2^63, the double of i64's max, does
  // not convert to int64 (`in [2^63 - 2, 2^63 - 1]` drew from all of i64).
  int bits = a.dtype() == DType::Bool ? 1 : dtype_bits(a.dtype());
  bool is_unsigned = a.dtype() == DType::Bool || a.dtype() == DType::U8 || a.dtype() == DType::U16 ||
                     a.dtype() == DType::U32;
  const __int128 one = 1;
  __int128 tmin = is_unsigned ? 0 : -(one << (bits - 1));
  __int128 tmax = is_unsigned ? (one << bits) - 1 : (one << (bits - 1)) - 1;
  auto end = [&](double d, const std::optional<int64_t>& exact, bool up) -> __int128 {
    if (exact && p.range) return *exact;
    double r = up ? std::ceil(d) : std::floor(d);
    if (std::isnan(r)) return up ? tmax + 1 : tmin - 1;  // empty
    return static_cast<__int128>(std::clamp(r, -0x1.0p65, 0x1.0p65));
  };
  std::optional<int64_t> none_exact;
  __int128 clo = std::max(end(dlo, p.range ? p.range->ilo : none_exact, true), tmin);
  __int128 chi = std::min(end(dhi, p.range ? p.range->ihi : none_exact, false), tmax);
  if (!(clo <= chi))
    throw Error("parameter " + p.name() + ": value range " + range_text() + " holds no " +
                std::string(dtype_name(a.dtype())) + " value");
  int64_t lo = static_cast<int64_t>(clo);
  int64_t hi = static_cast<int64_t>(chi);
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0: all 2^64 values
  for (int64_t i = 0; i < a.numel(); ++i) {
    uint64_t r = span == 0 ? rng() : rng() % span;
    int64_t v = static_cast<int64_t>(static_cast<uint64_t>(lo) + r);
    if (a.dtype() == DType::I64)
      a.ptr<int64_t>()[i] = v;
    else
      a.set(i, static_cast<double>(v));
  }
}
}  // namespace

ArgMap random_inputs(const FunctionNode& f, uint64_t seed, const ArgMap& given) {
  ArgMap out = given;
  ArgMap scalars;
  for (auto& p : f.params)
    if (!p.is_buffer()) {
      auto it = given.find(p.name());
      if (it != given.end()) {
        scalars[p.name()] = it->second;
        continue;
      }
      // An integer without a declared range usually fixes shapes or loop bounds: it is drawn
      // from [1, 9], the integer default without 0, which would make every buffer it sizes
      // empty (and a mean over it 0 / 0). Floats, bools and ranged scalars are drawn like
      // buffer elements.
      DType t = p.var.dtype();
      Param q = p;
      if (!p.range && !is_float(t) && t != DType::Bool) q.range = ValueRange{1, 9};
      NDArray a(t, {});
      fill_random(a, q, seed);
      scalars[p.name()] = out[p.name()] = a;
    }
  for (auto& p : f.params) {
    if (!p.is_buffer() || given.count(p.name())) continue;
    NDArray a(p.buffer->dtype, eval_shape(p.buffer, scalars));
    fill_random(a, p, seed);
    out[p.name()] = a;
  }
  return out;
}

}  // namespace tirc

#include "transforms/autodiff/check_grad.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <thread>

#include "ir/error.h"
#include "ir/visitor.h"
#include "transforms/autodiff/gradient.h"

namespace tirc {

namespace {

NDArray to_f64(const NDArray& a) { return a.dtype() == DType::F64 ? a.copy() : a.astype(DType::F64); }

NDArray random_like(const std::vector<int64_t>& shape, std::mt19937_64& rng) {
  NDArray a(DType::F64, shape);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, u(rng));
  return a;
}

double dot(const NDArray& a, const NDArray& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// sum of a[i] * b[i] over the i where keep[i] (left-out elements may hold inf/nan).
double dot_kept(const NDArray& a, const NDArray& b, const std::vector<char>& keep) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (keep[i]) s += a.get(i) * b.get(i);
  return s;
}

// "X[1, 2]" for flat element i of an array of the given shape.
std::string elem_name(const std::string& name, const std::vector<int64_t>& shape, int64_t i) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  std::string s = name + "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string num(double v) {
  if (std::isnan(v)) return "nan";  // printf may write "-nan"
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

// At most this many gradient elements that are not finite are checked one by one in the
// directions mode (each costs two forward runs); the rest are only counted.
constexpr int64_t kMaxNonFiniteChecked = 8;
// Rounding noise of a central difference: each evaluation of L = sum <w, O> is off by about
// eps * sum |w * O| (more where the outputs cancel), so (L(x + h) - L(x - h)) / 2h is off by
// up to kRoundingFactor * eps * sum |w * O| / h. That is added to the tolerance: negligible for
// outputs of moderate size (9e-10 for sum |w * O| = 1), it keeps a correct gradient from
// failing when the outputs are large (Y = W * 1e8 + sin(X): X's finite differences were off
// by 7e-3, a failure at the default tolerances; the bound there is 0.2).
constexpr double kRoundingFactor = 4;
// F_grad is code of F's dtypes: the constants it introduces (erf's 2/sqrt(pi), log10's
// 1/ln(10), ...) are rounded to them, which for f16 / bf16 is a relative error up to the
// type's unit roundoff (bf16 2/sqrt(pi) = 1.125: 0.3%), while check-grad runs F_grad in f64.
// A gradient with half-type constants is judged with kHalfConstFactor * u * max(|fd|, |ad|)
// more (u = 2^-11 for f16, 2^-8 for bf16); a bf16 erf failed check-grad before.
constexpr double kHalfConstFactor = 4;

// The largest unit roundoff of the f16 / bf16 float constants of s (0 when it has none).
double half_const_roundoff(const Stmt& s) {
  double u = 0;
  for_each_expr(s, [&](const Expr& e) {
    if (!e.as<FloatImmNode>()) return;
    if (e.dtype() == DType::F16) u = std::max(u, std::ldexp(1.0, -11));
    if (e.dtype() == DType::BF16) u = std::max(u, std::ldexp(1.0, -8));
  });
  return u;
}

}  // namespace

CheckGradResult check_grad(const FunctionNode& f, const CheckGradOptions& opts) {
  if (!opts.full && opts.directions < 1)
    throw Error("check-grad: the number of directions must be at least 1, got " +
                std::to_string(opts.directions));
  CheckGradResult res;
  res.func = f.name;
  res.grad = opts.grad ? opts.grad : gradient(f, opts.wrt);
  const FunctionNode& g = *res.grad;
  const double half_u = half_const_roundoff(g.body);

  ArgMap inputs = random_inputs(f, opts.seed, opts.given);
  ArgMap scalars;
  for (auto& p : f.params)
    if (!p.is_buffer()) scalars[p.name()] = inputs.at(p.name());
  for (auto& p : f.params)
    if (p.is_buffer() && is_float(p.buffer->dtype)) inputs[p.name()] = to_f64(inputs.at(p.name()));

  std::mt19937_64 rng(opts.seed * 0x9E3779B97F4A7C15ull + 12345);
  // Cotangents, by output position.
  std::vector<NDArray> cot;
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    auto shape = eval_shape(f.outputs[i], scalars);
    NDArray w = is_float(f.outputs[i]->dtype) ? random_like(shape, rng) : NDArray(f.outputs[i]->dtype, shape);
    cot.push_back(w);
  }
  InterpOptions o64;
  o64.promote_f64 = true;
  auto fwd = compile_interp(f, o64);
  // Runs body(lo, hi, prog) over [0, n) in chunks on up to hardware_concurrency() threads, each
  // with its own interpreter program (prog null: the calling thread's `fwd`); rethrows the
  // first exception of a worker.
  auto parallel_chunks = [&](int64_t n, const std::function<void(int64_t, int64_t, InterpProgram*)>& body) {
    int64_t workers = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
    if (const char* t = std::getenv("TIRC_CHECK_GRAD_THREADS")) workers = std::max(1, std::atoi(t));
    if (n < 16 || workers < 2) return body(0, n, nullptr);
    workers = std::min(workers, n);
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
    int64_t step = (n + workers - 1) / workers;
    for (int64_t w = 1; w < workers; ++w)
      threads.emplace_back([&, w] {
        try {
          auto prog = compile_interp(f, o64);
          body(std::min(n, w * step), std::min(n, (w + 1) * step), prog.get());
        } catch (...) {
          errors[static_cast<size_t>(w)] = std::current_exception();
        }
      });
    try {
      body(0, std::min(n, step), nullptr);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  };

  // Output elements that are inf/nan at the inputs are left out of L: their finite
  // differences are nan, and the derivative of a non-finite value means nothing.
  std::vector<std::vector<char>> keep(f.outputs.size());
  bool any_left_out = false;
  int64_t kept_total = 0;  // float output elements kept in L
  double l_magnitude = 0;  // sum |w * O| over the kept elements (kRoundingFactor)
  {
    ArgMap out0 = fwd->run(inputs);
    for (size_t i = 0; i < f.outputs.size(); ++i) {
      const NDArray& o = out0.at(f.outputs[i]->name);
      keep[i].assign(static_cast<size_t>(o.numel()), 1);
      if (!is_float(f.outputs[i]->dtype)) continue;
      kept_total += o.numel();
      int64_t bad = 0;
      for (int64_t e = 0; e < o.numel(); ++e)
        if (!std::isfinite(o.get(e))) {
          keep[i][e] = 0;
          cot[i].set(e, 0.0);
          ++bad;
          --kept_total;
        } else {
          l_magnitude += std::fabs(cot[i].get(e) * o.get(e));
        }
      if (bad) {
        any_left_out = true;
        res.notes.push_back("output " + f.outputs[i]->name + ": " + std::to_string(bad) + " of " +
                            std::to_string(o.numel()) +
                            " elements are not finite at the inputs (left out of the check)");
      }
    }
  }
  auto loss = [&](InterpProgram& prog, const ArgMap& in) {
    ArgMap out = prog.run(in);
    double L = 0;
    for (size_t i = 0; i < f.outputs.size(); ++i)
      if (is_float(f.outputs[i]->dtype)) L += dot_kept(cot[i], out.at(f.outputs[i]->name), keep[i]);
    return L;
  };
  auto run_grad = [&](const std::vector<NDArray>& w) {
    ArgMap grad_inputs = inputs;
    for (size_t i = 0; i < f.outputs.size(); ++i) grad_inputs[g.params[f.params.size() + i].name()] = w[i];
    return run_interp(g, grad_inputs, o64);
  };
  ArgMap grads = run_grad(cot);
  // Which input elements feed a left-out output: the gradient with cotangent 1 on the
  // left-out elements and 0 elsewhere (run only when some output element was left out).
  ArgMap feeds_left_out;
  if (any_left_out) {
    std::vector<NDArray> w;
    for (size_t i = 0; i < f.outputs.size(); ++i) {
      NDArray m = cot[i].copy();
      for (int64_t e = 0; e < m.numel(); ++e) m.set(e, keep[i][e] ? 0.0 : 1.0);
      w.push_back(m);
    }
    feeds_left_out = run_grad(w);
  }

  // The wrt inputs, in F_grad's output order.
  std::vector<std::string> wrt = opts.wrt;
  if (wrt.empty())
    for (auto& p : f.params)
      if (p.is_buffer() && is_float(p.buffer->dtype)) wrt.push_back(p.name());
  for (size_t k = 0; k < wrt.size(); ++k) {
    InputCheck ic;
    ic.name = wrt[k];
    if (any_left_out && kept_total == 0) {
      // L is the empty sum: every check would compare 0 with 0.
      ic.passed = false;
      ic.notes.push_back("no output element is finite at the inputs: nothing to compare");
      res.failed++;
      res.inputs.push_back(ic);
      continue;
    }
    const NDArray& x0 = inputs.at(wrt[k]);
    // A given F_grad may compute more results than --wrt asks for: its result `<X>_grad`.
    const std::string gname = opts.grad ? wrt[k] + "_grad" : g.outputs[k]->name;
    NDArray gx = to_f64(grads.at(gname));
    NDArray feeds = any_left_out ? to_f64(feeds_left_out.at(gname)) : NDArray();
    double scale = 1;
    for (int64_t i = 0; i < x0.numel(); ++i)
      if (std::isfinite(x0.get(i))) scale = std::max(scale, std::fabs(x0.get(i)));
    double h = opts.eps * scale;
    // Reasons for skipped checks, with their counts, in order of first occurrence.
    std::vector<std::pair<std::string, int>> skip_reasons;
    auto skip = [&](const std::string& why) {
      ++ic.skipped;
      for (auto& [w, n] : skip_reasons)
        if (w == why) return void(++n);
      skip_reasons.push_back({why, 1});
    };
    int fail_notes = 0;
    // gdir: the gradient that directions are dotted with (gx without its non-finite elements).
    NDArray gdir = gx;
    // The central difference along d (or the single element elem), as computed by `prog`.
    auto central = [&](InterpProgram& prog, const NDArray& d, int64_t elem) {
      ArgMap in = inputs;
      NDArray xp = x0.copy(), xm = x0.copy();
      if (elem >= 0) {
        xp.set(elem, x0.get(elem) + h);
        xm.set(elem, x0.get(elem) - h);
      } else {
        for (int64_t i = 0; i < x0.numel(); ++i) {
          xp.set(i, x0.get(i) + h * d.get(i));
          xm.set(i, x0.get(i) - h * d.get(i));
        }
      }
      in[wrt[k]] = xp;
      double lp = loss(prog, in);
      in[wrt[k]] = xm;
      double lm = loss(prog, in);
      return (lp - lm) / (2 * h);
    };
    // Judges one check; fd: its central difference (central() with this d / elem).
    auto judge = [&](double fd, const NDArray& d, int64_t elem) {
      double ad = elem >= 0 ? gx.get(elem) : dot(gdir, d);
      bool fd_ok = std::isfinite(fd), ad_ok = std::isfinite(ad);
      std::string where = elem >= 0 ? elem_name(wrt[k], x0.shape(), elem) : "a direction";
      if (!fd_ok) {
        // The function is not finite (or not defined) within h of the inputs: nothing to
        // compare against, whatever the gradient is.
        skip("finite differences not finite");
        return;
      }
      if (!ad_ok) {
        double c = elem >= 0 && any_left_out ? feeds.get(elem) : 0.0;
        if (c != 0.0) {  // nonzero or nan: the element feeds an output that is not finite
          skip("gradient not finite where an output is not finite");
          return;
        }
        ic.passed = false;
        if (fail_notes++ < 3)
          ic.notes.push_back("gradient at " + where + " is " + num(ad) + " where finite differences give " +
                             num(fd));
        ++ic.checks;
        return;
      }
      double err = std::fabs(fd - ad);
      double mag = std::max(std::fabs(fd), std::fabs(ad));
      // Zero tolerances ask for exact agreement (how a user makes check-grad fail on purpose):
      // no allowance for rounding then either.
      double noise = opts.rtol > 0 || opts.atol > 0
                         ? kRoundingFactor * std::numeric_limits<double>::epsilon() * l_magnitude / h +
                               kHalfConstFactor * half_u * mag
                         : 0.0;
      // rtol * 0 is 0 even for rtol = inf (inf * 0 would be NaN and fail an exact zero).
      bool ok = err <= opts.atol + (mag == 0 ? 0.0 : opts.rtol * mag) + noise;
      if (!ok) ic.passed = false;
      ic.max_abs_err = std::max(ic.max_abs_err, err);
      if (mag > 0) ic.max_rel_err = std::max(ic.max_rel_err, err / mag);
      ++ic.checks;
    };
    auto check_dir = [&](const NDArray& d, int64_t elem) { judge(central(*fwd, d, elem), d, elem); };
    if (opts.full) {
      // Two forward runs per element: spread over the cores (each worker has its own program;
      // the results, judged in order afterwards, do not depend on the split).
      std::vector<double> fds(static_cast<size_t>(x0.numel()));
      parallel_chunks(x0.numel(), [&](int64_t lo, int64_t hi, InterpProgram* prog) {
        for (int64_t i = lo; i < hi; ++i)
          fds[static_cast<size_t>(i)] = central(prog ? *prog : *fwd, NDArray(), i);
      });
      for (int64_t i = 0; i < x0.numel(); ++i) judge(fds[static_cast<size_t>(i)], NDArray(), i);
    } else {
      // Gradient elements that are not finite would make every direction nan: they are left
      // out of the directions and checked one by one (the first few).
      std::vector<int64_t> nonfinite;
      for (int64_t i = 0; i < gx.numel(); ++i)
        if (!std::isfinite(gx.get(i))) nonfinite.push_back(i);
      bool all_nonfinite = x0.numel() > 0 && static_cast<int64_t>(nonfinite.size()) == x0.numel();
      if (!nonfinite.empty()) {
        gdir = gx.copy();
        for (int64_t i : nonfinite) gdir.set(i, 0.0);
      }
      for (int r = 0; r < opts.directions && !all_nonfinite; ++r) {
        NDArray d = random_like(x0.shape(), rng);
        for (int64_t i : nonfinite) d.set(i, 0.0);
        check_dir(d, -1);
      }
      int64_t n_checked = std::min<int64_t>(static_cast<int64_t>(nonfinite.size()), kMaxNonFiniteChecked);
      for (int64_t j = 0; j < n_checked; ++j) check_dir(NDArray(), nonfinite[j]);
      if (static_cast<int64_t>(nonfinite.size()) > n_checked)
        ic.notes.push_back(std::to_string(nonfinite.size()) +
                           " gradient elements are not finite; the first " + std::to_string(n_checked) +
                           " were checked one by one, the others not");
    }
    for (auto& [why, n] : skip_reasons) ic.notes.push_back(std::to_string(n) + " skipped: " + why);
    if (ic.passed && ic.checks == 0 && ic.skipped > 0) {
      // Nothing was compared: never report a pass that checked nothing.
      ic.passed = false;
      ic.notes.push_back("no check could be compared");
    }
    (ic.passed ? res.passed : res.failed)++;
    res.inputs.push_back(ic);
  }
  return res;
}

}  // namespace tirc

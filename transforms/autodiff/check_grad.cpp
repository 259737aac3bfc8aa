#include "transforms/autodiff/check_grad.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "ir/error.h"
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

}  // namespace

CheckGradResult check_grad(const FunctionNode& f, const CheckGradOptions& opts) {
  CheckGradResult res;
  res.func = f.name;
  res.grad = gradient(f, opts.wrt);
  const FunctionNode& g = *res.grad;

  ArgMap inputs = random_inputs(f, opts.seed, opts.given);
  ArgMap scalars;
  for (auto& p : f.params)
    if (!p.is_buffer()) scalars[p.name()] = inputs.at(p.name());
  for (auto& p : f.params)
    if (p.is_buffer() && is_float(p.buffer->dtype)) inputs[p.name()] = to_f64(inputs.at(p.name()));

  std::mt19937_64 rng(opts.seed * 0x9E3779B97F4A7C15ull + 12345);
  // Cotangents, by output position.
  std::vector<NDArray> cot;
  ArgMap grad_inputs = inputs;
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    auto shape = eval_shape(f.outputs[i], scalars);
    NDArray w = is_float(f.outputs[i]->dtype) ? random_like(shape, rng) : NDArray(f.outputs[i]->dtype, shape);
    cot.push_back(w);
    grad_inputs[g.params[f.params.size() + i].name()] = w;
  }
  InterpOptions o64;
  o64.promote_f64 = true;
  auto fwd = compile_interp(f, o64);
  auto loss = [&](const ArgMap& in) {
    ArgMap out = fwd->run(in);
    double L = 0;
    for (size_t i = 0; i < f.outputs.size(); ++i)
      if (is_float(f.outputs[i]->dtype)) L += dot(cot[i], out.at(f.outputs[i]->name));
    return L;
  };
  ArgMap grads = run_interp(g, grad_inputs, o64);

  // The wrt inputs, in F_grad's output order.
  std::vector<std::string> wrt = opts.wrt;
  if (wrt.empty())
    for (auto& p : f.params)
      if (p.is_buffer() && is_float(p.buffer->dtype)) wrt.push_back(p.name());
  for (size_t k = 0; k < wrt.size(); ++k) {
    InputCheck ic;
    ic.name = wrt[k];
    const NDArray& x0 = inputs.at(wrt[k]);
    NDArray gx = to_f64(grads.at(g.outputs[k]->name));
    double scale = 1;
    for (int64_t i = 0; i < x0.numel(); ++i) scale = std::max(scale, std::fabs(x0.get(i)));
    double h = opts.eps * scale;
    auto check_dir = [&](const NDArray& d, int64_t elem) {
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
      double lp = loss(in);
      in[wrt[k]] = xm;
      double lm = loss(in);
      double fd = (lp - lm) / (2 * h);
      double ad = elem >= 0 ? gx.get(elem) : dot(gx, d);
      double err = std::fabs(fd - ad);
      double mag = std::max(std::fabs(fd), std::fabs(ad));
      bool ok = err <= opts.atol + opts.rtol * mag;
      if (std::isnan(fd) || std::isnan(ad) || !ok) ic.passed = false;  // nan never passes
      ic.max_abs_err = std::max(ic.max_abs_err, err);
      if (mag > 0) ic.max_rel_err = std::max(ic.max_rel_err, err / mag);
      ++ic.checks;
    };
    if (opts.full) {
      for (int64_t i = 0; i < x0.numel(); ++i) check_dir(NDArray(), i);
    } else {
      for (int r = 0; r < opts.directions; ++r) check_dir(random_like(x0.shape(), rng), -1);
    }
    (ic.passed ? res.passed : res.failed)++;
    res.inputs.push_back(ic);
  }
  return res;
}

}  // namespace tirc

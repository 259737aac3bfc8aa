#include "transforms/schedule/verify.h"

#include <cmath>
#include <sstream>

#include "ir/error.h"

namespace tirc {

FunctionRunner interp_runner() {
  return [](const FunctionNode& f, const ArgMap& in) { return run_interp(f, in); };
}

ArgMap verify_inputs(const FunctionNode& f, const CompareOptions& opts) {
  return random_inputs(f, opts.seed, opts.scalars);
}

static std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

CompareResult compare_arrays(const std::string& name, const NDArray& ref, const NDArray& got,
                             const CompareOptions& opts) {
  CompareResult r;
  if (ref.shape() != got.shape()) {
    r.ok = false;
    r.detail = name + ": shape " + describe(got) + " differs from " + describe(ref);
    return r;
  }
  int64_t n = ref.numel();
  bool fl = is_float(ref.dtype());
  double scale = 0;
  if (fl) {
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(ref.get(i))) scale += std::fabs(ref.get(i));
    scale = n ? scale / n : 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    double a = ref.get(i), b = got.get(i);
    bool same;
    if (!fl) {
      same = a == b;
    } else if (std::isnan(a) || std::isnan(b)) {
      same = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      same = a == b;
    } else {
      double err = std::fabs(a - b);
      r.max_abs_err = std::max(r.max_abs_err, err);
      // rtol * 0 is 0 even for rtol = inf (inf * 0 would be NaN and fail equal zeros).
      double mag = std::max({std::fabs(a), std::fabs(b), scale});
      same = err <= opts.atol + (mag == 0 ? 0.0 : opts.rtol * mag);
    }
    if (!same && r.ok) {
      r.ok = false;
      std::ostringstream os;
      os.precision(9);
      os << name << index_text(ref.shape(), i) << ": expected " << a << ", got " << b;
      r.detail = os.str();
    }
  }
  return r;
}

CompareResult compare_functions(const FunctionNode& ref, const FunctionNode& test, const CompareOptions& opts,
                                const FunctionRunner& ref_runner, const FunctionRunner& test_runner) {
  ArgMap in = verify_inputs(ref, opts);
  ArgMap want = ref_runner(ref, in);
  ArgMap got;
  CompareResult res;
  try {
    // Inputs are copied: a runner must not see the other's writes.
    ArgMap in2;
    for (auto& [k, v] : in) in2[k] = v.copy();
    got = test_runner(test, in2);
  } catch (const Error& e) {
    res.ok = false;
    res.detail = std::string("the scheduled function failed: ") + e.what();
    return res;
  }
  for (auto& o : ref.outputs) {
    auto it = got.find(o->name);
    if (it == got.end()) {
      res.ok = false;
      res.detail = "output " + o->name + " missing";
      return res;
    }
    CompareResult c = compare_arrays(o->name, want.at(o->name), it->second, opts);
    res.max_abs_err = std::max(res.max_abs_err, c.max_abs_err);
    if (!c.ok && res.ok) {
      res.ok = false;
      res.detail = c.detail;
    }
  }
  return res;
}

}  // namespace tirc

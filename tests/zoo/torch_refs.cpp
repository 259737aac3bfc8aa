#include "tests/zoo/torch_refs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "ir/error.h"
#include "runtime/npy.h"
#include "tests/zoo/zoo_util.h"

namespace fs = std::filesystem;

namespace tirc::zoo {

namespace {
const char* kPython = "/usr/bin/python3";

bool same_values(const NDArray& a, const NDArray& b) {
  // Dtypes may differ: .npy has no bf16, which write_npy stores as f32.
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.get(i) != b.get(i)) return false;
  return true;
}
}  // namespace

RefCase make_ref_case(const FunctionNode& f, uint64_t seed, const ArgMap& scalars) {
  RefCase c;
  c.inputs = random_inputs(f, seed, scalars);
  c.outputs = run_interp(f, c.inputs);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const auto& o : f.outputs) {
    const NDArray& out = c.outputs.at(o->name);
    NDArray cot(out.dtype(), out.shape());
    if (is_float(out.dtype()))
      for (int64_t i = 0; i < cot.numel(); ++i) cot.set(i, u(rng));
    c.cotangents[o->name] = cot;
  }
  return c;
}

fs::path refs_dir(const std::string& tag) { return fs::path(TIRC_BINARY).parent_path() / tag; }

TorchRefs::TorchRefs(fs::path script, fs::path root) : script_(std::move(script)), root_(std::move(root)) {}

bool TorchRefs::current(const std::string& name, const RefCase& c) const {
  const fs::path dir = root_ / name;
  if (!fs::exists(dir / "ref_done")) return false;
  try {
    for (const auto& [prefix, args] : {std::pair{"in_", &c.inputs}, std::pair{"cot_", &c.cotangents}})
      for (const auto& [n, a] : *args)
        if (!same_values(read_npy((dir / (prefix + n + ".npy")).string()), a)) return false;
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::string TorchRefs::stage(const std::string& name, const RefCase& c) const {
  if (current(name, c)) return "";
  const fs::path dir = root_ / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [n, a] : c.inputs) write_npy(dir / ("in_" + n + ".npy"), a);
  for (const auto& [n, a] : c.cotangents) write_npy(dir / ("cot_" + n + ".npy"), a);
  return " " + shell_quote(name);
}

void TorchRefs::run_script(const std::string& names) const {
  if (names.empty()) return;
  CommandResult r = run_command(std::string(kPython) + " " + shell_quote(script_.string()) + " refs " +
                                shell_quote(root_.string()) + names);
  if (r.exit_code != 0)
    throw Error("the references failed (they need " + std::string(kPython) +
                " with numpy and torch: apt-get install python3-numpy python3-torch):\n" + r.output);
}

void TorchRefs::ensure(const std::vector<std::string>& names,
                       const std::function<RefCase(const std::string&)>& make) {
  std::string staged;
  for (const auto& name : names) {
    try {
      staged += stage(name, make(name));
    } catch (const Error&) {
    }
  }
  run_script(staged);
}

RefCase TorchRefs::case_with_refs(const std::string& name,
                                  const std::function<RefCase(const std::string&)>& make) {
  RefCase c = make(name);  // once: it parses the script and runs the interpreter
  run_script(stage(name, c));
  if (!current(name, c)) throw Error(name + ": no references for the current inputs");
  const std::string s = status(name);
  if (s != "ok") throw Error(name + ": " + s);
  return c;
}

std::string TorchRefs::status(const std::string& name) const {
  std::ifstream in(root_ / name / "ref_done");
  std::string s;
  if (!std::getline(in, s)) return "no references were computed";
  return s;
}

std::map<std::string, NDArray> TorchRefs::load(const std::string& name, const std::string& kind) const {
  std::map<std::string, NDArray> out;
  const std::string prefix = "ref_" + kind + "_";
  for (const auto& e : fs::directory_iterator(root_ / name)) {
    std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && e.path().extension() == ".npy")
      out[f.substr(prefix.size(), f.size() - prefix.size() - 4)] = read_npy(e.path().string());
  }
  return out;
}

void expect_close(const std::string& label, const NDArray& got, const NDArray& want, double rtol,
                  double atol) {
  ASSERT_EQ(got.shape(), want.shape()) << label << ": shape differs from the reference";
  double scale = 1.0, maxerr = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get(i)));
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get(i), w = want.get(i), err = std::fabs(g - w);
    if (!std::isnan(err)) maxerr = std::max(maxerr, err);
    if (!(err <= atol * scale + rtol * std::fabs(w))) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << label << ": " << bad << "/" << want.numel() << " elements differ, max abs err "
                    << maxerr << "; first at flat index " << first << ": tirc "
                    << (first < 0 ? 0.0 : got.get(first)) << " vs reference "
                    << (first < 0 ? 0.0 : want.get(first));
}

void expect_vjp_matches(const FunctionNode& g, const RefCase& c, const std::map<std::string, NDArray>& want,
                        double rtol, double atol) {
  ArgMap all = c.inputs;
  for (const auto& [name, a] : c.cotangents) all[name + "_grad"] = a;
  for (const auto& p : g.params)
    ASSERT_TRUE(all.count(p.name())) << g.name << " has a parameter " << p.name()
                                     << " that is neither a forward param nor a cotangent";
  InterpOptions f64;
  f64.promote_f64 = true;
  ArgMap results = run_interp(g, all, f64);
  std::map<std::string, NDArray> got;
  for (const auto& [name, a] : results) {
    ASSERT_TRUE(name.size() > 5 && name.substr(name.size() - 5) == "_grad")
        << g.name << " result '" << name << "' is not named <input>_grad";
    got[name.substr(0, name.size() - 5)] = a;
  }
  ASSERT_EQ(key_list(got), key_list(want))
      << "gradients tirc computed vs the contract's default, every float "
         "input buffer";
  for (const auto& [name, w] : want)
    expect_close(g.name + " result " + name + "_grad", got.at(name), w, rtol, atol);
}

std::string key_list(const std::map<std::string, NDArray>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return "[" + s + "]";
}

}  // namespace tirc::zoo

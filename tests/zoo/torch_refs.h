// PyTorch references computed in one Python process for many functions (importing torch
// costs seconds: one import per test was most of the zoo's run time).
//
// A reference script (examples/ops/ref/check.py, or tests/zoo/outsider/outsider_ref.py which
// reuses it with its own registry) run as `SCRIPT refs ROOT NAME...` reads ROOT/NAME/in_*.npy
// and cot_*.npy and writes ref_out_<output>.npy, ref_grad_<param>.npy (float64, the VJP of
// torch.autograd) and ref_done ("ok" or why not). TorchRefs writes the inputs, runs the script
// for the names whose references are missing or were computed on other inputs, and reads the
// results. A CTest fixture calls ensure() for all names first; a test run alone recomputes
// only its own.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/module.h"

namespace tirc::zoo {

// What references are computed on: random inputs (seed; scalars given), the f32
// interpreter's outputs, one cotangent per output (uniform in [-1, 1] from seed + 1; zeros
// for integer outputs).
struct RefCase {
  ArgMap inputs, outputs, cotangents;
};
RefCase make_ref_case(const FunctionNode& f, uint64_t seed, const ArgMap& scalars);

class TorchRefs {
 public:
  // script: the reference script; root: where the per-name folders go (under the build dir).
  TorchRefs(std::filesystem::path script, std::filesystem::path root);

  // Makes root/NAME hold references on make(NAME) for every name (one Python process for
  // all that need them). A name whose case cannot be made is left out: its own test reports
  // why. Throws Error when the Python process fails as a whole.
  void ensure(const std::vector<std::string>& names, const std::function<RefCase(const std::string&)>& make);
  // The case of make(name), with references computed on it (as ensure); throws Error naming why there is no
  // reference.
  RefCase case_with_refs(const std::string& name, const std::function<RefCase(const std::string&)>& make);
  // "ok", or why the name has no references.
  std::string status(const std::string& name) const;
  // The arrays ref_<kind>_NAME.npy (kind "out" or "grad") of a name, by NAME.
  std::map<std::string, NDArray> load(const std::string& name, const std::string& kind) const;

 private:
  bool current(const std::string& name, const RefCase& c) const;
  // Writes c's inputs to root/NAME unless its references are current; returns " NAME"
  // (quoted, for the script's command line) when they must be computed, else "".
  std::string stage(const std::string& name, const RefCase& c) const;
  // Runs the script on the staged names (no-op for none); Error when it fails.
  void run_script(const std::string& names) const;
  std::filesystem::path script_, root_;
};

// The build dir's folder for references (next to the tirc binary).
std::filesystem::path refs_dir(const std::string& tag);

// check.py's compare(), as gtest expectations: same shape, every element within
// atol * max(1, max|want|) + rtol * |want| (a NaN on either side is a mismatch).
void expect_close(const std::string& label, const NDArray& got, const NDArray& want, double rtol,
                  double atol);

// Runs g (the F_grad of tirc grad) in f64 on c's inputs and cotangents (params named
// <output>_grad) and expects its results <param>_grad to be exactly the reference VJPs
// `want` (every float input buffer, the contract's default) and close to them.
void expect_vjp_matches(const FunctionNode& g, const RefCase& c, const std::map<std::string, NDArray>& want,
                        double rtol, double atol);

// "[a, b]": the keys of a map, for comparing name sets in messages.
std::string key_list(const std::map<std::string, NDArray>& m);

}  // namespace tirc::zoo

#include "interp/runner.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "interp/scalar.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "runtime/npy.h"

namespace tirc {
namespace {

std::mutex g_mu;
std::map<std::string, Engine>& engines() {
  static std::map<std::string, Engine> m = {
      {"interp", [](const FunctionNode& f, const ArgMap& in) { return run_interp(f, in); }}};
  return m;
}

const Param* find_param(const FunctionNode& f, const std::string& name) {
  for (auto& p : f.params)
    if (p.name() == name) return &p;
  return nullptr;
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

std::string fmt_value(double v, DType t) {
  char buf[64];
  if (std::isnan(v)) return "nan";  // as NumPy prints it, whatever the sign bit
  if (!is_float(t))
    snprintf(buf, sizeof buf, "%.0f", v);
  else
    snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Element i of an integer or bool array, exactly: sign-extended for signed dtypes (as a
// two's complement uint64), zero-extended for unsigned ones.
uint64_t int_element(const NDArray& a, int64_t i) {
  switch (a.dtype()) {
    case DType::I64: return static_cast<uint64_t>(a.ptr<int64_t>()[i]);
    case DType::U32: return a.ptr<uint32_t>()[i];
    default:
      // Every other integer dtype is exact in a double.
      return static_cast<uint64_t>(static_cast<int64_t>(a.get(i)));
  }
}

bool is_unsigned(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::Bool; }

}  // namespace

void register_engine(const std::string& name, Engine e) {
  std::lock_guard<std::mutex> l(g_mu);
  engines()[name] = std::move(e);
}

Engine find_engine(const std::string& name) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = engines().find(name);
  if (it != engines().end()) return it->second;
  if (name == "jit")
    throw Error(
        "engine 'jit' is not available: the LLVM JIT is not built into this tirc (use --engine interp)");
  throw Error("unknown engine '" + name + "' (expected interp or jit)");
}

NDArray parse_scalar_value(const std::string& text, DType t, const std::string& what) {
  NDArray a(t, {});
  // Blanks around the value are ignored on both sides, as Python's int() / float() do (strtoll
  // alone skipped leading ones only: `n= 5` passed, `n='5 '` did not).
  size_t b = text.find_first_not_of(" \t\n\r"), e = text.find_last_not_of(" \t\n\r");
  std::string s = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
  if (t == DType::Bool) {
    if (s == "true" || s == "True" || s == "1")
      a.set(0, 1);
    else if (s == "false" || s == "False" || s == "0")
      a.set(0, 0);
    else
      throw Error(what + ": '" + text + "' is not a bool (true/false)");
    return a;
  }
  if (is_float(t)) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    // Python's float() syntax: strtod also reads C's hex floats (`0x10`, `0x1p3`) and `nan(5)`,
    // which float() refuses (and integer values are decimal: `n=0x10` is refused too).
    if (s.empty() || *end != '\0' || s.find_first_of("xX(") != std::string::npos)
      throw Error(what + ": '" + text + "' is not a number");
    if (t == DType::F16)
      a.ptr<uint16_t>()[0] = float_to_half(interp::double_to_float_odd(v));
    else if (t == DType::BF16)
      a.ptr<uint16_t>()[0] = float_to_bf16(interp::double_to_float_odd(v));
    else
      a.set(0, v);
    return a;
  }
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') throw Error(what + ": '" + text + "' is not an integer");
  if (errno == ERANGE || v < interp::int_min_of(t) || v > interp::int_max_of(t))
    throw Error(what + ": " + text + " is out of range for " + std::string(dtype_name(t)));
  if (t == DType::I64)
    a.ptr<int64_t>()[0] = v;
  else
    a.set(0, static_cast<double>(v));
  return a;
}

namespace {
// Standard input, read on first use and kept: `tirc verify --input n=-` parses the specs once
// per verified function, and the second function found standard input empty.
const std::string& stdin_bytes() {
  static const std::string bytes = [] {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }();
  return bytes;
}
}  // namespace

ArgMap parse_input_specs(const FunctionNode& f, const std::vector<std::string>& specs,
                         bool can_save_outputs) {
  ArgMap out;
  std::vector<std::pair<const Param*, std::string>> fills;  // buffer params filled with a value
  std::set<std::string> given;
  std::string stdin_by;  // the parameter given as `-` (standard input is read once)
  for (auto& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--input " + spec + ": expected NAME=FILE.npy or NAME=VALUE");
    std::string name = spec.substr(0, eq), val = spec.substr(eq + 1);
    const Param* p = find_param(f, name);
    if (!p) {
      for (auto& o : f.outputs)
        if (o->name == name)
          // Only `tirc run` has --output (stats, check-grad and bench suggested it too).
          throw Error("--input " + spec + ": " + name + " is an output of function " + f.name +
                      ", not an input" +
                      (can_save_outputs ? " (save it with --output " + name + "=FILE.npy)"
                                        : " (outputs are computed by the function)"));
      throw Error("--input " + spec + ": function " + f.name + " has no parameter named " + name);
    }
    // A second value for the same parameter is a mistake in the command line, not an override.
    if (!given.insert(name).second)
      throw Error("--input " + spec + ": parameter " + name + " is given twice");
    DType t = p->is_buffer() ? p->buffer->dtype : p->var.dtype();
    std::error_code ec;
    if (std::filesystem::is_directory(val, ec))
      throw Error("parameter " + name + ": " + val + " is a directory, not a .npy file");
    bool is_file = val == "-" || ends_with(val, ".npy") || (std::filesystem::is_regular_file(val, ec));
    // A path that is not a regular file and not a value: a pipe such as /dev/stdin or the
    // /dev/fd/63 of bash's `--input A=<(python make.py)`.
    if (!is_file && std::filesystem::exists(val, ec)) {
      try {
        (void)parse_scalar_value(val, t, name);
      } catch (const Error&) {
        is_file = true;
      }
    }
    if (is_file) {
      if (val == "-") {
        if (!stdin_by.empty())
          throw Error("--input " + spec + ": standard input is already read by --input " + stdin_by +
                      "=- (it holds one .npy; give the other as a file)");
        stdin_by = name;
      }
      NDArray a;
      try {
        if (val == "-") {  // `--input A=-`: the .npy bytes on standard input
          const std::string& bytes = stdin_bytes();
          // The script given as `-` has read standard input already (`cat f.tir | tirc run -
          // --input A=-` said "not a .npy file (bad magic)"). The parser names such a script
          // "<stdin>"; otherwise say only what is wrong.
          if (bytes.empty())
            throw Error(f.loc.file == "<stdin>"
                            ? "standard input is empty (when the script is read from `-`, standard input "
                              "holds the script: give the .npy as a file)"
                            : "standard input is empty (`--input " + name + "=-` reads one .npy from it)");
          a = parse_npy(bytes, "<stdin>", t);
        } else {
          a = read_npy(val, t);
        }
      } catch (const Error& e) {
        throw Error("parameter " + name + ": " + e.what());
      }
      // A wrong rank is reported before sizes are taken from the arrays (else a symbolic size
      // it should have given would be reported missing instead).
      if (p->is_buffer() && a.shape().size() != p->buffer->shape.size()) {
        std::string want, got;
        for (auto& e : p->buffer->shape) want += (want.empty() ? "" : ", ") + print_expr(e);
        for (int64_t d : a.shape()) got += (got.empty() ? "" : ", ") + std::to_string(d);
        throw Error("parameter " + name + ": expected shape [" + want + "], got [" + got + "]");
      }
      if (!p->is_buffer()) {
        if (a.numel() != 1)
          throw Error("parameter " + name + " (" + val + "): a scalar needs a single value");
        NDArray s(t, {});
        std::memcpy(s.data(), a.data(), dtype_bytes(t));
        a = s;
      }
      out[name] = a;
    } else if (!p->is_buffer()) {
      out[name] = parse_scalar_value(val, t, "parameter " + name);
    } else {
      fills.push_back({p, val});
    }
  }
  // An integer scalar parameter that is a dimension of a buffer read from a file takes that
  // size when it is not given (TVM binds shape variables from the arrays): `func add(n: i32,
  // A: f32[n])` runs with `--input A=a.npy` alone. A given value is kept (and checked against
  // the arrays by the run).
  for (auto& p : f.params) {
    if (p.is_buffer() || out.count(p.name()) || !is_int(p.var.dtype())) continue;
    for (auto& q : f.params) {
      auto it = q.is_buffer() ? out.find(q.name()) : out.end();
      if (it == out.end() || out.count(p.name())) continue;
      const auto& shape = q.buffer->shape;
      for (size_t d = 0; d < shape.size() && d < it->second.shape().size(); ++d) {
        auto* v = shape[d].as<VarNode>();
        if (v && v == p.var.get() && shape.size() == it->second.shape().size()) {
          out[p.name()] = parse_scalar_value(std::to_string(it->second.shape()[d]), p.var.dtype(),
                                             "parameter " + p.name() + " (size of " + q.name() + ")");
          break;
        }
      }
    }
  }
  // Fill values need the shapes, hence the scalar params given above.
  for (auto& [p, val] : fills) {
    DType t = p->buffer->dtype;
    NDArray one = parse_scalar_value(val, t, "parameter " + p->name());
    NDArray a(t, eval_shape(p->buffer, out));
    int64_t bytes = dtype_bytes(t);
    for (int64_t i = 0; i < a.numel(); ++i)
      std::memcpy(static_cast<uint8_t*>(a.data()) + i * bytes, one.data(), static_cast<size_t>(bytes));
    out[p->name()] = a;
  }
  return out;
}

ArgMap complete_inputs(const FunctionNode& f, const ArgMap& given, std::optional<uint64_t> seed) {
  if (!seed)
    for (auto& p : f.params)
      if (!given.count(p.name()))
        throw Error("missing input for parameter " + p.name() + " (give --input " + p.name() +
                    "=FILE.npy|VALUE or --random SEED)");
  ArgMap out = seed ? random_inputs(f, *seed, given) : given;
  // Shapes are checked here, before any engine, so that every engine words a wrong shape as the
  // interpreter does (the JIT said `input A: expected f32[3, 8], got f32[3, 4]`).
  auto text = [](const std::vector<int64_t>& s) {
    std::string t;
    for (int64_t d : s) t += (t.empty() ? "" : ", ") + std::to_string(d);
    return "[" + t + "]";
  };
  for (auto& p : f.params) {
    if (!p.is_buffer()) continue;
    auto want = eval_shape(p.buffer, out);
    const NDArray& a = out.at(p.name());
    if (a.shape() != want)
      throw Error("parameter " + p.name() + ": expected shape " + text(want) + ", got " + text(a.shape()));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_output_specs(const FunctionNode& f,
                                                                    const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      // `-o out.npy`, as `-o` is written for the other subcommands: say which NAME goes in front
      // (outsider round 17; it said only "expected NAME=FILE.npy").
      std::string names, hint;
      for (auto& o : f.outputs) names += (names.empty() ? "" : ", ") + o->name;
      std::string name = eq == std::string::npos ? spec : spec.substr(0, eq);
      std::string file = eq == std::string::npos ? spec : spec.substr(eq + 1);
      bool is_output = false;
      for (auto& o : f.outputs) is_output |= o->name == name;
      if (is_output)
        hint = " (write --output " + name + "=" + (file == name || file.empty() ? name + ".npy" : file) + ")";
      else if (!f.outputs.empty() && eq == std::string::npos)
        hint = " (write --output " + f.outputs[0]->name + "=" + spec + "; the outputs of " + f.name +
               " are " + names + ")";
      throw Error("--output " + spec + ": expected NAME=FILE.npy" + hint);
    }
    std::string name = spec.substr(0, eq);
    bool known = false;
    for (auto& o : f.outputs) known |= o->name == name;
    if (!known) {
      for (auto& p : f.params)
        if (p.name() == name)
          throw Error("--output " + spec + ": " + name + " is an input of function " + f.name +
                      ", not an output (its outputs are listed after ->)");
      throw Error("--output " + spec + ": function " + f.name + " has no output named " + name);
    }
    out.push_back({name, spec.substr(eq + 1)});
  }
  // Two outputs written to one file: the second silently replaced the first (`--output B=o.npy
  // --output C=o.npy` left only C). Paths are compared after resolving `.`/`..`/symlinks, so
  // `o.npy` and `./o.npy` are the same file; the same output named twice is harmless.
  auto file_key = [](const std::string& path) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
    return ec ? path : p.string();
  };
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i].second != "-" && out[j].second != "-" && out[i].first != out[j].first &&
          file_key(out[i].second) == file_key(out[j].second))
        throw Error("--output: outputs " + out[j].first + " and " + out[i].first + " are both written to " +
                    out[i].second + " (one file holds one array)");
  return out;
}

std::string summarize_output(const std::string& name, const NDArray& a, int first) {
  std::string sum_text;
  if (is_float(a.dtype())) {
    double sum = 0;
    for (int64_t i = 0; i < a.numel(); ++i) sum += a.get(i);
    sum_text = fmt_value(sum, DType::F64);
  } else {
    // Integers are summed exactly in 64 bits, wrapping as NumPy's int64/uint64 accumulator
    // of np.sum does (a double loses i64 values above 2^53).
    uint64_t sum = 0;
    for (int64_t i = 0; i < a.numel(); ++i) sum += int_element(a, i);
    sum_text = is_unsigned(a.dtype()) ? std::to_string(sum) : std::to_string(static_cast<int64_t>(sum));
  }
  std::string s = name + ": " + describe(a) + " sum=" + sum_text + " first=[";
  int64_t n = std::max<int64_t>(0, std::min<int64_t>(first, a.numel()));
  for (int64_t i = 0; i < n; ++i) {
    std::string v = is_float(a.dtype())      ? fmt_value(a.get(i), a.dtype())
                    : is_unsigned(a.dtype()) ? std::to_string(int_element(a, i))
                                             : std::to_string(static_cast<int64_t>(int_element(a, i)));
    s += (i ? ", " : "") + v;
  }
  if (a.numel() > n) s += n ? ", ..." : "...";
  return s + "]";
}

}  // namespace tirc

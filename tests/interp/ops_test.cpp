// Every operator, intrinsic and cast of every dtype against NumPy (PyTorch for bf16 and for
// sigmoid/erf/rsqrt), on edge values (nan, inf, -0, huge, tiny, negative floor division).
// Fixtures are generated at test time by tests/interp/gen_ops.py with /usr/bin/python3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "runtime/npy.h"
#include "tests/interp/build_ir.h"

namespace tirc {
using namespace tirc::testing;

namespace {

struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

const std::string& fixture_dir() {
  static TempDir holder;
  static std::string dir = [] {
    char tmpl[] = "/tmp/tirc_interp_ops_XXXXXX";
    std::string d = mkdtemp(tmpl);
    std::string cmd =
        "/usr/bin/python3 " TIRC_SOURCE_DIR "/tests/interp/gen_ops.py " + d + " > " + d + "/log.txt 2>&1";
    if (std::system(cmd.c_str()) != 0)
      throw std::runtime_error("fixture generation failed: see " + d + "/log.txt");
    holder.path = d;
    return d;
  }();
  return dir;
}

bool have(const std::string& name) { return std::filesystem::exists(fixture_dir() + "/" + name + ".npy"); }
NDArray fx(const std::string& name, std::optional<DType> t = std::nullopt) {
  return read_npy(fixture_dir() + "/" + name + ".npy", t);
}

// func f(a: T[n], b: T[n]) -> (z: R[n]) { z[i] = OP(a[i], b[i]) }
Function elementwise(DType t, DType rt, int64_t n, const std::function<Expr(Expr, Expr)>& op) {
  Buffer a("a", t, {i32(n)}), b("b", t, {i32(n)}), z("z", rt, {i32(n)});
  Var i("i"), vi("vi");
  Stmt body = grid({{i, i32(n)}}, block("op", {{vi, IterKind::Spatial, i32(n), i}},
                                        st(z, {vi}, op(ld(a, {vi}), ld(b, {vi})))));
  return func("f", {bparam(a), bparam(b)}, {z}, {}, {body});
}

struct OpSpec {
  const char* name;
  std::function<Expr(Expr, Expr)> build;
  bool compare;  // result is bool
  bool exact;
  bool uses_e;  // second operand is the exponent array
};

std::vector<OpSpec> op_specs() {
  auto bin = [](BinOp op) { return [op](Expr a, Expr b) { return make_binary(op, a, b); }; };
  auto un = [](Intrinsic f) { return [f](Expr a, Expr) { return make_call(f, {a}); }; };
  auto bi = [](Intrinsic f) { return [f](Expr a, Expr b) { return make_call(f, {a, b}); }; };
  return {
      {"add", bin(BinOp::Add), false, true, false},
      {"sub", bin(BinOp::Sub), false, true, false},
      {"mul", bin(BinOp::Mul), false, true, false},
      {"div", bin(BinOp::Div), false, true, false},
      {"floordiv", bin(BinOp::FloorDiv), false, true, false},
      {"mod", bin(BinOp::FloorMod), false, true, false},
      {"min", bin(BinOp::Min), false, true, false},
      {"max", bin(BinOp::Max), false, true, false},
      {"eq", bin(BinOp::EQ), true, true, false},
      {"ne", bin(BinOp::NE), true, true, false},
      {"lt", bin(BinOp::LT), true, true, false},
      {"le", bin(BinOp::LE), true, true, false},
      {"gt", bin(BinOp::GT), true, true, false},
      {"ge", bin(BinOp::GE), true, true, false},
      {"neg", [](Expr a, Expr) { return -a; }, false, true, false},
      {"exp", un(Intrinsic::Exp), false, false, false},
      {"log", un(Intrinsic::Log), false, false, false},
      {"log2", un(Intrinsic::Log2), false, false, false},
      {"log10", un(Intrinsic::Log10), false, false, false},
      {"log1p", un(Intrinsic::Log1p), false, false, false},
      {"expm1", un(Intrinsic::Expm1), false, false, false},
      {"sqrt", un(Intrinsic::Sqrt), false, true, false},
      {"rsqrt", un(Intrinsic::Rsqrt), false, false, false},
      {"sin", un(Intrinsic::Sin), false, false, false},
      {"cos", un(Intrinsic::Cos), false, false, false},
      {"tan", un(Intrinsic::Tan), false, false, false},
      {"tanh", un(Intrinsic::Tanh), false, false, false},
      {"sigmoid", un(Intrinsic::Sigmoid), false, false, false},
      {"erf", un(Intrinsic::Erf), false, false, false},
      {"abs", un(Intrinsic::Abs), false, true, false},
      {"floor", un(Intrinsic::Floor), false, true, false},
      {"ceil", un(Intrinsic::Ceil), false, true, false},
      {"round", un(Intrinsic::Round), false, true, false},
      {"trunc", un(Intrinsic::Trunc), false, true, false},
      {"sign", un(Intrinsic::Sign), false, true, false},
      {"pow", bi(Intrinsic::Pow), false, false, true},
      {"truncdiv", bi(Intrinsic::TruncDiv), false, true, false},
      {"truncmod", bi(Intrinsic::TruncMod), false, true, false},
  };
}

double rel_tol(DType t) {
  switch (t) {
    case DType::F16: return 1.01 * std::ldexp(1.0, -10);
    case DType::BF16: return 1.01 * std::ldexp(1.0, -7);
    case DType::F32: return 4 * std::ldexp(1.0, -23);
    default: return 4 * std::ldexp(1.0, -52);
  }
}

// Compares element i; returns an empty string when equal enough.
std::string mismatch(const NDArray& got, const NDArray& want, int64_t i, bool exact, bool check_zero_sign) {
  double g = got.get(i), w = want.get(i);
  if (std::isnan(w) || std::isnan(g)) {
    if (std::isnan(w) && std::isnan(g)) return "";
  } else if (exact) {
    if (g == w && (!check_zero_sign || std::signbit(g) == std::signbit(w))) return "";
  } else {
    if (g == w) return "";
    if (std::isfinite(g) && std::isfinite(w) &&
        std::fabs(g - w) <= rel_tol(got.dtype()) * std::max(std::fabs(g), std::fabs(w)) + 1e-30)
      return "";
  }
  char buf[128];
  snprintf(buf, sizeof buf, "element %lld: got %.17g, want %.17g", static_cast<long long>(i), g, w);
  return buf;
}

const char* kDtypes[] = {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32"};

}  // namespace

TEST(InterpOps, EveryOperatorAgainstNumPy) {
  int checked = 0;
  for (const char* dn : kDtypes) {
    DType t = *parse_dtype(dn);
    NDArray a = fx(std::string("a_") + dn, t), b = fx(std::string("b_") + dn, t),
            e = fx(std::string("e_") + dn, t);
    for (auto& spec : op_specs()) {
      std::string ref = std::string(dn) + "_" + spec.name;
      if (!have(ref)) continue;
      DType rt = spec.compare ? DType::Bool : t;
      NDArray want = fx(ref, rt);
      auto f = elementwise(t, rt, a.shape()[0], spec.build);
      ArgMap out = run_interp(*f, {{"a", a}, {"b", spec.uses_e ? e : b}});
      const NDArray& got = out["z"];
      for (int64_t i = 0; i < a.numel(); ++i) {
        std::string m = mismatch(got, want, i, spec.exact, t != DType::BF16);
        EXPECT_EQ(m, "") << dn << " " << spec.name << "(" << a.get(i) << ", " << (spec.uses_e ? e : b).get(i)
                         << ")";
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(InterpOps, EveryCastAgainstNumPy) {
  int checked = 0;
  for (const char* src : {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "bool"}) {
    DType ts = *parse_dtype(src);
    NDArray a = fx(std::string("a_") + src, ts);
    for (const char* dst : {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "bool"}) {
      DType td = *parse_dtype(dst);
      NDArray want = fx(std::string("cast_") + src + "_to_" + dst, td);
      auto f = elementwise(ts, td, a.shape()[0], [td](Expr x, Expr) { return make_cast(td, x); });
      ArgMap out = run_interp(*f, {{"a", a}, {"b", a}});
      for (int64_t i = 0; i < a.numel(); ++i) {
        // Compare integers exactly through int64 (double would lose i64 bits).
        if (td == DType::I64) {
          EXPECT_EQ(out["z"].ptr<int64_t>()[i], want.ptr<int64_t>()[i])
              << src << "->" << dst << " of " << a.get(i);
        } else {
          EXPECT_EQ(mismatch(out["z"], want, i, true, true), "") << src << "->" << dst << " of " << a.get(i);
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 121);
}

TEST(InterpOps, EdgeValuesDocumented) {
  // min/max: NaN propagates; ties keep the first operand (NumPy).
  auto run1 = [](DType t, std::function<Expr(Expr, Expr)> op, double x, double y) {
    auto f = elementwise(t, t, 1, op);
    NDArray a(t, {1}), b(t, {1});
    a.set(0, x);
    b.set(0, y);
    return run_interp(*f, {{"a", a}, {"b", b}})["z"].get(0);
  };
  auto mn = [](Expr a, Expr b) { return min(a, b); };
  EXPECT_TRUE(std::isnan(run1(DType::F32, mn, 1.0, NAN)));
  EXPECT_TRUE(std::isnan(run1(DType::F32, mn, NAN, 1.0)));
  EXPECT_FALSE(std::signbit(run1(DType::F32, mn, 0.0, -0.0)));
  EXPECT_TRUE(std::signbit(run1(DType::F32, mn, -0.0, 0.0)));
  // Floor division / modulo of negatives.
  auto fd = [](Expr a, Expr b) { return floordiv(a, b); };
  auto fm = [](Expr a, Expr b) { return floormod(a, b); };
  EXPECT_EQ(run1(DType::I32, fd, -7, 2), -4);
  EXPECT_EQ(run1(DType::I32, fm, -7, 2), 1);
  EXPECT_EQ(run1(DType::I32, fm, 7, -2), -1);
  EXPECT_EQ(run1(DType::I8, fd, -128, -1), -128);  // wraps
  // Wraparound.
  auto add = [](Expr a, Expr b) { return a + b; };
  EXPECT_EQ(run1(DType::I32, add, 2147483647, 1), -2147483648.0);
  EXPECT_EQ(run1(DType::U8, add, 255, 1), 0);
  EXPECT_EQ(run1(
                DType::U32, [](Expr a, Expr b) { return a - b; }, 0, 1),
            4294967295.0);
  // Float -> int casts saturate, NaN -> 0.
  auto cast_i32 = [](double v) {
    auto f = elementwise(DType::F32, DType::I32, 1, [](Expr x, Expr) { return make_cast(DType::I32, x); });
    NDArray a(DType::F32, {1});
    a.set(0, v);
    return run_interp(*f, {{"a", a}, {"b", a}})["z"].get(0);
  };
  EXPECT_EQ(cast_i32(1e10), 2147483647);
  EXPECT_EQ(cast_i32(-1e10), -2147483648.0);
  EXPECT_EQ(cast_i32(NAN), 0);
  EXPECT_EQ(cast_i32(-2.9), -2);
  // f32 arithmetic is float, not double: 16777216 + 1 stays 16777216.
  EXPECT_EQ(run1(DType::F32, add, 16777216.0, 1.0), 16777216.0);
  // f16 rounds after every operation: 2048 + 1 = 2048 (ties to even).
  EXPECT_EQ(run1(DType::F16, add, 2048.0, 1.0), 2048.0);
  EXPECT_EQ(run1(DType::F16, add, 60000.0, 60000.0), INFINITY);
}

TEST(InterpOps, IntegerPowNegativeExponentIsAnError) {
  auto f = elementwise(DType::I32, DType::I32, 1, [](Expr a, Expr b) {
    return make_call(Intrinsic::Pow, {a, b});
  });
  NDArray a(DType::I32, {1}), b(DType::I32, {1});
  a.set(0, 2);
  b.set(0, -1);
  try {
    run_interp(*f, {{"a", a}, {"b", b}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block \"op\": pow(2, -1): integers to negative integer powers are not allowed");
  }
}

}  // namespace tirc

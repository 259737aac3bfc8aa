// Interpreter throughput: block iterations per second on matmul 256^3 and the shared conv2d
// example, next to the same loops written in plain C++ in this process.
// Build and run: ninja -C build interp_bench && build/interp_bench [repeats]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/stats.h"
#include "ir/error.h"
#include "parser/parser.h"

using namespace tirc;

namespace {

const char* kMatmul = R"(
func matmul(A: f32[256, 256], B: f32[256, 256]) -> (C: f32[256, 256]) {
  for i, j, k in grid(256, 256, 256) {
    block C(vi: spatial(256) = i, vj: spatial(256) = j, vk: reduce(256) = k) {
      init { C[vi, vj] = 0.0 }
      C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    }
  }
}
)";

// CPU time of this thread (robust to other processes sharing the machine); best of repeats.
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double seconds(const std::function<void()>& f, int repeats) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    double t0 = cpu_now();
    f();
    best = std::min(best, cpu_now() - t0);
  }
  return best;
}

// Keeps the optimiser from dropping the reference loops.
volatile float g_sink;

void report(const char* name, double iters, double t_interp, double t_cpp, double max_err) {
  std::printf(
      "%-8s iterations %10.0f | interp %8.2f ms %8.1f M it/s | C++ -O2 %7.2f ms %8.1f M it/s | ratio %5.1fx "
      "| max |diff| %.3g\n",
      name, iters, t_interp * 1e3, iters / t_interp / 1e6, t_cpp * 1e3, iters / t_cpp / 1e6, t_interp / t_cpp,
      max_err);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  try {
    // ---- matmul 256^3 ----
    {
      Module m = parse_module(kMatmul, "matmul256.tir");
      const FunctionNode& f = *m.find_func("matmul");
      ArgMap in = random_inputs(f, 1);
      auto prog = compile_interp(f);
      ArgMap out;
      double ti = seconds([&] { out = prog->run(in); }, repeats);
      const float* A = in["A"].ptr<float>();
      const float* B = in["B"].ptr<float>();
      std::vector<float> C(256 * 256);
      double tc = seconds(
          [&] {
            for (int i = 0; i < 256; ++i)
              for (int j = 0; j < 256; ++j)
                for (int k = 0; k < 256; ++k) {
                  if (k == 0) C[i * 256 + j] = 0.f;
                  C[i * 256 + j] = C[i * 256 + j] + A[i * 256 + k] * B[k * 256 + j];
                }
            g_sink = C[7];
          },
          repeats);
      double err = 0;
      for (int q = 0; q < 256 * 256; ++q)
        err = std::max(err, double(std::fabs(out["C"].ptr<float>()[q] - C[q])));
      report("matmul", static_cast<double>(static_counts(f, {}).total.iterations), ti, tc, err);
    }
    // ---- the shared conv2d example ----
    {
      // CMake compiles with absolute paths: the examples sit next to bench/.
      std::string src = __FILE__;
      std::string root = src.substr(0, src.rfind("/bench/"));
      Module m = parse_file(root + "/examples/conv2d.tir");
      const FunctionNode& f = *m.find_func("conv2d");
      ArgMap in = random_inputs(f, 2);
      auto prog = compile_interp(f);
      ArgMap out;
      double ti = seconds([&] { out = prog->run(in); }, repeats);
      const float* X = in["X"].ptr<float>();
      const float* W = in["W"].ptr<float>();
      std::vector<float> P(2 * 8 * 18 * 18), Y(2 * 16 * 16 * 16);
      double tc = seconds(
          [&] {
            for (int n = 0; n < 2; ++n)
              for (int c = 0; c < 8; ++c)
                for (int h = 0; h < 18; ++h)
                  for (int w = 0; w < 18; ++w)
                    P[((n * 8 + c) * 18 + h) * 18 + w] = (h >= 1 && h < 17 && w >= 1 && w < 17)
                                                             ? X[((n * 8 + c) * 16 + h - 1) * 16 + w - 1]
                                                             : 0.f;
            for (int n = 0; n < 2; ++n)
              for (int fo = 0; fo < 16; ++fo)
                for (int y = 0; y < 16; ++y)
                  for (int x = 0; x < 16; ++x)
                    for (int c = 0; c < 8; ++c)
                      for (int r = 0; r < 3; ++r)
                        for (int s = 0; s < 3; ++s) {
                          float& o = Y[((n * 16 + fo) * 16 + y) * 16 + x];
                          if (c == 0 && r == 0 && s == 0) o = 0.f;
                          o = o +
                              P[((n * 8 + c) * 18 + y + r) * 18 + x + s] * W[((fo * 8 + c) * 3 + r) * 3 + s];
                        }
            g_sink = Y[5];
          },
          repeats);
      double err = 0;
      for (size_t q = 0; q < Y.size(); ++q)
        err = std::max(err, double(std::fabs(out["Y"].ptr<float>()[q] - Y[q])));
      report("conv2d", static_cast<double>(static_counts(f, {}).total.iterations), ti, tc, err);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "interp_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}

#include <gtest/gtest.h>
#include <filesystem>
#include <cmath>
#include <cstdlib>
#include "transforms/simplify/simplify.h"
#include "transforms/autodiff/gradient.h"
#include "parser/parser.h"
#include "ir/printer.h"
#include "ir/error.h"
#include "interp/interp.h"
namespace tirc { namespace {
namespace fs = std::filesystem;
TEST(Scratch2, GradExamples) {
  std::vector<fs::path> files;
  if (const char* l = std::getenv("AFIX_LIST")) {
    FILE* fp = fopen(l, "r"); char buf[4096];
    while (fgets(buf, sizeof buf, fp)) { std::string x(buf); while (!x.empty() && x.back() == '\n') x.pop_back(); files.push_back(x); }
    fclose(fp);
  } else
  for (auto& d : {fs::path(TIRC_SOURCE_DIR "/examples/ops"), fs::path(TIRC_SOURCE_DIR "/examples")})
    for (auto& e : fs::directory_iterator(d)) if (e.path().extension() == ".tir") files.push_back(e.path());
  for (auto& p : files) {
    Module m;
    try { m = parse_file(p.string()); } catch (...) { continue; }
    for (auto& f : m.funcs) {
      std::vector<Function> cands = {f};
      for (bool simp : {false, true}) {
        try { GradientOptions o; o.simplify = simp; cands.push_back(gradient(*f, {}, o)); } catch (const Error& e) { }
      }
      for (auto& g : cands) {
        Function s = simplify_function(*g);
        ArgMap in;
        ArgMap given;
        for (auto& prm : g->params) if (!prm.is_buffer()) { NDArray a(prm.var.dtype(), {}); a.set(0, std::getenv("AFIX_N") ? atoi(std::getenv("AFIX_N")) : 10); given[prm.var.name()] = a; }
        try { in = random_inputs(*g, 7, given); } catch (const Error& e) { printf("inputs fail %s %s\n", p.c_str(), e.what()); continue; }
        ArgMap a, b;
        try { a = run_interp(*g, in); } catch (const Error& e) {  continue; }
        try { b = run_interp(*s, in); } catch (const Error& e) { ADD_FAILURE() << p << " simplified fails " << e.what(); continue; }
        for (auto& [k, v] : a) {
          auto& w = b.at(k);
          for (int64_t i = 0; i < v.numel(); ++i)
            if (!(v.get(i) == w.get(i)) && !(std::isnan(v.get(i)) && std::isnan(w.get(i)))) {
              ADD_FAILURE() << p << " " << g->name << " output " << k << "[" << i << "] " << v.get(i) << " vs " << w.get(i)
                            << "\n" << print_function(*g) << "\n" << print_function(*s);
              break;
            }
        }
      }
    }
  }
}
}}

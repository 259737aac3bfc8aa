// Debugging aid for the schedules of bench/: prints a function of a .tir file after its
// schedules and the lowering pipeline (transforms/lower/lower.h), i.e. what codegen compiles.
//   ninja -C build-cg lower_dump && build-cg/lower_dump bench/matmul.tir matmul [--no-flatten] [--checks]
// (--checks: with the bounds checks of compiled CPU code, as the JIT lowers.)
#include <cstdio>
#include <cstring>

#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/lower/lower.h"
#include "transforms/schedule/schedule.h"

using namespace tirc;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: lower_dump FILE.tir FUNC [--no-flatten] [--checks]\n");
    return 2;
  }
  try {
    Module m = apply_module_schedules(parse_file(argv[1]));
    Function f = m.find_func(argv[2]);
    if (!f) throw std::runtime_error(std::string("no function ") + argv[2]);
    bool flatten = true, checks = false;
    for (int i = 3; i < argc; ++i) {
      if (std::strcmp(argv[i], "--no-flatten") == 0) flatten = false;
      if (std::strcmp(argv[i], "--checks") == 0) checks = true;
    }
    std::vector<BoundsCheckSite> sites;
    std::printf("%s\n", print_function(*lower_function(*f, flatten, checks ? &sites : nullptr)).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

// Debugging aid for the schedules of bench/: prints a function of a .tir file after its
// schedules and the lowering pipeline (transforms/lower/lower.h), i.e. what codegen compiles.
//   ninja -C build-cg lower_dump && build-cg/lower_dump bench/matmul.tir matmul [--no-flatten]
#include <cstdio>
#include <cstring>

#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/lower/lower.h"
#include "transforms/schedule/schedule.h"

using namespace tirc;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: lower_dump FILE.tir FUNC [--no-flatten]\n");
    return 2;
  }
  try {
    Module m = apply_module_schedules(parse_file(argv[1]));
    Function f = m.find_func(argv[2]);
    if (!f) throw std::runtime_error(std::string("no function ") + argv[2]);
    bool flatten = !(argc > 3 && std::strcmp(argv[3], "--no-flatten") == 0);
    std::printf("%s\n", print_function(*lower_function(*f, flatten)).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

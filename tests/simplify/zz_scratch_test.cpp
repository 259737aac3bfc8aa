#include <gtest/gtest.h>
#include <cstdlib>
#include "tests/simplify/test_util.h"
#include "transforms/simplify/bounds.h"
#include "transforms/simplify/simplify.h"
#include "parser/parser.h"
#include "ir/printer.h"
#include "interp/interp.h"
namespace tirc { namespace {
using testing::str;
TEST(Scratch, File) {
  const char* p = std::getenv("AFIX_FILE");
  if (!p) return;
  Module m = parse_file(p);
  Function f = m.find_func("f");
  Function s = simplify_function(*f);
  printf("%s\n", print_function(*s).c_str());
  ArgMap in = {};
  if (const char* nv = std::getenv("AFIX_N")) { NDArray a(DType::I32, {}); a.set(0, atoi(nv)); in["n"] = a; }
  ArgMap a = run_interp(*f, in), b = run_interp(*s, in);
  for (int64_t i = 0; i < a.at("Y").numel(); ++i) printf("%g/%g ", a.at("Y").get(i), b.at("Y").get(i));
  printf("\n");
}
}}

#include <gtest/gtest.h>
#include "parser/parser.h"
namespace tirc {
TEST(ParserSmoke, Examples) {
  for (const char* f : {"matmul.tir", "conv2d.tir", "softmax.tir"}) {
    Module m = parse_file(std::string(TIRC_SOURCE_DIR) + "/examples/" + f);
    EXPECT_EQ(m.funcs.size(), 1u);
  }
}
}

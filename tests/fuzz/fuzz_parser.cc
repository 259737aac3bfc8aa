// libFuzzer target for the .tir parser: any input must either parse or raise
// tirc::SourceError; crashes, other exceptions, hangs and sanitizer reports are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ir/error.h"
#include "parser/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tirc::parse_module(text, "fuzz.tir");
  } catch (const tirc::SourceError&) {
  }
  return 0;
}

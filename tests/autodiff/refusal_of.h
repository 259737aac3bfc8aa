// Test helper shared by the autodiff suites: the refusal message of gradient() for one
// function of a .tir text.
#pragma once

#include <string>

#include "ir/error.h"
#include "tests/autodiff/parse_one.h"
#include "transforms/autodiff/gradient.h"

namespace tirc::testing {

// gradient()'s tirc::Error message for function `name` of `src` (default --wrt), or
// "accepted" when it derives F_grad.
inline std::string refusal_of(const std::string& src, const std::string& name = "f") {
  Function f = parse_one(src, name);
  try {
    gradient(*f, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace tirc::testing

// Parses a .tir module (LANGUAGE.md) into IR, with every check of the language applied
// (names, types, read-only params, block names, bindings, bounds, init placement).
// Throws SourceError ("FILE:LINE:COL: error: MSG") on the first error.
#pragma once

#include <string>

#include "ir/module.h"

namespace tirc {

Module parse_module(const std::string& text, const std::string& filename);
// Reads FILE (or standard input for "-") and parses it; SourceError if unreadable.
Module parse_file(const std::string& path);

}  // namespace tirc

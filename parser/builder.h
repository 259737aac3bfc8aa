// Internal: turns the ANTLR parse tree of a .tir file into IR, applying every check of the
// language (names, types, read-only params, block names, bindings, bounds, init placement).
// Used by parser/parse.cpp only; the public API is parser/parser.h.
#pragma once

#include <string>

#include "TirParser.h"
#include "ir/module.h"

namespace tirc::parser_detail {

// Throws SourceError at the first problem. `tokens` is the stream the tree was parsed from.
Module build_module(tirc_antlr::TirParser::ProgramContext* prog, antlr4::CommonTokenStream* tokens,
                    const std::string& file);

}  // namespace tirc::parser_detail

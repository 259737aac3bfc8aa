// Running a function from command-line style arguments: `NAME=FILE.npy|NAME=VALUE` input
// specs, random filling, a registry of execution engines ("interp" built in, "jit" registered
// by the LLVM backend), and the printed summary of outputs. Used by `tirc run` and reusable by
// other subcommands (check-grad, verify, bench).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "interp/interp.h"

namespace tirc {

// An execution engine: runs f on inputs (every param by name), returns every output by name.
using Engine = std::function<ArgMap(const FunctionNode& f, const ArgMap& inputs)>;

// Registers (or replaces) an engine under `name`. The codegen library registers "jit".
void register_engine(const std::string& name, Engine e);
// The engine `name`; Error "engine 'jit' is not available: ..." when none is registered.
Engine find_engine(const std::string& name);

// Parses input specs for f. NAME=FILE reads a .npy file (which must have the parameter's
// dtype; bf16 see runtime/npy.h); NAME=VALUE gives a scalar parameter, or fills a buffer
// parameter with VALUE (its shape from the scalar parameters). VALUE is an integer, a float,
// inf/nan, or true/false. A spec is a file when it ends in ".npy" or names an existing regular
// file, or names an existing pipe or device (/dev/stdin, /dev/fd/63) and is not a VALUE;
// FILE "-" reads the .npy bytes from standard input.
// An integer scalar parameter not given that is a dimension of a buffer read from a file
// (`A: f32[n]`) takes that size. Errors name the parameter. An output named as an input is an
// error that suggests `--output NAME=FILE.npy` when `can_save_outputs` (tirc run), else not.
ArgMap parse_input_specs(const FunctionNode& f, const std::vector<std::string>& specs,
                         bool can_save_outputs = true);

// Completes `given` for a run: with a seed, random values for every missing buffer param
// (random_inputs); without, Error naming the first missing parameter.
ArgMap complete_inputs(const FunctionNode& f, const ArgMap& given, std::optional<uint64_t> seed);

// "NAME=FILE" pairs -> (name, file); Error on a malformed spec, an unknown output name, or two
// different outputs written to the same file.
std::vector<std::pair<std::string, std::string>> parse_output_specs(const FunctionNode& f,
                                                                    const std::vector<std::string>& specs);

// One line per output: `NAME: f32[2, 3] sum=... first=[...]`.
std::string summarize_output(const std::string& name, const NDArray& a, int first = 8);

// Parses a scalar literal into a 0-d array of dtype t; Error mentioning `what` if malformed.
NDArray parse_scalar_value(const std::string& text, DType t, const std::string& what);

}  // namespace tirc

// Refusal messages that name what the user wrote (helper round 17).
//
// gradient() refuses with a tirc::Error naming a block or buffer; after normalisation (and in
// the reverse pass) that can be one the user never wrote: a block wrapped around plain-loop
// stores (`S`, `S_1`), the pieces of a split step (`S_p_1`), a state's history (`S_hist`), the
// version of a buffer (`X_s1`, `Y_v2`), a backward step (`sb_rev`), a tape (`sb_tape`).
// explain_generated_names appends, for each such name in the message, what it was generated
// for: the user's buffer or block it derives from (by its name) and where the stores of a
// generated block were written (their source positions), e.g.
// `... (S_p_1: a block generated for buffer S, from the stores at f.tir:12:7, f.tir:15:9)`.
#pragma once

#include <string>

#include "ir/module.h"

namespace tirc::ad {

// msg with the explanation appended (msg itself when it names nothing generated). `user`:
// the function as the user wrote it; `normalized`: what gradient() worked on (may be null,
// when normalisation itself refused).
std::string explain_generated_names(const std::string& msg, const FunctionNode& user,
                                    const FunctionNode* normalized);

}  // namespace tirc::ad

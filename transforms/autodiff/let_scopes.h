// The let scopes of F_grad as the printed text gives them.
//
// A `let x = E` statement binds x for every statement after it in its list (LANGUAGE.md), so
// the parser always makes a LetStmt the last statement of its sequence, holding the rest as
// its body. The reverse pass builds sequences such as [let a0 = .. { S1 }, let a1 = .. { S2 }]
// (adjoint stores fused into one block, each with its own lets), which print as four lines
// that re-parse as let a0 = .. { S1; let a1 = .. { S2 } }: the same computation, another IR,
// so `tirc grad` output was not a print / parse fixpoint. nest_let_scopes moves the
// statements after a LetStmt into its body (its value is evaluated at the same point; the
// statements moved do not use its distinct variable), giving the parser's form.
#pragma once

#include "ir/stmt.h"

namespace tirc::ad {

// s with every LetStmt that is not the last statement of its sequence extended over the
// statements after it (recursively). Unchanged subtrees are shared.
Stmt nest_let_scopes(const Stmt& s);

}  // namespace tirc::ad

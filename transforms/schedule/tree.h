// Navigation and path-copying replacement in immutable statement trees, for the schedule
// primitives. Nodes are found by pointer identity; a replacement rebuilds the ancestors.
#pragma once

#include <functional>
#include <vector>

#include "ir/stmt.h"

namespace tirc::sched {

// Path of statements from root down to (and including) target; empty when not found.
// Descends into blocks (init and body).
std::vector<Stmt> find_path(const Stmt& root, const StmtNode* target);

// Rebuilds root with target replaced by repl. An undefined repl removes target (from a
// Seq; elsewhere it becomes an empty Seq).
Stmt replace_stmt(const Stmt& root, const StmtNode* target, const Stmt& repl);

// Direct children statements of s (For body, Seq elements, if arms, let body, block
// init/body of a BlockRealize).
std::vector<Stmt> children(const Stmt& s);

// Every BlockRealize under s (s included), pre-order. With `nested` false, does not look
// inside the blocks found.
std::vector<Stmt> collect_blocks(const Stmt& s, bool nested = true);
// Every For under s (s included), pre-order, not looking inside blocks.
std::vector<Stmt> collect_loops(const Stmt& s);

// s with the body replaced (For, LetStmt), or s rebuilt as a For with a new header.
Stmt with_body(const Stmt& s, const Stmt& body);
Stmt rebuild_for(const ForNode& f, Var v, Expr min, Expr extent, Stmt body);
Stmt with_kind(const ForNode& f, ForKind kind, const std::string& tag);

// The statements of a body (a Seq's elements, or the statement itself).
std::vector<Stmt> seq_items(const Stmt& s);

// True when s contains a Store or call_extern that is not inside a block under s.
bool has_loose_effects(const Stmt& s);
// True when s contains a call_extern anywhere.
bool has_extern_call(const Stmt& s);
// An extern call not enclosed by a block under s (inside a block, the block's reads/writes
// describe what the call touches through its pointer arguments).
bool has_extern_call_outside_regions(const Stmt& s);

// A block with fields changed.
Block update_block(const Block& b, const std::function<void(BlockNode&)>& f);
Stmt update_realize(const Stmt& br, const std::function<void(BlockRealizeNode&)>& f);

}  // namespace tirc::sched

// A helper of the normalisation rewrites that only rewrite the statements under F's root block.
#pragma once

#include <memory>
#include <utility>

#include "ir/module.h"
#include "ir/stmt.h"

namespace tirc::ad {

// A copy of f whose root block body is fn(body) (fn: const Stmt& -> Stmt). The copy keeps f's
// body when fn returns the body it was given (same node) or f's body is not a BlockRealize.
template <class Fn>
Function map_root_body(const FunctionNode& f, Fn&& fn) {
  auto out = std::make_shared<FunctionNode>(f);
  auto* rr = f.body.as<BlockRealizeNode>();
  if (!rr) return out;
  Stmt body = std::forward<Fn>(fn)(rr->block->body);
  if (body.same_as(rr->block->body)) return out;
  BlockNode rb = *rr->block.get();
  rb.body = body;
  out->body = make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
  return out;
}

}  // namespace tirc::ad

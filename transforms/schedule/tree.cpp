#include "transforms/schedule/tree.h"

namespace tirc::sched {

std::vector<Stmt> children(const Stmt& s) {
  if (!s.defined()) return {};
  switch (s.kind()) {
    case StmtKind::For: return {s.as<ForNode>()->body};
    case StmtKind::Seq: return s.as<SeqNode>()->stmts;
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      if (n->else_case.defined()) return {n->then_case, n->else_case};
      return {n->then_case};
    }
    case StmtKind::LetStmt: return {s.as<LetStmtNode>()->body};
    case StmtKind::BlockRealize: {
      auto* b = s.as<BlockRealizeNode>()->block.get();
      if (b->init.defined()) return {b->init, b->body};
      return {b->body};
    }
    default: return {};
  }
}

static bool path_rec(const Stmt& s, const StmtNode* target, std::vector<Stmt>& path) {
  if (!s.defined()) return false;
  path.push_back(s);
  if (s.get() == target) return true;
  for (auto& c : children(s))
    if (path_rec(c, target, path)) return true;
  path.pop_back();
  return false;
}

std::vector<Stmt> find_path(const Stmt& root, const StmtNode* target) {
  std::vector<Stmt> p;
  path_rec(root, target, p);
  return p;
}

Block update_block(const Block& b, const std::function<void(BlockNode&)>& f) {
  BlockNode n = *b.get();
  f(n);
  return make_block(std::move(n));
}

Stmt update_realize(const Stmt& br, const std::function<void(BlockRealizeNode&)>& f) {
  auto n = std::make_shared<BlockRealizeNode>(*br.as<BlockRealizeNode>());
  f(*n);
  return Stmt(std::move(n));
}

Stmt rebuild_for(const ForNode& f, Var v, Expr min, Expr extent, Stmt body) {
  return make_for(std::move(v), std::move(min), std::move(extent), f.for_kind, std::move(body), f.thread_tag,
                  f.annotations);
}

Stmt with_kind(const ForNode& f, ForKind kind, const std::string& tag) {
  return make_for(f.loop_var, f.min, f.extent, kind, f.body, tag, f.annotations);
}

Stmt with_body(const Stmt& s, const Stmt& body) {
  switch (s.kind()) {
    case StmtKind::For: {
      auto* f = s.as<ForNode>();
      return rebuild_for(*f, f->loop_var, f->min, f->extent, body);
    }
    case StmtKind::LetStmt: {
      auto* l = s.as<LetStmtNode>();
      return make_let_stmt(l->var, l->value, body);
    }
    default: return s;
  }
}

Stmt replace_stmt(const Stmt& root, const StmtNode* target, const Stmt& repl) {
  if (!root.defined()) return root;
  if (root.get() == target) return repl.defined() ? repl : make_seq({});
  switch (root.kind()) {
    case StmtKind::For:
    case StmtKind::LetStmt: {
      Stmt b = children(root)[0];
      Stmt nb = replace_stmt(b, target, repl);
      return nb.same_as(b) ? root : with_body(root, nb);
    }
    case StmtKind::Seq: {
      auto* s = root.as<SeqNode>();
      std::vector<Stmt> out;
      bool changed = false;
      for (auto& c : s->stmts) {
        if (c.get() == target) {
          changed = true;
          if (repl.defined()) out.push_back(repl);
          continue;
        }
        Stmt nc = replace_stmt(c, target, repl);
        if (!nc.same_as(c)) changed = true;
        out.push_back(nc);
      }
      return changed ? make_seq(out) : root;
    }
    case StmtKind::IfThenElse: {
      auto* n = root.as<IfThenElseStmtNode>();
      Stmt t = replace_stmt(n->then_case, target, repl);
      Stmt e = replace_stmt(n->else_case, target, repl);
      if (t.same_as(n->then_case) && e.same_as(n->else_case)) return root;
      return make_if(n->cond, t, e);
    }
    case StmtKind::BlockRealize: {
      auto* br = root.as<BlockRealizeNode>();
      const BlockNode* b = br->block.get();
      Stmt ni = replace_stmt(b->init, target, repl);
      Stmt nb = replace_stmt(b->body, target, repl);
      if (ni.same_as(b->init) && nb.same_as(b->body)) return root;
      Block blk = update_block(br->block, [&](BlockNode& n) {
        n.init = ni;
        n.body = nb;
      });
      return make_block_realize(br->bindings, br->predicate, blk);
    }
    default: return root;
  }
}

static void collect_blocks_rec(const Stmt& s, bool nested, std::vector<Stmt>& out) {
  if (!s.defined()) return;
  if (s.kind() == StmtKind::BlockRealize) {
    out.push_back(s);
    if (!nested) return;
  }
  for (auto& c : children(s)) collect_blocks_rec(c, nested, out);
}

std::vector<Stmt> collect_blocks(const Stmt& s, bool nested) {
  std::vector<Stmt> out;
  collect_blocks_rec(s, nested, out);
  return out;
}

static void collect_loops_rec(const Stmt& s, std::vector<Stmt>& out) {
  if (!s.defined() || s.kind() == StmtKind::BlockRealize) return;
  if (s.kind() == StmtKind::For) out.push_back(s);
  for (auto& c : children(s)) collect_loops_rec(c, out);
}

std::vector<Stmt> collect_loops(const Stmt& s) {
  std::vector<Stmt> out;
  collect_loops_rec(s, out);
  return out;
}

std::vector<Stmt> seq_items(const Stmt& s) {
  if (auto* q = s.as<SeqNode>()) return q->stmts;
  return {s};
}

bool has_loose_effects(const Stmt& s) {
  if (!s.defined() || s.kind() == StmtKind::BlockRealize) return false;
  if (s.kind() == StmtKind::Store || s.kind() == StmtKind::Evaluate) return true;
  for (auto& c : children(s))
    if (has_loose_effects(c)) return true;
  return false;
}

bool has_extern_call_outside_regions(const Stmt& s) {
  if (!s.defined()) return false;
  if (s.kind() == StmtKind::Evaluate) return true;
  if (auto* br = s.as<BlockRealizeNode>()) {
    // Inside a block, the block's regions describe the call: it is trusted to touch memory
    // only through its pointer arguments (TVM's contract for extern calls in tensor
    // intrinsics), which the regions cover (inferred as whole buffers, or the desc's regions
    // of a tensorized tile).
    (void)br;
    return false;
  }
  for (auto& c : children(s))
    if (has_extern_call_outside_regions(c)) return true;
  return false;
}

bool has_extern_call(const Stmt& s) {
  if (!s.defined()) return false;
  if (s.kind() == StmtKind::Evaluate) return true;
  for (auto& c : children(s))
    if (has_extern_call(c)) return true;
  return false;
}

}  // namespace tirc::sched

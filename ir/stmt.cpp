#include "ir/stmt.h"

namespace tirc {

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unroll";
    case ForKind::ThreadBinding: return "thread_binding";
  }
  return "?";
}

const char* iter_kind_name(IterKind k) {
  switch (k) {
    case IterKind::Spatial: return "spatial";
    case IterKind::Reduce: return "reduce";
    case IterKind::Scan: return "scan";
    case IterKind::Opaque: return "opaque";
  }
  return "?";
}

Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag,
              Annotations ann) {
  auto n = std::make_shared<ForNode>();
  n->loop_var = std::move(v);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->body = std::move(body);
  n->thread_tag = std::move(thread_tag);
  n->annotations = std::move(ann);
  return Stmt(std::move(n));
}

Stmt make_block_realize(std::vector<Expr> bindings, Expr predicate, Block block) {
  auto n = std::make_shared<BlockRealizeNode>();
  n->bindings = std::move(bindings);
  n->predicate = predicate.defined() ? std::move(predicate) : make_bool(true);
  n->block = std::move(block);
  return Stmt(std::move(n));
}

Block make_block(BlockNode node) { return Block(std::make_shared<BlockNode>(std::move(node))); }

Stmt make_store(Buffer b, std::vector<Expr> idx, Expr value) {
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(b);
  n->indices = std::move(idx);
  n->value = std::move(value);
  return Stmt(std::move(n));
}
Stmt make_store(Buffer b, std::vector<Expr> idx, Expr value, SourceLoc loc) {
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(b);
  n->indices = std::move(idx);
  n->value = std::move(value);
  n->loc = std::move(loc);
  return Stmt(std::move(n));
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  auto n = std::make_shared<IfThenElseStmtNode>();
  n->cond = std::move(cond);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return Stmt(std::move(n));
}

Stmt make_let_stmt(Var v, Expr value, Stmt body) {
  auto n = std::make_shared<LetStmtNode>();
  n->var = std::move(v);
  n->value = std::move(value);
  n->body = std::move(body);
  return Stmt(std::move(n));
}

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqNode>())
      flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
    else
      flat.push_back(s);
  }
  if (flat.size() == 1) return flat[0];
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(flat);
  return Stmt(std::move(n));
}

Stmt make_evaluate(std::string name, std::vector<Expr> args) {
  auto n = std::make_shared<EvaluateNode>();
  n->extern_name = std::move(name);
  n->args = std::move(args);
  return Stmt(std::move(n));
}

namespace {
// e as X + d with d a positive constant written on the right (`X + 3`, `X - 3`), else (e, 0).
std::pair<Expr, int64_t> split_const(const Expr& e) {
  int64_t d;
  if (auto* b = e.as<BinaryNode>();
      b && (b->op == BinOp::Add || b->op == BinOp::Sub) && is_const_int(b->b, &d) && d > 0)
    return {b->a, b->op == BinOp::Add ? d : -d};
  return {e, 0};
}
// x + d, written x - |d| for a negative d and x for 0 (the forms split_const recognises).
Expr add_const(const Expr& x, int64_t d, DType t) {
  if (d == 0) return x;
  if (d > 0) return x + make_int(d, t);
  return x - make_int(-d, t);
}
}  // namespace

Expr make_extent(const Expr& lo, const Expr& hi) {
  int64_t a, b;
  if (is_const_int(lo, &a) && is_const_int(hi, &b)) return make_int(b - a, hi.dtype());
  if (is_const_int(lo, &a) && a == 0) return hi;
  if (auto* add = hi.as<BinaryNode>(); add && add->op == BinOp::Add && expr_identical(add->a, lo))
    return add->b;
  // serial(1, n + 1) has extent n, serial(2, n) extent n - 2.
  if (is_const_int(lo, &a)) {
    auto [x, d] = split_const(hi);
    return add_const(x, d - a, hi.dtype());
  }
  return hi - lo;
}

Expr make_end(const Expr& min, const Expr& extent) {
  int64_t a, b;
  if (is_const_int(min, &a) && is_const_int(extent, &b)) return make_int(a + b, extent.dtype());
  if (is_const_int(min, &a) && a == 0) return extent;
  if (is_const_int(min, &a)) {
    // min 1, extent n: end n + 1 (not 1 + n), as a user writes serial(1, n + 1); kept only
    // when make_extent gives the extent back exactly.
    auto [x, d] = split_const(extent);
    Expr end = add_const(x, d + a, extent.dtype());
    if (expr_identical(make_extent(min, end), extent)) return end;
  }
  return min + extent;
}

}  // namespace tirc

#include "ir/reducer.h"

#include <limits>

#include "ir/visitor.h"

namespace tirc {

std::optional<ReductionUpdate> match_reduction_update(const Stmt& body, std::string* why) {
  auto fail = [&](const std::string& m) -> std::optional<ReductionUpdate> {
    if (why) *why = m;
    return std::nullopt;
  };
  std::vector<const LetStmtNode*> lets;
  Stmt s = body;
  while (auto* l = s.as<LetStmtNode>()) {
    lets.push_back(l);
    s = l->body;
  }
  auto* st = s.as<StoreNode>();
  if (!st) return fail("its body is not a single store");
  const Buffer& C = st->buffer;
  bool let_in_idx = false;
  for (auto& e : st->indices)
    for_each_expr(e, [&](const Expr& x) {
      for (auto* l : lets) let_in_idx = let_in_idx || x.as<VarNode>() == l->var.get();
    });
  if (let_in_idx) return fail("its store index uses a let name");
  auto* bin = st->value.as<BinaryNode>();
  const char* form = "it is not an update C = C + x (or - * min max)";
  if (!bin || (bin->op != BinOp::Add && bin->op != BinOp::Sub && bin->op != BinOp::Mul &&
               bin->op != BinOp::Min && bin->op != BinOp::Max))
    return fail(form);
  auto is_self = [&](const Expr& e) {
    auto* l = e.as<LoadNode>();
    if (!l || !l->buffer.same_as(C) || l->indices.size() != st->indices.size()) return false;
    for (size_t k = 0; k < l->indices.size(); ++k)
      if (!expr_identical(l->indices[k], st->indices[k])) return false;
    return true;
  };
  ReductionUpdate u;
  if (is_self(bin->a))
    u.rhs = bin->b;
  else if (is_self(bin->b) && bin->op != BinOp::Sub)
    u.rhs = bin->a;
  else
    return fail(form);
  bool self = false;
  auto check = [&](const Expr& e) {
    for_each_expr(e, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>(); l && l->buffer.same_as(C)) self = true;
      if (auto* p = x.as<BufferPtrNode>(); p && p->buffer.same_as(C)) self = true;
    });
  };
  check(u.rhs);
  for (auto* l : lets) check(l->value);
  if (self) return fail("the reduced value reads " + C->name + " again");
  for (size_t k = lets.size(); k-- > 0;) u.rhs = make_let(lets[k]->var, lets[k]->value, u.rhs);
  u.op = bin->op;
  u.combine = bin->op == BinOp::Sub ? BinOp::Add : bin->op;
  u.buffer = C;
  u.indices = st->indices;
  return u;
}

Expr reducer_identity(BinOp op, DType t) {
  // Integer ends as exact integers (an i64 bound does not survive a trip through double).
  auto lowest = [&]() -> int64_t {
    switch (t) {
      case DType::I8: return std::numeric_limits<int8_t>::min();
      case DType::I16: return std::numeric_limits<int16_t>::min();
      case DType::I32: return std::numeric_limits<int32_t>::min();
      case DType::I64: return std::numeric_limits<int64_t>::min();
      default: return 0;  // unsigned, bool
    }
  };
  auto highest = [&]() -> int64_t {
    switch (t) {
      case DType::I8: return std::numeric_limits<int8_t>::max();
      case DType::I16: return std::numeric_limits<int16_t>::max();
      case DType::I32: return std::numeric_limits<int32_t>::max();
      case DType::I64: return std::numeric_limits<int64_t>::max();
      case DType::U8: return std::numeric_limits<uint8_t>::max();
      case DType::U16: return std::numeric_limits<uint16_t>::max();
      case DType::U32: return std::numeric_limits<uint32_t>::max();
      default: return 1;  // bool
    }
  };
  switch (op) {
    case BinOp::Add: return make_const(t, 0);
    case BinOp::Mul: return make_const(t, 1);
    case BinOp::Max:
      return is_float(t) ? make_const(t, -std::numeric_limits<double>::infinity()) : make_int(lowest(), t);
    case BinOp::Min:
      return is_float(t) ? make_const(t, std::numeric_limits<double>::infinity()) : make_int(highest(), t);
    default: return Expr();
  }
}

bool loop_feeds_reduction(const ForNode& loop) {
  struct V : IRVisitor {
    const VarNode* v;
    bool hit = false;
    void visit_block_realize(const BlockRealizeNode* n) override {
      const BlockNode* b = n->block.get();
      for (size_t i = 0; b->init.defined() && i < b->iter_vars.size() && i < n->bindings.size(); ++i)
        if (b->iter_vars[i].kind == IterKind::Reduce)
          for_each_expr(n->bindings[i], [&](const Expr& x) { hit = hit || x.as<VarNode>() == v; });
      IRVisitor::visit_block_realize(n);
    }
  } vis;
  vis.v = loop.loop_var.get();
  vis.visit(loop.body);
  return vis.hit;
}

}  // namespace tirc

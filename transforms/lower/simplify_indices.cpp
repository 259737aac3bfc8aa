// Index simplification after flattening: integer constant folding and a few identities.
// Deliberately small: LLVM does the rest; this keeps the printed lowered IR readable and
// gives codegen constant strides. Integer results wrap to the dtype (as the language does).
#include <cstdlib>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/lower/lower.h"
#include "transforms/simplify/simplify.h"

namespace tirc {
namespace {

int64_t wrap(int64_t v, DType t) {
  switch (t) {
    case DType::I8: return static_cast<int8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// True when e holds a bounds check (lowering's __bounds_check): an operand that holds one
// is never folded away (`A[I[i]] * 0` must still stop at an out-of-bounds I[i], as the
// interpreter does); transforms/simplify keeps it as an unused let.
bool has_check(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* c = x.as<CallNode>(); c && c->op == Intrinsic::BoundsCheck) found = true;
  });
  return found;
}

class IndexSimplifier : public IRMutator {
 protected:
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    Expr a = mutate(n->a), b = mutate(n->b);
    DType t = n->dtype;
    if (!is_int(t) || !is_int(a.dtype()) || a.dtype() != b.dtype())
      return a.same_as(n->a) && b.same_as(n->b) ? e : make_binary(n->op, a, b);
    int64_t x = 0, y = 0;
    bool ca = is_const_int(a, &x), cb = is_const_int(b, &y);
    bool sgn = is_signed_int(t);
    if (ca && cb && sgn) {
      switch (n->op) {
        case BinOp::Add: return make_int(wrap(x + y, t), t);
        case BinOp::Sub: return make_int(wrap(x - y, t), t);
        case BinOp::Mul:
          return make_int(wrap(static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)), t),
                          t);
        case BinOp::FloorDiv:
          if (y > 0) return make_int(wrap(floordiv_i(x, y), t), t);
          break;
        case BinOp::FloorMod:
          if (y > 0) return make_int(wrap(x - floordiv_i(x, y) * y, t), t);
          break;
        case BinOp::Min: return make_int(std::min(x, y), t);
        case BinOp::Max: return make_int(std::max(x, y), t);
        default: break;
      }
    }
    switch (n->op) {
      case BinOp::Add:
        if (ca && x == 0) return b;
        if (cb && y == 0) return a;
        // (z + c1) + c2 -> z + (c1 + c2)
        if (cb && sgn)
          if (auto* ia = a.as<BinaryNode>(); ia && ia->op == BinOp::Add) {
            int64_t c1;
            if (is_const_int(ia->b, &c1))
              return mutate(make_binary(BinOp::Add, ia->a, make_int(wrap(c1 + y, t), t)));
          }
        if (ca && !cb) return make_binary(BinOp::Add, b, a);  // constant last
        break;
      case BinOp::Sub:
        if (cb && y == 0) return a;
        if (cb && sgn) return mutate(make_binary(BinOp::Add, a, make_int(wrap(-y, t), t)));
        break;
      case BinOp::Mul:
        if (((ca && x == 0) || (cb && y == 0)) && !has_check(ca ? b : a)) return make_int(0, t);
        if (ca && x == 1) return b;
        if (cb && y == 1) return a;
        if (ca && !cb) return make_binary(BinOp::Mul, b, a);
        break;
      case BinOp::FloorDiv:
        if (cb && y == 1) return a;
        break;
      case BinOp::FloorMod:
        if (cb && y == 1 && !has_check(a)) return make_int(0, t);
        break;
      default: break;
    }
    return a.same_as(n->a) && b.same_as(n->b) ? e : make_binary(n->op, a, b);
  }
  Expr mutate_cast(const CastNode* n, const Expr& e) override {
    Expr v = mutate(n->value);
    int64_t x;
    if (is_int(n->dtype) && is_signed_int(v.dtype()) && is_const_int(v, &x))
      return make_int(wrap(x, n->dtype), n->dtype);
    return v.same_as(n->value) ? e : make_cast(n->dtype, v);
  }
  Stmt mutate_if(const IfThenElseStmtNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_if(n, s);
    auto* m = r.as<IfThenElseStmtNode>();
    int64_t c;
    if (m && is_const_int(m->cond, &c)) {
      if (c) return m->then_case;
      return m->else_case.defined() ? m->else_case : make_seq({});
    }
    return r;
  }
};

// Comparisons of constants and && / || with constants (from init guards like `0 == 0`).
class BoolFolder : public IndexSimplifier {
 protected:
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    Expr r = IndexSimplifier::mutate_binary(n, e);
    auto* m = r.as<BinaryNode>();
    if (!m) return r;
    int64_t x, y;
    bool ca = is_const_int(m->a, &x), cb = is_const_int(m->b, &y);
    if (binop_is_compare(m->op) && ca && cb && is_int(m->a.dtype()) && m->a.dtype() == m->b.dtype()) {
      bool v = false;
      bool u = is_unsigned_int(m->a.dtype());
      uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      switch (m->op) {
        case BinOp::EQ: v = x == y; break;
        case BinOp::NE: v = x != y; break;
        case BinOp::LT: v = u ? ux < uy : x < y; break;
        case BinOp::LE: v = u ? ux <= uy : x <= y; break;
        case BinOp::GT: v = u ? ux > uy : x > y; break;
        case BinOp::GE: v = u ? ux >= uy : x >= y; break;
        default: break;
      }
      return make_bool(v);
    }
    if (m->op == BinOp::And) {
      if (ca && (x || !has_check(m->b))) return x ? m->b : make_bool(false);
      if (cb && (y || !has_check(m->a))) return y ? m->a : make_bool(false);
    }
    if (m->op == BinOp::Or) {
      if (ca && (!x || !has_check(m->b))) return x ? make_bool(true) : m->b;
      if (cb && (!y || !has_check(m->a))) return y ? make_bool(true) : m->a;
    }
    return r;
  }
};

}  // namespace

Expr simplify_index_expr(const Expr& e) { return BoolFolder().mutate(e); }

Function simplify_indices(const FunctionNode& f) { return with_body(f, BoolFolder().mutate(f.body)); }

Function lower_function(const FunctionNode& f, bool flatten, std::vector<BoundsCheckSite>* check_sites,
                        bool gpu) {
  Function g = drop_unraced_atomic(*serialize_ordered_parallel(f));
  g = lower_init(check_sites ? *insert_bounds_checks(*g, check_sites) : *g);
  g = hoist_short_reductions(*g);
  // On the GPU the loops of a block are thread-bound or decide barriers: kept as written.
  if (!gpu) g = unswitch_init_tests(*g);
  g = convert_blocks(*g);
  if (!std::getenv("TIRC_LOWER_NO_FUSE")) g = fuse_sibling_loops(*g);
  g = plan_alloc(*g);
  g = compact_buffers(*g, gpu);
  if (flatten) g = flatten_buffers(*g);
  g = simplify_indices(*g);
  // TIRC_LOWER_NO_TRIM=1 keeps the guards (to measure what trimming gains).
  if (!std::getenv("TIRC_LOWER_NO_TRIM")) g = trim_no_ops(*g);
  // The arithmetic simplifier (exact semantics, loop ranges known): removes the // and %
  // of fused/split bindings and proves loop-invariant conditions where it can.
  return simplify_function(*g);
}

}  // namespace tirc

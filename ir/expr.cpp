#include "ir/expr.h"

#include <cstring>

namespace tirc {

namespace {
struct IntrinsicInfo {
  const char* name;
  int arity;
};
constexpr IntrinsicInfo kIntrinsics[] = {
    {"exp", 1},     {"log", 1},   {"log2", 1}, {"log10", 1},    {"log1p", 1},    {"expm1", 1},
    {"sqrt", 1},    {"rsqrt", 1}, {"sin", 1},  {"cos", 1},      {"tan", 1},      {"tanh", 1},
    {"sigmoid", 1}, {"erf", 1},   {"abs", 1},  {"floor", 1},    {"ceil", 1},     {"round", 1},
    {"trunc", 1},   {"sign", 1},  {"pow", 2},  {"truncdiv", 2}, {"truncmod", 2}, {"__bounds_check", 3},
};
}  // namespace

const char* binop_symbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::FloorDiv: return "//";
    case BinOp::FloorMod: return "%";
    case BinOp::Min: return "min";
    case BinOp::Max: return "max";
    case BinOp::EQ: return "==";
    case BinOp::NE: return "!=";
    case BinOp::LT: return "<";
    case BinOp::LE: return "<=";
    case BinOp::GT: return ">";
    case BinOp::GE: return ">=";
    case BinOp::And: return "&&";
    case BinOp::Or: return "||";
  }
  return "?";
}
bool binop_is_compare(BinOp op) { return op >= BinOp::EQ && op <= BinOp::GE; }
bool binop_is_logic(BinOp op) { return op == BinOp::And || op == BinOp::Or; }
const char* unop_symbol(UnOp op) { return op == UnOp::Neg ? "-" : "!"; }
const char* intrinsic_name(Intrinsic f) { return kIntrinsics[static_cast<int>(f)].name; }
int intrinsic_arity(Intrinsic f) { return kIntrinsics[static_cast<int>(f)].arity; }
bool intrinsic_from_name(const std::string& name, Intrinsic* out) {
  for (size_t i = 0; i < std::size(kIntrinsics); ++i)
    if (name == kIntrinsics[i].name && static_cast<Intrinsic>(i) != Intrinsic::BoundsCheck) {
      *out = static_cast<Intrinsic>(i);
      return true;
    }
  return false;
}

Expr::Expr(int v) : node_(std::make_shared<IntImmNode>(DType::I32, v)) {}
Expr::Expr(double v) : node_(std::make_shared<FloatImmNode>(DType::F32, v)) {}

Var::Var(std::string name, DType t) : Expr(std::make_shared<VarNode>(std::move(name), t)) {}
Var::Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
const VarNode* Var::get() const { return static_cast<const VarNode*>(Expr::get()); }
const std::string& Var::name() const { return get()->name; }

Buffer::Buffer(std::string name, DType t, std::vector<Expr> shape, std::string scope)
    : node_(
          std::make_shared<BufferNode>(BufferNode{std::move(name), t, std::move(shape), std::move(scope)})) {}

LoadNode::LoadNode(Buffer b, std::vector<Expr> idx)
    : ExprNode(kKind, b->dtype), buffer(std::move(b)), indices(std::move(idx)) {}

BinaryNode::BinaryNode(BinOp o, Expr x, Expr y)
    : ExprNode(kKind, binop_is_compare(o) || binop_is_logic(o) ? DType::Bool : x.dtype()),
      op(o),
      a(std::move(x)),
      b(std::move(y)) {}

CallNode::CallNode(Intrinsic f, std::vector<Expr> a)
    : ExprNode(kKind, a.at(0).dtype()), op(f), args(std::move(a)) {}

Expr make_int(int64_t v, DType t) { return Expr(std::make_shared<IntImmNode>(t, v)); }
Expr make_float(double v, DType t) { return Expr(std::make_shared<FloatImmNode>(t, v)); }
Expr make_bool(bool v) { return make_int(v ? 1 : 0, DType::Bool); }
Expr make_const(DType t, double v) {
  if (is_float(t)) return make_float(v, t);
  return make_int(static_cast<int64_t>(v), t);
}
Expr make_load(Buffer b, std::vector<Expr> idx) {
  return Expr(std::make_shared<LoadNode>(std::move(b), std::move(idx)));
}
Expr make_binary(BinOp op, Expr a, Expr b) {
  return Expr(std::make_shared<BinaryNode>(op, std::move(a), std::move(b)));
}
Expr make_unary(UnOp op, Expr a) { return Expr(std::make_shared<UnaryNode>(op, std::move(a))); }
Expr make_cast(DType t, Expr v) { return Expr(std::make_shared<CastNode>(t, std::move(v))); }
Expr make_call(Intrinsic f, std::vector<Expr> args) {
  return Expr(std::make_shared<CallNode>(f, std::move(args)));
}
Expr make_select(Expr c, Expr a, Expr b) {
  return Expr(std::make_shared<SelectNode>(ExprKind::Select, std::move(c), std::move(a), std::move(b)));
}
Expr make_if_then_else(Expr c, Expr a, Expr b) {
  return Expr(std::make_shared<SelectNode>(ExprKind::IfThenElse, std::move(c), std::move(a), std::move(b)));
}
Expr make_let(Var v, Expr value, Expr body) {
  return Expr(std::make_shared<LetNode>(std::move(v), std::move(value), std::move(body)));
}
Expr make_buffer_ptr(Buffer b, std::vector<Expr> idx) {
  return Expr(std::make_shared<BufferPtrNode>(std::move(b), std::move(idx)));
}

Expr operator+(Expr a, Expr b) { return make_binary(BinOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return make_binary(BinOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return make_binary(BinOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return make_binary(BinOp::Div, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return make_unary(UnOp::Neg, std::move(a)); }
Expr floordiv(Expr a, Expr b) { return make_binary(BinOp::FloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return make_binary(BinOp::FloorMod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return make_binary(BinOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return make_binary(BinOp::Max, std::move(a), std::move(b)); }

bool is_const_int(const Expr& e, int64_t* v) {
  if (auto* n = e.as<IntImmNode>()) {
    if (v) *v = n->value;
    return true;
  }
  return false;
}
bool is_const_float(const Expr& e, double* v) {
  if (auto* n = e.as<FloatImmNode>()) {
    if (v) *v = n->value;
    return true;
  }
  return false;
}
bool is_zero(const Expr& e) {
  int64_t i;
  double d;
  return (is_const_int(e, &i) && i == 0) || (is_const_float(e, &d) && d == 0.0);
}
bool is_one(const Expr& e) {
  int64_t i;
  double d;
  return (is_const_int(e, &i) && i == 1) || (is_const_float(e, &d) && d == 1.0);
}

}  // namespace tirc

namespace tirc {

bool expr_identical(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  auto all = [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!expr_identical(x[i], y[i])) return false;
    return true;
  };
  switch (a.kind()) {
    case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::FloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case ExprKind::Var: return false;  // distinct nodes are distinct variables
    case ExprKind::Load: {
      auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return x->buffer == y->buffer && all(x->indices, y->indices);
    }
    case ExprKind::Binary: {
      auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
      return x->op == y->op && expr_identical(x->a, y->a) && expr_identical(x->b, y->b);
    }
    case ExprKind::Unary: {
      auto *x = a.as<UnaryNode>(), *y = b.as<UnaryNode>();
      return x->op == y->op && expr_identical(x->a, y->a);
    }
    case ExprKind::Cast: return expr_identical(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      return x->op == y->op && all(x->args, y->args);
    }
    case ExprKind::Select:
    case ExprKind::IfThenElse: {
      auto *x = as_select_like(a), *y = as_select_like(b);
      return expr_identical(x->cond, y->cond) && expr_identical(x->t, y->t) && expr_identical(x->f, y->f);
    }
    case ExprKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return x->var.same_as(y->var) && expr_identical(x->value, y->value) && expr_identical(x->body, y->body);
    }
    case ExprKind::BufferPtr: {
      auto *x = a.as<BufferPtrNode>(), *y = b.as<BufferPtrNode>();
      return x->buffer == y->buffer && all(x->indices, y->indices);
    }
  }
  return false;
}

}  // namespace tirc

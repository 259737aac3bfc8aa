// Expressions of the .tir IR: immutable nodes behind shared, reference-counted handles.
//
// Model: Halide's Expr / TVM's PrimExpr. Nodes never change after construction; every
// transform builds new nodes (see ir/mutator.h). Variables and buffers have identity:
// two Vars are the same variable only when they share a node (`same_as`), names are for
// printing. Structural equality up to renaming lives in ir/structural_equal.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tirc {

enum class ExprKind : uint8_t {
  IntImm,      // integer or bool constant
  FloatImm,    // float constant (value kept as double; exact for every narrower float)
  Var,         // scalar variable: loop var, iter var, scalar param, let name
  Load,        // buffer load A[i, j]
  Binary,      // arithmetic, min/max, comparison, logic (see BinOp)
  Unary,       // -x, !x
  Cast,        // f32(x), i64(x), ...
  Call,        // pure intrinsic call: exp(x), pow(a, b), truncdiv(a, b), ...
  Select,      // select(c, a, b): both arms evaluated
  IfThenElse,  // if_then_else(c, a, b): only the taken arm evaluated
  Let,         // let x = v in body (expression form, used to keep sharing explicit)
  BufferPtr,   // A.data / A.ptr(i, j): only as a call_extern argument
};

enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  FloorMod,
  Min,
  Max,  // value-typed
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,  // result bool
  And,
  Or,  // bool operands and result
};
enum class UnOp : uint8_t { Neg, Not };

// Pure intrinsics of LANGUAGE.md, "Calls". min/max are BinOp, casts are Cast,
// select/if_then_else have their own nodes, min_value/max_value fold to immediates.
enum class Intrinsic : uint8_t {
  Exp,
  Log,
  Log2,
  Log10,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tan,
  Tanh,
  Sigmoid,
  Erf,
  Abs,
  Floor,
  Ceil,
  Round,
  Trunc,
  Sign,
  Pow,
  TruncDiv,
  TruncMod,
  // Internal (not in the language, never parsed): `__bounds_check(idx, extent, site)` is idx
  // when 0 <= idx < extent; otherwise evaluation stops with the error of check site `site`
  // (an i32 constant numbering transforms/lower/bounds_checks.h's site table). Inserted by
  // lowering for compiled code; see docs/codegen.md, "Bounds checks".
  BoundsCheck,
};

const char* binop_symbol(BinOp op);  // "+", "//", "min", "==", "&&", ...
bool binop_is_compare(BinOp op);
bool binop_is_logic(BinOp op);
const char* unop_symbol(UnOp op);
const char* intrinsic_name(Intrinsic f);
int intrinsic_arity(Intrinsic f);
// Looks up an intrinsic by its language name; false when `name` is not one (internal
// intrinsics such as BoundsCheck have no language name).
bool intrinsic_from_name(const std::string& name, Intrinsic* out);

struct ExprNode {
  ExprKind kind;
  DType dtype;
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
};

// Nullable handle to an immutable expression node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  // Implicit immediates: Expr(3) is an i32 IntImm, Expr(1.5) an f32 FloatImm.
  Expr(int v);     // NOLINT
  Expr(double v);  // NOLINT

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  ExprKind kind() const { return node_->kind; }
  DType dtype() const { return node_->dtype; }

  // Downcast; nullptr when the node is not a T.
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct VarNode;

// A scalar variable. Identity is the node: Var("i") twice gives two different variables.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DType t = DType::I32);
  explicit Var(std::shared_ptr<const VarNode> n);
  const VarNode* get() const;
  const VarNode* operator->() const { return get(); }
  const std::string& name() const;
};

struct VarHash {
  size_t operator()(const Var& v) const { return std::hash<const void*>()(v.Expr::get()); }
};
struct VarEq {
  bool operator()(const Var& a, const Var& b) const { return a.same_as(b); }
};

struct BufferNode;
// A buffer: name, element dtype, shape (integer exprs, may use scalar params), storage scope.
// Identity is the node, like Var.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> n) : node_(std::move(n)) {}
  Buffer(std::string name, DType t, std::vector<Expr> shape, std::string scope = "global");
  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  bool same_as(const Buffer& o) const { return node_ == o.node_; }
  bool operator==(const Buffer& o) const { return node_ == o.node_; }
  const std::shared_ptr<const BufferNode>& ptr() const { return node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};
struct BufferHash {
  size_t operator()(const Buffer& b) const { return std::hash<const void*>()(b.get()); }
};

struct BufferNode {
  std::string name;
  DType dtype;
  std::vector<Expr> shape;
  std::string scope;  // "global" (default), "shared", "local"
  size_t ndim() const { return shape.size(); }
};

// ---- concrete nodes ----

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};
struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
};
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  VarNode(std::string n, DType t) : ExprNode(kKind, t), name(std::move(n)) {}
};
struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  Buffer buffer;
  std::vector<Expr> indices;
  LoadNode(Buffer b, std::vector<Expr> idx);
};
struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinOp op;
  Expr a, b;
  BinaryNode(BinOp o, Expr x, Expr y);
};
struct UnaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnOp op;
  Expr a;
  UnaryNode(UnOp o, Expr x)
      : ExprNode(kKind, o == UnOp::Not ? DType::Bool : x.dtype()), op(o), a(std::move(x)) {}
};
struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Expr value;
  CastNode(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
};
struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  Intrinsic op;
  std::vector<Expr> args;
  CallNode(Intrinsic f, std::vector<Expr> a);
};
// Select and IfThenElse share one node type; `kind` tells them apart.
struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;  // as<SelectNode>() matches Select only
  Expr cond, t, f;
  SelectNode(ExprKind k, Expr c, Expr a, Expr b)
      : ExprNode(k, a.dtype()), cond(std::move(c)), t(std::move(a)), f(std::move(b)) {}
};
struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  Var var;
  Expr value, body;
  LetNode(Var v, Expr val, Expr b)
      : ExprNode(kKind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};
struct BufferPtrNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BufferPtr;
  Buffer buffer;
  std::vector<Expr> indices;  // empty for A.data
  BufferPtrNode(Buffer b, std::vector<Expr> idx)
      : ExprNode(kKind, DType::Handle), buffer(std::move(b)), indices(std::move(idx)) {}
};

// Both Select and IfThenElse nodes (as<SelectNode>() alone only matches Select).
inline const SelectNode* as_select_like(const Expr& e) {
  return e.defined() && (e.kind() == ExprKind::Select || e.kind() == ExprKind::IfThenElse)
             ? static_cast<const SelectNode*>(e.get())
             : nullptr;
}

// ---- constructors (no folding, no type checks beyond asserting the invariant) ----
Expr make_int(int64_t v, DType t = DType::I32);
Expr make_float(double v, DType t = DType::F32);
Expr make_bool(bool v);
// Constant of value v in dtype t (int or float, whichever t is).
Expr make_const(DType t, double v);
Expr make_load(Buffer b, std::vector<Expr> idx);
Expr make_binary(BinOp op, Expr a, Expr b);
Expr make_unary(UnOp op, Expr a);
Expr make_cast(DType t, Expr v);
Expr make_call(Intrinsic f, std::vector<Expr> args);
Expr make_select(Expr c, Expr a, Expr b);
Expr make_if_then_else(Expr c, Expr a, Expr b);
Expr make_let(Var v, Expr value, Expr body);
Expr make_buffer_ptr(Buffer b, std::vector<Expr> idx);

// Operator sugar: builds Binary/Unary nodes without folding (see transforms/simplify).
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator-(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

// Constant inspection.
bool is_const_int(const Expr& e, int64_t* v = nullptr);
bool is_const_float(const Expr& e, double* v = nullptr);
bool is_zero(const Expr& e);  // int or float zero
bool is_one(const Expr& e);
// Syntactic equality: same tree shape and constants, variables and buffers by identity.
// (Equality up to renaming of bound variables is ir/structural_equal.h.)
bool expr_identical(const Expr& a, const Expr& b);

}  // namespace tirc

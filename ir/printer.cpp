// Canonical printer (ir/printer.h). Output follows LANGUAGE.md plus the syntax decisions of
// docs/HELPERS.md, so that parse(print(m)) is structurally equal to m and printing is a
// fixpoint.
//
// Literal typing. The parser types a literal by its context (the other operand, the store
// target), i32/f32 when nothing decides. The printer models this conservatively: a
// "weak" subtree (literals combined by + - * / // %) is printed bare only when the parser
// surely recovers its dtype; otherwise each literal leaf is printed as a cast call
// `i64(5)`, which the parser folds into a (strongly typed) literal of that dtype. The rules
// are written down in docs/language.md ("Canonical printing").
//
// Names. Variables and buffers print under their own names, except when a name is reserved
// or already bound to a different variable/buffer in scope: then `name_1`, `name_2`, ...
// (first free), so the text reparses to the same binding structure.
#include "ir/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"

namespace tirc {

namespace {

// Precedence levels of LANGUAGE.md, low to high.
enum Prec { kOr = 1, kAnd = 2, kCmp = 3, kAdd = 4, kMul = 5, kUnary = 6, kPrimary = 7 };

int binop_prec(BinOp op) {
  switch (op) {
    case BinOp::Or: return kOr;
    case BinOp::And: return kAnd;
    case BinOp::EQ:
    case BinOp::NE:
    case BinOp::LT:
    case BinOp::LE:
    case BinOp::GT:
    case BinOp::GE: return kCmp;
    case BinOp::Add:
    case BinOp::Sub: return kAdd;
    case BinOp::Mul:
    case BinOp::Div:
    case BinOp::FloorDiv:
    case BinOp::FloorMod: return kMul;
    case BinOp::Min:
    case BinOp::Max: return kPrimary;  // printed as calls
  }
  return kPrimary;
}

bool is_arith(BinOp op) { return op <= BinOp::Max; }  // + - * / // % min max

const std::unordered_set<std::string>& reserved_words() {
  static const std::unordered_set<std::string> words = {
      "func", "schedule", "intrin", "desc", "impl", "for", "in", "block", "init", "where", "reads", "writes",
      "alloc", "scope", "if", "else", "let", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "f16",
      "bf16", "f32", "f64",
      // literals of the extensions (`annotate`, `call_extern` and `handle` are ordinary names: the
      // parser reads `annotate[i] = ...` as a store and `annotate(...)` only as a clause, and
      // renaming a parameter would change the function's interface, `--input annotate=...`)
      // (`true` / `false` are not here: a parameter may be called `true`, and the bool
      // literals then print as `bool(1)` / `bool(0)`, see typed_literal)
      "inf", "nan"};
  return words;
}

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty()) s = "v";
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      case '\0': r += "\\0"; break;
      default: r += c;
    }
  }
  return r + "\"";
}

std::string int_text(int64_t v) { return std::to_string(v); }

}  // namespace

namespace {
// Rounds to the 16-bit float formats the way the parser stores literals.
double round16(double v, DType t) {
  if (t == DType::F16) {
    // Round to nearest even at the f16 quantum of v's binade (2^-24 for subnormals); the
    // scaling by powers of two is exact. Portable: no _Float16 needed.
    if (std::isnan(v) || std::isinf(v)) return v;
    double a = std::fabs(v);
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    double q = std::ldexp(1.0, std::max(e - 11, -24));
    double r = std::nearbyint(a / q) * q;
    if (r > 65504.0) r = std::numeric_limits<double>::infinity();
    return std::copysign(r, v);
  }
  float f = static_cast<float>(v);
  if (std::isnan(f) || std::isinf(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

std::string print_float_literal(double v, DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::string s;
  float f = static_cast<float>(v);
  if ((t == DType::F16 || t == DType::BF16) && round16(v, t) == v) {
    // Shortest decimal that rounds back to v in the 16-bit format.
    for (int p = 1; p <= 17; ++p) {
      std::snprintf(buf, sizeof buf, "%.*g", p, v);
      if (round16(std::strtod(buf, nullptr), t) == v) break;
    }
    s = buf;
  } else {
    std::to_chars_result r;
    if (t != DType::F64 && static_cast<double>(f) == v)
      r = std::to_chars(buf, buf + sizeof buf, f);
    else
      r = std::to_chars(buf, buf + sizeof buf, v);
    s.assign(buf, r.ptr);
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

struct Text {
  std::string s;
  int prec;
};

// Typing context of a position: `sure` when the parser is certain to give a weak
// (literal-only) expression dtype `t` there; otherwise a weak expression gets i32/f32.
// `force`: inside a weak subtree that its position would mistype, every literal prints typed.
struct Ctx {
  bool sure = false;
  DType t = DType::I32;
  bool force = false;
  static Ctx none() { return {}; }
  static Ctx of(DType d) { return {true, d, false}; }
  static Ctx forced() { return {false, DType::I32, true}; }
};

// Literal-only ("weak") subtree, typed as a whole by its context: literals combined by
// arithmetic operators, min/max, unary minus and intrinsic calls. Bool literals print as
// `true` / `false` (names the printer never gives a variable, so they read back as the
// literals) and a negated literal prints as `-i32(3)` (so that it does not fold into the
// literal -3): both are typed.
bool is_literal(const Expr& e) { return e.kind() == ExprKind::IntImm || e.kind() == ExprKind::FloatImm; }
bool is_weak(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: return e.dtype() != DType::Bool;
    case ExprKind::FloatImm: return true;
    case ExprKind::Unary: {
      auto* u = e.as<UnaryNode>();
      return u->op == UnOp::Neg && !is_literal(u->a) && is_weak(u->a);
    }
    case ExprKind::Binary: {
      auto* b = e.as<BinaryNode>();
      // Right operand first: long left-associative chains end in a typed leaf quickly.
      return is_arith(b->op) && is_weak(b->b) && is_weak(b->a);
    }
    case ExprKind::Call:
      for (auto& a : e.as<CallNode>()->args)
        if (!is_weak(a)) return false;
      return true;
    default: return false;
  }
}

class Printer {
 public:
  std::string out;

  // ---- names ----
  // `func_wide`: params and buffers, printed under names unique over the whole function
  // (sibling blocks that both `alloc T` print `T` and `T_1`, so every buffer name in the
  // text, e.g. in messages, stands for one buffer).
  std::string bind(const void* key, const std::string& want, bool func_wide = false) {
    std::string base = sanitize(want), cand = base;
    auto taken = [&](const std::string& c) {
      return reserved_words().count(c) || in_scope_.count(c) || (func_wide && func_wide_.count(c));
    };
    for (int k = 1; taken(cand); ++k) cand = base + "_" + std::to_string(k);
    if (func_wide) func_wide_.insert(cand);
    names_[key].push_back(cand);
    in_scope_.insert(cand);
    stack_.emplace_back(key, cand);
    return cand;
  }
  size_t mark() const { return stack_.size(); }
  void unbind_to(size_t m) {
    while (stack_.size() > m) {
      auto [key, name] = stack_.back();
      stack_.pop_back();
      in_scope_.erase(name);
      auto& v = names_[key];
      v.pop_back();
      if (v.empty()) names_.erase(key);
    }
  }
  std::string name_of(const void* key, const std::string& want) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second.back();
    // Free variable or buffer (printing a fragment): stable, distinct names.
    auto f = free_.find(key);
    if (f != free_.end()) return f->second;
    std::string base = sanitize(want), cand = base;
    for (int k = 1; reserved_words().count(cand) || free_used_.count(cand); ++k)
      cand = base + "_" + std::to_string(k);
    free_used_.insert(cand);
    free_[key] = cand;
    return cand;
  }
  std::string var_name(const Var& v) { return name_of(v.get(), v.name()); }
  std::string buf_name(const Buffer& b) { return name_of(b.get(), b->name); }
  std::string bind_var(const Var& v) { return bind(v.get(), v.name()); }
  std::string bind_buf(const Buffer& b) { return bind(b.get(), b->name, true); }
  void new_function() { func_wide_.clear(); }

  // ---- expressions ----
  std::string expr(const Expr& e, Ctx c = Ctx::none()) { return print(e, c).s; }

  static bool literal_allowed(const Expr& e, Ctx c) {
    if (c.sure) return c.t == e.dtype();
    return e.dtype() == (e.kind() == ExprKind::IntImm ? DType::I32 : DType::F32);
  }

  static Text literal_text(const Expr& e) {
    std::string s;
    if (auto* i = e.as<IntImmNode>())
      s = int_text(i->value);
    else
      s = print_float_literal(e.as<FloatImmNode>()->value, e.dtype());
    return {s, s[0] == '-' ? kUnary : kPrimary};
  }

  // A literal as a cast call: the parser folds a cast applied to a literal into a literal
  // of the cast's dtype.
  Text typed_literal(const Expr& e) const {
    if (e.dtype() == DType::Bool) {
      // The parser reads `true` as a variable when one of that name is in scope (LANGUAGE.md
      // does not reserve it): keep the variable's name (a parameter name is interface) and
      // write the constant as a cast.
      bool v = e.as<IntImmNode>()->value != 0;
      const char* word = v ? "true" : "false";
      if (in_scope_.count(word)) return {v ? "bool(1)" : "bool(0)", kPrimary};
      return {word, kPrimary};
    }
    return {std::string(dtype_name(e.dtype())) + "(" + literal_text(e).s + ")", kPrimary};
  }

  // Contexts of two operands that unify (binary operators, min/max, pow, select arms):
  // a weak operand adopts the other operand's dtype when the other is typed.
  std::pair<Ctx, Ctx> sibling_ctx(const Expr& a, const Expr& b, Ctx both_weak) {
    bool wa = is_weak(a), wb = is_weak(b);
    if (wa && !wb) return {Ctx::of(b.dtype()), Ctx::none()};
    if (wb && !wa) return {Ctx::none(), Ctx::of(a.dtype())};
    if (wa && wb) return {both_weak, both_weak};
    return {Ctx::none(), Ctx::none()};
  }

  static std::string paren(const Text& t, bool need) { return need ? "(" + t.s + ")" : t.s; }

  Text print(const Expr& e, Ctx c) {
    if (!e.defined()) return {"<undefined>", kPrimary};
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
        if (e.dtype() == DType::Bool || c.force) return typed_literal(e);
        return literal_allowed(e, c) ? literal_text(e) : typed_literal(e);
      case ExprKind::Var: return {name_of(e.get(), static_cast<const VarNode*>(e.get())->name), kPrimary};
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        return {buf_name(n->buffer) + "[" + expr_list(n->indices) + "]", kPrimary};
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        // A weak subtree is typed as a whole by its context.
        auto [ca, cb] = is_weak(e) ? std::pair{c, c} : sibling_ctx(n->a, n->b, Ctx::none());
        Text a = print(n->a, ca), b = print(n->b, cb);
        if (n->op == BinOp::Min || n->op == BinOp::Max)
          return {std::string(binop_symbol(n->op)) + "(" + a.s + ", " + b.s + ")", kPrimary};
        int p = binop_prec(n->op);
        // Left associative; comparisons never chain unparenthesised.
        bool pa = p == kCmp ? a.prec <= p : a.prec < p;
        bool pb = b.prec <= p;
        return {paren(a, pa) + " " + binop_symbol(n->op) + " " + paren(b, pb), p};
      }
      case ExprKind::Unary: {
        auto* n = e.as<UnaryNode>();
        // `-3` folds into a literal: the negation of a literal prints it typed, `-i32(3)`.
        Text a = is_literal(n->a) ? typed_literal(n->a) : print(n->a, is_weak(e) ? c : Ctx::none());
        bool need = a.prec < kPrimary || a.s[0] == '-';
        return {std::string(unop_symbol(n->op)) + paren(a, need), kUnary};
      }
      case ExprKind::Cast: {
        auto* n = e.as<CastNode>();
        // A literal-only operand would be typed by the cast (and a literal folded into it):
        // its literals print typed, `f32(i32(3))`, `f32(i32(1) + i32(2))`.
        Text a = print(n->value, is_weak(n->value) ? Ctx::forced() : Ctx::none());
        return {std::string(dtype_name(e.dtype())) + "(" + a.s + ")", kPrimary};
      }
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        std::string s = std::string(intrinsic_name(n->op)) + "(";
        bool weak = is_weak(e);
        if (n->args.size() == 2) {
          auto [ca, cb] = weak ? std::pair{c, c} : sibling_ctx(n->args[0], n->args[1], Ctx::none());
          s += print(n->args[0], ca).s + ", " + print(n->args[1], cb).s;
        } else {
          for (size_t i = 0; i < n->args.size(); ++i)
            s += (i ? ", " : "") + print(n->args[i], weak ? c : Ctx::none()).s;
        }
        return {s + ")", kPrimary};
      }
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        auto [ct, cf] = sibling_ctx(n->t, n->f, Ctx::none());
        std::string s = e.kind() == ExprKind::Select ? "select(" : "if_then_else(";
        s += expr(n->cond) + ", " + print(n->t, ct).s + ", " + print(n->f, cf).s + ")";
        return {s, kPrimary};
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        std::string v = expr(n->value);
        size_t m = mark();
        std::string name = bind_var(n->var);
        std::string body = expr(n->body);
        unbind_to(m);
        return {"(let " + name + " = " + v + " in " + body + ")", kPrimary};
      }
      case ExprKind::BufferPtr: {
        auto* n = e.as<BufferPtrNode>();
        if (n->indices.empty()) return {buf_name(n->buffer) + ".data", kPrimary};
        return {buf_name(n->buffer) + ".ptr(" + expr_list(n->indices) + ")", kPrimary};
      }
    }
    return {"<?>", kPrimary};
  }

  std::string expr_list(const std::vector<Expr>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + expr(v[i]);
    return s;
  }

  // ---- statements ----
  void line(int indent, const std::string& s) {
    out.append(indent * 2, ' ');
    out += s;
    out += '\n';
  }

  std::string buffer_type(const Buffer& b) {
    return std::string(dtype_name(b->dtype)) + "[" + expr_list(b->shape) + "]";
  }

  std::string region(const BufferRegion& r) {
    if (r.ranges.empty()) return buf_name(r.buffer);  // 0-d buffer: the whole buffer
    std::string s = buf_name(r.buffer) + "[";
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (i) s += ", ";
      s += expr(r.ranges[i].begin);
      if (!r.ranges[i].is_point()) s += ":" + expr(r.ranges[i].end);
    }
    return s + "]";
  }

  static std::string annotation(const std::string& k, const std::string& v) {
    return "annotate(" + quote(k) + ", " + v + ")";
  }

  // Prints a statement list: Seqs are flattened and a `let` scopes over the rest of the
  // list (which is how the parser reads it back).
  void stmts(const Stmt& s, int indent) {
    size_t m = mark();
    stmt_flat(s, indent);
    unbind_to(m);
  }
  void stmt_flat(const Stmt& s, int indent) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts) stmt_flat(x, indent);
      return;
    }
    if (auto* l = s.as<LetStmtNode>()) {
      std::string v = expr(l->value);
      line(indent, "let " + bind_var(l->var) + " = " + v);
      stmt_flat(l->body, indent);
      return;
    }
    stmt(s, indent);
  }

  // The end of `serial(lo, hi)` to print. The parser stores make_extent(lo, hi), which is
  // `hi - lo` for a symbolic start (`serial(n // 2, n)`): print `hi` back, not make_end's
  // `lo + (hi - lo)` (both read back to the same extent).
  static Expr loop_end(const Expr& min, const Expr& extent) {
    if (auto* sub = extent.as<BinaryNode>(); sub && sub->op == BinOp::Sub && expr_identical(sub->b, min) &&
                                             expr_identical(make_extent(min, sub->a), extent))
      return sub->a;
    return make_end(min, extent);
  }

  void stmt(const Stmt& s, int indent) {
    switch (s.kind()) {
      case StmtKind::Seq:
      case StmtKind::LetStmt: stmts(s, indent); return;
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        std::string range;
        int64_t lo;
        if (is_const_int(n->min, &lo) && lo == 0 && n->min.dtype() == n->extent.dtype())
          range = expr(n->extent);
        else
          range = expr(n->min) + ", " + expr(loop_end(n->min, n->extent));
        if (n->for_kind == ForKind::ThreadBinding) range += ", " + quote(n->thread_tag);
        size_t m = mark();
        std::string h =
            "for " + bind_var(n->loop_var) + " in " + for_kind_name(n->for_kind) + "(" + range + ")";
        for (auto& [k, v] : n->annotations) h += " " + annotation(k, v);
        line(indent, h + " {");
        stmts(n->body, indent + 1);
        line(indent, "}");
        unbind_to(m);
        return;
      }
      case StmtKind::BlockRealize: block(s.as<BlockRealizeNode>(), indent); return;
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        line(indent, buf_name(n->buffer) + "[" + expr_list(n->indices) +
                         "] = " + print(n->value, Ctx::of(n->buffer->dtype)).s);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        line(indent, "if " + expr(n->cond) + " {");
        stmts(n->then_case, indent + 1);
        // An else branch that is exactly one `if` prints as `} else if c {`.
        while (n->else_case.defined()) {
          Stmt e = n->else_case;
          while (auto* q = e.as<SeqNode>()) {
            if (q->stmts.size() != 1) break;
            e = q->stmts[0];
          }
          if (auto* elif = e.as<IfThenElseStmtNode>()) {
            n = elif;
            line(indent, "} else if " + expr(n->cond) + " {");
            stmts(n->then_case, indent + 1);
            continue;
          }
          line(indent, "} else {");
          stmts(n->else_case, indent + 1);
          break;
        }
        line(indent, "}");
        return;
      }
      case StmtKind::Evaluate: {
        auto* n = s.as<EvaluateNode>();
        std::string a = quote(n->extern_name);
        for (auto& x : n->args) a += ", " + expr(x);
        line(indent, "call_extern(" + a + ")");
        return;
      }
    }
  }

  void allocs(const std::vector<Buffer>& bufs, int indent) {
    for (auto& b : bufs) {
      std::string t = buffer_type(b);  // shape uses names bound outside
      std::string s = "alloc " + bind_buf(b) + ": " + t;
      if (b->scope != "global" && !b->scope.empty()) s += " scope " + quote(b->scope);
      line(indent, s);
    }
  }

  // Block header and the clauses inside it, then the body. Iter vars and allocs are bound
  // while the block is printed.
  void block(const BlockRealizeNode* r, int indent) {
    const BlockNode& b = *r->block.get();
    size_t m = mark();
    std::string h = "block " + b.name + "(";
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      auto& iv = b.iter_vars[i];
      std::string ext = expr(iv.extent);
      std::string bind = i < r->bindings.size() ? expr(r->bindings[i]) : "<unbound>";
      h += (i ? ", " : "") + bind_var(iv.var) + ": " + iter_kind_name(iv.kind) + "(" + ext + ") = " + bind;
    }
    line(indent, h + ") {");
    block_contents(r, b, indent + 1);
    line(indent, "}");
    unbind_to(m);
  }

  void block_contents(const BlockRealizeNode* r, const BlockNode& b, int indent) {
    int64_t pv;
    if (r->predicate.defined() &&
        !(is_const_int(r->predicate, &pv) && pv == 1 && r->predicate.dtype() == DType::Bool))
      line(indent, "where " + expr(r->predicate));
    size_t m = mark();
    // Allocs are bound first so that names stay unique over the whole block; they print
    // after the clauses.
    std::vector<std::string> alloc_lines;
    for (auto& a : b.allocs) {
      std::string t = buffer_type(a);
      std::string s = "alloc " + bind_buf(a) + ": " + t;
      if (a->scope != "global" && !a->scope.empty()) s += " scope " + quote(a->scope);
      alloc_lines.push_back(s);
    }
    auto regions = [&](const char* kw, const std::vector<BufferRegion>& rs) {
      if (rs.empty()) return;
      std::string s = kw;
      for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : " ") + region(rs[i]);
      line(indent, s);
    };
    regions("reads", b.reads);
    regions("writes", b.writes);
    for (auto& [k, v] : b.annotations) line(indent, annotation(k, v));
    for (auto& s : alloc_lines) line(indent, s);
    if (b.init.defined()) {
      line(indent, "init {");
      stmts(b.init, indent + 1);
      line(indent, "}");
    }
    stmts(b.body, indent);
    unbind_to(m);
  }

  // ---- functions and items ----
  std::string range_value(double v, DType t) {
    // An integral end of an integer parameter prints as an integer literal (up to i64's range:
    // `in [0, 4611686018427387904]`, not `4611686018427387904.0`).
    if (!is_float(t) && std::floor(v) == v && v >= -9223372036854775808.0 && v < 9223372036854775808.0)
      return int_text(static_cast<int64_t>(v));
    // 2^63 is the double of the literal 9223372036854775807 (i64's max), which reads back to it.
    if (!is_float(t) && v == 9223372036854775808.0) return "9223372036854775807";
    return print_float_literal(v, DType::F64);
  }

  std::string params(const FunctionNode& f) {
    std::string s;
    for (size_t i = 0; i < f.params.size(); ++i) {
      auto& p = f.params[i];
      if (i) s += ", ";
      DType t;
      if (p.is_buffer()) {
        std::string ty = buffer_type(p.buffer);
        s += bind_buf(p.buffer) + ": " + ty;
        t = p.buffer->dtype;
      } else {
        s += bind(p.var.get(), p.var.name(), true) + ": " + std::string(dtype_name(p.var.dtype()));
        t = p.var.dtype();
      }
      if (p.range) s += value_range(*p.range, t);
    }
    return s;
  }

  std::string value_range(const ValueRange& r, DType t) {
    // An integer parameter's integer ends print exactly (their doubles may have rounded).
    auto end = [&](double v, const std::optional<int64_t>& exact) {
      return exact && !is_float(t) ? int_text(*exact) : range_value(v, t);
    };
    return " in [" + end(r.lo, r.ilo) + ", " + end(r.hi, r.ihi) + "]";
  }

  static bool omit_root(const BlockRealizeNode* r) {
    const BlockNode& b = *r->block.get();
    int64_t pv;
    bool pred_true = !r->predicate.defined() || (is_const_int(r->predicate, &pv) && pv == 1);
    if (b.name != "root" || !b.iter_vars.empty() || !b.annotations.empty() || b.init.defined() ||
        !b.reads.empty() || !b.writes.empty() || !pred_true || !r->bindings.empty())
      return false;
    // A body that is a single iter-var-free block would be read back as the root itself.
    Stmt s = b.body;
    while (s.defined()) {
      auto* q = s.as<SeqNode>();
      if (!q || q->stmts.size() != 1) break;
      s = q->stmts[0];
    }
    if (auto* inner = s.as<BlockRealizeNode>(); inner && inner->block->iter_vars.empty()) return false;
    return true;
  }

  // Function body (root block) at `indent`.
  void body(const FunctionNode& f, int indent) {
    auto* r = f.body.as<BlockRealizeNode>();
    if (!r) {
      stmts(f.body, indent);
      return;
    }
    if (omit_root(r)) {
      size_t m = mark();
      allocs(r->block->allocs, indent);
      stmts(r->block->body, indent);
      unbind_to(m);
      return;
    }
    block(r, indent);
  }

  void function(const FunctionNode& f, int indent = 0) {
    new_function();
    size_t m = mark();
    std::string h = "func " + f.name + "(" + params(f) + ") -> (";
    for (size_t i = 0; i < f.outputs.size(); ++i) {
      std::string ty = buffer_type(f.outputs[i]);
      h += (i ? ", " : "") + bind_buf(f.outputs[i]) + ": " + ty;
      if (i < f.output_ranges.size() && f.output_ranges[i])
        h += value_range(*f.output_ranges[i], f.outputs[i]->dtype);
    }
    line(indent, h + ") {");
    body(f, indent + 1);
    line(indent, "}");
    unbind_to(m);
  }

  std::string sched_arg(const ScheduleArg& a) {
    switch (a.kind) {
      case ScheduleArg::Ident: return a.text;
      case ScheduleArg::String: return quote(a.text);
      case ScheduleArg::Int: return int_text(a.int_value);
      case ScheduleArg::Float: return print_float_literal(a.float_value, DType::F64);
      case ScheduleArg::Wildcard: return "_";
      case ScheduleArg::List: {
        // A tuple (`("read", 0)`) prints as written; a one-element tuple keeps its comma.
        bool tuple = a.text == "(";
        std::string s = tuple ? "(" : "[";
        for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + sched_arg(a.list[i]);
        if (tuple && a.list.size() == 1) s += ",";
        return s + (tuple ? ")" : "]");
      }
      case ScheduleArg::Lambda: {
        size_t m = mark();
        std::string s = "lambda ";
        for (size_t i = 0; i < a.lambda_params.size(); ++i)
          s += (i ? ", " : "") + bind_var(a.lambda_params[i]);
        s += ": (";
        for (size_t i = 0; i < a.lambda_body.size(); ++i) s += (i ? ", " : "") + expr(a.lambda_body[i]);
        unbind_to(m);
        return s + ")";
      }
      case ScheduleArg::Keyword:
        return a.text + "=" + (a.list.empty() ? std::string("_") : sched_arg(a.list[0]));
      case ScheduleArg::Subscript: {
        // `x[k]` (list {x, k}) or `x[lo:hi:step]` (text ":", list {x, lo, hi, step}; an absent
        // bound is a Wildcard).
        if (a.list.empty()) return "?";
        std::string s = sched_arg(a.list[0]) + "[";
        auto bound = [&](size_t i) {
          return i < a.list.size() && a.list[i].kind != ScheduleArg::Wildcard ? sched_arg(a.list[i]) : "";
        };
        if (a.text != ":") return s + bound(1) + "]";
        s += bound(1) + ":" + bound(2);
        if (!bound(3).empty()) s += ":" + bound(3);
        return s + "]";
      }
      case ScheduleArg::Star: return "*" + (a.list.empty() ? std::string("?") : sched_arg(a.list[0]));
    }
    return "?";
  }

  void schedule(const ScheduleItem& s) {
    line(0, "schedule " + s.func + " {");
    for (auto& in : s.instrs) {
      std::string l;
      for (size_t i = 0; i < in.results.size(); ++i) l += (i ? ", " : "") + in.results[i];
      if (in.unpack && in.results.size() == 1) l += ",";
      if (!in.results.empty()) l += " = ";
      if (in.primitive.empty() && in.args.size() == 1) {  // `i, j = loops`: no call
        line(1, l + sched_arg(in.args[0]));
        continue;
      }
      l += in.primitive + "(";
      // `prim(...)[k]` is kept by the parser as the keyword argument __index=k.
      std::string index;
      size_t n = 0;
      for (auto& a : in.args) {
        if (a.kind == ScheduleArg::Keyword && a.text == "__index" && a.list.size() == 1) {
          index = "[" + sched_arg(a.list[0]) + "]";
          continue;
        }
        l += (n++ ? ", " : "") + sched_arg(a);
      }
      line(1, l + ")" + index);
    }
    line(0, "}");
  }

  void intrin_part(const char* kw, const Function& f) {
    if (!f) return;
    new_function();
    size_t m = mark();
    line(1, std::string(kw) + "(" + params(*f) + ") {");
    body(*f, 2);
    line(1, "}");
    unbind_to(m);
  }

  void intrin(const IntrinItem& it) {
    line(0, "intrin " + it.name + " {");
    intrin_part("desc", it.desc);
    intrin_part("impl", it.impl);
    line(0, "}");
  }

  void module(const Module& m) {
    std::vector<std::pair<int, size_t>> order = m.order;
    if (order.size() != m.funcs.size() + m.schedules.size() + m.intrins.size()) {
      order.clear();
      for (size_t i = 0; i < m.funcs.size(); ++i) order.emplace_back(0, i);
      for (size_t i = 0; i < m.schedules.size(); ++i) order.emplace_back(1, i);
      for (size_t i = 0; i < m.intrins.size(); ++i) order.emplace_back(2, i);
    }
    bool first = true;
    for (auto [kind, idx] : order) {
      if (!first) out += '\n';
      first = false;
      if (kind == 0 && idx < m.funcs.size())
        function(*m.funcs[idx]);
      else if (kind == 1 && idx < m.schedules.size())
        schedule(m.schedules[idx]);
      else if (kind == 2 && idx < m.intrins.size())
        intrin(m.intrins[idx]);
    }
  }

 private:
  std::unordered_map<const void*, std::vector<std::string>> names_;
  std::unordered_set<std::string> in_scope_, func_wide_;
  std::vector<std::pair<const void*, std::string>> stack_;
  std::unordered_map<const void*, std::string> free_;
  std::unordered_set<std::string> free_used_;
};

}  // namespace

int text_nesting_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {  // a string, with its escapes
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

// The text of one function (or intrin), refused when it would not read back.
void check_nesting(const std::string& text, const std::string& what) {
  int depth = text_nesting_depth(text);
  if (depth > kMaxTextNesting)
    throw Error("cannot print " + what + ": its text would nest " + std::to_string(depth) +
                " levels deep (loops, blocks and brackets), more than the " +
                std::to_string(kMaxTextNesting) + " levels the parser reads");
}

}  // namespace

std::string print_module(const Module& m) {
  Printer p;
  p.module(m);
  // Checked per item, so that the message names the function.
  if (text_nesting_depth(p.out) > kMaxTextNesting) {
    for (auto& f : m.funcs) check_nesting(print_function(*f), "function " + f->name);
    for (auto& it : m.intrins) {
      Printer q;
      q.intrin(it);
      check_nesting(q.out, "intrin " + it.name);
    }
    check_nesting(p.out, "the module");
  }
  return p.out;
}

int function_text_depth(const FunctionNode& f) {
  Printer p;
  p.function(f);
  return text_nesting_depth(p.out);
}

std::string print_function(const FunctionNode& f) {
  Printer p;
  p.function(f);
  check_nesting(p.out, "function " + f.name);
  return p.out;
}

std::string print_stmt(const Stmt& s, int indent) {
  Printer p;
  p.stmts(s, indent);
  return p.out;
}

std::string print_expr(const Expr& e) {
  Printer p;
  return p.expr(e);
}

}  // namespace tirc

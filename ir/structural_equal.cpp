// Structural equality and hashing up to renaming (ir/structural_equal.h).
//
// Variables and buffers are matched through their binders (params, outputs, allocs, loop
// vars, iter vars, let vars): at a binder the two sides are mapped to each other for the
// binder's scope; a use must then follow the mapping in both directions. A variable that is
// used without a binder (free) is mapped on first sight, permanently and one-to-one, so
// `i + j` and `i + i` differ. Names are never compared, except block, function, schedule
// and intrinsic names, which are part of the program's interface.
//
// Statement sequences are compared flattened (nested Seq nodes and one-element Seqs are
// not distinguished), because printing cannot show the nesting. Floats compare bit for bit
// (so 0.0 and -0.0 differ), except that every NaN equals every NaN.
#include "ir/structural_equal.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>

#include "ir/printer.h"

namespace tirc {

namespace {

void flatten(const Stmt& s, std::vector<Stmt>* out) {
  if (!s.defined()) return;
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) flatten(x, out);
    return;
  }
  out->push_back(s);
}

std::vector<Stmt> flat(const Stmt& s) {
  std::vector<Stmt> v;
  flatten(s, &v);
  return v;
}

bool float_eq(double x, double y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  return std::memcmp(&x, &y, sizeof x) == 0;
}

std::string stmt_label(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For: return "for " + s.as<ForNode>()->loop_var.name();
    case StmtKind::BlockRealize: return "block " + s.as<BlockRealizeNode>()->block->name;
    case StmtKind::Store: return "store " + s.as<StoreNode>()->buffer->name;
    case StmtKind::IfThenElse: return "if";
    case StmtKind::LetStmt: return "let " + s.as<LetStmtNode>()->var.name();
    case StmtKind::Seq: return "seq";
    case StmtKind::Evaluate: return "call_extern " + s.as<EvaluateNode>()->extern_name;
  }
  return "?";
}

std::string short_text(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  for (auto& c : t)
    if (c == '\n') c = ' ';
  if (t.size() > 120) t = t.substr(0, 117) + "...";
  return t;
}

class Equal {
 public:
  std::optional<std::string> diff;

  // ---- scoped mapping ----
  size_t mark() const { return undo_.size(); }
  void restore(size_t m) {
    while (undo_.size() > m) {
      auto& u = undo_.back();
      set(ab_, u.a, u.old_ab);
      set(ba_, u.b, u.old_ba);
      undo_.pop_back();
    }
  }
  void define(const void* a, const void* b) {
    undo_.push_back({a, b, get(ab_, a), get(ba_, b)});
    ab_[a] = b;
    ba_[b] = a;
  }
  bool use(const void* a, const void* b) {
    const void* x = get(ab_, a);
    const void* y = get(ba_, b);
    if (x || y) return x == b && y == a;
    ab_[a] = b;  // free: map for good
    ba_[b] = a;
    return true;
  }

  // ---- diagnostics ----
  struct Scope {
    Equal* e;
    Scope(Equal* eq, std::string s) : e(eq) { e->path_.push_back(std::move(s)); }
    ~Scope() { e->path_.pop_back(); }
  };
  bool fail(const std::string& detail) {
    if (!diff) {
      std::string p;
      for (auto& s : path_) p += (p.empty() ? "" : "/") + s;
      diff = p + ": " + detail;
    }
    return false;
  }
  bool fail_expr(const Expr& a, const Expr& b) {
    return fail((a.defined() ? print_expr(a) : "<none>") + " vs " + (b.defined() ? print_expr(b) : "<none>"));
  }

  // ---- expressions ----
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b, const char* what) {
    if (a.size() != b.size())
      return fail(std::string(what) + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
                  " entries");
    for (size_t i = 0; i < a.size(); ++i) {
      Scope s(this, std::string(what) + "[" + std::to_string(i) + "]");
      if (!expr(a[i], b[i])) return false;
    }
    return true;
  }
  // Indices of buffer accesses: path "A[1]".
  bool indices(const Buffer& buf, const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size())
      return fail(buf->name + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
                  " indices");
    for (size_t i = 0; i < a.size(); ++i) {
      Scope s(this, buf->name + "[" + std::to_string(i) + "]");
      if (!expr(a[i], b[i])) return false;
    }
    return true;
  }

  bool buffer_use(const Buffer& a, const Buffer& b) {
    if (a.defined() != b.defined()) return fail("buffer presence differs");
    if (!a.defined()) return true;
    if (!use(a.get(), b.get())) return fail("buffer " + a->name + " vs " + b->name);
    return true;
  }

  bool expr(const Expr& a, const Expr& b) {
    if (a.defined() != b.defined()) return fail_expr(a, b);
    if (!a.defined() || a.same_as(b)) {
      // Sharing one node only implies equality when no variable inside is mapped elsewhere;
      // compare anyway unless it is a leaf without variables.
      if (!a.defined() || a.kind() == ExprKind::IntImm || a.kind() == ExprKind::FloatImm) return true;
    }
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return fail_expr(a, b);
    switch (a.kind()) {
      case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value || fail_expr(a, b);
      case ExprKind::FloatImm:
        return float_eq(a.as<FloatImmNode>()->value, b.as<FloatImmNode>()->value) || fail_expr(a, b);
      case ExprKind::Var: return use(a.get(), b.get()) || fail_expr(a, b);
      case ExprKind::Load: {
        auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
        if (!use(x->buffer.get(), y->buffer.get())) return fail_expr(a, b);
        return indices(x->buffer, x->indices, y->indices);
      }
      case ExprKind::Binary: {
        auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
        if (x->op != y->op) return fail_expr(a, b);
        return expr(x->a, y->a) && expr(x->b, y->b);
      }
      case ExprKind::Unary: {
        auto *x = a.as<UnaryNode>(), *y = b.as<UnaryNode>();
        if (x->op != y->op) return fail_expr(a, b);
        return expr(x->a, y->a);
      }
      case ExprKind::Cast: return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::Call: {
        auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
        if (x->op != y->op || x->args.size() != y->args.size()) return fail_expr(a, b);
        for (size_t i = 0; i < x->args.size(); ++i)
          if (!expr(x->args[i], y->args[i])) return false;
        return true;
      }
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto *x = as_select_like(a), *y = as_select_like(b);
        return expr(x->cond, y->cond) && expr(x->t, y->t) && expr(x->f, y->f);
      }
      case ExprKind::Let: {
        auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
        if (x->var.dtype() != y->var.dtype()) return fail_expr(a, b);
        if (!expr(x->value, y->value)) return false;
        size_t m = mark();
        define(x->var.get(), y->var.get());
        bool ok = expr(x->body, y->body);
        restore(m);
        return ok;
      }
      case ExprKind::BufferPtr: {
        auto *x = a.as<BufferPtrNode>(), *y = b.as<BufferPtrNode>();
        if (!use(x->buffer.get(), y->buffer.get())) return fail_expr(a, b);
        return indices(x->buffer, x->indices, y->indices);
      }
    }
    return fail_expr(a, b);
  }

  // ---- binders ----
  bool def_var(const Var& a, const Var& b) {
    if (a.dtype() != b.dtype())
      return fail(a.name() + ": dtype " + std::string(dtype_name(a.dtype())) + " vs " +
                  std::string(dtype_name(b.dtype())));
    define(a.get(), b.get());
    return true;
  }
  bool def_buf(const Buffer& a, const Buffer& b) {
    Scope s(this, a->name);
    if (a->dtype != b->dtype)
      return fail("dtype " + std::string(dtype_name(a->dtype)) + " vs " + std::string(dtype_name(b->dtype)));
    if (a->scope != b->scope) return fail("scope " + a->scope + " vs " + b->scope);
    if (!exprs(a->shape, b->shape, "shape")) return false;
    define(a.get(), b.get());
    return true;
  }

  // ---- statements ----
  bool stmt_list(const Stmt& a, const Stmt& b) {
    std::vector<Stmt> x = flat(a), y = flat(b);
    size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i) {
      Scope s(this, stmt_label(x[i]));
      if (!stmt(x[i], y[i])) return false;
    }
    if (x.size() != y.size()) {
      if (x.size() > n) return fail("extra statement " + short_text(print_stmt(x[n])) + " vs end of list");
      return fail("end of list vs extra statement " + short_text(print_stmt(y[n])));
    }
    return true;
  }

  bool annotations(const Annotations& a, const Annotations& b) {
    if (a == b) return true;
    auto show = [](const Annotations& m) {
      std::string s = "{";
      for (auto& [k, v] : m) s += (s.size() > 1 ? ", " : "") + k + "=" + v;
      return s + "}";
    };
    return fail("annotations " + show(a) + " vs " + show(b));
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (a.kind() != b.kind()) return fail(short_text(print_stmt(a)) + " vs " + short_text(print_stmt(b)));
    switch (a.kind()) {
      case StmtKind::Seq: return stmt_list(a, b);
      case StmtKind::For: {
        auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
        if (x->for_kind != y->for_kind)
          return fail(std::string("loop kind ") + for_kind_name(x->for_kind) + " vs " +
                      for_kind_name(y->for_kind));
        if (x->thread_tag != y->thread_tag)
          return fail("thread tag " + x->thread_tag + " vs " + y->thread_tag);
        {
          Scope s(this, "min");
          if (!expr(x->min, y->min)) return false;
        }
        {
          Scope s(this, "extent");
          if (!expr(x->extent, y->extent)) return false;
        }
        if (!annotations(x->annotations, y->annotations)) return false;
        size_t m = mark();
        bool ok = def_var(x->loop_var, y->loop_var) && stmt_list(x->body, y->body);
        restore(m);
        return ok;
      }
      case StmtKind::BlockRealize: return block_realize(a.as<BlockRealizeNode>(), b.as<BlockRealizeNode>());
      case StmtKind::Store: {
        auto *x = a.as<StoreNode>(), *y = b.as<StoreNode>();
        if (!buffer_use(x->buffer, y->buffer)) return false;
        if (!indices(x->buffer, x->indices, y->indices)) return false;
        Scope s(this, "value");
        return expr(x->value, y->value);
      }
      case StmtKind::IfThenElse: {
        auto *x = a.as<IfThenElseStmtNode>(), *y = b.as<IfThenElseStmtNode>();
        {
          Scope s(this, "cond");
          if (!expr(x->cond, y->cond)) return false;
        }
        {
          Scope s(this, "then");
          if (!stmt_list(x->then_case, y->then_case)) return false;
        }
        if (x->else_case.defined() != y->else_case.defined())
          return fail(std::string("else ") + (x->else_case.defined() ? "present" : "absent") + " vs " +
                      (y->else_case.defined() ? "present" : "absent"));
        Scope s(this, "else");
        return stmt_list(x->else_case, y->else_case);
      }
      case StmtKind::LetStmt: {
        auto *x = a.as<LetStmtNode>(), *y = b.as<LetStmtNode>();
        {
          Scope s(this, "value");
          if (!expr(x->value, y->value)) return false;
        }
        size_t m = mark();
        bool ok = def_var(x->var, y->var) && stmt_list(x->body, y->body);
        restore(m);
        return ok;
      }
      case StmtKind::Evaluate: {
        auto *x = a.as<EvaluateNode>(), *y = b.as<EvaluateNode>();
        if (x->extern_name != y->extern_name)
          return fail("extern " + x->extern_name + " vs " + y->extern_name);
        return exprs(x->args, y->args, "args");
      }
    }
    return false;
  }

  bool regions(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b, const char* what) {
    if (a.size() != b.size())
      return fail(std::string(what) + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
                  " regions");
    for (size_t i = 0; i < a.size(); ++i) {
      Scope s(this, std::string(what) + "[" + std::to_string(i) + "]");
      if (!buffer_use(a[i].buffer, b[i].buffer)) return false;
      auto &ra = a[i].ranges, &rb = b[i].ranges;
      if (ra.size() != rb.size())
        return fail(std::to_string(ra.size()) + " vs " + std::to_string(rb.size()) + " dims");
      for (size_t d = 0; d < ra.size(); ++d) {
        Scope s2(this, a[i].buffer->name + "[" + std::to_string(d) + "]");
        if (ra[d].is_point() != rb[d].is_point()) return fail("point vs slice");
        if (!expr(ra[d].begin, rb[d].begin) || !expr(ra[d].end, rb[d].end)) return false;
      }
    }
    return true;
  }

  bool block_realize(const BlockRealizeNode* x, const BlockRealizeNode* y) {
    const BlockNode &a = *x->block.get(), &b = *y->block.get();
    if (a.name != b.name) return fail("block name " + a.name + " vs " + b.name);
    if (!exprs(x->bindings, y->bindings, "bindings")) return false;
    {
      Scope s(this, "where");
      if (!expr(x->predicate, y->predicate)) return false;
    }
    size_t m = mark();
    bool ok = block(a, b);
    restore(m);
    return ok;
  }

  bool block(const BlockNode& a, const BlockNode& b) {
    if (a.iter_vars.size() != b.iter_vars.size())
      return fail(std::to_string(a.iter_vars.size()) + " vs " + std::to_string(b.iter_vars.size()) +
                  " iter vars");
    for (size_t i = 0; i < a.iter_vars.size(); ++i) {
      auto &u = a.iter_vars[i], &v = b.iter_vars[i];
      Scope s(this, "iter " + u.var.name());
      if (u.kind != v.kind)
        return fail(std::string(iter_kind_name(u.kind)) + " vs " + iter_kind_name(v.kind));
      if (!expr(u.extent, v.extent)) return false;
      if (!def_var(u.var, v.var)) return false;
    }
    if (a.allocs.size() != b.allocs.size())
      return fail(std::to_string(a.allocs.size()) + " vs " + std::to_string(b.allocs.size()) + " allocs");
    for (size_t i = 0; i < a.allocs.size(); ++i)
      if (!def_buf(a.allocs[i], b.allocs[i])) return false;
    if (!regions(a.reads, b.reads, "reads") || !regions(a.writes, b.writes, "writes")) return false;
    if (!annotations(a.annotations, b.annotations)) return false;
    if (a.init.defined() != b.init.defined())
      return fail(std::string("init ") + (a.init.defined() ? "present" : "absent") + " vs " +
                  (b.init.defined() ? "present" : "absent"));
    if (a.init.defined()) {
      Scope s(this, "init");
      if (!stmt_list(a.init, b.init)) return false;
    }
    return stmt_list(a.body, b.body);
  }

  // ---- functions and modules ----
  bool range(const std::optional<ValueRange>& a, const std::optional<ValueRange>& b) {
    if (a.has_value() != b.has_value())
      return fail(std::string("range ") + (a ? "present" : "absent") + " vs " + (b ? "present" : "absent"));
    // The exact integer ends; an integral double without one (a range built in code) stands
    // for its integer, as the printer writes it.
    auto exact = [](double v, const std::optional<int64_t>& e) -> std::optional<int64_t> {
      if (e) return e;
      if (std::floor(v) == v && v >= -0x1.0p63 && v < 0x1.0p63) return static_cast<int64_t>(v);
      return std::nullopt;
    };
    if (a && (!float_eq(a->lo, b->lo) || !float_eq(a->hi, b->hi) ||
              exact(a->lo, a->ilo) != exact(b->lo, b->ilo) || exact(a->hi, a->ihi) != exact(b->hi, b->ihi)))
      return fail("range [" + std::to_string(a->lo) + ", " + std::to_string(a->hi) + "] vs [" +
                  std::to_string(b->lo) + ", " + std::to_string(b->hi) + "]");
    return true;
  }

  bool function(const FunctionNode& a, const FunctionNode& b) {
    Scope s(this, "func " + a.name);
    if (a.name != b.name) return fail("name " + a.name + " vs " + b.name);
    size_t m = mark();
    bool ok = function_inner(a, b);
    restore(m);
    return ok;
  }

  bool function_inner(const FunctionNode& a, const FunctionNode& b) {
    if (a.params.size() != b.params.size())
      return fail(std::to_string(a.params.size()) + " vs " + std::to_string(b.params.size()) + " params");
    for (size_t i = 0; i < a.params.size(); ++i) {
      auto &p = a.params[i], &q = b.params[i];
      Scope s(this, "params[" + std::to_string(i) + "]");
      if (p.is_buffer() != q.is_buffer())
        return fail(std::string(p.is_buffer() ? "buffer" : "scalar") + " vs " +
                    (q.is_buffer() ? "buffer" : "scalar"));
      if (p.is_buffer() ? !def_buf(p.buffer, q.buffer) : !def_var(p.var, q.var)) return false;
      if (!range(p.range, q.range)) return false;
    }
    if (a.outputs.size() != b.outputs.size())
      return fail(std::to_string(a.outputs.size()) + " vs " + std::to_string(b.outputs.size()) + " outputs");
    for (size_t i = 0; i < a.outputs.size(); ++i) {
      Scope s(this, "outputs[" + std::to_string(i) + "]");
      if (!def_buf(a.outputs[i], b.outputs[i])) return false;
      auto output_range = [](const FunctionNode& f, size_t k) {
        return k < f.output_ranges.size() ? f.output_ranges[k] : std::nullopt;
      };
      if (!range(output_range(a, i), output_range(b, i))) return false;
    }
    Scope s(this, "body");
    if (a.body.defined() != b.body.defined()) return fail("body presence differs");
    // The root block is not a path component of its own when it is the implicit "root".
    auto *x = a.body.as<BlockRealizeNode>(), *y = b.body.as<BlockRealizeNode>();
    if (x && y && x->block->name == "root" && y->block->name == "root") {
      if (!exprs(x->bindings, y->bindings, "bindings")) return false;
      if (!expr(x->predicate, y->predicate)) return false;
      return block(*x->block.get(), *y->block.get());
    }
    return stmt_list(a.body, b.body);
  }

  bool sched_arg(const ScheduleArg& a, const ScheduleArg& b) {
    // `text` is meaningful for Ident, String and Keyword only (a parser may keep the
    // spelling of numbers there too).
    bool texty =
        a.kind == ScheduleArg::Ident || a.kind == ScheduleArg::String || a.kind == ScheduleArg::Keyword;
    bool same = a.kind == b.kind && a.list.size() == b.list.size() && (!texty || a.text == b.text) &&
                (a.kind != ScheduleArg::Int || a.int_value == b.int_value) &&
                (a.kind != ScheduleArg::Float || float_eq(a.float_value, b.float_value));
    if (!same) return fail("argument differs");
    if (a.kind == ScheduleArg::List && (a.text == "(") != (b.text == "(")) return fail("tuple vs list");
    if (a.kind == ScheduleArg::Lambda) {
      // An index map: the same results up to renaming of the parameters.
      if (a.lambda_params.size() != b.lambda_params.size()) return fail("lambda parameter count differs");
      size_t m = mark();
      for (size_t i = 0; i < a.lambda_params.size(); ++i)
        define(a.lambda_params[i].get(), b.lambda_params[i].get());
      bool ok = exprs(a.lambda_body, b.lambda_body, "lambda");
      restore(m);
      if (!ok) return false;
    }
    for (size_t i = 0; i < a.list.size(); ++i)
      if (!sched_arg(a.list[i], b.list[i])) return false;
    return true;
  }

  bool schedule(const ScheduleItem& a, const ScheduleItem& b) {
    Scope s(this, "schedule " + a.func);
    if (a.func != b.func) return fail("func " + a.func + " vs " + b.func);
    if (a.instrs.size() != b.instrs.size())
      return fail(std::to_string(a.instrs.size()) + " vs " + std::to_string(b.instrs.size()) +
                  " instructions");
    for (size_t i = 0; i < a.instrs.size(); ++i) {
      auto &x = a.instrs[i], &y = b.instrs[i];
      Scope s2(this, "[" + std::to_string(i) + "] " + x.primitive);
      if (x.primitive != y.primitive) return fail("primitive " + x.primitive + " vs " + y.primitive);
      if (x.results != y.results) return fail("results differ");
      if (x.results.size() == 1 && x.unpack != y.unpack) return fail("one-element unpack differs");
      if (x.args.size() != y.args.size()) return fail("argument count differs");
      for (size_t k = 0; k < x.args.size(); ++k) {
        Scope s3(this, "args[" + std::to_string(k) + "]");
        if (!sched_arg(x.args[k], y.args[k])) return false;
      }
    }
    return true;
  }

  bool intrin(const IntrinItem& a, const IntrinItem& b) {
    Scope s(this, "intrin " + a.name);
    if (a.name != b.name) return fail("name " + a.name + " vs " + b.name);
    for (int k = 0; k < 2; ++k) {
      const Function& x = k ? a.impl : a.desc;
      const Function& y = k ? b.impl : b.desc;
      Scope s2(this, k ? "impl" : "desc");
      if (!x != !y) return fail("presence differs");
      if (!x) continue;
      size_t m = mark();
      bool ok = function_inner(*x, *y);
      restore(m);
      if (!ok) return false;
    }
    return true;
  }

  bool module(const Module& a, const Module& b) {
    if (a.funcs.size() != b.funcs.size())
      return fail(std::to_string(a.funcs.size()) + " vs " + std::to_string(b.funcs.size()) + " functions");
    for (size_t i = 0; i < a.funcs.size(); ++i)
      if (!function(*a.funcs[i], *b.funcs[i])) return false;
    if (a.schedules.size() != b.schedules.size())
      return fail(std::to_string(a.schedules.size()) + " vs " + std::to_string(b.schedules.size()) +
                  " schedules");
    for (size_t i = 0; i < a.schedules.size(); ++i)
      if (!schedule(a.schedules[i], b.schedules[i])) return false;
    if (a.intrins.size() != b.intrins.size())
      return fail(std::to_string(a.intrins.size()) + " vs " + std::to_string(b.intrins.size()) + " intrins");
    for (size_t i = 0; i < a.intrins.size(); ++i)
      if (!intrin(a.intrins[i], b.intrins[i])) return false;
    if (a.order != b.order) return fail("item order differs");
    return true;
  }

 private:
  struct Undo {
    const void *a, *b, *old_ab, *old_ba;
  };
  using Map = std::unordered_map<const void*, const void*>;
  static const void* get(const Map& m, const void* k) {
    auto it = m.find(k);
    return it == m.end() ? nullptr : it->second;
  }
  static void set(Map& m, const void* k, const void* v) {
    if (v)
      m[k] = v;
    else
      m.erase(k);
  }
  Map ab_, ba_;
  std::vector<Undo> undo_;
  std::vector<std::string> path_;
};

// ---- hashing: the same traversal, binders numbered in order of definition ----
class Hasher {
 public:
  size_t h = 0x9e3779b97f4a7c15ULL;
  void mix(uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }
  void mix_str(const std::string& s) { mix(std::hash<std::string>()(s)); }

  void define(const void* k) {
    undo_.emplace_back(k, get(k));
    ids_[k] = ++next_;
  }
  size_t mark() const { return undo_.size(); }
  void restore(size_t m) {
    while (undo_.size() > m) {
      auto [k, old] = undo_.back();
      undo_.pop_back();
      if (old)
        ids_[k] = old;
      else
        ids_.erase(k);
    }
  }
  void use(const void* k) {
    uint64_t id = get(k);
    if (!id) {  // free: numbered on first sight, permanently
      id = ++next_ | (1ULL << 62);
      ids_[k] = id;
    }
    mix(id);
  }

  void expr(const Expr& e) {
    if (!e.defined()) return mix(7);
    mix(static_cast<uint64_t>(e.kind()) * 31 + static_cast<uint64_t>(e.dtype()));
    switch (e.kind()) {
      case ExprKind::IntImm: return mix(static_cast<uint64_t>(e.as<IntImmNode>()->value));
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        uint64_t bits;
        if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(&bits, &v, sizeof bits);
        return mix(bits);
      }
      case ExprKind::Var: return use(e.get());
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        use(n->buffer.get());
        for (auto& i : n->indices) expr(i);
        return;
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        mix(static_cast<uint64_t>(n->op));
        expr(n->a);
        return expr(n->b);
      }
      case ExprKind::Unary:
        mix(static_cast<uint64_t>(e.as<UnaryNode>()->op));
        return expr(e.as<UnaryNode>()->a);
      case ExprKind::Cast: return expr(e.as<CastNode>()->value);
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        mix(static_cast<uint64_t>(n->op));
        for (auto& a : n->args) expr(a);
        return;
      }
      case ExprKind::Select:
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        expr(n->cond);
        expr(n->t);
        return expr(n->f);
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        expr(n->value);
        size_t m = mark();
        define(n->var.get());
        expr(n->body);
        return restore(m);
      }
      case ExprKind::BufferPtr: {
        auto* n = e.as<BufferPtrNode>();
        use(n->buffer.get());
        mix(n->indices.size());
        for (auto& i : n->indices) expr(i);
        return;
      }
    }
  }

  void def_buf(const Buffer& b) {
    mix(static_cast<uint64_t>(b->dtype));
    mix_str(b->scope);
    mix(b->shape.size());
    for (auto& s : b->shape) expr(s);
    define(b.get());
  }

  void stmt_list(const Stmt& s) {
    std::vector<Stmt> v = flat(s);
    mix(v.size());
    for (auto& x : v) stmt(x);
  }

  void annotations(const Annotations& a) {
    for (auto& [k, v] : a) {
      mix_str(k);
      mix_str(v);
    }
  }

  void stmt(const Stmt& s) {
    mix(100 + static_cast<uint64_t>(s.kind()));
    switch (s.kind()) {
      case StmtKind::Seq: return stmt_list(s);
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        mix(static_cast<uint64_t>(n->for_kind));
        mix_str(n->thread_tag);
        expr(n->min);
        expr(n->extent);
        annotations(n->annotations);
        size_t m = mark();
        mix(static_cast<uint64_t>(n->loop_var.dtype()));
        define(n->loop_var.get());
        stmt_list(n->body);
        return restore(m);
      }
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        for (auto& b : n->bindings) expr(b);
        expr(n->predicate);
        size_t m = mark();
        block(*n->block.get());
        return restore(m);
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        use(n->buffer.get());
        for (auto& i : n->indices) expr(i);
        return expr(n->value);
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        expr(n->cond);
        stmt_list(n->then_case);
        mix(n->else_case.defined());
        return stmt_list(n->else_case);
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        expr(n->value);
        size_t m = mark();
        mix(static_cast<uint64_t>(n->var.dtype()));
        define(n->var.get());
        stmt_list(n->body);
        return restore(m);
      }
      case StmtKind::Evaluate: {
        auto* n = s.as<EvaluateNode>();
        mix_str(n->extern_name);
        mix(n->args.size());
        for (auto& a : n->args) expr(a);
        return;
      }
    }
  }

  void block(const BlockNode& b) {
    mix_str(b.name);
    mix(b.iter_vars.size());
    for (auto& iv : b.iter_vars) {
      mix(static_cast<uint64_t>(iv.kind));
      expr(iv.extent);
      mix(static_cast<uint64_t>(iv.var.dtype()));
      define(iv.var.get());
    }
    mix(b.allocs.size());
    for (auto& a : b.allocs) def_buf(a);
    for (auto* rs : {&b.reads, &b.writes}) {
      mix(rs->size());
      for (auto& r : *rs) {
        use(r.buffer.get());
        for (auto& rg : r.ranges) {
          expr(rg.begin);
          expr(rg.end);
        }
      }
    }
    annotations(b.annotations);
    mix(b.init.defined());
    stmt_list(b.init);
    stmt_list(b.body);
  }

  void function(const FunctionNode& f) {
    mix_str(f.name);
    size_t m = mark();
    for (auto& p : f.params) {
      mix(p.is_buffer());
      if (p.is_buffer())
        def_buf(p.buffer);
      else {
        mix(static_cast<uint64_t>(p.var.dtype()));
        define(p.var.get());
      }
    }
    for (auto& o : f.outputs) def_buf(o);
    if (auto* r = f.body.as<BlockRealizeNode>(); r && r->block->name == "root") {
      block(*r->block.get());
    } else {
      stmt_list(f.body);
    }
    restore(m);
  }

 private:
  uint64_t get(const void* k) const {
    auto it = ids_.find(k);
    return it == ids_.end() ? 0 : it->second;
  }
  std::unordered_map<const void*, uint64_t> ids_;
  std::vector<std::pair<const void*, uint64_t>> undo_;
  uint64_t next_ = 0;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) { return Equal().expr(a, b); }
bool structural_equal(const Stmt& a, const Stmt& b) {
  if (a.defined() != b.defined()) return false;
  return Equal().stmt_list(a, b);
}
bool structural_equal(const FunctionNode& a, const FunctionNode& b) { return Equal().function(a, b); }
bool structural_equal(const Module& a, const Module& b) { return Equal().module(a, b); }

std::optional<std::string> structural_diff(const FunctionNode& a, const FunctionNode& b) {
  Equal e;
  if (e.function(a, b)) return std::nullopt;
  return e.diff ? e.diff : std::optional<std::string>("differs");
}
std::optional<std::string> structural_diff(const Module& a, const Module& b) {
  Equal e;
  if (e.module(a, b)) return std::nullopt;
  return e.diff ? e.diff : std::optional<std::string>("differs");
}

size_t structural_hash(const Expr& e) {
  Hasher h;
  h.expr(e);
  return h.h;
}
size_t structural_hash(const FunctionNode& f) {
  Hasher h;
  h.function(f);
  return h.h;
}

}  // namespace tirc

#include "parser/region_check.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/linear.h"

namespace tirc::parser_detail {

namespace {

struct Range64 {
  int64_t lo, hi;  // inclusive
};

// Max over the variables' ranges of an affine form, when it is exact: every term is a
// variable with a known range, or `v // c` (c > 0) of one, each variable in one term only.
// nullopt when the form has any other term (the maximum is then not known to be attained).
std::optional<__int128> exact_max(const SumForm& f,
                                  const std::unordered_map<const VarNode*, Range64>& ranges) {
  __int128 total = as_signed(f.constant, f.dtype);
  std::unordered_set<const VarNode*> seen;
  for (auto& t : f.terms) {
    const VarNode* v = t.term.as<VarNode>();
    int64_t div = 1;
    if (!v) {
      auto* b = t.term.as<BinaryNode>();
      if (!b || b->op != BinOp::FloorDiv || !is_const_int(b->b, &div) || div <= 0) return std::nullopt;
      v = b->a.as<VarNode>();
      if (!v) return std::nullopt;
    }
    auto it = ranges.find(v);
    if (it == ranges.end() || !seen.insert(v).second) return std::nullopt;
    // Floor division by a positive constant is monotone: the extremes stay at the ends.
    auto fdiv = [&](int64_t x) -> __int128 {
      __int128 q = x / div;
      if ((x % div != 0) && (x < 0)) --q;
      return q;
    };
    __int128 lo = fdiv(it->second.lo), hi = fdiv(it->second.hi);
    __int128 c = as_signed(t.coeff, f.dtype);
    total += c > 0 ? c * hi : c * lo;
  }
  return total;
}

std::string region_text(const BufferRegion& r) {
  std::string s = r.buffer->name + "[";
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    if (d) s += ", ";
    s += print_expr(r.ranges[d].begin);
    if (!r.ranges[d].is_point()) s += ":" + print_expr(r.ranges[d].end);
  }
  return s + "]";
}

std::string access_text(const Buffer& b, const std::vector<Expr>& idx) {
  std::string s = b->name + "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + print_expr(idx[d]);
  return s + "]";
}

class Checker {
 public:
  Checker(const BlockNode& block, bool check_reads, bool check_writes, const AccessLocs& locs)
      : block_(block), check_reads_(check_reads), check_writes_(check_writes), locs_(locs) {
    for (auto& iv : block.iter_vars) {
      int64_t n;
      if (is_const_int(iv.extent, &n) && n > 0) ranges_[iv.var.get()] = {0, n - 1};
    }
    for (auto& b : block.allocs) exempt_.insert(b.get());
  }

  void run() {
    if (block_.init.defined()) visit(block_.init);
    visit(block_.body);
  }

 private:
  const BlockNode& block_;
  bool check_reads_, check_writes_;
  const AccessLocs& locs_;
  std::unordered_map<const VarNode*, Range64> ranges_;                        // variables with exact ranges
  std::unordered_map<const VarNode*, Expr> subst_;                            // nested iter var -> binding
  std::unordered_map<const VarNode*, std::vector<const VarNode*>> let_deps_;  // let -> vars of its value
  std::unordered_set<const BufferNode*> exempt_;                              // allocated inside the block

  [[noreturn]] void fail(const SourceLoc& at, const std::string& msg) const {
    const SourceLoc& l = at.known() ? at : block_.loc;
    throw SourceError(l.file, l.line, l.col, "block '" + block_.name + "': " + msg);
  }

  Expr subst(const Expr& e) const { return subst_.empty() ? e : substitute(e, subst_); }

  // A condition constrains the variables it uses (and those of the lets it uses): their
  // ranges are no longer exact in the guarded code.
  template <typename F>
  void constrained_by(const Expr& cond, F&& f) {
    auto saved = ranges_;
    std::vector<const VarNode*> work;
    for_each_expr(subst(cond), [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) work.push_back(v);
    });
    std::unordered_set<const VarNode*> done;
    while (!work.empty()) {
      const VarNode* v = work.back();
      work.pop_back();
      if (!done.insert(v).second) continue;
      ranges_.erase(v);
      auto it = let_deps_.find(v);
      if (it != let_deps_.end()) work.insert(work.end(), it->second.begin(), it->second.end());
    }
    f();
    ranges_ = std::move(saved);
  }

  void bind_let(const Var& v, const Expr& value) {
    std::vector<const VarNode*> deps;
    for_each_expr(subst(value), [&](const Expr& x) {
      if (auto* u = x.as<VarNode>()) deps.push_back(u);
    });
    let_deps_[v.get()] = std::move(deps);
  }

  // Declared regions of `b` that may cover an access (reads and/or writes).
  std::vector<const BufferRegion*> candidates(const Buffer& b, bool reads, bool writes) const {
    std::vector<const BufferRegion*> out;
    if (reads)
      for (auto& r : block_.reads)
        if (r.buffer == b) out.push_back(&r);
    if (writes)
      for (auto& r : block_.writes)
        if (r.buffer == b) out.push_back(&r);
    return out;
  }

  // Empty when `idx` may lie in `r`; else why it provably does not. Only the part of an
  // access inside the buffer must be covered (outside it is a run-time error anyway, and
  // inferred regions are clamped to the buffer): with a constant shape and a constant region
  // end, the access's maximum is capped at the last element (likewise at 0 for the start).
  std::string violation(const BufferRegion& r, const std::vector<Expr>& idx) const {
    if (r.ranges.size() != idx.size()) return "";
    for (size_t d = 0; d < idx.size(); ++d) {
      const Range& rg = r.ranges[d];
      Expr i = subst(idx[d]);
      Expr last = rg.is_point() ? rg.begin : make_binary(BinOp::Sub, rg.end, make_int(1, rg.end.dtype()));
      if (i.dtype() != last.dtype() || i.dtype() != rg.begin.dtype()) continue;
      int64_t n = 0, c = 0;
      bool shape = d < r.buffer->shape.size() && is_const_int(r.buffer->shape[d], &n);
      std::optional<__int128> over, under;
      bool const_last = rg.is_point() ? is_const_int(rg.begin, &c) : is_const_int(rg.end, &c) && (--c, true);
      if (shape && const_last) {
        if (auto m = exact_max(to_sum_form(i), ranges_)) over = std::min<__int128>(*m, n - 1) - c;
      } else {
        SumForm f = to_sum_form(i);
        f.add(to_sum_form(last), -1);
        over = exact_max(f, ranges_);
      }
      if (over && *over > 0)
        return "dimension " + std::to_string(d) + " exceeds the region's end by up to " +
               std::to_string(static_cast<long long>(*over));
      if (shape && is_const_int(rg.begin, &c)) {
        SumForm f = to_sum_form(i);
        f.scale(-1);
        if (auto m = exact_max(f, ranges_)) under = c - std::max<__int128>(-*m, 0);
      } else {
        SumForm f = to_sum_form(rg.begin);
        f.add(to_sum_form(i), -1);
        under = exact_max(f, ranges_);
      }
      if (under && *under > 0)
        return "dimension " + std::to_string(d) + " starts up to " +
               std::to_string(static_cast<long long>(*under)) + " before the region";
    }
    return "";
  }

  void access(const char* what, const Buffer& b, const std::vector<Expr>& idx, const std::string& text,
              const SourceLoc& at, bool is_write) {
    if (exempt_.count(b.get())) return;
    if (is_write ? !check_writes_ : !check_reads_) return;
    const char* list = is_write ? "writes" : "reads";
    auto cands = candidates(b, !is_write, true);
    if (cands.empty()) {
      std::string decl;
      for (auto& r : is_write ? block_.writes : block_.reads)
        decl += (decl.empty() ? "" : ", ") + region_text(r);
      fail(at, std::string(what) + " " + text + " accesses " + b->name + ", which its declared " + list +
                   " do not list (" + list + " " + decl + ")");
    }
    std::string why;
    for (auto* r : cands) {
      std::string v = violation(*r, idx);
      if (v.empty()) return;  // may be covered
      if (why.empty()) why = v;
    }
    std::string decl;
    for (auto* r : cands) decl += (decl.empty() ? "" : ", ") + region_text(*r);
    fail(at, std::string(what) + " " + text + " is outside its declared region" +
                 (cands.size() > 1 ? "s " : " ") + decl + (cands.size() == 1 ? " (" + why + ")" : ""));
  }

  SourceLoc loc_of(const Expr& e) const {
    auto it = locs_.find(e.get());
    return it == locs_.end() ? SourceLoc{} : it->second.second;
  }

  void visit(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        for (auto& i : n->indices) visit(i);
        access("load", n->buffer, n->indices, access_text(n->buffer, n->indices), loc_of(e), false);
        return;
      }
      case ExprKind::BufferPtr: {
        auto* n = e.as<BufferPtrNode>();
        for (auto& i : n->indices) visit(i);
        if (exempt_.count(n->buffer.get()) || !(check_reads_ || check_writes_)) return;
        std::string text =
            n->indices.empty() ? n->buffer->name + ".data" : "pointer " + access_text(n->buffer, n->indices);
        if (candidates(n->buffer, true, true).empty()) {
          std::string rd, wr;
          for (auto& r : block_.reads) rd += (rd.empty() ? "" : ", ") + region_text(r);
          for (auto& r : block_.writes) wr += (wr.empty() ? "" : ", ") + region_text(r);
          std::string decl = rd.empty() ? "" : "reads " + rd;
          if (!wr.empty()) decl += (decl.empty() ? "writes " : "; writes ") + wr;
          fail(loc_of(e), text + " accesses " + n->buffer->name +
                              ", which its declared reads and writes do not list (" + decl + ")");
        }
        return;
      }
      case ExprKind::Binary:
        visit(e.as<BinaryNode>()->a);
        visit(e.as<BinaryNode>()->b);
        return;
      case ExprKind::Unary: visit(e.as<UnaryNode>()->a); return;
      case ExprKind::Cast: visit(e.as<CastNode>()->value); return;
      case ExprKind::Call:
        for (auto& a : e.as<CallNode>()->args) visit(a);
        return;
      case ExprKind::Select: {
        auto* n = as_select_like(e);
        visit(n->cond);
        visit(n->t);
        visit(n->f);
        return;
      }
      case ExprKind::IfThenElse: {
        auto* n = as_select_like(e);
        visit(n->cond);
        constrained_by(n->cond, [&] {
          visit(n->t);
          visit(n->f);
        });
        return;
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        visit(n->value);
        bind_let(n->var, n->value);
        visit(n->body);
        return;
      }
      default: return;
    }
  }

  void visit(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        visit(n->min);
        visit(n->extent);
        int64_t lo, ext;
        if (is_const_int(subst(n->min), &lo) && is_const_int(subst(n->extent), &ext)) {
          if (ext <= 0) return;  // never runs
          ranges_[n->loop_var.get()] = {lo, lo + ext - 1};
        } else {
          bind_let(n->loop_var, make_binary(BinOp::Add, n->min, n->extent));
          ranges_.erase(n->loop_var.get());
        }
        visit(n->body);
        return;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        for (auto& i : n->indices) visit(i);
        visit(n->value);
        access("store", n->buffer, n->indices, access_text(n->buffer, n->indices), n->loc, true);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseStmtNode>();
        visit(n->cond);
        constrained_by(n->cond, [&] {
          visit(n->then_case);
          visit(n->else_case);
        });
        return;
      }
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        visit(n->value);
        bind_let(n->var, n->value);
        visit(n->body);
        return;
      }
      case StmtKind::Seq:
        for (auto& x : s.as<SeqNode>()->stmts) visit(x);
        return;
      case StmtKind::Evaluate:
        for (auto& a : s.as<EvaluateNode>()->args) visit(a);
        return;
      case StmtKind::BlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        for (auto& b : n->bindings) visit(b);
        visit(n->predicate);
        const BlockNode& inner = *n->block.get();
        auto saved_subst = subst_;
        for (size_t k = 0; k < inner.iter_vars.size() && k < n->bindings.size(); ++k)
          subst_[inner.iter_vars[k].var.get()] = subst(n->bindings[k]);
        for (auto& b : inner.allocs) exempt_.insert(b.get());
        int64_t pv;
        bool always = is_const_int(n->predicate, &pv) && pv != 0;
        auto body = [&] {
          if (inner.init.defined()) visit(inner.init);
          visit(inner.body);
        };
        if (always)
          body();
        else
          constrained_by(n->predicate, body);
        subst_ = std::move(saved_subst);
        return;
      }
    }
  }
};

}  // namespace

void check_declared_regions(const BlockNode& block, bool check_reads, bool check_writes,
                            const AccessLocs& locs) {
  if (!check_reads && !check_writes) return;
  Checker(block, check_reads, check_writes, locs).run();
}

}  // namespace tirc::parser_detail

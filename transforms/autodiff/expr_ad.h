// Reverse-mode differentiation of one scalar expression (the body of one block).
//
// Method: the expression is linearised into a Wengert list of let bindings (one temp per
// float operation, so every forward value and every adjoint is named once and sharing
// stays explicit: an N-deep product chain gives O(N) bindings, not O(N^2) terms). The
// reverse sweep walks the list backwards, accumulating adjoints; each adjoint is bound to
// a let as well. `if_then_else` arms are linearised into their own scopes: their temps
// are only evaluated under the arm's condition, in the forward value and in every
// adjoint term that needs them (the term is wrapped in the arm's lets and carries the
// condition as a guard), so guarded loads stay guarded. Integer and bool
// sub-expressions carry no gradient.
//
// Derivative rules and tie conventions (documented in docs/autodiff.md):
//   min(a, b) / max(a, b): the whole adjoint goes to `a` on ties;
//   abs: sign(x) (0 at 0); floor ceil round trunc sign: 0;
//   select / if_then_else: to the taken arm; pow(a, b): b*a^(b-1), z*log(a) for b.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/stmt.h"

namespace tirc::ad {

// Fresh, printable names that collide with no name of the function being differentiated.
class NameGen {
 public:
  void reserve(const std::string& n) { used_.insert(n); }
  bool taken(const std::string& n) const { return used_.count(n) != 0; }
  // base0, base1, ... (first free).
  std::string fresh(const std::string& base);
  // base itself when free, else base_1, base_2, ...
  std::string unique(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_;
};

struct Binding {
  Var var;
  Expr value;
};

// A list of let bindings in evaluation order.
struct Scope {
  std::vector<Binding> lets;
  // structural hash of a value -> index in lets (hash-consing in ExprAD::bind).
  std::unordered_multimap<size_t, size_t> index;
};

// One cotangent contribution to a leaf load (a read of a differentiable buffer).
struct LeafTerm {
  Expr load;                 // the LoadNode read by the forward expression
  std::vector<Expr> guards;  // must all hold for the term to apply (if_then_else arms)
  Expr term;                 // cotangent, in terms of the top-level lets
};

class ExprAD {
 public:
  ExprAD(NameGen& names, std::function<bool(const Buffer&)> active)
      : names_(names), active_(std::move(active)) {}

  // Linearises e into s; returns a "simple" expression: a temp var, a constant, a leaf load
  // or an inactive (integer-derived) expression.
  Expr linearize(const Expr& e, Scope& s);
  // Makes `v` (a LetStmt var of the forward body) stand for linearize(value).
  void bind_let(const Var& v, const Expr& value, Scope& s);
  // Applies the let substitution to a non-differentiated expression (indices, conditions).
  Expr subst(const Expr& e) const;

  // Reverse sweep over s seeded with (simple expr, cotangent) pairs. Adjoint bindings are
  // appended to *adj_lets (to be evaluated after s.lets), leaf terms to *leaves, with
  // `guards` prepended to their guards.
  void reverse(const Scope& s, const std::vector<std::pair<Expr, Expr>>& seeds,
               const std::vector<Expr>& guards, std::vector<Binding>* adj_lets,
               std::vector<LeafTerm>* leaves);

  // Nested Let expressions of the bindings (in order) that `e` needs, around e.
  static Expr wrap(const std::vector<const std::vector<Binding>*>& lists, const Expr& e);

 private:
  struct TempInfo {
    Expr def;
    bool is_ite = false;
    Expr cond;
    std::shared_ptr<Scope> then_scope, else_scope;
    Expr then_val, else_val;
  };
  using AdjMap = std::unordered_map<const VarNode*, std::vector<Expr>>;

  Expr bind(Scope& s, const Expr& value, const char* base = "t");
  // An integer (or bool) expression with the let substitution applied and its float
  // sub-expressions that compute something (`floor(p)` of `i32(floor(p))`) linearised into
  // temps of s, outside if_then_else arms; subst(e) inside arms.
  Expr lin_int(const Expr& e, Scope& s);
  void push(AdjMap& adj, std::vector<LeafTerm>* leaves, const std::vector<Expr>& guards, const Expr& arg,
            const Expr& term);
  void reverse_scope(const Scope& s, AdjMap& adj, const std::vector<Expr>& guards,
                     std::vector<Binding>* adj_lets, std::vector<LeafTerm>* leaves);
  void reverse_arm(const Expr& cond, const Scope& arm, const Expr& val, const Expr& a,
                   const std::vector<Expr>& guards, AdjMap& adj, std::vector<LeafTerm>* leaves);
  void rule(const Expr& def, const Var& z, const Expr& a, AdjMap& adj, std::vector<LeafTerm>* leaves,
            const std::vector<Expr>& guards);

  NameGen& names_;
  std::function<bool(const Buffer&)> active_;
  std::unordered_map<const VarNode*, TempInfo> defs_;
  std::unordered_map<const VarNode*, Expr> letmap_;
  int arm_depth_ = 0;                             // > 0 while linearising an if_then_else arm
  std::vector<Binding>* cur_adj_lets_ = nullptr;  // where reverse_scope appends adjoint lets
  // While rule() runs: the condition under which the adjoint it propagates is nonzero, when
  // that adjoint is a select with a zero arm (the untaken arm of a `select`, a min / max
  // operand); undefined otherwise. See rule().
  Expr cur_mask_;
  Expr cur_unmasked_;  // the select's nonzero arm when it is a var or constant
};

// Sum of terms (undefined when empty), without folding.
Expr sum_terms(const std::vector<Expr>& terms);
// Free variables of e (including let-bound ones: an over-approximation is fine here).
void collect_vars(const Expr& e, std::unordered_set<const VarNode*>* out);

// The constant v of dtype t, rounded to t when t is a float type (round_float of
// transforms/simplify/const_fold.h, as the parser rounds literals), so that F_grad holds
// the value its printed literal parses back to (`tirc grad` output is a print fixpoint).
Expr rounded_const(DType t, double v);
// Rounds every float constant of s to its dtype (rounded_const).
Stmt round_float_consts(const Stmt& s);

}  // namespace tirc::ad

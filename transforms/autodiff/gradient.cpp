// Block-level reverse-mode AD: see gradient.h for the method.
#include "transforms/autodiff/gradient.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/expr_ad.h"
#include "transforms/autodiff/fuse_pointwise.h"
#include "transforms/autodiff/gather.h"
#include "transforms/autodiff/guarded_loads.h"
#include "transforms/autodiff/hoist.h"
#include "transforms/autodiff/let_scopes.h"
#include "transforms/autodiff/loop_order.h"
#include "transforms/autodiff/normalize.h"
#include "transforms/autodiff/regions.h"
#include "transforms/autodiff/scatter_kinds.h"
#include "transforms/autodiff/user_names.h"
#include "transforms/simplify/simplify.h"

namespace tirc {

using namespace ad;

namespace {

constexpr int64_t kNoIndex = 2147483647;  // "no arg-extremum" in the K buffer of max/min
// gather_costs_more: the largest gather box kept, relative to the forward loop nest's box.
constexpr double kGatherOverScatter = 4.0;

struct PathElem {
  Stmt s;
  bool else_branch = false;
};

enum class RedKind { Spatial, Sum, Max, Min, Prod };

struct Unit {
  const BlockRealizeNode* br = nullptr;
  const BlockNode* blk = nullptr;
  std::vector<PathElem> path;
  // Body: lets and guards in order, then the store.
  struct Item {
    bool is_let;
    Var var;
    Expr value;  // let value or guard condition
  };
  std::vector<Item> items;
  const StoreNode* store = nullptr;
  const StoreNode* init_store = nullptr;
  std::vector<Binding> init_lets;
  RedKind kind = RedKind::Spatial;
  bool negate = false;
  Expr update;  // E for reductions, the stored value otherwise
  // A spatial in-place accumulation `Y[I] = Y[I] + E` (or `E + Y[I]`, `Y[I] - E`; E and the
  // lets and guards not reading Y, no reduce vars): accum_E = E. Its adjoint passes Y's
  // cotangent through whole, as a sum's does (no mask, no term for the Y[I] read).
  Expr accum_E;
  bool accum_neg = false;
  std::vector<IterVar> reduce_iters;
  Buffer Y, ver_in, ver_out;
  bool self_read = false, full = false, needs_copy = false, inactive = false, merged = false;
  int group = 0;           // units from the same block share a group
  std::vector<Expr> once;  // guards making a repeated spatial store count once
  std::unordered_map<const BufferNode*, Buffer> read_ver;  // versions read (AD view)
  std::unordered_map<const BufferNode*, Buffer> fwd_load;  // forward emission: loads
  // Scan blocks (docs/autodiff.md, "Scans"): the scan iter var, the store dimension it
  // indexes, the loop it is bound to (binding = loop var + scan_offset), and the reads of Y
  // at an earlier step (they see this block's own results: version ver_out).
  int scan_iv = -1;
  size_t scan_dim = 0;
  const ForNode* scan_loop = nullptr;
  int64_t scan_offset = 0;
  std::unordered_set<const LoadNode*> carried;
  // Recurrences through several blocks (or a scan with a reduction): the blocks of one scan
  // loop form a region, reversed as a whole. step_iv: the iter var bound to the loop;
  // scan_at: the loop's index in path.
  int step_iv = -1;
  size_t scan_at = 0;
  int region = -1;
};

struct Region {
  const ForNode* loop = nullptr;
  size_t first = 0, last = 0;  // member units (contiguous in collection order)
};

// Conjoins a condition to the predicate of every block realize it meets (not to the blocks
// nested in those).
class AddPredicate : public IRMutator {
 public:
  explicit AddPredicate(Expr cond) : cond_(std::move(cond)) {}

 protected:
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt&) override {
    int64_t v;
    Expr p = !n->predicate.defined() || (is_const_int(n->predicate, &v) && v != 0)
                 ? cond_
                 : make_binary(BinOp::And, n->predicate, cond_);
    return make_block_realize(n->bindings, p, n->block);
  }

 private:
  Expr cond_;
};

// Replaces the given loads (by node) with loads of another buffer, same indices.
class RetargetLoads : public IRMutator {
 public:
  RetargetLoads(const std::unordered_set<const LoadNode*>& which, Buffer to)
      : which_(which), to_(std::move(to)) {}

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    if (which_.count(n)) return make_load(to_, n->indices);
    return IRMutator::mutate_load(n, e);
  }

 private:
  const std::unordered_set<const LoadNode*>& which_;
  Buffer to_;
};

// The buffers a block realize mentions (loads, stores, pointers, regions, allocs).
class MentionedBuffers : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> bufs;
  void collect(const BlockRealizeNode* n) { visit_block_realize(n); }

 protected:
  void visit_load(const LoadNode* n) override {
    bufs.insert(n->buffer.get());
    IRVisitor::visit_load(n);
  }
  void visit_buffer_ptr(const BufferPtrNode* n) override {
    bufs.insert(n->buffer.get());
    IRVisitor::visit_buffer_ptr(n);
  }
  void visit_store(const StoreNode* n) override {
    bufs.insert(n->buffer.get());
    IRVisitor::visit_store(n);
  }
  void visit_block(const BlockNode* n) override {
    for (auto* regions : {&n->reads, &n->writes})
      for (auto& r : *regions) bufs.insert(r.buffer.get());
    for (auto& a : n->allocs) bufs.insert(a.get());
    IRVisitor::visit_block(n);
  }
};

// The entries of a version map for the buffers in `keep` only.
std::unordered_map<const BufferNode*, Buffer> restrict_versions(
    const std::unordered_map<const BufferNode*, Buffer>& all,
    const std::unordered_set<const BufferNode*>& keep) {
  std::unordered_map<const BufferNode*, Buffer> out;
  for (auto* b : keep)
    if (auto it = all.find(b); it != all.end()) out.emplace(b, it->second);
  return out;
}

class BufferRenamer : public IRMutator {
 public:
  BufferRenamer(const std::unordered_map<const BufferNode*, Buffer>& loads,
                const std::unordered_map<const BufferNode*, Buffer>& stores)
      : loads_(loads), stores_(stores) {}

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    auto it = loads_.find(n->buffer.get());
    if (it != loads_.end() && !it->second.same_as(n->buffer)) return make_load(it->second, idx);
    return changed ? make_load(n->buffer, idx) : e;
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Expr v = mutate(n->value);
    auto it = stores_.find(n->buffer.get());
    Buffer b = it != stores_.end() ? it->second : n->buffer;
    if (!changed && v.same_as(n->value) && b.same_as(n->buffer)) return s;
    return make_store(b, idx, v);
  }
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    BlockNode out = *nb.get();
    bool changed = !nb.same_as(b);
    for (auto& r : out.reads) {
      auto it = loads_.find(r.buffer.get());
      if (it != loads_.end() && !it->second.same_as(r.buffer)) {
        r.buffer = it->second;
        changed = true;
      }
    }
    for (auto& r : out.writes) {
      auto it = stores_.find(r.buffer.get());
      if (it != stores_.end() && !it->second.same_as(r.buffer)) {
        r.buffer = it->second;
        changed = true;
      }
    }
    return changed ? make_block(std::move(out)) : nb;
  }

 private:
  const std::unordered_map<const BufferNode*, Buffer>& loads_;
  const std::unordered_map<const BufferNode*, Buffer>& stores_;
};

// Replaces buffers by others everywhere a buffer appears: loads, stores, pointer
// arguments, block regions and allocs (renaming a buffer of F means a new node, F's own
// nodes are shared with the caller's module).
class BufferSubst : public IRMutator {
 public:
  explicit BufferSubst(const std::unordered_map<const BufferNode*, Buffer>& m) : m_(m) {}
  Buffer get(const Buffer& b) const {
    auto it = m_.find(b.get());
    return it != m_.end() ? it->second : b;
  }

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Buffer b = get(n->buffer);
    return changed || !b.same_as(n->buffer) ? make_load(b, idx) : e;
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Buffer b = get(n->buffer);
    return changed || !b.same_as(n->buffer) ? make_buffer_ptr(b, idx) : e;
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool changed = false;
    auto idx = mutate_all(n->indices, &changed);
    Expr v = mutate(n->value);
    Buffer b = get(n->buffer);
    if (!changed && v.same_as(n->value) && b.same_as(n->buffer)) return s;
    return make_store(b, idx, v, n->loc);
  }
  Block mutate_block(const Block& blk) override {
    Block nb = IRMutator::mutate_block(blk);
    BlockNode out = *nb.get();
    bool changed = !nb.same_as(blk);
    for (auto* rs : {&out.reads, &out.writes})
      for (auto& r : *rs) {
        Buffer b = get(r.buffer);
        changed = changed || !b.same_as(r.buffer);
        r.buffer = b;
      }
    for (auto& a : out.allocs) {
      Buffer b = get(a);
      changed = changed || !b.same_as(a);
      a = b;
    }
    return changed ? make_block(std::move(out)) : nb;
  }

 private:
  const std::unordered_map<const BufferNode*, Buffer>& m_;
};

// Puts affine integer sub-expressions in canonical form ((v - 1) + 1 -> v). Exact for
// the index ranges at hand; everything else is left alone.
class IndexTidy : public IRMutator {
 protected:
  Expr mutate_binary(const BinaryNode* n, const Expr& e) override {
    if (is_int(e.dtype()))
      if (auto a = to_affine(e)) return affine_to_expr(*a, e.dtype());
    return IRMutator::mutate_binary(n, e);
  }
  Expr mutate_unary(const UnaryNode* n, const Expr& e) override {
    if (is_int(e.dtype()))
      if (auto a = to_affine(e)) return affine_to_expr(*a, e.dtype());
    return IRMutator::mutate_unary(n, e);
  }
  // `if_then_else(0 == 0, S[v], S_hist[-1, v])`: a guard that substituting a solved index
  // made constant picks its arm. The dead arm may hold a load at a constant index out of
  // bounds, which the parser refuses in a `reads` region: F_grad of a scan state (rewrite 6)
  // did not re-parse. Blocks whose body changed get their regions inferred again.
  Expr mutate_select(const SelectNode* n, const Expr& e) override {
    Expr c = mutate(n->cond);
    if (auto v = const_cond(c)) return mutate(*v ? n->t : n->f);
    return IRMutator::mutate_select(n, e);
  }
  Block mutate_block(const Block& b) override {
    Block r = IRMutator::mutate_block(b);
    if (r.same_as(b) || (r->init.same_as(b->init) && r->body.same_as(b->body))) return r;
    BlockNode nb = *r.get();
    set_regions(nb);
    return make_block(std::move(nb));
  }

 private:
  // The value of a condition made of integer comparisons whose sides differ by a constant,
  // && / || / ! and bool constants; nullopt when it is not constant.
  static std::optional<bool> const_cond(const Expr& c) {
    if (auto* i = c.as<IntImmNode>()) return i->value != 0;
    if (auto* u = c.as<UnaryNode>(); u && u->op == UnOp::Not) {
      auto a = const_cond(u->a);
      if (a) return !*a;
      return std::nullopt;
    }
    auto* b = c.as<BinaryNode>();
    if (!b) return std::nullopt;
    if (b->op == BinOp::And || b->op == BinOp::Or) {
      auto x = const_cond(b->a), y = const_cond(b->b);
      bool is_and = b->op == BinOp::And;
      if (x && y) return is_and ? (*x && *y) : (*x || *y);
      if ((x && *x != is_and) || (y && *y != is_and)) return !is_and;  // false && _, true || _
      return std::nullopt;
    }
    if (!is_int(b->a.dtype())) return std::nullopt;
    auto d = to_affine(b->a - b->b);
    if (!d || !d->is_const()) return std::nullopt;
    int64_t v = d->constant;
    switch (b->op) {
      case BinOp::EQ: return v == 0;
      case BinOp::NE: return v != 0;
      case BinOp::LT: return v < 0;
      case BinOp::LE: return v <= 0;
      case BinOp::GT: return v > 0;
      case BinOp::GE: return v >= 0;
      default: return std::nullopt;
    }
  }
};

class NameCollector : public IRVisitor {
 public:
  explicit NameCollector(NameGen& g) : g_(g) {}
  void visit_var(const VarNode* v) override { g_.reserve(v->name); }
  void visit_load(const LoadNode* n) override {
    g_.reserve(n->buffer->name);
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    g_.reserve(n->buffer->name);
    IRVisitor::visit_store(n);
  }
  void visit_for(const ForNode* n) override {
    g_.reserve(n->loop_var.name());
    IRVisitor::visit_for(n);
  }
  void visit_block(const BlockNode* n) override {
    g_.reserve(n->name);
    for (auto& iv : n->iter_vars) g_.reserve(iv.var.name());
    for (auto& b : n->allocs) g_.reserve(b->name);
    IRVisitor::visit_block(n);
  }
  void visit_let_stmt(const LetStmtNode* n) override {
    g_.reserve(n->var.name());
    IRVisitor::visit_let_stmt(n);
  }
  void visit_let(const LetNode* n) override {
    g_.reserve(n->var.name());
    IRVisitor::visit_let(n);
  }

 private:
  NameGen& g_;
};

bool loads_buffer(const Expr& e, const BufferNode* b) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>(); l && l->buffer.get() == b) found = true;
  });
  return found;
}

bool loads_any(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.as<LoadNode>() != nullptr; });
  return found;
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!expr_identical(a[i], b[i])) return false;
  return true;
}

bool same_extent(const Expr& a, const Expr& b) {
  int64_t x, y;
  if (is_const_int(a, &x) && is_const_int(b, &y)) return x == y;
  return expr_identical(a, b) || (a.as<VarNode>() && a.same_as(b));
}

// Per dimension, a range [lo, hi) holding every index a block writes (whole: the limits of
// int64).
using Box = std::vector<std::pair<int64_t, int64_t>>;

bool boxes_disjoint(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.size() && d < b.size(); ++d)
    if (a[d].second <= b[d].first || b[d].second <= a[d].first) return true;
  return false;
}

// The box of the elements of A a gather writes: a dimension indexed by the iter var of a
// loop it is bound to directly, over constant bounds, gets the loop's range, one indexed by a
// constant c gets [c, c + 1) (a scan's first step, `X_grad[v, 0]`, next to its other steps);
// any other dimension is whole.
Box target_box(const GatherResult& r, const Buffer& A) {
  Box box(A->ndim(), {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()});
  for (size_t d = 0; d < r.target_index.size() && d < box.size(); ++d) {
    int64_t c;
    if (is_const_int(r.target_index[d], &c)) box[d] = {c, c + 1};
    for (auto& gl : r.loops) {
      int64_t lo, hi;
      if (r.target_index[d].same_as(gl.iter_var) && gl.binding.same_as(gl.loop_var) &&
          is_const_int(gl.lo, &lo) && is_const_int(gl.hi, &hi))
        box[d] = {lo, hi};
    }
  }
  return box;
}

// FLOPs of an expression as `tirc stats` counts them (float arithmetic and intrinsics).
double expr_flops(const Expr& e) {
  double n = 0;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* b = x.as<BinaryNode>()) {
      if (is_float(b->a.dtype()) && !binop_is_logic(b->op)) n += 1;
    } else if (auto* c = x.as<CallNode>()) {
      if (is_float(c->dtype)) n += 1;
    }
  });
  return n;
}

// Points of a loop nest's box (the product of its extents: the points it iterates, whatever
// its `where`); -1 when an extent is not a constant.
double box_points(const std::vector<Expr>& extents) {
  double n = 1;
  for (auto& ext : extents) {
    int64_t e;
    if (!is_const_int(ext, &e)) return -1;
    n *= static_cast<double>(std::max<int64_t>(e, 0));
  }
  return n;
}

Expr and_all(const std::vector<Expr>& cs) {
  Expr out;
  for (auto& c : cs) out = out.defined() ? make_binary(BinOp::And, out, c) : c;
  return out;
}

// `if c1 && c2 && ... { s }`, except that a guard which loads a buffer opens an `if` of its
// own inside the earlier ones: `&&` evaluates both sides (LANGUAGE.md), and a later guard may
// load what an earlier one checks (`vj != 0` then `B[vi, vj - 1] > 0.0`, the nested arms of
// an if_then_else in a scan step: the backward step loaded B[vi, -1]).
Stmt guard_all(const std::vector<Expr>& cs, Stmt s) {
  std::vector<std::vector<Expr>> groups;
  for (auto& c : cs) {
    if (groups.empty() || loads_any(c)) groups.emplace_back();
    groups.back().push_back(c);
  }
  for (size_t k = groups.size(); k-- > 0;) s = make_if(and_all(groups[k]), s);
  return s;
}

// body inside the lets of `lets` (in order) that it needs, directly or through later lets
// (`need` holds the variables body uses and grows with those of the kept lets), and inside
// the guards of `placed`: a guard at position p goes between the p-th and the (p+1)-th let
// of the flattened list, where the forward evaluates it (the lets after it ran only where it
// held).
Stmt wrap_lets_and_guards(Stmt body, const std::vector<const std::vector<Binding>*>& lets,
                          std::unordered_set<const VarNode*>& need,
                          const std::vector<std::pair<Expr, size_t>>& placed) {
  std::vector<const Binding*> all;
  for (auto* l : lets)
    for (auto& x : *l) all.push_back(&x);
  for (size_t i = all.size() + 1; i-- > 0;) {
    for (size_t k = placed.size(); k-- > 0;)
      if (std::min(placed[k].second, all.size()) == i) {
        body = make_if(placed[k].first, body);
        collect_vars(placed[k].first, &need);
      }
    if (i == 0) break;
    const Binding* b = all[i - 1];
    if (!need.count(b->var.get())) continue;
    collect_vars(b->value, &need);
    body = make_let_stmt(b->var, b->value, body);
  }
  return body;
}

// A unit's own guards (`guards`, the forward evaluating gpos[k] lets of the first list before
// guard k): those that use a let go among the lets (*placed); the others wrap everything
// (*outer).
void split_own_guards(const std::vector<Expr>& guards, const std::vector<size_t>& gpos,
                      const std::vector<const std::vector<Binding>*>& lets, std::vector<Expr>* outer,
                      std::vector<std::pair<Expr, size_t>>* placed) {
  std::unordered_set<const VarNode*> top;
  for (auto* l : lets)
    for (auto& b : *l) top.insert(b.var.get());
  for (size_t k = 0; k < guards.size(); ++k) {
    std::unordered_set<const VarNode*> vs;
    collect_vars(guards[k], &vs);
    bool uses = false;
    for (auto* v : vs) uses = uses || top.count(v);
    if (uses && k < gpos.size())
      placed->push_back({guards[k], gpos[k]});
    else
      outer->push_back(guards[k]);
  }
}

// A let value stored to T[index] (the tapes of reverse_region), or, when `leaf` is defined,
// the term of the carried leaf whose load is `leaf` (without its negation), stored next to
// that leaf's own store under the same guards (tape_equal_terms).
struct TapeStore {
  Buffer T;
  std::vector<Expr> index;
  Var var;
  Expr leaf;
};

// A leaf term without its negations (outside its let chain and of the chain's value; *neg:
// whether an odd number was removed): what a tape of tape_equal_terms stores.
Expr tape_core(const Expr& e, bool* neg) {
  *neg = false;
  Expr x = e;
  if (auto* n = x.as<UnaryNode>(); n && n->op == UnOp::Neg) {
    *neg = true;
    x = n->a;
  }
  std::vector<std::pair<Var, Expr>> chain;
  Expr v = x;
  while (auto* l = v.as<LetNode>()) {
    chain.push_back({l->var, l->value});
    v = l->body;
  }
  auto* n = v.as<UnaryNode>();
  if (!n || n->op != UnOp::Neg) return x;
  *neg = !*neg;
  v = n->a;
  for (size_t c = chain.size(); c-- > 0;) v = make_let(chain[c].first, chain[c].second, v);
  return v;
}

// `A[J] += term` for every leaf (A = target(leaf load)), each under the leaf's own guards
// (those after the prefix `guards` that the caller applies around everything), in the lets
// of `lets` that the terms need; undefined when there is no leaf. Used inside the backward
// scans, where the cotangents are updated step by step. `tapes`: stores of let values, not
// guarded by the leaves' own guards, in the same lets; `placed`: guards among the lets (as
// wrap_lets_and_guards).
Stmt accumulate_leaves(const std::vector<LeafTerm>& leaves, const std::vector<Expr>& guards,
                       const std::vector<const std::vector<Binding>*>& lets,
                       const std::function<Buffer(const LoadNode*)>& target,
                       const std::vector<TapeStore>& tapes = {},
                       const std::vector<std::pair<Expr, size_t>>& placed = {}) {
  std::vector<Stmt> stmts;
  std::unordered_set<const VarNode*> need;
  for (auto& t : tapes) {
    if (t.leaf.defined()) continue;
    stmts.push_back(make_store(t.T, t.index, t.var));
    need.insert(t.var.get());
  }
  // Consecutive leaves whose own guards start with the same guard P (or have none) form one
  // `if P`; the let chains of their terms (the temps of an if_then_else arm, which live in
  // the arm's `let` expressions) become let statements bound once inside it: a backward scan
  // step whose carried reads sit in one arm (Viterbi's `max(max(D[t-1, 0] + T[0, j], ..), ..)`,
  // a CTC alpha step) recomputed the arm's lets once per carried read. Lifted are the lets of
  // the leaves guarded by exactly P (the forward evaluates them wherever P holds; the lets of
  // a leaf under more guards may be guarded loads), and only when none loads a buffer the
  // group stores (they now run before all of its stores) and a let var bound by two chains
  // has the same value in both. The other guards stay around their own store.
  struct LeafStore {
    Buffer A;
    std::vector<Expr> idx, own;
    bool neg = false;
    Expr term, rest;  // rest: term without its leading let chain
    std::vector<std::pair<Var, Expr>> chain;
    const TapeStore* tape = nullptr;  // also store the term here
  };
  std::vector<LeafStore> ls;
  for (auto& g : leaves) {
    auto* ld = g.load.as<LoadNode>();
    LeafStore x;
    x.A = target(ld);
    x.idx = ld->indices;
    x.term = g.term;
    for (auto& t : tapes)
      if (t.leaf.defined() && t.leaf.same_as(g.load)) x.tape = &t;
    if (x.tape)
      for (auto& e : x.tape->index) collect_vars(e, &need);
    if (auto* n = g.term.as<UnaryNode>(); n && n->op == UnOp::Neg) {
      x.neg = true;
      x.term = n->a;
    }
    for (size_t i = 0; i < g.guards.size(); ++i)
      if (i >= guards.size() || !expr_identical(g.guards[i], guards[i])) x.own.push_back(g.guards[i]);
    x.rest = x.term;
    while (auto* l = x.rest.as<LetNode>()) {
      x.chain.push_back({l->var, l->value});
      x.rest = l->body;
    }
    collect_vars(g.term, &need);
    for (auto& e : x.own) collect_vars(e, &need);
    for (auto& e : x.idx) collect_vars(e, &need);
    ls.push_back(std::move(x));
  }
  auto store_of = [](const LeafStore& x, const Expr& term) {
    Expr cur = make_load(x.A, x.idx);
    Stmt st = make_store(x.A, x.idx, x.neg ? cur - term : cur + term);
    if (!x.tape) return st;
    // The term is a let chain around a value (arm temps): bind it once for both stores.
    if (term.as<LetNode>()) {
      std::vector<std::pair<Var, Expr>> chain;
      Expr v = term;
      while (auto* l = v.as<LetNode>()) {
        chain.push_back({l->var, l->value});
        v = l->body;
      }
      bool inner_neg = false;
      Stmt both = make_seq({make_store(x.A, x.idx, x.neg ? cur - v : cur + v),
                            make_store(x.tape->T, x.tape->index, tape_core(v, &inner_neg))});
      for (size_t c = chain.size(); c-- > 0;) both = make_let_stmt(chain[c].first, chain[c].second, both);
      return both;
    }
    bool inner_neg = false;
    return make_seq({st, make_store(x.tape->T, x.tape->index, tape_core(term, &inner_neg))});
  };
  auto key_same = [](const LeafStore& a, const LeafStore& b) {
    if (a.own.empty() || b.own.empty()) return a.own.empty() && b.own.empty();
    return expr_identical(a.own[0], b.own[0]);
  };
  for (size_t i = 0; i < ls.size();) {
    size_t j = i + 1;
    while (j < ls.size() && key_same(ls[i], ls[j])) ++j;
    const size_t np = ls[i].own.empty() ? 0 : 1;  // guards in P
    std::vector<std::pair<Var, Expr>> lifted;
    bool ok = j - i >= 2;
    for (size_t k = i; k < j && ok; ++k) {
      if (ls[k].own.size() != np) continue;
      for (auto& [v, e] : ls[k].chain) {
        bool found = false;
        for (auto& [w, f] : lifted)
          if (w.same_as(v)) {
            found = true;
            ok = ok && expr_identical(e, f);
          }
        if (!found) lifted.push_back({v, e});
      }
    }
    std::unordered_set<const BufferNode*> written;
    for (size_t k = i; k < j; ++k) written.insert(ls[k].A.get());
    for (auto& le : lifted)
      for_each_expr(le.second, [&](const Expr& x) {
        if (auto* l = x.as<LoadNode>(); l && written.count(l->buffer.get())) ok = false;
      });
    std::unordered_map<const VarNode*, const Expr*> lifted_val;
    for (auto& le : lifted) lifted_val[le.first.get()] = &le.second;
    for (size_t k = i; k < j && ok; ++k)  // a var bound again with another value: keep as is
      for (auto& [v, e] : ls[k].chain)
        if (auto it = lifted_val.find(v.get()); it != lifted_val.end() && !expr_identical(e, *it->second))
          ok = false;
    if (!ok || lifted.empty()) {
      for (size_t k = i; k < j; ++k) {
        Stmt st = store_of(ls[k], ls[k].term);
        stmts.push_back(ls[k].own.empty() ? st : guard_all(ls[k].own, st));
      }
      i = j;
      continue;
    }
    std::vector<Stmt> body;
    for (size_t k = i; k < j; ++k) {
      Expr t = ls[k].rest;
      for (size_t c = ls[k].chain.size(); c-- > 0;)
        if (!lifted_val.count(ls[k].chain[c].first.get()))
          t = make_let(ls[k].chain[c].first, ls[k].chain[c].second, t);
      Stmt st = store_of(ls[k], t);
      std::vector<Expr> more(ls[k].own.begin() + np, ls[k].own.end());
      body.push_back(more.empty() ? st : guard_all(more, st));
    }
    Stmt grp = make_seq(body);
    for (size_t c = lifted.size(); c-- > 0;) grp = make_let_stmt(lifted[c].first, lifted[c].second, grp);
    if (np) grp = make_if(ls[i].own[0], grp);
    stmts.push_back(grp);
    i = j;
  }
  if (stmts.empty()) return Stmt();
  Stmt body = wrap_lets_and_guards(make_seq(stmts), lets, need, placed);
  return body;
}

class GradientBuilder {
 public:
  // cot_names: the name of each output's cotangent param (`<output>_grad` of F's output
  // as the user wrote it: claim_interface_names may have renamed the output itself).
  GradientBuilder(const FunctionNode& f, const std::vector<std::string>& wrt, const GradientOptions& opts,
                  std::vector<std::string> cot_names)
      : f_(f), opts_(opts), cot_names_(std::move(cot_names)) {
    NameCollector nc(names_);
    nc.visit(f.body);
    for (auto& p : f.params) names_.reserve(p.name());
    for (auto& o : f.outputs) names_.reserve(o->name);
    names_.reserve(f.name);
    resolve_wrt(wrt);
    // The interface names are F_grad's exactly; no internal buffer may take them.
    for (auto& n : cot_names_) names_.reserve(n);
    for (auto& w : wrt_) names_.reserve(w->name + "_grad");
  }

  Function build();

 private:
  void resolve_wrt(const std::vector<std::string>& wrt);
  void collect(const Stmt& s, std::vector<PathElem>& path);
  void analyze(Unit& u);
  void analyze_scan(Unit& u);
  // Binds u to the loop of its iter var j (loop var plus a constant); false (or an Error when
  // `must`) if there is none.
  bool locate_step(Unit& u, int j, bool must);
  void find_regions();
  void analyze_region(const Region& r);
  void reverse_region(const Region& r);
  // Tapes of a step's values for the contributions deferred after a region's loop: the
  // step block computes them anyway (it has in-loop leaves), so the let values with FLOPs
  // that the deferred terms use are stored per step point (indexed like u's store, I_ad)
  // and the deferred terms load them instead of recomputing the step. Rewrites the terms
  // of the deferred leaves in *leaves; returns the stores for the step block (none when u
  // has no in-loop leaf or no deferred leaf).
  // A deferred leaf whose term equals a carried leaf's term under the same guards (the
  // carried read and the deferred one are operands of one sum: CRF's `Al[t - 1, k] + Tr[k, j]`)
  // loads the value the backward step stores for the carried leaf (a tape next to that store)
  // instead of recomputing it. Appends to *tapes and rewrites the terms of *deferred.
  void tape_equal_terms(const Unit& u, const std::vector<Expr>& I_ad, const std::vector<LeafTerm>& carried,
                        std::vector<LeafTerm>* deferred, std::vector<TapeStore>* tapes);
  std::vector<TapeStore> tape_deferred(const Unit& u, const Scope& S, const std::vector<Binding>& adj_lets,
                                       const std::vector<Expr>& I_ad,
                                       const std::function<bool(const LeafTerm&)>& in_loop,
                                       std::vector<LeafTerm>* leaves);
  std::vector<Region> regions_;
  // The adjoint of a scan's reads of its own earlier steps: a block over u's iteration space
  // whose scan var runs backwards, adding each step's cotangent into the steps it read.
  // `guards`: the conditions of u's body around its store (they guard the seed load too).
  // `tapes`: let values the step also stores for the deferred gathers (tape_deferred).
  void emit_reverse_scan(Unit& u, const Buffer& G, const std::vector<const std::vector<Binding>*>& lets,
                         const std::vector<LeafTerm>& carried, const std::vector<Expr>& guards,
                         const std::vector<size_t>& gpos, const std::vector<TapeStore>& tapes = {});
  void flatten_body(const BlockNode& b, const Stmt& s, std::vector<Unit::Item>& items,
                    std::vector<std::pair<std::vector<Unit::Item>, const StoreNode*>>& out);
  int ngroups_ = 0;
  void assign_versions();
  void reverse_unit(Unit& u);
  // `gpos`: for the leading guards of the leaf that are u's own (its body's `if`s, the
  // once-guards, the init's reduce-var conditions), the number of lets of the first list
  // that the forward evaluates before each: such a guard also guards the lets after it (at
  // its position when it uses a let, else around everything). The other guards come from
  // `if_then_else` arms of the stored value, which the forward evaluates after all its lets:
  // when they read a buffer (data-dependent), they guard the store only, so that the lets
  // stay unconditional and can be hoisted (hoist.h).
  void emit_contribution(Unit& u, const std::vector<const std::vector<Binding>*>& lets, const LeafTerm& leaf,
                         const std::vector<size_t>& gpos);
  // Whether the gather blocks of one contribution iterate over many more points than the
  // forward loop nest (whose scatter visits each contributing point once): adaptive
  // pooling's window start `i * 5 // 3 + r` leaves quotient and remainder vars free in the
  // inverted map, a box of 51030 points (its `where` keeps 144) for 162 forward points. Then
  // the scatter is emitted instead. Boxes, not predicates, are compared (the loops iterate
  // the box); a gather up to kGatherOverScatter times larger is kept, as it runs in parallel
  // without atomics (a valid convolution's gather box exceeds the forward's near borders).
  bool gather_costs_more(const GatherInput& gi, const std::vector<GatherResult>& results) const;
  // Max/min: the gradient goes to the arg-extremum only: a block over the spatial points
  // that decodes the reduce point from K (a scatter: windows may overlap).
  void emit_argext(Unit& u, const std::vector<const std::vector<Binding>*>& lets, const LeafTerm& leaf,
                   const Buffer& K, const std::vector<Expr>& I);

  Buffer new_buffer(const std::string& base, const Buffer& like, DType t) {
    Buffer b(names_.unique(base), t, like->shape, "global");
    allocs_.push_back(b);
    return b;
  }
  Buffer adj_read(const Buffer& ver) {
    auto it = adj_.find(ver.get());
    if (it != adj_.end()) return it->second;
    auto jt = adj_param_.find(ver.get());
    if (jt != adj_param_.end()) return jt->second;
    return Buffer();
  }
  Buffer adj_write(const Buffer& ver);
  Stmt elementwise(const std::string& name, const Buffer& like,
                   const std::function<Stmt(const std::vector<Expr>&)>& body);
  // Over the elements iv of u's buffer: the condition that u does not write iv, when u's
  // iter vars cover the buffer pointwise and only its `where` / guards (on the iteration
  // point, no loads) restrict it; undefined otherwise.
  Expr unwritten(const Unit& u, const std::vector<Expr>& iv);
  // Whether u is a scan step whose reads of Y are all at earlier steps (the scan index minus
  // a positive constant): its version copy then needs only the elements it leaves alone (the
  // others it writes before reading them; copying them read elements no block had written).
  bool reads_only_earlier_steps(const Unit& u) const;
  // A block over u's forward loop nest (same bindings and predicate), fresh iter vars.
  Stmt clone_block(const Unit& u, const std::string& name, const std::function<Stmt()>& body,
                   const std::function<Stmt()>& init, bool all_reduce, Annotations ann = {});
  Stmt wrap_path(const Unit& u, Stmt inner);
  // Wraps inner in u.path[from, to) (outermost first).
  Stmt wrap_path_range(const Unit& u, Stmt inner, size_t from, size_t to);
  Stmt body_with_items(const Unit& u, Stmt inner, bool guards);
  Expr rename_ad(const Unit& u, const Expr& e) { return BufferRenamer(u.read_ver, {}).mutate(e); }
  Expr reduce_index(const Unit& u);
  void emit(Stmt s) {
    if (opts_.simplify && !std::getenv("TIRC_AD_NO_SIMPLIFY")) s = IndexTidy().mutate(s);
    for_each_expr(s, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) bwd_loads_.insert(l->buffer.get());
    });
    if (!boxes_.empty()) {
      // Any write ends the tracking of a buffer (emit_contribution records its own boxes
      // after emitting).
      std::unordered_set<const BufferNode*> w;
      stored_buffers(s, &w);
      for (auto* b : w) boxes_.erase(b);
    }
    bwd_.push_back(s);
    bwd_group_.push_back(cur_group_);
  }
  // Whether F_grad recomputes the forward block that writes version v anyway: an adjoint
  // block emitted so far reads v, or a forward block that reads v (or updates it in place)
  // is recomputed itself. Exact once every later unit is reversed (an earlier unit reads
  // only earlier versions); conservative (true) for recurrences.
  bool version_needed(const BufferNode* v);
  // Leaves of a spatial unit read at exactly the unit's iteration point (distinct iter vars,
  // one per dimension, every iter var used): their adjoint blocks would all be the forward
  // loop nest, so they are emitted as one block with one store per leaf (the lets they
  // share, e.g. the derivative of `abs(P - T)` for both P and T, computed once). Returns
  // the leaves left for emit_contribution.
  // Splits groups into those leaves (`mine`, at least two, or none) and the rest.
  void split_pointwise(const Unit& u, const std::vector<LeafTerm>& groups, std::vector<LeafTerm>* mine,
                       std::vector<LeafTerm>* rest) const;
  // Leaves read at an injective index of u's point (a permutation such as W[(vi + 2) % 8],
  // a reversal, a shift onto a larger buffer) whose separate gather blocks would recompute
  // lets the pointwise block computes anyway: moved from *rest to *scatter (and pointwise
  // ones left in *rest to *mine), to be stored by the pointwise block at the permuted
  // element (each point its own element: no conflict, no atomics), when that costs fewer
  // FLOPs. A leaf whose adjoint buffer another leaf of u also writes stays a gather.
  void split_injective(const Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                       std::vector<LeafTerm>* mine, std::vector<LeafTerm>* rest,
                       std::vector<LeafTerm>* scatter);
  // Whether ld's index map is injective over u's iteration box (its gather has no reduce
  // loop); *bijective: also onto the buffer (constant sizes, as many points as elements).
  bool injective_load(const Unit& u, const LoadNode* ld, bool* bijective) const;
  // Whether several loads of one buffer (leaves of u) reach disjoint elements across all of
  // u's points, in the form normalisation can split again (one shifted dimension).
  bool stores_apart(const Unit& u, const std::vector<const LoadNode*>& loads) const;
  // `gpos`: u's own guards, leading and common to the leaves, as for emit_contribution.
  // `scatter`: leaves stored at their (injective) load index (split_injective).
  void emit_pointwise(Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                      const std::vector<LeafTerm>& mine, const std::vector<size_t>& gpos,
                      const std::vector<LeafTerm>& scatter = {});
  // Spatial unit whose stored value (the last let of S) the adjoints use: whether they read
  // it back from Y (F_grad then recomputes Y's forward block, if it does not anyway) rather
  // than recompute it inline in each adjoint block that needs it, whichever costs fewer FLOPs.
  // FLOPs per forward point of the adjoint blocks of these leaf terms (each block: the lets
  // its terms need, once, and its terms and guards).
  double leaf_terms_cost(const std::vector<const std::vector<Binding>*>& lets,
                         const std::vector<std::vector<LeafTerm>>& blocks) const;
  bool load_stored_value(const Unit& u, const Scope& S, const std::vector<Binding>& adj_lets,
                         const std::vector<std::vector<LeafTerm>>& blocks);
  // Whether the load's index map is a bijection of u's iteration box onto the buffer (the
  // box is the loop nest: trivial bindings, no predicate or conditions).
  bool pointwise_load(const Unit& u, const LoadNode* ld) const;
  // A spatial unit without reduce or scan iter vars, `where`, enclosing `if` or once-guards:
  // its adjoints of reads at its own point can share one block over its loop nest.
  bool pointwise_unit(const Unit& u) const;
  // A sum reduction whose reads may share one adjoint block over its nest (split_injective):
  // no scan, no `where`, no `if` on the path, no repeat guards.
  bool sum_sharing_unit(const Unit& u) const;
  // Set while clone_block builds a block whose instances write disjoint elements although u's
  // iter vars include reduce vars (the shared adjoint block of a sum reduction): all spatial.
  bool clone_spatial_ = false;

  const FunctionNode& f_;
  GradientOptions opts_;
  std::vector<std::string> cot_names_;
  NameGen names_;
  std::vector<Buffer> wrt_;
  std::unordered_set<const BufferNode*> inputs_, active_;
  std::vector<Unit> units_;
  std::unordered_map<const BufferNode*, const BufferNode*> orig_of_;  // version -> original
  std::unordered_map<const BufferNode*, Buffer> adj_, adj_param_;
  std::vector<Buffer> allocs_;
  std::vector<Stmt> bwd_;
  // Per statement of bwd_: the group of the forward block whose reversal emitted it (-1:
  // none, e.g. the zero-initialisation of a result). Only a block's own adjoint blocks fuse.
  std::vector<int> bwd_group_;
  int cur_group_ = -1;
  std::vector<Param> cot_params_;
  std::unordered_map<const BufferNode*, int> nversions_;
  // Adjoint buffers whose zero-initialisation (index in bwd_) no block has built on yet.
  std::unordered_map<const BufferNode*, size_t> zero_init_;
  // Zero-initialised adjoint buffers written since only by gathers: boxes holding every
  // element written (emit_contribution; any other write erases the entry).
  std::unordered_map<const BufferNode*, std::vector<Box>> boxes_;
  // Buffers loaded by the statements of bwd_ (version_needed).
  std::unordered_set<const BufferNode*> bwd_loads_;
  // Version -> units whose forward block reads it or updates it (built on first use).
  std::unordered_map<const BufferNode*, std::vector<size_t>> readers_;
  bool readers_built_ = false;
};

void GradientBuilder::resolve_wrt(const std::vector<std::string>& wrt) {
  for (auto& p : f_.params)
    if (p.is_buffer()) inputs_.insert(p.buffer.get());
  if (wrt.empty()) {
    for (auto& p : f_.params)
      if (p.is_buffer() && is_float(p.buffer->dtype)) wrt_.push_back(p.buffer);
    return;
  }
  for (auto& name : wrt) {
    const Param* found = nullptr;
    for (auto& p : f_.params)
      if (p.name() == name) found = &p;
    if (!found || !found->is_buffer() || !is_float(found->buffer->dtype)) {
      bool is_out = false;
      for (auto& o : f_.outputs)
        if (o->name == name) is_out = true;
      throw Error("gradient of " + f_.name + ": --wrt " + name + " is not a float input buffer of " +
                  f_.name + (is_out ? " (it is an output)" : ""));
    }
    for (auto& w : wrt_)
      if (w.same_as(found->buffer))
        throw Error("gradient of " + f_.name + ": --wrt " + name + " is listed twice");
    wrt_.push_back(found->buffer);
  }
}

void GradientBuilder::collect(const Stmt& s, std::vector<PathElem>& path) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) collect(x, path);
      return;
    case StmtKind::For: {
      path.push_back({s});
      collect(s.as<ForNode>()->body, path);
      path.pop_back();
      return;
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      path.push_back({s, false});
      collect(n->then_case, path);
      path.back().else_branch = true;
      collect(n->else_case, path);
      path.pop_back();
      return;
    }
    case StmtKind::LetStmt: {
      path.push_back({s});
      collect(s.as<LetStmtNode>()->body, path);
      path.pop_back();
      return;
    }
    case StmtKind::BlockRealize: {
      auto* br = s.as<BlockRealizeNode>();
      const BlockNode* blk = br->block.get();
      // normalize_for_autodiff moves any other init to a block of its own when that is
      // sound (docs/autodiff.md, Normalisation, rewrite 7); what is left here is refused.
      const std::string why =
          " (it moves to a block of its own only when each instance of the block runs once and "
          "its spatial iterations touch disjoint elements of the buffers it writes)";
      if (blk->init.defined()) {
        struct HasFor : IRVisitor {
          bool found = false;
          void visit_for(const ForNode*) override { found = true; }
        } hf;
        hf.visit(blk->init);
        if (hf.found) throw Error("block " + blk->name + ": a loop in init is not supported" + why);
      }
      std::vector<std::pair<std::vector<Unit::Item>, const StoreNode*>> stores;
      std::vector<Unit::Item> items;
      flatten_body(*blk, blk->body, items, stores);
      if (stores.empty()) throw Error("block " + blk->name + ": empty block body");
      if (blk->init.defined()) {
        std::vector<std::pair<std::vector<Unit::Item>, const StoreNode*>> inits;
        std::vector<Unit::Item> its;
        flatten_body(*blk, blk->init, its, inits);
        for (auto& [itv, st] : inits) {
          bool updated = false;
          for (auto& [_, bs] : stores) updated = updated || bs->buffer.same_as(st->buffer);
          if (!updated)
            throw Error("block " + blk->name + ": init stores to " + st->buffer->name +
                        ", which the block body does not update" + why);
        }
      }
      for (size_t i = 0; i < stores.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (stores[i].second->buffer.same_as(stores[j].second->buffer))
            throw Error("block " + blk->name + ": several stores to " + stores[i].second->buffer->name +
                        " in one block body are not supported");
      for (size_t i = 0; i < stores.size(); ++i) {
        // The stores of one block are independent updates: none may read another's result.
        // An integer store may (an argmax `A = select(v > Y, k, A)` next to `Y = max(Y, v)`):
        // it carries no gradient, and the forward recomputation runs the block as written.
        for (size_t j = 0; j < stores.size() && is_float(stores[i].second->buffer->dtype); ++j) {
          if (i == j) continue;
          const BufferNode* other = stores[j].second->buffer.get();
          bool reads = loads_buffer(stores[i].second->value, other);
          for (auto& it : stores[i].first) reads = reads || loads_buffer(it.value, other);
          if (reads) {
            // A scan step's read at a non-affine index of the scan var (the clamp idiom
            // `Y[max(vt - 1, 0)]`) is what kept rewrite 9 from splitting the stores (h5 r19 F3):
            // name it.
            std::string hint;
            std::vector<const LoadNode*> ls;
            auto collect = [&](const Expr& e) {
              for_each_expr(e, [&](const Expr& x) {
                if (auto* l = x.as<LoadNode>())
                  if (l->buffer.get() == other) ls.push_back(l);
              });
            };
            collect(stores[i].second->value);
            for (auto& it : stores[i].first) collect(it.value);
            for (auto* l : ls)
              for (auto& ix : l->indices) {
                std::string sv;
                for_each_expr(ix, [&](const Expr& x) {
                  if (auto* v = x.as<VarNode>())
                    for (auto& iv : blk->iter_vars)
                      if (iv.kind == IterKind::Scan && iv.var.get() == v) sv = v->name;
                });
                if (hint.empty() && !sv.empty() && !to_affine(ix))
                  hint = " (it reads " + print_expr(make_load(l->buffer, l->indices)) + ", at " +
                         print_expr(ix) +
                         ": a scan step must read an earlier step at the scan var plus a constant, as " + sv +
                         " - 1 under `if_then_else(" + sv + " == 0, .., ..)`)";
              }
            throw Error("block " + blk->name + ": a store reads " + other->name +
                        ", which another store of the same block writes" + hint);
          }
        }
        Unit u;
        u.br = br;
        u.blk = blk;
        u.path = path;
        u.items = stores[i].first;
        u.store = stores[i].second;
        u.group = ngroups_;
        units_.push_back(std::move(u));
      }
      ++ngroups_;
      return;
    }
    case StmtKind::Store:
      throw Error("gradient of " + f_.name + ": a store to " + s.as<StoreNode>()->buffer->name +
                  " outside of any block is not supported");
    case StmtKind::Evaluate:
      throw Error("gradient of " + f_.name + ": call_extern(\"" + s.as<EvaluateNode>()->extern_name +
                  "\") is not differentiable");
  }
}

void GradientBuilder::flatten_body(const BlockNode& b, const Stmt& s, std::vector<Unit::Item>& items,
                                   std::vector<std::pair<std::vector<Unit::Item>, const StoreNode*>>& out) {
  const std::string where = "block " + b.name + ": ";
  if (!s.defined()) return;
  if (auto* l = s.as<LetStmtNode>()) {
    items.push_back({true, l->var, l->value});
    flatten_body(b, l->body, items, out);
    items.pop_back();
  } else if (auto* i = s.as<IfThenElseStmtNode>()) {
    if (i->else_case.defined()) throw Error(where + "if/else in a block body is not supported");
    items.push_back({false, Var(), i->cond});
    flatten_body(b, i->then_case, items, out);
    items.pop_back();
  } else if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts) flatten_body(b, x, items, out);
  } else if (auto* st = s.as<StoreNode>()) {
    out.push_back({items, st});
  } else if (s.as<BlockRealizeNode>()) {
    throw Error(where + "nested blocks are not supported");
  } else if (auto* ev = s.as<EvaluateNode>()) {
    throw Error(where + "call_extern(\"" + ev->extern_name + "\") is not differentiable");
  } else {
    throw Error(where + "loops inside a block body are not supported");
  }
}

void GradientBuilder::analyze(Unit& u) {
  const BlockNode& b = *u.blk;
  const std::string where = "block " + b.name + ": ";
  for (size_t j = 0; j < b.iter_vars.size(); ++j) {
    const IterVar& iv = b.iter_vars[j];
    if (iv.kind == IterKind::Scan) {
      if (u.scan_iv >= 0) throw Error(where + "several scan iter vars in one block are not supported");
      u.scan_iv = static_cast<int>(j);
    }
    if (iv.kind == IterKind::Opaque)
      throw Error(where +
                  "opaque iter vars are not supported (an opaque var is read as spatial when the "
                  "iterations write disjoint elements, or as reduce when every store accumulates "
                  "into an element that does not depend on it)");
    if (iv.kind == IterKind::Reduce) u.reduce_iters.push_back(iv);
  }
  if (!b.allocs.empty()) throw Error(where + "block-local allocations are not supported");
  u.Y = u.store->buffer;
  const std::vector<Expr>& I = u.store->indices;
  auto is_self = [&](const Expr& e) {
    auto* l = e.as<LoadNode>();
    return l && l->buffer.same_as(u.Y) && same_indices(l->indices, I);
  };
  if (b.init.defined()) {
    if (u.reduce_iters.empty()) throw Error(where + "init without reduce iter vars is not supported");
    std::vector<std::pair<std::vector<Unit::Item>, const StoreNode*>> inits;
    std::vector<Unit::Item> its;
    flatten_body(b, b.init, its, inits);
    const StoreNode* st = nullptr;
    for (auto& [itv, sn] : inits)
      if (sn->buffer.same_as(u.Y)) {
        st = sn;
        for (auto& it : itv) {
          if (!it.is_let) throw Error(where + "an if in init is not supported");
          u.init_lets.push_back({it.var, it.value});
        }
      }
    if (!st || !st->buffer.same_as(u.Y) || !same_indices(st->indices, I))
      throw Error(where + "init must be a single store to the element the body updates");
    u.init_store = st;
    // (A scan step's init may read earlier steps: checked by analyze_region.)
    if (u.scan_iv < 0 && loads_buffer(st->value, u.Y.get()))
      throw Error(where + "init reads the buffer it initialises");
  }
  const Expr& v = u.store->value;
  std::unordered_set<const VarNode*> red;
  for (auto& iv : u.reduce_iters) red.insert(iv.var.get());
  auto uses_red = [&](const Expr& e) {
    std::unordered_set<const VarNode*> vs;
    collect_vars(e, &vs);
    for (auto* x : vs)
      if (red.count(x)) return true;
    return false;
  };
  bool red_used = false;
  for (auto& it : u.items) red_used = red_used || uses_red(it.value);
  for (auto& i : I) red_used = red_used || uses_red(i);
  red_used = red_used || uses_red(v);
  if (!is_float(u.Y->dtype)) {
    // Integer results carry no gradient: the block is only recomputed when needed.
    u.inactive = true;
    u.kind = u.reduce_iters.empty() || !u.init_store ? RedKind::Spatial : RedKind::Sum;
    u.update = v;
    if (loads_buffer(v, u.Y.get())) u.self_read = true;
    for (auto& it : u.items)
      if (loads_buffer(it.value, u.Y.get())) u.self_read = true;
  } else if (u.reduce_iters.empty() || (!red_used && !u.init_store && !loads_buffer(v, u.Y.get()))) {
    // Spatial, or reduce vars that play no role (the same store repeated): counted once.
    u.kind = RedKind::Spatial;
    u.update = v;
    for (auto& it : u.items)
      if (loads_buffer(it.value, u.Y.get())) u.self_read = true;
    if (loads_buffer(v, u.Y.get())) u.self_read = true;
    if (auto* bin = v.as<BinaryNode>();
        bin && u.reduce_iters.empty() && !u.init_store && (bin->op == BinOp::Add || bin->op == BinOp::Sub)) {
      bool sa = is_self(bin->a), sb = bin->op == BinOp::Add && is_self(bin->b);
      Expr E = sa ? bin->b : bin->a;
      // E may read Y elsewhere (`T[i + 2, j] += T[i, j]`): those reads see the previous
      // version, whose adjoint gets their gather on top of the whole pass-through.
      bool clean = sa || sb;
      for (auto& it : u.items) clean = clean && !loads_buffer(it.value, u.Y.get());
      if (clean) {
        u.accum_E = E;
        u.accum_neg = bin->op == BinOp::Sub;
      }
    }
    for (auto& iv : u.reduce_iters)
      u.once.push_back(make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype())));
  } else {
    auto* bin = v.as<BinaryNode>();
    Expr E;
    if (bin) {
      bool sa = is_self(bin->a), sb = is_self(bin->b);
      switch (bin->op) {
        case BinOp::Add:
          if (sa || sb) u.kind = RedKind::Sum, E = sa ? bin->b : bin->a;
          break;
        case BinOp::Sub:
          if (sa) u.kind = RedKind::Sum, u.negate = true, E = bin->b;
          break;
        case BinOp::Mul:
          if (sa || sb) u.kind = RedKind::Prod, E = sa ? bin->b : bin->a;
          break;
        case BinOp::Max:
          if (sa || sb) u.kind = RedKind::Max, E = sa ? bin->b : bin->a;
          break;
        case BinOp::Min:
          if (sa || sb) u.kind = RedKind::Min, E = sa ? bin->b : bin->a;
          break;
        default: break;
      }
      if (!E.defined() && (bin->op == BinOp::Add || bin->op == BinOp::Sub || bin->op == BinOp::Mul ||
                           bin->op == BinOp::Max || bin->op == BinOp::Min)) {
        // Y = (Y + a) + b and the like: the chain of one associative, commutative operator
        // (+ with -) that contains the accumulator once, positively. Only the derivative
        // uses E = a + b; the forward recomputation keeps the block as written.
        BinOp op = bin->op == BinOp::Sub ? BinOp::Add : bin->op;
        std::vector<std::pair<Expr, bool>> terms;  // (term, negated)
        std::function<void(const Expr&, bool)> flatten = [&](const Expr& e, bool neg) {
          auto* x = e.as<BinaryNode>();
          if (x && (x->op == op || (op == BinOp::Add && x->op == BinOp::Sub))) {
            flatten(x->a, neg);
            flatten(x->b, x->op == BinOp::Sub ? !neg : neg);
          } else {
            terms.push_back({e, neg});
          }
        };
        flatten(v, false);
        int selves = 0;
        bool self_pos = false;
        for (auto& [t, neg] : terms)
          if (is_self(t)) ++selves, self_pos = !neg;
        if (selves == 1 && self_pos) {
          for (auto& [t, neg] : terms) {
            if (is_self(t)) continue;
            if (!E.defined())
              E = neg ? make_unary(UnOp::Neg, t) : t;
            else if (op == BinOp::Add)
              E = neg ? E - t : E + t;
            else
              E = make_binary(op, E, t);
          }
          u.kind = op == BinOp::Add   ? RedKind::Sum
                   : op == BinOp::Mul ? RedKind::Prod
                   : op == BinOp::Max ? RedKind::Max
                                      : RedKind::Min;
        }
      }
    }
    if (!E.defined())
      throw Error(where + "unsupported reduction update of " + u.Y->name +
                  " (differentiable reductions: Y = Y + E, Y - E, Y * E, max(Y, E), min(Y, E))");
    if (u.scan_iv < 0) {
      if (loads_buffer(E, u.Y.get()))
        throw Error(where + "the reduction reads " + u.Y->name + " inside its update");
      for (auto& it : u.items)
        if (loads_buffer(it.value, u.Y.get()))
          throw Error(where + "the reduction reads " + u.Y->name + " inside its update");
    }
    u.update = E;
    bool scatter_sum = u.kind == RedKind::Sum && !u.init_store;  // Y[f(v)] += E(v): any f
    for (auto& i : I)
      if (!scatter_sum && uses_red(i)) throw Error(where + "the element written depends on reduce iter vars");
    if (!u.init_store) u.self_read = true;
  }
  // Full overwrite: trivially bound spatial iter vars covering the shape, no conditions.
  bool full = I.size() == u.Y->ndim();
  if (!is_const_int(u.br->predicate) || !is_one(u.br->predicate)) {
    int64_t pv;
    full = full && is_const_int(u.br->predicate, &pv) && pv != 0;
  }
  for (auto& pe : u.path)
    if (pe.s.as<IfThenElseStmtNode>()) full = false;
  for (auto& it : u.items)
    if (!it.is_let) full = false;
  std::unordered_set<const VarNode*> seen;
  for (size_t d = 0; full && d < I.size(); ++d) {
    auto* vn = I[d].as<VarNode>();
    if (!vn || seen.count(vn)) {
      full = false;
      break;
    }
    seen.insert(vn);
    int k = -1;
    for (size_t j = 0; j < b.iter_vars.size(); ++j)
      if (b.iter_vars[j].var.get() == vn) k = static_cast<int>(j);
    if (k < 0 || b.iter_vars[k].kind != IterKind::Spatial ||
        !same_extent(b.iter_vars[k].extent, u.Y->shape[d])) {
      full = false;
      break;
    }
    auto* bv = u.br->bindings[k].as<VarNode>();
    const ForNode* loop = nullptr;
    for (auto& pe : u.path)
      if (auto* fn = pe.s.as<ForNode>(); fn && fn->loop_var.get() == bv) loop = fn;
    if (!loop || !is_zero(loop->min) || !same_extent(loop->extent, b.iter_vars[k].extent)) full = false;
  }
  u.full = full;
}

bool GradientBuilder::locate_step(Unit& u, int j, bool must) {
  const BlockNode& b = *u.blk;
  const std::string where = "block " + b.name + ": ";
  const IterVar& sv = b.iter_vars[j];
  // The binding: a loop var (plus a constant), so that the loop can run backwards.
  auto a = to_affine(u.br->bindings[j]);
  const VarNode* lv =
      a && a->terms.size() == 1 && a->terms[0].second == 1 ? a->terms[0].first.get() : nullptr;
  size_t at = u.path.size();
  const ForNode* loop = nullptr;
  for (size_t i = 0; i < u.path.size() && lv; ++i)
    if (auto* f = u.path[i].s.as<ForNode>(); f && f->loop_var.get() == lv) {
      loop = f;
      at = i;
    }
  if (!loop) {
    if (!must) return false;
    throw Error(where + "the scan var " + sv.var.name() + " must be bound to a loop var (plus a constant)");
  }
  u.scan_loop = loop;
  u.scan_at = at;
  u.step_iv = j;
  u.scan_offset = a->constant;
  auto uses_loop = [&](const Expr& e) {
    std::unordered_set<const VarNode*> vs;
    collect_vars(e, &vs);
    return vs.count(lv) != 0;
  };
  for (size_t k = 0; k < b.iter_vars.size(); ++k)
    if (static_cast<int>(k) != j && uses_loop(u.br->bindings[k]))
      throw Error(where + "the loop " + lv->name + " of the scan var " + sv.var.name() +
                  " also binds iter var " + b.iter_vars[k].var.name());
  for (size_t i = at + 1; i < u.path.size(); ++i) {
    const Stmt& ps = u.path[i].s;
    Expr e = ps.as<IfThenElseStmtNode>() ? ps.as<IfThenElseStmtNode>()->cond
             : ps.as<LetStmtNode>()      ? ps.as<LetStmtNode>()->value
             : ps.as<ForNode>()          ? ps.as<ForNode>()->extent
                                         : Expr();
    Expr e2 = ps.as<ForNode>() ? ps.as<ForNode>()->min : Expr();
    if ((e.defined() && uses_loop(e)) || (e2.defined() && uses_loop(e2)))
      throw Error(where + "a loop or condition inside the scan loop " + lv->name + " depends on it");
  }
  return true;
}

void GradientBuilder::find_regions() {
  for (auto& u : units_)
    if (u.scan_iv >= 0) locate_step(u, u.scan_iv, true);
  for (auto& u : units_) {
    if (!u.scan_loop || u.region >= 0 || u.step_iv != u.scan_iv) continue;
    const ForNode* L = u.scan_loop;
    size_t first = units_.size(), last = 0;
    std::unordered_set<int> groups;
    bool reduces = false;
    for (size_t j = 0; j < units_.size(); ++j)
      for (auto& pe : units_[j].path)
        if (pe.s.as<ForNode>() == L) {
          first = std::min(first, j);
          last = std::max(last, j);
          groups.insert(units_[j].group);
          reduces = reduces || !units_[j].reduce_iters.empty() || units_[j].blk->init.defined();
          break;
        }
    if (groups.size() == 1 && !reduces) continue;  // one block: analyze_scan
    int idx = static_cast<int>(regions_.size());
    for (size_t j = first; j <= last; ++j) {
      Unit& w = units_[j];
      const std::string where = "block " + w.blk->name + ": ";
      if (w.scan_loop && w.scan_loop != L)
        throw Error(where + "a scan loop inside the scan loop " + L->loop_var.name() + " is not supported");
      if (!w.scan_loop) {
        for (size_t k = 0; k < w.blk->iter_vars.size() && !w.scan_loop; ++k) {
          auto a = to_affine(w.br->bindings[k]);
          if (a && a->terms.size() == 1 && a->terms[0].second == 1 && a->terms[0].first.same_as(L->loop_var))
            locate_step(w, static_cast<int>(k), true);
        }
        if (!w.scan_loop)
          throw Error(where + "inside the scan loop " + L->loop_var.name() +
                      ", a block needs an iter var bound to " + L->loop_var.name());
        if (w.blk->iter_vars[w.step_iv].kind == IterKind::Reduce)
          throw Error(where + "the iter var " + w.blk->iter_vars[w.step_iv].var.name() +
                      " bound to the scan loop " + L->loop_var.name() + " is a reduce var");
      }
      w.region = idx;
    }
    regions_.push_back(Region{L, first, last});
  }
  for (auto& u : units_)
    if (u.scan_iv >= 0 && u.region < 0) analyze_scan(u);
  for (auto& r : regions_) analyze_region(r);
}

// The refusal "a scan step must write elements of its own" for a store to Y at I, the step
// var sv. A store at a constant index (`S[vt, 0] = ..; S[vt, 1] = ..`: a state vector kept in
// one buffer, h5 r19 F2) gets its own reason: the advice to index by vt misled (it does).
// Only a store that also indexes by the step var: a state overwritten in place (`c[0]`) keeps
// the advice to keep its history.
static std::string own_elements_refusal(const std::string& where, const Buffer& Y, const std::vector<Expr>& I,
                                        const std::string& sv, bool scan_var_words) {
  bool by_step = false;
  for (auto& i : I)
    if (auto* v = i.as<VarNode>()) by_step = by_step || v->name == sv;
  for (size_t d = 0; d < I.size() && by_step; ++d)
    if (I[d].kind() == ExprKind::IntImm)
      return where + "a scan step must write elements of its own: the store to " + Y->name + " at " +
             print_expr(make_load(Y, I)) + " has the constant index " + print_expr(I[d]) + " in dimension " +
             std::to_string(d) +
             " (a state kept in columns of one buffer); keep each component in a buffer of " +
             "its own indexed by " + sv + " (e.g. " + Y->name + "0[" + sv + "], " + Y->name + "1[" + sv +
             "])";
  return where + "a scan step must write elements of its own: index the store to " + Y->name +
         " by distinct iter vars, " + (scan_var_words ? "the scan var " : "") + sv +
         " among them (to carry a state, keep its history, e.g. H[" + sv + ", ...])";
}

void GradientBuilder::analyze_region(const Region& r) {
  for (size_t j = r.first; j <= r.last; ++j) {
    Unit& w = units_[j];
    const BlockNode& b = *w.blk;
    const std::string where = "block " + b.name + ": ";
    if (!w.inactive && !(w.kind == RedKind::Spatial || (w.kind == RedKind::Sum && w.init_store)))
      throw Error(
          where +
          "in a recurrence through several blocks (or with a reduction), a block must store a value or "
          "sum with an init (max, min, product and accumulation onto earlier content are not supported)");
    // Single assignment: the forward recomputation leaves every step's value in place.
    const std::vector<Expr>& I = w.store->indices;
    std::unordered_set<const VarNode*> seen;
    bool ok = true, has_step = false;
    size_t nonreduce = 0;
    for (auto& iv : b.iter_vars) nonreduce += iv.kind != IterKind::Reduce;
    for (size_t d = 0; d < I.size() && ok; ++d) {
      auto* v = I[d].as<VarNode>();
      int k = -1;
      for (size_t q = 0; q < b.iter_vars.size(); ++q)
        if (v && b.iter_vars[q].var.get() == v) k = static_cast<int>(q);
      if (k < 0 || b.iter_vars[k].kind == IterKind::Reduce || seen.count(v)) ok = false;
      seen.insert(v);
      if (k == w.step_iv) w.scan_dim = d, has_step = true;
    }
    const std::string sv = b.iter_vars[w.step_iv].var.name();
    if (!ok || !has_step || seen.size() != nonreduce)
      throw Error(own_elements_refusal(where, w.Y, I, sv, false));
  }
  // Reads of the loop's results: at an earlier step, or at the same step from an earlier
  // block of the loop body.
  for (size_t k = r.first; k <= r.last; ++k) {
    Unit& w = units_[k];
    const std::string where = "block " + w.blk->name + ": ";
    const Var& step = w.blk->iter_vars[w.step_iv].var;
    std::vector<Expr> item_guards;  // the body's `if`s before the expression checked
    auto check = [&](const Expr& e) {
      for_each_guarded_load(e, item_guards, [&](const LoadNode* l, const std::vector<Expr>& gs) {
        for (size_t j = r.first; j <= r.last; ++j) {
          const Unit& o = units_[j];
          if (!l->buffer.same_as(o.Y)) continue;
          const Expr& idx = l->indices[o.scan_dim];
          auto a = to_affine(idx);
          bool affine = a && a->coeff(step.get()) == 1 && a->terms.size() == 1;
          // A computed step (a triangular solve's X[vk] under `vk < vi`), proved earlier by
          // the guards around the load: the backward step scatters into its cotangent, which
          // is complete before that step runs backwards (guarded_loads.h).
          if (!affine && idx.dtype() == step.dtype() &&
              guards_imply_at_least(
                  gs, Expr(step) - idx + make_const(step.dtype(), o.scan_offset - w.scan_offset),
                  o.group < w.group ? 0 : 1))
            return;
          if (!affine)
            throw Error(where + "reads " + o.Y->name + " at an index that is not " + step.name() +
                        " plus a constant in dimension " + std::to_string(o.scan_dim) +
                        " (nor an earlier step by an if_then_else guard around the read)");
          int64_t off = a->constant + w.scan_offset - o.scan_offset;  // step read - current step
          if (off > 0 || (off == 0 && o.group >= w.group))
            throw Error(where + "reads " + o.Y->name + " at a step the loop has not computed yet");
          return;
        }
      });
    };
    for (auto& it : w.items) {
      check(it.value);
      if (!it.is_let) item_guards.push_back(it.value);
    }
    check(w.update);
    item_guards.clear();
    if (w.init_store) check(w.init_store->value);
    for (auto& l : w.init_lets) check(l.value);
  }
}

std::vector<TapeStore> GradientBuilder::tape_deferred(const Unit& u, const Scope& S,
                                                      const std::vector<Binding>& adj_lets,
                                                      const std::vector<Expr>& I_ad,
                                                      const std::function<bool(const LeafTerm&)>& in_loop,
                                                      std::vector<LeafTerm>* leaves) {
  bool mine = false, deferred = false;
  for (auto& g : *leaves) (in_loop(g) ? mine : deferred) = true;
  if (!mine || !deferred) return {};
  // Lets whose value costs FLOPs (directly or through earlier lets).
  std::vector<const Binding*> all;
  for (auto& b : S.lets) all.push_back(&b);
  for (auto& b : adj_lets) all.push_back(&b);
  std::unordered_set<const VarNode*> costly;
  for (auto* b : all) {
    bool c = expr_flops(b->value) > 0;
    if (!c) {
      std::unordered_set<const VarNode*> vs;
      collect_vars(b->value, &vs);
      for (auto* v : vs) c = c || costly.count(v);
    }
    if (c) costly.insert(b->var.get());
  }
  std::unordered_set<const VarNode*> used;
  for (auto& g : *leaves)
    if (!in_loop(g)) collect_vars(g.term, &used);
  std::vector<TapeStore> tapes;
  std::unordered_map<const VarNode*, Expr> sub;
  for (auto* b : all) {
    if (!costly.count(b->var.get()) || !used.count(b->var.get())) continue;
    Buffer T = new_buffer(u.blk->name + "_tape", u.Y, b->var.dtype());
    tapes.push_back({T, I_ad, b->var, Expr()});
    sub[b->var.get()] = make_load(T, I_ad);
  }
  if (tapes.empty()) return {};
  for (auto& g : *leaves)
    if (!in_loop(g)) g.term = substitute(g.term, sub);
  return tapes;
}

void GradientBuilder::tape_equal_terms(const Unit& u, const std::vector<Expr>& I_ad,
                                       const std::vector<LeafTerm>& carried, std::vector<LeafTerm>* deferred,
                                       std::vector<TapeStore>* tapes) {
  auto core = [](const Expr& e, bool* neg) { return tape_core(e, neg); };
  auto same_guards = [](const LeafTerm& a, const LeafTerm& b) {
    if (a.guards.size() != b.guards.size()) return false;
    for (size_t i = 0; i < a.guards.size(); ++i)
      if (!expr_identical(a.guards[i], b.guards[i])) return false;
    return true;
  };
  for (auto& g : *deferred) {
    bool gneg = false;
    Expr gc = core(g.term, &gneg);
    if (expr_flops(gc) == 0) continue;  // a load or a constant: nothing to share
    for (auto& c : carried) {
      bool cneg = false;
      Expr cc = core(c.term, &cneg);
      if (!same_guards(g, c) || !expr_identical(gc, cc)) continue;
      // The tape is found by the carried leaf's load node: it must name one leaf only.
      int same_load = 0;
      for (auto& o : carried) same_load += o.load.same_as(c.load) ? 1 : 0;
      if (same_load != 1) continue;
      Buffer T;
      for (auto& x : *tapes)
        if (x.leaf.defined() && x.leaf.same_as(c.load)) T = x.T;
      if (!T.defined()) {
        T = new_buffer(u.blk->name + "_tape", u.Y, cc.dtype());
        tapes->push_back({T, I_ad, Var(), c.load});
      }
      Expr ld = make_load(T, I_ad);
      g.term = gneg ? make_unary(UnOp::Neg, ld) : ld;
      break;
    }
  }
}

void GradientBuilder::reverse_region(const Region& r) {
  // The cotangents of the loop's results first: later steps add into earlier ones.
  std::unordered_map<size_t, Buffer> G;
  for (size_t j = r.first; j <= r.last; ++j) {
    const Unit& w = units_[j];
    if (w.inactive || !active_.count(w.Y.get())) continue;
    G[j] = adj_write(w.ver_out);
    zero_init_.erase(G[j].get());
  }
  auto active_fn = [this](const Buffer& b) {
    auto it = orig_of_.find(b.get());
    return it != orig_of_.end() && active_.count(it->second) != 0;
  };
  const ForNode* L = r.loop;
  DType lt = L->loop_var.dtype();
  Expr t_rev = (L->min + L->min + L->extent - make_const(lt, 1)) - Expr(L->loop_var);
  std::unordered_map<const VarNode*, Expr> loop_sub{{L->loop_var.get(), t_rev}};
  std::vector<Stmt> steps;
  // Contributions to buffers from outside the loop need only complete cotangents: they are
  // gathers after the loop (parallel, as for any block), not scatters inside it.
  struct Deferred {
    size_t unit;
    std::shared_ptr<Scope> S;
    std::shared_ptr<std::vector<Binding>> adj;
    LeafTerm leaf;
    std::vector<size_t> gpos;
  };
  std::vector<Deferred> later;
  auto in_loop = [&](const LeafTerm& g) {
    auto* ld = g.load.as<LoadNode>();
    for (size_t j = r.first; j <= r.last; ++j)
      if (ld->buffer.same_as(units_[j].ver_out)) return true;
    return false;
  };
  for (size_t j = r.last + 1; j-- > r.first;) {
    if (!G.count(j)) continue;
    Unit& u = units_[j];
    const std::vector<Expr>& I = u.store->indices;
    std::vector<Expr> I_ad;
    for (auto& i : I) I_ad.push_back(rename_ad(u, i));
    Expr Gi = make_load(G[j], I_ad);
    ExprAD ad(names_, active_fn);
    // One statement per leaf: cotangent += term, under the leaf's own guards, in the lets.
    auto contributions =
        [&](const std::shared_ptr<Scope>& Sp, const std::shared_ptr<std::vector<Binding>>& adjp,
            const std::vector<LeafTerm>& leaves, const std::vector<Expr>& guards,
            const std::vector<size_t>& gpos, bool wrap = true, const std::vector<TapeStore>& tapes = {}) {
          std::vector<LeafTerm> mine;
          for (auto& g : leaves) {
            if (in_loop(g))
              mine.push_back(g);
            else
              later.push_back({j, Sp, adjp, g, gpos});
          }
          if (mine.empty()) return Stmt();
          std::vector<Expr> outer;
          std::vector<std::pair<Expr, size_t>> placed;
          if (wrap) split_own_guards(guards, gpos, {&Sp->lets, adjp.get()}, &outer, &placed);
          Stmt body = accumulate_leaves(
              mine, guards, {&Sp->lets, adjp.get()},
              [&](const LoadNode* ld) {
                Buffer A = adj_write(ld->buffer);
                zero_init_.erase(A.get());
                return A;
              },
              tapes, placed);
          if (body.defined() && !outer.empty()) body = guard_all(outer, body);
          return body;
        };
    std::vector<Stmt> parts;
    Stmt init_alone;  // the init's contributions, for a block without the reduce vars
    {
      auto S = std::make_shared<Scope>();
      auto adj_lets = std::make_shared<std::vector<Binding>>();
      std::vector<Expr> guards;
      std::vector<size_t> gpos;
      for (auto& it : u.items) {
        if (it.is_let) {
          ad.bind_let(it.var, rename_ad(u, it.value), *S);
        } else {
          guards.push_back(ad.subst(rename_ad(u, it.value)));
          gpos.push_back(S->lets.size());
        }
      }
      for (auto& o : u.once) guards.push_back(o), gpos.push_back(0);
      Expr root = ad.linearize(rename_ad(u, u.update), *S);
      Expr seed = u.negate ? -Gi : Gi;
      if (u.kind == RedKind::Spatial && !S->lets.empty() && root.same_as(S->lets.back().var))
        S->lets.back().value = make_load(u.ver_out, I_ad);
      std::vector<LeafTerm> leaves;
      ad.reverse(*S, {{root, seed}}, guards, adj_lets.get(), &leaves);
      std::vector<TapeStore> tapes;
      if (u.kind == RedKind::Spatial && u.reduce_iters.empty())
        tapes = tape_deferred(u, *S, *adj_lets, I_ad, in_loop, &leaves);
      Stmt st = contributions(S, adj_lets, leaves, guards, gpos, true, tapes);
      if (st.defined()) parts.push_back(st);
    }
    if (u.init_store) {
      auto S0 = std::make_shared<Scope>();
      auto adj_lets = std::make_shared<std::vector<Binding>>();
      std::vector<Expr> rz;
      for (auto& iv : u.reduce_iters)
        rz.push_back(make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype())));
      for (auto& l : u.init_lets) ad.bind_let(l.var, rename_ad(u, l.value), *S0);
      Expr root0 = ad.linearize(rename_ad(u, u.init_store->value), *S0);
      std::vector<LeafTerm> leaves;
      ad.reverse(*S0, {{root0, Gi}}, rz, adj_lets.get(), &leaves);
      std::vector<size_t> rz_pos(rz.size(), 0);
      Stmt st = contributions(S0, adj_lets, leaves, rz, rz_pos);
      if (st.defined()) parts.push_back(st);
      std::vector<LeafTerm> mine;  // the others were deferred by the call above
      for (auto& g : leaves)
        if (in_loop(g)) mine.push_back(g);
      init_alone = contributions(S0, adj_lets, mine, rz, rz_pos, false);
    }
    // The step's adjoint: its step var runs backwards (w = extent - 1 - s, increasing as
    // the loop runs); the other iter vars scatter into shared cotangents, as atomic reduce
    // vars. Without_reduce: a block over the step and spatial vars only, inside the loops
    // that bind them (the reduce loops dropped); undefined when a kept binding, the
    // predicate or a kept loop bound uses a reduce loop.
    const BlockNode& b = *u.blk;
    auto step_block = [&](const Stmt& body, bool without_reduce) -> Stmt {
      std::unordered_set<const VarNode*> kept, dropped;
      if (without_reduce) {
        collect_vars(u.br->predicate, &kept);
        for (size_t q = 0; q < b.iter_vars.size(); ++q)
          collect_vars(u.br->bindings[q], b.iter_vars[q].kind == IterKind::Reduce ? &dropped : &kept);
        for (auto* v : dropped)
          if (kept.count(v)) return Stmt();
        for (size_t i = u.scan_at + 1; i < u.path.size(); ++i)
          if (auto* f = u.path[i].s.as<ForNode>(); f && !dropped.count(f->loop_var.get())) {
            std::unordered_set<const VarNode*> vs;
            collect_vars(f->min, &vs);
            collect_vars(f->extent, &vs);
            for (auto* v : vs)
              if (dropped.count(v)) return Stmt();
          } else if (u.path[i].s.as<IfThenElseStmtNode>() || u.path[i].s.as<LetStmtNode>()) {
            return Stmt();
          }
      }
      BlockNode bn;
      bn.name = names_.unique(b.name + (without_reduce ? "_rev_init" : "_rev"));
      std::unordered_map<const VarNode*, Expr> m;
      std::vector<Expr> bindings;
      for (size_t q = 0; q < b.iter_vars.size(); ++q) {
        const IterVar& iv = b.iter_vars[q];
        if (without_reduce && iv.kind == IterKind::Reduce) continue;
        Var nv(names_.fresh(iv.var.name()), iv.var.dtype());
        if (static_cast<int>(q) == u.step_iv) {
          Expr last = iv.extent - make_const(iv.extent.dtype(), 1);
          bn.iter_vars.push_back({nv, IterKind::Scan, iv.extent});
          m[iv.var.get()] = last - nv;
          bindings.push_back(last - substitute(u.br->bindings[q], loop_sub));
        } else {
          bn.iter_vars.push_back({nv, IterKind::Reduce, iv.extent});
          m[iv.var.get()] = nv;
          bindings.push_back(u.br->bindings[q]);
        }
      }
      bn.body = substitute(body, m);
      bn.annotations = {{"atomic", "1"}};
      finish_scatter_block(bn);
      set_regions(bn);
      Stmt st =
          make_block_realize(bindings, substitute(u.br->predicate, loop_sub), make_block(std::move(bn)));
      for (size_t i = u.path.size(); i-- > u.scan_at + 1;) {
        const Stmt& ps = u.path[i].s;
        if (auto* f = ps.as<ForNode>()) {
          if (!dropped.count(f->loop_var.get()))
            st = make_for(f->loop_var, f->min, f->extent, f->for_kind, st, f->thread_tag, f->annotations);
        } else if (auto* c = ps.as<IfThenElseStmtNode>()) {
          st = u.path[i].else_branch ? make_if(make_unary(UnOp::Not, c->cond), st) : make_if(c->cond, st);
        } else if (auto* l = ps.as<LetStmtNode>()) {
          st = make_let_stmt(l->var, l->value, st);
        }
      }
      return st;
    };
    if (init_alone.defined() && parts.size() == 2) {
      Stmt alone = step_block(init_alone, true);
      if (alone.defined()) {
        steps.push_back(step_block(parts[0], false));
        steps.push_back(alone);
        continue;
      }
    }
    if (init_alone.defined() && parts.size() == 1) {
      // Only the init contributes: no need to run over the reduce vars at all.
      Stmt alone = step_block(init_alone, true);
      if (alone.defined()) {
        steps.push_back(alone);
        continue;
      }
    }
    if (parts.empty()) continue;
    steps.push_back(step_block(make_seq(parts), false));
  }
  if (!steps.empty()) {
    Stmt loop = make_for(L->loop_var, L->min, L->extent, ForKind::Serial, make_seq(steps));
    const Unit& u0 = units_[r.first];
    emit(wrap_path_range(u0, loop, 0, u0.scan_at));
  }
  for (auto& d : later) emit_contribution(units_[d.unit], {&d.S->lets, d.adj.get()}, d.leaf, d.gpos);
}

void GradientBuilder::analyze_scan(Unit& u) {
  const BlockNode& b = *u.blk;
  const std::string where = "block " + b.name + ": ";
  const IterVar& sv = b.iter_vars[u.scan_iv];
  const std::vector<Expr>& I = u.store->indices;
  // Each step writes its own elements (an injective store), so an element read at step s
  // holds either the value written at its own step or the value from before the block.
  // The scan dimension may be indexed by s + c or -s + c (a reverse scan, as in F_grad).
  std::unordered_set<const VarNode*> seen;
  bool injective = true, has_scan = false;
  int64_t dir = 1;
  for (size_t d = 0; d < I.size() && injective; ++d) {
    auto* v = I[d].as<VarNode>();
    if (!v) {
      // +-s plus scalar parameters and constants (the backward scan over a symbolic length).
      auto a = to_affine(I[d]);
      int64_t c = a ? a->coeff(sv.var.get()) : 0;
      bool params_only = a.has_value();
      for (size_t k = 0; a && k < a->terms.size(); ++k)
        for (auto& iv : b.iter_vars)
          if (!a->terms[k].first.same_as(sv.var) && a->terms[k].first.same_as(iv.var)) params_only = false;
      if (params_only && (c == 1 || c == -1)) v = sv.var.get(), dir = c;
    }
    bool is_iv = false;
    for (auto& iv : b.iter_vars) is_iv = is_iv || (v && iv.var.get() == v);
    if (!is_iv || seen.count(v)) injective = false;
    seen.insert(v);
    if (v == sv.var.get()) u.scan_dim = d, has_scan = true;
  }
  if (!injective || !has_scan || seen.size() != b.iter_vars.size())
    throw Error(own_elements_refusal(where, u.Y, u.store->indices, sv.var.name(), true));
  if (u.inactive) return;
  // Reads of Y: at an earlier step (s - k, k >= 1) they see this block's results; at s + k
  // (k >= 0) the element is not written yet and holds the previous version. Another index
  // (the first state `Y[0]` under `if_then_else(vt >= 1, ..)`) is an earlier step when the
  // guards around the read prove it, as for the reads of a region (analyze_region): the
  // reverse scan adds into its cotangent, complete before that step runs backwards.
  std::vector<Expr> item_guards;  // the body's `if`s before the expression classified
  // ahead == s (the scan var, >= 0 as an iter var) under a guard `s != 0`: ahead >= 1 (the
  // else arm of `if_then_else(vt == 0, X[0], .. Y[0] ..)`, the usual way to write the step).
  auto nonzero_step = [&](const std::vector<Expr>& gs, const Expr& ahead) {
    auto a = to_affine(ahead);
    if (!a || a->constant != 0 || a->terms.size() != 1 || a->coeff(sv.var.get()) != 1) return false;
    for (auto& g : gs) {
      auto* b = g.as<BinaryNode>();
      if (!b || b->op != BinOp::NE) continue;
      auto d = to_affine(b->a), z = to_affine(b->b);
      if (!d || !z) continue;
      d->add(*z, -1);  // a - b: +-s
      if (d->constant == 0 && d->terms.size() == 1 &&
          (d->coeff(sv.var.get()) == 1 || d->coeff(sv.var.get()) == -1))
        return true;
    }
    return false;
  };
  auto classify = [&](const Expr& e) {
    for_each_guarded_load(e, item_guards, [&](const LoadNode* l, const std::vector<Expr>& gs) {
      if (!l->buffer.same_as(u.Y)) return;
      auto off = to_affine(l->indices[u.scan_dim]);
      auto self = to_affine(I[u.scan_dim]);
      if (off) off->add(*self, -1);
      if (!off || !off->is_const()) {
        // The element read was written at step dir * (idx - c) when the store is at dir * s + c:
        // earlier by dir * (store index - idx).
        const Expr& idx = l->indices[u.scan_dim];
        Expr ahead = dir > 0 ? I[u.scan_dim] - idx : idx - I[u.scan_dim];
        if (idx.dtype() == sv.var.dtype() &&
            (guards_imply_at_least(gs, ahead, 1) || nonzero_step(gs, ahead))) {
          u.carried.insert(l);
          return;
        }
        throw Error(where + "a scan step reads " + u.Y->name + " at an index that is not the scan var " +
                    sv.var.name() + " plus a constant in dimension " + std::to_string(u.scan_dim));
      }
      // The element was (or will be) written at step s + dir * offset.
      if (dir * off->constant < 0) u.carried.insert(l);
    });
  };
  for (auto& it : u.items) {
    classify(it.value);
    if (!it.is_let) item_guards.push_back(it.value);
  }
  classify(u.store->value);
}

void GradientBuilder::assign_versions() {
  std::unordered_map<const BufferNode*, Buffer> cur;
  for (auto& p : f_.params)
    if (p.is_buffer()) cur[p.buffer.get()] = p.buffer;
  int registered = -1;
  for (auto& u : units_) {
    const std::string where = "block " + u.blk->name + ": ";
    if (inputs_.count(u.Y.get())) throw Error(where + "writes the input " + u.Y->name);
    if (u.region >= 0 && u.region != registered) {
      // The blocks of a recurrence read each other's results at earlier steps: all of them
      // are visible from the start of the loop, as single versions (each element is written
      // once, at its step).
      registered = u.region;
      const Region& r = regions_[u.region];
      std::unordered_set<const BufferNode*> mine;
      for (size_t j = r.first; j <= r.last; ++j) {
        const Unit& w = units_[j];
        if (cur.count(w.Y.get()) || mine.count(w.Y.get()))
          throw Error("block " + w.blk->name + ": in a recurrence through several blocks, " + w.Y->name +
                      " must be written by one block of the loop and by no block before it");
        if (inputs_.count(w.Y.get())) throw Error("block " + w.blk->name + ": writes the input " + w.Y->name);
        mine.insert(w.Y.get());
      }
      for (auto* b : mine)
        for (size_t j = r.first; j <= r.last; ++j)
          if (units_[j].Y.get() == b) cur[b] = units_[j].Y;
    }
    // Every buffer read must have been written before (or be an input).
    auto check = [&](const Expr& e) {
      for_each_expr(e, [&](const Expr& x) {
        auto* l = x.as<LoadNode>();
        if (!l) return;
        if (l->buffer.same_as(u.Y) && u.init_store) return;  // the accumulator
        if (u.carried.count(l)) return;                      // an earlier step of the scan
        // An integer store reading a sibling store's buffer (argmax next to max): no AD view
        // needed, the forward recomputation runs the block as written.
        if (u.inactive)
          for (auto& w : units_)
            if (w.group == u.group && w.Y.same_as(l->buffer)) return;
        if (!cur.count(l->buffer.get()))
          throw Error("block " + u.blk->name + " reads " + l->buffer->name + " before any block writes it");
      });
    };
    for (auto& it : u.items) check(it.value);
    check(u.update);  // for reductions, the accumulator load is not part of the update
    if (u.init_store) {
      check(u.init_store->value);
      for (auto& l : u.init_lets) check(l.value);
    }
    if (u.kind != RedKind::Spatial && !u.init_store && !cur.count(u.Y.get()))
      throw Error("block " + u.blk->name + " reads " + u.Y->name + " before any block writes it");
    // Keep only the versions of buffers this block mentions: copying the whole map for every
    // block made `grad` quadratic in the number of blocks (a 10000-block chain took 45 s).
    MentionedBuffers mentioned;
    mentioned.collect(u.br);
    u.read_ver = restrict_versions(cur, mentioned.bufs);
    auto it = cur.find(u.Y.get());
    if (u.region >= 0) {
      u.ver_out = u.Y;
    } else if (it != cur.end()) {
      u.ver_in = it->second;
      u.ver_out = Buffer(names_.unique(u.Y->name + "_v" + std::to_string(++nversions_[u.Y.get()] + 1)),
                         u.Y->dtype, u.Y->shape, u.Y->scope);
      allocs_.push_back(u.ver_out);
      u.needs_copy = !u.full || u.self_read;
    } else {
      u.ver_out = u.Y;
    }
    orig_of_[u.ver_out.get()] = u.Y.get();
    if (!u.carried.empty()) {
      RetargetLoads rt(u.carried, u.ver_out);
      for (auto& it : u.items) it.value = rt.mutate(it.value);
      u.update = rt.mutate(u.update);
    }
    u.fwd_load = u.read_ver;
    u.fwd_load[u.Y.get()] = u.ver_out;
    cur[u.Y.get()] = u.ver_out;
  }
  for (auto& p : f_.params)
    if (p.is_buffer()) orig_of_[p.buffer.get()] = p.buffer.get();
  // Cotangent params: the adjoint of each output's final version.
  for (size_t oi = 0; oi < f_.outputs.size(); ++oi) {
    const Buffer& o = f_.outputs[oi];
    Buffer g(cot_names_[oi], o->dtype, o->shape, "global");
    Param p;
    p.buffer = g;
    cot_params_.push_back(p);
    auto it = cur.find(o.get());
    if (it != cur.end() && is_float(o->dtype)) adj_param_[it->second.get()] = g;
  }
}

bool GradientBuilder::reads_only_earlier_steps(const Unit& u) const {
  if (u.scan_iv < 0 || u.kind != RedKind::Spatial) return false;
  const VarNode* sv = u.blk->iter_vars[static_cast<size_t>(u.scan_iv)].var.get();
  const std::vector<Expr>& I = u.store->indices;
  bool ok = true;
  auto check = [&](const Expr& x) {
    auto* l = x.as<LoadNode>();
    if (!l || !l->buffer.same_as(u.Y)) return;
    bool earlier = false;
    for (size_t d = 0; d < I.size() && d < l->indices.size(); ++d) {
      std::unordered_set<const VarNode*> vs;
      collect_vars(I[d], &vs);
      if (!vs.count(sv)) continue;
      int64_t c;
      Expr diff = simplify(l->indices[d] - I[d]);
      if (is_const_int(diff, &c) && c < 0) earlier = true;
    }
    ok = ok && earlier;
  };
  for (auto& it : u.items) for_each_expr(it.value, check);
  for_each_expr(u.update, check);
  if (u.br->predicate.defined()) for_each_expr(u.br->predicate, check);
  return ok;
}

Expr GradientBuilder::unwritten(const Unit& u, const std::vector<Expr>& iv) {
  if (u.kind != RedKind::Spatial || u.region >= 0) return Expr();
  const BlockNode& b = *u.blk;
  const std::vector<Expr>& I = u.store->indices;
  if (I.size() != iv.size()) return Expr();
  for (auto& pe : u.path)
    if (!pe.s.as<ForNode>()) return Expr();
  std::unordered_map<const VarNode*, Expr> on_iter, on_loop;  // -> iv
  std::unordered_set<const VarNode*> loop_vars, iter_vars, let_vars;
  std::vector<Expr> in_range;
  for (auto& pe : u.path) loop_vars.insert(pe.s.as<ForNode>()->loop_var.get());
  for (auto& v : b.iter_vars) iter_vars.insert(v.var.get());
  for (auto& it : u.items)
    if (it.is_let) let_vars.insert(it.var.get());
  for (size_t d = 0; d < I.size(); ++d) {
    auto* vn = I[d].as<VarNode>();
    if (!vn || on_iter.count(vn)) return Expr();
    int k = -1;
    for (size_t j = 0; j < b.iter_vars.size(); ++j)
      if (b.iter_vars[j].var.get() == vn) k = static_cast<int>(j);
    if (k < 0 || (b.iter_vars[k].kind != IterKind::Spatial && b.iter_vars[k].kind != IterKind::Scan) ||
        !same_extent(b.iter_vars[k].extent, u.Y->shape[d]))
      return Expr();
    auto* bv = u.br->bindings[k].as<VarNode>();
    const ForNode* loop = nullptr;
    for (auto& pe : u.path)
      if (auto* fn = pe.s.as<ForNode>(); fn && fn->loop_var.get() == bv) loop = fn;
    if (!loop) return Expr();
    auto as = [&](DType t) { return iv[d].dtype() == t ? iv[d] : make_cast(t, iv[d]); };
    on_iter[vn] = as(vn->dtype);
    on_loop[bv] = as(bv->dtype);
    // A loop over part of the extent (a scan from step 2: `for t in serial(2, 8)`) writes
    // only the elements in its range.
    if (!is_zero(loop->min) || !same_extent(loop->extent, b.iter_vars[k].extent)) {
      for (const Expr& e : {loop->min, loop->extent}) {
        std::unordered_set<const VarNode*> vs;
        collect_vars(e, &vs);
        for (auto* v : vs)
          if (loop_vars.count(v)) return Expr();
      }
      Expr x = as(loop->min.dtype());
      in_range.push_back(make_binary(BinOp::And, make_binary(BinOp::GE, x, loop->min),
                                     make_binary(BinOp::LT, x, make_end(loop->min, loop->extent))));
    }
  }
  auto movable = [&](const Expr& e, const std::unordered_map<const VarNode*, Expr>& m,
                     const std::unordered_set<const VarNode*>& banned) {
    bool ok = true;
    for_each_expr(e, [&](const Expr& x) {
      if (x.as<LoadNode>()) ok = false;
      if (auto* v = x.as<VarNode>(); v && !m.count(v) && (banned.count(v) || let_vars.count(v))) ok = false;
    });
    return ok;
  };
  Expr written = substitute(u.br->predicate, on_loop);
  if (!movable(u.br->predicate, on_loop, loop_vars)) return Expr();
  for (auto& r : in_range) written = make_binary(BinOp::And, written, r);
  for (auto& it : u.items) {
    if (it.is_let) continue;
    if (!movable(it.value, on_iter, iter_vars)) return Expr();
    written = make_binary(BinOp::And, written, substitute(it.value, on_iter));
  }
  return make_unary(UnOp::Not, written);
}

Stmt GradientBuilder::elementwise(const std::string& name, const Buffer& like,
                                  const std::function<Stmt(const std::vector<Expr>&)>& body) {
  BlockNode bn;
  bn.name = names_.unique(name);
  std::vector<Var> loops;
  std::vector<Expr> bindings, iv;
  for (size_t d = 0; d < like->ndim(); ++d) {
    Var l(names_.fresh("i"), like->shape[d].dtype()), v(names_.fresh("v"), like->shape[d].dtype());
    loops.push_back(l);
    bindings.push_back(l);
    iv.push_back(v);
    bn.iter_vars.push_back({v, IterKind::Spatial, like->shape[d]});
  }
  bn.body = body(iv);
  set_regions(bn);
  Stmt s = make_block_realize(bindings, make_bool(true), make_block(std::move(bn)));
  for (size_t d = like->ndim(); d-- > 0;)
    s = make_for(loops[d], make_const(like->shape[d].dtype(), 0), like->shape[d], ForKind::Serial, s);
  return s;
}

Stmt GradientBuilder::wrap_path(const Unit& u, Stmt inner) {
  return wrap_path_range(u, inner, 0, u.path.size());
}

Stmt GradientBuilder::wrap_path_range(const Unit& u, Stmt inner, size_t from, size_t to) {
  for (size_t i = to; i-- > from;) {
    const Stmt& s = u.path[i].s;
    if (auto* f = s.as<ForNode>()) {
      inner = make_for(f->loop_var, f->min, f->extent, f->for_kind, inner, f->thread_tag, f->annotations);
    } else if (auto* c = s.as<IfThenElseStmtNode>()) {
      inner =
          u.path[i].else_branch ? make_if(make_unary(UnOp::Not, c->cond), inner) : make_if(c->cond, inner);
    } else if (auto* l = s.as<LetStmtNode>()) {
      inner = make_let_stmt(l->var, l->value, inner);
    }
  }
  return inner;
}

// Rebuilds u's body lets (and guards) around inner, with loads renamed to the AD view.
// Lets that inner (with the lets and guards already around it) never reads are dropped: a
// `<B>_mask` clone zeroes Y[I] and needs none of the step's `let q = tanh(...)`, which
// still counted as FLOPs (cost round 2). Let values are pure, so dropping them is exact.
Stmt GradientBuilder::body_with_items(const Unit& u, Stmt inner, bool guards) {
  struct Uses : IRVisitor {
    const VarNode* v = nullptr;
    bool found = false;
    void visit_var(const VarNode* n) override { found = found || n == v; }
  };
  for (size_t i = u.items.size(); i-- > 0;) {
    auto& it = u.items[i];
    if (it.is_let) {
      Uses uses;
      uses.v = it.var.get();
      uses.visit(inner);
      if (uses.found) inner = make_let_stmt(it.var, rename_ad(u, it.value), inner);
    } else if (guards)
      inner = make_if(rename_ad(u, it.value), inner);
  }
  return inner;
}

Stmt GradientBuilder::clone_block(const Unit& u, const std::string& name, const std::function<Stmt()>& body,
                                  const std::function<Stmt()>& init, bool all_reduce, Annotations ann) {
  BlockNode bn;
  bn.name = names_.unique(name);
  std::unordered_map<const VarNode*, Expr> m;
  for (auto& iv : u.blk->iter_vars) {
    Var nv(names_.fresh(iv.var.name()), iv.var.dtype());
    m[iv.var.get()] = nv;
    bn.iter_vars.push_back({nv,
                            all_reduce       ? IterKind::Reduce
                            : clone_spatial_ ? IterKind::Spatial
                                             : iv.kind,
                            iv.extent});
  }
  bn.body = substitute(body(), m);
  if (init) bn.init = substitute(init(), m);
  bn.annotations = std::move(ann);
  if (all_reduce) finish_scatter_block(bn);
  set_regions(bn);
  Stmt s = make_block_realize(u.br->bindings, u.br->predicate, make_block(std::move(bn)));
  return wrap_path(u, s);
}

Buffer GradientBuilder::adj_write(const Buffer& ver) {
  auto it = adj_.find(ver.get());
  if (it != adj_.end()) return it->second;
  const BufferNode* orig = orig_of_.at(ver.get());
  Buffer a = new_buffer(orig->name + "_grad", ver, ver->dtype);
  auto jt = adj_param_.find(ver.get());
  if (jt != adj_param_.end()) {
    Buffer p = jt->second;
    emit(elementwise(a->name + "_init", a,
                     [&](const std::vector<Expr>& iv) { return make_store(a, iv, make_load(p, iv)); }));
    adj_param_.erase(jt);
  } else {
    zero_init_[a.get()] = bwd_.size();
    emit(elementwise(a->name + "_init", a, [&](const std::vector<Expr>& iv) {
      return make_store(a, iv, make_const(a->dtype, 0));
    }));
  }
  adj_[ver.get()] = a;
  return a;
}

Expr GradientBuilder::reduce_index(const Unit& u) {
  // In i32, the dtype of the K / Z buffers it is stored in (i64 reduce vars are cast: the
  // select of an i64 index with the i32 kNoIndex was ill-typed).
  auto i32 = [](const Expr& e) { return e.dtype() == DType::I32 ? e : make_cast(DType::I32, e); };
  Expr out;
  for (auto& iv : u.reduce_iters) out = out.defined() ? out * i32(iv.extent) + i32(iv.var) : i32(iv.var);
  return out;
}

bool GradientBuilder::version_needed(const BufferNode* v) {
  if (!readers_built_) {
    readers_built_ = true;
    for (size_t j = 0; j < units_.size(); ++j) {
      const Unit& w = units_[j];
      MentionedBuffers mb;
      mb.collect(w.br);
      for (auto* b : mb.bufs)
        if (auto it = w.read_ver.find(b); it != w.read_ver.end()) readers_[it->second.get()].push_back(j);
      if (w.ver_in.defined()) readers_[w.ver_in.get()].push_back(j);
    }
  }
  // Depth-first over the forward blocks that would read v (iterative: chains are long).
  std::unordered_set<const BufferNode*> seen{v};
  std::vector<const BufferNode*> todo{v};
  while (!todo.empty()) {
    const BufferNode* x = todo.back();
    todo.pop_back();
    if (bwd_loads_.count(x)) return true;
    auto it = readers_.find(x);
    if (it == readers_.end()) continue;
    for (size_t j : it->second) {
      if (units_[j].region >= 0 || units_[j].scan_iv >= 0) return true;
      // The units of one block are recomputed together.
      size_t a = j, b = j;
      while (a > 0 && units_[a - 1].group == units_[j].group) --a;
      while (b + 1 < units_.size() && units_[b + 1].group == units_[j].group) ++b;
      for (size_t k = a; k <= b; ++k) {
        const BufferNode* o = units_[k].ver_out.get();
        if (seen.insert(o).second) todo.push_back(o);
      }
    }
  }
  return false;
}

bool GradientBuilder::pointwise_load(const Unit& u, const LoadNode* ld) const {
  const BlockNode& b = *u.blk;
  if (ld->indices.size() != b.iter_vars.size() || ld->indices.size() != ld->buffer->ndim()) return false;
  size_t nloops = 0;
  for (auto& pe : u.path)
    if (pe.s.as<ForNode>()) ++nloops;
  if (nloops != b.iter_vars.size()) return false;
  std::unordered_set<const VarNode*> seen, loops;
  for (size_t d = 0; d < ld->indices.size(); ++d) {
    auto* vn = ld->indices[d].as<VarNode>();
    if (!vn || !seen.insert(vn).second) return false;
    int k = -1;
    for (size_t j = 0; j < b.iter_vars.size(); ++j)
      if (b.iter_vars[j].var.get() == vn) k = static_cast<int>(j);
    if (k < 0 || b.iter_vars[k].kind != IterKind::Spatial ||
        !same_extent(b.iter_vars[k].extent, ld->buffer->shape[d]))
      return false;
    auto* bv = u.br->bindings[k].as<VarNode>();
    if (!bv || !loops.insert(bv).second) return false;
    const ForNode* loop = nullptr;
    for (auto& pe : u.path)
      if (auto* fn = pe.s.as<ForNode>(); fn && fn->loop_var.get() == bv) loop = fn;
    if (!loop || !is_zero(loop->min) || !same_extent(loop->extent, b.iter_vars[k].extent)) return false;
  }
  return true;
}

bool GradientBuilder::pointwise_unit(const Unit& u) const {
  int64_t pv;
  if (u.kind != RedKind::Spatial || !u.once.empty() || !u.reduce_iters.empty() || u.scan_iv >= 0 ||
      !is_const_int(u.br->predicate, &pv) || pv == 0)
    return false;
  for (auto& pe : u.path)
    if (pe.s.as<IfThenElseStmtNode>()) return false;
  return true;
}

bool GradientBuilder::sum_sharing_unit(const Unit& u) const {
  int64_t pv;
  if (u.kind != RedKind::Sum || !u.once.empty() || u.scan_iv >= 0 || u.region >= 0 ||
      !is_const_int(u.br->predicate, &pv) || pv == 0)
    return false;
  for (auto& pe : u.path)
    if (!pe.s.as<ForNode>()) return false;
  return true;
}

void GradientBuilder::split_pointwise(const Unit& u, const std::vector<LeafTerm>& groups,
                                      std::vector<LeafTerm>* mine, std::vector<LeafTerm>* rest) const {
  mine->clear();
  *rest = groups;
  if (!pointwise_unit(u)) return;
  std::vector<LeafTerm> m, r;
  std::unordered_set<const BufferNode*> bufs;
  for (auto& g : groups) {
    auto* ld = g.load.as<LoadNode>();
    if (pointwise_load(u, ld) && bufs.insert(ld->buffer.get()).second)
      m.push_back(g);
    else
      r.push_back(g);
  }
  if (m.size() < 2) return;
  *mine = std::move(m);
  *rest = std::move(r);
}

bool GradientBuilder::injective_load(const Unit& u, const LoadNode* ld, bool* bijective) const {
  *bijective = false;
  for (auto& i : ld->indices)
    if (loads_any(i)) return false;
  GatherInput gi;
  for (auto& pe : u.path) {
    auto* f = pe.s.as<ForNode>();
    if (!f) return false;
    gi.loops.push_back({f->loop_var, f->min, f->extent});
  }
  std::unordered_map<const VarNode*, Expr> iter_to_loop;
  for (size_t i = 0; i < u.blk->iter_vars.size(); ++i)
    iter_to_loop[u.blk->iter_vars[i].var.get()] = u.br->bindings[i];
  for (auto& i : ld->indices) gi.index.push_back(substitute(i, iter_to_loop));
  gi.shape = ld->buffer->shape;
  NameGen scratch = names_;  // a trial: the names it takes are not kept
  auto r = solve_gather(gi, scratch);
  if (!r || r->empty || !r->residual.empty()) return false;
  for (auto& gl : r->loops)
    if (gl.kind != IterKind::Spatial) return false;
  std::vector<Expr> ext;  // the points the loops run (a trimmed nest runs fewer than its iter vars span)
  for (auto& l : gi.loops) ext.push_back(l.extent);
  double pts = box_points(ext), elems = box_points(ld->buffer->shape);
  *bijective = pts > 0 && pts == elems;
  return true;
}

bool GradientBuilder::stores_apart(const Unit& u, const std::vector<const LoadNode*>& loads) const {
  // Every index dimension but one is the same plain iter var in all loads; the other is
  // c * v + o_k with one iter var v, one c and constant, distinct offsets o_k that
  // offsets_apart separates; the dimensions use every iter var of extent > 1. The condition
  // of normalisation's rewrite 2 (normalize.h), so a second gradient splits the block again.
  const LoadNode* l0 = loads[0];
  size_t nd = l0->indices.size();
  int shifted = -1;
  for (size_t d = 0; d < nd; ++d) {
    bool same = true;
    for (auto* l : loads) same = same && expr_identical(l->indices[d], l0->indices[d]);
    if (same && l0->indices[d].as<VarNode>()) continue;
    if (shifted >= 0) return false;
    shifted = static_cast<int>(d);
  }
  if (shifted < 0) return false;
  std::unordered_set<const VarNode*> used;
  for (size_t d = 0; d < nd; ++d)
    if (static_cast<int>(d) != shifted && !used.insert(l0->indices[d].as<VarNode>()).second) return false;
  const VarNode* v = nullptr;
  int64_t c = 0;
  std::vector<std::pair<int64_t, int64_t>> offs;
  std::unordered_set<int64_t> distinct;
  {
    // Distinct constants in that dimension (`X[v, 0]`, `X[v, 1]`): apart whatever v is.
    std::unordered_set<int64_t> consts;
    bool all_const = true;
    for (auto* l : loads) {
      int64_t k;
      all_const = all_const && is_const_int(l->indices[shifted], &k) && consts.insert(k).second;
    }
    if (all_const) {
      for (auto& x : u.blk->iter_vars) {
        int64_t e;
        if (!used.count(x.var.get()) && !(is_const_int(x.extent, &e) && e == 1)) return false;
        if (used.count(x.var.get()) && x.kind != IterKind::Spatial && !sum_sharing_unit(u)) return false;
      }
      for (auto* l : loads) {
        bool bij;
        if (!injective_load(u, l, &bij)) return false;
      }
      return true;
    }
  }
  for (auto* l : loads) {
    auto a = to_affine(l->indices[shifted]);
    if (!a || a->terms.size() != 1) return false;
    const VarNode* lv = a->terms[0].first.get();
    if ((v && lv != v) || (c && a->terms[0].second != c)) return false;
    v = lv, c = a->terms[0].second;
    if (!distinct.insert(a->constant).second) return false;
    offs.push_back({a->constant, a->constant});
  }
  if (used.count(v)) return false;
  used.insert(v);
  const IterVar* iv = nullptr;
  for (auto& x : u.blk->iter_vars) {
    int64_t e;
    if (x.var.get() == v) iv = &x;
    if (!used.count(x.var.get()) && !(is_const_int(x.extent, &e) && e == 1)) return false;
    if (used.count(x.var.get()) && x.kind != IterKind::Spatial && !sum_sharing_unit(u)) return false;
  }
  for (auto* l : loads) {
    bool bij;
    if (!injective_load(u, l, &bij)) return false;
  }
  return iv && ad::offsets_apart(c, iv->extent, offs);
}

void GradientBuilder::split_injective(const Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                                      std::vector<LeafTerm>* mine, std::vector<LeafTerm>* rest,
                                      std::vector<LeafTerm>* scatter) {
  scatter->clear();
  if (rest->empty() || !(pointwise_unit(u) || sum_sharing_unit(u))) return;
  // Leaves whose adjoint buffer another leaf of u also writes join only when their elements
  // are apart (stores_apart: a GLU's X[v, j] and X[v, j + 3]); others (X[vi] and X[9 - vi])
  // stay gathers.
  std::unordered_map<const BufferNode*, std::vector<const LoadNode*>> writers;
  for (auto* l : {&*mine, &*rest})
    for (auto& g : *l) writers[g.load.as<LoadNode>()->buffer.get()].push_back(g.load.as<LoadNode>());
  std::vector<LeafTerm> pw = *mine, sc, left;
  for (auto& g : *rest) {
    auto* ld = g.load.as<LoadNode>();
    bool bij;
    const auto& ws = writers[ld->buffer.get()];
    if (ws.size() != 1 && !stores_apart(u, ws))
      left.push_back(g);
    else if (ws.size() == 1 && pointwise_load(u, ld))
      pw.push_back(g);
    else if (injective_load(u, ld, &bij))
      sc.push_back(g);
    else
      left.push_back(g);
  }
  if (pw.size() + sc.size() < 2 || sc.empty()) return;
  std::vector<std::vector<LeafTerm>> now, merged;
  if (!mine->empty()) now.push_back(*mine);
  for (auto& g : *rest) now.push_back({g});
  std::vector<LeafTerm> one = pw;
  one.insert(one.end(), sc.begin(), sc.end());
  merged.push_back(one);
  for (auto& g : left) merged.push_back({g});
  if (leaf_terms_cost(lets, merged) >= leaf_terms_cost(lets, now)) return;
  *mine = std::move(pw);
  *rest = std::move(left);
  *scatter = std::move(sc);
}

void GradientBuilder::emit_pointwise(Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                                     const std::vector<LeafTerm>& mine, const std::vector<size_t>& gpos,
                                     const std::vector<LeafTerm>& scatter) {
  if (mine.empty() && scatter.empty()) return;
  const std::vector<LeafTerm>& lead = mine.empty() ? scatter : mine;
  std::vector<Stmt> stores;
  std::unordered_set<const VarNode*> need;
  std::string name = u.blk->name;
  // u's own guards guard the lets the forward evaluates after them (`if M[vi] > 0 { let t =
  // T[vi] * 3.0 ... }`, T written only there): around everything, or at their place among
  // the lets when they use one.
  size_t nown = std::min(gpos.size(), lead[0].guards.size());
  std::vector<Expr> outer;
  std::vector<std::pair<Expr, size_t>> placed;
  split_own_guards({lead[0].guards.begin(), lead[0].guards.begin() + nown}, gpos, lets, &outer, &placed);
  std::vector<LeafTerm> all = mine;
  all.insert(all.end(), scatter.begin(), scatter.end());
  // Buffers whose zeros this block writes first: the other scattered leaves into them reach
  // other elements (stores_apart), zeros too.
  std::unordered_set<const BufferNode*> onto_zeros;
  for (size_t k = 0; k < all.size(); ++k) {
    const LeafTerm& g = all[k];
    auto* ld = g.load.as<LoadNode>();
    Buffer A = adj_write(ld->buffer);
    name += "_d" + ld->buffer->name;
    Expr cur = make_load(A, ld->indices);
    Expr val;
    auto zit = zero_init_.find(A.get());
    bool onto = k < mine.size();
    if (!onto) injective_load(u, ld, &onto);
    if (zit != zero_init_.end()) {
      // First contribution: each element is written at most once (the load is injective);
      // unguarded and onto the buffer (a bijection of the box), it covers the buffer, so the
      // zero-initialisation goes.
      if (g.guards.empty() && onto) bwd_[zit->second] = Stmt();
      zero_init_.erase(zit);
      onto_zeros.insert(A.get());
      val = g.term;
    } else if (onto_zeros.count(A.get())) {
      val = g.term;
    } else if (auto* n = g.term.as<UnaryNode>(); n && n->op == UnOp::Neg) {
      val = cur - n->a;
    } else {
      val = cur + g.term;
    }
    std::vector<Expr> own(g.guards.begin() + std::min(nown, g.guards.size()), g.guards.end());
    Stmt st = make_store(A, ld->indices, val);
    for (size_t j = own.size(); j-- > 0;) st = make_if(own[j], st);
    collect_vars(g.term, &need);
    for (auto& x : own) collect_vars(x, &need);
    stores.push_back(st);
  }
  Stmt body = wrap_lets_and_guards(make_seq(stores), lets, need, placed);
  for (size_t k = outer.size(); k-- > 0;) body = make_if(outer[k], body);
  // A sum reduction's shared block: each leaf is injective over the whole forward nest
  // (split_injective), so its instances write disjoint elements: every iter var is spatial.
  clone_spatial_ = u.kind == RedKind::Sum;
  Stmt blk = clone_block(
      u, name, [&] { return body; }, nullptr, false);
  clone_spatial_ = false;
  emit(blk);
}

double GradientBuilder::leaf_terms_cost(const std::vector<const std::vector<Binding>*>& lets,
                                        const std::vector<std::vector<LeafTerm>>& blocks) const {
  std::unordered_map<const VarNode*, const Expr*> def;
  for (auto* l : lets)
    for (auto& b : *l) def[b.var.get()] = &b.value;
  double cost = 0;
  for (auto& blk : blocks) {
    std::unordered_set<const VarNode*> vs;
    for (auto& g : blk) {
      collect_vars(g.term, &vs);
      cost += expr_flops(g.term);
      for (auto& x : g.guards) {
        collect_vars(x, &vs);
        cost += expr_flops(x);
      }
    }
    std::vector<const VarNode*> todo(vs.begin(), vs.end());
    std::unordered_set<const VarNode*> seen;
    while (!todo.empty()) {
      const VarNode* v = todo.back();
      todo.pop_back();
      if (!seen.insert(v).second) continue;
      auto it = def.find(v);
      if (it == def.end()) continue;
      cost += expr_flops(*it->second);
      std::unordered_set<const VarNode*> more;
      collect_vars(*it->second, &more);
      todo.insert(todo.end(), more.begin(), more.end());
    }
  }
  return cost;
}

bool GradientBuilder::load_stored_value(const Unit& u, const Scope& S, const std::vector<Binding>& adj_lets,
                                        const std::vector<std::vector<LeafTerm>>& blocks) {
  const VarNode* root = S.lets.back().var.get();
  std::unordered_map<const VarNode*, const Expr*> def;
  for (auto& b : S.lets) def[b.var.get()] = &b.value;
  for (auto& b : adj_lets) def[b.var.get()] = &b.value;
  // The let-bound vars a set of expressions needs (not expanding `stop`).
  auto closure = [&](std::vector<const VarNode*> todo, const VarNode* stop) {
    std::unordered_set<const VarNode*> out;
    while (!todo.empty()) {
      const VarNode* v = todo.back();
      todo.pop_back();
      if (!out.insert(v).second || v == stop) continue;
      auto it = def.find(v);
      if (it == def.end()) continue;
      std::unordered_set<const VarNode*> vs;
      collect_vars(*it->second, &vs);
      todo.insert(todo.end(), vs.begin(), vs.end());
    }
    return out;
  };
  std::vector<const VarNode*> root_only{root};
  auto root_cl = closure(root_only, nullptr);
  double inline_cost = 0;
  for (auto& blk : blocks) {
    std::unordered_set<const VarNode*> vs;
    for (auto& g : blk) {
      collect_vars(g.term, &vs);
      for (auto& x : g.guards) collect_vars(x, &vs);
    }
    auto need = closure(std::vector<const VarNode*>(vs.begin(), vs.end()), root);
    if (!need.count(root)) continue;
    for (auto* v : root_cl) {
      if (v != root && need.count(v)) continue;
      if (auto it = def.find(v); it != def.end()) inline_cost += expr_flops(*it->second);
    }
  }
  if (inline_cost == 0) return false;
  double fwd_cost = 0;
  for (auto& b : S.lets) fwd_cost += expr_flops(b.value);
  return fwd_cost < inline_cost || version_needed(u.ver_out.get());
}

void GradientBuilder::reverse_unit(Unit& u) {
  Buffer G = adj_read(u.ver_out);
  if (u.inactive || !G.defined() || !active_.count(u.Y.get())) return;
  // A scan adds into the cotangents of its own earlier steps: G must be a buffer of ours.
  if (!u.carried.empty()) G = adj_write(u.ver_out);
  const std::vector<Expr>& I = u.store->indices;
  std::vector<Expr> I_ad;
  for (auto& i : I) I_ad.push_back(rename_ad(u, i));
  Expr Gi = make_load(G, I_ad);
  const std::string bname = u.blk->name;

  // Pass-through to the previous version of Y (for a scan, after the reverse scan has made
  // G complete: a step may read an element that no step writes).
  // A spatial accumulation (Unit::accum_E) passes the cotangent through whole, as a sum does;
  // before, a mask zeroed the elements it wrote and the Y[I] read added G back there.
  const bool self_accum = u.accum_E.defined() && u.scan_iv < 0 && u.region < 0 && u.ver_in.defined();
  const bool negate = u.kind == RedKind::Sum ? u.negate : self_accum && u.accum_neg;
  bool exact_pass = (u.kind == RedKind::Sum && !u.init_store) || self_accum;
  auto emit_pass = [&] {
    if (u.ver_in.defined() && (exact_pass || !u.full)) {
      Buffer prev;
      if (adj_.count(u.ver_in.get())) {
        prev = adj_.at(u.ver_in.get());
        emit(elementwise(bname + "_pass", prev, [&](const std::vector<Expr>& iv) {
          return make_store(prev, iv, make_load(prev, iv) + make_load(G, iv));
        }));
      } else {
        prev = new_buffer(u.Y->name + "_grad", u.ver_in, u.ver_in->dtype);
        emit(elementwise(bname + "_pass", prev, [&](const std::vector<Expr>& iv) {
          return make_store(prev, iv, make_load(G, iv));
        }));
        adj_[u.ver_in.get()] = prev;
      }
      if (!exact_pass) {
        // The elements that u overwrote do not flow back (zeroed over u's iteration space).
        emit(clone_block(
            u, bname + "_mask",
            [&] { return body_with_items(u, make_store(prev, I_ad, make_const(prev->dtype, 0)), true); },
            nullptr, false));
      }
    }
  };
  if (u.scan_iv < 0) emit_pass();

  // The previous content of Y flows on where the block never runs its init point (every
  // reduce var 0), which the adjoint below routes only through that point: where the reduce
  // domain is empty at run time (a symbolic extent 0: the max, min or product is Y's earlier
  // value, and the sum with an init leaves it too), and where a `where` skips that point.
  // The first is handled (`empty`, below); the second is refused unless the condition is
  // provably true at the point (outsider round 11: F_grad dropped the earlier value's
  // gradient, or read an arg/zero buffer no init had filled).
  const size_t first_emitted = bwd_.size();
  Expr nonempty;
  const bool init_flow =
      u.kind != RedKind::Spatial && !exact_pass && u.ver_in.defined() && u.scan_iv < 0 && u.region < 0;
  if (init_flow) {
    std::unordered_set<const VarNode*> red_vars, spatial_vars;
    std::vector<Expr> sym_extents;  // symbolic extents already in `nonempty`
    for (size_t i = 0; i < u.blk->iter_vars.size(); ++i) {
      collect_vars(u.br->bindings[i],
                   u.blk->iter_vars[i].kind == IterKind::Reduce ? &red_vars : &spatial_vars);
      if (u.blk->iter_vars[i].kind != IterKind::Reduce) continue;
      const Expr& ext = u.blk->iter_vars[i].extent;
      int64_t c;
      if (is_const_int(ext, &c) && c >= 1) continue;
      Expr ne = make_binary(BinOp::GE, ext, make_const(ext.dtype(), 1));
      nonempty = nonempty.defined() ? make_binary(BinOp::And, nonempty, ne) : ne;
      sym_extents.push_back(ext);
    }
    std::unordered_map<const VarNode*, Expr> at_first;
    std::vector<Expr> conds;
    if (u.br->predicate.defined()) conds.push_back(u.br->predicate);
    std::unordered_set<const VarNode*> loop_vars;
    for (auto& pe : u.path)
      if (auto* f = pe.s.as<ForNode>()) loop_vars.insert(f->loop_var.get());
    for (auto& pe : u.path) {
      if (auto* f = pe.s.as<ForNode>()) {
        if (!red_vars.count(f->loop_var.get())) continue;
        at_first[f->loop_var.get()] = f->min;
        // A reduce loop of symbolic extent empties the domain where it is 0 (the iter var's
        // extent may stay constant: `for k in serial(n)` bound to `vk: reduce(3) = k`).
        int64_t c;
        if (is_const_int(f->extent, &c) && c >= 1) continue;
        std::unordered_set<const VarNode*> vs;
        collect_vars(f->extent, &vs);
        for (auto* v : vs)
          if (loop_vars.count(v))
            throw Error("block " + bname + ": the extent " + print_expr(f->extent) + " of its reduce loop " +
                        f->loop_var.name() + " depends on loop " + v->name + " and may be 0 there, where " +
                        u.Y->name + "'s earlier value would flow on: not differentiated");
        bool known = false;
        for (auto& e : sym_extents) known = known || expr_identical(e, f->extent);
        if (known) continue;
        sym_extents.push_back(f->extent);
        Expr ne = make_binary(BinOp::GE, f->extent, make_const(f->extent.dtype(), 1));
        nonempty = nonempty.defined() ? make_binary(BinOp::And, nonempty, ne) : ne;
      } else if (auto* c = pe.s.as<IfThenElseStmtNode>()) {
        conds.push_back(pe.else_branch ? make_unary(UnOp::Not, c->cond) : c->cond);
      }
    }
    // The adjoint takes the first point (every reduce var 0, where the init runs) to be the
    // reduce loops' first iteration. Bindings that miss 0 there (`vk: reduce(4) = k + 1`) may
    // never run the init: Y's earlier value then flows on (found by the h8 generator:
    // F_grad dropped its gradient, or read arg / zero buffers no init had filled).
    for (size_t i = 0; i < u.blk->iter_vars.size(); ++i) {
      if (u.blk->iter_vars[i].kind != IterKind::Reduce) continue;
      Expr at0 = simplify(substitute(u.br->bindings[i], at_first));
      int64_t v;
      if (!is_const_int(at0, &v) || v != 0)
        throw Error("block " + bname + ": the binding " + u.blk->iter_vars[i].var.name() + " = " +
                    print_expr(u.br->bindings[i]) +
                    " is not 0 at the first iteration of its reduce loops, so the reduction's first "
                    "point (every reduce var 0, where the init runs) may never run and " +
                    u.Y->name + "'s earlier value would flow on: not differentiated");
    }
    for (auto& c : conds) {
      std::unordered_set<const VarNode*> vs;
      collect_vars(c, &vs);
      bool on_reduce = false, mixed = false;
      for (auto* v : vs) {
        on_reduce = on_reduce || red_vars.count(v);
        mixed = mixed || (red_vars.count(v) && spatial_vars.count(v));
      }
      if (!on_reduce) continue;
      Expr at0 = simplify(substitute(c, at_first));
      int64_t v;
      if (mixed || !is_const_int(at0, &v) || v == 0)
        throw Error(
            "block " + bname + ": its condition " + print_expr(c) +
            " may skip the reduction's first point (every reduce var 0), where " + u.Y->name +
            "'s earlier value would flow on: not differentiated (write the condition into the update: " +
            "`select(cond, E, 0.0)` for a sum, the identity of the reduction otherwise)");
    }
  }

  // Without an earlier value, an empty domain leaves Y unwritten (the init never runs) and
  // the arg / zero / product buffers unfilled: the blocks reading them must not run there
  // either (contract round 13: `check-grad --input n=0` of a max with an init read M_arg).
  if (!init_flow && u.kind != RedKind::Spatial && !exact_pass && u.scan_iv < 0 && u.region < 0) {
    std::unordered_set<const VarNode*> red_vars, loop_vars;
    std::vector<Expr> sym_extents;
    auto add = [&](const Expr& ext) {
      int64_t c;
      if (is_const_int(ext, &c) && c >= 1) return;
      std::unordered_set<const VarNode*> vs;
      collect_vars(ext, &vs);
      for (auto* v : vs)
        if (loop_vars.count(v)) return;  // not expressible outside the nest: left unguarded
      for (auto& e : sym_extents)
        if (expr_identical(e, ext)) return;
      sym_extents.push_back(ext);
      Expr ne = make_binary(BinOp::GE, ext, make_const(ext.dtype(), 1));
      nonempty = nonempty.defined() ? make_binary(BinOp::And, nonempty, ne) : ne;
    };
    for (auto& pe : u.path)
      if (auto* f = pe.s.as<ForNode>()) loop_vars.insert(f->loop_var.get());
    for (size_t i = 0; i < u.blk->iter_vars.size(); ++i) {
      if (u.blk->iter_vars[i].kind != IterKind::Reduce) continue;
      collect_vars(u.br->bindings[i], &red_vars);
      add(u.blk->iter_vars[i].extent);
    }
    for (auto& pe : u.path)
      if (auto* f = pe.s.as<ForNode>(); f && red_vars.count(f->loop_var.get())) add(f->extent);
  }

  // Auxiliary reductions for max/min (arg-extremum) and product (zero count, product).
  Buffer K, Z, P;
  Expr lin = reduce_index(u);
  Expr Yk = make_load(u.ver_out, I_ad);
  Expr Ead = rename_ad(u, self_accum ? u.accum_E : u.update);
  if (u.kind == RedKind::Max || u.kind == RedKind::Min) {
    K = new_buffer(u.Y->name + "_arg", u.Y, DType::I32);
    // The arg-extremum scatter (emit_argext) runs over every spatial point, but the arg
    // block's init fills K only where the block runs: a `where` or an `if` that skips some
    // elements (`where i < 2`, `if n > 1`) left K unfilled there (F_grad read uninitialised
    // elements: found by the h8 generator). Those elements keep kNoIndex: no scatter.
    if (!u.full)
      emit(elementwise(bname + "_arg_fill", K,
                       [&](const std::vector<Expr>& iv) { return make_store(K, iv, make_int(kNoIndex)); }));
    emit(clone_block(
        u, bname + "_arg",
        [&] {
          Expr cand = make_select(make_binary(BinOp::EQ, Ead, Yk), lin, make_int(kNoIndex));
          return body_with_items(u, make_store(K, I_ad, min(make_load(K, I_ad), cand)), true);
        },
        [&] { return make_store(K, I_ad, make_int(kNoIndex)); }, false));
  }
  // Product: Z = the first zero factor (lexicographic reduce index, kNoIndex if none) and
  // P = cotangent * init * product of the factors with the first zero replaced by 1. Then
  // dE_k = P / E_k where no factor is zero, P at the first zero, 0 elsewhere (exact: P is
  // the product of the others, 0 when a second zero exists): one division per factor.
  Expr base;
  bool base_active = false;
  if (u.kind == RedKind::Prod) {
    base = u.init_store ? rename_ad(u, u.init_store->value) : make_load(u.ver_in, I_ad);
    for (size_t i = u.init_lets.size(); u.init_store && i-- > 0;)
      base = make_let(u.init_lets[i].var, rename_ad(u, u.init_lets[i].value), base);
    // The init runs where every reduce var is 0: `init { C[vi] = A[vk] }` is A[0]. The main
    // update's seed multiplies by base at every reduce point, where vk is not 0 (it used the
    // factor A[vk] there: outsider round 11, tests/accept/outsider_r11_test.cpp).
    if (u.init_store) {
      std::unordered_map<const VarNode*, Expr> at0;
      for (auto& iv : u.reduce_iters) at0[iv.var.get()] = make_const(iv.var.dtype(), 0);
      base = substitute(base, at0);
    }
    for_each_expr(base, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) {
        auto it = orig_of_.find(l->buffer.get());
        if (it != orig_of_.end() && active_.count(it->second) && is_float(l->buffer->dtype))
          base_active = true;
      }
    });
    DType T = u.Y->dtype;
    Z = new_buffer(u.Y->name + "_zarg", u.Y, DType::I32);
    P = new_buffer(u.Y->name + "_gprod", u.Y, T);
    Expr is0 = make_binary(BinOp::EQ, Ead, make_const(T, 0));
    emit(clone_block(
        u, bname + "_zarg",
        [&] {
          Expr cand = make_select(is0, lin, make_int(kNoIndex));
          return body_with_items(u, make_store(Z, I_ad, min(make_load(Z, I_ad), cand)), true);
        },
        [&] { return make_store(Z, I_ad, make_int(kNoIndex)); }, false));
    Expr first0 = make_binary(BinOp::EQ, lin, make_load(Z, I_ad));
    emit(clone_block(
        u, bname + "_gprod",
        [&] {
          return body_with_items(
              u, make_store(P, I_ad, make_load(P, I_ad) * make_select(first0, make_const(T, 1), Ead)), true);
        },
        [&] {
          Expr init = Gi;
          if (!base_active && !is_one(base)) init = Gi * base;
          return make_store(P, I_ad, init);
        },
        false));
  }

  auto active_fn = [this](const Buffer& b) {
    auto it = orig_of_.find(b.get());
    return it != orig_of_.end() && active_.count(it->second) != 0;
  };
  ExprAD ad(names_, active_fn);
  DType T = u.Y->dtype;
  // Main update.
  {
    Scope S;
    std::vector<Expr> guards;
    std::vector<size_t> gpos;  // lets the forward evaluates before each guard
    for (auto& it : u.items) {
      if (it.is_let) {
        ad.bind_let(it.var, rename_ad(u, it.value), S);
      } else {
        guards.push_back(ad.subst(rename_ad(u, it.value)));
        gpos.push_back(S.lets.size());
      }
    }
    for (auto& o : u.once) guards.push_back(o), gpos.push_back(0);
    // The store's indices may use the block's lets (`let j = i32(floor(p)); Y[j] = ...`),
    // which the linearisation rebinds to its temps: the cotangent and the stored value are
    // loaded at the substituted indices (unbound let vars in F_grad before).
    std::vector<Expr> I_s;
    for (auto& i : I_ad) I_s.push_back(ad.subst(i));
    const Expr Gi_s = make_load(G, I_s), Yk_s = make_load(u.ver_out, I_s);
    Expr root = ad.linearize(Ead, S);
    Expr seed = Gi_s;
    bool root_let = !S.lets.empty() && root.same_as(S.lets.back().var);
    if (u.kind == RedKind::Spatial && u.scan_iv >= 0) {
      // The stored value is materialised: adjoints that need it read it back.
      if (root_let) S.lets.back().value = Yk_s;
    } else if (u.kind == RedKind::Sum || self_accum) {
      if (negate) seed = -Gi_s;
    } else if (u.kind == RedKind::Prod) {
      Expr z = make_load(Z, I_s), p = make_load(P, I_s);
      // if_then_else, not select: the division is evaluated (and differentiated again)
      // only where no factor is zero.
      seed = make_if_then_else(make_binary(BinOp::EQ, z, make_int(kNoIndex)), p / root,
                               make_select(make_binary(BinOp::EQ, lin, z), p, make_const(T, 0)));
      if (base_active) seed = base * seed;
    }
    // Reverse sweep seeded with sd; leaf terms grouped by (load, guards).
    auto sweep = [&](const Expr& sd, std::vector<Binding>* al, std::vector<LeafTerm>* gs) {
      std::vector<LeafTerm> leaves;
      ad.reverse(S, {{root, sd}}, guards, al, &leaves);
      for (auto& lt : leaves) {
        bool merged = false;
        for (auto& g : *gs)
          if (expr_identical(g.load, lt.load) && g.guards.size() == lt.guards.size()) {
            bool same = true;
            for (size_t i = 0; i < g.guards.size() && same; ++i)
              same = expr_identical(g.guards[i], lt.guards[i]);
            if (!same) continue;
            g.term = g.term + lt.term;
            merged = true;
            break;
          }
        if (!merged) gs->push_back(lt);
      }
    };
    std::vector<Binding> adj_lets;
    std::vector<LeafTerm> groups;
    sweep(seed, &adj_lets, &groups);
    if ((u.kind == RedKind::Spatial || u.kind == RedKind::Sum) && u.scan_iv < 0) {
      // The vector-Jacobian product is linear in the cotangent: sweeping with seed 1 gives
      // each leaf's local derivative J, and its term is then G * J. Cheaper when several
      // paths reach one leaf (silu's x * sigmoid(x): G * (s + x * (s * (1 - s))), 6 FLOPs,
      // instead of G * s + (G * x) * (s * (1 - s)), 7); dearer when one adjoint feeds
      // several leaves. The cheaper sweep is kept.
      std::vector<Binding> al1;
      std::vector<LeafTerm> g1;
      sweep(make_const(T, 1), &al1, &g1);
      // A leaf of another dtype than the cotangent (f32 X under `f64(X)`) has J = f32(J64):
      // G * J would mix dtypes, and G's rounding belongs before the cast. Those keep the
      // sweep seeded with G.
      bool same_dtypes = true;
      for (auto& g : g1) same_dtypes = same_dtypes && g.term.dtype() == Gi_s.dtype();
      for (auto& g : g1) {
        Expr t = is_one(g.term) ? Gi_s : Gi_s * g.term;
        g.term = negate ? make_unary(UnOp::Neg, t) : t;
      }
      // Costed per emitted block (the pointwise leaves share one).
      auto cost = [&](const std::vector<Binding>& al, const std::vector<LeafTerm>& gs) {
        std::vector<LeafTerm> pw, rest;
        split_pointwise(u, gs, &pw, &rest);
        std::vector<std::vector<LeafTerm>> blocks;
        if (!pw.empty()) blocks.push_back(pw);
        for (auto& g : rest) blocks.push_back({g});
        return leaf_terms_cost({&S.lets, &al}, blocks);
      };
      if (same_dtypes && cost(al1, g1) < cost(adj_lets, groups)) {
        adj_lets = std::move(al1);
        groups = std::move(g1);
      }
    }
    if (u.scan_iv >= 0) {
      std::vector<LeafTerm> carried, rest;
      for (auto& g : groups)
        (g.load.as<LoadNode>()->buffer.same_as(u.ver_out) && !u.carried.empty() ? carried : rest)
            .push_back(g);
      // A backward step that adds into two or more earlier elements (gru_torch's H[t-1, 0],
      // H[t-1, 1], H[t-1, j]) is not differentiated again anyway (Scans): it also stores the
      // let values with FLOPs that the deferred gathers use (tape_deferred), which recomputed
      // the step's cell once more (hoisting shared them, but once more than the step).
      // TIRC_AD_NO_STEP_TAPES=1 turns it off (to measure).
      std::vector<TapeStore> tapes;
      if (carried.size() >= 2 && !rest.empty() && !std::getenv("TIRC_AD_NO_STEP_TAPES")) {
        std::unordered_set<const LeafTerm*> is_carried;
        for (auto& g : groups)
          if (g.load.as<LoadNode>()->buffer.same_as(u.ver_out)) is_carried.insert(&g);
        tapes = tape_deferred(
            u, S, adj_lets, I_s, [&](const LeafTerm& g) { return is_carried.count(&g) != 0; }, &groups);
        if (!tapes.empty()) {
          rest.clear();
          for (auto& g : groups)
            if (!is_carried.count(&g)) rest.push_back(g);
        }
        if (!std::getenv("TIRC_AD_NO_EQUAL_TAPES")) tape_equal_terms(u, I_s, carried, &rest, &tapes);
      }
      if (!carried.empty()) emit_reverse_scan(u, G, {&S.lets, &adj_lets}, carried, guards, gpos, tapes);
      emit_pass();
      groups = std::move(rest);
    }
    std::vector<LeafTerm> pointwise, scattered;
    split_pointwise(u, groups, &pointwise, &groups);
    split_injective(u, {&S.lets, &adj_lets}, &pointwise, &groups, &scattered);
    if (u.kind == RedKind::Spatial && u.scan_iv < 0 && root_let && !self_accum) {
      std::vector<std::vector<LeafTerm>> blocks;
      if (!pointwise.empty()) blocks.push_back(pointwise);
      for (auto& g : groups) blocks.push_back({g});
      if (load_stored_value(u, S, adj_lets, blocks)) S.lets.back().value = Yk_s;
    }
    emit_pointwise(u, {&S.lets, &adj_lets}, pointwise, gpos, scattered);
    for (auto& g : groups) {
      if (u.kind == RedKind::Max || u.kind == RedKind::Min)
        emit_argext(u, {&S.lets, &adj_lets}, g, K, I_s);
      else
        emit_contribution(u, {&S.lets, &adj_lets}, g, gpos);
    }
  }
  // Initial value (init store, or the previous content for reductions without init):
  // evaluated once per spatial point, i.e. where every reduce var is 0.
  if (u.kind != RedKind::Spatial && !exact_pass) {
    std::vector<Expr> rz;
    for (auto& iv : u.reduce_iters) rz.push_back(make_binary(BinOp::EQ, iv.var, make_int(0, iv.var.dtype())));
    Scope S0;
    Expr root0;
    if (u.init_store) {
      for (auto& l : u.init_lets) ad.bind_let(l.var, rename_ad(u, l.value), S0);
      root0 = ad.linearize(rename_ad(u, u.init_store->value), S0);
    } else {
      root0 = make_load(u.ver_in, I_ad);
    }
    Expr seed = Gi;
    std::vector<Expr> guards = rz;
    if (u.kind == RedKind::Max || u.kind == RedKind::Min)
      guards.push_back(make_binary(BinOp::EQ, make_load(K, I_ad), make_int(kNoIndex)));
    if (u.kind == RedKind::Prod) {
      seed = make_select(make_binary(BinOp::EQ, make_load(Z, I_ad), make_int(kNoIndex)), make_load(P, I_ad),
                         make_const(T, 0));
    }
    std::vector<Binding> adj_lets;
    std::vector<LeafTerm> leaves;
    ad.reverse(S0, {{root0, seed}}, guards, &adj_lets, &leaves);
    for (auto& g : leaves)
      emit_contribution(u, {&S0.lets, &adj_lets}, g, std::vector<size_t>(guards.size(), 0));
  }
  if (nonempty.defined()) {
    // The blocks reading the arg / zero / product buffers (filled by inits that an empty
    // domain never runs) run only where it is not empty; where it is, Y's earlier value is Y.
    std::unordered_set<const BufferNode*> aux;
    for (auto* b : {&K, &Z, &P})
      if (b->defined()) aux.insert(b->get());
    for (size_t i = first_emitted; i < bwd_.size(); ++i) {
      bool reads_aux = false;
      for_each_expr(bwd_[i], [&](const Expr& x) {
        if (auto* l = x.as<LoadNode>()) reads_aux = reads_aux || aux.count(l->buffer.get());
      });
      if (reads_aux) bwd_[i] = AddPredicate(nonempty).mutate(bwd_[i]);
    }
  }
  if (init_flow && nonempty.defined() && u.full) {  // (not full: emit_pass passed it everywhere)
    Buffer prev = adj_write(u.ver_in);
    Stmt pass = elementwise(bname + "_empty", prev, [&](const std::vector<Expr>& iv) {
      return make_store(prev, iv, make_load(prev, iv) + make_load(G, iv));
    });
    emit(AddPredicate(make_unary(UnOp::Not, nonempty)).mutate(pass));
    zero_init_.erase(prev.get());  // not a fresh buffer: a later first contribution must add
  }
}

bool GradientBuilder::gather_costs_more(const GatherInput& gi,
                                        const std::vector<GatherResult>& results) const {
  std::vector<Expr> fl;
  for (auto& l : gi.loops) fl.push_back(l.extent);
  double fwd = box_points(fl);
  if (fwd < 0) return false;
  double gather = 0;
  for (auto& r : results) {
    std::vector<Expr> gl;
    for (auto& l : r.loops) gl.push_back(make_extent(l.lo, l.hi));
    double n = box_points(gl);
    if (n < 0) return false;
    gather += n;
  }
  return gather > kGatherOverScatter * fwd;
}

void GradientBuilder::emit_contribution(Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                                        const LeafTerm& leaf, const std::vector<size_t>& gpos) {
  auto* ld = leaf.load.as<LoadNode>();
  Buffer A = adj_write(ld->buffer);
  auto zit = zero_init_.find(A.get());
  bool fresh = zit != zero_init_.end();
  size_t zero_idx = fresh ? zit->second : 0;
  if (fresh) zero_init_.erase(zit);
  std::unordered_set<const VarNode*> top;
  for (auto* l : lets)
    for (auto& b : *l) top.insert(b.var.get());
  // Outer guards restrict the gather (or wrap everything); u's own guards that use a let
  // go at their place among the lets (placed); inner ones (arm guards that use a let or read
  // a buffer) sit inside the lets, around the store, nested in order (a later one may load
  // what an earlier one checks).
  std::vector<Expr> outer, inner;
  std::vector<std::pair<Expr, size_t>> placed;
  for (size_t k = 0; k < leaf.guards.size(); ++k) {
    const Expr& g = leaf.guards[k];
    std::unordered_set<const VarNode*> vs;
    collect_vars(g, &vs);
    bool uses = false;
    for (auto* v : vs)
      if (top.count(v)) uses = true;
    if (k < gpos.size() && uses)
      placed.push_back({g, gpos[k]});
    else if (k >= gpos.size() && (uses || loads_any(g)))
      inner.push_back(g);
    else
      outer.push_back(g);
  }
  bool overwrite = false;  // first contribution covering every element once: a plain store
  bool plain = false;      // first contribution, each element at most once: no add to the zeros
  auto make_body = [&](const std::vector<Expr>& target) {
    Expr cur = make_load(A, target);
    Expr term = leaf.term;
    Expr val;
    if (overwrite || plain)
      val = term;
    else if (auto* n = term.as<UnaryNode>(); n && n->op == UnOp::Neg)
      val = cur - n->a;
    else
      val = cur + term;
    Stmt s = make_store(A, target, val);
    for (size_t k = inner.size(); k-- > 0;) s = make_if(inner[k], s);
    std::unordered_set<const VarNode*> need;
    collect_vars(term, &need);
    for (auto& g : inner) collect_vars(g, &need);
    // A scatter's target is the read's own index, which may use lets (`X[v, i32(floor(t))]`
    // with t a temp the term does not use): they were left unbound, and the interpreter
    // read a stale binding of another block (a silently wrong second order).
    for (auto& i : target) collect_vars(i, &need);
    return wrap_lets_and_guards(s, lets, need, placed);
  };
  const std::string name = u.blk->name + "_d" + ld->buffer->name;

  // Gather: solve the index equations over the forward loop nest.
  GatherInput gi;
  std::unordered_map<const VarNode*, Expr> path_lets;
  for (auto& pe : u.path) {
    if (auto* f = pe.s.as<ForNode>()) {
      gi.loops.push_back({f->loop_var, substitute(f->min, path_lets), substitute(f->extent, path_lets)});
    } else if (auto* c = pe.s.as<IfThenElseStmtNode>()) {
      Expr cond = substitute(c->cond, path_lets);
      gi.conds.push_back(pe.else_branch ? make_unary(UnOp::Not, cond) : cond);
    } else if (auto* l = pe.s.as<LetStmtNode>()) {
      path_lets[l->var.get()] = substitute(l->value, path_lets);
    }
  }
  std::unordered_map<const VarNode*, Expr> iter_to_loop;
  for (size_t i = 0; i < u.blk->iter_vars.size(); ++i)
    iter_to_loop[u.blk->iter_vars[i].var.get()] = substitute(u.br->bindings[i], path_lets);
  gi.conds.push_back(substitute(u.br->predicate, path_lets));
  for (auto& g : outer) gi.conds.push_back(substitute(g, iter_to_loop));
  for (auto& i : ld->indices) gi.index.push_back(substitute(i, iter_to_loop));
  gi.shape = A->shape;
  // Residue splits for indices stride*u + w + k with w running over more than `stride`
  // values (strided / dilated windows): one exact gather per residue class.
  std::vector<std::pair<size_t, ResidueSplit>> cands;  // (number of residues, split template)
  for (size_t d = 0; d < gi.index.size(); ++d) {
    auto a = to_affine(gi.index[d]);
    if (!a || a->terms.size() != 2) continue;
    const LoopRange *lu = nullptr, *lw = nullptr;
    int64_t s = 0;
    for (auto& [v, c] : a->terms)
      for (auto& l : gi.loops)
        if (l.var.same_as(v)) {
          if (c == 1 && !lw)
            lw = &l;
          else if (c > 1)
            lu = &l, s = c;
        }
    int64_t wext, wmin;
    if (!lu || !lw || !is_const_int(lw->extent, &wext) || !is_const_int(lw->min, &wmin) || wext <= s)
      continue;
    int64_t uext;
    if (!is_const_int(lu->extent, &uext) || uext <= 1) continue;
    // One split per window var: a second split of the same w (`X[3 * j + i, 2 * j + i]`)
    // would restrict w to a second residue class the solver cannot tie to the first (its
    // counter was left unbound in F_grad). The other dimension is solved by elimination.
    bool w_split = false;
    for (auto& c : cands) w_split = w_split || c.second.w.same_as(lw->var);
    if (w_split) continue;
    ResidueSplit sp{d, s, 0, lw->var, a->constant};
    cands.push_back({static_cast<size_t>(s), sp});
  }
  std::vector<GatherResult> results;
  bool solved = false;
  if (!cands.empty()) {
    size_t combos = 1;
    for (auto& c : cands) combos *= c.first;
    solved = combos <= 64;
    for (size_t k = 0; k < combos && solved; ++k) {
      GatherInput g2 = gi;
      size_t rem = k;
      for (auto& [n, sp] : cands) {
        ResidueSplit x = sp;
        x.residue = static_cast<int64_t>(rem % n);
        rem /= n;
        x.w_residue = ((x.residue - sp.w_residue) % x.stride + x.stride) % x.stride;
        g2.splits.push_back(x);
      }
      auto r = solve_gather(g2, names_);
      if (!r)
        solved = false;
      else if (!r->empty)
        results.push_back(std::move(*r));
    }
    if (!solved) results.clear();
  }
  if (!solved) {
    auto r = solve_gather(gi, names_);
    if (r) {
      solved = true;
      if (!r->empty) results.push_back(std::move(*r));
    }
  }
  if (solved && gather_costs_more(gi, results)) solved = false;
  if (solved) {
    // Zero elimination beyond the first contribution: the elements written since the
    // zero-initialisation are tracked as boxes (while only gathers write the buffer); a
    // gather whose boxes miss them all also stores its term onto zeros (the gates of an
    // LSTM: dXU[t, j], dXU[t, j + 4], ... from different reads).
    auto bit = boxes_.find(A.get());
    bool tracked = fresh || bit != boxes_.end();
    std::vector<Box> prior, added;
    if (!fresh && tracked) prior = bit->second;
    bool disjoint = tracked;
    for (auto& res : results) {
      added.push_back(target_box(res, A));
      for (auto& p : prior) disjoint = disjoint && boxes_disjoint(p, added.back());
    }
    for (auto& res : results) {
      auto* r = &res;
      overwrite = false;
      if (fresh && results.size() == 1 && inner.empty() && placed.empty() && r->residual.empty() &&
          is_one(r->predicate) && r->predicate.dtype() == DType::Bool && r->loops.size() == A->ndim()) {
        overwrite = true;
        for (size_t d = 0; d < r->loops.size() && overwrite; ++d) {
          auto& gl = r->loops[d];
          overwrite = gl.kind == IterKind::Spatial && r->target_index[d].same_as(gl.iter_var) &&
                      is_zero(gl.lo) && same_extent(gl.hi, A->shape[d]);
        }
        if (overwrite) bwd_[zero_idx] = Stmt();
      }
      // A gather without reduce loops writes each element at most once (the spatial loops
      // are the independent target indices; residue classes are disjoint): onto the fresh
      // zeros, the term is stored as is (strided_slice, pad-like slices: no `0 + a`).
      plain = disjoint && !overwrite;
      for (auto& gl : r->loops) plain = plain && gl.kind == IterKind::Spatial;
      std::unordered_map<const VarNode*, Expr> iter_new;
      for (auto& [k, v] : iter_to_loop) iter_new[k] = substitute(v, r->subst);
      Stmt body = substitute(make_body(r->target_index), iter_new);
      // Data-dependent residuals keep their order, each in an `if` of its own: a later one may
      // load at an index an earlier one checks (`Y_arg != none`, then `I[Y_arg] == vs`).
      if (!r->residual.empty()) body = guard_all(r->residual, body);
      BlockNode bn;
      bn.name = names_.unique(name);
      std::vector<Expr> bindings;
      for (auto& gl : r->loops) {
        bn.iter_vars.push_back({gl.iter_var, gl.kind, gl.iter_extent});
        bindings.push_back(gl.binding);
      }
      bn.body = body;
      set_regions(bn);
      Stmt st = make_block_realize(bindings, r->predicate, make_block(std::move(bn)));
      for (size_t i = r->loops.size(); i-- > 0;) {
        auto& gl = r->loops[i];
        st = make_for(gl.loop_var, gl.lo, make_extent(gl.lo, gl.hi), ForKind::Serial, st);
      }
      emit(st);
    }
    if (tracked) {
      prior.insert(prior.end(), added.begin(), added.end());
      boxes_[A.get()] = std::move(prior);
    }
    return;
  }
  // Scatter fallback over the forward iteration space.
  std::vector<Expr> target;
  for (auto& i : ld->indices) target.push_back(i);
  Stmt body = make_body(target);
  if (!outer.empty()) body = guard_all(outer, body);
  emit(clone_block(u, name, [&] { return body; }, nullptr, true, {{"atomic", "1"}}));
}

void GradientBuilder::emit_reverse_scan(Unit& u, const Buffer& G,
                                        const std::vector<const std::vector<Binding>*>& lets,
                                        const std::vector<LeafTerm>& carried, const std::vector<Expr>& guards,
                                        const std::vector<size_t>& gpos,
                                        const std::vector<TapeStore>& tapes) {
  const BlockNode& b = *u.blk;
  const std::vector<Expr>& I = u.store->indices;
  bool cross = false;  // a step feeds earlier elements of other spatial points
  for (auto& g : carried) {
    auto* ld = g.load.as<LoadNode>();
    for (size_t d = 0; d < I.size(); ++d)
      if (d != u.scan_dim && !expr_identical(ld->indices[d], I[d])) cross = true;
  }
  std::vector<Expr> outer;
  std::vector<std::pair<Expr, size_t>> placed;
  split_own_guards(guards, gpos, lets, &outer, &placed);
  Stmt body = accumulate_leaves(
      carried, guards, lets, [&](const LoadNode*) { return G; }, tapes, placed);
  if (!outer.empty()) body = guard_all(outer, body);
  // The loop runs backwards: t -> (2 min + extent - 1) - t in the bindings and predicate, and
  // the new scan var w counts the steps from the end (s = extent - 1 - w), so that it still
  // increases as the block runs.
  const ForNode* L = u.scan_loop;
  Expr t = L->loop_var;
  DType lt = t.dtype();
  Expr t_rev = (L->min + L->min + L->extent - make_const(lt, 1)) - t;
  std::unordered_map<const VarNode*, Expr> loop_sub{{L->loop_var.get(), t_rev}};
  BlockNode bn;
  bn.name = names_.unique(b.name + "_rev");
  std::unordered_map<const VarNode*, Expr> m;
  std::vector<Expr> bindings;
  for (size_t j = 0; j < b.iter_vars.size(); ++j) {
    const IterVar& iv = b.iter_vars[j];
    Var nv(names_.fresh(iv.var.name()), iv.var.dtype());
    IterKind kind = iv.kind == IterKind::Spatial && cross ? IterKind::Reduce : iv.kind;
    bn.iter_vars.push_back({nv, kind, iv.extent});
    if (static_cast<int>(j) == u.scan_iv) {
      Expr last = iv.extent - make_const(iv.extent.dtype(), 1);
      m[iv.var.get()] = last - nv;
      bindings.push_back(last - substitute(u.br->bindings[j], loop_sub));
    } else {
      m[iv.var.get()] = nv;
      bindings.push_back(u.br->bindings[j]);
    }
  }
  bn.body = substitute(body, m);
  if (cross) bn.annotations = {{"atomic", "1"}};
  finish_scatter_block(bn);
  set_regions(bn);
  Stmt st = make_block_realize(bindings, substitute(u.br->predicate, loop_sub), make_block(std::move(bn)));
  emit(wrap_path(u, st));
}

void GradientBuilder::emit_argext(Unit& u, const std::vector<const std::vector<Binding>*>& lets,
                                  const LeafTerm& leaf, const Buffer& K, const std::vector<Expr>& I) {
  auto* ld = leaf.load.as<LoadNode>();
  Buffer A = adj_write(ld->buffer);
  zero_init_.erase(A.get());
  BlockNode bn;
  bn.name = names_.unique(u.blk->name + "_d" + ld->buffer->name);
  std::unordered_map<const VarNode*, Expr> m;
  std::vector<Var> loops;
  std::vector<Expr> bindings;
  std::vector<Expr> extents;
  for (auto& iv : u.blk->iter_vars) {
    if (iv.kind != IterKind::Spatial) continue;
    Var l(names_.fresh("i"), iv.var.dtype()), v(names_.fresh(iv.var.name()), iv.var.dtype());
    loops.push_back(l);
    bindings.push_back(l);
    extents.push_back(iv.extent);
    m[iv.var.get()] = v;
    bn.iter_vars.push_back({v, IterKind::Reduce, iv.extent});
  }
  std::vector<Expr> In;
  for (auto& i : I) In.push_back(substitute(i, m));
  Expr k = make_load(K, In);
  // Decode the reduce point from its lexicographic index.
  Expr stride;
  for (size_t j = u.reduce_iters.size(); j-- > 0;) {
    const IterVar& iv = u.reduce_iters[j];
    // K holds reduce_index in i32; each var gets its own dtype back.
    Expr ext = iv.extent.dtype() == DType::I32 ? iv.extent : make_cast(DType::I32, iv.extent);
    Expr q = stride.defined() ? floordiv(k, stride) : k;
    Expr val = j == 0 ? q : floormod(q, ext);
    m[iv.var.get()] = iv.var.dtype() == DType::I32 ? val : make_cast(iv.var.dtype(), val);
    stride = stride.defined() ? stride * ext : ext;
  }
  std::vector<Expr> guards;
  for (auto& g : leaf.guards) guards.push_back(g);
  Stmt s = make_store(A, ld->indices, make_load(A, ld->indices) + leaf.term);
  std::unordered_set<const VarNode*> top;
  for (auto* l : lets)
    for (auto& b : *l) top.insert(b.var.get());
  std::vector<Expr> inner, outer;
  for (auto& g : guards) {
    std::unordered_set<const VarNode*> vs;
    collect_vars(g, &vs);
    bool uses = false;
    for (auto* v : vs)
      if (top.count(v)) uses = true;
    (uses ? inner : outer).push_back(g);
  }
  if (!inner.empty()) s = guard_all(inner, s);
  std::vector<const Binding*> all;
  for (auto* l : lets)
    for (auto& b : *l) all.push_back(&b);
  std::unordered_set<const VarNode*> need;
  collect_vars(leaf.term, &need);
  for (auto& g : inner) collect_vars(g, &need);
  for (auto& i : ld->indices) collect_vars(i, &need);
  for (size_t i = all.size(); i-- > 0;) {
    if (!need.count(all[i]->var.get())) continue;
    collect_vars(all[i]->value, &need);
    s = make_let_stmt(all[i]->var, all[i]->value, s);
  }
  if (!outer.empty()) s = guard_all(outer, s);
  s = make_if(make_binary(BinOp::NE, k, make_int(kNoIndex)), s);
  // k is substituted last: the reduce vars inside the body become decoded K loads.
  bn.body = substitute(s, m);
  bn.annotations = {{"atomic", "1"}};
  finish_scatter_block(bn);
  set_regions(bn);
  Stmt st = make_block_realize(bindings, make_bool(true), make_block(std::move(bn)));
  for (size_t d = loops.size(); d-- > 0;)
    st = make_for(loops[d], make_const(extents[d].dtype(), 0), extents[d], ForKind::Serial, st);
  emit(st);
}

Function GradientBuilder::build() {
  std::vector<PathElem> path;
  const BlockNode& root = root_block(f_);
  if (!root.iter_vars.empty() || root.init.defined())
    throw Error("gradient of " + f_.name + ": the root block must have no iter vars and no init");
  collect(root.body, path);
  for (auto& u : units_) analyze(u);
  find_regions();
  assign_versions();
  // Activity: buffers that depend on a wrt input (to a fixpoint: in a recurrence, a block
  // may read what a later block of the loop writes).
  for (auto& w : wrt_) active_.insert(w.get());
  size_t before;
  do {
    before = active_.size();
    for (auto& u : units_) {
      bool act = false;
      auto check = [&](const Expr& e) {
        for_each_expr(e, [&](const Expr& x) {
          if (auto* l = x.as<LoadNode>(); l && active_.count(l->buffer.get()) && is_float(l->buffer->dtype))
            act = true;
        });
      };
      for (auto& it : u.items) check(it.value);
      check(u.store->value);
      if (u.init_store) check(u.init_store->value);
      for (auto& l : u.init_lets) check(l.value);
      if (act && is_float(u.Y->dtype)) active_.insert(u.Y.get());
    }
  } while (!regions_.empty() && active_.size() != before);
  // Results: zero-initialised adjoints of the wrt inputs.
  std::vector<Buffer> outs;
  for (auto& w : wrt_) {
    Buffer g(w->name + "_grad", w->dtype, w->shape, "global");
    outs.push_back(g);
    adj_[w.get()] = g;
    zero_init_[g.get()] = bwd_.size();
    emit(elementwise(g->name + "_init", g, [&](const std::vector<Expr>& iv) {
      return make_store(g, iv, make_const(g->dtype, 0));
    }));
  }
  for (size_t k = units_.size(); k-- > 0;) {
    if (units_[k].region >= 0) {
      const Region& r = regions_[units_[k].region];
      reverse_region(r);
      k = r.first;
      continue;
    }
    cur_group_ = units_[k].group;
    reverse_unit(units_[k]);
    cur_group_ = -1;
  }

  // Forward recomputation: only the blocks whose versions the adjoint blocks read.
  std::unordered_set<const BufferNode*> needed;
  auto need_loads = [&](const Stmt& s) {
    for_each_expr(s, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>()) needed.insert(l->buffer.get());
    });
  };
  for (auto& s : bwd_) need_loads(s);
  // A version whose predecessor no adjoint block reads shares the predecessor's storage
  // (no copy: the forward recomputation runs in order, so overwriting is harmless).
  std::unordered_map<const BufferNode*, Buffer> merged;
  for (auto& u : units_) {
    if (!u.ver_in.defined() || needed.count(u.ver_in.get())) continue;
    auto it = merged.find(u.ver_in.get());
    merged[u.ver_out.get()] = it != merged.end() ? it->second : u.ver_in;
    u.needs_copy = false;
    u.merged = true;
  }
  std::vector<Stmt> fwd_rev;
  for (size_t k = units_.size(); k-- > 0;) {
    if (units_[k].region >= 0) {
      // A recurrence through several blocks runs as its loop, whole.
      const Region& r = regions_[units_[k].region];
      bool any = false;
      std::unordered_map<const BufferNode*, Buffer> loads;
      for (size_t j = r.first; j <= r.last; ++j) {
        any = any || needed.count(units_[j].ver_out.get());
        for (auto& [b, v] : units_[j].read_ver) loads[b] = v;
      }
      if (any) {
        const Unit& u0 = units_[r.first];
        Stmt s = wrap_path_range(u0, BufferRenamer(loads, {}).mutate(u0.path[u0.scan_at].s), 0, u0.scan_at);
        need_loads(s);
        fwd_rev.push_back(s);
      }
      k = r.first;
      if (k == 0) break;
      continue;
    }
    // The units of one block (one per store) are emitted together, as the block.
    size_t first = k;
    while (first > 0 && units_[first - 1].group == units_[k].group) --first;
    bool any = false;
    for (size_t j = first; j <= k; ++j) any = any || needed.count(units_[j].ver_out.get());
    if (any) {
      Unit& u0 = units_[first];
      std::unordered_map<const BufferNode*, Buffer> loads = u0.read_ver, stores;
      for (size_t j = first; j <= k; ++j) {
        loads[units_[j].Y.get()] = units_[j].ver_out;
        stores[units_[j].Y.get()] = units_[j].ver_out;
      }
      Stmt realize = make_block_realize(u0.br->bindings, u0.br->predicate, u0.br->block);
      Stmt s = wrap_path(u0, BufferRenamer(loads, stores).mutate(realize));
      need_loads(s);
      fwd_rev.push_back(s);
      for (size_t j = first; j <= k; ++j) {
        Unit& u = units_[j];
        if (u.merged) needed.insert(u.ver_in.get());
        if (u.needs_copy) {
          Buffer from = u.ver_in, to = u.ver_out;
          // Only the elements u leaves alone: the others may be uninitialised in `from` (an
          // output written by two blocks with complementary `where`s; the interpreter refused
          // F_grad's copy of the second block's version).
          fwd_rev.push_back(elementwise(u.blk->name + "_copy", to, [&](const std::vector<Expr>& iv) {
            Stmt st = make_store(to, iv, make_load(from, iv));
            Expr keep = !u.self_read || reads_only_earlier_steps(u) ? unwritten(u, iv) : Expr();
            return keep.defined() ? make_if(keep, st) : st;
          }));
          needed.insert(from.get());
        }
      }
    }
    k = first;
    if (k == 0) break;
  }
  std::vector<Stmt> body(fwd_rev.rbegin(), fwd_rev.rend());
  std::vector<Stmt> bwd;
  std::vector<int> bwd_group;
  for (size_t k = 0; k < bwd_.size(); ++k)
    if (bwd_[k].defined()) bwd.push_back(bwd_[k]), bwd_group.push_back(bwd_group_[k]);
  if (!merged.empty()) {
    std::unordered_map<const BufferNode*, Buffer> m2;
    for (auto& [k, v] : merged) m2[k] = v;
    for (auto& st : body) st = BufferRenamer(m2, m2).mutate(st);
    for (auto& st : bwd) st = BufferRenamer(m2, m2).mutate(st);
  }
  // Adjoint blocks over the same points: one loop nest (fuse_pointwise.h).
  if (opts_.fuse && !std::getenv("TIRC_AD_NO_FUSE")) bwd = fuse_pointwise_blocks(bwd, bwd_group);
  body.insert(body.end(), bwd.begin(), bwd.end());
  // Values that depend on fewer iter vars than their block: computed once (hoist.h).
  if (opts_.hoist && !std::getenv("TIRC_AD_NO_HOIST")) body = hoist_invariants(body, names_, &allocs_);
  Stmt body_stmt = make_seq(body);

  // Allocations: every non-param buffer the body touches.
  std::unordered_set<const BufferNode*> used;
  for_each_expr(body_stmt, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>()) used.insert(l->buffer.get());
  });
  struct StoreScan : IRVisitor {
    std::unordered_set<const BufferNode*>* used;
    void visit_store(const StoreNode* n) override {
      used->insert(n->buffer.get());
      IRVisitor::visit_store(n);
    }
  } scan;
  scan.used = &used;
  scan.visit(body_stmt);
  BlockNode rb;
  rb.name = "root";
  std::unordered_set<const BufferNode*> listed;
  auto add_alloc = [&](const Buffer& b) {
    if (used.count(b.get()) && !listed.count(b.get())) {
      listed.insert(b.get());
      rb.allocs.push_back(b);
    }
  };
  for (auto& b : root.allocs) add_alloc(b);
  for (auto& b : f_.outputs) add_alloc(b);
  for (auto& b : allocs_) add_alloc(b);
  rb.body = body_stmt;
  auto fn = std::make_shared<FunctionNode>();
  fn->name = f_.name + "_grad";
  fn->params = f_.params;
  for (auto& p : cot_params_) fn->params.push_back(p);
  fn->outputs = outs;
  fn->body = make_block_realize({}, make_bool(true), make_block(std::move(rb)));
  fn->loc = f_.loc;
  return fn;
}

}  // namespace

Function normalize_for_autodiff(const FunctionNode& f);  // normalize.h: if/else, loops, ... in block bodies

namespace {

// LANGUAGE.md fixes the names of F_grad's interface: F's params, `<output>_grad` for each
// output's cotangent, `<wrt>_grad` for each result. They win over F's internal buffers
// (its outputs and allocs, which F_grad recomputes as allocs; e.g. the second gradient of
// f_grad recomputes f_grad's output A_grad while its result for --wrt A is A_grad too):
// such a buffer is renamed (a new node, substituted in the body). Two interface names
// that coincide (F has an input A_grad and a result for --wrt A) cannot both be kept:
// refused, naming both. Returns f with its internal buffers renamed and, in *cot_names,
// the cotangent names.
Function claim_interface_names(const Function& f, const std::vector<std::string>& wrt,
                               std::vector<std::string>* cot_names) {
  std::unordered_map<std::string, std::string> owner;  // interface name -> what it names
  auto claim = [&](const std::string& name, const std::string& what) {
    auto [it, fresh] = owner.emplace(name, what);
    if (!fresh)
      throw Error("gradient of " + f->name + ": " + what + " is named " + name +
                  ", which is also the name of " + it->second +
                  " (LANGUAGE.md fixes both names): rename one of them");
  };
  for (auto& p : f->params)
    claim(p.name(), (p.is_buffer() ? "input " : "parameter ") + p.name() + " of " + f->name);
  cot_names->clear();
  for (auto& o : f->outputs) {
    cot_names->push_back(o->name + "_grad");
    claim(o->name + "_grad", "the cotangent of output " + o->name);
  }
  // The results; a name that is not a float input buffer is left to resolve_wrt's refusal.
  for (auto& p : f->params) {
    if (!p.is_buffer() || !is_float(p.buffer->dtype)) continue;
    if (!wrt.empty() && std::find(wrt.begin(), wrt.end(), p.name()) == wrt.end()) continue;
    claim(p.name() + "_grad", "the gradient of input " + p.name());
  }
  // Internal buffers holding an interface name.
  std::vector<Buffer> internal(f->outputs.begin(), f->outputs.end());
  struct Allocs : IRVisitor {
    std::vector<Buffer>* out;
    void visit_block(const BlockNode* n) override {
      for (auto& b : n->allocs) out->push_back(b);
      IRVisitor::visit_block(n);
    }
  } allocs;
  allocs.out = &internal;
  allocs.visit(f->body);
  NameGen names;
  NameCollector nc(names);
  nc.visit(f->body);
  for (auto& b : internal) names.reserve(b->name);
  for (auto& [n, what] : owner) names.reserve(n);
  std::unordered_map<const BufferNode*, Buffer> m;
  for (auto& b : internal)
    if (owner.count(b->name) && !m.count(b.get()))
      m[b.get()] = Buffer(names.unique(b->name), b->dtype, b->shape, b->scope);
  if (m.empty()) return f;
  BufferSubst sub(m);
  auto nf = std::make_shared<FunctionNode>(*f);
  nf->body = sub.mutate(f->body);
  for (auto& o : nf->outputs) o = sub.get(o);
  return nf;
}

}  // namespace

Function gradient(const FunctionNode& f, const std::vector<std::string>& wrt, const GradientOptions& opts) {
  std::vector<std::string> cot_names;
  Function nf, g;
  try {
    nf = claim_interface_names(normalize_for_autodiff(f), wrt, &cot_names);
    GradientBuilder b(*nf, wrt, opts, std::move(cot_names));
    g = b.build();
  } catch (const SourceError&) {
    throw;
  } catch (const Error& e) {
    // A refusal may name a block or buffer that normalisation or the reverse pass generated:
    // say what the user wrote that it stands for (user_names.h).
    std::string m = ad::explain_generated_names(e.what(), f, nf.get());
    if (m == e.what()) throw;
    throw Error(m);
  }
  {
    // Every float constant holds its dtype's value (derivative constants such as
    // 2/sqrt(pi) are computed in double): F_grad prints as a parse fixpoint.
    auto rg = std::make_shared<FunctionNode>(*g);
    rg->body = round_float_consts(g->body);
    // Let statements scope over the rest of their list, as the parser reads them back.
    rg->body = ad::nest_let_scopes(rg->body);
    g = rg;
  }
  if (!opts.order_loops || std::getenv("TIRC_AD_NO_LOOP_ORDER")) return g;
  // The forward blocks F_grad recomputes keep the author's loop order.
  std::unordered_set<std::string> forward;
  struct Names : IRVisitor {
    std::unordered_set<std::string>* out;
    void visit_block(const BlockNode* n) override {
      out->insert(n->name);
      IRVisitor::visit_block(n);
    }
  } names;
  names.out = &forward;
  names.visit(nf->body);
  Function o = ad::order_loops_by_stride(*g, forward);
  auto no = std::make_shared<FunctionNode>(*o);
  no->body = ad::nest_let_scopes(o->body);
  return no;
}

}  // namespace tirc

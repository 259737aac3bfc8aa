// Normalisation rewrite 11 (normalize_region.h).
#include "transforms/autodiff/normalize_region.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/expr_ad.h"
#include "transforms/autodiff/regions.h"

namespace tirc::ad {

namespace {

// The first store to y in block b's body, else in its init (nullptr: none).
const StoreNode* first_store(const BlockNode& b, const BufferNode* y) {
  struct S : IRVisitor {
    const BufferNode* y;
    const StoreNode* st = nullptr;
    void visit_store(const StoreNode* n) override {
      if (!st && n->buffer.get() == y) st = n;
    }
  } s;
  s.y = y;
  s.visit(b.body);
  if (!s.st && b.init.defined()) s.visit(b.init);
  return s.st;
}

// Replaces the given BlockRealize nodes (by identity) by the mapped statements.
struct ReplaceRealizes : IRMutator {
  explicit ReplaceRealizes(const std::unordered_map<const BlockRealizeNode*, Stmt>& m) : m(m) {}
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    auto it = m.find(n);
    return it == m.end() ? s : it->second;
  }
  const std::unordered_map<const BlockRealizeNode*, Stmt>& m;
};

// The block realizes of s that are not nested in another block.
std::vector<const BlockRealizeNode*> top_blocks(const Stmt& s) {
  struct V : IRVisitor {
    std::vector<const BlockRealizeNode*> out;
    void visit_block_realize(const BlockRealizeNode* n) override { out.push_back(n); }
  } v;
  v.visit(s);
  return v.out;
}

// The iter var of br bound to `L + c` (coefficient 1): the scan var when one is, else the
// first such var (gradient's step var of a region block). -1 when none.
int step_var(const BlockRealizeNode* br, const VarNode* L, bool* is_scan) {
  int first = -1;
  const BlockNode& b = *br->block.get();
  for (size_t q = 0; q < b.iter_vars.size(); ++q) {
    auto a = to_affine(br->bindings[q]);
    if (!a || a->terms.size() != 1 || a->terms[0].second != 1 || a->terms[0].first.get() != L) continue;
    if (b.iter_vars[q].kind == IterKind::Scan) {
      *is_scan = true;
      return static_cast<int>(q);
    }
    if (first < 0 && b.iter_vars[q].kind != IterKind::Reduce) first = static_cast<int>(q);
  }
  *is_scan = false;
  return first;
}

// k when every store of b (body and init) indexes exactly one dimension with v, as `v + k`
// (the same k in all of them); nullopt otherwise.
std::optional<int64_t> store_offset(const BlockNode& b, const VarNode* v) {
  struct V : IRVisitor {
    const VarNode* v;
    std::optional<int64_t> k;
    bool bad = false, any = false;
    void visit_store(const StoreNode* n) override {
      any = true;
      int dims = 0;
      for (auto& i : n->indices) {
        bool uses = false;
        for_each_expr(i, [&](const Expr& x) { uses = uses || x.get() == v; });
        if (!uses) continue;
        ++dims;
        auto a = to_affine(i);
        if (!a || a->terms.size() != 1 || a->terms[0].second != 1 || a->terms[0].first.get() != v) {
          bad = true;
          continue;
        }
        if (k && *k != a->constant) bad = true;
        k = a->constant;
      }
      if (dims != 1) bad = true;
      IRVisitor::visit_store(n);
    }
  } vis;
  vis.v = v;
  if (b.init.defined()) vis.visit(b.init);
  vis.visit(b.body);
  if (vis.bad || !vis.any || !vis.k) return std::nullopt;
  return vis.k;
}

class Shifter : public IRMutator {
 protected:
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& s) override {
    auto it = repl_.find(n);
    return it == repl_.end() ? s : it->second;
  }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* f = r.as<ForNode>();
    if (!f) return r;
    auto blocks = top_blocks(f->body);
    bool scan = false, reduces = false;
    for (auto* br : blocks) {
      bool is_scan = false;
      step_var(br, f->loop_var.get(), &is_scan);
      scan = scan || is_scan;
      for (auto& iv : br->block->iter_vars) reduces = reduces || iv.kind == IterKind::Reduce;
      reduces = reduces || br->block->init.defined();
    }
    if (!scan || (blocks.size() < 2 && !reduces)) return r;  // no region: analyze_scan reads `v + k`
    std::unordered_map<const BlockRealizeNode*, Stmt> local;
    for (auto* br : blocks) {
      bool is_scan = false;
      int q = step_var(br, f->loop_var.get(), &is_scan);
      if (q < 0) continue;
      const BlockNode& b = *br->block.get();
      const IterVar& iv = b.iter_vars[q];
      auto k = store_offset(b, iv.var.get());
      if (!k) continue;
      if (*k == 0) {
        // `vt + 1 - 1` (a scratch privatized by rewrite 0h, then wrapped): folded to vt.
        BlockNode nb = b;
        nb.body = simplify_indices(b.body);
        if (b.init.defined()) nb.init = simplify_indices(b.init);
        if (structural_text_same(nb, b)) continue;
        set_regions(nb);
        local[br] = make_block_realize(br->bindings, br->predicate, make_block(std::move(nb)));
        continue;
      }
      Expr extent = iv.extent;
      if (*k > 0) {
        extent = iv.extent + make_const(iv.extent.dtype(), *k);
        auto ea = to_affine(extent);
        if (ea) extent = affine_to_expr(*ea, iv.extent.dtype());
      } else {
        // The new binding `L + c + k` must stay >= 0 from L's first iteration on.
        auto a = to_affine(br->bindings[q]);
        int64_t lo;
        if (!is_const_int(f->min, &lo) || lo + a->constant + *k < 0) continue;
      }
      Var u(iv.var.name(), iv.var.dtype());
      BlockNode nb = b;
      nb.iter_vars[q] = IterVar{u, iv.kind, extent};
      std::unordered_map<const VarNode*, Expr> m{{iv.var.get(), Expr(u) - make_const(u.dtype(), *k)}};
      nb.body = simplify_indices(substitute(b.body, m));
      if (b.init.defined()) nb.init = simplify_indices(substitute(b.init, m));
      set_regions(nb);
      std::vector<Expr> bindings = br->bindings;
      auto ba = to_affine(bindings[q] + make_const(bindings[q].dtype(), *k));
      bindings[q] =
          ba ? affine_to_expr(*ba, bindings[q].dtype()) : bindings[q] + make_const(bindings[q].dtype(), *k);
      local[br] = make_block_realize(bindings, br->predicate, make_block(std::move(nb)));
    }
    if (local.empty()) return r;
    for (auto& [k, v] : local) repl_[k] = v;
    Stmt body = mutate(f->body);
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }

 private:
  // Buffer indices folded to canonical affine form (`u - 1 + 1` -> `u`), which gradient()
  // needs to see the store at exactly u.
  static Stmt simplify_indices(const Stmt& s) {
    struct M : IRMutator {
      std::vector<Expr> fold(const std::vector<Expr>& idx) {
        std::vector<Expr> out;
        for (auto& i : idx) {
          Expr e = mutate(i);
          auto a = is_int(e.dtype()) ? to_affine(e) : std::nullopt;
          out.push_back(a ? affine_to_expr(*a, e.dtype()) : e);
        }
        return out;
      }
      Expr mutate_load(const LoadNode* n, const Expr&) override {
        return make_load(n->buffer, fold(n->indices));
      }
      Stmt mutate_store(const StoreNode* n, const Stmt&) override {
        return make_store(n->buffer, fold(n->indices), mutate(n->value), n->loc);
      }
    } m;
    return m.mutate(s);
  }

  // Whether folding changed nothing (the store indices are bare vars already).
  static bool structural_text_same(const BlockNode& a, const BlockNode& b) {
    std::vector<const StoreNode*> x, y;
    struct V : IRVisitor {
      std::vector<const StoreNode*>* out;
      void visit_store(const StoreNode* n) override {
        out->push_back(n);
        IRVisitor::visit_store(n);
      }
    } v;
    v.out = &x;
    v.visit(a.body);
    v.out = &y;
    v.visit(b.body);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      for (size_t d = 0; d < x[i]->indices.size(); ++d)
        if (!expr_identical(x[i]->indices[d], y[i]->indices[d])) return false;
    return true;
  }

  std::unordered_map<const BlockRealizeNode*, Stmt> repl_;
};

using BufSet = std::unordered_set<const BufferNode*>;
using VarMap = std::unordered_map<const VarNode*, Expr>;

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vs) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || vs.count(static_cast<const VarNode*>(x.get())); });
  return found;
}

// Rewrite 12: versions of the buffers of a recurrence through several blocks (see the header).
class RegionVersions : public IRMutator {
 public:
  explicit RegionVersions(const FunctionNode& f) {
    struct Names : IRVisitor {
      NameGen* g;
      void visit_var(const VarNode* v) override { g->reserve(v->name); }
      void visit_load(const LoadNode* n) override {
        g->reserve(n->buffer->name);
        IRVisitor::visit_load(n);
      }
      void visit_store(const StoreNode* n) override {
        g->reserve(n->buffer->name);
        IRVisitor::visit_store(n);
      }
      void visit_block(const BlockNode* n) override {
        g->reserve(n->name);
        for (auto& a : n->allocs) g->reserve(a->name);
        IRVisitor::visit_block(n);
      }
    } nv;
    nv.g = &names_;
    for (auto& p : f.params) names_.reserve(p.name());
    for (auto& o : f.outputs) names_.reserve(o->name);
    nv.visit(f.body);
  }
  std::vector<Buffer> new_allocs;

 protected:
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override {
    stored_buffers(s, &written_);
    return s;
  }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (auto r = version(n)) {
      stored_buffers(*r, &written_);
      return *r;
    }
    outer_.push_back(n);
    Stmt r = IRMutator::mutate_for(n, s);
    outer_.pop_back();
    return r;
  }

 private:
  struct Blk {
    const BlockRealizeNode* br;
    std::vector<const ForNode*> loops;  // between L and the block
    int step = -1;
    VarMap to_loops;  // iter var -> binding
  };
  // One buffer written by blocks of the loop, in versions.
  struct Ver {
    Buffer y;
    std::vector<size_t> writers;  // indices into blocks, in order
    std::vector<Buffer> bufs;     // one per writer
    bool pre = false;             // written before the loop: a copy after it
    size_t dim = 0;               // the step dimension
    int64_t c = 0;                // writers' step binding: L + c
    int64_t dir = 1, K = 0;       // the step dimension: v (dir 1) or K - v (dir -1)
    int64_t N = 0;                // dir -1: the versions' extent in the step dimension
    std::vector<Expr> W;          // the writers' element in loop vars (step dim: L + c)
    std::vector<bool> full;       // dims every step writes whole
  };

  static bool collect(const Stmt& s, std::vector<const ForNode*>& path, std::vector<Blk>& out) {
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts)
        if (!collect(x, path, out)) return false;
      return true;
    }
    if (auto* f = s.as<ForNode>()) {
      path.push_back(f);
      bool ok = collect(f->body, path, out);
      path.pop_back();
      return ok;
    }
    if (auto* br = s.as<BlockRealizeNode>()) {
      out.push_back(Blk{br, path, -1, {}});
      return true;
    }
    return false;
  }

  std::optional<Stmt> version(const ForNode* L) {
    std::vector<Blk> blocks;
    std::vector<const ForNode*> path;
    if (!collect(L->body, path, blocks) || blocks.empty()) return std::nullopt;
    bool scan = false, reduces = false;
    for (auto& b : blocks) {
      bool is_scan = false;
      b.step = step_var(b.br, L->loop_var.get(), &is_scan);
      scan = scan || is_scan;
      const BlockNode& bn = *b.br->block.get();
      for (size_t q = 0; q < bn.iter_vars.size(); ++q) {
        reduces = reduces || bn.iter_vars[q].kind == IterKind::Reduce;
        b.to_loops[bn.iter_vars[q].var.get()] = b.br->bindings[q];
      }
      reduces = reduces || bn.init.defined();
    }
    if (!scan || (blocks.size() < 2 && !reduces)) return std::nullopt;
    for (auto& b : blocks)
      if (b.step < 0 || !b.br->block->allocs.empty()) return std::nullopt;
    // The buffers to version: written by several blocks of the loop, or before the loop.
    std::vector<Ver> vers;
    std::unordered_map<const BufferNode*, size_t> ver_of;
    for (size_t i = 0; i < blocks.size(); ++i) {
      BufSet w;
      stored_buffers(make_block_realize(blocks[i].br->bindings, blocks[i].br->predicate, blocks[i].br->block),
                     &w);
      for (auto& p : blocks[i].br->block->writes) w.insert(p.buffer.get());
      for (auto* y : w) {
        auto [it, fresh] = ver_of.emplace(y, vers.size());
        if (fresh) vers.push_back(Ver{});
        vers[it->second].writers.push_back(i);
      }
    }
    bool any = false;
    for (auto& [y, k] : ver_of) {
      Ver& v = vers[k];
      v.pre = written_.count(y) > 0;
      if (v.writers.size() < 2 && !v.pre && !decreasing(blocks, v.writers, y)) {
        v.writers.clear();  // left alone
        continue;
      }
      if (!plan(L, blocks, y, v)) return std::nullopt;
      any = true;
    }
    if (!any) return std::nullopt;
    // The new buffers: one per writer; without writes before the loop the last writer keeps y.
    for (auto& v : vers) {
      if (v.writers.empty()) continue;  // left alone (v.y unset)
      std::vector<Expr> shape = v.y->shape;
      if (v.dir < 0) shape[v.dim] = make_const(shape[v.dim].dtype(), static_cast<double>(v.N));
      for (size_t j = 0; j < v.writers.size(); ++j) {
        bool keep = !v.pre && v.dir > 0 && j + 1 == v.writers.size();
        v.bufs.push_back(keep ? v.y
                              : Buffer(names_.unique(v.y->name + "_s" + std::to_string(j + 1)), v.y->dtype,
                                       shape, "global"));
        if (!keep) new_allocs.push_back(v.bufs.back());
      }
    }
    std::unordered_map<const BlockRealizeNode*, Stmt> repl;
    for (size_t i = 0; i < blocks.size(); ++i) {
      auto r = rewrite_block(L, blocks, i, vers, ver_of);
      if (!r) {
        for (auto& v : vers)
          for (auto& b : v.bufs)
            if (!b.same_as(v.y)) new_allocs.pop_back();
        return std::nullopt;
      }
      repl[blocks[i].br] = *r;
    }
    ReplaceRealizes rp(repl);
    std::vector<Stmt> out{make_for(L->loop_var, L->min, L->extent, L->for_kind, rp.mutate(L->body),
                                   L->thread_tag, L->annotations)};
    for (auto& v : vers)
      if ((v.pre || v.dir < 0) && !v.writers.empty()) out.push_back(copy_back(L, blocks, v));
    return out.size() == 1 ? out[0] : make_seq(out);
  }

  // The writers of y agree on the element they write at each step (see the header).
  bool plan(const ForNode* L, const std::vector<Blk>& blocks, const BufferNode* y, Ver& v) {
    for (size_t j = 0; j < v.writers.size(); ++j) {
      const Blk& b = blocks[v.writers[j]];
      const BlockNode& bn = *b.br->block.get();
      if (!is_one(b.br->predicate)) return false;
      std::vector<const StoreNode*> st;
      struct S : IRVisitor {
        const BufferNode* y;
        std::vector<const StoreNode*>* out;
        bool ptr = false;
        int guards = 0;  // `if`s around the current statement
        bool guarded = false;
        void visit_store(const StoreNode* n) override {
          if (n->buffer.get() == y) out->push_back(n);
          // A guarded store writes part of the step's elements only (checked below).
          if (n->buffer.get() == y && guards > 0) guarded = true;
          IRVisitor::visit_store(n);
        }
        void visit_if(const IfThenElseStmtNode* n) override {
          ++guards;
          IRVisitor::visit_if(n);
          --guards;
        }
        void visit_buffer_ptr(const BufferPtrNode* n) override { ptr = ptr || n->buffer.get() == y; }
      } sv;
      sv.y = y;
      sv.out = &st;
      if (bn.init.defined()) sv.visit(bn.init);
      sv.visit(bn.body);
      if (st.empty() || sv.ptr) return false;
      if (!v.y.defined()) v.y = st[0]->buffer;
      const std::vector<Expr>& I = st[0]->indices;
      for (auto* s : st)
        if (s->indices.size() != I.size()) return false;
      for (auto* s : st)
        for (size_t d = 0; d < I.size(); ++d)
          if (!expr_identical(s->indices[d], I[d])) return false;
      // Each dimension a distinct non-reduce iter var; the step var in one of them.
      std::unordered_set<const VarNode*> seen;
      std::unordered_set<const VarNode*> inner;
      for (auto* f : b.loops) inner.insert(f->loop_var.get());
      std::vector<Expr> W;
      std::vector<bool> full;
      int dim = -1;
      for (size_t d = 0; d < I.size(); ++d) {
        auto* iv = I[d].as<VarNode>();
        // A decreasing step `K - v` (a backward RNN as plain loops): versions indexed by v.
        const VarNode* step_v = b.br->block->iter_vars[b.step].var.get();
        int64_t dir = 1, K = 0;
        if (!iv) {
          auto ia = to_affine(I[d]);
          if (ia && ia->terms.size() == 1 && ia->terms[0].first.get() == step_v &&
              ia->terms[0].second == -1) {
            iv = step_v;
            dir = -1;
            K = ia->constant;
          }
        }
        int q = -1;
        for (size_t k = 0; k < bn.iter_vars.size(); ++k)
          if (iv && bn.iter_vars[k].var.get() == iv) q = static_cast<int>(k);
        if (q < 0 || bn.iter_vars[q].kind == IterKind::Reduce || !seen.insert(iv).second) return false;
        const Expr& bd = b.br->bindings[q];
        if (q == b.step) {
          dim = static_cast<int>(d);
          auto a = to_affine(bd);
          W.push_back(dir > 0 ? bd : make_const(bd.dtype(), static_cast<double>(K)) - bd);
          full.push_back(false);
          if (j == 0) v.c = a->constant, v.dir = dir, v.K = K;
          if (a->constant != v.c || dir != v.dir || K != v.K) return false;
          continue;
        }
        if (dir < 0) return false;
        // A dimension written whole at every step: an inner loop var over the whole extent.
        int64_t n = 0, e = 0, lo = 0;
        auto* lv = bd.as<VarNode>();
        const ForNode* lf = nullptr;
        for (auto* f : b.loops)
          if (lv && f->loop_var.get() == lv) lf = f;
        if (lf && is_const_int(lf->min, &lo) && lo == 0 && is_const_int(lf->extent, &e) &&
            is_const_int(y->shape[d], &n) && e == n && is_const_int(bn.iter_vars[q].extent, &n) && n == e) {
          W.push_back(Expr());
          full.push_back(true);
          continue;
        }
        // Otherwise the same element of loops outside L for every writer.
        if (uses_any(bd, inner) || uses_var_expr(bd, L->loop_var.get())) return false;
        W.push_back(bd);
        full.push_back(false);
      }
      if (dim < 0) return false;
      // A decreasing step's versions are indexed by v (y's element e at K - e), so their step
      // dimension covers v's range [0, E) and K - e for every e in [0, K]: max(E, K + 1).
      // (y's shape overran them when v's range is not y's: `vt = t + 4` over scan(8) storing
      // H[7 - vt] into H: f32[4], an F_grad storing H_s1[4], review round 1.)
      if (v.dir < 0) {
        int64_t E;
        if (!is_const_int(bn.iter_vars[b.step].extent, &E)) return false;
        v.N = std::max(v.N, std::max(E, v.K + 1));
      }
      if (sv.guarded) {
        // Only a sum onto its own element in a block with reduce vars: its init (given by
        // rewrite_block when missing) writes the whole element set at every step, the guard
        // decides what is added. The element must exist whatever the guard says (a backward
        // step's `if -vt + 5 > 0 { G[-vt + 4, k] += .. }` indexes -1 where it fails): the
        // other dimensions whole, the step dimension inside the buffer.
        bool reduce = false;
        for (auto& iv : bn.iter_vars) reduce = reduce || iv.kind == IterKind::Reduce;
        if (!reduce) return false;
        for (auto* x : st) {
          auto* bin = x->value.as<BinaryNode>();
          auto* self = bin ? bin->a.as<LoadNode>() : nullptr;
          if (!bin || (bin->op != BinOp::Add && bin->op != BinOp::Sub) || !self || self->buffer.get() != y ||
              !same_indices_expr(self->indices, x->indices))
            return false;
        }
        for (size_t d = 0; d < full.size(); ++d)
          if (static_cast<int>(d) != dim && !full[d]) return false;
        int64_t E, n;
        const IterVar& siv = bn.iter_vars[b.step];
        if (!is_const_int(siv.extent, &E) || !is_const_int(y->shape[dim], &n)) return false;
        auto sa = to_affine(I[dim]);
        int64_t lo = sa->constant + (sa->terms[0].second > 0 ? 0 : -(E - 1));
        int64_t hi = sa->constant + (sa->terms[0].second > 0 ? E - 1 : 0);
        if (lo < 0 || hi >= n) return false;
      }
      // Each run of L (per iteration of the loops around it) writes elements of its own, so
      // that no step reads what an earlier run of L left (the versions do not carry it).
      for (auto* o : outer_) {
        int64_t e;
        if (is_const_int(o->extent, &e) && e == 1) continue;
        bool in = false;
        for (size_t d = 0; d < W.size(); ++d)
          if (W[d].defined() && static_cast<int>(d) != dim) in = in || uses_var_expr(W[d], o->loop_var.get());
        if (!in) return false;
      }
      if (j == 0) {
        v.dim = static_cast<size_t>(dim);
        v.W = W;
        v.full = full;
      } else {
        if (v.dim != static_cast<size_t>(dim)) return false;
        for (size_t d = 0; d < W.size(); ++d) {
          if (full[d] != v.full[d]) return false;
          if (!full[d] && !expr_identical(W[d], v.W[d])) return false;
        }
      }
    }
    return true;
  }
  // Some writer of y stores it at a decreasing step `K - v` (gradient() needs v itself).
  static bool decreasing(const std::vector<Blk>& blocks, const std::vector<size_t>& writers,
                         const BufferNode* y) {
    for (size_t w : writers) {
      const Blk& b = blocks[w];
      const VarNode* sv = b.br->block->iter_vars[b.step].var.get();
      bool dec = false;
      struct S : IRVisitor {
        const BufferNode* y;
        const VarNode* sv;
        bool* dec;
        void visit_store(const StoreNode* n) override {
          if (n->buffer.get() == y)
            for (auto& i : n->indices) {
              auto a = to_affine(i);
              if (a && a->terms.size() == 1 && a->terms[0].first.get() == sv && a->terms[0].second == -1)
                *dec = true;
            }
          IRVisitor::visit_store(n);
        }
      } st;
      st.y = y;
      st.sv = sv;
      st.dec = &dec;
      st.visit(b.br->block->body);
      if (dec) return true;
    }
    return false;
  }
  static bool same_indices_expr(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr_identical(a[i], b[i])) return false;
    return true;
  }
  static bool uses_var_expr(const Expr& e, const VarNode* v) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
    return found;
  }

  // Block i with loads and stores of the versioned buffers renamed; nullopt when a load is not
  // one of the forms the versions cover.
  std::optional<Stmt> rewrite_block(const ForNode* L, const std::vector<Blk>& blocks, size_t i,
                                    const std::vector<Ver>& vers,
                                    const std::unordered_map<const BufferNode*, size_t>& ver_of) {
    const Blk& b = blocks[i];
    const BlockNode& bn = *b.br->block.get();
    bool has_reduce = false;
    for (auto& iv : bn.iter_vars) has_reduce = has_reduce || iv.kind == IterKind::Reduce;
    std::unordered_set<const VarNode*> inner;
    for (auto* f : b.loops) inner.insert(f->loop_var.get());
    struct M : IRMutator {
      RegionVersions* self;
      const ForNode* L;
      const Blk* b;
      const std::vector<Blk>* blocks;
      size_t i;
      const std::vector<Ver>* vers;
      const std::unordered_map<const BufferNode*, size_t>* ver_of;
      const std::unordered_set<const VarNode*>* inner;
      bool in_init = false, has_reduce = false, bad = false;
      std::vector<std::pair<const Ver*, std::vector<Expr>>> acc_inits;  // accumulations onto prev
      // The version block i sees at the current step before it runs.
      Buffer prev(const Ver& v) const {
        Buffer p = v.y;
        for (size_t j = 0; j < v.writers.size(); ++j)
          if (v.writers[j] < i) p = v.bufs[j];
        return p;
      }
      int own(const Ver& v) const {
        for (size_t j = 0; j < v.writers.size(); ++j)
          if (v.writers[j] == i) return static_cast<int>(j);
        return -1;
      }
      const StoreNode* own_store(const Ver& v) const { return first_store(*b->br->block.get(), v.y.get()); }
      Expr mutate_load(const LoadNode* n, const Expr& e) override {
        auto it = ver_of->find(n->buffer.get());
        if (it == ver_of->end() || (*vers)[it->second].writers.empty()) return IRMutator::mutate_load(n, e);
        const Ver& v = (*vers)[it->second];
        bool ch = false;
        std::vector<Expr> idx = mutate_all(n->indices, &ch);
        std::vector<Expr> R;
        for (auto& x : idx) R.push_back(substitute(x, b->to_loops));
        // The iteration (relative to this one) at which the writers store the element read.
        auto a = to_affine(v.dir > 0 ? R[v.dim] - v.W[v.dim] : v.W[v.dim] - R[v.dim]);
        if (!a || !a->terms.empty() || a->constant > 0) {
          bad = true;
          return e;
        }
        for (size_t d = 0; d < R.size(); ++d)
          if (!v.full[d] && d != v.dim && !expr_identical(R[d], v.W[d])) bad = true;
        if (a->constant < 0) {
          Buffer last = v.bufs.back();
          if (!v.pre) return ver_load(v, last, idx);
          int64_t lo;
          if (!is_const_int(L->min, &lo)) {
            bad = true;
            return e;
          }
          // Written by the loop when its step is L's first or later.
          Expr first =
              make_const(idx[v.dim].dtype(), static_cast<double>(v.dir > 0 ? lo + v.c : v.K - lo - v.c));
          Expr written = make_binary(v.dir > 0 ? BinOp::GE : BinOp::LE, idx[v.dim], first);
          return make_if_then_else(written, ver_load(v, last, idx), make_load(v.y, idx));
        }
        // At the current step a writer sharing a loop with this block has written part of its
        // slice only (the loop interleaves them): the load must be at that writer's element of
        // the same iteration (then the body order decides, as the versions say).
        for (size_t w : v.writers) {
          if (w == i) continue;
          bool shares = false;
          for (auto* f : (*blocks)[w].loops)
            for (auto* g : b->loops) shares = shares || f == g;
          if (!shares) continue;
          std::vector<Expr> Wl = store_in_loops((*blocks)[w], v.y.get());
          bool same = Wl.size() == R.size();
          for (size_t d = 0; same && d < R.size(); ++d) same = expr_identical(Wl[d], R[d]);
          if (!same) {
            bad = true;
            return e;
          }
        }
        int j = own(v);
        if (j < 0) return ver_load(v, prev(v), idx);
        // Block i writes y: only its own element at this step.
        const StoreNode* st = own_store(v);
        bool same = st && st->indices.size() == idx.size();
        for (size_t d = 0; same && d < idx.size(); ++d) same = expr_identical(st->indices[d], n->indices[d]);
        if (!same) {
          bad = true;
          return e;
        }
        if (in_init || (!has_reduce)) return ver_load(v, prev(v), idx);
        if (!b->br->block->init.defined()) acc_inits.push_back({&v, idx});
        return ver_load(v, v.bufs[j], idx);
      }
      // A version buffer of a decreasing step holds element e at K - e (its steps increase;
      // its step dimension has extent Ver::N).
      static std::vector<Expr> ver_index(const Ver& v, const Buffer& buf, std::vector<Expr> idx) {
        if (v.dir > 0 || buf.same_as(v.y)) return idx;
        Expr m = make_const(idx[v.dim].dtype(), static_cast<double>(v.K)) - idx[v.dim];
        auto a = to_affine(m);
        idx[v.dim] = a ? affine_to_expr(*a, m.dtype()) : m;
        return idx;
      }
      static Expr ver_load(const Ver& v, const Buffer& buf, const std::vector<Expr>& idx) {
        return make_load(buf, ver_index(v, buf, idx));
      }
      // The element block w stores to y, in loop vars (its bindings substituted).
      static std::vector<Expr> store_in_loops(const Blk& w, const BufferNode* y) {
        std::vector<Expr> out;
        const StoreNode* st = first_store(*w.br->block.get(), y);
        if (!st) return out;
        for (auto& i : st->indices) out.push_back(substitute(i, w.to_loops));
        return out;
      }
      Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
        auto it = ver_of->find(n->buffer.get());
        if (it == ver_of->end() || (*vers)[it->second].writers.empty()) return IRMutator::mutate_store(n, s);
        const Ver& v = (*vers)[it->second];
        bool ch = false;
        std::vector<Expr> idx = mutate_all(n->indices, &ch);
        const Buffer& to = v.bufs[own(v)];
        return make_store(to, ver_index(v, to, idx), mutate(n->value), n->loc);
      }
    } m;
    m.self = this;
    m.L = L;
    m.b = &b;
    m.blocks = &blocks;
    m.i = i;
    m.vers = &vers;
    m.ver_of = &ver_of;
    m.inner = &inner;
    m.has_reduce = has_reduce;
    BlockNode nb = bn;
    nb.body = m.mutate(bn.body);
    if (bn.init.defined()) {
      m.in_init = true;
      nb.init = m.mutate(bn.init);
    }
    if (m.bad) return std::nullopt;
    if (!m.acc_inits.empty()) {
      // An accumulation onto the step's earlier value (a hand-written init in a block before):
      // its own version starts from that value, as an init (runs where every reduce var is 0).
      std::vector<Stmt> inits;
      std::unordered_set<const Ver*> done;
      for (auto& [v, idx] : m.acc_inits) {
        if (!done.insert(v).second) continue;
        const Buffer& to = v->bufs[m.own(*v)];
        inits.push_back(make_store(to, M::ver_index(*v, to, idx), M::ver_load(*v, m.prev(*v), idx)));
      }
      nb.init = inits.size() == 1 ? inits[0] : make_seq(inits);
    }
    set_regions(nb);
    return make_block_realize(b.br->bindings, b.br->predicate, make_block(std::move(nb)));
  }

  // After the loop: y at the loop's steps gets the last version (y was written before).
  Stmt copy_back(const ForNode* L, const std::vector<Blk>& blocks, const Ver& v) {
    const Blk& b = blocks[v.writers.back()];
    const BlockNode& bn = *b.br->block.get();
    BlockNode cb;
    cb.name = names_.unique(v.y->name + "_out");
    std::vector<Expr> bindings, idx;
    std::vector<std::pair<Var, Expr>> loops;  // fresh loops: L's copy, then one per full dim
    Var t(L->loop_var.name(), L->loop_var.dtype());
    loops.push_back({t, Expr()});
    const StoreNode* st = first_store(bn, v.y.get());  // the original block stores to y
    for (size_t d = 0; d < st->indices.size(); ++d) {
      auto* iv = st->indices[d].as<VarNode>();
      if (d == v.dim) iv = bn.iter_vars[b.step].var.get();  // also `K - v`
      size_t q = 0;
      while (bn.iter_vars[q].var.get() != iv) ++q;
      Var nv(iv->name, iv->dtype);
      cb.iter_vars.push_back(IterVar{nv, IterKind::Spatial, bn.iter_vars[q].extent});
      idx.push_back(nv);
      if (d == v.dim) {
        bindings.push_back(substitute(b.br->bindings[q], VarMap{{L->loop_var.get(), t}}));
        if (v.dir < 0) idx.back() = make_const(nv.dtype(), static_cast<double>(v.K)) - nv;  // y at K - u
      } else if (v.full[d]) {
        Var lv(b.br->bindings[q].as<VarNode>()->name, iv->dtype);
        loops.push_back({lv, bn.iter_vars[q].extent});
        bindings.push_back(lv);
      } else {
        bindings.push_back(b.br->bindings[q]);
      }
    }
    std::vector<Expr> vidx = idx;
    if (v.dir < 0) vidx[v.dim] = cb.iter_vars[v.dim].var;  // the version holds K - u at u
    cb.body = make_store(v.y, idx, make_load(v.bufs.back(), vidx));
    set_regions(cb);
    Stmt r = make_block_realize(bindings, make_bool(true), make_block(std::move(cb)));
    for (size_t k = loops.size(); k-- > 1;)
      r = make_for(loops[k].first, make_const(loops[k].second.dtype(), 0), loops[k].second, ForKind::Serial,
                   r);
    return make_for(t, L->min, L->extent, ForKind::Serial, r);
  }

  NameGen names_;
  BufSet written_;
  std::vector<const ForNode*> outer_;
};

// Rewrite 10b: a serial loop whose blocks carry a dependence from one iteration to a later one
// through each other (see the header).
class CarriedLoops : public IRMutator {
 protected:
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    outer_.insert(n->loop_var.get());
    Stmt r = IRMutator::mutate_for(n, s);
    outer_.erase(n->loop_var.get());
    auto* f = r.as<ForNode>();
    if (!f || (f->for_kind != ForKind::Serial && f->for_kind != ForKind::Unrolled) || !f->thread_tag.empty())
      return r;
    std::vector<const BlockRealizeNode*> blocks;
    std::unordered_set<const VarNode*> inner;
    if (!collect(f->body, blocks, inner) || blocks.size() < 2) return r;
    const VarNode* L = f->loop_var.get();
    std::vector<int> step(blocks.size(), -1);
    for (size_t i = 0; i < blocks.size(); ++i) {
      bool is_scan = false;
      step[i] = step_var(blocks[i], L, &is_scan);
      if (is_scan) return r;  // already a scan loop: gradient() reads it as a region
      // A block with a scan var of another loop: a second one would only be refused.
      for (auto& iv : blocks[i]->block->iter_vars)
        if (iv.kind == IterKind::Scan) return r;
      if (step[i] < 0 || blocks[i]->block->iter_vars[step[i]].kind != IterKind::Spatial) return r;
    }
    if (!step_indexed(blocks, L) || !carried(blocks, L, inner)) return r;
    std::unordered_map<const BlockRealizeNode*, Stmt> repl;
    for (size_t i = 0; i < blocks.size(); ++i) {
      BlockNode nb = *blocks[i]->block.get();
      nb.iter_vars[step[i]].kind = IterKind::Scan;
      repl[blocks[i]] =
          make_block_realize(blocks[i]->bindings, blocks[i]->predicate, make_block(std::move(nb)));
    }
    ReplaceRealizes rp(repl);
    changed = true;
    return make_for(f->loop_var, f->min, f->extent, f->for_kind, rp.mutate(f->body), f->thread_tag,
                    f->annotations);
  }

 public:
  bool changed = false;

 private:
  static bool collect(const Stmt& s, std::vector<const BlockRealizeNode*>& out,
                      std::unordered_set<const VarNode*>& inner) {
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts)
        if (!collect(x, out, inner)) return false;
      return true;
    }
    if (auto* f = s.as<ForNode>()) {
      inner.insert(f->loop_var.get());
      return collect(f->body, out, inner);
    }
    if (auto* br = s.as<BlockRealizeNode>()) {
      out.push_back(br);
      return true;
    }
    return false;
  }
  // Index tuples per buffer of a block's stores (or loads), in loop vars (bindings substituted).
  static std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> accesses(
      const BlockRealizeNode* br, bool stores) {
    VarMap m;
    const BlockNode& b = *br->block.get();
    for (size_t q = 0; q < b.iter_vars.size(); ++q) m[b.iter_vars[q].var.get()] = br->bindings[q];
    struct V : IRVisitor {
      bool stores;
      VarMap* m;
      std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> out;
      void add(const BufferNode* y, const std::vector<Expr>& idx) {
        std::vector<Expr> t;
        for (auto& i : idx) t.push_back(substitute(i, *m));
        out[y].push_back(t);
      }
      void visit_store(const StoreNode* n) override {
        if (stores) add(n->buffer.get(), n->indices);
        IRVisitor::visit_store(n);
      }
      void visit_load(const LoadNode* n) override {
        if (!stores) add(n->buffer.get(), n->indices);
        IRVisitor::visit_load(n);
      }
      void visit_buffer_ptr(const BufferPtrNode* n) override {
        out[n->buffer.get()].push_back({});  // anything
        IRVisitor::visit_buffer_ptr(n);
      }
    } v;
    v.stores = stores;
    v.m = &m;
    if (b.init.defined()) v.visit(b.init);
    v.visit(b.body);
    return v.out;
  }
  // Every buffer a block of the loop stores and another block accesses is stored with L in its
  // indices (a step's own elements). A tile rewritten at every iteration (cache_read under a
  // compute_at) is left alone: the loop is then not read as a recurrence.
  static bool step_indexed(const std::vector<const BlockRealizeNode*>& blocks, const VarNode* L) {
    std::vector<std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>>> st, all;
    for (auto* b : blocks) {
      st.push_back(accesses(b, true));
      auto a = accesses(b, false);
      for (auto& [y, t] : st.back()) a[y];
      all.push_back(a);
    }
    for (size_t w = 0; w < blocks.size(); ++w)
      for (auto& [y, ws] : st[w]) {
        bool shared = false;
        for (size_t r = 0; r < blocks.size(); ++r) shared = shared || (r != w && all[r].count(y));
        if (!shared) continue;
        for (auto& t : ws) {
          bool uses_l = false;
          for (auto& i : t) {
            auto a = to_affine(i);
            uses_l = uses_l || (a && a->coeff(L) != 0);
          }
          if (!uses_l) return false;
        }
      }
    return true;
  }
  // Some access of one block touches what another block stores at a different iteration of
  // L (or may: anything not proved the same iteration counts).
  bool carried(const std::vector<const BlockRealizeNode*>& blocks, const VarNode* L,
               const std::unordered_set<const VarNode*>& inner) const {
    std::vector<std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>>> st, ld;
    for (auto* b : blocks) {
      st.push_back(accesses(b, true));
      ld.push_back(accesses(b, false));
    }
    // One iteration of L in dimension d: both affine, the same nonzero coefficient of L, the
    // same terms of loops outside L and constants, no loop var between L and the blocks.
    auto same_iteration = [&](const std::vector<Expr>& a, const std::vector<Expr>& b) {
      if (a.size() != b.size()) return false;
      for (size_t d = 0; d < a.size(); ++d) {
        auto x = to_affine(a[d]), y = to_affine(b[d]);
        // Apart in every run of L: a nonzero constant difference of loops outside L (`H[t, j]`
        // and `H[t - 1, k]` under an inner loop j of t).
        if (x && y) {
          auto diff = to_affine(a[d] - b[d]);
          bool outside = !x->uses(L) && !y->uses(L);
          for (auto* z : {&*x, &*y})
            for (auto& [v, c] : z->terms) outside = outside && !inner.count(v.get());
          if (outside && diff && diff->terms.empty() && diff->constant != 0) return true;
        }
        if (!x || !y || x->coeff(L) == 0 || x->constant != y->constant || x->terms.size() != y->terms.size())
          continue;
        bool ok = true;
        for (auto& [v, c] : x->terms) ok = ok && !inner.count(v.get()) && y->coeff(v.get()) == c;
        if (ok) return true;
      }
      return false;
    };
    for (size_t w = 0; w < blocks.size(); ++w)
      for (auto& [y, ws] : st[w])
        for (size_t r = 0; r < blocks.size(); ++r) {
          if (r == w) continue;
          for (auto* acc : {&ld[r], &st[r]}) {
            auto it = acc->find(y);
            if (it == acc->end()) continue;
            for (auto& a : ws)
              for (auto& b : it->second)
                if (!same_iteration(a, b)) return true;
          }
        }
    return false;
  }
  std::unordered_set<const VarNode*> outer_;
};

// f with its root block's body rewritten by `rewrite` (nullopt: unchanged), the buffers it
// allocates appended to the root's allocs.
template <class Rewrite>
Function rewrite_root(const FunctionNode& f, Rewrite rewrite) {
  auto out = std::make_shared<FunctionNode>(f);
  auto* rr = f.body.as<BlockRealizeNode>();
  if (!rr) return out;
  BlockNode rb = *rr->block.get();
  std::vector<Buffer> allocs;
  std::optional<Stmt> body = rewrite(rb.body, &allocs);
  if (!body) return out;
  rb.body = *body;
  rb.allocs.insert(rb.allocs.end(), allocs.begin(), allocs.end());
  out->body = make_block_realize(rr->bindings, rr->predicate, make_block(std::move(rb)));
  return out;
}

}  // namespace

Function shift_region_steps(const FunctionNode& f) {
  return rewrite_root(f, [](const Stmt& body, std::vector<Buffer>*) -> std::optional<Stmt> {
    Stmt b = Shifter().mutate(body);
    if (b.same_as(body)) return std::nullopt;
    return b;
  });
}

Function scan_carried_loops(const FunctionNode& f) {
  return rewrite_root(f, [](const Stmt& body, std::vector<Buffer>*) -> std::optional<Stmt> {
    CarriedLoops cl;
    Stmt b = cl.mutate(body);
    if (!cl.changed) return std::nullopt;
    return b;
  });
}

Function version_region_buffers(const FunctionNode& f) {
  return rewrite_root(f, [&](const Stmt& body, std::vector<Buffer>* allocs) -> std::optional<Stmt> {
    RegionVersions rv(f);
    Stmt b = rv.mutate(body);
    if (b.same_as(body)) return std::nullopt;
    allocs->insert(allocs->end(), rv.new_allocs.begin(), rv.new_allocs.end());
    return b;
  });
}

}  // namespace tirc::ad

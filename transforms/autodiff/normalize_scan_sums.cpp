// Normalisation rewrite 13 (normalize_scan_sums.h).
#include "transforms/autodiff/normalize_scan_sums.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/autodiff/affine.h"
#include "transforms/autodiff/root_body.h"

namespace tirc::ad {

namespace {

using BufSet = std::unordered_set<const BufferNode*>;
using VarMap = std::unordered_map<const VarNode*, Expr>;

// One store or load of a buffer, its indices in terms of loop vars (iter vars replaced by
// their bindings, through nested blocks).
struct Access {
  const BufferNode* buf;
  std::vector<Expr> idx;
  bool store;
};

struct Accesses : IRVisitor {
  std::vector<Access> all;
  bool opaque = false;  // call_extern or a pointer: anything may be touched
  VarMap m;             // iter var -> binding (in loop vars)
  void visit_load(const LoadNode* n) override {
    std::vector<Expr> idx;
    for (auto& i : n->indices) idx.push_back(substitute(i, m));
    all.push_back(Access{n->buffer.get(), idx, false});
    IRVisitor::visit_load(n);
  }
  void visit_store(const StoreNode* n) override {
    std::vector<Expr> idx;
    for (auto& i : n->indices) idx.push_back(substitute(i, m));
    all.push_back(Access{n->buffer.get(), idx, true});
    IRVisitor::visit_store(n);
  }
  void visit_buffer_ptr(const BufferPtrNode*) override { opaque = true; }
  void visit_evaluate(const EvaluateNode* n) override {
    opaque = true;
    IRVisitor::visit_evaluate(n);
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    for (auto& b : n->bindings) IRVisitor::visit(substitute(b, m));
    IRVisitor::visit(substitute(n->predicate, m));
    VarMap saved = m;
    const BlockNode& b = *n->block.get();
    for (size_t k = 0; k < b.iter_vars.size(); ++k)
      m[b.iter_vars[k].var.get()] = substitute(n->bindings[k], saved);
    if (b.init.defined()) IRVisitor::visit(b.init);
    IRVisitor::visit(b.body);
    m = saved;
  }
};

Accesses accesses_of(const Stmt& s) {
  Accesses a;
  a.visit(s);
  return a;
}

// The block of a statement made of loops directly around one block realize.
const BlockRealizeNode* lone_block(const Stmt& s) {
  Stmt x = s;
  while (auto* f = x.as<ForNode>()) x = f->body;
  return x.as<BlockRealizeNode>();
}

// `L + k` (coefficient 1, no other var): k.
std::optional<int64_t> step_offset(const Expr& e, const VarNode* L) {
  auto a = to_affine(e);
  if (!a || a->terms.size() != 1 || a->terms[0].first.get() != L || a->terms[0].second != 1)
    return std::nullopt;
  return a->constant;
}

bool has_scan_block(const Stmt& s, const VarNode* L) {
  bool found = false;
  struct V : IRVisitor {
    const VarNode* L;
    bool* found;
    void visit_block_realize(const BlockRealizeNode* n) override {
      const BlockNode& b = *n->block.get();
      for (size_t k = 0; k < b.iter_vars.size(); ++k)
        if (b.iter_vars[k].kind == IterKind::Scan && step_offset(n->bindings[k], L)) *found = true;
      IRVisitor::visit_block_realize(n);
    }
  } v;
  v.L = L;
  v.found = &found;
  v.visit(s);
  return found;
}

struct Splitter : IRMutator {
  Stmt mutate_block_realize(const BlockRealizeNode*, const Stmt& s) override { return s; }
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* f = r.as<ForNode>();
    const VarNode* L = f->loop_var.get();
    std::vector<Stmt> stmts;
    if (auto* q = f->body.as<SeqNode>())
      stmts = q->stmts;
    else
      stmts.push_back(f->body);
    if (f->for_kind != ForKind::Serial || stmts.size() < 2 || !has_scan_block(f->body, L)) return r;
    std::vector<Accesses> acc;
    for (auto& st : stmts) {
      acc.push_back(accesses_of(st));
      if (acc.back().opaque) return r;
    }
    std::vector<bool> move(stmts.size(), false);
    for (size_t p = 0; p < stmts.size(); ++p) {
      const BlockRealizeNode* br = lone_block(stmts[p]);
      if (!br) continue;
      const BlockNode& b = *br->block.get();
      bool sum = false;
      for (size_t k = 0; k < b.iter_vars.size(); ++k)
        sum = sum || (b.iter_vars[k].kind == IterKind::Reduce && step_offset(br->bindings[k], L));
      if (!sum) continue;
      BufSet writes, reads;
      for (auto& a : acc[p].all) (a.store ? writes : reads).insert(a.buf);
      bool ok = true;
      for (size_t o = 0; o < stmts.size() && ok; ++o) {
        if (o == p) continue;
        for (auto& a : acc[o].all) ok = ok && !writes.count(a.buf);
      }
      // Every buffer read here that the loop writes: one step element per store, read at a
      // step already written (k' < k, or k' = k with the writer earlier in the body).
      for (auto* X : reads) {
        if (!ok || writes.count(X)) continue;
        for (size_t o = 0; o < stmts.size() && ok; ++o) {
          if (o == p) continue;
          for (auto& w : acc[o].all) {
            if (!w.store || w.buf != X) continue;
            // Some dimension holds the step in every store and every load of ours.
            bool dim_ok = false;
            for (size_t d = 0; d < w.idx.size() && !dim_ok; ++d) {
              auto kw = step_offset(w.idx[d], L);
              if (!kw) continue;
              bool all = true;
              for (auto& l : acc[p].all) {
                if (l.store || l.buf != X) continue;
                auto kb = d < l.idx.size() ? step_offset(l.idx[d], L) : std::nullopt;
                all = all && kb && (*kb < *kw || (*kb == *kw && o < p));
              }
              dim_ok = all;
            }
            ok = ok && dim_ok;
          }
        }
      }
      move[p] = ok;
    }
    std::vector<Stmt> keep, moved;
    for (size_t p = 0; p < stmts.size(); ++p) (move[p] ? moved : keep).push_back(stmts[p]);
    if (moved.empty() || keep.empty()) return r;
    Var v(f->loop_var.name(), f->loop_var.dtype());
    Stmt second = substitute(make_seq(moved), VarMap{{L, Expr(v)}});
    return make_seq(
        {make_for(f->loop_var, f->min, f->extent, f->for_kind, make_seq(keep), f->thread_tag, f->annotations),
         make_for(v, f->min, f->extent, f->for_kind, second, f->thread_tag, f->annotations)});
  }
};

struct SumFinder : IRVisitor {
  std::vector<const ForNode*> path;
  void visit_for(const ForNode* n) override {
    path.push_back(n);
    IRVisitor::visit_for(n);
    path.pop_back();
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    const BlockNode& b = *n->block.get();
    if (b.iter_vars.empty()) {  // the root
      IRVisitor::visit_block_realize(n);
      return;
    }
    for (size_t k = 0; k < b.iter_vars.size(); ++k) {
      if (b.iter_vars[k].kind != IterKind::Reduce) continue;
      for (const ForNode* L : path) {
        if (!step_offset(n->bindings[k], L->loop_var.get()) || !has_scan_block(L->body, L->loop_var.get()))
          continue;
        const std::string& v = b.iter_vars[k].var.name();
        const std::string& l = L->loop_var.name();
        throw Error("block " + b.name + ": sums over the steps of the scan loop " + l + " (reduce iter var " +
                    v + " bound to " + l +
                    ") inside the recurrence, which gradient() does not support; such a "
                    "sum moves after the loop by itself only when nothing else in the loop touches what it "
                    "writes and it reads the loop's results at steps already computed (a state after its "
                    "update, `H[" +
                    l + "]`, `H[" + l +
                    " - 1]`): otherwise store each step's term to an "
                    "element of its own in the loop (`T[" +
                    l +
                    "] = ...`) and sum T in a loop of its own "
                    "after the recurrence");
      }
    }
  }
};

}  // namespace

void refuse_scan_sums(const FunctionNode& f) { SumFinder().visit(f.body); }

Function split_scan_sums(const FunctionNode& f) {
  return map_root_body(f, [](const Stmt& body) { return Splitter().mutate(body); });
}

}  // namespace tirc::ad

#include "codegen/cross_thread_reduce.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/reducer.h"
#include "ir/visitor.h"
#include "transforms/simplify/simplify.h"

namespace tirc {

namespace {

bool is_tid(const ForNode* f) {
  return f->for_kind == ForKind::ThreadBinding && f->thread_tag.rfind("threadIdx", 0) == 0;
}

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  bool hit = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && vars.count(v)) hit = true;
  });
  return hit;
}

void split_and(const Expr& e, std::vector<Expr>* out) {
  if (auto* b = e.as<BinaryNode>(); b && b->op == BinOp::And) {
    split_and(b->a, out);
    split_and(b->b, out);
    return;
  }
  out->push_back(e);
}

const char* combiner_name(BinOp op) {
  switch (op) {
    case BinOp::Add: return "add";
    case BinOp::Mul: return "mul";
    case BinOp::Min: return "min";
    default: return "max";
  }
}

// One reduction to rewrite: the outermost reduction loop r0 and the block realize under it.
struct Site {
  const BlockRealizeNode* realize;
  ReductionUpdate update;
};

// Finds the reductions whose loops include a threadIdx loop; checks that they can be lowered.
class Finder : public IRVisitor {
 public:
  std::unordered_map<const ForNode*, Site> sites;

 protected:
  void visit_for(const ForNode* n) override {
    path_.push_back(n);
    IRVisitor::visit_for(n);
    path_.pop_back();
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    check(n);
    auto saved = std::move(path_);
    path_.clear();
    IRVisitor::visit_block_realize(n);
    path_ = std::move(saved);
  }

 private:
  std::vector<const ForNode*> path_;  // loops since the enclosing block, outermost first

  void check(const BlockRealizeNode* n) {
    const BlockNode* b = n->block.get();
    if (b->annotations.count("atomic")) return;
    auto feeds = [&](const ForNode* l, IterKind kind) {
      for (size_t i = 0; i < b->iter_vars.size(); ++i) {
        if (b->iter_vars[i].kind != kind) continue;
        bool u = false;
        for_each_expr(n->bindings[i], [&](const Expr& x) { u = u || x.as<VarNode>() == l->loop_var.get(); });
        if (u) return true;
      }
      return false;
    };
    size_t r0 = path_.size();
    const ForNode* tl = nullptr;
    for (size_t i = 0; i < path_.size(); ++i) {
      if (!feeds(path_[i], IterKind::Reduce)) continue;
      if (r0 == path_.size()) r0 = i;
      if (is_tid(path_[i]) && !tl) tl = path_[i];
    }
    if (!tl) return;
    const std::string head = "nvptx: block " + b->name + " reduces across the threads of loop " +
                             tl->loop_var.name() + " (" + tl->thread_tag + "), but ";
    for (auto& iv : b->iter_vars)
      if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce)
        throw Error(head + "it has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
                    iv.var.name());
    std::string why;
    auto upd = match_reduction_update(b->body, &why);
    if (!upd) throw Error(head + "its update is not a commutative reduction: " + why);
    DType t = upd->buffer->dtype;
    if (t == DType::Bool || t == DType::Handle)
      throw Error(head + "its buffer " + upd->buffer->name + " has dtype " + std::string(dtype_name(t)));
    std::unordered_set<const VarNode*> reduce_ivs;
    for (auto& iv : b->iter_vars)
      if (iv.kind == IterKind::Reduce) reduce_ivs.insert(iv.var.get());
    for (auto& e : upd->indices)
      if (uses_any(e, reduce_ivs)) throw Error(head + "its store index uses a reduce iter var");
    if (b->init.defined()) {
      auto* in = b->init.as<StoreNode>();
      bool same = in && in->buffer.same_as(upd->buffer) && in->indices.size() == upd->indices.size();
      for (size_t k = 0; same && k < in->indices.size(); ++k)
        same = expr_identical(in->indices[k], upd->indices[k]);
      if (!same) throw Error(head + "its init is not a store to the element it reduces into");
      if (uses_any(in->value, reduce_ivs)) throw Error(head + "its init value uses a reduce iter var");
    }
    std::set<std::string> tags;
    for (size_t i = 0; i < r0; ++i)
      if (is_tid(path_[i])) tags.insert(path_[i]->thread_tag);
    for (size_t i = r0; i < path_.size(); ++i) {
      if (feeds(path_[i], IterKind::Spatial))
        throw Error(
            head + "loop " + path_[i]->loop_var.name() +
            " inside its reduction loops feeds a spatial iter var (reorder the reduction loops innermost)");
      if (is_tid(path_[i]) && !tags.insert(path_[i]->thread_tag).second)
        throw Error(head + "loop " + path_[i]->loop_var.name() + " is bound to " + path_[i]->thread_tag +
                    ", which an enclosing loop binds too");
    }
    // The subtree of r0 holds this block only (no other block, no statement outside it).
    struct Count : IRVisitor {
      int blocks = 0, loose = 0;
      int depth = 0;
      void visit_block_realize(const BlockRealizeNode* x) override {
        ++blocks;
        ++depth;
        IRVisitor::visit_block_realize(x);
        --depth;
      }
      void visit_store(const StoreNode* x) override {
        loose += depth == 0;
        IRVisitor::visit_store(x);
      }
      void visit_evaluate(const EvaluateNode* x) override {
        loose += depth == 0;
        IRVisitor::visit_evaluate(x);
      }
    } cnt;
    cnt.visit(path_[r0]->body);
    if (cnt.blocks != 1 || cnt.loose != 0)
      throw Error(head + "its reduction loop " + path_[r0]->loop_var.name() + " holds other statements");
    sites.emplace(path_[r0], Site{n, *upd});
  }
};

class Rewriter : public IRMutator {
 public:
  explicit Rewriter(std::unordered_map<const ForNode*, Site> s) : sites_(std::move(s)) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    auto it = sites_.find(n);
    if (it == sites_.end()) return IRMutator::mutate_for(n, s);
    return rewrite(s, it->second);
  }

 private:
  std::unordered_map<const ForNode*, Site> sites_;

  static Stmt rewrite(const Stmt& r0, const Site& site) {
    const BlockRealizeNode* n = site.realize;
    const BlockNode* b = n->block.get();
    const ReductionUpdate& u = site.update;
    const Buffer& C = u.buffer;
    Buffer red(b->name + "_red", C->dtype, {make_int(1)}, "local");
    std::vector<Expr> zero{make_int(0)};
    // 1. the partial result of this thread.
    BlockNode pb = *b;
    pb.name = b->name + "_partial";
    pb.init = Stmt();
    pb.annotations.clear();
    pb.body = make_store(red, zero, make_binary(u.combine, make_load(red, zero), u.rhs));
    pb.writes = {BufferRegion{red, {Range{make_int(0), Expr()}}}};
    pb.reads.push_back(BufferRegion{red, {Range{make_int(0), Expr()}}});
    Stmt partial = make_block_realize(n->bindings, n->predicate, make_block(std::move(pb)));
    struct Swap : IRMutator {
      const BlockRealizeNode* target;
      Stmt with;
      Stmt mutate_block_realize(const BlockRealizeNode* x, const Stmt& s) override {
        return x == target ? with : IRMutator::mutate_block_realize(x, s);
      }
    } swap;
    swap.target = n;
    swap.with = partial;
    Stmt nest = swap.mutate(r0);
    // 2. the write-back, outside the reduction loops.
    std::unordered_set<const VarNode*> nest_vars;
    struct Loops : IRVisitor {
      std::unordered_set<const VarNode*>* out;
      std::vector<const ForNode*> loops;
      void visit_for(const ForNode* f) override {
        out->insert(f->loop_var.get());
        loops.push_back(f);
        IRVisitor::visit_for(f);
      }
    } lv;
    lv.out = &nest_vars;
    lv.visit(r0);
    std::vector<IterVar> wivs;
    std::vector<Expr> wbinds;
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      const IterVar& iv = b->iter_vars[i];
      if (iv.kind != IterKind::Spatial) continue;
      Var nv(iv.var.name(), iv.var.dtype());
      wivs.push_back(IterVar{nv, IterKind::Spatial, iv.extent});
      wbinds.push_back(n->bindings[i]);
      sub[iv.var.get()] = nv;
    }
    std::vector<Expr> conj, keep;
    split_and(n->predicate, &conj);
    for (auto& c : conj)
      if (!uses_any(c, nest_vars)) keep.push_back(c);
    Expr wpred;
    for (auto& c : keep) wpred = wpred.defined() ? make_binary(BinOp::And, wpred, c) : c;
    if (!wpred.defined()) wpred = make_bool(true);
    std::vector<Expr> idx;
    std::vector<Range> point;
    for (auto& e : u.indices) {
      idx.push_back(substitute(e, sub));
      point.push_back(Range{idx.back(), Expr()});
    }
    // The init runs only at the first reduce point (every reduce iter var 0), when that
    // instance runs: not where the reduction loops are empty, nor where the block's `where`
    // skips it (`where k >= 3` accumulates onto C's earlier value). The reduction loops feed
    // only reduce iter vars (Finder), so that point is the one at their mins when the bindings
    // are 0 there.
    Expr base = make_load(C, idx);
    if (b->init.defined()) {
      std::unordered_map<const VarNode*, Expr> at_min;
      Expr ran = make_bool(true);
      for (auto* f : lv.loops) {
        at_min[f->loop_var.get()] = f->min;
        int64_t e;
        if (!(is_const_int(f->extent, &e) && e >= 1))
          ran = make_binary(BinOp::And, ran,
                            make_binary(BinOp::GE, f->extent, make_const(f->extent.dtype(), 1)));
      }
      for (size_t i = 0; i < b->iter_vars.size(); ++i) {
        if (b->iter_vars[i].kind != IterKind::Reduce) continue;
        int64_t v;
        if (!is_const_int(simplify(substitute(n->bindings[i], at_min)), &v) || v != 0)
          throw Error("block " + b->name + ": a cross-thread reduction whose reduce iter var " +
                      b->iter_vars[i].var.name() +
                      " is not 0 where its loops start (its init's point) cannot place its init");
      }
      for (auto& c : conj)
        if (uses_any(c, nest_vars)) ran = make_binary(BinOp::And, ran, substitute(c, at_min));
      ran = simplify(ran);
      Expr init = substitute(b->init.as<StoreNode>()->value, sub);
      int64_t always;
      base = is_const_int(ran, &always) && always != 0 ? init : make_if_then_else(ran, init, base);
    }
    BlockNode wb;
    wb.name = b->name;
    wb.iter_vars = wivs;
    wb.reads = {BufferRegion{C, point}, BufferRegion{red, {Range{make_int(0), Expr()}}}};
    wb.writes = {BufferRegion{C, point}};
    wb.body = make_store(C, idx, make_binary(u.op, base, make_load(red, zero)));
    wb.loc = b->loc;
    Stmt write = make_block_realize(wbinds, wpred, make_block(std::move(wb)));
    BlockNode scope;
    scope.name = b->name + "_allreduce";
    scope.allocs = {red};
    Stmt start = make_store(red, zero, reducer_identity(u.combine, C->dtype));
    scope.body = make_seq({start, nest, write});
    scope.annotations[kAllreduceAnnotation] = std::string("\"") + combiner_name(u.combine) + "\"";
    return make_block_realize({}, make_bool(true), make_block(std::move(scope)));
  }
};

}  // namespace

Function lower_cross_thread_reductions(const FunctionNode& f) {
  Finder fd;
  fd.visit(f.body);
  if (fd.sites.empty()) return std::make_shared<const FunctionNode>(f);
  Rewriter rw(std::move(fd.sites));
  FunctionNode g = f;
  g.body = rw.mutate(f.body);
  return std::make_shared<const FunctionNode>(std::move(g));
}

}  // namespace tirc

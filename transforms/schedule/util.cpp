#include "transforms/schedule/util.h"

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace tirc::sched {

Stmt exclusive_root(const ScheduleState& st, const Stmt& br) {
  auto path = st.path_to(br.get());
  Stmt cur = br;
  for (size_t i = path.size() - 1; i-- > 0;) {
    const Stmt& p = path[i];
    if (p.kind() == StmtKind::For || p.kind() == StmtKind::LetStmt) {
      cur = p;
      continue;
    }
    break;
  }
  return cur;
}

std::vector<Stmt> blocks_in_order(const ScheduleState& st) { return collect_blocks(st.body()); }

int block_index(const std::vector<Stmt>& order, const Stmt& br) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i].same_as(br)) return static_cast<int>(i);
  return -1;
}

std::vector<Stmt> writers_of(const ScheduleState& st, const Buffer& buf, const BlockNode* except) {
  std::vector<Stmt> out;
  for (auto& b : blocks_in_order(st)) {
    if (b.same_as(st.body()) || block_of(b) == except) continue;
    // Only the innermost writer counts (an outer block lists what its children write).
    if (block_writes(*block_of(b), buf)) {
      bool inner = false;
      for (auto& c : collect_blocks(block_of(b)->body))
        if (block_writes(*block_of(c), buf)) inner = true;
      if (!inner) out.push_back(b);
    }
  }
  return out;
}

std::vector<Stmt> readers_of(const ScheduleState& st, const Buffer& buf, const BlockNode* except) {
  std::vector<Stmt> out;
  for (auto& b : blocks_in_order(st)) {
    if (b.same_as(st.body()) || block_of(b) == except) continue;
    if (body_reads(*block_of(b), buf)) {
      bool inner = false;
      for (auto& c : collect_blocks(block_of(b)->body))
        if (body_reads(*block_of(c), buf)) inner = true;
      if (!inner) out.push_back(b);
    }
  }
  return out;
}

std::vector<EnclosingVar> enclosing_vars(const ScheduleState& st, const StmtNode* n) {
  std::vector<EnclosingVar> out;
  auto path = st.path_to(n);
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (auto* f = path[i].as<ForNode>()) out.push_back({f->loop_var, f->min, f->extent});
    if (auto* r = path[i].as<BlockRealizeNode>())
      for (auto& iv : r->block->iter_vars) out.push_back({iv.var, make_int(0, iv.extent.dtype()), iv.extent});
  }
  return out;
}

Stmt top_item(const ScheduleState& st, const StmtNode* n) {
  auto path = st.path_to(n);
  // path[0] = root realize, path[1] = root body (maybe a Seq), then the item.
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i].kind() == StmtKind::Seq) continue;
    return path[i];
  }
  return Stmt();
}

bool buffer_used(const Stmt& s, const Buffer& buf) {
  bool used = false;
  std::function<void(const Stmt&)> rec = [&](const Stmt& x) {
    if (!x.defined() || used) return;
    if (auto* st = x.as<StoreNode>(); st && st->buffer.same_as(buf)) used = true;
    if (auto* br = x.as<BlockRealizeNode>()) {
      for (auto& r : br->block->reads) used = used || r.buffer.same_as(buf);
      for (auto& r : br->block->writes) used = used || r.buffer.same_as(buf);
    }
    for (auto& c : children(x)) rec(c);
  };
  rec(s);
  if (used) return true;
  for_each_expr(s, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(buf)) used = true;
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(buf)) used = true;
  });
  return used;
}

void remove_alloc_if_unused(ScheduleState& st, const Buffer& buf) {
  if (buffer_used(st.body(), buf)) return;
  for (auto& b : blocks_in_order(st)) {
    const BlockNode* bn = block_of(b);
    for (size_t i = 0; i < bn->allocs.size(); ++i)
      if (bn->allocs[i].same_as(buf)) {
        st.replace(b.get(), update_realize(b, [&](BlockRealizeNode& r) {
                     r.block =
                         update_block(r.block, [&](BlockNode& n) { n.allocs.erase(n.allocs.begin() + i); });
                   }));
        return;
      }
  }
}

namespace {

class LoadReplacer : public IRMutator {
 public:
  LoadReplacer(const Buffer& b, const std::function<Expr(const std::vector<Expr>&)>& f) : buf_(b), f_(f) {}

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_load(n, e);
    auto* l = r.as<LoadNode>();
    if (l && l->buffer.same_as(buf_)) return f_(l->indices);
    return r;
  }

 private:
  Buffer buf_;
  const std::function<Expr(const std::vector<Expr>&)>& f_;
};

class BufferReplacer : public IRMutator {
 public:
  BufferReplacer(const Buffer& a, const Buffer& b) : from_(a), to_(b) {}

 protected:
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    if (n->buffer.same_as(from_)) return make_load(to_, idx);
    return ch ? make_load(n->buffer, idx) : e;
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    if (n->buffer.same_as(from_)) return make_buffer_ptr(to_, idx);
    return ch ? make_buffer_ptr(n->buffer, idx) : e;
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    Expr v = mutate(n->value);
    if (n->buffer.same_as(from_)) return make_store(to_, idx, v);
    return ch || !v.same_as(n->value) ? make_store(n->buffer, idx, v) : s;
  }
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    return update_block(nb, [&](BlockNode& n) {
      n.reads = replace_buffer(n.reads, from_, to_);
      n.writes = replace_buffer(n.writes, from_, to_);
    });
  }

 private:
  Buffer from_, to_;
};

}  // namespace

Stmt replace_loads(const Stmt& s, const Buffer& buf, const std::function<Expr(const std::vector<Expr>&)>& f) {
  LoadReplacer r(buf, f);
  return r.mutate(s);
}
Expr replace_loads(const Expr& e, const Buffer& buf, const std::function<Expr(const std::vector<Expr>&)>& f) {
  LoadReplacer r(buf, f);
  return r.mutate(e);
}

Stmt replace_buffer(const Stmt& s, const Buffer& from, const Buffer& to) {
  BufferReplacer r(from, to);
  return r.mutate(s);
}

std::vector<BufferRegion> replace_buffer(const std::vector<BufferRegion>& rs, const Buffer& from,
                                         const Buffer& to) {
  std::vector<BufferRegion> out = rs;
  for (auto& r : out)
    if (r.buffer.same_as(from)) r.buffer = to;
  return out;
}

std::vector<BufferRegion> without(const std::vector<BufferRegion>& rs, const Buffer& buf) {
  std::vector<BufferRegion> out;
  for (auto& r : rs)
    if (!r.buffer.same_as(buf)) out.push_back(r);
  return out;
}

std::vector<BufferRegion> merge_regions(const std::vector<BufferRegion>& rs,
                                        const std::vector<BufferRegion>& extra) {
  std::vector<BufferRegion> out = rs;
  for (auto& e : extra) {
    bool has = false;
    for (auto& r : rs) has = has || r.buffer.same_as(e.buffer);
    if (!has) out.push_back(e);
  }
  return out;
}

Stmt make_nest(ScheduleState& st, const std::vector<Expr>& extents, const std::vector<std::string>& names,
               const std::function<Stmt(const std::vector<Var>&)>& body) {
  std::vector<Var> vars;
  std::vector<std::string> used;
  for (size_t i = 0; i < extents.size(); ++i) {
    std::string base = i < names.size() ? names[i] : "ax" + std::to_string(i);
    std::string n = fresh_var_name(st, base);
    // Also avoid the names given to the vars of this nest.
    for (int k = 1; std::find(used.begin(), used.end(), n) != used.end(); ++k)
      n = fresh_var_name(st, base + "_" + std::to_string(k));
    used.push_back(n);
    vars.emplace_back(n, extents[i].dtype());
  }
  Stmt s = body(vars);
  for (size_t i = extents.size(); i-- > 0;)
    s = make_for(vars[i], make_int(0, extents[i].dtype()), extents[i], ForKind::Serial, s);
  return s;
}

BufferRegion full_region(const Buffer& b) {
  BufferRegion r{b, {}};
  for (auto& s : b->shape) r.ranges.push_back(Range{make_int(0, s.dtype()), s});
  return r;
}

Stmt make_simple_block(const std::string& name, std::vector<IterVar> ivs, std::vector<Expr> bindings,
                       Stmt body, Stmt init, Expr pred) {
  BlockNode n;
  n.name = name;
  n.iter_vars = std::move(ivs);
  n.init = std::move(init);
  n.body = std::move(body);
  infer_regions(n, &n.reads, &n.writes);
  return make_block_realize(std::move(bindings), pred.defined() ? pred : make_bool(true),
                            make_block(std::move(n)));
}

}  // namespace tirc::sched

namespace tirc::sched {

std::vector<std::optional<SymRange>> region_under_loop(const Stmt& loop, const Stmt& bs,
                                                       const BufferRegion& r) {
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  SymRangeMap inner;
  auto path = find_path(loop.as<ForNode>()->body, bs.get());
  // Iter vars of blocks crossed on the way down, replaced by their bindings (innermost
  // first, since inner bindings use outer iter vars).
  std::vector<std::unordered_map<const VarNode*, Expr>> crossed;
  for (auto& p : path) {
    if (auto* r = p.as<BlockRealizeNode>(); r && !p.same_as(bs)) {
      std::unordered_map<const VarNode*, Expr> m;
      for (size_t i = 0; i < r->block->iter_vars.size(); ++i)
        m[r->block->iter_vars[i].var.get()] = r->bindings[i];
      crossed.push_back(std::move(m));
    }
    auto* f = p.as<ForNode>();
    if (!f) continue;
    SymRange rg{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
    if (auto lo = relax(rg.lo, inner)) rg.lo = lo->lo;
    if (auto hi = relax(rg.hi, inner)) rg.hi = hi->hi;
    inner[f->loop_var.get()] = rg;
  }
  std::unordered_map<const VarNode*, Expr> sub;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
  auto down = [&](Expr e) {
    e = substitute(e, sub);
    for (size_t k = crossed.size(); k-- > 0;) e = substitute(e, crossed[k]);
    return e;
  };
  std::vector<std::optional<SymRange>> out;
  for (auto& rg : r.ranges) {
    Expr lo = down(rg.begin);
    Expr hi = rg.is_point() ? lo : fold(down(rg.end) - make_int(1, rg.end.dtype()));
    auto x = relax(lo, inner), y = relax(hi, inner);
    // A data-dependent bound (a load in the index) is not a region: its value may be
    // anything, and evaluating it elsewhere may even be out of bounds.
    bool has_load = false;
    auto f = [&](const Expr& e) { has_load = has_load || e.kind() == ExprKind::Load; };
    if (x) for_each_expr(x->lo, f);
    if (y) for_each_expr(y->hi, f);
    if (x && y && !has_load)
      out.push_back(SymRange{x->lo, y->hi});
    else
      out.push_back(std::nullopt);
  }
  return out;
}

}  // namespace tirc::sched

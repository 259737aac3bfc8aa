// compute_inline(block): TVM Schedule.compute_inline. Replaces every load of the block's
// output buffer by the block's value (with the block's iter vars replaced by the load
// indices) and removes the block. Legal when the block is spatial (not a reduction), its
// body is one store `X[v0, v1, ...] = value` to distinct iter vars, X is an intermediate
// buffer (not a parameter or output) written only by this block, the block does not read X,
// and what it reads is not overwritten before the consumers run. A body of `let`s ending in
// the store (gradient blocks) is inlined as let expressions with fresh names.
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// The consumer's reads with X's regions replaced by the regions of `inferred` that the list
// does not have yet, at the place of X's first region: as TVM, which re-derives the reads in
// the order of the accesses, the inlined producer's inputs come where X was read, so
// `cache_read(conv, 0, "shared")` after inlining the padding still names the input. A buffer
// the consumer already read and the producer reads too (`T = R[vi] * X` inlined into
// `Y = T[vi, vj] * R[vj]`) takes its inferred region, which covers both loads: keeping the
// consumer's `R[vj]` would declare less than the body reads (cache_read then copies too little).
std::vector<BufferRegion> splice_regions(const std::vector<BufferRegion>& reads, const Buffer& X,
                                         const std::vector<BufferRegion>& inferred,
                                         const std::vector<Buffer>& producer_reads) {
  auto widened = [&](const BufferRegion& r) {
    bool shared = false;
    for (auto& p : producer_reads) shared = shared || p.same_as(r.buffer);
    if (shared)
      for (auto& e : inferred)
        if (e.buffer.same_as(r.buffer)) return e;
    return r;
  };
  std::vector<BufferRegion> rest = without(reads, X), added;
  for (auto& e : inferred) {
    bool has = false;
    for (auto& r : rest) has = has || r.buffer.same_as(e.buffer);
    for (auto& r : added) has = has || r.buffer.same_as(e.buffer);
    if (!has && !e.buffer.same_as(X)) added.push_back(e);
  }
  std::vector<BufferRegion> out;
  bool placed = false;
  for (auto& r : reads) {
    if (!r.buffer.same_as(X)) {
      out.push_back(widened(r));
    } else if (!placed) {
      out.insert(out.end(), added.begin(), added.end());
      placed = true;
    }
  }
  if (!placed) out.insert(out.end(), added.begin(), added.end());
  return out;
}

}  // namespace

void prim_compute_inline(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  if (is_reduction_block(*b)) refuse("block " + b->name + " is a reduction");
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial)
      refuse("block " + b->name + " has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
             iv.var.name());
  if (!collect_blocks(b->body).empty()) refuse("block " + b->name + " has nested blocks");
  Stmt flat = flat_store(*b);  // a let-bodied block (as autodiff writes them) inlines as let expressions
  const StoreNode* store = flat.as<StoreNode>();
  const Buffer& X = store->buffer;
  if (st.is_param(X))
    refuse("block " + b->name + " writes buffer " + X->name + ", a parameter or output of the function");
  if (!b->allocs.empty()) refuse("block " + b->name + " allocates buffers");
  auto ivs = index_vars(*b, store->indices, "the store");
  if (body_reads(*b, X)) refuse("block " + b->name + " reads buffer " + X->name + ", which it writes");
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    bool indexed = std::find(ivs.begin(), ivs.end(), static_cast<int>(i)) != ivs.end();
    if (!indexed && uses_var(store->value, b->iter_vars[i].var.get()))
      refuse("the value of block " + b->name + " uses iter var " + b->iter_vars[i].var.name() +
             ", which is not a store index");
  }
  bool has_ptr = false;
  for_each_expr(store->value, [&](const Expr& e) { has_ptr = has_ptr || e.kind() == ExprKind::BufferPtr; });
  if (has_ptr) refuse("block " + b->name + " passes a buffer pointer");
  auto others = writers_of(st, X, b);
  if (!others.empty()) refuse("buffer " + X->name + " is also written by block " + block_of(others[0])->name);
  auto consumers = readers_of(st, X, b);
  // A block whose `where` loads X (TVM's `T.where(B[i, j] < 10.0)`) reads it too: its predicate
  // gets the value inlined like its body (it read the removed buffer before).
  auto pred_loads_x = [&](const Stmt& s) { return predicate_loads_any(*realize(s), {X}) != nullptr; };
  for (auto& c : blocks_in_order(st))
    if (!c.same_as(st.body()) && block_of(c) != b && pred_loads_x(c) &&
        std::find_if(consumers.begin(), consumers.end(), [&](const Stmt& x) { return x.same_as(c); }) ==
            consumers.end())
      consumers.push_back(c);
  // X[e] holds value(e) whenever it was written (single writer, pure value), so the order
  // of the consumers does not matter; only the inputs of the value must be stable.
  for (auto& c : consumers) {
    const BlockNode* cb = block_of(c);
    bool ptr = false;
    auto f = [&](const Expr& e) {
      if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(X)) ptr = true;
    };
    if (cb->init.defined()) for_each_expr(cb->init, f);
    for_each_expr(cb->body, f);
    if (ptr) refuse("consumer block " + cb->name + " passes a pointer to buffer " + X->name);
    for (auto& in : read_buffers(*b))
      if (block_writes(*cb, in))
        refuse("consumer block " + cb->name + " writes buffer " + in->name + ", which block " + b->name +
               " reads");
    check_inputs_stable(st, *b, bs, c);
  }
  // Rewrite consumers.
  std::set<std::string> let_names;
  auto inline_value = [&](const std::vector<Expr>& idx) {
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t k = 0; k < idx.size(); ++k) sub[b->iter_vars[ivs[k]].var.get()] = idx[k];
    return rename_lets(st, substitute(store->value, sub), &let_names);
  };
  Stmt body = st.body();
  for (auto& c : consumers) {
    Stmt nc = update_realize(c, [&](BlockRealizeNode& r) {
      if (r.predicate.defined()) r.predicate = replace_loads(r.predicate, X, inline_value);
      r.block = update_block(r.block, [&](BlockNode& n) {
        n.init = n.init.defined() ? replace_loads(n.init, X, inline_value) : n.init;
        n.body = replace_loads(n.body, X, inline_value);
        std::vector<BufferRegion> inferred;
        infer_regions(n, &inferred, nullptr);
        n.reads = splice_regions(n.reads, X, inferred, read_buffers(*b));
      });
    });
    body = replace_stmt(body, c.get(), nc);
  }
  // Remove the block and the loops that hold only it.
  ScheduleState tmp = st;
  tmp.set_body(body);
  Stmt victim = exclusive_root(tmp, tmp.find_block(b->name));
  tmp.replace(victim.get(), Stmt());
  remove_alloc_if_unused(tmp, X);
  for (auto& c : consumers) refresh_enclosing_regions(tmp, block_of(c)->name);
  st.set_body(tmp.body());
}

}  // namespace tirc::sched

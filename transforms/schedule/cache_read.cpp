// cache = cache_read(block, read_index, "scope"): TVM Schedule.cache_read. Copies the
// whole buffer read by `block` (its reads[read_index]) into a new buffer "<A>_<scope>" in a
// new block placed, at the top level, after every writer of A and before its first reader;
// every reader of A then reads the copy. Legal when A is not written by its readers and no
// loop nest both writes and reads A (the copy must sit between them).
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_cache_read(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 3);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  // TVM accepts the index in the block's reads regions or the buffer's name.
  int64_t idx = -1;
  if (ins.args.size() > 1 && ins.args[1].kind == ScheduleArg::String) {
    for (size_t r = 0; r < b->reads.size() && idx < 0; ++r)
      if (b->reads[r].buffer->name == ins.args[1].text) idx = static_cast<int64_t>(r);
    if (idx < 0) refuse("block " + b->name + " does not read a buffer named " + ins.args[1].text);
  } else {
    idx = arg_int(ins, 1, "the read buffer index");
  }
  std::string scope = cache_scope(ins, 2);
  if (idx < 0 || idx >= static_cast<int64_t>(b->reads.size()))
    refuse("block " + b->name + " has " + std::to_string(b->reads.size()) + " read region" +
           (b->reads.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  Buffer A = b->reads[idx].buffer;
  if (block_writes(*b, A)) refuse("block " + b->name + " also writes buffer " + A->name);
  for (auto& blk : blocks_in_order(st))
    for (auto& a : block_of(blk)->allocs)
      if (a.same_as(A) && !blk.same_as(st.body()))
        refuse("buffer " + A->name + " is allocated inside block " + block_of(blk)->name);
  auto readers = readers_of(st, A);
  auto writers = writers_of(st, A);
  if (readers.empty()) refuse("no block loads buffer " + A->name + " (block " + b->name + " only declares it)");
  int first_reader = 1 << 30, last_writer = -1;
  for (auto& r : readers) {
    int p = root_position(st, top_item(st, r.get()));
    if (p < 0) refuse("reader " + block_of(r)->name + " is not under the root block");
    first_reader = std::min(first_reader, p);
  }
  for (auto& w : writers) last_writer = std::max(last_writer, root_position(st, top_item(st, w.get())));
  if (last_writer >= first_reader)
    refuse("buffer " + A->name + " is written after (or in the same loop nest as) one of its readers");
  for (auto& r : readers) {
    bool ptr = false;
    const BlockNode* rb = block_of(r);
    auto f = [&](const Expr& e) {
      if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(A)) ptr = true;
    };
    if (rb->init.defined()) for_each_expr(rb->init, f);
    for_each_expr(rb->body, f);
    if (ptr) refuse("block " + rb->name + " passes a pointer to buffer " + A->name);
  }
  Buffer cache(st.fresh_buffer_name(A->name + "_" + scope), A->dtype, A->shape, scope);
  std::string bname = st.fresh_block_name(cache->name);
  std::vector<std::string> names;
  for (size_t d = 0; d < A->ndim(); ++d) names.push_back("ax" + std::to_string(d));
  Stmt nest = make_nest(st, A->shape, names, [&](const std::vector<Var>& vs) {
    std::vector<IterVar> ivs;
    std::vector<Expr> binds, idxs;
    for (size_t d = 0; d < vs.size(); ++d) {
      Var v("v" + std::to_string(d), vs[d].dtype());
      ivs.push_back(IterVar{v, IterKind::Spatial, A->shape[d]});
      binds.push_back(vs[d]);
      idxs.push_back(v);
    }
    return make_simple_block(bname, ivs, binds, make_store(cache, idxs, make_load(A, idxs)));
  });
  Stmt body = st.body();
  for (auto& r : readers) body = replace_stmt(body, r.get(), replace_buffer(r, A, cache));
  st.set_body(body);
  insert_root_item(st, static_cast<size_t>(first_reader), nest);
  st.add_root_alloc(cache);
  for (auto& r : readers) refresh_enclosing_regions(st, block_of(r)->name);
  bind_block(st, ins, 0, bname);
}

}  // namespace tirc::sched

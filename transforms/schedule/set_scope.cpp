// set_scope(block, buffer_index, storage_scope): TVM Schedule.set_scope. Changes the storage
// scope of the buffer the block writes at `buffer_index` (its write regions, in order) to
// "global", "shared" or "local", everywhere in the function. Only buffers the function
// allocates: a parameter's or output's memory is the caller's. The scope does not change
// what is computed (the interpreter ignores it); the backends place the buffer accordingly
// and refuse what the target cannot do (a "local" buffer seen by several GPU threads).
#include "ir/mutator.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

// Replaces buffer `from` by `to` in the function body, in every block's allocs too.
class AllocReplacer : public IRMutator {
 public:
  AllocReplacer(const Buffer& a, const Buffer& b) : from_(a), to_(b) {}

 protected:
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    return update_block(nb, [&](BlockNode& n) {
      for (auto& a : n.allocs)
        if (a.same_as(from_)) a = to_;
    });
  }

 private:
  Buffer from_, to_;
};

}  // namespace

void prim_set_scope(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 3);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  int64_t idx = arg_int(ins, 1, "the buffer index");
  std::string scope = arg_string(ins, 2, "the storage scope");
  if (idx < 0 || idx >= static_cast<int64_t>(b->writes.size()))
    refuse("block " + b->name + " has " + std::to_string(b->writes.size()) + " write region" +
           (b->writes.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  if (scope != "global" && scope != "shared" && scope != "local")
    refuse("unknown storage scope \"" + scope + "\" (expected global, shared or local)");
  Buffer buf = b->writes[static_cast<size_t>(idx)].buffer;
  if (st.is_output(buf) || st.is_param(buf))
    refuse("buffer " + buf->name + " is a parameter of function " + st.func.name +
           " (only buffers the function allocates have a storage scope to set)");
  if (buf->scope == scope) return;
  Buffer nbuf(buf->name, buf->dtype, buf->shape, scope);
  Stmt body = replace_buffer(st.body(), buf, nbuf);
  body = AllocReplacer(buf, nbuf).mutate(body);
  st.set_body(body);
}

}  // namespace tirc::sched

// unannotate(block_or_loop, "key"): TVM Schedule.unannotate. Removes an annotation (added by
// annotate or written in the script); annotations never change what is computed. Refused
// when the block or loop has no annotation of that key.
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_unannotate(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  expect_results(ins, 0);
  const Handle& h = arg_handle(st, ins, 0);
  std::string key = arg_string(ins, 1, "the annotation key");
  if (h.kind == Handle::LoopH) {
    Stmt ls = arg_loop(st, ins, 0);
    auto* f = ls.as<ForNode>();
    if (!f->annotations.count(key)) refuse("loop " + loop_name(ls) + " has no annotation \"" + key + "\"");
    Annotations a = f->annotations;
    a.erase(key);
    st.replace(ls.get(), make_for(f->loop_var, f->min, f->extent, f->for_kind, f->body, f->thread_tag, a));
  } else {
    Stmt bs = arg_block(st, ins, 0);
    const BlockNode* b = block_of(bs);
    if (!b->annotations.count(key)) refuse("block " + b->name + " has no annotation \"" + key + "\"");
    st.replace(bs.get(), update_realize(bs, [&](BlockRealizeNode& r) {
                 r.block = update_block(r.block, [&](BlockNode& n) { n.annotations.erase(key); });
               }));
  }
}

}  // namespace tirc::sched

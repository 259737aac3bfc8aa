// add_unit_loop(block_or_loop): TVM Schedule.add_unit_loop. Wraps the block (its realize) or
// the loop in a new serial loop of extent 1 and returns it (named after the result, else
// `u`). Always legal: the body runs once, as before. TVM uses it to give a block without
// loops a loop to blockize / tensorize / bind. The root block is refused (the function body
// has no place above it).
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

void prim_add_unit_loop(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  if (ins.results.size() > 1) expect_results(ins, 1);
  const Handle& h = arg_handle(st, ins, 0);
  Stmt target = h.kind == Handle::BlockH ? arg_block(st, ins, 0) : arg_loop(st, ins, 0);
  if (target.same_as(st.body())) refuse("the root block cannot be scheduled");
  std::string base = !ins.results.empty() && ins.results[0] != "_" ? ins.results[0] : "u";
  Var u(fresh_var_name(st, base), DType::I32);
  st.replace(target.get(), make_for(u, make_int(0), make_int(1), ForKind::Serial, target));
  if (!ins.results.empty()) bind_loop(st, ins, 0, u);
}

}  // namespace tirc::sched

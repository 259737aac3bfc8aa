// get_block, get_loops, get_child_blocks: handle queries (TVM Schedule.get_block,
// get_loops, get_child_blocks). They never change the function.
#include "transforms/schedule/prims.h"

namespace tirc::sched {

// b = get_block("NAME") or get_block("NAME", func_name="F"). "root" (the function's root
// block) may be taken for get_child_blocks / annotate / get_loops, as in TVM.
void prim_get_block(ScheduleState& st, const ScheduleInstr& ins) {
  auto pos = positional(ins);
  if (pos.size() < 1 || pos.size() > 2)
    refuse("expected 1 argument (the block name), got " + std::to_string(pos.size()));
  if (pos[0]->kind != ScheduleArg::String)
    refuse("the block name must be a string literal, e.g. get_block(\"C\")");
  if (pos.size() == 2) {
    if (pos[1]->kind != ScheduleArg::String) refuse("func_name must be a string literal");
    if (pos[1]->text != st.func.name)
      refuse("func_name \"" + pos[1]->text + "\" does not name the scheduled function " + st.func.name);
  }
  expect_results(ins, 1);
  std::string name = pos[0]->text;
  Stmt b = st.find_block(name);
  // TVM's name of a block made by loop_partition (`B_i1`): the copy it names here.
  if (auto it = st.partition_aliases.find(name); !b.defined() && it != st.partition_aliases.end()) {
    name = it->second;
    b = st.find_block(name);
  }
  if (!b.defined()) refuse("no block named \"" + pos[0]->text + "\" in function " + st.func.name);
  bind_block(st, ins, 0, name);
}

// i, j, k = get_loops(b): the loops above b up to its enclosing block, outermost first.
void prim_get_loops(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  Stmt b = arg_block(st, ins, 0);
  auto loops = st.loops_above(b.get());
  if (ins.results.size() != loops.size())
    refuse("block " + block_of(b)->name + " has " + std::to_string(loops.size()) + " loop" +
           (loops.size() == 1 ? "" : "s") + ", but " + std::to_string(ins.results.size()) + " name" +
           (ins.results.size() == 1 ? " is" : "s are") + " bound");
  for (size_t i = 0; i < loops.size(); ++i) bind_loop(st, ins, i, loops[i].as<ForNode>()->loop_var);
}

// The blocks directly below the handle argument 0 of `ins` (not inside other blocks).
std::vector<Stmt> child_blocks(ScheduleState& st, const ScheduleInstr& ins) {
  const Handle& h = arg_handle(st, ins, 0);
  Stmt root;
  std::vector<Stmt> kids;
  if (h.kind == Handle::BlockH) {
    // A block's init is not in TVM's sref tree, so its blocks are no children: after
    // blockize of a reduction tile, `(inner,) = get_child_blocks(outer)` is the update.
    root = arg_block(st, ins, 0);
    for (auto& b : collect_blocks(block_of(root)->body, false)) kids.push_back(b);
  } else {
    root = arg_loop(st, ins, 0);
    kids = collect_blocks(root.as<ForNode>()->body, false);
  }
  return kids;
}

// a, b = get_child_blocks(block_or_loop): the blocks directly below (not inside other blocks,
// not in an init).
void prim_get_child_blocks(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  const Handle& h = arg_handle(st, ins, 0);
  std::vector<Stmt> kids = child_blocks(st, ins);
  if (ins.results.size() != kids.size())
    refuse("'" + h.name + "' has " + std::to_string(kids.size()) + " child block" +
           (kids.size() == 1 ? "" : "s") + ", but " + std::to_string(ins.results.size()) + " name" +
           (ins.results.size() == 1 ? " is" : "s are") + " bound");
  for (size_t i = 0; i < kids.size(); ++i) bind_block(st, ins, i, block_of(kids[i])->name);
}

}  // namespace tirc::sched

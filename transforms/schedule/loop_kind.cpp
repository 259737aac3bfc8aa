// parallel, vectorize, unroll, bind: change the kind of a loop (TVM Schedule.parallel,
// vectorize, unroll, bind). Parallel, vectorized and thread-bound loops run their
// iterations in any order or at once, so the iterations must be independent
// (deps.h: only spatial iter vars, no buffer shared across iterations). Unrolling keeps
// the order and is always legal.
#include <set>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

Stmt loop_for_kind(ScheduleState& st, const ScheduleInstr& ins, ForKind kind, const std::string& tag) {
  Stmt ls = arg_loop(st, ins, 0);
  auto* f = ls.as<ForNode>();
  if (f->for_kind == kind && f->thread_tag == tag) return Stmt();
  // As in TVM, a parallel / vectorized / unrolled loop may get another kind: the new kind's
  // own checks run (independent iterations for parallel, vectorize and bind; none for unroll,
  // whose in-order execution is one of the orders the old kind allowed). A thread-bound loop
  // stays bound (its extent is the launch size of that axis).
  if (f->for_kind == ForKind::ThreadBinding)
    refuse("loop " + loop_name(ls) + " is already bound to " + f->thread_tag);
  return ls;
}

// TVM's cooperative fetch: the loops of a copy computed at a loop inside the thread loops
// (compute_at of a "shared" cache_read relaxes its region over them) are fused, split and
// bound to the same threadIdx axes again. On the GPU the inner loop then runs only the
// iteration equal to the thread index, once per thread instead of once per iteration of the
// enclosing loop `outer` (also the thread index): the threads share the copy. That computes
// the same when the inner loop's subtree does not depend on `outer`'s variable (every
// iteration of `outer` would compute the same), every thread reaches it (its extent is at
// most `outer`'s) and what it writes is visible to the other threads of the block: "shared"
// buffers only (the backend puts a barrier before their readers).
void check_rebind(const Stmt& ls, const ForNode* outer, const std::string& tag, std::string why = "") {
  auto* f = ls.as<ForNode>();
  if (why.empty())
    why = "thread axis " + tag + " is already bound by the enclosing loop " + outer->loop_var.name();
  const VarNode* ov = outer->loop_var.get();
  bool dep = false;
  for_each_expr(ls, [&](const Expr& e) { dep = dep || (e.as<VarNode>() == ov); });
  if (dep) refuse(why + " and the body of loop " + f->loop_var.name() + " depends on it");
  int64_t ei = 0, eo = 0;
  if (!is_const_int(fold(f->extent), &ei) || !is_const_int(fold(outer->extent), &eo) || ei > eo)
    refuse(why + " and loop " + f->loop_var.name() + " is not known to be at most as long (" +
           print_expr(f->extent) + " > " + print_expr(outer->extent) + ")");
  for (auto& bs : collect_blocks(ls))
    for (auto& w : block_of(bs)->writes)
      if (w.buffer->scope != "shared")
        refuse(why + " and loop " + f->loop_var.name() + " writes buffer " + w.buffer->name +
               ", which is not \"shared\" (its other threads would not see the values)");
}

}  // namespace

void prim_parallel(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt ls = loop_for_kind(st, ins, ForKind::Parallel, "");
  if (!ls.defined()) return;
  check_iterations_independent(st, ls, "parallel");
  st.replace(ls.get(), with_kind(*ls.as<ForNode>(), ForKind::Parallel, ""));
}

void prim_vectorize(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt ls = loop_for_kind(st, ins, ForKind::Vectorized, "");
  if (!ls.defined()) return;
  auto* f = ls.as<ForNode>();
  // As in TVM, the loop need not be innermost: its iterations are independent (checked below),
  // so running them in any order or at once is one of the allowed executions; the backend
  // emits vector code for innermost loops and leaves a hint on outer ones (docs/codegen.md).
  int64_t ext;
  if (!is_const_int(fold(f->extent), &ext))
    refuse("loop " + loop_name(ls) +
           " has a non-constant extent (as in TVM; split it by a constant inner factor, e.g. [None, 8], "
           "and vectorize the inner loop)");
  check_iterations_independent(st, ls, "vectorize");
  st.replace(ls.get(), with_kind(*f, ForKind::Vectorized, ""));
}

void prim_unroll(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt ls = loop_for_kind(st, ins, ForKind::Unrolled, "");
  if (!ls.defined()) return;
  st.replace(ls.get(), with_kind(*ls.as<ForNode>(), ForKind::Unrolled, ""));
}

void prim_bind(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  expect_results(ins, 0);
  std::string tag = arg_string(ins, 1, "the thread axis");
  // TVM's virtual threads are "vthread.x/y/z"; here every vthread is one serial loop.
  if (tag == "vthread.x" || tag == "vthread.y" || tag == "vthread.z") tag = "vthread";
  static const std::set<std::string> tags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                             "threadIdx.y", "threadIdx.z", "vthread"};
  if (!tags.count(tag))
    refuse("unknown thread axis \"" + tag + "\" (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread)");
  Stmt ls = loop_for_kind(st, ins, ForKind::ThreadBinding, tag);
  if (!ls.defined()) return;
  if (tag != "vthread") {
    for (auto& p : st.path_to(ls.get()))
      if (auto* f = p.as<ForNode>();
          f && f != ls.get() && f->for_kind == ForKind::ThreadBinding && f->thread_tag == tag)
        check_rebind(ls, f, tag);
    for (auto& l : collect_loops(ls.as<ForNode>()->body))
      if (auto* f = l.as<ForNode>(); f->for_kind == ForKind::ThreadBinding && f->thread_tag == tag)
        check_rebind(l, ls.as<ForNode>(), tag,
                     "thread axis " + tag + " is already bound by the inner loop " + f->loop_var.name());
  }
  check_iterations_independent(st, ls, "bind");
  st.replace(ls.get(), with_kind(*ls.as<ForNode>(), ForKind::ThreadBinding, tag));
}

}  // namespace tirc::sched

// parallel, vectorize, unroll, bind: change the kind of a loop (TVM Schedule.parallel,
// vectorize, unroll, bind). Parallel, vectorized and thread-bound loops run their
// iterations in any order or at once, so the iterations must be independent
// (deps.h: only spatial iter vars, no buffer shared across iterations), except a reduce loop
// bound to threadIdx, a cross-thread reduction (cross_thread_reductions below). Unrolling
// keeps the order and is always legal.
#include <set>

#include "ir/printer.h"
#include "ir/reducer.h"
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
  // may be rebound or get another kind too, as TVM (`bind(i, "blockIdx.x")` then
  // `bind(i, "threadIdx.x")` or `unroll(i)`): the new kind's checks run on its iterations.
  // It stays bound when another loop around or inside it is bound to the same axis (a
  // cooperative copy bound again inside it, accepted only as a nested binding of this one).
  if (f->for_kind == ForKind::ThreadBinding) {
    bool nested = false;
    for (auto& p : st.path_to(ls.get()))
      if (auto* g = p.as<ForNode>();
          g && g != f && g->for_kind == ForKind::ThreadBinding && g->thread_tag == f->thread_tag)
        nested = true;
    for (auto& l : collect_loops(f->body))
      if (auto* g = l.as<ForNode>(); g->for_kind == ForKind::ThreadBinding && g->thread_tag == f->thread_tag)
        nested = true;
    if (nested) refuse("loop " + loop_name(ls) + " is already bound to " + f->thread_tag);
  }
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

// TVM's cross-thread reduction: `bind(k, "threadIdx.x")` of a loop feeding reduce iter vars
// of a reduction block. The threads each accumulate a partial result, which the backend
// combines across them (LowerThreadAllreduce: warp shuffles, shared memory across warps) and
// one thread stores; on the CPU the bound loop runs serially, as written. Returns the blocks
// reduced so (every one checked here, refusing with the reason); other blocks are left to
// the independence checks. Needs a commutative update `C[s] = C[s] OP x` (OP + - * min max,
// init a store to the same element), a loop of constant extent (the number of threads)
// feeding no spatial iter var, and reduction loops holding only the block (the partials then
// cover the block's whole reduction and nothing else reads C meanwhile).
std::set<const BlockNode*> cross_thread_reductions(const ScheduleState& st, const Stmt& ls,
                                                   const std::string& tag) {
  std::set<const BlockNode*> out;
  if (tag.rfind("threadIdx.", 0) != 0) return out;
  auto* L = ls.as<ForNode>();
  const std::string lname = loop_name(ls);
  for (auto& bs : collect_blocks(L->body, false)) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    if (atomic_scatter_add(*b)) continue;
    const IterVar* red = nullptr;
    bool spatial = false;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      if (!uses_var(br->bindings[i], L->loop_var.get())) continue;
      if (b->iter_vars[i].kind == IterKind::Reduce && !red) red = &b->iter_vars[i];
      if (b->iter_vars[i].kind == IterKind::Spatial) spatial = true;
    }
    if (!red) continue;
    const std::string head = "loop " + lname + " is bound to the reduce iter var " + red->var.name() +
                             " of block " + b->name + " (a cross-thread reduction)";
    if (spatial) refuse(head + ", but it also feeds a spatial iter var of the block");
    for (auto& iv : b->iter_vars)
      if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce)
        refuse(head + ", which has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
               iv.var.name());
    std::string why;
    auto upd = match_reduction_update(b->body, &why);
    if (!upd) refuse(head + ", whose update is not a commutative reduction: " + why);
    for (auto& e : upd->indices)
      for (auto& iv : b->iter_vars)
        if (iv.kind == IterKind::Reduce && uses_var(e, iv.var.get()))
          refuse(head + ", whose store index uses the reduce iter var " + iv.var.name() +
                 " (not one element per spatial point)");
    if (b->init.defined()) {
      auto* in = b->init.as<StoreNode>();
      bool same = in && in->buffer.same_as(upd->buffer) && in->indices.size() == upd->indices.size();
      for (size_t k = 0; same && k < in->indices.size(); ++k)
        same = expr_identical(in->indices[k], upd->indices[k]);
      if (!same) refuse(head + ", whose init is not a store to the element it reduces into");
    }
    int64_t ext = 0;
    if (!is_const_int(fold(L->extent), &ext))
      refuse(
          head + ", of non-constant extent " + print_expr(L->extent) +
          " (the number of threads must be known: split it by a constant factor, e.g. [None, 128], and bind "
          "the inner loop)");
    // The reduction loops (from the outermost one feeding a reduce iter var) hold only this
    // block and feed no spatial iter var: the threads' partials are then the whole reduction.
    auto loops = st.loops_above(bs.get());
    size_t r0 = loops.size();
    for (size_t i = 0; i < loops.size() && r0 == loops.size(); ++i)
      for (auto k : kinds_bound_to(*br, loops[i].as<ForNode>()->loop_var.get()))
        if (k == IterKind::Reduce) r0 = i;
    for (size_t i = r0; i < loops.size(); ++i) {
      for (auto k : kinds_bound_to(*br, loops[i].as<ForNode>()->loop_var.get()))
        if (k == IterKind::Spatial)
          refuse(head + ", but loop " + loop_name(loops[i]) +
                 " inside its reduction loops feeds a spatial iter var " +
                 "(reorder the reduction loops innermost)");
    }
    if (r0 < loops.size()) {
      const Stmt& R0 = loops[r0];
      if (collect_blocks(R0, true).size() != 1 || has_loose_effects(R0))
        refuse(head + ", but its reduction loop " + loop_name(R0) +
               " holds other statements (the partial results would not be the whole reduction)");
    }
    out.insert(b);
  }
  return out;
}

// A block whose stores do not depend on a spatial iter var that the loop feeds writes the
// same elements in every iteration of the loop (TVM's rowsum_not_compact_data_flow: `B[vk] =
// B[vk] + A[vi, vk]` with vi spatial): running the iterations at once is a race. Such a block
// breaks the contract (spatial iterations conflict); TVM refuses it as not a compact data flow.
void check_stores_follow_loop(const Stmt& ls) {
  struct Stores : IRVisitor {
    std::vector<const StoreNode*> out;
    void visit_store(const StoreNode* n) override {
      out.push_back(n);
      IRVisitor::visit_store(n);
    }
    void visit_block_realize(const BlockRealizeNode*) override {}  // nested blocks: their own
  };
  const VarNode* lv = ls.as<ForNode>()->loop_var.get();
  for (auto& b : collect_blocks(ls)) {
    const BlockRealizeNode* br = realize(b);
    const BlockNode* bn = br->block.get();
    Stores s;
    if (bn->init.defined()) s.visit(bn->init);
    s.visit(bn->body);
    if (s.out.empty()) continue;
    for (size_t i = 0; i < bn->iter_vars.size(); ++i) {
      const IterVar& iv = bn->iter_vars[i];
      if (iv.kind != IterKind::Spatial || is_one(fold(iv.extent)) || !uses_var(br->bindings[i], lv)) continue;
      bool used = false;
      for (auto* st_ : s.out)
        for (auto& e : st_->indices) used = used || uses_var(e, iv.var.get());
      if (!used)
        refuse("block " + bn->name + " stores at indices that do not depend on its spatial iter var " +
               iv.var.name() + ", which loop " + loop_name(ls) +
               " feeds (every iteration would write the same elements; not a compact data flow)");
    }
  }
}

}  // namespace

void prim_parallel(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 1, 1);
  expect_results(ins, 0);
  Stmt ls = loop_for_kind(st, ins, ForKind::Parallel, "");
  if (!ls.defined()) return;
  check_iterations_independent(st, ls, "parallel");
  check_stores_follow_loop(ls);
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
  check_stores_follow_loop(ls);
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
  check_iterations_independent(st, ls, "bind", cross_thread_reductions(st, ls, tag));
  check_stores_follow_loop(ls);
  st.replace(ls.get(), with_kind(*ls.as<ForNode>(), ForKind::ThreadBinding, tag));
}

}  // namespace tirc::sched

// rf = rfactor(loop, factor_axis): TVM Schedule.rfactor. For a reduction block C
// (`C[s] = C[s] OP rhs`, OP one of + - * min max, init = OP's identity or no init, the body
// possibly preceded by lets as autodiff writes them) and a loop feeding
// only its reduce iter vars, computes partial results into a new buffer "<C>_rf" with the
// loop's extent inserted at dimension factor_axis (block "<C>_rf", the loop becoming a
// spatial iter var), then reduces them into C in the original block (the write-back, same
// name) under new loops. Legal when the loop nest holds only this block (below outer loops
// that feed only spatial iter vars and may hold other statements), the bindings are
// affine and one-to-one, no loop feeds both spatial and reduce iter vars, and a predicate
// over the reduction loops (non-dividing split) still runs the first iteration of every
// partial result that runs at all (the write-back then skips the partials that never run). Results differ
// from the original only by float reassociation.
#include <algorithm>
#include <cmath>

#include "ir/printer.h"
#include "ir/reducer.h"
#include "transforms/schedule/inline_common.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

bool is_identity(BinOp op, const Expr& v, DType t) {
  double d;
  int64_t i;
  bool fc = is_const_float(v, &d), ic = is_const_int(v, &i);
  if (!fc && !ic) return false;
  double x = fc ? d : static_cast<double>(i);
  switch (op) {
    case BinOp::Add: return x == 0;
    case BinOp::Mul: return x == 1;
    case BinOp::Max:
      if (is_float(t))
        return std::isinf(x)
                   ? x < 0
                   : x <= -3.4028234663852886e38 || (t == DType::F64 && x <= -1.7976931348623157e308);
      return x <= -2147483648.0 || (t == DType::I8 && x <= -128) || (t == DType::I16 && x <= -32768) ||
             (is_unsigned_int(t) && x == 0);
    case BinOp::Min:
      if (is_float(t)) return std::isinf(x) ? x > 0 : x >= 3.4028234663852886e38;
      return x >= 2147483647.0 || (t == DType::I8 && x >= 127) || (t == DType::I16 && x >= 32767);
    default: return false;
  }
}

// The identity element of a reducer, as TVM's: 0, 1, lowest / highest finite value.
Expr identity_of(BinOp op, DType t) {
  // Floats keep the finite extremes rfactor always used; integer ends come exact from
  // reducer_identity (an i64 bound does not survive a trip through double).
  if (!is_float(t) || (op != BinOp::Max && op != BinOp::Min)) return reducer_identity(op, t);
  double big = t == DType::F64 ? 1.7976931348623157e308 : 3.4028234663852886e38;
  return make_const(t, op == BinOp::Max ? -big : big);
}

}  // namespace

void prim_rfactor(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  Stmt ls = arg_loop(st, ins, 0);
  int64_t axis = arg_int(ins, 1, "factor_axis");
  auto* L = ls.as<ForNode>();
  auto blocks = collect_blocks(L->body, true);
  if (blocks.size() != 1)
    refuse("loop " + loop_name(ls) + " must hold exactly one block, it holds " +
           std::to_string(blocks.size()));
  Stmt bs = blocks[0];
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  auto kinds = kinds_bound_to(*br, L->loop_var.get());
  // A unit loop that feeds nothing (TVM's `fused_inner` of extent 1 after a fuse + split) is a
  // trivial reduction loop: the rf buffer gets a dimension of 1 (TVM does the same). A longer
  // one would run the block repeatedly on the same point (not one-to-one, refused below).
  int64_t l_ext = 0;
  bool unit_rf = kinds.empty() && is_const_int(L->extent, &l_ext) && l_ext == 1;
  if (kinds.empty() && !unit_rf)
    refuse("loop " + loop_name(ls) + " does not feed any iter var of block " + b->name);
  for (auto k : kinds)
    if (k != IterKind::Reduce)
      refuse("loop " + loop_name(ls) + " feeds a " + std::string(iter_kind_name(k)) + " iter var of block " +
             b->name);
  if (st.scope_of(bs.get()).get() != st.body().get())
    refuse("block " + b->name + " is not under the root block");
  // Pattern: C[s] = C[s] OP rhs (OP one of + - * min max; `-` only as C - rhs), optionally
  // after `let`s (gradient blocks), with init C[s] = identity of OP or no init (then C keeps
  // what it held before: gradient accumulation).
  Stmt flat = flat_store(*b);
  auto* store = flat.as<StoreNode>();
  auto* init = b->init.defined() ? b->init.as<StoreNode>() : nullptr;
  if (b->init.defined() && !init) refuse("the init of block " + b->name + " must be a single store");
  const Buffer& C = store->buffer;
  if (init) {
    if (!init->buffer.same_as(C)) refuse("the init of block " + b->name + " stores another buffer");
    for (size_t k = 0; k < store->indices.size(); ++k)
      if (!expr_identical(store->indices[k], init->indices[k]))
        refuse("the init of block " + b->name + " stores other indices");
  }
  std::vector<const LetNode*> lets;
  Expr core = store->value;
  while (auto* l = core.as<LetNode>()) {
    lets.push_back(l);
    core = l->body;
  }
  // `let v = C[s] + x; C[s] = v` (TVM's transformed_matmul_with_let): the stored value is the
  // innermost let's name; its value is the update.
  while (!lets.empty() && core.as<VarNode>() && core.as<VarNode>() == lets.back()->var.get()) {
    core = lets.back()->value;
    lets.pop_back();
  }
  auto* bin = core.as<BinaryNode>();
  auto is_self = [&](const Expr& e) {
    auto* l = e.as<LoadNode>();
    if (!l || !l->buffer.same_as(C)) return false;
    for (size_t k = 0; k < l->indices.size(); ++k)
      if (!expr_identical(l->indices[k], store->indices[k])) return false;
    return true;
  };
  if (!bin || (bin->op != BinOp::Add && bin->op != BinOp::Sub && bin->op != BinOp::Mul &&
               bin->op != BinOp::Min && bin->op != BinOp::Max))
    refuse("block " + b->name + " is not a reduction of the form C = C + x (or - * min max)");
  Expr rhs;
  if (is_self(bin->a))
    rhs = bin->b;
  else if (is_self(bin->b) && bin->op != BinOp::Sub)
    rhs = bin->a;
  else
    refuse("block " + b->name + " is not a reduction of the form C = C + x (or - * min max)");
  // The partial results accumulate with the block's own operator; they combine into C with
  // + for a subtraction (C - x1 - x2 = C + (-x1 - x2)).
  BinOp part_op = bin->op, comb_op = bin->op == BinOp::Sub ? BinOp::Add : bin->op;
  for (size_t k = lets.size(); k-- > 0;) rhs = make_let(lets[k]->var, lets[k]->value, rhs);
  bool self_in_rhs = false;
  for_each_expr(rhs, [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(C)) self_in_rhs = true;
    if (e.kind() == ExprKind::BufferPtr) self_in_rhs = true;
  });
  if (self_in_rhs) refuse("the reduced value of block " + b->name + " reads " + C->name + " again");
  if (init && !is_identity(comb_op, init->value, C->dtype))
    refuse("the init value of block " + b->name + " is not the identity of " + binop_symbol(comb_op));
  Expr identity = init ? init->value : identity_of(comb_op, C->dtype);
  for (auto& iv : b->iter_vars)
    if (iv.kind != IterKind::Spatial && iv.kind != IterKind::Reduce)
      refuse("block " + b->name + " has the " + std::string(iter_kind_name(iv.kind)) + " iter var " +
             iv.var.name());
  for (auto& e : store->indices)
    for (auto& iv : b->iter_vars)
      if (iv.kind == IterKind::Reduce && uses_var(e, iv.var.get()))
        refuse("the store index of block " + b->name + " uses the reduce iter var " + iv.var.name() +
               " (not a reduction into one element per spatial point)");
  // Loop nest: only this block, loops start at 0, affine one-to-one bindings.
  auto loops = st.loops_above(bs.get());
  Stmt root = exclusive_root(st, bs);
  // Outer loops may be shared with other statements (a consumer moved into the row loop by
  // reverse_compute_at) as long as they feed only spatial iter vars (checked below): the rf
  // nest and the write-back then replace the exclusive part, inside them, so each iteration
  // of the shared loops still finishes its results before the statements after it (TVM asks
  // only that the block be the first child of its outermost reduction loop).
  size_t nshared = 0;
  while (nshared < loops.size() && !root.same_as(loops[nshared])) ++nshared;
  if (loops.empty() || nshared == loops.size())
    refuse("the loops of block " + b->name + " hold other statements");
  // Loops that start at m != 0 (loop_partition, `serial(lo, hi)`) are analysed rebased: the
  // bindings and the predicate see `l + m` for such a loop l, so that every loop runs over
  // [0, extent) as the checks below and the write-back's new loops assume. The rf block keeps
  // the original loops (its bindings are the original ones; its rf iter var is `l - m`), the
  // shared outer loops keep theirs (`unshift` maps them back), and the write-back gets 0-based
  // copies. A start that uses another loop of the nest (a triangular nest) is refused.
  std::unordered_map<const VarNode*, Expr> rebase, unshift;
  for (size_t i = 0; i < loops.size(); ++i) {
    auto* f = loops[i].as<ForNode>();
    if (is_zero(f->min)) continue;
    for (auto& o : loops)
      if (uses_var(f->min, o.as<ForNode>()->loop_var.get()))
        refuse("loop " + loop_name(loops[i]) + " starts at an expression of another loop of block " +
               b->name + " (" + print_expr(f->min) + ")");
    rebase[f->loop_var.get()] = f->loop_var + f->min;
    if (i < nshared) unshift[f->loop_var.get()] = f->loop_var - f->min;
  }
  std::vector<Expr> bindings;
  for (auto& e : br->bindings) bindings.push_back(rebase.empty() ? e : fold(substitute(e, rebase)));
  Expr predicate =
      rebase.empty() || !br->predicate.defined() ? br->predicate : fold(substitute(br->predicate, rebase));
  std::vector<LoopDom> doms;
  for (auto& l : loops) {
    auto* f = l.as<ForNode>();
    doms.push_back(LoopDom{f->loop_var, f->extent});
  }
  std::vector<Expr> exts;
  for (auto& iv : b->iter_vars) exts.push_back(iv.extent);
  if (!bijective_bindings(bindings, exts, doms, predicate))
    refuse("the bindings of block " + b->name + " are not an affine one-to-one map of its loops");
  std::vector<bool> red_loop(loops.size(), false);
  for (size_t i = 0; i < loops.size(); ++i) {
    bool sp = false, rd = false;
    for (auto k : kinds_bound_to(*br, loops[i].as<ForNode>()->loop_var.get()))
      (k == IterKind::Spatial ? sp : rd) = true;
    if (sp && rd) refuse("loop " + loop_name(loops[i]) + " feeds both spatial and reduce iter vars");
    red_loop[i] = rd || (unit_rf && loops[i].as<ForNode>() == L);
    if (rd && i < nshared) refuse("the loops of block " + b->name + " hold other statements");
  }
  // Conjuncts of the predicate over reduction loops (a non-dividing split of the reduction)
  // stay on the rf block. Every partial result must still be initialised: the rf block must
  // run for every value of the rf loop when the other reduction loops are at 0 (proven over
  // constant loop ranges). The write-back keeps only the conjuncts without reduction loops.
  auto is_red = [&](const VarNode* v) {
    for (size_t i = 0; i < loops.size(); ++i)
      if (red_loop[i] && loops[i].as<ForNode>()->loop_var.get() == v) return true;
    return false;
  };
  std::vector<Expr> wpred, wpred_rf;  // wpred_rf: over the rf loop (which partials exist)
  {
    RangeMap ranges;  // of the rebased loops: [0, extent)
    for (auto& [v, r] : const_ranges(loops)) ranges[v] = IntRange{0, r.hi - r.lo};
    std::unordered_map<const VarNode*, Expr> first;
    for (size_t i = 0; i < loops.size(); ++i)
      if (red_loop[i] && loops[i].get() != ls.get())
        first[loops[i].as<ForNode>()->loop_var.get()] = make_int(0, loops[i].as<ForNode>()->loop_var.dtype());
    for (auto& c : conjuncts(fold(predicate))) {
      if (!uses_var(c, is_red)) {
        wpred.push_back(c);
        continue;
      }
      Expr c0 = fold(substitute(c, first));
      auto* cmp = c0.as<BinaryNode>();
      bool holds = cmp && ((cmp->op == BinOp::LT && prove_lt(cmp->a, cmp->b, ranges)) ||
                           (cmp->op == BinOp::LE && prove_le(cmp->a, cmp->b, ranges)) ||
                           (cmp->op == BinOp::GT && prove_lt(cmp->b, cmp->a, ranges)) ||
                           (cmp->op == BinOp::GE && prove_le(cmp->b, cmp->a, ranges)));
      if (holds) continue;
      // Otherwise a partial result whose first iteration is skipped must get no iteration at
      // all (a symbolic extent split with `_`: `ko * 4 + ki < n` skips partial ki entirely
      // when ki >= n). That holds when c implies c0: c is `a < b` (or <=, or mirrored) with b
      // free of the other reduction loops and a - a0 >= 0 (a0 = a at those loops = 0; their
      // coefficients are non-negative and the loops start at 0). Then every running
      // iteration of a partial implies its first one runs (initialising it), and the
      // write-back skips the partials with c0 false, which never ran. The write-back's own
      // first partial (rf loop at 0) must run whenever another does (for its init): c0
      // implies c0 at rf loop = 0 by the same argument.
      auto* oc = c.as<BinaryNode>();
      bool implied = false;
      if (oc && cmp && oc->op == cmp->op) {
        bool lt_form = oc->op == BinOp::LT || oc->op == BinOp::LE;
        bool gt_form = oc->op == BinOp::GT || oc->op == BinOp::GE;
        Expr small = lt_form ? oc->a : oc->b, big = lt_form ? oc->b : oc->a;
        Expr small0 = lt_form ? cmp->a : cmp->b;
        RangeMap nonneg = ranges;
        for (auto& l : loops) {
          const VarNode* v = l.as<ForNode>()->loop_var.get();
          if (is_red(v) && !nonneg.count(v)) nonneg[v] = IntRange{0, int64_t(1) << 30};
        }
        auto other_red = [&](const VarNode* v) { return is_red(v) && v != L->loop_var.get(); };
        std::unordered_map<const VarNode*, Expr> rf0{{L->loop_var.get(), make_int(0, L->loop_var.dtype())}};
        implied = (lt_form || gt_form) && !uses_var(big, other_red) && !uses_var(big, L->loop_var.get()) &&
                  prove_le(small0, small, nonneg) &&
                  prove_le(fold(substitute(small0, rf0)), small0, nonneg) && !uses_var(small0, other_red);
      }
      if (!implied)
        refuse("the predicate of block " + b->name +
               " involves the reduction loops and may skip the first iteration " + "of a partial result (" +
               print_expr(c) + ")");
      wpred_rf.push_back(c0);
    }
  }
  int64_t nd = static_cast<int64_t>(C->ndim());
  if (axis < 0) axis += nd + 1;
  if (axis < 0 || axis > nd)
    refuse("factor_axis " + std::to_string(arg_int(ins, 1, "")) + " is out of range for buffer " + C->name);
  // The rf buffer.
  std::vector<Expr> rshape = C->shape;
  rshape.insert(rshape.begin() + axis, L->extent);
  Buffer R(st.fresh_buffer_name(C->name + "_rf"), C->dtype, rshape, C->scope);
  // rf block.
  std::vector<IterVar> rivs;
  std::vector<Expr> rbinds;
  std::unordered_map<const VarNode*, Expr> sub;      // old iter var -> expr of new iter vars
  std::unordered_map<const VarNode*, Expr> loop2iv;  // reduce loop var -> new iter var
  Var vr;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const IterVar& iv = b->iter_vars[i];
    if (iv.kind != IterKind::Spatial) continue;
    Var nv(iv.var.name(), iv.var.dtype());
    rivs.push_back(IterVar{nv, IterKind::Spatial, iv.extent});
    rbinds.push_back(br->bindings[i]);
    sub[iv.var.get()] = nv;
  }
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!red_loop[i]) continue;
    auto* f = loops[i].as<ForNode>();
    bool is_rf = f == L;
    Var nv(std::string(is_rf ? "vr_" : "vk_") + f->loop_var.name(), f->loop_var.dtype());
    rivs.push_back(IterVar{nv, is_rf ? IterKind::Spatial : IterKind::Reduce, f->extent});
    rbinds.push_back(is_zero(f->min) ? Expr(f->loop_var) : fold(f->loop_var - f->min));
    loop2iv[f->loop_var.get()] = nv;
    if (is_rf) vr = nv;
  }
  // TVM puts the rf block's new spatial var first (`vk1, vi, vk0 = T.axis.remap("SSR", ...)`),
  // so the loops compute_at creates for it come first too: after `compute_at(rf, i)` the
  // tutorial's `get_loops(rf)[1]` is the factored loop.
  for (size_t i = 0; i < rivs.size(); ++i)
    if (rivs[i].var.same_as(vr)) {
      std::rotate(rivs.begin(), rivs.begin() + i, rivs.begin() + i + 1);
      std::rotate(rbinds.begin(), rbinds.begin() + i, rbinds.begin() + i + 1);
      break;
    }
  for (size_t i = 0; i < b->iter_vars.size(); ++i)
    if (b->iter_vars[i].kind == IterKind::Reduce)
      sub[b->iter_vars[i].var.get()] = fold(substitute(bindings[i], loop2iv));
  std::vector<Expr> ridx;
  for (auto& e : store->indices) ridx.push_back(substitute(e, sub));
  ridx.insert(ridx.begin() + axis, vr);
  Expr nrhs = substitute(rhs, sub);
  bool rf_reduces = false;
  for (auto& iv : rivs) rf_reduces = rf_reduces || iv.kind == IterKind::Reduce;
  // With the rf loop as the only reduction loop, each partial result is a single term.
  Expr single = part_op == BinOp::Sub ? make_binary(BinOp::Sub, identity, nrhs) : nrhs;
  Stmt rbody = rf_reduces ? make_store(R, ridx, make_binary(part_op, make_load(R, ridx), nrhs))
                          : make_store(R, ridx, single);
  Stmt rinit = rf_reduces ? make_store(R, ridx, identity) : Stmt();
  std::string rname = st.fresh_block_name(b->name + "_rf");
  Stmt rblock = make_simple_block(rname, rivs, rbinds, rbody, rinit, br->predicate);
  // Write-back block under copies of the spatial loops plus one loop over the rf axis.
  std::unordered_map<const VarNode*, Expr> wloop;
  std::unordered_map<const VarNode*, Var> to_wb;  // original loop -> its write-back copy
  std::vector<Var> wvars;
  std::vector<Expr> wexts;
  std::vector<std::string> used;
  auto fresh = [&](const std::string& base) {
    std::string n = fresh_var_name(st, base);
    for (int k = 1; std::find(used.begin(), used.end(), n) != used.end(); ++k)
      n = fresh_var_name(st, base + "_" + std::to_string(k));
    used.push_back(n);
    return n;
  };
  for (size_t i = nshared; i < loops.size(); ++i) {
    if (red_loop[i]) continue;
    auto* f = loops[i].as<ForNode>();
    Var v(fresh(f->loop_var.name() + "_wb"), f->loop_var.dtype());
    wloop[f->loop_var.get()] = v;
    to_wb.emplace(f->loop_var.get(), v);
    wvars.push_back(v);
    wexts.push_back(f->extent);
  }
  Var wr(fresh(L->loop_var.name() + "_wb"), L->loop_var.dtype());
  to_wb.emplace(L->loop_var.get(), wr);
  wvars.push_back(wr);
  wexts.push_back(L->extent);
  std::vector<IterVar> wivs;
  std::vector<Expr> wbinds;
  std::unordered_map<const VarNode*, Expr> wsub;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const IterVar& iv = b->iter_vars[i];
    if (iv.kind != IterKind::Spatial) continue;
    Var nv(iv.var.name(), iv.var.dtype());
    wivs.push_back(IterVar{nv, IterKind::Spatial, iv.extent});
    wbinds.push_back(fold(substitute(substitute(bindings[i], unshift), wloop)));
    wsub[iv.var.get()] = nv;
  }
  Var wv("vr_" + L->loop_var.name(), L->loop_var.dtype());
  wivs.push_back(IterVar{wv, IterKind::Reduce, L->extent});
  wbinds.push_back(wr);
  std::vector<Expr> widx, cidx;
  for (auto& e : store->indices) cidx.push_back(substitute(e, wsub));
  widx = cidx;
  widx.insert(widx.begin() + axis, wv);
  Stmt wbody = make_store(C, cidx, make_binary(comb_op, make_load(C, cidx), make_load(R, widx)));
  // Without an init the write-back accumulates into what C held, as the block did.
  Stmt winit = init ? make_store(C, cidx, init->value) : Stmt();
  // A partial result exists only when the other reduction loops run at least once: with one
  // of them empty (`reduce(0)`, a symbolic extent 0 at run time) the rf block writes nothing
  // and the write-back would read an uninitialised partial (the unscheduled block wrote
  // nothing either, init included).
  for (size_t i = 0; i < loops.size(); ++i) {
    auto* f = loops[i].as<ForNode>();
    if (!red_loop[i] || f == L) continue;
    Expr zero = make_int(0, f->extent.dtype());
    if (prove_lt(zero, f->extent)) continue;
    if (uses_var(f->extent, [&](const VarNode* v) { return wloop.count(v) || is_red(v); }))
      refuse("the reduction loop " + loop_name(loops[i]) + " has an extent that depends on other loops (" +
             print_expr(f->extent) + ") and may be empty");
    wpred.push_back(fold(make_binary(BinOp::LT, zero, f->extent)));
  }
  wloop[L->loop_var.get()] = wr;  // the write-back's predicate may test the rf loop (wpred_rf)
  for (auto& c0 : wpred_rf) wpred.push_back(c0);
  Stmt wblock = make_simple_block(b->name, wivs, wbinds, wbody, winit,
                                  fold(substitute(substitute(make_and(wpred), unshift), wloop)));
  wblock = update_realize(wblock, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.annotations = b->annotations; });
  });
  Stmt wnest = wblock;
  for (size_t i = wvars.size(); i-- > 0;)
    wnest = make_for(wvars[i], make_int(0, wexts[i].dtype()), wexts[i], ForKind::Serial, wnest);
  // The rf nest: the original loops around the rf block.
  Stmt rnest = replace_stmt(root, bs.get(), rblock);
  st.replace(root.get(), make_seq({rnest, wnest}));
  st.add_root_alloc(R);
  // Handles follow TVM: its write-back keeps the original loops (the block's spatial loops
  // and the rf loop, now the write-back's reduction) and the rf block gets copies. So a
  // script's `i` / `ki` after `rf = rfactor(ki, 1)` name the write-back's loops
  // (`bind(i, "blockIdx.x")`, `compute_at(rf, i)`), and the rf nest is reached through
  // `get_loops(rf)`. The other reduction loops exist only in the rf nest (TVM removes them:
  // their handles keep naming the rf nest's loops).
  auto retarget = [&](Handle& h) {
    if (h.kind != Handle::LoopH) return;
    auto it = to_wb.find(h.loop.get());
    if (it != to_wb.end()) h.loop = it->second;
  };
  for (auto& [name, h] : st.handles.mutable_items()) retarget(h);
  for (auto& [name, l] : st.lists.mutable_items())
    for (auto& h : l) retarget(h);
  bind_block(st, ins, 0, rname);
}

}  // namespace tirc::sched

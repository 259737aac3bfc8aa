// split(loop, [f0, f1, ...]): TVM Schedule.split. Replaces `loop` by a nest of loops with
// the given extents (outermost first); one factor may be `_` (inferred as
// ceil(extent / product of the others); TVM's `None` is accepted too). Parallel, vectorized
// and unrolled loops may be split too (their pieces are serial). The old loop var becomes
// min + ((l0 * f1 + l1) * f2 + l2) ...; when the factors overshoot the extent, every
// block below gets the predicate `fused < extent` (as TVM does), so no extra iteration
// runs.
#include <algorithm>
#include <cstdint>

#include "ir/mutator.h"
#include "transforms/schedule/factors.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {
// The deepest chain of loops inside s (0 for a statement without loops).
size_t max_loop_depth(const Stmt& s) {
  if (!s.defined()) return 0;
  size_t best = 0;
  for (auto& c : children(s)) best = std::max(best, max_loop_depth(c));
  return best + (s.as<ForNode>() ? 1 : 0);
}
}  // namespace

void prim_split(ScheduleState& st, const ScheduleInstr& ins) {
  const ScheduleArg& fl = factor_list_arg(ins);
  Stmt ls = arg_loop(st, ins, 0);
  const ForNode* loop = ls.as<ForNode>();
  FactorList factors = parse_factors(fl, "[_, 8]");
  size_t n = factors.values.size();
  int wild = factors.wild;
  expect_results(ins, n);
  // A parallel / vectorized / unrolled loop may run its iterations in order, so its pieces
  // are serial loops (as TVM's split); a thread binding would be silently dropped.
  if (loop->for_kind == ForKind::ThreadBinding)
    refuse("loop " + loop_name(ls) + " is bound to " + loop->thread_tag + "; split it before binding it");
  // As TVM (HasAnnotationOrThreadBindingError): the pieces could not all keep an annotation
  // such as a pragma or a pipeline stage, and dropping it silently changes what was asked for.
  if (!loop->annotations.empty())
    refuse("loop " + loop_name(ls) + " has the annotation \"" + loop->annotations.begin()->first +
           "\"; split it before annotating it");
  DType t = loop->extent.dtype();
  // The pieces' loop vars have the loop's type, and so does the index they rebuild
  // (l0 * f1 + l1 ...): a product beyond that type would wrap.
  int64_t max_t = dtype_bits(t) >= 64 ? INT64_MAX : (int64_t{1} << (dtype_bits(t) - 1)) - 1;
  int64_t prod = 1;
  for (size_t k = 0; k < n; ++k)
    if (static_cast<int>(k) != wild &&
        (__builtin_mul_overflow(prod, factors.values[k], &prod) || prod > max_t))
      refuse("the factors multiply to more than loop " + loop_name(ls) + "'s type " +
             std::string(dtype_name(t)) + " holds (" + std::to_string(max_t) + ")");
  Expr extent = fold(loop->extent);
  int64_t ext_c;
  bool const_ext = is_const_int(extent, &ext_c);
  std::vector<Expr> exts(n);
  for (size_t k = 0; k < n; ++k)
    if (static_cast<int>(k) != wild) exts[k] = make_int(factors.values[k], t);
  if (wild >= 0) {
    exts[wild] = const_ext ? make_int((ext_c + prod - 1) / prod, t)
                           : fold(floordiv(extent + make_int(prod - 1, t), make_int(prod, t)));
  } else if (const_ext) {
    if (prod < ext_c)
      refuse("factors multiply to " + std::to_string(prod) + ", less than the extent " +
             std::to_string(ext_c) + " of loop " + loop_name(ls));
  } else {
    refuse("loop " + loop_name(ls) + " has a symbolic extent that the factors (product " +
           std::to_string(prod) + ") may not cover; write _ (or None) for one factor");
  }
  // Total covered and whether a predicate is needed.
  Expr total = exts[0];
  for (size_t k = 1; k < n; ++k) total = total * exts[k];
  total = fold(total);
  bool exact = prove_eq(total, extent);
  // TVM's disable_predication=True: no `where` for the overshoot, which would run iterations
  // past the extent; accepted only when none are added.
  if (const ScheduleArg* dp = kwarg(ins, "disable_predication")) {
    bool on = (dp->kind == ScheduleArg::Ident && dp->text == "True") ||
              (dp->kind == ScheduleArg::Int && dp->int_value != 0);
    bool off = (dp->kind == ScheduleArg::Ident && dp->text == "False") ||
               (dp->kind == ScheduleArg::Int && dp->int_value == 0);
    if (!on && !off) refuse("disable_predication must be True or False");
    if (on && !exact)
      refuse(
          "disable_predication=True, but the factors do not divide the extent of loop " + loop_name(ls) +
          " (the iterations past it would run: TVM leaves that to the user; drop it to get the predicate)");
  }
  if (!exact && has_loose_effects(loop->body))
    refuse("loop " + loop_name(ls) +
           " has statements outside blocks and the factors do not divide its extent");

  // Runaway scripts (a split into thousands of pieces, thousands of chained splits) make
  // nests no schedule needs; each primitive walks the nest and the bindings grow with it, so
  // a nest past kMaxSplitNestDepth loops is refused instead of taking minutes (the parser
  // reads 100 levels; deeper scheduled functions still run, build and verify).
  size_t depth = n - 1 + st.loops_above(ls.get()).size() + max_loop_depth(loop->body) + 1;
  if (depth > kMaxSplitNestDepth)
    refuse("the loops around loop " + loop_name(ls) + "'s blocks would nest " + std::to_string(depth) +
           " deep, more than the " + std::to_string(kMaxSplitNestDepth) + " a schedule may make");
  std::vector<Var> vars = piece_vars(st, ins, *loop, n);
  // fused = ((v0 * e1 + v1) * e2 + v2) ...
  // Built whole, then folded once (folding after every piece was quadratic in n).
  Expr fused = vars[0];
  for (size_t k = 1; k < n; ++k) fused = fused * exts[k] + vars[k];
  fused = fold(fused);
  Expr value = is_zero(loop->min) ? fused : fold(loop->min + fused);
  std::unordered_map<const VarNode*, Expr> sub{{loop->loop_var.get(), value}};
  Stmt body = substitute(loop->body, sub);
  if (!exact) body = add_predicate_below(body, make_binary(BinOp::LT, fused, extent));
  for (size_t k = n; k-- > 0;) body = make_for(vars[k], make_int(0, t), exts[k], ForKind::Serial, body);
  st.replace(ls.get(), body);
  for (size_t k = 0; k < n; ++k) bind_loop(st, ins, k, vars[k]);
}

}  // namespace tirc::sched

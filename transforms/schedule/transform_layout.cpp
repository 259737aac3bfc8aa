// transform_layout(block, buffer, index_map, pad_value=None): TVM Schedule.transform_layout.
// Gives a buffer the function allocates a new layout: element `A[i, j]` moves to
// `A'[f(i, j)]` where f is the index map (`lambda i, j: (j // 4, i, j % 4)`); every load,
// store and declared region of the buffer is rewritten and its alloc gets the new shape.
//
// The buffer is named through the block: `("read", k)` (the k-th read region of a buffer the
// block does not also write, as cache_read counts them), `("write", k)`, or its name.
// Legality (the function must compute the same): f must be one-to-one on the buffer's
// domain and map it to non-negative indices. The new extent of each dimension is the
// largest value of f's result there plus one; when the new buffer has more elements than
// the old one the map pads, which is refused without `pad_value` (TVM: "If None, the
// transformation may not introduce padding"); with it, the whole new buffer is first
// filled with pad_value (block `<A>_pad`, before the first block touching it) and the
// writers then overwrite the elements that hold data. Method: for constant shapes f is
// evaluated at every point of the domain (at most 2^22 points) — exact for any integer map;
// for symbolic shapes only permutations of the dimensions are accepted.
// Refused: parameters and outputs (TVM rewrites the signature; tirc keeps the contract's),
// buffers passed to call_extern (the callee's layout is unknown).
#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/index_map.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

// Rewrites every access of `from` into `to` through the map; re-infers the declared regions
// of `from` in the blocks that declared them (innermost first).
class LayoutRewriter : public IRMutator {
 public:
  LayoutRewriter(const Buffer& from, const Buffer& to, const std::vector<Var>& params,
                 const std::vector<Expr>& map)
      : from_(from), to_(to), params_(params), map_(map) {}

 protected:
  std::vector<Expr> remap(const std::vector<Expr>& old) {
    std::unordered_map<const VarNode*, Expr> sub;
    // The map's parameters are i32; an index of another type (an i64 iter var) is converted, so
    // that the map's constants and operators meet operands of one type.
    for (size_t i = 0; i < params_.size(); ++i)
      sub[params_[i].get()] =
          old[i].dtype() == params_[i].dtype() ? old[i] : make_cast(params_[i].dtype(), old[i]);
    std::vector<Expr> out;
    for (auto& m : map_) out.push_back(fold(substitute(m, sub)));
    return out;
  }
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    Expr r = IRMutator::mutate_load(n, e);
    auto* l = r.as<LoadNode>();
    if (!l->buffer.same_as(from_)) return r;
    return make_load(to_, remap(l->indices));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_store(n, s);
    auto* st = r.as<StoreNode>();
    if (!st->buffer.same_as(from_)) return r;
    return make_store(to_, remap(st->indices), st->value);
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    if (n->buffer.same_as(from_))
      refuse("buffer " + from_->name + " is passed to call_extern, whose layout expectations are unknown");
    return IRMutator::mutate_buffer_ptr(n, e);
  }
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    return update_block(nb, [&](BlockNode& n) {
      for (auto& a : n.allocs)
        if (a.same_as(from_)) a = to_;
      bool in_reads = false, in_writes = false;
      for (auto& r : n.reads) in_reads = in_reads || r.buffer.same_as(from_);
      for (auto& w : n.writes) in_writes = in_writes || w.buffer.same_as(from_);
      if (!in_reads && !in_writes) return;
      if (n.annotations.count("buffer_dim_align"))
        refuse("block " + n.name +
               " has a storage_align annotation, whose axes name dimensions of the old layout");
      std::vector<BufferRegion> reads, writes;
      infer_regions(n, &reads, &writes);
      auto rebuild = [&](const std::vector<BufferRegion>& declared,
                         const std::vector<BufferRegion>& inferred) {
        std::vector<BufferRegion> out;
        bool done = false;
        for (auto& r : declared) {
          if (!r.buffer.same_as(from_)) {
            out.push_back(r);
            continue;
          }
          if (done) continue;
          done = true;
          bool found = false;
          for (auto& x : inferred)
            if (x.buffer.same_as(to_)) {
              out.push_back(x);
              found = true;
            }
          // Declared but not accessed in the body (a region written for a callee): the whole
          // new buffer.
          if (!found) out.push_back(full_region(to_));
        }
        return out;
      };
      n.reads = rebuild(n.reads, reads);
      n.writes = rebuild(n.writes, writes);
    });
  }

 private:
  Buffer from_, to_;
  std::vector<Var> params_;
  std::vector<Expr> map_;
};

// The block (realize) whose allocs hold buf; null when none (a parameter).
Stmt allocating_block(const ScheduleState& st, const Buffer& buf) {
  for (auto& a : block_of(st.body())->allocs)
    if (a.same_as(buf)) return st.body();
  for (auto& blk : blocks_in_order(st))
    for (auto& a : block_of(blk)->allocs)
      if (a.same_as(buf)) return blk;
  return Stmt();
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// TVM writes the padding "as part of the producer block if possible": when the buffer's only
// writer is a spatial block storing `T[v0, v1] = value` at its iter vars, each bound to its own
// loop (min 0) holding nothing else, the loops and iter vars of the dimensions the map pads are
// extended to the next multiple of the map's divisors and the value becomes
// `if_then_else(v1 < 10, value, pad_value)`. Then no second writer stands in the way of
// compute_at / transform_block_layout of the copy. Otherwise a separate fill block is used.
struct FoldPlan {
  std::string block;
  std::vector<std::pair<Var, int64_t>> loops;             // loop var -> new extent
  std::vector<std::tuple<size_t, int64_t, int64_t>> ivs;  // iter var index, old, new extent
};

void divisors_of(const Expr& e, const VarNode* p, int64_t* l) {
  if (auto* b = e.as<BinaryNode>()) {
    int64_t c;
    if ((b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod) && is_const_int(b->b, &c) && c > 0 &&
        uses_var(b->a, p))
      *l = std::lcm(*l, c);
    divisors_of(b->a, p, l);
    divisors_of(b->b, p, l);
  } else if (auto* u = e.as<UnaryNode>()) {
    divisors_of(u->a, p, l);
  } else if (auto* c = e.as<CastNode>()) {
    divisors_of(c->value, p, l);
  }
}

std::optional<FoldPlan> plan_fold(const ScheduleState& st, const Buffer& buf, const ScheduleArg& m,
                                  const std::vector<int64_t>& old_ext, int64_t new_points) {
  auto ws = writers_of(st, buf);
  if (ws.size() != 1) return std::nullopt;
  auto* br = realize(ws[0]);
  const BlockNode* w = br->block.get();
  int64_t pv = 1;
  if (w->init.defined() || (br->predicate.defined() && !(is_const_int(br->predicate, &pv) && pv == 1)))
    return std::nullopt;
  for (auto& iv : w->iter_vars)
    if (iv.kind != IterKind::Spatial) return std::nullopt;
  auto* store = w->body.as<StoreNode>();
  if (!store || !store->buffer.same_as(buf)) return std::nullopt;
  auto loops = st.loops_above(ws[0].get());
  Stmt excl = exclusive_root(st, ws[0]);
  auto path = st.path_to(ws[0].get());
  std::vector<const StmtNode*> own;  // loops between the exclusive root and the block
  bool below = false;
  for (auto& p : path) {
    if (p.same_as(excl)) below = true;
    if (below && p.kind() == StmtKind::For) own.push_back(p.get());
  }
  FoldPlan plan;
  plan.block = w->name;
  std::vector<int64_t> ext2;
  std::vector<bool> used(w->iter_vars.size(), false);
  for (size_t d = 0; d < buf->ndim(); ++d) {
    const VarNode* p = m.lambda_params[d].get();
    int64_t l = 1;
    for (auto& e : m.lambda_body) divisors_of(e, p, &l);
    int64_t e2 = (old_ext[d] + l - 1) / l * l;
    ext2.push_back(e2);
    if (e2 == old_ext[d]) continue;
    // This dimension grows: its index must be an iter var bound to its own loop.
    size_t k = 0;
    while (k < w->iter_vars.size() && w->iter_vars[k].var.get() != store->indices[d].get()) ++k;
    int64_t ie;
    if (k == w->iter_vars.size() || used[k] || !is_const_int(w->iter_vars[k].extent, &ie) || ie != old_ext[d])
      return std::nullopt;
    used[k] = true;
    const Expr& bind = br->bindings[k];
    const ForNode* loop = nullptr;
    for (auto& l2 : loops) {
      auto* f = l2.as<ForNode>();
      if (f->loop_var.get() == bind.get()) loop = f;
    }
    int64_t lmin, lext;
    if (!loop || std::find(own.begin(), own.end(), loop) == own.end() || !is_const_int(loop->min, &lmin) ||
        lmin != 0 || !is_const_int(loop->extent, &lext) || lext != old_ext[d])
      return std::nullopt;
    // The loop var must feed this iter var only.
    for (size_t j = 0; j < br->bindings.size(); ++j)
      if (j != k && uses_var(br->bindings[j], loop->loop_var.get())) return std::nullopt;
    plan.loops.emplace_back(loop->loop_var, e2);
    plan.ivs.emplace_back(k, old_ext[d], e2);
  }
  MapImage img = map_image(m.lambda_params, m.lambda_body, ext2);
  if (img.too_big || !img.injective || img.points != new_points || img.box_points != new_points)
    return std::nullopt;
  return plan;
}

void apply_fold(ScheduleState& st, const FoldPlan& plan, const Expr& pad) {
  Stmt w = st.find_block(plan.block);
  st.replace(w.get(), update_realize(w, [&](BlockRealizeNode& r) {
               r.block = update_block(r.block, [&](BlockNode& n) {
                 std::vector<Expr> conds;
                 for (auto& [k, old, e2] : plan.ivs) {
                   // In the iter var's own type (an i64 nest stays i64).
                   DType t = n.iter_vars[k].var.dtype();
                   conds.push_back(make_binary(BinOp::LT, n.iter_vars[k].var, make_int(old, t)));
                   n.iter_vars[k].extent = make_int(e2, t);
                 }
                 auto* s = n.body.as<StoreNode>();
                 n.body =
                     make_store(s->buffer, s->indices, make_if_then_else(make_and(conds), s->value, pad));
               });
             }));
  for (auto& [v, e2] : plan.loops) {
    Stmt l = st.find_loop(v.get());
    auto* f = l.as<ForNode>();
    st.replace(l.get(), rebuild_for(*f, f->loop_var, f->min, make_int(e2, f->extent.dtype()), f->body));
  }
}

}  // namespace

void prim_transform_layout(ScheduleState& st, const ScheduleInstr& ins) {
  // block, buffer, index_map, pad_value, assume_injective_transform (checked anyway: ignored)
  expect_args(ins, 3, 5);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  Buffer buf = block_buffer_arg(*b, ins.args[1]);
  const ScheduleArg& m = ins.args[2];
  if (m.kind != ScheduleArg::Lambda)
    refuse("the index map must be a lambda, e.g. lambda i, j: (j // 4, i, j % 4)");
  if (st.is_output(buf) || st.is_param(buf))
    refuse("buffer " + buf->name + " is a parameter of function " + st.func.name +
           " (TVM would change the function's signature; transform a cache instead: cache_read / "
           "cache_write, then transform_layout of the cache)");
  Stmt owner = allocating_block(st, buf);
  if (!owner.defined()) refuse("buffer " + buf->name + " is not allocated by function " + st.func.name);
  if (m.lambda_params.size() != buf->ndim())
    refuse("the index map takes " + std::to_string(m.lambda_params.size()) + " ind" +
           (m.lambda_params.size() == 1 ? "ex" : "ices") + " but buffer " + buf->name + " has " +
           std::to_string(buf->ndim()) + " dimension" + (buf->ndim() == 1 ? "" : "s"));
  std::optional<Expr> pad;
  if (ins.args.size() >= 4 && ins.args[3].kind != ScheduleArg::Wildcard &&
      !(ins.args[3].kind == ScheduleArg::Ident && ins.args[3].text == "None")) {
    const ScheduleArg& p = ins.args[3];
    if (p.kind == ScheduleArg::Int)
      pad = make_const(buf->dtype, static_cast<double>(p.int_value));
    else if (p.kind == ScheduleArg::Float && is_float(buf->dtype))
      pad = make_const(buf->dtype, p.float_value);
    else if (p.kind == ScheduleArg::Float)
      refuse("pad_value " + p.text + " is a float but buffer " + buf->name + " holds " +
             std::string(dtype_name(buf->dtype)));
    else
      refuse("pad_value must be a number");
  }
  for (auto& e : m.lambda_body) check_index_map(e);

  // The new shape, and the checks that the map is one-to-one and pads only when allowed.
  std::vector<Expr> new_shape;
  bool pads = false;
  std::optional<FoldPlan> fold;
  std::vector<int64_t> old_ext;
  bool constant = true;
  for (auto& s : buf->shape) {
    int64_t v;
    if (!is_const_int(s, &v)) constant = false;
    old_ext.push_back(constant ? v : 0);
  }
  std::vector<const VarNode*> vars;
  for (auto& p : m.lambda_params) vars.push_back(p.get());
  if (!constant) {
    // Symbolic shape: a permutation of the dimensions only.
    std::vector<bool> used(vars.size(), false);
    bool perm = m.lambda_body.size() == vars.size();
    for (auto& e : m.lambda_body) {
      size_t k = 0;
      while (perm && k < vars.size() && vars[k] != e.get()) ++k;
      if (!perm || k == vars.size() || used[k]) {
        perm = false;
        break;
      }
      used[k] = true;
      new_shape.push_back(buf->shape[k]);
    }
    if (!perm)
      refuse("buffer " + buf->name +
             " has a symbolic shape: only a permutation of its dimensions can be checked one-to-one");
  } else {
    MapImage img = map_image(m.lambda_params, m.lambda_body, old_ext);
    if (img.too_big)
      refuse("buffer " + buf->name + " has " + std::to_string(img.points) +
             " elements, too many to check the index map point by point (at most 4194304 elements, "
             "16777216 in the new layout)");
    for (size_t k = 0; k < img.lo.size() && img.points > 0; ++k)
      if (img.lo[k] < 0)
        refuse("result " + std::to_string(k) + " of the index map (" + print_expr(m.lambda_body[k]) +
               ") is negative at some element of " + buf->name);
    if (!img.injective)
      refuse("the index map is not one-to-one on " + buf->name + shape_text(old_ext) + ": element " +
             buf->name + shape_text(img.clash) + " lands where another element does");
    std::vector<int64_t> ext;
    for (auto h : img.hi) ext.push_back(img.points > 0 ? h + 1 : 1);
    pads = img.box_points > img.points;
    if (pads && !pad)
      refuse("the index map pads " + buf->name + " from " + shape_text(old_ext) + " (" +
             std::to_string(img.points) + " elements) to " + shape_text(ext) + " (" +
             std::to_string(img.box_points) + "): give pad_value (TVM refuses padding without it)");
    for (auto v : ext) new_shape.push_back(make_int(v));
    if (pads) fold = plan_fold(st, buf, m, old_ext, img.box_points);
  }
  if (new_shape.empty()) refuse("the index map returns no index");
  Buffer nbuf(buf->name, buf->dtype, new_shape, buf->scope);
  Stmt body = LayoutRewriter(buf, nbuf, m.lambda_params, m.lambda_body).mutate(st.body());
  st.set_body(body);
  if (pads && fold) {
    apply_fold(st, *fold, *pad);
    return;
  }
  if (pads) {
    // Fill the whole new buffer before the first top-level item that touches it.
    int first = -1;
    const Stmt& root_body = block_of(st.body())->body;
    std::vector<Stmt> items;
    if (auto* q = root_body.as<SeqNode>())
      items = q->stmts;
    else
      items.push_back(root_body);
    for (size_t i = 0; i < items.size() && first < 0; ++i)
      if (buffer_used(items[i], nbuf)) first = static_cast<int>(i);
    if (first < 0) refuse("no block touches buffer " + buf->name);
    std::string bname = st.fresh_block_name(buf->name + "_pad");
    std::vector<std::string> names;
    for (size_t d = 0; d < new_shape.size(); ++d) names.push_back("ax" + std::to_string(d));
    Stmt nest = make_nest(st, new_shape, names, [&](const std::vector<Var>& vs) {
      std::vector<IterVar> ivs;
      std::vector<Expr> binds, idxs;
      for (size_t d = 0; d < vs.size(); ++d) {
        Var v("v" + std::to_string(d), vs[d].dtype());
        ivs.push_back(IterVar{v, IterKind::Spatial, new_shape[d]});
        binds.push_back(vs[d]);
        idxs.push_back(v);
      }
      return make_simple_block(bname, ivs, binds, make_store(nbuf, idxs, *pad));
    });
    insert_root_item(st, static_cast<size_t>(first), nest);
  }
}

}  // namespace tirc::sched

// pad_einsum(block, padding): TVM Schedule.pad_einsum. The iteration domain of an einsum block
// (each index of every buffer access an iter var or a constant) is padded up to multiples of
// `padding` (one factor per iter var: 127 -> 128 with 16), so that later splits divide and no
// predicate is needed. The inputs indexed by a padded iter var are copied into zero-padded
// buffers `<A>_pad` by blocks `<A>_pad` placed before the block's nest
// (`A_pad[i, k] = if_then_else(i < 127 && k < 127, A[i, k], 0)`); a written buffer indexed by a
// padded iter var becomes `<C>_pad`, copied back by a block `<C>_unpad` after the nest over the
// original box (`C[i, j] = C_pad[i, j]`). The block's loops and iter vars get the padded extents.
// Checked (refused otherwise): a leaf block without `where` whose iter vars are each bound to
// their own loop of the same extent (constant), those loops holding only the block (TVM's
// trivial binding); the einsum access pattern; a padded reduce iter var only for a sum whose
// term is a product with a factor loaded from a zero-padded input indexed by that var (the
// padded terms are then 0; a max reduction or a term like `A[k] + 1` would change the result);
// a written buffer stored at one index tuple, and read by the block only with an init (the
// padded copy does not hold values written before). Returns nothing (as TVM).
#include <algorithm>

#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/visitor.h"
#include "transforms/schedule/cache_common.h"
#include "transforms/schedule/lists.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

namespace {

struct Access {
  Buffer buf;
  std::vector<Expr> idx;
  bool store;
};

// A Mul tree (through casts) holding a load of `buf` whose index `dim` is the var v.
bool has_zero_factor(const Expr& e, const std::vector<std::pair<const BufferNode*, size_t>>& padded_by_v,
                     const VarNode* v) {
  if (auto* c = e.as<CastNode>()) return has_zero_factor(c->value, padded_by_v, v);
  if (auto* b = e.as<BinaryNode>(); b && b->op == BinOp::Mul)
    return has_zero_factor(b->a, padded_by_v, v) || has_zero_factor(b->b, padded_by_v, v);
  if (auto* l = e.as<LoadNode>())
    for (auto& [buf, d] : padded_by_v)
      if (l->buffer.get() == buf && d < l->indices.size() && l->indices[d].get() == v) return true;
  return false;
}

}  // namespace

void prim_pad_einsum(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockRealizeNode* br = realize(bs);
  const BlockNode* b = br->block.get();
  const ScheduleArg& pa = ins.args[1];
  if (pa.kind != ScheduleArg::List) refuse("the padding must be a list of integers, one per iter var");
  size_t n = b->iter_vars.size();
  if (pa.list.size() != n)
    refuse("block " + b->name + " has " + std::to_string(n) + " iter vars but the padding has " +
           std::to_string(pa.list.size()) + " factors");
  std::vector<int64_t> pad;
  for (auto& x : pa.list) {
    if (x.kind != ScheduleArg::Int || x.int_value < 1)
      refuse("padding factor " + list_arg_text(x) + " is not a positive integer");
    pad.push_back(x.int_value);
  }
  if (!collect_blocks(b->body).empty() || (b->init.defined() && !collect_blocks(b->init).empty()))
    refuse("block " + b->name + " is not a leaf block (it holds other blocks)");
  if (!b->allocs.empty()) refuse("block " + b->name + " allocates buffers");
  int64_t pv = 1;
  if (br->predicate.defined() && !(is_const_int(br->predicate, &pv) && pv == 1))
    refuse("block " + b->name + " has a predicate (where " + print_expr(br->predicate) + ")");
  // Trivial bindings: iter var k bound to its own loop of the same constant extent, the loops
  // holding nothing else.
  auto loops = st.loops_above(bs.get());
  if (loops.size() != n)
    refuse("block " + b->name + " has " + std::to_string(n) + " iter vars under " +
           std::to_string(loops.size()) + " loops (each iter var must be bound to its own loop)");
  // Extents may be symbolic (TVM pads `n` to `(n + 31) // 32 * 32`): ext / next are expressions,
  // grows[k] says whether iter var k is padded (a symbolic extent always is, by at most pad - 1).
  std::vector<Expr> ext(n), next(n);
  std::vector<bool> grows_k(n, false);
  for (size_t k = 0; k < n; ++k) {
    auto* f = loops[k].as<ForNode>();
    const IterVar& iv = b->iter_vars[k];
    ext[k] = fold(iv.extent);
    if (!is_zero(fold(f->min)) || !prove_eq(fold(f->extent), ext[k]) ||
        br->bindings[k].get() != f->loop_var.get())
      refuse("iter var " + iv.var.name() + " of block " + b->name +
             " is not bound to its own loop of extent " + print_expr(ext[k]) + " (TVM's trivial binding)");
    if (f->for_kind == ForKind::ThreadBinding)
      refuse("loop " + loop_name(loops[k]) + " is bound to a thread");
    Stmt inner = k + 1 < n ? loops[k + 1] : bs;
    if (!f->body.same_as(inner))
      refuse("loop " + loop_name(loops[k]) + " holds other statements than the block");
    int64_t ce;
    DType t = ext[k].dtype();
    if (is_const_int(ext[k], &ce)) {
      next[k] = make_int((ce + pad[k] - 1) / pad[k] * pad[k], t);
      grows_k[k] = ce % pad[k] != 0;
    } else if (pad[k] == 1) {
      next[k] = ext[k];
    } else {
      next[k] =
          make_binary(BinOp::Mul,
                      make_binary(BinOp::FloorDiv, make_binary(BinOp::Add, ext[k], make_int(pad[k] - 1, t)),
                                  make_int(pad[k], t)),
                      make_int(pad[k], t));
      grows_k[k] = true;
    }
  }
  auto iter_index = [&](const Expr& e) -> int {
    for (size_t k = 0; k < n; ++k)
      if (e.get() == b->iter_vars[k].var.get()) return static_cast<int>(k);
    return -1;
  };
  // The einsum pattern.
  std::vector<Access> acc;
  bool bad = false;
  std::string bad_text;
  auto scan = [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>()) acc.push_back({l->buffer, l->indices, false});
    if (auto* p = e.as<BufferPtrNode>()) {
      bad = true;
      bad_text = "a pointer to " + p->buffer->name;
    }
  };
  int in_if = 0;
  std::string cond_store;
  std::function<void(const Stmt&)> stores = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* x = s.as<StoreNode>()) {
      acc.push_back({x->buffer, x->indices, true});
      if (in_if > 0 && cond_store.empty()) cond_store = x->buffer->name;
    }
    if (s.kind() == StmtKind::Evaluate) {
      bad = true;
      bad_text = "call_extern";
    }
    bool is_if = s.kind() == StmtKind::IfThenElse;
    in_if += is_if;
    for (auto& c : children(s)) stores(c);
    in_if -= is_if;
  };
  for_each_expr(b->body, scan);
  stores(b->body);
  if (b->init.defined()) {
    for_each_expr(b->init, scan);
    stores(b->init);
  }
  if (bad) refuse("block " + b->name + " uses " + bad_text);
  if (!cond_store.empty())
    refuse("block " + b->name + " stores " + cond_store + " under a condition (the copy-back would copy " +
           "elements it does not write)");
  for (auto& a : acc)
    for (auto& ix : a.idx) {
      int64_t c;
      if (iter_index(ix) < 0 && !is_const_int(ix, &c))
        refuse("the access " + a.buf->name + "[" +
               [&] {
                 std::string s;
                 for (size_t d = 0; d < a.idx.size(); ++d) s += (d ? ", " : "") + print_expr(a.idx[d]);
                 return s;
               }() +
               "] of block " + b->name + " is not an einsum access (each index an iter var or a constant)");
    }
  // New shapes.
  std::vector<Buffer> bufs;
  for (auto& a : acc)
    if (std::find_if(bufs.begin(), bufs.end(), [&](const Buffer& x) { return x.same_as(a.buf); }) ==
        bufs.end())
      bufs.push_back(a.buf);
  // A padded dimension becomes the padded extent: the larger one when both are constants, the
  // padded symbolic extent when the dimension is that iter var's extent.
  std::vector<std::pair<Buffer, std::vector<Expr>>> padded;  // buffer, new shape
  for (auto& B : bufs) {
    std::vector<Expr> shape(B->shape.size());
    bool grows = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      shape[d] = fold(B->shape[d]);
      for (auto& a : acc) {
        if (!a.buf.same_as(B)) continue;
        int k = iter_index(a.idx[d]);
        if (k < 0 || !grows_k[k]) continue;
        int64_t cs, cn;
        if (is_const_int(shape[d], &cs) && is_const_int(next[k], &cn)) {
          if (cn > cs) {
            shape[d] = next[k];
            grows = true;
          }
        } else if (prove_eq(shape[d], ext[k])) {
          shape[d] = next[k];
          grows = true;
        } else if (!prove_eq(shape[d], next[k])) {
          refuse("buffer " + B->name + " has a symbolic shape " + print_expr(B->shape[d]) + " in dimension " +
                 std::to_string(d) + " that is not the extent of iter var " + b->iter_vars[k].var.name());
        }
      }
    }
    if (grows) padded.push_back({B, shape});
  }
  bool any = false;
  for (size_t k = 0; k < n; ++k) any = any || grows_k[k];
  if (!any) return;  // nothing to pad (TVM: the domain already divides)
  auto is_padded = [&](const Buffer& B) -> const std::vector<Expr>* {
    for (auto& [x, s] : padded)
      if (x.same_as(B)) return &s;
    return nullptr;
  };
  // Written buffers: one index tuple; read only with an init.
  for (auto& B : bufs) {
    bool written = false, read = false;
    const std::vector<Expr>* first = nullptr;
    for (auto& a : acc) {
      if (!a.buf.same_as(B)) continue;
      (a.store ? written : read) = true;
      if (a.store) {
        if (!first) first = &a.idx;
        for (size_t d = 0; d < first->size(); ++d)
          if (!expr_identical((*first)[d], a.idx[d]))
            refuse("block " + b->name + " stores " + B->name + " at different indices");
      }
    }
    if (written && read && !b->init.defined())
      refuse("block " + b->name + " reads buffer " + B->name +
             ", which it writes, without an init (the padded " +
             "copy would not hold the values written before)");
    if (written && is_padded(B) && st.is_param(B) && !st.is_output(B))
      refuse("block " + b->name + " writes the input " + B->name);
  }
  // Padded reduce iter vars: the padded terms must be 0.
  for (size_t k = 0; k < n; ++k) {
    const IterVar& iv = b->iter_vars[k];
    if (!grows_k[k] || iv.kind == IterKind::Spatial) continue;
    if (iv.kind != IterKind::Reduce)
      refuse("iter var " + iv.var.name() + " of block " + b->name + " is " + iter_kind_name(iv.kind) +
             " (only spatial and reduce iter vars are padded)");
    std::string why;
    auto upd = match_reduction_update(b->body, &why);
    std::vector<std::pair<const BufferNode*, size_t>> by_v;
    for (auto& [B, s] : padded) {
      bool written = false;
      for (auto& a : acc) written = written || (a.store && a.buf.same_as(B));
      if (written) continue;
      for (auto& a : acc)
        if (a.buf.same_as(B))
          for (size_t d = 0; d < a.idx.size(); ++d)
            if (a.idx[d].get() == iv.var.get()) by_v.push_back({B.get(), d});
    }
    if (!upd || (upd->op != BinOp::Add && upd->op != BinOp::Sub) ||
        !has_zero_factor(upd->rhs, by_v, iv.var.get()))
      refuse("padding the reduce iter var " + iv.var.name() + " of block " + b->name +
             " adds terms that are not zero (only a sum of products with a factor loaded from a zero-padded "
             "input indexed by " +
             iv.var.name() + " can be padded along its reduction)");
  }
  int first = root_position(st, top_item(st, bs.get()));
  if (first < 0) refuse("block " + b->name + " is not under the root block");
  // The copies go before and after the top-level statement holding the block: another block in
  // it writing a padded input would not be seen by the copy, and one accessing a padded output
  // would see the original buffer, not the padded one (found by the fuzzer: pad_einsum of the
  // init block of a blockized reduction, whose update block in the same nest kept writing S).
  for (auto& o : collect_blocks(top_item(st, bs.get()))) {
    if (o.same_as(bs) || !find_path(o, bs.get()).empty()) continue;
    const BlockNode* ob = block_of(o);
    for (auto& [B, sh] : padded) {
      bool written = false;
      for (auto& a : acc) written = written || (a.store && a.buf.same_as(B));
      if (block_writes(*ob, B) || (written && block_reads(*ob, B)))
        refuse("block " + ob->name + " accesses buffer " + B->name + " in the loop nest of block " + b->name +
               " (the padded copy " + B->name + "_pad would not match it)");
    }
  }
  // The new buffers and the block using them.
  std::vector<std::pair<Buffer, Buffer>> repl;  // old, new
  for (auto& [B, s] : padded)
    repl.push_back({B, Buffer(st.fresh_buffer_name(B->name + "_pad"), B->dtype, s, B->scope)});
  Stmt nb = update_realize(bs, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& nbk) {
      for (size_t k = 0; k < n; ++k) nbk.iter_vars[k].extent = next[k];
      for (auto& [o, p] : repl) {
        nbk.body = replace_buffer(nbk.body, o, p);
        if (nbk.init.defined()) nbk.init = replace_buffer(nbk.init, o, p);
        nbk.reads = replace_buffer(nbk.reads, o, p);
        nbk.writes = replace_buffer(nbk.writes, o, p);
      }
    });
  });
  Stmt nest = nb;
  for (size_t k = n; k-- > 0;) {
    auto* f = loops[k].as<ForNode>();
    nest = make_for(f->loop_var, f->min, next[k], f->for_kind, nest, f->thread_tag, f->annotations);
  }
  st.replace(loops[0].get(), nest);
  // Producers of the padded inputs, before the nest; copy-backs of the outputs, after it.
  std::vector<Stmt> before, after;
  for (auto& [o, p] : repl) {
    bool written = false;
    const std::vector<Expr>* sidx = nullptr;
    for (auto& a : acc)
      if (a.store && a.buf.same_as(o)) {
        written = true;
        sidx = &a.idx;
      }
    if (!written) {
      std::vector<Expr> shape = p->shape;
      std::vector<std::string> names;
      for (size_t d = 0; d < shape.size(); ++d) names.push_back("ax" + std::to_string(d));
      std::string bname = st.fresh_block_name(p->name);
      before.push_back(make_nest(st, shape, names, [&](const std::vector<Var>& vs) {
        std::vector<IterVar> ivs;
        std::vector<Expr> binds, idx;
        Expr cond;
        for (size_t d = 0; d < vs.size(); ++d) {
          Var w("v" + std::to_string(d), vs[d].dtype());
          ivs.push_back(IterVar{w, IterKind::Spatial, shape[d]});
          binds.push_back(vs[d]);
          idx.push_back(w);
          if (!prove_eq(shape[d], o->shape[d])) {
            Expr c = make_binary(BinOp::LT, w, o->shape[d]);
            cond = cond.defined() ? make_binary(BinOp::And, cond, c) : c;
          }
        }
        Expr value = make_if_then_else(cond, make_load(o, idx), make_const(o->dtype, 0));
        return make_simple_block(bname, ivs, binds, make_store(p, idx, value));
      }));
    } else {
      // Copy back the box the block writes: iter-var dims over their old extent, constants fixed.
      // One loop per distinct iter var of the store index (`C[vi, vi]` writes a diagonal),
      // over its old extent; constant indices stay.
      std::vector<int> ks;
      for (auto& e : *sidx) {
        int k = iter_index(e);
        if (k >= 0 && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
      }
      std::sort(ks.begin(), ks.end());
      std::vector<Expr> shape;
      std::vector<std::string> names;
      for (size_t j = 0; j < ks.size(); ++j) {
        shape.push_back(ext[ks[j]]);
        names.push_back("ax" + std::to_string(j));
      }
      std::string bname = st.fresh_block_name(o->name + "_unpad");
      auto body = [&](const std::vector<Var>& vs) {
        std::vector<IterVar> ivs;
        std::vector<Expr> binds, idx;
        std::unordered_map<const VarNode*, Expr> sub;
        for (size_t j = 0; j < ks.size(); ++j) {
          const IterVar& old = b->iter_vars[ks[j]];
          Var w(old.var.name(), old.var.dtype());
          ivs.push_back(IterVar{w, IterKind::Spatial, shape[j]});
          binds.push_back(vs[j]);
          sub[old.var.get()] = w;
        }
        for (auto& e : *sidx) idx.push_back(substitute(e, sub));
        return make_simple_block(bname, ivs, binds, make_store(o, idx, make_load(p, idx)));
      };
      after.push_back(make_nest(st, shape, names, body));
    }
  }
  for (size_t i = 0; i < after.size(); ++i)
    insert_root_item(st, static_cast<size_t>(first) + 1 + i, after[i]);
  for (size_t i = before.size(); i-- > 0;) insert_root_item(st, static_cast<size_t>(first), before[i]);
  for (auto& [o, p] : repl) st.add_root_alloc(p);
  refresh_enclosing_regions(st, b->name);
}

}  // namespace tirc::sched

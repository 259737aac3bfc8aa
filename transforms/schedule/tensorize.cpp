// tensorize(loop_or_block, "INTRIN"): TVM Schedule.tensorize (blockize + match the desc +
// replace by the impl). Model: TVM src/tir/schedule/primitive/blockize_tensorize.cc; own code.
//
// - A loop: the loop and everything in it (the tile) is matched against the body of the
//   desc (transforms/schedule/tensorize_match.h). On success the tile becomes a new block
//   "<block>_o" (like blockize) whose iter vars are the enclosing loops / iter vars that the
//   matched offsets use (bound to them; spatial / reduce after the kinds of the tile's iter vars
//   whose offsets use them, opaque otherwise), and whose body is the impl.
// - A block whose body is the tile (e.g. the result of blockize): its body is matched against
//   the desc body and replaced by the impl; the block keeps its name, iter vars and bindings.
// - A block when the desc body is a single block (no loops): the block itself is matched and
//   replaced like a loop tile.
// - A loop whose tile does not match as is but holds a block with an init: as TVM, the tile is
//   blockized first (blockize moves a split reduction's init to the outer block) and the
//   outer block's body is matched; if that fails too, the first reason is reported.
//
// The impl's parameters correspond to the desc's by position (same kinds, dtypes, shapes).
// Each impl access `P[i, j]` to a buffer parameter becomes `B[o0 + i, o1 + j]` on the matched
// buffer B at the matched offsets (extra leading dimensions of B get their offset as index);
// `P.ptr(i, j)` becomes `B.ptr(o0 + i, o1 + j)` and `P.data` the pointer to the region start
// `B.ptr(o0, o1)`. Extra trailing integer scalar params named `<P>_stride<d>` receive the
// row-major stride (in elements) of B in the dimension matching dimension d of P. Desc scalar
// parameters match any expression of outer variables; the impl's gets that expression.
// Impl loop / iter / let vars, blocks and allocs get fresh names; impl blocks that use the
// new block's iter vars get iter vars bound to them (a block body sees only its own): same
// kind, except reduce becomes opaque in an impl block with an init.
#include <set>

#include "ir/mutator.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/tensorize_match.h"
#include "transforms/schedule/util.h"
#include "transforms/simplify/region.h"

namespace tirc::sched {
namespace {

bool stmt_uses(const Stmt& s, const VarNode* v) {
  bool found = false;
  if (s.defined()) for_each_expr(s, [&](const Expr& e) { found = found || e.get() == v; });
  return found;
}

std::string param_text(const Param& p) {
  std::string s = p.name() + ": ";
  if (!p.is_buffer()) return s + std::string(dtype_name(p.var.dtype()));
  s += std::string(dtype_name(p.buffer->dtype)) + "[";
  for (size_t i = 0; i < p.buffer->shape.size(); ++i) s += (i ? ", " : "") + print_expr(p.buffer->shape[i]);
  return s + "]";
}

// Fresh names for everything the impl brings into the function.
struct Names {
  const ScheduleState& st;
  std::set<std::string> used;
  std::string var(const std::string& base) {
    std::string n = fresh_var_name(st, base);
    for (int k = 1; used.count(n); ++k) n = fresh_var_name(st, base + "_" + std::to_string(k));
    used.insert(n);
    return n;
  }
  std::string block(const std::string& base) {
    std::string n = st.fresh_block_name(base);
    for (int k = 1; used.count(n); ++k) n = st.fresh_block_name(base + "_" + std::to_string(k));
    used.insert(n);
    return n;
  }
  std::string buffer(const std::string& base) {
    std::string n = st.fresh_buffer_name(base);
    for (int k = 1; used.count(n); ++k) n = st.fresh_buffer_name(base + "_" + std::to_string(k));
    used.insert(n);
    return n;
  }
};

// How an impl buffer is rewritten: onto `to`, index k of `to` = offsets[k] (+ the impl's
// index for the trailing dimensions).
struct BufMap {
  Buffer to;
  std::vector<Expr> offsets;
};

// Copies the impl body into the function: fresh binders, buffers mapped, params substituted.
class ImplRewriter : public IRMutator {
 public:
  ImplRewriter(Names& names, std::unordered_map<const VarNode*, Expr> vars,
               std::unordered_map<const BufferNode*, BufMap> bufs)
      : names_(names), vars_(std::move(vars)), bufs_(std::move(bufs)) {}

  // A fresh copy of an impl-local buffer (alloc).
  Buffer fresh_alloc(const Buffer& b) {
    std::vector<Expr> shape;
    for (auto& e : b->shape) shape.push_back(mutate(e));
    Buffer nb(names_.buffer(b->name), b->dtype, shape, b->scope);
    bufs_[b.get()] = BufMap{nb, std::vector<Expr>(b->ndim(), make_int(0))};
    return nb;
  }

 protected:
  Expr mutate_var(const Expr& e) override {
    auto it = vars_.find(e.as<VarNode>());
    return it == vars_.end() ? e : it->second;
  }
  std::vector<Expr> index(const BufMap& m, const std::vector<Expr>& idx) {
    std::vector<Expr> out;
    size_t lead = m.offsets.size() - idx.size();
    for (size_t k = 0; k < m.offsets.size(); ++k)
      out.push_back(k < lead ? m.offsets[k] : fold(m.offsets[k] + idx[k - lead]));
    return out;
  }
  Expr mutate_load(const LoadNode* n, const Expr& e) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    auto it = bufs_.find(n->buffer.get());
    if (it == bufs_.end()) return ch ? make_load(n->buffer, idx) : e;
    return make_load(it->second.to, index(it->second, idx));
  }
  Expr mutate_buffer_ptr(const BufferPtrNode* n, const Expr& e) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    auto it = bufs_.find(n->buffer.get());
    if (it == bufs_.end()) return ch ? make_buffer_ptr(n->buffer, idx) : e;
    const BufMap& m = it->second;
    if (idx.empty()) {  // P.data: the start of the matched region
      bool zero = true;
      for (auto& o : m.offsets) zero = zero && is_zero(o);
      return zero ? make_buffer_ptr(m.to, {}) : make_buffer_ptr(m.to, m.offsets);
    }
    return make_buffer_ptr(m.to, index(m, idx));
  }
  Stmt mutate_store(const StoreNode* n, const Stmt&) override {
    bool ch = false;
    auto idx = mutate_all(n->indices, &ch);
    Expr v = mutate(n->value);
    auto it = bufs_.find(n->buffer.get());
    if (it == bufs_.end()) return make_store(n->buffer, idx, v);
    return make_store(it->second.to, index(it->second, idx), v);
  }
  Stmt mutate_for(const ForNode* n, const Stmt&) override {
    Var nv(names_.var(n->loop_var.name()), n->loop_var.dtype());
    vars_[n->loop_var.get()] = nv;
    Expr mn = mutate(n->min), ext = mutate(n->extent);
    return make_for(nv, mn, ext, n->for_kind, mutate(n->body), n->thread_tag, n->annotations);
  }
  Stmt mutate_let_stmt(const LetStmtNode* n, const Stmt&) override {
    Expr v = mutate(n->value);
    Var nv(names_.var(n->var.name()), n->var.dtype());
    vars_[n->var.get()] = nv;
    return make_let_stmt(nv, v, mutate(n->body));
  }
  Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt&) override {
    bool ch = false;
    auto bindings = mutate_all(n->bindings, &ch);
    Expr pred = mutate(n->predicate);
    const BlockNode* b = n->block.get();
    std::vector<IterVar> ivs;
    for (auto& iv : b->iter_vars) {
      Var nv(names_.var(iv.var.name()), iv.var.dtype());
      vars_[iv.var.get()] = nv;
      ivs.push_back(IterVar{nv, iv.kind, mutate(iv.extent)});
    }
    std::vector<Buffer> allocs;
    for (auto& a : b->allocs) allocs.push_back(fresh_alloc(a));
    BlockNode nb;
    nb.name = names_.block(b->name);
    nb.iter_vars = ivs;
    nb.allocs = allocs;
    nb.init = b->init.defined() ? mutate(b->init) : Stmt();
    nb.body = mutate(b->body);
    nb.annotations = b->annotations;
    // reads/writes are inferred again once the copy is in place.
    return make_block_realize(bindings, pred, make_block(std::move(nb)));
  }

 private:
  Names& names_;
  std::unordered_map<const VarNode*, Expr> vars_;
  std::unordered_map<const BufferNode*, BufMap> bufs_;
};

// Gives every block under s iter vars for the enclosing block iter vars its body uses (a
// block body sees only its own iter vars), and infers the regions of every block under s.
Stmt finalize(const Stmt& s, const std::vector<IterVar>& enclosing, Names& names,
              const std::unordered_set<const BufferNode*>& read_only) {
  if (!s.defined()) return s;
  auto rec = [&](const Stmt& c) { return finalize(c, enclosing, names, read_only); };
  switch (s.kind()) {
    case StmtKind::For:
    case StmtKind::LetStmt: return with_body(s, rec(children(s)[0]));
    case StmtKind::Seq: {
      std::vector<Stmt> out;
      for (auto& c : s.as<SeqNode>()->stmts) out.push_back(rec(c));
      return make_seq(out);
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      return make_if(n->cond, rec(n->then_case), rec(n->else_case));
    }
    case StmtKind::BlockRealize: break;
    default: return s;
  }
  auto* br = s.as<BlockRealizeNode>();
  const BlockNode* b = br->block.get();
  std::vector<IterVar> ivs = b->iter_vars;
  std::vector<Expr> binds = br->bindings;
  std::unordered_map<const VarNode*, Expr> sub;
  for (auto& e : enclosing) {
    if (!stmt_uses(b->body, e.var.get()) && !stmt_uses(b->init, e.var.get())) continue;
    Var nv(names.var(e.var.name()), e.var.dtype());
    sub[e.var.get()] = nv;
    // Same kind as the outer iter var, except that a reduce one becomes opaque in a block
    // with an init (the init must keep running at the impl's own first reduce iteration).
    IterKind k = e.kind == IterKind::Spatial || (e.kind == IterKind::Reduce && !b->init.defined())
                     ? e.kind
                     : IterKind::Opaque;
    ivs.push_back(IterVar{nv, k, e.extent});
    binds.push_back(e.var);
  }
  Stmt init = b->init.defined() ? finalize(substitute(b->init, sub), ivs, names, read_only) : Stmt();
  Stmt body = finalize(substitute(b->body, sub), ivs, names, read_only);
  Block nb = update_block(br->block, [&](BlockNode& n) {
    n.iter_vars = ivs;
    n.init = init;
    n.body = body;
    infer_regions(n, &n.reads, &n.writes, read_only);
  });
  return make_block_realize(binds, br->predicate, nb);
}

// An impl that calls an extern function touches the tile through pointers, which region
// inference can only bound by whole buffers; TVM takes the block's regions from the desc
// instead. So do we: every target buffer matched by one desc param gets, in the block that
// replaced the tile, the region of that param at its offsets (leading extra dimensions are
// points). The impl is trusted to stay inside its params, as tensorize trusts it to compute
// the desc; the block's init (moved out of a reduction tile) writes inside the tile too.
// Then parallel / reorder can see that the tiles of different iterations are disjoint.
Stmt desc_regions_for_extern(const Stmt& done, const TensorizeMatch& m, const FunctionNode& desc,
                             const std::unordered_map<const VarNode*, Expr>& sub) {
  std::unordered_map<const BufferNode*, int> uses;
  for (auto& [d, bm] : m.buffers) ++uses[bm.target.get()];
  std::unordered_map<const BufferNode*, std::vector<Range>> tile;
  for (auto& p : desc.params) {
    if (!p.is_buffer()) continue;
    const TensorizeBufferMatch& bm = m.buffers.at(p.buffer.get());
    if (uses[bm.target.get()] != 1) continue;
    size_t lead = bm.target->ndim() - p.buffer->ndim();
    std::vector<Range> rs;
    for (size_t k = 0; k < bm.offsets.size(); ++k) {
      Expr o = fold(substitute(bm.offsets[k], sub));
      if (k < lead)
        rs.push_back(Range{o, Expr()});
      else
        rs.push_back(Range{o, fold(o + p.buffer->shape[k - lead])});
    }
    tile[bm.target.get()] = rs;
  }
  auto fix = [&](std::vector<BufferRegion>& regs) {
    for (auto& r : regs)
      if (auto it = tile.find(r.buffer.get()); it != tile.end()) r.ranges = it->second;
  };
  return update_realize(done, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) {
      fix(n.reads);
      fix(n.writes);
    });
  });
}

const IntrinItem& find_intrin(const ScheduleState& st, const std::string& name) {
  std::string known;
  if (st.intrins)
    for (auto& it : *st.intrins) {
      if (it.name == name) return it;
      known += (known.empty() ? "" : ", ") + it.name;
    }
  refuse("unknown intrinsic \"" + name + "\"" +
         (known.empty() ? " (the module defines no intrin)" : " (known: " + known + ")"));
}

}  // namespace

// Tensorizes `target` (a loop, or a block when is_block) with intrinsic `name`; returns the
// name of the resulting block. Refuses before changing anything.
static std::string tensorize_target(ScheduleState& st, Stmt target, bool is_block, const std::string& name) {
  const IntrinItem& intrin = find_intrin(st, name);
  const FunctionNode& desc = *intrin.desc;
  const FunctionNode& impl = *intrin.impl;
  const BlockNode& droot = root_block(desc);
  const BlockNode& iroot = root_block(impl);
  if (!droot.allocs.empty())
    refuse("the desc of " + name + " allocates buffer " + droot.allocs[0]->name + " (not supported)");

  // The impl's parameters: the desc's, then optional stride parameters.
  if (impl.params.size() < desc.params.size())
    refuse("the impl of " + name + " has " + std::to_string(impl.params.size()) + " parameters, the desc " +
           std::to_string(desc.params.size()));
  for (size_t i = 0; i < desc.params.size(); ++i) {
    const Param &d = desc.params[i], &p = impl.params[i];
    bool same = d.is_buffer() == p.is_buffer();
    if (same && d.is_buffer()) {
      same = d.buffer->dtype == p.buffer->dtype && d.buffer->ndim() == p.buffer->ndim();
      for (size_t k = 0; same && k < d.buffer->ndim(); ++k)
        same = prove_eq(d.buffer->shape[k], p.buffer->shape[k]);
    } else if (same) {
      same = d.var.dtype() == p.var.dtype();
    }
    if (!same)
      refuse("parameter " + std::to_string(i + 1) + " of the impl of " + name + " (" + param_text(p) +
             ") does not match the desc's (" + param_text(d) + ")");
  }

  // What to match: a loop tile, a block's body (scope), or a block itself (leaf).
  Stmt dbody = droot.body;
  bool scope = is_block && dbody.kind() != StmtKind::BlockRealize;
  Stmt tile = scope ? block_of(target)->body : target;
  if (scope && tile.kind() != dbody.kind() && tile.kind() != StmtKind::For)
    refuse(
        "block " + block_of(target)->name + " is not a tile (its body is not a loop nest) and the desc of " +
        name +
        " is not a single block; give the outermost loop of the tile, or the block made by blockize of it");
  TensorizeMatch m = match_tensorize_desc(tile, desc, dbody, name);

  // Substitutions for the impl.
  Names names{st, {}};
  std::unordered_map<const VarNode*, Expr> vars;
  std::unordered_map<const BufferNode*, BufMap> bufs;
  std::unordered_map<std::string, std::pair<const TensorizeBufferMatch*, size_t>>
      impl_bufs;  // name -> match, ndim
  for (size_t i = 0; i < desc.params.size(); ++i) {
    const Param &d = desc.params[i], &p = impl.params[i];
    if (d.is_buffer()) {
      const TensorizeBufferMatch& bm = m.buffers.at(d.buffer.get());
      bufs[p.buffer.get()] = BufMap{bm.target, bm.offsets};
      impl_bufs[p.name()] = {&bm, p.buffer->ndim()};
    } else {
      vars[p.var.get()] = m.scalars.at(d.var.get());
    }
  }
  for (size_t i = desc.params.size(); i < impl.params.size(); ++i) {
    const Param& p = impl.params[i];
    std::string n = p.name();
    size_t pos = n.rfind("_stride");
    bool ok = !p.is_buffer() && tirc::is_int(p.var.dtype()) && pos != std::string::npos &&
              pos + 7 < n.size() && n.size() - pos - 7 <= 4 && impl_bufs.count(n.substr(0, pos)) &&
              n.find_first_not_of("0123456789", pos + 7) == std::string::npos;
    if (!ok)
      refuse("parameter " + n + " of the impl of " + name +
             " has no counterpart in the desc; extra impl parameters must be integer strides named "
             "<buffer>_stride<d>");
    auto [bm, nd] = impl_bufs.at(n.substr(0, pos));
    size_t d = std::stoul(n.substr(pos + 7));
    if (d >= nd)
      refuse("parameter " + n + " of the impl of " + name + ": buffer " + n.substr(0, pos) + " has " +
             std::to_string(nd) + " dimensions");
    const Buffer& tb = bm->target;
    Expr stride = make_int(1, p.var.dtype());
    for (size_t k = tb->ndim() - nd + d + 1; k < tb->ndim(); ++k) stride = stride * tb->shape[k];
    if (stride.dtype() != p.var.dtype()) stride = make_cast(p.var.dtype(), stride);
    vars[p.var.get()] = fold(stride);
  }
  ImplRewriter rw(names, vars, bufs);
  std::vector<Buffer> allocs;
  for (auto& a : iroot.allocs) allocs.push_back(rw.fresh_alloc(a));
  Stmt body = rw.mutate(iroot.body);

  std::unordered_set<const BufferNode*> read_only;
  for (auto& p : st.func.params)
    if (p.is_buffer() && !st.is_output(p.buffer)) read_only.insert(p.buffer.get());

  std::string result_block;
  if (scope) {
    const std::string bname = block_of(target)->name;
    const std::vector<Buffer> own_allocs = block_of(target)->allocs;
    if (!allocs.empty()) {
      // The block's own allocs stay (the impl may use them through a parameter).
      Stmt nb = update_realize(target, [&](BlockRealizeNode& r) {
        r.block = update_block(r.block, [&](BlockNode& n) {
          n.body = body;
          for (auto& a : allocs) n.allocs.push_back(a);
        });
      });
      target = nb;
    } else {
      target = update_realize(target, [&](BlockRealizeNode& r) {
        r.block = update_block(r.block, [&](BlockNode& n) { n.body = body; });
      });
    }
    Stmt done = finalize(target, {}, names, read_only);
    if (has_extern_call(body)) done = desc_regions_for_extern(done, m, desc, {});
    st.replace(st.find_block(bname).get(), done);
    result_block = bname;
    // The tile's buffers allocated by the block and no longer used go away.
    for (auto& a : own_allocs) remove_alloc_if_unused(st, a);
  } else {
    // A new block over the enclosing loops / iter vars that the impl now uses.
    std::vector<EnclosingVar> outer = enclosing_vars(st, target.get());
    std::vector<IterVar> ivs;
    std::vector<Expr> binds;
    std::unordered_map<const VarNode*, Expr> sub;
    for (auto& o : outer) {
      const VarNode* v = o.var.get();
      if (!stmt_uses(body, v)) continue;
      bool sp = false, rd = false, other = false;
      for (auto& [k, off] : m.iter_offsets)
        if (uses_var(off, v)) (k == IterKind::Spatial ? sp : k == IterKind::Reduce ? rd : other) = true;
      IterKind kind = other || (sp && rd) || (!sp && !rd) ? IterKind::Opaque
                      : rd                                ? IterKind::Reduce
                                                          : IterKind::Spatial;
      for (auto& o2 : outer)
        if (uses_var(o.extent, o2.var.get()))
          refuse("the extent of " + o.var.name() + " depends on " + o2.var.name() +
                 ", which the tile's offsets also use");
      std::string nm = o.var.name();
      if (nm.size() > 1 && nm[0] == 'v') nm = nm.substr(1);
      Var iv(names.var("v" + nm + "_o"), o.var.dtype());
      ivs.push_back(IterVar{iv, kind, o.extent});
      binds.push_back(is_zero(o.min) ? Expr(o.var) : fold(o.var - o.min));
      sub[v] = is_zero(o.min) ? Expr(iv) : fold(iv + o.min);
    }
    auto inner = collect_blocks(target, false);
    std::string base = inner.size() == 1 ? block_of(inner[0])->name + "_o" : name + "_o";
    BlockNode nb;
    nb.name = names.block(base);
    nb.iter_vars = ivs;
    nb.allocs = allocs;
    nb.body = substitute(body, sub);
    Stmt realize_new = make_block_realize(binds, make_bool(true), make_block(std::move(nb)));
    Stmt done = finalize(realize_new, {}, names, read_only);
    if (has_extern_call(body)) done = desc_regions_for_extern(done, m, desc, sub);
    st.replace(target.get(), done);
    result_block = block_of(done)->name;
  }
  refresh_enclosing_regions(st, result_block);
  return result_block;
}

void prim_tensorize(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 2, 2);
  if (ins.results.size() > 1) expect_results(ins, 1);
  const Handle& h = arg_handle(st, ins, 0);
  bool is_block = h.kind == Handle::BlockH;
  Stmt target = is_block ? arg_block(st, ins, 0) : arg_loop(st, ins, 0);
  std::string handle = h.name;
  std::string name = arg_string(ins, 1, "the intrinsic name");
  std::string result;
  try {
    result = tensorize_target(st, target, is_block, name);
  } catch (const Refusal& first) {
    // TVM's tensorize of a loop blockizes the tile first, which moves the init of a
    // reduction tile to the outer block; the update then matches an update-only desc.
    bool has_init = false;
    for (auto& b : collect_blocks(target)) has_init = has_init || block_of(b)->init.defined();
    if (is_block || !has_init) throw;
    ScheduleState tmp = st;
    bool matched_blockized = false;
    try {
      ScheduleInstr bz;
      bz.primitive = "blockize";
      bz.results = {" tensorize"};  // not a valid script name: cannot clash with a user handle
      ScheduleArg a;
      a.kind = ScheduleArg::Ident;
      a.text = handle;
      bz.args = {a};
      bz.loc = ins.loc;
      prim_blockize(tmp, bz);
      std::string blk = tmp.handles.at(" tensorize").block;
      tmp.handles.erase(" tensorize");
      Stmt b = tmp.find_block(blk);
      if (!b.defined() || !block_of(b)->init.defined()) throw Refusal(first.what());
      matched_blockized = true;
      result = tensorize_target(tmp, b, true, name);
    } catch (const Refusal& second) {
      // Once the init has moved out, the blockized tile's mismatch is the real one (a body
      // that differs from the desc); the first refusal only said that the init was in the way.
      // A refusal of the init itself (the desc has one, the update now has none) is better
      // explained by the first message.
      std::string why = second.what();
      bool about_init = why.find("has an init") != std::string::npos;
      throw Refusal(matched_blockized && !about_init ? why : first.what());
    }
    st = std::move(tmp);
  }
  bind_block(st, ins, 0, result);
}

}  // namespace tirc::sched

#include "transforms/schedule/state.h"

#include <map>
#include <set>

#include "ir/error.h"
#include "ir/mutator.h"
#include "ir/visitor.h"
#include "transforms/simplify/region.h"

namespace tirc::sched {

void refuse(const std::string& why) { throw Refusal(why); }

namespace {
// Gives every loop its own variable node. A loop handle is the loop's variable, and the
// primitives find and substitute loops by variable identity; IR built by other passes
// (autodiff copies nests) may bind one Var node in several loops, which the printed text
// (and the parser) would keep apart anyway. Names and everything computed stay the same.
class UniqueLoopVars : public IRMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    if (seen_.insert(n->loop_var.get()).second) return r;
    auto* f = r.as<ForNode>();
    Var nv(f->loop_var.name(), f->loop_var.dtype());
    Stmt body = substitute(f->body, std::unordered_map<const VarNode*, Expr>{{f->loop_var.get(), nv}});
    return make_for(nv, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }

 private:
  std::set<const VarNode*> seen_;
};
}  // namespace

ScheduleState::ScheduleState(const FunctionNode& f) : func(f) {
  if (!func.body.as<BlockRealizeNode>()) throw Error("function " + f.name + " has no root block");
  func.body = UniqueLoopVars().mutate(func.body);
}

Function ScheduleState::to_function() const { return std::make_shared<FunctionNode>(func); }

Stmt ScheduleState::find_block(const std::string& name) const {
  for (auto& s : collect_blocks(func.body))
    if (block_of(s)->name == name) return s;
  return Stmt();
}

static Stmt find_loop_rec(const Stmt& s, const VarNode* v) {
  if (!s.defined()) return Stmt();
  if (auto* f = s.as<ForNode>(); f && f->loop_var.get() == v) return s;
  for (auto& c : children(s))
    if (Stmt r = find_loop_rec(c, v); r.defined()) return r;
  return Stmt();
}

Stmt ScheduleState::find_loop(const VarNode* v) const { return find_loop_rec(func.body, v); }

std::vector<Stmt> ScheduleState::loops_above(const StmtNode* n) const {
  auto path = path_to(n);
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (path[i].kind() == StmtKind::BlockRealize)
      loops.clear();
    else if (path[i].kind() == StmtKind::For)
      loops.push_back(path[i]);
  }
  return loops;
}

Stmt ScheduleState::scope_of(const StmtNode* n) const {
  auto path = path_to(n);
  Stmt scope;
  for (size_t i = 0; i + 1 < path.size(); ++i)
    if (path[i].kind() == StmtKind::BlockRealize) scope = path[i];
  return scope;
}

void ScheduleState::add_root_alloc(const Buffer& b) {
  func.body = update_realize(func.body, [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.allocs.push_back(b); });
  });
}

static void all_buffer_names(const FunctionNode& f, std::set<std::string>& names) {
  for (auto& p : f.params) names.insert(p.name());
  for (auto& o : f.outputs) names.insert(o->name);
  for (auto& s : collect_blocks(f.body)) {
    for (auto& a : block_of(s)->allocs) names.insert(a->name);
    names.insert(block_of(s)->name);  // keep buffer and block names apart too
  }
}

std::string ScheduleState::fresh_block_name(const std::string& base) const {
  std::set<std::string> names;
  for (auto& s : collect_blocks(func.body)) names.insert(block_of(s)->name);
  if (!names.count(base)) return base;
  for (int i = 1;; ++i)
    if (!names.count(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

std::string ScheduleState::fresh_buffer_name(const std::string& base) const {
  std::set<std::string> names;
  all_buffer_names(func, names);
  // Scalar params and vars are other namespaces in the language, but avoid confusion.
  if (!names.count(base)) return base;
  for (int i = 1;; ++i)
    if (!names.count(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

bool ScheduleState::is_output(const Buffer& b) const {
  for (auto& o : func.outputs)
    if (o.same_as(b)) return true;
  return false;
}
bool ScheduleState::is_param(const Buffer& b) const {
  for (auto& p : func.params)
    if (p.is_buffer() && p.buffer.same_as(b)) return true;
  return is_output(b);
}

// ---- arguments ----

void expect_args(const ScheduleInstr& ins, size_t lo, size_t hi) {
  size_t n = ins.args.size();
  if (n < lo || n > hi) {
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    refuse("expected " + want + " argument" + (hi == 1 ? "" : "s") + ", got " + std::to_string(n));
  }
}

void expect_results(const ScheduleInstr& ins, size_t n) {
  // No name at all discards the results (TVM scripts often call `sch.fuse(i, j)` without
  // keeping the handle); a wrong non-zero count is a mistake worth reporting.
  if (ins.results.size() != n && !ins.results.empty())
    refuse("returns " + std::to_string(n) + " handle" + (n == 1 ? "" : "s") + ", but " +
           std::to_string(ins.results.size()) + " name" + (ins.results.size() == 1 ? " is" : "s are") +
           " bound");
}

static const ScheduleArg& argument(const ScheduleInstr& ins, size_t i) {
  if (i >= ins.args.size()) refuse("missing argument " + std::to_string(i + 1));
  return ins.args[i];
}

const Handle& arg_handle(const ScheduleState& st, const ScheduleInstr& ins, size_t i) {
  const ScheduleArg& a = argument(ins, i);
  // A block may be named by its name string, as TVM's schedule methods accept
  // (`get_loops("B")`, `decompose_reduction("B", t)`). The handles live in a per-thread map by
  // name, so a returned reference stays valid for the whole instruction.
  if (a.kind == ScheduleArg::String) {
    if (!st.find_block(a.text).defined()) refuse("no block named \"" + a.text + "\"");
    thread_local std::map<std::string, Handle> by_name;
    Handle& h = by_name[a.text];
    h = Handle{Handle::BlockH, a.text, Var(), "\"" + a.text + "\""};
    return h;
  }
  if (a.kind != ScheduleArg::Ident)
    refuse("argument " + std::to_string(i + 1) + " must be a block or loop handle");
  auto it = st.handles.find(a.text);
  if (it == st.handles.end()) refuse("unknown handle '" + a.text + "'");
  return it->second;
}

// How a handle is named in messages: its script name, or for the hidden name of a nested
// call (`unroll(get_block("C"))`, hoisted by the parser to `_0 = get_block("C")`) what it is.
static std::string handle_text(const Handle& h) {
  bool hidden =
      h.name.size() > 1 && h.name[0] == '_' && h.name.find_first_not_of("0123456789", 1) == std::string::npos;
  if (!hidden) return "'" + h.name + "'";
  return "the argument (" + (h.kind == Handle::BlockH ? "block " + h.block : "loop " + h.loop.name()) + ")";
}

Stmt arg_block(const ScheduleState& st, const ScheduleInstr& ins, size_t i) {
  const Handle& h = arg_handle(st, ins, i);
  if (h.kind != Handle::BlockH) refuse(handle_text(h) + " is a loop handle, expected a block");
  Stmt s = st.find_block(h.block);
  if (!s.defined()) refuse("block " + h.block + " no longer exists (removed by an earlier primitive)");
  // TVM scripts take the root block to list its children (get_child_blocks) or annotate it;
  // it cannot be moved, inlined or cached.
  if (s.same_as(st.body()) && ins.primitive != "get_child_blocks" && ins.primitive != "annotate" &&
      ins.primitive != "unannotate" && ins.primitive != "get_loops")
    refuse("the root block cannot be scheduled");
  return s;
}

Stmt arg_loop(const ScheduleState& st, const ScheduleInstr& ins, size_t i) {
  const Handle& h = arg_handle(st, ins, i);
  if (h.kind != Handle::LoopH) refuse(handle_text(h) + " is a block handle, expected a loop");
  Stmt s = st.find_loop(h.loop.get());
  if (!s.defined()) refuse("loop '" + h.name + "' no longer exists (replaced by an earlier primitive)");
  return s;
}

int64_t arg_int(const ScheduleInstr& ins, size_t i, const char* what) {
  const ScheduleArg& a = argument(ins, i);
  if (a.kind != ScheduleArg::Int) refuse(std::string(what) + " must be an integer literal");
  return a.int_value;
}

std::string arg_string(const ScheduleInstr& ins, size_t i, const char* what) {
  const ScheduleArg& a = argument(ins, i);
  if (a.kind != ScheduleArg::String) refuse(std::string(what) + " must be a string literal");
  return a.text;
}

const ScheduleArg* kwarg(const ScheduleInstr& ins, const std::string& name) {
  for (auto& a : ins.args)
    if (a.kind == ScheduleArg::Keyword && a.text == name && !a.list.empty()) return &a.list[0];
  return nullptr;
}

std::vector<const ScheduleArg*> positional(const ScheduleInstr& ins) {
  std::vector<const ScheduleArg*> out;
  for (auto& a : ins.args)
    if (a.kind != ScheduleArg::Keyword) out.push_back(&a);
  return out;
}

void bind_block(ScheduleState& st, const ScheduleInstr& ins, size_t result, const std::string& block) {
  if (result >= ins.results.size()) return;
  const std::string& n = ins.results[result];
  if (n == "_") return;
  st.lists.erase(n);
  st.handles[n] = Handle{Handle::BlockH, block, Var(), n};
}

void bind_loop(ScheduleState& st, const ScheduleInstr& ins, size_t result, const Var& loop) {
  if (result >= ins.results.size()) return;
  const std::string& n = ins.results[result];
  if (n == "_") return;
  st.lists.erase(n);
  st.handles[n] = Handle{Handle::LoopH, "", loop, n};
}

// ---- facts ----

const BlockRealizeNode* realize(const Stmt& s) { return s.as<BlockRealizeNode>(); }
const BlockNode* block_of(const Stmt& s) { return s.as<BlockRealizeNode>()->block.get(); }

std::vector<IterKind> kinds_bound_to(const BlockRealizeNode& br, const VarNode* v) {
  std::vector<IterKind> out;
  const BlockNode* b = br.block.get();
  for (size_t i = 0; i < b->iter_vars.size() && i < br.bindings.size(); ++i)
    if (uses_var(br.bindings[i], v)) out.push_back(b->iter_vars[i].kind);
  return out;
}

bool is_reduction_block(const BlockNode& b) {
  if (b.init.defined()) return true;
  for (auto& iv : b.iter_vars)
    if (iv.kind == IterKind::Reduce) return true;
  return false;
}

static void add_unique(std::vector<Buffer>& v, const Buffer& b) {
  for (auto& x : v)
    if (x.same_as(b)) return;
  v.push_back(b);
}

std::vector<Buffer> written_buffers(const BlockNode& b) {
  std::vector<Buffer> out;
  for (auto& r : b.writes) add_unique(out, r.buffer);
  return out;
}
std::vector<Buffer> read_buffers(const BlockNode& b) {
  std::vector<Buffer> out;
  for (auto& r : b.reads) add_unique(out, r.buffer);
  return out;
}
bool block_reads(const BlockNode& b, const Buffer& buf) {
  for (auto& r : b.reads)
    if (r.buffer.same_as(buf)) return true;
  return body_reads(b, buf);
}
bool block_writes(const BlockNode& b, const Buffer& buf) {
  for (auto& r : b.writes)
    if (r.buffer.same_as(buf)) return true;
  bool found = false;
  // Also look at the stores themselves (declared regions may be incomplete).
  std::function<void(const Stmt&)> rec = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* st = s.as<StoreNode>(); st && st->buffer.same_as(buf)) found = true;
    for (auto& c : children(s)) rec(c);
  };
  rec(b.init);
  rec(b.body);
  return found;
}

bool body_reads(const BlockNode& b, const Buffer& buf) {
  bool found = false;
  auto f = [&](const Expr& e) {
    if (auto* l = e.as<LoadNode>(); l && l->buffer.same_as(buf)) found = true;
    if (auto* p = e.as<BufferPtrNode>(); p && p->buffer.same_as(buf)) found = true;
  };
  if (b.init.defined()) for_each_expr(b.init, f);
  for_each_expr(b.body, f);
  return found;
}

static void infer_regions_impl(const BlockNode& b, std::vector<BufferRegion>* reads,
                               std::vector<BufferRegion>* writes,
                               const std::unordered_set<const BufferNode*>* read_only);

void infer_regions(const BlockNode& b, std::vector<BufferRegion>* reads, std::vector<BufferRegion>* writes) {
  infer_regions_impl(b, reads, writes, nullptr);
}

void infer_regions(const BlockNode& b, std::vector<BufferRegion>* reads, std::vector<BufferRegion>* writes,
                   const std::unordered_set<const BufferNode*>& read_only) {
  infer_regions_impl(b, reads, writes, &read_only);
}

static void infer_regions_impl(const BlockNode& b, std::vector<BufferRegion>* reads,
                               std::vector<BufferRegion>* writes,
                               const std::unordered_set<const BufferNode*>* read_only) {
  // The shared inference (also used by the parser for blocks without reads/writes) keeps
  // scheduled output in the same canonical form as parsed input.
  std::vector<BufferRegion> r, w;
  if (read_only)
    infer_access_regions(b, &r, &w, *read_only);
  else
    infer_access_regions(b, &r, &w);
  // Keep constant slice ends inside the buffer (relaxation may overshoot where a predicate
  // cuts the iterations; the parser rejects out-of-bounds constant regions).
  auto clamp = [](std::vector<BufferRegion>& v) {
    for (auto& reg : v)
      for (size_t d = 0; d < reg.ranges.size() && d < reg.buffer->shape.size(); ++d) {
        Range& rg = reg.ranges[d];
        int64_t e, sh, bg;
        if (!rg.is_point() && is_const_int(rg.end, &e) && is_const_int(reg.buffer->shape[d], &sh) && e > sh)
          rg.end = make_int(sh, rg.end.dtype());
        if (!rg.is_point() && is_const_int(rg.begin, &bg) && bg < 0) rg.begin = make_int(0, rg.begin.dtype());
        // An empty or inverted constant slice can only come from an imprecise bound: use the
        // whole dimension (a superset is always a valid region).
        int64_t b2, e2;
        if (!rg.is_point() && is_const_int(rg.begin, &b2) && is_const_int(rg.end, &e2) && e2 <= b2)
          rg = Range{make_int(0, reg.buffer->shape[d].dtype()), reg.buffer->shape[d]};
      }
  };
  clamp(r);
  clamp(w);
  if (reads) *reads = r;
  if (writes) *writes = w;
}

RangeMap const_ranges(const std::vector<Stmt>& loops) {
  RangeMap m;
  for (auto& s : loops) {
    auto* f = s.as<ForNode>();
    int64_t lo, ext;
    if (is_const_int(f->min, &lo) && is_const_int(fold(f->extent), &ext) && ext >= 1)
      m[f->loop_var.get()] = IntRange{lo, lo + ext - 1};
  }
  return m;
}

std::string loop_name(const Stmt& loop) { return loop.as<ForNode>()->loop_var.name(); }

}  // namespace tirc::sched

namespace tirc::sched {

static void var_names(const Stmt& s, std::set<std::string>& out) {
  if (!s.defined()) return;
  if (auto* f = s.as<ForNode>()) out.insert(f->loop_var.name());
  if (auto* l = s.as<LetStmtNode>()) out.insert(l->var.name());
  if (auto* br = s.as<BlockRealizeNode>())
    for (auto& iv : br->block->iter_vars) out.insert(iv.var.name());
  for (auto& c : children(s)) var_names(c, out);
}

std::set<std::string> used_var_names(const ScheduleState& st) {
  std::set<std::string> names;
  for (auto& p : st.func.params) names.insert(p.name());
  for (auto& o : st.func.outputs) names.insert(o->name);
  var_names(st.func.body, names);
  for (auto& s : collect_blocks(st.func.body))
    for (auto& a : block_of(s)->allocs) names.insert(a->name);
  return names;
}

std::string fresh_var_name(std::set<std::string>& names, const std::string& base) {
  std::string r = base;
  for (int i = 1; names.count(r); ++i) r = base + "_" + std::to_string(i);
  names.insert(r);
  return r;
}

std::string fresh_var_name(const ScheduleState& st, const std::string& base) {
  std::set<std::string> names = used_var_names(st);
  return fresh_var_name(names, base);
}

Stmt add_predicate_below(const Stmt& s, const Expr& cond) {
  if (!s.defined()) return s;
  if (s.kind() == StmtKind::BlockRealize) {
    return update_realize(s, [&](BlockRealizeNode& r) {
      auto cs = conjuncts(r.predicate);
      // `&&` evaluates both sides: a conjunct that loads a buffer (TVM's `where B[i] < 10.0`)
      // would run at the iterations cond excludes (past the end of a non-dividing split) and
      // load out of bounds there, so it is evaluated only where cond holds.
      for (auto& c : cs) {
        bool loads = false;
        for_each_expr(c, [&](const Expr& e) { loads = loads || e.kind() == ExprKind::Load; });
        if (loads) c = make_if_then_else(cond, c, make_bool(true));
      }
      cs.push_back(cond);
      r.predicate = make_and(cs);
    });
  }
  switch (s.kind()) {
    case StmtKind::For:
    case StmtKind::LetStmt: return with_body(s, add_predicate_below(children(s)[0], cond));
    case StmtKind::Seq: {
      std::vector<Stmt> out;
      for (auto& c : s.as<SeqNode>()->stmts) out.push_back(add_predicate_below(c, cond));
      return make_seq(out);
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseStmtNode>();
      return make_if(n->cond, add_predicate_below(n->then_case, cond),
                     add_predicate_below(n->else_case, cond));
    }
    default: return s;
  }
}

}  // namespace tirc::sched

namespace tirc::sched {

void refresh_enclosing_regions(ScheduleState& st, const std::string& block) {
  for (;;) {
    Stmt b = st.find_block(block);
    if (!b.defined()) return;
    auto path = st.path_to(b.get());
    // Innermost enclosing block first; each refresh rebuilds the path, so look it up again.
    std::vector<std::string> names;
    for (size_t i = 1; i + 1 < path.size(); ++i)
      if (path[i].kind() == StmtKind::BlockRealize) names.push_back(block_of(path[i])->name);
    for (size_t k = names.size(); k-- > 0;) {
      Stmt e = st.find_block(names[k]);
      st.replace(e.get(), update_realize(e, [&](BlockRealizeNode& r) {
                   r.block =
                       update_block(r.block, [&](BlockNode& n) { infer_regions(n, &n.reads, &n.writes); });
                 }));
    }
    return;
  }
}

}  // namespace tirc::sched

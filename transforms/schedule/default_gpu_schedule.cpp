#include "transforms/schedule/default_gpu_schedule.h"

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "transforms/schedule/deps.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/state.h"
#include "transforms/schedule/tree.h"

namespace tirc {

using namespace sched;

namespace {

ScheduleArg ident(const std::string& name) {
  ScheduleArg a;
  a.kind = ScheduleArg::Ident;
  a.text = name;
  return a;
}

ScheduleArg string_arg(const std::string& s) {
  ScheduleArg a;
  a.kind = ScheduleArg::String;
  a.text = s;
  return a;
}

// `[_, f1, f2, ...]`: a factor list whose first factor is inferred.
ScheduleArg factors(const std::vector<int64_t>& inner) {
  ScheduleArg a;
  a.kind = ScheduleArg::List;
  ScheduleArg w;
  w.kind = ScheduleArg::Wildcard;
  a.list.push_back(w);
  for (int64_t f : inner) {
    ScheduleArg x;
    x.kind = ScheduleArg::Int;
    x.int_value = f;
    x.text = std::to_string(f);
    a.list.push_back(x);
  }
  return a;
}

void run(ScheduleState& st, const std::string& prim, std::vector<ScheduleArg> args,
         std::vector<std::string> results = {}) {
  ScheduleInstr ins;
  ins.primitive = prim;
  ins.args = std::move(args);
  ins.results = std::move(results);
  apply_instruction(st, ins);
}

// A handle named `name` on loop l.
std::string loop_handle(ScheduleState& st, const std::string& name, const ForNode* l) {
  st.lists.erase(name);
  st.handles[name] = Handle{Handle::LoopH, "", l->loop_var, name};
  return name;
}

const ForNode* handle_loop(const ScheduleState& st, const std::string& name) {
  return st.find_loop(st.handles.at(name).loop.get()).as<ForNode>();
}

std::vector<Stmt> top_level_items(const ScheduleState& st) {
  auto* root = st.body().as<BlockRealizeNode>();
  return root ? seq_items(root->block->body) : std::vector<Stmt>{};
}

// True when every iteration of loop l is independent as far as the blocks below say: each
// block below uses l's variable, and only in bindings of spatial iter vars.
bool data_parallel(const ForNode* l) {
  if (l->for_kind != ForKind::Serial && l->for_kind != ForKind::Parallel) return false;
  if (has_loose_effects(l->body)) return false;
  auto blocks = collect_blocks(l->body, false);
  if (blocks.empty()) return false;
  for (auto& b : blocks) {
    auto kinds = kinds_bound_to(*realize(b), l->loop_var.get());
    if (kinds.empty()) return false;
    // An atomic scatter-add's instances commute (the backend emits atom.add): a reduce iter
    // var of it may be spread over threads too.
    const bool atomic = atomic_scatter_add(*block_of(b));
    for (IterKind k : kinds)
      if (k != IterKind::Spatial && !(atomic && k == IterKind::Reduce)) return false;
  }
  return true;
}

// The outer perfectly nested data-parallel loops of s.
std::vector<const ForNode*> parallel_prefix(const Stmt& s) {
  std::vector<const ForNode*> out;
  Stmt cur = s;
  while (auto* l = cur.as<ForNode>()) {
    if (!data_parallel(l)) break;
    out.push_back(l);
    auto items = seq_items(l->body);
    if (items.size() != 1) break;
    cur = items[0];
  }
  return out;
}

// Binds the data-parallel prefix of top-level item k; returns a note, or "" when nothing
// could be bound (the state is then unchanged).
std::string bind_prefix_in(ScheduleState& st, size_t k, const DefaultGpuScheduleOptions& o);

std::string bind_prefix(ScheduleState& st, size_t k, const DefaultGpuScheduleOptions& o) {
  // On a copy: a refusal after the blockIdx.x bind (of the threadIdx.x one) left the nest bound
  // to blockIdx.x, and the one-thread fallback then wrapped it in unit loops bound to the same
  // axis: only block 0 of the inner loop ran (schedule JIT fuzz seed 1000, conv2d_dilated's
  // gradient; tests/codegen/sched_jit_fuzz_regress/nested_block_binding.tir).
  ScheduleState trial = st;
  std::string note = bind_prefix_in(trial, k, o);
  if (!note.empty()) st = trial;
  return note;
}

std::string bind_prefix_in(ScheduleState& st, size_t k, const DefaultGpuScheduleOptions& o) {
  // Top-level lets (`let half = 0.5` before a nest) are values every thread computes alike.
  Stmt item = top_level_items(st)[k];
  while (auto* l = item.as<LetStmtNode>()) item = l->body;
  auto pre = parallel_prefix(item);
  if (pre.empty()) return "";
  std::vector<ScheduleArg> loops;
  std::string names;
  for (size_t i = 0; i < pre.size(); ++i) {
    loops.push_back(ident(loop_handle(st, "__dgs_l" + std::to_string(i), pre[i])));
    names += (i ? ", " : "") + pre[i]->loop_var.name();
  }
  try {
    std::string fused = "__dgs_l0";
    if (pre.size() > 1) {
      run(st, "fuse", loops, {"fused"});
      fused = "fused";
    }
    // [_, T]: as many blocks as needed (gridDim.x allows 2^31 - 1); the header says why not
    // TVM's cap of 256 blocks.
    int64_t p = 0;
    const int64_t T = o.max_threads_per_block;
    std::string bx = "bx", tx = "tx";
    if (is_const_int(handle_loop(st, fused)->extent, &p))
      run(st, "split", {ident(fused), factors({std::max<int64_t>(1, std::min(p, T))})}, {bx, tx});
    else
      run(st, "split", {ident(fused), factors({T})}, {bx, tx});
    run(st, "bind", {ident(bx), string_arg("blockIdx.x")});
    run(st, "bind", {ident(tx), string_arg("threadIdx.x")});
    return "loops " + names + " fused and bound to blockIdx.x x threadIdx.x (" +
           print_expr(handle_loop(st, bx)->extent) + " x " + print_expr(handle_loop(st, tx)->extent) + ")";
  } catch (const Refusal&) {
    return "";
  } catch (const Error&) {
    return "";
  }
}

bool bound_in(const Stmt& s) {
  struct V : IRVisitor {
    bool bound = false;
    void visit_for(const ForNode* l) override {
      bound = bound || (l->for_kind == ForKind::ThreadBinding && l->thread_tag != "vthread");
      IRVisitor::visit_for(l);
    }
  } v;
  v.visit(s);
  return v.bound;
}

}  // namespace

bool has_gpu_thread_binding(const FunctionNode& f) { return bound_in(f.body); }

Function default_gpu_schedule(const FunctionNode& f, const DefaultGpuScheduleOptions& o,
                              std::vector<std::string>* notes) {
  if (has_gpu_thread_binding(f) || !f.body.as<BlockRealizeNode>()) return std::make_shared<FunctionNode>(f);
  ScheduleState st(f);
  const size_t n = top_level_items(st).size();
  for (size_t k = 0; k < n; ++k) {
    std::string note = bind_prefix(st, k, o);
    if (note.empty()) {
      // One thread runs the statement (a let, an if, a nest), in order: unit loops bound to
      // blockIdx.x and threadIdx.x, legal for any statement (one iteration, one thread).
      Stmt item = top_level_items(st)[k];
      Var u(fresh_var_name(st, "u"), DType::I32);
      Var t(fresh_var_name(st, "t"), DType::I32);
      // Bound to both axes (as TVM's fused unit loop): a kernel launched with more threads
      // still runs it once.
      Stmt inner = make_for(t, make_int(0), make_int(1), ForKind::ThreadBinding, item, "threadIdx.x");
      st.replace(item.get(),
                 make_for(u, make_int(0), make_int(1), ForKind::ThreadBinding, inner, "blockIdx.x"));
      note = "runs in one thread (no data-parallel outer loop)";
    }
    if (notes) notes->push_back("statement " + std::to_string(k) + ": " + note);
  }
  return st.to_function();
}

}  // namespace tirc

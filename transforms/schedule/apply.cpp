#include <algorithm>
#include <map>
#include <optional>

#include "ir/error.h"
#include "transforms/schedule/lists.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/schedule.h"

namespace tirc {
namespace {

using namespace sched;

const std::map<std::string, PrimFn>& table() {
  static const std::map<std::string, PrimFn> t = {
      {"get_block", prim_get_block},
      // Newer TVM renamed get_block to get_sblock (with T.block -> T.sblock); same primitive.
      {"get_sblock", prim_get_block},
      {"get_loops", prim_get_loops},
      {"get_child_blocks", prim_get_child_blocks},
      {"get_producers", prim_get_producers},
      {"get_consumers", prim_get_consumers},
      {"split", prim_split},
      {"fuse", prim_fuse},
      {"reorder", prim_reorder},
      {"parallel", prim_parallel},
      {"vectorize", prim_vectorize},
      {"unroll", prim_unroll},
      {"bind", prim_bind},
      {"annotate", prim_annotate},
      {"unannotate", prim_unannotate},
      {"set_scope", prim_set_scope},
      {"storage_align", prim_storage_align},
      {"enter_postproc", prim_enter_postproc},
      {"compute_at", prim_compute_at},
      {"reverse_compute_at", prim_reverse_compute_at},
      {"compute_inline", prim_compute_inline},
      {"reverse_compute_inline", prim_reverse_compute_inline},
      {"cache_read", prim_cache_read},
      {"cache_write", prim_cache_write},
      {"cache_inplace", prim_cache_inplace},
      {"decompose_reduction", prim_decompose_reduction},
      {"rfactor", prim_rfactor},
      {"blockize", prim_blockize},
      {"tensorize", prim_tensorize},
      {"transform_layout", prim_transform_layout},
      {"transform_block_layout", prim_transform_block_layout},
      {"add_unit_loop", prim_add_unit_loop},
      {"decompose_padding", prim_decompose_padding},
      {"set_axis_separator", prim_set_axis_separator},
      {"loop_partition", prim_loop_partition},
      {"reindex", prim_reindex},
      {"merge", prim_merge},
      {"pad_einsum", prim_pad_einsum},
      {"sample_perfect_tile", prim_sample_perfect_tile},
      {"sample_categorical", prim_sample_categorical},
      {"sample_compute_location", prim_sample_compute_location},
  };
  return t;
}

}  // namespace

namespace sched {

// TVM's parameter names, so that `rfactor(k, factor_axis=1)` works like the positional form.
// `preserve_unit_iters` / `preserve_unit_loops` only decide whether unit loops are kept, which
// never changes what is computed: they are accepted and ignored.
// TVM <= 0.9 spelled transform_layout's buffer as two arguments, `buffer_index=0,
// buffer_index_type="write"` (positionally: block, 0, "write", index_map): made the newer
// `buffer=("write", 0)`.
static ScheduleInstr legacy_transform_layout(const ScheduleInstr& ins) {
  if (ins.primitive != "transform_layout") return ins;
  ScheduleInstr out = ins;
  auto& a = out.args;
  auto tuple = [](const ScheduleArg& type, const ScheduleArg& index) {
    ScheduleArg t;
    t.kind = ScheduleArg::List;
    t.text = "(";
    t.loc = index.loc;
    t.list = {type, index};
    return t;
  };
  if (a.size() >= 4 && a[1].kind == ScheduleArg::Int && a[2].kind == ScheduleArg::String) {
    a[1] = tuple(a[2], a[1]);
    a.erase(a.begin() + 2);
    return out;
  }
  const ScheduleArg *idx = nullptr, *type = nullptr;
  for (auto& x : a)
    if (x.kind == ScheduleArg::Keyword && !x.list.empty()) {
      if (x.text == "buffer_index") idx = &x.list[0];
      if (x.text == "buffer_index_type") type = &x.list[0];
    }
  if (!idx || !type) return out;
  ScheduleArg k;
  k.kind = ScheduleArg::Keyword;
  k.text = "buffer";
  k.loc = idx->loc;
  k.list.push_back(tuple(*type, *idx));
  std::vector<ScheduleArg> args;
  for (auto& x : a) {
    if (x.kind == ScheduleArg::Keyword && x.text == "buffer_index")
      args.push_back(k);
    else if (!(x.kind == ScheduleArg::Keyword && x.text == "buffer_index_type"))
      args.push_back(x);
  }
  a = args;
  return out;
}

static ScheduleInstr normalize_keywords(const ScheduleInstr& ins_in) {
  ScheduleInstr ins = legacy_transform_layout(ins_in);
  static const std::map<std::string, std::vector<std::string>> params = {
      {"get_block", {"name", "func_name"}},
      {"get_sblock", {"name", "func_name"}},
      {"get_loops", {"block"}},
      {"get_child_blocks", {"block_or_loop"}},
      {"get_producers", {"block"}},
      {"get_consumers", {"block"}},
      {"split", {"loop", "factors"}},
      {"parallel", {"loop"}},
      {"vectorize", {"loop"}},
      {"unroll", {"loop"}},
      {"bind", {"loop", "thread_axis"}},
      {"annotate", {"block_or_loop", "ann_key", "ann_val"}},
      {"unannotate", {"block_or_loop", "ann_key"}},
      {"set_scope", {"block", "buffer_index", "storage_scope"}},
      {"storage_align", {"block", "buffer_index", "axis", "factor", "offset"}},
      {"compute_at", {"block", "loop"}},
      {"reverse_compute_at", {"block", "loop"}},
      {"compute_inline", {"block"}},
      {"reverse_compute_inline", {"block"}},
      {"cache_read", {"block", "read_buffer_index", "storage_scope", "consumer_blocks"}},
      {"cache_write", {"block", "write_buffer_index", "storage_scope", "consumer_blocks"}},
      {"cache_inplace", {"block", "read_buffer_index", "storage_scope"}},
      {"decompose_reduction", {"block", "loop"}},
      {"rfactor", {"loop", "factor_axis"}},
      {"blockize", {"target"}},
      {"tensorize", {"block_or_loop", "tensor_intrin"}},
      {"transform_layout", {"block", "buffer", "index_map", "pad_value", "assume_injective_transform"}},
      {"transform_block_layout", {"block", "index_map"}},
      {"add_unit_loop", {"block_or_loop"}},
      {"decompose_padding", {"block", "loop"}},
      {"set_axis_separator", {"block", "buffer", "axis_separators"}},
      {"loop_partition", {"loop", "factors"}},
      {"reindex", {"block", "buffer"}},
      {"pad_einsum", {"block", "padding"}},
  };
  ScheduleInstr out = ins;
  out.args.clear();
  std::vector<const ScheduleArg*> kws;
  // reorder / fuse take loops as varargs (TVM: `sch.reorder(*loops)`); a list written in
  // their place (`reorder([j, i])`, `fuse([i, j], k)`) means its items, in order.
  bool varargs = ins.primitive == "reorder" || ins.primitive == "fuse" || ins.primitive == "merge";
  for (auto& a : ins.args) {
    if (a.kind != ScheduleArg::Keyword) {
      if (!kws.empty()) refuse("a positional argument follows a keyword argument");
      if (varargs && a.kind == ScheduleArg::List) {
        for (auto& x : a.list) {
          if (x.kind == ScheduleArg::List) refuse("lists of loops may not be nested");
          out.args.push_back(x);
        }
        continue;
      }
      out.args.push_back(a);
    } else {
      kws.push_back(&a);
    }
  }
  // TVM's signature is compute_at(block, loop, preserve_unit_loops=False, index=-1): the
  // last two may be given positionally (`compute_at(b, l, True)`); they mean what the
  // keywords mean below.
  std::vector<ScheduleArg> positional_kws;
  auto is_flag = [](const ScheduleArg& a) {
    return a.kind == ScheduleArg::Int ||
           (a.kind == ScheduleArg::Ident && (a.text == "True" || a.text == "False"));
  };
  if ((ins.primitive == "compute_at" || ins.primitive == "reverse_compute_at") && out.args.size() > 2 &&
      out.args.size() <= 4 && is_flag(out.args[2]) &&
      (out.args.size() == 3 || out.args[3].kind == ScheduleArg::Int)) {
    static const char* const names[] = {"preserve_unit_loops", "index"};
    for (size_t i = 2; i < out.args.size(); ++i) {
      ScheduleArg k;
      k.kind = ScheduleArg::Keyword;
      k.text = names[i - 2];
      k.loc = out.args[i].loc;
      k.list.push_back(out.args[i]);
      positional_kws.push_back(k);
    }
    out.args.resize(2);
    std::vector<const ScheduleArg*> all;
    for (auto& k : positional_kws) all.push_back(&k);
    for (auto* k : kws) all.push_back(k);
    kws = all;
  }
  auto it = params.find(ins.primitive);
  // The sampling instructions read their own keywords (optional ones may be skipped).
  if (ins.primitive.rfind("sample_", 0) == 0) return ins;
  std::vector<ScheduleArg> trailing;
  for (auto* k : kws) {
    if (k->text == "preserve_unit_iters" || k->text == "preserve_unit_loops") continue;
    // Newer TVM prints `split(..., disable_predication=False)`; True is checked by split (only
    // factors that divide the extent need no predicate).
    if (k->text == "disable_predication" && ins.primitive == "split") {
      trailing.push_back(*k);
      continue;
    }
    // compute_at / reverse_compute_at `index=-1` is TVM's default placement (the one used here).
    // `index=-2` (TVM's first possible insertion point) is accepted too: any placement
    // between the producers and the consumers computes the same, and tirc places the block at
    // the only one its checks allow (compute_at: first in the loop body, reverse_compute_at:
    // last). An explicit position k >= 0 is passed on (the primitive checks TVM's rule: k lies
    // between the last producer and the first consumer in the loop body); other values are
    // refused by name rather than as an unknown keyword.
    if (k->text == "index" && (ins.primitive == "compute_at" || ins.primitive == "reverse_compute_at")) {
      bool is_int = !k->list.empty() && k->list[0].kind == ScheduleArg::Int;
      if (is_int && (k->list[0].int_value == -1 || k->list[0].int_value == -2)) continue;
      if (is_int && k->list[0].int_value >= 0) {
        trailing.push_back(*k);
        continue;
      }
      refuse("index=" + (is_int ? std::to_string(k->list[0].int_value) : std::string("...")) +
             " is not supported (only -1, -2 or a position in the loop body)");
    }
    if (k->list.empty()) refuse("keyword argument " + k->text + " has no value");
    if (it == params.end()) refuse("unknown keyword argument '" + k->text + "'");
    auto& names = it->second;
    // TVM <= 0.12 named blockize's parameter `loop` (0.13 renamed it `target`).
    const std::string key = ins.primitive == "blockize" && k->text == "loop" ? "target" : k->text;
    auto pos = std::find(names.begin(), names.end(), key);
    if (pos == names.end()) refuse("unknown keyword argument '" + k->text + "'");
    size_t idx = static_cast<size_t>(pos - names.begin());
    if (idx < out.args.size()) refuse("argument " + k->text + " is given twice");
    if (idx > out.args.size())
      refuse("keyword argument " + k->text + " given before the arguments preceding it");
    out.args.push_back(k->list[0]);
  }
  for (auto& t : trailing) out.args.push_back(t);
  return out;
}

static bool returns_list(const std::string& prim) {
  return prim == "get_loops" || prim == "get_child_blocks" || prim == "split" || prim == "get_producers" ||
         prim == "get_consumers" || prim == "loop_partition" || prim == "cache_inplace";
}

// How many handles `norm` (get_loops, get_child_blocks, get_producers, get_consumers or split)
// returns.
static size_t returned_count(ScheduleState& st, const ScheduleInstr& norm) {
  size_t n = 0;
  if (norm.primitive == "get_loops") {
    if (norm.args.size() != 1) refuse("expected 1 argument (block), got " + std::to_string(norm.args.size()));
    n = st.loops_above(arg_block(st, norm, 0).get()).size();
  } else if (norm.primitive == "get_child_blocks") {
    if (norm.args.size() != 1)
      refuse("expected 1 argument (block_or_loop), got " + std::to_string(norm.args.size()));
    n = child_blocks(st, norm).size();
  } else if (norm.primitive == "split" || norm.primitive == "loop_partition") {
    if (norm.args.size() < 2 || norm.args[1].kind != ScheduleArg::List)
      refuse("expected a list of factors as argument 2");
    n = norm.args[1].list.size();
    if (norm.primitive == "loop_partition") n = loop_partition_count(st, norm);  // may add a last part
  } else if (norm.primitive == "get_producers" || norm.primitive == "get_consumers") {
    n = producers_or_consumers(st, norm, norm.primitive == "get_producers").size();
  } else if (norm.primitive == "cache_inplace") {
    n = 2;  // the copy-in and copy-out blocks
  } else {
    refuse(
        "only get_loops, get_child_blocks, get_producers, get_consumers, split and cache_inplace return several "
        "handles; " +
        norm.primitive + "(...) cannot be indexed");
  }
  return n;
}

// Result names that do not clash with bound handles, one per returned handle: split names its
// new loops after them (`<base>_0`, `<base>_1`, ...).
static std::vector<std::string> hidden_names(const ScheduleState& st, const std::string& base, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string h = base + "_" + std::to_string(i);
    while (st.handles.count(h) || st.lists.count(h)) h += "_";
    out.push_back(h);
  }
  return out;
}

// `loops = get_loops(b)`, `parts = split(l, [None, 8])`: one name for several handles binds a
// list variable (lists.h). A single returned handle is bound as a handle (also a list of one).
static void apply_list_result(ScheduleState& st, PrimFn fn, ScheduleInstr norm, size_t n) {
  std::string name = norm.results[0];
  std::string base = name;
  // split's loops are named after the loop they replace (TVM: i_0, i_1).
  if (norm.primitive == "split" || norm.primitive == "loop_partition")
    base = arg_loop(st, norm, 0).as<ForNode>()->loop_var.name();
  norm.results = hidden_names(st, base, n);
  fn(st, norm);
  bind_list(st, name, norm.results);
}

// `l = prim(...)[k]` (TVM: `sch.get_loops(b)[-1]`): runs the instruction with one hidden
// name per returned handle and binds the k-th one (k < 0 counts from the end) to the result.
static void apply_indexed(ScheduleState& st, PrimFn fn, ScheduleInstr norm, int64_t k) {
  if (norm.results.size() != 1)
    refuse("an indexed result `" + norm.primitive + "(...)[" + std::to_string(k) +
           "]` binds exactly one name");
  size_t n = returned_count(st, norm);
  int64_t sn = static_cast<int64_t>(n);
  if (k < -sn || k >= sn)
    refuse("index " + std::to_string(k) + " is out of range: " + norm.primitive + " returns " +
           std::to_string(n) + " handle" + (n == 1 ? "" : "s"));
  size_t pick = static_cast<size_t>(k < 0 ? k + sn : k);
  std::string name = norm.results[0];
  // split names its new loops after the results: `jo = split(j, [None, 8])[0]` makes j_0, j_1.
  norm.results = hidden_names(st, name, n);
  fn(st, norm);
  Handle picked = st.handles.at(norm.results[pick]);
  picked.name = name;
  for (auto& h : norm.results) st.handles.erase(h);
  st.lists.erase(name);
  st.handles[name] = picked;
}

// Edit distance (insertions, deletions, substitutions) between two short names.
static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "unknown schedule primitive 'x'" with what to do: TVM's `sch.work_on("main")` selects the
// function, which a `schedule F` item already did; a near miss of a known name (a typo, or
// TVM's plural / singular) names it.
static std::string unknown_primitive(const std::string& name) {
  std::string msg = "unknown schedule primitive '" + name + "'";
  if (name == "work_on")
    return msg + " (a `schedule F { ... }` item already works on function F: remove this line)";
  std::string best;
  size_t best_d = 3;  // at most 2 edits, and fewer than half the name
  for (auto& [k, v] : table()) {
    size_t d = edit_distance(name, k);
    if (d < best_d && 2 * d < name.size()) best = k, best_d = d;
  }
  if (!best.empty()) msg += " (did you mean '" + best + "'?)";
  return msg;
}

// One instruction on `work` (the state itself: apply_instruction undoes it when refused).
static void apply_instruction_in(ScheduleState& work, const ScheduleInstr& ins) {
  if (ins.primitive.empty()) {  // `i, j, k = loops`: no call
    assign_list_value(work, ins);
    return;
  }
  auto it = table().find(ins.primitive);
  if (it == table().end()) refuse(unknown_primitive(ins.primitive));
  // List values in the arguments (`loops[0]`, `*loops`) become temporary handles.
  std::vector<std::string> temps;
  // The parser passes `prim(...)[k]` as the keyword __index=k.
  ScheduleInstr plain = resolve_list_args(work, substitute_sampled(work, ins), &temps);
  std::optional<int64_t> index;
  for (size_t i = 0; i < plain.args.size(); ++i) {
    auto& a = plain.args[i];
    if (a.kind == ScheduleArg::Keyword && a.text == "__index" && a.list.size() == 1 &&
        a.list[0].kind == ScheduleArg::Int) {
      index = a.list[0].int_value;
      plain.args.erase(plain.args.begin() + static_cast<long>(i));
      break;
    }
  }
  bool sampling = ins.primitive.rfind("sample_", 0) == 0;
  // A name bound by a primitive no longer names a sampled value or location.
  if (!sampling)
    for (auto& r : ins.results) {
      work.values.erase(r);
      work.value_lists.erase(r);
      work.location_marks.erase(r);
    }
  if (apply_location_mark(work, plain)) {
    for (auto& t : temps) work.handles.erase(t);
    return;
  }
  ScheduleInstr norm = normalize_keywords(plain);
  std::vector<std::string> results = norm.results;
  if (index) {
    apply_indexed(work, it->second, std::move(norm), *index);
  } else if (norm.results.size() == 1 && norm.results[0] != "_" && returns_list(norm.primitive)) {
    size_t n = returned_count(work, norm);
    if (norm.unpack && n != 1)
      refuse("cannot unpack the " + std::to_string(n) + " handles " + norm.primitive +
             " returns into 1 name");
    if (n == 1)
      it->second(work, norm);
    else
      apply_list_result(work, it->second, std::move(norm), n);
  } else {
    it->second(work, norm);
  }
  for (auto& t : temps)
    if (std::find(results.begin(), results.end(), t) == results.end()) work.handles.erase(t);
}

void apply_instruction(ScheduleState& st, const ScheduleInstr& ins) {
  // A refusal (or an unexpected error) never leaves a partial change: the function is put
  // back and the name maps undo their journaled writes. (Copying the whole state for every
  // instruction was quadratic in the number of handles.)
  FunctionNode saved = st.func;
  st.handles.begin_journal();
  st.lists.begin_journal();
  st.values.begin_journal();
  st.value_lists.begin_journal();
  st.location_marks.begin_journal();
  try {
    apply_instruction_in(st, ins);
  } catch (...) {
    st.func = std::move(saved);
    st.handles.rollback();
    st.lists.rollback();
    st.values.rollback();
    st.value_lists.rollback();
    st.location_marks.rollback();
    throw;
  }
  st.handles.commit();
  st.lists.commit();
  st.values.commit();
  st.value_lists.commit();
  st.location_marks.commit();
}
}  // namespace sched

std::vector<std::string> schedule_primitive_names() {
  std::vector<std::string> out;
  for (auto& [k, v] : table()) out.push_back(k);
  return out;
}

Function apply_schedule(const FunctionNode& f, const ScheduleItem& item,
                        const std::vector<IntrinItem>& intrins) {
  ScheduleState st(f);
  if (!intrins.empty()) st.intrins = std::make_shared<const std::vector<IntrinItem>>(intrins);
  for (auto& ins : item.instrs) {
    auto it = table().find(ins.primitive);
    if (!ins.primitive.empty() && it == table().end())
      throw SourceError(ins.loc.file, ins.loc.line, ins.loc.col, unknown_primitive(ins.primitive));
    try {
      apply_instruction(st, ins);
    } catch (const Refusal& r) {
      throw SourceError(ins.loc.file, ins.loc.line, ins.loc.col,
                        (ins.primitive.empty() ? "" : ins.primitive + ": ") + r.what());
    } catch (const SourceError&) {
      throw;
    } catch (const Error& e) {
      // An IR-level error from a helper: still report it at the instruction.
      throw SourceError(ins.loc.file, ins.loc.line, ins.loc.col,
                        (ins.primitive.empty() ? "" : ins.primitive + ": ") + e.what());
    }
  }
  return st.to_function();
}

Module apply_module_schedules(const Module& m, const std::string& only_func) {
  Module out = m;
  out.schedules.clear();
  out.order.clear();
  // Keep the item order, dropping applied schedules (and re-indexing the kept ones).
  std::vector<bool> applied(m.schedules.size(), false);
  for (size_t i = 0; i < m.schedules.size(); ++i) {
    const ScheduleItem& s = m.schedules[i];
    if (!only_func.empty() && s.func != only_func) continue;
    Function f = out.find_func(s.func);
    if (!f)
      throw SourceError(s.loc.file, s.loc.line, s.loc.col, "schedule for unknown function '" + s.func + "'");
    out.add_func(apply_schedule(*f, s, m.intrins));
    applied[i] = true;
  }
  for (auto& [kind, idx] : m.order) {
    if (kind == 1) {
      if (applied[idx]) continue;
      out.schedules.push_back(m.schedules[idx]);
      out.order.emplace_back(1, out.schedules.size() - 1);
    } else {
      out.order.emplace_back(kind, idx);
    }
  }
  return out;
}

}  // namespace tirc

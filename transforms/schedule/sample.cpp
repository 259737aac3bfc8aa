// MetaSchedule's sampling instructions, as printed traces replay them (TVM's
// Schedule.sample_perfect_tile / sample_categorical / sample_compute_location):
//   v0, v1 = sample_perfect_tile(loop=l, n=2, max_innermost_factor=64, decision=[4, 16])
//   v2 = sample_categorical(candidates=[0, 16, 64], probs=[0.3, 0.3, 0.4], decision=1)
//   l3 = sample_compute_location(block=b, decision=-1)
// A sampled integer is bound to a name in ScheduleState::values (a list of them, bound to one
// name, in value_lists); later instructions use it where an integer literal goes
// (`split(l, factors=[v0, v1])`, `annotate(b, "k", v2)`, `split(l, factors=fs)`):
// substitute_sampled replaces the names by their values before the instruction runs.
// A compute location is a loop handle, or one of TVM's marks "root" (compute_at does nothing)
// and "inline" (compute_at inlines the block, reverse_compute_at reverse-inlines it).
//
// Without `decision` the choice is deterministic (tirc does not search): the perfect tiling
// [1, ..., 1, extent / f, f] with f the largest divisor of the extent not above
// max_innermost_factor; the most probable candidate (the first of equals); the root location.
#include <algorithm>
#include <cmath>
#include <functional>

#include "transforms/schedule/lists.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// Arguments by TVM's parameter names, positional or keyword; unknown keywords are refused.
struct Args {
  std::vector<const ScheduleArg*> vals;
};

Args named_args(const ScheduleInstr& ins, const std::vector<std::string>& names, size_t required) {
  Args out;
  out.vals.assign(names.size(), nullptr);
  size_t pos = 0;
  bool seen_kw = false;
  for (auto& a : ins.args) {
    if (a.kind != ScheduleArg::Keyword) {
      if (seen_kw) refuse("a positional argument follows a keyword argument");
      if (pos >= names.size())
        refuse("expected at most " + std::to_string(names.size()) + " arguments, got " +
               std::to_string(ins.args.size()));
      out.vals[pos++] = &a;
      continue;
    }
    seen_kw = true;
    auto it = std::find(names.begin(), names.end(), a.text);
    if (it == names.end()) refuse("unknown keyword argument '" + a.text + "'");
    if (a.list.empty()) refuse("keyword argument " + a.text + " has no value");
    size_t k = static_cast<size_t>(it - names.begin());
    if (out.vals[k]) refuse("argument " + a.text + " is given twice");
    out.vals[k] = &a.list[0];
  }
  for (size_t k = 0; k < required; ++k)
    if (!out.vals[k]) refuse("missing argument " + names[k]);
  return out;
}

bool is_none(const ScheduleArg* a) { return !a || (a->kind == ScheduleArg::Ident && a->text == "None"); }

int64_t int_of(const ScheduleArg* a, const std::string& what) {
  if (a->kind != ScheduleArg::Int) refuse(what + " must be an integer");
  return a->int_value;
}

std::vector<int64_t> int_list(const ScheduleArg* a, const std::string& what) {
  if (a->kind != ScheduleArg::List) refuse(what + " must be a list of integers");
  std::vector<int64_t> out;
  for (auto& x : a->list) out.push_back(int_of(&x, what + " (each item)"));
  return out;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Binds sampled integers: one name per value, or one name for the list (`fs = sample_...`).
void bind_values(ScheduleState& st, const ScheduleInstr& ins, const std::vector<int64_t>& vals, bool single) {
  auto drop = [&](const std::string& n) {
    st.handles.erase(n);
    st.lists.erase(n);
    st.values.erase(n);
    st.value_lists.erase(n);
    st.location_marks.erase(n);
  };
  if (single) {
    if (ins.results.size() > 1)
      refuse("returns one value, but " + std::to_string(ins.results.size()) + " names are bound");
    if (ins.results.empty() || ins.results[0] == "_") return;
    drop(ins.results[0]);
    st.values[ins.results[0]] = vals[0];
    return;
  }
  if (ins.results.size() == 1 && vals.size() != 1 && !ins.unpack) {
    if (ins.results[0] == "_") return;
    drop(ins.results[0]);
    st.value_lists[ins.results[0]] = vals;
    return;
  }
  if (!ins.results.empty() && ins.results.size() != vals.size())
    refuse("returns " + std::to_string(vals.size()) + " values, but " + std::to_string(ins.results.size()) +
           " name" + (ins.results.size() == 1 ? " is" : "s are") + " bound");
  for (size_t i = 0; i < ins.results.size(); ++i) {
    if (ins.results[i] == "_") continue;
    drop(ins.results[i]);
    st.values[ins.results[i]] = vals[i];
  }
}

}  // namespace

void prim_sample_perfect_tile(ScheduleState& st, const ScheduleInstr& ins) {
  Args a = named_args(ins, {"loop", "n", "max_innermost_factor", "decision"}, 2);
  // Resolve the loop through the usual helper (stale / wrong-kind handles refused there).
  ScheduleInstr only_loop = ins;
  only_loop.args = {*a.vals[0]};
  Stmt ls = arg_loop(st, only_loop, 0);
  const ForNode* loop = ls.as<ForNode>();
  int64_t n = int_of(a.vals[1], "n");
  if (n < 1) refuse("n must be at least 1, got " + std::to_string(n));
  // TVM's default max_innermost_factor is 16; None / -1 mean no limit.
  int64_t max_inner = 16;
  if (a.vals[2] && !is_none(a.vals[2])) {
    max_inner = int_of(a.vals[2], "max_innermost_factor");
    if (max_inner == -1 || max_inner == 0) max_inner = INT64_MAX;
    if (max_inner < 0) refuse("max_innermost_factor must be positive, got " + std::to_string(max_inner));
  }
  int64_t ext;
  if (!is_const_int(fold(loop->extent), &ext))
    refuse("loop " + loop_name(ls) +
           " has a symbolic extent: no perfect tiling is known (split it with None, e.g. [None, 8])");
  std::vector<int64_t> tiles;
  if (!is_none(a.vals[3])) {
    tiles = int_list(a.vals[3], "decision");
    if (static_cast<int64_t>(tiles.size()) != n)
      refuse("decision " + list_text(tiles) + " has " + std::to_string(tiles.size()) + " factors, but n is " +
             std::to_string(n));
    int64_t prod = 1;
    for (int64_t t : tiles) {
      if (t <= 0)
        refuse("decision " + list_text(tiles) + ": factor " + std::to_string(t) + " is not positive");
      if (__builtin_mul_overflow(prod, t, &prod)) prod = INT64_MAX;
    }
    if (prod != ext)
      refuse("decision " + list_text(tiles) + " is not a perfect tiling of loop " + loop_name(ls) +
             " (extent " + std::to_string(ext) + ", product " + std::to_string(prod) + ")");
    if (tiles.back() > max_inner)
      refuse("decision " + list_text(tiles) + ": the innermost factor " + std::to_string(tiles.back()) +
             " exceeds max_innermost_factor " + std::to_string(max_inner));
  } else {
    // Deterministic default: the largest innermost factor allowed, the rest one level out.
    int64_t f = 1;
    for (int64_t d = 1; d <= ext && d <= max_inner; ++d)
      if (ext % d == 0) f = d;
    tiles.assign(static_cast<size_t>(n), 1);
    if (n == 1) {
      tiles[0] = ext;
    } else {
      tiles[n - 1] = f;
      tiles[n - 2] = ext / f;
    }
  }
  bind_values(st, ins, tiles, false);
}

void prim_sample_categorical(ScheduleState& st, const ScheduleInstr& ins) {
  Args a = named_args(ins, {"candidates", "probs", "decision"}, 2);
  std::vector<int64_t> cands = int_list(a.vals[0], "candidates");
  if (cands.empty()) refuse("candidates is empty");
  const ScheduleArg* pa = a.vals[1];
  if (pa->kind != ScheduleArg::List) refuse("probs must be a list of numbers");
  std::vector<double> probs;
  for (auto& x : pa->list) {
    if (x.kind == ScheduleArg::Float)
      probs.push_back(x.float_value);
    else if (x.kind == ScheduleArg::Int)
      probs.push_back(static_cast<double>(x.int_value));
    else
      refuse("probs must be a list of numbers");
    if (!(probs.back() >= 0) || !std::isfinite(probs.back()))
      refuse("probability " + list_arg_text(x) + " is negative or not finite");
  }
  if (probs.size() != cands.size())
    refuse("candidates has " + std::to_string(cands.size()) + " items but probs has " +
           std::to_string(probs.size()));
  size_t pick = 0;
  if (!is_none(a.vals[2])) {
    int64_t d = int_of(a.vals[2], "decision");
    if (d < 0 || d >= static_cast<int64_t>(cands.size()))
      refuse("decision " + std::to_string(d) + " is out of range: there are " + std::to_string(cands.size()) +
             " candidates");
    pick = static_cast<size_t>(d);
  } else {
    for (size_t i = 1; i < probs.size(); ++i)
      if (probs[i] > probs[pick]) pick = i;
  }
  bind_values(st, ins, {cands[pick]}, true);
}

void prim_sample_compute_location(ScheduleState& st, const ScheduleInstr& ins) {
  Args a = named_args(ins, {"block", "decision"}, 1);
  ScheduleInstr only_block = ins;
  only_block.args = {*a.vals[0]};
  Stmt b = arg_block(st, only_block, 0);
  int64_t d = is_none(a.vals[1]) ? -1 : int_of(a.vals[1], "decision");
  if (ins.results.size() > 1)
    refuse("returns one location, but " + std::to_string(ins.results.size()) + " names are bound");
  std::string name = ins.results.empty() ? "_" : ins.results[0];
  auto mark = [&](const std::string& m) {
    if (name == "_") return;
    st.handles.erase(name);
    st.lists.erase(name);
    st.values.erase(name);
    st.value_lists.erase(name);
    st.location_marks[name] = m;
  };
  if (d == -1) return mark("root");
  if (d == -2) return mark("inline");
  if (d < -2)
    refuse("decision " + std::to_string(d) + " is not a location (-2 inline, -1 root, or a loop index)");
  // As TVM's CollectComputeLocation: the index is into the loops of the first consumer.
  std::vector<Stmt> consumers = producers_or_consumers(st, only_block, false);
  if (consumers.empty())
    refuse("block " + block_of(b)->name +
           " has no consumer: its only locations are -1 (root) and -2 (inline)");
  std::vector<Stmt> loops = st.loops_above(consumers[0].get());
  if (d >= static_cast<int64_t>(loops.size()))
    refuse("decision " + std::to_string(d) + " is out of range: consumer " + block_of(consumers[0])->name +
           " has " + std::to_string(loops.size()) + " loops");
  Stmt loop = loops[static_cast<size_t>(d)];
  for (auto& c : consumers) {
    auto path = st.path_to(c.get());
    if (std::find_if(path.begin(), path.end(), [&](const Stmt& s) { return s.same_as(loop); }) == path.end())
      refuse("decision " + std::to_string(d) + ": loop " + loop_name(loop) + " does not enclose consumer " +
             block_of(c)->name);
  }
  if (name == "_") return;
  st.values.erase(name);
  st.value_lists.erase(name);
  st.location_marks.erase(name);
  st.lists.erase(name);
  st.handles[name] = Handle{Handle::LoopH, "", loop.as<ForNode>()->loop_var, name};
}

// Replaces names of sampled integers by their values (lists too, and `fs[k]`), in the
// arguments, their lists and keyword values.
static ScheduleArg subst(const ScheduleState& st, const ScheduleArg& a) {
  if (a.kind == ScheduleArg::Ident) {
    auto v = st.values.find(a.text);
    if (v != st.values.end()) {
      ScheduleArg r;
      r.kind = ScheduleArg::Int;
      r.int_value = v->second;
      r.loc = a.loc;
      return r;
    }
    auto l = st.value_lists.find(a.text);
    if (l != st.value_lists.end()) {
      ScheduleArg r;
      r.kind = ScheduleArg::List;
      r.loc = a.loc;
      for (int64_t x : l->second) {
        ScheduleArg i;
        i.kind = ScheduleArg::Int;
        i.int_value = x;
        i.loc = a.loc;
        r.list.push_back(i);
      }
      return r;
    }
    return a;
  }
  if (a.kind == ScheduleArg::Subscript && a.text.empty() && a.list.size() == 2 &&
      a.list[0].kind == ScheduleArg::Ident && st.value_lists.count(a.list[0].text)) {
    const auto& vals = st.value_lists.at(a.list[0].text);
    if (a.list[1].kind != ScheduleArg::Int)
      refuse("the index in " + list_arg_text(a) + " must be an integer literal");
    int64_t k = a.list[1].int_value, n = static_cast<int64_t>(vals.size());
    if (k < -n || k >= n)
      refuse("index " + std::to_string(k) + " is out of range: " + a.list[0].text + " has " +
             std::to_string(n) + " values");
    ScheduleArg r;
    r.kind = ScheduleArg::Int;
    r.int_value = vals[static_cast<size_t>(k < 0 ? k + n : k)];
    r.loc = a.loc;
    return r;
  }
  if (a.kind == ScheduleArg::Star && a.list.size() == 1 && a.list[0].kind == ScheduleArg::Ident &&
      st.value_lists.count(a.list[0].text))
    refuse("*" + a.list[0].text +
           ": a list of sampled values cannot be splatted into the arguments (pass it as one list)");
  if (a.kind == ScheduleArg::List || a.kind == ScheduleArg::Keyword) {
    ScheduleArg r = a;
    for (auto& x : r.list) x = subst(st, x);
    return r;
  }
  return a;
}

ScheduleInstr substitute_sampled(const ScheduleState& st, const ScheduleInstr& ins) {
  if (st.values.empty() && st.value_lists.empty()) return ins;
  ScheduleInstr out = ins;
  for (auto& a : out.args) a = subst(st, a);
  return out;
}

// compute_at / reverse_compute_at whose loop is a mark of sample_compute_location: "root"
// does nothing, "inline" inlines (TVM's ConcreteScheduleNode::ComputeAt / ReverseComputeAt).
// Returns true when handled. A mark passed to any other primitive is refused.
bool apply_location_mark(ScheduleState& st, const ScheduleInstr& ins) {
  if (st.location_marks.empty()) return false;
  bool at = ins.primitive == "compute_at" || ins.primitive == "reverse_compute_at";
  const ScheduleArg* loop = nullptr;
  const ScheduleArg* block = nullptr;
  size_t pos = 0;
  for (auto& a : ins.args) {
    if (a.kind == ScheduleArg::Keyword) {
      if (!a.list.empty() && a.text == "loop") loop = &a.list[0];
      if (!a.list.empty() && a.text == "block") block = &a.list[0];
      continue;
    }
    if (pos == 0) block = &a;
    if (pos == 1) loop = &a;
    ++pos;
  }
  std::function<void(const ScheduleArg&)> check = [&](const ScheduleArg& a) {
    if (at && &a == loop) return;
    if (a.kind == ScheduleArg::Ident && st.location_marks.count(a.text))
      refuse(a.text + " is the compute location \"" + st.location_marks.at(a.text) +
             "\" of sample_compute_location: only compute_at / reverse_compute_at take it");
    for (auto& x : a.list) check(x);
  };
  for (auto& a : ins.args) check(a);
  if (!at || !loop || loop->kind != ScheduleArg::Ident || !st.location_marks.count(loop->text)) return false;
  const std::string& m = st.location_marks.at(loop->text);
  if (!block) refuse("missing argument block");
  // Checks the block handle either way (a stale one is refused).
  ScheduleInstr b;
  b.primitive = ins.primitive == "compute_at" ? "compute_inline" : "reverse_compute_inline";
  b.args = {*block};
  b.loc = ins.loc;
  if (m == "root") {
    arg_block(st, b, 0);
    return true;
  }
  if (ins.primitive == "compute_at")
    prim_compute_inline(st, b);
  else
    prim_reverse_compute_inline(st, b);
  return true;
}

}  // namespace tirc::sched

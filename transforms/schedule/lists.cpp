#include "transforms/schedule/lists.h"

#include <algorithm>

namespace tirc::sched {

namespace {

std::string plural(size_t n) { return std::to_string(n) + " handle" + (n == 1 ? "" : "s"); }

// A resolved value: one handle (`list` false, one item) or a list of handles.
struct Value {
  bool list = false;
  std::vector<Handle> items;
  std::vector<std::string> item_texts;  // `loops[2]`, for messages and temporary names
  std::string text;
};

Value eval(const ScheduleState& st, const ScheduleArg& a);

Value eval_name(const ScheduleState& st, const std::string& name) {
  Value v;
  v.text = name;
  if (auto it = st.lists.find(name); it != st.lists.end()) {
    v.list = true;
    v.items = it->second;
    for (size_t i = 0; i < v.items.size(); ++i) v.item_texts.push_back(name + "[" + std::to_string(i) + "]");
    return v;
  }
  auto it = st.handles.find(name);
  if (it == st.handles.end()) refuse("unknown handle '" + name + "'");
  v.items.push_back(it->second);
  v.item_texts.push_back(name);
  return v;
}

// Python's slice bounds: the indices `lo:hi:step` selects from n items.
std::vector<size_t> slice_indices(int64_t n, const ScheduleArg* lo, const ScheduleArg* hi,
                                  const ScheduleArg* st) {
  auto given = [](const ScheduleArg* a) { return a && a->kind == ScheduleArg::Int; };
  int64_t step = given(st) ? st->int_value : 1;
  if (step == 0) refuse("slice step cannot be zero");
  auto clamp = [&](const ScheduleArg* a, int64_t dflt) {
    if (!given(a)) return dflt;
    int64_t v = a->int_value;
    if (v < 0) v += n;
    if (step > 0) return std::clamp<int64_t>(v, 0, n);
    return std::clamp<int64_t>(v, -1, n - 1);
  };
  std::vector<size_t> out;
  if (step > 0) {
    for (int64_t i = clamp(lo, 0), e = clamp(hi, n); i < e; i += step) out.push_back(static_cast<size_t>(i));
  } else {
    for (int64_t i = clamp(lo, n - 1), e = clamp(hi, -1); i > e; i += step)
      out.push_back(static_cast<size_t>(i));
  }
  return out;
}

Value eval(const ScheduleState& st, const ScheduleArg& a) {
  if (a.kind == ScheduleArg::Ident) return eval_name(st, a.text);
  if (a.kind == ScheduleArg::List && a.text != "(") {
    // `[b1, loops[0], *more]` written out: its items, a starred list's items in place.
    Value v;
    v.list = true;
    v.text = list_arg_text(a);
    for (auto& x : a.list) {
      bool star = x.kind == ScheduleArg::Star && !x.list.empty();
      Value item = eval(st, star ? x.list[0] : x);
      if (!star && item.items.size() != 1)
        refuse(item.text + " is a list of " + plural(item.items.size()) + " inside the list " + v.text +
               " (lists may not be nested; write *" + item.text + ")");
      for (size_t i = 0; i < item.items.size(); ++i) {
        v.items.push_back(item.items[i]);
        v.item_texts.push_back(item.item_texts[i]);
      }
    }
    return v;
  }
  if (a.kind != ScheduleArg::Subscript || a.list.size() < 2)
    refuse(list_arg_text(a) + " is not a handle or a list of handles");
  Value base = eval(st, a.list[0]);
  int64_t n = static_cast<int64_t>(base.items.size());
  Value v;
  v.text = list_arg_text(a);
  if (a.text != ":") {
    if (a.list[1].kind != ScheduleArg::Int) refuse("the index in " + v.text + " must be an integer literal");
    int64_t k = a.list[1].int_value;
    if (k < -n || k >= n)
      refuse("index " + std::to_string(k) + " is out of range: " + base.text +
             (base.list ? " has " + plural(base.items.size()) : " is one handle"));
    size_t pick = static_cast<size_t>(k < 0 ? k + n : k);
    v.items.push_back(base.items[pick]);
    v.item_texts.push_back(v.text);
    return v;
  }
  auto at = [&](size_t i) { return i < a.list.size() ? &a.list[i] : nullptr; };
  v.list = true;
  for (size_t i : slice_indices(n, at(1), at(2), at(3))) {
    v.items.push_back(base.items[i]);
    v.item_texts.push_back(base.item_texts[i]);
  }
  return v;
}

// A temporary handle bound to `h` under `name` (unless `name` is already that handle).
std::string temp_handle(ScheduleState& st, const Handle& h, const std::string& name,
                        std::vector<std::string>* temps) {
  auto it = st.handles.find(name);
  if (it != st.handles.end()) return name;  // a plain handle, already bound
  Handle t = h;
  t.name = name;
  st.handles[name] = t;
  temps->push_back(name);
  return name;
}

ScheduleArg ident(const std::string& name, const SourceLoc& loc) {
  ScheduleArg a;
  a.kind = ScheduleArg::Ident;
  a.text = name;
  a.loc = loc;
  return a;
}

bool is_list_valued(const ScheduleState& st, const ScheduleArg& a) {
  return a.kind == ScheduleArg::Subscript || a.kind == ScheduleArg::Star ||
         (a.kind == ScheduleArg::Ident && st.lists.count(a.text));
}

}  // namespace

std::string list_arg_text(const ScheduleArg& a) {
  switch (a.kind) {
    case ScheduleArg::Ident: return a.text;
    case ScheduleArg::String: return "\"" + a.text + "\"";
    case ScheduleArg::Int: return std::to_string(a.int_value);
    case ScheduleArg::Float: return a.text.empty() ? std::to_string(a.float_value) : a.text;
    case ScheduleArg::Wildcard: return "_";
    case ScheduleArg::List: {
      std::string s = "[";
      for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + list_arg_text(a.list[i]);
      return s + "]";
    }
    case ScheduleArg::Keyword: return a.text + "=" + (a.list.empty() ? "_" : list_arg_text(a.list[0]));
    case ScheduleArg::Subscript: {
      if (a.list.empty()) return "?";
      auto b = [&](size_t i) {
        return i < a.list.size() && a.list[i].kind != ScheduleArg::Wildcard ? list_arg_text(a.list[i]) : "";
      };
      if (a.text != ":") return list_arg_text(a.list[0]) + "[" + b(1) + "]";
      return list_arg_text(a.list[0]) + "[" + b(1) + ":" + b(2) + (b(3).empty() ? "" : ":" + b(3)) + "]";
    }
    case ScheduleArg::Star: return "*" + (a.list.empty() ? std::string("?") : list_arg_text(a.list[0]));
    case ScheduleArg::Lambda: return "lambda";
  }
  return "?";
}

void assign_list_value(ScheduleState& st, const ScheduleInstr& ins) {
  if (ins.args.size() != 1 || ins.results.empty()) refuse("expected names = a list of handles");
  Value v = eval(st, ins.args[0]);
  auto bind = [&](const std::string& name, const Handle& h) {
    if (name == "_") return;
    Handle b = h;
    b.name = name;
    st.lists.erase(name);
    st.handles[name] = b;
  };
  if (ins.results.size() == 1 && ins.unpack && v.items.size() != 1)
    refuse("cannot unpack " + v.text + " (" + (v.list ? plural(v.items.size()) : "one handle") +
           ") into 1 name");
  if (ins.results.size() == 1) {
    const std::string& name = ins.results[0];
    if (name == "_") return;
    if (!v.list) {
      bind(name, v.items[0]);
      return;
    }
    st.handles.erase(name);
    st.lists[name] = v.items;
    return;
  }
  if (v.items.size() != ins.results.size())
    refuse("cannot unpack " + v.text + " (" + (v.list ? plural(v.items.size()) : "one handle") + ") into " +
           std::to_string(ins.results.size()) + " names");
  // Read every item before binding: `a, b = b, a`-like rebinding of the list's own name.
  std::vector<Handle> items = v.items;
  for (size_t i = 0; i < items.size(); ++i) bind(ins.results[i], items[i]);
}

// Whether argument `pos` (or keyword `kw`) of `prim` is a list of blocks, so that a list
// variable given there (`blocks = [b1, b2]; blockize(blocks)`) stays a list.
static bool takes_list(const std::string& prim, size_t pos, const std::string& kw) {
  if (prim == "blockize") return kw.empty() ? pos == 0 : kw == "target";
  if (prim == "cache_read" || prim == "cache_write") return kw.empty() ? pos == 3 : kw == "consumer_blocks";
  return false;
}

ScheduleInstr resolve_list_args(ScheduleState& st, const ScheduleInstr& ins,
                                std::vector<std::string>* temps) {
  // reorder / fuse take loops as varargs: a list argument means its items.
  bool varargs = ins.primitive == "reorder" || ins.primitive == "fuse";
  ScheduleInstr out = ins;
  out.args.clear();
  // One handle from a value; a list of several where one is expected is an error.
  auto single = [&](const ScheduleArg& a) {
    Value v = eval(st, a);
    if (v.items.size() != 1)
      refuse(v.text + " is a list of " + plural(v.items.size()) +
             " where one handle is expected (pick one, e.g. " + v.text + "[0])");
    // A one-handle list used as its handle keeps the list's name in messages.
    return ident(
        temp_handle(st, v.items[0], v.list && a.kind == ScheduleArg::Ident ? v.text : v.item_texts[0], temps),
        a.loc);
  };
  auto items_of = [&](const ScheduleArg& a) {
    Value v = eval(st, a);
    std::vector<ScheduleArg> r;
    for (size_t i = 0; i < v.items.size(); ++i)
      r.push_back(ident(temp_handle(st, v.items[i], v.item_texts[i], temps), a.loc));
    return r;
  };
  for (auto& a : ins.args) {
    if (a.kind == ScheduleArg::Star) {
      if (a.list.empty()) refuse("* needs a list");
      for (auto& x : items_of(a.list[0])) out.args.push_back(x);
      continue;
    }
    if (a.kind == ScheduleArg::Keyword) {
      ScheduleArg k = a;
      if (!k.list.empty() && is_list_valued(st, k.list[0])) {
        if (k.list[0].kind == ScheduleArg::Star)
          refuse("*" + list_arg_text(k.list[0].list[0]) + " as a keyword value");
        Value v = eval(st, k.list[0]);
        if (v.list && takes_list(ins.primitive, 0, k.text)) {
          ScheduleArg l;
          l.kind = ScheduleArg::List;
          l.loc = k.list[0].loc;
          l.list = items_of(k.list[0]);
          k.list[0] = std::move(l);
        } else {
          k.list[0] = single(k.list[0]);
        }
      }
      out.args.push_back(std::move(k));
      continue;
    }
    if (a.kind == ScheduleArg::List) {
      // `reorder([loops[1], loops[0]])`, `reorder([*loops])`: the items resolved in place.
      ScheduleArg l = a;
      l.list.clear();
      for (auto& x : a.list) {
        if (x.kind == ScheduleArg::Star && !x.list.empty()) {
          for (auto& y : items_of(x.list[0])) l.list.push_back(y);
        } else if (x.kind == ScheduleArg::Subscript) {
          Value v = eval(st, x);
          if (v.list) {
            ScheduleArg nested;
            nested.kind = ScheduleArg::List;
            nested.loc = x.loc;
            nested.list = items_of(x);
            l.list.push_back(nested);
          } else {
            l.list.push_back(single(x));
          }
        } else {
          l.list.push_back(x);
        }
      }
      out.args.push_back(std::move(l));
      continue;
    }
    if (!is_list_valued(st, a)) {
      out.args.push_back(a);
      continue;
    }
    Value v = eval(st, a);
    if ((varargs || takes_list(ins.primitive, out.args.size(), "")) && v.list) {
      ScheduleArg l;
      l.kind = ScheduleArg::List;
      l.loc = a.loc;
      l.list = items_of(a);
      out.args.push_back(std::move(l));
    } else {
      out.args.push_back(single(a));
    }
  }
  return out;
}

void bind_list(ScheduleState& st, const std::string& name, const std::vector<std::string>& hidden) {
  std::vector<Handle> items;
  for (auto& h : hidden) {
    Handle x = st.handles.at(h);
    x.name = name;
    items.push_back(x);
  }
  for (auto& h : hidden) st.handles.erase(h);
  st.handles.erase(name);
  st.lists[name] = std::move(items);
}

}  // namespace tirc::sched

// Factor lists of split / loop_partition (factors.h).
#include "transforms/schedule/factors.h"

namespace tirc::sched {

const ScheduleArg& factor_list_arg(const ScheduleInstr& ins) {
  auto pos = positional(ins);
  const ScheduleArg* fl = kwarg(ins, "factors");
  if (!fl) {
    if (pos.size() != 2) refuse("expected 2 arguments (loop, [factors]), got " + std::to_string(pos.size()));
    fl = pos[1];
  } else if (pos.size() != 1) {
    refuse("expected 1 positional argument (the loop), got " + std::to_string(pos.size()));
  }
  return *fl;
}

FactorList parse_factors(const ScheduleArg& fl, const std::string& example) {
  if (fl.kind != ScheduleArg::List) refuse("the factors must be a list, e.g. " + example);
  size_t n = fl.list.size();
  if (n < 2) refuse("needs at least 2 factors, got " + std::to_string(n));
  FactorList out;
  out.values.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const ScheduleArg& a = fl.list[k];
    // TVM spells the inferred factor None.
    if (a.kind == ScheduleArg::Wildcard || (a.kind == ScheduleArg::Ident && a.text == "None")) {
      if (out.wild >= 0) refuse("at most one factor may be inferred (_ or None)");
      out.wild = static_cast<int>(k);
    } else if (a.kind == ScheduleArg::Int) {
      if (a.int_value <= 0) refuse("factor " + std::to_string(a.int_value) + " is not positive");
      out.values[k] = a.int_value;
    } else {
      refuse("a factor must be a positive integer or _");
    }
  }
  return out;
}

std::vector<Var> piece_vars(const ScheduleState& st, const ScheduleInstr& ins, const ForNode& loop,
                            size_t n) {
  std::vector<Var> vars;
  std::set<std::string> used = used_var_names(st);
  std::set<std::string> mine;  // names of the pieces made so far
  for (size_t k = 0; k < n; ++k) {
    std::string base = k < ins.results.size() && ins.results[k] != "_"
                           ? ins.results[k]
                           : loop.loop_var.name() + "_" + std::to_string(k);
    if (mine.count(base)) base += "_" + std::to_string(k);
    // fresh_var_name adds the name to `used`: later pieces avoid it too.
    std::string name = fresh_var_name(used, base);
    mine.insert(name);
    vars.emplace_back(name, loop.loop_var.dtype());
  }
  return vars;
}

}  // namespace tirc::sched

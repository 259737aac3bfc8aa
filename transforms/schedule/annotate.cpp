// annotate(block_or_loop, "key", VALUE): TVM Schedule.annotate. Annotations never change
// what is computed; VALUE is an int, float or string literal, kept as its text.
#include <cstdio>

#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_annotate(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 3, 3);
  expect_results(ins, 0);
  const Handle& h = arg_handle(st, ins, 0);
  std::string key = arg_string(ins, 1, "the annotation key");
  if (key.empty()) refuse("the annotation key is empty");
  const ScheduleArg& v = ins.args[2];
  std::string text;
  switch (v.kind) {
    case ScheduleArg::Int: text = std::to_string(v.int_value); break;
    case ScheduleArg::Float: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.float_value);
      text = buf;
      if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
      break;
    }
    case ScheduleArg::String: {
      text = "\"";
      for (char c : v.text) {
        if (c == '"' || c == '\\') text += '\\';
        text += c;
      }
      text += "\"";
      break;
    }
    default:
      // Python's booleans (`annotate(l, "pragma_unroll_explicit", True)`, outsider round 18).
      if (v.kind == ScheduleArg::Ident && (v.text == "True" || v.text == "False"))
        refuse("the annotation value must be an int, float or string literal (write " +
               std::string(v.text == "True" ? "1" : "0") + " for " + v.text + ")");
      refuse("the annotation value must be an int, float or string literal");
  }
  if (h.kind == Handle::LoopH) {
    Stmt ls = arg_loop(st, ins, 0);
    auto* f = ls.as<ForNode>();
    Annotations a = f->annotations;
    a[key] = text;
    st.replace(ls.get(), make_for(f->loop_var, f->min, f->extent, f->for_kind, f->body, f->thread_tag, a));
  } else {
    Stmt bs = arg_block(st, ins, 0);
    st.replace(bs.get(), update_realize(bs, [&](BlockRealizeNode& r) {
                 r.block = update_block(r.block, [&](BlockNode& n) { n.annotations[key] = text; });
               }));
  }
}

}  // namespace tirc::sched

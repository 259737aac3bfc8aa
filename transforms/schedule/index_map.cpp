#include "transforms/schedule/index_map.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "ir/printer.h"
#include "transforms/schedule/util.h"

namespace tirc::sched {

// Integer evaluation of an index map result at one point (params -> vals). The map was
// checked by `check_evaluable` first.
int64_t eval_index(const Expr& e, const std::vector<const VarNode*>& vars, const std::vector<int64_t>& vals) {
  switch (e.kind()) {
    case ExprKind::IntImm: return e.as<IntImmNode>()->value;
    case ExprKind::Var:
      for (size_t i = 0; i < vars.size(); ++i)
        if (vars[i] == e.get()) return vals[i];
      return 0;
    case ExprKind::Cast: return eval_index(e.as<CastNode>()->value, vars, vals);
    case ExprKind::Unary: return -eval_index(e.as<UnaryNode>()->a, vars, vals);
    case ExprKind::Binary: {
      auto* b = e.as<BinaryNode>();
      int64_t x = eval_index(b->a, vars, vals), y = eval_index(b->b, vars, vals);
      switch (b->op) {
        case BinOp::Add: return x + y;
        case BinOp::Sub: return x - y;
        case BinOp::Mul: return x * y;
        case BinOp::FloorDiv: {
          int64_t q = x / y;
          return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
        }
        case BinOp::FloorMod: {
          int64_t r = x % y;
          return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
        }
        case BinOp::Min: return std::min(x, y);
        case BinOp::Max: return std::max(x, y);
        default: return 0;
      }
    }
    default: return 0;
  }
}

void check_index_map(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::Var: return;
    case ExprKind::Cast:
      if (!is_int(e.dtype())) break;
      return check_index_map(e.as<CastNode>()->value);
    case ExprKind::Unary:
      if (e.as<UnaryNode>()->op != UnOp::Neg) break;
      return check_index_map(e.as<UnaryNode>()->a);
    case ExprKind::Binary: {
      auto* b = e.as<BinaryNode>();
      switch (b->op) {
        case BinOp::FloorDiv:
        case BinOp::FloorMod: {
          int64_t c;
          if (!is_const_int(b->b, &c) || c <= 0)
            refuse("the index map divides by " + print_expr(b->b) + " (only positive constant divisors)");
          [[fallthrough]];
        }
        case BinOp::Add:
        case BinOp::Sub:
        case BinOp::Mul:
        case BinOp::Min:
        case BinOp::Max:
          check_index_map(b->a);
          check_index_map(b->b);
          return;
        default: break;
      }
      break;
    }
    default: break;
  }
  refuse("the index map uses " + print_expr(e) +
         " (supported: + - * // % min max of the indices and constants)");
}

// The buffer argument: ("read", k), ("write", k) or a name.
Buffer block_buffer_arg(const BlockNode& b, const ScheduleArg& a) {
  if (a.kind == ScheduleArg::String) {
    for (auto& r : b.reads)
      if (r.buffer->name == a.text) return r.buffer;
    for (auto& w : b.writes)
      if (w.buffer->name == a.text) return w.buffer;
    refuse("block " + b.name + " does not access a buffer named " + a.text);
  }
  if (a.kind != ScheduleArg::List || a.list.size() != 2 || a.list[0].kind != ScheduleArg::String ||
      a.list[1].kind != ScheduleArg::Int)
    refuse("the buffer is given as (\"read\", INDEX), (\"write\", INDEX) or a buffer name");
  const std::string& which = a.list[0].text;
  int64_t idx = a.list[1].int_value;
  std::vector<Buffer> cands;
  if (which == "read") {
    for (auto& r : b.reads)
      if (!block_writes(b, r.buffer)) cands.push_back(r.buffer);
  } else if (which == "write") {
    for (auto& w : b.writes) cands.push_back(w.buffer);
  } else {
    refuse("unknown buffer kind \"" + which + "\" (expected \"read\" or \"write\")");
  }
  if (idx < 0 || idx >= static_cast<int64_t>(cands.size()))
    refuse("block " + b.name + " has " + std::to_string(cands.size()) + " " + which + " region" +
           (cands.size() == 1 ? "" : "s") + (which == "read" ? " of buffers it does not write" : "") +
           "; index " + std::to_string(idx) + " is out of range");
  return cands[static_cast<size_t>(idx)];
}

MapImage map_image(const std::vector<Var>& params, const std::vector<Expr>& results,
                   const std::vector<int64_t>& domain) {
  MapImage r;
  std::vector<const VarNode*> vars;
  for (auto& p : params) vars.push_back(p.get());
  int64_t total = 1;
  for (auto v : domain) total = v <= 0 ? 0 : (total > (int64_t{1} << 22) ? total : total * v);
  r.points = total;
  if (total > (int64_t{1} << 22)) {
    r.too_big = true;
    return r;
  }
  size_t nd = results.size();
  r.lo.assign(nd, INT64_MAX);
  r.hi.assign(nd, INT64_MIN);
  std::vector<int64_t> pt(vars.size(), 0);
  auto each_point = [&](const std::function<bool()>& f) {
    if (total == 0) return;
    std::fill(pt.begin(), pt.end(), 0);
    for (;;) {
      if (!f()) return;
      size_t d = pt.size();
      for (;;) {
        if (d == 0) return;
        --d;
        if (++pt[d] < domain[d]) break;
        pt[d] = 0;
      }
    }
  };
  each_point([&] {
    for (size_t k = 0; k < nd; ++k) {
      int64_t v = eval_index(results[k], vars, pt);
      r.lo[k] = std::min(r.lo[k], v);
      r.hi[k] = std::max(r.hi[k], v);
    }
    return true;
  });
  if (total == 0) return r;
  int64_t box = 1;
  for (size_t k = 0; k < nd; ++k) {
    if (r.lo[k] < 0) return r;  // the caller refuses negative indices
    if (r.hi[k] + 1 > (int64_t{1} << 24) || box > (int64_t{1} << 24) / (r.hi[k] + 1)) {
      r.too_big = true;
      return r;
    }
    box *= r.hi[k] + 1;
  }
  r.box_points = box;
  std::vector<bool> seen(static_cast<size_t>(box), false);
  each_point([&] {
    int64_t flat = 0;
    for (size_t k = 0; k < nd; ++k) flat = flat * (r.hi[k] + 1) + eval_index(results[k], vars, pt);
    if (seen[static_cast<size_t>(flat)]) {
      r.injective = false;
      r.clash = pt;
      return false;
    }
    seen[static_cast<size_t>(flat)] = true;
    return true;
  });
  return r;
}

}  // namespace tirc::sched

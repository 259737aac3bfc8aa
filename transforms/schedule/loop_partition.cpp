// loop_partition(loop, [f0, f1, ...]): TVM Schedule.loop_partition (newer TVM). Like split,
// but the parts become sibling loops run one after the other: `for i in serial(0, f0)`, then
// `for i in serial(f0, f0 + f1)`, ... (one factor may be `_` / None: what remains of the
// extent). Returns the new loops (a list), named as split names its loops. The same iterations
// run in the same order, so it is always legal; each part keeps the loop's kind. The first part
// keeps the blocks and inner loops of the loop (their handles name them); the other parts
// hold copies with fresh loop vars and blocks renamed `<block>_<k>` (k = the part's index,
// made unique). Refused: a thread-bound loop (each part would need its own binding), a
// symbolic extent, parts that add up to more than the extent, a non-positive part. Given parts
// that add up to less than the extent get a last part with the rest, as in TVM
// (`factors=[2, 1, 64]` on 128: [0, 2), [2, 3), [3, 67), [67, 128)). TVM's names of the blocks
// of part k, `<block>_<loop><k>`, are recorded as aliases that get_block accepts.
#include <set>

#include "ir/mutator.h"
#include "transforms/schedule/factors.h"
#include "transforms/schedule/prims.h"

namespace tirc::sched {

namespace {

// A copy of a subtree with fresh loop vars and fresh block names.
class Copier : public IRMutator {
 public:
  Copier(const ScheduleState& st, size_t k, std::set<std::string>* taken) : st_(st), k_(k), taken_(taken) {}
  std::vector<std::pair<std::string, std::string>> renamed;  // (original, copy) block names

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt r = IRMutator::mutate_for(n, s);
    auto* f = r.as<ForNode>();
    Var nv(f->loop_var.name(), f->loop_var.dtype());
    Stmt body = substitute(f->body, std::unordered_map<const VarNode*, Expr>{{f->loop_var.get(), nv}});
    return make_for(nv, f->min, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }
  Block mutate_block(const Block& b) override {
    Block nb = IRMutator::mutate_block(b);
    return update_block(nb, [&](BlockNode& n) {
      std::string base = n.name + "_" + std::to_string(k_), name = st_.fresh_block_name(base);
      for (int j = 1; taken_->count(name); ++j) name = st_.fresh_block_name(base + "_" + std::to_string(j));
      taken_->insert(name);
      renamed.emplace_back(b->name, name);
      n.name = name;
    });
  }

 private:
  const ScheduleState& st_;
  size_t k_;
  std::set<std::string>* taken_;
};

}  // namespace

// The parts of `loop_partition(loop, factors)`: the given ones, the inferred one filled in,
// and the rest of the extent as a last part when the given ones add up to less (TVM).
static std::vector<int64_t> partition_parts(const ScheduleState& st, const ScheduleInstr& ins) {
  const ScheduleArg& fl = factor_list_arg(ins);
  Stmt ls = arg_loop(st, ins, 0);
  const ForNode* loop = ls.as<ForNode>();
  FactorList factors = parse_factors(fl, "[8, _]");
  if (loop->for_kind == ForKind::ThreadBinding)
    refuse("loop " + loop_name(ls) + " is bound to " + loop->thread_tag + "; partition it before binding it");
  int64_t ext;
  if (!is_const_int(fold(loop->extent), &ext))
    refuse("loop " + loop_name(ls) + " has a symbolic extent (the parts must add up to it)");
  int wild = factors.wild;
  std::vector<int64_t> parts = factors.values;
  int64_t sum = 0;
  for (int64_t p : parts)
    if (__builtin_add_overflow(sum, p, &sum))
      refuse("the parts add up to more than the extent " + std::to_string(ext) + " of loop " + loop_name(ls));
  if (wild >= 0) {
    if (sum >= ext)
      refuse("the given parts add up to " + std::to_string(sum) + ", leaving nothing of the extent " +
             std::to_string(ext) + " of loop " + loop_name(ls) + " for the inferred one");
    parts[static_cast<size_t>(wild)] = ext - sum;
  } else if (sum > ext) {
    refuse("the parts add up to " + std::to_string(sum) + ", more than the extent " + std::to_string(ext) +
           " of loop " + loop_name(ls));
  } else if (sum < ext) {
    parts.push_back(ext - sum);  // the rest, as TVM
  }
  return parts;
}

size_t loop_partition_count(const ScheduleState& st, const ScheduleInstr& ins) {
  return partition_parts(st, ins).size();
}

void prim_loop_partition(ScheduleState& st, const ScheduleInstr& ins) {
  Stmt ls = arg_loop(st, ins, 0);
  const ForNode* loop = ls.as<ForNode>();
  std::vector<int64_t> parts = partition_parts(st, ins);
  size_t n = parts.size();
  expect_results(ins, n);
  DType t = loop->extent.dtype();
  std::vector<Var> vars = piece_vars(st, ins, *loop, n);
  std::set<std::string> taken;
  std::vector<Stmt> items;
  std::vector<std::pair<std::string, std::string>> aliases;  // TVM name -> block name
  // TVM's name of a block: its own, or the alias an earlier partition gave it (the longest).
  auto tvm_name = [&](const std::string& b) {
    std::string best = b;
    for (auto& [alias, actual] : st.partition_aliases)
      if (actual == b && alias.size() > best.size()) best = alias;
    return best;
  };
  int64_t off = 0;
  for (size_t k = 0; k < n; ++k) {
    std::string suffix = "_" + loop->loop_var.name() + std::to_string(k);
    Stmt body;
    if (k == 0) {
      body = loop->body;
      for (auto& b : collect_blocks(body, true))
        aliases.emplace_back(tvm_name(block_of(b)->name) + suffix, block_of(b)->name);
    } else {
      Copier c(st, k, &taken);
      body = c.mutate(loop->body);
      for (auto& [orig, copy] : c.renamed) aliases.emplace_back(tvm_name(orig) + suffix, copy);
    }
    body = substitute(body, std::unordered_map<const VarNode*, Expr>{{loop->loop_var.get(), vars[k]}});
    Expr lo = fold(loop->min + make_int(off, t));
    items.push_back(make_for(vars[k], lo, make_int(parts[k], t), loop->for_kind, body, loop->thread_tag,
                             loop->annotations));
    off += parts[k];
  }
  st.replace(ls.get(), make_seq(items));
  for (auto& [alias, actual] : aliases)
    if (!st.find_block(alias).defined()) st.partition_aliases[alias] = actual;
  for (size_t k = 0; k < n; ++k) bind_loop(st, ins, k, vars[k]);
}

}  // namespace tirc::sched

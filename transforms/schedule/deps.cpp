#include "transforms/schedule/deps.h"

namespace tirc::sched {

void check_self_dependence(const Stmt& s, const std::string& what) {
  for (auto& bs : collect_blocks(s, false)) {
    const BlockNode* b = block_of(bs);
    for (auto& w : b->writes) {
      for (auto& r : b->reads) {
        if (!r.buffer.same_as(w.buffer)) continue;
        // Dimensions indexed only by scan iter vars may differ: that is the scan's ordered
        // dependence, which the loop-binding checks protect.
        auto scan_only = [&](const Range& x) {
          bool any_other = false;
          auto check = [&](const Expr& e) {
            any_other = any_other || uses_var(e, [&](const VarNode* v) {
                          for (auto& iv : b->iter_vars)
                            if (iv.var.get() == v) return iv.kind != IterKind::Scan;
                          return true;
                        });
          };
          check(x.begin);
          if (!x.is_point()) check(x.end);
          return !any_other;
        };
        bool same = r.ranges.size() == w.ranges.size();
        for (size_t d = 0; same && d < r.ranges.size(); ++d) {
          const Range &x = r.ranges[d], &y = w.ranges[d];
          same = (x.is_point() == y.is_point() && prove_eq(x.begin, y.begin) && (x.is_point() || prove_eq(x.end, y.end))) ||
                 (scan_only(x) && scan_only(y));
        }
        if (!same)
          refuse(what + ": block " + b->name + " reads buffer " + w.buffer->name +
                 " at other elements than it writes, so its iterations depend on each other");
      }
    }
  }
}

void check_blocks_independent(const Stmt& s, const std::string& what) {
  if (has_loose_effects(s)) refuse(what + " has statements outside blocks");
  if (has_extern_call(s)) refuse(what + " contains call_extern, whose effects are unknown");
  auto blocks = collect_blocks(s, false);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockNode* a = block_of(blocks[i]);
    for (size_t j = 0; j < blocks.size(); ++j) {
      if (i == j) continue;
      const BlockNode* b = block_of(blocks[j]);
      for (auto& buf : written_buffers(*a)) {
        bool local = false;
        for (auto& al : a->allocs) local = local || al.same_as(buf);
        if (local) continue;
        if (block_reads(*b, buf) || block_writes(*b, buf))
          refuse(what + " has blocks " + a->name + " and " + b->name + " that both access buffer " + buf->name + " (" +
                 a->name + " writes it)");
      }
    }
  }
}

void check_loop_bindings(const Stmt& s, const ForNode* loop, bool allow_reduce, const std::string& what) {
  for (auto& bs : collect_blocks(s, false)) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      if (!uses_var(br->bindings[i], loop->loop_var.get())) continue;
      IterKind k = b->iter_vars[i].kind;
      if (k == IterKind::Spatial || (allow_reduce && k == IterKind::Reduce)) continue;
      refuse(what + ": loop " + loop->loop_var.name() + " is bound to the " + iter_kind_name(k) + " iter var " +
             b->iter_vars[i].var.name() + " of block " + b->name);
    }
    // The loop may also appear in the predicate only; that is harmless.
  }
}

}  // namespace tirc::sched

namespace tirc::sched {

namespace {

struct Access {
  const BlockNode* block;
  std::vector<std::optional<SymRange>> dims;  // relaxed per dimension, in terms of outer vars
};

}  // namespace

void check_iterations_independent(const ScheduleState&, const Stmt& loop_s, const std::string& prim) {
  auto* loop = loop_s.as<ForNode>();
  const std::string what = "loop " + loop->loop_var.name();
  if (has_loose_effects(loop->body)) refuse(what + " has statements outside blocks");
  if (has_extern_call(loop->body)) refuse(what + " contains call_extern, whose effects are unknown");
  check_loop_bindings(loop->body, loop, false, prim);
  check_self_dependence(loop->body, what);
  auto blocks = collect_blocks(loop->body, false);
  if (blocks.size() < 2) return;
  // Accesses of each buffer by each block, relaxed over loops inside `loop`.
  std::map<const BufferNode*, std::vector<Access>> acc;
  std::map<const BufferNode*, std::vector<const BlockNode*>> writers;
  for (auto& bs : blocks) {
    const BlockRealizeNode* br = realize(bs);
    const BlockNode* b = br->block.get();
    SymRangeMap inner;
    auto path = find_path(loop->body, bs.get());
    for (auto& p : path) {
      auto* f = p.as<ForNode>();
      if (!f) continue;
      SymRange r{f->min, fold(f->min + f->extent - make_int(1, f->extent.dtype()))};
      if (auto lo = relax(r.lo, inner)) r.lo = lo->lo;
      if (auto hi = relax(r.hi, inner)) r.hi = hi->hi;
      inner[f->loop_var.get()] = r;
    }
    std::unordered_map<const VarNode*, Expr> sub;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) sub[b->iter_vars[i].var.get()] = br->bindings[i];
    auto add = [&](const BufferRegion& r, bool write) {
      Access a{b, {}};
      for (auto& rg : r.ranges) {
        Expr lo = substitute(rg.begin, sub);
        Expr hi = rg.is_point() ? lo : fold(substitute(rg.end, sub) - make_int(1, rg.end.dtype()));
        auto x = relax(lo, inner), y = relax(hi, inner);
        if (x && y) a.dims.push_back(SymRange{x->lo, y->hi});
        else a.dims.push_back(std::nullopt);
      }
      acc[r.buffer.get()].push_back(a);
      if (write) writers[r.buffer.get()].push_back(b);
    };
    for (auto& r : b->reads) add(r, false);
    for (auto& r : b->writes) add(r, true);
  }
  for (auto& [buf, list] : writers) {
    auto& all = acc[buf];
    bool shared = false;
    for (auto& a : all) shared = shared || a.block != list[0];
    if (!shared) continue;
    // Look for a dimension that partitions every access by the loop.
    size_t nd = all[0].dims.size();
    bool ok = false;
    for (size_t d = 0; d < nd && !ok; ++d) {
      int64_t coef = 0;
      bool good = true;
      std::optional<int64_t> lo_min, hi_max;
      for (auto& a : all) {
        if (!a.dims[d]) {
          good = false;
          break;
        }
        auto llo = to_linear(a.dims[d]->lo), lhi = to_linear(a.dims[d]->hi);
        if (!llo || !lhi) {
          good = false;
          break;
        }
        int64_t c1 = llo->coef_of(loop->loop_var.get()), c2 = lhi->coef_of(loop->loop_var.get());
        if (c1 == 0 || c1 != c2 || (coef != 0 && c1 != coef)) {
          good = false;
          break;
        }
        coef = c1;
        // Remove the loop term: the rest must be the same symbolic part up to constants.
        Expr rest_lo = fold(a.dims[d]->lo - make_int(c1, a.dims[d]->lo.dtype()) * loop->loop_var);
        Expr rest_hi = fold(a.dims[d]->hi - make_int(c1, a.dims[d]->hi.dtype()) * loop->loop_var);
        Expr base = fold(all[0].dims[d]->lo - make_int(c1, rest_lo.dtype()) * loop->loop_var);
        auto dl = to_linear(fold(rest_lo - base)), dh = to_linear(fold(rest_hi - base));
        if (!dl || !dh || !dl->terms.empty() || !dh->terms.empty()) {
          good = false;
          break;
        }
        lo_min = lo_min ? std::min(*lo_min, dl->c) : dl->c;
        hi_max = hi_max ? std::max(*hi_max, dh->c) : dh->c;
      }
      if (good && *hi_max - *lo_min < std::abs(coef)) ok = true;
    }
    if (!ok) {
      std::string names;
      for (auto& a : all)
        if (names.find(a.block->name) == std::string::npos) names += (names.empty() ? "" : ", ") + a.block->name;
      refuse(what + ": blocks " + names + " share buffer " + buf->name +
             " across its iterations (no dimension of it is partitioned by the loop)");
    }
  }
}

}  // namespace tirc::sched

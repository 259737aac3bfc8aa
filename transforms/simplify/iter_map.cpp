#include "transforms/simplify/iter_map.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ir/visitor.h"
#include "transforms/simplify/const_fold.h"
#include "transforms/simplify/linear.h"
#include "transforms/simplify/simplify.h"

namespace tirc {

namespace {

struct Fail {
  std::string msg;
};

bool const_of(const Expr& e, int64_t* v) { return is_const_int(e, v); }

class IterMapRewriter {
 public:
  IterMapRewriter(const std::vector<IterDom>& iters, const VarRanges& known) : an_(known) {
    an_.set_assume_no_overflow(true);
    for (auto& d : iters) {
      auto m = std::make_shared<IterMarkNode>();
      m->var = d.var;
      m->min = d.min.defined() ? an_.simplify(d.min) : make_int(0, d.var.dtype());
      m->extent = an_.simplify(d.extent);
      marks_[d.var.get()] = m;
      if (d.extent.defined()) an_.bind(d.var, m->min, d.extent);
    }
  }

  // ---- rewriting
  IterSum rewrite(const Expr& e) {
    if (!uses_iters(e)) return {{}, an_.simplify(e)};
    DType t = e.dtype();
    switch (e.kind()) {
      case ExprKind::Var: {
        auto& m = marks_.at(static_cast<const VarNode*>(e.get()));
        int64_t ext;
        if (const_of(m->extent, &ext) && ext == 1) return {{}, m->min};
        return {{IterSplit{m, one(t), m->extent, one(t)}}, m->min};
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        switch (n->op) {
          case BinOp::Add: return add(rewrite(n->a), rewrite(n->b), 1);
          case BinOp::Sub: return add(rewrite(n->a), rewrite(n->b), -1);
          case BinOp::Mul: {
            IterSum a = rewrite(n->a), b = rewrite(n->b);
            if (a.args.empty()) return scale(b, a.base);
            if (b.args.empty()) return scale(a, b.base);
            throw Fail{"product of two iterator expressions is not affine"};
          }
          case BinOp::FloorDiv:
          case BinOp::FloorMod: {
            IterSum b = rewrite(n->b);
            int64_t c;
            if (!b.args.empty() || !const_of(an_.simplify(b.base), &c) || c <= 0)
              throw Fail{"division of an iterator by a non-constant or non-positive divisor"};
            return divmod(rewrite(n->a), c, n->op == BinOp::FloorDiv, t);
          }
          default: break;
        }
        break;
      }
      case ExprKind::Unary:
        if (e.as<UnaryNode>()->op == UnOp::Neg)
          return scale(rewrite(e.as<UnaryNode>()->a), make_imm_int(t, -1));
        break;
      default: break;
    }
    throw Fail{"binding is not an affine expression of the loop iterators"};
  }

  // Normalizes a sum to at most one split (fusing several) + base.
  IterSum normalize(const IterSum& s) {
    if (s.args.size() <= 1) return s;
    return {{fuse(s.args)}, s.base};
  }

  void add_predicate(const Expr& pred) {
    if (!pred.defined()) return;
    int64_t v;
    if (const_of(pred, &v) && v) return;
    auto* b = pred.as<BinaryNode>();
    if (b && b->op == BinOp::And) {
      add_predicate(b->a);
      add_predicate(b->b);
      return;
    }
    if (!b || (b->op != BinOp::LT && b->op != BinOp::LE))
      throw Fail{"unsupported predicate (expected affine < constant)"};
    int64_t c;
    if (!const_of(an_.simplify(b->b), &c)) throw Fail{"unsupported predicate (bound is not a constant)"};
    if (b->op == BinOp::LE) ++c;
    IterSum s = normalize(rewrite(b->a));
    int64_t base;
    if (s.args.size() != 1 || !const_of(an_.simplify(s.base), &base)) throw Fail{"unsupported predicate"};
    const IterSplit& sp = s.args[0];
    int64_t lf, ext, sc;
    if (!const_of(sp.lower_factor, &lf) || !const_of(sp.extent, &ext) || !const_of(sp.scale, &sc) ||
        lf != 1 || sc != 1)
      throw Fail{"unsupported predicate (not a whole fused iterator)"};
    int64_t mext;
    if (!const_of(sp.source->extent, &mext) || mext != ext)
      throw Fail{"unsupported predicate (partial iterator)"};
    int64_t bound = c - base;
    if (bound >= ext) return;  // always true
    if (bound <= 0) throw Fail{"predicate is always false"};
    const_cast<IterMarkNode*>(sp.source.get())->extent = make_imm_int(sp.extent.dtype(), bound);
  }

  // ---- checks
  std::string check(const std::vector<IterSum>& sums, IterMapLevel level, const std::vector<IterDom>& iters) {
    // Uses of each mark: (lower_factor, extent) pairs, including the sources of used fused marks.
    std::map<const IterMarkNode*, std::vector<std::pair<int64_t, int64_t>>> uses;
    std::vector<const IterMarkNode*> order;
    std::vector<IterMark> work;
    auto use = [&](const IterSplit& s) -> std::string {
      int64_t lf, ext, sc;
      if (!const_of(s.scale, &sc)) {
        if (!an_.can_prove(make_binary(BinOp::GT, s.scale, make_int(0, s.scale.dtype()))))
          return "iterator with a non-constant scale";
      } else if (sc <= 0) {
        return "iterator with a negative scale";
      }
      if (!const_of(s.lower_factor, &lf)) return "non-constant split factor";
      if (!const_of(s.extent, &ext)) {
        // A whole symbolic iterator: fine when it is the entire mark.
        if (lf == 1 && expr_identical(s.extent, s.source->extent))
          ext = -1;
        else
          return "non-constant split extent";
      }
      const IterMarkNode* m = s.source.get();
      if (!uses.count(m)) {
        order.push_back(m);
        if (m->sum) work.push_back(s.source);
      }
      uses[m].push_back({lf, ext});
      return "";
    };
    for (auto& sum : sums)
      for (auto& a : sum.args)
        if (auto e = use(a); !e.empty()) return e;
    while (!work.empty()) {
      IterMark m = work.back();
      work.pop_back();
      for (auto& a : m->sum->args)
        if (auto e = use(a); !e.empty()) return e;
    }
    for (auto* m : order) {
      auto& u = uses[m];
      std::sort(u.begin(), u.end());
      int64_t mext = -1;
      bool const_ext = const_of(m->extent, &mext);
      if (u.size() == 1 && u[0].second == -1) continue;  // whole symbolic iterator
      int64_t expect = 1;
      for (auto& [lf, ext] : u) {
        if (ext == -1) return "symbolic iterator used in pieces";
        if (lf < expect) return "iterator " + mark_name(m) + " is used more than once (overlapping splits)";
        if (lf % expect != 0) return "iterator " + mark_name(m) + " is split inconsistently";
        if (level == IterMapLevel::Bijective && lf != expect)
          return "iterator " + mark_name(m) + " is not fully covered";
        expect = lf * ext;
      }
      if (const_ext && expect > mext && !(u.size() == 1 && u[0].first == 1))
        return "splits of " + mark_name(m) + " exceed its extent";
      if (level == IterMapLevel::Bijective) {
        if (!const_ext || expect != mext) return "iterator " + mark_name(m) + " is not fully covered";
      }
    }
    if (level == IterMapLevel::Bijective) {
      for (auto& d : iters) {
        auto& m = marks_.at(d.var.get());
        int64_t ext;
        if (const_of(m->extent, &ext) && ext == 1) continue;
        if (!uses.count(m.get())) return "loop iterator " + d.var.name() + " is not used by the bindings";
      }
    }
    return "";
  }

 private:
  static Expr one(DType t) { return make_imm_int(t, 1); }

  std::string mark_name(const IterMarkNode* m) { return m->var.defined() ? m->var.name() : "(fused)"; }

  bool uses_iters(const Expr& e) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind() == ExprKind::Var && marks_.count(static_cast<const VarNode*>(x.get()))) found = true;
    });
    return found;
  }

  bool same_split_source(const IterSplit& a, const IterSplit& b) {
    return a.source == b.source && an_.can_prove_equal(a.lower_factor, b.lower_factor) &&
           an_.can_prove_equal(a.extent, b.extent);
  }

  IterSum add(IterSum a, const IterSum& b, int64_t sign) {
    DType t = a.base.dtype();
    for (auto& sb : b.args) {
      Expr sc = sign == 1 ? sb.scale : an_.simplify(make_binary(BinOp::Mul, sb.scale, make_imm_int(t, -1)));
      bool merged = false;
      for (size_t i = 0; i < a.args.size(); ++i)
        if (same_split_source(a.args[i], sb)) {
          a.args[i].scale = an_.simplify(make_binary(BinOp::Add, a.args[i].scale, sc));
          if (is_zero(a.args[i].scale)) a.args.erase(a.args.begin() + static_cast<long>(i));
          merged = true;
          break;
        }
      if (!merged) a.args.push_back({sb.source, sb.lower_factor, sb.extent, sc});
    }
    a.base = an_.simplify(make_binary(sign == 1 ? BinOp::Add : BinOp::Sub, a.base, b.base));
    return a;
  }

  IterSum scale(IterSum a, const Expr& c) {
    if (is_zero(an_.simplify(c))) return {{}, make_imm_int(a.base.dtype(), 0)};
    for (auto& s : a.args) s.scale = an_.simplify(make_binary(BinOp::Mul, s.scale, c));
    a.base = an_.simplify(make_binary(BinOp::Mul, a.base, c));
    return a;
  }

  // base divisible by c (as an affine form with constant coefficients)?
  bool divisible(const Expr& base, int64_t c) {
    SumForm f = to_sum_form(base);
    if (as_signed(f.constant, f.dtype) % c != 0) return false;
    for (auto& t : f.terms)
      if (as_signed(t.coeff, f.dtype) % c != 0) return false;
    return true;
  }

  IterSum divmod(const IterSum& a0, int64_t c, bool is_div, DType t) {
    Expr cc = make_imm_int(t, c);
    if (a0.args.empty())
      return {{}, an_.simplify(make_binary(is_div ? BinOp::FloorDiv : BinOp::FloorMod, a0.base, cc))};
    IterSum a = normalize(a0);
    IterSplit s = a.args[0];
    Expr base = a.base;
    if (!divisible(base, c)) {
      // Only a base that keeps the split within one period is fine: (x + b) with 0 <= x + b < c.
      throw Fail{"offset of a split iterator is not a multiple of the divisor"};
    }
    Expr new_base = is_div ? an_.simplify(make_binary(BinOp::FloorDiv, base, cc)) : make_imm_int(t, 0);
    int64_t sc, ext;
    if (!const_of(s.scale, &sc) || sc <= 0)
      throw Fail{"split of an iterator with a non-constant or negative scale"};
    if (sc % c == 0) {
      if (!is_div) return {{}, make_imm_int(t, 0)};
      s.scale = make_imm_int(t, sc / c);
      return {{s}, new_base};
    }
    if (c % sc != 0) throw Fail{"divisor does not divide (nor is divided by) the iterator scale"};
    int64_t c2 = c / sc;
    if (!const_of(s.extent, &ext)) throw Fail{"split of an iterator with a symbolic extent"};
    if (ext <= c2) {
      // The whole split lies within one period.
      if (is_div) return {{}, new_base};
      return {{s}, new_base};
    }
    if (ext % c2 != 0)
      throw Fail{"iterator extent " + std::to_string(ext) + " is not divisible by " + std::to_string(c2)};
    if (is_div) {
      IterSplit r{s.source, an_.simplify(make_binary(BinOp::Mul, s.lower_factor, make_imm_int(t, c2))),
                  make_imm_int(t, ext / c2), one(t)};
      return {{r}, new_base};
    }
    IterSplit r{s.source, s.lower_factor, make_imm_int(t, c2), s.scale};
    return {{r}, new_base};
  }

  // Fuses splits with scales forming a mixed radix (s0, s0*e0, s0*e0*e1, ...) into one.
  IterSplit fuse(const std::vector<IterSplit>& args) {
    DType t = args[0].scale.dtype();
    std::vector<int64_t> sc(args.size()), ex(args.size());
    int64_t base_scale = INT64_MAX;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!const_of(args[i].scale, &sc[i]) || sc[i] <= 0)
        throw Fail{"cannot fuse iterators with non-constant or negative scales"};
      if (!const_of(args[i].extent, &ex[i])) throw Fail{"cannot fuse iterators with symbolic extents"};
      base_scale = std::min(base_scale, sc[i]);
    }
    std::vector<size_t> chain;
    std::vector<bool> used(args.size(), false);
    int64_t expect = base_scale;
    for (size_t k = 0; k < args.size(); ++k) {
      size_t found = args.size();
      for (size_t i = 0; i < args.size(); ++i)
        if (!used[i] && sc[i] == expect) {
          if (found != args.size()) throw Fail{"two iterators with the same scale " + std::to_string(expect)};
          found = i;
        }
      if (found == args.size())
        throw Fail{"iterators do not fuse: no iterator with scale " + std::to_string(expect)};
      used[found] = true;
      chain.push_back(found);
      expect *= ex[found];
    }
    int64_t total = expect / base_scale;
    // All pieces of one mark, contiguous: this is a plain (larger) split of that mark.
    bool same = true;
    int64_t lf0;
    if (!const_of(args[chain[0]].lower_factor, &lf0)) same = false;
    int64_t lf_expect = lf0;
    for (size_t k = 0; same && k < chain.size(); ++k) {
      const IterSplit& s = args[chain[k]];
      int64_t lf;
      if (s.source != args[chain[0]].source || !const_of(s.lower_factor, &lf) || lf != lf_expect)
        same = false;
      lf_expect = lf * ex[chain[k]];
    }
    if (same)
      return {args[chain[0]].source, args[chain[0]].lower_factor, make_imm_int(t, total),
              make_imm_int(t, base_scale)};
    IterSum src;
    src.base = make_imm_int(t, 0);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      IterSplit s = args[*it];
      s.scale = make_imm_int(t, sc[*it] / base_scale);
      src.args.push_back(s);
    }
    // Reuse a structurally identical fused mark so that k // 4 and k % 4 of the same fused
    // k refer to one mark.
    for (auto& m : fused_)
      if (same_sum(*m->sum, src)) return {m, one(t), m->extent, make_imm_int(t, base_scale)};
    auto m = std::make_shared<IterMarkNode>();
    m->sum = src;
    m->extent = make_imm_int(t, total);
    fused_.push_back(m);
    return {m, one(t), m->extent, make_imm_int(t, base_scale)};
  }

  bool same_sum(const IterSum& a, const IterSum& b) {
    if (a.args.size() != b.args.size()) return false;
    for (size_t i = 0; i < a.args.size(); ++i)
      if (!same_split_source(a.args[i], b.args[i]) || !an_.can_prove_equal(a.args[i].scale, b.args[i].scale))
        return false;
    return true;
  }

  Analyzer an_;
  std::unordered_map<const VarNode*, std::shared_ptr<IterMarkNode>> marks_;
  std::vector<std::shared_ptr<IterMarkNode>> fused_;
};

}  // namespace

IterMapResult detect_iter_map(const std::vector<Expr>& bindings, const std::vector<IterDom>& iters,
                              const Expr& predicate, IterMapLevel level, const VarRanges& known) {
  IterMapResult res;
  try {
    for (auto& d : iters)
      if (!d.var.defined() || !d.extent.defined())
        throw Fail{"input iterator without a variable or an extent"};
    IterMapRewriter rw(iters, known);
    rw.add_predicate(predicate);
    for (auto& b : bindings) {
      if (!is_int(b.dtype())) throw Fail{"binding is not an integer expression"};
      res.indices.push_back(rw.normalize(rw.rewrite(b)));
    }
    res.error = rw.check(res.indices, level, iters);
  } catch (const Fail& f) {
    res.error = f.msg;
  }
  if (!res.ok()) res.indices.clear();
  return res;
}

Expr iter_mark_to_expr(const IterMark& m) {
  if (m->var.defined()) return is_zero(m->min) ? Expr(m->var) : make_binary(BinOp::Sub, m->var, m->min);
  return iter_sum_to_expr(*m->sum);
}

Expr iter_split_to_expr(const IterSplit& s) {
  Expr e = iter_mark_to_expr(s.source);
  if (!is_one(s.lower_factor)) e = floordiv(e, s.lower_factor);
  if (!expr_identical(s.extent, s.source->extent) || !is_one(s.lower_factor)) e = floormod(e, s.extent);
  if (!is_one(s.scale)) e = e * s.scale;
  return e;
}

Expr iter_sum_to_expr(const IterSum& s) {
  Expr e;
  for (auto& a : s.args) e = e.defined() ? e + iter_split_to_expr(a) : iter_split_to_expr(a);
  if (!e.defined()) return s.base;
  if (s.base.defined() && !is_zero(s.base)) e = e + s.base;
  return e;
}

std::optional<std::vector<Expr>> inverse_iter_map(const IterMapResult& map, const std::vector<IterDom>& iters,
                                                  const std::vector<Expr>& outputs,
                                                  const VarRanges& output_ranges) {
  if (!map.ok() || outputs.size() != map.indices.size()) return std::nullopt;
  // Value of each split, then of each mark = sum(split value * lower_factor). A fused mark
  // passes its value down to its own splits once every use of it has been accounted for.
  std::unordered_map<const IterMarkNode*, IterMark> seen;
  std::unordered_map<const IterMarkNode*, int> expected, received;
  std::unordered_map<const IterMarkNode*, Expr> mark_val;
  std::vector<IterMark> stack;
  auto reach = [&](const IterSplit& sp) {
    const IterMarkNode* m = sp.source.get();
    if (!seen.count(m)) {
      seen[m] = sp.source;
      stack.push_back(sp.source);
    }
    ++expected[m];
  };
  for (auto& s : map.indices)
    for (auto& a : s.args) reach(a);
  while (!stack.empty()) {
    IterMark m = stack.back();
    stack.pop_back();
    if (m->sum)
      for (auto& a : m->sum->args) reach(a);
  }
  std::vector<std::pair<IterSplit, Expr>> work;
  std::unordered_map<const IterMarkNode*, std::vector<std::pair<int64_t, Expr>>> contrib;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const IterSum& s = map.indices[k];
    if (s.args.empty()) continue;
    const IterSplit& sp = s.args[0];
    Expr v = make_binary(BinOp::Sub, outputs[k], s.base);
    if (!is_one(sp.scale)) v = floordiv(v, sp.scale);
    work.push_back({sp, v});
  }
  while (!work.empty()) {
    auto [sp, v] = work.back();
    work.pop_back();
    const IterMarkNode* m = sp.source.get();
    int64_t lf = 0;
    is_const_int(sp.lower_factor, &lf);
    contrib[m].push_back({lf, is_one(sp.lower_factor) ? v : v * sp.lower_factor});
    if (++received[m] == expected[m]) {
      // Most significant piece first: y0*4 + y1.
      auto& c = contrib[m];
      std::stable_sort(c.begin(), c.end(), [](auto& x, auto& y) { return x.first > y.first; });
      for (auto& [f, term] : c) mark_val[m] = mark_val[m].defined() ? mark_val[m] + term : term;
    }
    if (received[m] == expected[m] && m->sum) {
      for (auto& child : m->sum->args) {
        Expr cv = mark_val[m];
        if (!is_one(child.scale)) cv = floordiv(cv, child.scale);
        cv = floormod(cv, child.extent);
        work.push_back({child, cv});
      }
    }
  }
  std::vector<Expr> res;
  for (auto& d : iters) {
    const IterMarkNode* m = nullptr;
    for (auto& [k, mk] : seen)
      if (mk->var.defined() && mk->var.same_as(d.var)) m = k;
    if (!m) {
      Interval ext = const_int_bound(d.extent);
      if (ext.is_point() && ext.lo == 1) {
        res.push_back(d.min);
        continue;
      }
      return std::nullopt;
    }
    res.push_back(simplify(make_binary(BinOp::Add, mark_val[m], d.min), output_ranges));
  }
  return res;
}

}  // namespace tirc

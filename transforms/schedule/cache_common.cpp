#include "transforms/schedule/cache_common.h"

#include "ir/printer.h"
#include "transforms/schedule/coverage.h"

namespace tirc::sched {

std::string cache_scope(const ScheduleInstr& ins, size_t i) {
  std::string s = arg_string(ins, i, "the storage scope");
  if (s != "global" && s != "shared" && s != "local")
    refuse("unknown storage scope \"" + s + "\" (expected global, shared or local)");
  return s;
}

int root_position(const ScheduleState& st, const Stmt& item) {
  auto items = seq_items(block_of(st.body())->body);
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].same_as(item)) return static_cast<int>(i);
  return -1;
}

void insert_root_item(ScheduleState& st, size_t pos, const Stmt& s) {
  Stmt rb = block_of(st.body())->body;
  auto items = seq_items(rb);
  if (pos > items.size()) refuse("internal: insertion point out of range");
  items.insert(items.begin() + static_cast<long>(pos), s);
  st.set_body(update_realize(st.body(), [&](BlockRealizeNode& r) {
    r.block = update_block(r.block, [&](BlockNode& n) { n.body = make_seq(items); });
  }));
}

Expr non_guard_conjunct(const BlockRealizeNode& r) {
  if (!r.predicate.defined()) return Expr();
  for (auto& cj : conjuncts(fold(r.predicate))) {
    auto* lt = cj.as<BinaryNode>();
    bool guard = false;
    for (size_t i = 0; lt && lt->op == BinOp::LT && i < r.bindings.size() && !guard; ++i) {
      const Expr& ext = r.block->iter_vars[i].extent;
      Expr bf = fold(r.bindings[i]);  // kept alive: dv points into it
      guard = prove_eq(lt->a, bf) && prove_eq(lt->b, fold(ext));
      auto* dv = bf.as<BinaryNode>();
      if (!guard && dv && dv->op == BinOp::FloorDiv)
        guard = prove_eq(lt->a, dv->a) && prove_eq(lt->b, fold(dv->b * ext));
    }
    if (!guard) return cj;
  }
  return Expr();
}

namespace {

// The first element the copy reads that `written` lacks (its indices), nullopt when none;
// unknown (outer nullopt) when box_of's box cannot be enumerated.
std::optional<std::optional<std::vector<int64_t>>> first_missing(const Buffer& A,
                                                                 const std::vector<bool>& written,
                                                                 const BlockNode* box_of,
                                                                 const std::vector<Expr>* load_idx) {
  std::vector<int64_t> shape;
  for (auto& e : A->shape) {
    int64_t n = 0;
    is_const_int(e, &n);
    shape.push_back(n);
  }
  auto unflatten = [&](int64_t off) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = off % shape[d];
      off /= shape[d];
    }
    return idx;
  };
  if (!box_of) {
    for (size_t off = 0; off < written.size(); ++off)
      if (!written[off]) return std::optional<std::vector<int64_t>>(unflatten(static_cast<int64_t>(off)));
    return std::optional<std::vector<int64_t>>();
  }
  std::vector<int64_t> ext;
  int64_t points = 1;
  for (auto& iv : box_of->iter_vars) {
    int64_t n;
    if (!is_const_int(iv.extent, &n) || n < 0) return std::nullopt;
    ext.push_back(n);
    points *= std::max<int64_t>(n, 1);
    if (points > (int64_t{1} << 18)) return std::nullopt;
  }
  for (int64_t n : ext)
    if (n == 0) return std::optional<std::vector<int64_t>>();  // an empty box reads nothing
  std::unordered_map<const VarNode*, int64_t> env;
  for (int64_t p = 0; p < points; ++p) {
    int64_t q = p;
    for (size_t k = ext.size(); k-- > 0;) {
      env[box_of->iter_vars[k].var.get()] = q % ext[k];
      q /= ext[k];
    }
    std::vector<int64_t> idx;
    for (auto& e : *load_idx) {
      auto v = eval_int(e, env);
      if (!v) return std::nullopt;
      idx.push_back(*v);
    }
    int64_t off = element_offset(A, idx);
    if (off < 0 || !written[static_cast<size_t>(off)]) return std::optional<std::vector<int64_t>>(idx);
  }
  return std::optional<std::vector<int64_t>>();
}

}  // namespace

void check_writers_cover(const ScheduleState& st, const Buffer& A, const std::string& what,
                         const BlockNode* box_of, const std::vector<Expr>* load_idx) {
  if (st.is_param(A)) return;
  auto writers = writers_of(st, A);
  if (writers.empty()) return;  // the function itself reads A uninitialised (not ours to judge)
  // A writer under a condition other than a bound guard, the first one found.
  Stmt first;
  Expr cond;
  bool all_conditioned = true;
  for (auto& w : writers) {
    Expr c = non_guard_conjunct(*realize(w));
    if (!c.defined()) {
      all_conditioned = false;
      continue;
    }
    if (!first.defined()) {
      first = w;
      cond = c;
    }
  }
  // Point by point when possible: complementary conditions (`where i < 4`, `where i >= 4`) write
  // every element; an unconditioned writer of a diagonal (pad_einsum of `X[v, v]`) does not.
  if (auto written = written_elements(st, A)) {
    if (auto miss = first_missing(A, *written, box_of, load_idx)) {
      if (!miss->has_value()) return;
      if (!all_conditioned) {
        std::string names, idx;
        for (size_t i = 0; i < writers.size(); ++i) names += (i ? ", " : "") + block_of(writers[i])->name;
        for (size_t d = 0; d < (*miss)->size(); ++d) idx += (d ? ", " : "") + std::to_string((**miss)[d]);
        refuse(std::string(writers.size() > 1 ? "blocks " : "block ") + names + " write" +
               (writers.size() > 1 ? "" : "s") + " only part of buffer " + A->name + " (not " + A->name +
               "[" + idx + "]), and " + what + " would read the elements " +
               (writers.size() > 1 ? "they skip" : "it skips"));
      }
    }
  }
  // Refused when every writer skips points: a writer without such a condition (decompose_padding's
  // constant fill beside its in-bounds copy `where h >= 1 && ...`) is taken to write the buffer,
  // if it stores it whole (not under an `if`, not at computed indices).
  if (all_conditioned && first.defined())
    refuse("block " + block_of(first)->name + " writes buffer " + A->name + " under the condition " +
           print_expr(cond) + ", and " + what + " would read the elements it skips");
  for (auto& w : writers)
    if (!non_guard_conjunct(*realize(w)).defined() && stores_whole_buffer(st, w, A)) return;
  std::string names;
  for (size_t i = 0; i < writers.size(); ++i) names += (i ? ", " : "") + block_of(writers[i])->name;
  refuse(std::string(writers.size() > 1 ? "blocks " : "block ") + names + " store" + (writers.size() > 1 ? "" : "s") +
         " buffer " + A->name + " under conditions or at computed indices, and " + what +
         " could read elements " + (writers.size() > 1 ? "they skip" : "it skips"));
}

}  // namespace tirc::sched

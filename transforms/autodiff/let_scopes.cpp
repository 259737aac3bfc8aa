#include "transforms/autodiff/let_scopes.h"

#include "ir/mutator.h"

namespace tirc::ad {

namespace {

// The statements of `list` from `from` on as one statement in the parser's form: a LetStmt
// met before the end takes everything after it into its body.
Stmt canonical(const std::vector<Stmt>& list, size_t from) {
  std::vector<Stmt> out;
  for (size_t i = from; i < list.size(); ++i) {
    auto* l = list[i].as<LetStmtNode>();
    if (!l || i + 1 == list.size()) {
      out.push_back(list[i]);
      continue;
    }
    std::vector<Stmt> rest;
    if (auto* s = l->body.as<SeqNode>())
      rest = s->stmts;
    else
      rest.push_back(l->body);
    rest.insert(rest.end(), list.begin() + static_cast<std::ptrdiff_t>(i) + 1, list.end());
    out.push_back(make_let_stmt(l->var, l->value, canonical(rest, 0)));
    break;
  }
  return make_seq(out);
}

struct Nest : IRMutator {
  Stmt mutate_seq(const SeqNode* n, const Stmt& s) override {
    Stmt m = IRMutator::mutate_seq(n, s);
    auto* q = m.as<SeqNode>();
    if (!q) return m;
    bool needed = false;
    for (size_t i = 0; i + 1 < q->stmts.size(); ++i) needed = needed || q->stmts[i].as<LetStmtNode>();
    return needed ? canonical(q->stmts, 0) : m;
  }
};

}  // namespace

Stmt nest_let_scopes(const Stmt& s) { return Nest().mutate(s); }

}  // namespace tirc::ad

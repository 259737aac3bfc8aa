// Refusal messages that name what the user wrote: see user_names.h.
#include "transforms/autodiff/user_names.h"

#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"

namespace tirc::ad {
namespace {

// Names of blocks and buffers of a function, with the source positions of the stores of each
// block (its own body and init, not nested blocks).
struct Names : IRVisitor {
  std::set<std::string> blocks, buffers;
  std::map<std::string, std::vector<std::string>> store_locs;  // block -> "file:line:col"
  std::map<std::string, std::vector<std::string>> store_bufs;  // block -> buffers it stores
  std::vector<std::string> open;
  void visit_block(const BlockNode* n) override {
    blocks.insert(n->name);
    for (auto& b : n->allocs) buffers.insert(b->name);
    open.push_back(n->name);
    IRVisitor::visit_block(n);
    open.pop_back();
  }
  void visit_store(const StoreNode* n) override {
    buffers.insert(n->buffer->name);
    if (!open.empty()) {
      auto& b = store_bufs[open.back()];
      if (std::find(b.begin(), b.end(), n->buffer->name) == b.end()) b.push_back(n->buffer->name);
    }
    if (!open.empty() && n->loc.known()) {
      auto& v = store_locs[open.back()];
      std::string l = n->loc.file + ":" + std::to_string(n->loc.line) + ":" + std::to_string(n->loc.col);
      if (std::find(v.begin(), v.end(), l) == v.end()) v.push_back(l);
    }
    IRVisitor::visit_store(n);
  }
  void visit_load(const LoadNode* n) override {
    buffers.insert(n->buffer->name);
    IRVisitor::visit_load(n);
  }
  void add(const FunctionNode& f) {
    for (auto& p : f.params)
      if (p.is_buffer()) buffers.insert(p.name());
    for (auto& o : f.outputs) buffers.insert(o->name);
    visit(f.body);
  }
};

// The suffixes gradient() and normalisation append to a name, with what they stand for.
const std::vector<std::pair<std::regex, std::string>>& suffixes() {
  static const std::vector<std::pair<std::regex, std::string>> s = {
      {std::regex("_hist$"), "the history of state"},
      {std::regex("_tape(_[0-9]+)?$"), "values stored by the backward step of"},
      {std::regex("_rev(_[0-9]+)?$"), "the backward step of"},
      {std::regex("_grad(_[0-9]+)?$"), "the cotangent of"},
      {std::regex("_(pass|mask|empty|arg|zarg|gprod|init|out)(_[0-9]+)?$"), "generated for"},
      {std::regex("_(s|v)[0-9]+$"), "a version of"},
      {std::regex("_p(_[0-9]+)?$"), "generated for"},
      {std::regex("_[0-9]+$"), "generated for"},
  };
  return s;
}

}  // namespace

std::string explain_generated_names(const std::string& msg, const FunctionNode& user,
                                    const FunctionNode* normalized) {
  Names u;
  u.add(user);
  Names n;
  if (normalized) n.add(*normalized);
  // The message after its position prefix / "error: " (names of the script file are not ours).
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::string> notes;
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(msg.begin(), msg.end(), ident); it != std::sregex_iterator(); ++it) {
    std::string t = it->str();
    if (seen.count(t) || u.blocks.count(t) || u.buffers.count(t)) continue;
    seen.insert(t);
    bool generated_block = n.blocks.count(t) != 0;
    bool known = generated_block || n.buffers.count(t) != 0;
    // Strip generated suffixes until a user block or buffer remains.
    std::string base = t, what;
    for (int guard = 0; guard < 8 && !u.blocks.count(base) && !u.buffers.count(base); ++guard) {
      bool stripped = false;
      for (auto& [re, w] : suffixes()) {
        std::smatch m;
        if (std::regex_search(base, m, re) && m.position(0) > 0) {
          base = base.substr(0, m.position(0));
          if (what.empty()) what = w;
          stripped = true;
          break;
        }
      }
      if (!stripped) break;
    }
    bool is_user = u.blocks.count(base) || u.buffers.count(base);
    if (!is_user || (!known && what.empty())) continue;
    // A block named after the first store of a group keeps that name when a later split
    // leaves it other stores (`H_1` storing only c): name the buffer it stores.
    if (generated_block && u.buffers.count(base)) {
      auto sb = n.store_bufs.find(t);
      if (sb != n.store_bufs.end() &&
          std::find(sb->second.begin(), sb->second.end(), base) == sb->second.end())
        for (auto& b : sb->second)
          if (u.buffers.count(b)) {
            base = b;
            break;
          }
    }
    std::string kind = u.buffers.count(base) ? "buffer " : "block ";
    std::string note = t + ": " + (generated_block ? "a block " : "") +
                       (what.empty() ? "generated for" : what) + " " + kind + base;
    if (generated_block) {
      auto l = n.store_locs.find(t);
      if (l != n.store_locs.end() && !l->second.empty()) {
        note += ", from the store" + std::string(l->second.size() > 1 ? "s" : "") + " at ";
        for (size_t k = 0; k < l->second.size() && k < 3; ++k) note += (k ? ", " : "") + l->second[k];
        if (l->second.size() > 3) note += ", ...";
      }
    }
    notes.push_back(note);
  }
  if (notes.empty()) return msg;
  std::string out = msg + " (";
  for (size_t k = 0; k < notes.size(); ++k) out += (k ? "; " : "") + notes[k];
  return out + ")";
}

}  // namespace tirc::ad

// The schedule fuzzer's generator, shared by tests/schedule/fuzz_test.cpp (interpreter before /
// after) and tests/codegen/sched_jit_fuzz_test.cpp (the scheduled function through the JIT and
// the NVPTX backend). load_bases(): the small functions of tests/schedule/fuzz/*.tir and
// examples/ops/*.tir (and their gradients) that the interpreter runs; Gen: one random schedule
// instruction at a time over a ScheduleState (a refused step is fine for the callers).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "transforms/autodiff/gradient.h"
#include "transforms/schedule/prims.h"
#include "transforms/schedule/verify.h"

namespace tirc::schedfuzz {

namespace fs = std::filesystem;
using namespace sched;

struct Base {
  std::string file;
  Function f;
  ArgMap scalars;
};

inline std::vector<Base> load_bases() {
  std::vector<fs::path> files;
  for (auto dir :
       {fs::path(TIRC_SOURCE_DIR) / "tests/schedule/fuzz", fs::path(TIRC_SOURCE_DIR) / "examples/ops"}) {
    if (!fs::exists(dir)) continue;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Base> out;
  for (auto& p : files) {
    Module m;
    try {
      m = parse_file(p.string());
    } catch (const Error&) {
      continue;  // another component's problem; the zoo tests report it
    }
    ArgMap scalars;
    std::ifstream in(p);
    std::string line;
    std::regex re("#\\s*zoo-input:\\s*([A-Za-z_][A-Za-z0-9_]*)=([-0-9.eE]+)");
    while (std::getline(in, line)) {
      std::smatch mt;
      if (std::regex_search(line, mt, re)) {
        NDArray a(DType::F64, {});
        a.set(0, std::stod(mt[2]));
        scalars[mt[1]] = a;
      }
    }
    // The gradient functions too: schedules name F_grad blocks as well as F's.
    std::vector<Function> funcs = m.funcs;
    for (auto& f : m.funcs) {
      try {
        // As a user gets it from `tirc grad`: printed and parsed again.
        Module gm = parse_module(print_function(*gradient(*f, {})), "grad.tir");
        funcs.push_back(gm.funcs.at(0));
      } catch (const std::exception&) {  // not differentiable: another component's concern
      }
    }
    for (auto& f : funcs) {
      Base b{p.filename().string(), f, {}};
      for (auto& prm : f->params)
        if (!prm.is_buffer() && scalars.count(prm.name()))
          b.scalars[prm.name()] = scalars[prm.name()].astype(prm.var.dtype());
      // Keep only small functions (deterministic: static count of block iterations), and
      // only those the interpreter runs (others are another component's problem).
      int64_t work = 0;
      std::function<void(const Stmt&, int64_t)> count = [&](const Stmt& x, int64_t mult) {
        if (!x.defined()) return;
        if (auto* fl = x.as<ForNode>()) {
          int64_t e;
          mult *= is_const_int(fl->extent, &e) ? e : 10;
        }
        if (x.kind() == StmtKind::BlockRealize) work += mult;
        for (auto& c : children(x)) count(c, mult);
      };
      count(f->body, 1);
      if (work > 20000) continue;
      try {
        CompareOptions o;
        o.scalars = b.scalars;
        run_interp(*f, verify_inputs(*f, o));
      } catch (const Error&) {
        continue;
      }
      out.push_back(b);
    }
  }
  return out;
}

class Gen {
 public:
  Gen(std::mt19937_64& rng, ScheduleState& st) : rng_(rng), st_(st) {
    for (auto& b : collect_blocks(st.body()))
      if (!b.same_as(st.body())) blocks_.push_back(block_of(b)->name);
    for (auto& l : collect_loops_all(st.body())) loops_.push_back(l);
  }

  bool empty() const { return blocks_.empty(); }

  // A random instruction; handles are registered in the state, text is for reproduction.
  ScheduleInstr next(std::string* text) {
    static const char* prims[] = {"split",
                                  "split",
                                  "fuse",
                                  "reorder",
                                  "reorder",
                                  "parallel",
                                  "vectorize",
                                  "unroll",
                                  "bind",
                                  "compute_at",
                                  "compute_at",
                                  "reverse_compute_at",
                                  "compute_inline",
                                  "reverse_compute_inline",
                                  "cache_read",
                                  "cache_write",
                                  "cache_inplace",
                                  "decompose_reduction",
                                  "rfactor",
                                  "blockize",
                                  "annotate",
                                  "pad_einsum",
                                  "reindex"};
    ScheduleInstr ins;
    ins.primitive = prims[pick(sizeof(prims) / sizeof(prims[0]))];
    ins.loc = SourceLoc{"fuzz", 1, 1};
    std::ostringstream os;
    auto P = ins.primitive;
    if (P == "split") {
      Var l = rand_loop();
      ScheduleArg list{ScheduleArg::List, "", 0, 0, {}, {}, {}, {}};
      static const int64_t fs_[] = {1, 2, 3, 4, 5, 8};
      int n = 2 + (pick(4) == 0);
      int wild = static_cast<int>(pick(n + 1));  // n means none
      for (int k = 0; k < n; ++k) {
        if (k == wild)
          list.list.push_back(ScheduleArg{ScheduleArg::Wildcard, "_", 0, 0, {}, {}, {}, {}});
        else
          list.list.push_back(int_arg(fs_[pick(6)]));
      }
      ins.args = {loop_arg(l), list};
      for (int k = 0; k < n; ++k) ins.results.push_back(fresh("s"));
    } else if (P == "fuse") {
      Var l = rand_loop();
      Stmt s = st_.find_loop(l.get());
      std::vector<Var> vs{l};
      if (s.defined() && pick(5) != 0) {
        Stmt b = s.as<ForNode>()->body;
        while (b.kind() == StmtKind::For && vs.size() < 3 && pick(3) != 0) {
          vs.push_back(b.as<ForNode>()->loop_var);
          b = b.as<ForNode>()->body;
        }
      } else {
        vs.push_back(rand_loop());
      }
      for (auto& v : vs) ins.args.push_back(loop_arg(v));
      ins.results.push_back(fresh("f"));
    } else if (P == "reorder") {
      std::string b = rand_block();
      auto ls = st_.loops_above(st_.find_block(b).get());
      if (ls.size() < 2) ls = collect_loops_all(st_.body());
      std::vector<Var> vs;
      for (auto& l : ls) vs.push_back(l.as<ForNode>()->loop_var);
      std::shuffle(vs.begin(), vs.end(), rng_);
      size_t n = std::min<size_t>(vs.size(), 2 + pick(3));
      for (size_t k = 0; k < n; ++k) ins.args.push_back(loop_arg(vs[k]));
    } else if (P == "parallel" || P == "vectorize" || P == "unroll" || P == "blockize") {
      ins.args.push_back(loop_arg(rand_loop()));
      if (P == "blockize") ins.results.push_back(fresh("bz"));
    } else if (P == "bind") {
      static const char* tags[] = {"blockIdx.x", "threadIdx.x", "threadIdx.y", "vthread"};
      ins.args = {loop_arg(rand_loop()), str_arg(tags[pick(4)])};
    } else if (P == "compute_at" || P == "reverse_compute_at") {
      // Mostly: a loop above a consumer (compute_at) or a producer (reverse_compute_at).
      std::string b = rand_block();
      Var l = rand_loop();
      Stmt bs = st_.find_block(b);
      std::vector<Stmt> related;
      for (auto& o : collect_blocks(st_.body())) {
        if (o.same_as(bs) || o.same_as(st_.body())) continue;
        const BlockNode* ob = block_of(o);
        const BlockNode* me = block_of(bs);
        const BlockNode* prod = P == "compute_at" ? me : ob;
        const BlockNode* cons = P == "compute_at" ? ob : me;
        for (auto& w : written_buffers(*prod))
          if (block_reads(*cons, w)) related.push_back(o);
      }
      if (!related.empty() && pick(4) != 0) {
        auto ls = st_.loops_above(related[pick(related.size())].get());
        if (!ls.empty()) l = ls[pick(ls.size())].as<ForNode>()->loop_var;
      }
      ins.args = {block_arg(b), loop_arg(l)};
    } else if (P == "compute_inline" || P == "reverse_compute_inline") {
      ins.args = {block_arg(rand_block())};
    } else if (P == "cache_read" || P == "cache_write") {
      std::string b = rand_block();
      static const char* scopes[] = {"global", "shared", "local"};
      ins.args = {block_arg(b), int_arg(static_cast<int64_t>(pick(3))), str_arg(scopes[pick(3)])};
      ins.results.push_back(fresh("c"));
    } else if (P == "cache_inplace") {  // round 19: the copy-in and copy-out blocks
      std::string b = rand_block();
      static const char* scopes[] = {"global", "shared", "local"};
      ins.args = {block_arg(b), int_arg(static_cast<int64_t>(pick(3))), str_arg(scopes[pick(3)])};
      ins.results.push_back(fresh("ci"));
      ins.results.push_back(fresh("co"));
    } else if (P == "decompose_reduction") {
      std::string b = rand_block();
      auto ls = st_.loops_above(st_.find_block(b).get());
      Var l = ls.empty() || pick(6) == 0 ? rand_loop() : ls[pick(ls.size())].as<ForNode>()->loop_var;
      ins.args = {block_arg(b), loop_arg(l)};
      ins.results.push_back(fresh("init"));
    } else if (P == "rfactor") {
      ins.args = {loop_arg(rand_loop()), int_arg(static_cast<int64_t>(pick(3)))};
      ins.results.push_back(fresh("rf"));
    } else if (P == "pad_einsum") {
      std::string b = rand_block();
      size_t n = block_of(st_.find_block(b))->iter_vars.size();
      ScheduleArg list{ScheduleArg::List, "", 0, 0, {}, {}, {}, {}};
      for (size_t k = 0; k < n; ++k) list.list.push_back(int_arg(1 + static_cast<int64_t>(pick(4))));
      ins.args = {block_arg(b), list};
    } else if (P == "reindex") {
      ScheduleArg tup{ScheduleArg::List, "(", 0, 0, {}, {}, {}, {}};
      tup.list = {str_arg(pick(2) ? "read" : "write"), int_arg(static_cast<int64_t>(pick(2)))};
      ins.args = {block_arg(rand_block()), tup};
      ins.results.push_back(fresh("ri"));
    } else {  // annotate
      if (pick(2))
        ins.args = {loop_arg(rand_loop()), str_arg("pragma_x"), int_arg(1)};
      else
        ins.args = {block_arg(rand_block()), str_arg("meta"), str_arg("v")};
    }
    // Text.
    os << "  ";
    for (size_t i = 0; i < ins.results.size(); ++i) os << (i ? ", " : "") << ins.results[i];
    if (!ins.results.empty()) os << " = ";
    os << P << "(";
    for (size_t i = 0; i < ins.args.size(); ++i) os << (i ? ", " : "") << arg_text(ins.args[i]);
    os << ")";
    *text = os.str();
    return ins;
  }

 private:
  static std::vector<Stmt> collect_loops_all(const Stmt& s) {
    std::vector<Stmt> out;
    std::function<void(const Stmt&)> rec = [&](const Stmt& x) {
      if (!x.defined()) return;
      if (x.kind() == StmtKind::For) out.push_back(x);
      for (auto& c : children(x)) rec(c);
    };
    rec(s);
    return out;
  }
  size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  std::string fresh(const std::string& p) { return p + std::to_string(counter_++); }
  Var rand_loop() {
    if (loops_.empty()) return Var("nothing");
    return loops_[pick(loops_.size())].as<ForNode>()->loop_var;
  }
  std::string rand_block() { return blocks_[pick(blocks_.size())]; }
  ScheduleArg int_arg(int64_t v) {
    return ScheduleArg{ScheduleArg::Int, std::to_string(v), v, 0, {}, {}, {}, {}};
  }
  ScheduleArg str_arg(const std::string& s) {
    return ScheduleArg{ScheduleArg::String, s, 0, 0, {}, {}, {}, {}};
  }
  ScheduleArg loop_arg(const Var& v) {
    std::string n = "L_" + v.name();
    st_.handles[n] = Handle{Handle::LoopH, "", v, n};
    return ScheduleArg{ScheduleArg::Ident, n, 0, 0, {}, {}, {}, {}};
  }
  ScheduleArg block_arg(const std::string& b) {
    std::string n = "B_" + b;
    st_.handles[n] = Handle{Handle::BlockH, b, Var(), n};
    return ScheduleArg{ScheduleArg::Ident, n, 0, 0, {}, {}, {}, {}};
  }
  static std::string arg_text(const ScheduleArg& a) {
    switch (a.kind) {
      case ScheduleArg::Int: return std::to_string(a.int_value);
      case ScheduleArg::String: return "\"" + a.text + "\"";
      case ScheduleArg::Wildcard: return "_";
      case ScheduleArg::List: {
        std::string s = "[";
        for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + arg_text(a.list[i]);
        return s + "]";
      }
      default: return a.text;
    }
  }

  std::mt19937_64& rng_;
  ScheduleState& st_;
  std::vector<std::string> blocks_;
  std::vector<Stmt> loops_;
  int counter_ = 0;
};

}  // namespace tirc::schedfuzz

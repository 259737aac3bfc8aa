// Statements of the .tir IR, including blocks (TensorIR's Block / BlockRealize).
//
// A block declares its iteration space (iter vars with kind and extent), reads/writes
// regions, optional init, block-local allocations and a body. A BlockRealize places a block
// in the loop tree: it binds each iter var to an expression of the enclosing loop vars and
// carries the `where` predicate. Model: TVM src/tir/ir/stmt.cc (Block, BlockRealize).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/source_loc.h"

namespace tirc {

enum class StmtKind : uint8_t { For, BlockRealize, Store, IfThenElse, LetStmt, Seq, Evaluate };

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};

// Nullable handle to an immutable statement node.
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }
  StmtKind kind() const { return node_->kind; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

// Annotations on loops and blocks: key -> literal text as written ("1", "2.5", "\"str\"").
using Annotations = std::map<std::string, std::string>;

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBinding };
const char* for_kind_name(ForKind k);  // "serial", "parallel", "vectorized", "unroll", "thread_binding"

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Var loop_var;
  Expr min, extent;  // loop_var in [min, min + extent)
  ForKind for_kind;
  std::string thread_tag;  // for ThreadBinding: "threadIdx.x", "blockIdx.y", "vthread", ...
  Stmt body;
  Annotations annotations;
  ForNode() : StmtNode(kKind) {}
};

enum class IterKind : uint8_t { Spatial, Reduce, Scan, Opaque };
const char* iter_kind_name(IterKind k);  // "spatial", "reduce", "scan", "opaque"

// A block iter var ranges over [0, extent).
struct IterVar {
  Var var;
  IterKind kind;
  Expr extent;
};

// A half-open range [begin, end) of one buffer dimension, or a single point (end undefined).
// Kept as written so that printing round-trips exactly.
struct Range {
  Expr begin;
  Expr end;  // undefined: the point `begin`
  bool is_point() const { return !end.defined(); }
};

struct BufferRegion {
  Buffer buffer;
  std::vector<Range> ranges;
};

struct BlockNode;
// Handle to an immutable block (not a statement by itself: it appears inside BlockRealize).
class Block {
 public:
  Block() = default;
  explicit Block(std::shared_ptr<const BlockNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const BlockNode* get() const { return node_.get(); }
  const BlockNode* operator->() const { return node_.get(); }
  bool same_as(const Block& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const BlockNode> node_;
};

struct BlockNode {
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads, writes;
  std::vector<Buffer> allocs;  // block-local buffers (the root block holds func-level allocs)
  Stmt init;                   // optional
  Stmt body;
  Annotations annotations;
  // Where the block was written (its `block` keyword). Diagnostics only: ignored by printing
  // and structural equality; kept by IRMutator and by copies of the node.
  SourceLoc loc;
};

struct BlockRealizeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BlockRealize;
  std::vector<Expr> bindings;  // one per iter var, expressions of the enclosing loop vars
  Expr predicate;              // `where`; constant true when absent
  Block block;
  BlockRealizeNode() : StmtNode(kKind) {}
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  // Where the store was written (diagnostics only: ignored by printing and structural
  // equality; unknown for stores built by transforms).
  SourceLoc loc;
  StoreNode() : StmtNode(kKind) {}
};

struct IfThenElseStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  Expr cond;
  Stmt then_case, else_case;  // else_case optional
  IfThenElseStmtNode() : StmtNode(kKind) {}
};

// `let x = v` followed by the statements that see x (body).
struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  Var var;
  Expr value;
  Stmt body;
  LetStmtNode() : StmtNode(kKind) {}
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<Stmt> stmts;
  SeqNode() : StmtNode(kKind) {}
};

// call_extern("name", args...): opaque side effect. Args may be BufferPtr expressions.
struct EvaluateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  std::string extern_name;
  std::vector<Expr> args;
  EvaluateNode() : StmtNode(kKind) {}
};

// ---- constructors ----
Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "",
              Annotations ann = {});
Stmt make_block_realize(std::vector<Expr> bindings, Expr predicate, Block block);
Block make_block(BlockNode node);
Stmt make_store(Buffer b, std::vector<Expr> idx, Expr value);
// As above, remembering where the store was written (for run-time error messages).
Stmt make_store(Buffer b, std::vector<Expr> idx, Expr value, SourceLoc loc);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = Stmt());
Stmt make_let_stmt(Var v, Expr value, Stmt body);
// Flattens nested Seqs; a single statement is returned as is; empty gives an empty Seq.
Stmt make_seq(std::vector<Stmt> stmts);
Stmt make_evaluate(std::string name, std::vector<Expr> args);

// The extent of [lo, hi) and the end of [min, min+extent), written so that
// make_extent(lo, make_end(lo, e)) gives back e exactly (print/parse round trip of
// `serial(lo, hi)` and of region slices). Constants are folded.
Expr make_extent(const Expr& lo, const Expr& hi);
Expr make_end(const Expr& min, const Expr& extent);

}  // namespace tirc

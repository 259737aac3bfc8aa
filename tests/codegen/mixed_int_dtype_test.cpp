// An iter var bound to a loop var of another integer dtype (`vi: spatial(4) = i` with `i` an
// i64 loop): the parser refuses it, but IR built in C++ has it (the autodiff's F_grad of
// outsider5 `i64_split` binds i32 reduce vars to i64 loops) and the interpreter runs it, giving
// the iter var the binding's value (range-checked, so exact in the iter var's dtype).
// convert_blocks (transforms/lower) substituted the binding as is, so `vi * 2 + rk` became
// `i * 2 + k` with an i64 and an i32 operand, and the LLVM backend failed with "internal error,
// invalid LLVM IR: Both operands to a binary operator are not of the same type".
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "tests/codegen/compare.h"
#include "transforms/lower/lower.h"

namespace tirc {
using namespace tirc::cgtest;

namespace {

// Rebuilds every loop named in `names` with an i64 loop var (min and extent cast to i64);
// the block bindings that used it now have dtype i64 while their iter vars stay i32.
class WidenLoops : public IRMutator {
 public:
  explicit WidenLoops(std::vector<std::string> names) : names_(std::move(names)) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (std::find(names_.begin(), names_.end(), n->loop_var.name()) == names_.end()) return IRMutator::mutate_for(n, s);
    Var w(n->loop_var.name(), DType::I64);
    Stmt body = mutate(substitute(n->body, {{n->loop_var.get(), w}}));
    return make_for(w, make_cast(DType::I64, n->min), make_cast(DType::I64, n->extent), n->for_kind, body,
                    n->thread_tag, n->annotations);
  }

 private:
  std::vector<std::string> names_;
};

}  // namespace

TEST(MixedIntDtype, IterVarBoundToWiderLoopVarCompiles) {
  Function f = parse_func(R"(
func f(X: f32[12], W: f32[3]) -> (Y: f32[4]) {
  for i in serial(4) {
    for k in serial(3) {
      block c(vi: spatial(4) = i, rk: reduce(3) = k) {
        init {
          Y[vi] = 0.0
        }
        Y[vi] = Y[vi] + X[vi * 2 + rk] * W[rk]
      }
    }
  }
}
)",
                          "f");
  ASSERT_TRUE(f);
  Function g = with_body(*f, WidenLoops({"i", "k"}).mutate(f->body));
  ArgMap in = random_inputs(*g, 3);
  ArgMap ref = run_interp(*f, in);  // the well-typed original
  EXPECT_TRUE(arrays_close(run_interp(*g, in).at("Y"), ref.at("Y"), 0, 0));
  EXPECT_TRUE(arrays_close(compile_jit(*g)->run(in).at("Y"), ref.at("Y"), 0, 0));
  // The lowered function casts the bindings: every binary op has operands of one dtype.
  bool mixed = false;
  Function low = lower_function(*g);
  for_each_expr(low->body, [&](const Expr& e) {
    if (auto* b = e.as<BinaryNode>()) mixed |= b->a.dtype() != b->b.dtype();
  });
  EXPECT_FALSE(mixed);
}

}  // namespace tirc

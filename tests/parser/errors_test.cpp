// Malformed scripts: each must fail with one SourceError at an exact position and message.
// Generated cases are reviewed by hand; positions are 1-based line:column of the offending token.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "parser/parser.h"

namespace tirc {
namespace {

struct ErrorCase {
  const char* name;
  const char* src;
  int line, col;
  const char* msg;
};

// Sources share a header: func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8])
const ErrorCase kCases[] = {
    {"InvalidChar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  B[0, 0] = A[0, 0] $ 1.0\n"
     "}\n"
     "",
     2, 21, "invalid character '$'"},
    {"UnterminatedString",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  call_extern(\"foo, A.data)\n"
     "}\n"
     "",
     2, 15, "unterminated string"},
    {"MissingBrace",
     "func f(A: f32[4]) -> (B: f32[4]) {\n"
     "  for i in serial(4) {\n"
     "    B[i] = A[i]\n"
     "",
     4, 1, "unexpected end of input ('{' at 2:22 is not closed)"},
    {"MissingOperand",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  B[0, 0] = A[0, 0] + \n"
     "}\n"
     "",
     3, 1, "unexpected '}'"},
    {"BadParamSyntax",
     "func f(A f32[4]) -> (B: f32[4]) { }\n"
     "",
     1, 10, "unexpected 'f32'; expected ':'"},
    {"UnknownDtype",
     "func f(A: f33[4]) -> (B: f32[4]) { }\n"
     "",
     1, 11, "unknown dtype 'f33' (the dtypes are bool i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64)"},
    {"UnknownDtypeAlloc",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  alloc T: float[4]\n"
     "}\n"
     "",
     2, 12, "unknown dtype 'float' (write f32; the dtypes are bool i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64)"},
    {"StrayToken",
     "func f(A: f32[4]) -> (B: f32[4]) { }\n"
     "}\n"
     "",
     2, 1, "unexpected '}'; expected end of input, 'func', 'schedule' or 'intrin'"},
    {"InvalidUtf8",
     "func f(A: f32[4]) -> (B: f32[4]) {\n"
     "  # caf\xc3"
     "\n"
     "}\n"
     "",
     2, 8, "invalid UTF-8 byte 0xC3"},
    {"UndeclaredName",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, k]\n"
     "  }\n"
     "}\n"
     "",
     3, 20, "undeclared name 'k'"},
    {"UndeclaredBuffer",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = C[i, j]\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "undeclared buffer 'C'"},
    {"ScalarIndexed",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = n[i]\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "'n' is not a buffer"},
    {"BufferAsValue",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = I\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "buffer 'I' used as a value; index it as I[...]"},
    {"DuplicateParam",
     "func f(A: f32[4], A: i32[4]) -> (B: f32[4]) { }\n"
     "",
     1, 19, "duplicate parameter 'A'"},
    {"DuplicateOutput",
     "func f(A: f32[4]) -> (A: f32[4]) { }\n"
     "",
     1, 23, "duplicate parameter 'A'"},
    {"DuplicateBlock",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i) { J[vi] = 0 }\n"
     "    block b(vi: spatial(8) = i) { J[vi] = 1 }\n"
     "  }\n"
     "}\n"
     "",
     4, 11, "duplicate block name 'b'"},
    {"DuplicateIterVar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vi: spatial(8) = j) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 33, "duplicate iter var 'vi'"},
    {"DuplicateLoopVar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, i in grid(8, 8) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 10, "duplicate loop variable 'i'"},
    {"DuplicateAlloc",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  alloc T: f32[4]\n"
     "  alloc T: f32[8]\n"
     "}\n"
     "",
     3, 9, "duplicate buffer 'T'"},
    {"DuplicateFunction",
     "func f(A: f32[4]) -> (B: f32[4]) { }\n"
     "func f(A: f32[4]) -> (B: f32[4]) { }\n"
     "",
     2, 6, "duplicate function 'f'"},
    {"TypeMismatchAdd",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, j] + I[i]\n"
     "  }\n"
     "}\n"
     "",
     3, 23, "type mismatch: f32 + i32"},
    {"TypeMismatchCompare",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if A[i, j] < I[i] { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 16, "type mismatch: f32 < i32"},
    {"TypeMismatchStore",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = I[i]\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "type mismatch: cannot store i32 into f32 buffer B"},
    {"TypeMismatchCompound",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] += A[i, j]\n"
     "  }\n"
     "}\n"
     "",
     3, 13, "type mismatch: i32 += f32"},
    {"FloatLiteralInIntContext",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = I[i] + 1.5\n"
     "  }\n"
     "}\n"
     "",
     3, 17, "type mismatch: i32 + f32"},
    {"IntDivWithSlash",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = I[i] / 2\n"
     "  }\n"
     "}\n"
     "",
     3, 17, "'/' is float division and is not defined on i32; use // for integer division"},
    {"FloorDivOnFloat",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, j] // 2.0\n"
     "  }\n"
     "}\n"
     "",
     3, 23, "'//' is integer-only and is not defined on f32"},
    {"ModOnFloat",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, j] % 2\n"
     "  }\n"
     "}\n"
     "",
     3, 23, "'%' is integer-only and is not defined on f32"},
    {"NonBoolIf",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if I[i] { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 8, "if condition must be bool, got i32"},
    {"NonBoolWhere",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i) {\n"
     "      where i + 1\n"
     "      J[vi] = 0\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 13, "where condition must be bool, got i32"},
    {"NonBoolAnd",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if i < 2 && j { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 14, "operator && expects bool operands, got bool and i32"},
    {"NotOnInt",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if !i { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 8, "operator ! expects a bool operand, got i32"},
    {"NonBoolSelect",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = select(i, 1.0, 2.0)\n"
     "  }\n"
     "}\n"
     "",
     3, 22, "select condition must be bool, got i32"},
    {"SelectArmMismatch",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = select(i < 2, A[i, j], I[i])\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "type mismatch: select arms are f32 and i32"},
    {"WriteInput",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    A[i, j] = 0.0\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "cannot write to input buffer A"},
    {"WriteInputCompound",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    I[i] += 1\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "cannot write to input buffer I"},
    {"WriteInputRegion",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      writes A[vi, vj]\n"
     "      B[vi, vj] = 0.0\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 14, "cannot write to input buffer A"},
    {"TooManyIndices",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, j, 0]\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "buffer A has 2 dimensions but 3 indices were given"},
    {"TooFewIndicesStore",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i] = 0.0\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "buffer B has 2 dimensions but 1 index was given"},
    {"RegionRank",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      reads A[vi]\n"
     "      B[vi, vj] = A[vi, vj]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 13, "buffer A has 2 dimensions but the region has 1"},
    {"BindingOutOfDomain",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(16) {\n"
     "    block b(vi: spatial(8) = i) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 30, "binding of iter var vi takes values in [0, 15], outside its domain [0, 8)"},
    {"BindingNegative",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(8) {\n"
     "    block b(vi: spatial(8) = i - 1) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 30, "binding of iter var vi takes values in [-1, 6], outside its domain [0, 8)"},
    {"ConstIndexOOB",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, 8]\n"
     "  }\n"
     "}\n"
     "",
     3, 20, "index 8 is out of bounds for dimension 1 of A (extent 8)"},
    {"ConstIndexNegative",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[-1] = 0\n"
     "  }\n"
     "}\n"
     "",
     3, 7, "index -1 is out of bounds for dimension 0 of J (extent 8)"},
    {"InitWithoutReduce",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      init { B[vi, vj] = 0.0 }\n"
     "      B[vi, vj] = A[vi, vj]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 7, "init in block 'b' which has no reduce iter var"},
    {"LoopVarInBlock",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      B[vi, vj] = A[i, vj]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 21, "loop variable 'i' cannot be used inside block 'b'; bind it to an iter var"},
    {"LoopVarInInit",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vk: reduce(8) = j) {\n"
     "      init { J[j] = 0 }\n"
     "      J[vi] += I[vk]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 16, "loop variable 'j' cannot be used inside block 'b'; bind it to an iter var"},
    {"OuterIterVarInNestedBlock",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(8) {\n"
     "    block o(vi: spatial(8) = i) {\n"
     "      block inner() { J[vi] = 0 }\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 25, "iter var 'vi' of block 'o' cannot be used inside block 'inner'; bind it to an iter var"},
    {"UnknownIntrinsic",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = expo(A[i, j])\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "unknown function 'expo'"},
    {"IntrinsicArity",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = pow(A[i, j])\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "pow expects 2 arguments, got 1"},
    {"MinArity",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = max(A[i, j], 1.0, 2.0)\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "max expects 2 arguments, got 3"},
    {"IntrinsicOnInt",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = sqrt(I[i])\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "sqrt expects a float argument, got i32"},
    {"PowOnInt",  // round 3: the message said "a float arguments"
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = pow(I[i], 2)\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "pow expects float arguments, got i32"},
    {"TruncdivOnFloat",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = truncdiv(A[i, j], 2.0)\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "truncdiv expects integer arguments, got f32"},
    {"MinValueNeedsDtype",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = min_value(1)\n"
     "  }\n"
     "}\n"
     "",
     3, 25, "min_value expects a dtype, e.g. min_value(f32)"},
    {"CastArity",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = f32(I[i], 1)\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "cast to f32 expects 1 argument, got 2"},
    {"UnknownLoopKind",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in sequential(8) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 12,
     "unknown loop kind 'sequential' (expected serial, parallel, vectorized, unroll, thread_binding or "
     "grid)"},
    {"UnknownIterKind",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spacial(8) = i) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 17, "unknown iter var kind 'spacial' (expected spatial, reduce, scan or opaque)"},
    {"GridArity",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 15, "grid has 1 extent for 2 loop variables"},
    {"SerialTwoVars",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in serial(8) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 10, "a serial loop binds one variable; use grid(...) for several"},
    {"UnknownThreadTag",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in thread_binding(8, \"threadIdx.w\") { J[i] = 0 }\n"
     "}\n"
     "",
     2, 30, "unknown thread tag \"threadIdx.w\" (expected blockIdx.x/y/z, threadIdx.x/y/z, vthread or vthread.x/y/z)"},
    {"UnknownScope",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  alloc T: f32[4] scope \"texture\"\n"
     "}\n"
     "",
     2, 25, "unknown storage scope \"texture\" (expected global, shared, shared.dyn, local or warp)"},
    {"UnknownStatement",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    print(i)\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "unknown statement 'print'"},
    {"UnusedCall",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    exp(A[i, j])\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "the value of exp(...) is unused; only call_extern can be a statement"},
    {"CallExternNoName",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    call_extern(A.data)\n"
     "  }\n"
     "}\n"
     "",
     3, 17, "call_extern expects the function name as a string first"},
    {"PtrOutsideCallExtern",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A.data\n"
     "  }\n"
     "}\n"
     "",
     3, 15, "A.data is only allowed as an argument of call_extern"},
    {"UnknownBufferField",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    call_extern(\"f\", A.size)\n"
     "  }\n"
     "}\n"
     "",
     3, 24, "unknown buffer field 'size' (expected data or ptr)"},
    {"UnknownAssignOp",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] avg= 1\n"
     "  }\n"
     "}\n"
     "",
     3, 10, "unknown assignment operator 'avg=' (expected = += -= *= /= //= %= max= min=)"},
    {"IntLiteralTooLarge",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = 3000000000\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "integer literal 3000000000 does not fit in i32"},
    {"IntLiteralOverflow",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = 99999999999999999999\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "integer literal 99999999999999999999 is too large"},
    {"StringAsValue",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = \"x\"\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "a string is not allowed here"},
    {"DtypeAsValue",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    J[i] = i32\n"
     "  }\n"
     "}\n"
     "",
     3, 12, "dtype 'i32' is not a value (did you mean i32(x)?)"},
    {"DuplicateInit",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vk: reduce(8) = j) {\n"
     "      init { J[vi] = 0 }\n"
     "      init { J[vi] = 1 }\n"
     "      J[vi] += I[vk]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     5, 7, "duplicate 'init' in block 'b'"},
    {"DuplicateReads",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      reads A[vi, vj]\n"
     "      reads A[vi, vj]\n"
     "      B[vi, vj] = A[vi, vj]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     5, 7, "duplicate 'reads' in block 'b'"},
    {"EmptyValueRange",
     "func f(A: f32[4] in [2.0, 1.0]) -> (B: f32[4]) { }\n"
     "",
     1, 22, "empty value range [2.0, 1.0]"},
    {"ScalarOutput",
     "func f(A: f32[4]) -> (s: f32) { }\n"
     "",
     1, 23, "output 's' must be a buffer"},
    {"ShapeUsesLaterParam",
     "func f(A: f32[m], m: i32) -> (B: f32[4]) { }\n"
     "",
     1, 15,
     "undeclared name 'm' (scalar parameter m is declared after this buffer; a shape may use only earlier "
     "parameters)"},
    {"FloatShape",
     "func f(A: f32[4.0]) -> (B: f32[4]) { }\n"
     "",
     1, 15, "buffer shape must be an integer, got f32"},
    {"IterExtentUsesLoopVar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(i + 1) = i) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 25, "iter var extent must use only constants and scalar parameters"},
    {"FloatIndex",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    B[i, j] = A[i, 1.0]\n"
     "  }\n"
     "}\n"
     "",
     3, 20, "buffer index must be an integer, got f32"},
    {"AnnotateInLoopBody",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    annotate(\"x\", 1)\n"
     "  }\n"
     "}\n"
     "",
     3, 5, "annotate(...) is only allowed among a block's clauses or in a loop header"},
    {"IntrinMissingImpl",
     "intrin m {\n"
     "  desc(A: f32[4]) { }\n"
     "}\n"
     "",
     1, 8, "intrin 'm' has no impl"},
    {"RootNameReserved",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block root(vi: spatial(8) = i) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 11, "block name 'root' is reserved for the function's root block"},
    {"NegOnBool",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if -(i < 2) { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 8, "operator - is not defined on bool"},
    {"BoolArith",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    if (i < 2) + (j < 2) { J[i] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 16, "operator + is not defined on bool"},
    {"LetTypeMismatch",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    let x = I[i]\n"
     "    B[i, j] = A[i, j] * x\n"
     "  }\n"
     "}\n"
     "",
     4, 23, "type mismatch: f32 * i32"},
    {"UnsignedNegativeLiteral",
     "func f(A: u8[4]) -> (B: u8[4]) {\n"
     "  for i in serial(4) { B[i] = A[i] + -1 }\n"
     "}\n"
     "",
     2, 39, "integer literal -1 does not fit in u8"},
    {"DeepParens",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  J[0] = "
     "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
     "(((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))"
     ")))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))\n"
     "}\n"
     "",
     2, 109, "nesting too deep (more than 100 levels)"},
    {"DeepUnary",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  J[0] = "
     "-------------------------------------------------------------------------------------------------------"
     "-----------------------------------------------1\n"
     "}\n"
     "",
     2, 110, "too many consecutive unary operators (more than 100)"},
    {"LongChain",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  J[0] = 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + "
     "1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 "
     "+ 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1\n"
     "}\n"
     "",
     2, 10, "expression nested too deeply (more than 256 levels)"},
    {"ElseIfChain",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  if n < 0 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 "
     "} else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } "
     "else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] "
     "= 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { "
     "J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n "
     "< 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else "
     "if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 } else if n < 1 { J[0] = 0 }\n"
     "}\n"
     "",
     2, 2730, "too many chained else-if branches (more than 100)"},
    {"WhereUsesIterVar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i) {\n"
     "      where vi < 4\n"
     "      J[vi] = 0\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 13, "iter var 'vi' is not visible here: bindings and where use the enclosing loop variables"},
    {"BindingUsesOwnIterVar",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = vi) { J[vi] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 50, "iter var 'vi' is not visible here: bindings and where use the enclosing loop variables"},
    {"RegionOutOfBounds",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i, vj: spatial(8) = j) {\n"
     "      reads A[0:9, vj]\n"
     "      B[vi, vj] = A[vi, vj]\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 17, "index 9 is out of bounds for dimension 0 of A (extent 8)"},
    {"NegativeLoopExtent",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(-1) { J[0] = 0 }\n"
     "}\n"
     "",
     2, 19, "loop extent must not be negative, got -1"},
    {"EmptyLoopRange",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(4, 2) { J[0] = 0 }\n"
     "}\n"
     "",
     2, 22, "empty loop range [4, 2)"},
    {"NegativeIterExtent",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(-1) = i) { J[0] = 0 }\n"
     "  }\n"
     "}\n"
     "",
     3, 25, "iter var extent must not be negative, got -1"},
    {"ThreadBindingNoTag",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in thread_binding(8) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 12, "thread_binding expects (extent, \"tag\") or (lo, hi, \"tag\")"},
    {"DuplicateDesc",
     "intrin m {\n"
     "  desc(A: f32[4]) { }\n"
     "  desc(A: f32[4]) { }\n"
     "  impl(A: f32[4]) { }\n"
     "}\n"
     "",
     3, 3, "duplicate desc in intrin 'm'"},
    {"DuplicateIntrin",
     "intrin m {\n"
     "  desc(A: f32[4]) { }\n"
     "  impl(A: f32[4]) { }\n"
     "}\n"
     "intrin m {\n"
     "  desc(A: f32[4]) { }\n"
     "  impl(A: f32[4]) { }\n"
     "}\n"
     "",
     5, 8, "duplicate intrin 'm'"},
    {"UnknownLoopClause",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(4) pragma(\"x\", 1) { J[i] = 0 }\n"
     "}\n"
     "",
     2, 22, "unknown loop clause 'pragma' (expected annotate)"},
    {"AnnotationValueNotLiteral",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    block b(vi: spatial(8) = i) {\n"
     "      annotate(\"k\", vi)\n"
     "      J[vi] = 0\n"
     "    }\n"
     "  }\n"
     "}\n"
     "",
     4, 21, "annotation value must be an integer, float or string literal"},
    {"PtrArity",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i, j in grid(8, 8) {\n"
     "    call_extern(\"f\", A.ptr(0))\n"
     "  }\n"
     "}\n"
     "",
     3, 24, "buffer A has 2 dimensions but 1 index was given"},
    {"LetOfLoopVarInBlock",
     "func f(A: f32[8, 8], I: i32[8], n: i32) -> (B: f32[8, 8], J: i32[8]) {\n"
     "  for i in serial(8) {\n"
     "    let t = i * 2\n"
     "    block b(vi: spatial(8) = i) { J[vi] = t }\n"
     "  }\n"
     "}\n"
     "",
     4, 43, "'t' depends on loop variables and cannot be used inside block 'b'"},
};

class ParserErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrors, ExactPositionAndMessage) {
  const ErrorCase& c = GetParam();
  try {
    parse_module(c.src, "t.tir");
    FAIL() << c.name << ": expected an error";
  } catch (const SourceError& e) {
    EXPECT_EQ(e.file(), "t.tir");
    EXPECT_EQ(e.line(), c.line) << c.name << ": " << e.what();
    EXPECT_EQ(e.col(), c.col) << c.name << ": " << e.what();
    EXPECT_EQ(e.message(), c.msg) << c.name;
    EXPECT_EQ(std::string(e.what()),
              "t.tir:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: " + c.msg);
  }
}

INSTANTIATE_TEST_SUITE_P(All, ParserErrors, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& i) {
                           return std::string(i.param.name);
                         });

TEST(ParserErrors, AtLeastFortyCases) { EXPECT_GE(std::size(kCases), 40u); }

}  // namespace
}  // namespace tirc

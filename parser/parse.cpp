// parse_module / parse_file: runs the ANTLR lexer and parser on a .tir text and hands the tree
// to the builder. Robustness (the parser is fuzzed): UTF-8 is validated first, the token
// stream is scanned for nesting that would make the recursive-descent parser (or the IR)
// too deep, the first syntax error is turned into one clean SourceError by a throwing
// error listener (nothing is printed), and any other exception becomes a SourceError.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "TirLexer.h"
#include "TirParser.h"
#include "antlr4-runtime.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "parser/builder.h"
#include "parser/parser.h"

namespace tirc {
namespace {

using P = tirc_antlr::TirParser;

constexpr int kMaxNesting = kMaxTextNesting;  // brackets, unary-operator runs, else-if chains
constexpr int kMaxExprDepth = 256;            // nested expression nodes (binary chains included)

std::string describe_token(const antlr4::Token* t) {
  if (t->getType() == antlr4::Token::EOF) return "end of input";
  std::string s = t->getText();
  if (s.size() > 24) s = s.substr(0, 21) + "...";
  return "'" + s + "'";
}

std::string token_display(const antlr4::dfa::Vocabulary& voc, size_t type) {
  if (type == antlr4::Token::EOF) return "end of input";
  std::string lit = voc.getLiteralName(type);
  if (!lit.empty()) return lit;
  std::string sym = voc.getSymbolicName(type);
  if (sym == "ID") return "a name";
  if (sym == "INT") return "an integer";
  if (sym == "FLOAT") return "a float";
  if (sym == "STRING") return "a string";
  if (sym == "DTYPE") return "a dtype";
  return sym;
}

// Python's spellings that a NumPy / TVMScript user types first, named with the .tir form
// (outsider round 13): `a ** b`, `and` / `or` / `not`, `A if C else B`. Empty when `tok` (the
// token the parser stopped at) is not one of them.
std::string python_hint(antlr4::Recognizer* rec, const antlr4::Token* tok) {
  auto* parser = dynamic_cast<antlr4::Parser*>(rec);
  const antlr4::Token* prev = nullptr;
  if (parser && tok->getTokenIndex() > 0) {
    // The previous token on the default channel (comments and blanks are skipped).
    auto* stream = parser->getTokenStream();
    for (size_t i = tok->getTokenIndex(); i-- > 0;) {
      const antlr4::Token* t = stream->get(i);
      if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
        prev = t;
        break;
      }
    }
  }
  const std::string text = tok->getText();
  if (text == "*" && prev && prev->getText() == "*" && prev->getStopIndex() + 1 == tok->getStartIndex())
    return " (there is no '**' operator: write pow(a, b))";
  // C's shifts `x << 2`, `x >> 1` and `<>` (outsider round 17; they were a bare "unexpected '<'").
  bool adjacent = prev && prev->getStopIndex() + 1 == tok->getStartIndex();
  if (adjacent && (text == "<" || text == ">") && prev->getText() == text)
    return " (there are no shift operators: multiply or floor-divide by a power of 2, x * 4 or x // 4)";
  if (adjacent && text == ">" && prev->getText() == "<") return " (not equal is written !=)";
  if (tok->getType() == P::ID && (text == "and" || text == "or"))
    return std::string(" (logic is written ") + (text == "and" ? "&&" : "||") + ", not Python's '" + text +
           "')";
  if (prev && prev->getType() == P::ID && prev->getText() == "not")
    return " (negation is written !, not Python's 'not')";
  // NumPy's chained indexing `A[i][j]` (outsider round 15).
  if (text == "[" && prev && prev->getText() == "]")
    return " (index a buffer with one bracket: A[i, j], not A[i][j])";
  // TVMScript's habits where a statement or a loop kind is expected (outsider round 16; the
  // expression forms `T.exp(x)` are named by the builder): `T.reads(A[vi])`, `T.grid(4, 4)`,
  // `x.astype("float16")`, `reads(A[vi])`, `block "C"(...)`, `vi = spatial(4, i)`.
  const antlr4::Token* next = nullptr;
  if (parser) {
    auto* stream = parser->getTokenStream();
    for (size_t i = tok->getTokenIndex() + 1; i < stream->size(); ++i) {
      const antlr4::Token* t = stream->get(i);
      if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
        next = t;
        break;
      }
    }
  }
  // `T.f32(x)`: a dtype after a module prefix.
  if (tok->getType() == P::DTYPE && prev && prev->getText() == ".")
    return " (there are no modules: write " + text + "(x), without a prefix)";
  if (text == "." && next && next->getText() == "astype")
    return " (casts are named by the dtype: write f16(x), f32(x), ..., not x.astype(...))";
  if (text == "." && prev && next && next->getType() != antlr4::Token::EOF) {
    const std::string& pre = prev->getText();
    const std::string name = next->getText();
    if (pre == "T" || pre == "tir" || pre == "tvm") {
      if (name == "reads" || name == "writes")
        return " (there are no modules: write " + name + " A[vi], B[vk, vj], without 'T.' and parentheses)";
      if (name == "where") return " (there are no modules: write where COND, without 'T.' and parentheses)";
      if (name == "init") return " (there are no modules: write init { ... }, without 'T.')";
      if (name == "axis")
        return " (there are no modules: an iter var is declared in the block header, as "
               "block C(vi: spatial(128) = i, vk: reduce(64) = k))";
      if (name == "block")
        return " (there are no modules: a block is written block C(vi: spatial(128) = i) { ... })";
      if (name == "alloc_buffer") return " (there are no modules: write alloc T: f32[16, 16])";
      static const char* kKinds[] = {"serial", "parallel", "vectorized", "unroll", "thread_binding", "grid",
                                     "call_extern"};
      for (const char* k : kKinds)
        if (name == k) return " (there are no modules: write " + name + "(...) without '" + pre + ".')";
      return " (there are no modules, and statements are written without a prefix: LANGUAGE.md, Statements)";
    }
  }
  // `vi = T.axis.spatial(128, i)`, `vi, vj = T.axis.remap("SS", [i, j])`: the parser stops at
  // the `=` or `,`, before the `T.axis` that says what was meant.
  if ((text == "=" || text == ",") && parser) {
    auto* stream = parser->getTokenStream();
    const antlr4::Token* before = nullptr;
    for (size_t i = tok->getTokenIndex() + 1, seen = 0; i < stream->size() && seen < 12; ++i) {
      const antlr4::Token* t = stream->get(i);
      if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
      if (t->getLine() != tok->getLine() || t->getType() == antlr4::Token::EOF) break;
      if (t->getText() == "axis" && before && before->getText() == ".")
        return " (an iter var is declared in the block header, as block C(vi: spatial(128) = i, vk: "
               "reduce(64) = k), not with T.axis)";
      if (t->getText() == "alloc_buffer" && before && before->getText() == "." && prev)
        return " (a buffer is allocated with alloc " + prev->getText() + ": f32[16, 16], not with T.alloc_buffer)";
      before = t;
      ++seen;
    }
  }
  // `-> B: f32[4], C: f32[4]`: only one output may go without parentheses.
  if (text == "," && parser) {
    // Only at the header: the parser may already be in the Body rule there (the '{' it expects
    // opens it), so a Body context that starts at this comma is still the header; a comma after
    // the body's '{' is the body's error, and the header may well be right.
    antlr4::ParserRuleContext* ctx = parser->getContext();
    if (dynamic_cast<P::BodyContext*>(ctx) && ctx->getStart() &&
        ctx->getStart()->getTokenIndex() >= tok->getTokenIndex())
      ctx = dynamic_cast<antlr4::ParserRuleContext*>(ctx->parent);
    if (auto* f = dynamic_cast<P::FuncDefContext*>(ctx); f && f->single)
      return " (several outputs are written in parentheses: -> (B: f32[4], C: f32[4]))";
  }
  // Python's `for x in ...:` / `if c:` / `def f():` (outsider round 18): the parser stops at the
  // ':' ending a line that starts with one of these words. In a schedule item there are no
  // loops or conditions at all; in a function the body goes in braces.
  if (text == ":" && parser && next && next->getLine() != tok->getLine()) {
    auto* stream = parser->getTokenStream();
    const antlr4::Token* first = nullptr;
    for (size_t i = tok->getTokenIndex(); i-- > 0;) {
      const antlr4::Token* t = stream->get(i);
      if (t->getLine() != tok->getLine()) break;
      if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) first = t;
    }
    const std::string w = first ? first->getText() : "";
    if (w == "for" || w == "if" || w == "else" || w == "elif" || w == "while" || w == "def" || w == "with") {
      bool in_schedule = false;
      for (antlr4::tree::ParseTree* c = parser->getContext(); c; c = c->parent)
        in_schedule = in_schedule || dynamic_cast<P::ScheduleDefContext*>(c) != nullptr;
      if (in_schedule)
        return " (a schedule is a list of instructions, not Python: there is no '" + w +
               "'; write each instruction out, e.g. once per block)";
      return " (a body is written in braces, not after ':': for i in serial(8) { ... }, if c { ... })";
    }
  }
  if (text == "(" && prev && (prev->getType() == P::READS || prev->getType() == P::WRITES))
    return " (regions follow the keyword without parentheses: " + prev->getText() + " A[vi], B[vk, vj])";
  if (tok->getType() == P::STRING && prev && prev->getType() == P::BLOCK)
    return " (a block name is written without quotes: block C(...))";
  if (text == "=" && parser && dynamic_cast<P::IterVarContext*>(parser->getContext()))
    return " (an iter var is written NAME: KIND(EXTENT) = BINDING, as vi: spatial(128) = i)";
  if (text == "else" && parser) {
    try {
      auto expected = parser->getExpectedTokens();
      if (expected.size() == 1 && parser->getVocabulary().getLiteralName(expected.getMinElement()) == "'{'")
        return " (Python's 'A if C else B' is written select(C, A, B), or if_then_else(C, A, B) to evaluate "
               "only the taken arm)";
    } catch (...) {
    }
  }
  return "";
}

// NumPy's / C's / TVMScript's names where a dtype is expected (`A: float32[4]`, `n: int`,
// `A: T.Buffer((4,), "float32")`): the .tir spelling and the list (outsider round 16; it was
// "unknown dtype 'float32'" alone).
std::string dtype_hint(const std::string& name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"float16", "f16"}, {"half", "f16"},    {"bfloat16", "bf16"}, {"float32", "f32"}, {"float", "f32"},
      {"single", "f32"},  {"float64", "f64"}, {"double", "f64"},    {"int8", "i8"},     {"int16", "i16"},
      {"int32", "i32"},   {"int", "i32"},     {"int64", "i64"},     {"long", "i64"},    {"uint8", "u8"},
      {"uint16", "u16"},  {"uint32", "u32"},  {"bool_", "bool"},    {"boolean", "bool"}};
  const std::string list = "the dtypes are bool i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64";
  for (auto& [n, t] : kNames)
    if (name == n) return std::string(" (write ") + t + "; " + list + ")";
  if (name == "T" || name == "Buffer" || name == "tir")
    return " (a buffer parameter is written A: f32[128, 64], a scalar n: i32)";
  return " (" + list + ")";
}

// Turns ANTLR's first syntax error into a SourceError with a short message.
class ThrowingListener : public antlr4::BaseErrorListener {
 public:
  explicit ThrowingListener(std::string file) : file_(std::move(file)) {}
  // The innermost bracket left open at the end of the input (prescan), named when the parser
  // fails at the end of the input.
  void set_unclosed(const antlr4::Token* t) { unclosed_ = t; }

  void syntaxError(antlr4::Recognizer* rec, antlr4::Token* tok, size_t line, size_t col, const std::string&,
                   std::exception_ptr) override {
    std::string msg;
    if (!tok) {
      msg = "invalid input";
    } else {
      msg = "unexpected " + describe_token(tok);
      if (auto* parser = dynamic_cast<antlr4::Parser*>(rec)) {
        try {
          auto expected = parser->getExpectedTokens();
          if (tok->getType() == P::ID && expected.contains(static_cast<size_t>(P::DTYPE)) &&
              !expected.contains(static_cast<size_t>(P::ID)))
            throw SourceError(file_, static_cast<int>(line), static_cast<int>(col) + 1,
                              "unknown dtype '" + tok->getText() + "'" + dtype_hint(tok->getText()));
          std::vector<std::string> names;
          for (auto t : expected.toList()) names.push_back(token_display(parser->getVocabulary(), t));
          if (!names.empty() && names.size() <= 4) {
            msg += "; expected ";
            for (size_t i = 0; i < names.size(); ++i) {
              if (i) msg += i + 1 == names.size() ? " or " : ", ";
              msg += names[i];
            }
          }
        } catch (const SourceError&) {
          throw;
        } catch (...) {
        }
      }
    }
    if (tok && tok->getType() != antlr4::Token::EOF) msg += python_hint(rec, tok);
    if (tok && tok->getType() == antlr4::Token::EOF && unclosed_)
      msg += " ('" + unclosed_->getText() + "' at " + std::to_string(unclosed_->getLine()) + ":" +
             std::to_string(unclosed_->getCharPositionInLine() + 1) + " is not closed)";
    throw SourceError(file_, static_cast<int>(line), static_cast<int>(col) + 1, msg);
  }

 private:
  std::string file_;
  const antlr4::Token* unclosed_ = nullptr;
};

void validate_utf8(const std::string& text, const std::string& file) {
  int line = 1, col = 1;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && n > 1) {
      uint32_t cp = c & (0x7F >> n);
      for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
      if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
          (cp >= 0xD800 && cp <= 0xDFFF))
        ok = false;
    }
    if (!ok) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", c);
      throw SourceError(file, line, col, std::string("invalid UTF-8 byte ") + buf);
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += n;
  }
}

// The code point of a one-character UTF-8 string when it is an invisible character: Unicode
// white space other than ASCII's (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
// U+202F, U+205F, U+3000) or a format character that shows nothing (U+00AD, U+180E,
// U+200B-U+200F, U+2060-U+2064, U+FEFF); else 0.
uint32_t invisible_code_point(const std::string& s) {
  if (s.empty()) return 0;
  unsigned char c = static_cast<unsigned char>(s[0]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n < 2 || s.size() != n) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
  bool invisible = cp == 0x85 || cp == 0xA0 || cp == 0xAD || cp == 0x1680 || cp == 0x180E ||
                   (cp >= 0x2000 && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
                   cp == 0x205F || (cp >= 0x2060 && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF;
  return invisible ? cp : 0;
}

[[noreturn]] void fail_at(const std::string& file, const antlr4::Token* t, const std::string& msg) {
  throw SourceError(file, static_cast<int>(t->getLine()), static_cast<int>(t->getCharPositionInLine()) + 1,
                    msg);
}

// Lexical errors and nesting limits, before the recursive-descent parser runs. Returns the
// innermost bracket still open at the end of the input (or null).
const antlr4::Token* prescan(const std::vector<antlr4::Token*>& toks, const std::string& file) {
  std::vector<const antlr4::Token*> open;
  // Levels added by each open bracket: 1, or N for the `{` of a `for` header with N variables
  // (the canonical text prints a grid as N nested loops, so counting them here keeps every
  // accepted function printable within the limit; docs/language.md, Limits).
  std::vector<int> levels;
  // Variables of the `for` header being read (FOR ID (, ID)* IN), kept until its `{`.
  std::vector<const antlr4::Token*> for_vars;
  enum { kNoFor, kForName, kForComma, kForBody } for_state = kNoFor;
  int depth = 0, unary_run = 0;
  std::vector<int> elif_chain(1, 0);
  const antlr4::Token* prev = nullptr;
  for (auto* t : toks) {
    size_t type = t->getType();
    if (type == antlr4::Token::EOF) break;
    if (type == P::ERRCHAR) {
      std::string s = t->getText();
      unsigned char c = s.empty() ? 0 : static_cast<unsigned char>(s[0]);
      if (s.size() == 1 && (c < 0x20 || c == 0x7F)) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02X", c);
        fail_at(file, t, std::string("invalid character ") + buf);
      }
      // Invisible characters (a no-break space pasted from a web page, a zero-width space) are
      // named by code point: quoted as they are, the message showed nothing between the quotes.
      if (uint32_t cp = invisible_code_point(s)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "invalid character U+%04X (invisible", cp);
        fail_at(file, t, std::string(buf) + "; only ASCII blanks separate tokens)");
      }
      // C's and NumPy's operators that .tir spells otherwise (outsider round 14), named as the
      // Python spellings are (python_hint); Python's single-quoted strings (round 18).
      const char* hint = s == "?"   ? " (C's 'c ? a : b' is written select(c, a, b), or if_then_else(c, a, b) to "
                                      "evaluate only the taken arm)"
                         : s == "&" ? " (logic is written &&; there are no bitwise operators)"
                         : s == "|" ? " (logic is written ||; there are no bitwise operators)"
                         : s == "^" ? " (there is no '^' operator: write pow(a, b) for a power)"
                         : s == "~" ? " (negation is written !; there are no bitwise operators)"
                         : s == "'" ? " (strings are written in double quotes: \"C\")"
                                    : "";
      fail_at(file, t, "invalid character '" + s + "'" + hint);
    }
    if (type == P::UNTERMINATED_STRING) fail_at(file, t, "unterminated string");
    if (type == P::BAD_NUMBER)
      fail_at(file, t,
              "invalid number '" + t->getText() +
                  "' (integer literals are decimal; names cannot start with a digit)");
    const std::string& s = t->getText();
    if (type == P::FOR) {
      for_state = kForName;
      for_vars.clear();
    } else if (for_state == kForName) {
      if (type == P::ID) {
        for_vars.push_back(t);
        for_state = kForComma;
      } else {
        for_state = kNoFor;
      }
    } else if (for_state == kForComma) {
      for_state = s == "," ? kForName : type == P::IN ? kForBody : kNoFor;
    }
    if (s == "(" || s == "[" || s == "{") {
      int n = 1;
      if (s == "{" && for_state == kForBody) {
        n = static_cast<int>(for_vars.size());
        for_state = kNoFor;
        if (n > 1 && depth + n > kMaxNesting)
          fail_at(file, for_vars[kMaxNesting - depth],
                  "nesting too deep (more than " + std::to_string(kMaxNesting) +
                      " levels, counting each loop of a grid as one level)");
      }
      depth += n;
      if (depth > kMaxNesting)
        fail_at(file, t, "nesting too deep (more than " + std::to_string(kMaxNesting) + " levels)");
      if (elif_chain.size() <= static_cast<size_t>(depth)) elif_chain.resize(depth + 1, 0);
      open.push_back(t);
      levels.push_back(n);
    } else if (s == ")" || s == "]" || s == "}") {
      if (!levels.empty()) {
        depth -= levels.back();
        levels.pop_back();
        open.pop_back();
      }
    }
    if (type != P::STRING && (s == "-" || s == "!")) {
      if (++unary_run > kMaxNesting)
        fail_at(file, t,
                "too many consecutive unary operators (more than " + std::to_string(kMaxNesting) + ")");
    } else {
      unary_run = 0;
    }
    if (type == P::IF) {
      int& chain = elif_chain[depth];
      if (prev && prev->getType() == P::ELSE) {
        if (++chain > kMaxNesting)
          fail_at(file, t,
                  "too many chained else-if branches (more than " + std::to_string(kMaxNesting) + ")");
      } else {
        chain = 0;
      }
    }
    prev = t;
  }
  return open.empty() ? nullptr : open.back();
}

// Expression nesting (iterative walk: the tree may be deeper than the C++ stack allows).
void check_expr_depth(antlr4::tree::ParseTree* root, const std::string& file) {
  std::vector<std::pair<antlr4::tree::ParseTree*, int>> stack{{root, 0}};
  while (!stack.empty()) {
    auto [node, d] = stack.back();
    stack.pop_back();
    int nd = d;
    if (auto* e = dynamic_cast<P::ExprContext*>(node)) {
      nd = d + 1;
      if (nd > kMaxExprDepth)
        fail_at(file, e->getStart(),
                "expression nested too deeply (more than " + std::to_string(kMaxExprDepth) + " levels)");
    }
    // Children in reverse so that the leftmost too-deep node is reported.
    for (auto it = node->children.rbegin(); it != node->children.rend(); ++it) stack.emplace_back(*it, nd);
  }
}

}  // namespace

Module parse_module(const std::string& raw, const std::string& filename) {
  try {
    // A lone CR (classic Mac line ends) ends a line as in Python's universal newlines, so
    // that error positions count it; CR LF stays (the CR is white space before the LF).
    std::string text = raw;
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) text[i] = '\n';
    validate_utf8(text, filename);
    antlr4::ANTLRInputStream input(text);
    tirc_antlr::TirLexer lexer(&input);
    ThrowingListener listener(filename);
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    listener.set_unclosed(prescan(tokens.getTokens(), filename));
    P parser(&tokens);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);
    P::ProgramContext* prog = parser.program();
    check_expr_depth(prog, filename);
    return parser_detail::build_module(prog, &tokens, filename);
  } catch (const SourceError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw SourceError(filename, 1, 1, "out of memory while parsing");
  } catch (const std::exception& e) {
    throw SourceError(filename, 1, 1, std::string("internal parser error: ") + e.what());
  } catch (...) {
    throw SourceError(filename, 1, 1, "internal parser error");
  }
}

Module parse_file(const std::string& path) {
  std::string text;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
    return parse_module(text, "<stdin>");
  }
  std::error_code ec;
  // A directory opens as an empty stream on Linux: say what it is.
  if (std::filesystem::is_directory(path, ec))
    throw SourceError(path, 1, 1, "cannot read file: it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  // Say why (a missing file and an unreadable one need different fixes), as `--input` does.
  if (!in)
    throw SourceError(
        path, 1, 1,
        std::string("cannot open file") + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw SourceError(path, 1, 1, "cannot read file");
  return parse_module(ss.str(), path);
}

}  // namespace tirc

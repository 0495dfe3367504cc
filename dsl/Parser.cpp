#include "dsl/Parser.h"

#include <cstdlib>

#include "dsl/Lexer.h"

namespace scanforge::dsl {
namespace {

// Deeper nesting than this is reported instead of recursing further (keeps the stack bounded).
constexpr int kMaxNesting = 200;

struct SyntaxError {};  // unwinds to the statement (or recurrence) being parsed

class Parser {
 public:
  Parser(const SourceFile &file, std::vector<Token> tokens, DiagnosticEngine &diags)
      : toks_(std::move(tokens)), diags_(diags), suppressed_(file) {}

  Module parseModule() {
    Module module;
    skipSeparators();
    while (!at(Tok::Eof)) {
      if (at(Tok::KwRecurrence) || at(Tok::KwReverse)) {
        parseRecurrence(module);
      } else {
        error(cur().range, std::string("expected 'recurrence', found ") + describe(cur()))
            .hint("a file holds recurrences: recurrence name(x[d]) -> h[d] { ... }");
        while (!at(Tok::Eof) && !at(Tok::KwRecurrence) && !at(Tok::KwReverse)) ++pos_;
      }
      skipSeparators();
    }
    return module;
  }

 private:
  // ---- token helpers ----
  const Token &cur() const { return toks_[pos_]; }
  const Token &prev() const { return toks_[pos_ > 0 ? pos_ - 1 : 0]; }
  bool at(Tok kind) const { return cur().kind == kind; }
  const Token &advance() {
    const Token &t = toks_[pos_];
    if (t.kind != Tok::Eof) ++pos_;
    return t;
  }
  bool accept(Tok kind) {
    if (!at(kind)) return false;
    advance();
    return true;
  }
  static std::string describe(const Token &t) {
    if (t.kind == Tok::Ident || t.kind == Tok::Number) return std::string(tokenSpelling(t.kind)) + " '" + t.text + "'";
    return tokenSpelling(t.kind);
  }
  // Reports a syntax error, unless an error on the same line already explains it (a stray character
  // makes the rest of its line unparsable; one message is enough).
  DiagnosticEngine::Builder error(SourceRange range, std::string message) {
    const auto &list = diags_.diagnostics();
    bool explained = !list.empty() && list.back().severity == Severity::Error &&
                     list.back().range.begin.line == range.begin.line;
    return (explained ? suppressed_ : diags_).error(range, std::move(message));
  }
  [[noreturn]] void fail(const std::string &what) {
    error(cur().range, "expected " + what + ", found " + describe(cur()));
    throw SyntaxError{};
  }
  const Token &expect(Tok kind, const std::string &what) {
    if (!at(kind)) fail(what);
    return advance();
  }
  Ident expectIdent(const std::string &what) {
    const Token &t = expect(Tok::Ident, what);
    return {t.text, t.range};
  }
  void skipNewlines() {
    while (at(Tok::Newline)) advance();
  }
  void skipSeparators() {
    while (at(Tok::Newline) || at(Tok::Semi)) advance();
  }
  SourceRange from(const SourceRange &begin) const { return {begin.begin, prev().range.end}; }

  // ---- declarations ----
  // Parses one recurrence and marks it when a lexical or syntax error falls inside it.
  void parseRecurrence(Module &module) {
    size_t count = module.recurrences.size();
    SourceLoc begin = cur().range.begin;
    parseRecurrenceInto(module);
    if (module.recurrences.size() == count) return;
    Recurrence &rec = module.recurrences.back();
    rec.range = {begin, prev().range.end};
    for (const Diagnostic &d : diags_.diagnostics())
      if (d.severity == Severity::Error && d.range.begin.offset >= begin.offset &&
          d.range.begin.offset <= rec.range.end.offset)
        rec.hasSyntaxErrors = true;
  }

  void parseRecurrenceInto(Module &module) {
    Recurrence rec;
    try {
      rec.reverse = accept(Tok::KwReverse);
      expect(Tok::KwRecurrence, "'recurrence'");
      rec.name = expectIdent("the recurrence name");
      expect(Tok::LParen, "'(' to start the inputs");
      parsePortList(rec.inputs, "an input");
      if (accept(Tok::Semi)) parsePortList(rec.params, "a parameter");
      expect(Tok::RParen, "')' to end the inputs");
      skipNewlines();
      expect(Tok::Arrow, "'->' and the outputs");
      parsePortList(rec.outputs, "an output");
      skipNewlines();
    } catch (SyntaxError &) {
      // Skip the rest of the header; still parse the body to report its errors too.
      while (!at(Tok::Eof) && !at(Tok::LBrace) && !at(Tok::KwRecurrence) && !at(Tok::KwReverse)) advance();
      if (!at(Tok::LBrace)) return;
    }
    if (!at(Tok::LBrace)) {
      error(cur().range, "expected '{' to start the body of '" + rec.name.name + "', found " + describe(cur()));
      return;
    }
    SourceRange open = advance().range;
    skipSeparators();
    while (!at(Tok::RBrace)) {
      if (at(Tok::Eof) || at(Tok::KwRecurrence) || at(Tok::KwReverse)) {
        error(cur().range, "expected '}' to end the body of '" + rec.name.name + "', found " + describe(cur()))
            .note(open, "the body starts here");
        module.recurrences.push_back(std::move(rec));
        return;
      }
      parseStatement(rec);
      skipSeparators();
    }
    advance();
    module.recurrences.push_back(std::move(rec));
  }

  void parsePortList(std::vector<Port> &ports, const char *role) {
    if (at(Tok::RParen) || at(Tok::Semi) || at(Tok::LBrace)) return;
    do {
      skipNewlines();
      ports.push_back(parsePort(role));
    } while (accept(Tok::Comma));
  }

  Port parsePort(const char *role) {
    Port port;
    port.name = expectIdent(std::string(role) + " name");
    if (accept(Tok::LBracket)) port.dims = parseDimList();
    if (accept(Tok::Colon)) {
      const Token &t = expect(Tok::Ident, "an element type (f32 or bf16)");
      port.typeRange = t.range;
      if (t.text == "f32") {
        port.type = ElemType::F32;
      } else if (t.text == "bf16") {
        port.type = ElemType::BF16;
      } else {
        auto d = error(t.range, "unknown element type '" + t.text + "'");
        d.hint("element types are f32 and bf16 (the state is always kept in f32)");
      }
    }
    port.range = from(port.name.range);
    return port;
  }

  // After '[': `d, n]` or `]`.
  std::vector<Ident> parseDimList() {
    std::vector<Ident> dims;
    if (accept(Tok::RBracket)) return dims;
    do dims.push_back(expectIdent("a dimension name"));
    while (accept(Tok::Comma));
    expect(Tok::RBracket, "',' or ']' in the dimension list");
    return dims;
  }

  // ---- statements ----
  void parseStatement(Recurrence &rec) {
    try {
      Stmt stmt;
      if (!at(Tok::Ident)) fail("a statement such as 'h = a * h + b'");
      stmt.target = {cur().text, cur().range};
      advance();
      if (accept(Tok::LBracket)) {
        stmt.hasDims = true;
        stmt.dims = parseDimList();
      }
      if (!at(Tok::Assign)) {
        auto d = error(cur().range, "expected '=' after '" + stmt.target.name + "', found " + describe(cur()));
        if (at(Tok::EqEq)) d.hint("assignment is '=', comparison is '=='");
        throw SyntaxError{};
      }
      advance();
      stmt.value = parseExpr();
      if (!at(Tok::Newline) && !at(Tok::Semi) && !at(Tok::RBrace))
        fail("end of statement (a new line or ';')");
      stmt.range = from(stmt.target.range);
      rec.body.push_back(std::move(stmt));
    } catch (SyntaxError &) {
      while (!at(Tok::Newline) && !at(Tok::Semi) && !at(Tok::RBrace) && !at(Tok::Eof) && !at(Tok::KwRecurrence) &&
             !at(Tok::KwReverse))
        advance();
    }
  }

  // ---- expressions ----
  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) {
        p.error(p.cur().range, "expression is nested too deeply (more than " +
                                          std::to_string(kMaxNesting) + " levels)");
        --p.depth_;
        throw SyntaxError{};
      }
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr makeBinary(BinaryOp op, ExprPtr lhs, ExprPtr rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::Binary;
    e->binary = op;
    e->range = SourceRange::span(lhs->range, rhs->range);
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  ExprPtr parseExpr() { return parseOr(); }

  ExprPtr parseOr() {
    ExprPtr lhs = parseAnd();
    while (accept(Tok::OrOr)) lhs = makeBinary(BinaryOp::Or, std::move(lhs), parseAnd());
    return lhs;
  }

  ExprPtr parseAnd() {
    ExprPtr lhs = parseComparison();
    while (accept(Tok::AndAnd)) lhs = makeBinary(BinaryOp::And, std::move(lhs), parseComparison());
    return lhs;
  }

  static bool comparisonOp(Tok kind, BinaryOp &op) {
    switch (kind) {
      case Tok::Lt: op = BinaryOp::Lt; return true;
      case Tok::Le: op = BinaryOp::Le; return true;
      case Tok::Gt: op = BinaryOp::Gt; return true;
      case Tok::Ge: op = BinaryOp::Ge; return true;
      case Tok::EqEq: op = BinaryOp::Eq; return true;
      case Tok::NotEq: op = BinaryOp::Ne; return true;
      default: return false;
    }
  }

  ExprPtr parseComparison() {
    ExprPtr lhs = parseAdditive();
    BinaryOp op;
    if (comparisonOp(cur().kind, op)) {
      advance();
      lhs = makeBinary(op, std::move(lhs), parseAdditive());
      if (comparisonOp(cur().kind, op)) {
        error(cur().range, "comparisons cannot be chained").hint("write (a < b) && (b < c)");
        throw SyntaxError{};
      }
    }
    return lhs;
  }

  ExprPtr parseAdditive() {
    ExprPtr lhs = parseMultiplicative();
    while (at(Tok::Plus) || at(Tok::Minus)) {
      BinaryOp op = advance().kind == Tok::Plus ? BinaryOp::Add : BinaryOp::Sub;
      lhs = makeBinary(op, std::move(lhs), parseMultiplicative());
    }
    return lhs;
  }

  ExprPtr parseMultiplicative() {
    ExprPtr lhs = parseUnary();
    while (at(Tok::Star) || at(Tok::Slash)) {
      BinaryOp op = advance().kind == Tok::Star ? BinaryOp::Mul : BinaryOp::Div;
      lhs = makeBinary(op, std::move(lhs), parseUnary());
    }
    return lhs;
  }

  ExprPtr parseUnary() {
    DepthGuard guard(*this);
    if (at(Tok::Minus) || at(Tok::Bang)) {
      const Token &op = advance();
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::Unary;
      e->unary = op.kind == Tok::Minus ? UnaryOp::Neg : UnaryOp::Not;
      e->args.push_back(parseUnary());
      e->range = SourceRange::span(op.range, e->args[0]->range);
      return e;
    }
    return parsePrimary();
  }

  ExprPtr parsePrimary() {
    auto e = std::make_unique<Expr>();
    SourceRange start = cur().range;
    if (at(Tok::Number)) {
      const Token &t = advance();
      e->kind = Expr::Kind::Number;
      e->text = t.text;
      e->number = std::strtod(t.text.c_str(), nullptr);
      e->range = t.range;
      return e;
    }
    if (at(Tok::LParen)) {
      advance();
      skipNewlines();
      ExprPtr inner = parseExpr();
      if (!at(Tok::RParen)) {
        error(cur().range, "expected ')', found " + describe(cur())).note(start, "to match this '('");
        throw SyntaxError{};
      }
      advance();
      return inner;
    }
    if (at(Tok::KwSum)) {
      advance();
      e->kind = Expr::Kind::Sum;
      expect(Tok::LParen, "'(' after 'sum', as in sum(n: C * s)");
      Ident dim = expectIdent("the dimension to sum over, as in sum(n: C * s)");
      e->text = dim.name;
      e->nameRange = dim.range;
      expect(Tok::Colon, "':' after the dimension, as in sum(n: C * s)");
      e->args.push_back(parseExpr());
      expect(Tok::RParen, "')' to close 'sum('");
      e->range = from(start);
      return e;
    }
    if (at(Tok::Ident)) {
      const Token &t = advance();
      e->text = t.text;
      e->nameRange = t.range;
      if (!accept(Tok::LParen)) {
        e->kind = Expr::Kind::Name;
        e->range = t.range;
        return e;
      }
      e->kind = Expr::Kind::Call;
      if (!at(Tok::RParen)) {
        do e->args.push_back(parseExpr());
        while (accept(Tok::Comma));
      }
      if (!at(Tok::RParen)) {
        error(cur().range, "expected ',' or ')' in the arguments of '" + e->text + "', found " + describe(cur()))
            .note(start, "the call starts here");
        throw SyntaxError{};
      }
      advance();
      e->range = from(start);
      return e;
    }
    fail("an expression");
  }

  std::vector<Token> toks_;
  DiagnosticEngine &diags_;
  DiagnosticEngine suppressed_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Module parse(const SourceFile &file, DiagnosticEngine &diags) {
  return Parser(file, lex(file, diags), diags).parseModule();
}

}  // namespace scanforge::dsl

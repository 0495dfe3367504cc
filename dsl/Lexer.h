// Turns .scan text into tokens. Newlines separate statements, except inside parentheses or brackets
// and after a token that cannot end an expression (an operator, '=', ','), so long expressions wrap.
#pragma once

#include <string>
#include <vector>

#include "dsl/Diagnostics.h"

namespace scanforge::dsl {

enum class Tok {
  Eof, Newline, Ident, Number,
  KwRecurrence, KwReverse, KwSum,
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Semi, Colon, Arrow, Assign,
  Plus, Minus, Star, Slash,
  Lt, Le, Gt, Ge, EqEq, NotEq, AndAnd, OrOr, Bang,
};

const char *tokenSpelling(Tok kind);  // for messages: "'('", "identifier", "end of line", ...

struct Token {
  Tok kind;
  std::string text;
  SourceRange range;
};

// Lexes the whole file; stray characters and malformed numbers are reported and skipped.
std::vector<Token> lex(const SourceFile &file, DiagnosticEngine &diags);

}  // namespace scanforge::dsl

#include "dsl/Lexer.h"

#include <cctype>
#include <string_view>

namespace scanforge::dsl {

const char *tokenSpelling(Tok kind) {
  switch (kind) {
    case Tok::Eof: return "end of file";
    case Tok::Newline: return "end of line";
    case Tok::Ident: return "identifier";
    case Tok::Number: return "number";
    case Tok::KwRecurrence: return "'recurrence'";
    case Tok::KwReverse: return "'reverse'";
    case Tok::KwSum: return "'sum'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::Comma: return "','";
    case Tok::Semi: return "';'";
    case Tok::Colon: return "':'";
    case Tok::Arrow: return "'->'";
    case Tok::Assign: return "'='";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::Lt: return "'<'";
    case Tok::Le: return "'<='";
    case Tok::Gt: return "'>'";
    case Tok::Ge: return "'>='";
    case Tok::EqEq: return "'=='";
    case Tok::NotEq: return "'!='";
    case Tok::AndAnd: return "'&&'";
    case Tok::OrOr: return "'||'";
    case Tok::Bang: return "'!'";
  }
  return "token";
}

namespace {

// True when a newline after this token continues the expression instead of ending the statement.
bool continuesLine(Tok kind) {
  switch (kind) {
    case Tok::Plus: case Tok::Minus: case Tok::Star: case Tok::Slash:
    case Tok::Lt: case Tok::Le: case Tok::Gt: case Tok::Ge: case Tok::EqEq: case Tok::NotEq:
    case Tok::AndAnd: case Tok::OrOr: case Tok::Bang:
    case Tok::Assign: case Tok::Comma: case Tok::Arrow: case Tok::Colon:
      return true;
    default:
      return false;
  }
}

class Lexer {
 public:
  Lexer(const SourceFile &file, DiagnosticEngine &diags) : file_(file), text_(file.text()), diags_(diags) {}

  std::vector<Token> run() {
    while (pos_ < text_.size()) step();
    // End of file is reported just after the last token, where a missing '}' belongs.
    SourceLoc end = file_.locAt(0);
    for (auto it = tokens_.rbegin(); it != tokens_.rend(); ++it)
      if (it->kind != Tok::Newline) {
        end = it->range.end;
        break;
      }
    if (!tokens_.empty() && tokens_.back().kind != Tok::Newline) tokens_.push_back({Tok::Newline, "", {end, end}});
    tokens_.push_back({Tok::Eof, "", {end, end}});
    return std::move(tokens_);
  }

 private:
  void step() {
    char c = text_[pos_];
    if (c == '\n') {
      newline();
      return;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
      return;
    }
    if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      identifier();
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number();
      return;
    }
    punctuation();
  }

  void newline() {
    uint32_t at = static_cast<uint32_t>(pos_++);
    if (depth_ > 0) return;
    if (tokens_.empty() || tokens_.back().kind == Tok::Newline || continuesLine(tokens_.back().kind)) return;
    push(Tok::Newline, at, at + 1);
  }

  void identifier() {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    std::string_view word(text_.data() + start, pos_ - start);
    Tok kind = Tok::Ident;
    if (word == "recurrence") kind = Tok::KwRecurrence;
    else if (word == "reverse") kind = Tok::KwReverse;
    else if (word == "sum") kind = Tok::KwSum;
    push(kind, start, pos_);
  }

  void number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return pos_ > from;
    };
    digits();
    bool ok = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      ok = digits();
    }
    // A letter glued to a number ("2x", "1e5q") is a typo, not two tokens.
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
                                   text_[pos_] == '.')) {
      ok = false;
      ++pos_;
    }
    if (!ok) {
      diags_.error(range(start, pos_), "invalid number literal '" + std::string(text_.substr(start, pos_ - start)) + "'")
          .hint("numbers look like 2, 0.5 or 1e-3");
      push(Tok::Number, start, pos_, "0");
      return;
    }
    push(Tok::Number, start, pos_);
  }

  void punctuation() {
    size_t start = pos_;
    char c = text_[pos_];
    char n = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    auto two = [&](Tok kind) { pos_ += 2; push(kind, start, pos_); };
    auto one = [&](Tok kind) { pos_ += 1; push(kind, start, pos_); };
    switch (c) {
      case '(': ++depth_; one(Tok::LParen); return;
      case '[': ++depth_; one(Tok::LBracket); return;
      case ')': if (depth_ > 0) --depth_; one(Tok::RParen); return;
      case ']': if (depth_ > 0) --depth_; one(Tok::RBracket); return;
      case '{': depth_ = 0; one(Tok::LBrace); return;
      case '}': depth_ = 0; one(Tok::RBrace); return;
      case ',': one(Tok::Comma); return;
      case ';': one(Tok::Semi); return;
      case ':': one(Tok::Colon); return;
      case '+': one(Tok::Plus); return;
      case '*': one(Tok::Star); return;
      case '/': one(Tok::Slash); return;
      case '-': if (n == '>') two(Tok::Arrow); else one(Tok::Minus); return;
      case '<': if (n == '=') two(Tok::Le); else one(Tok::Lt); return;
      case '>': if (n == '=') two(Tok::Ge); else one(Tok::Gt); return;
      case '=': if (n == '=') two(Tok::EqEq); else one(Tok::Assign); return;
      case '!': if (n == '=') two(Tok::NotEq); else one(Tok::Bang); return;
      case '&': if (n == '&') { two(Tok::AndAnd); return; } break;
      case '|': if (n == '|') { two(Tok::OrOr); return; } break;
      default: break;
    }
    stray(start);
  }

  void stray(size_t start) {
    // Report a whole UTF-8 sequence as one character.
    size_t len = 1;
    unsigned char lead = static_cast<unsigned char>(text_[start]);
    if (lead >= 0xC0) len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    len = std::min(len, text_.size() - start);
    pos_ = start + len;
    std::string shown = (lead >= 0x20 && lead < 0x7F) || lead >= 0xC0 ? std::string(text_.substr(start, len))
                                                                       : "\\x" + hex(lead);
    auto diag = diags_.error(range(start, pos_), "stray '" + shown + "' in program");
    if (text_[start] == '&' || text_[start] == '|')
      diag.hint(std::string("logical operators are '&&' and '||'"));
    else if (text_[start] == '^')
      diag.hint("there is no power operator; write x * x, or exp(y * log(x))");
  }

  static std::string hex(unsigned char c) {
    const char *digits = "0123456789abcdef";
    return {digits[c >> 4], digits[c & 15]};
  }

  SourceRange range(size_t begin, size_t end) const {
    return {file_.locAt(static_cast<uint32_t>(begin)), file_.locAt(static_cast<uint32_t>(end))};
  }

  void push(Tok kind, size_t begin, size_t end, std::string text = {}) {
    if (text.empty()) text = std::string(text_.substr(begin, end - begin));
    tokens_.push_back({kind, std::move(text), range(begin, end)});
  }

  const SourceFile &file_;
  std::string_view text_;
  DiagnosticEngine &diags_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<Token> lex(const SourceFile &file, DiagnosticEngine &diags) { return Lexer(file, diags).run(); }

}  // namespace scanforge::dsl

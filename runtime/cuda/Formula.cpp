#include "runtime/cuda/Formula.h"

#include <cctype>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

namespace {

class Parser {
 public:
  Parser(const std::string &text, const Variables &vars) : text_(text), vars_(vars) {}

  int64_t parse() {
    int64_t v = sum();
    skipSpace();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string &why) const {
    throw CudaError("in size formula '" + text_ + "': " + why);
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  int64_t checked(__int128 v) const {
    if (v > INT64_MAX || v < INT64_MIN) fail("the value overflows 64 bits");
    return static_cast<int64_t>(v);
  }
  int64_t divide(int64_t a, int64_t b, bool roundUp) const {
    if (b == 0) fail("division by zero");
    return roundUp ? (a + b - 1) / b : a / b;
  }

  int64_t sum() {
    int64_t v = product();
    for (;;) {
      if (accept('+')) v = checked(__int128(v) + product());
      else if (accept('-')) v = checked(__int128(v) - product());
      else return v;
    }
  }
  int64_t product() {
    int64_t v = atom();
    for (;;) {
      if (accept('*')) v = checked(__int128(v) * atom());
      else if (accept('/')) v = divide(v, atom(), false);
      else return v;
    }
  }
  int64_t atom() {
    skipSpace();
    if (accept('(')) {
      int64_t v = sum();
      expect(')');
      return v;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      __int128 v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) v = checked(v * 10 + (text_[pos_++] - '0'));
      return static_cast<int64_t>(v);
    }
    std::string name = identifier();
    if (name == "cdiv") {
      expect('(');
      int64_t a = sum();
      expect(',');
      int64_t b = sum();
      expect(')');
      return divide(a, b, true);
    }
    if (name == "log2") {  // rounded up; the butterfly steps across a lane group
      expect('(');
      int64_t a = sum();
      expect(')');
      if (a < 1) fail("log2 of " + std::to_string(a));
      int64_t n = 0;
      while ((int64_t(1) << n) < a) ++n;
      return n;
    }
    auto it = vars_.find(name);
    if (it == vars_.end()) fail("unknown size '" + name + "'");
    return it->second;
  }
  std::string identifier() {
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '$') ++pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ == start) fail(pos_ < text_.size() ? "unexpected '" + std::string(1, text_[pos_]) + "'" : "unexpected end");
    return text_.substr(start, pos_ - start);
  }

  const std::string &text_;
  const Variables &vars_;
  size_t pos_ = 0;
};

}  // namespace

int64_t evaluate(const std::string &formula, const Variables &variables) { return Parser(formula, variables).parse(); }

}  // namespace scanforge::cuda

#include "models/config/LocatedJson.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace scanforge::config {

std::string locatedMessage(const std::string &text, const Location &where, const std::string &message,
                           const std::string &hint) {
  std::ostringstream os;
  os << where.file << ":" << where.line << ":" << where.col << ": error: " << message << "\n";
  std::istringstream lines(text);
  std::string line;
  for (int i = 0; i < where.line && std::getline(lines, line); ++i) {
  }
  if (where.line > 0) {
    std::string number = std::to_string(where.line);
    os << " " << number << " | " << line << "\n"
       << " " << std::string(number.size(), ' ') << " | " << std::string(std::max(0, where.col - 1), ' ') << "^\n";
  }
  if (!hint.empty()) os << "hint: " << hint << "\n";
  return os.str();
}

namespace {

class Parser {
 public:
  Parser(const std::string &text, const std::string &file) : text_(text), file_(file) {}

  Json document() {
    skip();
    Json value = parseValue(0);
    skip();
    if (pos_ < text_.size()) fail("unexpected text after the end of the JSON document");
    return value;
  }

 private:
  Location here() const { return {file_, line_, col_}; }

  [[noreturn]] void fail(const std::string &message, const std::string &hint = "") const {
    throw ConfigError(locatedMessage(text_, here(), message, hint));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skip() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '#' || (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/')) {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }

  void expect(char c, const char *what) {
    if (peek() != c) fail(std::string("expected ") + what);
    advance();
  }

  Json parseValue(int depth) {
    if (depth > 64) fail("the document is nested too deeply");
    Json value;
    value.where = here();
    char c = peek();
    if (c == '{') return parseObject(value, depth);
    if (c == '[') return parseArray(value, depth);
    if (c == '"') {
      value.kind = Json::Kind::String;
      value.string = parseString();
      return value;
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return parseNumber(value);
    for (auto [word, kind, truth] : {std::tuple{"true", Json::Kind::Bool, true}, std::tuple{"false", Json::Kind::Bool, false},
                                     std::tuple{"null", Json::Kind::Null, false}}) {
      std::string w(word);
      if (text_.compare(pos_, w.size(), w) == 0) {
        for (size_t i = 0; i < w.size(); ++i) advance();
        value.kind = kind;
        value.boolean = truth;
        return value;
      }
    }
    if (c == '\0') fail("unexpected end of file; expected a value");
    if (c == '\'') fail("strings use double quotes");
    fail(std::string("unexpected character '") + c + "'; expected a value (object, array, string, number, true, false, null)");
  }

  Json parseObject(Json &value, int depth) {
    value.kind = Json::Kind::Object;
    advance();
    skip();
    if (peek() == '}') {
      advance();
      return value;
    }
    while (true) {
      skip();
      if (peek() != '"') fail("expected a key in double quotes", peek() == '}' ? "JSON has no trailing commas" : "");
      Location keyAt = here();
      std::string key = parseString();
      for (size_t i = 0; i < value.members.size(); ++i)
        if (value.members[i].first == key) {
          Location first = value.keyLocations[i];
          throw ConfigError(locatedMessage(text_, keyAt, "duplicate key '" + key + "'",
                                           "it is first set at line " + std::to_string(first.line)));
        }
      skip();
      expect(':', "':' after the key");
      skip();
      value.members.emplace_back(key, parseValue(depth + 1));
      value.keyLocations.push_back(keyAt);
      skip();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return value;
      }
      fail("expected ',' or '}' in the object");
    }
  }

  Json parseArray(Json &value, int depth) {
    value.kind = Json::Kind::Array;
    advance();
    skip();
    if (peek() == ']') {
      advance();
      return value;
    }
    while (true) {
      skip();
      value.items.push_back(parseValue(depth + 1));
      skip();
      if (peek() == ',') {
        advance();
        skip();
        if (peek() == ']') fail("JSON has no trailing commas");
        continue;
      }
      if (peek() == ']') {
        advance();
        return value;
      }
      fail("expected ',' or ']' in the array");
    }
  }

  std::string parseString() {
    advance();  // opening quote
    std::string out;
    while (true) {
      char c = peek();
      if (c == '\0' || c == '\n') fail("unterminated string");
      advance();
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      advance();
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            char h = peek();
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail("expected four hex digits after \\u");
            code = code * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10);
            advance();
          }
          if (code < 0x80) out += static_cast<char>(code);
          else if (code < 0x800) out += {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
          else out += {static_cast<char>(0xE0 | (code >> 12)), static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
                       static_cast<char>(0x80 | (code & 0x3F))};
          break;
        }
        default: fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  Json parseNumber(Json &value) {
    size_t start = pos_;
    if (peek() == '-') advance();
    while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == 'e' || peek() == 'E' ||
           peek() == '+' || peek() == '-')
      advance();
    std::string spelling = text_.substr(start, pos_ - start);
    char *end = nullptr;
    value.number = std::strtod(spelling.c_str(), &end);
    if (spelling.empty() || *end != '\0' || spelling == "-") {
      col_ -= static_cast<int>(pos_ - start);
      pos_ = start;
      fail("invalid number '" + spelling + "'");
    }
    value.kind = Json::Kind::Number;
    return value;
  }

  const std::string &text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

Json Json::parse(const std::string &text, const std::string &file) { return Parser(text, file).document(); }

Json Json::load(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": error: cannot open the file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path);
}

const Json *Json::find(const std::string &key) const {
  for (const auto &[k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

Json *Json::find(const std::string &key) {
  for (auto &[k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

const char *Json::kindName(Kind kind) {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return "a boolean";
    case Kind::Number: return "a number";
    case Kind::String: return "a string";
    case Kind::Array: return "an array";
    case Kind::Object: return "an object";
  }
  return "?";
}

}  // namespace scanforge::config

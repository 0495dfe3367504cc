// JSON with the source location of every value, so configuration errors can say
// "file:line:col: error: ..." with the offending line. Strict JSON (RFC 8259) plus '#' and '//'
// comments to end of line, so config files can explain themselves.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace scanforge::config {

struct Location {
  std::string file;
  int line = 0, col = 0;
};

// A configuration mistake: what() is "file:line:col: error: message", the source line, a caret,
// and a hint when there is one.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> items;                     // Array
  std::vector<std::pair<std::string, Json>> members;  // Object, in file order
  std::vector<Location> keyLocations;          // Object: where each key is
  Location where;

  static Json parse(const std::string &text, const std::string &file);
  static Json load(const std::string &path);

  const Json *find(const std::string &key) const;
  Json *find(const std::string &key);
  static const char *kindName(Kind kind);
};

// Renders a located error with the source line and a caret, for ConfigError::what().
std::string locatedMessage(const std::string &text, const Location &where, const std::string &message,
                           const std::string &hint = "");

}  // namespace scanforge::config

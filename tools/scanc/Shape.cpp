#include "tools/scanc/Shape.h"

#include <cstdlib>
#include <sstream>

#include "compiler/api/Scanforge.h"

namespace scanforge::scanc {

std::map<std::string, int64_t> parseShape(const std::string &text) {
  std::map<std::string, int64_t> sizes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw ShapeError("--shape: expected name=size, got '" + item + "'");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    char *end = nullptr;
    long long size = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || size <= 0)
      throw ShapeError("--shape: the size of '" + name + "' must be a positive integer, got '" + value + "'");
    sizes[name] = size;
  }
  for (const char *required : {"b", "t"})
    if (!sizes.count(required)) throw ShapeError(std::string("--shape: missing ") + required + "=<size>");
  return sizes;
}

}  // namespace scanforge::scanc

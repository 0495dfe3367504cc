#include "runtime/core/Shape.h"

#include <limits>

#include "runtime/core/Error.h"

namespace scanforge {

std::string shapeString(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t numelOf(const Shape &shape, std::string_view op) {
  int64_t n = 1;
  for (int64_t size : shape) {
    if (size < 0) throw RuntimeError(std::string(op), "negative size in shape " + shapeString(shape));
    if (size != 0 && n > std::numeric_limits<int64_t>::max() / size)
      throw RuntimeError(std::string(op), "shape " + shapeString(shape) + " has more than 2^63 elements");
    n *= size;
  }
  return n;
}

Shape contiguousStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

}  // namespace scanforge

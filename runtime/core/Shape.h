// Shapes and strides of row-major tensors, in elements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scanforge {

using Shape = std::vector<int64_t>;

// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const Shape &shape);

// The number of elements; `op` names the caller in the error for a negative size or an overflow.
int64_t numelOf(const Shape &shape, std::string_view op);

// Row-major strides: the last dimension is contiguous.
Shape contiguousStrides(const Shape &shape);

}  // namespace scanforge

// The --shape argument of `scanc run` and `scanc --gpu-model`: "b=2,t=64,d=16".
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace scanforge::scanc {

// Sizes by name; b and t are required. Throws ShapeError (compiler/api/Scanforge.h) naming the
// malformed item.
std::map<std::string, int64_t> parseShape(const std::string &text);

}  // namespace scanforge::scanc

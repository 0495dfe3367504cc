#include "runtime/core/DType.h"

#include <bit>
#include <cmath>

namespace scanforge {

size_t sizeOf(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::BF16: return 2;
    case DType::I64: return 8;
  }
  return 0;
}

std::string_view nameOf(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
  }
  return "?";
}

bool isFloating(DType dtype) { return dtype != DType::I64; }

BFloat16 toBFloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x0040u)};
  // Adding 0x7FFF rounds up exactly when the dropped half is above one half; the extra one for an
  // odd kept part turns a tie into rounding to even.
  uint32_t roundingBias = 0x7FFFu + ((bits >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((bits + roundingBias) >> 16)};
}

}  // namespace scanforge

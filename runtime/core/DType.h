// Element types. f32 and f64 are compute types (every op supports both; f64 exists for gradient
// checks), bf16 is a storage type (checkpoints, kernel inputs/outputs), i64 holds token ids and
// targets.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace scanforge {

enum class DType : uint8_t { F32, F64, BF16, I64 };

size_t sizeOf(DType dtype);
std::string_view nameOf(DType dtype);  // "f32", "f64", "bf16", "i64"
bool isFloating(DType dtype);          // f32, f64 or bf16

// bfloat16: the upper 16 bits of an IEEE float32.
struct BFloat16 {
  uint16_t bits = 0;
};

// Round to nearest, ties to even (what PyTorch's float -> bfloat16 does). NaN stays a quiet NaN
// with its sign; values beyond the largest bf16 round to infinity.
BFloat16 toBFloat16(float value);
inline float toFloat(BFloat16 value) { return std::bit_cast<float>(static_cast<uint32_t>(value.bits) << 16); }

template <class T>
constexpr DType dtypeOf();
template <>
constexpr DType dtypeOf<float>() { return DType::F32; }
template <>
constexpr DType dtypeOf<double>() { return DType::F64; }
template <>
constexpr DType dtypeOf<BFloat16>() { return DType::BF16; }
template <>
constexpr DType dtypeOf<int64_t>() { return DType::I64; }

}  // namespace scanforge

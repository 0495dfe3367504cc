// Calls a templated lambda with the C++ element type of a compute dtype (f32 -> float,
// f64 -> double); any other dtype is an error that names the op.
#pragma once

#include <string>
#include <string_view>

#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"

namespace scanforge {

template <class F>
decltype(auto) dispatchFloat(std::string_view op, const Tensor &tensor, F &&f) {
  switch (tensor.dtype()) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::BF16:
      throw RuntimeError(std::string(op), "bf16 is a storage type; convert the " + tensor.describe() +
                                              " operand with .to(DType::F32) before computing with it");
    case DType::I64: break;
  }
  throw RuntimeError(std::string(op), "needs an f32 or f64 operand, got " + tensor.describe());
}

}  // namespace scanforge

// Operand checks shared by the ops. Each failure names the op, the operand and its dtype and shape.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/Tensor.h"

namespace scanforge::detail {

// `t` has `other`'s dtype.
void requireSameDType(const char *op, const char *name, const Tensor &t, const char *otherName, const Tensor &other);
// `t` has exactly this shape (and `other`'s dtype): used for parameters sized by the input.
void requireParam(const char *op, const char *name, const Tensor &t, const Shape &shape, const Tensor &input);
// The size of the last dimension of a tensor of rank >= 1.
int64_t lastDim(const char *op, const char *name, const Tensor &t);

}  // namespace scanforge::detail

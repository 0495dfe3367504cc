#include "runtime/core/ops/OpChecks.h"

#include "runtime/core/Error.h"

namespace scanforge::detail {

void requireSameDType(const char *op, const char *name, const Tensor &t, const char *otherName, const Tensor &other) {
  if (t.dtype() != other.dtype())
    throw RuntimeError(op, std::string(name) + " is " + t.describe() + " but " + otherName + " is " + other.describe() +
                               "; convert one with .to()");
}

void requireParam(const char *op, const char *name, const Tensor &t, const Shape &shape, const Tensor &input) {
  requireSameDType(op, name, t, "the input", input);
  if (t.shape() != shape)
    throw RuntimeError(op, std::string(name) + " must have shape " + shapeString(shape) + " for the input " +
                               input.describe() + ", got " + t.describe());
}

int64_t lastDim(const char *op, const char *name, const Tensor &t) {
  if (t.dim() < 1) throw RuntimeError(op, std::string(name) + " needs at least one dimension, got " + t.describe());
  return t.shape().back();
}

}  // namespace scanforge::detail

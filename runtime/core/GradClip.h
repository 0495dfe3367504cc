// Gradient clipping by global norm (PyTorch's clip_grad_norm_).
#pragma once

#include <vector>

#include "runtime/core/Parameter.h"

namespace scanforge {

// norm = sqrt(sum over every parameter gradient of g^2) (computed in double; parameters without a
// gradient are skipped). When norm > maxNorm, every gradient is scaled in place by
// maxNorm / (norm + 1e-6). Returns the norm before clipping. A non-finite norm leaves the
// gradients untouched: the caller should skip that step.
double clipGradNorm(const std::vector<Parameter> &params, double maxNorm);

}  // namespace scanforge

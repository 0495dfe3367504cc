// Normalisation over the last dimension, with learned per-channel affine parameters. Statistics
// are accumulated in double for both f32 and f64 inputs.
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

// y = gamma * (x - mean) / sqrt(var + eps) + beta, with mean and the biased variance over the last
// dimension of x [..., D]; gamma and beta are [D] (PyTorch's nn.LayerNorm).
Variable layerNorm(const Variable &x, const Variable &gamma, const Variable &beta, double eps = 1e-5);

// y = gamma * x / sqrt(mean(x^2) + eps) over the last dimension of x [..., D]; gamma is [D].
Variable rmsNorm(const Variable &x, const Variable &gamma, double eps = 1e-5);

}  // namespace scanforge

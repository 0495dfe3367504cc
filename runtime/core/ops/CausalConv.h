// Causal depthwise convolution over time (the short convolution of Mamba-style blocks).
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

// x [B, T, C], weight [C, K] (K = 4 in the paper's blocks), optional bias [C]:
//   y[b, t, c] = bias[c] + sum_{j=0}^{K-1} weight[c, j] * x[b, t - (K-1) + j, c]
// with x = 0 before t = 0, so weight[c, K-1] multiplies the current step and y never sees the
// future. Same result as PyTorch's Conv1d(C, C, K, groups=C, padding=K-1) cut to the first T steps.
Variable causalConv1d(const Variable &x, const Variable &weight, const Variable &bias = {});

}  // namespace scanforge

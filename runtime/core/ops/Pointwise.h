// Element-wise ops. Binary ops take operands of one shape and dtype: there is no implicit
// broadcasting, because a shape mismatch inside a model is a bug that deserves an error. addBias is
// the one broadcast: a [N] vector added to every row of a [..., N] tensor.
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

Variable add(const Variable &a, const Variable &b);  // a + b; also the residual connection x + f(x)
Variable sub(const Variable &a, const Variable &b);  // a - b
Variable mul(const Variable &a, const Variable &b);  // a * b (gating)
Variable scale(const Variable &x, double factor);    // factor * x
Variable addBias(const Variable &x, const Variable &bias);  // x[..., n] + bias[n]

Variable sigmoid(const Variable &x);  // 1 / (1 + exp(-x))
Variable tanh(const Variable &x);
Variable silu(const Variable &x);  // x * sigmoid(x)
Variable gelu(const Variable &x);  // exact (erf) form: x * Phi(x) = x/2 * (1 + erf(x / sqrt(2)))

}  // namespace scanforge

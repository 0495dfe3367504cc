// Reshaping, and cutting and joining along the last dimension (how a recurrent layer splits one
// in-projection into its gate streams and joins results back).
#pragma once

#include <vector>

#include "runtime/core/Autograd.h"

namespace scanforge {

// The same elements in a new shape (one size may be -1); shares memory with x.
Variable reshape(const Variable &x, const Shape &shape);

// x[..., start : start + length], as a new contiguous tensor.
Variable slice(const Variable &x, int64_t start, int64_t length);

// Cuts x [..., sum(sizes)] into consecutive pieces [..., sizes[i]] in one pass.
std::vector<Variable> split(const Variable &x, const std::vector<int64_t> &sizes);

// Joins pieces that agree in every dimension but the last: [..., a], [..., b] -> [..., a + b].
Variable concat(const std::vector<Variable> &pieces);

}  // namespace scanforge

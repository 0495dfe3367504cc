// Reductions of a whole tensor to a scalar (shape []), accumulated in double.
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

Variable sum(const Variable &x);   // sum of all elements
Variable mean(const Variable &x);  // sum / numel; numel must be > 0

}  // namespace scanforge

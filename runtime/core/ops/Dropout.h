// Inverted dropout.
#pragma once

#include "runtime/core/Autograd.h"
#include "runtime/core/Random.h"

namespace scanforge {

// Training: y = x * m / (1 - p) with m[i] = 1 when the i-th uniform draw of `gen` (row-major order)
// is >= p, else 0; the backward multiplies by the same mask. Evaluation (training == false) or
// p == 0: returns x itself and draws nothing. p must lie in [0, 1).
Variable dropout(const Variable &x, double p, bool training, Generator &gen);

}  // namespace scanforge

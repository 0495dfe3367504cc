// Parameters drawn so that every state's decay stays at most 1 in magnitude: a benchmark of
// thousands of steps then times finite states, and the run trips no decay warning.
#pragma once

#include "compiler/api/Scanforge.h"

namespace scanforge::bench {

// Moves the values of each parameter in `params` that a condition of
// rec.parameterConditions() names within it: a magnitude at most 1 as v / (1 + |v|), a required
// sign as -|v| - 0.5 or |v| + 0.5 (0.5 away from a decay of exactly 1), both signs as 0.
void drawWithinDecayConditions(const Recurrence &rec, const TensorViews &params);

}  // namespace scanforge::bench

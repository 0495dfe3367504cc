// Every differentiable op of the runtime (see docs/runtime.md for the formulas).
#pragma once

#include "runtime/core/ops/CausalConv.h"
#include "runtime/core/ops/CrossEntropy.h"
#include "runtime/core/ops/Dropout.h"
#include "runtime/core/ops/Embedding.h"
#include "runtime/core/ops/Linear.h"
#include "runtime/core/ops/Normalization.h"
#include "runtime/core/ops/Pointwise.h"
#include "runtime/core/ops/Reduction.h"
#include "runtime/core/ops/ShapeOps.h"

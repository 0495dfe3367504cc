// An estimate of the instructions on one step's dependent chain, per thread, for the planner's
// latency term (runtime/cuda/Planner.h): how long a thread that walks T steps takes per step beyond
// waiting for its loads. Counted from the step's ops with the prelude's costs (a MUFU counts as 4,
// its latency in ALU latencies); register-dimension ops count once per register element. A formula
// over the register dimensions, e.g. "40+31*(n)".
#pragma once

#include <string>

#include "compiler/mlir/Target/Cuda/KernelContext.h"

namespace scanforge::cuda {

std::string stepInstructions(const KernelContext &k);

}  // namespace scanforge::cuda

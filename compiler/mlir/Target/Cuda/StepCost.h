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

// Instructions of one element of `op` as the prelude and NVRTC compute it (MUFU counted as 4).
int opInstructions(mlir::Operation *op);
// From this many on, an op is a transcendental function's (exp, sigmoid, softplus, g, log, tanh,
// sqrt; a division): what a walk that reads its value from shared memory saves.
constexpr int kTranscendentalInstructions = 10;

}  // namespace scanforge::cuda

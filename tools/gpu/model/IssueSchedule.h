// How many cycles one warp takes to issue a basic block of SASS alone on its scheduler: in order,
// each instruction after the stall ptxas encoded for its predecessor (its static schedule of the
// fixed-latency dependencies, so independent chains such as a selective SSM's state elements
// interleave), and after the variable-latency results it waits for on a scoreboard (MUFU,
// conversions, shared memory and shuffles). Waits on a global load's scoreboard are not counted
// here: the model charges them as memory latencies (SassBlock::loadWaits).
#pragma once

#include <vector>

#include "runtime/cuda/DeviceSpec.h"
#include "tools/gpu/sass/Sass.h"

namespace scanforge::gpu {

double issueCycles(const std::vector<SassInstruction> &block, const cuda::DeviceSpec &d);

}  // namespace scanforge::gpu

// How often each basic block of a kernel's SASS runs, per warp, from the traffic the emulator
// recorded by source line: the model times every block by its count instead of timing the kernel
// as one hot loop (a chunk's partial batch, a backward's recompute walk and a tile's carry loop
// each run as often as their own accesses say).
#pragma once

#include <vector>

#include "tools/gpu/emulator/Traffic.h"
#include "tools/gpu/sass/SassFacts.h"

namespace scanforge::gpu {

// Executions per warp of each of `sass.blocks`, for `traffic` over `warps` warps: a loop's blocks
// as often as the requests at their accesses' source lines say, pooled over the loop (each line's
// requests shared evenly among the SASS instructions compiled from it; a line ptxas compiled no
// instruction at counts for the loop of the nearest line it did); code outside loops once;
// a block none of whose accesses ran, and the blocks it dominates in its loop, never (a chunk's
// partial batch when the chunk is whole batches); a block no path reaches never. Throws
// std::invalid_argument naming the kernel when no memory instruction of the SASS has a site the
// traffic knows (SASS without line information).
std::vector<double> blockExecutions(const KernelSass &sass, const KernelTraffic &traffic, double warps);

}  // namespace scanforge::gpu
